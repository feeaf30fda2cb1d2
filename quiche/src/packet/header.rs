//! Long and short packet headers: parsing the unprotected part, and encoding for sending
//! (RFC 9000 §17, RFC 8999).

use super::pkt_num::{encode_pkt_num, MAX_PKT_NUM_LEN};
use super::versions::{long_type_bits, long_type_from_bits, version_is_supported};
use super::{ConnectionId, Type, MAX_CONN_ID_LEN};
use crate::error::{Error, Result};

/// Header Form bit: set for long headers.
pub(crate) const FORM_BIT: u8 = 0x80;
/// Fixed Bit: set in every QUIC v1 packet except Version Negotiation.
pub(crate) const FIXED_BIT: u8 = 0x40;
/// Long Packet Type bits.
const LONG_TYPE_MASK: u8 = 0x30;
/// Key Phase bit of short headers.
pub(crate) const KEY_PHASE_BIT: u8 = 0x04;
/// Packet Number Length bits.
pub(crate) const PKT_NUM_LEN_MASK: u8 = 0x03;

/// Length of the integrity tag that ends a Retry packet (RFC 9001 §5.8).
pub(crate) const RETRY_INTEGRITY_TAG_LEN: usize = 16;

/// Bytes of the Length field placeholder that [`Header::to_bytes`] writes: a 2-byte varint
/// holds any length up to 16383, more than a UDP datagram on any real path.
pub const LENGTH_FIELD_LEN: usize = 2;

/// A byte range within a packet buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// Offset of the first byte.
    pub offset: usize,
    /// Number of bytes.
    pub len: usize,
}

impl Span {
    /// The offset just past the last byte.
    pub fn end(&self) -> usize {
        self.offset.saturating_add(self.len)
    }

    /// The bytes of `buf` in this range; empty if `buf` is too short (it is a different buffer
    /// than the one the span was parsed from).
    pub fn get<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.offset..self.end()).unwrap_or(&[])
    }
}

/// The unprotected header of a received packet, as values and offsets into the packet buffer.
///
/// It holds no borrow of the buffer, so the receive path can parse the header, remove header
/// protection ([`decrypt_hdr`](super::decrypt_hdr)) and decrypt the payload
/// ([`decrypt_pkt`](super::decrypt_pkt)) in place while keeping it, then read the connection IDs
/// and token from the buffer through the spans (or build a borrowed [`Header`] with
/// [`HeaderLayout::header`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderLayout {
    /// The packet type.
    pub ty: Type,
    /// The version field of long headers; 0 for short headers.
    pub version: u32,
    /// Where the Destination Connection ID is.
    pub dcid: Span,
    /// Where the Source Connection ID is (empty for short headers).
    pub scid: Span,
    /// Where the token is: the Token field of Initial packets (possibly empty) and the Retry
    /// Token of Retry packets.
    pub token: Option<Span>,
    /// Offset of the Packet Number field. For Retry and Version Negotiation packets, which have
    /// none, the offset just after the Source Connection ID.
    pub pn_offset: usize,
    /// Length of this packet within the buffer: up to the end of the Length field's range for
    /// Initial, 0-RTT and Handshake packets, the whole buffer for the others (RFC 9000 §12.2).
    pub packet_len: usize,
    /// The full packet number, once header protection is removed; 0 before.
    pub pkt_num: u64,
    /// The packet number length, once header protection is removed; 0 before.
    pub pkt_num_len: usize,
    /// The Key Phase bit of short headers, once header protection is removed.
    pub key_phase: bool,
    /// The first byte: as received, then unprotected by `decrypt_hdr`.
    pub(crate) first: u8,
}

impl HeaderLayout {
    /// Parses the unprotected part of the header at the start of `buf`. `dcid_len` is the
    /// length of the connection IDs this endpoint issued, which short headers do not encode.
    ///
    /// Long headers of versions other than QUIC v1 and v2 fail with [`Error::UnknownVersion`] (use
    /// [`Header::from_slice`] to read their connection IDs for Version Negotiation); malformed
    /// or truncated headers fail with [`Error::InvalidPacket`].
    pub fn parse(buf: &[u8], dcid_len: usize) -> Result<HeaderLayout> {
        parse(buf, dcid_len, false)
    }

    /// Where the packet's payload starts, once header protection is removed.
    pub fn payload_offset(&self) -> usize {
        self.pn_offset.saturating_add(self.pkt_num_len)
    }

    /// The value of the Length field for Initial, 0-RTT and Handshake packets (packet number
    /// plus protected payload); for short headers, the same span up to the end of the packet.
    pub fn length(&self) -> usize {
        self.packet_len.saturating_sub(self.pn_offset)
    }

    /// Whether the reserved bits of the (unprotected) first byte are set; RFC 9000 §17.2 and
    /// §17.3.1 make that a PROTOCOL_VIOLATION once the packet has been authenticated.
    pub(crate) fn reserved_bits_set(&self) -> bool {
        let reserved = if self.ty == Type::Short { 0x18 } else { 0x0c };
        self.first & reserved != 0
    }

    /// A borrowed view of the header in `buf`, the buffer it was parsed from.
    pub fn header<'a>(&self, buf: &'a [u8]) -> Result<Header<'a>> {
        let versions = if self.ty == Type::VersionNegotiation {
            let list = buf
                .get(self.pn_offset..self.packet_len)
                .ok_or(Error::InvalidPacket)?;
            Some(
                list.chunks_exact(4)
                    .map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]]))
                    .collect(),
            )
        } else {
            None
        };

        Ok(Header {
            ty: self.ty,
            version: self.version,
            dcid: ConnectionId::from_ref(self.dcid.get(buf)),
            scid: ConnectionId::from_ref(self.scid.get(buf)),
            token: self.token.map(|t| t.get(buf).to_vec()),
            versions,
            pkt_num: self.pkt_num,
            pkt_num_len: self.pkt_num_len,
            key_phase: self.key_phase,
            length: match self.ty {
                Type::Retry | Type::VersionNegotiation => 0,
                _ => self.length(),
            },
            pn_offset: self.pn_offset,
        })
    }
}

/// Reads a connection ID with its 8-bit length.
fn get_cid(b: &mut octets::Octets, max_len: usize) -> Result<Span> {
    let len = usize::from(b.get_u8()?);
    if len > max_len {
        return Err(Error::InvalidPacket);
    }
    let offset = b.off();
    b.skip(len)?;
    Ok(Span { offset, len })
}

fn parse(buf: &[u8], dcid_len: usize, allow_unknown_version: bool) -> Result<HeaderLayout> {
    // Running out of bytes anywhere in a header makes the packet invalid.
    parse_inner(buf, dcid_len, allow_unknown_version).map_err(|e| match e {
        Error::BufferTooShort => Error::InvalidPacket,
        e => e,
    })
}

fn parse_inner(buf: &[u8], dcid_len: usize, allow_unknown_version: bool) -> Result<HeaderLayout> {
    let mut b = octets::Octets::with_slice(buf);
    let first = b.get_u8()?;

    let mut hdr = HeaderLayout {
        ty: Type::Short,
        version: 0,
        dcid: Span::default(),
        scid: Span::default(),
        token: None,
        pn_offset: 0,
        packet_len: buf.len(),
        pkt_num: 0,
        pkt_num_len: 0,
        key_phase: false,
        first,
    };

    if first & FORM_BIT == 0 {
        if first & FIXED_BIT == 0 || dcid_len > MAX_CONN_ID_LEN {
            return Err(Error::InvalidPacket);
        }
        hdr.dcid = Span {
            offset: b.off(),
            len: dcid_len,
        };
        b.skip(dcid_len)?;
        hdr.pn_offset = b.off();
        return Ok(hdr);
    }

    hdr.version = b.get_u32()?;
    let known = version_is_supported(hdr.version);

    // Only QUIC v1 limits connection IDs to 20 bytes; other versions may use up to 255 and a
    // server must still read them to send Version Negotiation (RFC 9000 §17.2, RFC 8999 §5.1).
    let max_cid_len = if known { MAX_CONN_ID_LEN } else { 255 };
    hdr.dcid = get_cid(&mut b, max_cid_len)?;
    hdr.scid = get_cid(&mut b, max_cid_len)?;
    hdr.pn_offset = b.off();

    if hdr.version == 0 {
        hdr.ty = Type::VersionNegotiation;
        if b.cap() % 4 != 0 {
            return Err(Error::InvalidPacket);
        }
        return Ok(hdr);
    }

    hdr.ty = long_type_from_bits(hdr.version, (first & LONG_TYPE_MASK) >> 4);

    if !known {
        if allow_unknown_version {
            // Nothing after the connection IDs is known for other versions.
            return Ok(hdr);
        }
        return Err(Error::UnknownVersion);
    }

    if first & FIXED_BIT == 0 {
        return Err(Error::InvalidPacket);
    }

    match hdr.ty {
        Type::Retry => {
            let token_len = b
                .cap()
                .checked_sub(RETRY_INTEGRITY_TAG_LEN)
                .ok_or(Error::InvalidPacket)?;
            hdr.token = Some(Span {
                offset: b.off(),
                len: token_len,
            });
            return Ok(hdr);
        }

        Type::Initial => {
            let token_len = usize::try_from(b.get_varint()?).map_err(|_| Error::InvalidPacket)?;
            let offset = b.off();
            b.skip(token_len)?;
            hdr.token = Some(Span {
                offset,
                len: token_len,
            });
        }

        _ => (),
    }

    let length = usize::try_from(b.get_varint()?).map_err(|_| Error::InvalidPacket)?;
    hdr.pn_offset = b.off();
    hdr.packet_len = hdr
        .pn_offset
        .checked_add(length)
        .filter(|&end| end <= buf.len())
        .ok_or(Error::InvalidPacket)?;

    Ok(hdr)
}

/// A QUIC packet header.
///
/// [`Header::from_slice`] returns a header that owns its connection IDs (as quiche's does), so a
/// server can keep `hdr.dcid` as a map key and pass the same buffer to `recv`;
/// [`Header::parse`] borrows them from the buffer and allocates nothing for short headers. The
/// token, present only in Initial and Retry packets, is always owned. The packet number fields are only known once header protection is removed (see [`HeaderLayout`]);
/// headers to send set them before [`Header::to_bytes`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// The type of the packet.
    pub ty: Type,
    /// The version of the packet (0 for short headers and Version Negotiation).
    pub version: u32,
    /// The destination connection ID of the packet.
    pub dcid: ConnectionId<'a>,
    /// The source connection ID of the packet (empty for short headers).
    pub scid: ConnectionId<'a>,
    /// The address verification token: the Token field of Initial packets and the Retry Token
    /// of Retry packets.
    pub token: Option<Vec<u8>>,
    /// The versions listed by a Version Negotiation packet.
    pub versions: Option<Vec<u32>>,
    /// The full packet number.
    pub pkt_num: u64,
    /// The length of the packet number field in bytes (1 to 4).
    pub pkt_num_len: usize,
    /// The Key Phase bit of short headers.
    pub key_phase: bool,
    /// For Initial, 0-RTT and Handshake packets the Length field (packet number and protected
    /// payload); for short headers the bytes from the packet number to the end of the packet;
    /// 0 for Retry and Version Negotiation.
    pub length: usize,
    /// The offset of the Packet Number field from the start of the packet.
    pub pn_offset: usize,
}

impl<'a> Header<'a> {
    /// Parses the unprotected part of a packet header (quiche's signature). `dcid_len` is the
    /// length of the local connection IDs, needed for short headers.
    ///
    /// For long headers of versions this library does not support, only the version-independent
    /// fields are parsed (RFC 8999): the type bits as in v1, `version`, `dcid` and `scid` (up to
    /// 255 bytes each), so that a server can answer with [`negotiate_version`] after checking
    /// [`version_is_supported`].
    ///
    /// The header owns its connection IDs, independent of the buffer's borrow (quiche's
    /// signature); [`Header::parse`] is the borrowing, allocation-free variant.
    ///
    /// [`negotiate_version`]: super::negotiate_version
    pub fn from_slice<'b>(buf: &'b mut [u8], dcid_len: usize) -> Result<Header<'a>> {
        let hdr = Header::parse(buf, dcid_len)?;
        Ok(Header {
            dcid: hdr.dcid.into_owned(),
            scid: hdr.scid.into_owned(),
            ..hdr
        })
    }

    /// Like [`Header::from_slice`], from a shared slice, with the connection IDs borrowed from
    /// `buf` (no allocation unless the packet carries a token or a version list).
    pub fn parse(buf: &'a [u8], dcid_len: usize) -> Result<Header<'a>> {
        parse(buf, dcid_len, true)?.header(buf)
    }

    /// A long header to send. The packet number fields are set separately.
    pub fn new_long(
        ty: Type,
        version: u32,
        dcid: ConnectionId<'a>,
        scid: ConnectionId<'a>,
        token: Option<Vec<u8>>,
    ) -> Header<'a> {
        Header {
            ty,
            version,
            dcid,
            scid,
            token,
            versions: None,
            pkt_num: 0,
            pkt_num_len: 0,
            key_phase: false,
            length: 0,
            pn_offset: 0,
        }
    }

    /// A short header to send. The packet number fields are set separately.
    pub fn new_short(dcid: ConnectionId<'a>, key_phase: bool) -> Header<'a> {
        let mut hdr = Header::new_long(Type::Short, 0, dcid, ConnectionId::default(), None);
        hdr.key_phase = key_phase;
        hdr
    }

    /// Writes an Initial, 0-RTT, Handshake or short header, ending with the packet number
    /// (`pkt_num` truncated to `pkt_num_len` bytes). Long headers get a
    /// [`LENGTH_FIELD_LEN`]-byte Length placeholder, which [`encrypt_pkt`] fills in. Returns the
    /// offset of the packet number from where the header starts.
    ///
    /// Reserved bits are zero and the spin bit is not used. Retry and Version Negotiation
    /// packets are built by [`retry`] and [`negotiate_version`].
    ///
    /// [`encrypt_pkt`]: super::encrypt_pkt
    /// [`retry`]: super::retry
    /// [`negotiate_version`]: super::negotiate_version
    pub fn to_bytes(&self, out: &mut octets::OctetsMut) -> Result<usize> {
        if !(1..=MAX_PKT_NUM_LEN).contains(&self.pkt_num_len) {
            return Err(Error::InvalidState);
        }
        // The length check above makes this fit in the two bits.
        let pn_len_bits = (self.pkt_num_len - 1) as u8;
        let start = out.off();

        if self.dcid.len() > MAX_CONN_ID_LEN || self.scid.len() > MAX_CONN_ID_LEN {
            return Err(Error::InvalidState);
        }

        if self.ty == Type::Short {
            let key_phase = if self.key_phase { KEY_PHASE_BIT } else { 0 };
            out.put_u8(FIXED_BIT | key_phase | pn_len_bits)?;
            out.put_bytes(&self.dcid)?;
        } else {
            let ty_bits = match self.ty {
                Type::Initial | Type::ZeroRTT | Type::Handshake => {
                    long_type_bits(self.version, self.ty).ok_or(Error::InvalidState)?
                }
                _ => return Err(Error::InvalidState),
            };
            out.put_u8(FORM_BIT | FIXED_BIT | (ty_bits << 4) | pn_len_bits)?;
            out.put_u32(self.version)?;
            out.put_u8(self.dcid.len() as u8)?;
            out.put_bytes(&self.dcid)?;
            out.put_u8(self.scid.len() as u8)?;
            out.put_bytes(&self.scid)?;

            if self.ty == Type::Initial {
                let token = self.token.as_deref().unwrap_or(&[]);
                out.put_varint(token.len() as u64)?;
                out.put_bytes(token)?;
            }

            // Placeholder, patched once the payload's size is known.
            out.put_varint_with_len(0, LENGTH_FIELD_LEN)?;
        }

        let pn_offset = out.off() - start;
        encode_pkt_num(self.pkt_num, self.pkt_num_len, out)?;
        Ok(pn_offset)
    }
}

#[cfg(test)]
mod tests;
