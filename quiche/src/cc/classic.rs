//! Window bookkeeping shared by the window-based algorithms (Reno, CUBIC): a slow-start strategy
//! and a window-growth law composed into one controller.
//!
//! [`Classic`] owns what every such algorithm does the same way: the window and threshold, the
//! recovery period (RFC 9002 §7.3.2), not growing while application-limited (§7.8), the collapse
//! on persistent congestion (§7.6) and undoing a reduction that proved spurious. What differs is
//! delegated:
//!
//! - a [`SlowStart`] strategy grows the window while slow start is active and may end slow start
//!   by itself (HyStart++ sets `ssthresh` from RTT samples and keeps control through its
//!   Conservative or Limited Slow Start phase);
//! - a [`WindowGrowth`] law sets the threshold on a congestion event and grows the window in
//!   congestion avoidance (Reno: halve, then one datagram per window; CUBIC: beta 0.7, then the
//!   cubic function of the time since the reduction).
//!
//! Undo works for any composition: both strategies are `Clone`, and their state is saved next to
//! the window at each reduction and put back when the reduction is undone, provided the window
//! is still below its value before the reduction (RFC 9438 §4.9.2; otherwise the current state
//! stays). Counters ([`CcStats`]) live outside the saved state, so an undo never erases them.

use std::time::Instant;

use super::{
    AckBatch, CcConfig, CcState, CcStats, CongestionControl, CongestionSignal, SentInfo,
    StartupExit, StartupExitReason,
};
use crate::rtt::RttStats;

/// The window state a [`SlowStart`] strategy or a [`WindowGrowth`] law works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Congestion window in bytes.
    pub cwnd: usize,
    /// Slow start threshold in bytes; `usize::MAX` stands for infinity.
    pub ssthresh: usize,
    /// The maximum datagram size in bytes.
    pub mss: usize,
    /// The minimum congestion window in bytes (RFC 9002 §7.2).
    pub min_cwnd: usize,
}

impl Window {
    /// Whether the window is below the slow start threshold.
    pub fn below_ssthresh(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// A slow-start strategy: how the window grows before the first congestion event and after
/// persistent congestion.
///
/// Implementors: [`StandardSlowStart`](super::StandardSlowStart) (grow by the acknowledged
/// bytes); HyStart++ (watches per-round minimum RTTs, using [`SentInfo::pkt_num`] and
/// [`AckBatch::largest_acked`] of the Application space to delimit rounds, and
/// [`AckBatch::rtt_sample`] for samples).
pub trait SlowStart: Clone + Send + Sync + 'static {
    /// An in-flight packet was sent (round tracking).
    fn on_packet_sent(&mut self, now: Instant, info: &SentInfo, win: &Window) {
        let _ = (now, info, win);
    }

    /// Whether the strategy is in charge of growth for the current window. By default while
    /// `cwnd < ssthresh`; a strategy that keeps control after setting `ssthresh` (Limited Slow
    /// Start) overrides this.
    fn is_active(&self, win: &Window) -> bool {
        win.below_ssthresh()
    }

    /// Grows `win.cwnd` for one ACK frame while active (the sender was not application-limited
    /// and not in recovery). Setting `win.ssthresh` to a finite value at or below `win.cwnd`
    /// ends slow start.
    fn on_ack(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats, win: &mut Window);

    /// The window was reduced by a congestion event: slow start is over.
    fn on_congestion_event(&mut self, now: Instant, win: &Window) {
        let _ = (now, win);
    }

    /// Persistent congestion collapsed the window: slow start starts again.
    fn on_persistent_congestion(&mut self, now: Instant) {
        let _ = now;
    }

    /// The state to report while active.
    fn state(&self) -> CcState {
        CcState::SlowStart
    }
}

/// A window-growth law: the reduction on a congestion event and the growth in congestion
/// avoidance.
///
/// Implementors: [`Reno`](super::Reno); CUBIC (which keeps its epoch start, `W_max` and the window
/// at the reduction, and freezes its epoch while application-limited through
/// [`WindowGrowth::on_app_limited`]).
pub trait WindowGrowth: Clone + Send + Sync + 'static {
    /// The algorithm's name.
    const NAME: &'static str;

    /// A congestion event reduces the window: returns the new slow start threshold in bytes.
    /// The window becomes `max(threshold, min_cwnd)`.
    fn on_congestion_event(
        &mut self,
        now: Instant,
        signal: &CongestionSignal,
        win: &Window,
    ) -> usize;

    /// Grows `win.cwnd` for one ACK frame in congestion avoidance (the sender was not
    /// application-limited and not in recovery).
    fn on_ack(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats, win: &mut Window);

    /// A packet was sent (every packet, whatever the state).
    fn on_packet_sent(&mut self, now: Instant, info: &SentInfo) {
        let _ = (now, info);
    }

    /// An ACK frame newly acknowledged in-flight packets (every such frame, whatever the
    /// state, before any other handling).
    fn on_acked(&mut self, now: Instant) {
        let _ = now;
    }

    /// Undoes a spurious reduction: goes back to the state saved at it. A law that also keeps
    /// facts about the present (when it last sent, say) keeps those.
    fn restore(&mut self, saved: Self) {
        *self = saved;
    }

    /// Slow start ended without a congestion event (a slow-start strategy set `ssthresh`).
    fn on_slow_start_exit(&mut self, now: Instant, win: &Window) {
        let _ = (now, win);
    }

    /// The sender was application-limited: the window is not growing (RFC 9002 §7.8). Called for
    /// each such ACK frame and when the sender reports it.
    fn on_app_limited(&mut self, now: Instant) {
        let _ = now;
    }

    /// Persistent congestion collapsed the window.
    fn on_persistent_congestion(&mut self, now: Instant, win: &Window) {
        let _ = (now, win);
    }
}

/// The state saved at a reduction so that it can be undone.
#[derive(Clone, Debug)]
struct Saved<S, G> {
    win: Window,
    recovery_start: Option<Instant>,
    in_recovery: bool,
    slow_start: S,
    growth: G,
}

/// A window-based controller composed of a slow-start strategy and a window-growth law.
#[derive(Clone, Debug)]
pub struct Classic<S, G> {
    win: Window,
    /// The initial window for the current datagram size (RFC 9002 §7.2).
    initial_window: usize,
    initial_window_packets: usize,
    /// When the current recovery period started (congestion_recovery_start_time).
    recovery_start: Option<Instant>,
    /// Whether no packet sent after `recovery_start` has been acknowledged yet.
    in_recovery: bool,
    /// Whether the last ACK (or report) found the sender application-limited.
    app_limited: bool,
    /// Whether the window still has its initial value (no growth, no reduction yet).
    pristine: bool,
    slow_start: S,
    growth: G,
    saved: Option<Saved<S, G>>,
    /// Counters; not part of [`Saved`], so an undo does not erase history.
    stats: CcStats,
}

impl<S: SlowStart, G: WindowGrowth> Classic<S, G> {
    /// Creates a controller at the initial window.
    pub fn new(cfg: &CcConfig, slow_start: S, growth: G) -> Self {
        let initial_window = cfg.initial_window();
        Classic {
            win: Window {
                cwnd: initial_window,
                ssthresh: usize::MAX,
                mss: cfg.max_datagram_size,
                min_cwnd: cfg.minimum_window(),
            },
            initial_window,
            initial_window_packets: cfg.initial_window_packets,
            recovery_start: None,
            in_recovery: false,
            app_limited: false,
            pristine: true,
            slow_start,
            growth,
            saved: None,
            stats: CcStats::default(),
        }
    }

    /// The slow-start strategy.
    pub fn slow_start(&self) -> &S {
        &self.slow_start
    }

    /// The window-growth law.
    pub fn growth(&self) -> &G {
        &self.growth
    }

    /// The current window state.
    pub fn window(&self) -> &Window {
        &self.win
    }

    /// Whether a packet sent at `sent_time` was sent before the current recovery period began
    /// (InCongestionRecovery, RFC 9002 Appendix B.5).
    fn sent_before_recovery(&self, sent_time: Instant) -> bool {
        self.recovery_start.is_some_and(|start| sent_time <= start)
    }

    fn save(&mut self) {
        self.saved = Some(Saved {
            win: self.win,
            recovery_start: self.recovery_start,
            in_recovery: self.in_recovery,
            slow_start: self.slow_start.clone(),
            growth: self.growth.clone(),
        });
    }

    /// Records the first end of standard slow start.
    fn note_first_exit(&mut self, now: Instant, cwnd: usize) {
        if self.stats.first_slow_start_exit.is_none() {
            self.stats.first_slow_start_exit = Some(now);
            self.stats.first_slow_start_exit_cwnd = Some(cwnd);
        }
    }

    /// Records the first time the controller left every slow-start phase, with the window
    /// then and why.
    fn note_first_end(&mut self, now: Instant, cwnd: usize, reason: StartupExitReason) {
        if self.stats.first_slow_start_end.is_none() {
            self.stats.first_slow_start_end = Some(now);
            self.stats.startup_exit = Some(StartupExit {
                cwnd,
                bandwidth: None,
                reason,
            });
        }
    }

    /// Counts the phase change a slow-start strategy made on its own.
    fn note_slow_start_change(&mut self, now: Instant, before: CcState, ssthresh_before: usize) {
        let after = if self.slow_start.is_active(&self.win) {
            self.slow_start.state()
        } else {
            CcState::CongestionAvoidance
        };
        if before == CcState::SlowStart && after != CcState::SlowStart {
            // Plain slow start only ends by itself on reaching a finite threshold; leaving it
            // with the threshold still infinite is a delay-based (HyStart++) exit.
            if ssthresh_before == usize::MAX {
                self.stats.slow_start_delay_exits += 1;
                self.note_first_exit(now, self.win.cwnd);
            }
        } else if before == CcState::ConservativeSlowStart && after == CcState::SlowStart {
            self.stats.css_resumed_slow_start += 1;
        }
    }

    /// Grows the window for one ACK frame outside recovery.
    fn grow(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats) {
        if self.slow_start.is_active(&self.win) {
            let ssthresh_before = self.win.ssthresh;
            let state_before = self.slow_start.state();
            self.slow_start.on_ack(now, ack, rtt, &mut self.win);
            if self.win.ssthresh != ssthresh_before && !self.slow_start.is_active(&self.win) {
                self.growth.on_slow_start_exit(now, &self.win);
            }
            self.note_slow_start_change(now, state_before, ssthresh_before);
            if !self.slow_start.is_active(&self.win) {
                let reason = match state_before {
                    CcState::ConservativeSlowStart | CcState::LimitedSlowStart => {
                        StartupExitReason::ConservativeSlowStartRounds
                    }
                    // A slow start that ends by itself before any loss measured a plateau
                    // (SEARCH).
                    _ if ssthresh_before == usize::MAX => StartupExitReason::BandwidthPlateau,
                    _ => StartupExitReason::ConservativeSlowStartRounds,
                };
                self.note_first_end(now, self.win.cwnd, reason);
            }
        } else {
            self.growth.on_ack(now, ack, rtt, &mut self.win);
        }
        self.win.cwnd = self.win.cwnd.max(self.win.min_cwnd);
    }
}

impl<S: SlowStart, G: WindowGrowth> CongestionControl for Classic<S, G> {
    fn on_packet_sent(&mut self, now: Instant, info: &SentInfo) {
        self.slow_start.on_packet_sent(now, info, &self.win);
        self.growth.on_packet_sent(now, info);
    }

    fn on_ack(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats) {
        self.growth.on_acked(now);
        self.app_limited = ack.app_limited;
        // Acknowledging a packet sent during the recovery period ends it (RFC 9002 §7.3.2). The
        // batch is judged by its largest packet: the few bytes of earlier packets in the same
        // frame that were sent before the period began count towards growth, a deliberate
        // simplification of Appendix B.5's per-packet test.
        if self.sent_before_recovery(ack.largest_acked_sent_time) {
            return;
        }
        self.in_recovery = false;
        if ack.acked_bytes == 0 {
            return;
        }
        if ack.app_limited {
            // RFC 9002 §7.8: an underused window says nothing about the path's capacity.
            self.growth.on_app_limited(now);
            return;
        }
        self.pristine = false;
        self.grow(now, ack, rtt);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        signal: &CongestionSignal,
        _rtt: &RttStats,
    ) -> bool {
        let reduce = !self.sent_before_recovery(signal.largest_sent_time);
        if !reduce && !signal.persistent_congestion {
            return false;
        }
        self.save();
        self.pristine = false;
        if reduce && self.slow_start.is_active(&self.win) {
            self.stats.slow_start_loss_exits += 1;
            if self.win.ssthresh == usize::MAX {
                self.note_first_exit(now, self.win.cwnd);
            }
            self.note_first_end(now, self.win.cwnd, StartupExitReason::Loss);
        }
        if reduce {
            self.recovery_start = Some(now);
            self.in_recovery = true;
            let ssthresh = self.growth.on_congestion_event(now, signal, &self.win);
            self.win.ssthresh = ssthresh.max(self.win.min_cwnd);
            self.win.cwnd = self.win.ssthresh;
            self.slow_start.on_congestion_event(now, &self.win);
        }
        if signal.persistent_congestion {
            // RFC 9002 Appendix B.8: back to the minimum window, out of recovery, so that the
            // next acknowledgments restart slow start up to the threshold just set.
            self.win.cwnd = self.win.min_cwnd;
            self.recovery_start = None;
            self.in_recovery = false;
            self.slow_start.on_persistent_congestion(now);
            self.growth.on_persistent_congestion(now, &self.win);
        }
        true
    }

    fn on_spurious_congestion(&mut self, _now: Instant) {
        let Some(saved) = self.saved.take() else {
            return;
        };
        // RFC 9438 §4.9.2: restore only while the window is still below what it was before the
        // reduction; a window that already grew past it keeps the current state.
        if self.win.cwnd >= saved.win.cwnd {
            return;
        }
        self.stats.spurious_undos += 1;
        self.win.cwnd = saved.win.cwnd;
        self.win.ssthresh = self.win.ssthresh.max(saved.win.ssthresh);
        self.recovery_start = saved.recovery_start;
        self.in_recovery = saved.in_recovery;
        self.slow_start = saved.slow_start;
        self.growth.restore(saved.growth);
    }

    fn on_mtu_update(&mut self, max_datagram_size: usize) {
        let cfg = CcConfig {
            max_datagram_size,
            initial_window_packets: self.initial_window_packets,
            ..CcConfig::default()
        };
        self.win.mss = max_datagram_size;
        self.win.min_cwnd = cfg.minimum_window();
        self.initial_window = cfg.initial_window();
        // RFC 9002 §7.2: an untouched initial window is recalculated with the new size.
        if self.pristine {
            self.win.cwnd = self.initial_window;
        }
        self.win.cwnd = self.win.cwnd.max(self.win.min_cwnd);
    }

    fn on_app_limited(&mut self, now: Instant) {
        self.app_limited = true;
        self.growth.on_app_limited(now);
    }

    fn cwnd(&self) -> usize {
        self.win.cwnd
    }

    fn ssthresh(&self) -> Option<usize> {
        (self.win.ssthresh != usize::MAX).then_some(self.win.ssthresh)
    }

    /// Bursts are limited to the initial window (RFC 9002 §7.7).
    fn send_quantum(&self) -> usize {
        self.win.cwnd.min(self.initial_window)
    }

    fn state(&self) -> CcState {
        if self.in_recovery {
            CcState::Recovery
        } else if self.app_limited {
            CcState::ApplicationLimited
        } else if self.slow_start.is_active(&self.win) {
            self.slow_start.state()
        } else {
            CcState::CongestionAvoidance
        }
    }

    fn name(&self) -> &'static str {
        G::NAME
    }

    fn stats(&self) -> CcStats {
        self.stats
    }
}
