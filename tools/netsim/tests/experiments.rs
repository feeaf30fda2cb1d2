//! The congestion-control experiments of issue 5, as assertions.
//!
//! The CLI runs 20 seeds per cell (`netsim --matrix`); these tests run 5 to keep the suite fast
//! in the debug profile. Every run is deterministic, so the figures in the comments are what
//! the assertions see.

use std::time::Duration;

use netsim::matrix::{algorithms, matrix, MatrixRow};
use netsim::summary::default_threads;
use netsim::{run, Cc, Queue, Scenario};
use quiche::{CongestionControlAlgorithm, HystartVariant};

const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// Reno and CUBIC, each with standard slow start, HyStart++ (CSS) and HyStart++ (LSS).
fn all_slow_start_modes() -> Vec<Cc> {
    let mut ccs = algorithms(Cc::default()).to_vec();
    for algorithm in [
        CongestionControlAlgorithm::Reno,
        CongestionControlAlgorithm::CUBIC,
    ] {
        ccs.push(Cc {
            hystart_variant: HystartVariant::Lss,
            ..Cc::new(algorithm, true)
        });
    }
    ccs
}

fn cell(rows: &[MatrixRow], loss: f64, cc: Cc) -> &MatrixRow {
    rows.iter()
        .find(|r| r.loss == loss && r.cc == cc)
        .expect("cell was run")
}

fn assert_all_completed(rows: &[MatrixRow]) {
    for row in rows {
        assert!(
            row.summary.all_completed(),
            "{} at {}% loss: {}/{} runs completed",
            row.cc,
            row.loss * 100.0,
            row.summary.completed(),
            row.summary.runs.len()
        );
    }
}

/// (a) and (b) of the issue, on the reference path without random loss; plus (c) at 0 %.
#[test]
fn lossless_download_is_near_ideal_and_hystart_cuts_slow_start_losses() {
    let base = Scenario::default();
    let ccs = all_slow_start_modes();
    // Without random loss the seed only picks the connection IDs, which changes nothing (all
    // 20 seeds of the CLI give the same figures): one seed stands for all.
    let rows = matrix(&base, &[0.0], &ccs, &SEEDS[..1], default_threads()).unwrap();
    assert_all_completed(&rows);

    // (a) Within 10 % of size / rate + handshake + 1 RTT (12.8 s + 64 ms + 60 ms): every mode
    // takes 13.51-13.52 s, 4.5 % above; the rest is packet overhead (about 4 % of each
    // 1200-byte datagram) and the first round trips of slow start.
    for row in &rows {
        let s = &row.summary;
        let handshake = Duration::from_secs_f64(s.stat(|r| r.handshake.as_secs_f64()).median);
        let ideal = base.ideal_time(handshake);
        let time = s.median_time();
        assert!(
            time.as_secs_f64() <= ideal.as_secs_f64() * 1.10,
            "{}: {time:?} against an ideal of {ideal:?}",
            row.cc
        );
    }

    // (b) HyStart++, either variant, loses at least 50 % fewer packets in the first slow start
    // (0 against 1061: standard slow start fills the 1.2 MB queue and overshoots it by as much
    // again) and finishes no more than 5 % later.
    for algorithm in [
        CongestionControlAlgorithm::Reno,
        CongestionControlAlgorithm::CUBIC,
    ] {
        let standard = &cell(&rows, 0.0, Cc::new(algorithm, false)).summary;
        let std_lost = standard.lost_in_first_slow_start().median;
        assert!(std_lost > 0.0, "{algorithm:?}: slow start must overshoot");
        for variant in [HystartVariant::Css, HystartVariant::Lss] {
            let cc = Cc {
                hystart_variant: variant,
                ..Cc::new(algorithm, true)
            };
            let hystart = &cell(&rows, 0.0, cc).summary;
            let lost = hystart.lost_in_first_slow_start().median;
            assert!(
                lost <= std_lost * 0.5,
                "{cc}: {lost} lost in the first slow start, {std_lost} without HyStart++"
            );
            assert!(
                hystart.time().median <= standard.time().median * 1.05,
                "{cc}: {:?} against {:?} without HyStart++",
                hystart.median_time(),
                standard.median_time()
            );
            let delay_exits = hystart.stat(|r| r.slow_start_delay_exits as f64).median;
            assert!(delay_exits >= 1.0, "{cc}: HyStart++ must see the RTT rise");
        }
    }

    // (c) at 0 %: all four saturate the link and finish within 0.1 % of each other, so which
    // is ahead is down to packet timing. With standard slow start CUBIC's beta of 0.7 keeps
    // more of the overshoot in flight after the reduction than Reno's 0.5 and loses more
    // before recovery ends (RFC 9438 §4.6 names this side effect): 13.52 s against 13.51 s.
    // "No worse" allows 1 % for standard slow start here; with HyStart++ (the default, which
    // ends slow start before the overshoot) and with random loss (below) it is strict, to the
    // bottleneck's resolution: both lose nothing and keep the link busy from the first second
    // on, so they finish in the same datagram's slot, and which is ahead within it is down to
    // header bytes: CUBIC keeps more packets in flight in this 32-BDP queue, so more of its
    // packet numbers take two bytes instead of one (5,616 of its data packets against Reno's
    // 5,483: 133 bytes, 0.2 ms; CUBIC 13.4468 s, Reno 13.4467 s). Later by a whole datagram's
    // serialization time (1.9 ms) fails. That tolerance of one datagram's slot is kept as it is
    // (issue 31's decision): finer is below what the bottleneck can resolve.
    let slot = (base.max_payload * 8) as f64 / base.rate_bps as f64;
    for hystart in [false, true] {
        let reno = cell(
            &rows,
            0.0,
            Cc::new(CongestionControlAlgorithm::Reno, hystart),
        );
        let cubic = cell(
            &rows,
            0.0,
            Cc::new(CongestionControlAlgorithm::CUBIC, hystart),
        );
        let (r, c) = (reno.summary.time().median, cubic.summary.time().median);
        let allowed = if hystart { r + slot } else { r * 1.01 };
        assert!(c <= allowed, "hystart={hystart}: CUBIC {c} s, Reno {r} s");
    }
}

/// Completion at every loss rate, and (c): CUBIC's median time is no worse than Reno's.
#[test]
fn every_algorithm_completes_at_every_loss_rate_and_cubic_beats_reno() {
    let base = Scenario::default();
    let losses = [0.01, 0.02, 0.05, 0.08];
    let ccs = algorithms(Cc::default());
    let rows = matrix(&base, &losses, &ccs, &SEEDS, default_threads()).unwrap();
    assert_all_completed(&rows);
    for &loss in &losses {
        for hystart in [false, true] {
            let reno = cell(
                &rows,
                loss,
                Cc::new(CongestionControlAlgorithm::Reno, hystart),
            );
            let cubic = cell(
                &rows,
                loss,
                Cc::new(CongestionControlAlgorithm::CUBIC, hystart),
            );
            let (r, c) = (reno.summary.time().median, cubic.summary.time().median);
            assert!(
                c <= r,
                "{}% loss, hystart={hystart}: CUBIC {c} s, Reno {r} s",
                loss * 100.0
            );
        }
    }
    // Random loss is what the sender sees: more of it, longer downloads.
    let cubic = Cc::new(CongestionControlAlgorithm::CUBIC, true);
    let times: Vec<f64> = losses
        .iter()
        .map(|&l| cell(&rows, l, cubic).summary.time().median)
        .collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
}

/// A shallow (one-BDP) buffer: HyStart++ still loses fewer packets in the first slow start,
/// but not half as many. The round whose window crosses the BDP starts after the queue has
/// drained, so its minimum RTT stays within the threshold of the base RTT; RFC 9406 compares
/// per-round minima, so the rise shows only in the next round, by when the window (3.1 BDP)
/// exceeds the path's capacity (2 BDP): 41 packets lost against 65.
#[test]
fn shallow_buffer_limits_what_hystart_can_save() {
    let base = Scenario {
        queue: Queue::Bdp(1.0),
        ..Scenario::default()
    };
    for algorithm in [
        CongestionControlAlgorithm::Reno,
        CongestionControlAlgorithm::CUBIC,
    ] {
        let standard = run(
            &Scenario {
                cc: Cc::new(algorithm, false),
                ..base.clone()
            },
            1,
            None,
        )
        .unwrap();
        let hystart = run(
            &Scenario {
                cc: Cc::new(algorithm, true),
                ..base.clone()
            },
            1,
            None,
        )
        .unwrap();
        assert!(standard.completed && hystart.completed);
        assert!(
            hystart.lost_in_first_slow_start < standard.lost_in_first_slow_start,
            "{algorithm:?}: {hystart:?} against {standard:?}"
        );
        assert_eq!(hystart.slow_start_delay_exits, 1);
        assert!(hystart.time.as_secs_f64() <= standard.time.as_secs_f64() * 1.05);
    }
}

/// A larger initial window saves round trips on a long fat path, and pacing keeps it from
/// bursting into losses: 2 MB over 260 Mbps and 31 ms take 7.9 round trips with 32 packets
/// against 9.7 with 10.
#[test]
fn larger_initial_window_finishes_in_fewer_round_trips() {
    let path = |iw| Scenario {
        size: 2_000_000,
        rate_bps: 260_000_000,
        delay_up: Duration::from_micros(15_500),
        delay_down: Duration::from_micros(15_500),
        cc: Cc {
            initial_window_packets: iw,
            ..Cc::default()
        },
        ..Scenario::default()
    };
    let rtt = path(10).rtt();
    let iw10 = run(&path(10), 1, None).unwrap();
    let iw32 = run(&path(32), 1, None).unwrap();
    assert!(path(32).cc.pacing);
    assert!(iw10.completed && iw32.completed);
    assert!(
        iw32.round_trips(rtt) + 1.0 <= iw10.round_trips(rtt),
        "iw 32: {:.1} round trips, iw 10: {:.1}",
        iw32.round_trips(rtt),
        iw10.round_trips(rtt)
    );
    assert_eq!(iw32.lost, iw10.lost, "no extra losses");
    assert_eq!(iw32.dropped_queue, 0);
}
