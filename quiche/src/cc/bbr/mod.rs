//! BBR (draft-ietf-ccwg-bbr-06, "BBRv3"): a model-based controller. It estimates the path's
//! bottleneck bandwidth (a windowed max of delivery-rate samples) and round-trip propagation
//! delay (a windowed min of RTT samples), paces at a gain times the bandwidth and bounds the
//! data in flight to a gain times their product (the BDP), cycling through states that probe
//! for more bandwidth, drain the queue it made and, now and then, probe for the minimum RTT.
//! Loss and ECN-CE do not halve the window as in Reno or CUBIC: they bound the model
//! (`inflight_longterm` when probing overshot, `bw_shortterm` / `inflight_shortterm` otherwise).
//!
//! Recovery feeds it delivery-rate samples (see [`crate::cc::RateSample`]); the model
//! lives in [`model`], the state machine here.
//!
//! Deviations from the draft, chosen for QUIC and this library's interfaces:
//! - QUIC's ACK frames report every lost range, so `has_selective_acks` is always true; the
//!   Startup high-loss exit counts lost *packets* (not discontiguous ranges) towards its six.
//! - The draft's "fast recovery" is RFC 9002's recovery period: it starts with a congestion
//!   event for a packet sent after the current period began and ends when a packet sent after
//!   that is acknowledged. Persistent congestion plays the RTO's part (`cwnd = inflight + 1 MSS`).
//! - Loss is taken as congestion only when the RTT shows a queue (when
//!   [`BbrOptions::filter_random_loss`] is on, the default; off gives the draft to the letter): the once-per-round lower bounds (`bw_shortterm`,
//!   `inflight_shortterm`) only tighten after a round whose every RTT sample exceeded the
//!   min RTT by an eighth (at least 2 ms), and the "inflight too high" and Startup high-loss
//!   responses need the latest sample to. Losses without a queue are random (a lossy link,
//!   not an overflowing buffer) and the draft's responses to them ratchet the rate down round
//!   after round: at 5 % random loss the unfiltered algorithm ends up slower than needed.
//!   Drop-tail overflow comes with a full queue, so congestion losses still count; and a loss
//!   rate above [`HIGH_LOSS_PERMILLE`] (25 %) always counts, so that a buffer too shallow to
//!   show in the RTT is not overrun. ECN-CE marks are explicit and always count.
//! - Departures that the fairness and speed targets were measured with are named
//!   options, off by default ([`BbrOptions`]; tools/netsim/README.md, "third look").
//! - `PickProbeWait`'s randomness comes from a small deterministic generator seeded per
//!   controller: the library never reads the clock or the OS's entropy on this path, and
//!   simulations stay reproducible.

use std::time::{Duration, Instant};

use super::{
    AckBatch, CcConfig, CcState, CcStats, CongestionControl, CongestionKind, CongestionSignal,
    SentInfo, StartupExit, StartupExitReason,
};
use crate::cc::{LostPacketRate, RateSample};
use crate::rtt::RttStats;

mod control_params;
mod filter;
mod model;
mod probe_bw;
mod probe_rtt;
#[cfg(test)]
mod tests;

use self::model::Model;

/// The algorithm's name in logs and qlog.
pub const NAME: &str = "bbr";

/// Startup's pacing gain, 4 ln 2 ≈ 2.77 (§2.6), in thousandths.
const STARTUP_PACING_GAIN: u64 = 2_770;
/// Drain's pacing gain, 0.5 (§5.3.2), in thousandths.
const DRAIN_PACING_GAIN: u64 = 500;
/// The default cwnd gain, 2 (§2.6), in thousandths.
const DEFAULT_CWND_GAIN: u64 = 2_000;
/// ProbeRTT's cwnd gain, 0.5, in thousandths.
const PROBE_RTT_CWND_GAIN: u64 = 500;
/// ProbeBW_UP's pacing gain, 1.25, in thousandths.
const PROBE_UP_PACING_GAIN: u64 = 1_250;
/// ProbeBW_DOWN's pacing gain, 0.9, in thousandths.
const PROBE_DOWN_PACING_GAIN: u64 = 900;
/// ProbeBW_UP's cwnd gain, 2.25, in thousandths.
const PROBE_UP_CWND_GAIN: u64 = 2_250;
/// Pace 1 % below the bandwidth estimate (BBR.PacingMarginPercent).
const PACING_MARGIN_PERCENT: u64 = 1;
/// ProbeRTT is entered when the min-RTT sample is older than this (BBR.ProbeRTTInterval).
pub const PROBE_RTT_INTERVAL: Duration = Duration::from_secs(5);
/// The min-RTT filter's length (BBR.MinRTTFilterLen).
pub const MIN_RTT_FILTER_LEN: Duration = Duration::from_secs(10);
/// How long ProbeRTT holds the reduced window, at least (BBR.ProbeRTTDuration).
pub const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// Rounds without 25 % bandwidth growth that mean the pipe is full.
pub const FULL_BW_COUNT: u32 = 3;
/// Lost packets in a Startup round that, with a loss rate above [`LOSS_THRESH_PERMILLE`], end
/// Startup (BBRStartupFullLossCnt).
pub const STARTUP_FULL_LOSS_COUNT: u64 = 6;
/// The tolerated loss rate, 2 % (BBR.LossThresh), in thousandths.
pub const LOSS_THRESH_PERMILLE: u64 = 20;
/// The multiplicative decrease of the short-term bounds, 0.7 (BBR.Beta), in thousandths.
const BETA: u64 = 700;
/// Headroom left below `inflight_longterm` in CRUISE, 15 % (BBR.Headroom), in thousandths.
const HEADROOM: u64 = 150;
/// The default of [`BbrOptions::filter_random_loss`]: losses only count as congestion when the
/// RTT shows a queue (see the module documentation).
pub const FILTER_RANDOM_LOSS: bool = true;
/// A loss rate, in thousandths, that counts as congestion even without a queue in the RTT.
pub const HIGH_LOSS_PERMILLE: u64 = 250;
/// The least queueing delay above the min RTT that counts as a queue.
pub const QUEUE_DELAY_FLOOR: Duration = Duration::from_millis(2);
/// ProbeBW cycles the bandwidth filter covers (BBR.MaxBwFilterLen).
const MAX_BW_FILTER_LEN: u64 = 2;
/// Rounds the ACK-aggregation filter covers (BBR.ExtraAckedFilterLen).
const EXTRA_ACKED_FILTER_LEN: u64 = 10;

/// Named departures from draft-ietf-ccwg-bbr-06, for experiments (netsim's `--bbr-*` flags).
/// The default is the draft; build others with `..BbrOptions::default()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BbrOptions {
    /// How many ProbeBW cycles the max-bw filter covers (BBR.MaxBwFilterLen; the draft's 2,
    /// at least 1). With 1 a flow forgets a rate it no longer gets as soon as its current
    /// probing cycle ends, instead of one cycle later.
    pub max_bw_filter_cycles: u8,
    /// The cwnd gain in ProbeBW_DOWN, CRUISE and REFILL, in thousandths (the draft's
    /// DefaultCwndGain, 2000; at least 500). Lower keeps less standing queue when flows are
    /// window-limited.
    pub probe_bw_cwnd_gain: u16,
    /// Whether ProbeBW_DOWN ends on the BDP of `BBR.bw` (bounded by `bw_shortterm`) rather
    /// than of `BBR.max_bw` as IsTimeToCruise has it (§5.3.3.9).
    pub cruise_on_bounded_bw: bool,
    /// Whether an RTT sample that shows no queue (within an eighth of the min RTT, at least
    /// 2 ms, as for the random-loss filter) postpones ProbeRTT as a new minimum would: a flow
    /// alone on its path then skips ProbeRTT, which has nothing to drain. The draft refreshes
    /// only on a strictly smaller sample (§5.3.4.3), so a bulk flow enters ProbeRTT every 5 s.
    pub skip_probe_rtt_without_queue: bool,
    /// Whether a loss counts as congestion only when the RTT shows a queue (an eighth of the
    /// min RTT, at least 2 ms) or the loss rate is high (the random-loss filter, on by default:
    /// `FILTER_RANDOM_LOSS`). Off, every loss counts, as in the draft: at a few percent of
    /// random loss the short-term bounds then ratchet the rate down round after round.
    pub filter_random_loss: bool,
}

impl Default for BbrOptions {
    fn default() -> Self {
        BbrOptions {
            max_bw_filter_cycles: MAX_BW_FILTER_LEN as u8,
            probe_bw_cwnd_gain: DEFAULT_CWND_GAIN as u16,
            cruise_on_bounded_bw: false,
            skip_probe_rtt_without_queue: false,
            filter_random_loss: FILTER_RANDOM_LOSS,
        }
    }
}

/// BBR's states (§5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BbrState {
    /// Exponential search for the bandwidth.
    Startup,
    /// Draining the queue Startup built.
    Drain,
    /// ProbeBW: decelerating below the estimated bandwidth.
    ProbeBwDown,
    /// ProbeBW: cruising at the estimated bandwidth.
    ProbeBwCruise,
    /// ProbeBW: refilling the pipe before probing.
    ProbeBwRefill,
    /// ProbeBW: probing for more bandwidth.
    ProbeBwUp,
    /// Draining the pipe to measure the propagation delay.
    ProbeRtt,
}

impl BbrState {
    /// The qlog congestion state.
    pub fn cc_state(self) -> CcState {
        match self {
            BbrState::Startup => CcState::Startup,
            BbrState::Drain => CcState::Drain,
            BbrState::ProbeBwDown => CcState::ProbeBwDown,
            BbrState::ProbeBwCruise => CcState::ProbeBwCruise,
            BbrState::ProbeBwRefill => CcState::ProbeBwRefill,
            BbrState::ProbeBwUp => CcState::ProbeBwUp,
            BbrState::ProbeRtt => CcState::ProbeRtt,
        }
    }

    fn is_probe_bw(self) -> bool {
        matches!(
            self,
            BbrState::ProbeBwDown
                | BbrState::ProbeBwCruise
                | BbrState::ProbeBwRefill
                | BbrState::ProbeBwUp
        )
    }

    fn is_probing_bw(self) -> bool {
        matches!(
            self,
            BbrState::Startup | BbrState::ProbeBwRefill | BbrState::ProbeBwUp
        )
    }
}

/// Where the ACKs of a bandwidth probe stand (BBR.ack_phase).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
    Refilling,
}

/// The BBR controller.
#[derive(Debug)]
pub struct Bbr {
    m: Model,
    state: BbrState,
    pacing_gain: u64,
    cwnd_gain: u64,
    cwnd: usize,
    pacing_rate: u64,
    send_quantum: usize,
    mss: usize,
    initial_cwnd: usize,
    ack_phase: AckPhase,
    cycle_stamp: Option<Instant>,
    bw_probe_wait: Duration,
    rounds_since_probe_up: u64,
    bw_probe_up_rounds: u32,
    bw_probe_up_acked: u64,
    probe_up_acked_per_inc: u64,
    prev_probe_too_high: bool,
    prev_probe_precautionary: bool,
    is_bw_probe_sample: bool,
    drain_start_round: u64,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    prior_cwnd: usize,
    idle_restart: bool,
    app_limited: bool,
    /// Whether the window limited sending this round or the last (C.is_cwnd_limited).
    cwnd_limited: bool,
    cwnd_limited_prev: bool,
    /// The current recovery period: when it started, and whether in it.
    recovery_start: Option<Instant>,
    in_recovery: bool,
    undo: Undo,
    /// The sample of the ACK being processed, handed over by `on_rate_sample`.
    sample: Option<RateSample>,
    rng: u64,
    /// Whether Startup ended on high loss rather than on a bandwidth plateau.
    startup_loss_exit: bool,
    /// When the first Startup ended, and the window then (for netsim and qlog).
    startup_end: Option<(Instant, usize)>,
    /// BBR.max_bw when Startup ended.
    startup_exit_bw: Option<u64>,
    spurious_undos: u64,
    /// Whether ProbeRTT asked recovery to mark the connection app-limited.
    mark_app_limited: bool,
    /// The max-bw filter's length in ProbeBW cycles (BBR.MaxBwFilterLen, 2 in the draft).
    max_bw_filter_len: u64,
    /// The cwnd gain of DOWN, CRUISE and REFILL, in thousandths.
    probe_bw_cwnd_gain: u64,
    cruise_on_bounded_bw: bool,
    skip_probe_rtt_without_queue: bool,
    /// [`BbrOptions::filter_random_loss`].
    filter_random_loss: bool,
}

/// What an undo of a spurious loss episode restores (§5.5.11).
#[derive(Clone, Copy, Debug, Default)]
struct Undo {
    state: Option<BbrState>,
    bw_shortterm: u64,
    inflight_shortterm: u64,
    inflight_longterm: u64,
}

impl Bbr {
    /// A controller in Startup with the configured initial window.
    pub fn new(cfg: &CcConfig) -> Self {
        let mss = cfg.max_datagram_size;
        let initial_cwnd = cfg.initial_window();
        let mut bbr = Bbr {
            m: Model::new(),
            state: BbrState::Startup,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: DEFAULT_CWND_GAIN,
            cwnd: initial_cwnd,
            pacing_rate: 0,
            send_quantum: 2 * mss,
            mss,
            initial_cwnd,
            ack_phase: AckPhase::Init,
            cycle_stamp: None,
            bw_probe_wait: Duration::ZERO,
            rounds_since_probe_up: 0,
            bw_probe_up_rounds: 0,
            bw_probe_up_acked: 0,
            probe_up_acked_per_inc: u64::MAX,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            is_bw_probe_sample: false,
            drain_start_round: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            idle_restart: false,
            app_limited: false,
            cwnd_limited: false,
            cwnd_limited_prev: false,
            recovery_start: None,
            in_recovery: false,
            undo: Undo::default(),
            sample: None,
            rng: 0x9e37_79b9_7f4a_7c15 ^ (initial_cwnd as u64),
            startup_loss_exit: false,
            startup_end: None,
            startup_exit_bw: None,
            spurious_undos: 0,
            mark_app_limited: false,
            max_bw_filter_len: u64::from(cfg.bbr.max_bw_filter_cycles.max(1)),
            probe_bw_cwnd_gain: u64::from(cfg.bbr.probe_bw_cwnd_gain.max(500)),
            cruise_on_bounded_bw: cfg.bbr.cruise_on_bounded_bw,
            skip_probe_rtt_without_queue: cfg.bbr.skip_probe_rtt_without_queue,
            filter_random_loss: cfg.bbr.filter_random_loss,
        };
        bbr.init_pacing_rate(None);
        bbr.enter_startup();
        bbr
    }

    /// Mixes `seed` into the generator that randomises the time between bandwidth probes.
    /// The draft randomises that time "for better mixing and fairness convergence"
    /// (§5.3.3.8.3): flows that drew the same sequence would probe in lockstep, so each
    /// connection seeds its own (from its connection ID; the core reads no clock or OS RNG).
    pub fn seed(&mut self, seed: u64) {
        // Never zero: xorshift stays at zero forever.
        self.rng = (self.rng ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
    }

    /// The current state.
    pub fn bbr_state(&self) -> BbrState {
        self.state
    }

    /// The bandwidth estimate in bytes per second (BBR.bw), 0 before the first sample.
    pub fn bandwidth(&self) -> u64 {
        self.m.bw
    }

    /// The maximum-bandwidth filter's value in bytes per second (BBR.max_bw).
    pub fn max_bandwidth(&self) -> u64 {
        self.m.max_bw()
    }

    /// The min-RTT estimate (BBR.min_rtt), if any.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.m.min_rtt
    }

    /// Whether Startup found the pipe full (BBR.full_bw_reached).
    pub fn full_bw_reached(&self) -> bool {
        self.m.full_bw_reached
    }

    /// The long-term in-flight bound (BBR.inflight_longterm), if set.
    pub fn inflight_longterm(&self) -> Option<u64> {
        (self.m.inflight_longterm != u64::MAX).then_some(self.m.inflight_longterm)
    }

    /// The short-term bounds (BBR.bw_shortterm, BBR.inflight_shortterm), if set.
    pub fn shortterm_bounds(&self) -> (Option<u64>, Option<u64>) {
        let bw = (self.m.bw_shortterm != u64::MAX).then_some(self.m.bw_shortterm);
        let inflight = (self.m.inflight_shortterm != u64::MAX).then_some(self.m.inflight_shortterm);
        (bw, inflight)
    }

    /// Whether Startup ended because of high loss (§5.3.1.3) rather than a bandwidth plateau.
    pub fn startup_exited_on_loss(&self) -> bool {
        self.startup_loss_exit
    }

    /// Packet-timed round trips counted so far (BBR.round_count).
    pub fn round_count(&self) -> u64 {
        self.m.round_count
    }

    /// The in-flight target Drain waits for and ProbeBW_DOWN aims at: the BDP, with the
    /// quantization budget (Inflight(1.0), §5.6.4.2).
    pub fn bdp_target(&self) -> u64 {
        self.inflight(1_000)
    }

    /// ProbeRTT's window (ProbeRTTCwnd, §5.6.4.5).
    pub fn probe_rtt_window(&self) -> u64 {
        self.probe_rtt_cwnd()
    }

    /// The estimated bandwidth-delay product in bytes (BBR.bdp).
    pub fn bdp(&self) -> u64 {
        self.m.bdp_multiple(1_000, self.initial_cwnd as u64)
    }

    fn min_pipe_cwnd(&self) -> u64 {
        4 * self.mss as u64
    }

    fn random(&mut self) -> u64 {
        // xorshift64*: deterministic, allocation-free, good enough to spread probe times.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn init_pacing_rate(&mut self, srtt: Option<Duration>) {
        let rtt = srtt
            .filter(|d| !d.is_zero())
            .unwrap_or(Duration::from_millis(1));
        let nominal = (self.initial_cwnd as u128) * 1_000_000_000 / rtt.as_nanos();
        let rate = nominal * STARTUP_PACING_GAIN as u128 / 1_000;
        self.pacing_rate = u64::try_from(rate).unwrap_or(u64::MAX);
    }

    fn enter_startup(&mut self) {
        self.state = BbrState::Startup;
        self.pacing_gain = STARTUP_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    fn enter_drain(&mut self) {
        self.state = BbrState::Drain;
        self.pacing_gain = DRAIN_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
        self.drain_start_round = self.m.round_count;
    }

    fn check_startup_done(&mut self) {
        self.check_startup_high_loss();
        if self.state == BbrState::Startup && self.m.full_bw_reached {
            self.enter_drain();
        }
    }

    /// Startup ends on sustained loss (§5.3.1.3): at the end of a round in recovery, with the
    /// round's loss rate above 2 % and at least six losses in it.
    fn check_startup_high_loss(&mut self) {
        if self.state != BbrState::Startup || !self.m.loss_round_start || !self.in_recovery {
            return;
        }
        let lost = self.m.round_lost_bytes;
        let total = self.m.round_delivered_bytes.saturating_add(lost);
        if self.m.round_lost_packets >= STARTUP_FULL_LOSS_COUNT
            && Self::is_inflight_too_high(lost, total)
            && self.loss_is_congestion(lost, total)
        {
            self.undo.state = Some(BbrState::Startup);
            self.startup_loss_exit = true;
            self.m.full_bw_reached = true;
            self.m.inflight_longterm = self.bdp().max(self.m.inflight_latest);
            self.enter_drain();
        }
    }

    fn check_drain_done(&mut self, now: Instant, inflight: u64) {
        if self.state == BbrState::Drain
            && (inflight <= self.inflight(1_000) || self.m.round_count > self.drain_start_round + 3)
        {
            self.enter_probe_bw(now);
        }
    }

    /// The per-ACK update (UpdateOnACK, §5.2.3), with the frame's rate sample.
    fn update_on_ack(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats, rs: &RateSample) {
        let inflight = ack.bytes_in_flight as u64;
        if self.m.min_rtt.is_none() && rtt.smoothed_rtt > Duration::ZERO && self.m.bw == 0 {
            self.init_pacing_rate(Some(rtt.smoothed_rtt));
        }
        // UpdateModelAndState.
        self.m.update_latest_delivery_signals(rs);
        let round_start =
            self.m
                .update_round_and_max_bw(rs, rs.is_app_limited, self.max_bw_filter_len);
        if round_start {
            self.rounds_since_probe_up += 1;
            self.cwnd_limited_prev = self.cwnd_limited;
            self.cwnd_limited = false;
        }
        if !self.state.is_probing_bw()
            && self.m.loss_round_start
            && self.m.is_loss_in_round
            && (!self.filter_random_loss
                || self.m.ecn_in_round
                || self.m.round_shows_queue()
                || self.m.round_lost_bytes.saturating_mul(1_000)
                    > (self.m.round_lost_bytes + self.m.round_delivered_bytes)
                        .saturating_mul(HIGH_LOSS_PERMILLE))
        {
            self.m
                .adapt_lower_bounds_from_congestion(self.cwnd as u64, BETA);
        }
        if self.m.loss_round_start {
            self.m.is_loss_in_round = false;
            self.m.ecn_in_round = false;
        }
        let extra_window = if self.m.full_bw_reached {
            EXTRA_ACKED_FILTER_LEN
        } else {
            1
        };
        self.m
            .update_ack_aggregation(now, rs.newly_acked, self.cwnd as u64, extra_window);
        self.m.check_full_bw_reached(rs);
        self.check_startup_done();
        if self.state != BbrState::Startup && self.startup_end.is_none() {
            self.startup_end = Some((now, self.cwnd));
            self.startup_exit_bw = Some(self.m.max_bw());
        }
        self.check_drain_done(now, inflight);
        self.update_probe_bw_cycle_phase(now, inflight, rs);
        self.m
            .update_min_rtt(now, rs.rtt, MIN_RTT_FILTER_LEN, PROBE_RTT_INTERVAL);
        if self.skip_probe_rtt_without_queue && !self.m.shows_queue(Some(rs.rtt)) {
            self.m.postpone_probe_rtt(now);
        }
        self.check_probe_rtt(now, inflight, rs);
        self.m.advance_latest_delivery_signals(rs);
        self.m.bound_bw_for_model();
        // UpdateControlParameters.
        self.set_pacing_rate();
        self.set_send_quantum();
        self.set_cwnd(rs);
    }
}

impl CongestionControl for Bbr {
    fn on_packet_sent(&mut self, now: Instant, info: &SentInfo) {
        let before = info.bytes_in_flight.saturating_sub(info.size);
        if before == 0 && self.app_limited {
            // HandleRestartFromIdle (§5.4).
            self.idle_restart = true;
            self.m.restart_ack_aggregation(now);
            if self.state.is_probe_bw() {
                self.set_pacing_rate_with_gain(1_000);
            } else if self.state == BbrState::ProbeRtt {
                self.check_probe_rtt_done(now);
            }
        }
        if info.bytes_in_flight.saturating_add(self.mss) > self.cwnd {
            self.cwnd_limited = true;
        }
    }

    fn wants_rate_samples(&self) -> bool {
        true
    }

    fn take_app_limited_mark(&mut self) -> bool {
        std::mem::take(&mut self.mark_app_limited)
    }

    fn on_rate_sample(&mut self, _now: Instant, sample: &RateSample) {
        self.sample = Some(*sample);
    }

    fn on_packet_lost_rate(&mut self, now: Instant, lost: &LostPacketRate) {
        // HandleLostPacket (§5.5.10.2); NoteLoss saves the undo state at a round's first loss.
        if !self.m.is_loss_in_round {
            self.m.loss_round_delivered = lost.total_delivered;
            self.save_state_upon_loss();
        }
        self.m.note_loss(lost.size);
        if !self.is_bw_probe_sample {
            return;
        }
        if Self::is_inflight_too_high(lost.lost_since_sent, lost.tx_in_flight)
            && self.loss_is_congestion(lost.lost_since_sent, lost.tx_in_flight)
        {
            let tx = model::inflight_at_loss(
                lost.size,
                lost.tx_in_flight,
                lost.lost_since_sent,
                LOSS_THRESH_PERMILLE,
            );
            self.handle_inflight_too_high(now, tx, lost.is_app_limited);
        }
    }

    fn on_ack(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats) {
        if self.in_recovery
            && self
                .recovery_start
                .is_some_and(|s| ack.largest_acked_sent_time > s)
        {
            // Recovery ends: back to the last known good window (§5.6.4.4).
            self.in_recovery = false;
            self.restore_cwnd();
        }
        if !ack.app_limited {
            self.app_limited = false;
        }
        if let Some(rs) = self.sample.take() {
            self.update_on_ack(now, ack, rtt, &rs);
        }
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        signal: &CongestionSignal,
        _rtt: &RttStats,
    ) -> bool {
        if signal.kind == CongestionKind::EcnCe {
            // An ECN-CE mark is a congestion signal of one round, like a loss.
            self.m.note_loss(0);
            self.m.ecn_in_round = true;
        }
        let new_period = self
            .recovery_start
            .is_none_or(|s| signal.largest_sent_time > s);
        if signal.persistent_congestion {
            // The RTO case (§5.6.4.4): start over from what is in flight.
            self.save_state_upon_loss();
            self.cwnd = signal.bytes_in_flight.saturating_add(self.mss);
            self.recovery_start = Some(now);
            self.in_recovery = true;
            return true;
        }
        if !new_period {
            return false;
        }
        self.save_state_upon_loss();
        self.recovery_start = Some(now);
        self.in_recovery = true;
        true
    }

    fn on_spurious_congestion(&mut self, now: Instant) {
        // HandleSpuriousLossDetection (§5.5.11.2).
        self.spurious_undos += 1;
        self.restore_cwnd();
        self.in_recovery = false;
        self.m.is_loss_in_round = false;
        self.m.reset_full_bw();
        self.m.bw_shortterm = self.m.bw_shortterm.max(self.undo.bw_shortterm);
        self.m.inflight_shortterm = self.m.inflight_shortterm.max(self.undo.inflight_shortterm);
        self.m.inflight_longterm = self.m.inflight_longterm.max(self.undo.inflight_longterm);
        let in_probe_rtt = self.state == BbrState::ProbeRtt;
        match self.undo.state {
            Some(BbrState::Startup) if self.state != BbrState::Startup => {
                self.m.full_bw_reached = false;
                if !in_probe_rtt {
                    self.enter_startup();
                }
            }
            Some(BbrState::ProbeBwUp) if self.state != BbrState::ProbeBwUp && !in_probe_rtt => {
                self.start_probe_bw_refill();
            }
            _ => {}
        }
        self.undo.state = None;
        let _ = now;
    }

    fn on_mtu_update(&mut self, max_datagram_size: usize) {
        self.mss = max_datagram_size;
    }

    fn on_app_limited(&mut self, _now: Instant) {
        self.app_limited = true;
    }

    fn cwnd(&self) -> usize {
        self.cwnd
    }

    /// Startup stands for slow start: its end (by plateau or high loss) is the first slow
    /// start's end.
    fn stats(&self) -> CcStats {
        CcStats {
            slow_start_delay_exits: 0,
            slow_start_loss_exits: u64::from(self.startup_loss_exit),
            css_resumed_slow_start: 0,
            first_slow_start_exit: self.startup_end.map(|(t, _)| t),
            first_slow_start_exit_cwnd: self.startup_end.map(|(_, c)| c),
            first_slow_start_end: self.startup_end.map(|(t, _)| t),
            spurious_undos: self.spurious_undos,
            startup_exit: self.startup_end.map(|(_, cwnd)| StartupExit {
                cwnd,
                bandwidth: self.startup_exit_bw,
                reason: if self.startup_loss_exit {
                    StartupExitReason::Loss
                } else {
                    StartupExitReason::BandwidthPlateau
                },
            }),
        }
    }

    fn ssthresh(&self) -> Option<usize> {
        None
    }

    fn pacing_rate(&self) -> Option<u64> {
        (self.pacing_rate > 0).then_some(self.pacing_rate)
    }

    fn send_quantum(&self) -> usize {
        self.send_quantum
    }

    fn bandwidth_estimate(&self) -> Option<u64> {
        (self.m.bw > 0).then_some(self.m.bw)
    }

    fn min_rtt_estimate(&self) -> Option<Duration> {
        self.m.min_rtt
    }

    fn state(&self) -> CcState {
        self.state.cc_state()
    }

    fn name(&self) -> &'static str {
        NAME
    }
}
