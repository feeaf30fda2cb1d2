//! Packet protection in place: header protection and AEAD (RFC 9001 §5.3, §5.4).

use rustls::quic::{HeaderProtectionKey, PacketKey};

use super::header::{
    HeaderLayout, Span, FORM_BIT, KEY_PHASE_BIT, LENGTH_FIELD_LEN, PKT_NUM_LEN_MASK,
};
use super::pkt_num::{decode_pkt_num, read_pkt_num, MAX_PKT_NUM_LEN};
use super::Type;
use crate::error::{Error, Result};

/// Header protection samples start this far after the start of the Packet Number field, as if
/// it were 4 bytes long (RFC 9001 §5.4.2).
const SAMPLE_OFFSET: usize = MAX_PKT_NUM_LEN;

/// Splits `pkt` into the first byte, the 4 bytes from `pn_offset` and the `sample_len` bytes
/// after them: the pieces header protection reads and writes.
fn hp_parts(
    pkt: &mut [u8],
    pn_offset: usize,
    sample_len: usize,
) -> Option<(&mut u8, &mut [u8], &[u8])> {
    let sample_offset = pn_offset.checked_add(SAMPLE_OFFSET)?;
    let sample_end = sample_offset.checked_add(sample_len)?;
    if pn_offset == 0 || sample_end > pkt.len() {
        return None;
    }

    let (head, tail) = pkt.split_at_mut(sample_offset);
    let (first, head) = head.split_first_mut()?;
    let pn = head.get_mut(pn_offset - 1..)?;
    let sample = tail.get(..sample_len)?;
    Some((first, pn, sample))
}

/// Removes header protection from the packet whose header `hdr` was parsed from `buf`: unmasks
/// the first byte and the packet number in place, then fills in `hdr`'s packet number, its
/// length and the key phase. `largest_pn` is the largest packet number processed so far in the
/// packet number space (0 if none).
///
/// Packets too short to hold a sample (RFC 9001 §5.4.2) fail with [`Error::InvalidPacket`], as
/// do Retry and Version Negotiation packets, which have no protection. Call it once per packet:
/// a second call would scramble the header again.
///
/// The reserved bits are not checked here: a packet whose authentication fails must be dropped
/// rather than close the connection, so [`decrypt_pkt`] checks them (RFC 9000 §17.2).
pub fn decrypt_hdr(
    buf: &mut [u8],
    hdr: &mut HeaderLayout,
    hp: &dyn HeaderProtectionKey,
    largest_pn: u64,
) -> Result<()> {
    if matches!(hdr.ty, Type::Retry | Type::VersionNegotiation) {
        return Err(Error::InvalidPacket);
    }

    let pkt = buf.get_mut(..hdr.packet_len).ok_or(Error::InvalidPacket)?;
    let (first, pn, sample) =
        hp_parts(pkt, hdr.pn_offset, hp.sample_len()).ok_or(Error::InvalidPacket)?;

    hp.decrypt_in_place(sample, first, pn)
        .map_err(|_| Error::CryptoFail)?;

    let pn_len = usize::from(*first & PKT_NUM_LEN_MASK) + 1;
    let truncated = read_pkt_num(pn.get(..pn_len).ok_or(Error::InvalidPacket)?)?;

    hdr.first = *first;
    hdr.pkt_num_len = pn_len;
    hdr.pkt_num = decode_pkt_num(largest_pn, truncated, pn_len);
    hdr.key_phase = hdr.ty == Type::Short && *first & KEY_PHASE_BIT != 0;
    Ok(())
}

/// Decrypts and authenticates the payload of the packet whose header protection
/// [`decrypt_hdr`] removed, in place. Returns where the plaintext is in `buf`.
///
/// Fails with [`Error::CryptoFail`] if the packet does not authenticate (the packet is to be
/// dropped), and once it does, with [`Error::ProtocolViolation`] if the reserved header bits
/// are set (RFC 9000 §17.2, §17.3.1) or if it carries no frames (RFC 9000 §12.4).
pub fn decrypt_pkt(buf: &mut [u8], hdr: &HeaderLayout, key: &dyn PacketKey) -> Result<Span> {
    if hdr.pkt_num_len == 0 {
        return Err(Error::InvalidState);
    }

    let hdr_len = hdr.payload_offset();
    let pkt = buf.get_mut(..hdr.packet_len).ok_or(Error::InvalidPacket)?;
    if hdr_len > pkt.len() {
        return Err(Error::InvalidPacket);
    }
    let (header, payload) = pkt.split_at_mut(hdr_len);

    let len = key
        .decrypt_in_place(hdr.pkt_num, header, payload)
        .map_err(|_| Error::CryptoFail)?
        .len();

    if hdr.reserved_bits_set() || len == 0 {
        return Err(Error::ProtocolViolation);
    }

    Ok(Span {
        offset: hdr_len,
        len,
    })
}

/// Writes the Length field of a long header packet: the [`LENGTH_FIELD_LEN`] bytes before the
/// packet number, where [`Header::to_bytes`](super::Header::to_bytes) left a placeholder.
pub fn write_length(pkt: &mut [u8], pn_offset: usize, length: usize) -> Result<()> {
    let start = pn_offset
        .checked_sub(LENGTH_FIELD_LEN)
        .ok_or(Error::InvalidState)?;
    let field = pkt.get_mut(start..pn_offset).ok_or(Error::BufferTooShort)?;
    if field.first().is_none_or(|b| b & 0xc0 != 0x40) {
        // Not a 2-byte varint: not the placeholder this function patches.
        return Err(Error::InvalidState);
    }
    // Only the 2-byte varint form is written, so the value must fit in its 14 bits.
    let length = u16::try_from(length)
        .ok()
        .filter(|&l| l < 0x4000)
        .ok_or(Error::BufferTooShort)?;
    field.copy_from_slice(&(0x4000 | length).to_be_bytes());
    Ok(())
}

/// Protects a packet in place and returns its length.
///
/// `pkt` starts with the header as [`Header::to_bytes`](super::Header::to_bytes) wrote it (the
/// packet number of `pn_len` bytes at `pn_offset`), followed by `payload_len` bytes of
/// plaintext and room for the AEAD tag. For long headers the Length field is filled in first,
/// since it is authenticated. Then the payload is sealed, the tag appended, and header
/// protection applied.
///
/// The packet number and payload together must be at least 4 bytes so that there is a header
/// protection sample (RFC 9001 §5.4.2): pad the payload, or fail with
/// [`Error::BufferTooShort`].
pub fn encrypt_pkt(
    pkt: &mut [u8],
    pn: u64,
    pn_offset: usize,
    pn_len: usize,
    payload_len: usize,
    hp: &dyn HeaderProtectionKey,
    key: &dyn PacketKey,
) -> Result<usize> {
    let first = *pkt.first().ok_or(Error::BufferTooShort)?;
    if !(1..=MAX_PKT_NUM_LEN).contains(&pn_len)
        || usize::from(first & PKT_NUM_LEN_MASK) + 1 != pn_len
    {
        return Err(Error::InvalidState);
    }

    let tag_len = key.tag_len();
    let hdr_len = pn_offset.checked_add(pn_len).ok_or(Error::BufferTooShort)?;
    let len = hdr_len
        .checked_add(payload_len)
        .and_then(|l| l.checked_add(tag_len))
        .filter(|&l| l <= pkt.len())
        .ok_or(Error::BufferTooShort)?;
    let pkt = &mut pkt[..len];

    // Checked before anything is modified, so that a failure leaves the packet as it was.
    let sample_end = pn_offset
        .checked_add(SAMPLE_OFFSET + hp.sample_len())
        .ok_or(Error::BufferTooShort)?;
    if pn_offset == 0 || sample_end > len {
        return Err(Error::BufferTooShort);
    }

    if first & FORM_BIT != 0 {
        write_length(pkt, pn_offset, len - pn_offset)?;
    }

    let (header, rest) = pkt.split_at_mut(hdr_len);
    let (payload, tag_room) = rest.split_at_mut(payload_len);
    let tag = key
        .encrypt_in_place(pn, header, payload)
        .map_err(|_| Error::CryptoFail)?;
    tag_room
        .get_mut(..tag.as_ref().len())
        .ok_or(Error::CryptoFail)?
        .copy_from_slice(tag.as_ref());

    let (first, pn_field, sample) =
        hp_parts(pkt, pn_offset, hp.sample_len()).ok_or(Error::BufferTooShort)?;
    let pn_field = pn_field.get_mut(..pn_len).ok_or(Error::BufferTooShort)?;
    hp.encrypt_in_place(sample, first, pn_field)
        .map_err(|_| Error::CryptoFail)?;

    Ok(len)
}
