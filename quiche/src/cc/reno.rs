//! NewReno window growth (RFC 9002 §7.3, Appendix B).

use std::time::Instant;

use super::{AckBatch, CongestionSignal, Window, WindowGrowth};
use crate::rtt::RttStats;

/// kLossReductionFactor (RFC 9002 Appendix B.1) as a fraction: the window is halved.
const LOSS_REDUCTION_NUMERATOR: usize = 1;
const LOSS_REDUCTION_DENOMINATOR: usize = 2;

/// NewReno: halve on congestion, then grow by one datagram per window of acknowledged bytes.
///
/// Growth is accounted in bytes, as RFC 3465 §2.1 suggests for integer windows: acknowledged
/// bytes accumulate and each full window's worth adds one datagram, so small ACK batches are not
/// rounded away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reno {
    /// Bytes acknowledged in congestion avoidance not yet turned into window growth.
    bytes_acked: usize,
}

impl WindowGrowth for Reno {
    const NAME: &'static str = "reno";

    fn on_congestion_event(
        &mut self,
        _now: Instant,
        _signal: &CongestionSignal,
        win: &Window,
    ) -> usize {
        self.bytes_acked = 0;
        win.cwnd / LOSS_REDUCTION_DENOMINATOR * LOSS_REDUCTION_NUMERATOR
    }

    fn on_ack(&mut self, _now: Instant, ack: &AckBatch, _rtt: &RttStats, win: &mut Window) {
        self.bytes_acked = self.bytes_acked.saturating_add(ack.acked_bytes);
        if win.cwnd == 0 || self.bytes_acked < win.cwnd {
            return;
        }
        let windows = self.bytes_acked / win.cwnd;
        self.bytes_acked -= windows * win.cwnd;
        win.cwnd = win.cwnd.saturating_add(windows.saturating_mul(win.mss));
    }

    fn on_persistent_congestion(&mut self, _now: Instant, _win: &Window) {
        self.bytes_acked = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::cc::test_sender::TestSender;
    use crate::cc::{CcConfig, CcState, CongestionControl, CongestionControlAlgorithm, Controller};

    const MSS: usize = 1200;
    const RTT: Duration = Duration::from_millis(100);

    /// Reno with standard slow start (HyStart++ has its own tests).
    fn sender() -> TestSender<Controller> {
        let cfg = CcConfig {
            hystart: false,
            ..CcConfig::default()
        };
        TestSender::new(
            Controller::new(CongestionControlAlgorithm::Reno, &cfg),
            MSS,
            RTT,
        )
    }

    /// Slow start for one RTT, then a loss: cwnd 24000 -> 12000, in recovery. Also returns the
    /// 19 packets still in flight, all sent before the recovery period.
    fn sender_in_recovery() -> (TestSender<Controller>, Vec<u64>) {
        let mut s = sender();
        s.round_trip();
        assert_eq!(s.cc.cwnd(), 24_000);
        let sent = s.send_window();
        assert_eq!(sent.len(), 20);
        s.advance(RTT);
        assert!(s.lose(&sent[..1], false));
        // Packets sent at the very instant recovery started count as sent before it.
        s.advance(Duration::from_millis(1));
        (s, sent[1..].to_vec())
    }

    #[test]
    fn starts_in_slow_start_with_the_initial_window() {
        let s = sender();
        assert_eq!(s.cc.cwnd(), 10 * MSS);
        assert_eq!(s.cc.ssthresh(), None);
        assert_eq!(s.cc.state(), CcState::SlowStart);
    }

    #[test]
    fn slow_start_doubles_the_window_each_round_trip() {
        let mut s = sender();
        for round in 1..=4 {
            let sent = s.round_trip();
            assert_eq!(sent.len(), 10 << (round - 1));
            assert_eq!(s.cc.cwnd(), (10 * MSS) << round, "round {round}");
            assert_eq!(s.cc.state(), CcState::SlowStart);
        }
    }

    #[test]
    fn loss_halves_the_window_and_enters_recovery() {
        let (s, _) = sender_in_recovery();
        assert_eq!(s.cc.cwnd(), 12_000);
        assert_eq!(s.cc.ssthresh(), Some(12_000));
        assert_eq!(s.cc.state(), CcState::Recovery);
    }

    #[test]
    fn one_reduction_per_recovery_period() {
        let (mut s, in_flight_before_recovery) = sender_in_recovery();
        // More losses of packets sent before the period began: no second reduction.
        assert!(!s.lose(&in_flight_before_recovery[..5], false));
        assert_eq!(s.cc.cwnd(), 12_000);
        // Acknowledging packets sent before the period neither ends it nor grows the window.
        s.ack(&in_flight_before_recovery[5..]);
        assert_eq!(s.cc.state(), CcState::Recovery);
        assert_eq!(s.cc.cwnd(), 12_000);
        // A packet sent during the period is acknowledged: recovery ends.
        let p = s.send();
        s.advance(RTT);
        s.ack(&[p]);
        assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
        // A loss of a packet sent after the period began reduces again.
        let q = s.send();
        s.advance(RTT);
        assert!(s.lose(&[q], false));
        assert_eq!(s.cc.cwnd(), 6_000);
        assert_eq!(s.cc.ssthresh(), Some(6_000));
    }

    #[test]
    fn congestion_avoidance_grows_one_datagram_per_round_trip() {
        let (mut s, rest) = sender_in_recovery();
        // Acknowledge what was in flight when the loss happened (no growth in recovery).
        s.ack(&rest);
        assert_eq!(s.bytes_in_flight(), 0);
        for round in 1..=5 {
            s.round_trip();
            assert_eq!(s.cc.cwnd(), 12_000 + round * MSS, "round {round}");
            assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
        }
    }

    #[test]
    fn congestion_avoidance_counts_bytes_across_small_acks() {
        let (mut s, rest) = sender_in_recovery();
        s.ack(&rest);
        // Half a window acknowledged in small frames: no growth yet.
        let sent = s.send_window();
        s.advance(RTT);
        s.ack_each(&sent[..5]);
        assert_eq!(s.cc.cwnd(), 12_000);
        // The second half completes a window's worth: one datagram.
        s.ack_each(&sent[5..]);
        assert_eq!(s.cc.cwnd(), 13_200);
    }

    #[test]
    fn persistent_congestion_collapses_to_the_minimum_window() {
        let mut s = sender();
        s.round_trip();
        let sent = s.send_window();
        s.advance(RTT * 10);
        assert!(s.lose(&sent, true));
        assert_eq!(s.cc.cwnd(), 2 * MSS);
        assert_eq!(s.cc.ssthresh(), Some(12_000));
        // Out of recovery: slow start regrows the window up to ssthresh.
        assert_eq!(s.cc.state(), CcState::SlowStart);
        s.round_trip();
        assert_eq!(s.cc.cwnd(), 4 * MSS);
    }

    #[test]
    fn persistent_congestion_collapses_even_inside_a_recovery_period() {
        let (mut s, old) = sender_in_recovery();
        assert!(s.lose(&old, true));
        assert_eq!(s.cc.cwnd(), 2 * MSS);
        assert_eq!(s.cc.ssthresh(), Some(12_000), "no second halving");
    }

    #[test]
    fn spurious_congestion_undo_restores_window_and_threshold() {
        let (mut s, _) = sender_in_recovery();
        s.cc.on_spurious_congestion(s.now);
        assert_eq!(s.cc.cwnd(), 24_000);
        assert_eq!(s.cc.ssthresh(), None);
        assert_eq!(s.cc.state(), CcState::SlowStart);
        // Only the last reduction is remembered: a second undo changes nothing.
        s.cc.on_spurious_congestion(s.now);
        assert_eq!(s.cc.cwnd(), 24_000);
    }

    #[test]
    fn undo_of_persistent_congestion_restores_the_window() {
        let mut s = sender();
        s.round_trip();
        let sent = s.send_window();
        s.advance(RTT * 10);
        assert!(s.lose(&sent[..3], true));
        assert_eq!(s.cc.cwnd(), 2 * MSS);
        s.cc.on_spurious_congestion(s.now);
        assert_eq!(s.cc.cwnd(), 24_000);
        assert_eq!(s.cc.ssthresh(), None);
    }

    #[test]
    fn no_growth_while_application_limited() {
        let mut s = sender();
        s.app_limited = true;
        // Only two packets to send: the window is far from used.
        let a = s.send();
        let b = s.send();
        s.advance(RTT);
        s.ack(&[a, b]);
        assert_eq!(s.cc.cwnd(), 12_000);
        assert_eq!(s.cc.state(), CcState::ApplicationLimited);
        // Also in congestion avoidance.
        let (mut s, rest) = sender_in_recovery();
        s.ack(&rest);
        s.app_limited = true;
        for _ in 0..3 {
            s.round_trip();
        }
        assert_eq!(s.cc.cwnd(), 12_000);
        // Growth resumes once the sender uses its window again.
        s.app_limited = false;
        s.round_trip();
        assert_eq!(s.cc.cwnd(), 13_200);
        assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
    }

    #[test]
    fn app_limited_report_shows_in_the_state() {
        let mut s = sender();
        s.cc.on_app_limited(s.now);
        assert_eq!(s.cc.state(), CcState::ApplicationLimited);
        s.round_trip();
        assert_eq!(s.cc.state(), CcState::SlowStart);
    }

    #[test]
    fn mtu_update_recalculates_an_untouched_initial_window() {
        let mut s = sender();
        s.cc.on_mtu_update(1500);
        assert_eq!(s.cc.cwnd(), 14_720);
        s.mss = 1500;
        s.round_trip();
        let grown = s.cc.cwnd();
        assert!(grown > 14_720);
        // Once the window moved, a smaller datagram size keeps it.
        s.cc.on_mtu_update(1200);
        assert_eq!(s.cc.cwnd(), grown);
    }

    #[test]
    fn send_quantum_is_limited_to_the_initial_window() {
        let mut s = sender();
        s.round_trip();
        assert_eq!(s.cc.cwnd(), 24_000);
        assert_eq!(s.cc.send_quantum(), 12_000);
    }
}
