//! `quiche-server --retry always|auto|never` on loopback: when new clients get a Retry, read
//! from the server's stats line (`retries=`, `half_open=`).
//!
//! With `--retry auto` a client gets a Retry only while the server holds at least
//! `--retry-threshold` half-open connections; they are opened here by clients that send their
//! first Initial and then go silent, and the count must fall back to zero once the server's
//! idle timeout has ended them (no leak), after which new clients get no Retry again.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::net::{SocketAddr, UdpSocket};

use quiche::ConnectionId;

mod common;

use common::{client, client_args, describe, Server, TempDir};

/// The server's idle timeout in the `auto` tests (ms): long enough that the silent clients'
/// connections are still half open when the next client connects on a loaded machine, short
/// enough that the test waits for it.
const IDLE_TIMEOUT_MS: &str = "3000";

/// Downloads `/a` with `quiche-client` and checks that it succeeded.
fn download(server: &Server) {
    let out = client(&client_args(None, [server.url("/a")]));
    assert!(out.status.success(), "{}", describe(&out));
}

/// Opens a connection that stays half open: a client's first Initial (which decrypts, so the
/// server keeps a connection for it), then silence. The socket is returned so that its port
/// stays taken while the server retransmits to it.
fn half_open(server: SocketAddr, seed: u8) -> UdpSocket {
    silent_client(server, seed).0
}

/// [`half_open`], with the client's connection state.
fn silent_client(server: SocketAddr, seed: u8) -> (UdpSocket, quiche::Connection) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let local = socket.local_addr().unwrap();
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    config.set_application_protos(&[b"hq-interop"]).unwrap();
    config.verify_peer(false);
    let scid = [seed; 16];
    let scid = ConnectionId::from_ref(&scid);
    let mut conn = quiche::connect(Some("localhost"), &scid, local, server, &mut config).unwrap();
    let mut buf = vec![0; 65535];
    let mut sent = 0;
    while let Ok((len, _)) = conn.send(&mut buf) {
        socket.send_to(&buf[..len], server).unwrap();
        sent += 1;
    }
    assert!(sent > 0, "no Initial to send");
    (socket, conn)
}

fn start(dir: &TempDir, extra: &[&str]) -> Server {
    std::fs::write(dir.root().join("a"), b"answer").unwrap();
    Server::start(dir, extra)
}

#[test]
fn auto_retries_only_while_half_open_connections_reach_the_threshold() {
    let dir = TempDir::new("retry-auto");
    let server = start(
        &dir,
        &[
            "--retry",
            "auto",
            "--retry-threshold",
            "5",
            "--idle-timeout",
            IDLE_TIMEOUT_MS,
        ],
    );

    // (a) An idle server: the client is accepted without a Retry, and once its handshake is
    // done it no longer counts as half open.
    download(&server);
    server.wait_stats("one connection, no Retry", |s| {
        s.get("accepted") == Some(&1) && s.get("half_open") == Some(&0)
    });
    assert_eq!(server.stats().get("retries"), Some(&0), "{}", server.log());

    // (b) Five half-open connections (each accepted at once: the count was below 5 when its
    // Initial came), then a new client gets a Retry, and still completes.
    let silent: Vec<UdpSocket> = (0..5).map(|i| half_open(server.addr, 0xa0 + i)).collect();
    server.wait_stats("five half-open connections", |s| {
        s.get("half_open") == Some(&5) && s.get("accepted") == Some(&6)
    });
    assert_eq!(server.stats().get("retries"), Some(&0), "{}", server.log());
    download(&server);
    let stats = server.wait_stats("a Retry and the seventh connection", |s| {
        s.get("accepted") == Some(&7) && s.get("retries").is_some_and(|&r| r >= 1)
    });
    // Loopback loses nothing: one Retry, for the one client that came past the threshold.
    assert_eq!(stats.get("retries"), Some(&1), "{stats:?}");

    // The silent clients' connections time out; none stays counted.
    server.wait_stats("the half-open connections gone", |s| {
        s.get("half_open") == Some(&0) && s.get("connections") == Some(&0)
    });
    drop(silent);

    // Below the threshold again: no Retry.
    download(&server);
    let stats = server.wait_stats("the eighth connection, done", |s| {
        s.get("accepted") == Some(&8) && s.get("half_open") == Some(&0)
    });
    assert_eq!(stats.get("retries"), Some(&1), "{stats:?}");
}

#[test]
fn always_retries_every_client_and_never_none() {
    for (flags, retries) in [
        (&[][..], 1),
        (&["--retry", "always"][..], 1),
        (&["--retry", "never"][..], 0),
        (&["--no-retry"][..], 0),
    ] {
        let dir = TempDir::new(&format!("retry-{}", flags.join("-")));
        let server = start(&dir, flags);
        download(&server);
        let stats = server.wait_stats("the connection, done", |s| {
            s.get("accepted") == Some(&1) && s.get("half_open") == Some(&0)
        });
        assert_eq!(stats.get("retries"), Some(&retries), "{flags:?}: {stats:?}");
    }
}

#[test]
fn half_open_connections_closed_by_their_client_are_not_counted() {
    // The default idle timeout (30 s): only the clients' CONNECTION_CLOSE ends them in time.
    let dir = TempDir::new("retry-auto-close");
    let server = start(&dir, &["--retry", "auto"]);
    let mut conns: Vec<_> = (0..3)
        .map(|i| silent_client(server.addr, 0xb0 + i))
        .collect();
    server.wait_stats("three half-open connections", |s| {
        s.get("half_open") == Some(&3)
    });
    let mut buf = vec![0; 65535];
    for (socket, conn) in &mut conns {
        // The server's first flight, so that the close is in keys it can read (the client
        // may then be through its side of the handshake, the server is not: it never gets
        // the client's Finished).
        socket
            .set_read_timeout(Some(std::time::Duration::from_millis(500)))
            .unwrap();
        let local = socket.local_addr().unwrap();
        while let Ok((len, from)) = socket.recv_from(&mut buf) {
            let _ = conn.recv(&mut buf[..len], quiche::RecvInfo { from, to: local });
            socket
                .set_read_timeout(Some(std::time::Duration::from_millis(50)))
                .unwrap();
        }
        conn.close(false, 0, b"").unwrap();
        while let Ok((len, _)) = conn.send(&mut buf) {
            socket.send_to(&buf[..len], server.addr).unwrap();
        }
    }
    server.wait_stats("none left after the clients closed", |s| {
        s.get("half_open") == Some(&0) && s.get("closed") == Some(&3)
    });

    // A connection through its handshake and still open is not half open.
    let (socket, mut conn) = silent_client(server.addr, 0xc0);
    let local = socket.local_addr().unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(50)))
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !conn.is_established() && std::time::Instant::now() < deadline {
        if let Ok((len, from)) = socket.recv_from(&mut buf) {
            let _ = conn.recv(&mut buf[..len], quiche::RecvInfo { from, to: local });
        }
        // The client's Finished, and its acknowledgements.
        while let Ok((len, _)) = conn.send(&mut buf) {
            socket.send_to(&buf[..len], server.addr).unwrap();
        }
    }
    assert!(conn.is_established(), "no handshake in 10 s");
    server.wait_stats("an open connection through its handshake", |s| {
        s.get("connections") == Some(&1) && s.get("half_open") == Some(&0)
    });
}
