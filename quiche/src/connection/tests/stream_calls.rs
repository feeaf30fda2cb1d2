//! Tests of the stream calls of `connection/stream_calls.rs`: the one-shot readable and
//! writable events, reads into a `BufMut`, discards, zero-copy writes and the state queries.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::BufMut;

use super::{client_config, server_config};
use crate::buffers::{BufFactory, BufSplit};
use crate::packet::ConnectionId;
use crate::testing::Pipe;
use crate::{Connection, Error, RecvInfo};

fn pipe() -> Pipe {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    pipe
}

/// Sends `data` on each of `ids` from the client and delivers everything.
fn client_sends(pipe: &mut Pipe, ids: &[u64], data: &[u8], fin: bool) {
    for &id in ids {
        assert_eq!(pipe.client.stream_send(id, data, fin).unwrap(), data.len());
    }
    pipe.run_for(Duration::from_millis(50)).unwrap();
}

#[test]
fn readable_next_returns_each_stream_once_until_rearmed() {
    let mut pipe = pipe();
    client_sends(&mut pipe, &[0, 4, 8], b"hello", false);
    let mut got: Vec<u64> = std::iter::from_fn(|| pipe.server.stream_readable_next()).collect();
    got.sort_unstable();
    assert_eq!(got, vec![0, 4, 8]);
    assert_eq!(
        pipe.server.stream_readable_next(),
        None,
        "not again without news"
    );
    // `readable()` still lists them: only the one-shot events were consumed.
    assert_eq!(pipe.server.readable().count(), 3);

    // A read that leaves data behind re-arms the stream.
    let mut two = [0u8; 2];
    pipe.server.stream_recv(4, &mut two).unwrap();
    assert_eq!(pipe.server.stream_readable_next(), Some(4));
    // New data re-arms one that was read to the end.
    let mut buf = [0u8; 64];
    pipe.server.stream_recv(0, &mut buf).unwrap();
    client_sends(&mut pipe, &[0], b"more", false);
    assert_eq!(pipe.server.stream_readable_next(), Some(0));
    assert_eq!(pipe.server.stream_readable_next(), None);
}

#[test]
fn writable_next_waits_for_the_low_water_mark() {
    // What the server may send on the client's stream 0.
    let mut client = client_config();
    client.set_initial_max_stream_data_bidi_local(1000);
    let mut pipe = Pipe::new(&mut client, &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    client_sends(&mut pipe, &[0], b"request", false);
    // The server's stream 0 is writable: reported once.
    assert_eq!(pipe.server.stream_writable_next(), Some(0));
    assert_eq!(pipe.server.stream_writable_next(), None);
    // A write that leaves room reports it again.
    assert_eq!(pipe.server.stream_send(0, &[7; 100], false).unwrap(), 100);
    assert_eq!(pipe.server.stream_writable_next(), Some(0));
    // Asking for more than the peer allows sets the low-water mark: not reported while the
    // capacity stays below it.
    assert!(!pipe.server.stream_writable(0, 5000).unwrap());
    assert_eq!(pipe.server.stream_writable_next(), None);
    assert!(pipe.server.stream_writable(0, 10).unwrap());
}

#[test]
fn readable_len_counts_what_a_read_returns() {
    let mut pipe = pipe();
    client_sends(&mut pipe, &[0], &[1; 1000], false);
    assert_eq!(pipe.server.stream_readable_len(0, usize::MAX), 1000);
    assert_eq!(pipe.server.stream_readable_len(0, 10), 10);
    assert_eq!(
        pipe.server.stream_readable_len(4, usize::MAX),
        0,
        "no such stream"
    );
    let mut buf = [0u8; 300];
    pipe.server.stream_recv(0, &mut buf).unwrap();
    assert_eq!(pipe.server.stream_readable_len(0, usize::MAX), 700);
}

#[test]
fn discard_skips_bytes_and_credits_flow_control() {
    let mut pipe = pipe();
    let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    client_sends(&mut pipe, &[0], &data, true);
    assert_eq!(pipe.server.stream_discard(0, 100), Ok((100, false)));
    let mut buf = [0u8; 2000];
    assert_eq!(pipe.server.stream_recv(0, &mut buf), Ok((900, true)));
    assert_eq!(&buf[..900], &data[100..]);
    // Read to the end: nothing more (the server's side keeps the stream alive).
    assert_eq!(pipe.server.stream_discard(0, 10), Err(Error::Done));
}

#[test]
fn recv_buf_fills_a_bufmut_up_to_its_limit() {
    let mut pipe = pipe();
    client_sends(&mut pipe, &[0], b"0123456789", true);
    let mut limited = Vec::new().limit(4);
    assert_eq!(pipe.server.stream_recv_buf(0, &mut limited), Ok((4, false)));
    assert_eq!(limited.get_ref(), b"0123");
    let mut rest = Vec::new();
    assert_eq!(pipe.server.stream_recv_buf(0, &mut rest), Ok((6, true)));
    assert_eq!(rest, b"456789");
}

#[test]
fn closed_once_both_directions_ended() {
    let mut pipe = pipe();
    assert!(!pipe.server.stream_closed(0), "never opened");
    client_sends(&mut pipe, &[0], b"req", true);
    let mut buf = [0u8; 16];
    pipe.server.stream_recv(0, &mut buf).unwrap();
    assert!(
        !pipe.server.stream_closed(0),
        "the server has not ended its side"
    );
    pipe.server.stream_send(0, b"resp", true).unwrap();
    assert!(pipe.server.stream_closed(0));
    pipe.run_for(Duration::from_millis(50)).unwrap();
    assert!(pipe.server.stream_closed(0), "collected is closed too");
}

#[test]
fn is_readable_sees_streams_and_datagrams() {
    let mut client = client_config();
    client.enable_dgram(true, 10, 10);
    let mut server = server_config();
    server.enable_dgram(true, 10, 10);
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    pipe.handshake().unwrap();
    assert!(!pipe.server.is_readable());
    client_sends(&mut pipe, &[0], b"x", false);
    assert!(pipe.server.is_readable());
    pipe.server.stream_recv(0, &mut [0u8; 8]).unwrap();
    assert!(!pipe.server.is_readable());
    pipe.client.dgram_send(b"dgram").unwrap();
    pipe.run_for(Duration::from_millis(50)).unwrap();
    assert!(pipe.server.is_readable());
}

/// Buffers that are `bytes::Bytes`, as a zero-copy application would use.
#[derive(Clone, Debug, Default)]
pub(crate) struct BytesFactory;

impl BufFactory for BytesFactory {
    type Buf = bytes::Bytes;
    type DgramBuf = Vec<u8>;
    fn buf_from_slice(buf: &[u8]) -> bytes::Bytes {
        bytes::Bytes::copy_from_slice(buf)
    }
    fn dgram_buf_from_slice(buf: &[u8]) -> Vec<u8> {
        buf.to_vec()
    }
}

/// Moves datagrams between two connections until neither has anything to send; returns
/// whether any moved.
pub(crate) fn exchange<F: BufFactory>(
    client: &mut Connection<F>,
    server: &mut Connection<F>,
    now: Instant,
) -> bool {
    let mut moved = false;
    while deliver(client, server, now) | deliver(server, client, now) {
        moved = true;
    }
    moved
}

/// Everything `from` has to send now, received by `to`; whether there was anything.
fn deliver<F: BufFactory>(from: &mut Connection<F>, to: &mut Connection<F>, now: Instant) -> bool {
    let mut buf = [0u8; 1500];
    let mut any = false;
    while let Ok((n, info)) = from.send_at(&mut buf, now) {
        let ri = RecvInfo {
            from: info.from,
            to: info.to,
        };
        let _ = to.recv_at(&mut buf[..n], ri, now);
        any = true;
    }
    any
}

/// A client and a server with the buffers of `BytesFactory`, through their handshake (a
/// millisecond of virtual time per round).
pub(crate) fn bytes_pair(
    client_config: &mut crate::Config,
    server_config: &mut crate::Config,
) -> (Connection<BytesFactory>, Connection<BytesFactory>, Instant) {
    let client_addr: SocketAddr = "127.0.0.1:4000".parse().unwrap();
    let server_addr: SocketAddr = "127.0.0.1:443".parse().unwrap();
    let mut client = crate::connect_with_buffer_factory::<BytesFactory>(
        Some("localhost"),
        &ConnectionId::from_ref(&[1; 16]),
        client_addr,
        server_addr,
        client_config,
    )
    .unwrap();
    let mut server = crate::accept_with_buf_factory::<BytesFactory>(
        &ConnectionId::from_ref(&[2; 16]),
        None,
        server_addr,
        client_addr,
        server_config,
    )
    .unwrap();
    let mut now = crate::testing::virtual_epoch();
    for _ in 0..20 {
        exchange(&mut client, &mut server, now);
        now += Duration::from_millis(1);
    }
    assert!(client.is_established() && server.is_established());
    (client, server, now)
}

#[test]
fn send_zc_takes_what_fits_and_hands_back_the_rest() {
    let mut sc = server_config();
    // What the client may send on the streams it opens.
    sc.set_initial_max_stream_data_bidi_remote(100);
    let (mut client, _server, _) = bytes_pair(&mut client_config(), &mut sc);
    let data = bytes::Bytes::from(vec![9u8; 150]);
    // The peer allows 100 bytes on the stream: the rest comes back, split without a copy.
    let (n, rest) = client.stream_send_zc(0, data.clone(), true).unwrap();
    assert_eq!(n, 100);
    let rest = rest.expect("the rest of the buffer");
    assert_eq!(rest.len(), 50);
    assert_eq!(
        rest.as_ptr(),
        data[100..].as_ptr(),
        "the same memory, not a copy"
    );
    // Nothing fits now.
    assert_eq!(client.stream_send_zc(0, rest, true), Err(Error::Done));
    // A whole buffer that fits ends the stream with its FIN.
    assert_eq!(
        client.stream_send_zc(4, bytes::Bytes::from_static(b"all"), true),
        Ok((3, None))
    );
    assert_eq!(
        client.stream_send(4, b"x", false),
        Err(Error::InvalidStreamState(4))
    );
    let mut b = bytes::Bytes::from_static(b"ab");
    assert_eq!(&BufSplit::split_at(&mut b, 1)[..], b"b");
}
