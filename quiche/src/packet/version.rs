//! Versions and Version Negotiation packets (RFC 9000 §6, §15, §17.2.1; RFC 8999 §6).

use ring::rand::{SecureRandom, SystemRandom};

use super::header::{FIXED_BIT, FORM_BIT};
use super::{ConnectionId, Type};
use crate::error::{Error, Result};

/// QUIC version 1 (RFC 9000).
pub const QUIC_V1: u32 = 0x0000_0001;

/// QUIC version 2 (RFC 9369): version 1 with other constants, to keep middleboxes from
/// ossifying on version 1's.
pub const QUIC_V2: u32 = 0x6b33_43cf;

/// The versions this library speaks, in the default order of preference.
pub const SUPPORTED_VERSIONS: [u32; 2] = [QUIC_V1, QUIC_V2];

/// The packet type that the Long Packet Type bits (`bits`, 0 to 3) stand for in `version`.
/// Version 2 rotates them (RFC 9369 §3.2); every other version reads as version 1 (RFC 9000
/// §17.2), which is all that can be said of one this library does not know.
pub fn long_type_from_bits(version: u32, bits: u8) -> Type {
    let bits = if version == QUIC_V2 {
        bits.wrapping_sub(1) & 3
    } else {
        bits & 3
    };
    match bits {
        0 => Type::Initial,
        1 => Type::ZeroRTT,
        2 => Type::Handshake,
        _ => Type::Retry,
    }
}

/// The Long Packet Type bits of `ty` in `version` (the inverse of [`long_type_from_bits`]);
/// `None` for types without a long header of their own.
pub fn long_type_bits(version: u32, ty: Type) -> Option<u8> {
    let v1 = match ty {
        Type::Initial => 0,
        Type::ZeroRTT => 1,
        Type::Handshake => 2,
        Type::Retry => 3,
        Type::Short | Type::VersionNegotiation => return None,
    };
    Some(if version == QUIC_V2 { (v1 + 1) & 3 } else { v1 })
}

/// Whether the given QUIC version is supported.
pub fn version_is_supported(version: u32) -> bool {
    SUPPORTED_VERSIONS.contains(&version)
}

/// Whether `version` is one of the reserved versions of the form 0x?a?a?a?a that exist to
/// exercise version negotiation (RFC 9000 §15).
pub fn is_grease_version(version: u32) -> bool {
    version & 0x0f0f_0f0f == 0x0a0a_0a0a
}

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
    use crate::packet::{Header, Type};

    #[test]
    fn v1_and_v2_are_supported() {
        assert!(version_is_supported(1));
        assert!(!version_is_supported(0));
        assert!(!version_is_supported(2));
        assert!(version_is_supported(0x6b33_43cf));
        // The draft code point of v2 is not RFC 9369's version.
        assert!(!version_is_supported(0x709a_50c4));
        assert!(!version_is_supported(0xff00_001d));
    }

    #[test]
    fn v2_rotates_the_long_packet_types() {
        use Type::*;
        // RFC 9369 §3.2: Initial 0b01, 0-RTT 0b10, Handshake 0b11, Retry 0b00.
        let v2 = [(1, Initial), (2, ZeroRTT), (3, Handshake), (0, Retry)];
        let v1 = [(0, Initial), (1, ZeroRTT), (2, Handshake), (3, Retry)];
        for (bits, ty) in v2 {
            assert_eq!(long_type_from_bits(QUIC_V2, bits), ty);
            assert_eq!(long_type_bits(QUIC_V2, ty), Some(bits));
        }
        for (bits, ty) in v1 {
            assert_eq!(long_type_from_bits(QUIC_V1, bits), ty);
            assert_eq!(long_type_bits(QUIC_V1, ty), Some(bits));
            // Unknown versions read as v1.
            assert_eq!(long_type_from_bits(0x1a2a_3a4a, bits), ty);
        }
        assert_eq!(long_type_bits(QUIC_V2, Short), None);
    }

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
