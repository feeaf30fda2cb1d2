//! Tests of [`Recovery`] on a manual clock.

#![allow(clippy::single_range_in_vec_init)]

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::{Duration, Instant};

use super::*;
use crate::cc::CcState;
use crate::sender::PathSender;
use crate::testing::Rng;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

const MSS: usize = 1200;

/// A recovery instance, a manual clock and a reusable outcome. Payloads are packet numbers.
struct Harness {
    r: Recovery<u64>,
    /// The path's sender, which recovery is handed where it needs the controller or the RTT.
    s: PathSender,
    t0: Instant,
    now: Instant,
    out: AckOutcome<u64>,
    next_pn: [u64; 3],
}

impl Harness {
    fn new(cfg: RecoveryConfig) -> Self {
        let t0 = test_now();
        Harness {
            r: Recovery::new(&cfg),
            s: cfg.sender(false),
            t0,
            now: t0,
            out: AckOutcome::new(),
            next_pn: [0; 3],
        }
    }

    fn client() -> Self {
        Self::new(RecoveryConfig::default())
    }

    /// A client with the handshake confirmed, for Application-space tests.
    fn confirmed() -> Self {
        let mut h = Self::client();
        h.r.on_handshake_confirmed(h.now, &h.s);
        h
    }

    fn at(&mut self, offset: Duration) {
        self.now = self.t0 + offset;
    }

    fn send_with(&mut self, epoch: Epoch, size: usize, ack_eliciting: bool) -> u64 {
        let pn = self.next_pn[epoch.index()];
        self.next_pn[epoch.index()] += 1;
        let pkt = SentPacket::new(pn, self.now, size, ack_eliciting, ack_eliciting, pn);
        self.r
            .on_packet_sent(pkt, epoch, self.now, &mut self.s)
            .unwrap();
        pn
    }

    fn send(&mut self, epoch: Epoch) -> u64 {
        self.send_with(epoch, MSS, true)
    }

    fn ack(&mut self, epoch: Epoch, ranges: &[Range<u64>], delay: Duration) -> Result<()> {
        let confirmed = self.r.handshake_confirmed();
        self.r.on_ack_received(
            epoch,
            ranges.iter().cloned(),
            delay,
            self.now,
            confirmed,
            &mut self.out,
            &mut self.s,
        )
    }

    fn acked(&self) -> Vec<u64> {
        self.out.acked.iter().map(|p| p.payload).collect()
    }

    fn lost(&self) -> Vec<u64> {
        self.out.lost.iter().map(|p| p.payload).collect()
    }

    fn timeout(&mut self) -> TimeoutAction {
        self.r
            .on_loss_detection_timeout(self.now, &mut self.out, &mut self.s)
    }
}

const APP: Epoch = Epoch::Application;

mod relaxed_threshold;

#[test]
fn rtt_sample_needs_a_newly_acked_largest_that_is_ack_eliciting() {
    let mut h = Harness::confirmed();
    h.send(APP); // 0
    h.send(APP); // 1
    h.at(ms(100));
    h.ack(APP, &[1..2], Duration::ZERO).unwrap();
    assert!(h.out.rtt_updated);
    assert_eq!(h.s.rtt().smoothed_rtt(), ms(100));
    // The largest (1) is not newly acknowledged: no sample, though 0 is new.
    h.at(ms(300));
    h.ack(APP, &[0..2], Duration::ZERO).unwrap();
    assert_eq!(h.acked(), [0]);
    assert!(!h.out.rtt_updated);
    assert_eq!(h.s.rtt().latest_rtt(), ms(100));
    // Only non-ack-eliciting packets newly acknowledged: no sample.
    h.send_with(APP, 50, false); // 2
    h.at(ms(900));
    h.ack(APP, &[2..3], Duration::ZERO).unwrap();
    assert_eq!(h.acked(), [2]);
    assert!(!h.out.rtt_updated);
    assert_eq!(h.s.rtt().latest_rtt(), ms(100));
}

#[test]
fn ack_delay_is_ignored_for_initial_and_capped_after_confirmation() {
    // Initial: the delay is not subtracted.
    let mut h = Harness::client();
    h.send(Epoch::Initial);
    h.at(ms(100));
    h.ack(Epoch::Initial, &[0..1], ms(40)).unwrap();
    h.send(Epoch::Initial);
    h.at(ms(260));
    h.ack(Epoch::Initial, &[1..2], ms(40)).unwrap();
    // adjusted = 160: srtt = 87.5 + 20.
    assert_eq!(h.s.rtt().smoothed_rtt(), us(107_500));

    // Handshake space before confirmation: the whole 40 ms are subtracted (adjusted = 120).
    let mut h = Harness::client();
    h.send(Epoch::Handshake);
    h.at(ms(100));
    h.ack(Epoch::Handshake, &[0..1], ms(40)).unwrap();
    h.send(Epoch::Handshake);
    h.at(ms(260));
    h.ack(Epoch::Handshake, &[1..2], ms(40)).unwrap();
    assert_eq!(h.s.rtt().smoothed_rtt(), us(102_500));

    // After confirmation: capped to max_ack_delay = 25 ms (adjusted = 135).
    let mut h = Harness::confirmed();
    h.send(APP);
    h.at(ms(100));
    h.ack(APP, &[0..1], ms(40)).unwrap();
    h.send(APP);
    h.at(ms(260));
    h.ack(APP, &[1..2], ms(40)).unwrap();
    assert_eq!(h.s.rtt().smoothed_rtt(), us(104_375));
    assert_eq!(h.s.rtt().min_rtt(), ms(100));
}

#[test]
fn packet_threshold_declares_a_packet_lost() {
    let mut h = Harness::confirmed();
    for _ in 0..5 {
        h.send(APP);
    }
    assert_eq!(h.r.bytes_in_flight(), 5 * MSS);
    h.at(ms(10));
    // 0 is missing and 4 >= 0 + kPacketThreshold.
    h.ack(APP, &[1..5], Duration::ZERO).unwrap();
    assert_eq!(h.acked(), [4, 3, 2, 1]);
    assert_eq!(h.lost(), [0]);
    assert_eq!(h.out.lost_bytes, MSS);
    assert!(h.out.congestion_event);
    assert_eq!(h.r.bytes_in_flight(), 0);
    assert_eq!(h.r.stats().lost_by_packet_threshold, 1);
    assert_eq!(h.r.stats().lost_by_time_threshold, 0);
    assert_eq!(h.s.cwnd(), 6_000);
    assert_eq!(h.s.controller().state(), CcState::Recovery);
}

#[test]
fn fewer_than_three_later_packets_only_arm_the_time_threshold() {
    let mut h = Harness::confirmed();
    for _ in 0..3 {
        h.send(APP);
    }
    h.at(ms(10));
    h.ack(APP, &[1..3], Duration::ZERO).unwrap();
    assert!(h.lost().is_empty());
    // 9/8 * 10 ms after packet 0 was sent.
    assert_eq!(h.r.loss_time(APP), Some(h.t0 + us(11_250)));
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + us(11_250)));
}

#[test]
fn time_threshold_loss_fires_at_the_exact_instant() {
    let mut h = Harness::confirmed();
    h.send(APP); // 0 at t0
    h.at(ms(10));
    h.send(APP); // 1 at t0 + 10
    h.at(ms(20));
    h.send(APP); // 2 at t0 + 20
    h.at(ms(120));
    h.ack(APP, &[2..3], Duration::ZERO).unwrap();
    // RTT 100 ms: loss delay 112.5 ms. Packet 0 is already older than that.
    assert_eq!(h.lost(), [0]);
    assert_eq!(h.r.stats().lost_by_time_threshold, 1);
    let expected = h.t0 + ms(10) + us(112_500);
    assert_eq!(h.r.loss_time(APP), Some(expected));
    assert_eq!(h.r.loss_detection_timer(), Some(expected));

    h.now = expected - Duration::from_nanos(1);
    assert_eq!(h.timeout(), TimeoutAction::None);
    assert!(h.lost().is_empty());
    h.now = expected;
    assert_eq!(h.timeout(), TimeoutAction::Lost { epoch: APP });
    assert_eq!(h.lost(), [1]);
    assert_eq!(h.r.stats().lost_by_time_threshold, 2);
    assert_eq!(h.r.bytes_in_flight(), 0);
    assert_eq!(h.r.loss_time(APP), None);
    assert_eq!(
        h.r.loss_detection_timer(),
        None,
        "nothing left in flight, address validated"
    );
    // Packet 1 was sent before the recovery period started: a single reduction.
    assert_eq!(h.r.stats().congestion_events, 1);
    assert_eq!(h.r.pto_count(), 0, "a time-threshold loss is not a PTO");
}

#[test]
fn pto_fires_at_the_expected_time_and_backs_off() {
    let mut h = Harness::confirmed();
    h.send(APP);
    // No RTT sample: 333 + 4 * 166.5 + 25 (max_ack_delay).
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + ms(1024)));
    h.at(ms(1023));
    assert_eq!(h.timeout(), TimeoutAction::None);
    h.at(ms(1024));
    assert_eq!(
        h.timeout(),
        TimeoutAction::Probe {
            epoch: APP,
            probes: MAX_PTO_PROBES
        }
    );
    assert!(h.lost().is_empty(), "a PTO declares nothing lost");
    assert_eq!(h.r.pto_count(), 1);
    assert_eq!(h.r.pending_probes(APP), 2);
    // Still counted from the last ack-eliciting packet, with the doubled period.
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + ms(2048)));
    // Probes are sent: the timer restarts from the last one, still doubled.
    h.send(APP);
    h.send(APP);
    assert_eq!(h.r.pending_probes(APP), 0);
    assert_eq!(h.r.stats().probes_sent, 2);
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + ms(1024 + 2048)));
    h.at(ms(1024 + 2048));
    assert!(matches!(h.timeout(), TimeoutAction::Probe { .. }));
    assert_eq!(h.r.pto_count(), 2);
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + ms(1024 + 4096)));
    assert_eq!(h.r.stats().pto_count, 2);
    // An acknowledgment resets the backoff.
    h.at(ms(3200));
    h.ack(APP, &[2..3], Duration::ZERO).unwrap();
    assert_eq!(h.r.pto_count(), 0);
}

#[test]
fn pto_of_handshake_spaces_has_no_max_ack_delay_and_application_waits_for_confirmation() {
    let mut h = Harness::client();
    h.send(Epoch::Initial);
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + ms(999)));
    h.at(ms(999));
    assert_eq!(
        h.timeout(),
        TimeoutAction::Probe {
            epoch: Epoch::Initial,
            probes: 2
        }
    );

    // A server with only 1-RTT data in flight before confirmation arms nothing.
    let mut h = Harness::new(RecoveryConfig {
        is_server: true,
        ..Default::default()
    });
    h.send(APP);
    assert_eq!(h.r.loss_detection_timer(), None);
    h.at(ms(50));
    h.r.on_handshake_confirmed(h.now, &h.s);
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + ms(1024)));
}

#[test]
fn client_arms_anti_deadlock_pto_until_the_server_validated_its_address() {
    let mut h = Harness::client();
    h.send(Epoch::Initial);
    h.at(ms(100));
    h.ack(Epoch::Initial, &[0..1], Duration::ZERO).unwrap();
    // Nothing in flight, but the server may be blocked: now + (100 + 4 * 50).
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + ms(400)));
    h.at(ms(400));
    assert_eq!(h.timeout(), TimeoutAction::AntiDeadlock);
    assert_eq!(h.r.pto_count(), 1);
    assert_eq!(h.r.pending_probes(Epoch::Initial), 1);
    assert_eq!(h.r.pending_probes(Epoch::Handshake), 1);
    assert_eq!(h.r.pending_probes(APP), 0);
    h.send(Epoch::Handshake);
    assert_eq!(h.r.pending_probes(Epoch::Initial), 0);
    // An Initial ACK does not reset the backoff of an unvalidated client...
    h.send(Epoch::Initial);
    h.at(ms(500));
    h.ack(Epoch::Initial, &[1..2], Duration::ZERO).unwrap();
    assert_eq!(h.r.pto_count(), 1);
    // ...a Handshake ACK proves the address validated.
    h.ack(Epoch::Handshake, &[0..1], Duration::ZERO).unwrap();
    assert_eq!(h.r.pto_count(), 0);
    assert_eq!(h.r.loss_detection_timer(), None);
}

#[test]
fn amplification_limited_server_does_not_arm_the_timer() {
    let mut h = Harness::new(RecoveryConfig {
        is_server: true,
        ..Default::default()
    });
    h.send(Epoch::Initial);
    assert!(h.r.loss_detection_timer().is_some());
    h.r.set_amplification_limited(true, h.now, &h.s);
    assert_eq!(h.r.loss_detection_timer(), None);
    h.r.set_amplification_limited(false, h.now, &h.s);
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + ms(999)));
}

/// Takes an RTT sample of 100 ms (srtt 100, rttvar 50) at t0 + 100 and returns the harness.
fn with_rtt_sample() -> Harness {
    let mut h = Harness::confirmed();
    h.send(APP);
    h.at(ms(100));
    h.ack(APP, &[0..1], Duration::ZERO).unwrap();
    h
}

/// Loses packets 1 and 2 sent `span` apart, by acknowledging packet 3; returns whether
/// persistent congestion was declared. The ACK's 100 ms sample leaves rttvar at 37.5 ms, so the
/// persistent congestion duration is (100 + 150 + 25) * 3 = 825 ms.
fn lose_two_packets_apart(span: Duration) -> (Harness, bool) {
    let mut h = with_rtt_sample();
    h.at(ms(200));
    h.send(APP); // 1
    h.at(ms(200) + span);
    h.send(APP); // 2
    h.at(ms(400) + span);
    h.send(APP); // 3
    h.at(ms(500) + span);
    h.ack(APP, &[3..4], Duration::ZERO).unwrap();
    assert_eq!(h.lost(), [1, 2]);
    assert_eq!(persistent_congestion_duration(&h.s.rtt().stats()), ms(825));
    let pc = h.out.persistent_congestion;
    (h, pc)
}

#[test]
fn persistent_congestion_needs_more_than_the_duration() {
    let (h, pc) = lose_two_packets_apart(ms(825));
    assert!(!pc, "exactly the duration is not enough");
    // Packet 0's acknowledgment grew the window to 13200 before it was halved.
    assert_eq!(h.s.cwnd(), 6_600);
    assert_eq!(h.r.stats().persistent_congestion, 0);

    let (h, pc) = lose_two_packets_apart(ms(825) + Duration::from_nanos(1));
    assert!(pc);
    // Collapsed to the minimum window, then (Appendix B order: losses before the ACK, and
    // persistent congestion ends the recovery period) slow start adds packet 3's bytes.
    assert_eq!(h.s.cwnd(), 2 * MSS + MSS);
    assert_eq!(h.s.controller().state(), CcState::SlowStart);
    assert_eq!(h.r.stats().persistent_congestion, 1);
    assert_eq!(
        h.s.rtt().min_rtt(),
        ms(100),
        "min_rtt restarts from the latest sample"
    );
}

#[test]
fn an_acknowledged_packet_between_the_losses_prevents_persistent_congestion() {
    let mut h = with_rtt_sample();
    h.at(ms(200));
    h.send(APP); // 1
    h.at(ms(600));
    h.send(APP); // 2
    h.at(ms(1100));
    h.send(APP); // 3
    h.at(ms(1300));
    h.send(APP); // 4
    h.at(ms(1400));
    h.ack(APP, &[4..5, 2..3], Duration::ZERO).unwrap();
    assert_eq!(h.lost(), [1, 3]);
    assert!(!h.out.persistent_congestion);
    assert_eq!(h.s.cwnd(), 6_600);
}

#[test]
fn losses_before_the_first_rtt_sample_do_not_establish_persistent_congestion() {
    let mut h = Harness::confirmed();
    h.send(APP); // 0
    h.at(ms(10));
    h.send(APP); // 1
    h.at(ms(5000));
    h.send(APP); // 2
    h.at(ms(5100));
    h.ack(APP, &[2..3], Duration::ZERO).unwrap();
    assert_eq!(h.lost(), [0, 1]);
    assert!(!h.out.persistent_congestion);
    assert_eq!(h.s.cwnd(), 6_000);
}

#[test]
fn acking_an_unsent_packet_is_a_protocol_violation() {
    let mut h = Harness::confirmed();
    assert_eq!(
        h.ack(APP, &[0..1], Duration::ZERO),
        Err(Error::InvalidAckRange)
    );
    for _ in 0..5 {
        h.send(APP);
    }
    let err = h.ack(APP, &[5..6, 0..2], Duration::ZERO).unwrap_err();
    assert_eq!(err, Error::InvalidAckRange);
    assert_eq!(err.to_wire(), 0xa);
    assert_eq!(
        h.ack(Epoch::Handshake, &[0..1], Duration::ZERO),
        Err(Error::InvalidAckRange)
    );
    // A skipped packet number is refused too.
    let pkt = SentPacket::new(7, h.now, MSS, true, true, 7);
    h.r.on_packet_sent(pkt, APP, h.now, &mut h.s).unwrap();
    assert_eq!(
        h.ack(APP, &[6..7], Duration::ZERO),
        Err(Error::OptimisticAckDetected)
    );
    h.ack(APP, &[7..8, 0..5], Duration::ZERO).unwrap();
    assert_eq!(h.r.bytes_in_flight(), 0);
}

#[test]
fn spurious_loss_undoes_the_reduction() {
    let mut h = Harness::confirmed();
    for _ in 0..5 {
        h.send(APP);
    }
    h.at(ms(10));
    h.ack(APP, &[1..5], Duration::ZERO).unwrap();
    assert_eq!(h.lost(), [0]);
    assert_eq!(h.s.cwnd(), 6_000);
    assert_eq!(h.s.controller().ssthresh(), Some(6_000));
    // The "lost" packet was only reordered.
    h.at(ms(12));
    h.ack(APP, &[0..5], Duration::ZERO).unwrap();
    assert!(h.acked().is_empty());
    assert_eq!(h.out.spurious_losses, 1);
    assert!(h.out.congestion_undone);
    assert_eq!(h.s.cwnd(), 12_000);
    assert_eq!(h.s.controller().ssthresh(), None);
    assert_eq!(h.r.stats().spurious_losses, 1);
    assert_eq!(h.r.stats().congestion_events_undone, 1);
}

#[test]
fn no_undo_while_some_losses_of_the_episode_are_real() {
    let mut h = Harness::confirmed();
    for _ in 0..6 {
        h.send(APP);
    }
    h.at(ms(10));
    h.ack(APP, &[2..6], Duration::ZERO).unwrap();
    assert_eq!(h.lost(), [0, 1]);
    h.ack(APP, &[2..6, 0..1], Duration::ZERO).unwrap();
    assert_eq!(h.out.spurious_losses, 1);
    assert!(!h.out.congestion_undone);
    assert_eq!(h.s.cwnd(), 6_000);
    // Once the other one shows up too, the reduction is undone.
    h.ack(APP, &[0..6], Duration::ZERO).unwrap();
    assert!(h.out.congestion_undone);
    assert_eq!(h.s.cwnd(), 12_000);
}

#[test]
fn ecn_congestion_is_never_undone() {
    let mut h = Harness::confirmed();
    for _ in 0..5 {
        h.send(APP);
    }
    h.at(ms(10));
    h.ack(APP, &[1..5], Duration::ZERO).unwrap();
    assert_eq!(h.s.cwnd(), 6_000);
    // A CE mark for a packet sent before the recovery period: no new reduction, but the
    // congestion is real.
    assert!(!h.r.on_ecn_ce_increase(APP, h.now, &mut h.s));
    h.ack(APP, &[0..5], Duration::ZERO).unwrap();
    assert_eq!(h.out.spurious_losses, 1);
    assert!(!h.out.congestion_undone);
    assert_eq!(h.s.cwnd(), 6_000);
}

#[test]
fn ecn_ce_increase_reduces_the_window() {
    let mut h = Harness::confirmed();
    h.send(APP);
    h.at(ms(10));
    h.ack(APP, &[0..1], Duration::ZERO).unwrap();
    h.at(ms(11));
    assert!(h.r.on_ecn_ce_increase(APP, h.now, &mut h.s));
    assert_eq!(h.s.cwnd(), 6_600);
    assert_eq!(h.r.stats().congestion_events, 1);
}

#[test]
fn discarding_the_initial_space_removes_its_bytes_in_flight() {
    let mut h = Harness::client();
    for _ in 0..3 {
        h.send(Epoch::Initial);
    }
    h.at(ms(5));
    h.send(Epoch::Handshake);
    assert_eq!(h.r.bytes_in_flight(), 4 * MSS);
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + ms(999)));
    h.at(ms(6));
    h.r.discard_epoch(Epoch::Initial, h.now, &mut h.s);
    assert_eq!(h.r.bytes_in_flight(), MSS);
    assert_eq!(h.r.bytes_in_flight_in(Epoch::Initial), 0);
    assert!(h.r.sent_packets(Epoch::Initial).is_empty());
    // The timer now follows the Handshake packet.
    assert_eq!(h.r.loss_detection_timer(), Some(h.t0 + ms(5 + 999)));
    assert_eq!(h.s.cwnd(), 12_000, "discarding is not a congestion signal");
    let pkt = SentPacket::new(3, h.now, MSS, true, true, 3);
    assert_eq!(
        h.r.on_packet_sent(pkt, Epoch::Initial, h.now, &mut h.s),
        Err(Error::InvalidState)
    );
    // ACKs for the dropped space are ignored.
    h.ack(Epoch::Initial, &[0..3], Duration::ZERO).unwrap();
    assert!(h.acked().is_empty());
}

#[test]
fn slow_start_grows_with_acknowledged_bytes_and_app_limited_stops_it() {
    let mut h = Harness::confirmed();
    for _ in 0..10 {
        h.send(APP);
    }
    assert!(!h.r.can_send(MSS, &h.s));
    assert_eq!(h.r.cwnd_available(&h.s), 0);
    h.at(ms(50));
    h.ack(APP, &[0..10], Duration::ZERO).unwrap();
    assert_eq!(h.s.cwnd(), 24_000);
    assert_eq!(h.out.acked_bytes, 12_000);
    // Application-limited: one packet in a 24 kB window.
    h.r.set_app_limited(true, h.now, &mut h.s);
    h.send(APP);
    h.at(ms(100));
    h.ack(APP, &[10..11], Duration::ZERO).unwrap();
    assert_eq!(h.s.cwnd(), 24_000);
    assert!(h.r.app_limited());
    // Filling the window clears it.
    for _ in 0..20 {
        h.send(APP);
    }
    assert!(!h.r.app_limited());
}

#[test]
fn stats_count_sent_and_lost() {
    let mut h = Harness::confirmed();
    for _ in 0..5 {
        h.send(APP);
    }
    h.send_with(APP, 40, false);
    h.at(ms(10));
    h.ack(APP, &[5..6, 1..5], Duration::ZERO).unwrap();
    let s = *h.r.stats();
    assert_eq!(s.sent_packets, 6);
    assert_eq!(s.sent_bytes, 5 * MSS as u64 + 40);
    assert_eq!(s.acked_packets, 5);
    assert_eq!(s.lost_packets, 1);
    assert_eq!(s.lost_bytes, MSS as u64);
    assert_eq!(s.congestion_events, 1);
}

#[test]
fn cwnd_available_waits_for_a_full_datagram() {
    let mut h = Harness::confirmed();
    for _ in 0..9 {
        h.send(APP);
    }
    assert_eq!(h.r.cwnd_available(&h.s), MSS);
    // 1100 bytes left: less than a datagram, so none until an ACK frees more.
    h.send_with(APP, 100, true);
    assert_eq!(h.s.cwnd(), 12_000);
    assert_eq!(h.r.cwnd_available(&h.s), 0);
    assert!(h.r.can_send(1100, &h.s), "the window itself still has room");
    h.at(ms(50));
    h.ack(APP, &[0..1], Duration::ZERO).unwrap();
    assert_eq!(h.r.cwnd_available(&h.s), 12_000 + MSS - (8 * MSS + 100));
}

#[test]
fn losses_of_packets_sent_before_the_first_slow_start_ended_are_counted() {
    let mut h = Harness::confirmed();
    for _ in 0..6 {
        h.send(APP); // 0..=5 at 0 ms
    }
    // 0, 1 and 2 are lost by the packet threshold: slow start ends now, at 10 ms.
    h.at(ms(10));
    h.ack(APP, &[4..6], Duration::ZERO).unwrap();
    assert_eq!(h.lost(), [0, 1, 2]);
    assert_eq!(h.r.stats().lost_in_first_slow_start, 3);
    let end = h.s.controller().stats().first_slow_start_end;
    assert_eq!(end, Some(h.now));
    // 3 was sent in slow start and is found lost only later: it still counts.
    h.at(ms(20));
    for _ in 0..4 {
        h.send(APP); // 6..=9
    }
    h.at(ms(30));
    h.ack(APP, &[6..10], Duration::ZERO).unwrap();
    assert_eq!(h.lost(), [3]);
    assert_eq!(h.r.stats().lost_in_first_slow_start, 4);
    // 10 was sent after slow start ended: it does not.
    h.at(ms(40));
    for _ in 0..5 {
        h.send(APP); // 10..=14
    }
    h.at(ms(50));
    h.ack(APP, &[11..15], Duration::ZERO).unwrap();
    assert_eq!(h.lost(), [10]);
    assert_eq!(h.r.stats().lost_packets, 5);
    assert_eq!(h.r.stats().lost_in_first_slow_start, 4);
    assert_eq!(h.s.controller().stats().first_slow_start_end, end);
}

/// What the naive model knows about a sent packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Outstanding {
        time_sent: Instant,
        size: usize,
        in_flight: bool,
    },
    Acked,
    /// Only in-flight losses are remembered for spurious-loss detection.
    Lost {
        in_flight: bool,
    },
}

/// Naive model: every packet in a map, scanned in full at every step.
struct Model {
    pkts: BTreeMap<u64, Fate>,
    largest_acked: Option<u64>,
}

impl Model {
    fn bytes_in_flight(&self) -> usize {
        self.pkts
            .values()
            .map(|f| match f {
                Fate::Outstanding {
                    size,
                    in_flight: true,
                    ..
                } => *size,
                _ => 0,
            })
            .sum()
    }

    /// Applies an ACK frame: returns (newly acked, acked-after-lost).
    fn ack(&mut self, ranges: &[Range<u64>]) -> (Vec<u64>, usize) {
        let mut newly = Vec::new();
        let mut spurious = 0;
        for r in ranges {
            for pn in r.clone() {
                match self.pkts.get_mut(&pn) {
                    Some(f @ Fate::Outstanding { .. }) => {
                        *f = Fate::Acked;
                        newly.push(pn);
                    }
                    Some(f @ Fate::Lost { .. }) => {
                        // Counted once: afterwards it is acked.
                        spurious += usize::from(matches!(f, Fate::Lost { in_flight: true }));
                        *f = Fate::Acked;
                    }
                    _ => {}
                }
            }
            let top = r.end - 1;
            self.largest_acked = Some(self.largest_acked.map_or(top, |l| l.max(top)));
        }
        newly.sort_unstable();
        (newly, spurious)
    }

    /// Applies RFC 9002's loss conditions; returns the lost packets and the next loss time.
    fn detect(&mut self, now: Instant, delay: Duration) -> (Vec<u64>, Option<Instant>) {
        let Some(largest) = self.largest_acked else {
            return (Vec::new(), None);
        };
        let mut lost = Vec::new();
        let mut loss_time: Option<Instant> = None;
        for (&pn, fate) in self.pkts.range_mut(..=largest) {
            if let Fate::Outstanding {
                time_sent,
                in_flight,
                ..
            } = *fate
            {
                if largest >= pn + PACKET_THRESHOLD || time_sent + delay <= now {
                    *fate = Fate::Lost { in_flight };
                    lost.push(pn);
                } else {
                    let t = time_sent + delay;
                    loss_time = Some(loss_time.map_or(t, |l| l.min(t)));
                }
            }
        }
        (lost, loss_time)
    }
}

/// The contiguous ranges of `received`, highest first, at most `max` of them.
fn ack_ranges(received: &BTreeMap<u64, ()>, max: usize) -> Vec<Range<u64>> {
    let mut ranges: Vec<Range<u64>> = Vec::new();
    for &pn in received.keys().rev() {
        match ranges.last_mut() {
            Some(r) if r.start == pn + 1 => r.start = pn,
            _ => {
                if ranges.len() == max {
                    break;
                }
                ranges.push(pn..pn + 1);
            }
        }
    }
    ranges
}

#[test]
fn many_range_acks_match_a_naive_model() {
    for seed in 1..=8u64 {
        run_random_acks(seed);
    }
}

fn run_random_acks(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut h = Harness::confirmed();
    let mut model = Model {
        pkts: BTreeMap::new(),
        largest_acked: None,
    };
    let mut received = BTreeMap::new();
    let mut pn = 0u64;
    for step in 0..600 {
        h.now += us(rng.below(4000));
        // Send a few packets, sometimes skipping a number.
        for _ in 0..rng.below(4) {
            if rng.percent(3) {
                pn += 1;
            }
            let ack_eliciting = rng.percent(85);
            let in_flight = ack_eliciting || rng.percent(30);
            let size = 40 + rng.below(1300) as usize;
            let pkt = SentPacket::new(pn, h.now, size, ack_eliciting, in_flight, pn);
            h.r.on_packet_sent(pkt, APP, h.now, &mut h.s).unwrap();
            model.pkts.insert(
                pn,
                Fate::Outstanding {
                    time_sent: h.now,
                    size,
                    in_flight,
                },
            );
            if rng.percent(80) {
                received.insert(pn, ());
            }
            pn += 1;
        }
        if rng.percent(40) && !received.is_empty() {
            let max_ranges = 1 + rng.below(24) as usize;
            let ranges = ack_ranges(&received, max_ranges);
            let delay = us(rng.below(30_000));
            h.r.on_ack_received(
                APP,
                ranges.iter().cloned(),
                delay,
                h.now,
                true,
                &mut h.out,
                &mut h.s,
            )
            .unwrap();
            let (newly, spurious) = model.ack(&ranges);
            let mut acked = h.acked();
            assert!(
                acked.windows(2).all(|w| w[0] > w[1]),
                "descending: {acked:?}"
            );
            acked.sort_unstable();
            assert_eq!(acked, newly, "seed {seed} step {step}: acked");
            assert_eq!(
                h.out.spurious_losses, spurious,
                "seed {seed} step {step}: spurious"
            );
            if !newly.is_empty() {
                let delay = loss_delay(&h.s.rtt().stats());
                let (lost, loss_time) = model.detect(h.now, delay);
                assert_eq!(h.lost(), lost, "seed {seed} step {step}: lost");
                assert_eq!(
                    h.r.loss_time(APP),
                    loss_time,
                    "seed {seed} step {step}: loss time"
                );
            }
        }
        if h.r.loss_detection_timer().is_some_and(|t| t <= h.now) {
            let before = h.r.loss_time(APP);
            match h.timeout() {
                TimeoutAction::Lost { epoch } => {
                    assert_eq!(epoch, APP);
                    assert!(before.is_some());
                    let delay = loss_delay(&h.s.rtt().stats());
                    let (lost, loss_time) = model.detect(h.now, delay);
                    assert_eq!(h.lost(), lost, "seed {seed} step {step}: timeout lost");
                    assert_eq!(h.r.loss_time(APP), loss_time);
                }
                TimeoutAction::Probe { .. } => assert!(h.lost().is_empty()),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(
            h.r.bytes_in_flight(),
            model.bytes_in_flight(),
            "seed {seed} step {step}"
        );
        let tracked = model
            .pkts
            .values()
            .filter(|f| matches!(f, Fate::Outstanding { .. }))
            .count();
        assert_eq!(h.r.sent_packets(APP).len(), tracked);
    }
    assert!(h.r.stats().lost_packets > 0 && h.r.stats().acked_packets > 0);
}

#[test]
fn a_lost_pmtu_probe_leaves_the_window_alone_but_leaves_flight() {
    let mut h = Harness::confirmed();
    let app = Epoch::Application;
    h.send(app);
    h.at(ms(100));
    h.ack(app, &[0..1], Duration::ZERO).unwrap();
    let cwnd = h.s.cwnd();
    // A probe, then ordinary packets that get through.
    let pn = h.next_pn[app.index()];
    h.next_pn[app.index()] += 1;
    let mut probe = SentPacket::new(pn, h.now, 1452, true, true, pn);
    probe.pmtu_probe = true;
    h.r.on_packet_sent(probe, app, h.now, &mut h.s).unwrap();
    assert_eq!(
        h.r.bytes_in_flight(),
        1452,
        "probes take window like any packet"
    );
    let later: Vec<u64> = (0..4).map(|_| h.send(app)).collect();
    h.at(ms(200));
    h.ack(app, &[later[0]..later[3] + 1], Duration::ZERO)
        .unwrap();
    assert_eq!(h.out.lost.len(), 1);
    assert!(h.out.lost[0].pmtu_probe);
    assert!(
        !h.out.congestion_event,
        "a probe loss is no congestion signal"
    );
    assert_eq!(h.r.stats().congestion_events, 0);
    assert_eq!(h.r.stats().lost_packets, 0, "nor a path loss");
    assert!(h.s.cwnd() >= cwnd);
    assert_eq!(h.r.bytes_in_flight(), 0, "the probe left the flight");
    // The same loss of an ordinary packet reduces the window.
    let lost = h.send(app);
    let after: Vec<u64> = (0..4).map(|_| h.send(app)).collect();
    h.at(ms(300));
    h.ack(app, &[after[0]..after[3] + 1], Duration::ZERO)
        .unwrap();
    assert_eq!(h.out.lost[0].pkt_num, lost);
    assert!(h.out.congestion_event);
}
