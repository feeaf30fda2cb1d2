//! Several runs of a scenario with different seeds, played in parallel, and their min/median/max.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::scenario::Scenario;
use crate::sim::{run, RunResult};

/// Applies `f` to every job on up to `threads` threads (each run is independent and
/// deterministic, so the results do not depend on the thread count). Results keep the jobs'
/// order.
pub fn parallel_map<T: Sync, R: Send>(
    jobs: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else {
                    break;
                };
                let r = f(job);
                if let Ok(mut results) = results.lock() {
                    results[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect()
}

/// The number of threads to use by default: the machine's parallelism.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `scenario` once per seed in `seeds`, on `threads` threads.
pub fn run_seeds(
    scenario: &Scenario,
    seeds: &[u64],
    threads: usize,
    qlog_dir: Option<&Path>,
) -> Result<Vec<RunResult>, String> {
    parallel_map(seeds, threads, |&seed| run(scenario, seed, qlog_dir))
        .into_iter()
        .collect()
}

/// The minimum, median and maximum of one figure over several runs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stat {
    /// The smallest value.
    pub min: f64,
    /// The median (the mean of the two middle values for an even count).
    pub median: f64,
    /// The largest value.
    pub max: f64,
}

impl Stat {
    /// The statistics of `values` (all zero when empty).
    pub fn of(mut values: Vec<f64>) -> Stat {
        if values.is_empty() {
            return Stat::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        Stat {
            min: values[0],
            median,
            max: values[n - 1],
        }
    }
}

/// Runs of one scenario, summarised.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The runs, in seed order.
    pub runs: Vec<RunResult>,
}

impl Summary {
    /// Summarises `runs`.
    pub fn new(runs: Vec<RunResult>) -> Summary {
        Summary { runs }
    }

    /// The statistics of the figure `f` over the runs.
    pub fn stat(&self, f: impl Fn(&RunResult) -> f64) -> Stat {
        Stat::of(self.runs.iter().map(f).collect())
    }

    /// Completion time in seconds.
    pub fn time(&self) -> Stat {
        self.stat(|r| r.time.as_secs_f64())
    }

    /// The median completion time.
    pub fn median_time(&self) -> Duration {
        Duration::from_secs_f64(self.time().median)
    }

    /// Goodput in Mbps.
    pub fn goodput_mbps(&self) -> Stat {
        self.stat(|r| r.goodput_bps() / 1e6)
    }

    /// Packets declared lost.
    pub fn lost(&self) -> Stat {
        self.stat(|r| r.lost as f64)
    }

    /// Packets lost during the first slow start.
    pub fn lost_in_first_slow_start(&self) -> Stat {
        self.stat(|r| r.lost_in_first_slow_start as f64)
    }

    /// How many runs completed.
    pub fn completed(&self) -> usize {
        self.runs.iter().filter(|r| r.completed).count()
    }

    /// Whether every run completed.
    pub fn all_completed(&self) -> bool {
        self.completed() == self.runs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_of_odd_and_even_counts() {
        let s = Stat::of(vec![5.0, 1.0, 3.0]);
        assert_eq!((s.min, s.median, s.max), (1.0, 3.0, 5.0));
        let s = Stat::of(vec![4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.min, s.median, s.max), (1.0, 2.5, 4.0));
        assert_eq!(Stat::of(Vec::new()), Stat::default());
    }

    #[test]
    fn parallel_map_keeps_the_order() {
        let jobs: Vec<u64> = (0..100).collect();
        for threads in [1, 3, 8] {
            let out = parallel_map(&jobs, threads, |&j| j * j);
            assert_eq!(out, jobs.iter().map(|j| j * j).collect::<Vec<_>>());
        }
        assert!(parallel_map(&[] as &[u64], 4, |&j| j).is_empty());
    }
}
