//! Counters a connection exposes through `stats()` and `path_stats()`, and the few it
//! derives from its history as it goes (time with bytes in flight, delivery rate, largest
//! RTT).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::Connection;
use crate::buffers::BufFactory;
use crate::cc::StartupExit;
use crate::path::PathState;

/// Statistics about a connection. The leading fields follow quiche's order, so the C struct
/// `quiche_stats` can mirror them.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Packets received (successfully decrypted).
    pub recv: usize,
    /// Packets sent.
    pub sent: usize,
    /// Packets declared lost.
    pub lost: usize,
    /// Packets sent that carried STREAM or CRYPTO bytes sent before (repairing a loss).
    pub retrans: usize,
    /// Bytes sent (UDP payload bytes).
    pub sent_bytes: u64,
    /// Bytes received (UDP payload bytes).
    pub recv_bytes: u64,
    /// Bytes of the packets declared lost.
    pub lost_bytes: u64,
    /// Stream bytes of the packets declared lost, which are queued to be sent again (see
    /// `stream_resent_bytes` for the bytes actually sent again).
    pub stream_retrans_bytes: u64,
    /// Number of network paths the connection has used.
    pub paths_count: usize,
    /// Packets declared lost because 3 later packets were acknowledged (RFC 9002 §6.1.1).
    pub lost_by_packet_threshold: usize,
    /// Packets declared lost because they were outstanding longer than 9/8 RTT (§6.1.2).
    pub lost_by_time_threshold: usize,
    /// Packets declared lost and later acknowledged after all.
    pub spurious_lost: usize,
    /// Probe timeouts that fired.
    pub pto_count: usize,
    /// Probe packets sent because of PTO.
    pub pto_probes_sent: usize,
    /// Times persistent congestion collapsed the window.
    pub persistent_congestion: usize,
    /// Datagrams or packets dropped on receipt (undecryptable, duplicate, malformed ...).
    pub dropped: usize,
    /// Key updates the peer initiated.
    pub peer_key_updates: usize,
    /// Key updates this endpoint initiated.
    pub local_key_updates: usize,
    /// Packets declared lost that were sent during the first slow start, HyStart++'s
    /// Conservative or Limited Slow Start included (see [`Connection::cc_stats`] for when it
    /// ended).
    ///
    /// [`Connection::cc_stats`]: crate::Connection::cc_stats
    pub lost_in_first_slow_start: usize,
    /// Of the `retrans` packets, those sent under the congestion window to repair a declared
    /// loss (not beyond quiche's fields: Rust only, not in `quiche_stats`).
    pub retrans_after_loss: usize,
    /// Of the `retrans` packets, those sent as PTO probes (RFC 9002 §6.2.4): they resend
    /// unacknowledged data that was not declared lost.
    pub retrans_in_probes: usize,
    /// Packets sent marked ECT(0) (RFC 9000 §13.4; Rust only).
    pub ecn_ect0_sent: usize,
    /// Congestion events the peer's ECN-CE counts caused: window reductions, at most one per
    /// round trip (RFC 9002 §7.1; Rust only).
    pub ecn_ce_congestion_events: usize,
    /// STREAM bytes sent again (Rust only): repairs of declared losses and PTO probes. Against
    /// `stream_retrans_bytes` (the STREAM bytes of packets declared lost), anything above 1.0
    /// is data resent that was never declared lost.
    pub stream_resent_bytes: u64,
    /// Bytes of the packets the peer acknowledged (UDP payload bytes).
    pub acked_bytes: u64,
    /// DATAGRAM frames received.
    pub dgram_recv: usize,
    /// DATAGRAM frames sent.
    pub dgram_sent: usize,
    /// Streams this endpoint reset (`stream_shutdown` of the write side).
    pub reset_stream_count_local: u64,
    /// Streams this endpoint stopped reading (`stream_shutdown` of the read side).
    pub stopped_stream_count_local: u64,
    /// RESET_STREAM frames received.
    pub reset_stream_count_remote: u64,
    /// STOP_SENDING frames received.
    pub stopped_stream_count_remote: u64,
    /// DATA_BLOCKED frames sent: the peer's connection window held data back.
    pub data_blocked_sent_count: u64,
    /// STREAM_DATA_BLOCKED frames sent: a stream window of the peer's held data back.
    pub stream_data_blocked_sent_count: u64,
    /// DATA_BLOCKED frames received.
    pub data_blocked_recv_count: u64,
    /// STREAM_DATA_BLOCKED frames received.
    pub stream_data_blocked_recv_count: u64,
    /// STREAMS_BLOCKED frames for bidirectional streams received: the peer wanted to open
    /// more than we allowed.
    pub streams_blocked_bidi_recv_count: u64,
    /// STREAMS_BLOCKED frames for unidirectional streams received.
    pub streams_blocked_uni_recv_count: u64,
    /// PATH_CHALLENGE frames received.
    pub path_challenge_rx_count: u64,
    /// Times a datagram spent the rest of the anti-amplification budget of a path not yet
    /// validated (RFC 9000 §8.1): sending stopped until the peer sent more.
    pub amplification_limited_count: u64,
    /// How long bytes were in flight (sent, not yet acknowledged or declared lost), in total.
    pub bytes_in_flight_duration: Duration,
    /// Whether the connection's count of unsent stream bytes agrees with the stream buffers.
    pub tx_buffered_state: TxBufferTrackingState,
    /// ACK frames sent, all packet number spaces (Rust only).
    pub ack_frames_sent: usize,
    /// ACK frames received, all packet number spaces (Rust only).
    pub ack_frames_received: usize,
    /// ACK_FREQUENCY frames sent (draft-ietf-quic-ack-frequency-12; Rust only).
    pub ack_frequency_frames_sent: usize,
}

/// Whether the connection's own count of stream bytes written but not sent agrees with what
/// its streams hold (quiche's check of its send-buffer accounting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TxBufferTrackingState {
    /// They agree.
    #[default]
    Ok,
    /// The connection counts more unsent bytes than the streams hold: flow-control credit
    /// would be lost.
    Inconsistent,
}

/// Statistics about the path of a connection.
#[derive(Clone, Debug)]
pub struct PathStats {
    /// The local address of the path.
    pub local_addr: SocketAddr,
    /// The peer address of the path.
    pub peer_addr: SocketAddr,
    /// Whether the peer's address is validated (ends the anti-amplification limit).
    pub validated: bool,
    /// Where the path is in its validation.
    pub validation_state: PathState,
    /// Whether the connection sends its data on this path.
    pub active: bool,
    /// Probe timeouts that fired on the path.
    pub total_pto_count: usize,
    /// DATAGRAM frames received on the path.
    pub dgram_recv: usize,
    /// DATAGRAM frames sent on the path.
    pub dgram_sent: usize,
    /// DATAGRAM frames in packets declared lost that went out on the path.
    pub dgram_lost: usize,
    /// The largest RTT sample.
    pub max_rtt: Option<Duration>,
    /// Bytes acknowledged per second over the last round trip or so (0 before the first).
    pub delivery_rate: u64,
    /// The controller's bandwidth estimate in bytes per second (BBR.bw; BBR only).
    pub max_bandwidth: Option<u64>,
    /// Persistent RTT jumps confirmed. quiche counts them only in its gcongestion BBR with an
    /// internal setting (off by default); no controller here detects them: always 0.
    pub rtt_persistent_jump_count: u64,
    /// How the first slow start (BBR: Startup) ended.
    pub startup_exit: Option<StartupExit>,
    /// Packets received on the path.
    pub recv: usize,
    /// Packets sent on the path.
    pub sent: usize,
    /// Packets declared lost on the path.
    pub lost: usize,
    /// Packets carrying retransmitted data.
    pub retrans: usize,
    /// Smoothed round-trip time.
    pub rtt: Duration,
    /// Minimum round-trip time seen.
    pub min_rtt: Option<Duration>,
    /// Latest round-trip time sample.
    pub latest_rtt: Duration,
    /// Round-trip time variation.
    pub rttvar: Duration,
    /// Congestion window in bytes.
    pub cwnd: usize,
    /// Slow-start threshold in bytes, once set.
    pub ssthresh: Option<usize>,
    /// Bytes sent and not yet acknowledged or declared lost.
    pub bytes_in_flight: usize,
    /// Pacing rate in bytes per second, if pacing.
    pub pacing_rate: Option<u64>,
    /// The congestion controller's state, by its qlog name.
    pub cc_state: &'static str,
    /// Bytes sent on the path.
    pub sent_bytes: u64,
    /// Bytes received on the path.
    pub recv_bytes: u64,
    /// Bytes declared lost on the path.
    pub lost_bytes: u64,
    /// Stream bytes retransmitted on the path.
    pub stream_retrans_bytes: u64,
    /// The maximum UDP payload size used on the path.
    pub pmtu: usize,
}

/// What [`Connection::path_stats`] returns: an iterator over the connection's paths, as in
/// quiche (here the active path alone), that also dereferences to that path's statistics (the
/// form most callers want: `conn.path_stats().rtt`).
///
/// [`Connection::path_stats`]: crate::Connection::path_stats
#[derive(Clone, Debug)]
pub struct PathStatsIter {
    path: PathStats,
    yielded: bool,
}

impl PathStatsIter {
    pub(crate) fn new(path: PathStats) -> Self {
        PathStatsIter {
            path,
            yielded: false,
        }
    }
}

impl Iterator for PathStatsIter {
    type Item = PathStats;

    fn next(&mut self) -> Option<PathStats> {
        if self.yielded {
            return None;
        }
        self.yielded = true;
        Some(self.path.clone())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(!self.yielded);
        (n, Some(n))
    }
}

impl ExactSizeIterator for PathStatsIter {}

impl std::ops::Deref for PathStatsIter {
    type Target = PathStats;

    fn deref(&self) -> &PathStats {
        &self.path
    }
}

/// The history `stats()` summarises: since when bytes are in flight, a delivery-rate window
/// and the largest RTT sample.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StatsTracker {
    in_flight_since: Option<Instant>,
    in_flight_total: Duration,
    /// Start of the current delivery-rate window and the bytes acknowledged then.
    rate_window: Option<(Instant, u64)>,
    delivery_rate: u64,
    max_rtt: Option<Duration>,
}

impl<F: BufFactory> Connection<F> {
    /// Brings the history up to `now`, after anything that may have sent or acknowledged
    /// packets (`send`, `recv`, `on_timeout`).
    pub(super) fn track_bytes_in_flight(&mut self, now: Instant) {
        let busy = self.recovery.bytes_in_flight() > 0;
        let t = &mut self.tracker;
        match (busy, t.in_flight_since) {
            (true, None) => t.in_flight_since = Some(now),
            (false, Some(since)) => {
                t.in_flight_total += now.saturating_duration_since(since);
                t.in_flight_since = None;
            }
            _ => {}
        }
        let rtt = self.paths.active().sender.rtt();
        if rtt.stats().has_sample() {
            let latest = rtt.latest_rtt();
            t.max_rtt = Some(t.max_rtt.map_or(latest, |m| m.max(latest)));
        }
        // The delivery rate over windows of at least one smoothed RTT.
        let acked = self.stats.acked_bytes;
        match t.rate_window {
            None => t.rate_window = Some((now, acked)),
            Some((start, base)) => {
                let elapsed = now.saturating_duration_since(start);
                let window = rtt.smoothed_rtt().max(Duration::from_millis(1));
                if elapsed >= window {
                    let bytes = u128::from(acked - base);
                    let rate = bytes * 1_000_000_000 / elapsed.as_nanos().max(1);
                    t.delivery_rate = u64::try_from(rate).unwrap_or(u64::MAX);
                    t.rate_window = Some((now, acked));
                }
            }
        }
    }

    /// Connection statistics.
    pub fn stats(&self) -> Stats {
        let r = self.recovery.stats();
        let ongoing = match (self.tracker.in_flight_since, self.last_now) {
            (Some(since), Some(now)) => now.saturating_duration_since(since),
            _ => Duration::ZERO,
        };
        // Every byte counted as written and not sent must sit in some stream's buffer.
        let unsent = self.flow.unsent();
        let tx_buffered_state = if unsent > self.streams.send_buffered() {
            TxBufferTrackingState::Inconsistent
        } else {
            TxBufferTrackingState::Ok
        };
        Stats {
            lost: r.lost_packets as usize,
            lost_bytes: r.lost_bytes,
            lost_by_packet_threshold: r.lost_by_packet_threshold as usize,
            lost_by_time_threshold: r.lost_by_time_threshold as usize,
            spurious_lost: r.spurious_losses as usize,
            pto_count: r.pto_count as usize,
            pto_probes_sent: r.probes_sent as usize,
            persistent_congestion: r.persistent_congestion as usize,
            lost_in_first_slow_start: r.lost_in_first_slow_start as usize,
            bytes_in_flight_duration: self.tracker.in_flight_total + ongoing,
            tx_buffered_state,
            ..self.stats.clone()
        }
    }

    /// How the congestion controller's slow starts ended (exits by delay and by loss, when the
    /// first one ended), as the controller counts them.
    pub fn cc_stats(&self) -> crate::cc::CcStats {
        use crate::cc::CongestionControl;
        self.sender().controller().stats()
    }

    /// Statistics of the connection's paths, as quiche's `path_stats()` gives them: an
    /// iterator over the active path (the one recovery and congestion control serve; probed
    /// paths are queried with [`Connection::is_path_validated`]). The iterator also
    /// dereferences to that path's statistics, so `conn.path_stats().cwnd` reads the path
    /// directly.
    pub fn path_stats(&self) -> PathStatsIter {
        PathStatsIter::new(self.active_path_stats())
    }

    /// Statistics of the path the connection uses.
    fn active_path_stats(&self) -> PathStats {
        use crate::cc::CongestionControl;
        let stats = self.stats();
        let rtt = self.sender().rtt();
        let cc = self.sender().controller();
        let path = self.paths.active();
        PathStats {
            local_addr: path.local,
            peer_addr: path.peer,
            validated: path.validated(),
            validation_state: path.state(),
            active: true,
            total_pto_count: stats.pto_count,
            dgram_recv: path.dgram_recv,
            dgram_sent: path.dgram_sent,
            dgram_lost: path.dgram_lost,
            max_rtt: self.tracker.max_rtt,
            delivery_rate: self.tracker.delivery_rate,
            max_bandwidth: cc.bandwidth_estimate(),
            rtt_persistent_jump_count: 0,
            startup_exit: cc.stats().startup_exit,
            recv: stats.recv,
            sent: stats.sent,
            lost: stats.lost,
            retrans: stats.retrans,
            rtt: rtt.smoothed_rtt(),
            min_rtt: rtt.stats().has_sample().then(|| rtt.min_rtt()),
            latest_rtt: rtt.latest_rtt(),
            rttvar: rtt.rttvar(),
            cwnd: self.sender().cwnd(),
            ssthresh: cc.ssthresh(),
            bytes_in_flight: self.recovery.bytes_in_flight(),
            pacing_rate: cc.pacing_rate(),
            cc_state: cc.state().as_str(),
            sent_bytes: stats.sent_bytes,
            recv_bytes: stats.recv_bytes,
            lost_bytes: stats.lost_bytes,
            stream_retrans_bytes: stats.stream_retrans_bytes,
            pmtu: self.sender().max_datagram_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_stats_iter_yields_the_path_once_and_still_derefs_to_it() {
        let addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        let path = PathStats {
            local_addr: addr,
            peer_addr: addr,
            validated: true,
            validation_state: PathState::Validated,
            active: true,
            total_pto_count: 0,
            dgram_recv: 0,
            dgram_sent: 0,
            dgram_lost: 0,
            max_rtt: None,
            delivery_rate: 0,
            max_bandwidth: None,
            rtt_persistent_jump_count: 0,
            startup_exit: None,
            recv: 3,
            sent: 4,
            lost: 0,
            retrans: 0,
            rtt: Duration::from_millis(7),
            min_rtt: None,
            latest_rtt: Duration::ZERO,
            rttvar: Duration::ZERO,
            cwnd: 12_000,
            ssthresh: None,
            bytes_in_flight: 0,
            pacing_rate: None,
            cc_state: "slow_start",
            sent_bytes: 0,
            recv_bytes: 0,
            lost_bytes: 0,
            stream_retrans_bytes: 0,
            pmtu: 1200,
        };
        let mut it = PathStatsIter::new(path);
        assert_eq!(it.len(), 1);
        assert_eq!(it.next().map(|p| p.sent), Some(4));
        assert_eq!(it.len(), 0);
        assert!(it.next().is_none());
        assert_eq!(it.cwnd, 12_000);
        assert_eq!(PathStatsIter::new(it.clone().path).count(), 1);
    }
}
