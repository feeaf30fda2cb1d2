//! Packets: header parsing and building, packet types and number spaces, packet-number
//! encoding, header protection and AEAD glue, Retry integrity and Version Negotiation.

use std::borrow::Cow;
use std::fmt;

mod coalesced;
mod header;
mod pkt_num;
mod protection;
mod retry;
mod version_negotiation;
mod versions;

pub use self::coalesced::{coalesced, packet_len, Coalesced};
pub use self::header::{Header, HeaderLayout, Span, LENGTH_FIELD_LEN};
pub use self::pkt_num::{
    decode_pkt_num, encode_pkt_num, encode_pkt_num_len, read_pkt_num, MAX_PKT_NUM_LEN,
};
pub use self::protection::{decrypt_hdr, decrypt_pkt, encrypt_pkt, write_length};
pub use self::retry::{retry, verify_retry_integrity};
pub use self::version_negotiation::negotiate_version;
pub use self::versions::{
    is_grease_version, long_type_bits, long_type_from_bits, peek_long_header, version_is_supported,
    QUIC_V1, QUIC_V2, SUPPORTED_VERSIONS,
};

/// The maximum length of a connection ID in QUIC v1 (RFC 9000 §17.2).
pub const MAX_CONN_ID_LEN: usize = 20;

/// QUIC packet type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// Initial packet.
    Initial,
    /// Retry packet.
    Retry,
    /// Handshake packet.
    Handshake,
    /// 0-RTT packet.
    ZeroRTT,
    /// Version negotiation packet.
    VersionNegotiation,
    /// 1-RTT short header packet.
    Short,
}

/// A packet number space (RFC 9000 §12.3), also called an encryption epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Epoch {
    /// Initial packets.
    Initial = 0,
    /// Handshake packets.
    Handshake = 1,
    /// 0-RTT and 1-RTT packets.
    Application = 2,
}

impl Type {
    /// The packet number space of a packet of this type: Initial and Handshake have their
    /// own, 0-RTT and 1-RTT share the Application space (RFC 9000 §12.3). Retry and Version
    /// Negotiation have none and read as Application.
    pub(crate) fn epoch(self) -> Epoch {
        match self {
            Type::Initial => Epoch::Initial,
            Type::Handshake => Epoch::Handshake,
            _ => Epoch::Application,
        }
    }
}

impl Epoch {
    /// All epochs in order.
    pub const ALL: [Epoch; 3] = [Epoch::Initial, Epoch::Handshake, Epoch::Application];

    /// The epoch's index, for per-space arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A QUIC connection ID, borrowed from a packet or owned.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId<'a>(Cow<'a, [u8]>);

impl<'a> ConnectionId<'a> {
    /// Creates a new connection ID borrowing the given slice.
    pub const fn from_ref(cid: &'a [u8]) -> Self {
        ConnectionId(Cow::Borrowed(cid))
    }

    /// Creates a new connection ID owning the given vector.
    pub const fn from_vec(cid: Vec<u8>) -> Self {
        ConnectionId(Cow::Owned(cid))
    }

    /// Returns an owned copy of the connection ID.
    pub fn into_owned(self) -> ConnectionId<'static> {
        ConnectionId(Cow::Owned(self.0.into_owned()))
    }
}

impl std::ops::Deref for ConnectionId<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for ConnectionId<'_> {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl From<Vec<u8>> for ConnectionId<'static> {
    fn from(v: Vec<u8>) -> Self {
        Self::from_vec(v)
    }
}

impl From<ConnectionId<'_>> for Vec<u8> {
    fn from(cid: ConnectionId<'_>) -> Self {
        cid.0.into_owned()
    }
}

impl fmt::Debug for ConnectionId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        for b in self.0.iter() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ConnectionId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests;
