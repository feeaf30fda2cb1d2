//! Transport parameters (RFC 9000 §18): encoding, decoding and validation.
//!
//! Also covers `max_datagram_frame_size` (RFC 9221 §3), `grease_quic_bit` (RFC 9287 §3) and
//! `min_ack_delay` (draft-ietf-quic-ack-frequency-12 §3).
//!
//! Every decoding failure is reported as [`Error::InvalidTransportParam`], whose wire code is
//! TRANSPORT_PARAMETER_ERROR, including plain truncation: the parameters arrive inside a TLS
//! extension whose length is already known, so a short read means the peer sent garbage, not that
//! more data is coming.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};

use octets::{Octets, OctetsMut};

use crate::error::{Error, Result};
use crate::packet::{ConnectionId, MAX_CONN_ID_LEN};

mod unknown;

pub use self::unknown::{
    UnknownTransportParameter, UnknownTransportParameterIterator, UnknownTransportParameters,
};

const ORIGINAL_DESTINATION_CONNECTION_ID: u64 = 0x00;
const MAX_IDLE_TIMEOUT: u64 = 0x01;
const STATELESS_RESET_TOKEN: u64 = 0x02;
const MAX_UDP_PAYLOAD_SIZE: u64 = 0x03;
const INITIAL_MAX_DATA: u64 = 0x04;
const INITIAL_MAX_STREAM_DATA_BIDI_LOCAL: u64 = 0x05;
const INITIAL_MAX_STREAM_DATA_BIDI_REMOTE: u64 = 0x06;
const INITIAL_MAX_STREAM_DATA_UNI: u64 = 0x07;
const INITIAL_MAX_STREAMS_BIDI: u64 = 0x08;
const INITIAL_MAX_STREAMS_UNI: u64 = 0x09;
const ACK_DELAY_EXPONENT: u64 = 0x0a;
const MAX_ACK_DELAY: u64 = 0x0b;
const DISABLE_ACTIVE_MIGRATION: u64 = 0x0c;
const PREFERRED_ADDRESS: u64 = 0x0d;
const ACTIVE_CONNECTION_ID_LIMIT: u64 = 0x0e;
const INITIAL_SOURCE_CONNECTION_ID: u64 = 0x0f;
const RETRY_SOURCE_CONNECTION_ID: u64 = 0x10;
const VERSION_INFORMATION: u64 = 0x11;
const MAX_DATAGRAM_FRAME_SIZE: u64 = 0x20;
const GREASE_QUIC_BIT: u64 = 0x2ab2;
/// draft-ietf-quic-ack-frequency-12 §3, §11.1 (a provisional codepoint).
const MIN_ACK_DELAY: u64 = 0xff04_de1b;

/// The default (and largest permitted) `max_udp_payload_size` (RFC 9000 §18.2).
pub const DEFAULT_MAX_UDP_PAYLOAD_SIZE: u64 = 65527;
/// The smallest valid `max_udp_payload_size` (RFC 9000 §18.2).
pub const MIN_MAX_UDP_PAYLOAD_SIZE: u64 = 1200;
/// The default `ack_delay_exponent` (RFC 9000 §18.2).
pub const DEFAULT_ACK_DELAY_EXPONENT: u64 = 3;
/// The largest valid `ack_delay_exponent` (RFC 9000 §18.2).
pub const MAX_ACK_DELAY_EXPONENT: u64 = 20;
/// The default `max_ack_delay` in milliseconds (RFC 9000 §18.2).
pub const DEFAULT_MAX_ACK_DELAY: u64 = 25;
/// `max_ack_delay` values must be strictly below this (2^14 ms, RFC 9000 §18.2).
pub const MAX_ACK_DELAY_LIMIT: u64 = 1 << 14;
/// The default (and smallest valid) `active_connection_id_limit` (RFC 9000 §18.2).
pub const DEFAULT_ACTIVE_CONNECTION_ID_LIMIT: u64 = 2;
/// The largest valid `initial_max_streams_{bidi,uni}`: a larger count would allow stream IDs
/// that no varint can carry (RFC 9000 §4.6).
pub const MAX_STREAMS_LIMIT: u64 = 1 << 60;

/// Length of a stateless reset token (RFC 9000 §10.3).
const TOKEN_LEN: usize = 16;

/// The transport parameters one endpoint declares to its peer (RFC 9000 §18.2).
///
/// Fields holding `None`, `false` or the RFC default are the values a peer has when it omits the
/// parameter, so [`TransportParams::default()`] is what an empty parameter list decodes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportParams {
    /// The Destination Connection ID of the client's first Initial packet (server only).
    pub original_destination_connection_id: Option<ConnectionId<'static>>,
    /// The maximum idle timeout in milliseconds; 0 disables it.
    pub max_idle_timeout: u64,
    /// The stateless reset token for the handshake connection ID (server only), as the 16 wire
    /// bytes read as a big-endian integer: `token.to_be_bytes()` gives the bytes back.
    pub stateless_reset_token: Option<u128>,
    /// The largest UDP payload the endpoint is willing to receive; at least 1200.
    pub max_udp_payload_size: u64,
    /// The initial connection-level flow control limit.
    pub initial_max_data: u64,
    /// The initial flow control limit for bidirectional streams the sender opens.
    pub initial_max_stream_data_bidi_local: u64,
    /// The initial flow control limit for bidirectional streams the receiver opens.
    pub initial_max_stream_data_bidi_remote: u64,
    /// The initial flow control limit for unidirectional streams the receiver opens.
    pub initial_max_stream_data_uni: u64,
    /// How many bidirectional streams the receiver may open initially; at most 2^60.
    pub initial_max_streams_bidi: u64,
    /// How many unidirectional streams the receiver may open initially; at most 2^60.
    pub initial_max_streams_uni: u64,
    /// The exponent applied to the ACK Delay field of the sender's ACK frames; at most 20.
    pub ack_delay_exponent: u64,
    /// The longest the sender delays acknowledgments, in milliseconds; below 2^14.
    pub max_ack_delay: u64,
    /// Whether the sender forbids active migration away from the handshake address.
    pub disable_active_migration: bool,
    /// The server's preferred address (server only).
    pub preferred_address: Option<PreferredAddress>,
    /// How many of the receiver's connection IDs the sender is willing to store; at least 2.
    pub active_conn_id_limit: u64,
    /// The Source Connection ID of the sender's first Initial packet. `None` omits the parameter;
    /// `Some` of an empty ID sends it with a zero-length value, as RFC 9000 §7.3 requires of an
    /// endpoint that uses zero-length connection IDs.
    pub initial_source_connection_id: Option<ConnectionId<'static>>,
    /// The Source Connection ID of the server's Retry packet (server only).
    pub retry_source_connection_id: Option<ConnectionId<'static>>,
    /// The largest DATAGRAM frame the sender accepts (RFC 9221 §3); `None` when not sent.
    pub max_datagram_frame_size: Option<u64>,
    /// Whether the sender accepts packets with the QUIC Bit cleared (RFC 9287 §3).
    pub grease_quic_bit: bool,
    /// The sender's Version Information (RFC 9368 §3), which authenticates version
    /// negotiation; `None` when not sent.
    pub version_information: Option<VersionInformation>,
    /// The shortest time, in microseconds, the sender is willing to delay an acknowledgment
    /// (draft-ietf-quic-ack-frequency-12 §3). Sending it says the sender accepts ACK_FREQUENCY
    /// and IMMEDIATE_ACK frames; `None` when not sent. Never above `max_ack_delay` (which is in
    /// milliseconds).
    pub min_ack_delay: Option<u64>,
    /// The parameters of the peer this library does not know, kept when the config asked for
    /// them ([`Config::enable_track_unknown_transport_parameters`]); `None` otherwise. Never
    /// encoded: they describe what a peer sent.
    ///
    /// [`Config::enable_track_unknown_transport_parameters`]:
    /// crate::config::Config::enable_track_unknown_transport_parameters
    pub unknown_params: Option<UnknownTransportParameters>,
}

/// Version Information (RFC 9368 §3): the version the sender chose and the versions it offers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionInformation {
    /// The version the sender uses for this connection.
    pub chosen_version: u32,
    /// A client's: the versions its first flight is compatible with, by preference. A
    /// server's: the versions it fully supports (may be empty).
    pub available_versions: Vec<u32>,
}

impl VersionInformation {
    /// Parses the parameter's value. A length that is zero or not a multiple of four, or a
    /// version equal to zero, is a parsing failure (RFC 9368 §4), as is a client's chosen
    /// version missing from its own available versions.
    fn decode(val: &[u8], from_server: bool) -> Result<Self> {
        if val.len() < 4 || val.len() % 4 != 0 {
            return Err(Error::InvalidTransportParam);
        }
        let mut versions = val
            .chunks_exact(4)
            .map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]]));
        let chosen_version = versions.next().unwrap_or(0);
        let available_versions: Vec<u32> = versions.collect();
        if chosen_version == 0 || available_versions.contains(&0) {
            return Err(Error::InvalidTransportParam);
        }
        if !from_server && !available_versions.contains(&chosen_version) {
            return Err(Error::InvalidTransportParam);
        }
        Ok(VersionInformation {
            chosen_version,
            available_versions,
        })
    }

    fn wire_len(&self) -> usize {
        4 * (1 + self.available_versions.len())
    }

    fn encode(&self, b: &mut OctetsMut) -> Result<()> {
        b.put_u32(self.chosen_version)?;
        for &v in &self.available_versions {
            b.put_u32(v)?;
        }
        Ok(())
    }
}

impl Default for TransportParams {
    fn default() -> Self {
        TransportParams {
            original_destination_connection_id: None,
            max_idle_timeout: 0,
            stateless_reset_token: None,
            max_udp_payload_size: DEFAULT_MAX_UDP_PAYLOAD_SIZE,
            initial_max_data: 0,
            initial_max_stream_data_bidi_local: 0,
            initial_max_stream_data_bidi_remote: 0,
            initial_max_stream_data_uni: 0,
            initial_max_streams_bidi: 0,
            initial_max_streams_uni: 0,
            ack_delay_exponent: DEFAULT_ACK_DELAY_EXPONENT,
            max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            disable_active_migration: false,
            preferred_address: None,
            active_conn_id_limit: DEFAULT_ACTIVE_CONNECTION_ID_LIMIT,
            initial_source_connection_id: None,
            retry_source_connection_id: None,
            max_datagram_frame_size: None,
            grease_quic_bit: false,
            version_information: None,
            min_ack_delay: None,
            unknown_params: None,
        }
    }
}

/// The server's preferred address (RFC 9000 §9.6, §18.2).
///
/// On the wire both families are always present; an all-zero address and port stands for "no
/// address of this family", which is `None` here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreferredAddress {
    /// The IPv4 address and port, if the server offers one.
    pub ipv4: Option<SocketAddrV4>,
    /// The IPv6 address and port, if the server offers one. Flow info and scope ID are not
    /// carried on the wire and decode as 0.
    pub ipv6: Option<SocketAddrV6>,
    /// The connection ID (sequence number 1) to use on the preferred address; 1 to 20 bytes.
    pub connection_id: ConnectionId<'static>,
    /// The stateless reset token of `connection_id`.
    pub stateless_reset_token: [u8; TOKEN_LEN],
}

impl PreferredAddress {
    /// Fixed-size part: IPv4 address and port, IPv6 address and port, CID length, token.
    const FIXED_LEN: usize = 4 + 2 + 16 + 2 + 1 + TOKEN_LEN;

    fn wire_len(&self) -> usize {
        Self::FIXED_LEN + self.connection_id.len()
    }

    fn decode(val: &[u8]) -> Result<Self> {
        let mut b = Octets::with_slice(val);
        let v4_ip = Ipv4Addr::from(b.get_u32().map_err(truncated)?);
        let v4_port = b.get_u16().map_err(truncated)?;
        let v6_hi = b.get_u64().map_err(truncated)?;
        let v6_lo = b.get_u64().map_err(truncated)?;
        let v6_ip = Ipv6Addr::from((u128::from(v6_hi) << 64) | u128::from(v6_lo));
        let v6_port = b.get_u16().map_err(truncated)?;
        let cid_len = usize::from(b.get_u8().map_err(truncated)?);
        // §18.2: a zero-length connection ID here is a TRANSPORT_PARAMETER_ERROR, and no v1
        // connection ID exceeds 20 bytes.
        if cid_len == 0 || cid_len > MAX_CONN_ID_LEN {
            return Err(Error::InvalidTransportParam);
        }
        let connection_id =
            ConnectionId::from_vec(b.get_bytes(cid_len).map_err(truncated)?.to_vec());
        let stateless_reset_token =
            <[u8; TOKEN_LEN]>::try_from(b.get_bytes(TOKEN_LEN).map_err(truncated)?.buf())
                .map_err(|_| Error::InvalidTransportParam)?;
        if b.cap() != 0 {
            return Err(Error::InvalidTransportParam);
        }

        let unspecified = |ip_is_zero: bool, port: u16| ip_is_zero && port == 0;
        Ok(PreferredAddress {
            ipv4: (!unspecified(v4_ip.is_unspecified(), v4_port))
                .then(|| SocketAddrV4::new(v4_ip, v4_port)),
            ipv6: (!unspecified(v6_ip.is_unspecified(), v6_port))
                .then(|| SocketAddrV6::new(v6_ip, v6_port, 0, 0)),
            connection_id,
            stateless_reset_token,
        })
    }

    fn encode(&self, b: &mut OctetsMut) -> Result<()> {
        let (v4_ip, v4_port) = self
            .ipv4
            .map_or((Ipv4Addr::UNSPECIFIED, 0), |a| (*a.ip(), a.port()));
        let (v6_ip, v6_port) = self
            .ipv6
            .map_or((Ipv6Addr::UNSPECIFIED, 0), |a| (*a.ip(), a.port()));
        let cid_len =
            u8::try_from(self.connection_id.len()).map_err(|_| Error::InvalidTransportParam)?;
        b.put_u32(u32::from(v4_ip))?;
        b.put_u16(v4_port)?;
        b.put_bytes(&v6_ip.octets())?;
        b.put_u16(v6_port)?;
        b.put_u8(cid_len)?;
        b.put_bytes(&self.connection_id)?;
        b.put_bytes(&self.stateless_reset_token)?;
        Ok(())
    }
}

/// A reserved transport parameter (RFC 9000 §18.1) to send so that peers keep ignoring unknown
/// parameters, as they must.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GreaseParam {
    id: u64,
    value: [u8; GreaseParam::MAX_VALUE_LEN],
    len: usize,
}

impl GreaseParam {
    /// The longest value a GREASE parameter may carry here: short, so it costs little.
    pub const MAX_VALUE_LEN: usize = 16;

    /// A GREASE parameter with the given reserved ID and value.
    ///
    /// Fails with [`Error::InvalidTransportParam`] if `id` is not of the form 31 * N + 27, does
    /// not fit a varint, or `value` is longer than [`GreaseParam::MAX_VALUE_LEN`].
    pub fn new(id: u64, value: &[u8]) -> Result<Self> {
        if !is_reserved_id(id) || id > octets::MAX_VAR_INT || value.len() > Self::MAX_VALUE_LEN {
            return Err(Error::InvalidTransportParam);
        }
        let mut v = [0; Self::MAX_VALUE_LEN];
        v.get_mut(..value.len())
            .ok_or(Error::InvalidTransportParam)?
            .copy_from_slice(value);
        Ok(GreaseParam {
            id,
            value: v,
            len: value.len(),
        })
    }

    /// A GREASE parameter whose ID (N below 2^16) and value (0 to 13 bytes) are taken from
    /// caller-supplied random bytes, so that peers see a different one on each connection.
    pub fn from_random(random: &[u8; 16]) -> Self {
        let [n_hi, n_lo, len_byte, rest @ ..] = *random;
        let n = u64::from(u16::from_be_bytes([n_hi, n_lo]));
        let len = usize::from(len_byte) % (rest.len() + 1);
        let mut value = [0; Self::MAX_VALUE_LEN];
        for (dst, src) in value.iter_mut().zip(rest.iter()).take(len) {
            *dst = *src;
        }
        GreaseParam {
            id: 31 * n + 27,
            value,
            len,
        }
    }

    /// The parameter's ID.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The parameter's value.
    pub fn value(&self) -> &[u8] {
        self.value.get(..self.len).unwrap_or(&[])
    }
}

/// Whether `id` is a reserved (GREASE) transport parameter ID, 31 * N + 27 (RFC 9000 §18.1).
pub fn is_reserved_id(id: u64) -> bool {
    id % 31 == 27
}

/// The connection IDs an endpoint expects its peer's parameters to confirm (RFC 9000 §7.3).
#[derive(Clone, Copy, Debug)]
pub struct ExpectedCids<'a> {
    /// The Source Connection ID of the first Initial packet received from the peer.
    pub initial_source: &'a [u8],
    /// When checking a server's parameters: the Destination Connection ID of the client's first
    /// Initial packet. `None` when checking a client's parameters.
    pub original_destination: Option<&'a [u8]>,
    /// When checking a server's parameters: the Source Connection ID of the Retry packet the
    /// client acted on, if any.
    pub retry_source: Option<&'a [u8]>,
}

/// A parameter value as it goes on the wire.
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Flag,
    Token(u128),
    Preferred(&'a PreferredAddress),
    Versions(&'a VersionInformation),
}

impl Value<'_> {
    fn len(&self) -> Result<usize> {
        Ok(match self {
            Value::Varint(v) => checked_varint_len(*v)?,
            Value::Bytes(b) => b.len(),
            Value::Flag => 0,
            Value::Token(_) => TOKEN_LEN,
            Value::Preferred(pa) => pa.wire_len(),
            Value::Versions(vi) => vi.wire_len(),
        })
    }

    fn write(&self, b: &mut OctetsMut) -> Result<()> {
        match self {
            Value::Varint(v) => {
                b.put_varint(*v)?;
            }
            Value::Bytes(v) => b.put_bytes(v)?,
            Value::Flag => (),
            Value::Token(t) => b.put_bytes(&t.to_be_bytes())?,
            Value::Preferred(pa) => pa.encode(b)?,
            Value::Versions(vi) => vi.encode(b)?,
        }
        Ok(())
    }
}

/// `octets::varint_len` panics above 2^62 - 1; local values are not trusted to be in range.
fn checked_varint_len(v: u64) -> Result<usize> {
    if v > octets::MAX_VAR_INT {
        return Err(Error::InvalidTransportParam);
    }
    Ok(octets::varint_len(v))
}

/// The bit of `id` in the duplicate-detection set, for the parameters this module understands.
/// Unknown IDs get none: they are skipped, so repeating them is harmless and tracking them would
/// need memory proportional to the input.
fn known_bit(id: u64) -> Option<u32> {
    match id {
        ORIGINAL_DESTINATION_CONNECTION_ID..=RETRY_SOURCE_CONNECTION_ID => Some(1 << id),
        MAX_DATAGRAM_FRAME_SIZE => Some(1 << 17),
        GREASE_QUIC_BIT => Some(1 << 18),
        VERSION_INFORMATION => Some(1 << 19),
        MIN_ACK_DELAY => Some(1 << 20),
        _ => None,
    }
}

/// Running out of input while decoding is malformed input, not a short buffer: the TLS layer
/// hands over the complete extension.
fn truncated(_: octets::BufferTooShortError) -> Error {
    Error::InvalidTransportParam
}

fn varint_value(val: &[u8]) -> Result<u64> {
    let mut b = Octets::with_slice(val);
    let v = b.get_varint().map_err(truncated)?;
    // The length field must describe exactly one varint (§18: the length is that of the value).
    if b.cap() != 0 {
        return Err(Error::InvalidTransportParam);
    }
    Ok(v)
}

fn cid_value(val: &[u8]) -> Result<ConnectionId<'static>> {
    if val.len() > MAX_CONN_ID_LEN {
        return Err(Error::InvalidTransportParam);
    }
    Ok(ConnectionId::from_vec(val.to_vec()))
}

fn flag_value(val: &[u8]) -> Result<bool> {
    if !val.is_empty() {
        return Err(Error::InvalidTransportParam);
    }
    Ok(true)
}

fn token_value(val: &[u8]) -> Result<u128> {
    <[u8; TOKEN_LEN]>::try_from(val)
        .map(u128::from_be_bytes)
        .map_err(|_| Error::InvalidTransportParam)
}

impl TransportParams {
    /// Decodes the parameters a peer sent. `is_server` is true if that peer is a server.
    ///
    /// Unknown and reserved parameters are skipped. Any malformed, repeated, out-of-range or
    /// role-forbidden parameter fails with [`Error::InvalidTransportParam`]. The presence and
    /// values of the connection ID parameters are checked separately, by
    /// [`TransportParams::validate_connection_ids`], once the connection knows what to expect.
    pub fn decode(buf: &[u8], is_server: bool) -> Result<TransportParams> {
        Self::decode_keeping_unknown(buf, is_server, None)
    }

    /// [`TransportParams::decode`], keeping the parameters it does not know in
    /// [`TransportParams::unknown_params`] when `unknown_budget` is given: as many as fit in
    /// that many bytes (see [`UnknownTransportParameters::push`]), the others dropped.
    pub fn decode_keeping_unknown(
        buf: &[u8],
        is_server: bool,
        unknown_budget: Option<usize>,
    ) -> Result<TransportParams> {
        let mut b = Octets::with_slice(buf);
        let mut tp = TransportParams {
            unknown_params: unknown_budget.map(|capacity| UnknownTransportParameters {
                capacity,
                parameters: Vec::new(),
            }),
            ..TransportParams::default()
        };
        let mut seen: u32 = 0;

        // Each round consumes at least the two varints of id and length, so the loop ends.
        while b.cap() > 0 {
            let id = b.get_varint().map_err(truncated)?;
            let len = usize::try_from(b.get_varint().map_err(truncated)?)
                .map_err(|_| Error::InvalidTransportParam)?;
            let val = b.get_bytes(len).map_err(truncated)?;

            let Some(bit) = known_bit(id) else {
                if let Some(unknown) = tp.unknown_params.as_mut() {
                    // One that does not fit is dropped; a smaller one after it may fit.
                    let _ = unknown.push(UnknownTransportParameter {
                        id,
                        value: val.buf(),
                    });
                }
                continue;
            };
            if seen & bit != 0 {
                // §7.4: an endpoint SHOULD treat a repeated parameter as an error.
                return Err(Error::InvalidTransportParam);
            }
            seen |= bit;
            tp.apply(id, val.buf(), is_server)?;
        }

        tp.validate(is_server)?;
        Ok(tp)
    }

    /// Sets the field of one known parameter from its wire value.
    fn apply(&mut self, id: u64, val: &[u8], is_server: bool) -> Result<()> {
        let server_only = matches!(
            id,
            ORIGINAL_DESTINATION_CONNECTION_ID
                | STATELESS_RESET_TOKEN
                | PREFERRED_ADDRESS
                | RETRY_SOURCE_CONNECTION_ID
        );
        if server_only && !is_server {
            // §18.2: a server MUST treat these from a client as TRANSPORT_PARAMETER_ERROR.
            return Err(Error::InvalidTransportParam);
        }

        match id {
            ORIGINAL_DESTINATION_CONNECTION_ID => {
                self.original_destination_connection_id = Some(cid_value(val)?)
            }
            MAX_IDLE_TIMEOUT => self.max_idle_timeout = varint_value(val)?,
            STATELESS_RESET_TOKEN => self.stateless_reset_token = Some(token_value(val)?),
            MAX_UDP_PAYLOAD_SIZE => self.max_udp_payload_size = varint_value(val)?,
            INITIAL_MAX_DATA => self.initial_max_data = varint_value(val)?,
            INITIAL_MAX_STREAM_DATA_BIDI_LOCAL => {
                self.initial_max_stream_data_bidi_local = varint_value(val)?
            }
            INITIAL_MAX_STREAM_DATA_BIDI_REMOTE => {
                self.initial_max_stream_data_bidi_remote = varint_value(val)?
            }
            INITIAL_MAX_STREAM_DATA_UNI => self.initial_max_stream_data_uni = varint_value(val)?,
            INITIAL_MAX_STREAMS_BIDI => self.initial_max_streams_bidi = varint_value(val)?,
            INITIAL_MAX_STREAMS_UNI => self.initial_max_streams_uni = varint_value(val)?,
            ACK_DELAY_EXPONENT => self.ack_delay_exponent = varint_value(val)?,
            MAX_ACK_DELAY => self.max_ack_delay = varint_value(val)?,
            DISABLE_ACTIVE_MIGRATION => self.disable_active_migration = flag_value(val)?,
            PREFERRED_ADDRESS => self.preferred_address = Some(PreferredAddress::decode(val)?),
            ACTIVE_CONNECTION_ID_LIMIT => self.active_conn_id_limit = varint_value(val)?,
            INITIAL_SOURCE_CONNECTION_ID => {
                self.initial_source_connection_id = Some(cid_value(val)?)
            }
            RETRY_SOURCE_CONNECTION_ID => self.retry_source_connection_id = Some(cid_value(val)?),
            MAX_DATAGRAM_FRAME_SIZE => self.max_datagram_frame_size = Some(varint_value(val)?),
            GREASE_QUIC_BIT => self.grease_quic_bit = flag_value(val)?,
            VERSION_INFORMATION => {
                self.version_information = Some(VersionInformation::decode(val, is_server)?)
            }
            MIN_ACK_DELAY => self.min_ack_delay = Some(varint_value(val)?),
            // `known_bit` admits only the IDs above.
            _ => (),
        }
        Ok(())
    }

    /// Checks every value against the limits of RFC 9000 §18.2 and that each fits a varint.
    ///
    /// `is_server` is the role of the endpoint these parameters belong to; it decides whether
    /// the server-only preferred address is checked. Fails with [`Error::InvalidTransportParam`].
    pub fn validate(&self, is_server: bool) -> Result<()> {
        let varints = [
            self.max_idle_timeout,
            self.max_udp_payload_size,
            self.initial_max_data,
            self.initial_max_stream_data_bidi_local,
            self.initial_max_stream_data_bidi_remote,
            self.initial_max_stream_data_uni,
            self.initial_max_streams_bidi,
            self.initial_max_streams_uni,
            self.ack_delay_exponent,
            self.max_ack_delay,
            self.active_conn_id_limit,
            self.max_datagram_frame_size.unwrap_or(0),
            self.min_ack_delay.unwrap_or(0),
        ];
        let cids = [
            &self.original_destination_connection_id,
            &self.initial_source_connection_id,
            &self.retry_source_connection_id,
        ];

        let ok = varints.iter().all(|&v| v <= octets::MAX_VAR_INT)
            && cids
                .iter()
                .all(|c| c.as_ref().is_none_or(|c| c.len() <= MAX_CONN_ID_LEN))
            && self.max_udp_payload_size >= MIN_MAX_UDP_PAYLOAD_SIZE
            && self.ack_delay_exponent <= MAX_ACK_DELAY_EXPONENT
            && self.max_ack_delay < MAX_ACK_DELAY_LIMIT
            && self.active_conn_id_limit >= DEFAULT_ACTIVE_CONNECTION_ID_LIMIT
            && self.initial_max_streams_bidi <= MAX_STREAMS_LIMIT
            && self.initial_max_streams_uni <= MAX_STREAMS_LIMIT
            && self.min_ack_delay_ok()
            && (!is_server || self.preferred_address_ok());

        if ok {
            Ok(())
        } else {
            Err(Error::InvalidTransportParam)
        }
    }

    /// draft-ietf-quic-ack-frequency-12 §3: min_ack_delay (µs) may not exceed max_ack_delay (ms);
    /// a peer's that does is a TRANSPORT_PARAMETER_ERROR.
    fn min_ack_delay_ok(&self) -> bool {
        self.min_ack_delay
            .is_none_or(|min| min <= self.max_ack_delay.saturating_mul(1000))
    }

    fn preferred_address_ok(&self) -> bool {
        let Some(pa) = &self.preferred_address else {
            return true;
        };
        let cid_len_ok = (1..=MAX_CONN_ID_LEN).contains(&pa.connection_id.len());
        // §18.2: a server that chose a zero-length connection ID MUST NOT send a preferred
        // address.
        let server_cid_ok = self
            .initial_source_connection_id
            .as_ref()
            .is_none_or(|c| !c.is_empty());
        cid_len_ok && server_cid_ok
    }

    /// Checks the connection ID parameters against what the endpoint saw in the peer's packets
    /// (RFC 9000 §7.3): presence of `initial_source_connection_id` (and, from a server,
    /// `original_destination_connection_id`), `retry_source_connection_id` present exactly when a
    /// Retry was processed, and every value equal to the one expected.
    ///
    /// Fails with [`Error::InvalidTransportParam`].
    pub fn validate_connection_ids(&self, expected: &ExpectedCids) -> Result<()> {
        let same =
            |got: &Option<ConnectionId<'static>>, want: Option<&[u8]>| got.as_deref() == want;
        let ok = same(
            &self.initial_source_connection_id,
            Some(expected.initial_source),
        ) && match expected.original_destination {
            // Checking a server's parameters.
            Some(odcid) => {
                same(&self.original_destination_connection_id, Some(odcid))
                    && same(&self.retry_source_connection_id, expected.retry_source)
            }
            // A client never sends these; `decode` already rejects them.
            None => {
                self.original_destination_connection_id.is_none()
                    && self.retry_source_connection_id.is_none()
            }
        };
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidTransportParam)
        }
    }

    /// Calls `f` with each parameter to send, in ascending ID order after the GREASE one.
    fn for_each_param<'a>(
        &'a self,
        is_server: bool,
        grease: Option<&'a GreaseParam>,
        mut f: impl FnMut(u64, Value<'a>) -> Result<()>,
    ) -> Result<()> {
        if let Some(g) = grease {
            f(g.id(), Value::Bytes(g.value()))?;
        }

        let varints = [
            (MAX_IDLE_TIMEOUT, self.max_idle_timeout, 0),
            (
                MAX_UDP_PAYLOAD_SIZE,
                self.max_udp_payload_size,
                DEFAULT_MAX_UDP_PAYLOAD_SIZE,
            ),
            (INITIAL_MAX_DATA, self.initial_max_data, 0),
            (
                INITIAL_MAX_STREAM_DATA_BIDI_LOCAL,
                self.initial_max_stream_data_bidi_local,
                0,
            ),
            (
                INITIAL_MAX_STREAM_DATA_BIDI_REMOTE,
                self.initial_max_stream_data_bidi_remote,
                0,
            ),
            (
                INITIAL_MAX_STREAM_DATA_UNI,
                self.initial_max_stream_data_uni,
                0,
            ),
            (INITIAL_MAX_STREAMS_BIDI, self.initial_max_streams_bidi, 0),
            (INITIAL_MAX_STREAMS_UNI, self.initial_max_streams_uni, 0),
            (
                ACK_DELAY_EXPONENT,
                self.ack_delay_exponent,
                DEFAULT_ACK_DELAY_EXPONENT,
            ),
            (MAX_ACK_DELAY, self.max_ack_delay, DEFAULT_MAX_ACK_DELAY),
            (
                ACTIVE_CONNECTION_ID_LIMIT,
                self.active_conn_id_limit,
                DEFAULT_ACTIVE_CONNECTION_ID_LIMIT,
            ),
        ];
        let varint = |id: u64| {
            varints
                .iter()
                .find(|&&(i, v, default)| i == id && v != default)
                .map(|&(_, v, _)| Value::Varint(v))
        };
        fn cid<'a>(c: &'a Option<ConnectionId<'static>>) -> Option<Value<'a>> {
            c.as_deref().map(Value::Bytes)
        }
        let server = |v: Option<Value<'a>>| v.filter(|_| is_server);

        let params = [
            (
                ORIGINAL_DESTINATION_CONNECTION_ID,
                server(cid(&self.original_destination_connection_id)),
            ),
            (MAX_IDLE_TIMEOUT, varint(MAX_IDLE_TIMEOUT)),
            (
                STATELESS_RESET_TOKEN,
                server(self.stateless_reset_token.map(Value::Token)),
            ),
            (MAX_UDP_PAYLOAD_SIZE, varint(MAX_UDP_PAYLOAD_SIZE)),
            (INITIAL_MAX_DATA, varint(INITIAL_MAX_DATA)),
            (
                INITIAL_MAX_STREAM_DATA_BIDI_LOCAL,
                varint(INITIAL_MAX_STREAM_DATA_BIDI_LOCAL),
            ),
            (
                INITIAL_MAX_STREAM_DATA_BIDI_REMOTE,
                varint(INITIAL_MAX_STREAM_DATA_BIDI_REMOTE),
            ),
            (
                INITIAL_MAX_STREAM_DATA_UNI,
                varint(INITIAL_MAX_STREAM_DATA_UNI),
            ),
            (INITIAL_MAX_STREAMS_BIDI, varint(INITIAL_MAX_STREAMS_BIDI)),
            (INITIAL_MAX_STREAMS_UNI, varint(INITIAL_MAX_STREAMS_UNI)),
            (ACK_DELAY_EXPONENT, varint(ACK_DELAY_EXPONENT)),
            (MAX_ACK_DELAY, varint(MAX_ACK_DELAY)),
            (
                DISABLE_ACTIVE_MIGRATION,
                self.disable_active_migration.then_some(Value::Flag),
            ),
            (
                PREFERRED_ADDRESS,
                server(self.preferred_address.as_ref().map(Value::Preferred)),
            ),
            (
                ACTIVE_CONNECTION_ID_LIMIT,
                varint(ACTIVE_CONNECTION_ID_LIMIT),
            ),
            (
                INITIAL_SOURCE_CONNECTION_ID,
                cid(&self.initial_source_connection_id),
            ),
            (
                RETRY_SOURCE_CONNECTION_ID,
                server(cid(&self.retry_source_connection_id)),
            ),
            (
                MAX_DATAGRAM_FRAME_SIZE,
                self.max_datagram_frame_size.map(Value::Varint),
            ),
            (GREASE_QUIC_BIT, self.grease_quic_bit.then_some(Value::Flag)),
            (
                VERSION_INFORMATION,
                self.version_information.as_ref().map(Value::Versions),
            ),
            (MIN_ACK_DELAY, self.min_ack_delay.map(Value::Varint)),
        ];
        for (id, value) in params {
            if let Some(value) = value {
                f(id, value)?;
            }
        }
        Ok(())
    }

    /// The encoded length of the parameters, as [`TransportParams::encode_with_grease`] would
    /// write them. Fails with [`Error::InvalidTransportParam`] if a value is invalid.
    pub fn encoded_len(&self, is_server: bool, grease: Option<&GreaseParam>) -> Result<usize> {
        self.validate(is_server)?;
        let mut total: usize = 0;
        self.for_each_param(is_server, grease, |id, value| {
            let len = value.len()?;
            let wire_len = u64::try_from(len).map_err(|_| Error::InvalidTransportParam)?;
            total = total
                .checked_add(checked_varint_len(id)?)
                .and_then(|t| t.checked_add(octets::varint_len(wire_len)))
                .and_then(|t| t.checked_add(len))
                .ok_or(Error::InvalidTransportParam)?;
            Ok(())
        })?;
        Ok(total)
    }

    /// Encodes the parameters an endpoint sends, `is_server` being its role, into `out`, and
    /// returns the number of bytes written.
    ///
    /// Parameters equal to their default are omitted, and server-only ones are sent only by a
    /// server. Fails with [`Error::BufferTooShort`] if `out` is too small and with
    /// [`Error::InvalidTransportParam`] if a value breaks RFC 9000 §18.2 (see
    /// [`TransportParams::validate`]).
    pub fn encode(&self, is_server: bool, out: &mut [u8]) -> Result<usize> {
        self.encode_with_grease(is_server, None, out)
    }

    /// Like [`TransportParams::encode`], with a reserved parameter first if `grease` is given.
    pub fn encode_with_grease(
        &self,
        is_server: bool,
        grease: Option<&GreaseParam>,
        out: &mut [u8],
    ) -> Result<usize> {
        self.validate(is_server)?;
        let mut b = OctetsMut::with_slice(out);
        self.for_each_param(is_server, grease, |id, value| {
            let len = u64::try_from(value.len()?).map_err(|_| Error::InvalidTransportParam)?;
            b.put_varint(id)?;
            b.put_varint(len)?;
            value.write(&mut b)
        })?;
        Ok(b.off())
    }

    /// [`TransportParams::encode`] into a new vector of exactly the right size.
    pub fn encode_to_vec(&self, is_server: bool) -> Result<Vec<u8>> {
        self.encode_to_vec_with_grease(is_server, None)
    }

    /// [`TransportParams::encode_with_grease`] into a new vector of exactly the right size.
    pub fn encode_to_vec_with_grease(
        &self,
        is_server: bool,
        grease: Option<&GreaseParam>,
    ) -> Result<Vec<u8>> {
        let mut out = vec![0; self.encoded_len(is_server, grease)?];
        let written = self.encode_with_grease(is_server, grease, &mut out)?;
        out.truncate(written);
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
