//! HTTP/3 (RFC 9114) in the shape of quiche's `quiche::h3` module.
//!
//! An [`Connection`] sits on a QUIC [`crate::Connection`] whose ALPN is `h3`
//! ([`APPLICATION_PROTOCOL`]): [`Connection::with_transport`] opens the control and QPACK
//! streams, [`Connection::poll`] turns what arrived into [`Event`]s, and `send_request`,
//! `send_response`, `send_body` and `recv_body` move messages. Header compression is
//! [`qpack`] (RFC 9204) with a dynamic table, on by default.
//!
//! Modules: [`frame`] (frame and setting types, encoding), [`message`] (validation of header
//! sections), [`priority`] (RFC 9218), `stream` (the per-stream parser), `connection` (the
//! coordination), [`qpack`].

mod connection;
mod error;
pub mod frame;
mod header;
pub mod message;
pub mod priority;
pub mod qlog;
pub mod qpack;
mod stream;

#[cfg(test)]
mod tests;

pub use connection::Connection;
pub use error::{wire, Error, WireErrorCode};
pub use frame::grease_value;
pub use header::{Header, HeaderRef, NameValue};
pub use priority::Priority;

/// The ALPN protocol identifiers of HTTP/3, for `Config::set_application_protos`.
pub const APPLICATION_PROTOCOL: &[&[u8]] = &[b"h3"];

/// An HTTP/3 result.
pub type Result<T> = std::result::Result<T, Error>;

/// The QPACK dynamic table we let the peer's encoder use, unless configured.
pub const DEFAULT_QPACK_MAX_TABLE_CAPACITY: u64 = 4096;
/// Streams the peer's encoder may block, unless configured.
pub const DEFAULT_QPACK_BLOCKED_STREAMS: u64 = 16;
/// The largest PRIORITY_UPDATE Priority Field Value accepted, unless configured (RFC 9218
/// §7.2 leaves the bound to the endpoint).
pub const PRIORITY_UPDATE_FRAME_PAYLOAD_MAX_SIZE_DEFAULT: u64 = 256;
/// [`PRIORITY_UPDATE_FRAME_PAYLOAD_MAX_SIZE_DEFAULT`], under this crate's earlier name.
pub const DEFAULT_MAX_PRIORITY_UPDATE_SIZE: u64 = PRIORITY_UPDATE_FRAME_PAYLOAD_MAX_SIZE_DEFAULT;
/// The SETTINGS_MAX_FIELD_SECTION_SIZE a [`Config`] sends unless configured otherwise (RFC 9114
/// §4.2.2): larger header sections from the peer reset their stream.
pub const SETTINGS_MAX_FIELD_SECTION_SIZE_DEFAULT: u64 = 32_768;

/// HTTP/3 settings.
#[derive(Clone, Debug)]
pub struct Config {
    max_field_section_size: Option<u64>,
    qpack_max_table_capacity: u64,
    qpack_blocked_streams: u64,
    extended_connect: bool,
    max_priority_update_size: u64,
    additional_settings: Vec<(u64, u64)>,
}

impl Config {
    /// The defaults: QPACK dynamic table of [`DEFAULT_QPACK_MAX_TABLE_CAPACITY`] bytes with
    /// [`DEFAULT_QPACK_BLOCKED_STREAMS`] blocked streams, header sections up to
    /// [`SETTINGS_MAX_FIELD_SECTION_SIZE_DEFAULT`] bytes (quiche's defaults).
    pub const fn new() -> Result<Config> {
        Ok(Config {
            max_field_section_size: Some(SETTINGS_MAX_FIELD_SECTION_SIZE_DEFAULT),
            qpack_max_table_capacity: DEFAULT_QPACK_MAX_TABLE_CAPACITY,
            qpack_blocked_streams: DEFAULT_QPACK_BLOCKED_STREAMS,
            extended_connect: false,
            max_priority_update_size: PRIORITY_UPDATE_FRAME_PAYLOAD_MAX_SIZE_DEFAULT,
            additional_settings: Vec::new(),
        })
    }

    /// SETTINGS_MAX_FIELD_SECTION_SIZE: the largest header section accepted (RFC 9114
    /// §4.2.2); larger ones reset their stream.
    pub fn set_max_field_section_size(&mut self, v: u64) {
        self.max_field_section_size = Some(v);
    }

    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY: the dynamic table the peer's encoder may fill (0
    /// turns it off).
    pub fn set_qpack_max_table_capacity(&mut self, v: u64) {
        self.qpack_max_table_capacity = v;
    }

    /// SETTINGS_QPACK_BLOCKED_STREAMS: streams that may wait for the peer's encoder stream.
    pub fn set_qpack_blocked_streams(&mut self, v: u64) {
        self.qpack_blocked_streams = v;
    }

    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220): accept extended CONNECT (`:protocol`).
    pub fn enable_extended_connect(&mut self, enabled: bool) {
        self.extended_connect = enabled;
    }

    /// The largest PRIORITY_UPDATE Priority Field Value accepted.
    pub fn set_max_priority_update_size(&mut self, v: u64) {
        self.max_priority_update_size = v;
    }

    /// Settings sent beside ours. `SettingsError` for a repeated identifier or one this
    /// library sets itself (QPACK, field section size, extended CONNECT, HTTP Datagrams), or
    /// an HTTP/2 one.
    pub fn set_additional_settings(&mut self, additional_settings: Vec<(u64, u64)>) -> Result<()> {
        let own = [
            frame::SETTINGS_QPACK_MAX_TABLE_CAPACITY,
            frame::SETTINGS_MAX_FIELD_SECTION_SIZE,
            frame::SETTINGS_QPACK_BLOCKED_STREAMS,
            frame::SETTINGS_ENABLE_CONNECT_PROTOCOL,
            frame::SETTINGS_H3_DATAGRAM,
        ];
        for (i, (id, _)) in additional_settings.iter().enumerate() {
            let repeated = additional_settings[..i]
                .iter()
                .any(|(other, _)| other == id);
            if repeated || own.contains(id) || frame::is_http2_setting(*id) {
                return Err(Error::SettingsError);
            }
        }
        self.additional_settings = additional_settings;
        Ok(())
    }
}

/// What [`Connection::poll`] reports about a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A header section arrived: request or response headers, interim ones, or trailers.
    Headers {
        /// The header fields.
        list: Vec<Header>,
        /// Whether more frames (a body, trailers) may follow on the stream.
        more_frames: bool,
    },
    /// Body bytes can be read with [`Connection::recv_body`] (reported again only once they
    /// were all read).
    Data,
    /// The stream's message is complete.
    Finished,
    /// The peer reset the stream with this error code.
    Reset(u64),
    /// A PRIORITY_UPDATE arrived for the request on this stream
    /// ([`Connection::take_last_priority_update`]).
    PriorityUpdate,
    /// The peer sent GOAWAY; the stream ID is its identifier.
    GoAway,
}

/// Statistics of an HTTP/3 connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes received on the peer's QPACK encoder stream.
    pub qpack_encoder_stream_recv_bytes: u64,
    /// Bytes received on the peer's QPACK decoder stream.
    pub qpack_decoder_stream_recv_bytes: u64,
}
