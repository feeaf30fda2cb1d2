//! What one run of several flows through one bottleneck shows: each flow's goodput over time,
//! Jain's fairness index, how long until the flows' rates settle near each other, and each
//! flow's share of the bytes at the end.
//!
//! Times are seconds from the run's start (the first flow's start). A flow's trace is its
//! receiver's log: the bytes received so far, sampled every 100 ms; the bytes received between
//! two samples are spread evenly between them.

/// One flow's receiver log.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowTrace {
    /// The flow's name in tables and legends (e.g. `ours-cubic`).
    pub label: String,
    /// When the flow started, seconds from the run's start.
    pub start: f64,
    /// (time, bytes received so far), time non-decreasing.
    pub samples: Vec<(f64, u64)>,
}

impl FlowTrace {
    /// Parses a receiver log (`UNIX_MS BYTES` per line) whose times are taken relative to
    /// `epoch_ms`; lines that do not parse are skipped (a log cut short mid-line at the end).
    pub fn parse(label: &str, start: f64, text: &str, epoch_ms: f64) -> FlowTrace {
        let mut samples: Vec<(f64, u64)> = Vec::new();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(t), Some(b)) = (it.next(), it.next()) else {
                continue;
            };
            let (Ok(t), Ok(b)) = (t.parse::<f64>(), b.parse::<u64>()) else {
                continue;
            };
            let t = (t - epoch_ms) / 1000.0;
            // Keep the trace monotonic whatever the log says.
            let (lt, lb) = samples.last().copied().unwrap_or((f64::MIN, 0));
            samples.push((t.max(lt), b.max(lb)));
        }
        FlowTrace {
            label: label.to_string(),
            start,
            samples,
        }
    }

    /// The bytes received by time `t` (linear between samples; 0 before the first).
    pub fn bytes_at(&self, t: f64) -> f64 {
        let s = &self.samples;
        let i = s.partition_point(|&(st, _)| st <= t);
        if i == 0 {
            return 0.0;
        }
        let (t0, b0) = s[i - 1];
        match s.get(i) {
            Some(&(t1, b1)) if t1 > t0 => b0 as f64 + (b1 - b0) as f64 * (t - t0) / (t1 - t0),
            _ => b0 as f64,
        }
    }

    /// The flow's goodput between `from` and `to`, in bytes per second.
    pub fn rate(&self, from: f64, to: f64) -> f64 {
        if to <= from {
            return 0.0;
        }
        (self.bytes_at(to) - self.bytes_at(from)) / (to - from)
    }
}

/// Jain's fairness index of `xs`: 1 when all are equal, 1/n when one has everything.
pub fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    if sq == 0.0 {
        return 1.0;
    }
    sum * sum / (xs.len() as f64 * sq)
}

/// The metrics' parameters (the issue's: 5-s Jain windows, 20 % for 5 s, the last 30 s).
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// The Jain window's length.
    pub jain_window: f64,
    /// Rates are compared over windows of this length when deciding whether flows settled.
    pub rate_window: f64,
    /// Settled: the smallest rate at least `1 - tolerance` of the largest...
    pub tolerance: f64,
    /// ... at every step for this long.
    pub hold: f64,
    /// The tail over which shares and the final Jain index are taken.
    pub tail: f64,
    /// The step of every sliding window.
    pub step: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            jain_window: 5.0,
            rate_window: 1.0,
            tolerance: 0.2,
            hold: 5.0,
            tail: 30.0,
            step: 0.1,
        }
    }
}

/// One run's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct RunMetrics {
    /// Seconds from the last flow's start until the rates stayed within the tolerance of each
    /// other for the hold time (measured at the end of the first rate window of that stretch);
    /// `None` if they never did before the end.
    pub settle: Option<f64>,
    /// Jain's index of the flows' bytes over the tail.
    pub jain_tail: f64,
    /// The median and the smallest Jain index over sliding windows, from the last flow's start
    /// plus one window to the end.
    pub jain_sliding_median: f64,
    /// See `jain_sliding_median`.
    pub jain_sliding_min: f64,
    /// Each flow's share of the bytes received over the tail.
    pub shares: Vec<f64>,
    /// All flows' goodput over the tail, in bits per second.
    pub tail_bps: f64,
}

/// Evaluates `f` at `from`, `from + step`, ... up to `to` (inclusive within a hundredth of a
/// step).
fn steps(from: f64, to: f64, step: f64) -> impl Iterator<Item = f64> {
    let n = ((to - from) / step + 0.01).floor().max(-1.0) as i64;
    (0..=n).map(move |i| from + i as f64 * step)
}

/// Jain's index of the flows' bytes in each window `[t - window, t]`, for `t` from
/// `from + window` to `to`.
pub fn sliding_jain(flows: &[FlowTrace], from: f64, to: f64, p: &Params) -> Vec<(f64, f64)> {
    steps(from + p.jain_window, to, p.step)
        .map(|t| {
            let xs: Vec<f64> = flows.iter().map(|f| f.rate(t - p.jain_window, t)).collect();
            (t, jain(&xs))
        })
        .collect()
}

/// Whether the flows' rates over `[t - rate_window, t]` are within the tolerance.
fn close_at(flows: &[FlowTrace], t: f64, p: &Params) -> bool {
    let rates: Vec<f64> = flows.iter().map(|f| f.rate(t - p.rate_window, t)).collect();
    let max = rates.iter().cloned().fold(0.0, f64::max);
    let min = rates.iter().cloned().fold(f64::INFINITY, f64::min);
    max > 0.0 && min >= (1.0 - p.tolerance) * max
}

/// Seconds from `last_start` until the rates stayed close for `hold` (see
/// [`RunMetrics::settle`]).
pub fn settling_time(flows: &[FlowTrace], last_start: f64, end: f64, p: &Params) -> Option<f64> {
    let ts: Vec<f64> = steps(last_start + p.rate_window, end, p.step).collect();
    let ok: Vec<bool> = ts.iter().map(|&t| close_at(flows, t, p)).collect();
    let need = (p.hold / p.step).round() as usize;
    let mut run = 0;
    for (i, &good) in ok.iter().enumerate() {
        run = if good { run + 1 } else { 0 };
        if run > need {
            return Some(ts[i - need] - last_start);
        }
    }
    None
}

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// The run's figures, for flows that all run until `end`.
pub fn analyse(flows: &[FlowTrace], end: f64, p: &Params) -> RunMetrics {
    let last_start = flows.iter().map(|f| f.start).fold(0.0, f64::max);
    let tail_from = (end - p.tail).max(last_start);
    let tail: Vec<f64> = flows.iter().map(|f| f.rate(tail_from, end)).collect();
    let total: f64 = tail.iter().sum();
    let sliding: Vec<f64> = sliding_jain(flows, last_start, end, p)
        .into_iter()
        .map(|(_, j)| j)
        .collect();
    RunMetrics {
        settle: settling_time(flows, last_start, end, p),
        jain_tail: jain(&tail),
        jain_sliding_median: median(sliding.clone()),
        jain_sliding_min: sliding.iter().cloned().fold(f64::NAN, f64::min),
        shares: tail
            .iter()
            .map(|x| if total > 0.0 { x / total } else { 0.0 })
            .collect(),
        tail_bps: total * 8.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flow from `start` receiving `rate(t)` bytes per second, sampled every 100 ms to `end`.
    fn flow(start: f64, end: f64, rate: impl Fn(f64) -> f64) -> FlowTrace {
        let mut samples = vec![];
        let mut b = 0.0;
        let mut t = start;
        while t <= end + 1e-9 {
            samples.push((t, b as u64));
            b += rate(t) * 0.1;
            t += 0.1;
        }
        FlowTrace {
            label: "f".into(),
            start,
            samples,
        }
    }

    #[test]
    fn jain_extremes() {
        assert!((jain(&[5.0, 5.0, 5.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert!((jain(&[3.0, 1.0]) - 0.8).abs() < 1e-12);
    }

    #[test]
    fn parse_skips_junk_and_stays_monotonic() {
        let f = FlowTrace::parse("x", 0.0, "1000 0\n1100 500\nbad\n1200 400\n1300", 1000.0);
        assert_eq!(f.samples, vec![(0.0, 0), (0.1, 500), (0.2, 500)]);
        assert!((f.bytes_at(0.05) - 250.0).abs() < 1e-9);
        assert_eq!(f.bytes_at(5.0), 500.0);
        assert_eq!(f.bytes_at(-1.0), 0.0);
    }

    #[test]
    fn equal_flows_settle_at_once_and_share_evenly() {
        let a = flow(0.0, 60.0, |_| 1000.0);
        let b = flow(5.0, 60.0, |_| 1000.0);
        let m = analyse(&[a, b], 60.0, &Params::default());
        // The first rate window after the second start already compares full windows.
        assert!((m.settle.unwrap() - 1.0).abs() < 0.11, "{:?}", m.settle);
        assert!((m.jain_tail - 1.0).abs() < 1e-6);
        assert!((m.shares[0] - 0.5).abs() < 1e-3);
        assert!((m.jain_sliding_min - 1.0).abs() < 1e-3);
    }

    #[test]
    fn settling_waits_for_the_rates_to_meet_and_stay() {
        // The newcomer gets 10 % until t = 25, then half; the incumbent the rest.
        let a = flow(0.0, 60.0, |t| if t < 25.0 { 1800.0 } else { 1000.0 });
        let b = flow(5.0, 60.0, |t| if t < 25.0 { 200.0 } else { 1000.0 });
        let m = analyse(&[a, b], 60.0, &Params::default());
        let s = m.settle.unwrap();
        // Rates within 20 % once the 1-s window lies mostly after 25 s: 20 s after the start.
        assert!((20.5..=21.2).contains(&s), "{s}");
        assert!(m.jain_sliding_min < 0.7);
    }

    #[test]
    fn a_starving_flow_never_settles() {
        let a = flow(0.0, 60.0, |_| 1900.0);
        let b = flow(5.0, 60.0, |_| 100.0);
        let m = analyse(&[a, b], 60.0, &Params::default());
        assert_eq!(m.settle, None);
        assert!((m.shares[1] - 0.05).abs() < 1e-3);
        assert!(m.jain_tail < 0.6);
    }

    #[test]
    fn oscillation_shorter_than_the_hold_does_not_count() {
        // Equal except for a 2-s dip every 4 s: never 5 s in a row within 20 %.
        let a = flow(0.0, 60.0, |_| 1000.0);
        let b = flow(
            5.0,
            60.0,
            |t| if (t as u64) % 4 < 2 { 500.0 } else { 1000.0 },
        );
        assert_eq!(settling_time(&[a, b], 5.0, 60.0, &Params::default()), None);
    }
}
