//! Connection migration on the pipe (RFC 9000 §9): NAT rebindings and a client migration
//! under a download, validation failures, the amplification limit on an unvalidated path,
//! `disable_active_migration`, and PATH_CHALLENGE floods.

use std::net::SocketAddr;
use std::time::Duration;

use super::streams::{encode, established};
use super::{client_config, server_config};
use crate::frame::Frame;
use crate::path::{PathEvent, MAX_PENDING_RESPONSES};
use crate::testing::Pipe;
use crate::{Config, Error, RecvInfo};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn configs() -> (Config, Config) {
    let (mut c, mut s) = (client_config(), server_config());
    // Spare connection IDs, so that every new path can have a fresh one (§9.5).
    c.set_active_connection_id_limit(4);
    s.set_active_connection_id_limit(4);
    (c, s)
}

fn payload(len: usize) -> Vec<u8> {
    crate::testing::Rng(7).bytes(len)
}

fn events(conn: &mut crate::Connection) -> Vec<PathEvent> {
    std::iter::from_fn(|| conn.path_event_next()).collect()
}

/// Downloads `data` from the server on stream 0 (after a short request); `at` is called once
/// the client has received each quarter of it (1, 2, 3) to change the network.
fn download(pipe: &mut Pipe, data: &[u8], mut at: impl FnMut(&mut Pipe, usize)) -> Vec<u8> {
    pipe.client.stream_send(0, b"GET /", true).unwrap();
    let mut buf = vec![0u8; 65536];
    let (mut sent, mut got, mut fin, mut request_read) = (0, Vec::new(), false, false);
    let mut quarter = 0;
    let deadline = pipe.now + Duration::from_secs(120);
    while !fin {
        assert!(
            pipe.now < deadline,
            "stalled at {} of {}",
            got.len(),
            data.len()
        );
        if !request_read && pipe.server.stream_readable(0) {
            while let Ok((_, f)) = pipe.server.stream_recv(0, &mut buf) {
                request_read |= f;
            }
        }
        if request_read && sent < data.len() {
            match pipe.server.stream_send(0, &data[sent..], true) {
                Ok(n) => sent += n,
                Err(Error::Done) => {}
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        while pipe.client.stream_readable(0) {
            match pipe.client.stream_recv(0, &mut buf) {
                Ok((n, f)) => {
                    got.extend_from_slice(&buf[..n]);
                    fin |= f;
                }
                Err(Error::Done) => break,
                Err(e) => panic!("stream_recv: {e:?}"),
            }
        }
        while quarter < 3 && got.len() >= data.len() * (quarter + 1) / 4 {
            quarter += 1;
            at(pipe, quarter);
        }
        assert!(
            !pipe.client.is_closed() && !pipe.server.is_closed(),
            "closed at {} of {}",
            got.len(),
            data.len()
        );
        if !pipe.step().unwrap() {
            break;
        }
    }
    got
}

#[test]
fn download_survives_two_nat_rebindings_and_a_client_migration() {
    let (mut c, mut s) = configs();
    let mut pipe = established(&mut c, &mut s);
    let data = payload(6 << 20);
    let original = pipe.client_addr;
    let first = addr("127.0.0.1:50001");
    let second = addr("127.0.0.1:50002");
    let new_local = addr("127.0.0.2:40000");
    let dcid_before = pipe.server.destination_id().into_owned();
    let mut dcids = vec![dcid_before.clone()];
    let started = pipe.now;
    let mut lost_at = Vec::new();
    let got = download(&mut pipe, &data, |p, quarter| {
        lost_at.push(p.server.stats().lost);
        dcids.push(p.server.destination_id().into_owned());
        match quarter {
            // The NAT gives the client new ports; the old mapping is forgotten.
            1 => p.nat = vec![(original, first)],
            2 => {
                p.nat = vec![(original, second)];
                p.blackholed.push(first);
            }
            3 => {
                assert_eq!(p.server.active_path().1, second);
                p.client.migrate_source(new_local).unwrap();
            }
            _ => unreachable!(),
        }
    });
    assert!(got == data, "bytes intact");
    let with_moves = pipe.now - started;
    dcids.push(pipe.server.destination_id().into_owned());
    // The same download without moves, for the cost of the three moves in virtual time.
    let (mut c2, mut s2) = configs();
    let mut still = established(&mut c2, &mut s2);
    let base_start = still.now;
    assert!(download(&mut still, &data, |_, _| {}) == data);
    let without = still.now - base_start;
    let st = pipe.server.stats();
    eprintln!(
        "6 MiB: {with_moves:?} with two rebindings and a migration ({} lost {lost_at:?}, {} spurious, {} PTOs on the \
         server), {without:?} without ({} lost)",
        st.lost,
        st.spurious_lost,
        st.pto_count,
        still.server.stats().lost
    );

    let server_events = events(&mut pipe.server);
    let migrated: Vec<_> = server_events
        .iter()
        .filter_map(|e| match e {
            PathEvent::PeerMigrated(_, peer) => Some(*peer),
            _ => None,
        })
        .collect();
    assert_eq!(
        migrated,
        vec![first, second, new_local],
        "{server_events:?}"
    );
    assert_eq!(pipe.server.active_path(), (pipe.server_addr, new_local));
    assert_eq!(pipe.client.active_path(), (new_local, pipe.server_addr));
    assert!(pipe
        .client
        .is_path_validated(new_local, pipe.server_addr)
        .unwrap());
    assert_eq!(
        pipe.client.is_path_validated(original, pipe.server_addr),
        Err(Error::InvalidState),
        "the old path was freed"
    );
    let client_events = events(&mut pipe.client);
    assert!(client_events.contains(&PathEvent::Validated(new_local, pipe.server_addr)));
    assert!(client_events.contains(&PathEvent::Closed(original, pipe.server_addr)));
    // A fresh connection ID on every new path (the peers supplied spare ones).
    dcids.dedup();
    assert_eq!(
        dcids.len(),
        4,
        "server used a new client CID per path: {dcids:?}"
    );
    assert_eq!(pipe.server.stats().paths_count, 4);
    // Freed paths: never more than a bounded set, here the active one alone.
    assert_eq!(pipe.server.paths.iter().count(), 1);
}

#[test]
fn port_only_rebinding_keeps_the_congestion_state_but_a_new_address_resets_it() {
    let (mut c, mut s) = configs();
    let mut pipe = established(&mut c, &mut s);
    let data = payload(3 << 20);
    let mut cwnds = Vec::new();
    download(&mut pipe, &data, |p, quarter| match quarter {
        1 => {
            cwnds.push(p.server.path_stats().cwnd);
            p.nat = vec![(p.client_addr, addr("127.0.0.1:50001"))];
            // Step until the server follows and compare right away.
            p.run_until(Duration::from_secs(5), |p| {
                p.server.active_path().1 == addr("127.0.0.1:50001")
            })
            .unwrap();
            cwnds.push(p.server.path_stats().cwnd);
        }
        2 => {
            cwnds.push(p.server.path_stats().cwnd);
            p.nat = vec![(p.client_addr, addr("127.0.0.9:50001"))];
            p.run_until(Duration::from_secs(5), |p| {
                p.server.active_path().1 == addr("127.0.0.9:50001")
            })
            .unwrap();
            cwnds.push(p.server.path_stats().cwnd);
        }
        _ => {}
    });
    let initial = 10 * pipe.server.max_send_udp_payload_size();
    eprintln!("server cwnd before/after a port change, before/after an address change: {cwnds:?}");
    assert!(cwnds[0] > initial, "the window grew first: {cwnds:?}");
    assert!(cwnds[1] > initial, "kept over a port change: {cwnds:?}");
    assert!(cwnds[2] > initial, "{cwnds:?}");
    assert!(cwnds[3] <= initial, "reset on a new address: {cwnds:?}");
}

#[test]
fn failed_client_migration_falls_back_to_the_old_path() {
    let (mut c, mut s) = configs();
    let mut pipe = established(&mut c, &mut s);
    let data = payload(2 << 20);
    let dead = addr("127.0.0.3:40000");
    let got = download(&mut pipe, &data, |p, quarter| {
        if quarter == 1 {
            p.blackholed.push(dead);
            p.client.migrate_source(dead).unwrap();
            assert_eq!(p.client.active_path().0, dead);
        }
    });
    assert!(got == data);
    assert_eq!(
        pipe.client.active_path(),
        (pipe.client_addr, pipe.server_addr)
    );
    let ev = events(&mut pipe.client);
    assert!(
        ev.contains(&PathEvent::FailedValidation(dead, pipe.server_addr)),
        "{ev:?}"
    );
    assert_eq!(
        pipe.client.is_path_validated(dead, pipe.server_addr),
        Err(Error::InvalidState)
    );
}

#[test]
fn probing_a_path_validates_it_without_moving() {
    let (mut c, mut s) = configs();
    let mut pipe = established(&mut c, &mut s);
    let other = addr("127.0.0.4:40000");
    pipe.client.probe_path(other, pipe.server_addr).unwrap();
    assert_eq!(
        pipe.client.is_path_validated(other, pipe.server_addr),
        Ok(false)
    );
    let peers: Vec<_> = pipe.client.paths_iter(other).collect();
    assert_eq!(peers, vec![pipe.server_addr]);
    // The probe goes out on its own path, padded to 1200 bytes.
    let mut buf = [0u8; 1500];
    let (len, info) = pipe
        .client
        .send_on_path(&mut buf, Some(other), None)
        .unwrap();
    assert_eq!((info.from, info.to), (other, pipe.server_addr));
    assert!(len >= 1200, "{len}");
    let recv = RecvInfo {
        from: other,
        to: pipe.server_addr,
    };
    pipe.server
        .recv_at(&mut buf[..len], recv, pipe.now)
        .unwrap();
    // The server answers on the path the challenge came on, padded as well.
    let (len, info) = pipe.server.send_at(&mut buf, pipe.now).unwrap();
    assert_eq!((info.from, info.to), (pipe.server_addr, other));
    assert!(len >= 1200, "{len}");
    let recv = RecvInfo {
        from: pipe.server_addr,
        to: other,
    };
    pipe.client
        .recv_at(&mut buf[..len], recv, pipe.now)
        .unwrap();
    assert_eq!(
        pipe.client.is_path_validated(other, pipe.server_addr),
        Ok(true)
    );
    // Probing moved nothing.
    assert_eq!(pipe.client.active_path().0, pipe.client_addr);
    assert_eq!(pipe.server.active_path().1, pipe.client_addr);
    assert_eq!(
        events(&mut pipe.client),
        vec![PathEvent::Validated(other, pipe.server_addr)]
    );
    assert_eq!(
        events(&mut pipe.server),
        vec![PathEvent::New(pipe.server_addr, other)]
    );
}

#[test]
fn server_stays_within_three_times_on_an_unvalidated_path_then_falls_back() {
    let (mut c, mut s) = configs();
    let mut pipe = established(&mut c, &mut s);
    let spoofed = addr("10.9.9.9:9999");
    // The server has lots to send.
    pipe.client.stream_send(0, b"GET /", true).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(0))
        .unwrap();
    let mut buf = vec![0u8; 65536];
    while pipe.server.stream_recv(0, &mut buf).is_ok() {}
    let big = payload(1 << 20);
    pipe.server.stream_send(0, &big, true).unwrap();

    // One non-probing client packet appears from another address (an on-path attacker's copy,
    // or a rebinding whose return path is dead).
    let frame = encode(&[Frame::Ping, Frame::Padding { len: 1150 }]);
    let mut pkt = pipe.client.raw_1rtt_packet(&frame, pipe.now);
    let received = pkt.len();
    let info = RecvInfo {
        from: spoofed,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut pkt, info, pipe.now).unwrap();
    assert_eq!(pipe.server.active_path().1, spoofed);

    // Nothing more comes from there: whatever the server sends to it over its timers stays
    // within three times what it received from it.
    let mut sent_to_spoofed = 0;
    let mut challenges = 0;
    let end = pipe.now + Duration::from_secs(10);
    let mut now = pipe.now;
    while now < end && pipe.server.active_path().1 == spoofed {
        loop {
            match pipe.server.send_at(&mut buf, now) {
                Ok((len, info)) => {
                    if info.to == spoofed {
                        sent_to_spoofed += len;
                        challenges += 1;
                    }
                }
                Err(Error::Done) => break,
                Err(e) => panic!("{e:?}"),
            }
        }
        let Some(t) = pipe.server.timeout_instant() else {
            break;
        };
        now = t.max(now + Duration::from_millis(1));
        pipe.server.on_timeout_at(now);
    }
    eprintln!("{sent_to_spoofed} bytes in {challenges} datagrams sent for {received} received");
    assert!(sent_to_spoofed > 0);
    assert!(
        sent_to_spoofed <= 3 * received,
        "{sent_to_spoofed} bytes sent for {received} received"
    );
    // Validation failed: back on the validated address, the connection alive.
    assert_eq!(pipe.server.active_path().1, pipe.client_addr);
    assert!(!pipe.server.is_closed());
    let ev = events(&mut pipe.server);
    assert!(
        ev.contains(&PathEvent::FailedValidation(pipe.server_addr, spoofed)),
        "{ev:?} after {challenges} datagrams"
    );
}

#[test]
fn disable_active_migration_is_respected() {
    // The peer's: the client may not migrate or probe.
    let (mut c, mut s) = configs();
    s.set_disable_active_migration(true);
    let mut pipe = established(&mut c, &mut s);
    let other = addr("127.0.0.5:1000");
    assert_eq!(pipe.client.migrate_source(other), Err(Error::InvalidState));
    assert_eq!(
        pipe.client.probe_path(other, pipe.server_addr),
        Err(Error::InvalidState)
    );
    assert_eq!(pipe.client.active_path().0, pipe.client_addr);

    // Ours, on the server: a new IP address is dropped, a port change (NAT rebinding) is
    // followed.
    let frame = encode(&[Frame::Ping]);
    let mut pkt = pipe.client.raw_1rtt_packet(&frame, pipe.now);
    let from = addr("127.0.0.6:1000");
    let info = RecvInfo {
        from,
        to: pipe.server_addr,
    };
    let recv_before = pipe.server.stats().recv;
    pipe.server.recv_at(&mut pkt, info, pipe.now).unwrap();
    assert_eq!(pipe.server.stats().recv, recv_before, "dropped");
    assert_eq!(pipe.server.active_path().1, pipe.client_addr);

    let mut pkt = pipe.client.raw_1rtt_packet(&frame, pipe.now);
    let rebound = SocketAddr::new(pipe.client_addr.ip(), 5555);
    let info = RecvInfo {
        from: rebound,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut pkt, info, pipe.now).unwrap();
    assert_eq!(pipe.server.active_path().1, rebound);
}

#[test]
fn migration_needs_a_spare_connection_id_and_a_confirmed_handshake() {
    let (mut c, mut s) = (client_config(), server_config());
    let mut pipe = Pipe::new(&mut c, &mut s).unwrap();
    let other = addr("127.0.0.7:1000");
    assert_eq!(pipe.client.migrate_source(other), Err(Error::InvalidState));
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.client.handshake_confirmed)
        .unwrap();
    // Default active_connection_id_limit 2: one spare ID, used by the first new path.
    pipe.run_until(Duration::from_secs(1), |p| p.client.available_dcids() >= 1)
        .unwrap();
    pipe.client.probe_path(other, pipe.server_addr).unwrap();
    assert_eq!(
        pipe.client
            .probe_path(addr("127.0.0.8:1000"), pipe.server_addr),
        Err(Error::OutOfIdentifiers)
    );
    assert_eq!(pipe.server.migrate_source(other), Err(Error::InvalidState));
}

#[test]
fn path_challenge_flood_gets_bounded_answers() {
    let (mut c, mut s) = configs();
    let mut pipe = established(&mut c, &mut s);
    let frames: Vec<Frame> = (0..200u8)
        .map(|i| Frame::PathChallenge { data: [i; 8] })
        .collect();
    let mut pkt = pipe.client.raw_1rtt_packet(&encode(&frames), pipe.now);
    let info = RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut pkt, info, pipe.now).unwrap();
    assert_eq!(
        pipe.server.paths.active().pending_responses(),
        MAX_PENDING_RESPONSES
    );
    let mut buf = [0u8; 1500];
    let mut responses = 0;
    while let Ok((len, _)) = pipe.server.send_at(&mut buf, pipe.now) {
        let recv = RecvInfo {
            from: pipe.server_addr,
            to: pipe.client_addr,
        };
        let before = pipe.client.stats().recv;
        pipe.client
            .recv_at(&mut buf[..len], recv, pipe.now)
            .unwrap();
        assert_eq!(pipe.client.stats().recv, before + 1);
        assert!(len >= 1200, "PATH_RESPONSE datagrams are padded: {len}");
        responses += 1;
    }
    assert!((1..=2).contains(&responses), "{responses} datagrams");
    assert_eq!(pipe.server.paths.active().pending_responses(), 0);
}

#[test]
fn a_late_packet_from_another_address_brings_no_path() {
    let (mut c, mut s) = configs();
    let mut pipe = established(&mut c, &mut s);
    let frame = encode(&[Frame::Ping]);
    let mut older = pipe.client.raw_1rtt_packet(&frame, pipe.now);
    let mut newer = pipe.client.raw_1rtt_packet(&frame, pipe.now);
    let moved = addr("127.0.0.1:50001");
    let stale = addr("127.0.0.1:50002");
    let info = |from| RecvInfo {
        from,
        to: pipe.server_addr,
    };
    pipe.server
        .recv_at(&mut newer, info(moved), pipe.now)
        .unwrap();
    assert_eq!(pipe.server.active_path().1, moved);
    let recv = pipe.server.stats().recv;
    pipe.server
        .recv_at(&mut older, info(stale), pipe.now)
        .unwrap();
    assert_eq!(pipe.server.stats().recv, recv + 1, "processed");
    assert_eq!(
        pipe.server.active_path().1,
        moved,
        "not the largest: no move"
    );
    assert_eq!(
        pipe.server.is_path_validated(pipe.server_addr, stale),
        Err(Error::InvalidState)
    );
    let ev = events(&mut pipe.server);
    assert_eq!(ev, vec![PathEvent::New(pipe.server_addr, moved)]);

    // The server checks the path the peer seemed to leave (§9.3.3): a PATH_CHALLENGE goes to
    // the old address, which the genuine client answers.
    let mut buf = [0u8; 1500];
    let mut to_old = 0;
    while let Ok((len, out)) = pipe.server.send_at(&mut buf, pipe.now) {
        if out.to == pipe.client_addr {
            to_old += 1;
            let back = RecvInfo {
                from: pipe.server_addr,
                to: pipe.client_addr,
            };
            pipe.client
                .recv_at(&mut buf[..len], back, pipe.now)
                .unwrap();
        }
    }
    assert_eq!(to_old, 1);
    assert_eq!(pipe.client.paths.active().pending_responses(), 1);
}

#[test]
fn probes_from_many_addresses_keep_the_path_set_bounded() {
    let (mut c, mut s) = configs();
    let mut pipe = established(&mut c, &mut s);
    let mut buf = [0u8; 1500];
    for i in 0..50u16 {
        let frame = encode(&[Frame::PathChallenge { data: [i as u8; 8] }]);
        let mut pkt = pipe.client.raw_1rtt_packet(&frame, pipe.now);
        let info = RecvInfo {
            from: SocketAddr::new(addr("10.0.0.1:1").ip(), 1000 + i),
            to: pipe.server_addr,
        };
        pipe.server.recv_at(&mut pkt, info, pipe.now).unwrap();
        // The server answers each from its own path; the client takes whatever arrives.
        while let Ok((len, out)) = pipe.server.send_at(&mut buf, pipe.now) {
            let back = RecvInfo {
                from: out.from,
                to: pipe.client_addr,
            };
            let _ = pipe.client.recv_at(&mut buf[..len], back, pipe.now);
        }
        for _ in 0..3 {
            pipe.flush().unwrap();
            pipe.deliver();
        }
        assert!(pipe.server.paths.iter().count() <= crate::path::MAX_PATHS);
    }
    assert_eq!(pipe.server.active_path().1, pipe.client_addr);
    assert!(!pipe.server.is_closed() && !pipe.client.is_closed());
    // The connection still works.
    let data = payload(200_000);
    let got = download(&mut pipe, &data, |_, _| {});
    assert!(got == data);
}

#[test]
fn the_first_packet_to_a_new_address_carries_a_challenge_even_with_a_full_window() {
    let (mut c, mut s) = configs();
    let mut pipe = established(&mut c, &mut s);
    pipe.client.stream_send(0, b"GET /", true).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(0))
        .unwrap();
    let mut buf = vec![0u8; 65536];
    while pipe.server.stream_recv(0, &mut buf).is_ok() {}
    pipe.server.stream_send(0, &payload(1 << 20), true).unwrap();
    // Fill the server's window; nothing is delivered.
    let mut sent = 0;
    while pipe.server.send_at(&mut buf, pipe.now).is_ok() {
        sent += 1;
    }
    assert!(sent > 5);
    assert!(pipe.server.path_stats().bytes_in_flight + 1200 > pipe.server.path_stats().cwnd);

    let mut pkt = pipe
        .client
        .raw_1rtt_packet(&encode(&[Frame::Ping]), pipe.now);
    let moved = addr("127.0.0.1:50001");
    let info = RecvInfo {
        from: moved,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut pkt, info, pipe.now).unwrap();
    let (len, out) = pipe.server.send_at(&mut buf, pipe.now).unwrap();
    assert_eq!(out.to, moved);
    let back = RecvInfo {
        from: pipe.server_addr,
        to: pipe.client_addr,
    };
    pipe.client
        .recv_at(&mut buf[..len], back, pipe.now)
        .unwrap();
    assert_eq!(pipe.client.paths.active().pending_responses(), 1);
}

#[test]
fn a_due_mtu_probe_does_not_take_the_budget_of_an_unvalidated_path() {
    let (mut c, mut s) = configs();
    for cfg in [&mut c, &mut s] {
        cfg.set_max_send_udp_payload_size(1452);
        cfg.discover_pmtu(true);
    }
    let mut pipe = established(&mut c, &mut s);
    // The NAT gives the client another public address: a new IP address, so the server starts
    // its MTU search over there (RFC 8899 §4.3) and a probe is due the moment it moves. The
    // client's small packets (a request, then ACKs) give the server a small budget on the
    // new path until it is validated.
    let public = addr("127.0.0.3:50001");
    pipe.nat = vec![(pipe.client_addr, public)];
    pipe.client.stream_send(0, b"GET /", true).unwrap();
    pipe.run_until(Duration::from_secs(1), |p| p.server.stream_readable(0))
        .unwrap();
    let mut buf = [0u8; 64];
    while pipe.server.stream_recv(0, &mut buf).is_ok() {}
    assert_eq!(pipe.server.active_path().1, public);
    pipe.server.stream_send(0, b"answer", true).unwrap();
    // The challenge, then the answer, go out on the new path at once: well before validation
    // would time out (three initial PTOs, about 3 s) and fall back to the old address.
    let server_addr = pipe.server_addr;
    let answered = pipe.run_until(Duration::from_millis(500), |p| {
        p.client.stream_readable(0) && p.server.is_path_validated(server_addr, public) == Ok(true)
    });
    let ev = events(&mut pipe.server);
    assert!(
        answered.is_ok(),
        "no answer or no validation within 500 ms: {ev:?}"
    );
    assert_eq!(pipe.server.active_path().1, public);
    assert!(
        !ev.contains(&PathEvent::FailedValidation(server_addr, public)),
        "{ev:?}"
    );
    assert!(
        ev.contains(&PathEvent::PeerMigrated(pipe.server_addr, public)),
        "{ev:?}"
    );
    // The MTU search then runs on the validated path, with probes of their full size.
    pipe.run_until(Duration::from_secs(2), |p| {
        p.server.pmtud_stats().probes_acked > 0 && p.server.sender().pmtud().is_search_complete()
    })
    .unwrap();
    assert_eq!(pipe.server.max_send_udp_payload_size(), 1452);
}

#[test]
fn a_pmtu_probe_never_goes_first_to_an_unvalidated_address() {
    // Seen in the interop rebind-addr case: the server followed the client to a new address
    // and its first datagram there was a due PMTU probe (PING + PADDING, cut to the
    // amplification budget), not the PATH_CHALLENGE that must come first (§9.3).
    let (mut c, mut s) = configs();
    c.set_max_recv_udp_payload_size(1500);
    s.set_max_send_udp_payload_size(1500);
    let mut pipe = established(&mut c, &mut s);
    let mut buf = vec![0u8; 65536];
    let mut pkt = pipe.client.raw_1rtt_packet(
        &encode(&[Frame::Ping, Frame::Padding { len: 400 }]),
        pipe.now,
    );
    let moved = addr("10.0.0.9:50001");
    let info = RecvInfo {
        from: moved,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut pkt, info, pipe.now).unwrap();
    assert_eq!(pipe.server.active_path().1, moved);
    // The search starts over on the new path (a probe is wanted), but waits for validation.
    assert!(pipe
        .server
        .sender_mut()
        .pmtud_mut()
        .probe_size(pipe.now)
        .is_some());
    assert!(pipe.server.pmtu_probe_due(buf.len(), pipe.now).is_none());
    let (len, out) = pipe.server.send_at(&mut buf, pipe.now).unwrap();
    assert_eq!(out.to, moved);
    let back = RecvInfo {
        from: pipe.server_addr,
        to: pipe.client_addr,
    };
    pipe.client
        .recv_at(&mut buf[..len], back, pipe.now)
        .unwrap();
    assert_eq!(pipe.client.paths.active().pending_responses(), 1);
}

/// Migration configs with path MTU discovery up to 1452 bytes, and a pipe whose client and
/// server have both settled on it.
fn settled_pmtu_pipe(c: &mut Config, s: &mut Config) -> Pipe {
    for cfg in [&mut *c, &mut *s] {
        cfg.set_max_send_udp_payload_size(1452);
        cfg.discover_pmtu(true);
    }
    let mut pipe = established(c, s);
    pipe.run_until(Duration::from_secs(2), |p| {
        p.client.pmtu() == Some(1452) && p.server.pmtu() == Some(1452)
    })
    .unwrap();
    pipe
}

#[test]
fn a_new_path_searches_its_own_mtu_from_the_base() {
    let (mut c, mut s) = configs();
    let mut pipe = settled_pmtu_pipe(&mut c, &mut s);
    let probes_before = pipe.client.pmtud_stats().probes_sent;
    let new_local = addr("127.0.0.2:40000");
    pipe.client.migrate_source(new_local).unwrap();
    // Nothing learned of the old path holds on the new one (RFC 8899 §4.3).
    assert_eq!(pipe.client.max_send_udp_payload_size(), 1200);
    assert_eq!(pipe.client.path_stats().pmtu, 1200);
    assert_eq!(pipe.client.pmtu(), None, "the new path's search runs");
    pipe.client.stream_send(0, b"GET /", true).unwrap();
    pipe.run_until(Duration::from_secs(2), |p| p.client.pmtu() == Some(1452))
        .unwrap();
    assert_eq!(pipe.client.active_path().0, new_local);
    assert_eq!(pipe.client.max_send_udp_payload_size(), 1452);
    assert_eq!(pipe.client.path_stats().pmtu, 1452);
    assert!(
        pipe.client.pmtud_stats().probes_acked > 0
            && pipe.client.pmtud_stats().probes_sent > probes_before,
        "{:?}",
        pipe.client.pmtud_stats()
    );
    let ev = events(&mut pipe.client);
    assert!(
        ev.contains(&PathEvent::PmtuUpdated {
            local: new_local,
            peer: pipe.server_addr,
            pmtu: 1452
        }),
        "{ev:?}"
    );
}

#[test]
fn a_path_the_connection_returns_to_keeps_its_mtu() {
    let (mut c, mut s) = configs();
    let mut pipe = settled_pmtu_pipe(&mut c, &mut s);
    let _ = events(&mut pipe.client);
    let probes_before = pipe.client.pmtud_stats().probes_sent;
    let dead = addr("127.0.0.3:40000");
    pipe.blackholed.push(dead);
    pipe.client.migrate_source(dead).unwrap();
    assert_eq!(pipe.client.max_send_udp_payload_size(), 1200);
    // Validation of the dead path fails: the client goes back to the path it came from.
    let original = pipe.client_addr;
    pipe.run_until(Duration::from_secs(10), |p| {
        p.client.active_path().0 == original
    })
    .unwrap();
    // What the old path's search found still holds there: no new search, no change.
    assert_eq!(pipe.client.max_send_udp_payload_size(), 1452);
    assert_eq!(pipe.client.path_stats().pmtu, 1452);
    assert_eq!(pipe.client.pmtu(), Some(1452));
    assert_eq!(pipe.client.pmtud_stats().probes_sent, probes_before);
    let ev = events(&mut pipe.client);
    assert!(
        ev.contains(&PathEvent::FailedValidation(dead, pipe.server_addr)),
        "{ev:?}"
    );
    assert!(
        !ev.iter()
            .any(|e| matches!(e, PathEvent::PmtuUpdated { .. })),
        "{ev:?}"
    );
    // And data flows on it again.
    pipe.client.stream_send(0, &payload(20_000), true).unwrap();
    pipe.run_until(Duration::from_secs(2), |p| p.server.stream_readable(0))
        .unwrap();
}
