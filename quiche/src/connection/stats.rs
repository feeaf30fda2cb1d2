//! Counters a connection exposes through `stats()` and `path_stats()`.

use std::net::SocketAddr;
use std::time::Duration;

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
    /// ACK frames sent, all packet number spaces (Rust only).
    pub ack_frames_sent: usize,
    /// ACK frames received, all packet number spaces (Rust only).
    pub ack_frames_received: usize,
    /// ACK_FREQUENCY frames sent (draft-ietf-quic-ack-frequency-12; Rust only).
    pub ack_frequency_frames_sent: usize,
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
