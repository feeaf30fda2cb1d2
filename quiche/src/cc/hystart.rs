//! HyStart++ (RFC 9406): a slow-start strategy that leaves slow start when the RTT rises, before
//! the queue overflows, instead of waiting for a loss.
//!
//! Two variants share the delay detection (ARCHITECTURE.md, "Congestion control", the two
//! HyStart++ variants):
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
use crate::rtt::RttStats;

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
                // RFC 3742 §2 with the LSS divisor of ARCHITECTURE.md ("Congestion control"):
                // K = cwnd / (0.25 * ssthresh), cwnd += acked / K. Fractions of a byte carry
                // over to the next ACK.
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
mod tests;
