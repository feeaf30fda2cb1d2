//! Congestion control: the controller trait and the built-in algorithms.
//!
//! Recovery (see [`crate::recovery`]) owns bytes in flight, loss detection and persistent
//! congestion; a controller only reacts to the batched facts it is fed (DESIGN.md §7):
//!
//! - [`CongestionControl::on_packet_sent`] for every in-flight packet;
//! - [`CongestionControl::on_ack`] once per ACK frame that newly acknowledges in-flight packets;
//! - [`CongestionControl::on_congestion_event`] once per batch of losses (or ECN-CE increase),
//!   before `on_ack` for the same frame; the controller itself applies the recovery-period rule;
//! - [`CongestionControl::on_spurious_congestion`] when every loss behind the last reduction was
//!   later acknowledged.
//!
//! The loss-based built-in algorithms are compositions [`Classic<S, G>`] of a slow-start
//! strategy `S` and a window-growth law `G`; [`Bbr`] (draft-ietf-ccwg-bbr-06) is model-based and
//! asks recovery for delivery-rate samples ([`CongestionControl::wants_rate_samples`]). All are
//! dispatched through the [`Controller`] enum; user-written algorithms plug in as
//! [`Controller::Custom`] through a [`CcFactory`].

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::rtt::RttStats;

mod bbr;
mod classic;
mod cubic;
mod hystart;
mod input;
pub mod pacer;
mod reno;
mod search;
mod slow_start;
#[cfg(test)]
mod test_sender;

pub use self::bbr::{Bbr, BbrOptions, BbrState};
pub use self::classic::{Classic, SlowStart, Window, WindowGrowth};
pub use self::cubic::{cubic_k, w_cubic, Cubic, ALPHA_CUBIC, BETA_CUBIC};
pub use self::hystart::{
    HyStart, HystartVariant, CSS_GROWTH_DIVISOR, CSS_ROUNDS, LOW_CWND_PACKETS, MAX_RTT_THRESH,
    MIN_RTT_THRESH, N_RTT_SAMPLE, UNPACED_L,
};
pub use self::input::{
    AckBatch, CongestionKind, CongestionSignal, LostPacketRate, RateSample, SentInfo,
};
pub use self::reno::Reno;
pub use self::search::{
    Search, Verdict as SearchVerdict, EXTRA_BINS, NUM_BINS, THRESH_PERCENT, W as SEARCH_W,
};
pub use self::slow_start::StandardSlowStart;

/// Default maximum datagram size before path MTU discovery: the smallest a QUIC path may carry
/// (RFC 9000 §14).
pub const DEFAULT_MAX_DATAGRAM_SIZE: usize = 1200;

/// Default initial congestion window, in packets (RFC 9002 §7.2).
pub const DEFAULT_INITIAL_WINDOW_PACKETS: usize = 10;

/// The byte limit RFC 9002 §7.2 puts on a ten-packet initial window (RFC 6928's 14,600 bytes
/// adjusted for UDP's smaller header).
const INITIAL_WINDOW_BYTE_LIMIT: usize = 14_720;

/// The minimum congestion window, in packets (kMinimumWindow, RFC 9002 §7.2).
pub const MINIMUM_WINDOW_PACKETS: usize = 2;

/// Congestion controller state, as reported in qlog's `recovery:congestion_state_updated`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CcState {
    /// Standard slow start.
    SlowStart,
    /// HyStart++ Conservative Slow Start (RFC 9406).
    ConservativeSlowStart,
    /// HyStart++ Limited Slow Start (draft-balasubramanian-tcpm-hystartplusplus, RFC 3742 rule).
    LimitedSlowStart,
    /// SEARCH left slow start and gave back its overshoot: the window holds still until a
    /// packet sent after the exit is acknowledged (the queue the overshoot built drains), then
    /// congestion avoidance begins. In qlog, `slow_start` -> `search_drain` marks a SEARCH exit.
    SearchDrain,
    /// Congestion avoidance.
    CongestionAvoidance,
    /// Recovery period after a congestion event.
    Recovery,
    /// The window is not growing because the sender is application-limited.
    ApplicationLimited,
    /// BBR Startup: exponential search for the bandwidth.
    Startup,
    /// BBR Drain: draining the queue Startup built.
    Drain,
    /// BBR ProbeBW_DOWN: pacing below the estimated bandwidth.
    ProbeBwDown,
    /// BBR ProbeBW_CRUISE: pacing at the estimated bandwidth.
    ProbeBwCruise,
    /// BBR ProbeBW_REFILL: refilling the pipe before a probe.
    ProbeBwRefill,
    /// BBR ProbeBW_UP: probing for more bandwidth.
    ProbeBwUp,
    /// BBR ProbeRTT: draining the pipe to measure the propagation delay.
    ProbeRtt,
}

impl CcState {
    /// The qlog name of the state.
    pub fn as_str(self) -> &'static str {
        match self {
            CcState::SlowStart => "slow_start",
            CcState::ConservativeSlowStart => "conservative_slow_start",
            CcState::LimitedSlowStart => "limited_slow_start",
            CcState::SearchDrain => "search_drain",
            CcState::CongestionAvoidance => "congestion_avoidance",
            CcState::Recovery => "recovery",
            CcState::ApplicationLimited => "application_limited",
            CcState::Startup => "startup",
            CcState::Drain => "drain",
            CcState::ProbeBwDown => "probe_bw_down",
            CcState::ProbeBwCruise => "probe_bw_cruise",
            CcState::ProbeBwRefill => "probe_bw_refill",
            CcState::ProbeBwUp => "probe_bw_up",
            CcState::ProbeRtt => "probe_rtt",
        }
    }
}

impl fmt::Display for CcState {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a controller's slow starts ended, for netsim and qlog.
///
/// Counted by the controller itself and never rolled back by an undo: they describe what
/// happened, not the current window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CcStats {
    /// Times HyStart++ saw the RTT rise and left standard slow start (for Conservative or
    /// Limited Slow Start). A Conservative Slow Start that falls back to slow start and detects
    /// a rise again counts again.
    pub slow_start_delay_exits: u64,
    /// Times a congestion event (loss or ECN-CE) ended a slow-start phase: standard slow start,
    /// Conservative Slow Start or Limited Slow Start.
    pub slow_start_loss_exits: u64,
    /// Times Conservative Slow Start found the RTT back below its baseline and resumed slow
    /// start (RFC 9406 §4.2).
    pub css_resumed_slow_start: u64,
    /// When standard slow start first ended, by delay or by a congestion event.
    pub first_slow_start_exit: Option<Instant>,
    /// The window, in bytes, when standard slow start first ended (before any reduction).
    pub first_slow_start_exit_cwnd: Option<usize>,
    /// When the first slow start ended for good: the controller left every slow-start phase
    /// (standard, Conservative or Limited Slow Start) for recovery or congestion avoidance.
    /// Equal to [`first_slow_start_exit`](CcStats::first_slow_start_exit) without HyStart++;
    /// later with it, by the length of its Conservative or Limited Slow Start.
    pub first_slow_start_end: Option<Instant>,
    /// Reductions undone because their losses proved spurious.
    pub spurious_undos: u64,
    /// How and with what window the first slow start (BBR: Startup) ended for good.
    pub startup_exit: Option<StartupExit>,
}

/// The end of a controller's first slow start or Startup (quiche's `StartupExit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartupExit {
    /// The congestion window when it ended, in bytes (before any reduction).
    pub cwnd: usize,
    /// The bandwidth estimate then, in bytes per second, from controllers that keep one
    /// (BBR).
    pub bandwidth: Option<u64>,
    /// What ended it.
    pub reason: StartupExitReason,
}

/// What ended slow start or Startup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartupExitReason {
    /// A congestion event (loss or ECN-CE; BBR: sustained loss in a round).
    Loss,
    /// The delivery rate stopped growing (BBR's full pipe, SEARCH).
    BandwidthPlateau,
    /// A queue that persisted across rounds. No controller here ends Startup this way
    /// (draft-ietf-ccwg-bbr-06 has no such exit); kept for quiche's API.
    PersistentQueue,
    /// HyStart++'s Conservative Slow Start ran its rounds (RFC 9406 §4.2), or a
    /// delay-based slow start otherwise ended without loss.
    ConservativeSlowStartRounds,
}

/// Configuration of a congestion controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcConfig {
    /// The sender's maximum datagram size (RFC 9002 Appendix B.2), in bytes.
    pub max_datagram_size: usize,
    /// The initial congestion window, in packets. See [`CcConfig::initial_window`].
    pub initial_window_packets: usize,
    /// Whether slow start may end before a loss: `false` forces standard slow start whatever
    /// [`slow_start`](CcConfig::slow_start) says (quiche's `enable_hystart(false)`).
    pub hystart: bool,
    /// The slow-start strategy used when `hystart` is set.
    pub slow_start: SlowStartStrategy,
    /// Which HyStart++ variant runs when `hystart` is set.
    pub hystart_variant: HystartVariant,
    /// Whether the sender paces. HyStart++ caps the growth per ACK at
    /// [`UNPACED_L`] datagrams only when it does not (RFC 9406 §4.3).
    pub pacing: bool,
    /// BBR's departures from draft-ietf-ccwg-bbr-06, all off by default.
    pub bbr: BbrOptions,
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig {
            max_datagram_size: DEFAULT_MAX_DATAGRAM_SIZE,
            initial_window_packets: DEFAULT_INITIAL_WINDOW_PACKETS,
            hystart: true,
            slow_start: SlowStartStrategy::default(),
            hystart_variant: HystartVariant::Css,
            pacing: true,
            bbr: BbrOptions::default(),
        }
    }
}

impl CcConfig {
    /// The slow-start strategy in effect: [`SlowStartStrategy::Standard`] unless `hystart`.
    pub fn strategy(&self) -> SlowStartStrategy {
        if self.hystart {
            self.slow_start
        } else {
            SlowStartStrategy::Standard
        }
    }

    /// The initial congestion window in bytes.
    ///
    /// With the default of ten packets this is RFC 9002 §7.2's
    /// `min(10 * mss, max(14720, 2 * mss))`. Any other packet count is taken literally as
    /// `initial_window_packets * mss`: whoever configures it asked for that many packets (the
    /// point of the setting is a larger window on long-RTT paths), so the 14,720-byte cap, which
    /// belongs to the ten-packet recommendation, is not applied. It is never below the minimum
    /// window.
    pub fn initial_window(&self) -> usize {
        let mss = self.max_datagram_size;
        let window = if self.initial_window_packets == DEFAULT_INITIAL_WINDOW_PACKETS {
            let cap = INITIAL_WINDOW_BYTE_LIMIT.max(mss.saturating_mul(2));
            mss.saturating_mul(DEFAULT_INITIAL_WINDOW_PACKETS).min(cap)
        } else {
            mss.saturating_mul(self.initial_window_packets)
        };
        window.max(self.minimum_window())
    }

    /// The minimum congestion window in bytes: two datagrams (RFC 9002 §7.2).
    pub fn minimum_window(&self) -> usize {
        self.max_datagram_size
            .saturating_mul(MINIMUM_WINDOW_PACKETS)
    }
}

/// A congestion controller for one path.
///
/// All times are parameters; implementations never read the clock. Object-safe, so user-written
/// algorithms can be boxed (see [`CcFactory`]).
pub trait CongestionControl: Send {
    /// An in-flight packet was sent (RFC 9002 Appendix B.4).
    fn on_packet_sent(&mut self, now: Instant, info: &SentInfo);

    /// An ACK frame newly acknowledged in-flight packets. Called after
    /// [`on_congestion_event`](CongestionControl::on_congestion_event) for losses the same frame
    /// revealed, with the RTT estimate already updated from it.
    fn on_ack(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats);

    /// A congestion event (RFC 9002 §7.3.2, Appendix B.6, B.8). The controller applies the
    /// recovery-period rule itself: losses of packets sent before the current recovery period
    /// started do not reduce the window again. Persistent congestion collapses the window
    /// whatever the period.
    ///
    /// Returns whether the controller reduced its window in response (and so whether a later
    /// [`on_spurious_congestion`](CongestionControl::on_spurious_congestion) would undo this
    /// event rather than an earlier one).
    fn on_congestion_event(
        &mut self,
        now: Instant,
        signal: &CongestionSignal,
        rtt: &RttStats,
    ) -> bool;

    /// Every loss behind the last reduction turned out to be spurious (the packets were
    /// acknowledged after being declared lost): undo that reduction. Does nothing by default.
    fn on_spurious_congestion(&mut self, now: Instant) {
        let _ = now;
    }

    /// In-flight packets were discarded without being acknowledged or lost (their packet number
    /// space was dropped, RFC 9002 Appendix B.9). Does nothing by default.
    fn on_packets_discarded(&mut self, bytes: usize) {
        let _ = bytes;
    }

    /// The maximum datagram size changed (RFC 9002 §7.2). Does nothing by default.
    fn on_mtu_update(&mut self, max_datagram_size: usize) {
        let _ = max_datagram_size;
    }

    /// The sender had nothing to send although the window allowed it (RFC 9002 §7.8). Does
    /// nothing by default.
    fn on_app_limited(&mut self, now: Instant) {
        let _ = now;
    }

    /// Whether recovery should run delivery-rate sampling (draft-ietf-ccwg-bbr-06 §4.1) and
    /// feed [`on_rate_sample`](CongestionControl::on_rate_sample) and
    /// [`on_packet_lost_rate`](CongestionControl::on_packet_lost_rate). False by default, so
    /// loss-based controllers pay nothing for it. Must not change over a controller's life.
    fn wants_rate_samples(&self) -> bool {
        false
    }

    /// The delivery-rate sample of an ACK frame, given before
    /// [`on_ack`](CongestionControl::on_ack) for the same frame and after the frame's losses.
    /// Only called when [`wants_rate_samples`](CongestionControl::wants_rate_samples) is true.
    fn on_rate_sample(&mut self, now: Instant, sample: &RateSample) {
        let _ = (now, sample);
    }

    /// Whether the controller asks, after an ACK, that the connection be marked
    /// application-limited from now until what is in flight is delivered (the delivery-rate
    /// sampler's MarkConnectionAppLimited, draft-ietf-ccwg-bbr-06 §4.1.2.4): BBR's ProbeRTT
    /// does, so that its deliberately low rate is not taken as the path's. Reading the answer
    /// clears the request. Only asked when
    /// [`wants_rate_samples`](CongestionControl::wants_rate_samples) is true; false by default.
    fn take_app_limited_mark(&mut self) -> bool {
        false
    }

    /// One in-flight packet was declared lost, with its send-time delivery snapshot; called
    /// before the batch's [`on_congestion_event`](CongestionControl::on_congestion_event). Only
    /// called when [`wants_rate_samples`](CongestionControl::wants_rate_samples) is true.
    fn on_packet_lost_rate(&mut self, now: Instant, lost: &LostPacketRate) {
        let _ = (now, lost);
    }

    /// The congestion window in bytes.
    fn cwnd(&self) -> usize;

    /// The slow start threshold in bytes; `None` while it is still infinite.
    fn ssthresh(&self) -> Option<usize>;

    /// The pacing rate in bytes per second; `None` lets the pacer use
    /// `5/4 * cwnd / smoothed_rtt` (RFC 9002 §7.7).
    fn pacing_rate(&self) -> Option<u64> {
        None
    }

    /// The largest burst, in bytes, the sender should write at once.
    fn send_quantum(&self) -> usize {
        self.cwnd()
    }

    /// The controller's bandwidth estimate in bytes per second, for qlog; `None` (the default)
    /// for controllers without one.
    fn bandwidth_estimate(&self) -> Option<u64> {
        None
    }

    /// The controller's own min-RTT estimate (BBR's windowed min), for qlog; `None` by default.
    fn min_rtt_estimate(&self) -> Option<Duration> {
        None
    }

    /// The controller's state, for qlog.
    fn state(&self) -> CcState;

    /// How the controller's slow starts ended. All zero by default.
    fn stats(&self) -> CcStats {
        CcStats::default()
    }

    /// The algorithm's name, for logs and qlog.
    fn name(&self) -> &'static str;
}

/// The built-in congestion control algorithms. The values are those of quiche's C API
/// (`QUICHE_CC_RENO`, `QUICHE_CC_CUBIC`, `QUICHE_CC_BBR2_GCONGESTION`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum CongestionControlAlgorithm {
    /// NewReno (RFC 9002 §7).
    #[default]
    Reno = 0,
    /// CUBIC (RFC 8312 with RFC 9438's corrections).
    CUBIC = 1,
    /// BBR (draft-ietf-ccwg-bbr-06, BBRv3), quiche's `QUICHE_CC_BBR2_GCONGESTION` value.
    Bbr = 4,
}

#[allow(non_upper_case_globals)]
impl CongestionControlAlgorithm {
    /// quiche's name for its BBRv2-family controller; here the same as
    /// [`CongestionControlAlgorithm::Bbr`].
    pub const Bbr2Gcongestion: CongestionControlAlgorithm = CongestionControlAlgorithm::Bbr;
}

impl FromStr for CongestionControlAlgorithm {
    type Err = Error;

    /// Parses `"reno"`, `"cubic"` or `"bbr"` (also `"bbr2"` and quiche's
    /// `"bbr2_gcongestion"`), ASCII case-insensitive; anything else is
    /// [`Error::CongestionControl`].
    fn from_str(name: &str) -> Result<Self> {
        if name.eq_ignore_ascii_case("reno") {
            Ok(CongestionControlAlgorithm::Reno)
        } else if name.eq_ignore_ascii_case("cubic") {
            Ok(CongestionControlAlgorithm::CUBIC)
        } else if ["bbr", "bbr2", "bbr2_gcongestion"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
        {
            Ok(CongestionControlAlgorithm::Bbr)
        } else {
            Err(Error::CongestionControl)
        }
    }
}

/// How slow start decides to end before a loss. The values are those of
/// `quiche_config_set_slow_start` in the C API.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum SlowStartStrategy {
    /// Standard slow start (RFC 9002 §7.3.1): the window doubles each round trip until the
    /// first congestion event.
    Standard = 0,
    /// HyStart++ (RFC 9406): leaves slow start when the minimum RTT of a round rises.
    #[default]
    HyStartPlusPlus = 1,
    /// SEARCH (draft-chung-ccwg-search-00): leaves slow start when the delivered bytes stop
    /// doubling each RTT.
    Search = 2,
}

impl SlowStartStrategy {
    /// The name [`FromStr`] accepts: `standard`, `hystart` or `search`.
    pub fn as_str(self) -> &'static str {
        match self {
            SlowStartStrategy::Standard => "standard",
            SlowStartStrategy::HyStartPlusPlus => "hystart",
            SlowStartStrategy::Search => "search",
        }
    }
}

impl fmt::Display for SlowStartStrategy {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SlowStartStrategy {
    type Err = Error;

    /// Parses `standard`, `hystart` (or `hystart++`) and `search`, ASCII case-insensitive;
    /// anything else is [`Error::CongestionControl`].
    fn from_str(name: &str) -> Result<Self> {
        let name = name.to_ascii_lowercase();
        match name.as_str() {
            "standard" => Ok(SlowStartStrategy::Standard),
            "hystart" | "hystart++" => Ok(SlowStartStrategy::HyStartPlusPlus),
            "search" => Ok(SlowStartStrategy::Search),
            _ => Err(Error::CongestionControl),
        }
    }
}

/// Builds user-written congestion controllers, one per path.
pub trait CcFactory: Send + Sync {
    /// Creates a controller for a new path.
    fn build(&self, cfg: &CcConfig) -> Box<dyn CongestionControl>;

    /// The algorithm's name.
    fn name(&self) -> &str;
}

/// A path's congestion controller: a built-in algorithm (enum dispatch, no allocation) or a
/// user-written one.
pub enum Controller {
    /// NewReno with standard slow start.
    Reno(Classic<StandardSlowStart, Reno>),
    /// NewReno with HyStart++.
    RenoHystart(Classic<HyStart, Reno>),
    /// CUBIC with standard slow start.
    Cubic(Classic<StandardSlowStart, Cubic>),
    /// CUBIC with HyStart++.
    CubicHystart(Classic<HyStart, Cubic>),
    /// NewReno with SEARCH.
    RenoSearch(Classic<Search, Reno>),
    /// CUBIC with SEARCH.
    CubicSearch(Classic<Search, Cubic>),
    /// BBR (HyStart++ does not apply: BBR has its own Startup).
    Bbr(Box<Bbr>),
    /// A controller built by a [`CcFactory`].
    Custom(Box<dyn CongestionControl>),
}

impl Controller {
    /// Creates a built-in controller: the algorithm's window growth, with the slow-start
    /// strategy `cfg.strategy()` names (HyStart++ in the configured variant).
    pub fn new(algorithm: CongestionControlAlgorithm, cfg: &CcConfig) -> Self {
        use CongestionControlAlgorithm as A;
        use SlowStartStrategy as S;
        match (algorithm, cfg.strategy()) {
            (A::Reno, S::Standard) => {
                Controller::Reno(Classic::new(cfg, StandardSlowStart, Reno::default()))
            }
            (A::Reno, S::HyStartPlusPlus) => {
                Controller::RenoHystart(Classic::new(cfg, HyStart::new(cfg), Reno::default()))
            }
            (A::Reno, S::Search) => {
                Controller::RenoSearch(Classic::new(cfg, Search::new(), Reno::default()))
            }
            (A::CUBIC, S::Standard) => {
                Controller::Cubic(Classic::new(cfg, StandardSlowStart, Cubic::default()))
            }
            (A::CUBIC, S::HyStartPlusPlus) => {
                Controller::CubicHystart(Classic::new(cfg, HyStart::new(cfg), Cubic::default()))
            }
            (A::CUBIC, S::Search) => {
                Controller::CubicSearch(Classic::new(cfg, Search::new(), Cubic::default()))
            }
            (A::Bbr, _) => Controller::Bbr(Box::new(Bbr::new(cfg))),
        }
    }

    /// Gives a controller that randomises its behaviour (BBR's probe timing) a per-connection
    /// seed; the others ignore it.
    pub fn seed(&mut self, seed: u64) {
        if let Controller::Bbr(bbr) = self {
            bbr.seed(seed);
        }
    }

    /// Creates a controller with a user-supplied factory.
    pub fn from_factory(factory: &dyn CcFactory, cfg: &CcConfig) -> Self {
        Controller::Custom(factory.build(cfg))
    }
}

impl fmt::Debug for Controller {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name())
            .field("cwnd", &self.cwnd())
            .field("ssthresh", &self.ssthresh())
            .field("state", &self.state())
            .finish()
    }
}

/// Forwards a call to whichever controller the enum holds.
macro_rules! dispatch {
    ($self:expr, $cc:ident => $call:expr) => {
        match $self {
            Controller::Reno($cc) => $call,
            Controller::RenoHystart($cc) => $call,
            Controller::Cubic($cc) => $call,
            Controller::CubicHystart($cc) => $call,
            Controller::RenoSearch($cc) => $call,
            Controller::CubicSearch($cc) => $call,
            Controller::Bbr($cc) => $call,
            Controller::Custom($cc) => $call,
        }
    };
}

impl CongestionControl for Controller {
    fn on_packet_sent(&mut self, now: Instant, info: &SentInfo) {
        dispatch!(self, cc => cc.on_packet_sent(now, info))
    }

    fn on_ack(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats) {
        dispatch!(self, cc => cc.on_ack(now, ack, rtt))
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        signal: &CongestionSignal,
        rtt: &RttStats,
    ) -> bool {
        dispatch!(self, cc => cc.on_congestion_event(now, signal, rtt))
    }

    fn on_spurious_congestion(&mut self, now: Instant) {
        dispatch!(self, cc => cc.on_spurious_congestion(now))
    }

    fn on_packets_discarded(&mut self, bytes: usize) {
        dispatch!(self, cc => cc.on_packets_discarded(bytes))
    }

    fn on_mtu_update(&mut self, max_datagram_size: usize) {
        dispatch!(self, cc => cc.on_mtu_update(max_datagram_size))
    }

    fn on_app_limited(&mut self, now: Instant) {
        dispatch!(self, cc => cc.on_app_limited(now))
    }

    fn wants_rate_samples(&self) -> bool {
        dispatch!(self, cc => cc.wants_rate_samples())
    }

    fn on_rate_sample(&mut self, now: Instant, sample: &RateSample) {
        dispatch!(self, cc => cc.on_rate_sample(now, sample))
    }

    fn on_packet_lost_rate(&mut self, now: Instant, lost: &LostPacketRate) {
        dispatch!(self, cc => cc.on_packet_lost_rate(now, lost))
    }

    fn take_app_limited_mark(&mut self) -> bool {
        dispatch!(self, cc => cc.take_app_limited_mark())
    }

    fn cwnd(&self) -> usize {
        dispatch!(self, cc => cc.cwnd())
    }

    fn ssthresh(&self) -> Option<usize> {
        dispatch!(self, cc => cc.ssthresh())
    }

    fn pacing_rate(&self) -> Option<u64> {
        dispatch!(self, cc => cc.pacing_rate())
    }

    fn send_quantum(&self) -> usize {
        dispatch!(self, cc => cc.send_quantum())
    }

    fn bandwidth_estimate(&self) -> Option<u64> {
        dispatch!(self, cc => cc.bandwidth_estimate())
    }

    fn min_rtt_estimate(&self) -> Option<Duration> {
        dispatch!(self, cc => cc.min_rtt_estimate())
    }

    fn state(&self) -> CcState {
        dispatch!(self, cc => cc.state())
    }

    fn name(&self) -> &'static str {
        dispatch!(self, cc => cc.name())
    }

    fn stats(&self) -> CcStats {
        dispatch!(self, cc => cc.stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_window_follows_rfc9002_section_7_2() {
        let mut cfg = CcConfig::default();
        assert_eq!(cfg.initial_window(), 12_000);
        cfg.max_datagram_size = 1500;
        assert_eq!(cfg.initial_window(), 14_720);
        cfg.max_datagram_size = 9000;
        // max(14720, 2 * 9000) = 18000 caps 10 * 9000.
        assert_eq!(cfg.initial_window(), 18_000);
        assert_eq!(cfg.minimum_window(), 18_000);
    }

    #[test]
    fn configured_initial_window_is_taken_literally() {
        let cfg = CcConfig {
            initial_window_packets: 100,
            ..CcConfig::default()
        };
        assert_eq!(cfg.initial_window(), 120_000);
        let cfg = CcConfig {
            initial_window_packets: 1,
            ..CcConfig::default()
        };
        assert_eq!(
            cfg.initial_window(),
            2_400,
            "never below the minimum window"
        );
        let cfg = CcConfig {
            initial_window_packets: usize::MAX,
            ..CcConfig::default()
        };
        assert_eq!(
            cfg.initial_window(),
            usize::MAX,
            "saturates instead of overflowing"
        );
    }

    #[test]
    fn controller_starts_with_the_initial_window() {
        let cfg = CcConfig::default();
        let cc = Controller::new(CongestionControlAlgorithm::Reno, &cfg);
        assert_eq!(cc.cwnd(), 12_000);
        assert_eq!(cc.ssthresh(), None);
        assert_eq!(cc.state(), CcState::SlowStart);
        assert_eq!(cc.name(), "reno");
        assert_eq!(cc.pacing_rate(), None);
        assert_eq!(cc.send_quantum(), 12_000);
    }

    #[test]
    fn algorithm_names_parse() {
        assert_eq!("reno".parse(), Ok(CongestionControlAlgorithm::Reno));
        assert_eq!("cubic".parse(), Ok(CongestionControlAlgorithm::CUBIC));
        assert_eq!("CUBIC".parse(), Ok(CongestionControlAlgorithm::CUBIC));
        assert_eq!("bbr".parse(), Ok(CongestionControlAlgorithm::Bbr));
        assert_eq!("BBR2".parse(), Ok(CongestionControlAlgorithm::Bbr));
        assert_eq!(
            "bbr3".parse::<CongestionControlAlgorithm>(),
            Err(Error::CongestionControl)
        );
        assert_eq!(CongestionControlAlgorithm::Bbr as i32, 4);
        assert_eq!(
            "".parse::<CongestionControlAlgorithm>(),
            Err(Error::CongestionControl)
        );
        assert_eq!(CongestionControlAlgorithm::Reno as i32, 0);
        assert_eq!(CongestionControlAlgorithm::CUBIC as i32, 1);
    }

    #[test]
    fn algorithm_and_hystart_choose_the_variant() {
        let mut cfg = CcConfig::default();
        for (algorithm, hystart, name) in [
            (CongestionControlAlgorithm::Reno, false, "reno"),
            (CongestionControlAlgorithm::Reno, true, "reno"),
            (CongestionControlAlgorithm::CUBIC, false, "cubic"),
            (CongestionControlAlgorithm::CUBIC, true, "cubic"),
            (CongestionControlAlgorithm::Bbr, false, "bbr"),
            (CongestionControlAlgorithm::Bbr, true, "bbr"),
        ] {
            cfg.hystart = hystart;
            let cc = Controller::new(algorithm, &cfg);
            assert_eq!(cc.name(), name);
            let expected = match (algorithm, hystart) {
                (CongestionControlAlgorithm::Reno, false) => matches!(cc, Controller::Reno(_)),
                (CongestionControlAlgorithm::Reno, true) => {
                    matches!(cc, Controller::RenoHystart(_))
                }
                (CongestionControlAlgorithm::CUBIC, false) => matches!(cc, Controller::Cubic(_)),
                (CongestionControlAlgorithm::CUBIC, true) => {
                    matches!(cc, Controller::CubicHystart(_))
                }
                (CongestionControlAlgorithm::Bbr, _) => matches!(cc, Controller::Bbr(_)),
            };
            assert!(expected, "{algorithm:?} hystart={hystart}: {cc:?}");
            assert_eq!(cc.stats(), CcStats::default());
        }
    }

    #[test]
    fn state_names_are_qlog_names() {
        let all = [
            (CcState::SlowStart, "slow_start"),
            (CcState::ConservativeSlowStart, "conservative_slow_start"),
            (CcState::LimitedSlowStart, "limited_slow_start"),
            (CcState::SearchDrain, "search_drain"),
            (CcState::CongestionAvoidance, "congestion_avoidance"),
            (CcState::Recovery, "recovery"),
            (CcState::ApplicationLimited, "application_limited"),
            (CcState::Startup, "startup"),
            (CcState::Drain, "drain"),
            (CcState::ProbeBwDown, "probe_bw_down"),
            (CcState::ProbeBwCruise, "probe_bw_cruise"),
            (CcState::ProbeBwRefill, "probe_bw_refill"),
            (CcState::ProbeBwUp, "probe_bw_up"),
            (CcState::ProbeRtt, "probe_rtt"),
        ];
        for (state, name) in all {
            assert_eq!(state.as_str(), name);
            assert_eq!(state.to_string(), name);
        }
    }

    /// A user-written controller: a fixed window.
    struct Fixed(usize);

    impl CongestionControl for Fixed {
        fn on_packet_sent(&mut self, _: Instant, _: &SentInfo) {}
        fn on_ack(&mut self, _: Instant, _: &AckBatch, _: &RttStats) {}
        fn on_congestion_event(&mut self, _: Instant, _: &CongestionSignal, _: &RttStats) -> bool {
            false
        }
        fn cwnd(&self) -> usize {
            self.0
        }
        fn ssthresh(&self) -> Option<usize> {
            None
        }
        fn state(&self) -> CcState {
            CcState::CongestionAvoidance
        }
        fn name(&self) -> &'static str {
            "fixed"
        }
    }

    struct FixedFactory;

    impl CcFactory for FixedFactory {
        fn build(&self, cfg: &CcConfig) -> Box<dyn CongestionControl> {
            Box::new(Fixed(cfg.max_datagram_size * 4))
        }
        fn name(&self) -> &str {
            "fixed"
        }
    }

    #[test]
    fn factory_builds_custom_controllers() {
        let factory: std::sync::Arc<dyn CcFactory> = std::sync::Arc::new(FixedFactory);
        let cc = Controller::from_factory(factory.as_ref(), &CcConfig::default());
        assert!(matches!(cc, Controller::Custom(_)));
        assert_eq!(cc.cwnd(), 4800);
        assert_eq!(
            cc.send_quantum(),
            4800,
            "default send quantum is the window"
        );
        assert_eq!(cc.name(), "fixed");
        assert_eq!(factory.name(), "fixed");
    }
}
