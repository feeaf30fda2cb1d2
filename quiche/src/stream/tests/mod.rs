//! Stream map tests: two maps (client and server) exchange frames through a lossless or lossy
//! in-memory hand-off; frames are plain values, as the connection would pass them.

use std::time::{Duration, Instant};

use super::*;
use crate::testing::Rng;

/// The origin of a test's manual clock; later instants are derived by adding durations.
#[allow(clippy::disallowed_methods)]
pub(crate) fn epoch() -> Instant {
    Instant::now()
}

const SRTT: Duration = Duration::from_millis(50);
const CONN_CAP: u64 = u64::MAX;

fn config(max_streams: u64, window: u64) -> StreamConfig {
    StreamConfig {
        initial_max_streams_bidi: max_streams,
        initial_max_streams_uni: max_streams,
        initial_max_stream_data_bidi_local: window,
        initial_max_stream_data_bidi_remote: window,
        initial_max_stream_data_uni: window,
        max_stream_window: window * 8,
        max_stream_send_buffer: DEFAULT_MAX_STREAM_SEND_BUFFER,
        send_streams_blocked: true,
    }
}

/// A client and a server map, each knowing the other's transport parameters.
fn pair_with(client_cfg: StreamConfig, server_cfg: StreamConfig) -> (StreamMap, StreamMap) {
    let mut client = StreamMap::new(false, client_cfg);
    let mut server = StreamMap::new(true, server_cfg);
    for (map, peer) in [(&mut client, server_cfg), (&mut server, client_cfg)] {
        map.set_peer_transport_params(
            peer.initial_max_stream_data_bidi_local,
            peer.initial_max_stream_data_bidi_remote,
            peer.initial_max_stream_data_uni,
            peer.initial_max_streams_bidi,
            peer.initial_max_streams_uni,
        )
        .unwrap();
    }
    (client, server)
}

fn pair(max_streams: u64, window: u64) -> (StreamMap, StreamMap) {
    pair_with(config(max_streams, window), config(max_streams, window))
}

/// Applies a control frame sent by one map to the other.
fn apply_control(to: &mut StreamMap, f: ControlFrame) -> Result<()> {
    match f {
        ControlFrame::ResetStream {
            stream_id,
            error_code,
            final_size,
        } => to
            .on_reset_stream(stream_id, error_code, final_size)
            .map(|_| ()),
        ControlFrame::StopSending {
            stream_id,
            error_code,
        } => to.on_stop_sending(stream_id, error_code).map(|_| ()),
        ControlFrame::MaxStreamData { stream_id, max } => to.on_max_stream_data(stream_id, max),
        ControlFrame::StreamDataBlocked { stream_id, limit } => {
            to.on_stream_data_blocked(stream_id, limit)
        }
        ControlFrame::MaxStreams { bidi, max } => to.on_max_streams(bidi, max),
        ControlFrame::StreamsBlocked { bidi, limit } => to.on_streams_blocked(bidi, limit),
    }
}

/// Moves every pending control and STREAM frame from `from` to `to`, acknowledging each at
/// once. Returns the number of frames moved.
fn deliver(from: &mut StreamMap, to: &mut StreamMap) -> usize {
    let mut moved = 0;
    let mut buf = [0u8; 1200];
    while let Some(f) = from.next_control_frame() {
        from.on_control_frame_sent(&f);
        apply_control(to, f).unwrap();
        from.on_control_frame_acked(&f);
        moved += 1;
    }
    while let Some(id) = from.next_stream_to_send() {
        let e = from.emit(id, &mut buf).unwrap();
        to.on_stream_frame(id, e.offset, &buf[..e.len], e.fin)
            .unwrap();
        from.on_data_acked(id, e.offset, e.len as u64, e.fin);
        moved += 1;
    }
    moved
}

/// Reads everything readable on `id`; returns the bytes, whether the FIN came, and the error
/// that ended the read if it was not `Done`.
fn read_stream(map: &mut StreamMap, id: u64, now: Instant) -> (Vec<u8>, bool, Option<Error>) {
    let mut out = Vec::new();
    let mut buf = [0u8; 700];
    loop {
        match map.stream_recv(id, &mut buf, now, SRTT) {
            Ok((n, fin)) => {
                out.extend_from_slice(&buf[..n]);
                if fin {
                    return (out, true, None);
                }
            }
            Err(Error::Done) => return (out, false, None),
            Err(e) => return (out, false, Some(e)),
        }
    }
}

fn drain_control(map: &mut StreamMap) -> Vec<ControlFrame> {
    let mut v = Vec::new();
    while let Some(f) = map.next_control_frame() {
        map.on_control_frame_sent(&f);
        v.push(f);
    }
    v
}

#[test]
fn stream_id_bits() {
    assert!(is_bidi(0) && is_bidi(1) && !is_bidi(2) && !is_bidi(3));
    assert!(is_local(0, false) && is_local(2, false) && !is_local(1, false));
    assert!(is_local(1, true) && is_local(3, true) && !is_local(4, true));
}

#[test]
fn data_flows_client_to_server() {
    let now = epoch();
    let (mut client, mut server) = pair(10, 100_000);
    let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7) as u8).collect();
    assert_eq!(client.stream_send(0, &data, true, CONN_CAP), Ok(data.len()));
    assert!(deliver(&mut client, &mut server) > 40);
    assert!(server.stream_readable(0));
    assert_eq!(server.readable().collect::<Vec<_>>(), vec![0]);
    let (got, fin, err) = read_stream(&mut server, 0, now);
    assert!(fin && err.is_none());
    assert!(got == data);
    assert!(server.stream_finished(0));
    // The server still has to end its side of the bidirectional stream.
    assert!(server.contains(0));
    assert_eq!(server.stream_send(0, b"bye", true, CONN_CAP), Ok(3));
    deliver(&mut server, &mut client);
    assert!(!server.contains(0), "collected once both parts are done");
    assert_eq!(
        read_stream(&mut client, 0, now),
        (b"bye".to_vec(), true, None)
    );
    assert!(client.is_empty());
}

#[test]
fn new_bytes_count_for_connection_flow_control() {
    let (_, mut server) = pair(10, 1000);
    assert_eq!(server.on_stream_frame(0, 100, &[1; 50], false), Ok(150));
    assert_eq!(server.on_stream_frame(0, 0, &[1; 100], false), Ok(0));
    assert_eq!(server.on_stream_frame(0, 140, &[1; 20], false), Ok(10));
    assert_eq!(server.on_reset_stream(0, 3, 400), Ok(240));
    // 160 bytes buffered unread plus the 240 the reset declared: all dropped unread.
    assert_eq!(server.take_recv_discarded(), 400);
    assert_eq!(server.take_recv_discarded(), 0);
}

#[test]
fn stream_flow_control_violation() {
    let (_, mut server) = pair(10, 1000);
    assert_eq!(server.on_stream_frame(0, 0, &[0; 1000], false), Ok(1000));
    assert_eq!(
        server.on_stream_frame(0, 1000, &[0; 1], false),
        Err(Error::FlowControl)
    );
    assert_eq!(server.on_reset_stream(4, 0, 1001), Err(Error::FlowControl));
    assert_eq!(Error::FlowControl.to_wire(), 0x3);
}

#[test]
fn final_size_violations_through_the_map() {
    let (_, mut server) = pair(10, 1000);
    server.on_stream_frame(0, 0, &[0; 100], false).unwrap();
    assert_eq!(
        server.on_stream_frame(0, 0, &[0; 50], true),
        Err(Error::FinalSize)
    );
    assert_eq!(server.on_reset_stream(0, 0, 99), Err(Error::FinalSize));
    server.on_stream_frame(4, 0, &[0; 10], true).unwrap();
    assert_eq!(
        server.on_stream_frame(4, 10, &[0; 1], false),
        Err(Error::FinalSize)
    );
    assert_eq!(
        server.on_stream_frame(4, 5, &[0; 6], true),
        Err(Error::FinalSize)
    );
    assert_eq!(server.on_reset_stream(4, 0, 11), Err(Error::FinalSize));
    assert_eq!(Error::FinalSize.to_wire(), 0x6);
}

#[test]
fn peer_stream_limit() {
    let (_, mut server) = pair(2, 1000);
    // Client bidi streams 0 and 4 are allowed, 8 is the third.
    assert_eq!(server.on_stream_frame(4, 0, b"x", false), Ok(1));
    assert_eq!(
        server.on_stream_frame(8, 0, b"x", false),
        Err(Error::StreamLimit)
    );
    // Uni: 2 and 6 allowed, 10 not, whichever frame names it.
    assert_eq!(server.on_reset_stream(10, 0, 0), Err(Error::StreamLimit));
    assert_eq!(
        server.on_stream_data_blocked(10, 0),
        Err(Error::StreamLimit)
    );
    assert_eq!(server.on_stop_sending(8, 0), Err(Error::StreamLimit));
    assert_eq!(server.on_stream_frame(6, 0, b"x", true), Ok(1));
    assert_eq!(Error::StreamLimit.to_wire(), 0x4);
}

#[test]
fn local_stream_limit_and_streams_blocked() {
    let (mut client, mut server) = pair(2, 1000);
    assert_eq!(client.peer_streams_left_bidi(), 2);
    assert_eq!(client.stream_send(0, b"a", false, CONN_CAP), Ok(1));
    assert_eq!(client.stream_send(4, b"b", false, CONN_CAP), Ok(1));
    assert_eq!(client.peer_streams_left_bidi(), 0);
    assert_eq!(
        client.stream_send(8, b"c", false, CONN_CAP),
        Err(Error::StreamLimit)
    );
    assert_eq!(client.stream_priority(8, 1, false), Err(Error::StreamLimit));
    assert_eq!(client.peer_streams_left_uni(), 2);
    let ctl = drain_control(&mut client);
    assert_eq!(
        ctl,
        vec![ControlFrame::StreamsBlocked {
            bidi: true,
            limit: 2
        }]
    );
    // Only once per limit.
    assert_eq!(
        client.stream_send(8, b"c", false, CONN_CAP),
        Err(Error::StreamLimit)
    );
    assert!(drain_control(&mut client).is_empty());

    // The server finishes stream 0 both ways; MAX_STREAMS lets the client open one more.
    deliver(&mut client, &mut server);
    client.stream_send(0, b"", true, CONN_CAP).unwrap();
    deliver(&mut client, &mut server);
    read_stream(&mut server, 0, epoch());
    server.stream_send(0, b"", true, CONN_CAP).unwrap();
    deliver(&mut server, &mut client);
    assert!(!server.contains(0));
    // The collection queued MAX_STREAMS; it goes out with the next flight.
    deliver(&mut server, &mut client);
    assert_eq!(client.peer_streams_left_bidi(), 1);
    assert_eq!(client.stream_send(8, b"c", false, CONN_CAP), Ok(1));
}

#[test]
fn max_streams_above_2_pow_60_is_a_frame_error() {
    let (mut client, _) = pair(2, 1000);
    assert_eq!(
        client.on_max_streams(true, (1 << 60) + 1),
        Err(Error::InvalidFrame)
    );
    assert_eq!(
        client.on_streams_blocked(false, (1 << 60) + 1),
        Err(Error::InvalidFrame)
    );
    assert_eq!(client.on_max_streams(true, 1 << 60), Ok(()));
    assert_eq!(
        client.on_max_streams(true, 5),
        Ok(()),
        "lower limits are ignored"
    );
    assert_eq!(client.peer_streams_left_bidi(), 1 << 60);
    let mut bad = StreamMap::new(false, config(1, 1));
    assert_eq!(
        bad.set_peer_transport_params(0, 0, 0, (1 << 60) + 1, 0),
        Err(Error::InvalidTransportParam)
    );
}

#[test]
fn frames_in_an_invalid_direction() {
    let (mut client, _) = pair(10, 1000);
    client.stream_send(2, b"uni", false, CONN_CAP).unwrap();
    // Our own send-only stream: receiving-part frames are invalid.
    assert_eq!(
        client.on_stream_frame(2, 0, b"x", false),
        Err(Error::InvalidStreamState(2))
    );
    assert_eq!(
        client.on_reset_stream(2, 0, 0),
        Err(Error::InvalidStreamState(2))
    );
    assert_eq!(
        client.on_stream_data_blocked(2, 0),
        Err(Error::InvalidStreamState(2))
    );
    // A receive-only (server uni) stream: sending-part frames are invalid.
    assert_eq!(
        client.on_max_stream_data(3, 100),
        Err(Error::InvalidStreamState(3))
    );
    assert_eq!(
        client.on_stop_sending(3, 0),
        Err(Error::InvalidStreamState(3))
    );
    // Our bidi stream 4 is not opened yet: nothing may refer to it.
    assert_eq!(
        client.on_stream_frame(4, 0, b"x", false),
        Err(Error::InvalidStreamState(4))
    );
    assert_eq!(
        client.on_max_stream_data(4, 100),
        Err(Error::InvalidStreamState(4))
    );
    assert_eq!(
        client.on_stop_sending(6, 0),
        Err(Error::InvalidStreamState(6))
    );
    // The app cannot write on a receive-only stream or read a send-only one.
    client.on_stream_frame(3, 0, b"hi", false).unwrap();
    assert_eq!(
        client.stream_send(3, b"x", false, CONN_CAP),
        Err(Error::InvalidStreamState(3))
    );
    let mut buf = [0u8; 4];
    assert_eq!(
        client.stream_recv(2, &mut buf, epoch(), SRTT),
        Err(Error::InvalidStreamState(2))
    );
    // Writing on a peer stream that was never opened.
    assert_eq!(
        client.stream_send(5, b"x", false, CONN_CAP),
        Err(Error::InvalidStreamState(5))
    );
    assert_eq!(Error::InvalidStreamState(0).to_wire(), 0x5);
}

#[test]
fn implicit_opening_of_lower_peer_streams() {
    let now = epoch();
    let (_, mut server) = pair(10, 1000);
    assert_eq!(server.on_stream_frame(8, 0, b"eight", true), Ok(5));
    assert_eq!(server.len(), 3, "0, 4 and 8 are open");
    assert!(server.contains(0) && server.contains(4));
    assert_eq!(server.readable().collect::<Vec<_>>(), vec![8]);
    // Peer bidi streams are writable by us as soon as they exist.
    assert_eq!(server.writable().collect::<Vec<_>>(), vec![0, 4, 8]);
    server.on_stream_frame(4, 0, b"four", true).unwrap();
    assert_eq!(
        read_stream(&mut server, 4, now),
        (b"four".to_vec(), true, None)
    );
    // A uni stream opened implicitly too.
    assert_eq!(server.on_stream_frame(6, 0, b"six", true), Ok(3));
    assert!(server.contains(2));
    assert_eq!(
        read_stream(&mut server, 6, now),
        (b"six".to_vec(), true, None)
    );
    assert!(
        !server.contains(6),
        "uni stream collected after its data was read"
    );
    // A late frame for the collected stream is ignored and does not reopen it.
    assert_eq!(server.on_stream_frame(6, 0, b"six", true), Ok(0));
    assert_eq!(server.on_reset_stream(6, 1, 3), Ok(0));
    assert!(!server.contains(6));
    assert!(server.stream_finished(6));
}

#[test]
fn local_streams_opened_out_of_order() {
    let (mut client, mut server) = pair(10, 1000);
    client.stream_send(8, b"8", false, CONN_CAP).unwrap();
    deliver(&mut client, &mut server);
    assert_eq!(client.len(), 1);
    assert_eq!(server.len(), 3);
    // The server may use the implicitly opened stream 4 before the client wrote on it.
    server.stream_send(4, b"hello", false, CONN_CAP).unwrap();
    deliver(&mut server, &mut client);
    assert_eq!(client.readable().collect::<Vec<_>>(), vec![4]);
    // And the client can still open the skipped stream 0 itself.
    assert_eq!(client.stream_send(0, b"0", false, CONN_CAP), Ok(1));
    assert_eq!(client.len(), 3);
    assert_eq!(client.peer_streams_left_bidi(), 7);
}

#[test]
fn emit_retransmits_lost_data_first() {
    let (mut client, _) = pair(10, 100_000);
    let data: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    client.stream_send(0, &data, true, CONN_CAP).unwrap();
    let mut buf = [0u8; 1000];
    let frames: Vec<Emitted> = (0..3).map(|_| client.emit(0, &mut buf).unwrap()).collect();
    assert_eq!(
        frames
            .iter()
            .map(|e| (e.offset, e.len, e.fin))
            .collect::<Vec<_>>(),
        vec![(0, 1000, false), (1000, 1000, false), (2000, 1000, true)]
    );
    assert_eq!(client.next_stream_to_send(), None);
    assert_eq!(client.emit(0, &mut buf), Err(Error::Done));
    client.on_data_acked(0, 2000, 1000, true);
    client.on_data_lost(0, 0, 1000, false);
    client.on_data_lost(0, 1000, 1000, false);
    assert_eq!(client.next_stream_to_send(), Some(0));
    assert_eq!(client.peek_emit(0), Some((0, 2000)));
    let mut big = [0u8; 5000];
    let e = client.emit(0, &mut big).unwrap();
    assert_eq!((e.offset, e.len, e.fin), (0, 2000, false));
    assert!(big[..2000] == data[..2000]);
    client.on_data_acked(0, 0, 2000, false);
    assert!(client.contains(0), "receiving part still open");
}

#[test]
fn back_pressure_and_recovery_after_max_stream_data() {
    let now = epoch();
    let (mut client, mut server) = pair(10, 1000);
    assert_eq!(client.stream_capacity(0), Err(Error::InvalidStreamState(0)));
    assert_eq!(client.stream_send(0, &[1; 600], false, CONN_CAP), Ok(600));
    assert_eq!(client.stream_capacity(0), Ok(400));
    assert_eq!(client.stream_writable(0, 400), Ok(true));
    assert_eq!(client.stream_writable(0, 401), Ok(false));
    assert_eq!(client.stream_send(0, &[2; 600], false, CONN_CAP), Ok(400));
    assert_eq!(
        client.stream_send(0, &[3; 10], false, CONN_CAP),
        Err(Error::Done)
    );
    assert_eq!(client.stream_capacity(0), Ok(0));
    assert!(client.writable().next().is_none());
    // Blocked: STREAM_DATA_BLOCKED at the peer's limit, once.
    let ctl = drain_control(&mut client);
    assert_eq!(
        ctl,
        vec![ControlFrame::StreamDataBlocked {
            stream_id: 0,
            limit: 1000
        }]
    );
    // The connection-level capacity also limits.
    assert_eq!(client.stream_send(4, &[1; 600], false, 250), Ok(250));

    deliver(&mut client, &mut server);
    // The server reads (700 bytes, then 300): after the first read less than three quarters of
    // the window is unused, so MAX_STREAM_DATA is due; written after both reads, it carries
    // 1000 + 1000.
    let (got, _, _) = read_stream(&mut server, 0, now);
    assert_eq!(got.len(), 1000);
    let ctl = drain_control(&mut server);
    assert_eq!(
        ctl,
        vec![ControlFrame::MaxStreamData {
            stream_id: 0,
            max: 2000
        }]
    );
    for f in ctl {
        apply_control(&mut client, f).unwrap();
    }
    assert_eq!(client.stream_capacity(0), Ok(1000));
    assert!(client.writable().any(|id| id == 0));
    assert_eq!(client.stream_send(0, &[4; 10], false, CONN_CAP), Ok(10));
}

#[test]
fn local_send_buffer_limit() {
    let mut cfg = config(10, 1 << 20);
    cfg.max_stream_send_buffer = 1000;
    let (mut client, mut server) = pair_with(cfg, config(10, 1 << 20));
    assert_eq!(client.stream_send(0, &[0; 5000], false, CONN_CAP), Ok(1000));
    assert_eq!(
        client.stream_send(0, &[0; 5000], false, CONN_CAP),
        Err(Error::Done)
    );
    assert!(
        drain_control(&mut client).is_empty(),
        "not blocked by the peer"
    );
    // Acknowledgements free the buffer.
    deliver(&mut client, &mut server);
    assert_eq!(client.stream_capacity(0), Ok(1000));
}

#[test]
fn stream_window_autotunes_and_raises_the_connection_bound() {
    let t0 = epoch();
    let (mut client, mut server) = pair(10, 1000);
    assert_eq!(server.largest_recv_window(), 1000);
    let mut now = t0;
    let mut sent = 0u64;
    // The application reads promptly and the peer keeps the window full: updates come more
    // often than every 2 × srtt, so the window doubles up to its ceiling (8 × 1000).
    for _ in 0..40 {
        let cap = client.stream_capacity(0).unwrap_or(1000);
        let n = client
            .stream_send(0, &vec![0; cap as usize], false, CONN_CAP)
            .unwrap_or(0);
        sent += n as u64;
        deliver(&mut client, &mut server);
        read_stream(&mut server, 0, now);
        deliver(&mut server, &mut client);
        now += Duration::from_millis(10);
    }
    assert!(sent > 40_000, "sent {sent}");
    assert_eq!(server.largest_recv_window(), 8000);
    // A slow reader (updates every 4 × srtt) does not grow it.
    let (mut client, mut server) = pair(10, 1000);
    let mut now = t0;
    for _ in 0..20 {
        let cap = client.stream_capacity(0).unwrap_or(1000);
        let _ = client.stream_send(0, &vec![0; cap as usize], false, CONN_CAP);
        deliver(&mut client, &mut server);
        read_stream(&mut server, 0, now);
        deliver(&mut server, &mut client);
        now += SRTT * 4;
    }
    assert_eq!(server.largest_recv_window(), 1000);
}

#[test]
fn priorities_order_the_send_path() {
    let (mut client, _) = pair(100, 100_000);
    // (stream, urgency, incremental)
    let setup = [
        (0, 3, false),
        (4, 1, false),
        (8, 5, true),
        (12, 5, true),
        (16, 3, false),
    ];
    for (id, u, inc) in setup {
        client.stream_priority(id, u, inc).unwrap();
    }
    // Written in reverse, to show the order does not depend on write order.
    for (id, _, _) in setup.iter().rev() {
        client.stream_send(*id, &[0; 2500], true, CONN_CAP).unwrap();
    }
    let mut seq = Vec::new();
    let mut buf = [0u8; 1000];
    while let Some(id) = client.next_stream_to_send() {
        client.emit(id, &mut buf).unwrap();
        seq.push(id);
    }
    assert_eq!(seq, vec![4, 4, 4, 0, 0, 0, 16, 16, 16, 8, 12, 8, 12, 8, 12]);
}

#[test]
fn priority_change_and_invalid_urgency() {
    let (mut client, _) = pair(100, 100_000);
    client.stream_send(0, &[0; 10], false, CONN_CAP).unwrap();
    client.stream_send(4, &[0; 10], false, CONN_CAP).unwrap();
    assert_eq!(client.next_stream_to_send(), Some(0));
    client.stream_priority(4, 0, false).unwrap();
    assert_eq!(client.next_stream_to_send(), Some(4));
    assert_eq!(
        client.stream_priority(4, 8, false),
        Err(Error::InvalidStreamState(4))
    );
    assert_eq!(client.next_stream_to_send(), Some(4));
}

#[test]
fn many_streams_scheduling_is_not_a_scan() {
    // Thousands of idle streams and one busy one: the scheduler holds only the busy one.
    let (mut client, _) = pair(5000, 1000);
    for i in 0..4000u64 {
        client.stream_priority(i * 4, 3, false).unwrap();
    }
    client.stream_send(4 * 3999, b"x", false, CONN_CAP).unwrap();
    assert_eq!(client.next_stream_to_send(), Some(4 * 3999));
    assert_eq!(client.len(), 4000);
}

/// 10,000 request/response exchanges on bidirectional streams, and 10,000 on unidirectional
/// ones, with 50 streams allowed at once: every stream is collected on both sides, so the maps
/// end empty, and MAX_STREAMS keeps the peer going.
#[test]
fn completed_streams_are_collected() {
    let now = epoch();
    for bidi in [true, false] {
        let (mut client, mut server) = pair(50, 10_000);
        let total = 10_000u64;
        let (mut opened, mut done) = (0u64, 0u64);
        let mut rounds = 0;
        while done < total {
            rounds += 1;
            assert!(rounds < 10_000, "no progress");
            let left = if bidi {
                client.peer_streams_left_bidi()
            } else {
                client.peer_streams_left_uni()
            };
            for _ in 0..left.min(total - opened) {
                let id = opened * 4 + if bidi { 0 } else { 2 };
                assert_eq!(client.stream_send(id, b"request", true, CONN_CAP), Ok(7));
                opened += 1;
            }
            deliver(&mut client, &mut server);
            assert!(server.len() <= 50);
            for id in server.readable() {
                let (got, fin, _) = read_stream(&mut server, id, now);
                assert!(fin && got == b"request");
                if bidi {
                    server.stream_send(id, b"response", true, CONN_CAP).unwrap();
                } else {
                    done += 1;
                }
            }
            deliver(&mut server, &mut client);
            for id in client.readable() {
                let (got, fin, _) = read_stream(&mut client, id, now);
                assert!(fin && got == b"response");
                done += 1;
            }
            // Client acknowledgements reach the server's control frames (MAX_STREAMS).
            deliver(&mut server, &mut client);
        }
        assert_eq!(client.len(), 0, "bidi={bidi}");
        assert_eq!(server.len(), 0, "bidi={bidi}");
        // The advertised total grows with completed streams only.
        assert!(server.local_max_streams(bidi) <= 50 + total);
        assert!(server.local_max_streams(bidi) >= total);
    }
}

#[test]
fn stop_sending_queues_reset_stream() {
    let (mut client, mut server) = pair(10, 10_000);
    client.stream_send(0, &[5; 3000], false, CONN_CAP).unwrap();
    let mut buf = [0u8; 1000];
    client.emit(0, &mut buf).unwrap();
    client.on_stop_sending(0, 77).unwrap();
    let ctl = drain_control(&mut client);
    assert_eq!(
        ctl,
        vec![ControlFrame::ResetStream {
            stream_id: 0,
            error_code: 77,
            final_size: 1000
        }]
    );
    assert_eq!(client.take_send_reclaimed(), 2000);
    assert_eq!(
        client.next_stream_to_send(),
        None,
        "no more data after the reset"
    );
    assert!(
        client.writable().any(|id| id == 0),
        "the application must learn of the stop"
    );
    assert_eq!(client.stream_capacity(0), Err(Error::StreamStopped(77)));
    assert_eq!(
        client.stream_send(0, b"x", false, CONN_CAP),
        Err(Error::StreamStopped(77))
    );
    assert!(client.writable().next().is_none());
    // A repeated STOP_SENDING does not queue another reset.
    client.on_stop_sending(0, 77).unwrap();
    assert!(drain_control(&mut client).is_empty());
    // The reset reaches the server, whose application sees it.
    server.on_stream_frame(0, 0, &buf, false).unwrap();
    apply_control(&mut server, ctl[0]).unwrap();
    let mut out = [0u8; 10];
    assert_eq!(
        server.stream_recv(0, &mut out, epoch(), SRTT),
        Err(Error::StreamReset(77))
    );
}

#[test]
fn reset_stream_is_reported_to_the_reader_then_collected() {
    let now = epoch();
    let (_, mut server) = pair(10, 10_000);
    server.on_stream_frame(2, 0, b"partial", false).unwrap();
    assert_eq!(server.on_reset_stream(2, 9, 100), Ok(93));
    assert!(server.stream_readable(2));
    assert!(server.stream_finished(2));
    assert_eq!(
        read_stream(&mut server, 2, now),
        (vec![], false, Some(Error::StreamReset(9)))
    );
    assert!(
        !server.contains(2),
        "receive-only stream collected after the reset was read"
    );
    assert_eq!(server.take_recv_discarded(), 100);
}

#[test]
fn shutdown_read_sends_stop_sending_and_discards() {
    let now = epoch();
    let (mut client, mut server) = pair(10, 10_000);
    client.stream_send(2, &[1; 500], false, CONN_CAP).unwrap();
    deliver(&mut client, &mut server);
    server.stream_shutdown(2, Shutdown::Read, 42).unwrap();
    assert_eq!(server.take_recv_discarded(), 500);
    assert!(!server.stream_readable(2));
    let ctl = drain_control(&mut server);
    assert_eq!(
        ctl,
        vec![ControlFrame::StopSending {
            stream_id: 2,
            error_code: 42
        }]
    );
    // The client answers with RESET_STREAM; the server's stream is then collected.
    apply_control(&mut client, ctl[0]).unwrap();
    deliver(&mut client, &mut server);
    assert!(!server.contains(2));
    assert!(
        !client.contains(2),
        "reset acknowledged: the sending part is done"
    );
    let mut out = [0u8; 4];
    assert_eq!(
        server.stream_recv(2, &mut out, now, SRTT),
        Err(Error::InvalidStreamState(2))
    );
    assert_eq!(
        server.stream_shutdown(2, Shutdown::Read, 0),
        Err(Error::Done)
    );
    assert_eq!(
        server.stream_shutdown(3, Shutdown::Read, 0),
        Err(Error::InvalidStreamState(3))
    );
    // Never opened: nothing to shut down (quiche answers `Done` too); the wrong direction of
    // a unidirectional stream stays a usage error even before the stream exists.
    assert_eq!(
        server.stream_shutdown(8, Shutdown::Read, 0),
        Err(Error::Done)
    );
    assert_eq!(
        server.stream_shutdown(6, Shutdown::Write, 0),
        Err(Error::InvalidStreamState(6))
    );
    assert_eq!(
        server.stream_shutdown(7, Shutdown::Read, 0),
        Err(Error::InvalidStreamState(7))
    );
}

#[test]
fn shutdown_write_resets_with_bytes_sent_so_far() {
    let (mut client, mut server) = pair(10, 10_000);
    client.stream_send(0, &[1; 2500], false, CONN_CAP).unwrap();
    let mut buf = [0u8; 1000];
    client.emit(0, &mut buf).unwrap();
    client.stream_shutdown(0, Shutdown::Write, 5).unwrap();
    assert_eq!(client.take_send_reclaimed(), 1500);
    assert_eq!(
        client.stream_send(0, b"x", false, CONN_CAP),
        Err(Error::InvalidStreamState(0))
    );
    let f = client.next_control_frame().unwrap();
    assert_eq!(
        f,
        ControlFrame::ResetStream {
            stream_id: 0,
            error_code: 5,
            final_size: 1000
        }
    );
    client.on_control_frame_sent(&f);
    // Lost: sent again (the reset must be delivered reliably).
    client.on_control_frame_lost(&f);
    assert_eq!(client.next_control_frame(), Some(f));
    client.on_control_frame_sent(&f);
    server.on_stream_frame(0, 0, &buf, false).unwrap();
    apply_control(&mut server, f).unwrap();
    client.on_control_frame_acked(&f);
    // Lost after being acknowledged (spurious): nothing to resend.
    client.on_control_frame_lost(&f);
    assert_eq!(client.next_control_frame(), None);
    assert!(client.contains(0), "the receiving part is still open");
}

#[test]
fn lost_control_frames_are_resent_unless_superseded() {
    let now = epoch();
    let (mut client, mut server) = pair(10, 1000);
    client.stream_send(0, &[1; 1000], false, CONN_CAP).unwrap();
    deliver(&mut client, &mut server);
    read_stream(&mut server, 0, now);
    // Reads of 700 then 300: the update is due after the first; written after both, it
    // carries 1000 + 1000.
    let first = server.next_control_frame().unwrap();
    assert_eq!(
        first,
        ControlFrame::MaxStreamData {
            stream_id: 0,
            max: 2000
        }
    );
    server.on_control_frame_sent(&first);
    // Lost while still the latest: resent with the same value.
    server.on_control_frame_lost(&first);
    assert_eq!(server.next_control_frame(), Some(first));
    server.on_control_frame_sent(&first);
    // A newer update supersedes it: losing the old one queues nothing.
    apply_control(&mut client, first).unwrap();
    assert_eq!(client.stream_send(0, &[1; 1000], false, CONN_CAP), Ok(1000));
    deliver(&mut client, &mut server);
    read_stream(&mut server, 0, now + Duration::from_secs(1));
    let second = server.next_control_frame().unwrap();
    assert_eq!(
        second,
        ControlFrame::MaxStreamData {
            stream_id: 0,
            max: 3000
        }
    );
    server.on_control_frame_sent(&second);
    server.on_control_frame_lost(&first);
    assert_eq!(server.next_control_frame(), None);
    // STREAM_DATA_BLOCKED from the peer at a lower limit than ours: resend MAX_STREAM_DATA.
    server.on_stream_data_blocked(0, 2000).unwrap();
    assert_eq!(server.next_control_frame(), Some(second));
    server.on_control_frame_sent(&second);
    // Once the FIN is known the stream needs no more credit: a lost update is dropped.
    server.on_stream_frame(0, 2000, &[], true).unwrap();
    server.on_control_frame_lost(&second);
    assert_eq!(server.next_control_frame(), None);

    // MAX_STREAMS: resent if still the latest.
    let f = ControlFrame::MaxStreams {
        bidi: true,
        max: server.local_max_streams(true),
    };
    server.on_control_frame_lost(&f);
    assert_eq!(server.next_control_frame(), Some(f));
    server.on_control_frame_sent(&f);
    let old = ControlFrame::MaxStreams { bidi: true, max: 3 };
    server.on_control_frame_lost(&old);
    assert_eq!(server.next_control_frame(), None);
}

#[test]
fn control_frame_wire_lengths() {
    let f = ControlFrame::ResetStream {
        stream_id: 4,
        error_code: 0,
        final_size: 16384,
    };
    assert_eq!(f.wire_len(), 1 + 1 + 1 + 4);
    assert_eq!(
        ControlFrame::MaxStreams {
            bidi: false,
            max: 100
        }
        .wire_len(),
        3
    );
    assert_eq!(
        ControlFrame::StopSending {
            stream_id: 1 << 40,
            error_code: 1
        }
        .wire_len(),
        10
    );
}

#[test]
fn readable_and_finished_reporting() {
    let now = epoch();
    let (_, mut server) = pair(10, 1000);
    server.on_stream_frame(0, 0, b"a", false).unwrap();
    server.on_stream_frame(4, 5, b"b", false).unwrap();
    server.on_stream_frame(8, 0, b"", true).unwrap();
    assert_eq!(server.readable().collect::<Vec<_>>(), vec![0, 8]);
    assert!(!server.stream_finished(0));
    assert_eq!(read_stream(&mut server, 8, now), (vec![], true, None));
    assert!(server.stream_finished(8));
    assert!(!server.stream_readable(8));
    let mut buf = [0u8; 4];
    assert_eq!(server.stream_recv(4, &mut buf, now, SRTT), Err(Error::Done));
    // As in quiche, a stream not in the map counts as finished.
    assert!(server.stream_finished(12));
}

#[test]
fn data_after_fin_is_rejected_locally() {
    let (mut client, _) = pair(10, 1000);
    client.stream_send(0, b"abc", true, CONN_CAP).unwrap();
    assert_eq!(client.stream_send(0, b"", true, CONN_CAP), Ok(0));
    assert_eq!(
        client.stream_send(0, b"d", false, CONN_CAP),
        Err(Error::InvalidStreamState(0))
    );
    // A FIN is accepted even with no capacity left.
    client.stream_send(4, &[0; 1000], false, CONN_CAP).unwrap();
    assert_eq!(client.stream_send(4, b"", true, CONN_CAP), Ok(0));
    let mut buf = [0u8; 2000];
    let e = client.emit(4, &mut buf).unwrap();
    assert_eq!((e.len, e.fin), (1000, true));
}

#[test]
fn peer_params_raise_existing_streams() {
    let mut client = StreamMap::new(false, config(10, 1000));
    // Before the peer's parameters: no streams allowed.
    assert_eq!(
        client.stream_send(0, b"x", false, CONN_CAP),
        Err(Error::StreamLimit)
    );
    client
        .set_peer_transport_params(500, 700, 900, 4, 4)
        .unwrap();
    assert_eq!(client.stream_send(0, &[0; 1000], false, CONN_CAP), Ok(700));
    assert_eq!(client.stream_send(2, &[0; 1000], false, CONN_CAP), Ok(900));
    client
        .set_peer_transport_params(500, 800, 900, 4, 4)
        .unwrap();
    assert_eq!(client.stream_capacity(0), Ok(100));
}

enum InFlight {
    Ctl(ControlFrame),
    Data {
        id: u64,
        offset: u64,
        data: Vec<u8>,
        fin: bool,
    },
}

/// One flight from `from` to `to`: at most `budget` STREAM frames plus the control frames,
/// delivered in random order; `loss`% are lost (the sender is told), `spurious`% are delivered
/// but also declared lost (so they arrive twice), the rest are delivered and acknowledged.
fn lossy_flight(
    from: &mut StreamMap,
    to: &mut StreamMap,
    rng: &mut Rng,
    loss: u64,
    spurious: u64,
    budget: usize,
) {
    let mut frames = Vec::new();
    while let Some(f) = from.next_control_frame() {
        from.on_control_frame_sent(&f);
        frames.push(InFlight::Ctl(f));
    }
    let mut buf = [0u8; 1100];
    while frames.len() < budget {
        let Some(id) = from.next_stream_to_send() else {
            break;
        };
        let e = from.emit(id, &mut buf).unwrap();
        frames.push(InFlight::Data {
            id,
            offset: e.offset,
            data: buf[..e.len].to_vec(),
            fin: e.fin,
        });
    }
    for i in (1..frames.len()).rev() {
        frames.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for f in frames {
        let r = rng.below(100);
        let deliver = r >= loss;
        let acked = r >= loss + spurious;
        match f {
            InFlight::Ctl(c) => {
                if deliver {
                    apply_control(to, c).unwrap();
                }
                if acked {
                    from.on_control_frame_acked(&c);
                } else {
                    from.on_control_frame_lost(&c);
                }
            }
            InFlight::Data {
                id,
                offset,
                data,
                fin,
            } => {
                if deliver {
                    to.on_stream_frame(id, offset, &data, fin).unwrap();
                }
                if acked {
                    from.on_data_acked(id, offset, data.len() as u64, fin);
                } else {
                    from.on_data_lost(id, offset, data.len() as u64, fin);
                }
            }
        }
    }
}

/// Writes as much of `pending` as the stream accepts; returns whether everything (and the FIN)
/// went in.
fn flush(map: &mut StreamMap, id: u64, pending: &mut Vec<u8>, fin: bool) -> bool {
    match map.stream_send(id, pending, fin, CONN_CAP) {
        Ok(n) => {
            pending.drain(..n);
            pending.is_empty()
        }
        Err(Error::Done) => false,
        Err(e) => panic!("stream {id}: {e:?}"),
    }
}

/// Clients send requests of random sizes on 300 bidirectional streams (20 open at once, small
/// windows, random priorities); the server echoes each one back. 10% of frames are lost and 5%
/// duplicated, every flight is reordered. Every response must equal its request, and both maps
/// must end empty.
#[test]
fn lossy_echo_exchange() {
    use std::collections::HashMap;
    let now = epoch();
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let (mut client, mut server) = pair(20, 3000);
    let total = 300u64;
    let mut requests: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut client_out: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut responses: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut server_out: HashMap<u64, (Vec<u8>, bool)> = HashMap::new();
    let (mut opened, mut done) = (0u64, 0u64);
    let mut rounds = 0;
    while done < total || !client.is_empty() || !server.is_empty() {
        rounds += 1;
        assert!(
            rounds < 20_000,
            "no progress: done {done}, client {} server {}",
            client.len(),
            server.len()
        );
        // Open what the peer allows, and once try one more to provoke STREAMS_BLOCKED.
        while opened < total && client.peer_streams_left_bidi() > 0 {
            let id = opened * 4;
            let len = rng.below(12_000) as usize;
            let req: Vec<u8> = (0..len).map(|i| (i as u64 * 31 + id) as u8).collect();
            client
                .stream_priority(id, rng.below(8) as u8, rng.below(2) == 0)
                .unwrap();
            requests.insert(id, req.clone());
            client_out.insert(id, req);
            opened += 1;
        }
        if opened < total {
            assert_eq!(
                client.stream_send(opened * 4, b"", false, CONN_CAP),
                Err(Error::StreamLimit)
            );
        }
        client_out.retain(|&id, pending| !flush(&mut client, id, pending, true));
        lossy_flight(&mut client, &mut server, &mut rng, 10, 5, 40);

        for id in server.readable() {
            let (got, fin, err) = read_stream(&mut server, id, now);
            assert!(err.is_none());
            let entry = server_out.entry(id).or_default();
            entry.0.extend_from_slice(&got);
            entry.1 |= fin;
        }
        server_out.retain(|&id, (pending, fin)| {
            let all = flush(&mut server, id, pending, *fin);
            !(all && *fin)
        });
        lossy_flight(&mut server, &mut client, &mut rng, 10, 5, 40);

        for id in client.readable() {
            let (got, fin, err) = read_stream(&mut client, id, now);
            assert!(err.is_none());
            responses.entry(id).or_default().extend_from_slice(&got);
            if fin {
                assert!(responses[&id] == requests[&id], "stream {id} echo differs");
                done += 1;
            }
        }
    }
    assert_eq!(done, total);
    assert!(client.is_empty() && server.is_empty());
    assert!(client.take_recv_discarded() == 0 && server.take_recv_discarded() == 0);
}
