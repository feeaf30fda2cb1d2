//! HyStart++ (RFC 9406): a slow-start strategy that leaves slow start when the RTT rises, before
//! the queue overflows, instead of waiting for a loss.
//!
//! Two variants share the delay detection (DESIGN.md §7, "The two HyStart++ variants"):
//!
//! - [`HystartVariant::Css`], RFC 9406: after the RTT rise, Conservative Slow Start grows at
//!   1/[`CSS_GROWTH_DIVISOR`] of the slow-start rate for at most [`CSS_ROUNDS`] rounds; if the
//!   RTT falls back below the level that triggered it, the exit was spurious and slow start
//!   resumes; otherwise congestion avoidance follows.
//! - [`HystartVariant::Lss`], the 2020 drafts: detection only once the window reaches
//!   [`LOW_CWND_PACKETS`]; after the RTT rise `ssthresh = cwnd` and Limited Slow Start (RFC 3742's
//!   rule) grows the window until the first congestion event.
//!
//! Three constants differ from the values RFC 9406 §4.3 recommends, as that section allows ("An
//! implementation MAY tune them for different network characteristics"): [`N_RTT_SAMPLE`] is 2, not
//! 8, [`CSS_GROWTH_DIVISOR`] is 12, not 4, and [`MIN_RTT_DIVISOR`] is 16, not 8. Why, measured in
//! tools/netsim (README, "Slow-start strategies over shallow buffers"): when the bottleneck queue holds about one BDP, the round
//! whose window crosses the BDP starts with an empty queue, so its minimum shows no rise; the rise
//! shows in the next round's first samples, which already see the standing queue (later samples of
//! a paced slow-start round only add the queue that round's own growth builds, so they cannot lower
//! the minimum, only postpone the verdict). With eight samples the exit comes seven ACKs (14
//! packets, 14 more datagrams of window) after the first sample that shows the rise; with two, one
//! ACK after; and Conservative Slow Start then grows at a twelfth of the slow-start rate, so the
//! window overshoots the path less before the losses it can no longer prevent arrive. On the
//! reference path (5 Mbit/s, 60 ms, one-BDP queue) the first slow start loses 25 packets instead of
//! 41 (standard slow start: 65) at the same download time. The cost is the accuracy §4.3 warns
//! about: with RTT jitter a round's minimum over two samples is higher, so spurious exits are
//! likelier; Conservative Slow Start resumes slow start as soon as a round's minimum falls back
//! below the level that triggered it (§4.2), and netsim shows no download more than 2 % longer than
//! with standard slow start on a 32-BDP path with up to 10 ms of jitter per direction.
//!
//! The rise the first samples of that next round show is the queue the window left when the
//! round began, `flight - BDP`, and where the doublings of the window fall relative to the BDP
//! decides it, so the datagram size does: on the reference path with 1200-byte datagrams the
//! rounds begin at 12, 24, 48 and 96 kB, and the round after 48 kB (1.28 BDP) starts 12.9 ms
//! above the last minimum; with the 1452-byte datagrams path MTU discovery reaches on a 1500-byte
//! MTU they begin at 13, 22, 44 and 87 kB, and the round after 44 kB (1.16 BDP) starts only
//! 5.3-5.8 ms above it (tools/cclab qlogs on real sockets; netsim gives the same). Under the
//! recommended threshold of an eighth of the RTT (8.1 ms there), HyStart++ then never left slow
//! start and lost as many packets as standard slow start (82 against 82 in netsim, 82-96 on
//! real sockets); a sixteenth (4 ms, the RFC's floor, at 60 ms) catches it at 94 kB: 23 packets
//! lost in netsim instead of 82. Paths under 32 ms keep the 4 ms floor either way.
//!
//! Rounds are delimited by Application-space packet numbers: a round ends when a packet sent at
//! or after its start is acknowledged (RFC 9406 §4.2's `windowEnd`, with packet numbers in place
//! of sequence numbers). Only ACK frames of the Application space feed the RTT rounds; earlier
//! spaces still grow the window.

use std::time::{Duration, Instant};

use super::{AckBatch, CcConfig, CcState, SentInfo, SlowStart, Window};
use crate::packet::Epoch;
use crate::recovery::RttStats;

/// The fewest RTT samples a round needs before its minimum is trusted (N_RTT_SAMPLE). RFC 9406
/// §4.3 recommends 8; 2 here, so that a standing queue ends slow start within a few packets of
/// its first sign (see the module documentation).
pub const N_RTT_SAMPLE: u32 = 2;

/// The smallest RTT increase that ends slow start (MIN_RTT_THRESH).
pub const MIN_RTT_THRESH: Duration = Duration::from_millis(4);

/// The largest RTT increase slow start waits for (MAX_RTT_THRESH).
pub const MAX_RTT_THRESH: Duration = Duration::from_millis(16);

/// The RTT increase threshold is the last round's minimum RTT divided by this
/// (MIN_RTT_DIVISOR). RFC 9406 §4.3 recommends 8; 16 here (see the module documentation), so
/// that on paths of more than 32 ms the threshold is half as high: 4 ms at 60 ms, 12.5 ms at
/// 200 ms. MIN_RTT_THRESH and MAX_RTT_THRESH still bound it.
pub const MIN_RTT_DIVISOR: u32 = 16;

/// Conservative Slow Start grows at 1/CSS_GROWTH_DIVISOR of the slow-start rate. RFC 9406
/// §4.3 recommends 4 (and requires at least 2); 12 here, so that the window grows little between
/// the exit and the losses a shallow queue has already caused (see the module documentation).
pub const CSS_GROWTH_DIVISOR: usize = 12;

/// Conservative Slow Start lasts at most this many rounds.
pub const CSS_ROUNDS: u32 = 5;

/// The per-ACK growth cap, in datagrams, when not pacing (L). Paced senders use L = infinity
/// (RFC 9406 §4.3).
pub const UNPACED_L: usize = 8;

/// Limited Slow Start's delay detection starts once the window holds this many datagrams
/// (LOW_CWND, LSS variant only: RFC 9406 has no such floor).
pub const LOW_CWND_PACKETS: usize = 16;

/// Limited Slow Start's divisor, 0.25, as a fraction: `K = cwnd / (ssthresh / 4)`.
const LSS_DIVISOR_DENOMINATOR: f64 = 4.0;

/// What HyStart++ does once the RTT rises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HystartVariant {
    /// RFC 9406: Conservative Slow Start for up to five rounds, then congestion avoidance.
    #[default]
    Css,
    /// The 2020 drafts: `ssthresh = cwnd`, then Limited Slow Start until the first congestion
    /// event; delay detection only once cwnd reaches [`LOW_CWND_PACKETS`].
    Lss,
}

/// Where HyStart++ is in its life.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Standard slow start, watching the RTT.
    SlowStart,
    /// Conservative Slow Start: `rounds_done` rounds ended since it began (the partial round it
    /// began in included); `baseline` is the round minimum that triggered it
    /// (cssBaselineMinRtt).
    Css {
        rounds_done: u32,
        baseline: Duration,
    },
    /// Limited Slow Start until the first congestion event. `frac` carries sub-byte growth.
    Lss { frac: f64 },
    /// Done (a congestion event, or CSS ran its course): plain slow start from now on, as
    /// RFC 9406 §4.3 recommends for every slow start after the first.
    Done,
}

/// The minimum RTT seen in one round and how many samples it is taken from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RoundRtt {
    min: Option<Duration>,
    samples: u32,
}

/// HyStart++ as a [`SlowStart`] strategy, usable with Reno and CUBIC alike.
#[derive(Clone, Debug, PartialEq)]
pub struct HyStart {
    variant: HystartVariant,
    /// Per-ACK growth cap in bytes-per-datagram units (`None`: infinity, when pacing).
    limit_packets: Option<usize>,
    phase: Phase,
    /// The packet number whose acknowledgment ends the current round (windowEnd); `None` until
    /// the first Application-space packet is sent.
    window_end: Option<u64>,
    /// One past the largest Application-space packet number sent (SND.NXT).
    next_pkt_num: u64,
    last_round: RoundRtt,
    current_round: RoundRtt,
    /// Sub-byte growth carried between ACKs in Conservative Slow Start.
    css_frac: usize,
}

impl HyStart {
    /// A HyStart++ strategy for the configured variant; the L limit applies unless
    /// `cfg.pacing`.
    pub fn new(cfg: &CcConfig) -> Self {
        HyStart {
            variant: cfg.hystart_variant,
            limit_packets: (!cfg.pacing).then_some(UNPACED_L),
            phase: Phase::SlowStart,
            window_end: None,
            next_pkt_num: 0,
            last_round: RoundRtt::default(),
            current_round: RoundRtt::default(),
            css_frac: 0,
        }
    }

    /// The variant in use.
    pub fn variant(&self) -> HystartVariant {
        self.variant
    }

    /// The RTT increase that ends slow start after a round whose minimum was `last_min`:
    /// `clamp(last_min / 8, 4 ms, 16 ms)`.
    pub fn rtt_threshold(last_min: Duration) -> Duration {
        (last_min / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH)
    }

    /// The acknowledged bytes slow start may apply: `min(N, L * mss)` (RFC 9406 §4.2).
    fn limited(&self, acked: usize, mss: usize) -> usize {
        match self.limit_packets {
            Some(l) => acked.min(l.saturating_mul(mss)),
            None => acked,
        }
    }

    /// Ends the round if this ACK acknowledged its end; returns whether it did.
    fn track_round(&mut self, ack: &AckBatch) -> bool {
        let Some(end) = self.window_end else {
            return false;
        };
        if ack.largest_acked < end {
            return false;
        }
        self.window_end = Some(self.next_pkt_num);
        self.last_round = self.current_round;
        self.current_round = RoundRtt::default();
        true
    }

    /// Adds the ACK's RTT sample (if any) to the current round.
    fn take_sample(&mut self, ack: &AckBatch) {
        if let Some(rtt) = ack.rtt_sample {
            let min = self.current_round.min.map_or(rtt, |m| m.min(rtt));
            self.current_round.min = Some(min);
            self.current_round.samples = self.current_round.samples.saturating_add(1);
        }
    }

    /// The current round's minimum, once it rests on enough samples.
    fn current_min(&self) -> Option<Duration> {
        if self.current_round.samples >= N_RTT_SAMPLE {
            self.current_round.min
        } else {
            None
        }
    }

    /// Standard slow start with delay detection.
    fn on_ack_slow_start(&mut self, track: bool, ack: &AckBatch, win: &mut Window) {
        win.cwnd = win
            .cwnd
            .saturating_add(self.limited(ack.acked_bytes, win.mss));
        if !track {
            return;
        }
        if self.variant == HystartVariant::Lss
            && win.cwnd < LOW_CWND_PACKETS.saturating_mul(win.mss)
        {
            return;
        }
        let (Some(current), Some(last)) = (self.current_min(), self.last_round.min) else {
            return;
        };
        if current < last.saturating_add(Self::rtt_threshold(last)) {
            return;
        }
        match self.variant {
            HystartVariant::Css => {
                self.css_frac = 0;
                self.phase = Phase::Css {
                    rounds_done: 0,
                    baseline: current,
                };
            }
            HystartVariant::Lss => {
                win.ssthresh = win.cwnd;
                self.phase = Phase::Lss { frac: 0.0 };
            }
        }
    }

    /// Conservative Slow Start: 1/[`CSS_GROWTH_DIVISOR`] of the growth, back to slow start if the
    /// RTT falls below the baseline, congestion avoidance after [`CSS_ROUNDS`] rounds.
    fn on_ack_css(&mut self, round_ended: bool, ack: &AckBatch, win: &mut Window) {
        let Phase::Css {
            mut rounds_done,
            baseline,
        } = self.phase
        else {
            return;
        };
        if round_ended {
            rounds_done = rounds_done.saturating_add(1);
            if rounds_done >= CSS_ROUNDS {
                win.ssthresh = win.cwnd;
                self.phase = Phase::Done;
                return;
            }
            self.phase = Phase::Css {
                rounds_done,
                baseline,
            };
        }
        let grow = self
            .css_frac
            .saturating_add(self.limited(ack.acked_bytes, win.mss));
        self.css_frac = grow % CSS_GROWTH_DIVISOR;
        win.cwnd = win.cwnd.saturating_add(grow / CSS_GROWTH_DIVISOR);
        if self.current_min().is_some_and(|min| min < baseline) {
            // The RTT rise was noise: resume slow start, detection included.
            self.phase = Phase::SlowStart;
        }
    }
}

impl SlowStart for HyStart {
    fn on_packet_sent(&mut self, _now: Instant, info: &SentInfo, _win: &Window) {
        if info.epoch != Epoch::Application {
            return;
        }
        self.next_pkt_num = self.next_pkt_num.max(info.pkt_num.saturating_add(1));
        if self.window_end.is_none() {
            self.window_end = Some(info.pkt_num);
        }
    }

    fn is_active(&self, win: &Window) -> bool {
        matches!(self.phase, Phase::Lss { .. }) || win.below_ssthresh()
    }

    fn on_ack(&mut self, _now: Instant, ack: &AckBatch, _rtt: &RttStats, win: &mut Window) {
        let track = ack.epoch == Epoch::Application
            && matches!(self.phase, Phase::SlowStart | Phase::Css { .. });
        let round_ended = track && self.track_round(ack);
        if track {
            self.take_sample(ack);
        }
        match self.phase {
            Phase::SlowStart => self.on_ack_slow_start(track, ack, win),
            Phase::Css { .. } => self.on_ack_css(round_ended, ack, win),
            Phase::Lss { frac } => {
                // RFC 3742 §2 with the DESIGN.md §7 divisor: K = cwnd / (0.25 * ssthresh),
                // cwnd += acked / K. Fractions of a byte carry over to the next ACK.
                let cwnd = win.cwnd.max(1) as f64;
                let grow = frac
                    + ack.acked_bytes as f64 * win.ssthresh as f64
                        / (LSS_DIVISOR_DENOMINATOR * cwnd);
                let whole = grow.floor();
                win.cwnd = win.cwnd.saturating_add(whole as usize);
                self.phase = Phase::Lss { frac: grow - whole };
            }
            Phase::Done => {
                win.cwnd = win
                    .cwnd
                    .saturating_add(self.limited(ack.acked_bytes, win.mss));
            }
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
            Phase::SlowStart | Phase::Done => CcState::SlowStart,
            Phase::Css { .. } => CcState::ConservativeSlowStart,
            Phase::Lss { .. } => CcState::LimitedSlowStart,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_sender::TestSender;
    use crate::cc::{CcStats, CongestionControl, CongestionControlAlgorithm, Controller, Cubic};

    const MSS: usize = 1200;

    /// N_RTT_SAMPLE as a count of ACKs (each `ack_each` ACK carries one sample).
    const N: usize = N_RTT_SAMPLE as usize;

    /// Conservative Slow Start's growth for `bytes` acknowledged (whole divisions only: the
    /// tests acknowledge multiples of 1200 bytes, which 4, 8 and 12 all divide).
    fn css(bytes: usize) -> usize {
        bytes / CSS_GROWTH_DIVISOR
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn config(variant: HystartVariant, pacing: bool, initial_window_packets: usize) -> CcConfig {
        CcConfig {
            initial_window_packets,
            hystart: true,
            hystart_variant: variant,
            pacing,
            ..CcConfig::default()
        }
    }

    fn sender_with(
        algorithm: CongestionControlAlgorithm,
        cfg: &CcConfig,
        mss: usize,
    ) -> TestSender<Controller> {
        TestSender::new(Controller::new(algorithm, cfg), mss, ms(60))
    }

    fn sender(variant: HystartVariant) -> TestSender<Controller> {
        let cfg = config(variant, true, 10);
        sender_with(CongestionControlAlgorithm::Reno, &cfg, MSS)
    }

    /// Three round trips at 60 ms (cwnd 10 -> 80 datagrams), then the window of 80 datagrams
    /// is sent and acknowledged after `rtt`, one frame each. Returns those 80 packets.
    fn rise_to(s: &mut TestSender<Controller>, rtt: Duration) -> Vec<u64> {
        for _ in 0..3 {
            s.round_trip_rtt(ms(60));
        }
        assert_eq!(s.cc.cwnd(), 80 * MSS);
        assert_eq!(s.cc.state(), CcState::SlowStart);
        let sent = s.send_window();
        s.advance(rtt);
        sent
    }

    /// The window after [`sender_in_css`]: 80 datagrams, one more for each of the first
    /// N_RTT_SAMPLE ACKs, then Conservative Slow Start's share of the other ACKs.
    const CSS_CWND: usize = (80 + N) * MSS + (80 - N) * MSS / CSS_GROWTH_DIVISOR;

    /// Enters Conservative Slow Start in the fourth round trip (RTT 60 -> 70 ms) and finishes
    /// that round trip: cwnd = [`CSS_CWND`].
    fn sender_in_css(algorithm: CongestionControlAlgorithm) -> TestSender<Controller> {
        let cfg = config(HystartVariant::Css, true, 10);
        let mut s = sender_with(algorithm, &cfg, MSS);
        let sent = rise_to(&mut s, ms(70));
        s.ack_each(&sent);
        assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
        assert_eq!(s.cc.cwnd(), CSS_CWND);
        s
    }

    #[test]
    fn tuned_constants_stay_within_rfc_9406() {
        // §4.3: CSS_GROWTH_DIVISOR MUST be at least 2; every TCP takes at least one RTT sample
        // per round. The tests below need a round minimum over two samples or more.
        const { assert!(CSS_GROWTH_DIVISOR >= 2) };
        const { assert!(N_RTT_SAMPLE >= 2) };
        assert_eq!(MSS % CSS_GROWTH_DIVISOR, 0);
    }

    #[test]
    fn rtt_threshold_is_a_sixteenth_clamped_to_4_and_16_ms() {
        assert_eq!(HyStart::rtt_threshold(ms(60)), ms(4));
        assert_eq!(HyStart::rtt_threshold(ms(100)), Duration::from_micros(6250));
        assert_eq!(
            HyStart::rtt_threshold(ms(200)),
            Duration::from_micros(12_500)
        );
        assert_eq!(HyStart::rtt_threshold(ms(20)), ms(4));
        assert_eq!(HyStart::rtt_threshold(ms(300)), ms(16));
        assert_eq!(HyStart::rtt_threshold(Duration::ZERO), ms(4));
    }

    #[test]
    fn leaves_slow_start_when_the_rtt_rises_by_the_threshold() {
        let mut s = sender(HystartVariant::Css);
        let sent = rise_to(&mut s, ms(70));
        let start = s.now;
        // 70 >= 60 + 4 ms, but only once the round has N_RTT_SAMPLE samples.
        s.ack_each(&sent[..N - 1]);
        assert_eq!(s.cc.state(), CcState::SlowStart);
        assert_eq!(s.cc.cwnd(), (80 + N - 1) * MSS);
        s.ack_each(&sent[N - 1..N]);
        assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
        assert_eq!(s.cc.cwnd(), (80 + N) * MSS);
        assert_eq!(s.cc.ssthresh(), None);
        assert_eq!(
            s.cc.stats(),
            CcStats {
                slow_start_delay_exits: 1,
                first_slow_start_exit: Some(start),
                first_slow_start_exit_cwnd: Some((80 + N) * MSS),
                ..CcStats::default()
            }
        );
        // Conservative Slow Start: 1/CSS_GROWTH_DIVISOR of the acknowledged bytes.
        s.ack_each(&sent[N..]);
        assert_eq!(s.cc.cwnd(), (80 + N) * MSS + (80 - N) * css(MSS));
    }

    #[test]
    fn rtt_noise_below_the_threshold_does_not_end_slow_start() {
        // +3 ms of jitter at 60 ms, in every other round.
        let mut s = sender(HystartVariant::Css);
        for round in 0..7 {
            let rtt = if round % 2 == 0 { 60 } else { 63 };
            s.round_trip_rtt(ms(rtt));
            assert_eq!(s.cc.state(), CcState::SlowStart, "round {round}");
        }
        assert_eq!(s.cc.cwnd(), (10 * MSS) << 7);
        // Just under the threshold (63 < 60 + 4 ms) is still noise.
        let mut s = sender(HystartVariant::Css);
        let sent = rise_to(&mut s, ms(63));
        s.ack_each(&sent);
        assert_eq!(s.cc.state(), CcState::SlowStart);
        assert_eq!(s.cc.cwnd(), 160 * MSS);
        assert_eq!(s.cc.stats().slow_start_delay_exits, 0);
        // The rise must last: a lower sample among the round's first N_RTT_SAMPLE keeps its
        // minimum below.
        let mut s = sender(HystartVariant::Css);
        let sent = rise_to(&mut s, ms(70));
        s.ack_each(&sent[..N - 1]);
        s.now -= ms(10);
        s.ack_each(&sent[N - 1..]);
        assert_eq!(s.cc.state(), CcState::SlowStart);
    }

    #[test]
    fn conservative_slow_start_resumes_slow_start_when_the_rtt_falls() {
        let mut s = sender_in_css(CongestionControlAlgorithm::Reno);
        let cwnd = s.cc.cwnd();
        // The next round trip is back at 65 ms, below the 70 ms baseline: the first
        // N_RTT_SAMPLE ACKs grow at Conservative Slow Start's rate, then slow start resumes.
        let sent = s.send_window();
        assert_eq!(sent.len(), cwnd / MSS);
        s.advance(ms(65));
        s.ack_each(&sent[..N - 1]);
        assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
        s.ack_each(&sent[N - 1..N]);
        assert_eq!(s.cc.state(), CcState::SlowStart);
        assert_eq!(s.cc.cwnd(), cwnd + N * css(MSS));
        s.ack_each(&sent[N..]);
        assert_eq!(s.cc.cwnd(), cwnd + N * css(MSS) + (sent.len() - N) * MSS);
        assert_eq!(s.cc.stats().css_resumed_slow_start, 1);
        // Detection is live again: a rise over the 65 ms round re-enters CSS.
        let sent = s.send_window();
        s.advance(ms(80));
        s.ack_each(&sent);
        assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
        assert_eq!(s.cc.stats().slow_start_delay_exits, 2);
    }

    #[test]
    fn conservative_slow_start_ends_in_congestion_avoidance_after_five_rounds() {
        let mut s = sender_in_css(CongestionControlAlgorithm::Reno);
        // The partial round CSS began in counts: four more full rounds at a quarter rate.
        for round in 2..=5 {
            let cwnd = s.cc.cwnd();
            let sent = s.round_trip_rtt(ms(70));
            assert_eq!(
                s.cc.state(),
                CcState::ConservativeSlowStart,
                "round {round}"
            );
            // The first ACK of the round trip ended the previous round and grew too.
            assert_eq!(s.cc.cwnd(), cwnd + sent.len() * css(MSS), "round {round}");
        }
        let cwnd = s.cc.cwnd();
        let sent = s.send_window();
        s.advance(ms(70));
        // The ACK that ends the fifth round ends CSS: ssthresh = cwnd.
        let css_start = s.cc.stats().first_slow_start_exit;
        assert_eq!(
            s.cc.stats().first_slow_start_end,
            None,
            "CSS is still slow start"
        );
        s.ack_each(&sent[..1]);
        assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
        assert_eq!(s.cc.stats().first_slow_start_end, Some(s.now));
        assert!(css_start.is_some_and(|t| t < s.now));
        assert_eq!(s.cc.ssthresh(), Some(cwnd));
        assert_eq!(s.cc.cwnd(), cwnd);
        // Then Reno's one datagram per window.
        s.ack_each(&sent[1..]);
        s.round_trip_rtt(ms(70));
        assert_eq!(s.cc.cwnd(), cwnd + MSS);
        assert_eq!(s.cc.stats().slow_start_delay_exits, 1);
        assert_eq!(s.cc.stats().slow_start_loss_exits, 0);
    }

    #[test]
    fn cubic_starts_its_curve_at_k_zero_after_hystart() {
        let mut s = sender_in_css(CongestionControlAlgorithm::CUBIC);
        for _ in 2..=5 {
            s.round_trip_rtt(ms(70));
        }
        let cwnd = s.cc.cwnd();
        s.round_trip_rtt(ms(70));
        assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
        assert_eq!(s.cc.ssthresh(), Some(cwnd));
        let Controller::CubicHystart(c) = &s.cc else {
            panic!("CUBIC with HyStart++ expected");
        };
        let cubic: &Cubic = c.growth();
        assert_eq!(cubic.k(), Some(0.0));
        assert_eq!(cubic.w_max(), None);
        assert_eq!(cubic.cwnd_prior(), cwnd as f64);
    }

    #[test]
    fn loss_in_conservative_slow_start_ends_it() {
        let mut s = sender_in_css(CongestionControlAlgorithm::Reno);
        let sent = s.send_window();
        s.advance(ms(70));
        let lost_at = s.now;
        assert!(s.lose(&sent[..1], false));
        assert_eq!(s.cc.stats().first_slow_start_end, Some(lost_at));
        assert_eq!(s.cc.state(), CcState::Recovery);
        assert_eq!(s.cc.cwnd(), CSS_CWND / 2);
        s.ack_each(&sent[1..]);
        s.advance(ms(1));
        s.round_trip_rtt(ms(70));
        assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
        let stats = s.cc.stats();
        assert_eq!(stats.slow_start_delay_exits, 1);
        assert_eq!(stats.slow_start_loss_exits, 1);
        assert_eq!(stats.first_slow_start_exit_cwnd, Some((80 + N) * MSS));
    }

    #[test]
    fn limited_slow_start_grows_by_a_quarter_of_ssthresh_over_cwnd() {
        let mut s = sender(HystartVariant::Lss);
        s.round_trip_rtt(ms(60));
        s.round_trip_rtt(ms(60));
        let sent = s.send_window();
        assert_eq!(sent.len(), 40);
        s.advance(ms(70));
        s.ack_each(&sent[..N]);
        // ssthresh = cwnd = 40 + N_RTT_SAMPLE datagrams at the N_RTT_SAMPLE-th sample.
        let ssthresh = (40 + N) * MSS;
        assert_eq!(s.cc.state(), CcState::LimitedSlowStart);
        assert_eq!(s.cc.ssthresh(), Some(ssthresh));
        assert_eq!(s.cc.cwnd(), ssthresh);
        // K = cwnd / (0.25 * ssthresh); cwnd += acked / K: a quarter datagram while
        // cwnd = ssthresh, a little less after.
        s.ack_each(&sent[N..N + 1]);
        assert_eq!(
            s.cc.cwnd(),
            ssthresh + 300,
            "1200 * ssthresh / (4 * ssthresh)"
        );
        let (mut cwnd, mut frac) = (ssthresh + 300, 0.0);
        for _ in N + 1..40 {
            let grow = frac + 1200.0 * ssthresh as f64 / (4.0 * cwnd as f64);
            assert!(grow < 300.0);
            cwnd += grow.floor() as usize;
            frac = grow - grow.floor();
        }
        s.ack_each(&sent[N + 1..]);
        assert_eq!(s.cc.cwnd(), cwnd);
        // It stays in charge above ssthresh, until the first congestion event.
        s.round_trip_rtt(ms(70));
        assert_eq!(s.cc.state(), CcState::LimitedSlowStart);
        assert!(s.cc.cwnd() > cwnd);
        let before = s.cc.cwnd();
        let sent = s.send_window();
        s.advance(ms(70));
        assert!(s.lose(&sent[..1], false));
        assert_eq!(s.cc.cwnd(), before / 2);
        s.ack_each(&sent[1..]);
        s.advance(ms(1));
        // Reno's congestion avoidance: 33 datagrams per round trip, one more per window.
        s.round_trip_rtt(ms(70));
        s.round_trip_rtt(ms(70));
        assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
        assert_eq!(s.cc.cwnd(), before / 2 + MSS);
        let stats = s.cc.stats();
        assert_eq!(
            (stats.slow_start_delay_exits, stats.slow_start_loss_exits),
            (1, 1)
        );
    }

    #[test]
    fn limited_slow_start_waits_for_low_cwnd() {
        // 600-byte packets on a 1200-byte-MSS controller, so that a round has N_RTT_SAMPLE
        // samples well before cwnd reaches LOW_CWND = 16 * 1200 bytes.
        for variant in [HystartVariant::Css, HystartVariant::Lss] {
            let cfg = config(variant, true, 4);
            let mut s = sender_with(CongestionControlAlgorithm::Reno, &cfg, 600);
            s.round_trip_rtt(ms(60));
            assert_eq!(s.cc.cwnd(), 9_600);
            let sent = s.send_window();
            assert_eq!(sent.len(), 16);
            s.advance(ms(80));
            s.ack_each(&sent[..N]);
            assert_eq!(s.cc.cwnd(), 9_600 + N * 600);
            if variant == HystartVariant::Css {
                assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
                continue;
            }
            s.ack_each(&sent[N..15]);
            assert_eq!(s.cc.state(), CcState::SlowStart);
            s.ack_each(&sent[15..]);
            assert_eq!(s.cc.state(), CcState::LimitedSlowStart);
            assert_eq!(s.cc.ssthresh(), Some(LOW_CWND_PACKETS * MSS));
        }
    }

    #[test]
    fn l_limit_caps_growth_per_ack_only_without_pacing() {
        for (pacing, grown) in [(false, 8 * MSS), (true, 10 * MSS)] {
            let cfg = config(HystartVariant::Css, pacing, 10);
            let mut s = sender_with(CongestionControlAlgorithm::Reno, &cfg, MSS);
            let sent = s.send_window();
            s.advance(ms(60));
            s.ack(&sent);
            assert_eq!(s.cc.cwnd(), 10 * MSS + grown, "pacing {pacing}");
        }
        // Conservative Slow Start applies the cap before dividing.
        let cfg = config(HystartVariant::Css, false, 10);
        let mut s = sender_with(CongestionControlAlgorithm::Reno, &cfg, MSS);
        let sent = rise_to(&mut s, ms(70));
        s.ack_each(&sent);
        assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
        let cwnd = s.cc.cwnd();
        let sent = s.send_window();
        s.advance(ms(70));
        s.ack(&sent[..20]);
        assert_eq!(s.cc.cwnd(), cwnd + css(8 * MSS));
    }

    #[test]
    fn persistent_congestion_collapses_every_variant() {
        use CongestionControlAlgorithm::{Reno, CUBIC};
        let variants = [
            (Reno, false, HystartVariant::Css, CcState::SlowStart),
            (
                Reno,
                true,
                HystartVariant::Css,
                CcState::ConservativeSlowStart,
            ),
            (Reno, true, HystartVariant::Lss, CcState::LimitedSlowStart),
            (CUBIC, false, HystartVariant::Css, CcState::SlowStart),
            (
                CUBIC,
                true,
                HystartVariant::Css,
                CcState::ConservativeSlowStart,
            ),
            (CUBIC, true, HystartVariant::Lss, CcState::LimitedSlowStart),
        ];
        for (algorithm, hystart, variant, state) in variants {
            let cfg = CcConfig {
                hystart,
                ..config(variant, true, 10)
            };
            let mut s = sender_with(algorithm, &cfg, MSS);
            let sent = rise_to(&mut s, ms(70));
            s.ack_each(&sent);
            assert_eq!(s.cc.state(), state, "{algorithm:?} {hystart} {variant:?}");
            let sent = s.send_window();
            s.advance(ms(700));
            assert!(s.lose(&sent, true));
            assert_eq!(s.cc.cwnd(), 2 * MSS, "{algorithm:?} {hystart} {variant:?}");
            assert_eq!(s.cc.state(), CcState::SlowStart);
            // Plain slow start afterwards (HyStart++ only runs the first one).
            s.round_trip_rtt(ms(60));
            s.round_trip_rtt(ms(90));
            assert_eq!(s.cc.cwnd(), 8 * MSS);
            assert_eq!(s.cc.state(), CcState::SlowStart);
        }
    }

    #[test]
    fn loss_ends_standard_slow_start_and_is_counted() {
        let cfg = CcConfig {
            hystart: false,
            ..CcConfig::default()
        };
        let mut s = sender_with(CongestionControlAlgorithm::Reno, &cfg, MSS);
        s.round_trip();
        let sent = s.send_window();
        s.advance(ms(60));
        let at = s.now;
        assert!(s.lose(&sent[..1], false));
        assert_eq!(
            s.cc.stats(),
            CcStats {
                slow_start_loss_exits: 1,
                first_slow_start_exit: Some(at),
                first_slow_start_exit_cwnd: Some(24_000),
                first_slow_start_end: Some(at),
                ..CcStats::default()
            }
        );
        // A later undo does not erase the record.
        s.cc.on_spurious_congestion(s.now);
        assert_eq!(s.cc.stats().slow_start_loss_exits, 1);
        assert_eq!(s.cc.stats().spurious_undos, 1);
        assert_eq!(s.cc.state(), CcState::SlowStart);
    }

    #[test]
    fn only_application_space_packets_delimit_rounds() {
        let mut hs = HyStart::new(&CcConfig::default());
        let win = Window {
            cwnd: 12_000,
            ssthresh: usize::MAX,
            mss: MSS,
            min_cwnd: 2 * MSS,
        };
        let info = |epoch, pkt_num| SentInfo {
            epoch,
            pkt_num,
            size: MSS,
            ack_eliciting: true,
            bytes_in_flight: MSS,
        };
        let now = crate::recovery::test_now();
        hs.on_packet_sent(now, &info(Epoch::Handshake, 7), &win);
        assert_eq!(hs.window_end, None);
        hs.on_packet_sent(now, &info(Epoch::Application, 3), &win);
        hs.on_packet_sent(now, &info(Epoch::Application, 4), &win);
        assert_eq!((hs.window_end, hs.next_pkt_num), (Some(3), 5));
    }
}
