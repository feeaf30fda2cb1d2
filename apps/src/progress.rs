//! The client's progress line on stderr: only on a terminal, only for transfers that last over
//! a second, redrawn at most four times a second.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Transfers shorter than this show no progress line.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// The least time between two redraws.
pub const REDRAW_EVERY: Duration = Duration::from_millis(250);

/// The progress line's state.
pub struct Progress {
    enabled: bool,
    start: Instant,
    last_draw: Option<Instant>,
}

impl Progress {
    /// A progress line for a transfer that started at `start`; shown only if stderr is a
    /// terminal.
    pub fn new(start: Instant) -> Self {
        Self::with_output(start, std::io::stderr().is_terminal())
    }

    /// A progress line that is drawn (`enabled`) or not, whatever stderr is.
    pub fn with_output(start: Instant, enabled: bool) -> Self {
        Progress {
            enabled,
            start,
            last_draw: None,
        }
    }

    /// When the line should be redrawn next, if it is shown at all (for the event loop's
    /// timeout, so that a stalled transfer still shows its rate falling).
    pub fn next_draw(&self) -> Option<Instant> {
        if !self.enabled {
            return None;
        }
        Some(match self.last_draw {
            Some(t) => t + REDRAW_EVERY,
            None => self.start + SHOW_AFTER,
        })
    }

    /// Whether a redraw is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.next_draw().is_some_and(|t| now >= t)
    }

    /// Redraws the line if a redraw is due.
    pub fn update(&mut self, bytes: u64, now: Instant) {
        if !self.due(now) {
            return;
        }
        self.last_draw = Some(now);
        let line = progress_line(bytes, now.saturating_duration_since(self.start));
        let mut err = std::io::stderr().lock();
        // "\x1b[K" clears what a longer earlier line left.
        let _ = write!(err, "\r{line}\x1b[K");
        let _ = err.flush();
    }

    /// Removes the line, if one was drawn, so that what follows starts on a clean line.
    pub fn finish(&mut self) {
        if self.last_draw.take().is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

/// The text of the progress line: bytes so far, average rate, elapsed time.
pub fn progress_line(bytes: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let mbps = if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    };
    format!(
        "{:>9.1} MiB  {:>8.1} Mbit/s  {:>6.1} s",
        bytes as f64 / (1024.0 * 1024.0),
        mbps,
        secs
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_size_rate_and_time() {
        let line = progress_line(50 << 20, Duration::from_secs(2));
        assert_eq!(line, "     50.0 MiB     209.7 Mbit/s     2.0 s");
        assert!(progress_line(0, Duration::ZERO).contains("0.0 Mbit/s"));
    }

    #[test]
    fn redraws_start_after_a_second_and_are_spaced() {
        let t0 = Instant::now();
        let mut p = Progress::with_output(t0, true);
        assert!(!p.due(t0 + Duration::from_millis(999)));
        assert!(p.due(t0 + SHOW_AFTER));
        p.last_draw = Some(t0 + SHOW_AFTER);
        assert!(!p.due(t0 + SHOW_AFTER + Duration::from_millis(249)));
        assert!(p.due(t0 + SHOW_AFTER + REDRAW_EVERY));

        let quiet = Progress::with_output(t0, false);
        assert_eq!(quiet.next_draw(), None);
        assert!(!quiet.due(t0 + Duration::from_secs(60)));
    }
}
