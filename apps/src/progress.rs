//! The client's progress bar on stderr (indicatif): bytes, rate and, once the size is known
//! from the responses' content-length, a bar with the ETA. Only on a terminal, only for
//! transfers that last over a second, redrawn at most four times a second; when stderr is not a
//! terminal nothing is built or drawn, so scripted and benchmarked runs pay nothing.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// Transfers shorter than this show no progress bar.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// The least time between two redraws.
pub const REDRAW_EVERY: Duration = Duration::from_millis(250);

/// While the size is unknown (HTTP/0.9, no content-length yet): bytes, rate, elapsed time.
const TEMPLATE_UNKNOWN: &str = "{spinner} {binary_bytes:>11} {mbps:>14} {elapsed:>4}";

/// Once the size is known: a bar, bytes of total, rate, ETA.
const TEMPLATE_KNOWN: &str =
    "{wide_bar} {binary_bytes:>11} / {binary_total_bytes:<11} {mbps:>14} ETA {eta:>4}";

/// The rate in Mbit/s, the summary line's unit.
fn mbps(state: &ProgressState, w: &mut dyn std::fmt::Write) {
    let _ = write!(w, "{:.1} Mbit/s", state.per_sec() * 8.0 / 1e6);
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key("mbps", mbps)
        .progress_chars("=> ")
}

/// The progress bar's state.
pub struct Progress {
    /// `None` when nothing is to be drawn.
    bar: Option<ProgressBar>,
    /// Where the bar goes once the transfer has lasted [`SHOW_AFTER`] (until then it is
    /// hidden, so that short transfers leave no trace).
    target: Option<ProgressDrawTarget>,
    start: Instant,
    last_draw: Option<Instant>,
    /// The total set on the bar, once known.
    total: Option<u64>,
}

impl Progress {
    /// A progress bar for a transfer that started at `start`; shown only if stderr is a
    /// terminal.
    pub fn new(start: Instant) -> Self {
        let target = std::io::stderr()
            .is_terminal()
            .then(ProgressDrawTarget::stderr);
        Self::with_target(start, target)
    }

    /// A progress bar drawn to `target`, or not at all with `None`.
    pub fn with_target(start: Instant, target: Option<ProgressDrawTarget>) -> Self {
        let bar = target.is_some().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
            bar.set_style(style(TEMPLATE_UNKNOWN));
            bar
        });
        Progress {
            bar,
            target,
            start,
            last_draw: None,
            total: None,
        }
    }

    /// When the bar should be redrawn next, if it is shown at all (for the event loop's
    /// timeout, so that a stalled transfer still shows its rate falling).
    pub fn next_draw(&self) -> Option<Instant> {
        self.bar.as_ref()?;
        Some(match self.last_draw {
            Some(t) => t + REDRAW_EVERY,
            None => self.start + SHOW_AFTER,
        })
    }

    /// Whether a redraw is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.next_draw().is_some_and(|t| now >= t)
    }

    /// Redraws the bar if a redraw is due: `bytes` so far, of `total` if known.
    pub fn update(&mut self, bytes: u64, total: Option<u64>, now: Instant) {
        if !self.due(now) {
            return;
        }
        let Some(bar) = &self.bar else {
            return;
        };
        self.last_draw = Some(now);
        if let Some(target) = self.target.take() {
            bar.set_draw_target(target);
        }
        if total != self.total {
            self.total = total;
            match total {
                Some(len) => {
                    bar.set_length(len);
                    bar.set_style(style(TEMPLATE_KNOWN));
                }
                None => {
                    bar.unset_length();
                    bar.set_style(style(TEMPLATE_UNKNOWN));
                }
            }
        }
        bar.set_position(bytes);
    }

    /// Runs `f` (which writes to stderr) with the bar out of the way, then draws it again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Removes the bar, if one was drawn, so that what follows starts on a clean line.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// The bar's position and length (for tests).
    #[cfg(test)]
    fn state(&self) -> Option<(u64, Option<u64>)> {
        let bar = self.bar.as_ref()?;
        Some((bar.position(), bar.length()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redraws_start_after_a_second_and_are_spaced() {
        let t0 = Instant::now();
        let mut p = Progress::with_target(t0, Some(ProgressDrawTarget::hidden()));
        assert!(!p.due(t0 + Duration::from_millis(999)));
        p.update(10, None, t0 + Duration::from_millis(999));
        assert_eq!(p.state(), Some((0, None)), "not drawn before SHOW_AFTER");
        assert!(p.due(t0 + SHOW_AFTER));
        p.update(20, None, t0 + SHOW_AFTER);
        assert_eq!(p.state(), Some((20, None)));
        assert!(!p.due(t0 + SHOW_AFTER + Duration::from_millis(249)));
        assert!(p.due(t0 + SHOW_AFTER + REDRAW_EVERY));
    }

    #[test]
    fn a_known_size_gives_the_bar_a_length() {
        let t0 = Instant::now();
        let mut p = Progress::with_target(t0, Some(ProgressDrawTarget::hidden()));
        p.update(1 << 20, Some(50 << 20), t0 + SHOW_AFTER);
        assert_eq!(p.state(), Some((1 << 20, Some(50 << 20))));
        p.update(2 << 20, None, t0 + SHOW_AFTER + REDRAW_EVERY);
        assert_eq!(p.state(), Some((2 << 20, None)));
        p.finish();
        assert_eq!(p.state(), None);
        assert_eq!(p.next_draw(), None);
    }

    #[test]
    fn nothing_is_drawn_without_a_terminal() {
        let t0 = Instant::now();
        let mut quiet = Progress::with_target(t0, None);
        assert_eq!(quiet.next_draw(), None);
        assert!(!quiet.due(t0 + Duration::from_secs(60)));
        quiet.update(5, Some(10), t0 + Duration::from_secs(60));
        assert_eq!(quiet.state(), None);
    }

    /// A terminal that keeps what is written to it.
    #[derive(Debug, Clone, Default)]
    struct Screen(std::sync::Arc<std::sync::Mutex<String>>);

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            100
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.0.lock().unwrap().clear();
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_bar_shows_bytes_rate_and_eta() {
        let screen = Screen::default();
        let t0 = Instant::now();
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        let mut p = Progress::with_target(t0, Some(target));
        p.update(3 << 20, None, t0 + SHOW_AFTER);
        let text = screen.0.lock().unwrap().clone();
        assert!(text.contains("3.00 MiB"), "{text:?}");
        assert!(text.contains("Mbit/s"), "{text:?}");
        assert!(!text.contains("ETA"), "{text:?}");
        p.update(5 << 20, Some(10 << 20), t0 + SHOW_AFTER + REDRAW_EVERY);
        let text = screen.0.lock().unwrap().clone();
        assert!(text.contains("5.00 MiB / 10.00 MiB"), "{text:?}");
        assert!(text.contains("ETA"), "{text:?}");
    }
}
