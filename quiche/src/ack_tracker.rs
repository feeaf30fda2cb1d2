//! The receiver side of acknowledgements (RFC 9000 §13.2): which packet numbers arrived, when an
//! ACK frame is due, and what it reports.

use std::time::{Duration, Instant};

use crate::ranges::RangeSet;

/// How many ACK ranges we remember per packet number space. Older ranges fall off: the peer has
/// long since stopped caring about them, and an attacker cannot make us store more.
pub const MAX_ACK_RANGES: usize = 64;

/// Acknowledge at once when more than this many ack-eliciting packets wait: every second one
/// (RFC 9000 §13.2.2), the Ack-Eliciting Threshold of draft-ietf-quic-ack-frequency-12 §4 until
/// the peer asks for another.
const DEFAULT_ACK_ELICITING_THRESHOLD: u64 = 1;

/// Out-of-order packets are acknowledged at once (RFC 9000 §13.2.1): the Reordering Threshold of
/// draft-ietf-quic-ack-frequency-12 §4 until the peer asks for another.
const DEFAULT_REORDERING_THRESHOLD: u64 = 1;

/// The gap between ack-eliciting packets from which each is acknowledged at once, for a path
/// whose smoothed RTT is `srtt`.
///
/// Acknowledging every second packet (RFC 9000 §13.2.2) holds the first of each pair until the
/// second arrives. When the sender's window is small and paced over the round trip, that is a
/// large share of the RTT: with W packets per RTT each held packet waits RTT / W, half of them do,
/// and a window-limited sender (CUBIC's Reno-friendly region at a few percent random loss) then
/// delivers W / (W + 1/2) of what it could: 8 % less at six packets. Acknowledging packets that
/// arrive further apart than this gap costs at most one ACK per gap (fewer than
/// `SPARSE_ACK_RTT_DIVISOR` per round trip, and no more than one a millisecond); denser arrivals
/// keep the every-second-packet rule, where holding one packet costs little.
pub fn sparse_ack_gap(srtt: Duration) -> Duration {
    (srtt / SPARSE_ACK_RTT_DIVISOR).max(SPARSE_ACK_MIN_GAP)
}

/// See [`sparse_ack_gap`]. netsim, seed path (5 Mbit/s, 60 ms, 1-BDP queue, 1452-byte
/// datagrams), 5 % loss, medians of 10: every second packet 77.3 s, this rule 70.5 s (a sixteenth
/// of the RTT: 75.7 s; every packet: 70.8 s); 2 %: 44.5 s -> 41.4 s; 0 % loss unchanged.
const SPARSE_ACK_RTT_DIVISOR: u32 = 32;

/// The floor of [`sparse_ack_gap`]: at sub-millisecond RTTs the pair rule keeps the ACK rate
/// (and the sender's ACK processing) at half the packet rate.
const SPARSE_ACK_MIN_GAP: Duration = Duration::from_millis(1);

/// See [`AckTracker::can_piggyback`].
pub const PIGGYBACK_NON_ELICITING_EVERY: u64 = 32;

/// ECN counts of received packets (RFC 9000 §13.4.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnCounters {
    /// Packets received with ECT(0).
    pub ect0: u64,
    /// Packets received with ECT(1).
    pub ect1: u64,
    /// Packets received with CE.
    pub ce: u64,
}

/// What the peer asked of our acknowledgements in its latest ACK_FREQUENCY frame
/// (draft-ietf-quic-ack-frequency-12 §4), already validated by the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFrequencyRequest {
    /// The frame's Sequence Number: frames with a number not above it are stale.
    pub seq: u64,
    /// Acknowledge once more than this many ack-eliciting packets wait (0: every one).
    pub ack_eliciting_threshold: u64,
    /// The max_ack_delay to use instead of our transport parameter.
    pub max_ack_delay: Duration,
    /// 0: out-of-order packets do not hasten an ACK; 1: they do at once (RFC 9000's rule);
    /// more: once the reordering exceeds the peer's window (§6.2).
    pub reordering_threshold: u64,
}

/// Receive-side acknowledgement state of one packet number space.
#[derive(Debug)]
pub struct AckTracker {
    received: RangeSet,
    /// Packet numbers below this are no longer tracked and count as duplicates: their ranges
    /// were pruned once acknowledged or fell off the bounded set.
    floor: u64,
    largest_received: Option<u64>,
    /// When the largest packet number was received: the base of the ACK Delay field.
    largest_received_time: Option<Instant>,
    /// Ack-eliciting packets received since the last ACK frame was sent.
    unacked_eliciting: u64,
    /// Packets that do not elicit an ACK (the peer's own ACKs) received since the last ACK frame
    /// was sent.
    unacked_non_eliciting: u64,
    /// When the last ack-eliciting packet arrived: sparse arrivals are acknowledged at once.
    last_eliciting_time: Option<Instant>,
    /// Whether the gap before that packet was a sparse one too.
    last_gap_sparse: bool,
    /// When the first ack-eliciting packet not yet acknowledged arrived.
    eliciting_since: Option<Instant>,
    /// When an ACK becomes due if nothing else triggers one sooner.
    ack_deadline: Option<Instant>,
    /// Whether an ACK should go out in the next packet of this space.
    ack_now: bool,
    /// Whether anything new arrived since the last ACK frame (an ACK frame is only useful then).
    changed: bool,
    ecn: EcnCounters,
    /// Whether the last packet counted by [`AckTracker::on_ecn`] was marked CE.
    last_ce: bool,
    /// The largest packet number reported in an ACK frame we sent ("Largest Acked" of
    /// draft-ietf-quic-ack-frequency-12 §6.2).
    largest_reported: Option<u64>,
    /// The peer's latest ACK_FREQUENCY request; `None` keeps RFC 9000's behaviour.
    request: Option<AckFrequencyRequest>,
}

impl Default for AckTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl AckTracker {
    /// An empty tracker.
    pub fn new() -> Self {
        AckTracker {
            received: RangeSet::new(MAX_ACK_RANGES),
            floor: 0,
            largest_received: None,
            largest_received_time: None,
            unacked_eliciting: 0,
            unacked_non_eliciting: 0,
            last_eliciting_time: None,
            last_gap_sparse: false,
            eliciting_since: None,
            ack_deadline: None,
            ack_now: false,
            changed: false,
            ecn: EcnCounters::default(),
            last_ce: false,
            largest_reported: None,
            request: None,
        }
    }

    /// Whether `pn` was already received (duplicates must be dropped, RFC 9000 §12.3). Packet
    /// numbers so old that their range fell off the bounded set are treated as duplicates too.
    pub fn is_duplicate(&self, pn: u64) -> bool {
        pn < self.floor || self.received.contains(pn)
    }

    /// The largest packet number received so far, the base for decoding truncated ones.
    pub fn largest_received(&self) -> Option<u64> {
        self.largest_received
    }

    /// Records a packet that was decrypted and processed.
    ///
    /// `max_ack_delay` (our transport parameter) bounds how long an ack-eliciting packet may
    /// wait (RFC 9000 §13.2.1), unless the peer asked for another with ACK_FREQUENCY.
    /// While the peer asks for no more than RFC 9000's every second packet, an ack-eliciting
    /// packet that arrives `sparse_gap` or more after the previous one, which itself came that
    /// long after the one before, is acknowledged at once: waiting for a second packet would
    /// hold the sender's window for about that gap again (see [`sparse_ack_gap`]). One long gap
    /// alone (jitter, the pause before a burst) keeps the pair rule: with 10 ms of jitter,
    /// acknowledging after single gaps made HyStart++ leave slow start early and cost a
    /// download 2.3 % (netsim, 20 Mbit/s, 32-BDP queue).
    pub fn on_packet_received(
        &mut self,
        pn: u64,
        ack_eliciting: bool,
        now: Instant,
        max_ack_delay: Duration,
        sparse_gap: Duration,
    ) {
        let previous_largest = self.largest_received;
        self.received.push_item(pn);
        self.changed = true;
        if self.received.len() >= self.received.capacity() {
            if let Some(first) = self.received.first() {
                self.floor = self.floor.max(first);
            }
        }

        if previous_largest.is_none_or(|largest| pn > largest) {
            self.largest_received = Some(pn);
            self.largest_received_time = Some(now);
        }

        if !ack_eliciting {
            self.unacked_non_eliciting += 1;
            return;
        }

        self.unacked_eliciting += 1;
        let threshold = self.ack_eliciting_threshold();
        let gap = self
            .last_eliciting_time
            .map(|last| now.saturating_duration_since(last));
        let gap_sparse = gap.is_some_and(|g| g >= sparse_gap);
        // Two sparse gaps in a row: a flow that is sparse, not one gap of jitter or the pause
        // between bursts. Only while the peer wants RFC 9000's rate of ACKs or more: one that
        // asked for fewer knows its flow.
        let sparse =
            gap_sparse && self.last_gap_sparse && threshold <= DEFAULT_ACK_ELICITING_THRESHOLD;
        self.last_gap_sparse = gap_sparse;
        self.last_eliciting_time = Some(now);
        if sparse
            || self.unacked_eliciting > threshold
            || self.reordering_calls_for_ack(pn, previous_largest)
        {
            self.ack_now = true;
        }
        if self.eliciting_since.is_none() {
            self.eliciting_since = Some(now);
            self.ack_deadline = Some(now + self.max_ack_delay(max_ack_delay));
        }
    }

    /// The Ack-Eliciting Threshold in force.
    fn ack_eliciting_threshold(&self) -> u64 {
        self.request.map_or(DEFAULT_ACK_ELICITING_THRESHOLD, |r| {
            r.ack_eliciting_threshold
        })
    }

    /// The max_ack_delay in force, `local` (our transport parameter) unless the peer asked for
    /// another.
    fn max_ack_delay(&self, local: Duration) -> Duration {
        self.request.map_or(local, |r| r.max_ack_delay)
    }

    /// Whether the ack-eliciting packet `pn`, received after `previous_largest`, shows
    /// reordering or loss that the peer should hear of at once.
    fn reordering_calls_for_ack(&self, pn: u64, previous_largest: Option<u64>) -> bool {
        let Some(largest) = previous_largest else {
            return false;
        };
        match self
            .request
            .map_or(DEFAULT_REORDERING_THRESHOLD, |r| r.reordering_threshold)
        {
            // draft-ietf-quic-ack-frequency-12 §6.2: no immediate ACK for reordering.
            0 => false,
            // RFC 9000 §13.2.1: a gap below the new packet, or a packet filling an older gap,
            // is reported at once so the sender's loss detection is not delayed.
            1 => pn < largest || pn > largest + 1,
            threshold => self.outside_reordering_window(pn, largest, threshold),
        }
    }

    /// draft-ietf-quic-ack-frequency-12 §6.2 for a Reordering Threshold above 1: acknowledge
    /// when a late packet is one the sender may already have declared lost, or when the oldest
    /// gap the sender has not yet heard of is `threshold` packets behind the largest.
    fn outside_reordering_window(&self, pn: u64, previous_largest: u64, threshold: u64) -> bool {
        // "Largest Reported Missing": what lies at or below it the sender could already
        // declare lost from our last ACK.
        let reported_missing = self
            .largest_reported
            .map(|acked| acked.saturating_sub(threshold));
        if pn < previous_largest && reported_missing.is_some_and(|m| pn <= m) {
            return true;
        }
        let largest_unacked = self.largest_received.unwrap_or(pn);
        self.smallest_unreported_missing(reported_missing)
            .is_some_and(|missing| largest_unacked - missing >= threshold)
    }

    /// The smallest packet number above `reported_missing` that lies in a gap between received
    /// ranges ("Unreported Missing", draft-ietf-quic-ack-frequency-12 §6.2). Without loss the
    /// set is one range and this costs one step.
    fn smallest_unreported_missing(&self, reported_missing: Option<u64>) -> Option<u64> {
        let above = reported_missing.map_or(0, |m| m.saturating_add(1));
        let mut ranges = self.received.iter();
        let mut gap_start = ranges.next()?.end;
        for r in ranges {
            let candidate = gap_start.max(above);
            if candidate < r.start {
                return Some(candidate);
            }
            gap_start = r.end;
        }
        None
    }

    /// Applies a validated ACK_FREQUENCY request (draft-ietf-quic-ack-frequency-12 §4). Returns
    /// false, changing nothing, for a frame whose Sequence Number is not above the largest seen:
    /// it arrived out of order and is obsolete.
    pub fn on_ack_frequency(&mut self, request: AckFrequencyRequest) -> bool {
        if self.request.is_some_and(|r| request.seq <= r.seq) {
            return false;
        }
        self.request = Some(request);
        // A packet already waiting now waits for the new delay, counted from its arrival.
        if let Some(since) = self.eliciting_since {
            self.ack_deadline = Some(since + request.max_ack_delay);
        }
        if self.unacked_eliciting > request.ack_eliciting_threshold {
            self.ack_now = true;
        }
        true
    }

    /// The peer's latest ACK_FREQUENCY request, if any.
    pub fn ack_frequency_request(&self) -> Option<&AckFrequencyRequest> {
        self.request.as_ref()
    }

    /// Counts the ECN codepoint of a received packet (the two low bits of the IP TOS byte).
    ///
    /// While the peer asked for fewer ACKs than every second packet, the first CE-marked packet
    /// after unmarked ones is acknowledged at once, so the peer's response to congestion is not
    /// delayed (draft-ietf-quic-ack-frequency-12 §6.3).
    pub fn on_ecn(&mut self, codepoint: u8) {
        let ce = codepoint & 0b11 == 0b11;
        match codepoint & 0b11 {
            0b10 => self.ecn.ect0 += 1,
            0b01 => self.ecn.ect1 += 1,
            0b11 => self.ecn.ce += 1,
            _ => {}
        }
        if ce
            && !self.last_ce
            && self.unacked_eliciting > 0
            && self.ack_eliciting_threshold() > DEFAULT_ACK_ELICITING_THRESHOLD
        {
            self.ack_now = true;
        }
        self.last_ce = ce;
    }

    /// The ECN counts to report, if any packet carried an ECN codepoint.
    pub fn ecn_counts(&self) -> Option<EcnCounters> {
        (self.ecn != EcnCounters::default()).then_some(self.ecn)
    }

    /// Forces an ACK into the next packet of this space (e.g. in response to a probe).
    pub fn request_ack_now(&mut self) {
        if self.largest_received.is_some() {
            self.ack_now = true;
            self.changed = true;
        }
    }

    /// Whether an ACK frame must be sent now.
    pub fn should_send_ack(&self, now: Instant) -> bool {
        if !self.changed || self.received.is_empty() {
            return false;
        }
        self.ack_now || self.ack_deadline.is_some_and(|d| d <= now)
    }

    /// Whether an ACK frame may usefully ride along in a packet that is being sent anyway: when
    /// an ack-eliciting packet waits for it, or once every [`PIGGYBACK_NON_ELICITING_EVERY`]
    /// packets that only carried the peer's ACKs. Those need no acknowledgement (RFC 9000
    /// §13.2.1); an occasional one lets the peer stop repeating old ranges (§13.2.4). Acking
    /// each of them put an ACK frame of 10 bytes with ECN counts into every second packet of a
    /// bulk transfer whose receiver acknowledges every second packet: 0.34 % of the link.
    pub fn can_piggyback(&self) -> bool {
        self.changed
            && !self.received.is_empty()
            && (self.unacked_eliciting > 0
                || self.ack_now
                || self.unacked_non_eliciting >= PIGGYBACK_NON_ELICITING_EVERY)
    }

    /// When the delayed ACK timer fires, if one is armed.
    pub fn ack_deadline(&self) -> Option<Instant> {
        if self.changed && !self.ack_now {
            self.ack_deadline
        } else {
            None
        }
    }

    /// The ranges to report, largest first when iterated in reverse.
    pub fn ranges(&self) -> &RangeSet {
        &self.received
    }

    /// The ACK Delay to report: time since the largest packet arrived, in microseconds before
    /// scaling by the exponent.
    pub fn ack_delay(&self, now: Instant) -> Duration {
        self.largest_received_time
            .map(|t| now.saturating_duration_since(t))
            .unwrap_or_default()
    }

    /// Records that an ACK frame reporting the current state was sent.
    pub fn on_ack_sent(&mut self) {
        self.unacked_eliciting = 0;
        self.unacked_non_eliciting = 0;
        self.largest_reported = self.largest_received;
        self.eliciting_since = None;
        self.ack_deadline = None;
        self.ack_now = false;
        self.changed = false;
    }

    /// The peer acknowledged one of our packets that carried an ACK whose largest reported
    /// packet number was `largest_acked`: ranges at or below it need not be reported again
    /// (RFC 9000 §13.2.4).
    pub fn on_ack_frame_acked(&mut self, largest_acked: u64) {
        // Keep the largest received packet itself so the next ACK still starts at it and stays
        // non-empty; drop everything below.
        if let Some(first) = self.received.first() {
            if largest_acked > first {
                self.received.remove_until(largest_acked.saturating_sub(1));
                self.floor = self.floor.max(largest_acked);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAD: Duration = Duration::from_millis(25);
    /// A sparse-arrival gap no test's packets reach, so only the pair rule applies.
    const DENSE: Duration = Duration::from_secs(3600);

    #[test]
    fn every_second_eliciting_packet_is_acked_at_once() {
        let now = crate::testing::virtual_epoch();
        let mut t = AckTracker::new();
        t.on_packet_received(0, true, now, MAD, DENSE);
        assert!(!t.should_send_ack(now));
        assert_eq!(t.ack_deadline(), Some(now + MAD));
        t.on_packet_received(1, true, now, MAD, DENSE);
        assert!(t.should_send_ack(now));
        t.on_ack_sent();
        assert!(!t.should_send_ack(now));
    }

    #[test]
    fn sparse_arrivals_are_acked_one_by_one() {
        let now = crate::testing::virtual_epoch();
        let gap = Duration::from_millis(10);
        let mut t = AckTracker::new();
        t.on_packet_received(0, true, now, MAD, gap);
        assert!(!t.should_send_ack(now), "a first packet alone waits");
        // One long gap (jitter, a pause between bursts) keeps the pair rule: this is the pair.
        t.on_packet_received(1, true, now + gap, MAD, gap);
        assert!(t.should_send_ack(now + gap));
        t.on_ack_sent();
        // A second long gap in a row: a sparse flow, each packet acknowledged on arrival.
        let at = now + gap * 2;
        t.on_packet_received(2, true, at, MAD, gap);
        assert!(t.should_send_ack(at));
        t.on_ack_sent();
        let at = at + gap;
        t.on_packet_received(3, true, at, MAD, gap);
        assert!(t.should_send_ack(at));
        t.on_ack_sent();
        // One arriving sooner than the gap waits for its pair or the timer.
        let soon = at + gap / 2;
        t.on_packet_received(4, true, soon, MAD, gap);
        assert!(!t.should_send_ack(soon));
        assert_eq!(t.ack_deadline(), Some(soon + MAD));
        // And the next long gap after it is a single one again.
        t.on_ack_sent();
        let later = soon + gap * 2;
        t.on_packet_received(5, true, later, MAD, gap);
        assert!(!t.should_send_ack(later));
        // Non-eliciting packets do not count as arrivals.
        t.on_ack_sent();
        t.on_packet_received(6, false, later + gap * 3, MAD, gap);
        assert!(!t.should_send_ack(later + gap * 3));
    }

    #[test]
    fn sparse_gap_scales_with_rtt_and_has_a_floor() {
        assert_eq!(
            sparse_ack_gap(Duration::from_millis(64)),
            Duration::from_millis(2)
        );
        assert_eq!(
            sparse_ack_gap(Duration::from_micros(300)),
            Duration::from_millis(1)
        );
    }

    #[test]
    fn single_packet_is_acked_after_max_ack_delay() {
        let now = crate::testing::virtual_epoch();
        let mut t = AckTracker::new();
        t.on_packet_received(0, true, now, MAD, DENSE);
        assert!(!t.should_send_ack(now + MAD - Duration::from_millis(1)));
        assert!(t.should_send_ack(now + MAD));
    }

    #[test]
    fn gap_triggers_immediate_ack() {
        let now = crate::testing::virtual_epoch();
        let mut t = AckTracker::new();
        t.on_packet_received(0, true, now, MAD, DENSE);
        t.on_ack_sent();
        t.on_packet_received(2, true, now, MAD, DENSE);
        assert!(t.should_send_ack(now));
        let ranges: Vec<_> = t.ranges().iter().collect();
        assert_eq!(ranges, vec![0..1, 2..3]);
    }

    #[test]
    fn non_eliciting_packets_do_not_trigger_acks() {
        let now = crate::testing::virtual_epoch();
        let mut t = AckTracker::new();
        for pn in 0..10 {
            t.on_packet_received(pn, false, now, MAD, DENSE);
        }
        assert!(!t.should_send_ack(now + MAD * 10));
        // Nor do they make an ACK ride along, until enough of them arrived.
        assert!(!t.can_piggyback());
        for pn in 10..PIGGYBACK_NON_ELICITING_EVERY {
            t.on_packet_received(pn, false, now, MAD, DENSE);
        }
        assert!(t.can_piggyback());
        assert!(!t.should_send_ack(now + MAD * 10));
        t.on_ack_sent();
        assert!(!t.can_piggyback());
        // An ack-eliciting one always may.
        t.on_packet_received(PIGGYBACK_NON_ELICITING_EVERY, true, now, MAD, DENSE);
        assert!(t.can_piggyback());
    }

    #[test]
    fn duplicates_are_detected() {
        let now = crate::testing::virtual_epoch();
        let mut t = AckTracker::new();
        t.on_packet_received(5, true, now, MAD, DENSE);
        assert!(t.is_duplicate(5));
        assert!(!t.is_duplicate(4));
        assert!(!t.is_duplicate(6));
    }

    #[test]
    fn acked_ack_ranges_are_pruned() {
        let now = crate::testing::virtual_epoch();
        let mut t = AckTracker::new();
        for pn in [0, 1, 2, 4, 5, 7] {
            t.on_packet_received(pn, true, now, MAD, DENSE);
        }
        t.on_ack_frame_acked(5);
        let ranges: Vec<_> = t.ranges().iter().collect();
        assert_eq!(ranges, vec![5..6, 7..8]);
        // A late copy of a pruned packet is still recognised as a duplicate.
        assert!(t.is_duplicate(2));
        assert!(t.is_duplicate(3));
        assert!(!t.is_duplicate(6));
    }

    #[test]
    fn ack_delay_measures_from_largest() {
        let now = crate::testing::virtual_epoch();
        let mut t = AckTracker::new();
        t.on_packet_received(3, true, now, MAD, DENSE);
        t.on_packet_received(1, true, now + MAD, MAD, DENSE);
        assert_eq!(t.ack_delay(now + MAD * 2), MAD * 2);
    }

    fn request(seq: u64, threshold: u64, delay: Duration, reorder: u64) -> AckFrequencyRequest {
        AckFrequencyRequest {
            seq,
            ack_eliciting_threshold: threshold,
            max_ack_delay: delay,
            reordering_threshold: reorder,
        }
    }

    /// Feeds `pns` one by one (ack-eliciting, same instant) and returns, for each, whether an
    /// ACK was due right after it; an ACK due is sent before the next packet.
    fn acks_after(t: &mut AckTracker, pns: &[u64]) -> Vec<bool> {
        let now = crate::testing::virtual_epoch();
        pns.iter()
            .map(|&pn| {
                t.on_packet_received(pn, true, now, MAD, DENSE);
                let due = t.should_send_ack(now);
                if due {
                    t.on_ack_sent();
                }
                due
            })
            .collect()
    }

    #[test]
    fn ack_eliciting_threshold_sets_the_count() {
        let mut t = AckTracker::new();
        assert!(t.on_ack_frequency(request(0, 9, MAD, 1)));
        // More than 9 waiting: the 10th, 20th... packet is acknowledged at once.
        let due = acks_after(&mut t, &(0..30).collect::<Vec<_>>());
        let at: Vec<_> = (0..30).filter(|&i| due[i as usize]).collect();
        assert_eq!(at, vec![9, 19, 29]);
        // 0: every ack-eliciting packet.
        assert!(t.on_ack_frequency(request(1, 0, MAD, 1)));
        assert_eq!(acks_after(&mut t, &[30, 31]), vec![true, true]);
    }

    #[test]
    fn requested_max_ack_delay_replaces_ours() {
        let now = crate::testing::virtual_epoch();
        let mut t = AckTracker::new();
        let short = Duration::from_millis(2);
        t.on_ack_frequency(request(0, 100, short, 1));
        t.on_packet_received(0, true, now, MAD, DENSE);
        assert_eq!(t.ack_deadline(), Some(now + short));
        assert!(!t.should_send_ack(now + short - Duration::from_micros(1)));
        assert!(t.should_send_ack(now + short));
        t.on_ack_sent();
        // A new request moves the deadline of a packet already waiting, counted from its
        // arrival.
        t.on_packet_received(1, true, now, MAD, DENSE);
        let long = Duration::from_millis(40);
        t.on_ack_frequency(request(1, 100, long, 1));
        assert_eq!(t.ack_deadline(), Some(now + long));
    }

    #[test]
    fn stale_ack_frequency_frames_are_ignored() {
        let mut t = AckTracker::new();
        assert!(t.on_ack_frequency(request(5, 4, MAD, 1)));
        // Equal or lower Sequence Numbers arrived out of order: obsolete (§4).
        assert!(!t.on_ack_frequency(request(5, 0, MAD, 1)));
        assert!(!t.on_ack_frequency(request(2, 0, MAD, 1)));
        assert_eq!(
            t.ack_frequency_request().map(|r| r.ack_eliciting_threshold),
            Some(4)
        );
        assert!(t.on_ack_frequency(request(6, 0, MAD, 1)));
        assert_eq!(
            t.ack_frequency_request().map(|r| r.ack_eliciting_threshold),
            Some(0)
        );
        // Sequence number 0 is a valid first one.
        let mut t = AckTracker::new();
        assert!(t.on_ack_frequency(request(0, 4, MAD, 1)));
    }

    #[test]
    fn a_lower_threshold_makes_waiting_packets_due() {
        let now = crate::testing::virtual_epoch();
        let mut t = AckTracker::new();
        t.on_ack_frequency(request(0, 10, MAD, 1));
        for pn in 0..5 {
            t.on_packet_received(pn, true, now, MAD, DENSE);
        }
        assert!(!t.should_send_ack(now));
        t.on_ack_frequency(request(1, 3, MAD, 1));
        assert!(t.should_send_ack(now));
    }

    /// draft-ietf-quic-ack-frequency-12 §6.2.1, Table 1: Reordering Threshold 3, ACKs sent only
    /// for reordering.
    #[test]
    fn reordering_threshold_3_follows_table_1() {
        let mut t = AckTracker::new();
        t.on_ack_frequency(request(0, u64::MAX, MAD, 3));
        let due = acks_after(&mut t, &[0, 1, 3, 4, 5, 8, 9, 10]);
        assert_eq!(
            due,
            vec![false, false, false, false, true, false, true, true]
        );
    }

    /// draft-ietf-quic-ack-frequency-12 §6.2.1, Table 2: Reordering Threshold 5.
    #[test]
    fn reordering_threshold_5_follows_table_2() {
        let mut t = AckTracker::new();
        t.on_ack_frequency(request(0, u64::MAX, MAD, 5));
        let due = acks_after(&mut t, &[0, 1, 3, 5, 6, 7, 8, 9]);
        assert_eq!(
            due,
            vec![false, false, false, false, false, true, false, true]
        );
    }

    #[test]
    fn late_packet_the_sender_may_have_declared_lost_is_acked_at_once() {
        let mut t = AckTracker::new();
        t.on_ack_frequency(request(0, u64::MAX, MAD, 3));
        // 0..=9 but 2, acknowledged on reordering at 5 and later at 9 by hand.
        acks_after(&mut t, &[0, 1, 3, 4, 5, 6, 7, 8, 9]);
        t.on_ack_sent();
        // Largest Acked 9, threshold 3: 2 <= 6 may already count as lost at the sender.
        assert_eq!(acks_after(&mut t, &[2]), vec![true]);
        // A late packet within the window waits.
        let mut t = AckTracker::new();
        t.on_ack_frequency(request(0, u64::MAX, MAD, 3));
        acks_after(&mut t, &[0, 1, 2, 3, 5, 6]);
        t.on_ack_sent();
        assert_eq!(acks_after(&mut t, &[4]), vec![false]);
    }

    #[test]
    fn reordering_threshold_0_never_hastens_an_ack() {
        let mut t = AckTracker::new();
        t.on_ack_frequency(request(0, u64::MAX, MAD, 0));
        let due = acks_after(&mut t, &[0, 5, 2, 9, 1, 20]);
        assert!(due.iter().all(|d| !d));
        // The delay still bounds the wait.
        let now = crate::testing::virtual_epoch();
        assert!(t.should_send_ack(now + MAD));
    }

    #[test]
    fn default_reordering_threshold_is_rfc_9000s() {
        let mut t = AckTracker::new();
        t.on_ack_frequency(request(0, u64::MAX, MAD, 1));
        assert_eq!(
            acks_after(&mut t, &[0, 1, 3, 4, 2]),
            vec![false, false, true, false, true]
        );
    }

    #[test]
    fn first_ce_after_unmarked_packets_is_acked_when_acks_are_sparse() {
        let now = crate::testing::virtual_epoch();
        let mut t = AckTracker::new();
        t.on_ack_frequency(request(0, 10, MAD, 1));
        t.on_packet_received(0, true, now, MAD, DENSE);
        t.on_ecn(0b10);
        assert!(!t.should_send_ack(now));
        t.on_packet_received(1, true, now, MAD, DENSE);
        t.on_ecn(0b11);
        assert!(t.should_send_ack(now), "the transition to CE");
        t.on_ack_sent();
        t.on_packet_received(2, true, now, MAD, DENSE);
        t.on_ecn(0b11);
        assert!(
            !t.should_send_ack(now),
            "CE after CE waits for the threshold"
        );
        t.on_packet_received(3, true, now, MAD, DENSE);
        t.on_ecn(0b10);
        t.on_packet_received(4, true, now, MAD, DENSE);
        t.on_ecn(0b11);
        assert!(t.should_send_ack(now), "a new transition");
        // Without a request, CE marks keep RFC 9000's pair rule here (unchanged behaviour).
        let mut t = AckTracker::new();
        t.on_packet_received(0, true, now, MAD, DENSE);
        t.on_ecn(0b11);
        assert!(!t.should_send_ack(now));
    }

    #[test]
    fn sparse_rule_holds_until_the_peer_asks_for_fewer_acks() {
        let now = crate::testing::virtual_epoch();
        let gap = Duration::from_millis(10);
        let sparse_flow = |t: &mut AckTracker| {
            let mut due = Vec::new();
            for pn in 0..6 {
                let at = now + gap * pn as u32;
                t.on_packet_received(pn, true, at, MAD, gap);
                due.push(t.should_send_ack(at));
                if t.should_send_ack(at) {
                    t.on_ack_sent();
                }
            }
            due
        };
        // No request and a request of RFC 9000's rate: from the second long gap in a row, each
        // packet is acknowledged on arrival.
        let every = vec![false, true, true, true, true, true];
        assert_eq!(sparse_flow(&mut AckTracker::new()), every);
        let mut t = AckTracker::new();
        t.on_ack_frequency(request(0, 1, MAD, 1));
        assert_eq!(sparse_flow(&mut t), every);
        // A peer that asked for one ACK per 4 packets gets that.
        let mut t = AckTracker::new();
        t.on_ack_frequency(request(0, 3, MAD, 1));
        assert_eq!(
            sparse_flow(&mut t),
            vec![false, false, false, true, false, false]
        );
    }

    #[test]
    fn ecn_counts_are_reported() {
        let mut t = AckTracker::new();
        assert_eq!(t.ecn_counts(), None);
        t.on_ecn(0b10);
        t.on_ecn(0b11);
        assert_eq!(
            t.ecn_counts(),
            Some(EcnCounters {
                ect0: 1,
                ect1: 0,
                ce: 1
            })
        );
    }
}
