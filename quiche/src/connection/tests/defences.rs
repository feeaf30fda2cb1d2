//! Attacks mounted on the pipe and the outcome each must have: optimistic ACKs, ACK-range and
//! connection-ID floods, CRYPTO data beyond the buffer and 0-RTT replay. (Stream-limit,
//! PATH_CHALLENGE and amplification attacks have their tests in `tests_streams`,
//! `tests_migration` and `tests_handshake_loss`.)

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use super::streams::{encode, established};
use super::{client_config, server_config};
use crate::connection::Connection;
use crate::frame::{AckRanges, Frame};
use crate::packet::Epoch;
use crate::ranges::RangeSet;
use crate::recovery::PnSkipper;
use crate::testing::{Direction, Pipe, Verdict};
use crate::{ConnectionId, RecvInfo};

const PROTOCOL_VIOLATION: u64 = 0xa;
const CONNECTION_ID_LIMIT_ERROR: u64 = 0x9;
const CRYPTO_BUFFER_EXCEEDED: u64 = 0xd;

fn to_server(pipe: &Pipe) -> RecvInfo {
    RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    }
}

/// Seals `frames` in a 1-RTT packet of the client and hands it to the server.
fn client_sends(pipe: &mut Pipe, frames: &[Frame]) {
    let mut pkt = pipe.client.raw_1rtt_packet(&encode(frames), pipe.now);
    let info = to_server(pipe);
    let _ = pipe.server.recv_at(&mut pkt, info, pipe.now);
}

fn server_error(pipe: &Pipe) -> Option<u64> {
    pipe.server
        .local_error()
        .filter(|e| !e.is_app)
        .map(|e| e.error_code)
}

/// Runs a download of `len` bytes from the server on stream 1... (the server's first bidi
/// stream is 1) until the client has read it all.
fn download(pipe: &mut Pipe, len: usize) {
    let data = vec![0x5a; len];
    let mut off = 0;
    let mut got = 0;
    let mut buf = vec![0u8; 65536];
    pipe.run_until(Duration::from_secs(60), |p| {
        if off < data.len() {
            off += p.server.stream_send(1, &data[off..], true).unwrap_or(0);
        }
        while let Ok((n, _)) = p.client.stream_recv(1, &mut buf) {
            got += n;
        }
        got == data.len()
    })
    .unwrap();
}

#[test]
fn honest_peers_never_trip_the_skipped_numbers_and_see_the_gaps() {
    let mut pipe = established(&mut client_config(), &mut server_config());
    // About 1,700 packets: several skips.
    download(&mut pipe, 2_000_000);
    assert!(pipe.server.local_error().is_none() && pipe.client.local_error().is_none());
    let acks = &pipe.client.spaces[Epoch::Application.index()].acks;
    let largest = acks.largest_received().unwrap();
    assert!(largest > 2 * PnSkipper::MIN_INTERVAL, "{largest}");
    // No loss on this link: every number below the largest not received was skipped.
    // One skip in every 256 to 511 numbers: between 1 and 4 in the last 1,000.
    let missing = (largest - 1000..largest)
        .filter(|&pn| !acks.is_duplicate(pn))
        .count();
    assert!(
        (1..=4).contains(&missing),
        "{missing} numbers skipped in 1,000"
    );
}

#[test]
fn optimistic_ack_of_a_skipped_number_is_protocol_violation() {
    let mut pipe = established(&mut client_config(), &mut server_config());
    download(&mut pipe, 1_000_000);
    // The attacker acknowledges everything up to the largest number it saw, as if nothing it
    // did not receive had been sent: the skipped number gives it away.
    let largest = pipe.client.spaces[Epoch::Application.index()]
        .acks
        .largest_received()
        .unwrap();
    let mut ranges = RangeSet::new(4);
    ranges.insert(0..largest + 1);
    client_sends(
        &mut pipe,
        &[Frame::ACK {
            ack_delay: 0,
            ranges: AckRanges::Set(&ranges),
            ecn_counts: None,
        }],
    );
    assert_eq!(server_error(&pipe), Some(PROTOCOL_VIOLATION));
}

/// The server "sends" `n` tiny 1-RTT packets (recorded by recovery, never delivered): numbers
/// without skips, which a flood of ACK ranges can name.
fn server_sent_packets(pipe: &mut Pipe, n: u64) -> u64 {
    let first = pipe.server.spaces[Epoch::Application.index()].next_pn;
    for _ in 0..n {
        pipe.server.raw_1rtt_packet(&[0x01], pipe.now);
    }
    first
}

#[test]
fn ack_range_flood_costs_bounded_work_and_memory() {
    let mut pipe = established(&mut client_config(), &mut server_config());
    let first = server_sent_packets(&mut pipe, 10_000);
    // 5,000 ranges of one packet each in one (large) packet: every other number.
    let mut ranges = RangeSet::new(10_000);
    for pn in (first..first + 10_000).step_by(2) {
        ranges.insert(pn..pn + 1);
    }
    assert_eq!(ranges.len(), 5_000);
    let ack = Frame::ACK {
        ack_delay: 0,
        ranges: AckRanges::Set(&ranges),
        ecn_counts: None,
    };
    for _ in 0..3 {
        client_sends(&mut pipe, std::slice::from_ref(&ack));
        assert_eq!(server_error(&pipe), None);
        pipe.server.debug_check_invariants();
    }
    // What the ACK processing keeps is sized by the packets tracked, not by the ranges named.
    assert!(pipe.server.scratch.outcome().acked.capacity() <= 2 * 10_000 + 64);
    // Ranges beyond what was sent end the connection at the first of them.
    let mut beyond = RangeSet::new(10_000);
    for pn in (first + 20_000..first + 30_000).step_by(2) {
        beyond.insert(pn..pn + 1);
    }
    client_sends(
        &mut pipe,
        &[Frame::ACK {
            ack_delay: 0,
            ranges: AckRanges::Set(&beyond),
            ecn_counts: None,
        }],
    );
    assert_eq!(server_error(&pipe), Some(PROTOCOL_VIOLATION));
}

fn new_cid(seq_num: u64, retire_prior_to: u64) -> Frame<'static> {
    // Distinct IDs and tokens per sequence number.
    let id: &'static [u8] = Box::leak(seq_num.to_be_bytes().to_vec().into_boxed_slice());
    Frame::NewConnectionId {
        seq_num,
        retire_prior_to,
        conn_id: id,
        reset_token: [seq_num as u8; 16],
    }
}

#[test]
fn new_connection_id_flood_is_connection_id_limit_error() {
    let mut pipe = established(&mut client_config(), &mut server_config());
    // Far more IDs than active_connection_id_limit, none retired.
    let frames: Vec<Frame> = (100..400).map(|s| new_cid(s, 0)).collect();
    client_sends(&mut pipe, &frames);
    assert_eq!(server_error(&pipe), Some(CONNECTION_ID_LIMIT_ERROR));
}

#[test]
fn new_connection_id_flood_retiring_as_it_goes_keeps_the_id_set_bounded() {
    let mut pipe = established(&mut client_config(), &mut server_config());
    // Each ID retires every earlier one: legal while the server's RETIRE_CONNECTION_IDs get
    // acknowledged, and what it holds stays bounded.
    for s in 100..400u64 {
        client_sends(&mut pipe, &[new_cid(s, s)]);
        assert_eq!(server_error(&pipe), None, "at {s}");
        let until = pipe.now + Duration::from_millis(40);
        // Ends early (Err) once nothing is left to do: the retirements were acknowledged.
        let _ = pipe.run_until(Duration::from_secs(1), |p| p.now >= until);
        assert!(
            pipe.server.available_dcids() <= 8,
            "{}",
            pipe.server.available_dcids()
        );
    }
}

/// Lets the server write everything it has into packets the client never sees (so nothing it
/// sends is ever acknowledged).
fn server_sends_into_the_void(pipe: &mut Pipe) {
    let mut out = [0u8; 1500];
    while pipe.server.send_at(&mut out, pipe.now).is_ok() {}
}

#[test]
fn retirements_never_acknowledged_are_bounded_then_connection_id_limit_error() {
    let mut pipe = established(&mut client_config(), &mut server_config());
    let bound = pipe.server.cids.max_unacked_retirements();
    assert!((4..=64).contains(&bound), "{bound}");
    // Each ID retires the one before it, and the attacker never acknowledges the server's
    // RETIRE_CONNECTION_IDs (RFC 9000 §5.1.2): the server's unacknowledged retirements grow by
    // one a frame, up to its bound, and then it closes instead of holding more. Virtual time
    // moves so that loss detection re-queues the frames it sent.
    let mut closed_at = None;
    let mut most_held = 0;
    for s in 100..100 + 4 * bound {
        client_sends(&mut pipe, &[new_cid(s, s)]);
        server_sends_into_the_void(&mut pipe);
        let (retiring, queued) = pipe.server.cids.retirements_pending();
        assert!(retiring as u64 <= bound + 1, "{retiring} at {s}");
        assert!(queued as u64 <= bound + 1, "{queued} at {s}");
        if let Some(e) = server_error(&pipe) {
            closed_at = Some((s, e));
            break;
        }
        most_held = most_held.max(retiring as u64);
        pipe.now += Duration::from_millis(50);
        pipe.server.on_timeout_at(pipe.now);
    }
    let (s, e) = closed_at.expect("the server kept retiring without acknowledgements");
    assert_eq!(e, CONNECTION_ID_LIMIT_ERROR);
    // It tolerated exactly its bound (twice its limit: the least §5.1.2 asks to allow), and
    // closed at the first retirement beyond it.
    assert_eq!(most_held, bound, "closed after {} frames", s - 100 + 1);
    assert!(s - 100 < bound + 1, "closed after {} frames", s - 100 + 1);
}

#[test]
fn retire_connection_id_flood_gets_bounded_replacements() {
    let mut pipe = established(&mut client_config(), &mut server_config());
    let before = pipe.server.active_scids();
    // The same (already retired) numbers again and again, and numbers never issued beyond.
    for _ in 0..200 {
        client_sends(&mut pipe, &[Frame::RetireConnectionId { seq_num: 1 }]);
        assert_eq!(server_error(&pipe), None);
    }
    assert!(pipe.server.active_scids() <= before.max(8));
    client_sends(&mut pipe, &[Frame::RetireConnectionId { seq_num: 1 << 40 }]);
    assert_eq!(server_error(&pipe), Some(PROTOCOL_VIOLATION));
}

#[test]
fn crypto_data_beyond_the_buffer_is_crypto_buffer_exceeded() {
    let mut pipe = established(&mut client_config(), &mut server_config());
    // Post-handshake CRYPTO data far ahead of what was read: the server does not buffer it.
    let data = [0u8; 16];
    client_sends(
        &mut pipe,
        &[Frame::Crypto {
            offset: 1 << 30,
            data: &data,
        }],
    );
    assert_eq!(server_error(&pipe), Some(CRYPTO_BUFFER_EXCEEDED));
}

/// Records the client's datagrams as they leave.
fn capture(pipe: &mut Pipe) -> Rc<RefCell<Vec<Vec<u8>>>> {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let sink = seen.clone();
    pipe.hook = Some(Box::new(move |d| {
        if d.direction == Direction::ToServer {
            sink.borrow_mut().push(d.data.to_vec());
        }
        Verdict::Deliver
    }));
    seen
}

#[test]
fn replayed_zero_rtt_is_not_accepted_twice() {
    let mut client = client_config();
    client.enable_early_data();
    let mut server = server_config();
    server.enable_early_data();
    let session = {
        let mut first = Pipe::new(&mut client, &mut server).unwrap();
        first.handshake().unwrap();
        first
            .run_until(Duration::from_secs(5), |p| p.client.session().is_some())
            .unwrap();
        first.client.session().unwrap().to_vec()
    };
    // The genuine client: its first flight (ClientHello and a 0-RTT request) is recorded by an
    // on-path attacker.
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    let flight = capture(&mut pipe);
    pipe.client.set_session(&session).unwrap();
    pipe.flush().unwrap();
    pipe.client
        .stream_send(0, b"GET /transfer\r\n", true)
        .unwrap();
    assert!(pipe.client.is_in_early_data());
    pipe.handshake().unwrap();
    assert!(pipe.server.tls.is_early_data_accepted());
    let flight = flight.borrow().clone();

    // The attacker replays that flight to a fresh connection of the same server.
    let mut replayed = crate::accept(
        &ConnectionId::from_ref(&[0x42; 16]),
        None,
        pipe.server_addr,
        pipe.client_addr,
        &mut server,
    )
    .unwrap();
    let info = to_server(&pipe);
    for mut d in flight.iter().take(4).cloned() {
        let _ = replayed.recv_at(&mut d, info, pipe.now);
    }
    assert!(
        !replayed.tls.is_early_data_accepted(),
        "0-RTT accepted twice"
    );
    assert!(
        !replayed.stream_readable(0),
        "replayed early data delivered"
    );
    let mut buf = [0u8; 64];
    assert!(replayed.stream_recv(0, &mut buf).is_err());
    let _: &Connection = &replayed;
}

// Reflection: Version Negotiation and stateless resets must not let an attacker make an
// endpoint answer packets it cannot authenticate (RFC 9000 §6, §10.3.3; RFC 8999).

fn to_client(pipe: &Pipe) -> RecvInfo {
    RecvInfo {
        from: pipe.server_addr,
        to: pipe.client_addr,
    }
}

/// A Version Negotiation packet to the endpoint whose ID is `dcid`, from `scid`, listing
/// `versions` (RFC 8999 §6).
fn version_negotiation(dcid: &[u8], scid: &[u8], versions: &[u32]) -> Vec<u8> {
    let mut vn = vec![0xc0, 0, 0, 0, 0, dcid.len() as u8];
    vn.extend_from_slice(dcid);
    vn.push(scid.len() as u8);
    vn.extend_from_slice(scid);
    for v in versions {
        vn.extend_from_slice(&v.to_be_bytes());
    }
    vn
}

/// A version nobody speaks (a reserved one, RFC 9000 §15).
const UNSPOKEN: u32 = 0x0a0a_0a0a;

/// QUIC v2 (RFC 9369), which both sides speak.
const QUIC_V2: u32 = 0x6b33_43cf;

/// What `conn` would send now, written into packets nobody receives.
fn datagrams_sent(conn: &mut Connection, now: std::time::Instant) -> usize {
    let mut out = [0u8; 1500];
    let mut n = 0;
    while conn.send_at(&mut out, now).is_ok() {
        n += 1;
    }
    n
}

#[test]
fn client_ignores_version_negotiation_listing_its_own_version() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    let version = pipe.client.version;
    // The client's first flight is in flight; an attacker answers it with a VN that echoes
    // the IDs but lists the client's own version (so it cannot be genuine, RFC 9000 §6.2),
    // and QUIC v2 first, which a client taken in would move to.
    let (scid, dcid) = (
        pipe.client.source_id().to_vec(),
        pipe.client.destination_id().to_vec(),
    );
    let mut vn = version_negotiation(&scid, &dcid, &[QUIC_V2, UNSPOKEN, version]);
    let info = to_client(&pipe);
    assert!(pipe.client.recv_at(&mut vn, info, pipe.now).is_ok());
    assert!(!pipe.client.is_closed() && pipe.client.local_error().is_none());
    assert_eq!(pipe.client.version, version);
    assert_eq!(pipe.client.vn_original_version, None);
    // Nothing changed: the handshake completes in the version it started with.
    pipe.handshake().unwrap();
    assert_eq!(pipe.client.version, version);
    assert_eq!(pipe.server.version, version);
}

#[test]
fn client_ignores_version_negotiation_after_any_other_packet() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    // Once the client has processed a packet from the server, a VN (here listing only a
    // version it does not speak, which would otherwise end the attempt) is ignored.
    pipe.run_until(Duration::from_secs(5), |p| p.client.stats().recv > 0)
        .unwrap();
    let (scid, dcid) = (
        pipe.client.source_id().to_vec(),
        pipe.client.destination_id().to_vec(),
    );
    let mut vn = version_negotiation(&scid, &dcid, &[UNSPOKEN]);
    let info = to_client(&pipe);
    assert!(pipe.client.recv_at(&mut vn, info, pipe.now).is_ok());
    assert!(!pipe.client.is_closed() && pipe.client.local_error().is_none());
    pipe.handshake().unwrap();
    // And so once established.
    let mut vn = version_negotiation(&scid, &dcid, &[UNSPOKEN]);
    assert!(pipe.client.recv_at(&mut vn, info, pipe.now).is_ok());
    assert!(!pipe.client.is_closed() && pipe.client.local_error().is_none());
}

#[test]
fn server_never_answers_version_negotiation() {
    let mut pipe = established(&mut client_config(), &mut server_config());
    datagrams_sent(&mut pipe.server, pipe.now);
    let (scid, dcid) = (
        pipe.server.source_id().to_vec(),
        pipe.server.destination_id().to_vec(),
    );
    for versions in [&[UNSPOKEN][..], &[], &[1, UNSPOKEN]] {
        let mut vn = version_negotiation(&scid, &dcid, versions);
        let info = to_server(&pipe);
        let _ = pipe.server.recv_at(&mut vn, info, pipe.now);
        assert_eq!(
            datagrams_sent(&mut pipe.server, pipe.now),
            0,
            "{versions:?}"
        );
        assert!(!pipe.server.is_closed() && pipe.server.local_error().is_none());
    }
}

#[test]
fn undecryptable_short_headers_of_any_size_draw_no_reply() {
    // A stateless reset, or garbage shaped like one, that does not carry a token of the peer
    // is dropped without a word: no reset answers a reset, and nothing answers garbage
    // (RFC 9000 §10.3.3). Both sides, every size from 1 byte to a full datagram.
    let mut pipe = established(&mut client_config(), &mut server_config());
    let mut rng = crate::testing::Rng(17);
    for server in [true, false] {
        let (to_s, to_c) = (to_server(&pipe), to_client(&pipe));
        let (conn, info) = if server {
            (&mut pipe.server, to_s)
        } else {
            (&mut pipe.client, to_c)
        };
        datagrams_sent(conn, pipe.now);
        let id = conn.source_id().into_owned();
        for len in (1..=1500).step_by(7) {
            let mut d = rng.bytes(len);
            d[0] = 0x40 | (d[0] & 0x3f);
            // Addressed to a live ID, so it reaches the connection and fails to decrypt.
            let room = len.saturating_sub(1).min(id.len());
            d[1..1 + room].copy_from_slice(&id[..room]);
            let _ = conn.recv_at(&mut d, info, pipe.now);
            assert_eq!(
                datagrams_sent(conn, pipe.now),
                0,
                "len {len}, server {server}"
            );
            assert!(!conn.is_draining() && !conn.is_closed(), "len {len}");
        }
    }
}
