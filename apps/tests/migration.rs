//! Connection migration through the real binaries: a download through a small UDP relay that
//! plays a NAT rebinding its ports twice, while the client moves to a new socket
//! (`--migrate`). The bytes must arrive intact and the server must have followed each move.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};

mod common;

use common::{client_args, client_within, data, describe, sha256, summary_field, Server, TempDir};

/// A NAT between the client and the server: each client address gets its own upstream
/// socket (the address the server sees); at each byte count of `rebind_at` (server to client)
/// every upstream socket is replaced by a new one, on a new port, and the old mapping is
/// forgotten.
struct Relay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<RelayStats>>,
}

#[derive(Debug, Default)]
struct RelayStats {
    rebinds: usize,
    clients: usize,
    down_bytes: u64,
}

impl Relay {
    fn start(server: SocketAddr, rebind_at: Vec<u64>) -> Relay {
        let listen = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listen.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || run_relay(listen, server, rebind_at, &flag));
        Relay {
            addr,
            stop,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> RelayStats {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().unwrap()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn run_relay(
    mut listen: UdpSocket,
    server: SocketAddr,
    mut rebind_at: Vec<u64>,
    stop: &AtomicBool,
) -> RelayStats {
    let mut poll = Poll::new().unwrap();
    let mut events = Events::with_capacity(64);
    poll.registry()
        .register(&mut listen, Token(0), Interest::READABLE)
        .unwrap();
    let mut next_token = 1;
    let mut upstreams: Vec<(SocketAddr, UdpSocket)> = Vec::new();
    let mut stats = RelayStats::default();
    let mut buf = vec![0u8; 65536];
    let mut new_upstream = |poll: &Poll| {
        let mut s = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        poll.registry()
            .register(&mut s, Token(next_token), Interest::READABLE)
            .unwrap();
        next_token += 1;
        s
    };
    rebind_at.sort_unstable();
    rebind_at.reverse();
    while !stop.load(Ordering::Relaxed) {
        match poll.poll(&mut events, Some(Duration::from_millis(10))) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("poll: {e}"),
        }
        // Few sockets: drain them all whatever woke us.
        loop {
            let (n, client) = match listen.recv_from(&mut buf) {
                Ok(v) => v,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => continue,
            };
            let i = match upstreams.iter().position(|(c, _)| *c == client) {
                Some(i) => i,
                None => {
                    upstreams.push((client, new_upstream(&poll)));
                    stats.clients += 1;
                    upstreams.len() - 1
                }
            };
            // A full socket buffer loses the datagram, as a network would.
            let _ = upstreams[i].1.send_to(&buf[..n], server);
        }
        for (client, socket) in &upstreams {
            loop {
                let n = match socket.recv_from(&mut buf) {
                    Ok((n, _)) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => continue,
                };
                stats.down_bytes += n as u64;
                let _ = listen.send_to(&buf[..n], *client);
            }
        }
        if rebind_at.last().is_some_and(|&at| stats.down_bytes >= at) {
            rebind_at.pop();
            stats.rebinds += 1;
            for (_, socket) in upstreams.iter_mut() {
                let _ = poll.registry().deregister(socket);
                *socket = new_upstream(&poll);
            }
        }
    }
    stats
}

#[test]
fn download_survives_two_port_rebindings_and_a_client_migration() {
    // The figure: 100 MB (under a second on loopback in release builds, a few
    // seconds in debug ones).
    let size: usize = 100_000_000;
    let dir = TempDir::new("migration");
    let body = data(size, 9);
    fs::write(dir.root().join("big.bin"), &body).unwrap();
    let server = Server::start(&dir, &["--no-retry"]);
    // Rebind at a fifth and at four fifths; the client moves at half.
    let size64 = size as u64;
    let relay = Relay::start(server.addr, vec![size64 / 5, size64 * 4 / 5]);

    let mut args = vec!["--migrate".to_string()];
    let url = format!("https://localhost:{}/big.bin", relay.addr.port());
    args.extend(client_args(Some(&dir.out()), [url]));
    let out = client_within(&args, Duration::from_secs(240));
    let stats = relay.finish();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(summary_field(&out.stdout, "bytes"), size.to_string());
    let received = fs::read(dir.out().join("big.bin")).unwrap();
    assert!(sha256(&received) == sha256(&body), "bytes differ");

    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("migrated to"), "{}", describe(&out));
    assert_eq!(stats.rebinds, 2, "{stats:?}");
    assert_eq!(
        stats.clients, 2,
        "the client moved to a second socket: {stats:?}"
    );
    // The server followed the two rebindings and the migration (three moves, each validated).
    let log = server.log();
    let migrated = log.matches("path event PeerMigrated").count();
    assert!(
        migrated >= 3,
        "{migrated} migrations in the server log:\n{log}"
    );
    eprintln!(
        "{size} bytes in {} s through {} rebindings and a client migration; server saw \
         {migrated} validated moves; {stderr}",
        summary_field(&out.stdout, "secs"),
        stats.rebinds
    );
}
