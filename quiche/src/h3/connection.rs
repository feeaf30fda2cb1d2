//! The HTTP/3 connection: control and QPACK streams, request streams, events. It drives the
//! transport only through `quiche::Connection`'s public API.

use std::collections::{HashMap, HashSet, VecDeque};

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

        // A reserved setting and a reserved frame keep peers tolerant of extensions (§7.2.4.1,
        // §7.2.8, §9).
        let grease = frame::grease_id(u64::from(conn.source_id().first().copied().unwrap_or(7)));
        settings.push((grease, 0x2a));
        let mut control = Vec::new();
        put_varint(&mut control, STREAM_CONTROL);
        let settings_payload = frame::settings_payload(&settings);
        put_frame(&mut control, frame::SETTINGS, &settings_payload);
        put_frame(&mut control, grease, b"grease");
        qlog::start(
            conn,
            &qlog::Start {
                settings: &settings,
                streams: [
                    (h3.control_id, STREAM_CONTROL),
                    (h3.encoder_id, STREAM_QPACK_ENCODER),
                    (h3.decoder_id, STREAM_QPACK_DECODER),
                    (first_uni + 12, grease),
                ],
                control_frames: [(frame::SETTINGS, &settings_payload), (grease, b"grease")],
            },
        );
        h3.out.insert(h3.control_id, control);
        h3.out
            .insert(h3.encoder_id, vec![STREAM_QPACK_ENCODER as u8]);
        h3.out
            .insert(h3.decoder_id, vec![STREAM_QPACK_DECODER as u8]);
        // A uni stream of a reserved type, sent and ended (§6.2.3).
        let mut grease_stream = Vec::new();
        put_varint(&mut grease_stream, grease);
        grease_stream.extend_from_slice(b"grease");
        h3.out.insert(first_uni + 12, grease_stream);
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

    /// The next event on any stream, as `(stream ID, event)`; `Error::Done` when there is none
    /// now. Connection errors close the QUIC connection and are returned.
    pub fn poll<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
    ) -> Result<(u64, Event)> {
        if let Some(e) = self.closed {
            return Err(e);
        }
        if let Some(ev) = self.events.pop_front() {
            return Ok(ev);
        }
        self.collect_finished(conn);
        // The critical streams first: SETTINGS and QPACK instructions unblock the rest.
        let critical = [self.peer_control, self.peer_encoder, self.peer_decoder];
        let mut ids: Vec<u64> = critical.into_iter().flatten().collect();
        ids.extend(conn.readable().filter(|id| !critical.contains(&Some(*id))));
        for id in ids {
            if let Err(e) = self.process_stream(conn, id) {
                self.flush(conn);
                return Err(self.fail(conn, e));
            }
        }
        self.flush(conn);
        self.events.pop_front().ok_or(Error::Done)
    }

    /// Forgets the request streams whose message ended and that the transport freed (both
    /// directions over), so that state does not grow with the connection's age.
    fn collect_finished<F: crate::BufFactory>(&mut self, conn: &crate::Connection<F>) {
        let streams = &mut self.streams;
        let priority_updates = &mut self.priority_updates;
        self.finished_streams.retain(|&id| {
            let gone = matches!(
                conn.stream_capacity(id),
                Err(crate::Error::InvalidStreamState(_))
            );
            if gone {
                streams.remove(&id);
                priority_updates.remove(&id);
            }
            !gone
        });
    }

    fn stream_kind(&self, id: u64) -> Option<Kind> {
        let local = is_client_initiated(id) != self.is_server;
        if is_bidi(id) {
            // Requests go from client to server only (§6.1).
            return (is_client_initiated(id)).then_some(Kind::Request);
        }
        (!local).then_some(Kind::UniUnknown)
    }

    /// Reads what a stream has, turning it into events or state changes. Connection errors
    /// are returned; stream errors reset the stream here.
    fn process_stream<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
    ) -> Result<()> {
        if !self.streams.contains_key(&id) {
            let Some(kind) = self.stream_kind(id) else {
                // A bidirectional stream opened by the server (§6.1).
                return Err(Error::StreamCreationError);
            };
            if conn.stream_finished(id) {
                // Nothing left to parse: a stream we stopped reading whose end or reset came
                // later, or one reset before we read anything. Reading takes the reset, which
                // the application hears of for a request.
                if let Err(crate::Error::StreamReset(code)) = conn.stream_recv(id, &mut []) {
                    if kind == Kind::Request {
                        self.events.push_back((id, Event::Reset(code)));
                    }
                }
                return Ok(());
            }
            if kind == Kind::Request && self.is_server && self.goaway_sent.is_some_and(|l| id >= l)
            {
                // Beyond our GOAWAY: not processed (§5.2).
                self.reset_stream(conn, id, wire::REQUEST_REJECTED);
                return Ok(());
            }
            if kind == Kind::Request && self.is_server {
                h3_qlog!(conn, q => q.stream_type_set(crate::qlog::Owner::Remote, id, None));
            }
            self.streams.insert(id, RecvStream::new(kind));
        }
        let Some(mut st) = self.streams.remove(&id) else {
            return Ok(());
        };
        let result = match st.kind {
            Kind::Request => self.process_request(conn, id, &mut st),
            Kind::UniUnknown => self.process_uni_type(conn, id, &mut st),
            Kind::Control => self.process_control(conn, id, &mut st),
            Kind::QpackEncoder | Kind::QpackDecoder => self.process_qpack(conn, id, &mut st),
            // Its reading was aborted: the transport drops what arrives.
            Kind::Ignored => Ok(()),
        };
        match result {
            Ok(()) => {
                // A stream of a type we ignore is no longer read (§6.2), and one that ended
                // before its type is over: their state goes.
                let over = st.kind == Kind::Ignored || (st.kind == Kind::UniUnknown && st.fin);
                if !over {
                    self.streams.insert(id, st);
                }
                Ok(())
            }
            Err(Fault::Stream(code)) => {
                self.reset_stream(conn, id, code);
                Ok(())
            }
            Err(Fault::Connection(Error::TransportError(crate::Error::StreamReset(code))))
                if st.kind == Kind::Request =>
            {
                // The peer reset the request stream (§4.1.1).
                self.qpack_decoder.cancel_stream(id);
                self.events.push_back((id, Event::Reset(code)));
                Ok(())
            }
            Err(Fault::Connection(Error::TransportError(crate::Error::StreamReset(_))))
                if matches!(st.kind, Kind::UniUnknown | Kind::Ignored) =>
            {
                // Uni streams may be reset before their type is read, and those of a type
                // we ignore at any time (§6.2).
                Ok(())
            }
            Err(Fault::Connection(Error::TransportError(crate::Error::StreamReset(_)))) => {
                // A critical stream may not be reset (§6.2.1, RFC 9204 §4.2).
                Err(Error::ClosedCriticalStream)
            }
            Err(f) => Err(self.fail_on(conn, f)),
        }
    }

    /// Closes the connection for a connection-level fault and returns the error (a stream
    /// fault, which callers settle themselves, ends up as an internal error).
    fn fail_on<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        fault: Fault,
    ) -> Error {
        match fault {
            Fault::Connection(e) => self.fail(conn, e),
            Fault::ConnectionCode(e, code) => self.fail_with_code(conn, e, code),
            Fault::Stream(_) => self.fail(conn, Error::InternalError),
        }
    }

    /// A peer uni stream's first bytes: its type (§6.2).
    fn process_uni_type<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
    ) -> Flow {
        let Some(ty) = st.read_varint(conn, id)? else {
            return Ok(());
        };
        h3_qlog!(conn, q => q.stream_type_set(crate::qlog::Owner::Remote, id, Some(ty)));
        let slot = match ty {
            STREAM_CONTROL => &mut self.peer_control,
            STREAM_QPACK_ENCODER => &mut self.peer_encoder,
            STREAM_QPACK_DECODER => &mut self.peer_decoder,
            STREAM_PUSH if self.is_server => return Err(Error::StreamCreationError.into()),
            // We never sent MAX_PUSH_ID, so no push ID is valid (§4.6).
            STREAM_PUSH => return Err(Error::IdError.into()),
            _ => {
                // Reserved or unknown: read and dropped, and the peer asked to stop (§6.2).
                st.kind = Kind::Ignored;
                st.state = State::Raw;
                let _ = conn.stream_shutdown(id, Shutdown::Read, wire::STREAM_CREATION_ERROR);
                return Ok(());
            }
        };
        if slot.is_some() {
            return Err(Error::StreamCreationError.into());
        }
        *slot = Some(id);
        (st.kind, st.state) = match ty {
            STREAM_CONTROL => (Kind::Control, State::FrameHeader),
            STREAM_QPACK_ENCODER => (Kind::QpackEncoder, State::Raw),
            _ => (Kind::QpackDecoder, State::Raw),
        };
        match st.kind {
            Kind::Control => self.process_control(conn, id, st),
            _ => self.process_qpack(conn, id, st),
        }
    }

    /// The peer's QPACK streams: instruction bytes for our decoder or encoder.
    fn process_qpack<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
    ) -> Flow {
        if st.fin {
            // The stream ended with its type (§6.2.1, RFC 9204 §4.2).
            return Err(Error::ClosedCriticalStream.into());
        }
        let mut buf = [0u8; 4096];
        loop {
            let (n, fin) = match conn.stream_recv(id, &mut buf) {
                Ok(r) => r,
                Err(crate::Error::Done) => break,
                Err(e) => return Err(Error::from(e).into()),
            };
            let bytes = &buf[..n];
            if st.kind == Kind::QpackEncoder {
                self.stats.qpack_encoder_stream_recv_bytes += n as u64;
                self.qpack_decoder
                    .feed_encoder_stream(bytes)
                    .map_err(qpack_error)?;
            } else {
                self.stats.qpack_decoder_stream_recv_bytes += n as u64;
                self.qpack_encoder
                    .feed_decoder_stream(bytes)
                    .map_err(qpack_error)?;
            }
            if fin {
                return Err(Error::ClosedCriticalStream.into());
            }
            if n == 0 {
                break;
            }
        }
        qlog::qpack(
            conn,
            &mut self.qpack_encoder,
            &mut self.qpack_decoder,
            false,
        );
        self.release_unblocked(conn)
    }

    /// Header sections that QPACK could decode now that encoder-stream bytes arrived.
    fn release_unblocked<F: crate::BufFactory>(&mut self, conn: &mut crate::Connection<F>) -> Flow {
        while let Some((id, result)) = self.qpack_decoder.take_unblocked() {
            let Some(mut st) = self.streams.remove(&id) else {
                continue;
            };
            h3_qlog!(conn, q => q.qpack_stream_blocked(id, false));
            st.state = State::FrameHeader;
            let outcome = match result {
                Ok(lines) => self
                    .on_header_section(conn, id, &mut st, lines)
                    .and_then(|()| self.process_request(conn, id, &mut st)),
                Err(e) => Err(qpack_error(e)),
            };
            match outcome {
                Ok(()) => {
                    self.streams.insert(id, st);
                }
                Err(Fault::Stream(code)) => self.reset_stream(conn, id, code),
                Err(f) => return Err(f),
            }
        }
        Ok(())
    }

    /// The peer's control stream (§6.2.1, §7.2): SETTINGS first and once, then GOAWAY,
    /// MAX_PUSH_ID, CANCEL_PUSH, PRIORITY_UPDATE; frames of other streams are unexpected.
    fn process_control<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
    ) -> Flow {
        loop {
            match st.state {
                State::FrameHeader => {
                    let Some((ty, len)) = st.read_frame_header(conn, id)? else {
                        if st.fin {
                            return Err(Error::ClosedCriticalStream.into());
                        }
                        return Ok(());
                    };
                    if self.peer_settings.is_none() && ty != frame::SETTINGS {
                        return Err(Error::MissingSettings.into());
                    }
                    let known = matches!(
                        ty,
                        frame::SETTINGS
                            | frame::GOAWAY
                            | frame::MAX_PUSH_ID
                            | frame::CANCEL_PUSH
                            | frame::PRIORITY_UPDATE_REQUEST
                            | frame::PRIORITY_UPDATE_PUSH
                    );
                    let unexpected =
                        matches!(ty, frame::DATA | frame::HEADERS | frame::PUSH_PROMISE)
                            || frame::is_http2_reserved(ty);
                    if unexpected {
                        return Err(Error::FrameUnexpected.into());
                    }
                    st.state = if known {
                        let limit = if ty == frame::PRIORITY_UPDATE_REQUEST
                            || ty == frame::PRIORITY_UPDATE_PUSH
                        {
                            self.max_priority_update_size.saturating_add(8)
                        } else {
                            MAX_CONTROL_PAYLOAD as u64
                        };
                        if len > limit {
                            return Err(Error::ExcessiveLoad.into());
                        }
                        st.payload.clear();
                        State::Payload {
                            ty,
                            len: len as usize,
                        }
                    } else {
                        State::Skip { remaining: len }
                    };
                }
                State::Payload { ty, len } => {
                    if !st.read_payload(conn, id, len)? {
                        return Ok(());
                    }
                    let payload = std::mem::take(&mut st.payload);
                    st.state = State::FrameHeader;
                    self.on_control_frame(conn, ty, &payload)?;
                }
                State::Skip { remaining } => match st.skip_frame(conn, id, remaining)? {
                    Skipped::All => {}
                    Skipped::Part => return Ok(()),
                    Skipped::EndedInside => return Err(Error::ClosedCriticalStream.into()),
                },
                _ => return Ok(()),
            }
        }
    }

    fn on_control_frame<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        ty: u64,
        payload: &[u8],
    ) -> Flow {
        h3_qlog!(conn, q => {
            let (control, len) = (self.peer_control.unwrap_or_default(), payload.len() as u64);
            q.frame(qlog::Framing::Parsed, control, ty, len, Some(payload))
        });
        match ty {
            frame::SETTINGS => {
                if self.peer_settings.is_some() {
                    return Err(Error::FrameUnexpected.into());
                }
                let settings = frame::parse_settings(payload)?;
                let get = |id| settings.iter().find(|(i, _)| *i == id).map(|(_, v)| *v);
                // Boolean settings take 0 or 1 only (RFC 9220 §3, RFC 9297 §2.1.1).
                for id in [
                    frame::SETTINGS_ENABLE_CONNECT_PROTOCOL,
                    frame::SETTINGS_H3_DATAGRAM,
                ] {
                    if get(id).is_some_and(|v| v > 1) {
                        return Err(Error::SettingsError.into());
                    }
                }
                self.qpack_encoder.apply_peer_settings(
                    get(frame::SETTINGS_QPACK_MAX_TABLE_CAPACITY).unwrap_or(0),
                    get(frame::SETTINGS_QPACK_BLOCKED_STREAMS).unwrap_or(0),
                );
                self.peer_dgram = get(frame::SETTINGS_H3_DATAGRAM) == Some(1);
                self.peer_extended_connect =
                    get(frame::SETTINGS_ENABLE_CONNECT_PROTOCOL) == Some(1);
                h3_qlog!(conn, q => q.parameters_set(crate::qlog::Owner::Remote, &settings, None));
                self.peer_settings = Some(settings);
            }
            frame::GOAWAY => {
                let goaway = frame::parse_single_varint(payload)?;
                // A server's GOAWAY names a client-initiated bidirectional stream (§5.2), and
                // GOAWAY identifiers never grow (§5.2).
                if (!self.is_server && (goaway & 0x3) != 0)
                    || self.goaway_received.is_some_and(|g| goaway > g)
                {
                    return Err(Error::IdError.into());
                }
                self.goaway_received = Some(goaway);
                self.events.push_back((goaway, Event::GoAway));
            }
            frame::MAX_PUSH_ID => {
                if !self.is_server {
                    return Err(Error::FrameUnexpected.into());
                }
                let max = frame::parse_single_varint(payload)?;
                // The maximum may not shrink (§7.2.7).
                if self.max_push_id.is_some_and(|m| max < m) {
                    return Err(Error::IdError.into());
                }
                self.max_push_id = Some(max);
            }
            frame::CANCEL_PUSH => {
                frame::parse_single_varint(payload)?;
                // We never push and never send MAX_PUSH_ID: to a server the push ID was never
                // promised, to a client it is beyond the maximum (§7.2.3).
                return Err(Error::IdError.into());
            }
            _ => {
                // PRIORITY_UPDATE: clients may not send it... to clients (RFC 9218 §7.2).
                if !self.is_server {
                    return Err(Error::FrameUnexpected.into());
                }
                let (element, value) = frame::parse_priority_update(payload)?;
                if ty == frame::PRIORITY_UPDATE_REQUEST {
                    if !is_bidi(element) || !is_client_initiated(element) {
                        return Err(Error::IdError.into());
                    }
                    if self.priority_updates.len() >= MAX_PRIORITY_UPDATES
                        && !self.priority_updates.contains_key(&element)
                    {
                        return Err(Error::ExcessiveLoad.into());
                    }
                    self.priority_updates.insert(element, value.to_vec());
                    self.events.push_back((element, Event::PriorityUpdate));
                } else {
                    // We never promise a push, so no push ID is valid (RFC 9218 §7.2).
                    return Err(Error::IdError.into());
                }
            }
        }
        let _ = conn;
        Ok(())
    }
}

/// Request streams: receiving.
impl Connection {
    /// A request stream's frames (§4.1): HEADERS, DATA, HEADERS (trailers); interim
    /// responses before the final one (clients); unknown frames skipped.
    fn process_request<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
    ) -> Flow {
        loop {
            match st.state {
                State::FrameHeader => {
                    let Some((ty, len)) = st.read_frame_header(conn, id)? else {
                        if st.fin {
                            return self.on_request_end(id, st);
                        }
                        return Ok(());
                    };
                    st.state = self.request_frame(st, ty, len)?;
                }
                State::Payload { len, .. } => {
                    if !st.read_payload(conn, id, len)? {
                        return Ok(());
                    }
                    let payload = std::mem::take(&mut st.payload);
                    st.state = State::FrameHeader;
                    match self
                        .qpack_decoder
                        .decode(id, &payload)
                        .map_err(qpack_error)?
                    {
                        qpack::Decoded::Blocked => {
                            st.state = State::Blocked;
                            h3_qlog!(conn, q => q.qpack_stream_blocked(id, true));
                            return Ok(());
                        }
                        qpack::Decoded::Fields(lines) => {
                            self.on_header_section(conn, id, st, lines)?
                        }
                    }
                    if !self.events.is_empty() {
                        // One header section at a time: the rest waits for the next poll.
                        if st.fin && st.state == State::FrameHeader && !conn.stream_readable(id) {
                            return self.on_request_end(id, st);
                        }
                        return Ok(());
                    }
                }
                State::Data { .. } => {
                    if !st.data_event_pending {
                        st.data_event_pending = true;
                        self.events.push_back((id, Event::Data));
                    }
                    return Ok(());
                }
                State::Skip { remaining } => match st.skip_frame(conn, id, remaining)? {
                    Skipped::All => {}
                    Skipped::Part => return Ok(()),
                    Skipped::EndedInside => return Err(Error::FrameError.into()),
                },
                State::Blocked => {
                    // The section waits for the encoder stream; meanwhile only a reset (or the
                    // end) matters, and it must be taken or the stream stays readable.
                    return match conn.stream_recv(id, &mut []) {
                        Ok((_, fin)) => {
                            st.fin |= fin;
                            Ok(())
                        }
                        Err(crate::Error::Done) => Ok(()),
                        Err(e) => Err(Error::from(e).into()),
                    };
                }
                State::Raw | State::StreamType | State::Finished => return Ok(()),
            }
        }
    }

    /// The state a request-stream frame leads to, or the error it is.
    fn request_frame(
        &self,
        st: &RecvStream,
        ty: u64,
        len: u64,
    ) -> std::result::Result<State, Fault> {
        match ty {
            frame::HEADERS => {
                // After trailers, or in a CONNECT tunnel (§4.1, §4.4).
                if st.trailers || st.tunnel {
                    return Err(Error::FrameUnexpected.into());
                }
                if len > self.max_field_section_size.min(MAX_HEADERS_PAYLOAD) {
                    // §4.2.2: beyond what we accept.
                    return Err(Fault::Stream(wire::EXCESSIVE_LOAD));
                }
                Ok(State::Payload {
                    ty,
                    len: len as usize,
                })
            }
            frame::DATA => {
                // DATA before the (final) headers, or after trailers (§4.1).
                if st.header_sections == 0 || st.trailers || (!self.is_server && !st.final_response)
                {
                    return Err(Error::FrameUnexpected.into());
                }
                if len == 0 {
                    return Ok(State::FrameHeader);
                }
                Ok(State::Data { remaining: len })
            }
            // No push ID was granted (§4.6, §7.2.5).
            frame::PUSH_PROMISE if !self.is_server => Err(Error::IdError.into()),
            frame::PUSH_PROMISE
            | frame::SETTINGS
            | frame::GOAWAY
            | frame::MAX_PUSH_ID
            | frame::CANCEL_PUSH
            | frame::PRIORITY_UPDATE_REQUEST
            | frame::PRIORITY_UPDATE_PUSH => Err(Error::FrameUnexpected.into()),
            t if frame::is_http2_reserved(t) => Err(Error::FrameUnexpected.into()),
            _ => Ok(State::Skip { remaining: len }),
        }
    }

    /// A decoded header section: checked (§4.1.2) and turned into a Headers event.
    fn on_header_section<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
        lines: Vec<qpack::FieldLine>,
    ) -> Flow {
        h3_qlog!(conn, q => {
            let fields = lines.iter().map(|l| (&l.name[..], &l.value[..]));
            q.headers(qlog::Framing::Parsed, id, None, fields)
        });
        let list: Vec<Header> = lines
            .iter()
            .map(|l| Header::new(&l.name, &l.value))
            .collect();
        let section = if st.header_sections > 0 && (self.is_server || st.final_response) {
            Section::Trailers
        } else if self.is_server {
            Section::Request
        } else {
            Section::Response
        };
        let checked = message::check(&list, section, self.extended_connect)
            .map_err(|_| Fault::Stream(wire::MESSAGE_ERROR))?;
        st.header_sections += 1;
        match section {
            Section::Trailers => st.trailers = true,
            Section::Request => {
                st.content_length = checked.content_length;
                st.priority = checked.priority;
                st.tunnel = checked.method.as_deref() == Some(b"CONNECT")
                    && !list.iter().any(|h| h.name() == b":protocol");
            }
            Section::Response => {
                let status = checked.status.unwrap_or(0);
                if status >= 200 {
                    st.final_response = true;
                    // Responses without content may announce a length (RFC 9110 §8.6).
                    let no_content =
                        status == 204 || status == 304 || self.head_requests.remove(&id);
                    st.tunnel = self.connect_requests.remove(&id) && status < 300;
                    st.content_length = checked.content_length.filter(|_| !no_content);
                }
            }
        }
        let more_frames = !st.fin || conn.stream_readable(id);
        self.events
            .push_back((id, Event::Headers { list, more_frames }));
        if !more_frames {
            self.on_request_end(id, st)?;
        }
        Ok(())
    }

    /// The stream's end at a frame boundary: the message must be complete (§4.1.2).
    fn on_request_end(&mut self, id: u64, st: &mut RecvStream) -> Flow {
        if st.finished_reported {
            return Ok(());
        }
        if self.is_server && st.header_sections == 0 {
            return Err(Fault::Stream(wire::REQUEST_INCOMPLETE));
        }
        if !self.is_server && !st.final_response {
            // No final response: an invalid sequence of messages (§4.1, §4.1.2).
            return Err(Fault::Stream(wire::MESSAGE_ERROR));
        }
        if st.content_length.is_some_and(|l| l != st.data_received) {
            return Err(Fault::Stream(wire::MESSAGE_ERROR));
        }
        st.state = State::Finished;
        st.finished_reported = true;
        self.finished_streams.push(id);
        self.events.push_back((id, Event::Finished));
        Ok(())
    }

    /// Reads body bytes of `stream_id` into `out`; `Error::Done` when none are ready.
    pub fn recv_body<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        out: &mut [u8],
    ) -> Result<usize> {
        self.recv_body_buf(conn, stream_id, out)
    }

    /// [`Connection::recv_body`] into a [`bytes::BufMut`], filled up to its remaining
    /// capacity (limit a growing one such as `Vec<u8>` with [`bytes::BufMut::limit`]).
    pub fn recv_body_buf<F: crate::BufFactory, B: bytes::BufMut>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        mut out: B,
    ) -> Result<usize> {
        let Some(mut st) = self.streams.remove(&stream_id) else {
            return Err(Error::Done);
        };
        let result = self.read_body(conn, stream_id, &mut st, &mut out);
        let drained = out.remaining_mut() > 0 || result.is_err();
        if drained {
            st.data_event_pending = false;
        }
        let outcome = match result {
            Ok(n) => {
                // A frame boundary may have been reached: let the parser go on (trailers,
                // the stream's end).
                let next = if matches!(st.state, State::FrameHeader) {
                    self.process_request(conn, stream_id, &mut st)
                } else {
                    Ok(())
                };
                next.map(|()| n)
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok(n) => {
                self.streams.insert(stream_id, st);
                self.flush(conn);
                if n == 0 {
                    return Err(Error::Done);
                }
                Ok(n)
            }
            Err(Fault::Stream(code)) => {
                self.reset_stream(conn, stream_id, code);
                Err(Error::MessageError)
            }
            Err(f) => Err(self.fail_on(conn, f)),
        }
    }

    /// Copies DATA payload bytes, crossing into the next DATA frame when one follows.
    fn read_body<F: crate::BufFactory, B: bytes::BufMut>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
        out: &mut B,
    ) -> std::result::Result<usize, Fault> {
        let mut total = 0;
        while out.remaining_mut() > 0 && !st.fin {
            let State::Data { remaining } = st.state else {
                break;
            };
            let want = usize::try_from(remaining)
                .unwrap_or(usize::MAX)
                .min(out.remaining_mut());
            let (n, fin) = match conn.stream_recv_buf(id, bytes::BufMut::limit(&mut *out, want)) {
                Ok(r) => r,
                Err(crate::Error::Done) => break,
                Err(crate::Error::StreamReset(code)) => {
                    self.events.push_back((id, Event::Reset(code)));
                    st.state = State::Finished;
                    st.finished_reported = true;
                    self.finished_streams.push(id);
                    break;
                }
                Err(e) => return Err(Error::from(e).into()),
            };
            total += n;
            st.data_received += n as u64;
            st.fin |= fin;
            let left = remaining - n as u64;
            st.state = if left == 0 {
                State::FrameHeader
            } else {
                State::Data { remaining: left }
            };
            if st.content_length.is_some_and(|l| st.data_received > l) {
                return Err(Fault::Stream(wire::MESSAGE_ERROR));
            }
            if left > 0 && fin {
                return Err(Error::FrameError.into());
            }
            if left == 0 {
                // The next frame, if it is DATA, continues the body.
                match st.read_frame_header(conn, id)? {
                    Some((ty, len)) => st.state = self.request_frame(st, ty, len)?,
                    None => break,
                }
            }
            if n == 0 {
                break;
            }
        }
        Ok(total)
    }
}

/// Request streams: sending.
impl Connection {
    fn check_open(&self) -> Result<()> {
        match self.closed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Writes a HEADERS frame of `headers` on stream `id`: all of it or none (the stream
    /// needs room for the whole frame).
    fn send_headers<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        headers: &[T],
        fin: bool,
    ) -> Result<()> {
        let mut section = Vec::new();
        let fields = headers.iter().map(|h| (h.name(), h.value()));
        self.qpack_encoder
            .encode(id, fields, &mut section)
            .map_err(|_| Error::InternalError)?;
        let mut framed = Vec::with_capacity(section.len() + 9);
        put_frame_header(&mut framed, frame::HEADERS, section.len() as u64);
        framed.extend_from_slice(&section);
        // QPACK instructions the section needs go out first (they may still arrive later;
        // the peer then holds the section until they do).
        self.flush(conn);
        let written = match conn.stream_send(id, &framed, fin) {
            Ok(n) => n,
            Err(crate::Error::Done) => 0,
            Err(e) => return Err(e.into()),
        };
        h3_qlog!(conn, q => {
            let fields = headers.iter().map(|h| (h.name(), h.value()));
            let len = Some(section.len() as u64);
            q.headers(qlog::Framing::Created, id, len, fields)
        });
        if written < framed.len() {
            // The encoder's state already includes this section: what did not fit is kept
            // and written before anything else on the stream.
            self.out.insert(id, framed.split_off(written));
            if fin {
                self.out_fin.insert(id);
            }
        }
        Ok(())
    }

    /// Sends a request; returns its stream ID. `StreamBlocked` when the peer allows no new
    /// stream now; `FrameUnexpected` after the server's GOAWAY covers new requests.
    pub fn send_request<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        headers: &[T],
        fin: bool,
    ) -> Result<u64> {
        self.check_open()?;
        let id = self.next_request_id;
        if self.goaway_received.is_some_and(|g| id >= g) {
            return Err(Error::FrameUnexpected);
        }
        if conn.peer_streams_left_bidi() == 0 {
            return Err(Error::TransportError(crate::Error::StreamLimit));
        }
        h3_qlog!(conn, q => q.stream_type_set(crate::qlog::Owner::Local, id, None));
        self.send_headers(conn, id, headers, fin)?;
        let method = headers
            .iter()
            .find(|h| h.name() == b":method")
            .map(|h| h.value());
        if method == Some(b"HEAD") {
            self.head_requests.insert(id);
        }
        if method == Some(b"CONNECT") && !headers.iter().any(|h| h.name() == b":protocol") {
            self.connect_requests.insert(id);
        }
        self.next_request_id += 4;
        Ok(id)
    }

    /// Sends a response's headers on the request's stream, at the priority the request asked
    /// for in its `priority` header (RFC 9218 §4), or the default.
    pub fn send_response<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        headers: &[T],
        fin: bool,
    ) -> Result<()> {
        let priority = self
            .streams
            .get(&stream_id)
            .and_then(|s| s.priority.as_deref())
            .and_then(|v| Priority::try_from(v).ok())
            .unwrap_or_default();
        self.send_response_with_priority(conn, stream_id, headers, &priority, fin)
    }

    /// Sends a response's headers and schedules the stream at `priority`.
    pub fn send_response_with_priority<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        headers: &[T],
        priority: &Priority,
        fin: bool,
    ) -> Result<()> {
        self.check_open()?;
        if !self.is_server {
            return Err(Error::FrameUnexpected);
        }
        conn.stream_priority(stream_id, priority.urgency(), priority.incremental())?;
        self.send_headers(conn, stream_id, headers, fin)
    }

    /// Sends interim (1xx) response headers, or trailers (`is_trailer_section`).
    pub fn send_additional_headers<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        headers: &[T],
        is_trailer_section: bool,
        fin: bool,
    ) -> Result<()> {
        self.check_open()?;
        let _ = is_trailer_section;
        self.send_headers(conn, stream_id, headers, fin)
    }

    /// [`Connection::send_additional_headers`], then sets the stream's priority (RFC 9218
    /// urgency and incremental flag), e.g. for a final response after interim ones.
    #[allow(clippy::too_many_arguments)]
    pub fn send_additional_headers_with_priority<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        headers: &[T],
        priority: &Priority,
        is_trailer_section: bool,
        fin: bool,
    ) -> Result<()> {
        self.send_additional_headers(conn, stream_id, headers, is_trailer_section, fin)?;
        conn.stream_priority(stream_id, priority.urgency(), priority.incremental())?;
        Ok(())
    }

    /// Sends body bytes as a DATA frame; returns how many were accepted (fewer when the
    /// stream is short of room; then wait until it is writable), `Error::Done` if none.
    pub fn send_body<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        body: &[u8],
        fin: bool,
    ) -> Result<usize> {
        self.send_data_frame(conn, stream_id, body.len(), fin, |conn, len, fin| {
            conn.stream_send(stream_id, &body[..len], fin)
        })
    }

    /// [`Connection::send_body`] of a buffer the stream takes over without copying it (see
    /// [`crate::Connection::stream_send_zc`]). On a partial write `body` is left holding the
    /// bytes not sent, to be offered again once the stream is writable.
    pub fn send_body_zc<F>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        body: &mut F::Buf,
        fin: bool,
    ) -> Result<usize>
    where
        F: crate::BufFactory,
        F::Buf: crate::BufSplit,
    {
        let total = body.as_ref().len();
        self.send_data_frame(conn, stream_id, total, fin, |conn, len, fin| {
            let rest = crate::BufSplit::split_at(body, len);
            let (n, left) = conn.stream_send_zc(stream_id, body.clone(), fin)?;
            if left.is_some() {
                return Err(crate::Error::InvalidState);
            }
            if len < total {
                *body = rest;
            }
            Ok(n)
        })
    }

    /// Writes a DATA frame header for as much of a body of `body_len` bytes as the stream
    /// takes whole with its header, then `write_body(conn, len, fin)` writes those `len`
    /// bytes. Returns `len`.
    fn send_data_frame<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        body_len: usize,
        fin: bool,
        write_body: impl FnOnce(&mut crate::Connection<F>, usize, bool) -> crate::Result<usize>,
    ) -> Result<usize> {
        self.check_open()?;
        self.flush(conn);
        if self.out.contains_key(&stream_id) {
            // The headers are not all written yet.
            return Err(Error::Done);
        }
        if body_len == 0 {
            if fin {
                conn.stream_send(stream_id, &[], true)?;
            }
            return Ok(0);
        }
        let capacity = match conn.stream_capacity(stream_id) {
            Ok(c) => c,
            Err(crate::Error::Done) => 0,
            Err(e) => return Err(e.into()),
        };
        // A frame header of at most 1 + 8 bytes: send only when some body fits after it.
        let mut header = [0u8; 9];
        let room = capacity.saturating_sub(1 + octets::varint_len(body_len as u64));
        if room == 0 {
            return Err(Error::Done);
        }
        let len = body_len.min(room);
        let hdr_len = {
            let mut b = octets::OctetsMut::with_slice(&mut header);
            b.put_varint(frame::DATA)
                .map_err(|_| Error::InternalError)?;
            b.put_varint(len as u64).map_err(|_| Error::InternalError)?;
            b.off()
        };
        let fin = fin && len == body_len;
        let n = conn.stream_send(stream_id, &header[..hdr_len], false)?;
        if n < hdr_len {
            return Err(Error::InternalError);
        }
        let written = write_body(conn, len, fin)?;
        if written < len {
            return Err(Error::InternalError);
        }
        h3_qlog!(conn, q => {
            let framing = qlog::Framing::Created;
            q.frame(framing, stream_id, frame::DATA, len as u64, None)
        });
        Ok(len)
    }

    /// Sends GOAWAY with `id` (a server: the first request stream it will not process; a
    /// client: a push ID). Identifiers may only shrink (§5.2).
    pub fn send_goaway<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
    ) -> Result<()> {
        self.check_open()?;
        if self.is_server && (id & 0x3) != 0 {
            return Err(Error::IdError);
        }
        if self.goaway_sent.is_some_and(|g| id > g) {
            return Err(Error::IdError);
        }
        self.goaway_sent = Some(id);
        let mut payload = Vec::new();
        put_varint(&mut payload, id);
        let control = self.out.entry(self.control_id).or_default();
        put_frame(control, frame::GOAWAY, &payload);
        h3_qlog!(conn, q => {
            let (control, len) = (self.control_id, payload.len() as u64);
            q.frame(qlog::Framing::Created, control, frame::GOAWAY, len, Some(&payload))
        });
        self.flush(conn);
        Ok(())
    }

    /// Sends PRIORITY_UPDATE for the request on `stream_id` (clients, RFC 9218 §7.1).
    pub fn send_priority_update_for_request<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        priority: &Priority,
    ) -> Result<()> {
        self.check_open()?;
        if self.is_server || !is_bidi(stream_id) || !is_client_initiated(stream_id) {
            return Err(Error::FrameUnexpected);
        }
        let mut payload = Vec::new();
        put_varint(&mut payload, stream_id);
        payload.extend_from_slice(&priority.to_field_value());
        let control = self.out.entry(self.control_id).or_default();
        put_frame(control, frame::PRIORITY_UPDATE_REQUEST, &payload);
        h3_qlog!(conn, q => {
            let (ty, len) = (frame::PRIORITY_UPDATE_REQUEST, payload.len() as u64);
            q.frame(qlog::Framing::Created, self.control_id, ty, len, Some(&payload))
        });
        self.flush(conn);
        Ok(())
    }

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
