//! `quiche-server --server-id`: every connection ID the server hands out (in a Retry, in its
//! handshake, in NEW_CONNECTION_ID) decodes to its QUIC-LB server ID, and downloads work.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use quiche::quic_lb::LbConfig;
use quiche::{ConnectionId, Header, Type};

mod common;

use common::{client, client_args, data, describe, Server, TempDir};

const KEY_HEX: &str = "8f95f09245765f80256934e50c66207f";
const SERVER_ID: [u8; 3] = [0x0a, 0x0b, 0x0c];

fn lb_config() -> LbConfig {
    let key: [u8; 16] = (0..16)
        .map(|i| u8::from_str_radix(&KEY_HEX[2 * i..2 * i + 2], 16).unwrap())
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    // 16-byte IDs: first octet, 3-byte server ID, 12-byte nonce.
    LbConfig::new(2, 3, 12, Some(&key)).unwrap()
}

fn lb_server(dir: &TempDir, extra: &[&str]) -> Server {
    let mut args = vec![
        "--server-id",
        "0a0b0c",
        "--lb-key",
        KEY_HEX,
        "--lb-config-id",
        "2",
    ];
    args.extend_from_slice(extra);
    Server::start(dir, &args)
}

/// The server's first answer to a client Initial, parsed.
fn first_answer(server: SocketAddr) -> (Type, Vec<u8>) {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    config.set_application_protos(&[b"hq-interop"]).unwrap();
    config.verify_peer(false);
    let local: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let scid = ConnectionId::from_ref(&[0x5a; 16]);
    let mut conn = quiche::connect(Some("localhost"), &scid, local, server, &mut config).unwrap();
    let mut buf = vec![0; 1500];
    let (len, _) = conn.send(&mut buf).unwrap();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket.send_to(&buf[..len], server).unwrap();
    let mut answer = vec![0; 65535];
    let (len, _) = socket.recv_from(&mut answer).expect("an answer");
    let hdr = Header::from_slice(&mut answer[..len], 16).unwrap();
    (hdr.ty, hdr.scid.to_vec())
}

#[test]
fn retry_and_handshake_ids_carry_the_server_id() {
    let lb = lb_config();
    let dir = TempDir::new("quic-lb-ids");
    let server = lb_server(&dir, &[]);
    let (ty, retry_scid) = first_answer(server.addr);
    assert_eq!(ty, Type::Retry);
    assert_eq!(retry_scid[0] >> 5, 2);
    assert_eq!(
        lb.decode_server_id(&retry_scid).unwrap().as_bytes(),
        SERVER_ID
    );
    drop(server);

    let server = lb_server(&dir, &["--no-retry"]);
    let (ty, scid) = first_answer(server.addr);
    assert_eq!(ty, Type::Initial);
    assert_eq!(lb.decode_server_id(&scid).unwrap().as_bytes(), SERVER_ID);
}

#[test]
fn downloads_from_a_quic_lb_server() {
    let dir = TempDir::new("quic-lb-download");
    let body = data(200_000, 3);
    fs::write(dir.root().join("f.bin"), &body).unwrap();
    let server = lb_server(&dir, &[]);
    let out = client(&client_args(Some(&dir.out()), [server.url("/f.bin")]));
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(fs::read(dir.out().join("f.bin")).unwrap(), body);
}

/// A short header for no connection gets a stateless reset only if its connection ID names
/// this server: another server behind the load balancer may serve that ID (and share the
/// reset key), and a reset from us would end its connection.
#[test]
fn stateless_resets_only_for_ids_naming_this_server() {
    use quiche::ConnectionIdGenerator;
    let dir = TempDir::new("quic-lb-reset");
    let server = lb_server(&dir, &[]);
    let cases = [(SERVER_ID, true), ([0x0a, 0x0b, 0x0d], false)];
    for (sent, (id, answered)) in (1..).zip(cases) {
        let generator = quiche::quic_lb::QuicLbGenerator::new(lb_config(), &id).unwrap();
        let mut d = data(100, u64::from(id[2]));
        d[0] = 0x40 | (d[0] & 0x3f);
        generator.generate(&mut d[1..17]).unwrap();
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        socket.send_to(&d, server.addr).unwrap();
        server.wait_stats("the datagram handled", |s| {
            s.get("dropped").unwrap_or(&0) + s.get("resets").unwrap_or(&0) >= sent
        });
        let mut buf = [0u8; 200];
        match socket.recv_from(&mut buf) {
            Ok((n, _)) => assert!(answered && n < d.len(), "{n}-byte answer for {id:?}"),
            Err(_) => assert!(!answered, "no reset for our own ID"),
        }
    }
    let stats = server.stats();
    assert_eq!((stats["resets"], stats["dropped"]), (1, 1), "{stats:?}");
}

#[test]
fn bad_quic_lb_options_are_refused() {
    let dir = TempDir::new("quic-lb-bad");
    for bad in [
        &["--server-id", "0a0b0c0d0e0f101112131415"][..],
        &["--lb-key", KEY_HEX],
        &["--server-id", "01", "--lb-config-id", "7"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_quiche-server"))
            .args([
                "--listen",
                "127.0.0.1:0",
                "--cert",
                "c",
                "--key",
                "k",
                "--root",
            ])
            .arg(dir.root())
            .args(bad)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad:?} accepted");
    }
}
