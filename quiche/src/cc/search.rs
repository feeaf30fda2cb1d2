//! SEARCH, "Slow start Exit At Right CHokepoint": a slow-start strategy that leaves slow start
//! when the delivery rate stops doubling, judged from acknowledged bytes rather than from RTT
//! samples.
//!
//! Followed: draft-chung-ccwg-search-00 (June 2024, "SEARCH 3.0"), §3 (the algorithm and its
//! pseudocode, lines 1-42) and §4 (the parameters). In slow start, the bytes delivered over
//! any window of time should be twice those delivered over the same window one RTT earlier.
//! SEARCH keeps the delivered bytes in [`W`] bins covering 3.5 initial RTTs (plus
//! [`EXTRA_BINS`] to look back one RTT), and at each bin boundary compares the delivered bytes
//! of the last `W` bins (`curr_delv`) with those of the `W` bins ending one RTT earlier
//! (`prev_delv`, the ends interpolated): when `(2 * prev_delv - curr_delv) / (2 * prev_delv)`
//! reaches [`THRESH_PERCENT`] %, the path is at capacity. Detection lags the chokepoint by
//! about two initial RTTs, so on exit the window gives back what it grew in that time (the
//! bytes delivered over the last two initial RTTs, §3 lines 39-41; half of them here, see
//! below) and `ssthresh = cwnd`.
//!
//! Where this departs from the draft's pseudocode, and why:
//!
//! - Lines 26-28 clear the bins from `curr_idx` on, which would also clear the bin just
//!   filled; only the skipped bins are cleared here.
//! - The ring holds `W + EXTRA_BINS + 1` bins: line 14 allows a look-back of `EXTRA_BINS`
//!   bins, and the window one RTT back then starts `W + EXTRA_BINS` bins before the current
//!   one; with the draft's `W + EXTRA_BINS` entries its first bin would be the current one.
//! - Line 16's fraction is `rtt mod BIN_DURATION` divided by `BIN_DURATION` (a share of a
//!   bin, as §3's prose says).
//! - Missed bins: when more than a whole window of bins passes without an acknowledgment
//!   reaching SEARCH (an idle or application-limited sender: the controller does not feed
//!   slow start while the sender is application-limited, RFC 9002 §7.8), the bins describe a
//!   path that may have changed and a rate the sender chose not to use: they are cleared and
//!   SEARCH waits for a fresh window, as the draft's later revisions allow ("handling missed
//!   bins"). Shorter gaps are empty bins, as in the draft.
//! - The exit gives back one initial RTT of deliveries, not two (line 39): the packets sent
//!   before the exit that a one- or two-BDP queue has already dropped are declared lost
//!   afterwards, and that congestion event reduces the window again (a SEARCH exit opens no
//!   recovery period). After giving back two RTTs, that second reduction left Reno below the
//!   BDP and downloads up to 5 % longer than with standard slow start in netsim's
//!   shallow-buffer matrix; giving back one keeps every cell within 1.5 % for the same
//!   losses (tools/netsim/README.md).
//! - SEARCH runs in the first slow start only: after a congestion event the window is set by
//!   the growth law, and a slow start after persistent congestion climbs back to a known
//!   `ssthresh` (standard slow start, as RFC 9406 §4.3 recommends for HyStart++).
//!
//! The state is a fixed array of [`NUM_BINS`] counters: nothing is allocated per ACK.

use std::time::{Duration, Instant};

use super::{AckBatch, CcState, SentInfo, SlowStart, Window};
use crate::packet::Epoch;
use crate::rtt::RttStats;

/// Bins per SEARCH window (W).
pub const W: usize = 10;

/// Bins kept beyond a window so that the window one RTT back is still held (EXTRA_BINS). The
/// look-back can reach 15 bins, 5.25 initial RTTs: RTTs that grew more than that stop the
/// check (the draft's line 14) until they come down.
pub const EXTRA_BINS: usize = 15;

/// Bins in the ring: a window, the look-back, and the bin before the oldest window's first,
/// whose share the interpolation may need.
pub const NUM_BINS: usize = W + EXTRA_BINS + 1;

/// The SEARCH window is 3.5 initial RTTs (WINDOW_SIZE): as a fraction, 35/10.
const WINDOW_RTT_NUM: u32 = 35;
const WINDOW_RTT_DEN: u32 = 10;

/// THRESH: slow start ends when the normalised difference reaches 0.35.
pub const THRESH_PERCENT: u64 = 35;

/// The exit gives back the overshoot divided by this: half of the bytes delivered over the
/// last two initial RTTs (the draft gives back all of them).
pub const GIVE_BACK_DIVISOR: u64 = 2;

/// Where SEARCH is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Watching the delivery rate.
    Searching,
    /// SEARCH exited slow start and gave back the overshoot; `ssthresh` stays infinite (so the
    /// controller keeps this strategy in charge) and the window holds until packet `until`,
    /// the first sent after the exit, is acknowledged. The draft's line 42 (`ssthresh = cwnd`)
    /// takes effect then: the congestion-avoidance law starts from a drained queue, and qlog
    /// shows the exit as the `search_drain` state.
    Drain { until: u64 },
    /// SEARCH exited slow start, or a congestion event ended it: plain slow start from now on.
    Done,
}

/// SEARCH as a [`SlowStart`] strategy, usable with Reno and CUBIC alike.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Search {
    phase: Phase,
    /// Delivered bytes per bin; bin `i` of the history is `bins[i % NUM_BINS]`.
    bins: [u64; NUM_BINS],
    /// BIN_DURATION: 3.5 initial RTTs / W, set from the first RTT sample.
    bin_duration: Option<Duration>,
    /// The initial RTT: the overshoot given back on exit spans two of them.
    initial_rtt: Duration,
    /// The end of the current bin (bin_end).
    bin_end: Option<Instant>,
    /// The number of bins closed since SEARCH (re)started; the last closed one is
    /// `closed - 1` (the draft's curr_idx).
    closed: u64,
    /// Bytes delivered since the last bin closed (the draft's `sequence_num - prev_seq_num`).
    pending: u64,
    /// Times SEARCH cleared its bins after a gap of more than a window.
    resets: u64,
    /// One past the largest Application-space packet number sent.
    next_pkt_num: u64,
}

impl Default for Search {
    fn default() -> Self {
        Search::new()
    }
}

/// What one bin boundary's check concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not enough history yet (or the RTT grew past the look-back).
    Waiting,
    /// Delivery kept up: `norm_diff` in percent (negative when it more than doubled).
    Continue(i64),
    /// Delivery stopped doubling: leave slow start, giving back `overshoot` bytes.
    Exit {
        /// The normalised difference, in percent.
        norm_diff: i64,
        /// Bytes delivered over the last two initial RTTs.
        overshoot: u64,
    },
}

impl Search {
    /// A SEARCH strategy waiting for its first RTT sample.
    pub fn new() -> Self {
        Search {
            phase: Phase::Searching,
            bins: [0; NUM_BINS],
            bin_duration: None,
            initial_rtt: Duration::ZERO,
            bin_end: None,
            closed: 0,
            pending: 0,
            resets: 0,
            next_pkt_num: 0,
        }
    }

    /// BIN_DURATION, once the first RTT sample set it.
    pub fn bin_duration(&self) -> Option<Duration> {
        self.bin_duration
    }

    /// How many bins have closed since SEARCH (re)started.
    pub fn bins_closed(&self) -> u64 {
        self.closed
    }

    /// Times SEARCH cleared its history after a gap of more than a window of bins.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// Whether SEARCH still watches the delivery rate (it has not exited, and no congestion
    /// event ended slow start).
    pub fn is_searching(&self) -> bool {
        self.phase == Phase::Searching
    }

    /// The delivered bytes of history bin `idx`: 0 for bins before the first (nothing was
    /// delivered before SEARCH started) and for bins no longer or not yet held.
    fn bin(&self, idx: i64) -> u64 {
        let Ok(idx) = u64::try_from(idx) else {
            return 0;
        };
        if idx >= self.closed || self.closed - idx > NUM_BINS as u64 {
            return 0;
        }
        self.bins[(idx % NUM_BINS as u64) as usize]
    }

    /// The draft's sum_bins over `(idx1, idx2]` shifted back by `frac_num / frac_den` of a
    /// bin: the bins strictly between, plus that share of `idx1` and the rest of `idx2`;
    /// scaled by `frac_den` to stay in integers.
    fn sum_scaled(&self, idx1: i64, idx2: i64, frac_num: u128, frac_den: u128) -> u128 {
        let middle: u128 = (idx1 + 1..idx2).map(|i| u128::from(self.bin(i))).sum();
        middle * frac_den
            + u128::from(self.bin(idx1)) * frac_num
            + u128::from(self.bin(idx2)) * (frac_den - frac_num)
    }

    /// Starts (or restarts) the bins at `now` with BIN_DURATION from `rtt`.
    fn start(&mut self, now: Instant, rtt: Duration) {
        let bin = rtt * WINDOW_RTT_NUM / (WINDOW_RTT_DEN * W as u32);
        // A zero RTT (a loopback clock's granularity) would make every ACK a new bin.
        let bin = bin.max(Duration::from_micros(100));
        if self.bin_duration.is_none() {
            self.initial_rtt = rtt;
            self.bin_duration = Some(bin);
        }
        self.bins = [0; NUM_BINS];
        self.closed = 0;
        self.pending = 0;
        self.bin_end = self.bin_duration.map(|d| now + d);
    }

    /// Feeds `bytes` newly delivered at `now`, with `rtt` the RTT sample of the ACK that
    /// delivered them: closes bins whose boundary passed and, if one did, runs the check
    /// (the draft's ACK_arrived, lines 10-23).
    pub fn on_delivered(&mut self, now: Instant, bytes: u64, rtt: Duration) -> Verdict {
        let (Some(bin_duration), Some(bin_end)) = (self.bin_duration, self.bin_end) else {
            self.start(now, rtt);
            self.pending = bytes;
            return Verdict::Waiting;
        };
        self.pending = self.pending.saturating_add(bytes);
        if now <= bin_end {
            return Verdict::Waiting;
        }
        // Lines 24-31: the bins passed since the last boundary; the delivered bytes go to the
        // newest, the skipped ones are empty.
        let bin_ns = bin_duration.as_nanos().max(1);
        let passed = now.saturating_duration_since(bin_end).as_nanos() / bin_ns + 1;
        if passed > W as u128 {
            // More than a window without deliveries: start over from this ACK.
            self.resets += 1;
            self.start(now, rtt);
            self.pending = bytes;
            return Verdict::Waiting;
        }
        let passed = passed as u64;
        for idx in self.closed..self.closed + passed - 1 {
            self.bins[(idx % NUM_BINS as u64) as usize] = 0;
        }
        self.closed += passed;
        let newest = self.closed - 1;
        self.bins[(newest % NUM_BINS as u64) as usize] = self.pending;
        self.pending = 0;
        self.bin_end = Some(bin_end + bin_duration * passed as u32);
        self.check(newest, rtt, bin_duration)
    }

    /// Lines 12-22: compares the last window's deliveries with twice those one RTT earlier.
    ///
    /// The draft waits until the window one RTT back lies entirely in the history
    /// (`prev_idx >= W`, 4.5 initial RTTs into the connection). Here the check starts as soon
    /// as that window holds a closed bin: bins before the first are deliveries of zero, not
    /// missing data, and from nothing a doubling delivery gives `curr_delv > 2 * prev_delv`,
    /// so the check cannot fire early. Waiting for full windows would let slow start run 4.5
    /// RTTs unchecked, long enough to overflow a one-BDP queue on any path whose BDP is
    /// within a few doublings of the initial window (see tools/netsim/README.md).
    fn check(&self, curr: u64, rtt: Duration, bin_duration: Duration) -> Verdict {
        let bin_ns = bin_duration.as_nanos().max(1);
        let rtt_ns = rtt.as_nanos();
        let back = u64::try_from(rtt_ns / bin_ns).unwrap_or(u64::MAX);
        if back > EXTRA_BINS as u64 || curr < back {
            return Verdict::Waiting;
        }
        let (curr, prev, w) = (curr as i64, (curr - back) as i64, W as i64);
        let frac = rtt_ns % bin_ns;
        let curr_delv = self.sum_scaled(curr - w, curr, 0, bin_ns);
        let prev_delv = self.sum_scaled(prev - w, prev, frac, bin_ns);
        if prev_delv == 0 {
            return Verdict::Waiting;
        }
        // norm_diff = (2 prev - curr) / (2 prev), in percent; both sums carry the same scale.
        let expected = 2 * prev_delv;
        let diff = expected as i128 - curr_delv as i128;
        let norm_diff = (diff * 100 / expected as i128) as i64;
        // THRESH compared exactly: diff / expected >= 35 / 100.
        if diff > 0 && diff as u128 * 100 >= expected * u128::from(THRESH_PERCENT) {
            Verdict::Exit {
                norm_diff,
                overshoot: self.overshoot(curr, bin_ns),
            }
        } else {
            Verdict::Continue(norm_diff)
        }
    }

    /// Lines 39-40: the bytes delivered over the last two initial RTTs, which the window grew
    /// by after the chokepoint was reached: the bins of that span, the oldest one in part.
    fn overshoot(&self, curr: i64, bin_ns: u128) -> u64 {
        let span = self.initial_rtt.as_nanos() * 2;
        let whole = i64::try_from(span / bin_ns).unwrap_or(i64::MAX);
        let oldest = curr.saturating_sub(whole);
        let full: u128 = (oldest + 1..=curr).map(|i| u128::from(self.bin(i))).sum();
        let scaled = full * bin_ns + u128::from(self.bin(oldest)) * (span % bin_ns);
        u64::try_from(scaled / bin_ns).unwrap_or(u64::MAX)
    }
}

impl SlowStart for Search {
    fn on_packet_sent(&mut self, _now: Instant, info: &SentInfo, _win: &Window) {
        if info.epoch == Epoch::Application {
            self.next_pkt_num = self.next_pkt_num.max(info.pkt_num.saturating_add(1));
        }
    }

    fn on_ack(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats, win: &mut Window) {
        match self.phase {
            Phase::Searching => {}
            Phase::Drain { until } => {
                if ack.epoch == Epoch::Application && ack.largest_acked >= until {
                    // Line 42: out of slow start, into congestion avoidance.
                    win.ssthresh = win.cwnd;
                    self.phase = Phase::Done;
                }
                return;
            }
            Phase::Done => {
                win.cwnd = win.cwnd.saturating_add(ack.acked_bytes);
                return;
            }
        }
        // Standard slow start growth; SEARCH only decides when it ends.
        win.cwnd = win.cwnd.saturating_add(ack.acked_bytes);
        // The look-back is the minimum RTT, not the ACK's sample as in the draft's line 12: a
        // growing queue inflates the latest RTT, which pushes the window compared against
        // back to before the chokepoint, where delivery still doubled, and delays the exit by
        // about a round, enough to overflow a queue of one to three BDPs.
        let sample = if rtt.min_rtt.is_zero() {
            ack.rtt_sample.unwrap_or(rtt.latest_rtt)
        } else {
            rtt.min_rtt
        };
        if sample.is_zero() && self.bin_duration.is_none() {
            return;
        }
        let delivered = u64::try_from(ack.acked_bytes).unwrap_or(u64::MAX);
        if let Verdict::Exit { overshoot, .. } = self.on_delivered(now, delivered, sample) {
            // Line 41 gives back the whole overshoot; half of it is given back here (see the
            // module docs).
            let give_back = usize::try_from(overshoot / GIVE_BACK_DIVISOR).unwrap_or(usize::MAX);
            win.cwnd = win.cwnd.saturating_sub(give_back).max(win.min_cwnd);
            self.phase = Phase::Drain {
                until: self.next_pkt_num,
            };
        }
    }

    fn on_congestion_event(&mut self, _now: Instant, _win: &Window) {
        self.phase = Phase::Done;
    }

    fn on_persistent_congestion(&mut self, _now: Instant) {
        self.phase = Phase::Done;
    }

    fn state(&self) -> CcState {
        match self.phase {
            Phase::Drain { .. } => CcState::SearchDrain,
            Phase::Searching | Phase::Done => CcState::SlowStart,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{
        CcConfig, CcState, CongestionControl, CongestionControlAlgorithm, Controller, SentInfo,
        SlowStartStrategy,
    };
    use crate::packet::Epoch;
    use crate::recovery::test_now;
    use std::collections::VecDeque;

    const RTT: Duration = Duration::from_millis(60);

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Feeds `rate(t)` bytes per millisecond, one ACK per millisecond, from `from` to `to`
    /// (milliseconds since `start`); returns the first exit's time and verdict.
    fn feed(
        s: &mut Search,
        start: Instant,
        from: u64,
        to: u64,
        rate: impl Fn(u64) -> u64,
    ) -> Option<(u64, Verdict)> {
        for t in from..to {
            let v = s.on_delivered(start + ms(t), rate(t), RTT);
            if matches!(v, Verdict::Exit { .. }) {
                return Some((t, v));
            }
        }
        None
    }

    /// Delivery that doubles every RTT from 10 kB per RTT.
    fn doubling(t: u64) -> u64 {
        let per_ms = 10_000.0 / 60.0 * 2f64.powf(t as f64 / 60.0);
        per_ms as u64
    }

    #[test]
    fn bins_span_three_and_a_half_initial_rtts() {
        let mut s = Search::new();
        let start = test_now();
        assert_eq!(s.on_delivered(start, 1000, RTT), Verdict::Waiting);
        assert_eq!(s.bin_duration(), Some(ms(21)));
        // The first bin closes with the first ACK after its end.
        assert_eq!(s.on_delivered(start + ms(21), 1000, RTT), Verdict::Waiting);
        assert_eq!(s.bins_closed(), 0);
        assert_eq!(s.on_delivered(start + ms(22), 1000, RTT), Verdict::Waiting);
        assert_eq!(s.bins_closed(), 1);
        assert_eq!(s.bin(0), 3000);
        assert_eq!(s.bin(-1), 0);
    }

    #[test]
    fn does_not_exit_while_delivery_doubles() {
        let mut s = Search::new();
        let start = test_now();
        let mut checks = 0;
        // 20 RTTs: the rate grows a million times over.
        for t in 0..1200 {
            match s.on_delivered(start + ms(t), doubling(t), RTT) {
                Verdict::Exit { .. } => panic!("exit at {t} ms while doubling"),
                Verdict::Continue(norm) => {
                    checks += 1;
                    // Doubling gives a difference of about zero (below zero while the windows
                    // still reach back before the first delivery).
                    assert!(norm <= 5, "norm_diff {norm} at {t} ms");
                }
                Verdict::Waiting => {}
            }
        }
        assert!(checks > 30, "the check ran {checks} times");
    }

    #[test]
    fn exits_about_two_rtts_after_delivery_stops_doubling() {
        let mut s = Search::new();
        let start = test_now();
        // Doubling for 8 RTTs, then flat at the rate reached: the chokepoint is at 480 ms.
        let cap = doubling(480);
        let (t, verdict) = feed(&mut s, start, 0, 2000, |t| doubling(t).min(cap)).expect("exit");
        assert!(
            (480 + 60..=480 + 3 * 60).contains(&t),
            "exit at {t} ms, the chokepoint at 480 ms"
        );
        let Verdict::Exit {
            norm_diff,
            overshoot,
        } = verdict
        else {
            unreachable!()
        };
        assert!(norm_diff >= 35, "{norm_diff}");
        // The overshoot is about two initial RTTs of deliveries at the capacity.
        let two_rtts = cap * 120;
        assert!(
            overshoot > two_rtts * 9 / 10 && overshoot <= two_rtts,
            "overshoot {overshoot}, two RTTs at capacity {two_rtts}"
        );
    }

    #[test]
    fn short_gaps_are_empty_bins_and_long_ones_restart() {
        let mut s = Search::new();
        let start = test_now();
        assert!(feed(&mut s, start, 0, 300, doubling).is_none());
        let closed = s.bins_closed();
        // 100 ms of silence (less than a window, 210 ms): the ACK after it closes the bin it
        // falls in, and the bins in between are empty. Deliveries that stall while the
        // sender has data to send are what SEARCH looks for: the check says so.
        let v = s.on_delivered(start + ms(400), 5000, RTT);
        assert!(matches!(v, Verdict::Exit { .. }), "{v:?}");
        let passed = s.bins_closed() - closed;
        assert_eq!(passed, 5, "bins closed across the gap");
        let newest = s.bins_closed() as i64 - 1;
        for idx in newest - 3..newest {
            assert_eq!(s.bin(idx), 0, "bin {idx}");
        }
        assert!(s.bin(newest) >= 5000);
        assert_eq!(s.resets(), 0);
        // A gap longer than a window: the history is dropped, and a fresh window (plus an
        // RTT to look back) is needed before the next check, so the drop in delivery the gap
        // caused does not end slow start.
        assert_eq!(s.on_delivered(start + ms(1000), 100, RTT), Verdict::Waiting);
        assert_eq!(s.resets(), 1);
        assert_eq!(s.bins_closed(), 0);
        let restart = 1000;
        let mut first_check = None;
        for t in restart + 1..restart + 600 {
            let v = s.on_delivered(start + ms(t), doubling(t - restart), RTT);
            assert!(!matches!(v, Verdict::Exit { .. }), "exit at {t}");
            if first_check.is_none() && v != Verdict::Waiting {
                first_check = Some(t - restart);
            }
        }
        // The look-back (60 ms, two whole bins) plus the first bin.
        let first = first_check.expect("checks resumed");
        assert!((60..=90).contains(&first), "first check {first} ms after");
    }

    #[test]
    fn the_bin_ring_wraps_around() {
        let mut s = Search::new();
        let start = test_now();
        // A constant rate for 200 bins, eight times round the ring: every check, before and
        // after the wrap, sees equal windows (norm_diff 50 %) and two RTTs of deliveries.
        let mut exits = 0;
        for t in 0..200 * 21 {
            let verdict = s.on_delivered(start + ms(t), 1000, RTT);
            // Until both windows lie in the history the sums are partial.
            if s.bins_closed() <= (W + 3) as u64 {
                continue;
            }
            if let Verdict::Exit {
                norm_diff,
                overshoot,
            } = verdict
            {
                exits += 1;
                assert_eq!(norm_diff, 50, "at {t} ms");
                // 120 ms at 1000 bytes per ms, give or take the bin the ACK closed early.
                assert!((117_000..=121_000).contains(&overshoot), "{overshoot}");
            }
        }
        assert!(s.bins_closed() > 7 * NUM_BINS as u64);
        assert!(exits > 180, "{exits}");
    }

    #[test]
    fn an_rtt_beyond_the_look_back_stops_the_check() {
        let mut s = Search::new();
        let start = test_now();
        assert!(feed(&mut s, start, 0, 600, doubling).is_none());
        // An RTT of 16 bins (336 ms) reaches back past EXTRA_BINS.
        assert_eq!(
            s.on_delivered(start + ms(625), 1, ms(340)),
            Verdict::Waiting,
            "no check"
        );
    }

    /// One packet in a test path's bottleneck or on its way back.
    struct Flight {
        pkt_num: u64,
        sent: Instant,
        ack_at: Instant,
    }

    /// A sender on a path of `RTT` with a `rate` bytes/ms bottleneck and a drop-tail queue of
    /// `queue` bytes, one ACK per packet; runs `duration_ms` or until the queue drops a packet,
    /// and returns the controller and the packets dropped (0 or 1).
    fn bottleneck(
        strategy: SlowStartStrategy,
        rate: u64,
        queue: u64,
        duration_ms: u64,
    ) -> (Controller, u64, Vec<(CcState, usize)>) {
        const MSS: usize = 1200;
        let mut states = Vec::new();
        let cfg = CcConfig {
            slow_start: strategy,
            ..CcConfig::default()
        };
        let mut cc = Controller::new(CongestionControlAlgorithm::CUBIC, &cfg);
        let start = test_now();
        let mut rtt = crate::rtt::RttStats {
            latest_rtt: RTT,
            smoothed_rtt: RTT,
            rttvar: RTT / 2,
            min_rtt: RTT,
            max_ack_delay: ms(25),
            first_sample_time: Some(start),
        };
        let mut flights: VecDeque<Flight> = VecDeque::new();
        let (mut next_pn, mut in_flight, mut dropped) = (0u64, 0usize, 0u64);
        // When the bottleneck is next free, in microseconds since the start.
        let mut busy_until_us = 0u64;
        let serialise_us = MSS as u64 * 1000 / rate;
        let queue_pkts = queue / MSS as u64;
        for tick in 0..duration_ms * 10 {
            let now = start + Duration::from_micros(tick * 100);
            let now_us = tick * 100;
            while flights.front().is_some_and(|f| f.ack_at <= now) {
                let f = flights.pop_front().unwrap();
                let before = in_flight;
                in_flight -= MSS;
                rtt.latest_rtt = now - f.sent;
                rtt.min_rtt = rtt.min_rtt.min(rtt.latest_rtt);
                let ack = AckBatch {
                    epoch: Epoch::Application,
                    acked_bytes: MSS,
                    acked_packets: 1,
                    largest_acked: f.pkt_num,
                    largest_acked_sent_time: f.sent,
                    rtt_sample: Some(now - f.sent),
                    bytes_in_flight_before: before,
                    bytes_in_flight: in_flight,
                    app_limited: false,
                };
                let before = cc.state();
                cc.on_ack(now, &ack, &rtt);
                if cc.state() != before {
                    states.push((cc.state(), cc.cwnd()));
                }
            }
            while in_flight + MSS <= cc.cwnd() {
                let queued = busy_until_us.saturating_sub(now_us) / serialise_us;
                let pkt_num = next_pn;
                next_pn += 1;
                if queued >= queue_pkts {
                    // The first drop ends the run: the test compares overshoots, not recovery.
                    dropped += 1;
                    break;
                }
                in_flight += MSS;
                cc.on_packet_sent(now, &sent(pkt_num, in_flight));
                busy_until_us = busy_until_us.max(now_us) + serialise_us;
                let ack_at = start + Duration::from_micros(busy_until_us) + RTT;
                flights.push_back(Flight {
                    pkt_num,
                    sent: now,
                    ack_at,
                });
            }
            if dropped > 0 {
                break;
            }
        }
        (cc, dropped, states)
    }

    fn sent(pkt_num: u64, bytes_in_flight: usize) -> SentInfo {
        SentInfo {
            epoch: Epoch::Application,
            pkt_num,
            size: 1200,
            ack_eliciting: true,
            bytes_in_flight,
        }
    }

    #[test]
    fn leaves_slow_start_before_a_three_bdp_queue_overflows() {
        // 5 Mbit/s (625 bytes/ms), 60 ms: a BDP of 37.5 kB.
        let bdp = 625 * 60;
        let (cc, dropped, states) = bottleneck(SlowStartStrategy::Search, 625, 3 * bdp, 3000);
        assert_eq!(dropped, 0);
        // The exit shows as the drain state; the window holds still in it, and congestion
        // avoidance starts from it with ssthresh = cwnd.
        let drain = states
            .iter()
            .position(|&(s, _)| s == CcState::SearchDrain)
            .expect("a SEARCH exit");
        assert_eq!(states[drain + 1].0, CcState::CongestionAvoidance);
        assert_eq!(states[drain + 1].1, states[drain].1);
        assert_eq!(cc.state(), CcState::CongestionAvoidance);
        let stats = cc.stats();
        assert_eq!(stats.slow_start_delay_exits, 1);
        assert_eq!(stats.slow_start_loss_exits, 0);
        // Back near the chokepoint: the path holds 1 BDP plus 3 in the queue.
        let cwnd = cc.ssthresh().expect("ssthresh set");
        assert!(
            (bdp as usize..=3 * bdp as usize).contains(&cwnd),
            "window after the exit {cwnd}, BDP {bdp}"
        );
        // Standard slow start overflows the same queue.
        let (_, dropped, _) = bottleneck(SlowStartStrategy::Standard, 625, 3 * bdp, 3000);
        assert!(dropped > 0);
    }

    #[test]
    fn a_congestion_event_ends_the_search() {
        let mut s = Search::new();
        let win = Window {
            cwnd: 12_000,
            ssthresh: 6_000,
            mss: 1200,
            min_cwnd: 2400,
        };
        s.on_congestion_event(test_now(), &win);
        assert!(!s.is_searching());
        let mut s = Search::new();
        s.on_persistent_congestion(test_now());
        assert!(!s.is_searching());
    }
}
