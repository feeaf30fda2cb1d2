//! ECN on the simulated path (issue 15): an AQM that marks CE above a queue threshold instead
//! of letting the drop-tail queue overflow. With it, the sender reacts to the marks (one
//! window reduction per round trip, RFC 9002 §7.1) and loses nothing in congestion avoidance
//! where the same transfer without ECN loses packets to the full queue, and it is no slower.

use netsim::{run, Queue, RunResult, Scenario};

/// The reference path (8 MB over 5 Mbit/s, 60 ms) with a four-BDP drop-tail queue; with `ecn`
/// the endpoints use ECN and the bottleneck marks CE above one BDP of queue.
fn scenario(ecn: bool) -> Scenario {
    let mut s = Scenario {
        queue: Queue::Bdp(4.0),
        ..Scenario::default()
    };
    if ecn {
        s.ecn = true;
        s.ce_threshold = Queue::Bdp(1.0).bytes(s.rate_bps, s.rtt());
    }
    s
}

/// Losses after the first slow start: in congestion avoidance and the recoveries in it.
fn lost_after_slow_start(r: &RunResult) -> u64 {
    r.lost - r.lost_in_first_slow_start
}

#[test]
fn ce_marking_removes_congestion_avoidance_losses_without_slowing_the_transfer() {
    let plain = run(&scenario(false), 1, None).unwrap();
    let ecn = run(&scenario(true), 1, None).unwrap();
    assert!(plain.completed && ecn.completed);
    // Without ECN nothing is marked and the queue overflows after slow start too.
    assert_eq!(plain.ecn_ect0_sent, 0);
    assert_eq!(plain.ce_marked, 0);
    assert!(
        lost_after_slow_start(&plain) > 0,
        "without ECN the 4-BDP queue overflows in congestion avoidance: {plain:?}"
    );
    // With ECN the marks, not losses, pace the sender.
    assert!(
        ecn.ce_marked > 0 && ecn.ecn_ce_congestion_events > 0,
        "{ecn:?}"
    );
    assert!(ecn.ecn_ce_congestion_events <= ecn.ce_marked);
    assert_eq!(lost_after_slow_start(&ecn), 0, "{ecn:?}");
    // Measured (README, "ECN"): nothing lost at all, against 53 (13 after slow start).
    assert!(
        ecn.lost < plain.lost,
        "lost: ECN {}, plain {}",
        ecn.lost,
        plain.lost
    );
    assert!(
        ecn.time.as_secs_f64() <= plain.time.as_secs_f64() * 1.01,
        "ECN {:?}, plain {:?}",
        ecn.time,
        plain.time
    );
}
