//! ECN validation per path on the pipe (RFC 9000 §13.4.2, Appendix A.4): a connection that
//! moves to another path (the client migrates, the server follows) tests ECN there afresh,
//! a bleaching path fails on its own, a clean one after it marks again, a path the connection
//! falls back to keeps its state, and acknowledgements of the old path's packets arriving after
//! the move do not decide the new path's validation.

use std::net::SocketAddr;
use std::time::Duration;

use super::{client_config, server_config};
use crate::connection::ecn::EcnState;
use crate::testing::{Direction, LinkConfig, Pipe};
use crate::Error;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A 10 Mbps link, 10 ms each way, with a queue that never drops; the peers give each other
/// spare connection IDs, so the client can migrate.
fn pipe() -> Pipe {
    let link = LinkConfig {
        delay: Duration::from_millis(10),
        rate_bps: Some(10_000_000),
        queue_bytes: None,
        ..LinkConfig::default()
    };
    let (mut c, mut s) = (client_config(), server_config());
    c.set_active_connection_id_limit(4);
    s.set_active_connection_id_limit(4);
    let mut p = Pipe::with_links(&mut c, &mut s, link.clone(), link, 11).unwrap();
    p.handshake().unwrap();
    p.client.stream_send(0, b"GET /", false).unwrap();
    p
}

/// Keeps a download going (the server writes stream 0 as fast as it may, the client reads it)
/// until `done` holds; panics with `what` after `limit` of virtual time or if a side closes.
fn stream_until(p: &mut Pipe, limit: Duration, what: &str, mut done: impl FnMut(&Pipe) -> bool) {
    let data = vec![0x5a; 16384];
    let mut buf = vec![0u8; 65536];
    let result = p.run_until(limit, |p| {
        match p.server.stream_send(0, &data, false) {
            // Done: no room; InvalidStreamState: the request did not arrive yet.
            Ok(_) | Err(Error::Done) | Err(Error::InvalidStreamState(_)) => {}
            Err(e) => panic!("stream_send: {e:?}"),
        }
        while p.client.stream_recv(0, &mut buf).is_ok() {}
        assert!(!p.client.is_closed() && !p.server.is_closed(), "closed");
        done(p)
    });
    assert!(result.is_ok(), "not {what} within {limit:?}");
}

/// Streams until the server sent at least `n` more packets; returns how many it sent and how
/// many of them it marked.
fn marked_in_next(p: &mut Pipe, n: usize) -> (usize, usize) {
    let (sent, marked) = (p.server.stats().sent, p.server.stats().ecn_ect0_sent);
    stream_until(p, Duration::from_secs(10), "more packets sent", |p| {
        p.server.stats().sent >= sent + n
    });
    (
        p.server.stats().sent - sent,
        p.server.stats().ecn_ect0_sent - marked,
    )
}

/// Asserts that the server marked every one of its next `n` packets (`all`) or none.
fn assert_marks(p: &mut Pipe, n: usize, all: bool) {
    let (sent, marked) = marked_in_next(p, n);
    let want = if all { sent } else { 0 };
    assert_eq!(marked, want, "{marked} of {sent} packets marked");
}

fn both(p: &Pipe, state: EcnState) -> bool {
    p.client.ecn_state() == state && p.server.ecn_state() == state
}

/// Where a side's qlog goes, shared with the test.
#[cfg(feature = "qlog")]
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

#[cfg(feature = "qlog")]
impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(feature = "qlog")]
impl Shared {
    /// The (old, new) pairs of the `ecn_state_updated` events written so far.
    fn ecn_states(&self) -> Vec<(String, String)> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.split('\u{1e}')
            .filter_map(|r| serde_json::from_str::<serde_json::Value>(r.trim()).ok())
            .filter(|e| e["name"] == "recovery:ecn_state_updated")
            .map(|e| {
                let s = |k: &str| e["data"][k].as_str().unwrap_or("").to_string();
                (s("old"), s("new"))
            })
            .collect()
    }
}

#[test]
fn a_move_to_a_bleaching_path_fails_ecn_there_and_a_move_to_a_clean_one_marks_again() {
    let mut p = pipe();
    #[cfg(feature = "qlog")]
    let log = {
        let log = Shared::default();
        let now = p.now;
        p.server
            .set_qlog_at(Box::new(log.clone()), "t".into(), "d".into(), now);
        log
    };
    stream_until(&mut p, Duration::from_secs(5), "capable", |p| {
        both(p, EcnState::Capable) && p.server.stats().sent > 200
    });
    assert_marks(&mut p, 200, true);

    // The client moves to a path whose network clears the ECN field both ways.
    let bleaching = addr("127.0.0.2:40000");
    p.ecn_bleached.push(bleaching);
    p.client.migrate_source(bleaching).unwrap();
    assert_eq!(
        p.client.ecn_state(),
        EcnState::Testing,
        "a new path is tested"
    );
    let marked_before = p.server.stats().ecn_ect0_sent;
    stream_until(
        &mut p,
        Duration::from_secs(10),
        "failed on the new path",
        |p| p.server.active_path().1 == bleaching && both(p, EcnState::Failed),
    );
    // The server tested the path (a few datagrams, not a transfer's worth) and stopped.
    let tested = p.server.stats().ecn_ect0_sent - marked_before;
    assert!(
        (1..=40).contains(&tested),
        "{tested} marked on the new path"
    );
    assert_marks(&mut p, 300, false);
    assert_eq!(p.server.send_ecn_codepoint(), 0);
    assert_eq!(p.client.send_ecn_codepoint(), 0);

    // Then to a clean path: tested afresh, capable, every packet marked again.
    let clean = addr("127.0.0.3:40000");
    p.client.migrate_source(clean).unwrap();
    assert_eq!(p.client.ecn_state(), EcnState::Testing);
    stream_until(
        &mut p,
        Duration::from_secs(10),
        "capable on the clean path",
        |p| p.server.active_path().1 == clean && both(p, EcnState::Capable),
    );
    assert_marks(&mut p, 300, true);
    assert_eq!(p.server.send_ecn_codepoint(), crate::connection::ecn::ECT0);

    // qlog saw each path's states through the active path's eyes: tested and capable, tested
    // again on the bleaching path and failed, tested again on the clean one and capable.
    #[cfg(feature = "qlog")]
    {
        let states = log.ecn_states();
        let pairs: Vec<(&str, &str)> = states
            .iter()
            .map(|(o, n)| (o.as_str(), n.as_str()))
            .collect();
        let first = pairs
            .iter()
            .position(|s| *s == ("capable", "testing"))
            .expect("a new test at the first move");
        let second = pairs
            .iter()
            .position(|s| *s == ("failed", "testing"))
            .expect("a new test at the second move");
        assert_eq!(pairs.last().map(|p| p.1), Some("capable"), "{pairs:?}");
        assert_eq!(pairs[first - 1].1, "capable", "{pairs:?}");
        assert_eq!(pairs[second - 1].1, "failed", "{pairs:?}");
        assert!(
            pairs[first + 1..second]
                .iter()
                .all(|(_, n)| *n != "capable"),
            "never capable on the bleaching path: {pairs:?}"
        );
        // Each event starts from where the previous one left.
        assert!(pairs.windows(2).all(|w| w[0].1 == w[1].0), "{pairs:?}");
    }
}

#[test]
fn a_clean_path_after_a_bleaching_one_becomes_capable() {
    let mut p = pipe();
    let first = p.client_addr;
    p.ecn_bleached.push(first);
    stream_until(&mut p, Duration::from_secs(5), "failed", |p| {
        both(p, EcnState::Failed) && p.server.stats().sent > 200
    });
    assert_marks(&mut p, 200, false);

    let clean = addr("127.0.0.3:40000");
    p.client.migrate_source(clean).unwrap();
    assert_eq!(p.client.ecn_state(), EcnState::Testing);
    stream_until(
        &mut p,
        Duration::from_secs(10),
        "capable on the clean path",
        |p| p.server.active_path().1 == clean && both(p, EcnState::Capable),
    );
    assert_marks(&mut p, 300, true);
    assert_eq!(p.client.send_ecn_codepoint(), crate::connection::ecn::ECT0);
}

#[test]
fn acks_of_the_old_paths_packets_after_a_move_do_not_fail_the_new_path() {
    let mut p = pipe();
    stream_until(&mut p, Duration::from_secs(5), "capable", |p| {
        both(p, EcnState::Capable) && p.server.stats().sent > 300
    });
    let cwnd = p.server.path_stats().cwnd;
    assert!(cwnd > 30_000, "many packets in flight: cwnd {cwnd}");

    // The old path starts bleaching as the client leaves it: the server's packets still on
    // their way there, and those it sends there until it hears from the client on the new
    // path, arrive unmarked, and the client acknowledges them on the new path.
    let old = p.client_addr;
    let new = addr("127.0.0.2:40000");
    p.ecn_bleached.push(old);
    p.client.migrate_source(new).unwrap();
    let mut states = Vec::new();
    let mut record = |p: &Pipe| {
        let state = p.server.ecn_state();
        if p.server.active_path().1 == new && states.last() != Some(&state) {
            states.push(state);
        }
    };
    stream_until(
        &mut p,
        Duration::from_secs(10),
        "capable on the new path",
        |p| {
            record(p);
            p.server.active_path().1 == new && both(p, EcnState::Capable)
        },
    );
    // A few more round trips, until everything sent on the old path is acknowledged or lost.
    let until = p.now + Duration::from_millis(300);
    stream_until(&mut p, Duration::from_secs(1), "300 ms more", |p| {
        record(p);
        p.now >= until
    });
    assert_eq!(
        states.first(),
        Some(&EcnState::Testing),
        "the new path was tested"
    );
    assert!(
        !states.contains(&EcnState::Failed),
        "the new path never failed: {states:?}"
    );
    // The scenario happened: frames that acknowledged the old path's marked packets after the
    // move, some with marks missing, which a validation blind to paths would have held
    // against the new path.
    let ledger = &p.server.ecn;
    assert!(
        ledger.off_path_marked_acked > 10,
        "{} old-path packets acknowledged after the move",
        ledger.off_path_marked_acked
    );
    assert!(
        ledger.off_path_missing_frames > 0,
        "no frame missed the old path's marks"
    );
    assert_marks(&mut p, 300, true);
}

#[test]
fn falling_back_to_a_validated_path_keeps_its_ecn_state() {
    let mut p = pipe();
    stream_until(&mut p, Duration::from_secs(5), "capable", |p| {
        both(p, EcnState::Capable)
    });
    // A new path that carries nothing: its validation fails and the client comes back.
    let dead = addr("127.0.0.4:40000");
    p.blackholed.push(dead);
    p.client.migrate_source(dead).unwrap();
    assert_eq!(p.client.ecn_state(), EcnState::Testing);
    let home = p.client_addr;
    stream_until(
        &mut p,
        Duration::from_secs(10),
        "back on the first path",
        |p| p.client.active_path().0 == home,
    );
    assert_eq!(
        p.client.ecn_state(),
        EcnState::Capable,
        "not tested again: the path kept its state"
    );
    assert_eq!(p.server.ecn_state(), EcnState::Capable);
    let marked = p.client.stats().ecn_ect0_sent;
    let sent = p.client.stats().sent;
    assert_marks(&mut p, 100, true);
    assert_eq!(
        p.client.stats().ecn_ect0_sent - marked,
        p.client.stats().sent - sent,
        "the client marks every packet again"
    );
}

/// CE marks the client counted on all paths so far.
fn ce_counted(p: &Pipe) -> u64 {
    p.client
        .spaces
        .iter()
        .filter_map(|s| s.acks.ecn_counts())
        .map(|c| c.ce)
        .sum()
}

#[test]
fn ce_marks_on_the_old_path_spare_the_new_paths_controller_and_those_on_the_new_path_do_not() {
    let mut p = pipe();
    stream_until(&mut p, Duration::from_secs(5), "capable", |p| {
        both(p, EcnState::Capable) && p.server.stats().sent > 300
    });
    // The AQM marks what the server sends in the 5 ms after the client moved: packets of the
    // old path, which the client acknowledges on the new one after the server followed it.
    let new = addr("127.0.0.2:40000");
    p.client.migrate_source(new).unwrap();
    p.link_config_mut(Direction::ToClient).ce_threshold = Some(0);
    let until = p.now + Duration::from_millis(5);
    stream_until(&mut p, Duration::from_secs(1), "5 ms", |p| p.now >= until);
    p.link_config_mut(Direction::ToClient).ce_threshold = None;
    assert_ne!(
        p.server.active_path().1,
        new,
        "the marked packets went out on the old path"
    );
    let marked = p.link_stats(Direction::ToClient).ce_marked;
    assert!(marked > 3, "only {marked} CE marks");
    let events = p.server.stats().ecn_ce_congestion_events;
    stream_until(
        &mut p,
        Duration::from_secs(10),
        "capable on the new path",
        |p| {
            p.server.active_path().1 == new && both(p, EcnState::Capable) && ce_counted(p) == marked
        },
    );
    let settle = p.now + Duration::from_millis(200);
    stream_until(&mut p, Duration::from_secs(1), "settled", |p| {
        p.now >= settle
    });
    assert_eq!(
        p.server.stats().ecn_ce_congestion_events,
        events,
        "CE on the old path's packets is no congestion of the new path"
    );
    assert_eq!(p.server.ecn_state(), EcnState::Capable);

    // Marks on the new path's packets, a quarter of a round trip's worth: one event.
    p.link_config_mut(Direction::ToClient).ce_threshold = Some(0);
    let until = p.now + Duration::from_millis(5);
    stream_until(&mut p, Duration::from_secs(1), "5 ms", |p| p.now >= until);
    p.link_config_mut(Direction::ToClient).ce_threshold = None;
    let marked = p.link_stats(Direction::ToClient).ce_marked;
    let cwnd = p.server.path_stats().cwnd;
    stream_until(&mut p, Duration::from_secs(5), "CE counted", |p| {
        ce_counted(p) == marked
    });
    let settle = p.now + Duration::from_millis(200);
    stream_until(&mut p, Duration::from_secs(1), "settled", |p| {
        p.now >= settle
    });
    assert_eq!(p.server.stats().ecn_ce_congestion_events, events + 1);
    assert!(p.server.path_stats().cwnd < cwnd);
    assert_eq!(p.server.ecn_state(), EcnState::Capable);
}
