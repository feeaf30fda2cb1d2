//! The simulator's own behaviour: transfers in both directions, determinism, the link model's
//! effects, flow control, tracing.

use std::path::Path;
use std::time::Duration;

use netsim::sim::{run_traced, Trace};
use netsim::{run, run_seeds, Queue, Scenario, Summary, Windows};

fn small() -> Scenario {
    Scenario {
        size: 300_000,
        time_limit: Duration::from_secs(120),
        ..Scenario::default()
    }
}

#[test]
fn downloads_and_uploads_deliver_every_byte() {
    for upload in [false, true] {
        let s = Scenario { upload, ..small() };
        let r = run(&s, 1, None).unwrap();
        assert!(r.completed, "upload={upload}: {r:?}");
        assert_eq!(r.received, s.size);
        assert!(r.sent as f64 >= s.size as f64 / 1200.0, "{r:?}");
        assert!(r.handshake >= s.rtt() && r.handshake < r.time);
        // The transfer cannot beat the bottleneck.
        assert!(r.goodput_bps() < s.rate_bps as f64, "{r:?}");
    }
}

#[test]
fn runs_are_deterministic_and_seeds_matter_under_loss() {
    let s = Scenario {
        loss_up: 0.03,
        loss_down: 0.03,
        reorder: 0.02,
        ..small()
    };
    let a = run(&s, 7, None).unwrap();
    let b = run(&s, 7, None).unwrap();
    assert_eq!(a, b);
    assert!(a.completed && a.lost > 0 && a.dropped_random > 0, "{a:?}");
    assert!(a.retrans_bytes > 0, "{a:?}");
    let runs = run_seeds(&s, &[1, 2, 3, 4], 2, None).unwrap();
    assert_eq!(
        runs.iter().map(|r| r.seed).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert!(runs.windows(2).any(|w| w[0].time != w[1].time));
    // Threads do not change results.
    assert_eq!(runs, run_seeds(&s, &[1, 2, 3, 4], 1, None).unwrap());
    let sum = Summary::new(runs);
    assert!(sum.all_completed());
    let t = sum.time();
    assert!(t.min <= t.median && t.median <= t.max);
}

#[test]
fn a_tiny_queue_drops_and_a_huge_one_does_not() {
    let tiny = run(
        &Scenario {
            queue: Queue::Bytes(3_000),
            ..small()
        },
        1,
        None,
    )
    .unwrap();
    assert!(tiny.completed && tiny.dropped_queue > 0, "{tiny:?}");
    assert!(tiny.slow_start_loss_exits >= 1);
    let huge = run(
        &Scenario {
            queue: Queue::Unlimited,
            ..small()
        },
        1,
        None,
    )
    .unwrap();
    assert!(huge.completed, "{huge:?}");
    assert_eq!((huge.dropped_queue, huge.lost), (0, 0), "{huge:?}");
}

#[test]
fn small_flow_control_windows_throttle_the_transfer() {
    let open = run(&small(), 1, None).unwrap();
    let tight = Scenario {
        windows: Windows {
            max_data: 20_000,
            max_stream_data: 10_000,
            max_window: Some(20_000),
            max_stream_window: Some(10_000),
        },
        ..small()
    };
    let throttled = run(&tight, 1, None).unwrap();
    assert!(throttled.completed);
    // A 10 kB window over a 60 ms RTT allows about 1.3 Mbps, a quarter of the link.
    assert!(
        throttled.time > open.time * 2,
        "{:?} against {:?}",
        throttled.time,
        open.time
    );
}

#[test]
fn slow_start_exits_are_reported() {
    let r = run(&small(), 1, None).unwrap();
    // 300 kB over a 1.2 MB queue: HyStart++ sees the RTT rise, nothing is lost.
    assert_eq!(r.slow_start_delay_exits, 1, "{r:?}");
    assert_eq!((r.lost, r.lost_in_first_slow_start), (0, 0), "{r:?}");
    let exit = r.first_slow_start_exit.expect("slow start ended");
    assert!(exit < r.time && r.first_slow_start_exit_cwnd.is_some());
}

#[test]
fn trace_prints_the_sender_state() {
    let mut out = Vec::new();
    let r = run_traced(
        &small(),
        1,
        None,
        Trace {
            interval: Duration::from_millis(20),
            out: &mut out,
        },
    )
    .unwrap();
    assert_eq!(
        r,
        run(&small(), 1, None).unwrap(),
        "tracing changes nothing"
    );
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("     t ms state"), "{text}");
    assert!(text.contains(" slow_start "), "{text}");
    assert!(text.contains(" conservative_slow_start "), "{text}");
    assert!(text.lines().count() > 10);
}

#[test]
fn qlog_files_are_written_per_endpoint() {
    let dir = std::env::temp_dir().join(format!("netsim-qlog-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let s = Scenario {
        size: 50_000,
        ..small()
    };
    let with = run(&s, 3, Some(&dir)).unwrap();
    assert_eq!(with, run(&s, 3, None).unwrap(), "qlog changes nothing");
    for side in ["client", "server"] {
        let path = dir.join(format!("netsim-cubic+hystart-seed3-{side}.sqlog"));
        let text = std::fs::read_to_string(&path).unwrap();
        // JSON-SEQ: records separated by the RS character, a header first.
        assert!(text.starts_with('\u{1e}'), "{side}");
        assert!(text.contains("\"qlog_version\""), "{side}");
        assert!(text.contains("recovery:metrics_updated"), "{side}");
        assert!(text.contains("transport:packet_sent"), "{side}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let err = run(&s, 3, Some(Path::new("/nonexistent/netsim"))).unwrap_err();
    assert!(err.contains("/nonexistent/netsim"), "{err}");
}
