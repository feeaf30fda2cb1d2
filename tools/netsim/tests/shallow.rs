//! Slow start over shallow buffers (issue 16): the default slow-start strategy against standard
//! slow start, on the reference path with a one-BDP queue and over the shallow-buffer matrix
//! (`netsim --matrix shallow`).
//!
//! The full matrix (216 runs) takes about a minute in release mode and far longer in debug: by
//! default the test runs the 5 Mbit/s rows (72 runs); `NETSIM_FULL_MATRIX=1` runs all of it
//! (`NETSIM_FULL_MATRIX=1 cargo test --release -p netsim --test shallow`).

use netsim::shallow::{cells, matrix, Cell};
use netsim::summary::default_threads;
use netsim::{run, Cc, Queue, RunResult, Scenario};
use quiche::{CongestionControlAlgorithm, SlowStartStrategy};
use std::time::Duration;

/// Issue 16's target: the default loses at most half of standard slow start's packets in the
/// first slow start, for a download at most 1 % longer.
fn assert_halves_first_slow_start_losses_within_1_percent(
    default: &RunResult,
    standard: &RunResult,
) {
    assert!(
        default.lost_in_first_slow_start * 2 <= standard.lost_in_first_slow_start,
        "default {} lost in the first slow start, standard {}",
        default.lost_in_first_slow_start,
        standard.lost_in_first_slow_start
    );
    assert!(
        default.time.as_secs_f64() <= standard.time.as_secs_f64() * 1.01,
        "default {:?}, standard {:?}",
        default.time,
        standard.time
    );
}

fn seed_path(strategy: SlowStartStrategy) -> Scenario {
    Scenario {
        queue: Queue::Bdp(1.0),
        cc: Cc::with_slow_start(CongestionControlAlgorithm::CUBIC, strategy),
        ..Scenario::default()
    }
}

/// On the reference path (5 Mbit/s, 60 ms, 8 MB) with a one-BDP queue, the default strategy
/// loses at least 50 % fewer packets in the first slow start than standard slow start, for a
/// download no more than 1 % longer (issue 16). Measured (README, "Slow-start strategies over
/// shallow buffers"): standard 65 packets lost in the first slow start, 13.493 s; HyStart++
/// with the tuned constants 25 (RFC 9406's recommended ones: 41), 13.493 s; SEARCH 48,
/// 13.505 s.
#[test]
fn default_strategy_cuts_first_slow_start_losses_at_one_bdp() {
    let default = run(&seed_path(SlowStartStrategy::default()), 1, None).unwrap();
    let standard = run(&seed_path(SlowStartStrategy::Standard), 1, None).unwrap();
    assert!(default.completed && standard.completed);
    assert!(
        standard.lost_in_first_slow_start > 0,
        "a one-BDP queue overflows in standard slow start"
    );
    assert_halves_first_slow_start_losses_within_1_percent(&default, &standard);
    // The queue drops fewer packets over the whole run, too (40 against 98).
    assert!(
        default.dropped_queue < standard.dropped_queue,
        "queue drops: default {}, standard {}",
        default.dropped_queue,
        standard.dropped_queue
    );
}

/// The same with the datagrams real sockets carry: path MTU discovery up to a 1452-byte UDP
/// payload over a 1500-byte MTU, as the apps do through tools/cclab's emulated bottleneck. The
/// window's doublings then fall elsewhere relative to the BDP (13, 22, 44, 87 kB instead of 12,
/// 24, 48, 96 kB), and the round after the one that crosses it shows a rise of only 5-6 ms:
/// with RFC 9406's recommended divisor (an eighth of the RTT, 8.1 ms here) HyStart++ never left
/// slow start and lost as many packets as standard slow start (53 in the first slow start,
/// 82 in all, as on real sockets), with a sixteenth it leaves at 94 kB and loses 17 (23).
#[test]
fn default_strategy_cuts_first_slow_start_losses_with_pmtud_datagrams() {
    let path = |strategy| Scenario {
        mtu: Some(1500),
        max_payload: 1452,
        ..seed_path(strategy)
    };
    let default = run(&path(SlowStartStrategy::default()), 1, None).unwrap();
    let standard = run(&path(SlowStartStrategy::Standard), 1, None).unwrap();
    assert!(default.completed && standard.completed);
    assert!(
        default.slow_start_delay_exits >= 1,
        "HyStart++ left slow start by delay"
    );
    assert_halves_first_slow_start_losses_within_1_percent(&default, &standard);
    assert!(
        default.dropped_queue * 2 <= standard.dropped_queue,
        "queue drops: default {}, standard {}",
        default.dropped_queue,
        standard.dropped_queue
    );
}

/// The one cell of the matrix accepted over 2 % (issue 31's decision): 100 Mbit/s, 20 ms,
/// 0.5 BDP, Reno, +2.04 % (0.901 s against 0.883 s). Not a slow-start cost: HyStart++ leaves
/// slow start 3 ms before the first loss is detected, so the window at that loss is lower, and
/// Reno's second halving leaves it at 188.5 kB instead of 195.6 kB, below the path's 250 kB
/// BDP; the rest of the 0.9-s transfer (44 RTTs) then runs about 4 % below the link rate, a
/// one-RTT effect that the tunings tried moved between +1.0 and +2.3 % (netsim README, "Slow-
/// start strategies over shallow buffers"). Its bound is 2.5 %: the exception is this cell's
/// mechanism, not a licence for the cell to get worse.
const ACCEPTED_EXCEPTION: (u64, u64, f64, CongestionControlAlgorithm, f64) = (
    100_000_000,
    20,
    0.5,
    CongestionControlAlgorithm::Reno,
    1.025,
);

/// The time the default strategy may take in `cell`, as a multiple of standard slow start's:
/// 2 % everywhere but in [`ACCEPTED_EXCEPTION`].
fn allowed_ratio(cell: &Cell) -> f64 {
    let (rate, rtt_ms, queue, algorithm, ratio) = ACCEPTED_EXCEPTION;
    let exception = cell.rate_bps == rate
        && cell.rtt == Duration::from_millis(rtt_ms)
        && cell.queue_bdp == queue
        && cell.algorithm == algorithm;
    if exception {
        ratio
    } else {
        1.02
    }
}

#[test]
fn the_accepted_exception_is_a_cell_of_the_matrix() {
    let matched: Vec<Cell> = cells()
        .into_iter()
        .filter(|c| allowed_ratio(c) != 1.02)
        .collect();
    assert_eq!(matched.len(), 1, "{matched:?}");
}

/// In every cell of the matrix the default strategy's download is no more than 2 % longer than
/// standard slow start's (one cell excepted, see [`ACCEPTED_EXCEPTION`]), and every transfer
/// completes.
#[test]
fn default_strategy_costs_at_most_two_percent_in_every_cell() {
    let full = std::env::var_os("NETSIM_FULL_MATRIX").is_some();
    let chosen: Vec<Cell> = cells()
        .into_iter()
        .filter(|c| full || c.rate_bps == 5_000_000)
        .collect();
    let rows = matrix(&Scenario::default(), &chosen, 1, default_threads()).unwrap();
    for row in &rows {
        let c = &row.cell;
        let standard = row.run(SlowStartStrategy::Standard);
        for r in &row.runs {
            assert!(r.completed, "{c:?}: not completed");
        }
        let default = row.run(SlowStartStrategy::default());
        assert!(
            default.time.as_secs_f64() <= standard.time.as_secs_f64() * allowed_ratio(c),
            "{c:?}: default {:?}, standard {:?}",
            default.time,
            standard.time
        );
    }
}

/// Fewer RTT samples per round make HyStart++ likelier to leave slow start on jitter alone; on
/// a 32-BDP path, where the queue never overflows in slow start, such an exit must not cost
/// time: Conservative Slow Start resumes slow start when the RTT falls back (RFC 9406 §4.2).
/// With up to 10 ms of extra delay per datagram and direction (a sixth of the RTT; the delay
/// threshold is 7.5 ms), the default's download is no more than 2 % longer than standard slow
/// start's, seed by seed (the seed draws the jitter), with Reno and CUBIC, on a path where
/// slow start matters (20 Mbit/s, 60 ms: 8 MB is 53 BDPs) and on the reference path; and it
/// still ends slow start without a loss.
#[test]
fn jitter_does_not_end_slow_start_early_on_a_deep_queue() {
    let seeds = if std::env::var_os("NETSIM_FULL_MATRIX").is_some() {
        1..=10
    } else {
        1..=3
    };
    for rate_bps in [20_000_000, 5_000_000] {
        for algorithm in [
            CongestionControlAlgorithm::Reno,
            CongestionControlAlgorithm::CUBIC,
        ] {
            for seed in seeds.clone() {
                let path = |strategy| Scenario {
                    rate_bps,
                    queue: Queue::Bdp(32.0),
                    jitter: Duration::from_millis(10),
                    cc: Cc::with_slow_start(algorithm, strategy),
                    ..Scenario::default()
                };
                let default = run(&path(SlowStartStrategy::default()), seed, None).unwrap();
                let standard = run(&path(SlowStartStrategy::Standard), seed, None).unwrap();
                let what = format!("{rate_bps} bit/s, {algorithm:?}, seed {seed}");
                assert!(default.completed && standard.completed, "{what}");
                assert!(
                    default.time.as_secs_f64() <= standard.time.as_secs_f64() * 1.02,
                    "{what}: default {:?}, standard {:?}",
                    default.time,
                    standard.time
                );
                assert_eq!(default.lost_in_first_slow_start, 0, "{what}");
                assert!(default.slow_start_delay_exits >= 1, "{what}");
            }
        }
    }
}

/// A SEARCH exit shows in the sender's qlog as the move from `slow_start` to `search_drain`,
/// and ends standard slow start by "delay" (not by a loss) in the controller's counters.
#[test]
fn search_exit_is_visible_in_qlog() {
    let dir = std::env::temp_dir().join(format!("netsim-search-qlog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let s = Scenario {
        size: 1_000_000,
        ..seed_path(SlowStartStrategy::Search)
    };
    let r = run(&s, 1, Some(&dir)).unwrap();
    assert!(r.completed);
    assert_eq!(r.slow_start_delay_exits, 1);
    let text = std::fs::read_to_string(dir.join("netsim-cubic+search-seed1-server.sqlog")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        text.contains(r#""old":"slow_start","new":"search_drain""#),
        "no SEARCH exit in the server's qlog"
    );
}
