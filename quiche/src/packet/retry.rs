//! Retry packets and their integrity tag (RFC 9000 §17.2.5, RFC 9001 §5.8, RFC 9369 §3.3.3).

use ring::aead;

use super::header::{FIXED_BIT, FORM_BIT, RETRY_INTEGRITY_TAG_LEN};
use super::versions::{long_type_bits, version_is_supported, QUIC_V2};
use super::{ConnectionId, Type, MAX_CONN_ID_LEN};
use crate::error::{Error, Result};

/// The fixed AEAD_AES_128_GCM key of QUIC v1 Retry integrity tags (RFC 9001 §5.8).
const RETRY_KEY_V1: [u8; 16] = [
    0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e,
];

/// The fixed nonce of QUIC v1 Retry integrity tags (RFC 9001 §5.8).
const RETRY_NONCE_V1: [u8; aead::NONCE_LEN] = [
    0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb,
];

/// The Retry integrity key of QUIC v2 (RFC 9369 §3.3.3).
const RETRY_KEY_V2: [u8; 16] = [
    0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2, 0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc, 0x92,
];

/// The Retry integrity nonce of QUIC v2 (RFC 9369 §3.3.3).
const RETRY_NONCE_V2: [u8; aead::NONCE_LEN] = [
    0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c, 0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a,
];

/// Retry's first byte in `version`: long header, fixed bit, the Retry type bits (3 in v1, 0 in
/// v2). The four Unused bits are set, as in the RFC 9001 Appendix A.4 and RFC 9369 Appendix
/// A.4 examples.
fn retry_first_byte(version: u32) -> u8 {
    let bits = long_type_bits(version, Type::Retry).unwrap_or(3);
    FORM_BIT | FIXED_BIT | (bits << 4) | 0x0f
}

fn retry_key(version: u32) -> Result<(aead::LessSafeKey, [u8; aead::NONCE_LEN])> {
    let (key, nonce) = if version == QUIC_V2 {
        (&RETRY_KEY_V2, RETRY_NONCE_V2)
    } else {
        (&RETRY_KEY_V1, RETRY_NONCE_V1)
    };
    let key = aead::UnboundKey::new(&aead::AES_128_GCM, key).map_err(|_| Error::CryptoFail)?;
    Ok((aead::LessSafeKey::new(key), nonce))
}

/// Computes the integrity tag over a Retry pseudo-packet (the ODCID with its length, then the
/// Retry packet without its tag): AES-128-GCM of an empty plaintext, the pseudo-packet being
/// the associated data.
fn integrity_tag(version: u32, pseudo_packet: &[u8]) -> Result<aead::Tag> {
    let (key, nonce) = retry_key(version)?;
    key.seal_in_place_separate_tag(
        aead::Nonce::assume_unique_for_key(nonce),
        aead::Aad::from(pseudo_packet),
        &mut [],
    )
    .map_err(|_| Error::CryptoFail)
}

/// Writes a Retry packet into `out` and returns its length (quiche's signature).
///
/// `scid` and `dcid` are the connection IDs of the client's Initial packet: the Retry goes to
/// the client's `scid` and comes from `new_scid`, the connection ID the server picked; the
/// client's `dcid` (the original destination connection ID) is only covered by the integrity
/// tag. `token` is the Retry Token, which the client echoes in its next Initial.
///
/// `out` needs room for the packet plus up to 5 bytes (the original DCID is prepended while
/// the tag is computed).
pub fn retry(
    scid: &ConnectionId,
    dcid: &ConnectionId,
    new_scid: &ConnectionId,
    token: &[u8],
    version: u32,
    out: &mut [u8],
) -> Result<usize> {
    if !version_is_supported(version) {
        return Err(Error::UnknownVersion);
    }
    if scid.len() > MAX_CONN_ID_LEN
        || dcid.len() > MAX_CONN_ID_LEN
        || new_scid.len() > MAX_CONN_ID_LEN
    {
        return Err(Error::InvalidPacket);
    }

    // The pseudo-packet is built in `out` with the original DCID in front, so that the tag is
    // computed without a copy; the packet is then moved to the start of `out`.
    let prefix_len = 1 + dcid.len();
    let pseudo_len = {
        let mut b = octets::OctetsMut::with_slice(out);
        b.put_u8(dcid.len() as u8)?;
        b.put_bytes(dcid)?;
        b.put_u8(retry_first_byte(version))?;
        b.put_u32(version)?;
        b.put_u8(scid.len() as u8)?;
        b.put_bytes(scid)?;
        b.put_u8(new_scid.len() as u8)?;
        b.put_bytes(new_scid)?;
        b.put_bytes(token)?;
        b.off()
    };
    let pkt_len = pseudo_len - prefix_len;
    let len = pkt_len + RETRY_INTEGRITY_TAG_LEN;
    if out.len() < len {
        return Err(Error::BufferTooShort);
    }

    let tag = integrity_tag(version, out.get(..pseudo_len).ok_or(Error::BufferTooShort)?)?;
    out.copy_within(prefix_len..pseudo_len, 0);
    out.get_mut(pkt_len..len)
        .ok_or(Error::BufferTooShort)?
        .copy_from_slice(tag.as_ref());
    Ok(len)
}

/// Checks the integrity tag of the Retry packet `buf` (the whole packet, ending with the tag)
/// against `odcid`, the Destination Connection ID of the client's first Initial packet.
///
/// Fails with [`Error::CryptoFail`] if the tag is wrong: the client discards such a Retry.
pub fn verify_retry_integrity(buf: &[u8], odcid: &[u8]) -> Result<()> {
    let first = *buf.first().ok_or(Error::InvalidPacket)?;
    let version = buf
        .get(1..5)
        .and_then(|v| v.try_into().ok())
        .map(u32::from_be_bytes)
        .ok_or(Error::InvalidPacket)?;
    if !version_is_supported(version) {
        return Err(Error::UnknownVersion);
    }
    let mask = FORM_BIT | FIXED_BIT | 0x30;
    if first & mask != retry_first_byte(version) & mask {
        return Err(Error::InvalidPacket);
    }
    if odcid.len() > MAX_CONN_ID_LEN {
        return Err(Error::InvalidPacket);
    }

    let pkt_len = buf
        .len()
        .checked_sub(RETRY_INTEGRITY_TAG_LEN)
        .ok_or(Error::InvalidPacket)?;
    let (pkt, tag) = buf.split_at(pkt_len);

    // Retry packets are rare and bounded by the datagram size: a copy to make the
    // pseudo-packet contiguous is fine here.
    let mut pseudo = Vec::with_capacity(1 + odcid.len() + pkt.len());
    pseudo.push(odcid.len() as u8);
    pseudo.extend_from_slice(odcid);
    pseudo.extend_from_slice(pkt);

    // Opening the tag as an empty ciphertext compares it in constant time.
    let mut tag =
        <[u8; RETRY_INTEGRITY_TAG_LEN]>::try_from(tag).map_err(|_| Error::InvalidPacket)?;
    let (key, nonce) = retry_key(version)?;
    key.open_in_place(
        aead::Nonce::assume_unique_for_key(nonce),
        aead::Aad::from(&pseudo[..]),
        &mut tag,
    )
    .map_err(|_| Error::CryptoFail)?;
    Ok(())
}
