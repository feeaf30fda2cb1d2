//! The HTTP/3 connection: control and QPACK streams, request streams, events. It drives the
//! transport only through `quiche::Connection`'s public API.

use std::collections::{HashMap, HashSet, VecDeque};

mod recv;
mod recv_request;
mod send;

use super::error::wire;
use super::frame::{self, put_frame, put_frame_header, put_varint};
use super::message::{self, Section};
use super::qlog::{self, h3_qlog};
use super::qpack;
use super::stream::{Kind, RecvStream, Skipped, State};
use super::{Config, Error, Event, Header, NameValue, Priority, Result, Stats};
use crate::Shutdown;

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
const STREAM_CONTROL: u64 = 0x0;
const STREAM_PUSH: u64 = 0x1;
const STREAM_QPACK_ENCODER: u64 = 0x2;
const STREAM_QPACK_DECODER: u64 = 0x3;

/// The largest control-stream frame payload kept whole (SETTINGS, GOAWAY ...).
const MAX_CONTROL_PAYLOAD: usize = 16 * 1024;
/// HEADERS frames beyond this are refused even without a field section size limit.
const MAX_HEADERS_PAYLOAD: u64 = 1 << 20;
/// PRIORITY_UPDATE values kept for streams the application has not taken them for: a
/// client that prioritizes more streams than it can have open is excessive.
const MAX_PRIORITY_UPDATES: usize = 1024;

/// An HTTP/3 connection on top of a QUIC connection.
pub struct Connection {
    is_server: bool,
    local_settings: Vec<(u64, u64)>,
    max_field_section_size: u64,
    max_priority_update_size: u64,
    extended_connect: bool,
    /// Our uni streams (control, QPACK encoder, QPACK decoder, grease) and what they still
    /// have to write.
    pub(super) control_id: u64,
    pub(super) encoder_id: u64,
    decoder_id: u64,
    pub(super) out: HashMap<u64, Vec<u8>>,
    /// Streams whose pending bytes end the stream.
    out_fin: HashSet<u64>,
    /// Our HEAD requests: their responses have no content, whatever `content-length` says
    /// (RFC 9114 §4.1.2).
    head_requests: HashSet<u64>,
    /// Our CONNECT requests (not extended): a 2xx response makes their stream a tunnel.
    connect_requests: HashSet<u64>,
    next_request_id: u64,
    peer_control: Option<u64>,
    peer_encoder: Option<u64>,
    peer_decoder: Option<u64>,
    peer_settings: Option<Vec<(u64, u64)>>,
    peer_dgram: bool,
    peer_extended_connect: bool,
    pub(super) qpack_encoder: qpack::Encoder,
    pub(super) qpack_decoder: qpack::Decoder,
    streams: HashMap<u64, RecvStream>,
    events: VecDeque<(u64, Event)>,
    goaway_received: Option<u64>,
    /// The largest push ID a client allowed with MAX_PUSH_ID (servers).
    max_push_id: Option<u64>,
    /// Request streams whose message ended: their state goes once the transport frees them.
    finished_streams: Vec<u64>,
    goaway_sent: Option<u64>,
    priority_updates: HashMap<u64, Vec<u8>>,
    stats: Stats,
    /// The connection error we closed with: every later call returns it.
    closed: Option<Error>,
}

fn is_bidi(id: u64) -> bool {
    id & 0x2 == 0
}

fn is_client_initiated(id: u64) -> bool {
    id & 0x1 == 0
}

impl Connection {
    /// Starts HTTP/3 on `conn`: opens the control stream with our SETTINGS and the QPACK
    /// streams (RFC 9114 §6.2.1, RFC 9204 §4.2). Their bytes go out as the transport allows.
    pub fn with_transport<F: crate::BufFactory>(
        conn: &mut crate::Connection<F>,
        config: &Config,
    ) -> Result<Connection> {
        let is_server = conn.is_server();
        let first_uni = if is_server { 3 } else { 2 };
        let mut settings = vec![
            (
                frame::SETTINGS_QPACK_MAX_TABLE_CAPACITY,
                config.qpack_max_table_capacity,
            ),
            (
                frame::SETTINGS_QPACK_BLOCKED_STREAMS,
                config.qpack_blocked_streams,
            ),
        ];
        if let Some(v) = config.max_field_section_size {
            settings.push((frame::SETTINGS_MAX_FIELD_SECTION_SIZE, v));
        }
        if config.extended_connect {
            settings.push((frame::SETTINGS_ENABLE_CONNECT_PROTOCOL, 1));
        }
        if conn.dgram_enabled() {
            settings.push((frame::SETTINGS_H3_DATAGRAM, 1));
        }
        settings.extend(config.additional_settings.iter().copied());
        let mut h3 = Connection {
            is_server,
            local_settings: settings.clone(),
            max_field_section_size: config.max_field_section_size.unwrap_or(u64::MAX),
            max_priority_update_size: config.max_priority_update_size,
            extended_connect: config.extended_connect,
            control_id: first_uni,
            encoder_id: first_uni + 4,
            decoder_id: first_uni + 8,
            out: HashMap::new(),
            out_fin: HashSet::new(),
            head_requests: HashSet::new(),
            connect_requests: HashSet::new(),
            next_request_id: 0,
            peer_control: None,
            peer_encoder: None,
            peer_decoder: None,
            peer_settings: None,
            peer_dgram: false,
            peer_extended_connect: false,
            qpack_encoder: qpack::Encoder::new(),
            qpack_decoder: qpack::Decoder::new(
                config.qpack_max_table_capacity,
                config.qpack_blocked_streams,
                config.max_field_section_size.unwrap_or(u64::MAX),
            ),
            streams: HashMap::new(),
            events: VecDeque::new(),
            goaway_received: None,
            max_push_id: None,
            finished_streams: Vec::new(),
            goaway_sent: None,
            priority_updates: HashMap::new(),
            stats: Stats::default(),
            closed: None,
        };
        h3.qpack_encoder
            .set_max_table_capacity(config.qpack_max_table_capacity.max(4096));

        // A reserved setting, frame and stream keep peers tolerant of extensions (§7.2.4.1,
        // §7.2.8, §6.2.3, §9), unless the config turned GREASE off.
        let grease = conn
            .grease_enabled()
            .then(|| frame::grease_id(u64::from(conn.source_id().first().copied().unwrap_or(7))));
        if let Some(grease) = grease {
            settings.push((grease, 0x2a));
        }
        let mut control = Vec::new();
        put_varint(&mut control, STREAM_CONTROL);
        let settings_payload = frame::settings_payload(&settings);
        put_frame(&mut control, frame::SETTINGS, &settings_payload);
        let mut streams = vec![
            (h3.control_id, STREAM_CONTROL),
            (h3.encoder_id, STREAM_QPACK_ENCODER),
            (h3.decoder_id, STREAM_QPACK_DECODER),
        ];
        let mut control_frames: Vec<(u64, &[u8])> = vec![(frame::SETTINGS, &settings_payload)];
        if let Some(grease) = grease {
            put_frame(&mut control, grease, b"grease");
            streams.push((first_uni + 12, grease));
            control_frames.push((grease, b"grease"));
        }
        qlog::start(
            conn,
            &qlog::Start {
                settings: &settings,
                streams: &streams,
                control_frames: &control_frames,
            },
        );
        h3.out.insert(h3.control_id, control);
        h3.out
            .insert(h3.encoder_id, vec![STREAM_QPACK_ENCODER as u8]);
        h3.out
            .insert(h3.decoder_id, vec![STREAM_QPACK_DECODER as u8]);
        if let Some(grease) = grease {
            // A uni stream of a reserved type, sent and ended (§6.2.3).
            let mut grease_stream = Vec::new();
            put_varint(&mut grease_stream, grease);
            grease_stream.extend_from_slice(b"grease");
            h3.out.insert(first_uni + 12, grease_stream);
        }
        h3.flush(conn);
        Ok(h3)
    }

    /// Writes what our streams still have to send: control, QPACK and unfinished headers.
    fn flush<F: crate::BufFactory>(&mut self, conn: &mut crate::Connection<F>) {
        qlog::qpack(conn, &mut self.qpack_encoder, &mut self.qpack_decoder, true);
        let pending = self.qpack_encoder.encoder_stream_pending().to_vec();
        if !pending.is_empty() {
            self.qpack_encoder.encoder_stream_consumed(pending.len());
            self.out.entry(self.encoder_id).or_default().extend(pending);
        }
        let pending = self.qpack_decoder.decoder_stream_pending().to_vec();
        if !pending.is_empty() {
            self.qpack_decoder.decoder_stream_consumed(pending.len());
            self.out.entry(self.decoder_id).or_default().extend(pending);
        }
        let grease_id = self.control_id + 12;
        let out_fin = &mut self.out_fin;
        self.out.retain(|&id, buf| {
            if buf.is_empty() {
                return false;
            }
            let fin = id == grease_id || out_fin.contains(&id);
            match conn.stream_send(id, buf, fin) {
                Ok(n) => {
                    buf.drain(..n);
                }
                // No stream credit yet (StreamLimit), or no room: try again later. The grease
                // stream is given up if the peer allows only the three streams it must.
                Err(crate::Error::StreamLimit) if id == grease_id => buf.clear(),
                Err(_) => {}
            }
            if buf.is_empty() {
                out_fin.remove(&id);
            }
            !buf.is_empty()
        });
    }

    /// Closes the connection with `e` (a connection error of RFC 9114 §8) and returns it.
    fn fail<F: crate::BufFactory>(&mut self, conn: &mut crate::Connection<F>, e: Error) -> Error {
        self.fail_with_code(conn, e, e.to_wire())
    }

    fn fail_with_code<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        e: Error,
        code: u64,
    ) -> Error {
        if self.closed.is_none() {
            self.closed = Some(e);
            let _ = conn.close(true, code, b"");
        }
        e
    }

    /// Ends a stream with a stream error: both directions reset with `code`.
    fn reset_stream<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        code: u64,
    ) {
        let _ = conn.stream_shutdown(id, Shutdown::Read, code);
        let _ = conn.stream_shutdown(id, Shutdown::Write, code);
        self.streams.remove(&id);
        self.out.remove(&id);
        self.head_requests.remove(&id);
        self.connect_requests.remove(&id);
        self.priority_updates.remove(&id);
        self.qpack_decoder.cancel_stream(id);
    }
}

/// Settings, statistics and priority updates received.
impl Connection {
    /// The last PRIORITY_UPDATE field value received for an element (servers), forgotten once
    /// taken; `Error::Done` if none.
    pub fn take_last_priority_update(&mut self, prioritized_element_id: u64) -> Result<Vec<u8>> {
        self.priority_updates
            .remove(&prioritized_element_id)
            .ok_or(Error::Done)
    }

    /// Whether the peer accepts HTTP Datagrams (RFC 9297) and the transport DATAGRAM frames.
    pub fn dgram_enabled_by_peer<F: crate::BufFactory>(&self, conn: &crate::Connection<F>) -> bool {
        self.peer_dgram && conn.dgram_max_writable_len().is_some()
    }

    /// Whether the peer enabled extended CONNECT (RFC 9220).
    pub fn extended_connect_enabled_by_peer(&self) -> bool {
        self.peer_extended_connect
    }

    /// The peer's SETTINGS as (identifier, value) pairs, once they arrived.
    pub fn peer_settings_raw(&self) -> Option<&[(u64, u64)]> {
        self.peer_settings.as_deref()
    }

    /// Our SETTINGS, as sent (without the reserved one).
    pub fn local_settings_raw(&self) -> &[(u64, u64)] {
        &self.local_settings
    }

    /// Statistics of the HTTP/3 connection.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// How many streams the connection keeps parser state for.
    #[cfg(test)]
    pub(super) fn tracked_streams(&self) -> usize {
        self.streams.len()
    }
}

/// How a stream's processing went wrong: a connection error, or a stream error to reset the
/// stream with (its HTTP/3 code).
pub(super) enum Fault {
    Connection(Error),
    /// A connection error whose wire code is not `Error::to_wire`'s (QPACK stream errors).
    ConnectionCode(Error, u64),
    Stream(u64),
}

impl From<Error> for Fault {
    fn from(e: Error) -> Self {
        Fault::Connection(e)
    }
}

/// What the stream processors return.
pub(super) type Flow = std::result::Result<(), Fault>;

/// QPACK errors become HTTP/3 connection errors of the same code (RFC 9204 §6).
fn qpack_error(e: qpack::Error) -> Fault {
    match e {
        qpack::Error::HeaderListTooLarge => Fault::Stream(wire::EXCESSIVE_LOAD),
        qpack::Error::DecompressionFailed => Fault::Connection(Error::QpackDecompressionFailed),
        // quiche's `h3::Error` has no variant of their own: the application sees
        // QpackDecompressionFailed, the peer the right code.
        e => Fault::ConnectionCode(Error::QpackDecompressionFailed, e.to_wire()),
    }
}
