//! The handshake under heavy loss and corruption of its long-header packets (the interop
//! runner's handshakeloss and handshakecorruption cases, on the in-memory pipe over many
//! seeds): every handshake completes, PTO probes go in the right packet number spaces (RFC
//! 9002 §6.2.2.1, §6.2.4), client Initials stay padded (RFC 9000 §14.1), and the server never
//! sends more than three times what it received before the client's address is validated
//! (RFC 9000 §8.1), measured on the wire as the interop runner measures it.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::{client_config, server_config};
use crate::testing::{Direction, LinkConfig, Pipe, Rng, Verdict};
use crate::Config;

/// The pipe's one-way delay (no bottleneck, so arrival = send time + this).
const DELAY: Duration = Duration::from_millis(10);

/// The kinds of QUIC packet the tests tell apart (QUIC v1 long-header types, RFC 9000 §17.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Initial,
    ZeroRtt,
    Handshake,
    Retry,
    Short,
}

/// A variable-length integer (RFC 9000 §16) at `*at`, advancing `*at`.
fn varint(d: &[u8], at: &mut usize) -> Option<u64> {
    let first = *d.get(*at)?;
    let len = 1usize << (first >> 6);
    let bytes = d.get(*at..*at + len)?;
    let mut v = u64::from(first & 0x3f);
    for b in &bytes[1..] {
        v = (v << 8) | u64::from(*b);
    }
    *at += len;
    Some(v)
}

/// The packets coalesced in a datagram, in order (RFC 9000 §12.2), each with its end offset.
fn packets(d: &[u8]) -> Vec<(Kind, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < d.len() {
        let first = d[at];
        if first & 0x80 == 0 {
            out.push((Kind::Short, d.len()));
            break;
        }
        let kind = match (first >> 4) & 3 {
            0 => Kind::Initial,
            1 => Kind::ZeroRtt,
            2 => Kind::Handshake,
            _ => Kind::Retry,
        };
        let mut p = at + 5;
        let Some(&dcid_len) = d.get(p) else { break };
        p += 1 + usize::from(dcid_len);
        let Some(&scid_len) = d.get(p) else { break };
        p += 1 + usize::from(scid_len);
        if kind == Kind::Retry {
            out.push((kind, d.len()));
            break;
        }
        if kind == Kind::Initial {
            let Some(token_len) = varint(d, &mut p) else {
                break;
            };
            p += token_len as usize;
        }
        let Some(len) = varint(d, &mut p) else { break };
        let end = (p + len as usize).min(d.len());
        out.push((kind, end));
        at = end;
    }
    out
}

/// One datagram as the hook saw it.
#[derive(Clone, Debug)]
struct Record {
    dir: Direction,
    sent_at: Instant,
    len: usize,
    verdict: Verdict,
    kinds: Vec<Kind>,
    /// Whether the datagram's packets that authenticate include a Handshake packet (a
    /// corrupted datagram's last packet fails).
    valid_handshake: bool,
}

type Log = Rc<RefCell<Vec<Record>>>;

/// How the hook impairs datagrams that start with a long-header packet.
#[derive(Clone, Copy, Debug)]
struct Impair {
    drop: f64,
    corrupt: f64,
    /// Impair only datagrams that start with a long-header packet (else every datagram, as
    /// the interop runner's network simulator does).
    long_only: bool,
}

/// Installs a hook that drops or corrupts long-header datagrams at random (both directions),
/// never more than `max_burst` drops in a row per direction, and logs every datagram.
fn impair(pipe: &mut Pipe, imp: Impair, seed: u64, until: Option<Duration>) -> Log {
    let log: Log = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&log);
    let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    let start = pipe.now;
    pipe.hook = Some(Box::new(move |d| {
        let long = !imp.long_only || d.data.first().is_some_and(|b| b & 0x80 != 0);
        let active = until.is_none_or(|u| d.sent_at < start + u);
        let verdict = if long && active && rng.chance(imp.drop) {
            Verdict::Drop
        } else if long && active && rng.chance(imp.corrupt) {
            Verdict::Corrupt
        } else {
            Verdict::Deliver
        };
        sink.borrow_mut()
            .push(record(d.direction, d.sent_at, d.data, verdict));
        verdict
    }));
    log
}

fn record(dir: Direction, sent_at: Instant, data: &[u8], verdict: Verdict) -> Record {
    let pkts = packets(data);
    let n = pkts.len();
    let valid_handshake = pkts
        .iter()
        .enumerate()
        .any(|(i, (k, _))| *k == Kind::Handshake && !(verdict == Verdict::Corrupt && i + 1 == n));
    Record {
        dir,
        sent_at,
        len: data.len(),
        verdict,
        kinds: pkts.into_iter().map(|(k, _)| k).collect(),
        valid_handshake,
    }
}

/// The server's anti-amplification record, walked on the wire as the interop runner does:
/// each client datagram that reaches the server adds three times its size to the budget
/// until one carries a Handshake packet that authenticates (RFC 9000 §8.1); every server
/// datagram sent before then is charged. Returns (bytes the server sent before validation,
/// bytes it had received by its last send before validation), or an error naming the first
/// datagram over the budget.
fn amplification(log: &[Record]) -> Result<(u64, u64), String> {
    // Arrivals at the server sort before the server's sends at the same instant: the pipe
    // delivers what has arrived before it lets the sides send.
    let mut events: Vec<(Instant, u8, &Record)> = log
        .iter()
        .filter_map(|r| match (r.dir, r.verdict) {
            (Direction::ToServer, Verdict::Drop) => None,
            (Direction::ToServer, _) => Some((r.sent_at + DELAY, 0, r)),
            (Direction::ToClient, _) => Some((r.sent_at, 1, r)),
        })
        .collect();
    events.sort_by_key(|&(t, o, _)| (t, o));
    let (mut received, mut sent) = (0u64, 0u64);
    for (i, (_, _, r)) in events.iter().enumerate() {
        match r.dir {
            Direction::ToServer => {
                received += r.len as u64;
                if r.valid_handshake {
                    return Ok((sent, received));
                }
            }
            Direction::ToClient => {
                sent += r.len as u64;
                if sent > 3 * received {
                    return Err(format!(
                        "server datagram {i} brings it to {sent} bytes sent for {received} \
                         received before address validation"
                    ));
                }
            }
        }
    }
    Ok((sent, received))
}

/// A server configuration whose certificate chain is about 6 KB (the leaf and nine copies of
/// the root as intermediates), so that its first flight exceeds three times a client Initial
/// and the amplification limit really binds, as in the interop runner's amplificationlimit
/// case.
fn big_chain_server_config() -> Config {
    let dir = format!("{}/tests/certs", env!("CARGO_MANIFEST_DIR"));
    let leaf = std::fs::read_to_string(format!("{dir}/cert.crt")).unwrap();
    let root = std::fs::read_to_string(format!("{dir}/rootca.crt")).unwrap();
    let chain = std::iter::once(leaf)
        .chain(std::iter::repeat_n(root, 9))
        .collect::<String>();
    // One file per call: tests run in parallel in one process, and one removing the file
    // another is about to load made the load fail.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "quiche-big-chain-{}-{call}.pem",
        std::process::id()
    ));
    std::fs::write(&path, chain).unwrap();
    let mut c = server_config();
    c.load_cert_chain_from_pem_file(path.to_str().unwrap())
        .unwrap();
    let _ = std::fs::remove_file(&path);
    c
}

fn lossy_pipe(server: &mut Config, seed: u64) -> Pipe {
    let link = LinkConfig {
        delay: DELAY,
        ..LinkConfig::default()
    };
    Pipe::with_links(&mut client_config(), server, link.clone(), link, seed).unwrap()
}

/// The client asks on stream 0 once established, the server answers with `body`; runs until
/// the client has read it all (with FIN) or `limit` passes. Returns the run's result, what the
/// client read and whether the server answered.
fn request_response(
    pipe: &mut Pipe,
    body: &[u8],
    limit: Duration,
) -> (crate::Result<()>, Vec<u8>, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let (mut asked, mut answered, mut fin) = (false, false, false);
    let res = pipe.run_until(limit, |p| {
        if !asked && p.client.is_established() {
            asked = p.client.stream_send(0, b"GET /f\r\n", true).is_ok();
        }
        if !answered && p.server.stream_recv(0, &mut buf).is_ok_and(|(_, f)| f) {
            answered = p.server.stream_send(0, body, true) == Ok(body.len());
        }
        while let Ok((n, f)) = p.client.stream_recv(0, &mut buf) {
            got.extend_from_slice(&buf[..n]);
            fin |= f;
        }
        fin
    });
    (res, got, answered)
}

/// Runs the handshake and a 1 KiB request/response (the interop runner's handshakeloss case:
/// one small file per connection) under `imp`; returns the virtual time it took and the log.
fn lossy_download(server: &mut Config, imp: Impair, seed: u64, limit: Duration) -> (Duration, Log) {
    let mut pipe = lossy_pipe(server, seed);
    let start = pipe.now;
    let log = impair(&mut pipe, imp, seed, None);
    let body = Rng(seed | 1).bytes(1024);
    let (res, got, _) = request_response(&mut pipe, &body, limit);
    if res.is_err() {
        // The failing seed's datagrams, to see where the handshake stalled.
        for r in log.borrow().iter() {
            let t = r.sent_at - start;
            eprintln!(
                "{t:>10?} {:?} {:5} {:?} {:?}",
                r.dir, r.len, r.verdict, r.kinds
            );
        }
    }
    assert!(
        res.is_ok(),
        "seed {seed}: no response within {limit:?}: client established {} server {} \
         (client stats {:?})",
        pipe.client.is_established(),
        pipe.server.is_established(),
        pipe.client.stats()
    );
    assert!(got == body, "seed {seed}: the body arrives intact");
    assert!(pipe.client.local_error().is_none() && pipe.client.peer_error().is_none());
    (pipe.elapsed(), log)
}

/// Checks, over one connection's log, the rules that do not depend on timing: every client
/// datagram with an Initial packet is at least 1200 bytes (RFC 9000 §14.1), and the server
/// stays within its amplification limit.
fn check_wire_rules(log: &[Record], seed: u64) -> (u64, u64) {
    for r in log.iter().filter(|r| r.dir == Direction::ToServer) {
        if r.kinds.contains(&Kind::Initial) {
            assert!(
                r.len >= 1200,
                "seed {seed}: a client Initial datagram of {} bytes",
                r.len
            );
        }
        assert!(!r.kinds.contains(&Kind::Retry) && !r.kinds.contains(&Kind::ZeroRtt));
    }
    amplification(log).unwrap_or_else(|e| panic!("seed {seed}: {e}"))
}

/// Runs `seeds` connections under `imp` and checks each; returns the slowest one's time.
fn many_seeds(imp: Impair, seeds: u64, big_chain: bool) -> Duration {
    let mut slowest = Duration::ZERO;
    let (mut impaired, mut eligible, mut bound) = (0usize, 0usize, 0usize);
    for seed in 1..=seeds {
        let mut server = if big_chain {
            big_chain_server_config()
        } else {
            server_config()
        };
        let (t, log) = lossy_download(&mut server, imp, seed, Duration::from_secs(60));
        let log = log.borrow();
        let (sent, received) = check_wire_rules(&log, seed);
        // The limit mattered on this seed: the server used more than its first budget.
        bound += usize::from(sent > 3 * 1200 && received > 1200);
        impaired += log.iter().filter(|r| r.verdict != Verdict::Deliver).count();
        eligible += log
            .iter()
            .filter(|r| !imp.long_only || r.kinds[0] != Kind::Short)
            .count();
        slowest = slowest.max(t);
    }
    // The impairment really happened, at about the rate asked for.
    let rate = impaired as f64 / eligible as f64;
    let asked = imp.drop + (1.0 - imp.drop) * imp.corrupt;
    assert!(
        (rate - asked).abs() < 0.05,
        "{impaired} of {eligible} impaired, {asked} asked"
    );
    eprintln!("{imp:?}: {impaired} of {eligible} datagrams impaired; slowest {slowest:?}");
    if big_chain {
        assert!(
            bound as u64 > seeds / 4,
            "the amplification limit bound in {bound} runs only"
        );
    }
    slowest
}

#[test]
fn handshake_completes_with_30_percent_long_header_loss_over_200_seeds() {
    let slowest = many_seeds(
        Impair {
            drop: 0.3,
            corrupt: 0.0,
            long_only: true,
        },
        200,
        false,
    );
    assert!(
        slowest < Duration::from_secs(30),
        "slowest handshake + 1 KiB: {slowest:?}"
    );
}

#[test]
fn handshake_completes_with_30_percent_long_header_corruption_over_200_seeds() {
    let slowest = many_seeds(
        Impair {
            drop: 0.0,
            corrupt: 0.3,
            long_only: true,
        },
        200,
        false,
    );
    assert!(
        slowest < Duration::from_secs(30),
        "slowest handshake + 1 KiB: {slowest:?}"
    );
}

#[test]
fn handshake_completes_with_30_percent_loss_of_every_datagram_over_200_seeds() {
    let slowest = many_seeds(
        Impair {
            drop: 0.3,
            corrupt: 0.0,
            long_only: false,
        },
        200,
        false,
    );
    assert!(
        slowest < Duration::from_secs(30),
        "slowest handshake + 1 KiB: {slowest:?}"
    );
}

#[test]
fn handshake_completes_with_30_percent_corruption_of_every_datagram_over_200_seeds() {
    let slowest = many_seeds(
        Impair {
            drop: 0.0,
            corrupt: 0.3,
            long_only: false,
        },
        200,
        false,
    );
    assert!(
        slowest < Duration::from_secs(30),
        "slowest handshake + 1 KiB: {slowest:?}"
    );
}

#[test]
fn big_chain_handshake_under_loss_and_corruption_respects_amplification() {
    let slowest = many_seeds(
        Impair {
            drop: 0.2,
            corrupt: 0.1,
            long_only: true,
        },
        100,
        true,
    );
    assert!(
        slowest < Duration::from_secs(30),
        "slowest handshake + 1 KiB: {slowest:?}"
    );
}

/// The server's whole first flight is lost: the server's PTO probe starts with an Initial
/// packet (the space whose timer fired) and coalesces Handshake data too, since the client
/// may hold only Initial keys (RFC 9002 §6.2.4); the client, which has no Handshake keys,
/// probes with padded Initials (§6.2.2.1).
#[test]
fn lost_server_flight_is_probed_in_initial_with_handshake_coalesced() {
    let mut server = server_config();
    let mut pipe = lossy_pipe(&mut server, 5);
    let log: Log = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&log);
    let start = pipe.now;
    // Everything the server sends in the first 1.5 s is lost: its first flight and the probes
    // of its first PTO (about 1 s, as it has no RTT sample).
    pipe.hook = Some(Box::new(move |d| {
        let lose =
            d.direction == Direction::ToClient && d.sent_at < start + Duration::from_millis(1500);
        let v = if lose {
            Verdict::Drop
        } else {
            Verdict::Deliver
        };
        sink.borrow_mut()
            .push(record(d.direction, d.sent_at, d.data, v));
        v
    }));
    pipe.handshake().unwrap();
    let log = log.borrow();
    let server: Vec<&Record> = log
        .iter()
        .filter(|r| r.dir == Direction::ToClient)
        .collect();
    let first_flight = server.iter().filter(|r| r.sent_at == start + DELAY).count();
    assert!(first_flight >= 1);
    let lost = server.iter().filter(|r| r.verdict == Verdict::Drop).count();
    assert!(
        lost > first_flight,
        "the server probed within 1.5 s: {lost} lost"
    );
    let probes: Vec<&&Record> = server[first_flight..lost].iter().collect();
    assert!(
        probes
            .iter()
            .any(|r| r.kinds.contains(&Kind::Initial) && r.kinds.contains(&Kind::Handshake)),
        "no server probe coalesced Initial and Handshake packets: {probes:?}"
    );
    // The client had only Initial keys until the first server packet got through: its
    // probes are Initial packets in datagrams of at least 1200 bytes.
    let first_delivered = server
        .iter()
        .find(|r| r.verdict == Verdict::Deliver)
        .unwrap()
        .sent_at;
    let client_before: Vec<&Record> = log
        .iter()
        .filter(|r| r.dir == Direction::ToServer && r.sent_at < first_delivered + DELAY)
        .collect();
    assert!(
        client_before.len() >= 2,
        "the client probed: {client_before:?}"
    );
    assert!(client_before
        .iter()
        .all(|r| r.kinds == [Kind::Initial] && r.len >= 1200));
    amplification(&log).unwrap();
}

/// Every client datagram with a Handshake packet is lost for 1.5 s: the server cannot
/// validate the address and must stop at three times what it received (RFC 9000 §8.1; its
/// PTO is not armed while blocked, RFC 9002 §6.2.2.1); the client, which has Handshake keys
/// and no acknowledgment of its Handshake packets, keeps probing with Handshake packets even
/// with nothing in flight, which unblocks the server once they get through.
#[test]
fn client_handshake_probes_unblock_an_amplification_limited_server() {
    let mut server = big_chain_server_config();
    let mut pipe = lossy_pipe(&mut server, 9);
    let log: Log = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&log);
    let start = pipe.now;
    let blackout = Duration::from_millis(1500);
    pipe.hook = Some(Box::new(move |d| {
        let has_hs = packets(d.data).iter().any(|(k, _)| *k == Kind::Handshake);
        let lose = d.direction == Direction::ToServer && has_hs && d.sent_at < start + blackout;
        let v = if lose {
            Verdict::Drop
        } else {
            Verdict::Deliver
        };
        sink.borrow_mut()
            .push(record(d.direction, d.sent_at, d.data, v));
        v
    }));
    pipe.run_until(Duration::from_secs(20), |p| {
        p.server.is_established() && p.client.is_established()
    })
    .unwrap();
    let log = log.borrow();
    let (sent, received) = amplification(&log).unwrap();
    // The limit bound: the ~6 KB flight stopped within a datagram of the first budget.
    assert!(
        sent > 3 * 1200 - 1200,
        "the server sent {sent} bytes before validation"
    );
    assert!(sent <= 3 * received);
    let lost = log.iter().filter(|r| r.verdict == Verdict::Drop).count();
    assert!(
        lost >= 3,
        "the client probed with Handshake packets during the outage: {lost}"
    );
    // Those probes were Handshake packets: the client had dropped its Initial keys.
    let last_lost = log
        .iter()
        .rev()
        .find(|r| r.verdict == Verdict::Drop)
        .unwrap();
    assert!(
        last_lost.kinds.contains(&Kind::Handshake) && !last_lost.kinds.contains(&Kind::Initial)
    );
    assert!(pipe.elapsed() >= blackout);
}

#[test]
fn packet_walker_reads_coalesced_long_headers() {
    // An Initial (empty token, 3-byte payload) coalesced with a Handshake packet and a
    // short-header packet.
    let mut d = vec![0xc0, 0, 0, 0, 1, 1, 0xaa, 1, 0xbb, 0, 3, 1, 2, 3];
    d.extend_from_slice(&[0xe0, 0, 0, 0, 1, 0, 0, 0x40, 2, 9, 9]);
    d.extend_from_slice(&[0x40, 1, 2, 3]);
    let kinds: Vec<Kind> = packets(&d).into_iter().map(|(k, _)| k).collect();
    assert_eq!(kinds, [Kind::Initial, Kind::Handshake, Kind::Short]);
    let r = record(
        Direction::ToServer,
        crate::testing::virtual_epoch(),
        &d,
        Verdict::Corrupt,
    );
    assert!(
        r.valid_handshake,
        "the corrupted last packet is the short one"
    );
    let r = record(
        Direction::ToServer,
        crate::testing::virtual_epoch(),
        &d[..25],
        Verdict::Corrupt,
    );
    assert!(
        !r.valid_handshake,
        "the corrupted last packet is the Handshake one"
    );
}

/// The last packet of a response is lost and every acknowledgment the client sends for a
/// while is lost too: the server's first PTO probe carries the response again (RFC 9002
/// §6.2.4), so it arrives while the client's acknowledgments are still being lost; PING-only
/// probes could only repair it once an acknowledgment got through.
#[test]
fn one_rtt_probe_resends_a_lost_response_without_waiting_for_acks() {
    let mut server = server_config();
    let mut pipe = lossy_pipe(&mut server, 3);
    pipe.handshake().unwrap();

    let body = Rng(11).bytes(1024);
    let start = pipe.now;
    let outage = Duration::from_secs(3);
    let mut dropped_response = false;
    // The client's datagram with the request goes through; the ones after it do not.
    let request = pipe.link_stats(Direction::ToServer).sent;
    pipe.hook = Some(Box::new(move |d| {
        let in_outage = d.sent_at < start + outage;
        match d.direction {
            // The first datagram of the response (the only one: 1 KiB fits).
            Direction::ToClient if !dropped_response && d.data.len() > 1000 => {
                dropped_response = true;
                Verdict::Drop
            }
            // Everything the client sends after its request, during the outage.
            Direction::ToServer if in_outage && d.index > request => Verdict::Drop,
            _ => Verdict::Deliver,
        }
    }));
    let sent = pipe.client.stream_send(0, b"GET /f\r\n", true);
    assert_eq!(
        sent,
        Ok(8),
        "closed: {} {:?}",
        pipe.client.is_closed(),
        pipe.client.local_error()
    );
    let mut buf = [0u8; 4096];
    let (mut answered, mut got, mut fin) = (false, Vec::new(), false);
    pipe.run_until(outage, |p| {
        if !answered && p.server.stream_recv(0, &mut buf).is_ok_and(|(_, f)| f) {
            answered = p.server.stream_send(0, &body, true) == Ok(body.len());
        }
        while let Ok((n, f)) = p.client.stream_recv(0, &mut buf) {
            got.extend_from_slice(&buf[..n]);
            fin |= f;
        }
        fin
    })
    .unwrap_or_else(|e| {
        panic!(
            "no response during the outage ({e:?}): answered {answered}, server {:?}, links {:?} {:?}",
            pipe.server.stats(),
            pipe.link_stats(Direction::ToServer),
            pipe.link_stats(Direction::ToClient)
        )
    });
    assert_eq!(got, body);
}

/// A response whose every datagram is lost for 3 s, then whose receiver's ACKs all are: the
/// PTO probes alone must bring the whole 4 kB body before the idle timeout. Once the first
/// probes (HANDSHAKE_DONE and tickets again) are the oldest packets in flight, probes that only
/// repeat the oldest and newest packets never carry the start of the body (seen under 30 %
/// loss: a 1 KiB response done after 33 s, at the first ACK to get through), and probes that
/// always start from the oldest unacknowledged byte never reach its end.
#[test]
fn probes_carry_the_oldest_stream_data_when_acks_do_not_arrive() {
    let mut pipe = lossy_pipe(&mut server_config(), 3);
    pipe.handshake().unwrap();
    let start = pipe.now;
    let blind_until = start + Duration::from_secs(3);
    let (dropped_to_client, dropped_to_server) =
        (Rc::new(RefCell::new(0)), Rc::new(RefCell::new(0)));
    let (c, s) = (Rc::clone(&dropped_to_client), Rc::clone(&dropped_to_server));
    pipe.hook = Some(Box::new(move |d| {
        // First everything to the client is lost, then everything to the server.
        let to_client = d.direction == Direction::ToClient;
        if to_client && d.sent_at < blind_until {
            *c.borrow_mut() += 1;
            Verdict::Drop
        } else if !to_client && d.sent_at >= blind_until {
            *s.borrow_mut() += 1;
            Verdict::Drop
        } else {
            Verdict::Deliver
        }
    }));
    let body = Rng(3).bytes(4000);
    let (res, got, answered) = request_response(&mut pipe, &body, Duration::from_secs(30));
    assert!(answered, "the request reached the server");
    assert!(
        *dropped_to_client.borrow() >= 3,
        "the response and first probes were lost"
    );
    assert!(
        res.is_ok(),
        "body incomplete after 30 s: {} of {} bytes, {} ACK datagrams dropped",
        got.len(),
        body.len(),
        dropped_to_server.borrow()
    );
    assert!(got == body);
    assert!(
        *dropped_to_server.borrow() > 0,
        "no ACK reached the server after the blind phase"
    );
}
