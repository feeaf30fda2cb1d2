//! `quiche-server --threads N`: workers on one address (SO_REUSEPORT). The kernel picks a
//! worker by the 4-tuple, so after a client's address changes its datagrams may reach a worker
//! that does not hold the connection; that worker hands them to the owner, named by the
//! connection ID.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use quiche::{Connection, ConnectionId, RecvInfo};

mod common;

use common::{client, client_args, data, describe, Server, TempDir};

/// Sends what `conn` has from `socket` and feeds it what arrives there, as received on
/// `local` (the client's own address: a NAT rebinding is invisible to the client), until
/// `done` or 10 s.
fn drive(
    conn: &mut Connection,
    socket: &UdpSocket,
    local: SocketAddr,
    server: SocketAddr,
    done: impl Fn(&mut Connection) -> bool,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    let (home, out) = (socket, socket);
    let mut buf = vec![0; 65535];
    while Instant::now() < deadline {
        while let Ok((len, _)) = conn.send(&mut buf) {
            out.send_to(&buf[..len], server).unwrap();
        }
        if done(conn) {
            return true;
        }
        let wait = conn
            .timeout()
            .unwrap_or(Duration::from_millis(50))
            .clamp(Duration::from_millis(1), Duration::from_millis(50));
        home.set_read_timeout(Some(wait)).unwrap();
        match home.recv_from(&mut buf) {
            Ok((len, from)) => {
                let _ = conn.recv(&mut buf[..len], RecvInfo { from, to: local });
            }
            Err(_) => conn.on_timeout(),
        }
    }
    false
}

#[test]
fn datagrams_from_new_addresses_reach_the_owning_worker() {
    let dir = TempDir::new("threads-rebind");
    std::fs::write(dir.root().join("a"), b"answer").unwrap();
    let server = Server::start(&dir, &["--threads", "2", "--no-retry"]);

    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    config.set_application_protos(&[b"hq-interop"]).unwrap();
    config.verify_peer(false);
    config.set_initial_max_data(1 << 20);
    config.set_initial_max_stream_data_bidi_local(1 << 20);
    config.set_initial_max_streams_bidi(100);
    config.set_max_idle_timeout(10_000);
    let home = UdpSocket::bind("127.0.0.1:0").unwrap();
    let scid = ConnectionId::from_ref(&[0x77; 16]);
    let local = home.local_addr().unwrap();
    let mut conn =
        quiche::connect(Some("localhost"), &scid, local, server.addr, &mut config).unwrap();
    assert!(drive(&mut conn, &home, local, server.addr, |c| c.is_established()));

    // Requests, each from a socket of its own (a new source port, as after a NAT rebinding):
    // with two workers, about half of them land on the other worker.
    for i in 0..12u64 {
        let stream = i * 4;
        conn.stream_send(stream, b"GET /a\r\n", true).unwrap();
        let out = UdpSocket::bind("127.0.0.1:0").unwrap();
        // The server follows the client to the new port (RFC 9000 §9.3), so the answer
        // comes back there.
        // The answer may come in pieces (the data, then the FIN): count what was read.
        let (read, fin) = (std::cell::Cell::new(0), std::cell::Cell::new(false));
        let answered = drive(&mut conn, &out, local, server.addr, |c| {
            let mut b = [0; 64];
            while let Ok((n, f)) = c.stream_recv(stream, &mut b) {
                read.set(read.get() + n);
                fin.set(fin.get() || f);
            }
            fin.get() && read.get() == 6
        });
        assert!(
            answered,
            "request {i} from a new port not answered: {}",
            server.log()
        );
    }
    let log = server.log();
    assert!(
        log.contains("handed to worker"),
        "no datagram was forwarded: {log}"
    );
    // The forwarding worker counts them in its stats line, logged at most four times a
    // second.
    let counted = |log: &str| {
        log.lines()
            .any(|l| l.contains("stats:") && !l.contains(" forwarded=0"))
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    while !counted(&server.log()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        counted(&server.log()),
        "no stats line counts a forwarded datagram: {}",
        server.log()
    );
    assert_eq!(log.matches("new connection from").count(), 1);
}

#[test]
fn downloads_from_two_workers() {
    let dir = TempDir::new("threads-download");
    let body = data(300_000, 5);
    std::fs::write(dir.root().join("f.bin"), &body).unwrap();
    let server = Server::start(&dir, &["--threads", "2"]);
    for _ in 0..4 {
        let out = client(&client_args(Some(&dir.out()), [server.url("/f.bin")]));
        assert!(out.status.success(), "{}", describe(&out));
        assert_eq!(std::fs::read(dir.out().join("f.bin")).unwrap(), body);
    }
}
