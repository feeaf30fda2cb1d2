//! Pipe tests for streams and flow control (many streams, resets, priorities, back-pressure,
//! window auto-tuning), DATAGRAM frames, connection IDs and stateless resets, and the
//! CONNECTION_CLOSE code of every stream-related violation a peer can commit.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use octets::OctetsMut;

use super::{client_config, server_config};
use crate::connection::sent_frames::SentFrame;
use crate::connection::{Connection, RecvInfo};
use crate::frame::Frame;
use crate::packet::{ConnectionId, Epoch};
use crate::testing::{Direction, LinkConfig, Pipe, Rng, Verdict};
use crate::{Config, Error, Shutdown};

/// Deterministic pseudo-random payload.
fn payload(len: usize, seed: u64) -> Vec<u8> {
    Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1).bytes(len)
}

impl Connection {
    /// [`Connection::fuzz_seal_1rtt`] for tests, which always have 1-RTT keys.
    pub(super) fn raw_1rtt_packet(&mut self, payload: &[u8], now: Instant) -> Vec<u8> {
        self.fuzz_seal_1rtt(payload, now).expect("1-RTT keys")
    }
}

/// The wire encoding of `frames`, one after the other.
pub(crate) fn encode(frames: &[Frame]) -> Vec<u8> {
    let mut buf = vec![0u8; 1 << 16];
    let mut b = OctetsMut::with_slice(&mut buf);
    for f in frames {
        f.to_bytes(&mut b).unwrap();
    }
    let len = b.off();
    buf.truncate(len);
    buf
}

/// A pipe whose handshake is confirmed and whose post-handshake frames (HANDSHAKE_DONE,
/// NEW_CONNECTION_ID, ...) have settled.
pub(super) fn established(client: &mut Config, server: &mut Config) -> Pipe {
    let mut pipe = Pipe::new(client, server).unwrap();
    settle(&mut pipe);
    pipe
}

fn settle(pipe: &mut Pipe) {
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.client.handshake_confirmed
            && p.client.path_stats().bytes_in_flight == 0
            && p.server.path_stats().bytes_in_flight == 0
    })
    .unwrap();
}

pub(super) fn to_server(pipe: &Pipe) -> RecvInfo {
    RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    }
}

pub(super) fn to_client(pipe: &Pipe) -> RecvInfo {
    RecvInfo {
        from: pipe.server_addr,
        to: pipe.client_addr,
    }
}

/// Reads everything readable on `conn` into `got`; returns the streams that reached their end.
fn read_all(conn: &mut Connection, got: &mut HashMap<u64, Vec<u8>>) -> Vec<u64> {
    let mut buf = vec![0u8; 65536];
    let mut ended = Vec::new();
    for id in conn.readable().collect::<Vec<_>>() {
        loop {
            match conn.stream_recv(id, &mut buf) {
                Ok((n, fin)) => {
                    got.entry(id).or_default().extend_from_slice(&buf[..n]);
                    if fin {
                        ended.push(id);
                        break;
                    }
                }
                Err(Error::Done) => break,
                Err(e) => panic!("stream_recv({id}): {e:?}"),
            }
        }
    }
    ended
}

// ---------------------------------------------------------------------------------------------
// Many streams, resets, priorities.

/// The client opens 1,000 bidirectional streams carrying 10 KiB each; the server reads them and
/// ends its side of each. With `max_streams` below 1,000 the client can only go on as MAX_STREAMS
/// updates arrive.
fn thousand_streams(max_streams: u64) {
    const STREAMS: usize = 1000;
    const LEN: usize = 10 * 1024;
    let mut server = server_config();
    server.set_initial_max_streams_bidi(max_streams);
    let mut pipe = established(&mut client_config(), &mut server);
    assert_eq!(pipe.client.peer_streams_left_bidi(), max_streams);

    let data: Vec<Vec<u8>> = (0..STREAMS).map(|i| payload(LEN, i as u64)).collect();
    let mut sent = vec![0usize; STREAMS];
    let mut first_unsent = 0;
    let mut got = HashMap::new();
    let mut server_done = 0;
    let mut client_done = 0;
    let mut limited = 0;
    let mut blank = HashMap::new();
    pipe.run_until(Duration::from_secs(120), |p| {
        for i in first_unsent..STREAMS {
            if sent[i] == LEN {
                continue;
            }
            match p
                .client
                .stream_send(4 * i as u64, &data[i][sent[i]..], true)
            {
                Ok(n) => sent[i] += n,
                Err(Error::Done) => {}
                Err(Error::StreamLimit) => {
                    limited += 1;
                    break;
                }
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        while first_unsent < STREAMS && sent[first_unsent] == LEN {
            first_unsent += 1;
        }
        for id in read_all(&mut p.server, &mut got) {
            p.server.stream_send(id, b"", true).unwrap();
            server_done += 1;
        }
        client_done += read_all(&mut p.client, &mut blank).len();
        client_done == STREAMS
    })
    .unwrap();

    assert_eq!(server_done, STREAMS);
    for (i, d) in data.iter().enumerate() {
        assert_eq!(got.get(&(4 * i as u64)), Some(d), "stream {}", 4 * i);
    }
    assert!(blank.values().all(Vec::is_empty));
    if max_streams < STREAMS as u64 {
        assert!(limited > 0, "the stream limit was never reached");
    }
    // Let the last acknowledgements arrive: every finished stream is collected on both sides.
    pipe.run_until(Duration::from_secs(5), |p| {
        p.server.streams.is_empty() && p.client.streams.is_empty()
    })
    .unwrap();
    assert!(pipe.server.streams.local_max_streams(true) >= STREAMS as u64);
}

#[test]
fn thousand_streams_with_max_streams_updates() {
    thousand_streams(100);
}

#[test]
fn thousand_streams_allowed_at_once() {
    thousand_streams(1000);
}

#[test]
fn reset_in_the_middle_leaves_other_streams_intact() {
    const LEN: usize = 1 << 20;
    let mut pipe = established(&mut client_config(), &mut server_config());
    let ids = [0u64, 4, 8];
    let data: HashMap<u64, Vec<u8>> = ids.iter().map(|&id| (id, payload(LEN, id))).collect();
    let mut sent: HashMap<u64, usize> = ids.iter().map(|&id| (id, 0)).collect();
    for &id in &ids {
        // Share the bandwidth so that stream 4 is mid-way when it is reset.
        pipe.client.stream_priority(id, 3, true).unwrap();
    }
    let mut got = HashMap::new();
    let mut ended = Vec::new();
    let mut reset_seen = None;
    let mut reset_done = false;
    let mut buf = vec![0u8; 65536];
    pipe.run_until(Duration::from_secs(60), |p| {
        for &id in &ids {
            let s = sent[&id];
            if s == LEN || (id == 4 && reset_done) {
                continue;
            }
            match p.client.stream_send(id, &data[&id][s..], true) {
                Ok(n) => *sent.get_mut(&id).unwrap() += n,
                Err(Error::Done) => {}
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        let at_4 = got.get(&4).map_or(0, Vec::len);
        if !reset_done && at_4 >= 256 * 1024 {
            p.client.stream_shutdown(4, Shutdown::Write, 42).unwrap();
            reset_done = true;
        }
        for id in p.server.readable().collect::<Vec<_>>() {
            loop {
                match p.server.stream_recv(id, &mut buf) {
                    Ok((n, fin)) => {
                        got.entry(id).or_default().extend_from_slice(&buf[..n]);
                        if fin {
                            ended.push(id);
                            break;
                        }
                    }
                    Err(Error::Done) => break,
                    Err(Error::StreamReset(code)) => {
                        reset_seen = Some((id, code));
                        break;
                    }
                    Err(e) => panic!("stream_recv: {e:?}"),
                }
            }
        }
        ended.len() == 2 && reset_seen.is_some()
    })
    .unwrap();

    assert_eq!(reset_seen, Some((4, 42)));
    ended.sort_unstable();
    assert_eq!(ended, vec![0, 8]);
    assert_eq!(got[&0], data[&0]);
    assert_eq!(got[&8], data[&8]);
    let part = &got[&4];
    assert!(part.len() < LEN, "stream 4 was reset before it completed");
    assert_eq!(&data[&4][..part.len()], &part[..]);
    // The reset stream's writer refuses more data.
    assert_eq!(
        pipe.client.stream_send(4, b"more", false),
        Err(Error::InvalidStreamState(4))
    );
}

/// The STREAM frames the packets sent since packet `first_pn` carried, in the order they left:
/// `(stream, offset, len)`.
fn stream_frames_sent(conn: &Connection, first_pn: u64) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    for p in conn.recovery.sent_packets(Epoch::Application).iter() {
        if p.pkt_num < first_pn {
            continue;
        }
        for f in p.payload.iter() {
            if let SentFrame::Stream {
                stream_id,
                offset,
                len,
                ..
            } = *f
            {
                out.push((stream_id, offset, len));
            }
        }
    }
    out
}

#[test]
fn urgency_order_and_incremental_round_robin_on_the_wire() {
    const LEN: usize = 6000;
    let mut client = client_config();
    // Everything leaves in one burst: no congestion or pacing limit interferes with the order.
    client.set_initial_congestion_window_packets(1000);
    client.enable_pacing(false);
    let mut pipe = established(&mut client, &mut server_config());
    let now = pipe.now;
    let c = &mut pipe.client;
    // (stream, urgency, incremental), written in an order unrelated to the expected one.
    let streams = [
        (0u64, 5u8, false),
        (4, 1, false),
        (8, 3, true),
        (12, 3, true),
        (16, 3, false),
        (20, 1, false),
    ];
    for (id, urgency, incremental) in streams {
        c.stream_priority(id, urgency, incremental).unwrap();
        assert_eq!(c.stream_send(id, &payload(LEN, id), true), Ok(LEN));
    }
    let first_pn = c.spaces[Epoch::Application.index()].next_pn;
    let mut buf = vec![0u8; 1500];
    loop {
        match c.send_at(&mut buf, now) {
            Ok(_) => {}
            Err(Error::Done) => break,
            Err(e) => panic!("send: {e:?}"),
        }
    }
    let frames = stream_frames_sent(c, first_pn);
    let first = |id: u64| frames.iter().position(|f| f.0 == id).unwrap();
    let last = |id: u64| frames.iter().rposition(|f| f.0 == id).unwrap();

    // Every byte went out once, in offset order per stream.
    for (id, ..) in streams {
        let mut next = 0;
        for f in frames.iter().filter(|f| f.0 == id) {
            assert_eq!(f.1, next, "stream {id}");
            next += f.2;
        }
        assert_eq!(next, LEN as u64, "stream {id}");
    }
    // Urgency 1 first, non-incremental streams one after the other in ID order.
    assert!(last(4) < first(20));
    // Then urgency 3: the non-incremental stream before the incremental ones.
    assert!(last(20) < first(16));
    assert!(last(16) < first(8).min(first(12)));
    // Urgency 5 last.
    assert!(last(8).max(last(12)) < first(0));
    // Incremental streams take turns frame by frame while both have data.
    let rr: Vec<u64> = frames
        .iter()
        .filter(|f| f.0 == 8 || f.0 == 12)
        .map(|f| f.0)
        .collect();
    let end_8 = rr.iter().rposition(|&id| id == 8).unwrap();
    let end_12 = rr.iter().rposition(|&id| id == 12).unwrap();
    for i in 1..rr.len() {
        let other_end = if rr[i] == 8 { end_12 } else { end_8 };
        assert!(
            rr[i] != rr[i - 1] || other_end < i,
            "round-robin broken at {i}: {rr:?} (frames {frames:?})"
        );
    }
    let turns = rr.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(turns >= 6, "too few turns: {rr:?}");
}

#[test]
fn slow_reader_pushes_back_with_bounded_buffering() {
    const WINDOW: u64 = 256 * 1024;
    const LEN: usize = 2 << 20;
    let mut server = server_config();
    server.set_initial_max_stream_data_bidi_remote(WINDOW);
    server.set_initial_max_data(4 * WINDOW);
    let mut pipe = established(&mut client_config(), &mut server);
    let data = payload(LEN, 99);

    // Phase 1: the server reads nothing, until the sender is blocked with everything it sent
    // acknowledged (after that nothing would happen before the idle timeout).
    let mut accepted = Vec::new();
    let mut dones = 0;
    let mut max_buffered = 0;
    pipe.run_until(Duration::from_secs(5), |p| {
        let sent: usize = accepted.iter().sum();
        match p.client.stream_send(0, &data[sent..], true) {
            Ok(n) => accepted.push(n),
            Err(Error::Done) => dones += 1,
            Err(e) => panic!("stream_send: {e:?}"),
        }
        max_buffered = max_buffered.max(p.client.stream_send_buffered());
        // Everything accepted was sent and acknowledged (checking only bytes in flight would
        // stop between an ACK and the next send).
        dones > 0
            && p.client.path_stats().bytes_in_flight == 0
            && !p.client.streams.has_data_to_send()
    })
    .unwrap();
    assert_eq!(
        accepted,
        vec![WINDOW as usize],
        "one partial write up to the window"
    );
    assert!(dones > 0, "then Done");
    assert!(max_buffered <= WINDOW, "buffered {max_buffered}");
    assert_eq!(pipe.client.stream_capacity(0), Ok(0));
    assert!(!pipe.client.writable().any(|id| id == 0));
    // The data waits at the receiver, acknowledged; the sender holds nothing any more.
    assert_eq!(pipe.client.stream_send_buffered(), 0);
    assert!(pipe.server.stream_readable(0));

    // Phase 2: the reader resumes and everything arrives.
    let mut sent: usize = accepted.iter().sum();
    let mut got = HashMap::new();
    let mut fin = false;
    pipe.run_until(Duration::from_secs(60), |p| {
        if sent < LEN {
            match p.client.stream_send(0, &data[sent..], true) {
                Ok(n) => sent += n,
                Err(Error::Done) => {}
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        fin |= !read_all(&mut p.server, &mut got).is_empty();
        assert!(p.client.stream_send_buffered() <= 16 << 20);
        fin
    })
    .unwrap();
    assert_eq!(got[&0], data);
}

// ---------------------------------------------------------------------------------------------
// Flow-control auto-tuning.

/// Uploads `len` bytes on stream 0 over a 200 Mbps path with a 40 ms RTT and returns the
/// goodput in Mbit/s, measured from the first write to the last byte read by the server.
fn upload_goodput(server: &mut Config, len: usize) -> f64 {
    let link = LinkConfig {
        delay: Duration::from_millis(20),
        rate_bps: Some(200_000_000),
        // 1.5 bandwidth-delay products (BDP = 25 MB/s × 40 ms = 1 MB).
        queue_bytes: Some(1_500_000),
        ..LinkConfig::default()
    };
    let mut pipe = Pipe::with_links(&mut client_config(), server, link.clone(), link, 7).unwrap();
    settle(&mut pipe);
    let data = payload(len, 5);
    let start = pipe.now;
    let mut sent = 0;
    let mut got = HashMap::new();
    let mut fin = false;
    pipe.run_until(Duration::from_secs(120), |p| {
        if sent < len {
            match p.client.stream_send(0, &data[sent..], true) {
                Ok(n) => sent += n,
                Err(Error::Done) => {}
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        fin |= !read_all(&mut p.server, &mut got).is_empty();
        fin
    })
    .unwrap();
    assert_eq!(got[&0].len(), len);
    assert!(got[&0] == data, "upload corrupted");
    let secs = (pipe.now - start).as_secs_f64();
    len as f64 * 8.0 / secs / 1e6
}

#[test]
fn autotuned_window_reaches_the_goodput_of_a_large_fixed_one() {
    const LEN: usize = 10 << 20;
    let mut tuned = server_config();
    // Every stream window starts at 64 KiB, so the connection window (1.5 times the largest
    // stream window) starts small too and is auto-tuned along.
    tuned.set_initial_max_stream_data_bidi_remote(64 * 1024);
    tuned.set_initial_max_stream_data_bidi_local(64 * 1024);
    tuned.set_initial_max_stream_data_uni(64 * 1024);
    tuned.set_max_stream_window(16 << 20);
    tuned.set_initial_max_data(96 * 1024);
    tuned.set_max_connection_window(24 << 20);
    let mut fixed = server_config();
    fixed.set_initial_max_stream_data_bidi_remote(16 << 20);
    fixed.set_max_stream_window(16 << 20);
    fixed.set_initial_max_data(24 << 20);
    fixed.set_max_connection_window(24 << 20);

    let tuned_goodput = upload_goodput(&mut tuned, LEN);
    let fixed_goodput = upload_goodput(&mut fixed, LEN);
    let ratio = tuned_goodput / fixed_goodput;
    println!(
        "10 MiB upload, 200 Mbps / 40 ms: 64 KiB auto-tuned window {tuned_goodput:.1} Mbit/s, \
         16 MiB fixed window {fixed_goodput:.1} Mbit/s, ratio {ratio:.3}"
    );
    assert!(ratio >= 0.9, "auto-tuned/fixed goodput ratio {ratio:.3}");
}

// ---------------------------------------------------------------------------------------------
// Violations: the client sends a forbidden frame; the server must close with the right code.

const FLOW_CONTROL_ERROR: u64 = 0x3;
const STREAM_LIMIT_ERROR: u64 = 0x4;
const STREAM_STATE_ERROR: u64 = 0x5;
const FINAL_SIZE_ERROR: u64 = 0x6;
const FRAME_ENCODING_ERROR: u64 = 0x7;
const CONNECTION_ID_LIMIT_ERROR: u64 = 0x9;
const PROTOCOL_VIOLATION: u64 = 0xa;

/// Delivers `payload` from the client to the server in one 1-RTT packet, then checks that the
/// server closed with `code` and that the client saw that code in its CONNECTION_CLOSE.
fn assert_closes_with(pipe: &mut Pipe, payload: &[u8], code: u64) {
    let mut pkt = pipe.client.raw_1rtt_packet(payload, pipe.now);
    let info = to_server(pipe);
    let _ = pipe.server.recv_at(&mut pkt, info, pipe.now);
    let err = pipe.server.local_error().expect("the server closed");
    assert_eq!(
        (err.is_app, err.error_code),
        (false, code),
        "server error {err:?}"
    );
    pipe.run_until(Duration::from_secs(5), |p| p.client.peer_error().is_some())
        .unwrap();
    let seen = pipe.client.peer_error().unwrap();
    assert_eq!((seen.is_app, seen.error_code), (false, code));
}

/// A fresh connection with the server config adjusted by `tweak`, then [`assert_closes_with`].
fn violation(tweak: impl FnOnce(&mut Config), frames: &[Frame], code: u64) {
    violation_raw(tweak, &encode(frames), code);
}

fn violation_raw(tweak: impl FnOnce(&mut Config), payload: &[u8], code: u64) {
    let mut server = server_config();
    tweak(&mut server);
    let mut pipe = established(&mut client_config(), &mut server);
    assert_closes_with(&mut pipe, payload, code);
}

fn stream(stream_id: u64, offset: u64, data: &[u8], fin: bool) -> Frame<'_> {
    Frame::Stream {
        stream_id,
        offset,
        data,
        fin,
    }
}

fn reset(stream_id: u64, final_size: u64) -> Frame<'static> {
    Frame::ResetStream {
        stream_id,
        error_code: 7,
        final_size,
    }
}

fn no_tweak(_: &mut Config) {}

#[test]
fn stream_data_beyond_max_stream_data_is_flow_control_error() {
    violation(
        |c| c.set_initial_max_stream_data_bidi_remote(1000),
        &[
            stream(0, 0, &[1; 1000], false),
            stream(0, 1000, &[2], false),
        ],
        FLOW_CONTROL_ERROR,
    );
}

#[test]
fn stream_data_beyond_max_data_is_flow_control_error() {
    violation(
        |c| {
            c.set_initial_max_data(1000);
            c.set_initial_max_stream_data_bidi_remote(800);
        },
        // Each stream within its window; together one byte beyond the connection's.
        &[
            stream(0, 799, &[1], false),
            stream(4, 199, &[2], false),
            stream(8, 0, &[3], false),
        ],
        FLOW_CONTROL_ERROR,
    );
}

#[test]
fn reset_final_size_beyond_max_stream_data_is_flow_control_error() {
    violation(
        |c| c.set_initial_max_stream_data_bidi_remote(1000),
        &[reset(0, 1001)],
        FLOW_CONTROL_ERROR,
    );
}

#[test]
fn bidi_stream_beyond_max_streams_is_stream_limit_error() {
    // The config allows 100 client bidirectional streams: IDs 0, 4, ..., 396.
    violation(no_tweak, &[stream(400, 0, b"x", false)], STREAM_LIMIT_ERROR);
}

#[test]
fn uni_stream_beyond_max_streams_is_stream_limit_error() {
    violation(no_tweak, &[stream(402, 0, b"x", false)], STREAM_LIMIT_ERROR);
}

#[test]
fn max_stream_data_opening_a_stream_beyond_the_limit_is_stream_limit_error() {
    violation(
        no_tweak,
        &[Frame::MaxStreamData {
            stream_id: 400,
            max: 10,
        }],
        STREAM_LIMIT_ERROR,
    );
}

#[test]
fn data_beyond_the_final_size_is_final_size_error() {
    violation(
        no_tweak,
        &[stream(0, 0, b"abc", true), stream(0, 3, b"d", false)],
        FINAL_SIZE_ERROR,
    );
}

#[test]
fn fin_changing_the_final_size_is_final_size_error() {
    violation(
        no_tweak,
        &[stream(0, 0, b"abc", true), stream(0, 0, b"ab", true)],
        FINAL_SIZE_ERROR,
    );
}

#[test]
fn fin_below_received_data_is_final_size_error() {
    violation(
        no_tweak,
        &[stream(0, 0, &[1; 10], false), stream(0, 0, b"abc", true)],
        FINAL_SIZE_ERROR,
    );
}

#[test]
fn reset_below_received_data_is_final_size_error() {
    violation(
        no_tweak,
        &[stream(0, 0, &[1; 10], false), reset(0, 5)],
        FINAL_SIZE_ERROR,
    );
}

#[test]
fn reset_changing_a_known_final_size_is_final_size_error() {
    violation(
        no_tweak,
        &[stream(0, 0, b"abc", true), reset(0, 5)],
        FINAL_SIZE_ERROR,
    );
}

#[test]
fn stream_on_our_send_only_stream_is_stream_state_error() {
    // Stream 3 is a server-initiated unidirectional stream: the client cannot send on it.
    violation(no_tweak, &[stream(3, 0, b"x", false)], STREAM_STATE_ERROR);
}

#[test]
fn reset_on_our_send_only_stream_is_stream_state_error() {
    violation(no_tweak, &[reset(3, 0)], STREAM_STATE_ERROR);
}

#[test]
fn max_stream_data_on_a_receive_only_stream_is_stream_state_error() {
    // Stream 2 is a client-initiated unidirectional stream: the server never sends on it.
    violation(
        no_tweak,
        &[Frame::MaxStreamData {
            stream_id: 2,
            max: 1 << 20,
        }],
        STREAM_STATE_ERROR,
    );
}

#[test]
fn stop_sending_on_a_receive_only_stream_is_stream_state_error() {
    violation(
        no_tweak,
        &[Frame::StopSending {
            stream_id: 2,
            error_code: 1,
        }],
        STREAM_STATE_ERROR,
    );
}

#[test]
fn stream_on_an_unopened_local_stream_is_stream_state_error() {
    // Stream 1 would be the server's first bidirectional stream; it has not opened it.
    violation(no_tweak, &[stream(1, 0, b"x", false)], STREAM_STATE_ERROR);
}

#[test]
fn reset_on_an_unopened_local_stream_is_stream_state_error() {
    violation(no_tweak, &[reset(1, 0)], STREAM_STATE_ERROR);
}

#[test]
fn stop_sending_on_an_unopened_local_stream_is_stream_state_error() {
    violation(
        no_tweak,
        &[Frame::StopSending {
            stream_id: 5,
            error_code: 1,
        }],
        STREAM_STATE_ERROR,
    );
}

#[test]
fn max_stream_data_on_an_unopened_local_stream_is_stream_state_error() {
    violation(
        no_tweak,
        &[Frame::MaxStreamData {
            stream_id: 1,
            max: 100,
        }],
        STREAM_STATE_ERROR,
    );
}

/// A frame of type `ty` whose only field is the varint `value`, encoded by hand (the encoder
/// refuses out-of-range stream counts).
fn varint_frame(ty: u8, value: u64) -> Vec<u8> {
    let mut buf = vec![0u8; 9];
    let mut b = OctetsMut::with_slice(&mut buf);
    b.put_u8(ty).unwrap();
    b.put_varint(value).unwrap();
    let len = b.off();
    buf.truncate(len);
    buf
}

#[test]
fn max_streams_above_2_pow_60_is_frame_encoding_error() {
    violation_raw(
        no_tweak,
        &varint_frame(0x12, (1 << 60) + 1),
        FRAME_ENCODING_ERROR,
    );
    violation_raw(
        no_tweak,
        &varint_frame(0x13, (1 << 60) + 1),
        FRAME_ENCODING_ERROR,
    );
}

#[test]
fn streams_blocked_above_2_pow_60_is_frame_encoding_error() {
    violation_raw(
        no_tweak,
        &varint_frame(0x16, (1 << 60) + 1),
        FRAME_ENCODING_ERROR,
    );
}

#[test]
fn new_token_from_a_client_is_protocol_violation() {
    violation(
        no_tweak,
        &[Frame::NewToken { token: b"token" }],
        PROTOCOL_VIOLATION,
    );
}

#[test]
fn handshake_done_from_a_client_is_protocol_violation() {
    violation(no_tweak, &[Frame::HandshakeDone], PROTOCOL_VIOLATION);
}

// ---------------------------------------------------------------------------------------------
// DATAGRAM frames.

fn dgram_configs(recv_len: usize, send_len: usize) -> (Config, Config) {
    let mut client = client_config();
    client.enable_dgram(true, recv_len, send_len);
    let mut server = server_config();
    server.enable_dgram(true, recv_len, send_len);
    (client, server)
}

#[test]
fn datagrams_flow_both_ways_in_order() {
    let (mut client, mut server) = dgram_configs(16, 16);
    let mut pipe = established(&mut client, &mut server);
    let max = pipe.client.dgram_max_writable_len().unwrap();
    // 1200-byte datagrams: 1 + 16-byte DCID + 4-byte PN + 16-byte tag of packet overhead, and
    // a type byte and 2-byte length for the frame.
    assert_eq!(max, 1200 - 37 - 3);
    let msgs: Vec<Vec<u8>> = (0..5).map(|i| payload(100 + i * 200, i as u64)).collect();
    for m in &msgs {
        pipe.client.dgram_send(m).unwrap();
    }
    pipe.client.dgram_send(&payload(max, 77)).unwrap();
    assert_eq!(pipe.client.dgram_send_queue_len(), 6);
    pipe.run_until(Duration::from_secs(5), |p| {
        p.server.dgram_recv_queue_len() == 6
    })
    .unwrap();
    assert_eq!(pipe.client.dgram_send_queue_len(), 0);
    let mut buf = vec![0u8; 2000];
    for m in &msgs {
        let n = pipe.server.dgram_recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], &m[..]);
    }
    assert_eq!(pipe.server.dgram_recv_front_len(), Some(max));
    assert_eq!(
        pipe.server.dgram_recv(&mut buf[..max - 1]),
        Err(Error::BufferTooShort)
    );
    assert_eq!(pipe.server.dgram_recv(&mut buf), Ok(max));
    assert_eq!(&buf[..max], &payload(max, 77)[..]);
    assert_eq!(pipe.server.dgram_recv(&mut buf), Err(Error::Done));

    pipe.server.dgram_send(b"pong").unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.client.dgram_recv_queue_len() == 1
    })
    .unwrap();
    assert_eq!(pipe.client.dgram_recv(&mut buf), Ok(4));
    assert_eq!(&buf[..4], b"pong");
}

#[test]
fn datagram_send_errors() {
    let (mut client, _) = dgram_configs(4, 2);
    // The server does not accept datagrams.
    let mut pipe = established(&mut client, &mut server_config());
    assert_eq!(pipe.client.dgram_max_writable_len(), None);
    assert_eq!(pipe.client.dgram_send(b"x"), Err(Error::InvalidState));

    let (mut client, mut server) = dgram_configs(4, 2);
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    assert_eq!(
        pipe.client.dgram_send(b"x"),
        Err(Error::InvalidState),
        "not before the peer's parameters are known"
    );
    settle(&mut pipe);
    let max = pipe.client.dgram_max_writable_len().unwrap();
    assert_eq!(
        pipe.client.dgram_send(&vec![0; max + 1]),
        Err(Error::BufferTooShort)
    );
    pipe.client.dgram_send(b"1").unwrap();
    pipe.client.dgram_send(b"2").unwrap();
    assert!(pipe.client.is_dgram_send_queue_full());
    assert_eq!(pipe.client.dgram_send(b"3"), Err(Error::Done));
    pipe.client.dgram_purge_outgoing(|d| d == b"1");
    assert_eq!(pipe.client.dgram_send_queue_len(), 1);
}

#[test]
fn peer_max_datagram_frame_size_limits_what_we_send() {
    let (mut client, mut server) = dgram_configs(4, 4);
    server.local_transport_params.max_datagram_frame_size = Some(100);
    let mut pipe = established(&mut client, &mut server);
    // Type byte and a two-byte length (98 bytes would need a two-byte length too).
    assert_eq!(pipe.client.dgram_max_writable_len(), Some(97));
    assert_eq!(pipe.client.dgram_send(&[0; 98]), Err(Error::BufferTooShort));
    pipe.client.dgram_send(&[7; 97]).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.server.dgram_recv_queue_len() == 1
    })
    .unwrap();
    assert!(pipe.server.local_error().is_none());
}

#[test]
fn full_receive_queue_drops_the_oldest() {
    let (mut client, mut server) = dgram_configs(3, 16);
    let mut pipe = established(&mut client, &mut server);
    for i in 0u8..5 {
        pipe.client.dgram_send(&[i; 10]).unwrap();
    }
    pipe.run_until(Duration::from_secs(5), |p| {
        p.server.dgram_recv_dropped() == 2
    })
    .unwrap();
    assert!(pipe.server.is_dgram_recv_queue_full());
    let mut buf = [0u8; 10];
    for i in 2u8..5 {
        assert_eq!(pipe.server.dgram_recv(&mut buf), Ok(10));
        assert_eq!(buf, [i; 10]);
    }
    assert_eq!(pipe.server.dgram_recv(&mut buf), Err(Error::Done));
}

#[test]
fn lost_datagrams_are_not_retransmitted() {
    let (mut client, mut server) = dgram_configs(16, 16);
    let mut pipe = established(&mut client, &mut server);
    // The next client datagram, carrying both a datagram and stream data, is lost.
    let first_lost = pipe.link_stats(Direction::ToServer).sent;
    pipe.hook = Some(Box::new(move |d| {
        if d.direction == Direction::ToServer && d.index == first_lost {
            Verdict::Drop
        } else {
            Verdict::Deliver
        }
    }));
    pipe.client.dgram_send(b"gone").unwrap();
    pipe.client.stream_send(0, b"kept", true).unwrap();
    let mut got = HashMap::new();
    let mut fin = false;
    pipe.run_until(Duration::from_secs(10), |p| {
        fin |= !read_all(&mut p.server, &mut got).is_empty();
        fin
    })
    .unwrap();
    assert_eq!(got[&0], b"kept");
    pipe.run_until(Duration::from_secs(2), |p| {
        p.client.path_stats().bytes_in_flight == 0
    })
    .unwrap();
    // The PTO probe may carry the stream data again before the loss is declared (a lost
    // tail, RFC 9002 §6.2.4); the lost packet is declared lost once the probe is acked.
    assert!(pipe.client.stats().lost >= 1);
    assert_eq!(pipe.server.dgram_recv_queue_len(), 0);
}

#[test]
fn oversized_datagram_frame_is_protocol_violation() {
    let (mut client, mut server) = dgram_configs(4, 4);
    server.local_transport_params.max_datagram_frame_size = Some(100);
    let mut pipe = established(&mut client, &mut server);
    let frame = Frame::Datagram { data: &[0; 200] };
    assert_closes_with(&mut pipe, &encode(&[frame]), PROTOCOL_VIOLATION);
}

#[test]
fn datagram_frame_without_support_is_protocol_violation() {
    violation(
        no_tweak,
        &[Frame::Datagram { data: b"hello" }],
        PROTOCOL_VIOLATION,
    );
}

// ---------------------------------------------------------------------------------------------
// Connection IDs and stateless resets.

fn cid_configs(limit: u64) -> (Config, Config) {
    let mut client = client_config();
    client.set_active_connection_id_limit(limit);
    let mut server = server_config();
    server.set_active_connection_id_limit(limit);
    (client, server)
}

#[test]
fn connection_ids_are_issued_both_ways_up_to_the_limit() {
    for limit in [2, 4, 7] {
        let (mut client, mut server) = cid_configs(limit);
        let mut pipe = established(&mut client, &mut server);
        let limit = limit as usize;
        assert_eq!(pipe.client.active_scids(), limit);
        assert_eq!(pipe.server.active_scids(), limit);
        // Spare IDs: all the peer issued but the one in use.
        assert_eq!(pipe.client.available_dcids(), limit - 1);
        assert_eq!(pipe.server.available_dcids(), limit - 1);
        // The handshake IDs are among them; all are distinct.
        let ids: Vec<_> = pipe.server.source_ids().cloned().collect();
        assert_eq!(ids[0], pipe.server.source_id());
        let mut dedup = ids.clone();
        dedup.sort_by(|a, b| a[..].cmp(&b[..]));
        dedup.dedup();
        assert_eq!(dedup.len(), limit);
        assert_eq!(pipe.server.new_source_cid(false), Err(Error::IdLimit));
    }
}

#[test]
fn server_token_for_the_handshake_id_is_derived_from_the_static_key() {
    let (mut client, mut server) = cid_configs(2);
    server.set_stateless_reset_key(&[9; 32]);
    let pipe = established(&mut client, &mut server);
    let token = pipe
        .client
        .peer_transport_params()
        .and_then(|tp| tp.stateless_reset_token)
        .expect("server sent a token");
    let mut other = server_config();
    other.set_stateless_reset_key(&[9; 32]);
    // Another process with the same key recomputes it from the connection ID alone.
    assert_eq!(
        token.to_be_bytes(),
        other.stateless_reset_token(&pipe.server.source_id())
    );
    assert!(pipe
        .server
        .peer_transport_params()
        .is_some_and(|tp| tp.stateless_reset_token.is_none()));
}

#[test]
fn retire_prior_to_moves_the_peer_to_new_ids() {
    let (mut client, mut server) = cid_configs(3);
    let mut pipe = established(&mut client, &mut server);
    let old: Vec<ConnectionId> = pipe.server.source_ids().cloned().collect();
    assert_eq!(pipe.client.destination_id(), old[0]);

    let fresh = pipe.server.new_source_cid(true).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.server.active_scids() == 3 && p.client.available_dcids() == 2
    })
    .unwrap();
    // The client sends to the new ID and has retired every older one; the server replaced
    // them and reports the retired ones for unrouting.
    assert_eq!(pipe.client.destination_id(), fresh);
    let mut retired = Vec::new();
    while let Some(cid) = pipe.server.retired_scid_next() {
        retired.push(cid);
    }
    retired.sort_by(|a, b| a[..].cmp(&b[..]));
    let mut want = old.clone();
    want.sort_by(|a, b| a[..].cmp(&b[..]));
    assert_eq!(retired, want);
    assert!(pipe.server.source_ids().all(|c| !old.contains(c)));
    assert!(pipe.server.source_ids().any(|c| *c == fresh));

    // Packets to the new ID are accepted: a transfer works.
    let data = payload(200_000, 3);
    pipe.client.stream_send(0, &data, true).unwrap();
    let mut got = HashMap::new();
    let mut fin = false;
    pipe.run_until(Duration::from_secs(10), |p| {
        fin |= !read_all(&mut p.server, &mut got).is_empty();
        fin
    })
    .unwrap();
    assert_eq!(got[&0], data);
    assert!(pipe.server.local_error().is_none() && pipe.client.local_error().is_none());
}

#[test]
fn packets_to_a_retired_id_are_dropped() {
    let (mut client, mut server) = cid_configs(2);
    let mut pipe = established(&mut client, &mut server);
    let old = pipe.server.source_id().into_owned();
    pipe.server.new_source_cid(true).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.server.retired_scid_next().is_some()
    })
    .unwrap();
    // A packet still addressed to the retired handshake ID.
    pipe.client.dcid = old;
    let mut pkt = pipe
        .client
        .raw_1rtt_packet(&encode(&[Frame::Ping]), pipe.now);
    let recv = pipe.server.stats().recv;
    let info = to_server(&pipe);
    pipe.server.recv_at(&mut pkt, info, pipe.now).unwrap();
    assert_eq!(pipe.server.stats().recv, recv);
}

#[test]
fn too_many_connection_ids_is_connection_id_limit_error() {
    let (mut client, mut server) = cid_configs(2);
    let mut pipe = established(&mut client, &mut server);
    assert_eq!(pipe.server.available_dcids(), 1);
    let frame = Frame::NewConnectionId {
        seq_num: 10,
        retire_prior_to: 0,
        conn_id: &[0x5a; 16],
        reset_token: [1; 16],
    };
    assert_closes_with(&mut pipe, &encode(&[frame]), CONNECTION_ID_LIMIT_ERROR);
}

#[test]
fn retiring_an_id_never_issued_is_protocol_violation() {
    let (mut client, mut server) = cid_configs(2);
    let mut pipe = established(&mut client, &mut server);
    let frame = Frame::RetireConnectionId { seq_num: 50 };
    assert_closes_with(&mut pipe, &encode(&[frame]), PROTOCOL_VIOLATION);
}

#[test]
fn retiring_the_id_the_packet_was_sent_to_is_protocol_violation() {
    let (mut client, mut server) = cid_configs(2);
    let mut pipe = established(&mut client, &mut server);
    // The client addresses the server's handshake ID, sequence number 0.
    assert_eq!(pipe.client.destination_id(), pipe.server.source_id());
    let frame = Frame::RetireConnectionId { seq_num: 0 };
    assert_closes_with(&mut pipe, &encode(&[frame]), PROTOCOL_VIOLATION);
}

#[test]
fn retiring_another_id_gets_a_replacement() {
    let (mut client, mut server) = cid_configs(2);
    let mut pipe = established(&mut client, &mut server);
    let before: Vec<ConnectionId> = pipe.server.source_ids().cloned().collect();
    let mut pkt = pipe.client.raw_1rtt_packet(
        &encode(&[Frame::RetireConnectionId { seq_num: 1 }]),
        pipe.now,
    );
    let info = to_server(&pipe);
    pipe.server.recv_at(&mut pkt, info, pipe.now).unwrap();
    assert_eq!(pipe.server.retired_scid_next().as_ref(), Some(&before[1]));
    let after: Vec<ConnectionId> = pipe.server.source_ids().cloned().collect();
    assert_eq!(after.len(), 2);
    assert_eq!(after[0], before[0]);
    assert_ne!(after[1], before[1]);
    assert!(pipe.server.local_error().is_none());
}

/// A datagram that looks like a short header packet to `cid_len`-byte IDs and ends in `token`.
pub(super) fn stateless_reset(rng: &mut Rng, len: usize, token: &[u8; 16]) -> Vec<u8> {
    let mut d = rng.bytes(len);
    d[0] = 0x40 | (d[0] & 0x3f);
    d[len - 16..].copy_from_slice(token);
    d
}

#[test]
fn stateless_reset_closes_the_client() {
    let (mut client, mut server) = cid_configs(2);
    server.set_stateless_reset_key(&[3; 32]);
    let mut pipe = established(&mut client, &mut server);
    let mut rng = Rng(11);

    // Random datagrams of the same shape change nothing.
    for _ in 0..20 {
        let mut d = rng.bytes(43);
        d[0] = 0x40 | (d[0] & 0x3f);
        let info = to_client(&pipe);
        pipe.client.recv_at(&mut d, info, pipe.now).unwrap();
    }
    assert!(!pipe.client.is_draining());
    pipe.client.stream_send(0, b"still alive", true).unwrap();
    let mut got = HashMap::new();
    let mut fin = false;
    pipe.run_until(Duration::from_secs(5), |p| {
        fin |= !read_all(&mut p.server, &mut got).is_empty();
        fin
    })
    .unwrap();

    // What the server (or another process with its key) sends after losing the connection.
    let token = server.stateless_reset_token(&pipe.server.source_id());
    let mut reset = stateless_reset(&mut rng, 43, &token);
    let info = to_client(&pipe);
    pipe.client.recv_at(&mut reset, info, pipe.now).unwrap();
    // Closed at once, as quiche does: a peer without state has nothing more to say.
    assert!(pipe.client.is_closed() && pipe.client.is_stateless_reset());
    assert!(pipe.client.peer_error().is_none() && pipe.client.local_error().is_none());
    let mut buf = [0u8; 1500];
    assert_eq!(pipe.client.send_at(&mut buf, pipe.now), Err(Error::Done));
}

#[test]
fn stateless_reset_token_from_new_connection_id_is_honoured_once_used() {
    let (mut client, mut server) = cid_configs(2);
    server.set_stateless_reset_key(&[4; 32]);
    let mut pipe = established(&mut client, &mut server);
    let mut rng = Rng(12);
    let handshake_token = server.stateless_reset_token(&pipe.server.source_id());
    let issued = pipe.server.source_ids().nth(1).unwrap().clone();

    // The client has not used the issued ID: its token does not count (RFC 9000 §10.3.1).
    let unused = server.stateless_reset_token(&issued);
    let mut d = stateless_reset(&mut rng, 60, &unused);
    let info = to_client(&pipe);
    pipe.client.recv_at(&mut d, info, pipe.now).unwrap();
    assert!(!pipe.client.is_closed());

    // The server asks for all older IDs to be retired: the client moves to the new one, and
    // the retired IDs' tokens no longer count.
    let fresh = pipe.server.new_source_cid(true).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.client.destination_id() == fresh
    })
    .unwrap();
    for token in [handshake_token, unused] {
        let mut d = stateless_reset(&mut rng, 60, &token);
        let info = to_client(&pipe);
        pipe.client.recv_at(&mut d, info, pipe.now).unwrap();
        assert!(!pipe.client.is_closed());
    }
    let token = server.stateless_reset_token(&fresh);
    let mut d = stateless_reset(&mut rng, 60, &token);
    let info = to_client(&pipe);
    pipe.client.recv_at(&mut d, info, pipe.now).unwrap();
    assert!(pipe.client.is_closed());
}

#[test]
fn zero_length_connection_ids_are_never_replaced() {
    let mut client = client_config();
    let mut server = server_config();
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    // Rebuild the client with an empty source ID.
    pipe.client = crate::connect(
        Some("localhost"),
        &ConnectionId::default(),
        pipe.client_addr,
        pipe.server_addr,
        &mut client,
    )
    .unwrap();
    settle(&mut pipe);
    assert_eq!(pipe.client.active_scids(), 1);
    // Zero-length IDs: none to spare (quiche's available_dcids is 0 then too).
    assert_eq!(pipe.server.available_dcids(), 0);
    assert_eq!(pipe.client.new_source_cid(false), Err(Error::InvalidState));
    // The server's IDs can still be replaced.
    assert_eq!(pipe.client.available_dcids(), 1);
}

/// `stream_send` holds at most `max_unsent_stream_data` bytes written but not yet sent, over
/// all streams; sending makes room again. A STOP_SENDING from the peer withdraws the stream's
/// unsent bytes from that count and from the connection window at once.
#[test]
fn unsent_stream_data_is_bounded_and_stop_sending_returns_it() {
    const BOUND: usize = 64 * 1024;
    let mut client = client_config();
    client.set_max_unsent_stream_data(BOUND as u64);
    let mut pipe = established(&mut client, &mut server_config());
    let data = payload(4 * BOUND, 5);
    assert_eq!(pipe.client.stream_send(0, &data, false), Ok(BOUND));
    assert_eq!(pipe.client.stream_capacity(0), Ok(0));
    assert_eq!(pipe.client.stream_send(4, b"x", false), Err(Error::Done));

    // One packet out: that much room again.
    let mut out = [0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    let room = pipe.client.stream_capacity(0).unwrap();
    assert!(room > 0 && room < n, "room {room} after a {n}-byte packet");
    pipe.server
        .recv_at(&mut out[..n], to_server(&pipe), pipe.now)
        .unwrap();

    // The server stops stream 0: its unsent bytes go back to the budget.
    pipe.server.stream_shutdown(0, Shutdown::Read, 7).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        matches!(
            p.client.stream_send(0, b"y", false),
            Err(Error::StreamStopped(7))
        )
    })
    .unwrap();
    assert_eq!(pipe.client.stream_send(4, &data, true), Ok(BOUND));
    assert_eq!(pipe.client.stream_capacity(4), Ok(0));

    // Without a bound, what the peer's windows allow (8 MiB per stream here).
    let mut unbounded = client_config();
    unbounded.set_max_unsent_stream_data(u64::MAX);
    let mut pipe = established(&mut unbounded, &mut server_config());
    let big = payload(9 << 20, 6);
    assert_eq!(pipe.client.stream_send(0, &big, false), Ok(8 << 20));
}
