//! Receiver-side flow-control windows with auto-tuning (RFC 9000 §4.1–4.2).
//!
//! One [`FlowControl`] tracks one limit we advertise to the peer: a stream's MAX_STREAM_DATA or the
//! connection's MAX_DATA. It does not see received bytes (the caller checks those against
//! [`FlowControl::max_data`]); it sees what the application has *consumed*, because only consumed
//! bytes free buffer space and so justify more credit.
//!
//! # The rules
//!
//! * **Advertised limit.** The next limit is `consumed + window`: the peer may always have one
//!   window of data in flight or buffered beyond what the application has read.
//! * **When to update.** An update is due once the unused part of the advertised limit,
//!   `max_data - consumed`, falls below three quarters of the window, i.e. once a quarter of the
//!   window has been consumed since the last update. Updating early, rather than when the credit
//!   is exhausted, gives the update a round trip to reach the peer before it runs dry (§4.2:
//!   "send it early enough to allow time for loss of the frame and subsequent recovery"). A
//!   quarter rather than a half: a window-limited sender can keep about `window` bytes per round
//!   trip moving only if credit comes back before it has used much of it; with updates at half
//!   the window, a 10 MiB upload over 200 Mbit/s and 40 ms starting from a 64 KiB window reached
//!   0.89–0.94 of the goodput of a 16 MiB fixed window, with quarter updates 0.91–0.97 (the
//!   pipe test in `connection/tests/streams.rs`). Four small frames per window cost nothing.
//! * **Fresh credit.** The limit an update carries is computed when the frame is written
//!   ([`FlowControl::refresh_max_data`]), so it includes what was consumed in the meantime.
//! * **Auto-tuning.** A window smaller than the bandwidth-delay product throttles the sender to one
//!   window per round trip (§4.3). We detect this from the update rhythm: if the previous update
//!   was sent less than `2 × srtt` ago, the application consumed a quarter window in under two
//!   round trips: the window, not the path, is what limits the peer, so the window doubles
//!   (capped at `max_window`). Doubling converges to the bandwidth-delay product in a logarithmic
//!   number of updates; the ceiling bounds the memory a peer can make us commit.
//! * **Connection window.** A connection window smaller than a stream window would let one stream
//!   starve the rest, so the connection keeps its window at least 1.5 × the largest stream window
//!   ([`FlowControl::ensure_window_lower_bound`], called by the connection with that product).

use std::time::{Duration, Instant};

/// The largest value a flow-control limit can take on the wire (a varint, RFC 9000 §16).
pub const MAX_LIMIT: u64 = (1 << 62) - 1;

/// A receive window and the limit advertised for it.
#[derive(Clone, Debug)]
pub struct FlowControl {
    /// Bytes the application has consumed (read or discarded).
    consumed: u64,
    /// The limit most recently advertised (or the initial one, from the transport parameters).
    max_data: u64,
    /// Current window size; grows by auto-tuning.
    window: u64,
    /// Ceiling for `window`.
    max_window: u64,
    /// When the limit was last raised by [`FlowControl::update_max_data`].
    last_update: Option<Instant>,
}

impl FlowControl {
    /// A window of `initial_window` bytes that auto-tuning may grow up to `max_window` (raised to
    /// `initial_window` if smaller). The initial limit is `initial_window` (the transport
    /// parameter value).
    pub fn new(initial_window: u64, max_window: u64) -> Self {
        let initial_window = initial_window.min(MAX_LIMIT);
        FlowControl {
            consumed: 0,
            max_data: initial_window,
            window: initial_window,
            max_window: max_window.clamp(initial_window, MAX_LIMIT),
            last_update: None,
        }
    }

    /// Bytes the application has consumed so far.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The limit currently advertised to the peer.
    pub fn max_data(&self) -> u64 {
        self.max_data
    }

    /// The current window size.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// The ceiling auto-tuning may raise the window to.
    pub fn max_window(&self) -> u64 {
        self.max_window
    }

    /// Records that the application consumed `n` more bytes.
    pub fn add_consumed(&mut self, n: u64) {
        self.consumed = self.consumed.saturating_add(n);
    }

    /// Whether a new limit should be advertised now: the unused part of the advertised limit
    /// has fallen below three quarters of the window (see the module documentation).
    pub fn should_update_max_data(&self) -> bool {
        let unused = self.max_data.saturating_sub(self.consumed);
        unused < self.window - self.window / 4 && self.max_data_next() > self.max_data
    }

    /// Whether an update is worth sending alongside another flow-control frame that goes out
    /// anyway: an eighth of the window was consumed since the last one. Sent alone at three
    /// quarters, a connection update and a stream update of a single download leave in
    /// separate packets, two ack-eliciting packets the sender acknowledges at once.
    pub fn worth_updating_alongside(&self) -> bool {
        let unused = self.max_data.saturating_sub(self.consumed);
        unused < self.window - self.window / 8 && self.max_data_next() > self.max_data
    }

    /// The limit the next update would advertise: `consumed + window`.
    pub fn max_data_next(&self) -> u64 {
        self.consumed.saturating_add(self.window).min(MAX_LIMIT)
    }

    /// Raises the advertised limit to [`FlowControl::max_data_next`] and remembers when, for
    /// auto-tuning. A limit is never lowered (§4.1: a smaller limit has no effect).
    pub fn update_max_data(&mut self, now: Instant) {
        self.max_data = self.max_data.max(self.max_data_next());
        self.last_update = Some(now);
    }

    /// Raises the advertised limit to [`FlowControl::max_data_next`] without counting as an
    /// update for auto-tuning: used when the update frame is finally written, so that it carries
    /// the credit of everything consumed until then rather than until the update was decided.
    pub fn refresh_max_data(&mut self) {
        self.max_data = self.max_data.max(self.max_data_next());
    }

    /// Doubles the window (up to the ceiling) if the previous update was less than `2 × srtt`
    /// before `now`: the application drained a quarter window within two round trips, so the window
    /// is what limits the peer. Call it just before [`FlowControl::update_max_data`].
    pub fn autotune_window(&mut self, now: Instant, srtt: Duration) {
        let Some(last) = self.last_update else {
            return;
        };
        if now.saturating_duration_since(last) < srtt.saturating_mul(2) {
            self.window = self.window.saturating_mul(2).min(self.max_window);
        }
    }

    /// Raises the window to at least `window` (capped at the ceiling); never lowers it. The
    /// connection calls this with 1.5 × the largest stream window.
    pub fn ensure_window_lower_bound(&mut self, window: u64) {
        if window > self.window {
            self.window = window.min(self.max_window);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manual clock's origin; every other instant is derived from it by adding durations.
    #[allow(clippy::disallowed_methods)]
    fn epoch() -> Instant {
        Instant::now()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn an_update_goes_alongside_another_from_an_eighth_of_the_window() {
        let mut fc = FlowControl::new(800, 800);
        fc.add_consumed(99);
        assert!(!fc.worth_updating_alongside());
        fc.add_consumed(2);
        assert!(fc.worth_updating_alongside());
        assert!(!fc.should_update_max_data(), "alone it waits for a quarter");
        fc.update_max_data(epoch());
        assert!(!fc.worth_updating_alongside());
    }

    #[test]
    fn initial_limit_is_the_window() {
        let fc = FlowControl::new(1000, 10_000);
        assert_eq!(fc.max_data(), 1000);
        assert_eq!(fc.window(), 1000);
        assert_eq!(fc.consumed(), 0);
        assert!(!fc.should_update_max_data());
    }

    #[test]
    fn update_due_once_a_quarter_window_is_consumed() {
        let now = epoch();
        let mut fc = FlowControl::new(1000, 10_000);
        fc.add_consumed(250);
        // Unused 750 is exactly three quarters: not yet.
        assert!(!fc.should_update_max_data());
        fc.add_consumed(1);
        assert!(fc.should_update_max_data());
        assert_eq!(fc.max_data_next(), 1251);
        fc.update_max_data(now);
        assert_eq!(fc.max_data(), 1251);
        assert!(!fc.should_update_max_data());
    }

    #[test]
    fn refresh_carries_later_consumption_without_counting_as_an_update() {
        let t0 = epoch();
        let srtt = ms(100);
        let mut fc = FlowControl::new(1000, 10_000);
        fc.add_consumed(300);
        fc.update_max_data(t0);
        assert_eq!(fc.max_data(), 1300);
        fc.add_consumed(200);
        fc.refresh_max_data();
        assert_eq!(fc.max_data(), 1500);
        // Auto-tuning still measures from the update at t0.
        fc.add_consumed(300);
        fc.autotune_window(t0 + ms(250), srtt);
        assert_eq!(fc.window(), 1000);
    }

    #[test]
    fn autotune_doubles_when_updates_come_fast() {
        let t0 = epoch();
        let srtt = ms(100);
        let mut fc = FlowControl::new(1000, 3000);

        // First update: no previous update, no tuning.
        fc.add_consumed(600);
        fc.autotune_window(t0, srtt);
        fc.update_max_data(t0);
        assert_eq!(fc.window(), 1000);
        assert_eq!(fc.max_data(), 1600);

        // Next update 150 ms later (< 2 × srtt): the window doubles.
        fc.add_consumed(600);
        let t1 = t0 + ms(150);
        assert!(fc.should_update_max_data());
        fc.autotune_window(t1, srtt);
        fc.update_max_data(t1);
        assert_eq!(fc.window(), 2000);
        assert_eq!(fc.max_data(), 3200);

        // Again fast: capped at max_window.
        fc.add_consumed(1500);
        let t2 = t1 + ms(10);
        fc.autotune_window(t2, srtt);
        fc.update_max_data(t2);
        assert_eq!(fc.window(), 3000);
        assert_eq!(fc.max_data(), 5700);
    }

    #[test]
    fn autotune_keeps_window_when_updates_are_slow() {
        let t0 = epoch();
        let srtt = ms(100);
        let mut fc = FlowControl::new(1000, 100_000);
        fc.add_consumed(600);
        fc.autotune_window(t0, srtt);
        fc.update_max_data(t0);
        fc.add_consumed(600);
        // Exactly 2 × srtt later: not "less than", so no growth.
        let t1 = t0 + ms(200);
        fc.autotune_window(t1, srtt);
        fc.update_max_data(t1);
        assert_eq!(fc.window(), 1000);
        assert_eq!(fc.max_data(), 2200);
    }

    #[test]
    fn lower_bound_raises_but_never_lowers() {
        let mut fc = FlowControl::new(1000, 4000);
        fc.ensure_window_lower_bound(1500);
        assert_eq!(fc.window(), 1500);
        fc.ensure_window_lower_bound(500);
        assert_eq!(fc.window(), 1500);
        fc.ensure_window_lower_bound(1_000_000);
        assert_eq!(fc.window(), 4000);
    }

    #[test]
    fn limits_saturate_at_varint_max() {
        let mut fc = FlowControl::new(u64::MAX, u64::MAX);
        assert_eq!(fc.max_data(), MAX_LIMIT);
        fc.add_consumed(u64::MAX);
        assert_eq!(fc.max_data_next(), MAX_LIMIT);
        assert!(!fc.should_update_max_data());
    }

    #[test]
    fn max_window_below_initial_is_raised() {
        let fc = FlowControl::new(5000, 10);
        assert_eq!(fc.max_window(), 5000);
    }
}
