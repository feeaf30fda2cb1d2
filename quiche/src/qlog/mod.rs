//! qlog output: the only place that builds qlog events (ARCHITECTURE.md, "qlog").
//!
//! A [`QlogLogger`] streams one connection's trace as JSON text sequences (`.sqlog`, RFC 7464)
//! in the qlog "0.3" schema (draft-ietf-quic-qlog-main-schema-05 and quic-events-04), the
//! version stock qvis opens. Event types and their serialization come from the `qlog` crate
//! (0.16); this module decides what to log and when.
//!
//! The connection holds an `Option<QlogLogger>` and calls the logger only when it is `Some`, so
//! a connection without qlog builds, formats and allocates nothing for it. With qlog on, each
//! event is serialized into one reused buffer and handed to the writer in a single `write_all`.
//!
//! The layers above the transport (HTTP/3 and QPACK, whose events `h3/qlog/` builds) write
//! through the same logger with an [`AppQlog`], which they reach with
//! [`crate::Connection::app_qlog`].
//!
//! Writing qlog never fails the connection: the first I/O error switches the logger off and is
//! kept for [`QlogLogger::error`].

mod app;
mod frame_log;
mod params;
mod reset;
mod streamer;

#[cfg(test)]
mod tests;

use std::fmt;
use std::io::Write;
use std::time::{Duration, Instant};

use ::qlog::events::connectivity::{self, ConnectionStateUpdated};
use ::qlog::events::quic::{
    self as q, CongestionStateUpdated, LossTimerUpdated, MetricsUpdated, PacketDropped,
    PacketHeader, PacketLost, PacketReceived, PacketSent,
};
use ::qlog::events::{Event, EventData, EventImportance, Eventable, RawInfo};
use ::qlog::{CommonFields, Configuration, QlogSeq, TraceSeq, VantagePoint, VantagePointType};

pub use self::app::AppQlog;
use self::frame_log::{duration_ms, hex};
pub use self::frame_log::{to_qlog_frame, FrameLog, DEFAULT_ACK_DELAY_EXPONENT, MAX_LOGGED_FRAMES};
use crate::frame::Frame;
use crate::packet::{Epoch, Type};
use crate::transport_params::TransportParams;

/// The qlog schema version written in the header record; qvis reads "0.3" files.
pub const QLOG_VERSION: &str = "0.3";

/// JSON text sequence record separator (RFC 7464 §2).
const RECORD_SEPARATOR: u8 = 0x1e;

/// A serialization buffer that grew past this (one huge event) is shrunk back afterwards, so a
/// single large ACK does not pin memory for the rest of the connection.
const BUF_KEEP: usize = 16 * 1024;

/// Which end of the connection the trace is written from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vantage {
    /// The client.
    Client,
    /// The server.
    Server,
}

/// Whose parameters (transport parameters, HTTP/3 settings), stream or QPACK table an event
/// is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// This endpoint's: parameters as sent to the peer, a stream it opened.
    Local,
    /// The peer's: parameters as received, a stream it opened.
    Remote,
}

/// Why a packet was discarded, with the trigger names of quic-events-04 §5.7.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The keys to remove protection are not (or no longer) available.
    KeyUnavailable,
    /// No connection matches the Destination Connection ID.
    UnknownConnectionId,
    /// The header could not be parsed.
    HeaderParseError,
    /// Packet protection could not be removed (authentication failed).
    PayloadDecryptError,
    /// The packet broke a protocol rule.
    ProtocolViolation,
    /// Dropped to protect against denial of service (e.g. amplification limits).
    DosPrevention,
    /// The packet's version is not supported.
    UnsupportedVersion,
    /// A packet of a type not expected in the connection's state.
    UnexpectedPacket,
    /// The Source Connection ID does not match the one in use.
    UnexpectedSourceConnectionId,
    /// The version differs from the connection's.
    UnexpectedVersion,
    /// A packet number that was already received.
    Duplicate,
    /// An Initial packet that breaks the rules for Initials (e.g. too small).
    InvalidInitial,
    /// An error in this implementation.
    InternalError,
}

impl DropReason {
    /// The draft's trigger name, written as the event's `details`.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::KeyUnavailable => "key_unavailable",
            DropReason::UnknownConnectionId => "unknown_connection_id",
            DropReason::HeaderParseError => "header_parse_error",
            DropReason::PayloadDecryptError => "payload_decrypt_error",
            DropReason::ProtocolViolation => "protocol_violation",
            DropReason::DosPrevention => "dos_prevention",
            DropReason::UnsupportedVersion => "unsupported_version",
            DropReason::UnexpectedPacket => "unexpected_packet",
            DropReason::UnexpectedSourceConnectionId => "unexpected_source_connection_id",
            DropReason::UnexpectedVersion => "unexpected_version",
            DropReason::Duplicate => "duplicate",
            DropReason::InvalidInitial => "invalid_initial",
            DropReason::InternalError => "internal_error",
        }
    }

    /// The nearest trigger the qlog 0.16 crate can express (it predates quic-events-04's list).
    fn trigger(self) -> q::PacketDroppedTrigger {
        use q::PacketDroppedTrigger as T;
        match self {
            DropReason::KeyUnavailable | DropReason::PayloadDecryptError => T::DecryptionFailure,
            DropReason::UnknownConnectionId => T::ConnectionUnknown,
            DropReason::HeaderParseError
            | DropReason::ProtocolViolation
            | DropReason::InvalidInitial => T::Invalid,
            DropReason::UnsupportedVersion => T::Unsupported,
            DropReason::DosPrevention
            | DropReason::UnexpectedPacket
            | DropReason::UnexpectedSourceConnectionId
            | DropReason::UnexpectedVersion
            | DropReason::Duplicate => T::Rejected,
            DropReason::InternalError => T::InternalError,
        }
    }
}

/// Which loss detection rule declared a packet lost (quic-events-04 §7.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossTrigger {
    /// The packet threshold (RFC 9002 §6.1.1).
    ReorderingThreshold,
    /// The time threshold (RFC 9002 §6.1.2).
    TimeThreshold,
    /// A probe timeout expired (RFC 9002 §6.2).
    PtoExpired,
}

/// Which recovery timer changed (quic-events-04 §7.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossTimer {
    /// The loss-time timer of the time threshold (qlog calls it "ack").
    Ack,
    /// The probe timeout.
    Pto,
}

/// What happened to a recovery timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerEvent {
    /// Armed (or re-armed) to fire this long after the event.
    Set(Duration),
    /// It fired.
    Expired,
    /// It was disarmed.
    Cancelled,
}

/// Why the congestion controller changed state, when there is more than one way in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionTrigger {
    /// Persistent congestion collapsed the window (RFC 9002 §7.6).
    PersistentCongestion,
    /// An ECN-CE mark (RFC 9002 §7.1).
    Ecn,
}

/// The connection states of quic-events-04 §4.6.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionState {
    /// The client sent its first Initial.
    Attempted,
    /// The server validated the client's address.
    PeerValidated,
    /// The handshake started.
    HandshakeStarted,
    /// 0-RTT or 0.5-RTT data can be sent.
    EarlyWrite,
    /// The TLS handshake completed.
    HandshakeCompleted,
    /// The handshake is confirmed (RFC 9001 §4.1.2).
    HandshakeConfirmed,
    /// CONNECTION_CLOSE sent, waiting out the closing period (RFC 9000 §10.2.1).
    Closing,
    /// CONNECTION_CLOSE received (RFC 9000 §10.2.2).
    Draining,
    /// Fully closed.
    Closed,
}

impl ConnectionState {
    fn to_qlog(self) -> connectivity::ConnectionState {
        use connectivity::ConnectionState as S;
        match self {
            ConnectionState::Attempted => S::Attempted,
            ConnectionState::PeerValidated => S::PeerValidated,
            ConnectionState::HandshakeStarted => S::HandshakeStarted,
            ConnectionState::EarlyWrite => S::EarlyWrite,
            ConnectionState::HandshakeCompleted => S::HandshakeCompleted,
            ConnectionState::HandshakeConfirmed => S::HandshakeConfirmed,
            ConnectionState::Closing => S::Closing,
            ConnectionState::Draining => S::Draining,
            ConnectionState::Closed => S::Closed,
        }
    }
}

/// A snapshot of the recovery metrics; the logger writes only the fields that changed since
/// the previous snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Congestion window in bytes.
    pub cwnd: u64,
    /// Bytes in flight.
    pub bytes_in_flight: u64,
    /// Smoothed RTT.
    pub smoothed_rtt: Duration,
    /// Latest RTT sample.
    pub latest_rtt: Duration,
    /// Minimum RTT.
    pub min_rtt: Duration,
    /// RTT variation.
    pub rtt_variance: Duration,
    /// Slow start threshold in bytes, `None` while it is still infinite.
    pub ssthresh: Option<u64>,
    /// Pacing rate in bytes per second (written as bits per second, qlog's unit), `None` when
    /// the controller sets none.
    pub pacing_rate: Option<u64>,
    /// The controller's bandwidth estimate in bytes per second (BBR), written as the custom
    /// field `bandwidth_estimate` in bits per second.
    pub bandwidth_estimate: Option<u64>,
    /// The controller's own min-RTT estimate (BBR), written as the custom field
    /// `cc_min_rtt` in milliseconds.
    pub cc_min_rtt: Option<Duration>,
}

/// Which events a trace keeps, by their importance in the qlog event definitions (quiche's
/// `QlogLevel`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QlogLevel {
    /// Core events only (packets sent, received and lost, metrics, parameters ...).
    Core = 0,
    /// Core and Base events (also dropped packets, state changes ...).
    Base = 1,
    /// Every event (also timers, MTU updates, frame-level HTTP/3 and QPACK details ...).
    Extra = 2,
}

impl QlogLevel {
    fn importance(self) -> EventImportance {
        match self {
            QlogLevel::Core => EventImportance::Core,
            QlogLevel::Base => EventImportance::Base,
            QlogLevel::Extra => EventImportance::Extra,
        }
    }
}

/// Streams one connection's qlog trace to a writer. See the module documentation.
pub struct QlogLogger {
    writer: Box<dyn Write + Send + Sync>,
    /// Events less important than this are not written.
    level: EventImportance,
    /// The streamer `Connection::qlog_streamer` hands out, once asked for.
    bridge: Option<Box<streamer::StreamerBridge>>,
    /// Client or server.
    vantage: VantagePointType,
    error: Option<std::io::Error>,
    start: Instant,
    /// Time of the last event written, in ms since `start`; later events never go below it.
    last_time: f32,
    buf: Vec<u8>,
    sent: FrameLog,
    received: FrameLog,
    scratch: FrameLog,
    last_metrics: Option<Metrics>,
    congestion_state: Option<String>,
    connection_state: Option<ConnectionState>,
    /// What the layers above the transport keep with the trace ([`AppQlog::state`]).
    app_state: Option<Box<dyn std::any::Any + Send + Sync>>,
    /// The connection's QUIC version, written in long packet headers.
    version: Option<u32>,
    /// Whether `quiche:loss_counters` was written (once per trace).
    counters_logged: bool,
}

impl fmt::Debug for QlogLogger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QlogLogger")
            .field("error", &self.error)
            .field("start", &self.start)
            .field("last_time", &self.last_time)
            .finish_non_exhaustive()
    }
}

impl QlogLogger {
    /// Starts a trace on `writer` and writes its header record.
    ///
    /// `odcid` (the Original Destination Connection ID) becomes the trace's `group_id`.
    /// Events are timed in milliseconds relative to `start`; `reference_time_ms` is the wall
    /// clock at `start` in milliseconds since the Unix epoch, which the library cannot read
    /// itself (pass 0.0 if unknown). A failure to write the header is kept, as any later one,
    /// in [`QlogLogger::error`], and leaves the logger disabled.
    pub fn new(
        writer: Box<dyn Write + Send + Sync>,
        title: String,
        description: String,
        vantage: Vantage,
        odcid: &[u8],
        reference_time_ms: f64,
        start: Instant,
    ) -> QlogLogger {
        let mut logger = QlogLogger {
            writer,
            level: EventImportance::Extra,
            bridge: None,
            vantage: match vantage {
                Vantage::Client => VantagePointType::Client,
                Vantage::Server => VantagePointType::Server,
            },
            error: None,
            start,
            last_time: 0.0,
            buf: Vec::new(),
            sent: FrameLog::default(),
            received: FrameLog::default(),
            scratch: FrameLog::default(),
            last_metrics: None,
            congestion_state: None,
            connection_state: None,
            app_state: None,
            version: None,
            counters_logged: false,
        };
        let ty = match vantage {
            Vantage::Client => VantagePointType::Client,
            Vantage::Server => VantagePointType::Server,
        };
        let header = QlogSeq {
            qlog_version: QLOG_VERSION.to_string(),
            qlog_format: "JSON-SEQ".to_string(),
            title: Some(title.clone()),
            description: Some(description.clone()),
            summary: None,
            trace: TraceSeq {
                vantage_point: VantagePoint {
                    name: None,
                    ty,
                    flow: None,
                },
                title: Some(title),
                description: Some(description),
                configuration: Some(Configuration::default()),
                common_fields: Some(CommonFields {
                    group_id: Some(hex(odcid)),
                    protocol_type: Some(vec!["QUIC".to_string()]),
                    reference_time: Some(reference_time_ms),
                    time_format: Some("relative".to_string()),
                }),
            },
        };
        logger.write_record(|buf| serde_json::to_writer(buf, &header));
        logger
    }

    /// Writes only the events of `level`'s importance and above from now on.
    pub fn set_level(&mut self, level: QlogLevel) {
        self.level = level.importance();
    }

    /// Whether an event of `importance` is written.
    fn keeps(&self, importance: EventImportance) -> bool {
        importance.is_contained_in(&self.level)
    }

    /// Whether events are still being written (no I/O error so far).
    pub fn is_enabled(&self) -> bool {
        self.error.is_none()
    }

    /// The I/O error that switched the logger off, if any.
    pub fn error(&self) -> Option<&std::io::Error> {
        self.error.as_ref()
    }

    /// Flushes the writer.
    pub fn flush(&mut self) {
        self.drain_streamer();
        if self.error.is_none() {
            if let Err(e) = self.writer.flush() {
                self.error = Some(e);
            }
        }
    }

    /// A `qlog` crate streamer whose events join this trace (quiche's `qlog_streamer`),
    /// created when first asked for.
    pub fn streamer(&mut self) -> &mut ::qlog::streamer::QlogStreamer {
        let (start, level, ty) = (self.start, self.level, self.vantage.clone());
        self.bridge
            .get_or_insert_with(|| Box::new(streamer::StreamerBridge::new(start, level, ty)))
            .streamer()
    }

    /// Writes the streamer's events into the trace.
    fn drain_streamer(&mut self) {
        if self.error.is_some() {
            return;
        }
        if let Some(bridge) = &self.bridge {
            if let Err(e) = bridge.drain_into(&mut self.writer) {
                self.error = Some(e);
            }
        }
    }

    /// `transport:parameters_set`. Also remembers each side's ack_delay_exponent, which scales
    /// the delay of the ACK frames that side writes.
    pub fn parameters_set(&mut self, now: Instant, owner: Owner, params: &TransportParams) {
        match owner {
            Owner::Local => self.sent.set_ack_delay_exponent(params.ack_delay_exponent),
            Owner::Remote => self
                .received
                .set_ack_delay_exponent(params.ack_delay_exponent),
        }
        if !self.is_enabled() {
            return;
        }
        let data = EventData::TransportParametersSet(params::params_to_qlog(owner, params));
        self.write_event(now, data);
    }

    /// Sets the QUIC version that long packet headers are logged with.
    pub fn set_version(&mut self, version: u32) {
        self.version = Some(version);
    }

    /// `transport:version_information` (RFC 9368): the versions each side offered and the one
    /// chosen, as hex strings.
    pub fn version_information(
        &mut self,
        now: Instant,
        server: Option<&[u32]>,
        client: Option<&[u32]>,
        chosen: u32,
    ) {
        if !self.is_enabled() {
            return;
        }
        let list = |v: Option<&[u32]>| v.map(|v| v.iter().map(|v| format!("{v:08x}")).collect());
        let data = EventData::VersionInformation(qlog::events::quic::VersionInformation {
            server_versions: list(server),
            client_versions: list(client),
            chosen_version: Some(format!("{chosen:08x}")),
        });
        self.write_event(now, data);
    }

    /// The frame log of the packet being built: push its frames while writing them, then call
    /// [`QlogLogger::packet_sent_from_log`]. Its ACK delays are scaled by the local
    /// ack_delay_exponent.
    pub fn sent_frames(&mut self) -> &mut FrameLog {
        &mut self.sent
    }

    /// The frame log of the packet being processed, for [`QlogLogger::packet_received_from_log`].
    /// Its ACK delays are scaled by the peer's ack_delay_exponent.
    pub fn received_frames(&mut self) -> &mut FrameLog {
        &mut self.received
    }

    /// `transport:packet_sent` with the frames of [`QlogLogger::sent_frames`], which is then
    /// cleared. `len` is the packet's size on the wire.
    pub fn packet_sent_from_log(&mut self, now: Instant, ty: Type, pn: u64, len: usize) {
        if self.is_enabled() {
            let frames = self.sent.take();
            let frames = self.emit_packet_sent(now, ty, pn, len, frames);
            self.sent.restore(frames);
        }
        self.sent.clear();
    }

    /// `transport:packet_received` with the frames of [`QlogLogger::received_frames`], which is
    /// then cleared.
    pub fn packet_received_from_log(&mut self, now: Instant, ty: Type, pn: u64, len: usize) {
        if self.is_enabled() {
            let frames = self.received.take();
            let frames = self.emit_packet_received(now, ty, pn, len, frames);
            self.received.restore(frames);
        }
        self.received.clear();
    }

    /// `transport:packet_sent` for a packet whose frames are at hand as [`Frame`]s.
    pub fn packet_sent<'f, 'a: 'f>(
        &mut self,
        now: Instant,
        ty: Type,
        pn: u64,
        len: usize,
        frames: impl IntoIterator<Item = &'f Frame<'a>>,
    ) {
        if !self.is_enabled() {
            return;
        }
        let exp = self.sent.ack_delay_exponent();
        let frames = self.fill_scratch(exp, frames);
        let frames = self.emit_packet_sent(now, ty, pn, len, frames);
        self.scratch.restore(frames);
    }

    /// `transport:packet_received` for a packet whose frames are at hand as [`Frame`]s.
    pub fn packet_received<'f, 'a: 'f>(
        &mut self,
        now: Instant,
        ty: Type,
        pn: u64,
        len: usize,
        frames: impl IntoIterator<Item = &'f Frame<'a>>,
    ) {
        if !self.is_enabled() {
            return;
        }
        let exp = self.received.ack_delay_exponent();
        let frames = self.fill_scratch(exp, frames);
        let frames = self.emit_packet_received(now, ty, pn, len, frames);
        self.scratch.restore(frames);
    }

    /// `transport:packet_dropped`. `ty` is `None` when not even the header could be read.
    pub fn packet_dropped(
        &mut self,
        now: Instant,
        ty: Option<Type>,
        len: usize,
        reason: DropReason,
    ) {
        if !self.is_enabled() {
            return;
        }
        let data = EventData::PacketDropped(PacketDropped {
            header: ty.map(|ty| header(ty, None, self.version)),
            raw: Some(raw_len(len)),
            datagram_id: None,
            details: Some(reason.as_str().to_string()),
            trigger: Some(reason.trigger()),
        });
        self.write_event(now, data);
    }

    /// `recovery:metrics_updated` with the fields that differ from the previous call (all of
    /// them the first time); nothing is written when nothing changed.
    pub fn metrics_updated(&mut self, now: Instant, m: &Metrics) {
        if !self.is_enabled() {
            return;
        }
        let prev = self.last_metrics;
        self.last_metrics = Some(*m);
        let changed = |f: fn(&Metrics) -> Duration| match prev {
            Some(p) if f(&p) == f(m) => None,
            _ => Some(duration_ms(f(m))),
        };
        let mut ex_data = qlog::events::ExData::new();
        if let Some(bw) = changed_u64(
            prev.and_then(|p| p.bandwidth_estimate),
            m.bandwidth_estimate,
        ) {
            ex_data.insert(
                "bandwidth_estimate".to_string(),
                bw.saturating_mul(8).into(),
            );
        }
        if let Some(rtt) = m
            .cc_min_rtt
            .filter(|&r| prev.is_none_or(|p| p.cc_min_rtt != Some(r)))
        {
            ex_data.insert("cc_min_rtt".to_string(), duration_ms(rtt).into());
        }
        let update = MetricsUpdated {
            ex_data,
            min_rtt: changed(|m| m.min_rtt),
            smoothed_rtt: changed(|m| m.smoothed_rtt),
            latest_rtt: changed(|m| m.latest_rtt),
            rtt_variance: changed(|m| m.rtt_variance),
            pto_count: None,
            congestion_window: changed_u64(prev.map(|p| p.cwnd), Some(m.cwnd)),
            bytes_in_flight: changed_u64(prev.map(|p| p.bytes_in_flight), Some(m.bytes_in_flight)),
            ssthresh: changed_u64(prev.and_then(|p| p.ssthresh), m.ssthresh),
            packets_in_flight: None,
            pacing_rate: changed_u64(prev.and_then(|p| p.pacing_rate), m.pacing_rate)
                .map(|bytes| bytes.saturating_mul(8)),
        };
        if update == MetricsUpdated::default() {
            return;
        }
        self.write_event(now, EventData::MetricsUpdated(update));
    }

    /// `recovery:congestion_state_updated` when `new` (a state name such as `slow_start`, see
    /// `cc::CcState::as_str`) differs from the state last logged; the previous one is `old`.
    pub fn congestion_state_updated(
        &mut self,
        now: Instant,
        new: &str,
        trigger: Option<CongestionTrigger>,
    ) {
        if !self.is_enabled() || self.congestion_state.as_deref() == Some(new) {
            return;
        }
        let old = self.congestion_state.replace(new.to_string());
        let data = EventData::CongestionStateUpdated(CongestionStateUpdated {
            old,
            new: new.to_string(),
            trigger: trigger.map(|t| match t {
                CongestionTrigger::PersistentCongestion => {
                    q::CongestionStateUpdatedTrigger::PersistentCongestion
                }
                CongestionTrigger::Ecn => q::CongestionStateUpdatedTrigger::Ecn,
            }),
        });
        self.write_event(now, data);
    }

    /// `recovery:packet_lost`.
    pub fn packet_lost(&mut self, now: Instant, ty: Type, pn: u64, trigger: LossTrigger) {
        if !self.is_enabled() {
            return;
        }
        let data = EventData::PacketLost(PacketLost {
            header: Some(header(ty, Some(pn), self.version)),
            frames: None,
            trigger: Some(match trigger {
                LossTrigger::ReorderingThreshold => q::PacketLostTrigger::ReorderingThreshold,
                LossTrigger::TimeThreshold => q::PacketLostTrigger::TimeThreshold,
                LossTrigger::PtoExpired => q::PacketLostTrigger::PtoExpired,
            }),
        });
        self.write_event(now, data);
    }

    /// `recovery:loss_timer_updated`. `space` is `None` when the event concerns no particular
    /// packet number space (e.g. cancelling every timer).
    pub fn loss_timer_updated(
        &mut self,
        now: Instant,
        timer: LossTimer,
        space: Option<Epoch>,
        event: TimerEvent,
    ) {
        if !self.is_enabled() {
            return;
        }
        let (event_type, delta) = match event {
            TimerEvent::Set(d) => (q::LossTimerEventType::Set, Some(duration_ms(d))),
            TimerEvent::Expired => (q::LossTimerEventType::Expired, None),
            TimerEvent::Cancelled => (q::LossTimerEventType::Cancelled, None),
        };
        let data = EventData::LossTimerUpdated(LossTimerUpdated {
            timer_type: Some(match timer {
                LossTimer::Ack => q::TimerType::Ack,
                LossTimer::Pto => q::TimerType::Pto,
            }),
            packet_number_space: space.map(|s| match s {
                Epoch::Initial => q::PacketNumberSpace::Initial,
                Epoch::Handshake => q::PacketNumberSpace::Handshake,
                Epoch::Application => q::PacketNumberSpace::ApplicationData,
            }),
            event_type,
            delta,
        });
        self.write_event(now, data);
    }

    /// `connectivity:connection_state_updated` when `new` differs from the state last logged.
    pub fn connection_state_updated(&mut self, now: Instant, new: ConnectionState) {
        if !self.is_enabled() || self.connection_state == Some(new) {
            return;
        }
        let old = self.connection_state.replace(new);
        let data = EventData::ConnectionStateUpdated(ConnectionStateUpdated {
            old: old.map(ConnectionState::to_qlog),
            new: new.to_qlog(),
        });
        self.write_event(now, data);
    }

    /// `connectivity:mtu_updated`: the path MTU search changed the datagram size (`done` once
    /// the search is over for now).
    pub fn mtu_updated(&mut self, now: Instant, old: usize, new: usize, done: bool) {
        if !self.is_enabled() {
            return;
        }
        let size = |v: usize| u16::try_from(v).unwrap_or(u16::MAX);
        let data = EventData::MtuUpdated(connectivity::MtuUpdated {
            old: Some(size(old)),
            new: size(new),
            done: Some(done),
        });
        self.write_event(now, data);
    }

    /// `quiche:loss_counters`, an event of this library's own (qlog readers take an unknown
    /// event as plain JSON): the connection's loss and retransmission counters by cause,
    /// one field per pair (serde_json orders the keys by name), written once, when the
    /// connection starts to close, so that a trace says how much was resent and why (loss,
    /// PTO probe, spurious loss).
    pub fn loss_counters(&mut self, now: Instant, fields: &[(&str, u64)]) {
        if !self.is_enabled() || self.counters_logged || !self.keeps(EventImportance::Extra) {
            return;
        }
        self.counters_logged = true;
        let elapsed = duration_ms(now.saturating_duration_since(self.start));
        let time = elapsed.max(self.last_time);
        self.last_time = time;
        let data: serde_json::Map<String, serde_json::Value> = fields
            .iter()
            .map(|&(k, v)| (k.to_owned(), v.into()))
            .collect();
        let record = serde_json::json!({
            "time": time,
            "name": "quiche:loss_counters",
            "data": data,
        });
        self.write_record(|buf| serde_json::to_writer(buf, &record));
    }

    fn fill_scratch<'f, 'a: 'f>(
        &mut self,
        ack_delay_exponent: u64,
        frames: impl IntoIterator<Item = &'f Frame<'a>>,
    ) -> Vec<::qlog::events::quic::QuicFrame> {
        self.scratch.clear();
        self.scratch.set_ack_delay_exponent(ack_delay_exponent);
        for f in frames {
            self.scratch.push_frame(f);
        }
        self.scratch.take()
    }

    /// Writes a `packet_sent` event and hands the frame vector back for reuse.
    fn emit_packet_sent(
        &mut self,
        now: Instant,
        ty: Type,
        pn: u64,
        len: usize,
        frames: Vec<q::QuicFrame>,
    ) -> Vec<q::QuicFrame> {
        let data = EventData::PacketSent(PacketSent {
            header: header(ty, Some(pn), self.version),
            raw: Some(raw_len(len)),
            frames: Some(frames.into()),
            ..Default::default()
        });
        match self.write_event(now, data) {
            EventData::PacketSent(PacketSent {
                frames: Some(f), ..
            }) => f.into_vec(),
            _ => Vec::new(),
        }
    }

    /// Writes a `packet_received` event and hands the frame vector back for reuse.
    fn emit_packet_received(
        &mut self,
        now: Instant,
        ty: Type,
        pn: u64,
        len: usize,
        frames: Vec<q::QuicFrame>,
    ) -> Vec<q::QuicFrame> {
        let data = EventData::PacketReceived(PacketReceived {
            header: header(ty, Some(pn), self.version),
            raw: Some(raw_len(len)),
            frames: Some(frames),
            ..Default::default()
        });
        match self.write_event(now, data) {
            EventData::PacketReceived(PacketReceived {
                frames: Some(f), ..
            }) => f,
            _ => Vec::new(),
        }
    }

    /// Writes one event timed at `now` and returns its data, so that callers can recover the
    /// allocations inside it.
    fn write_event(&mut self, now: Instant, data: EventData) -> EventData {
        let time = self.event_time(now);
        let event = Event::with_time(time, data);
        if !self.keeps(event.importance()) {
            return event.data;
        }
        self.write_record(|buf| serde_json::to_writer(buf, &event));
        event.data
    }

    /// The relative time of an event at `now`. qlog tools expect events in time order
    /// (main-schema-05 §3.4.1): a caller that hands in an earlier `now` than before gets the
    /// previous event's time instead.
    fn event_time(&mut self, now: Instant) -> f32 {
        let elapsed = duration_ms(now.saturating_duration_since(self.start));
        let time = elapsed.max(self.last_time);
        self.last_time = time;
        time
    }

    /// `recovery:ecn_state_updated` (quic-events-12 §7.6; the qlog crate has no type for it, so
    /// the event is written as plain JSON). States are `testing`, `unknown`, `failed` and
    /// `capable`.
    pub fn ecn_state_updated(&mut self, now: Instant, old: Option<&str>, new: &str) {
        if !self.is_enabled() || !self.keeps(EventImportance::Extra) {
            return;
        }
        let time = self.event_time(now);
        let mut data = serde_json::Map::new();
        if let Some(old) = old {
            data.insert("old".to_string(), old.into());
        }
        data.insert("new".to_string(), new.into());
        let event = serde_json::json!({
            "time": json_time(time),
            "name": "recovery:ecn_state_updated",
            "data": data,
        });
        self.write_record(|buf| serde_json::to_writer(buf, &event));
    }

    /// Writes one JSON text sequence record: RS, the JSON text, LF (RFC 7464 §2).
    fn write_record(&mut self, serialize: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>) {
        self.drain_streamer();
        if self.error.is_some() {
            return;
        }
        self.buf.clear();
        self.buf.push(RECORD_SEPARATOR);
        let result = match serialize(&mut self.buf) {
            Ok(()) => {
                self.buf.push(b'\n');
                self.writer.write_all(&self.buf)
            }
            Err(e) => Err(e.into()),
        };
        if self.buf.capacity() > BUF_KEEP {
            self.buf = Vec::new();
        }
        if let Err(e) = result {
            self.error = Some(e);
        }
    }
}

impl Drop for QlogLogger {
    fn drop(&mut self) {
        self.flush();
    }
}

/// An event time as the qlog crate writes it (an f32's shortest form), not widened to f64, so
/// that consecutive events compare in order: for the events written as plain JSON.
fn json_time(time: f32) -> serde_json::Value {
    time.to_string()
        .parse::<serde_json::Number>()
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

fn changed_u64(prev: Option<u64>, new: Option<u64>) -> Option<u64> {
    match (prev, new) {
        (Some(p), Some(n)) if p == n => None,
        _ => new,
    }
}

fn packet_type(ty: Type) -> q::PacketType {
    match ty {
        Type::Initial => q::PacketType::Initial,
        Type::Retry => q::PacketType::Retry,
        Type::Handshake => q::PacketType::Handshake,
        Type::ZeroRTT => q::PacketType::ZeroRtt,
        Type::VersionNegotiation => q::PacketType::VersionNegotiation,
        Type::Short => q::PacketType::OneRtt,
    }
}

fn header(ty: Type, pn: Option<u64>, version: Option<u32>) -> PacketHeader {
    // Retry and Version Negotiation packets carry no packet number (RFC 9000 §17.2.1, §17.2.5).
    let pn = match ty {
        Type::Retry | Type::VersionNegotiation => None,
        _ => pn,
    };
    // Long headers carry the version (1-RTT and Version Negotiation ones do not).
    let version = match ty {
        Type::Short | Type::VersionNegotiation => None,
        _ => version.map(|v| format!("{v:08x}")),
    };
    PacketHeader {
        packet_type: packet_type(ty),
        packet_number: pn,
        version,
        ..Default::default()
    }
}

fn raw_len(len: usize) -> RawInfo {
    RawInfo {
        length: Some(len as u64),
        payload_length: None,
        data: None,
    }
}
