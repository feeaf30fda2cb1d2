//! The connection's qlog events. Every event goes through the `qlog!` macro: without the `qlog`
//! feature it compiles to nothing, and without a writer it is one `Option` check, so the hot
//! path builds, formats and allocates nothing when qlog is off (ARCHITECTURE.md, "qlog").

use std::time::Instant;

use super::Connection;

/// Runs `$body` with the connection's qlog logger bound to `$q`, if qlog is on.
macro_rules! qlog {
    ($conn:expr, $q:ident => $body:expr) => {
        #[cfg(feature = "qlog")]
        if let Some($q) = $conn.qlog.as_deref_mut() {
            $body;
        }
    };
}
pub(super) use qlog;

/// What `set_qlog` was given, kept until the trace can start.
#[cfg(feature = "qlog")]
pub(super) struct PendingQlog {
    writer: Box<dyn std::io::Write + Send + Sync>,
    title: String,
    description: String,
    reference_time_ms: f64,
    start: Instant,
    level: crate::qlog::QlogLevel,
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Writes this connection's qlog (JSON-SEQ, qlog 0.3, the format qvis opens) to `writer`.
    /// `title` and `description` go into the trace header, whose `group_id` is the client's
    /// original Destination Connection ID: on a server that has not received the client's
    /// first Initial yet (accepted without a Retry), the trace starts with that packet.
    #[cfg(feature = "qlog")]
    pub fn set_qlog(
        &mut self,
        writer: Box<dyn std::io::Write + Send + Sync>,
        title: String,
        description: String,
    ) {
        self.set_qlog_with_reference_time(writer, title, description, 0.0);
    }

    /// As [`Connection::set_qlog`], with `now` as the start of the trace's relative times (for
    /// virtual clocks: a connection that was not used yet knows no time of its own).
    #[cfg(feature = "qlog")]
    pub fn set_qlog_at(
        &mut self,
        writer: Box<dyn std::io::Write + Send + Sync>,
        title: String,
        description: String,
        now: std::time::Instant,
    ) {
        self.last_now.get_or_insert(now);
        self.set_qlog_with_reference_time(writer, title, description, 0.0);
    }

    /// As [`Connection::set_qlog`], with the wall-clock time of the trace's start in
    /// milliseconds since the Unix epoch (the library does not read the clock itself).
    #[cfg(feature = "qlog")]
    pub fn set_qlog_with_reference_time(
        &mut self,
        writer: Box<dyn std::io::Write + Send + Sync>,
        title: String,
        description: String,
        reference_time_ms: f64,
    ) {
        let start = self.last_now.unwrap_or_else(Self::wall_now);
        let trace = PendingQlog {
            writer,
            title,
            description,
            reference_time_ms,
            start,
            level: crate::qlog::QlogLevel::Extra,
        };
        self.begin_qlog(trace);
    }

    /// As [`Connection::set_qlog`], writing only the events of `qlog_level`'s importance and
    /// above (qlog's Core, Base and Extra events; `set_qlog` writes them all).
    #[cfg(feature = "qlog")]
    pub fn set_qlog_with_level(
        &mut self,
        writer: Box<dyn std::io::Write + Send + Sync>,
        title: String,
        description: String,
        qlog_level: crate::qlog::QlogLevel,
    ) {
        let start = self.last_now.unwrap_or_else(Self::wall_now);
        self.begin_qlog(PendingQlog {
            writer,
            title,
            description,
            reference_time_ms: 0.0,
            start,
            level: qlog_level,
        });
    }

    /// A `qlog` crate streamer whose events go into this connection's trace, for the
    /// application's own events; `None` until the trace started (see `set_qlog`). The crate is
    /// qlog 0.16 (schema 0.3, what qvis opens), not quiche 0.30's qlog 0.18.
    #[cfg(feature = "qlog")]
    pub fn qlog_streamer(&mut self) -> Option<&mut ::qlog::streamer::QlogStreamer> {
        self.qlog
            .as_deref_mut()
            .map(crate::qlog::QlogLogger::streamer)
    }

    /// Starts `trace` now, or once the client's original DCID is known (see `set_qlog`).
    #[cfg(feature = "qlog")]
    fn begin_qlog(&mut self, trace: PendingQlog) {
        if self.is_server && self.odcid.is_empty() {
            // The trace's group_id is the client's original DCID, which a server accepted
            // without a Retry learns only from the first Initial: the header waits for it.
            self.qlog_pending = Some(Box::new(trace));
            return;
        }
        self.start_qlog(trace);
    }

    /// Starts the trace that waited for the client's original DCID, once it is known.
    #[cfg(feature = "qlog")]
    pub(super) fn start_pending_qlog(&mut self) {
        if let Some(trace) = self.qlog_pending.take() {
            self.start_qlog(*trace);
        }
    }

    #[cfg(feature = "qlog")]
    fn start_qlog(&mut self, trace: PendingQlog) {
        use crate::qlog::{ConnectionState, Owner, QlogLogger, Vantage};
        let PendingQlog {
            writer,
            title,
            description,
            reference_time_ms,
            start,
            level,
        } = trace;
        let vantage = if self.is_server {
            Vantage::Server
        } else {
            Vantage::Client
        };
        let mut logger = QlogLogger::new(
            writer,
            title,
            description,
            vantage,
            &self.odcid,
            reference_time_ms,
            start,
        );
        logger.set_level(level);
        logger.set_version(self.versions.current());
        logger.parameters_set(start, Owner::Local, &self.local_tp);
        if let Some(tp) = &self.peer_tp {
            logger.parameters_set(start, Owner::Remote, tp);
        }
        logger.connection_state_updated(start, ConnectionState::Attempted);
        self.qlog = Some(Box::new(logger));
        self.qlog_metrics(start);
    }

    /// The qlog trace for events of the layers above the transport (the HTTP/3 layer's
    /// `http:*` and `qpack:*` events, or an application's own), timed with the connection's
    /// clock: the `now` of the last `recv`, `send` or `on_timeout` call, so that they fall in
    /// order among the transport's events. `None` when no trace is being written (none was
    /// set, or writing failed): callers then build nothing.
    #[cfg(feature = "qlog")]
    pub fn app_qlog(&mut self) -> Option<crate::qlog::AppQlog<'_>> {
        let now = self.last_now;
        self.qlog.as_deref_mut()?.app(now)
    }

    /// Logs the recovery metrics and congestion state; the logger writes only what changed.
    pub(super) fn qlog_metrics(&mut self, now: Instant) {
        #[cfg(feature = "qlog")]
        if let Some(q) = self.qlog.as_deref_mut() {
            use crate::cc::CongestionControl;
            let sender = &self.paths.active().sender;
            let rtt = sender.rtt();
            let cc = sender.controller();
            q.metrics_updated(
                now,
                &crate::qlog::Metrics {
                    cwnd: sender.cwnd() as u64,
                    bytes_in_flight: self.recovery.bytes_in_flight() as u64,
                    smoothed_rtt: rtt.smoothed_rtt(),
                    latest_rtt: rtt.latest_rtt(),
                    min_rtt: rtt.min_rtt(),
                    rtt_variance: rtt.rttvar(),
                    ssthresh: cc.ssthresh().map(|s| s as u64),
                    pacing_rate: sender.pacer().rate(),
                    bandwidth_estimate: cc.bandwidth_estimate(),
                    cc_min_rtt: cc.min_rtt_estimate(),
                },
            );
            q.congestion_state_updated(now, cc.state().as_str(), None);
        }
        #[cfg(not(feature = "qlog"))]
        let _ = now;
    }

    /// Logs a change of the connection's state.
    #[cfg(feature = "qlog")]
    pub(super) fn qlog_state(&mut self, now: Instant, state: crate::qlog::ConnectionState) {
        use crate::qlog::ConnectionState as S;
        let closing = matches!(state, S::Closing | S::Draining | S::Closed);
        let stats = if closing && self.qlog.is_some() {
            Some(self.stats())
        } else {
            None
        };
        if let Some(q) = self.qlog.as_deref_mut() {
            if let Some(s) = stats {
                q.loss_counters(
                    now,
                    &[
                        ("sent", s.sent as u64),
                        ("lost", s.lost as u64),
                        (
                            "lost_by_packet_threshold",
                            s.lost_by_packet_threshold as u64,
                        ),
                        ("lost_by_time_threshold", s.lost_by_time_threshold as u64),
                        ("spurious_lost", s.spurious_lost as u64),
                        ("retrans", s.retrans as u64),
                        ("retrans_after_loss", s.retrans_after_loss as u64),
                        ("retrans_in_probes", s.retrans_in_probes as u64),
                        ("pto_count", s.pto_count as u64),
                        ("pto_probes_sent", s.pto_probes_sent as u64),
                        ("persistent_congestion", s.persistent_congestion as u64),
                        ("stream_lost_bytes", s.stream_retrans_bytes),
                        ("stream_resent_bytes", s.stream_resent_bytes),
                        ("ack_frames_sent", s.ack_frames_sent as u64),
                        ("ack_frames_received", s.ack_frames_received as u64),
                    ],
                );
            }
            q.connection_state_updated(now, state);
        }
    }
}
