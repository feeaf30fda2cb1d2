//! The QUIC connection: the public API and the coordination of TLS, packet spaces, recovery and
//! streams. Opening a connection is in `open.rs`, the receive pipeline in `recv.rs`, the send
//! pipeline in `send.rs`, the effects of each frame in `frame_dispatch.rs`, the stream API in
//! `stream_api.rs`, and the handshake glue in `handshake.rs` (ARCHITECTURE.md has the rest).
//!
//! Everything takes `now` from the caller. The methods without `_at` (`recv`, `send`,
//! `timeout`, `on_timeout`) are quiche-compatible wrappers and the only places that read the
//! clock.

mod ack_frequency;
mod conn_flow;
mod datagram;
pub mod ecn;
mod frame_dispatch;
mod frame_writers;
#[cfg(any(test, feature = "fuzzing"))]
mod fuzzing;
mod handshake;
mod ids;
#[cfg(feature = "boringssl-boring-crate")]
mod in_handshake;
mod keepalive;
pub mod key_phase;
mod migration;
mod open;
mod pacing;
mod pmtud;
mod qlog;
mod recv;
mod scratch;
mod send;
pub mod sent_frames;
pub mod spaces;
pub mod state;
pub mod stats;
mod stream_api;
mod stream_calls;
#[cfg(test)]
pub(crate) mod tests;
mod version_state;
mod version_switch;
mod zero_rtt_keys;

use std::marker::PhantomData;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::buffers::{BufFactory, DefaultBufFactory};
use crate::cid::ConnectionIds;
use crate::config::Config;
use crate::dgram::DatagramQueue;
use crate::error::{Error, Result};
use crate::packet::{ConnectionId, Epoch};
use crate::recovery::{Recovery, RecoveryConfig};
use crate::stream::{Shutdown, StreamConfig, StreamIter, StreamMap};
use crate::tls::Handshake;
use crate::transport_params::TransportParams;

use self::conn_flow::ConnFlowControl;
use self::key_phase::OneRttKeys;
use self::scratch::Scratch;
use self::sent_frames::SentFrames;
use self::spaces::PacketSpace;
use self::state::Lifecycle;
use self::version_state::VersionState;

pub use self::open::{
    accept, accept_with_buf_factory, accept_with_retry, connect, connect_with_buffer_factory,
    RetryConnectionIds,
};
#[cfg(feature = "custom-client-dcid")]
pub use self::open::{connect_with_dcid, connect_with_dcid_and_buffer_factory};
#[cfg(all(feature = "ffi", feature = "boringssl-boring-crate"))]
pub(crate) use self::open::{connect_with_tls, random_client_dcid};
pub use self::state::ConnectionError;
pub use self::stats::{PathStats, PathStatsIter, Stats, TxBufferTrackingState};

/// Information about a received datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvInfo {
    /// The address the datagram came from.
    pub from: SocketAddr,
    /// The address it was received on.
    pub to: SocketAddr,
}

/// Information about a datagram to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendInfo {
    /// The local address to send from.
    pub from: SocketAddr,
    /// The address to send to.
    pub to: SocketAddr,
    /// When to send it: pacing asks the application to hold the datagram until then.
    pub at: Instant,
    /// The ECN codepoint to put in the two low bits of the IP header's TOS / traffic class
    /// byte: [`ecn::ECT0`] while the path the datagram goes out on is being validated for ECN
    /// or was found capable, 0 (not-ECT) otherwise and on probes of other paths (RFC 9000
    /// §13.4; each path is validated on its own). Beyond quiche's API.
    pub ecn: u8,
}

/// The ACK Delay exponent of Initial and Handshake packets, in both directions, whatever the
/// transport parameters say (they may not be known yet).
const HANDSHAKE_ACK_DELAY_EXPONENT: u64 = 3;

/// A QUIC connection.
///
/// `F` makes the buffers that hold stream and datagram data (see [`BufFactory`]); plain
/// `Connection` uses the default, heap-allocated ones.
pub struct Connection<F = DefaultBufFactory>
where
    F: BufFactory,
{
    is_server: bool,
    /// The QUIC version of our packets, the one the connection started in, a pending switch.
    versions: VersionState,

    /// The connection ID we chose; the peer addresses packets to it.
    scid: ConnectionId<'static>,
    /// `scid` in hex, for logs ([`Connection::trace_id`]).
    trace_id: String,
    /// The connection ID we address packets to.
    dcid: ConnectionId<'static>,
    /// The Destination Connection ID of the client's first Initial (derives Initial keys and
    /// must come back in the server's `original_destination_connection_id`).
    odcid: ConnectionId<'static>,
    /// Whether the client has learnt the server's connection ID from its first packet.
    dcid_from_peer: bool,
    /// The token a client puts in its Initial packets (from a Retry).
    token: Option<Vec<u8>>,
    /// The Source Connection ID of the Retry: a client's, the one it processed, which the
    /// server's `retry_source_connection_id` must match (RFC 9000 §7.3); a server's, the one
    /// it was accepted with (`accept_with_retry`), when it is not the server's own ID.
    retry_scid: Option<ConnectionId<'static>>,

    /// The connection's paths (RFC 9000 §9): addresses, validation, amplification budgets.
    paths: crate::path::PathSet,
    /// The path the datagram being processed arrived on (`None`: a path not seen before,
    /// created once a packet of the datagram authenticates).
    recv_path: Option<usize>,
    /// `recv_path` was created by the packet being processed (see `settle_new_path`).
    recv_path_new: bool,
    /// The path a new path's packet moved the peer to, once the path is settled.
    migrate_to: Option<usize>,
    /// The datagram being processed (for the path that `recv_path` may create).
    recv_info: Option<(RecvInfo, usize)>,
    /// The path the datagram being built goes out on.
    send_path: usize,
    /// The packet being built is a probe on a path other than the active one: only
    /// PATH_CHALLENGE/PATH_RESPONSE frames go in it.
    probe_only: bool,
    /// A PATH_CHALLENGE or PATH_RESPONSE went into the packet being built: the datagram is
    /// padded to 1200 bytes (RFC 9000 §8.2.1, §8.2.2).
    pad_for_path_frames: bool,
    /// The validated path to come back to if the active path fails validation (§9.3.2).
    fallback_path: Option<usize>,

    tls: Handshake,
    local_tp: TransportParams,
    peer_tp: Option<TransportParams>,

    spaces: [PacketSpace; 3],
    one_rtt: Option<OneRttKeys>,
    /// 0-RTT keys: the client seals with them, the server opens with them.
    zero_rtt: zero_rtt_keys::ZeroRttKeys,

    recovery: Recovery<SentFrames>,
    /// Spaces ack-eliciting datagrams out at the congestion controller's rate.
    recovery_config: RecoveryConfig,
    cc_factory: Option<std::sync::Arc<dyn crate::cc::CcFactory>>,
    /// Makes the IDs we issue (random bytes without one).
    cid_generator: Option<std::sync::Arc<dyn crate::cid::ConnectionIdGenerator>>,
    /// Buffers reused from packet to packet (ACK outcomes, sent-packet records).
    scratch: Scratch,

    streams: StreamMap,
    /// Connection-level flow control, both directions (MAX_DATA, DATA_BLOCKED).
    flow: ConnFlowControl,
    /// CRYPTO data went to TLS since the last `drive_handshake`.
    tls_fed: bool,

    lifecycle: Lifecycle,
    handshake_complete: bool,
    handshake_confirmed: bool,
    handshake_done_pending: bool,
    /// The peer acknowledged our HANDSHAKE_DONE (server): probes stop repeating it.
    handshake_done_acked: bool,
    /// Anti-deadlock probe asked for by recovery (clients, RFC 9002 §6.2.2.1).
    anti_deadlock_probe: bool,
    /// Where the last PTO without new data stopped queueing a stream's unacknowledged bytes
    /// again (stream ID, offset): the next one goes on from there.
    probe_requeue_cursor: Option<(u64, u64)>,
    /// ECN bookkeeping per packet number space (RFC 9000 §13.4.1); each path has its own
    /// validation (`Path::ecn`).
    ecn: crate::ecn::EcnLedger,
    /// The ECN codepoint of the datagram being processed (`recv_with_ecn`), counted for each of
    /// its packets that is processed.
    recv_ecn: u8,
    /// 1-RTT packets that arrived before the keys to open them (servers before the handshake
    /// completes); replayed once the keys are usable. Bounded.
    undecryptable: Vec<(Vec<u8>, RecvInfo, u8)>,

    /// Our connection IDs and the peer's (NEW/RETIRE_CONNECTION_ID, stateless reset tokens).
    cids: ConnectionIds,
    /// DATAGRAM payloads waiting for a packet (RFC 9221).
    dgram_send: DatagramQueue<F::DgramBuf>,
    /// DATAGRAM payloads received and not yet read.
    dgram_recv: DatagramQueue<F::DgramBuf>,

    /// The packet being written is a PMTU probe: PING + PADDING only.
    pmtu_probe_building: bool,
    /// The peer's ACK delay exponent, for decoding its ACK frames.
    peer_ack_delay_exponent: u64,
    last_now: Option<Instant>,
    /// Which 1-RTT packet numbers to skip, to catch optimistic ACKs.
    pn_skipper: crate::recovery::PnSkipper,
    /// The ACK frequency policy towards the peer, when both sides offered the extension.
    ack_freq: Option<crate::ack_frequency::AckFrequencySender>,
    stats: Stats,
    #[cfg(feature = "qlog")]
    qlog: Option<Box<crate::qlog::QlogLogger>>,
    /// A server's trace waiting for the client's first Initial (see `set_qlog`).
    #[cfg(feature = "qlog")]
    qlog_pending: Option<Box<self::qlog::PendingQlog>>,
    /// The config's tuning values the connection reads after its creation.
    tuning: crate::config::tuning::Tuning,
    /// What `stats()` derives from the connection's history (time with bytes in flight,
    /// delivery rate, largest RTT).
    tracker: self::stats::StatsTracker,
    /// `Config::enable_early_data` was called.
    early_data_enabled: bool,
    /// See [`Connection::early_data_reason`].
    early_data_reason: u32,
    buf_factory: PhantomData<F>,
}

/// The time whose worth of data at the sending rate one burst may hold (see
/// [`Connection::send_quantum`]); Linux sizes TSO bursts to about a millisecond the same way.
pub const SEND_QUANTUM_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);

/// The largest burst [`Connection::send_quantum`] suggests: what one UDP GSO send can carry.
pub const MAX_SEND_QUANTUM: usize = 64 * 1024;

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// The active path's sender: its controller, RTT estimate and pacer.
    #[inline]
    pub(super) fn sender(&self) -> &crate::sender::PathSender {
        &self.paths.active().sender
    }

    /// The active path's sender, mutably.
    #[inline]
    pub(super) fn sender_mut(&mut self) -> &mut crate::sender::PathSender {
        &mut self.paths.active_mut().sender
    }

    /// Whether this is the server side.
    pub fn is_server(&self) -> bool {
        self.is_server
    }

    // ---------------------------------------------------------------------------------------
    // The clock-reading compatibility wrappers.

    #[allow(clippy::disallowed_methods)]
    fn wall_now() -> Instant {
        Instant::now()
    }

    /// Processes a datagram received from the peer; returns the bytes consumed.
    pub fn recv(&mut self, buf: &mut [u8], info: RecvInfo) -> Result<usize> {
        self.recv_at(buf, info, Self::wall_now())
    }

    /// As [`Connection::recv`], for a datagram whose IP header carried the ECN codepoint `ecn`
    /// (the two low bits of the TOS / traffic class byte): the codepoints are counted and
    /// reported to the peer in ACK frames (RFC 9000 §13.4.1). Beyond quiche's API.
    pub fn recv_with_ecn(&mut self, buf: &mut [u8], info: RecvInfo, ecn: u8) -> Result<usize> {
        self.recv_with_ecn_at(buf, info, ecn, Self::wall_now())
    }

    /// Writes one datagram to send into `out`; `Error::Done` when there is nothing to send.
    pub fn send(&mut self, out: &mut [u8]) -> Result<(usize, SendInfo)> {
        self.send_at(out, Self::wall_now())
    }

    /// How long until `on_timeout` must be called, if a timer is armed.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_at(Self::wall_now())
    }

    /// Handles expired timers.
    ///
    /// An event loop may call this slightly before [`Connection::timeout`]'s instant: libev,
    /// for one, measures its timers from the time it cached when its loop iteration began, so
    /// the timer fires up to that iteration's processing time early. Had that early call done
    /// nothing, `timeout()` would return zero moments later, and a loop that treats a zero
    /// repeat as "stop the timer" (quiche's C examples use `ev_timer_again`) would never call
    /// again: a connection closing in such a client never closed. So a timer due within the
    /// timer granularity (RFC 9002 §6.1.2, 1 ms) is handled now, as if called at its instant.
    pub fn on_timeout(&mut self) {
        self.on_timeout_from_event_loop_at(Self::wall_now());
    }

    /// [`Connection::on_timeout`] at `now`: the timers due by `now`, or the first timer if it
    /// is due within [`crate::rtt::GRANULARITY`] of `now`, handled at its instant.
    pub(crate) fn on_timeout_from_event_loop_at(&mut self, now: Instant) {
        let at = match self.timeout_instant() {
            Some(due) if due > now && due - now <= crate::rtt::GRANULARITY => due,
            _ => now,
        };
        self.on_timeout_at(at);
    }

    // ---------------------------------------------------------------------------------------
    // Timers.

    /// How long after `now` until `on_timeout_at` must be called, if a timer is armed.
    pub fn timeout_at(&self, now: Instant) -> Option<Duration> {
        self.timeout_instant()
            .map(|t| t.saturating_duration_since(now))
    }

    /// The instant the next timer fires, if one is armed.
    pub fn timeout_instant(&self) -> Option<Instant> {
        if self.lifecycle.is_closed() {
            return None;
        }
        let lifecycle = self.lifecycle.deadline();
        if self.lifecycle.is_closing_or_draining() {
            return lifecycle;
        }
        let acks = self.spaces.iter().filter_map(|s| s.acks.ack_deadline());
        let paths = self.paths.next_timeout(self.sender().pto());
        [lifecycle, self.recovery.loss_detection_timer(), paths]
            .into_iter()
            .flatten()
            .chain(acks)
            .min()
    }

    /// Handles the timers due at `now`.
    pub fn on_timeout_at(&mut self, now: Instant) {
        self.last_now = Some(now);
        self.lifecycle.on_timeout(now);
        if self.lifecycle.is_closed() {
            #[cfg(feature = "qlog")]
            {
                self.qlog_state(now, crate::qlog::ConnectionState::Closed);
                if let Some(q) = self.qlog.as_deref_mut() {
                    q.flush();
                }
            }
            return;
        }
        if self.lifecycle.is_closing_or_draining() {
            return;
        }
        if let Some(keys) = self.one_rtt.as_mut() {
            keys.expire_prev(now);
        }
        self.on_loss_detection_timeout(now);
        self.on_path_timeout(now);
        self.track_bytes_in_flight(now);
        // A delayed ACK that is due is owed by the next `send`, whatever instant that call
        // passes: an early `send` must not find it not yet due and leave `timeout()` at zero.
        for space in &mut self.spaces {
            if space.acks.ack_deadline().is_some_and(|due| due <= now) {
                space.acks.request_ack_now();
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // Key update.

    /// Starts a key update (RFC 9001 §6): packets are sent with the next key phase from now
    /// on. Only after the handshake is confirmed, and only once a packet sent with the current
    /// keys was acknowledged (§6.5); `Error::Done` when that is not the case yet.
    pub fn initiate_key_update(&mut self) -> Result<()> {
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        self.initiate_key_update_at(now)
    }

    fn initiate_key_update_at(&mut self, now: Instant) -> Result<()> {
        if !self.handshake_confirmed {
            return Err(Error::InvalidState);
        }
        let largest_acked = self.recovery.largest_acked(Epoch::Application);
        let keep_prev = now + self.sender().pto() * 3;
        let keys = self.one_rtt.as_mut().ok_or(Error::InvalidState)?;
        match keys.first_sent_in_phase {
            Some(first) if largest_acked.is_some_and(|l| l >= first) => {}
            _ => return Err(Error::Done),
        }
        keys.update(keep_prev);
        self.stats.local_key_updates += 1;
        Ok(())
    }

    /// Updates keys before the AEAD confidentiality limit is reached (RFC 9001 §6.6).
    pub(super) fn maybe_update_keys_for_limit(&mut self, now: Instant) {
        let Some(keys) = self.one_rtt.as_ref() else {
            return;
        };
        let limit = keys.seal.confidentiality_limit();
        if keys.sealed_in_phase >= limit - limit / 4 {
            let _ = self.initiate_key_update_at(now);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Closing.

    /// Closes the connection with the given error and reason (an application close when `app`).
    pub fn close(&mut self, app: bool, err: u64, reason: &[u8]) -> Result<()> {
        if self.lifecycle.is_closing_or_draining() {
            return Err(Error::Done);
        }
        let error = ConnectionError {
            is_app: app,
            error_code: err,
            reason: reason.to_vec(),
        };
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        self.close_with(error, now);
        Ok(())
    }

    /// Starts closing with `error`: CONNECTION_CLOSE goes out in every space we have keys for,
    /// or nothing does and the connection ends if there are none (a server that never heard
    /// from the client).
    fn close_with(&mut self, error: ConnectionError, now: Instant) {
        if self.spaces.iter().all(|s| s.seal.is_none()) && self.one_rtt.is_none() {
            self.lifecycle.close_immediately(Some(error));
            return;
        }
        let pto = self.sender().pto();
        self.lifecycle.close(error, now, pto);
        #[cfg(feature = "qlog")]
        self.qlog_state(now, crate::qlog::ConnectionState::Closing);
    }

    /// Closes because of a protocol error detected locally.
    fn close_on_error(&mut self, err: Error, now: Instant) {
        self.close_with(
            ConnectionError {
                is_app: false,
                error_code: err.to_wire(),
                reason: Vec::new(),
            },
            now,
        );
    }

    // ---------------------------------------------------------------------------------------
    // State queries.

    /// Whether the handshake completed.
    pub fn is_established(&self) -> bool {
        self.handshake_complete && !self.lifecycle.is_closing_or_draining()
    }

    /// Whether the connection resumed an earlier session.
    pub fn is_resumed(&self) -> bool {
        self.tls.is_resumed()
    }

    /// The QUIC version the connection uses now: the configured one, or the one a client
    /// switched to after Version Negotiation (RFC 9368 §2.1).
    pub fn version(&self) -> u32 {
        self.versions.current()
    }

    /// Whether the connection is draining, as quiche means it: the peer closed it, or we did
    /// and our CONNECTION_CLOSE has been sent. No application data moves any more; keep calling
    /// `recv`, `timeout` and `on_timeout` until [`Connection::is_closed`] (calling `send` is
    /// optional: it only repeats CONNECTION_CLOSE to a peer that keeps sending).
    pub fn is_draining(&self) -> bool {
        self.lifecycle.is_draining_for_api()
    }

    /// Whether the connection is closed and can be freed.
    pub fn is_closed(&self) -> bool {
        self.lifecycle.is_closed()
    }

    /// Whether the idle timeout closed the connection.
    pub fn is_timed_out(&self) -> bool {
        self.lifecycle.is_timed_out()
    }

    /// The error the peer closed the connection with.
    pub fn peer_error(&self) -> Option<&ConnectionError> {
        self.lifecycle.peer_error()
    }

    /// The error we closed the connection with.
    pub fn local_error(&self) -> Option<&ConnectionError> {
        self.lifecycle.local_error()
    }

    /// The negotiated ALPN protocol (empty before the handshake chose one).
    pub fn application_proto(&self) -> &[u8] {
        self.tls.alpn().unwrap_or(&[])
    }

    /// The server name the client asked for (SNI).
    pub fn server_name(&self) -> Option<&str> {
        self.tls.server_name()
    }

    /// A string identifying the connection in logs: our connection ID in hex.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// Our connection ID.
    pub fn source_id(&self) -> ConnectionId<'_> {
        ConnectionId::from_ref(&self.scid)
    }

    /// The peer's connection ID.
    pub fn destination_id(&self) -> ConnectionId<'_> {
        ConnectionId::from_ref(&self.dcid)
    }

    /// The serialized TLS session, for a later connection to resume with
    /// [`Connection::set_session`] (clients; `None` until the server sent a ticket).
    ///
    /// With BoringSSL (feature `boringssl-boring-crate`) these are quiche's bytes: BoringSSL's
    /// encoded session and the server's transport parameters, valid in any process (a session
    /// file) and interchangeable with quiche's. With rustls, which cannot serialize a session,
    /// they are a handle valid only in this process for connections of the same `Config`.
    pub fn session(&self) -> Option<&[u8]> {
        self.tls.session()
    }

    /// Offers a session saved by [`Connection::session`] for resumption, and 0-RTT if the
    /// config enables early data (clients, before the first `send`). Bytes that cannot be
    /// resumed fail with `TlsFail`, the reason logged as a warning (with rustls: a session
    /// from another process or another `Config`, or whose tickets were all used); the
    /// connection then makes a full handshake.
    pub fn set_session(&mut self, session: &[u8]) -> Result<()> {
        self.tls.set_session(session)
    }

    /// The peer's leaf certificate, DER-encoded (`None` if it sent none).
    pub fn peer_cert(&self) -> Option<&[u8]> {
        self.tls.peer_cert()
    }

    /// The peer's certificate chain, DER-encoded, the leaf first.
    pub fn peer_cert_chain(&self) -> Option<Vec<&[u8]>> {
        self.tls.peer_cert_chain()
    }

    /// Writes TLS secrets in the NSS key log format to `writer`, including those logged before
    /// this call (quiche's signature). Lines are written only when the config enabled
    /// [`Config::log_keys`]; without it the writer is dropped, as quiche ignores it then.
    ///
    /// [`Config::log_keys`]: crate::Config::log_keys
    pub fn set_keylog(&mut self, writer: Box<dyn std::io::Write + Send + Sync>) {
        // The only failure is "key logging not enabled", which quiche also passes over silently.
        let _ = self.tls.set_keylog(writer);
    }

    /// Whether reserved ("GREASE") values are sent where the protocols allow them
    /// ([`crate::Config::grease`]): HTTP/3 reads it.
    pub fn grease_enabled(&self) -> bool {
        self.tuning.grease
    }

    /// The largest UDP payload this connection sends now on the active path: with path MTU
    /// discovery, the largest size found to get through there.
    pub fn max_send_udp_payload_size(&self) -> usize {
        self.sender().max_datagram_size()
    }

    /// How many bytes the application may send in one burst (GSO batch) now: the controller's
    /// quantum (the initial window for the built-in ones, RFC 9002 §7.7), or, when that is
    /// less, what the sending rate moves in [`SEND_QUANTUM_INTERVAL`], up to
    /// [`MAX_SEND_QUANTUM`]. A fast path then needs a system call per 64 KiB rather than per ten
    /// datagrams, while a burst stays a fraction of a millisecond of the rate. The datagrams of
    /// a burst still carry their own paced `SendInfo::at`.
    pub fn send_quantum(&self) -> usize {
        use crate::cc::CongestionControl;
        let cc = self.sender().controller();
        let rate = self.sender().pacer().rate().or_else(|| {
            crate::cc::pacer::Pacer::default_rate(cc.cwnd(), self.sender().rtt().smoothed_rtt())
        });
        let by_rate = rate.map_or(0, |r| {
            let bytes = u128::from(r) * SEND_QUANTUM_INTERVAL.as_nanos() / 1_000_000_000;
            usize::try_from(bytes).unwrap_or(usize::MAX)
        });
        cc.send_quantum()
            .max(by_rate.min(MAX_SEND_QUANTUM))
            .min(cc.cwnd().max(self.sender().max_datagram_size()))
    }

    /// The peer's transport parameters, once received.
    pub fn peer_transport_params(&self) -> Option<&TransportParams> {
        self.peer_tp.as_ref()
    }

    /// The space of `epoch`.
    fn space(&mut self, epoch: Epoch) -> &mut PacketSpace {
        &mut self.spaces[epoch.index()]
    }
}
