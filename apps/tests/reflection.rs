//! The real `quiche-server` cannot be made to reflect traffic: neither stateless resets nor
//! Version Negotiation can start a loop or amplify (RFC 9000 §6, §10.3.3; RFC 8999).
//!
//! - A short-header datagram for no connection gets at most one stateless reset, smaller than
//!   it (one byte smaller up to 43 bytes, 42 to 64 bytes above), ending in the token of its
//!   connection ID under the server's key; a datagram under 37 bytes, too small to be a packet
//!   for the server's 16-byte IDs and so possibly a reset itself, gets nothing. One address
//!   gets 3 resets in a row, then one per 200 ms.
//! - Version Negotiation is sent only for a long-header datagram of an unsupported version of at
//!   least 1200 bytes (the size of a client's first flight), one per such datagram, and never
//!   for a Version Negotiation packet.
//! - Two servers made to talk to each other (an attacker spoofs the source address of a
//!   datagram to one of them as the other's) exchange at most one datagram per datagram the
//!   attacker sent, or, for a short header, a few resets each smaller than the one before,
//!   then fall silent.
//!
//! The spoofing is modelled by a relay in the test: sending from another process's bound
//! address needs raw sockets (root). The relay's socket `ra` stands for server B when it talks
//! to server A, and its socket `rb` for A when it talks to B; whatever A sends to `ra` is sent
//! on to B from `rb`, and the other way round, so each server sees a peer that answers exactly
//! as the other server does, as if the two were addressed to each other directly.
//!
//! Every wait is bounded; both servers are ended by PID when their guards drop.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use quiche::testing::Rng;

mod common;

use common::{Server, TempDir};

/// How long a test listens for answers that must not come, after the last one that did.
/// Loopback answers arrive within milliseconds; this leaves room for a busy machine.
const QUIET: Duration = Duration::from_millis(1500);

/// The longest a test waits for the answers it expects (a ping-pong would run this long).
const PATIENCE: Duration = Duration::from_secs(10);

/// A version nobody speaks (of the reserved form 0x?a?a?a?a, RFC 9000 §15).
const UNSPOKEN: u32 = 0x5a6a_7a8a;

/// A socket on loopback that reads with a short timeout.
fn socket() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    s
}

/// Everything `sock` receives until it has at least `want` datagrams and nothing more came
/// for [`QUIET`] (at most [`PATIENCE`]).
fn collect(sock: &UdpSocket, want: usize) -> Vec<(Vec<u8>, SocketAddr)> {
    let mut got = Vec::new();
    let mut buf = [0u8; 65535];
    let start = Instant::now();
    let mut last = start;
    while start.elapsed() < PATIENCE && (got.len() < want || last.elapsed() < QUIET) {
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            got.push((buf[..n].to_vec(), from));
            last = Instant::now();
        }
    }
    got
}

/// A long-header datagram of `len` bytes in `version` with 8-byte connection IDs, shaped as an
/// Initial (type bits 00, an empty token, a length) and padded with random bytes.
fn long_header(rng: &mut Rng, version: u32, len: usize) -> Vec<u8> {
    let mut d = vec![0xc0];
    d.extend_from_slice(&version.to_be_bytes());
    d.push(8);
    d.extend_from_slice(&rng.bytes(8));
    d.push(8);
    d.extend_from_slice(&rng.bytes(8));
    // Token length 0, then a two-byte length covering the rest.
    let rest = len.saturating_sub(d.len() + 3);
    d.extend_from_slice(&[0, 0x40 | (rest >> 8) as u8 & 0x3f, rest as u8]);
    d.extend_from_slice(&rng.bytes(rest));
    d.truncate(len);
    d
}

/// A Version Negotiation packet of at least `len` bytes (the first multiple of 4 bytes of
/// versions that reaches it) listing made-up versions.
fn version_negotiation(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut d = vec![0x80 | (rng.next() as u8 & 0x7f), 0, 0, 0, 0, 8];
    d.extend_from_slice(&rng.bytes(8));
    d.push(8);
    d.extend_from_slice(&rng.bytes(8));
    while d.len() < len {
        d.extend_from_slice(&UNSPOKEN.to_be_bytes());
    }
    d
}

/// A short-header datagram of `len` bytes: random, with the fixed bit set. From 21 bytes on it
/// is indistinguishable from a stateless reset (RFC 9000 §10.3).
fn short_header(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut d = rng.bytes(len);
    d[0] = 0x40 | (d[0] & 0x3f);
    d
}

/// Waits until the server reports having dropped `n` datagrams (so it did read them all).
fn wait_dropped(server: &Server, n: u64) {
    server.wait_stats(&format!("{n} datagrams dropped"), |s| {
        s.get("dropped").copied().unwrap_or(0) >= n
    });
}

/// Waits until the server has handled `n` short-header datagrams for no connection: answered
/// with a reset, or dropped.
fn wait_handled(server: &Server, n: u64) -> HashMap<String, u64> {
    server.wait_stats(&format!("{n} datagrams handled"), |s| {
        s.get("dropped").copied().unwrap_or(0) + s.get("resets").copied().unwrap_or(0) >= n
    })
}

/// The smallest short-header datagram the server answers: a packet for its 16-byte IDs.
const SMALLEST_ANSWERED: usize = 37;

/// The stateless reset token the server whose `--reset-key` file is `key` gives `cid`.
fn token(key: &std::path::Path, cid: &[u8]) -> [u8; 16] {
    let secret = quiche_apps::stateless_reset::load_or_create_key(key).unwrap();
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    config.set_stateless_reset_key(&secret);
    config.stateless_reset_token(cid)
}

#[test]
fn short_headers_for_no_connection_get_one_smaller_reset_from_37_bytes() {
    let dir = TempDir::new("reflection-short");
    let key = dir.0.join("reset.key");
    let server = Server::start(&dir, &["--reset-key", key.to_str().unwrap()]);
    let mut rng = Rng(0x5eed);
    // Every size from 1 byte to a full datagram: below, at and above the smallest stateless
    // reset (21 bytes) and the smallest datagram answered, and the sizes a reset answering a
    // reset would have. One socket each, so that no address runs into its limit.
    let sizes: Vec<usize> = (1..=64).chain((65..=1500).step_by(23)).collect();
    let mut sent = Vec::new();
    for &len in &sizes {
        let sock = socket();
        let d = short_header(&mut rng, len);
        sock.send_to(&d, server.addr).unwrap();
        sent.push((sock, d));
    }
    let stats = wait_handled(&server, sizes.len() as u64);
    let answered = sizes.iter().filter(|&&l| l >= SMALLEST_ANSWERED).count() as u64;
    assert_eq!(stats.get("resets"), Some(&answered), "{stats:?}");
    assert_eq!(stats.get("resets_limited"), Some(&0), "{stats:?}");
    assert_eq!(stats.get("accepted"), Some(&0), "{stats:?}");
    // Let anything more that would come arrive, then look at every socket.
    std::thread::sleep(QUIET);
    for (sock, d) in &sent {
        sock.set_nonblocking(true).unwrap();
        let mut answers = Vec::new();
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            assert_eq!(from, server.addr);
            answers.push(buf[..n].to_vec());
        }
        let len = d.len();
        if len < SMALLEST_ANSWERED {
            assert!(answers.is_empty(), "{len} bytes answered: {answers:?}");
            continue;
        }
        assert_eq!(answers.len(), 1, "{len} bytes: {} answers", answers.len());
        let reset = &answers[0];
        if len <= 43 {
            assert_eq!(reset.len(), len - 1, "one byte smaller (RFC 9000 §10.3)");
        } else {
            assert!(
                (42..=64).contains(&reset.len()),
                "{} for {len}",
                reset.len()
            );
        }
        assert_eq!(reset[0] & 0xc0, 0x40, "looks like a short header");
        let cid = &d[1..17];
        assert_eq!(reset[reset.len() - 16..], token(&key, cid), "{len} bytes");
    }
}

#[test]
fn one_address_gets_a_few_resets_then_one_per_interval() {
    let dir = TempDir::new("reflection-limit");
    let server = Server::start(&dir, &[]);
    let sock = socket();
    let mut rng = Rng(0x1117);
    // A flood of 1200-byte short headers from one address, spoofed or not.
    const FLOOD: usize = 200;
    let start = Instant::now();
    for i in 0..FLOOD {
        sock.send_to(&short_header(&mut rng, 1200), server.addr)
            .unwrap();
        if i % 16 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let stats = wait_handled(&server, FLOOD as u64);
    let elapsed = start.elapsed();
    let got = collect(&sock, 1);
    // 3 at once, then one per 200 ms of the flood at most.
    let most = 3 + (elapsed.as_millis() / 200) as usize + 1;
    assert!(
        (1..=most).contains(&got.len()),
        "{} resets in {elapsed:?}",
        got.len()
    );
    assert!(got.iter().all(|(d, _)| d.len() <= 64));
    assert_eq!(stats.get("resets"), Some(&(got.len() as u64)), "{stats:?}");
    assert_eq!(
        stats.get("resets_limited"),
        Some(&((FLOOD - got.len()) as u64)),
        "{stats:?}"
    );
}

#[test]
fn version_negotiation_only_for_initial_sized_unknown_versions() {
    let dir = TempDir::new("reflection-vn");
    let server = Server::start(&dir, &[]);
    let sock = socket();
    let mut rng = Rng(0x0b5e55ed);
    // Never for a Version Negotiation packet, whatever its size, nor for a datagram of an
    // unknown version under 1200 bytes.
    let mut silent = 0;
    for len in [22, 100, 1199, 1200, 1350, 1500] {
        sock.send_to(&version_negotiation(&mut rng, len), server.addr)
            .unwrap();
        silent += 1;
    }
    for len in [7, 30, 600, 1198, 1199] {
        sock.send_to(&long_header(&mut rng, UNSPOKEN, len), server.addr)
            .unwrap();
        silent += 1;
    }
    wait_dropped(&server, silent);
    let got = collect(&sock, 0);
    assert!(got.is_empty(), "{} answers, e.g. {:?}", got.len(), got[0]);

    // One Version Negotiation per Initial-sized datagram of an unknown version, no larger than
    // the datagram, echoing its connection IDs and listing a version it speaks.
    for len in [1200, 1500] {
        let d = long_header(&mut rng, UNSPOKEN, len);
        sock.send_to(&d, server.addr).unwrap();
        let got = collect(&sock, 1);
        assert_eq!(got.len(), 1, "{len}-byte datagram: {} answers", got.len());
        let mut vn = got[0].0.clone();
        assert!(vn.len() < len, "a {}-byte answer to {len} bytes", vn.len());
        let hdr = quiche::Header::from_slice(&mut vn, 8).unwrap();
        assert_eq!(hdr.ty, quiche::Type::VersionNegotiation);
        assert_eq!(&hdr.dcid[..], &d[15..23], "echoes the source ID");
        assert_eq!(&hdr.scid[..], &d[6..14], "echoes the destination ID");
        assert!(hdr
            .versions
            .unwrap_or_default()
            .contains(&quiche::PROTOCOL_VERSION));
    }
    let stats = server.stats();
    assert_eq!(stats.get("accepted"), Some(&0), "{stats:?}");
}

/// Datagrams that crossed the relay in each direction.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Crossed {
    a_to_b: usize,
    b_to_a: usize,
    /// The sizes of all of them, in order.
    sizes: Vec<usize>,
}

/// Sends `seed` to server `a` as if from server `b`, then relays between them: what `a` sends
/// to `ra` goes on to `b` from `rb`, and what `b` sends to `rb` goes on to `a` from `ra`, until
/// at least `want` datagrams crossed and none for [`QUIET`] (at most [`PATIENCE`]). Returns
/// what crossed.
fn ping_pong(a: SocketAddr, b: SocketAddr, seed: &[u8], want: usize) -> Crossed {
    let (ra, rb) = (socket(), socket());
    for s in [&ra, &rb] {
        s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    }
    ra.send_to(seed, a).unwrap();
    let mut crossed = Crossed::default();
    let mut buf = [0u8; 65535];
    let start = Instant::now();
    let mut last = start;
    while start.elapsed() < PATIENCE
        && (crossed.a_to_b + crossed.b_to_a < want || last.elapsed() < QUIET)
    {
        if let Ok((n, from)) = ra.recv_from(&mut buf) {
            assert_eq!(from, a);
            rb.send_to(&buf[..n], b).unwrap();
            crossed.a_to_b += 1;
            crossed.sizes.push(n);
            last = Instant::now();
        }
        if let Ok((n, from)) = rb.recv_from(&mut buf) {
            assert_eq!(from, b);
            ra.send_to(&buf[..n], a).unwrap();
            crossed.b_to_a += 1;
            crossed.sizes.push(n);
            last = Instant::now();
        }
    }
    crossed
}

#[test]
fn two_servers_spoofed_at_each_other_do_not_ping_pong() {
    let dir = TempDir::new("reflection-pair");
    // One of each mode: with Retry (the default) an Initial gets a stateless Retry, without
    // it an Initial that does not decrypt gets nothing.
    let a = Server::start(&dir, &[]);
    let b = Server::start(&dir, &["--no-retry"]);
    let mut rng = Rng(0xfeed);
    let version = quiche::PROTOCOL_VERSION;
    // (what the attacker sends to A, what A must answer: at most one datagram, which B drops)
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        ("unknown version", long_header(&mut rng, UNSPOKEN, 1200), 1),
        (
            "Initial without token",
            long_header(&mut rng, version, 1200),
            1,
        ),
        (
            "version negotiation",
            version_negotiation(&mut rng, 1200),
            0,
        ),
    ];
    for (what, seed, answers) in &cases {
        for (x, y, name) in [(&a, &b, "A (Retry) first"), (&b, &a, "B (no Retry) first")] {
            // The server without Retry answers nothing to an Initial it cannot decrypt.
            let answers = if name.starts_with('B') && *what == "Initial without token" {
                0
            } else {
                *answers
            };
            let crossed = ping_pong(x.addr, y.addr, seed, answers);
            assert_eq!(
                (crossed.a_to_b, crossed.b_to_a),
                (answers, 0),
                "{what}, {name}"
            );
        }
    }
    // A short header for no connection draws a stateless reset, which the other server takes
    // for one, and so on: each is smaller than the one before, and each server sends at most
    // 3 to one address in a row, so the exchange dies out. A 37-byte one draws one reset of
    // 36 bytes, too small for the other server to answer; a 21-byte one (as small as a reset
    // gets) draws nothing.
    for (len, least, most) in [(1500, 2, 6), (64, 2, 6), (37, 1, 1), (36, 0, 0), (21, 0, 0)] {
        let seed = short_header(&mut rng, len);
        for (x, y, name) in [(&a, &b, "A first"), (&b, &a, "B first")] {
            let crossed = ping_pong(x.addr, y.addr, &seed, least);
            let n = crossed.sizes.len();
            assert!(
                (least..=most).contains(&n),
                "{len} bytes, {name}: {crossed:?}"
            );
            assert!(crossed.a_to_b <= 3 && crossed.b_to_a <= 3, "{crossed:?}");
            let mut prev = len;
            for &size in &crossed.sizes {
                assert!(size < prev, "{len} bytes, {name}: {crossed:?}");
                prev = size;
            }
        }
    }
    for s in [&a, &b] {
        let stats = s.stats();
        assert_eq!(stats.get("accepted"), Some(&0), "{stats:?}");
    }
}
