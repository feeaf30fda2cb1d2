//! Each tuning setter of `config/tuning.rs`, shown to change what a connection does.

use std::time::Duration;

use super::{client_config, server_config};
use crate::testing::{Direction, LinkConfig, Pipe, Verdict};
use crate::{Config, Error};

/// A pipe in which the server receives the client's first flight and nothing after it, so it
/// never validates the client's address (RFC 9000 §8.1) and sends only within its
/// anti-amplification budget. The first flight is every datagram sent at the instant of the
/// first one: BoringSSL's ClientHello with its X25519MLKEM768 key share takes two, and a
/// server given half a ClientHello has nothing to send.
pub(super) fn pipe_without_address_validation(server: &mut Config) -> Pipe {
    let mut pipe = Pipe::new(&mut client_config(), server).unwrap();
    let mut first_flight = None;
    pipe.hook = Some(Box::new(move |d| {
        if d.direction == Direction::ToClient || *first_flight.get_or_insert(d.sent_at) == d.sent_at
        {
            Verdict::Deliver
        } else {
            Verdict::Drop
        }
    }));
    pipe
}

/// Long enough for the server's probe timeouts (the first about 1 s after its first flight,
/// then backing off: 2 s, 4 s; RFC 9002 §6.2) to spend its whole budget with either TLS
/// backend: the limit binds at the first probe with rustls (one datagram in, 3,600 bytes
/// out), at the second with BoringSSL (two datagrams in, a larger first flight).
pub(super) const UNVALIDATED_RUN: Duration = Duration::from_secs(10);

/// What a server sends to a client of which only the first flight arrives, and what it
/// received.
fn server_bytes_before_validation(factor: Option<usize>) -> (u64, u64) {
    let mut server = server_config();
    if let Some(f) = factor {
        server.set_max_amplification_factor(f);
    }
    let mut pipe = pipe_without_address_validation(&mut server);
    let _ = pipe.run_for(UNVALIDATED_RUN);
    let s = pipe.server.stats();
    (s.sent_bytes, s.recv_bytes)
}

#[test]
fn amplification_factor_bounds_what_an_unvalidated_server_sends() {
    let (sent3, recv3) = server_bytes_before_validation(None);
    let (sent1, recv1) = server_bytes_before_validation(Some(1));
    assert!(
        sent1 <= recv1,
        "factor 1: {sent1} sent for {recv1} received"
    );
    assert!(
        sent3 <= 3 * recv3,
        "factor 3: {sent3} sent for {recv3} received"
    );
    assert!(
        sent3 > sent1 + 1000,
        "the default lets more out ({sent3} vs {sent1})"
    );
    // The limit is what stopped the server: it spent its budget, to within one datagram.
    assert!(
        sent3 + 1200 > 3 * recv3,
        "factor 3: only {sent3} sent for {recv3} received"
    );
}

#[test]
fn initial_rtt_sets_the_first_probe_timeout() {
    let first_timeout = |rtt: Option<Duration>| {
        let mut client = client_config();
        if let Some(rtt) = rtt {
            client.set_initial_rtt(rtt);
        }
        let mut pipe = Pipe::new(&mut client, &mut server_config()).unwrap();
        let start = pipe.now;
        let mut out = [0u8; 1500];
        pipe.client.send_at(&mut out, start).unwrap();
        pipe.client.timeout_instant().unwrap() - start
    };
    let default = first_timeout(None);
    let short = first_timeout(Some(Duration::from_millis(50)));
    // PTO = 3 × the initial RTT before any sample (RFC 9002 §6.2.2, §A.8), plus granularity.
    assert!(default >= Duration::from_millis(900), "{default:?}");
    assert!(short <= Duration::from_millis(200), "{short:?}");
}

/// Seconds to move `len` bytes from the server over a fast link with the given pacing cap.
fn transfer_secs(max_pacing_rate: Option<u64>, len: usize) -> f64 {
    let mut server = server_config();
    if let Some(rate) = max_pacing_rate {
        server.set_max_pacing_rate(rate);
    }
    let link = LinkConfig {
        delay: Duration::from_millis(5),
        ..LinkConfig::default()
    };
    let mut pipe =
        Pipe::with_links(&mut client_config(), &mut server, link.clone(), link, 3).unwrap();
    pipe.handshake().unwrap();
    pipe.client.stream_send(0, b"get", true).unwrap();
    pipe.run_for(Duration::from_millis(20)).unwrap();
    download(&mut pipe, len).as_secs_f64()
}

/// The server sends `len` bytes on stream 0 and the client reads them all: how long it took.
fn download(pipe: &mut Pipe, len: usize) -> Duration {
    let data = vec![7u8; len];
    let (mut sent, mut got) = (0, 0);
    let mut buf = vec![0u8; 65536];
    let start = pipe.now;
    while got < len {
        if sent < len {
            sent += pipe.server.stream_send(0, &data[sent..], true).unwrap_or(0);
        }
        pipe.step().unwrap();
        while let Ok((n, _)) = pipe.client.stream_recv(0, &mut buf) {
            got += n;
        }
        assert!(
            pipe.now - start < Duration::from_secs(30),
            "stalled at {got}"
        );
    }
    pipe.now - start
}

#[test]
fn max_pacing_rate_caps_the_sending_rate() {
    let len = 2_000_000;
    let capped = transfer_secs(Some(1_000_000), len);
    let free = transfer_secs(None, len);
    // 2 MB at 1 MB/s: about 2 s whatever the window; uncapped, far less.
    assert!(capped >= 1.8, "capped transfer took {capped} s");
    assert!(free < capped / 2.0, "uncapped {free} s, capped {capped} s");
}

#[test]
fn send_capacity_factor_follows_the_congestion_window() {
    let capacity = |factor: Option<f64>| {
        let mut client = client_config();
        if let Some(f) = factor {
            client.set_send_capacity_factor(f);
        }
        let mut pipe = Pipe::new(&mut client, &mut server_config()).unwrap();
        pipe.handshake().unwrap();
        pipe.client.stream_capacity(0).unwrap_or_else(|_| {
            pipe.client.stream_send(0, b"", false).unwrap();
            pipe.client.stream_capacity(0).unwrap()
        })
    };
    let unbounded = capacity(None);
    let one = capacity(Some(1.0));
    let two = capacity(Some(2.0));
    assert!(one < unbounded, "{one} vs {unbounded}");
    assert!(
        one > 0 && two >= 2 * one - 2,
        "factor 1: {one}, factor 2: {two}"
    );
}

#[test]
fn streams_blocked_is_sent_only_when_enabled() {
    let blocked_frames = |enable: bool| {
        let mut client = client_config();
        client.set_enable_send_streams_blocked(enable);
        let mut server = server_config();
        server.set_initial_max_streams_bidi(1);
        let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
        pipe.handshake().unwrap();
        pipe.client.stream_send(0, b"a", false).unwrap();
        assert_eq!(
            pipe.client.stream_send(4, b"b", false),
            Err(Error::StreamLimit)
        );
        pipe.run_for(Duration::from_millis(100)).unwrap();
        pipe.server.stats().streams_blocked_bidi_recv_count
    };
    assert!(blocked_frames(true) > 0);
    assert_eq!(blocked_frames(false), 0);
}

#[test]
fn path_challenge_queue_bounds_the_responses_owed() {
    use crate::path::Path;
    let limits = crate::path::PathLimits {
        max_pending_responses: 2,
        ..Default::default()
    };
    let local = "127.0.0.1:1".parse().unwrap();
    let sender = crate::recovery::RecoveryConfig::default().sender(false);
    let peer = "127.0.0.1:2".parse().unwrap();
    let mut set = crate::path::PathSet::new(Path::new(local, peer, true, sender));
    set.set_limits(limits);
    let p = set.active_mut();
    let accepted = (0..5u8).filter(|&i| p.push_response([i; 8])).count();
    assert_eq!(accepted, 2);
    let mut c = Config::new(crate::PROTOCOL_VERSION).unwrap();
    c.set_path_challenge_recv_max_queue_len(2);
    assert_eq!(c.tuning.path_challenge_recv_max_queue_len, 2);
}

#[test]
fn disable_dcid_reuse_keeps_a_server_off_a_path_without_a_spare_id() {
    let follows = |disable: bool| {
        let mut server = server_config();
        server.set_disable_dcid_reuse(disable);
        let mut pipe = Pipe::new(&mut client_config(), &mut server).unwrap();
        pipe.handshake().unwrap();
        pipe.run_for(Duration::from_millis(200)).unwrap();
        // The server spends its spare IDs of the client's.
        while pipe.server.cids.take_unused_dcid().is_some() {}
        let public = "10.9.9.9:5555".parse().unwrap();
        pipe.nat.push((pipe.client_addr, public));
        pipe.client.stream_send(0, b"moved", true).unwrap();
        pipe.run_for(Duration::from_millis(300)).unwrap();
        pipe.server
            .paths_iter(pipe.server_addr)
            .any(|a| a == public)
    };
    assert!(
        follows(false),
        "the default reuses the current ID on the new path"
    );
    assert!(!follows(true), "no spare ID: the path is not used");
}

/// Spurious losses in a 1 MB server-to-client transfer over 50 Mbit/s and 10 ms that holds
/// back every 16th datagram by 2 ms (well under the time threshold; about ten datagrams at
/// that rate, far past three), with `set_enable_relaxed_loss_threshold(relaxed)`.
fn spurious_losses_when_reordered(relaxed: bool) -> usize {
    let mut server = server_config();
    server.set_enable_relaxed_loss_threshold(relaxed);
    let link = LinkConfig {
        delay: Duration::from_millis(10),
        rate_bps: Some(50_000_000),
        ..LinkConfig::default()
    };
    let mut pipe =
        Pipe::with_links(&mut client_config(), &mut server, link.clone(), link, 3).unwrap();
    pipe.handshake().unwrap();
    let mut count = 0u64;
    pipe.hook = Some(Box::new(move |d| {
        count += 1;
        match d.direction {
            Direction::ToClient if count.is_multiple_of(16) => {
                Verdict::Delay(Duration::from_millis(2))
            }
            _ => Verdict::Deliver,
        }
    }));
    pipe.client.stream_send(0, b"get", true).unwrap();
    pipe.run_for(Duration::from_millis(30)).unwrap();
    download(&mut pipe, 1_000_000);
    pipe.server.stats().spurious_lost
}

#[test]
fn relaxed_loss_threshold_stops_spurious_losses_on_a_reordering_path() {
    let strict = spurious_losses_when_reordered(false);
    let relaxed = spurious_losses_when_reordered(true);
    // Without it each held-back datagram is declared lost again; with it the threshold
    // rises past the reordering after the first few.
    assert!(strict >= 10, "strict: {strict} spurious losses");
    assert!(relaxed * 4 <= strict, "relaxed {relaxed}, strict {strict}");
}
