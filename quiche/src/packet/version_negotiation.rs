//! Version Negotiation packets (RFC 9000 §6, §17.2.1; RFC 8999 §6): what a server answers a
//! packet of a version it does not speak with.

use ring::rand::{SecureRandom, SystemRandom};

use super::header::{FIXED_BIT, FORM_BIT};
use super::versions::SUPPORTED_VERSIONS;
use super::ConnectionId;
use crate::error::{Error, Result};

/// A reserved version whose high nibbles come from `random`.
fn grease_version(random: u32) -> u32 {
    (random & 0xf0f0_f0f0) | 0x0a0a_0a0a
}

/// Writes a Version Negotiation packet into `out` and returns its length (quiche's signature).
///
/// `scid` and `dcid` are the connection IDs of the packet being answered; they are echoed
/// swapped (RFC 9000 §17.2.1), and may be up to 255 bytes long since that packet may be of
/// another version. The packet lists the supported versions and one reserved version, so that
/// clients keep handling versions they do not know (RFC 9000 §6.3).
pub fn negotiate_version(
    scid: &ConnectionId,
    dcid: &ConnectionId,
    out: &mut [u8],
) -> Result<usize> {
    let scid_len = u8::try_from(scid.len()).map_err(|_| Error::InvalidPacket)?;
    let dcid_len = u8::try_from(dcid.len()).map_err(|_| Error::InvalidPacket)?;

    // The Unused bits are arbitrary; the one where v1 has its Fixed Bit is set so that the
    // packet does not stand out among QUIC v1 packets (RFC 9000 §17.2.1).
    let mut random = [0u8; 5];
    if SystemRandom::new().fill(&mut random).is_err() {
        random = [0x1a, 0x2a, 0x3a, 0x4a, 0x5a];
    }
    let first = FORM_BIT | FIXED_BIT | (random[0] & 0x3f);
    let grease = grease_version(u32::from_be_bytes([
        random[1], random[2], random[3], random[4],
    ]));

    let mut b = octets::OctetsMut::with_slice(out);
    b.put_u8(first)?;
    b.put_u32(0)?;
    b.put_u8(scid_len)?;
    b.put_bytes(scid)?;
    b.put_u8(dcid_len)?;
    b.put_bytes(dcid)?;
    for v in SUPPORTED_VERSIONS {
        b.put_u32(v)?;
    }
    b.put_u32(grease)?;
    Ok(b.off())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::versions::{is_grease_version, version_is_supported, QUIC_V1, QUIC_V2};
    use crate::packet::{Header, Type};

    #[test]
    fn grease_versions_have_the_reserved_form() {
        assert!(is_grease_version(0x1a2a_3a4a));
        assert!(is_grease_version(0x0a0a_0a0a));
        assert!(!is_grease_version(1));
        for r in [0, u32::MAX, 0x1234_5678, 0xdead_beef] {
            let v = grease_version(r);
            assert!(is_grease_version(v));
            assert!(!version_is_supported(v));
        }
    }

    #[test]
    fn version_negotiation_echoes_ids_swapped_and_lists_versions() {
        let scid = ConnectionId::from_ref(&[1, 2, 3]);
        // Longer than v1 allows: the answered packet may be of another version.
        let dcid = ConnectionId::from_vec(vec![9; 40]);
        let mut out = [0; 128];
        let len = negotiate_version(&scid, &dcid, &mut out).unwrap();
        assert_eq!(len, 1 + 4 + 1 + 3 + 1 + 40 + 12);
        assert_eq!(out[0] & 0xc0, 0xc0);
        assert_eq!(&out[1..5], &[0, 0, 0, 0]);

        let hdr = Header::from_slice(&mut out[..len], 0).unwrap();
        assert_eq!(hdr.ty, Type::VersionNegotiation);
        assert_eq!(hdr.version, 0);
        assert_eq!(&hdr.dcid[..], &[1, 2, 3]);
        assert_eq!(&hdr.scid[..], &[9; 40][..]);
        let versions = hdr.versions.unwrap();
        assert_eq!(versions.len(), 3);
        assert_eq!(versions[0], QUIC_V1);
        assert_eq!(versions[1], QUIC_V2);
        assert!(is_grease_version(versions[2]));
    }

    #[test]
    fn version_negotiation_needs_room() {
        let cid = ConnectionId::from_ref(&[7; 20]);
        let mut out = [0; 59];
        assert_eq!(negotiate_version(&cid, &cid, &mut out), Ok(59));
        for len in 0..59 {
            assert_eq!(
                negotiate_version(&cid, &cid, &mut out[..len]),
                Err(Error::BufferTooShort)
            );
        }
        let huge = ConnectionId::from_vec(vec![0; 256]);
        assert_eq!(
            negotiate_version(&huge, &cid, &mut [0; 600]),
            Err(Error::InvalidPacket)
        );
    }
}
