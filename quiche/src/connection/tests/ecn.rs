//! ECN on the pipe (RFC 9000 §13.4, RFC 9002 §7.1): validation outcomes, the counts in ACK
//! frames, and CE marks as congestion events, one per round trip.

use std::time::Duration;

use super::{client_config, server_config};
use crate::connection::ecn::EcnState;
use crate::testing::{Direction, LinkConfig, Pipe};
use crate::Error;

/// A 10 Mbps link, 10 ms each way, with a queue that never drops, changed by `f`.
fn pipe(f: impl Fn(&mut LinkConfig)) -> Pipe {
    let mut link = LinkConfig {
        delay: Duration::from_millis(10),
        rate_bps: Some(10_000_000),
        queue_bytes: None,
        ..LinkConfig::default()
    };
    f(&mut link);
    Pipe::with_links(
        &mut client_config(),
        &mut server_config(),
        link.clone(),
        link,
        7,
    )
    .unwrap()
}

/// Steps until the client has read `len` bytes of stream 0 that the server keeps writing, or
/// `limit` of virtual time passed; returns the bytes read.
fn download(pipe: &mut Pipe, sent: &mut usize, len: usize, limit: Duration) -> usize {
    let data = vec![0x5a; 65536];
    let mut buf = vec![0u8; 65536];
    let mut got = 0;
    let deadline = pipe.now + limit;
    let _ = pipe.run_until(limit + Duration::from_secs(1), |p| {
        if *sent < len {
            let n = (len - *sent).min(data.len());
            match p.server.stream_send(0, &data[..n], *sent + n == len) {
                Ok(k) => *sent += k,
                // Done: no room; InvalidStreamState: the request did not arrive yet.
                Err(Error::Done) | Err(Error::InvalidStreamState(_)) => {}
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        while let Ok((n, _)) = p.client.stream_recv(0, &mut buf) {
            got += n;
        }
        got >= len || p.now >= deadline
    });
    got
}

/// The client asks for the download (opening stream 0) and the handshake completes.
fn start(pipe: &mut Pipe) {
    pipe.handshake().unwrap();
    pipe.client.stream_send(0, b"GET /", false).unwrap();
}

#[test]
fn a_clean_path_becomes_capable_and_acks_count_every_marked_packet() {
    let mut p = pipe(|_| {});
    start(&mut p);
    let mut sent = 0;
    assert_eq!(
        download(&mut p, &mut sent, 500_000, Duration::from_secs(10)),
        500_000
    );
    // Let the last datagrams arrive and be acknowledged.
    let _ = p.run_until(Duration::from_millis(200), |_| false);
    for conn in [&p.client, &p.server] {
        assert_eq!(
            conn.ecn_state(),
            EcnState::Capable,
            "server {}",
            conn.is_server
        );
        assert_eq!(conn.send_ecn_codepoint(), crate::connection::ecn::ECT0);
    }
    // The server marked its packets (all but those sent between the end of the test and
    // validation); the client counted each 1-RTT one and reported them.
    let server_sent = p.server.stats().ecn_ect0_sent;
    assert!(
        server_sent + 10 > p.server.stats().sent,
        "{server_sent} marked"
    );
    let app = crate::packet::Epoch::Application;
    let counted = p.client.spaces[app.index()].acks.ecn_counts().unwrap().ect0;
    assert_eq!(counted, p.server.ecn.sent_ect0(app));
    let reported = p.server.ecn.peer_ect0(app);
    assert!(
        reported > 0 && reported <= counted,
        "{reported} of {counted}"
    );
    assert_eq!(p.server.stats().ecn_ce_congestion_events, 0);
}

#[test]
fn a_bleaching_path_fails_validation_and_marking_stops() {
    let mut p = pipe(|l| l.ecn_bleach = true);
    start(&mut p);
    let mut sent = 0;
    assert_eq!(
        download(&mut p, &mut sent, 500_000, Duration::from_secs(10)),
        500_000
    );
    for conn in [&p.client, &p.server] {
        assert_eq!(
            conn.ecn_state(),
            EcnState::Failed,
            "server {}",
            conn.is_server
        );
        assert_eq!(conn.send_ecn_codepoint(), 0);
        // Only the test's packets went out marked, not the transfer's hundreds.
        let marked = conn.stats().ecn_ect0_sent;
        assert!((1..=12).contains(&marked), "marked {marked}");
        assert!(conn.spaces.iter().all(|s| s.acks.ecn_counts().is_none()));
    }
    assert!(p.server.stats().sent > 300);
}

#[test]
fn ecn_off_sends_nothing_marked() {
    let mut c = client_config();
    c.enable_ecn(false);
    let mut s = server_config();
    s.enable_ecn(false);
    let mut p = Pipe::new(&mut c, &mut s).unwrap();
    p.handshake().unwrap();
    assert_eq!(p.client.ecn_state(), EcnState::Failed);
    assert_eq!(p.client.stats().ecn_ect0_sent, 0);
    assert_eq!(p.server.stats().ecn_ect0_sent, 0);
    assert_eq!(p.link_stats(Direction::ToClient).ecn_capable, 0);
}

#[test]
fn ce_marks_cut_the_window_once_per_round_trip_without_loss_or_retransmission() {
    let mut p = pipe(|_| {});
    start(&mut p);
    let mut sent = 0;
    let total = 20_000_000;
    // Past slow start and the ECN test: the window is well above the 25 kB BDP.
    download(&mut p, &mut sent, total, Duration::from_secs(1));
    assert_eq!(p.server.ecn_state(), EcnState::Capable);
    let events_before = p.server.recovery.stats().congestion_events;
    let cwnd_before = p.server.recovery.cwnd();
    let retrans_before = p.server.stats().retrans;

    // The AQM marks every datagram that finds a queue, for a quarter of a round trip: many
    // marks, all on packets of one flight.
    p.link_config_mut(Direction::ToClient).ce_threshold = Some(0);
    download(&mut p, &mut sent, total, Duration::from_millis(5));
    p.link_config_mut(Direction::ToClient).ce_threshold = None;
    let marked = p.link_stats(Direction::ToClient).ce_marked;
    assert!(
        marked > 3,
        "only {marked} CE marks: the test marks too little"
    );
    // The marked datagrams wait behind the queue; then their acknowledgements report them.
    wait_for_ce(&mut p, &mut sent, total, marked);
    let stats = p.server.stats();
    assert_eq!(
        stats.ecn_ce_congestion_events, 1,
        "{marked} marks in one flight"
    );
    assert_eq!(
        p.server.recovery.stats().congestion_events,
        events_before + 1
    );
    assert!(p.server.recovery.cwnd() < cwnd_before);
    assert_eq!(stats.lost, 0);
    assert_eq!(
        stats.retrans, retrans_before,
        "CE is no loss: nothing is resent"
    );

    // Marks in a later round trip are a new congestion event.
    p.link_config_mut(Direction::ToClient).ce_threshold = Some(0);
    download(&mut p, &mut sent, total, Duration::from_millis(5));
    p.link_config_mut(Direction::ToClient).ce_threshold = None;
    let marked = p.link_stats(Direction::ToClient).ce_marked;
    wait_for_ce(&mut p, &mut sent, total, marked);
    assert_eq!(p.server.stats().ecn_ce_congestion_events, 2);
    assert_eq!(p.server.stats().lost, 0);
    assert_eq!(p.server.ecn_state(), EcnState::Capable);
}

/// Downloads until the client counted `marked` CE packets and one more round trip passed, so
/// that its acknowledgements reported them.
fn wait_for_ce(p: &mut Pipe, sent: &mut usize, total: usize, marked: u64) {
    let ce = |p: &Pipe| -> u64 {
        p.client
            .spaces
            .iter()
            .filter_map(|s| s.acks.ecn_counts())
            .map(|c| c.ce)
            .sum()
    };
    for _ in 0..1000 {
        if ce(p) >= marked {
            break;
        }
        download(p, sent, total, Duration::from_millis(5));
    }
    assert_eq!(ce(p), marked, "every CE mark arrives and is counted once");
    download(p, sent, total, Duration::from_millis(100));
}

#[cfg(feature = "qlog")]
#[test]
fn qlog_records_the_ecn_state_changes() {
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut p = pipe(|_| {});
    let log = Shared::default();
    let now = p.now;
    p.client
        .set_qlog_at(Box::new(log.clone()), "t".into(), "d".into(), now);
    start(&mut p);
    let mut sent = 0;
    download(&mut p, &mut sent, 200_000, Duration::from_secs(5));
    drop(p);
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let states: Vec<(Option<String>, String)> = text
        .split('\u{1e}')
        .filter_map(|r| serde_json::from_str::<serde_json::Value>(r.trim()).ok())
        .filter(|e| e["name"] == "recovery:ecn_state_updated")
        .map(|e| {
            let old = e["data"]["old"].as_str().map(str::to_string);
            (old, e["data"]["new"].as_str().unwrap().to_string())
        })
        .collect();
    // The handshake's marked packets were acknowledged with valid counts before the test's
    // tenth datagram: the test ends straight in "capable".
    let want = [("testing", "capable")];
    let want: Vec<_> = want
        .iter()
        .map(|(o, n)| (Some(o.to_string()), n.to_string()))
        .collect();
    assert_eq!(states, want);
}
