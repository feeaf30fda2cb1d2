//! The sender side of the ACK frequency extension (draft-ietf-quic-ack-frequency-12): when to
//! ask the peer for fewer acknowledgements (ACK_FREQUENCY), when for an immediate one
//! (IMMEDIATE_ACK), and which max_ack_delay the PTO must assume meanwhile (§7).
//!
//! The policy (§8): while the congestion window is large and the controller past slow start
//! and recovery, ask for about one ACK per eighth of the window ([`ACKS_PER_WINDOW`]), with a
//! max_ack_delay of an eighth of the smoothed RTT but no more than [`MAX_REQUESTED_DELAY`], so
//! that a window that is not full still gets feedback every few milliseconds; and a Reordering
//! Threshold equal to the loss detection's packet threshold (§9). In slow start, in recovery
//! and with small windows, ask for RFC 9000's behaviour again, with an IMMEDIATE_ACK when a
//! congestion event is the reason. The receiver's answers arrive in fewer, larger ACK frames;
//! the congestion controller sees the same acknowledgements in fewer batches.
//!
//! The connection feeds it the controller's view after each ACK frame
//! ([`AckFrequencySender::on_ack_processed`]) and writes what it asks for. Nothing here reads
//! the clock or allocates.

use std::time::{Duration, Instant};

use crate::cc::CcState;

/// One ACK per this fraction of the congestion window (§8.1: acknowledgements at least once
/// per round trip, more often here so that the window's growth and loss detection see several
/// per round trip).
pub const ACKS_PER_WINDOW: usize = 8;

/// Ask for fewer ACKs only when that would make at least this many packets share one ACK:
/// below it, RFC 9000's every second packet (and the receiver's own rules for sparse arrivals)
/// stays in force and the peer is sent nothing.
pub const MIN_PACKETS_PER_ACK: u64 = 4;

/// The most packets one ACK may be asked to cover. The receiver keeps at most
/// `ack_tracker::MAX_ACK_RANGES` ranges, and each ACK frees that many packets' worth of window
/// at once (pacing spreads the new packets out).
pub const MAX_PACKETS_PER_ACK: u64 = 64;

/// The longest max_ack_delay asked for: feedback every few milliseconds even when the window
/// is large but not full.
pub const MAX_REQUESTED_DELAY: Duration = Duration::from_millis(4);

/// The Reordering Threshold asked for: the loss detection's packet threshold (§9), so that an
/// ACK arrives as soon as the sender could declare a packet lost, not before.
pub const REORDERING_THRESHOLD: u64 = crate::recovery::PACKET_THRESHOLD;

/// Unacknowledged ACK_FREQUENCY frames remembered for the PTO's max_ack_delay; with at most one
/// sent per round trip there are rarely more than one or two.
const IN_FLIGHT: usize = 4;

/// What one ACK_FREQUENCY frame asks of the peer (§4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFrequencyAsk {
    /// Ack-Eliciting Threshold: ACK once more than this many ack-eliciting packets wait.
    pub ack_eliciting_threshold: u64,
    /// Requested Max Ack Delay.
    pub max_ack_delay: Duration,
    /// Reordering Threshold.
    pub reordering_threshold: u64,
}

/// The controller's view the policy decides from, after an ACK frame was processed.
#[derive(Clone, Copy, Debug)]
pub struct SenderView {
    /// The congestion window in bytes.
    pub cwnd: usize,
    /// The maximum datagram size in bytes.
    pub max_datagram_size: usize,
    /// The smoothed RTT.
    pub smoothed_rtt: Duration,
    /// Whether the RTT estimate rests on a sample yet.
    pub has_rtt_sample: bool,
    /// The controller's state.
    pub state: CcState,
    /// Whether the frame caused a congestion event (loss or ECN-CE).
    pub congestion_event: bool,
}

/// The ACK frequency policy of one connection whose peer offered the extension.
#[derive(Debug)]
pub struct AckFrequencySender {
    /// The peer's min_ack_delay: no Requested Max Ack Delay below it (§4).
    peer_min_ack_delay: Duration,
    /// The peer's max_ack_delay transport parameter: what RFC 9000's behaviour means.
    peer_max_ack_delay: Duration,
    next_seq: u64,
    /// What the newest frame sent asked; `None` before the first.
    asked: Option<AckFrequencyAsk>,
    /// When the newest frame was sent.
    asked_at: Option<Instant>,
    /// What to ask in the next frame, if one is due.
    pending: Option<AckFrequencyAsk>,
    /// Whether the next 1-RTT packet should carry IMMEDIATE_ACK.
    immediate_ack: bool,
    /// Sent frames not yet acknowledged: (sequence number, requested delay).
    in_flight: [Option<(u64, Duration)>; IN_FLIGHT],
    /// The largest acknowledged frame's sequence number and requested delay: the peer's
    /// max_ack_delay now.
    confirmed: Option<(u64, Duration)>,
    /// Frames sent, for statistics.
    frames_sent: u64,
    /// IMMEDIATE_ACK frames sent, for statistics.
    immediate_acks_sent: u64,
}

impl AckFrequencySender {
    /// A policy for a peer that offered `peer_min_ack_delay` and whose max_ack_delay transport
    /// parameter is `peer_max_ack_delay`.
    pub fn new(peer_min_ack_delay: Duration, peer_max_ack_delay: Duration) -> Self {
        AckFrequencySender {
            peer_min_ack_delay,
            peer_max_ack_delay,
            next_seq: 0,
            asked: None,
            asked_at: None,
            pending: None,
            immediate_ack: false,
            in_flight: [None; IN_FLIGHT],
            confirmed: None,
            frames_sent: 0,
            immediate_acks_sent: 0,
        }
    }

    /// RFC 9000's behaviour, in the frame's terms.
    fn default_ask(&self) -> AckFrequencyAsk {
        AckFrequencyAsk {
            ack_eliciting_threshold: 1,
            max_ack_delay: self.peer_max_ack_delay,
            reordering_threshold: 1,
        }
    }

    /// What to ask for given the controller's view: `None` for RFC 9000's behaviour.
    pub fn desired(&self, view: &SenderView) -> Option<AckFrequencyAsk> {
        if !view.has_rtt_sample || wants_every_ack(view.state) {
            return None;
        }
        let window_packets = view.cwnd / view.max_datagram_size.max(1);
        let per_ack = u64::try_from(window_packets / ACKS_PER_WINDOW).unwrap_or(u64::MAX);
        if per_ack < MIN_PACKETS_PER_ACK {
            return None;
        }
        // Powers of two, so that a window moving a little does not call for a new frame.
        let per_ack = per_ack.min(MAX_PACKETS_PER_ACK);
        let per_ack = 1 << (63 - per_ack.leading_zeros());
        let delay = (view.smoothed_rtt / ACKS_PER_WINDOW as u32)
            .min(MAX_REQUESTED_DELAY)
            .min(self.peer_max_ack_delay)
            .max(self.peer_min_ack_delay);
        Some(AckFrequencyAsk {
            ack_eliciting_threshold: per_ack - 1,
            max_ack_delay: delay,
            reordering_threshold: REORDERING_THRESHOLD,
        })
    }

    /// Decides, after an ACK frame was processed at `now`, whether the peer should be asked
    /// for something else.
    ///
    /// A return to RFC 9000's behaviour goes out at once, with an IMMEDIATE_ACK if a congestion
    /// event is the reason (§8.1: the sender's response to congestion must not wait); asking
    /// for fewer ACKs, at most once per smoothed RTT (§8.1: "not necessary ... more than once
    /// per RTT"), and only when the threshold changes or the delay by half or more.
    pub fn on_ack_processed(&mut self, now: Instant, view: &SenderView) {
        let asked_fewer = self
            .asked
            .is_some_and(|a| a.ack_eliciting_threshold > 1 || a.reordering_threshold != 1);
        let Some(want) = self.desired(view) else {
            if asked_fewer {
                self.pending = Some(self.default_ask());
                self.immediate_ack |= view.congestion_event;
            } else {
                // A decision for fewer ACKs not sent yet is void.
                let default = self.default_ask();
                self.pending = self.pending.filter(|p| *p == default);
            }
            return;
        };
        let current = self.pending.or(self.asked);
        let differs = current.is_none_or(|c| {
            c.ack_eliciting_threshold != want.ack_eliciting_threshold
                || c.reordering_threshold != want.reordering_threshold
                || c.max_ack_delay >= want.max_ack_delay * 2
                || want.max_ack_delay >= c.max_ack_delay * 2
        });
        let waited = self
            .asked_at
            .is_none_or(|at| now.saturating_duration_since(at) >= view.smoothed_rtt);
        if differs && (waited || !asked_fewer) {
            self.pending = Some(want);
        }
    }

    /// A probe timeout fired: the probes should be acknowledged without delay (§7).
    pub fn on_probe_timeout(&mut self) {
        self.immediate_ack = true;
    }

    /// The ACK_FREQUENCY frame due, as (Sequence Number, what it asks), if one is.
    pub fn frame_to_send(&self) -> Option<(u64, AckFrequencyAsk)> {
        self.pending.map(|ask| (self.next_seq, ask))
    }

    /// The frame of [`AckFrequencySender::frame_to_send`] was written into a packet sent at
    /// `now`.
    pub fn on_frame_sent(&mut self, now: Instant) {
        let Some(ask) = self.pending.take() else {
            return;
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.asked = Some(ask);
        self.asked_at = Some(now);
        self.frames_sent += 1;
        let slot = match self.in_flight.iter().position(Option::is_none) {
            Some(free) => free,
            // All taken (frames keep getting lost): forget the oldest, keeping the PTO safe
            // by folding its delay into the newest one's if it was larger.
            None => {
                let oldest = self.oldest_in_flight().unwrap_or(0);
                let (_, delay) = self.in_flight[oldest].unwrap_or((0, Duration::ZERO));
                self.in_flight[oldest] = None;
                self.fold_delay_into_newest(delay);
                oldest
            }
        };
        self.in_flight[slot] = Some((seq, ask.max_ack_delay));
    }

    fn oldest_in_flight(&self) -> Option<usize> {
        (0..IN_FLIGHT)
            .filter(|&i| self.in_flight[i].is_some())
            .min_by_key(|&i| self.in_flight[i].map_or(u64::MAX, |(s, _)| s))
    }

    fn fold_delay_into_newest(&mut self, delay: Duration) {
        if let Some(newest) = self.in_flight.iter_mut().flatten().max_by_key(|(s, _)| *s) {
            newest.1 = newest.1.max(delay);
        }
    }

    /// Whether the next 1-RTT packet should carry an IMMEDIATE_ACK frame.
    pub fn immediate_ack_due(&self) -> bool {
        self.immediate_ack
    }

    /// An IMMEDIATE_ACK frame was written.
    pub fn on_immediate_ack_sent(&mut self) {
        self.immediate_ack = false;
        self.immediate_acks_sent += 1;
    }

    /// The packet carrying frame `seq` was acknowledged: the peer now uses its values, and
    /// older frames in flight no longer matter (the peer ignores them, §4).
    pub fn on_frame_acked(&mut self, seq: u64) {
        let Some(delay) = self
            .in_flight
            .iter()
            .flatten()
            .find(|(s, _)| *s == seq)
            .map(|&(_, d)| d)
        else {
            return;
        };
        if self.confirmed.is_none_or(|(s, _)| seq > s) {
            self.confirmed = Some((seq, delay));
        }
        for slot in &mut self.in_flight {
            if slot.is_some_and(|(s, _)| s <= seq) {
                *slot = None;
            }
        }
    }

    /// The packet carrying frame `seq` was declared lost: the newest frame is sent again with
    /// a new Sequence Number (and the values wanted now, if a newer decision is pending); an
    /// older one is superseded already (§4).
    pub fn on_frame_lost(&mut self, seq: u64) {
        if seq + 1 == self.next_seq && self.pending.is_none() {
            self.pending = self.asked;
        }
    }

    /// The max_ack_delay the PTO must assume (§7): the largest of the peer's current one and
    /// every one asked for in frames not yet acknowledged.
    pub fn pto_max_ack_delay(&self) -> Duration {
        let current = self.confirmed.map_or(self.peer_max_ack_delay, |(_, d)| d);
        self.in_flight
            .iter()
            .flatten()
            .map(|&(_, d)| d)
            .fold(current, Duration::max)
    }

    /// How many ACK_FREQUENCY frames were sent.
    pub fn frames_sent(&self) -> u64 {
        self.frames_sent
    }

    /// How many IMMEDIATE_ACK frames were sent.
    pub fn immediate_acks_sent(&self) -> u64 {
        self.immediate_acks_sent
    }
}

/// Whether the controller's state calls for RFC 9000's rate of ACKs: slow start (§8.1.1: the
/// window grows with each ACK, and delayed ones make bursts) and recovery (loss detection and
/// the repair wait on them).
fn wants_every_ack(state: CcState) -> bool {
    matches!(
        state,
        CcState::SlowStart
            | CcState::ConservativeSlowStart
            | CcState::LimitedSlowStart
            | CcState::Recovery
            | CcState::Startup
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: usize = 1200;
    const PEER_MIN: Duration = Duration::from_millis(1);
    const PEER_MAX: Duration = Duration::from_millis(25);

    fn view(cwnd_packets: usize, srtt_ms: u64, state: CcState) -> SenderView {
        SenderView {
            cwnd: cwnd_packets * MSS,
            max_datagram_size: MSS,
            smoothed_rtt: Duration::from_millis(srtt_ms),
            has_rtt_sample: true,
            state,
            congestion_event: false,
        }
    }

    fn sender() -> AckFrequencySender {
        AckFrequencySender::new(PEER_MIN, PEER_MAX)
    }

    const CA: CcState = CcState::CongestionAvoidance;

    #[test]
    fn asks_for_an_ack_per_eighth_of_a_large_window() {
        let s = sender();
        // 31 packets: 3 per eighth, too few to bother the peer.
        assert_eq!(s.desired(&view(31, 20, CA)), None);
        // 32: one ACK per 4 packets, delay an eighth of the RTT.
        let a = s.desired(&view(32, 20, CA)).unwrap();
        assert_eq!(a.ack_eliciting_threshold, 3);
        assert_eq!(a.max_ack_delay, Duration::from_micros(2500));
        assert_eq!(a.reordering_threshold, 3);
        // Powers of two: 100 packets is 12 per eighth, asked as 8.
        assert_eq!(
            s.desired(&view(100, 20, CA))
                .unwrap()
                .ack_eliciting_threshold,
            7
        );
        // Capped, and the delay capped at a few milliseconds and floored at the peer's min.
        let a = s.desired(&view(100_000, 200, CA)).unwrap();
        assert_eq!(a.ack_eliciting_threshold, MAX_PACKETS_PER_ACK - 1);
        assert_eq!(a.max_ack_delay, MAX_REQUESTED_DELAY);
        assert_eq!(
            s.desired(&view(1000, 1, CA)).unwrap().max_ack_delay,
            PEER_MIN
        );
        // Never above the peer's own max_ack_delay.
        let s = AckFrequencySender::new(Duration::ZERO, Duration::from_millis(2));
        assert_eq!(
            s.desired(&view(1000, 100, CA)).unwrap().max_ack_delay,
            Duration::from_millis(2)
        );
    }

    #[test]
    fn slow_start_recovery_and_no_rtt_sample_keep_every_second_ack() {
        let s = sender();
        for state in [
            CcState::SlowStart,
            CcState::ConservativeSlowStart,
            CcState::LimitedSlowStart,
            CcState::Recovery,
            CcState::Startup,
        ] {
            assert_eq!(s.desired(&view(1000, 20, state)), None, "{state:?}");
        }
        for state in [CcState::ProbeBwCruise, CcState::ApplicationLimited] {
            assert!(s.desired(&view(1000, 20, state)).is_some(), "{state:?}");
        }
        let mut v = view(1000, 20, CA);
        v.has_rtt_sample = false;
        assert_eq!(s.desired(&v), None);
    }

    #[test]
    fn sends_nothing_while_rfc_9000_behaviour_is_wanted() {
        let now = crate::testing::virtual_epoch();
        let mut s = sender();
        s.on_ack_processed(now, &view(1000, 20, CcState::SlowStart));
        s.on_ack_processed(now, &view(10, 20, CA));
        assert_eq!(s.frame_to_send(), None);
        assert!(!s.immediate_ack_due());
        assert_eq!(s.pto_max_ack_delay(), PEER_MAX);
    }

    #[test]
    fn asks_at_once_then_at_most_once_per_rtt() {
        let now = crate::testing::virtual_epoch();
        let rtt = Duration::from_millis(20);
        let mut s = sender();
        s.on_ack_processed(now, &view(64, 20, CA));
        let (seq, ask) = s.frame_to_send().unwrap();
        assert_eq!((seq, ask.ack_eliciting_threshold), (0, 7));
        s.on_frame_sent(now);
        assert_eq!(s.frame_to_send(), None);
        // The same want again: nothing.
        s.on_ack_processed(now + rtt, &view(70, 20, CA));
        assert_eq!(s.frame_to_send(), None);
        // A larger window within the RTT waits; after it, goes.
        s.on_ack_processed(now + rtt / 2, &view(128, 20, CA));
        assert_eq!(s.frame_to_send(), None);
        s.on_ack_processed(now + rtt, &view(128, 20, CA));
        let (seq, ask) = s.frame_to_send().unwrap();
        assert_eq!((seq, ask.ack_eliciting_threshold), (1, 15));
        s.on_frame_sent(now + rtt);
        assert_eq!(s.frames_sent(), 2);
    }

    #[test]
    fn loss_returns_to_every_second_ack_with_an_immediate_ack() {
        let now = crate::testing::virtual_epoch();
        let mut s = sender();
        s.on_ack_processed(now, &view(64, 20, CA));
        s.on_frame_sent(now);
        let mut v = view(45, 20, CcState::Recovery);
        v.congestion_event = true;
        // Within the same RTT: a return to the default does not wait.
        s.on_ack_processed(now + Duration::from_millis(1), &v);
        let (seq, ask) = s.frame_to_send().unwrap();
        assert_eq!(seq, 1);
        assert_eq!(
            ask,
            AckFrequencyAsk {
                ack_eliciting_threshold: 1,
                max_ack_delay: PEER_MAX,
                reordering_threshold: 1,
            }
        );
        assert!(s.immediate_ack_due());
        s.on_immediate_ack_sent();
        assert!(!s.immediate_ack_due());
        assert_eq!(s.immediate_acks_sent(), 1);
        // A window that shrinks without a congestion event (BBR's ProbeRTT) asks without one.
        let mut s = sender();
        s.on_ack_processed(now, &view(64, 20, CA));
        s.on_frame_sent(now);
        s.on_ack_processed(now, &view(4, 20, CcState::ProbeRtt));
        assert!(s.frame_to_send().is_some());
        assert!(!s.immediate_ack_due());
    }

    #[test]
    fn an_unsent_decision_is_dropped_when_the_window_shrinks() {
        let now = crate::testing::virtual_epoch();
        let mut s = sender();
        s.on_ack_processed(now, &view(64, 20, CA));
        assert!(s.frame_to_send().is_some());
        s.on_ack_processed(now, &view(64, 20, CcState::Recovery));
        assert_eq!(s.frame_to_send(), None);
    }

    #[test]
    fn pto_assumes_the_largest_delay_in_flight() {
        let now = crate::testing::virtual_epoch();
        let mut s = sender();
        s.on_ack_processed(now, &view(64, 20, CA));
        s.on_frame_sent(now);
        let asked = Duration::from_micros(2500);
        // Smaller than the peer's current 25 ms: the PTO keeps 25 ms until it is acknowledged.
        assert_eq!(s.pto_max_ack_delay(), PEER_MAX);
        s.on_frame_acked(0);
        assert_eq!(s.pto_max_ack_delay(), asked);
        // A larger one in flight counts at once.
        s.on_ack_processed(now, &view(64, 20, CcState::Recovery));
        s.on_frame_sent(now);
        assert_eq!(s.pto_max_ack_delay(), PEER_MAX);
        // An old frame acknowledged late changes nothing.
        s.on_frame_acked(0);
        assert_eq!(s.pto_max_ack_delay(), PEER_MAX);
        s.on_frame_acked(1);
        assert_eq!(s.pto_max_ack_delay(), PEER_MAX);
    }

    #[test]
    fn the_newest_frame_lost_is_sent_again_with_a_new_number() {
        let now = crate::testing::virtual_epoch();
        let rtt = Duration::from_millis(20);
        let mut s = sender();
        s.on_ack_processed(now, &view(64, 20, CA));
        s.on_frame_sent(now);
        s.on_frame_lost(0);
        let (seq, ask) = s.frame_to_send().unwrap();
        assert_eq!((seq, ask.ack_eliciting_threshold), (1, 7));
        s.on_frame_sent(now);
        s.on_ack_processed(now + rtt, &view(128, 20, CA));
        s.on_frame_sent(now + rtt);
        // Frame 1 is superseded by 2: its loss asks for nothing.
        s.on_frame_lost(1);
        assert_eq!(s.frame_to_send(), None);
    }

    #[test]
    fn many_frames_in_flight_keep_the_largest_delay() {
        let now = crate::testing::virtual_epoch();
        let mut s = sender();
        s.on_ack_processed(now, &view(64, 20, CcState::Recovery));
        // Ten frames, each lost and resent, none acknowledged: a 25 ms default, then small.
        s.on_ack_processed(now, &view(64, 20, CA));
        for i in 0..10 {
            s.on_frame_sent(now);
            s.on_frame_lost(i);
        }
        assert_eq!(s.pto_max_ack_delay(), PEER_MAX);
        s.on_frame_acked(9);
        assert_eq!(s.pto_max_ack_delay(), Duration::from_micros(2500));
    }
}
