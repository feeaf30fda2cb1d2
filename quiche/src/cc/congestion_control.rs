//! The controller trait, [`CongestionControl`], with what it reports: its state for qlog
//! ([`CcState`]) and its counters ([`CcStats`]). What it is fed is in `input.rs`; how one is
//! chosen and built in `factory.rs`.

use std::fmt;
use std::time::{Duration, Instant};

use super::input::{AckBatch, CongestionSignal, LostPacketRate, RateSample, SentInfo};
use crate::rtt::RttStats;

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

/// A congestion controller for one path.
///
/// All times are parameters; implementations never read the clock. Object-safe, so user-written
/// algorithms can be boxed (see [`CcFactory`](super::CcFactory)). `Send + Sync`, as the
/// connection that owns one is (quiche's `Connection` is both).
pub trait CongestionControl: Send + Sync {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
