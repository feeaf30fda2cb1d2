//! Stateless reset on the pipe (RFC 9000 §10.3): a server that lost a connection's state and
//! shares the static key answers the peer's next packet with a reset built by
//! [`Config::stateless_reset`]; the peer recognizes it and is closed at once. Also the token a
//! server advertises, and resets of the server by the client.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use super::streams::{encode, established, stateless_reset, to_client, to_server};
use super::{client_config, server_config};
use crate::connection::{Connection, RecvInfo};
use crate::frame::Frame;
use crate::packet::{Header, Type};
use crate::testing::{Direction, LinkConfig, Pipe, Rng, Verdict};
use crate::{Config, Error};

const KEY: [u8; 32] = [0x5e; 32];

fn server_with_key() -> Config {
    let mut server = server_config();
    server.set_stateless_reset_key(&KEY);
    server
}

/// The configuration of a server process restarted with the same key: it knows no connection.
fn restarted_server() -> Config {
    server_with_key()
}

/// The stateless reset `restarted` sends for `datagram`, a short-header datagram addressed to
/// an ID `cid_len` bytes long.
fn reset_for(restarted: &Config, datagram: &[u8], cid_len: usize) -> Vec<u8> {
    let mut copy = datagram.to_vec();
    let hdr = Header::from_slice(&mut copy, cid_len).unwrap();
    assert_eq!(hdr.ty, Type::Short);
    let mut out = vec![0u8; 1500];
    let n = restarted
        .stateless_reset(&hdr.dcid, datagram.len(), &mut out)
        .unwrap();
    assert!(n < datagram.len());
    out.truncate(n);
    out
}

/// What `conn` sends now, one datagram at most.
fn next_datagram(conn: &mut Connection, now: std::time::Instant) -> Option<Vec<u8>> {
    let mut out = vec![0u8; 1500];
    let (n, _) = conn.send_at(&mut out, now).ok()?;
    out.truncate(n);
    Some(out)
}

fn assert_closed_by_reset(conn: &mut Connection, info: RecvInfo, now: std::time::Instant) {
    assert!(conn.is_closed(), "closed at once");
    assert!(conn.is_stateless_reset());
    assert!(!conn.is_draining() && !conn.is_timed_out());
    assert!(conn.peer_error().is_none() && conn.local_error().is_none());
    assert_eq!(conn.timeout_at(now), None);
    assert!(next_datagram(conn, now).is_none(), "nothing more is sent");
    let mut again = vec![0x40; 100];
    assert_eq!(conn.recv_at(&mut again, info, now), Err(Error::Done));
}

#[test]
fn server_restarted_mid_download_resets_the_client_within_one_round_trip() {
    let link = LinkConfig {
        delay: Duration::from_millis(20),
        ..LinkConfig::default()
    };
    let mut server = server_with_key();
    let mut pipe =
        Pipe::with_links(&mut client_config(), &mut server, link.clone(), link, 3).unwrap();
    pipe.handshake().unwrap();
    let cid_len = pipe.server.source_id().len();
    // A 20 MB download is under way: the client asks, the server answers.
    pipe.client.stream_send(0, b"GET /big", true).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(0))
        .unwrap();
    let mut buf = [0u8; 64];
    pipe.server.stream_recv(0, &mut buf).unwrap();
    let body = vec![7u8; 20 << 20];
    let mut sent = pipe.server.stream_send(0, &body, true).unwrap();
    let mut got = 0;
    pipe.run_until(Duration::from_secs(10), |p| {
        sent += p.server.stream_send(0, &body[sent..], true).unwrap_or(0);
        while let Ok((n, _)) = p.client.stream_recv(0, &mut [0u8; 65536]) {
            got += n;
        }
        got > 1 << 20
    })
    .unwrap();

    // The server process dies: it sends nothing more (what it sent still arrives), and the
    // client's datagrams reach the restarted process, which knows no connection.
    let to_restarted = Rc::new(RefCell::new(Vec::new()));
    let captured = Rc::clone(&to_restarted);
    pipe.hook = Some(Box::new(move |d| {
        if d.direction == Direction::ToServer {
            captured.borrow_mut().push((d.sent_at, d.data.to_vec()));
        }
        Verdict::Drop
    }));
    let died = pipe.now;
    pipe.run_until(Duration::from_secs(5), |_| {
        !to_restarted.borrow().is_empty()
    })
    .unwrap();
    // The restarted server answers the first of them; the reset reaches the client one round
    // trip after the client sent it.
    let (sent_at, datagram) = to_restarted.borrow()[0].clone();
    let mut reset = reset_for(&restarted_server(), &datagram, cid_len);
    let now = pipe.now.max(sent_at + Duration::from_millis(40));
    let info = to_client(&pipe);
    assert!(!pipe.client.is_closed());
    assert_eq!(pipe.client.recv_at(&mut reset, info, now), Ok(reset.len()));
    assert_closed_by_reset(&mut pipe.client, info, now);
    // The client kept acknowledging the data in flight, so it learnt within a round trip of
    // the death (its idle timeout is 30 s).
    assert!(
        now - died <= Duration::from_millis(80),
        "closed {:?} after the server died",
        now - died
    );
}

#[test]
fn tokens_of_ids_issued_before_a_restart_are_recomputed_from_the_key() {
    let mut server = server_with_key();
    server.set_active_connection_id_limit(4);
    let mut client = client_config();
    client.set_active_connection_id_limit(4);
    let mut pipe = established(&mut client, &mut server);
    let cid_len = pipe.server.source_id().len();
    // The server moves the client to an ID issued with NEW_CONNECTION_ID.
    let fresh = pipe.server.new_source_cid(true).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.client.destination_id() == fresh
    })
    .unwrap();
    let datagram = pipe
        .client
        .raw_1rtt_packet(&encode(&[Frame::Ping]), pipe.now);
    let mut copy = datagram.clone();
    assert_eq!(
        &Header::from_slice(&mut copy, cid_len).unwrap().dcid[..],
        &fresh[..]
    );
    // A process with another key cannot reset the connection; one with the same key can.
    let mut other = server_config();
    other.set_stateless_reset_key(&[1; 32]);
    let mut wrong = reset_for(&other, &datagram, cid_len);
    let info = to_client(&pipe);
    pipe.client.recv_at(&mut wrong, info, pipe.now).unwrap();
    assert!(!pipe.client.is_closed());
    let mut reset = reset_for(&restarted_server(), &datagram, cid_len);
    pipe.client.recv_at(&mut reset, info, pipe.now).unwrap();
    assert_closed_by_reset(&mut pipe.client, info, pipe.now);
}

#[test]
fn set_stateless_reset_token_chooses_the_handshake_token_of_servers_only() {
    let token = 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10u128;
    let mut server = server_with_key();
    server.set_stateless_reset_token(Some(token));
    // On a client it does nothing: clients send no token (RFC 9000 §18.2).
    let mut client = client_config();
    client.set_stateless_reset_token(Some(token));
    let mut pipe = established(&mut client, &mut server);
    let tp = pipe.client.peer_transport_params().unwrap();
    assert_eq!(tp.stateless_reset_token, Some(token));
    let tp = pipe.server.peer_transport_params().unwrap();
    assert_eq!(tp.stateless_reset_token, None);

    // The derived token of the handshake ID no longer counts; the chosen one does.
    let derived = restarted_server().stateless_reset_token(&pipe.server.source_id());
    let mut rng = Rng(5);
    let mut d = stateless_reset(&mut rng, 50, &derived);
    let info = to_client(&pipe);
    pipe.client.recv_at(&mut d, info, pipe.now).unwrap();
    assert!(!pipe.client.is_closed());
    let mut d = stateless_reset(&mut rng, 50, &token.to_be_bytes());
    pipe.client.recv_at(&mut d, info, pipe.now).unwrap();
    assert_closed_by_reset(&mut pipe.client, info, pipe.now);

    // Back to None: the next connections get derived tokens again.
    server.set_stateless_reset_token(None);
    let pipe = established(&mut client_config(), &mut server);
    let tp = pipe.client.peer_transport_params().unwrap();
    assert_eq!(
        tp.stateless_reset_token.map(u128::to_be_bytes),
        Some(server.stateless_reset_token(&pipe.server.source_id()))
    );
}

#[test]
fn server_recognizes_a_reset_from_the_client() {
    let mut client = client_config();
    client.set_stateless_reset_key(&[0xc1; 32]);
    let mut pipe = established(&mut client, &mut server_config());
    // The server sends to the client's handshake ID, which has no token (clients cannot send
    // one); the client moves it to an issued one.
    let fresh = pipe.client.new_source_cid(true).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.server.destination_id() == fresh
    })
    .unwrap();
    let datagram = pipe
        .server
        .raw_1rtt_packet(&encode(&[Frame::Ping]), pipe.now);
    let mut reset = reset_for(&client, &datagram, fresh.len());
    let info = to_server(&pipe);
    pipe.server.recv_at(&mut reset, info, pipe.now).unwrap();
    assert_closed_by_reset(&mut pipe.server, info, pipe.now);
}

#[test]
fn a_reset_with_a_long_header_counts_and_one_ends_a_closing_connection() {
    // RFC 9000 §10.3: any datagram ending in a valid token is a reset, as other versions
    // may send them with long headers.
    let mut server = server_with_key();
    let mut pipe = established(&mut client_config(), &mut server);
    let token = server.stateless_reset_token(&pipe.server.source_id());
    let mut d = stateless_reset(&mut Rng(9), 60, &token);
    d[0] |= 0x80;
    let info = to_client(&pipe);
    pipe.client.recv_at(&mut d, info, pipe.now).unwrap();
    assert_closed_by_reset(&mut pipe.client, info, pipe.now);

    // A client in its closing period stops repeating CONNECTION_CLOSE at once.
    let mut pipe = established(&mut client_config(), &mut server);
    pipe.client.close(true, 1, b"bye").unwrap();
    assert!(next_datagram(&mut pipe.client, pipe.now).is_some());
    let token = server.stateless_reset_token(&pipe.server.source_id());
    let mut d = stateless_reset(&mut Rng(10), 45, &token);
    let info = to_client(&pipe);
    pipe.client.recv_at(&mut d, info, pipe.now).unwrap();
    assert!(pipe.client.is_closed() && pipe.client.is_stateless_reset());
    assert!(
        pipe.client.local_error().is_some(),
        "the close it started is still reported"
    );
    assert!(next_datagram(&mut pipe.client, pipe.now).is_none());
}

#[test]
fn too_short_or_unprocessable_datagrams_with_the_token_elsewhere_do_not_reset() {
    let mut server = server_with_key();
    let mut pipe = established(&mut client_config(), &mut server);
    let token = server.stateless_reset_token(&pipe.server.source_id());
    let info = to_client(&pipe);
    // 20 bytes cannot be a reset (RFC 9000 §10.3), even ending in the token.
    let mut d = vec![0x40; 20];
    d[4..].copy_from_slice(&token);
    pipe.client.recv_at(&mut d, info, pipe.now).unwrap();
    // The token anywhere but in the last 16 bytes.
    let mut d = Rng(3).bytes(60);
    d[0] = 0x40;
    d[10..26].copy_from_slice(&token);
    pipe.client.recv_at(&mut d, info, pipe.now).unwrap();
    assert!(!pipe.client.is_closed() && !pipe.client.is_stateless_reset());
    // And the connection works on.
    pipe.client.stream_send(0, b"alive", true).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(0))
        .unwrap();
}

#[cfg(feature = "qlog")]
#[test]
fn the_reset_shows_in_the_qlog() {
    use super::qlog::{records, SharedBuf};

    let mut server = server_with_key();
    let mut pipe = established(&mut client_config(), &mut server);
    let trace = SharedBuf::default();
    pipe.client
        .set_qlog_at(Box::new(trace.clone()), "t".into(), "d".into(), pipe.now);
    let token = server.stateless_reset_token(&pipe.server.source_id());
    let mut d = stateless_reset(&mut Rng(4), 47, &token);
    let info = to_client(&pipe);
    pipe.client.recv_at(&mut d, info, pipe.now).unwrap();

    let events = records(&trace);
    let pos = |name: &str| events.iter().position(|e| e["name"] == name);
    let received = pos("transport:packet_received").expect("packet_received");
    let e = &events[received]["data"];
    assert_eq!(e["header"]["packet_type"], "stateless_reset");
    let hex: String = token.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(e["stateless_reset_token"], hex);
    assert_eq!(e["raw"]["length"], 47);
    let closed = pos("connectivity:connection_closed").expect("connection_closed");
    assert_eq!(events[closed]["data"]["trigger"], "stateless_reset");
    assert_eq!(events[closed]["data"]["owner"], "remote");
    let state = events
        .iter()
        .rposition(|e| e["name"] == "connectivity:connection_state_updated")
        .unwrap();
    assert_eq!(events[state]["data"]["new"], "closed");
    assert!(received < closed && closed < state);
}
