//! The congestion-control comparison of issue 5: every built-in algorithm, with and without
//! HyStart++, at several random loss rates, over many seeds.

use quiche::CongestionControlAlgorithm;

use crate::scenario::{Cc, Scenario};
use crate::sim::run;
use crate::summary::{parallel_map, Summary};

/// The loss rates of the experiment: 0, 1, 2, 5 and 8 %.
pub const LOSS_RATES: [f64; 5] = [0.0, 0.01, 0.02, 0.05, 0.08];

/// Seeds per cell in the experiment.
pub const SEEDS: u64 = 20;

/// Reno, Reno with HyStart++, CUBIC, CUBIC with HyStart++, with the rest of `base`'s settings
/// (initial window, pacing, HyStart++ variant).
pub fn algorithms(base: Cc) -> [Cc; 4] {
    let with = |algorithm, hystart| Cc {
        algorithm,
        hystart,
        slow_start: quiche::SlowStartStrategy::HyStartPlusPlus,
        ..base
    };
    [
        with(CongestionControlAlgorithm::Reno, false),
        with(CongestionControlAlgorithm::Reno, true),
        with(CongestionControlAlgorithm::CUBIC, false),
        with(CongestionControlAlgorithm::CUBIC, true),
    ]
}

/// One cell of the matrix.
#[derive(Clone, Debug)]
pub struct MatrixRow {
    /// The random loss rate, in both directions.
    pub loss: f64,
    /// The congestion control.
    pub cc: Cc,
    /// The runs.
    pub summary: Summary,
}

/// Runs `base` at each loss rate (in both directions) with each congestion control, once per
/// seed, on `threads` threads. Rows come loss rate by loss rate, in the order of `ccs`.
pub fn matrix(
    base: &Scenario,
    losses: &[f64],
    ccs: &[Cc],
    seeds: &[u64],
    threads: usize,
) -> Result<Vec<MatrixRow>, String> {
    let cells: Vec<(f64, Cc)> = losses
        .iter()
        .flat_map(|&loss| ccs.iter().map(move |&cc| (loss, cc)))
        .collect();
    let jobs: Vec<(Scenario, u64)> = cells
        .iter()
        .flat_map(|&(loss, cc)| {
            let scenario = Scenario {
                loss_up: loss,
                loss_down: loss,
                cc,
                ..base.clone()
            };
            seeds.iter().map(move |&seed| (scenario.clone(), seed))
        })
        .collect();
    let mut results = parallel_map(&jobs, threads, |(s, seed)| run(s, *seed, None)).into_iter();
    let mut rows = Vec::with_capacity(cells.len());
    for (loss, cc) in cells {
        let runs = results
            .by_ref()
            .take(seeds.len())
            .collect::<Result<Vec<_>, String>>()?;
        rows.push(MatrixRow {
            loss,
            cc,
            summary: Summary::new(runs),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_algorithms_keep_the_base_settings() {
        let base = Cc {
            initial_window_packets: 32,
            pacing: false,
            ..Cc::default()
        };
        let names: Vec<String> = algorithms(base).iter().map(|c| c.to_string()).collect();
        assert_eq!(names, ["reno", "reno+hystart", "cubic", "cubic+hystart"]);
        assert!(algorithms(base)
            .iter()
            .all(|c| c.initial_window_packets == 32 && !c.pacing));
    }
}
