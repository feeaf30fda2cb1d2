//! CUBIC window growth (RFC 8312 with the corrections of RFC 9438, whose last draft,
//! draft-ietf-tcpm-rfc8312bis-15, is the reference used here).
//!
//! Units: windows are in **bytes** (the RFCs count segments; every formula is scaled by the
//! maximum datagram size, so `C` becomes `C * mss` bytes per second³), times in **seconds** as
//! `f64`. The window the framework holds is an integer; growth smaller than a byte is carried in
//! [`Cubic`] until it adds up.
//!
//! The congestion-avoidance epoch starts at the first ACK of congestion avoidance (after the
//! recovery period, during which the window does not move) and is frozen while the sender is
//! application-limited (RFC 9438 §4.2: `t` excludes such periods) by shifting its start by the
//! time spent so. A send with nothing in flight that was not preceded by such a report (the
//! window drained although the sender had more to send) restarts after idle as RFC 9438 §5.8
//! describes: the epoch moves forward by the idle time, measured from the later of the last
//! send and the last ACK ([`Cubic::set_idle_restart_fix`]). The framework clones the whole [`Cubic`] value at each reduction, so undoing a
//! spurious one (§4.9.2) restores `W_max`, `K`, the epoch, `W_est` and `cwnd_prior` together.

use std::time::Instant;

use super::{AckBatch, CongestionSignal, SentInfo, Window, WindowGrowth};
use crate::rtt::RttStats;

/// The multiplicative decrease factor β_cubic (RFC 9438 §4.6).
pub const BETA_CUBIC: f64 = 0.7;

/// The aggressiveness constant C, in segments per second³ (RFC 9438 §5).
pub const C: f64 = 0.4;

/// α_cubic = 3 (1 − β) / (1 + β): the additive increase, in segments per RTT, that gives the
/// Reno-friendly estimate the average window of Reno (RFC 9438 §4.3).
pub const ALPHA_CUBIC: f64 = 3.0 * (1.0 - BETA_CUBIC) / (1.0 + BETA_CUBIC);

/// The target window after one RTT is at most this times the window (RFC 9438 §4.2).
const MAX_TARGET_FACTOR: f64 = 1.5;

/// The current congestion-avoidance epoch.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Epoch {
    /// When it started (t_epoch), shifted forward by the time spent application-limited.
    start: Instant,
    /// The window at its start (cwnd_epoch), in bytes.
    cwnd: f64,
    /// The time the cubic function takes to reach `w_max`, in seconds.
    k: f64,
    /// The plateau of the cubic function for this epoch, in bytes.
    w_max: f64,
}

/// CUBIC as a [`WindowGrowth`] law.
#[derive(Clone, Debug, PartialEq)]
pub struct Cubic {
    /// Whether to apply fast convergence (RFC 9438 §4.7).
    fast_convergence: bool,
    /// The window before the last reduction, lowered by fast convergence (W_max), in bytes;
    /// `None` when undefined (slow start ended without a loss, or after persistent congestion),
    /// in which case the next epoch takes its own starting window as plateau and `K = 0`.
    w_max: Option<f64>,
    /// The window when ssthresh was last set (cwnd_prior), in bytes.
    cwnd_prior: f64,
    /// The current epoch; `None` until the first ACK of congestion avoidance.
    epoch: Option<Epoch>,
    /// The Reno-friendly estimate (W_est), in bytes.
    w_est: f64,
    /// Growth of less than a byte not yet applied to the window.
    frac: f64,
    /// When the sender became application-limited while an epoch ran.
    app_limited_since: Option<Instant>,
    /// Where the idle time of an idle restart is measured from: the last send, or with
    /// `idle_restart_fix` the later of the last send and the last ACK.
    idle_since: Option<Instant>,
    /// Whether an ACK moves `idle_since` (quiche's `enable_cubic_idle_restart_fix`, on by
    /// default); without, only sends do, as in Linux's CUBIC for TCP.
    idle_restart_fix: bool,
}

impl Default for Cubic {
    fn default() -> Self {
        Cubic {
            fast_convergence: true,
            w_max: None,
            cwnd_prior: 0.0,
            epoch: None,
            w_est: 0.0,
            frac: 0.0,
            app_limited_since: None,
            idle_since: None,
            idle_restart_fix: true,
        }
    }
}

/// The cubic window function `W_cubic(t) = C (t − K)³ + W_max` in bytes, for `t` in seconds
/// (RFC 9438 Figure 1).
pub fn w_cubic(t: f64, k: f64, w_max: f64, mss: usize) -> f64 {
    let d = t - k;
    C * mss as f64 * d * d * d + w_max
}

/// The time `K`, in seconds, the cubic function takes to grow from `cwnd_epoch` to `w_max`
/// (RFC 9438 Figure 2); windows in bytes.
pub fn cubic_k(w_max: f64, cwnd_epoch: f64, mss: usize) -> f64 {
    ((w_max - cwnd_epoch) / (C * mss as f64)).cbrt()
}

impl Cubic {
    /// CUBIC with fast convergence on or off.
    pub fn new(fast_convergence: bool) -> Self {
        Cubic {
            fast_convergence,
            ..Cubic::default()
        }
    }

    /// Sets how an idle restart measures the idle time (quiche's
    /// `Config::set_enable_cubic_idle_restart_fix`, on by default). Off, it is the time since
    /// the last send, which counts the round trip in which the last packets were in flight and
    /// being acknowledged: when the window drains only because everything was acknowledged
    /// (a small window, each round acknowledged whole before the next leaves), every round
    /// pushes the epoch forward by an RTT and the window stops following the cubic curve. On,
    /// it is the time since the later of the last send and the last ACK: only time with
    /// nothing in flight counts as idle.
    pub fn set_idle_restart_fix(&mut self, on: bool) {
        self.idle_restart_fix = on;
    }

    /// `W_max` in bytes, once defined.
    pub fn w_max(&self) -> Option<f64> {
        self.w_max
    }

    /// `K` of the current epoch, in seconds.
    pub fn k(&self) -> Option<f64> {
        self.epoch.map(|e| e.k)
    }

    /// The start of the current epoch (shifted by the application-limited time so far).
    pub fn epoch_start(&self) -> Option<Instant> {
        self.epoch.map(|e| e.start)
    }

    /// The Reno-friendly estimate `W_est` in bytes.
    pub fn w_est(&self) -> f64 {
        self.w_est
    }

    /// `cwnd_prior` in bytes.
    pub fn cwnd_prior(&self) -> f64 {
        self.cwnd_prior
    }

    /// Begins a congestion-avoidance epoch at the current window.
    fn start_epoch(&mut self, now: Instant, win: &Window) -> Epoch {
        let cwnd = win.cwnd as f64;
        // Without a plateau above the window (slow start ended without a loss, after
        // persistent congestion, or the window already passed W_max) the curve starts at its
        // inflection point: K = 0 and W_max = cwnd_epoch (RFC 9438 §4.8, §4.10).
        let (w_max, k) = match self.w_max {
            Some(w_max) if w_max > cwnd => (w_max, cubic_k(w_max, cwnd, win.mss)),
            _ => (cwnd, 0.0),
        };
        let epoch = Epoch {
            start: now,
            cwnd,
            k,
            w_max,
        };
        self.epoch = Some(epoch);
        self.w_est = cwnd;
        self.frac = 0.0;
        self.app_limited_since = None;
        epoch
    }

    /// Forgets the epoch: the next congestion-avoidance ACK starts a new one.
    fn end_epoch(&mut self) {
        self.epoch = None;
        self.frac = 0.0;
        self.app_limited_since = None;
    }

    /// Updates the Reno-friendly estimate for `acked` bytes (RFC 9438 Figure 4, scaled to
    /// bytes), switching α to 1 once it reached `cwnd_prior`.
    fn grow_w_est(&mut self, acked: usize, win: &Window) {
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            ALPHA_CUBIC
        };
        self.w_est += alpha * acked as f64 * win.mss as f64 / win.cwnd.max(1) as f64;
    }

    /// Applies `grow` bytes (possibly fractional) to the window.
    fn apply(&mut self, grow: f64, win: &mut Window) {
        let total = self.frac + grow.max(0.0);
        let whole = total.floor();
        self.frac = total - whole;
        win.cwnd = win.cwnd.saturating_add(whole as usize);
    }
}

impl WindowGrowth for Cubic {
    const NAME: &'static str = "cubic";

    fn on_congestion_event(
        &mut self,
        _now: Instant,
        _signal: &CongestionSignal,
        win: &Window,
    ) -> usize {
        let cwnd = win.cwnd as f64;
        // Fast convergence (RFC 9438 §4.7): a window that no longer reaches the last plateau
        // means less capacity for this flow; give some up by plateauing lower.
        self.w_max = Some(match self.w_max {
            Some(w_max) if self.fast_convergence && cwnd < w_max => cwnd * (1.0 + BETA_CUBIC) / 2.0,
            _ => cwnd,
        });
        self.cwnd_prior = cwnd;
        self.end_epoch();
        // The framework never grows the window while application-limited (RFC 9002 §7.8), so
        // cwnd stands in for flight_size here as RFC 9438 §4.6 allows.
        (cwnd * BETA_CUBIC) as usize
    }

    fn on_packet_sent(&mut self, now: Instant, info: &SentInfo) {
        let restart = info.bytes_in_flight <= info.size && self.app_limited_since.is_none();
        if let (true, Some(epoch), Some(since)) = (restart, self.epoch.as_mut(), self.idle_since) {
            epoch.start += now.saturating_duration_since(since);
        }
        self.idle_since = Some(now);
    }

    fn on_acked(&mut self, now: Instant) {
        if self.idle_restart_fix {
            self.idle_since = Some(now);
        }
    }

    fn restore(&mut self, saved: Self) {
        let idle_since = self.idle_since;
        *self = Cubic {
            idle_since,
            ..saved
        };
    }

    fn on_ack(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats, win: &mut Window) {
        if let (Some(since), Some(epoch)) = (self.app_limited_since.take(), self.epoch.as_mut()) {
            epoch.start += now.saturating_duration_since(since);
        }
        let epoch = match self.epoch {
            Some(epoch) => epoch,
            None => self.start_epoch(now, win),
        };
        let t = now.saturating_duration_since(epoch.start).as_secs_f64();
        let rtt = rtt.smoothed_rtt.as_secs_f64();
        let cwnd = win.cwnd as f64;

        self.grow_w_est(ack.acked_bytes, win);
        if w_cubic(t, epoch.k, epoch.w_max, win.mss) < self.w_est {
            // Reno-friendly region (RFC 9438 §4.3): at least Reno's window.
            if self.w_est > cwnd {
                self.apply(self.w_est - cwnd, win);
            }
            return;
        }
        // Concave and convex regions (§4.4, §4.5): move towards the window the curve reaches
        // one RTT from now, by (target − cwnd) / cwnd per acknowledged datagram, never by more
        // than half the window per RTT.
        let target =
            w_cubic(t + rtt, epoch.k, epoch.w_max, win.mss).clamp(cwnd, MAX_TARGET_FACTOR * cwnd);
        let grow = (target - cwnd) * ack.acked_bytes as f64 / cwnd.max(1.0);
        self.apply(grow.min(target - cwnd), win);
    }

    fn on_slow_start_exit(&mut self, _now: Instant, win: &Window) {
        // RFC 9438 §4.10: HyStart++ ended slow start without a loss: W_max is undefined, the
        // next epoch starts at its own window with K = 0.
        self.cwnd_prior = win.cwnd as f64;
        self.w_max = None;
        self.end_epoch();
    }

    fn on_app_limited(&mut self, now: Instant) {
        if self.epoch.is_some() && self.app_limited_since.is_none() {
            self.app_limited_since = Some(now);
        }
    }

    fn on_persistent_congestion(&mut self, _now: Instant, _win: &Window) {
        // RFC 9438 §4.8: after a timeout the next epoch starts with K = 0 and W_max = its own
        // starting window.
        self.w_max = None;
        self.end_epoch();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cc::test_sender::TestSender;
    use crate::cc::{CcConfig, CcState, CongestionControl, CongestionControlAlgorithm, Controller};

    const MSS: usize = 1200;
    const TICK: Duration = Duration::from_millis(1);

    fn config(initial_window_packets: usize) -> CcConfig {
        CcConfig {
            initial_window_packets,
            hystart: false,
            ..CcConfig::default()
        }
    }

    fn sender(initial_window_packets: usize, rtt: Duration) -> TestSender<Controller> {
        let cc = Controller::new(
            CongestionControlAlgorithm::CUBIC,
            &config(initial_window_packets),
        );
        TestSender::new(cc, MSS, rtt)
    }

    fn cubic(cc: &Controller) -> &Cubic {
        match cc {
            Controller::Cubic(c) => c.growth(),
            Controller::CubicHystart(c) => c.growth(),
            other => panic!("not CUBIC: {other:?}"),
        }
    }

    /// Fills the initial window, loses its first packet an RTT later and acknowledges the
    /// rest inside the recovery period: W_max = the initial window, cwnd = 0.7 of it, nothing
    /// in flight. The epoch starts with the first ACK of the next packets.
    fn sender_after_loss(initial_window_packets: usize, rtt: Duration) -> TestSender<Controller> {
        let mut s = sender(initial_window_packets, rtt);
        let sent = s.send_window();
        s.advance(rtt);
        assert!(s.lose(&sent[..1], false));
        s.ack(&sent[1..]);
        assert_eq!(s.cc.state(), CcState::Recovery);
        s
    }

    /// Runs the paced sender until the epoch started; returns its start.
    fn start_epoch(s: &mut TestSender<Controller>) -> Instant {
        let end = s.now + s.rtt.smoothed_rtt * 2;
        s.run_paced(end, TICK);
        assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
        cubic(&s.cc).epoch_start().expect("an epoch runs")
    }

    #[test]
    fn constants_follow_rfc9438() {
        assert!((ALPHA_CUBIC - 0.9 / 1.7).abs() < 1e-12);
        // K for W_max = 100 segments reduced to 70: cbrt(30 / 0.4).
        assert!((cubic_k(100.0 * 1200.0, 70.0 * 1200.0, 1200) - 75f64.cbrt()).abs() < 1e-9);
        assert!((w_cubic(75f64.cbrt(), 75f64.cbrt(), 5.0, 1200) - 5.0).abs() < 1e-9);
        assert!((w_cubic(0.0, 75f64.cbrt(), 120_000.0, 1200) - 84_000.0).abs() < 1e-6);
    }

    #[test]
    fn loss_multiplies_the_window_by_0_7() {
        let mut s = sender(10, Duration::from_millis(100));
        s.round_trip();
        assert_eq!(s.cc.cwnd(), 24_000);
        let sent = s.send_window();
        s.advance(Duration::from_millis(100));
        assert!(s.lose(&sent[..1], false));
        assert_eq!(s.cc.cwnd(), 16_800);
        assert_eq!(s.cc.ssthresh(), Some(16_800));
        assert_eq!(s.cc.state(), CcState::Recovery);
        assert_eq!(cubic(&s.cc).w_max(), Some(24_000.0));
        assert_eq!(cubic(&s.cc).cwnd_prior(), 24_000.0);
        assert_eq!(s.cc.name(), "cubic");
    }

    #[test]
    fn one_reduction_per_recovery_period() {
        let mut s = sender(10, Duration::from_millis(100));
        s.round_trip();
        let sent = s.send_window();
        s.advance(Duration::from_millis(100));
        assert!(s.lose(&sent[..1], false));
        s.advance(Duration::from_millis(1));
        // Losses of packets sent before the period began: no second reduction.
        assert!(!s.lose(&sent[1..4], false));
        assert_eq!(s.cc.cwnd(), 16_800);
        assert_eq!(cubic(&s.cc).w_max(), Some(24_000.0));
        s.ack(&sent[4..]);
        assert_eq!(s.cc.state(), CcState::Recovery);
        // A packet sent in the period is acknowledged: recovery ends; the next loss reduces.
        let p = s.send();
        s.advance(Duration::from_millis(100));
        s.ack(&[p]);
        assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
        let q = s.send();
        s.advance(Duration::from_millis(100));
        let before = s.cc.cwnd();
        assert!(s.lose(&[q], false));
        assert_eq!(s.cc.cwnd(), (before as f64 * 0.7) as usize);
    }

    #[test]
    fn window_follows_the_cubic_curve_concave_then_convex() {
        // W_max = 400 datagrams, cwnd_epoch = 280: K = cbrt(120 / 0.4) ≈ 6.69 s. With a 100 ms
        // RTT the Reno-friendly estimate (+0.53 datagram per RTT) stays below the curve.
        let rtt = Duration::from_millis(100);
        let mut s = sender_after_loss(400, rtt);
        let w_max = 480_000.0;
        assert_eq!(s.cc.cwnd(), 336_000);
        let start = start_epoch(&mut s);
        let k = cubic(&s.cc).k().unwrap();
        assert!((k - 300f64.cbrt()).abs() < 1e-9, "K = {k}");
        let mut samples = Vec::new();
        for half_seconds in 1..=26 {
            let t = Duration::from_millis(500 * half_seconds);
            s.run_paced(start + t, TICK);
            let expected = w_cubic(t.as_secs_f64(), k, w_max, MSS);
            let cwnd = s.cc.cwnd() as f64;
            assert!(
                (cwnd - expected).abs() <= MSS as f64,
                "t = {t:?}: cwnd {cwnd} vs W_cubic {expected:.0}"
            );
            assert!(cubic(&s.cc).w_est() < cwnd, "not Reno-friendly at {t:?}");
            samples.push(cwnd);
        }
        // Concave up to W_max (growth per step shrinks), convex beyond (it grows again).
        let steps: Vec<f64> = samples.windows(2).map(|w| w[1] - w[0]).collect();
        let at_k = (k * 2.0) as usize; // the step containing K
        assert!(
            steps[..at_k - 1].windows(2).all(|w| w[1] < w[0]),
            "{steps:?}"
        );
        assert!(
            steps[at_k + 1..].windows(2).all(|w| w[1] > w[0]),
            "{steps:?}"
        );
        assert!(samples[at_k - 1] < w_max && *samples.last().unwrap() > w_max + 100.0 * 1200.0);
    }

    #[test]
    fn reno_friendly_region_takes_over_on_short_paths() {
        // W_max = 20 datagrams, 10 ms RTT: the curve needs K = cbrt(6 / 0.4) ≈ 2.5 s to climb 6
        // datagrams, while Reno would add one every 10 ms.
        let rtt = Duration::from_millis(10);
        let mut s = sender_after_loss(20, rtt);
        assert_eq!(s.cc.cwnd(), 16_800);
        let start = start_epoch(&mut s);
        let (k, cwnd_prior) = (cubic(&s.cc).k().unwrap(), cubic(&s.cc).cwnd_prior());
        // Ten RTTs: W_est grew by α_cubic per RTT, below cwnd_prior.
        s.run_paced(start + rtt * 10, TICK);
        let expected = 16_800.0 + 10.0 * ALPHA_CUBIC * MSS as f64;
        let cwnd = s.cc.cwnd() as f64;
        assert!(
            (cwnd - expected).abs() <= MSS as f64,
            "{cwnd} vs {expected}"
        );
        let t = (rtt * 10).as_secs_f64();
        let curve = w_cubic(t, k, 24_000.0, MSS);
        assert!(cubic(&s.cc).w_est() > curve + MSS as f64, "W_est > W_cubic");
        assert!(cwnd > curve + MSS as f64);
        assert!(cubic(&s.cc).w_est() < cwnd_prior);
        // Past cwnd_prior α becomes 1: one datagram per RTT, like Reno.
        s.run_paced(start + rtt * 20, TICK);
        let at_20 = s.cc.cwnd();
        s.run_paced(start + rtt * 40, TICK);
        let per_rtt = (s.cc.cwnd() - at_20) as f64 / 20.0;
        assert!((per_rtt - MSS as f64).abs() < 0.1 * MSS as f64, "{per_rtt}");
        assert!(cubic(&s.cc).w_est() >= cwnd_prior);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let rtt = Duration::from_millis(100);
        let mut s = sender_after_loss(100, rtt);
        assert_eq!(cubic(&s.cc).w_max(), Some(120_000.0));
        start_epoch(&mut s);
        // A second loss before the window got back to W_max.
        let before = s.cc.cwnd();
        assert!(before < 120_000);
        let p = s.send();
        s.advance(rtt);
        assert!(s.lose(&[p], false));
        let w_max = cubic(&s.cc).w_max().unwrap();
        assert!(
            (w_max - before as f64 * 0.85).abs() < 1e-6,
            "{w_max} vs {before}"
        );
        assert_eq!(s.cc.cwnd(), (before as f64 * 0.7) as usize);

        // Without fast convergence the plateau is the window at the loss.
        let cfg = config(100);
        let mut s = TestSender::new(
            Controller::Cubic(crate::cc::Classic::new(
                &cfg,
                crate::cc::StandardSlowStart,
                Cubic::new(false),
            )),
            MSS,
            rtt,
        );
        let sent = s.send_window();
        s.advance(rtt);
        s.lose(&sent[..1], false);
        s.ack(&sent[1..]);
        start_epoch(&mut s);
        let before = s.cc.cwnd();
        let p = s.send();
        s.advance(rtt);
        assert!(s.lose(&[p], false));
        assert_eq!(cubic(&s.cc).w_max(), Some(before as f64));
    }

    #[test]
    fn application_limited_time_does_not_advance_the_epoch() {
        let rtt = Duration::from_millis(100);
        let mut s = sender_after_loss(100, rtt);
        let start = start_epoch(&mut s);
        // Past K (≈ 4.2 s) the curve is steep: 5 idle seconds would be worth many datagrams.
        let pause = start + Duration::from_secs(6);
        s.run_paced(pause, TICK);
        let cwnd_before = s.cc.cwnd();
        let k = cubic(&s.cc).k().unwrap();
        let jump = w_cubic(11.0, k, 120_000.0, MSS) - w_cubic(6.0, k, 120_000.0, MSS);
        assert!(jump > 50.0 * MSS as f64);

        s.cc.on_app_limited(s.now);
        s.app_limited = true;
        s.run_paced(pause + Duration::from_secs(5), TICK);
        assert_eq!(s.bytes_in_flight(), 0);
        assert_eq!(
            s.cc.cwnd(),
            cwnd_before,
            "no growth while application-limited"
        );
        assert_eq!(s.cc.state(), CcState::ApplicationLimited);
        s.app_limited = false;
        // The first packets leave at the next tick and are acknowledged an RTT later: the epoch
        // moves by exactly the time from the report to that first ACK.
        let resume_ack = pause + Duration::from_secs(5) + TICK + rtt;
        s.run_paced(resume_ack, TICK);
        assert_eq!(
            cubic(&s.cc).epoch_start(),
            Some(start + (resume_ack - pause))
        );
        // One RTT after the restart the window grew as it would have one RTT after the pause.
        s.run_paced(resume_ack + rtt, TICK);
        let grown = s.cc.cwnd() - cwnd_before;
        let expected = w_cubic(6.2, k, 120_000.0, MSS) - w_cubic(6.0, k, 120_000.0, MSS);
        assert!(
            (grown as f64 - expected).abs() <= 2.0 * MSS as f64,
            "grew {grown}, expected about {expected:.0}"
        );
    }

    #[test]
    fn spurious_undo_restores_cubic_state() {
        let rtt = Duration::from_millis(100);
        let mut s = sender_after_loss(100, rtt);
        let start = start_epoch(&mut s);
        s.run_paced(start + Duration::from_secs(2), TICK);
        let saved = cubic(&s.cc).clone();
        let (cwnd, ssthresh) = (s.cc.cwnd(), s.cc.ssthresh());
        let p = s.send();
        s.advance(rtt);
        assert!(s.lose(&[p], false));
        assert_ne!(cubic(&s.cc), &saved);
        assert!(s.cc.cwnd() < cwnd);
        s.cc.on_spurious_congestion(s.now);
        // What the undo restores; when it last sent and was acknowledged stay the present's.
        let restored = Cubic {
            idle_since: saved.idle_since,
            ..cubic(&s.cc).clone()
        };
        assert_eq!(restored, saved, "W_max, K, epoch, W_est restored");
        assert_eq!(
            cubic(&s.cc).idle_since,
            Some(s.now - rtt),
            "the last send's"
        );
        assert_eq!(s.cc.cwnd(), cwnd);
        assert_eq!(s.cc.ssthresh(), ssthresh);
        assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
        assert_eq!(s.cc.stats().spurious_undos, 1);
        // The curve goes on from where it was.
        let epoch = cubic(&s.cc).epoch_start();
        s.run_paced(s.now + rtt, TICK);
        assert_eq!(cubic(&s.cc).epoch_start(), epoch);
        assert!(s.cc.cwnd() > cwnd);
    }

    #[test]
    fn no_undo_once_the_window_passed_its_old_value() {
        let rtt = Duration::from_millis(10);
        let mut s = sender_after_loss(20, rtt);
        let before = s.cc.cwnd();
        // Reno-friendly growth carries the window past the pre-loss 24,000 bytes.
        s.run_paced(s.now + Duration::from_secs(1), TICK);
        assert!(s.cc.cwnd() > 24_000);
        let state = cubic(&s.cc).clone();
        let cwnd = s.cc.cwnd();
        s.cc.on_spurious_congestion(s.now);
        assert_eq!(s.cc.cwnd(), cwnd);
        assert_eq!(cubic(&s.cc), &state);
        assert!(before < cwnd);
        assert_eq!(s.cc.stats().spurious_undos, 0);
    }

    #[test]
    fn persistent_congestion_restarts_with_k_zero() {
        let rtt = Duration::from_millis(100);
        let mut s = sender_after_loss(100, rtt);
        start_epoch(&mut s);
        let sent = s.in_flight();
        s.advance(rtt * 10);
        assert!(s.lose(&sent, true));
        assert_eq!(s.cc.cwnd(), 2 * MSS);
        assert_eq!(s.cc.state(), CcState::SlowStart);
        assert_eq!(cubic(&s.cc).w_max(), None);
        // Slow start up to ssthresh, then an epoch with K = 0 at the window it reached.
        let ssthresh = s.cc.ssthresh().unwrap();
        while s.cc.cwnd() < ssthresh {
            s.round_trip();
        }
        s.round_trip();
        assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
        assert_eq!(cubic(&s.cc).k(), Some(0.0));
    }

    /// A window acknowledged whole each round, the next round leaving at the instant the last
    /// ACK arrives: nothing is ever in flight at a send, though the sender was never idle.
    /// Returns the sender after `rounds` such rounds past a loss, and when the epoch started.
    fn drained_rounds(idle_restart_fix: bool, rounds: usize) -> (TestSender<Controller>, Instant) {
        // A long RTT and a large window, so that the cubic curve, not the Reno-friendly
        // estimate, drives the window within a few rounds (K ≈ 4.2 s).
        let rtt = Duration::from_millis(500);
        let cfg = CcConfig {
            cubic_idle_restart_fix: idle_restart_fix,
            ..config(100)
        };
        let mut s = TestSender::new(
            Controller::new(CongestionControlAlgorithm::CUBIC, &cfg),
            MSS,
            rtt,
        );
        let sent = s.send_window();
        s.advance(rtt);
        assert!(s.lose(&sent[..1], false));
        s.ack(&sent[1..]);
        // Packets sent at the instant of the loss belong to the recovery period.
        s.advance(TICK);
        s.round_trip();
        let start = cubic(&s.cc)
            .epoch_start()
            .expect("the first ACK started the epoch");
        for _ in 1..rounds {
            assert_eq!(s.bytes_in_flight(), 0);
            s.round_trip();
        }
        (s, start)
    }

    #[test]
    fn a_drained_window_is_no_idle_period_with_the_idle_restart_fix() {
        let rounds = 14;
        let (fixed, start) = drained_rounds(true, rounds);
        assert_eq!(
            cubic(&fixed.cc).epoch_start(),
            Some(start),
            "the last ACK came at the send: no idle time"
        );
        // Without the fix the time since the last send counts: an RTT per round, so the curve's
        // clock never advances and only the Reno-friendly estimate grows the window.
        let (unfixed, start) = drained_rounds(false, rounds);
        let rtt = unfixed.rtt.smoothed_rtt;
        assert_eq!(
            cubic(&unfixed.cc).epoch_start(),
            Some(start + rtt * (rounds as u32 - 1))
        );
        assert!(
            fixed.cc.cwnd() > unfixed.cc.cwnd() + 10 * MSS,
            "{} vs {}",
            fixed.cc.cwnd(),
            unfixed.cc.cwnd()
        );
    }

    #[test]
    fn an_idle_period_without_a_report_moves_the_epoch_by_the_time_nothing_was_in_flight() {
        for fix in [true, false] {
            let (mut s, start) = drained_rounds(fix, 1);
            let rtt = s.rtt.smoothed_rtt;
            let shifted = cubic(&s.cc).epoch_start().unwrap();
            // Two seconds with nothing in flight and no application-limited report.
            s.advance(Duration::from_secs(2));
            s.send();
            let idle = if fix {
                Duration::from_secs(2)
            } else {
                Duration::from_secs(2) + rtt
            };
            assert_eq!(shifted, start);
            assert_eq!(cubic(&s.cc).epoch_start(), Some(start + idle), "fix: {fix}");
        }
    }
}
