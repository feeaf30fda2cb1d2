//! Path MTU discovery end to end on the pipe: the size found under a link MTU, recovery from a
//! drop of the MTU mid-transfer (a black hole), the raise timer, and probe losses that leave
//! the congestion window alone.

use std::time::Duration;

use super::{client_config, server_config};
use crate::pmtud::{PmtudState, BASE_PLPMTU};
use crate::testing::{Direction, LinkConfig, PathMtu, Pipe, Rng, IPV4_UDP_OVERHEAD};
use crate::{Config, Error};

/// The largest payload both sides may send: a 1500-byte IPv6 path's.
const MAX: usize = 1452;

fn configs(discover: bool) -> (Config, Config) {
    let mut c = client_config();
    let mut s = server_config();
    for cfg in [&mut c, &mut s] {
        cfg.set_max_send_udp_payload_size(MAX);
        cfg.discover_pmtu(discover);
        cfg.set_initial_max_data(100 << 20);
        cfg.set_initial_max_stream_data_bidi_local(100 << 20);
        cfg.set_initial_max_stream_data_bidi_remote(100 << 20);
    }
    (c, s)
}

/// A pipe on a 10 ms (one way) link of `rate_bps` whose MTU follows `mtu` in both directions.
fn pipe_with(c: &mut Config, s: &mut Config, mtu: PathMtu, rate_bps: Option<u64>) -> Pipe {
    let link = LinkConfig {
        delay: Duration::from_millis(10),
        rate_bps,
        queue_bytes: rate_bps.map(|_| 250_000),
        mtu,
        ..LinkConfig::default()
    };
    Pipe::with_links(c, s, link.clone(), link, 7).unwrap()
}

/// Downloads `len` pseudo-random bytes on stream 0, calling `watch` at every step; checks they
/// arrive intact and returns the virtual time it took.
fn download(pipe: &mut Pipe, len: usize, mut watch: impl FnMut(&Pipe)) -> Duration {
    let data = Rng(len as u64 | 1).bytes(len);
    let start = pipe.now;
    pipe.client.stream_send(0, b"GET", true).unwrap();
    let (mut sent, mut got, mut fin) = (0, Vec::with_capacity(len), false);
    let mut buf = vec![0u8; 65536];
    let mut request_read = false;
    pipe.run_until(Duration::from_secs(300), |p| {
        watch(p);
        if !request_read {
            request_read = p.server.stream_recv(0, &mut buf).is_ok_and(|(_, f)| f);
        } else if sent < data.len() {
            match p.server.stream_send(0, &data[sent..], true) {
                Ok(n) => sent += n,
                Err(Error::Done) => {}
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        while let Ok((n, f)) = p.client.stream_recv(0, &mut buf) {
            got.extend_from_slice(&buf[..n]);
            fin |= f;
        }
        fin
    })
    .unwrap();
    assert!(got == data, "the download arrives intact");
    pipe.now - start
}

#[test]
fn an_unlimited_path_settles_on_the_maximum_one_round_trip_after_confirmation() {
    let (mut c, mut s) = configs(true);
    let mut pipe = pipe_with(&mut c, &mut s, PathMtu::default(), None);
    assert_eq!(pipe.client.max_send_udp_payload_size(), BASE_PLPMTU);
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.client.handshake_confirmed)
        .unwrap();
    let confirmed = pipe.now;
    pipe.run_until(Duration::from_secs(5), |p| {
        p.client.max_send_udp_payload_size() == MAX && p.server.max_send_udp_payload_size() == MAX
    })
    .unwrap();
    // A 20 ms round trip: the first probe, of the maximum size, gets through.
    assert!(
        pipe.now - confirmed <= Duration::from_millis(60),
        "{:?}",
        pipe.now - confirmed
    );
    assert_eq!(
        pipe.server.sender().pmtud().state(),
        PmtudState::SearchComplete
    );
    assert_eq!(pipe.server.path_stats().pmtu, MAX);
    assert_eq!(pipe.server.pmtud_stats().probes_lost, 0);
}

#[test]
fn a_link_mtu_of_1400_is_found_within_a_few_round_trips_and_probe_losses_cost_no_window() {
    let (mut c, mut s) = configs(true);
    let mut pipe = pipe_with(&mut c, &mut s, PathMtu::fixed(1400), None);
    let path_max = 1400 - IPV4_UDP_OVERHEAD;
    pipe.handshake().unwrap();
    let mut settled_at = None;
    let start = pipe.now;
    download(&mut pipe, 16 << 20, |p| {
        if settled_at.is_none() && p.server.sender().pmtud().is_search_complete() {
            settled_at = Some(p.now);
        }
    });
    let server = &pipe.server;
    let size = server.max_send_udp_payload_size();
    assert!(
        size <= path_max && size + crate::pmtud::SEARCH_RESOLUTION >= path_max,
        "settled on {size}: {:?} {:?}",
        server.sender().pmtud(),
        pipe.elapsed()
    );
    let took = settled_at.expect("the search completes") - start;
    // 20 ms round trips: two lost tries of 1452, then a handful of halvings.
    assert!(took < Duration::from_millis(400), "{took:?}");
    println!("MTU 1400: settled on {size} in {took:?} (20 ms round trips)");
    let probes = server.pmtud_stats();
    assert!(probes.probes_lost >= 2, "{probes:?}");
    // Only probes were too large, and their loss is no congestion signal: the window never
    // shrank, and the loss statistics do not count them.
    assert!(pipe.link_stats(Direction::ToClient).dropped_mtu >= 2);
    assert_eq!(server.recovery.stats().congestion_events, 0);
    assert_eq!(server.stats().lost, 0);
    assert_eq!(probes.black_holes, 0);
}

#[test]
fn a_drop_to_1280_mid_transfer_is_a_black_hole_the_download_survives() {
    let (mut c, mut s) = configs(true);
    let mtu = PathMtu::fixed(1500).then(Duration::from_secs(1), Some(1280));
    let mut pipe = pipe_with(&mut c, &mut s, mtu, Some(50_000_000));
    pipe.handshake().unwrap();
    let mut before_drop = 0;
    let mut detected = None;
    let took = download(&mut pipe, 16 << 20, |p| {
        if p.elapsed() < Duration::from_secs(1) {
            before_drop = p.server.max_send_udp_payload_size();
        }
        if detected.is_none() && p.server.pmtud_stats().black_holes > 0 {
            detected = Some(p.elapsed());
        }
    });
    assert_eq!(before_drop, MAX, "the full size was in use before the drop");
    // A few PTOs after the drop (one at full size, then PTO probes of 1200 bytes whose
    // acknowledgment shows the full-size losses to be a black hole).
    let detected = detected.expect("black hole detected") - Duration::from_secs(1);
    assert!(detected < Duration::from_millis(500), "{detected:?}");
    println!("black hole detected {detected:?} after the drop; 16 MiB in {took:?}");
    let server = &pipe.server;
    let stats = server.pmtud_stats();
    assert!(stats.black_holes >= 1, "{stats:?}");
    // The search after the black hole found the new limit.
    let path_max = 1280 - IPV4_UDP_OVERHEAD;
    let size = server.max_send_udp_payload_size();
    assert!(
        size <= path_max && size + crate::pmtud::SEARCH_RESOLUTION >= path_max,
        "settled on {size}"
    );
}

#[test]
fn the_raise_timer_finds_a_larger_mtu_later() {
    let (mut c, mut s) = configs(true);
    s.set_pmtud_raise_interval(Duration::from_secs(1));
    let mtu = PathMtu::fixed(1280).then(Duration::from_secs(2), None);
    let mut pipe = pipe_with(&mut c, &mut s, mtu, Some(20_000_000));
    pipe.handshake().unwrap();
    let mut early = 0;
    download(&mut pipe, 16 << 20, |p| {
        if p.elapsed() < Duration::from_millis(1500) {
            early = p.server.max_send_udp_payload_size();
        }
    });
    assert!(early <= 1280 - IPV4_UDP_OVERHEAD, "{early}");
    assert_eq!(pipe.server.max_send_udp_payload_size(), MAX);
}

#[test]
fn without_discovery_the_configured_size_is_used_from_the_start() {
    let (mut c, mut s) = configs(false);
    let mut pipe = pipe_with(&mut c, &mut s, PathMtu::default(), None);
    assert_eq!(pipe.client.max_send_udp_payload_size(), MAX);
    pipe.handshake().unwrap();
    download(&mut pipe, 1 << 20, |_| {});
    assert_eq!(pipe.server.max_send_udp_payload_size(), MAX);
    assert_eq!(pipe.server.pmtud_stats().probes_sent, 0);
}

/// A peer that takes smaller datagrams than we would send (its `max_udp_payload_size`) caps
/// the datagram size, and the controller and the pacer count in the capped size too.
#[test]
fn the_peers_max_udp_payload_size_caps_the_sender_too() {
    const PEER_MAX: usize = 1300;
    let (mut c, mut s) = configs(false);
    c.set_max_recv_udp_payload_size(PEER_MAX);
    let mut pipe = pipe_with(&mut c, &mut s, PathMtu::default(), None);
    assert_eq!(pipe.server.sender().max_datagram_size(), MAX);
    // Until something is acknowledged the controller's window is the initial one, which
    // RFC 9002 §7.2 derives from the datagram size: 10 datagrams of 1300 bytes, not of 1452.
    let initial_window = |mds| {
        crate::cc::CcConfig {
            max_datagram_size: mds,
            ..crate::cc::CcConfig::default()
        }
        .initial_window()
    };
    assert_ne!(initial_window(PEER_MAX), initial_window(MAX));
    pipe.run_until(Duration::from_secs(1), |p| p.server.peer_tp.is_some())
        .unwrap();
    assert_eq!(pipe.server.max_send_udp_payload_size(), PEER_MAX);
    assert_eq!(pipe.server.sender().max_datagram_size(), PEER_MAX);
    assert_eq!(pipe.server.sender().cwnd(), initial_window(PEER_MAX));
    pipe.handshake().unwrap();
    // The client's own limit is the configured one: the server takes 1452 bytes.
    assert_eq!(pipe.client.sender().max_datagram_size(), MAX);
    download(&mut pipe, 1 << 20, |p| {
        assert!(p.server.sender().max_datagram_size() == PEER_MAX);
    });
}

#[test]
fn pmtu_is_reported_once_found_and_revalidation_reports_each_change() {
    let (mut c, mut s) = configs(true);
    let mut pipe = pipe_with(&mut c, &mut s, PathMtu::fixed(1400), None);
    pipe.handshake().unwrap();
    assert_eq!(pipe.server.pmtu(), None, "not searched yet");
    pipe.run_until(Duration::from_secs(10), |p| p.server.pmtu().is_some())
        .unwrap();
    let found = pipe.server.pmtu().unwrap();
    let ip_limit = 1400 - IPV4_UDP_OVERHEAD;
    assert!(found <= ip_limit && found > BASE_PLPMTU, "{found}");
    let raised = std::iter::from_fn(|| pipe.server.path_event_next())
        .filter_map(|e| match e {
            crate::PathEvent::PmtuUpdated { pmtu, peer, .. } => {
                assert_eq!(peer, pipe.client_addr);
                Some(pmtu)
            }
            _ => None,
        })
        .last();
    assert_eq!(raised, Some(found), "the validated size was reported");

    // Revalidation: the minimum at once, then the size again once a probe gets through.
    pipe.server.revalidate_pmtu();
    assert_eq!(pipe.server.pmtu(), None);
    assert_eq!(pipe.server.max_send_udp_payload_size(), BASE_PLPMTU);
    assert!(matches!(
        pipe.server.path_event_next(),
        Some(crate::PathEvent::PmtuUpdated {
            pmtu: BASE_PLPMTU,
            ..
        })
    ));
    pipe.server.stream_send(1, b"x", false).ok();
    pipe.run_until(Duration::from_secs(10), |p| p.server.pmtu().is_some())
        .unwrap();
    assert_eq!(pipe.server.pmtu(), Some(found));
}
