//! Pipe tests of the calls that complete quiche 0.30's API: asking for ack-eliciting packets,
//! per-path send quanta, stream and datagram iterators and zero-copy calls, connection ID
//! management, and the tuning setters (each shown to change what the connection does).

use std::time::Duration;

use super::{client_config, server_config};
use crate::testing::Pipe;
use crate::{Config, Error, RecvInfo};

/// A pipe through its handshake, with the post-handshake frames acknowledged: neither side
/// has anything to send.
fn quiet_pipe(client: &mut Config, server: &mut Config) -> Pipe {
    let mut pipe = Pipe::new(client, server).unwrap();
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.client.is_established()
            && p.client.path_stats().bytes_in_flight == 0
            && p.server.path_stats().bytes_in_flight == 0
    })
    .unwrap();
    pipe.run_for(Duration::from_millis(100)).unwrap();
    pipe
}

fn to_server(pipe: &Pipe) -> RecvInfo {
    RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    }
}

#[test]
fn send_ack_eliciting_makes_an_idle_connection_send_one_ping() {
    let mut pipe = quiet_pipe(&mut client_config(), &mut server_config());
    let mut out = [0u8; 1500];
    let now = pipe.now;
    assert_eq!(pipe.client.send_at(&mut out, now), Err(Error::Done));

    // Twice before `send`: one packet.
    pipe.client.send_ack_eliciting().unwrap();
    pipe.client.send_ack_eliciting().unwrap();
    let (len, _) = pipe.client.send_at(&mut out, now).unwrap();
    assert!(
        pipe.client.path_stats().bytes_in_flight >= len,
        "the PING is in flight"
    );
    assert_eq!(pipe.client.send_at(&mut out, now), Err(Error::Done));

    // The server owes an ACK for it: it was ack-eliciting.
    let info = to_server(&pipe);
    pipe.server.recv_at(&mut out[..len], info, now).unwrap();
    let later = now + Duration::from_millis(30);
    let mut reply = [0u8; 1500];
    assert!(
        pipe.server.send_at(&mut reply, later).is_ok(),
        "the server acknowledges"
    );
}

#[test]
fn send_ack_eliciting_on_path_knows_only_the_connections_paths() {
    let mut pipe = quiet_pipe(&mut client_config(), &mut server_config());
    let (local, peer) = (pipe.client_addr, pipe.server_addr);
    let elsewhere = "127.0.0.9:9".parse().unwrap();
    assert_eq!(
        pipe.client.send_ack_eliciting_on_path(local, elsewhere),
        Err(Error::InvalidState)
    );
    pipe.client.send_ack_eliciting_on_path(local, peer).unwrap();
    let mut out = [0u8; 1500];
    let now = pipe.now;
    let (_, info) = pipe
        .client
        .send_on_path_at(&mut out, Some(local), Some(peer), now)
        .unwrap();
    assert_eq!((info.from, info.to), (local, peer));
    assert!(pipe.client.path_stats().bytes_in_flight > 0);
}

#[test]
fn send_ack_eliciting_does_nothing_once_closed() {
    let mut pipe = quiet_pipe(&mut client_config(), &mut server_config());
    pipe.client.close(true, 0, b"bye").unwrap();
    pipe.flush().unwrap();
    pipe.client.send_ack_eliciting().unwrap();
    let mut out = [0u8; 1500];
    let now = pipe.now;
    assert_eq!(pipe.client.send_at(&mut out, now), Err(Error::Done));
}

#[test]
fn send_quantum_on_path_is_the_active_paths_and_zero_elsewhere() {
    let pipe = quiet_pipe(&mut client_config(), &mut server_config());
    let (local, peer) = (pipe.client_addr, pipe.server_addr);
    assert_eq!(
        pipe.client.send_quantum_on_path(local, peer),
        pipe.client.send_quantum()
    );
    assert!(pipe.client.send_quantum() > 0);
    let elsewhere = "127.0.0.9:9".parse().unwrap();
    assert_eq!(pipe.client.send_quantum_on_path(local, elsewhere), 0);
}

fn dgram_pipe() -> Pipe {
    let mut client = client_config();
    client.enable_dgram(true, 10, 10);
    let mut server = server_config();
    server.enable_dgram(true, 10, 10);
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    pipe.handshake().unwrap();
    pipe
}

#[test]
fn dgram_buffers_are_handed_over_and_peeked() {
    let mut pipe = dgram_pipe();
    pipe.client.dgram_send_buf(b"first".to_vec()).unwrap();
    pipe.client.dgram_send(b"second").unwrap();
    let too_big = vec![0u8; 1 << 16];
    assert_eq!(
        pipe.client.dgram_send_buf(too_big),
        Err(Error::BufferTooShort)
    );
    pipe.run_for(Duration::from_millis(50)).unwrap();

    let mut peek = [0u8; 8];
    assert_eq!(pipe.server.dgram_recv_peek(&mut peek, 3), Ok(3));
    assert_eq!(&peek[..3], b"fir");
    assert_eq!(
        pipe.server.dgram_recv_peek(&mut peek, 6),
        Err(Error::BufferTooShort)
    );
    assert_eq!(
        pipe.server.dgram_recv_queue_len(),
        2,
        "peeking leaves it queued"
    );
    assert_eq!(pipe.server.dgram_recv_buf().unwrap(), b"first");
    assert_eq!(pipe.server.dgram_recv_buf().unwrap(), b"second");
    assert_eq!(pipe.server.dgram_recv_buf(), Err(Error::Done));
    assert_eq!(pipe.server.dgram_recv_peek(&mut peek, 1), Err(Error::Done));
}

#[test]
fn early_data_reason_without_early_data_is_disabled() {
    let pipe = quiet_pipe(&mut client_config(), &mut server_config());
    // BoringSSL's ssl_early_data_disabled.
    assert_eq!(pipe.client.early_data_reason(), 1);
    assert_eq!(pipe.server.early_data_reason(), 1);
    let fresh = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    assert_eq!(
        fresh.client.early_data_reason(),
        0,
        "unknown before the handshake"
    );
}

#[test]
fn max_idle_timeout_set_on_a_new_connection_is_announced_and_enforced() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.client.set_max_idle_timeout(1_000).unwrap();
    pipe.handshake().unwrap();
    let announced = pipe
        .server
        .peer_transport_params()
        .unwrap()
        .max_idle_timeout;
    assert_eq!(announced, 1_000);
    assert_eq!(
        pipe.client.set_max_idle_timeout(5_000),
        Err(Error::InvalidState),
        "too late once packets went out"
    );
    pipe.run_for(Duration::from_secs(3)).unwrap();
    assert!(pipe.client.is_timed_out() && pipe.server.is_timed_out());
}
