//! The shallow-buffer matrix (`netsim --matrix shallow`): every slow-start strategy with Reno
//! and CUBIC over drop-tail queues of 0.5 to 32 BDPs, at several rates and RTTs, without random
//! loss. What it shows is how much each strategy's slow start overshoots when the queue is too
//! short for a delay signal to arrive before it overflows.

use std::fmt::Write;
use std::time::Duration;

use quiche::{CongestionControlAlgorithm, SlowStartStrategy};

use crate::scenario::{Cc, Scenario};
use crate::sim::{run, RunResult};
use crate::summary::parallel_map;
use crate::units::Queue;

/// Queue sizes, in BDPs of each path.
pub const QUEUES_BDP: [f64; 4] = [0.5, 1.0, 2.0, 32.0];

/// Bottleneck rates, in bits per second.
pub const RATES_BPS: [u64; 3] = [5_000_000, 20_000_000, 100_000_000];

/// Base round-trip times, in milliseconds.
pub const RTTS_MS: [u64; 3] = [20, 60, 200];

/// The strategies compared, in the table's column order.
pub const STRATEGIES: [SlowStartStrategy; 3] = [
    SlowStartStrategy::Standard,
    SlowStartStrategy::HyStartPlusPlus,
    SlowStartStrategy::Search,
];

/// The algorithms compared.
pub const ALGORITHMS: [CongestionControlAlgorithm; 2] = [
    CongestionControlAlgorithm::Reno,
    CongestionControlAlgorithm::CUBIC,
];

/// One path and algorithm of the matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    /// Bottleneck rate in bits per second.
    pub rate_bps: u64,
    /// Base RTT.
    pub rtt: Duration,
    /// Queue in BDPs.
    pub queue_bdp: f64,
    /// The window-growth algorithm.
    pub algorithm: CongestionControlAlgorithm,
}

impl Cell {
    /// `base` on this cell's path with `strategy`, no random loss.
    pub fn scenario(&self, base: &Scenario, strategy: SlowStartStrategy) -> Scenario {
        Scenario {
            rate_bps: self.rate_bps,
            delay_up: self.rtt / 2,
            delay_down: self.rtt - self.rtt / 2,
            queue: Queue::Bdp(self.queue_bdp),
            loss_up: 0.0,
            loss_down: 0.0,
            cc: Cc {
                algorithm: self.algorithm,
                hystart: strategy != SlowStartStrategy::Standard,
                slow_start: strategy,
                ..base.cc
            },
            ..base.clone()
        }
    }
}

/// Every cell: rates x RTTs x queues x algorithms, in that nesting order.
pub fn cells() -> Vec<Cell> {
    let mut out = Vec::new();
    for rate_bps in RATES_BPS {
        for rtt in RTTS_MS {
            for queue_bdp in QUEUES_BDP {
                for algorithm in ALGORITHMS {
                    out.push(Cell {
                        rate_bps,
                        rtt: Duration::from_millis(rtt),
                        queue_bdp,
                        algorithm,
                    });
                }
            }
        }
    }
    out
}

/// One cell's runs, one per strategy of [`STRATEGIES`].
#[derive(Clone, Debug)]
pub struct Row {
    /// The cell.
    pub cell: Cell,
    /// The run of each strategy, in [`STRATEGIES`]' order.
    pub runs: Vec<RunResult>,
}

impl Row {
    /// The run with `strategy`.
    pub fn run(&self, strategy: SlowStartStrategy) -> &RunResult {
        let i = STRATEGIES
            .iter()
            .position(|&s| s == strategy)
            .unwrap_or_default();
        &self.runs[i]
    }
}

/// Runs every strategy on every cell (one seed: without random loss the seed only picks
/// connection IDs), `threads` runs at a time.
pub fn matrix(
    base: &Scenario,
    cells: &[Cell],
    seed: u64,
    threads: usize,
) -> Result<Vec<Row>, String> {
    let jobs: Vec<Scenario> = cells
        .iter()
        .flat_map(|c| STRATEGIES.iter().map(move |&s| c.scenario(base, s)))
        .collect();
    let mut results = parallel_map(&jobs, threads, |s| run(s, seed, None)).into_iter();
    let mut rows = Vec::with_capacity(cells.len());
    for &cell in cells {
        let runs = results
            .by_ref()
            .take(STRATEGIES.len())
            .collect::<Result<Vec<_>, String>>()?;
        rows.push(Row { cell, runs });
    }
    Ok(rows)
}

/// The table: per cell, each strategy's completion time, packets lost in the first slow start
/// and time the queue stayed full during it (`*` marks a transfer that did not complete).
pub fn report(rows: &[Row]) -> String {
    let mut out = String::new();
    let names: Vec<&str> = STRATEGIES.iter().map(|s| s.as_str()).collect();
    let _ = writeln!(
        out,
        "{:>5} {:>4} {:>5} {:<5} | {:^26} | {:^20} | {:^20}",
        "rate", "rtt", "queue", "cc", "time s", "lost in 1st SS", "queue full ms (1st SS)"
    );
    let _ = writeln!(
        out,
        "{:>5} {:>4} {:>5} {:<5} | {:>8}{:>9}{:>9} | {:>6}{:>7}{:>7} | {:>6}{:>7}{:>7}",
        "Mbps",
        "ms",
        "BDP",
        "",
        names[0],
        names[1],
        names[2],
        "std",
        "hy++",
        "search",
        "std",
        "hy++",
        "search"
    );
    for row in rows {
        let c = &row.cell;
        let algorithm = match c.algorithm {
            CongestionControlAlgorithm::Reno => "reno",
            CongestionControlAlgorithm::CUBIC => "cubic",
            CongestionControlAlgorithm::Bbr => "bbr",
        };
        let _ = write!(
            out,
            "{:>5} {:>4} {:>5} {:<5} |",
            c.rate_bps / 1_000_000,
            c.rtt.as_millis(),
            c.queue_bdp,
            algorithm
        );
        for (i, r) in row.runs.iter().enumerate() {
            let mark = if r.completed { ' ' } else { '*' };
            let width = if i == 0 { 7 } else { 8 };
            let _ = write!(out, "{:>width$.3}{mark}", r.time.as_secs_f64());
        }
        let _ = write!(out, " |");
        for (i, r) in row.runs.iter().enumerate() {
            let width = if i == 0 { 6 } else { 7 };
            let _ = write!(out, "{:>width$}", r.lost_in_first_slow_start);
        }
        let _ = write!(out, " |");
        for (i, r) in row.runs.iter().enumerate() {
            let width = if i == 0 { 6 } else { 7 };
            let ms = r.queue_full_first_slow_start.as_secs_f64() * 1e3;
            let _ = write!(out, "{:>width$.0}", ms);
        }
        let _ = writeln!(out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cover_the_matrix() {
        let all = cells();
        assert_eq!(all.len(), 3 * 3 * 4 * 2);
        let base = Scenario::default();
        let s = all[0].scenario(&base, SlowStartStrategy::Search);
        assert_eq!(s.rate_bps, 5_000_000);
        assert_eq!(s.rtt(), Duration::from_millis(20));
        assert_eq!(s.queue, Queue::Bdp(0.5));
        assert_eq!(s.cc.strategy(), SlowStartStrategy::Search);
        let s = all[0].scenario(&base, SlowStartStrategy::Standard);
        assert_eq!(s.cc.strategy(), SlowStartStrategy::Standard);
        assert_eq!(s.size, base.size);
    }
}
