//! Connection migration through the real binaries: a download through tools/relay playing a
//! NAT that rebinds its ports twice, while the client moves to a new socket (`--migrate`).
//! The bytes must arrive intact and the server must have followed each move.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;

use common::{client_args, client_within, data, describe, sha256, summary_field, Server, TempDir};

#[test]
fn download_survives_two_port_rebindings_and_a_client_migration() {
    // The figure: 100 MB (under a second on loopback in release builds, a few
    // seconds in debug ones).
    let size: usize = 100_000_000;
    let dir = TempDir::new("migration");
    let body = data(size, 9);
    fs::write(dir.root().join("big.bin"), &body).unwrap();
    let server = Server::start(&dir, &["--no-retry"]);
    // The relay is a NAT (one upstream socket per client address) that rebinds at a fifth and
    // at four fifths of the bytes from the server; the client moves at half.
    let size64 = size as u64;
    let mut opts = relay::Options::transparent(SocketAddr::from(([127, 0, 0, 1], 0)), server.addr);
    opts.rebind_port_at_s2c_bytes = vec![size64 / 5, size64 * 4 / 5];
    let stop = Arc::new(AtomicBool::new(false));
    let (relay_addr, relay) = relay::spawn(opts, Arc::clone(&stop)).unwrap();

    let mut args = vec!["--migrate".to_string()];
    let url = format!("https://localhost:{}/big.bin", relay_addr.port());
    args.extend(client_args(Some(&dir.out()), [url]));
    let out = client_within(&args, Duration::from_secs(240));
    stop.store(true, Ordering::Relaxed);
    let stats = relay.join().unwrap().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(summary_field(&out.stdout, "bytes"), size.to_string());
    let received = fs::read(dir.out().join("big.bin")).unwrap();
    assert!(sha256(&received) == sha256(&body), "bytes differ");

    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("migrated to"), "{}", describe(&out));
    // Two rebindings: the relay counts the upstream sockets it replaced, one at the first (one
    // client socket), two at the second (the client's old and new socket, each mapped).
    assert_eq!(stats.rebinds, 3, "{stats:?}");
    assert_eq!(
        stats.sessions, 2,
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
        "{size} bytes in {} s through two rebindings ({} sockets replaced) and a client \
         migration; server saw {migrated} validated moves; {stderr}",
        summary_field(&out.stdout, "secs"),
        stats.rebinds
    );
}
