//! The real `quiche-server` and `quiche-client` binaries over loopback UDP.
//!
//! Every server binds port 0 and reports its address on stdout, so tests never race for
//! ports; every process is ended by its PID (`Child::kill`) when its guard drops, and every
//! wait is bounded.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use quiche::{ConnectionId, Header, Type};

mod common;

use common::{client, client_args, data, describe, sha256, summary_field, Server, TempDir};

/// Downloads 5 MiB with `extra` options on both sides and checks it arrived intact and that
/// the server's socket said `socket_log` (its GSO/GRO state) in its debug log.
fn download_5_mib(name: &str, extra: &[&str], socket_log: &str) {
    let dir = TempDir::new(name);
    let body = data(5 << 20, 1);
    fs::write(dir.root().join("five.bin"), &body).unwrap();
    let server_args: Vec<&str> = ["--no-retry"].iter().chain(extra).copied().collect();
    let server = Server::start(&dir, &server_args);

    let mut args: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
    args.extend(client_args(Some(&dir.out()), [server.url("/five.bin")]));
    let out = client(&args);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(summary_field(&out.stdout, "bytes"), (5 << 20).to_string());
    let secs: f64 = summary_field(&out.stdout, "secs").parse().unwrap();
    let mbps: f64 = summary_field(&out.stdout, "mbps").parse().unwrap();
    let handshake: f64 = summary_field(&out.stdout, "handshake_ms").parse().unwrap();
    assert!(secs > 0.0 && mbps > 0.0 && handshake > 0.0 && handshake < secs * 1e3);
    let received = fs::read(dir.out().join("five.bin")).unwrap();
    assert_eq!(sha256(&received), sha256(&body));
    let log = server.log();
    assert!(log.contains(socket_log), "no {socket_log:?} in {log}");
}

#[test]
fn a_5_mib_download_arrives_intact() {
    // Linux >= 5.0 (this project's CI and development machines) has UDP GSO and GRO.
    let expected = if cfg!(target_os = "linux") {
        "GSO on, GRO on"
    } else {
        "GSO off, GRO off"
    };
    download_5_mib("5mib", &[], expected);
}

#[test]
fn a_5_mib_download_arrives_intact_without_gso() {
    download_5_mib("5mib-nogso", &["--disable-gso"], "GSO off, GRO off");
}

#[test]
fn two_hundred_small_files_share_one_connection() {
    let dir = TempDir::new("many");
    let mut total = 0;
    let mut bodies = Vec::new();
    for i in 0..200u64 {
        // Sizes from empty to a few packets.
        let body = data((i as usize * 37) % 5000, i + 10);
        total += body.len();
        fs::write(dir.root().join(format!("f{i}.bin")), &body).unwrap();
        bodies.push(body);
    }
    let server = Server::start(&dir, &["--no-retry"]);

    // More URLs than the server's stream limit (100): streams must be opened as others end.
    let urls = (0..200).map(|i| server.url(&format!("/f{i}.bin")));
    let out = client(&client_args(Some(&dir.out()), urls));
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(summary_field(&out.stdout, "bytes"), total.to_string());
    for (i, body) in bodies.iter().enumerate() {
        let received = fs::read(dir.out().join(format!("f{i}.bin"))).unwrap();
        assert!(received == *body, "file {i} differs");
    }
    assert_eq!(
        server.log().matches("new connection from").count(),
        1,
        "one connection for all requests"
    );
}

#[test]
fn concurrent_clients_are_served_side_by_side() {
    let dir = TempDir::new("concurrent");
    let body = data(1 << 20, 3);
    fs::write(dir.root().join("one.bin"), &body).unwrap();
    let server = Server::start(&dir, &["--no-retry"]);

    // Each client with other transport options, so that every option reaches a working
    // connection.
    let options: [&[&str]; 4] = [
        &["--chacha20"],
        &["--cc-algorithm", "reno", "--disable-hystart"],
        &["--initial-cwnd-packets", "32", "--disable-pacing"],
        &[
            "--max-data",
            "256K",
            "--max-stream-data",
            "64K",
            "--max-window",
            "512K",
            "--max-stream-window",
            "128K",
            "--idle-timeout",
            "5000",
        ],
    ];
    let clients: Vec<_> = options
        .iter()
        .enumerate()
        .map(|(i, opts)| {
            let out = dir.0.join(format!("out{i}"));
            let mut args = client_args(Some(&out), [server.url("/one.bin")]);
            args.extend(opts.iter().map(|o| o.to_string()));
            (out, std::thread::spawn(move || client(&args)))
        })
        .collect();
    for (out_dir, handle) in clients {
        let out = handle.join().unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        assert_eq!(
            sha256(&fs::read(out_dir.join("one.bin")).unwrap()),
            sha256(&body)
        );
    }
    let log = server.log();
    assert_eq!(log.matches("new connection from").count(), 4, "{log}");
    // The connections were closed by the clients and removed by the server.
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.log().matches(": closed (").count() < 4 {
        assert!(Instant::now() < deadline, "{}", server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_missing_file_fails_the_client() {
    let dir = TempDir::new("missing");
    fs::write(dir.root().join("here.txt"), b"present\n").unwrap();
    fs::write(dir.0.join("secret.txt"), b"outside the root\n").unwrap();
    let server = Server::start(&dir, &["--no-retry"]);

    let urls = ["/here.txt", "/gone.txt", "/../secret.txt"].map(|p| server.url(p));
    let out = client(&client_args(Some(&dir.out()), urls));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // HTTP/3 (the default) answers with a 404 response.
    assert!(
        stderr.contains("gone.txt failed: the server answered with status 404"),
        "{stderr}"
    );
    assert!(stderr.contains("secret.txt failed"), "{stderr}");
    assert_eq!(fs::read(dir.out().join("here.txt")).unwrap(), b"present\n");
    assert!(!dir.out().join("gone.txt").exists());
    assert!(!dir.out().join("secret.txt").exists());

    // Over HTTP/0.9 the server resets the stream with 404.
    let mut args = client_args(None, [server.url("/gone.txt")]);
    args.push("--http09".into());
    let out = client(&args);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stream reset by the server (error 404)"),
        "{stderr}"
    );
}

/// A client Initial made by the library, and the Destination Connection ID it carries.
fn client_initial(server: SocketAddr, scid: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    config.set_application_protos(&[b"hq-interop"]).unwrap();
    config.verify_peer(false);
    let local: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let scid = ConnectionId::from_ref(scid);
    let mut conn = quiche::connect(Some("localhost"), &scid, local, server, &mut config).unwrap();
    let mut buf = vec![0; 1500];
    let (len, _) = conn.send(&mut buf).unwrap();
    buf.truncate(len);
    let odcid = Header::from_slice(&mut buf.clone(), 16)
        .unwrap()
        .dcid
        .to_vec();
    (buf, odcid)
}

fn exchange(socket: &UdpSocket, to: SocketAddr, datagram: &[u8]) -> Vec<u8> {
    socket.send_to(datagram, to).unwrap();
    let mut buf = vec![0; 65535];
    let (len, _) = socket
        .recv_from(&mut buf)
        .expect("an answer from the server");
    buf.truncate(len);
    buf
}

#[test]
fn the_server_answers_new_clients_with_retry_and_unknown_versions_with_negotiation() {
    let dir = TempDir::new("retry-probe");
    let server = Server::start(&dir, &[]);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();

    let scid = [0xab; 16];
    let (initial, odcid) = client_initial(server.addr, &scid);
    assert!(initial.len() >= 1200);
    let mut retry = exchange(&socket, server.addr, &initial);
    quiche::packet::verify_retry_integrity(&retry, &odcid).expect("a valid integrity tag");
    let hdr = Header::from_slice(&mut retry, 16).unwrap();
    assert_eq!(hdr.ty, Type::Retry);
    assert_eq!(&hdr.dcid[..], &scid[..]);
    assert_eq!(hdr.scid.len(), 16);
    let (first_scid, token) = (hdr.scid.to_vec(), hdr.token.unwrap().to_vec());
    assert!(!token.is_empty());
    assert!(
        !token.windows(odcid.len()).any(|w| w == &odcid[..]),
        "the token seals the original DCID"
    );

    // Stateless: the same Initial again gets a fresh Retry (another ID, another token).
    let mut again = exchange(&socket, server.addr, &initial);
    let hdr = Header::from_slice(&mut again, 16).unwrap();
    assert_eq!(hdr.ty, Type::Retry);
    assert_ne!(hdr.scid.to_vec(), first_scid);
    assert_ne!(hdr.token.unwrap().to_vec(), token);

    // An unknown version in a datagram that could open a connection: Version Negotiation.
    let mut unknown = initial.clone();
    unknown[1..5].copy_from_slice(&0x1a2a_3a4a_u32.to_be_bytes());
    let mut vn = exchange(&socket, server.addr, &unknown);
    let hdr = Header::from_slice(&mut vn, 16).unwrap();
    assert_eq!(hdr.ty, Type::VersionNegotiation);
    assert_eq!(&hdr.dcid[..], &scid[..]);
    assert_eq!(hdr.scid.to_vec(), odcid);
    assert!(hdr.versions.unwrap().contains(&quiche::PROTOCOL_VERSION));

    // A short Initial (under 1200 bytes) opens nothing and gets no answer (RFC 9000 §14.1).
    socket.send_to(&initial[..1100], server.addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(socket.recv_from(&mut [0; 2048]).is_err());
    assert_eq!(server.log().matches("new connection from").count(), 0);
}

/// The server's default (Retry) against the real client: the download completes after one
/// Retry, and the server accepts the connection only once.
#[test]
fn retry_server_and_client() {
    let dir = TempDir::new("retry-client");
    let body = data(100_000, 7);
    fs::write(dir.root().join("r.bin"), &body).unwrap();
    let server = Server::start(&dir, &[]);

    let args = client_args(Some(&dir.out()), [server.url("/r.bin")]);
    let out = client(&args);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(fs::read(dir.out().join("r.bin")).unwrap(), body);
    let log = server.log();
    assert!(log.contains("Retry sent"), "{log}");
    assert_eq!(log.matches("new connection from").count(), 1, "{log}");
}

/// `--version-negotiation`: the client's first Initial carries a reserved version, the
/// server answers with Version Negotiation, the client gives up on that attempt and downloads
/// with version 1. Against a peer that never answers, the client fails.
#[test]
fn version_negotiation_then_version_1() {
    let dir = TempDir::new("vn-client");
    let body = data(50_000, 9);
    fs::write(dir.root().join("v.bin"), &body).unwrap();
    let server = Server::start(&dir, &["--no-retry"]);
    let mut args = client_args(Some(&dir.out()), [server.url("/v.bin")]);
    args.push("--version-negotiation".into());
    let out = client(&args);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("version negotiation: the server does not"),
        "{}",
        describe(&out)
    );
    assert_eq!(fs::read(dir.out().join("v.bin")).unwrap(), body);
    assert_eq!(server.log().matches("new connection from").count(), 1);

    // A silent peer: no Version Negotiation, so the client stops after its probe's time limit.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut args = client_args(None, [format!("https://127.0.0.1:{port}/v.bin")]);
    args.push("--version-negotiation".into());
    let out = client(&args);
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no Version Negotiation"),
        "{}",
        describe(&out)
    );
}

/// A key update initiated by the client in the middle of a download.
#[test]
fn key_update_during_download() {
    let dir = TempDir::new("key-update");
    let body = data(2 << 20, 8);
    fs::write(dir.root().join("k.bin"), &body).unwrap();
    let server = Server::start(&dir, &[]);
    let mut args = client_args(Some(&dir.out()), [server.url("/k.bin")]);
    args.push("--key-update".into());
    let out = client(&args);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("key update initiated"),
        "{}",
        describe(&out)
    );
    assert_eq!(fs::read(dir.out().join("k.bin")).unwrap(), body);
}

/// Usage errors and the options the library cannot serve exit with status 2 and say why,
/// naming the flag, before any network activity; `--help` and `--version` exit with 0.
#[test]
fn usage_errors_exit_with_status_2_and_name_the_flag() {
    let rustls_only = !quiche_apps::args::sessions_serialize();
    for (flag, why) in [
        (&["--session-file", "/tmp/x"][..], "rustls"),
        (&["--early-data"], "--resume"),
        (&["--frobnicate"], "--frobnicate"),
        (&["--max-data", "lots"], "--max-data"),
        (&["--cc-algorithm", "vegas"], "--cc-algorithm"),
    ] {
        if flag[0] == "--session-file" && !rustls_only {
            // BoringSSL builds keep sessions in files (`session_file_resumes_in_the_next_run`).
            continue;
        }
        let mut args: Vec<String> = flag.iter().map(|s| s.to_string()).collect();
        args.push("https://127.0.0.1:9/x".into());
        let out = client(&args);
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(why), "{flag:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{flag:?}");
    }
    let out = client(&["--help".to_string()]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    // Scripts look for these: ours-peer.sh for h3, bench/run.sh for --disable-gso.
    for word in ["--dump-responses", "h3", "--disable-gso", "QLOGDIR"] {
        assert!(help.contains(word), "{word}");
    }
    let out = client(&["--version".to_string()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("quiche-client "));
}

/// `--resume`: a second connection resumes the session of the first, and with
/// `--early-data` sends its requests as 0-RTT.
#[test]
fn resume_and_early_data() {
    let dir = TempDir::new("resume");
    fs::write(dir.root().join("a.txt"), b"first\n").unwrap();
    fs::write(dir.root().join("b.txt"), b"second\n").unwrap();
    let server = Server::start(&dir, &["--no-retry"]);

    for early in [false, true] {
        let mut args = client_args(
            Some(&dir.out()),
            [server.url("/a.txt"), server.url("/b.txt")],
        );
        args.push("--resume".into());
        if early {
            args.push("--early-data".into());
        }
        let out = client(&args);
        assert!(out.status.success(), "{}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("connection 1: 1 of 1 requests, resumed: false"),
            "{stderr}"
        );
        assert!(
            stderr.contains("connection 2: 1 of 1 requests, resumed: true"),
            "{stderr}"
        );
        if early {
            assert!(
                stderr.contains("0-RTT requests: true, 0-RTT accepted: true"),
                "{stderr}"
            );
        }
        assert_eq!(fs::read(dir.out().join("b.txt")).unwrap(), b"second\n");
    }
}

/// `--session-file` (BoringSSL builds): the first process saves its session, the next one
/// resumes it and sends its request as 0-RTT; an unusable file means a full handshake.
#[test]
fn session_file_resumes_in_the_next_run() {
    if !quiche_apps::args::sessions_serialize() {
        // rustls builds refuse the flag (`usage_errors_exit_with_status_2_and_name_the_flag`).
        return;
    }
    let dir = TempDir::new("session-file");
    fs::write(dir.root().join("a.txt"), b"resumed\n").unwrap();
    let server = Server::start(&dir, &["--no-retry"]);
    let file = dir.out().join("session");
    let run = |early: bool| {
        let mut args = client_args(Some(&dir.out()), [server.url("/a.txt")]);
        args.extend(["--session-file".into(), file.to_string_lossy().into_owned()]);
        if early {
            args.push("--early-data".into());
        }
        let out = client(&args);
        assert!(out.status.success(), "{}", describe(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // No file yet: a full handshake, then the session is saved.
    let first = run(true);
    assert!(!first.contains("session file:"), "{first}");
    let saved = fs::read(&file).unwrap();
    assert!(saved.len() > 16, "{} bytes", saved.len());
    // The next process resumes it with 0-RTT, and saves the newer session it received.
    let second = run(true);
    assert!(
        second.contains("session file: resumed: true, 0-RTT requests: true, 0-RTT accepted: true"),
        "{second}"
    );
    assert_eq!(fs::read(dir.out().join("a.txt")).unwrap(), b"resumed\n");
    assert_ne!(fs::read(&file).unwrap(), saved);
    // Without --early-data: resumed, no 0-RTT.
    let third = run(false);
    assert!(
        third.contains("session file: resumed: true, 0-RTT requests: false, 0-RTT accepted: false"),
        "{third}"
    );
    // A damaged file: the client says so, makes a full handshake and saves a good session.
    fs::write(&file, b"not a session").unwrap();
    let damaged = run(false);
    assert!(damaged.contains("set_session"), "{damaged}");
    assert!(
        damaged.contains("session file: resumed: false"),
        "{damaged}"
    );
    assert!(run(true)
        .contains("session file: resumed: true, 0-RTT requests: true, 0-RTT accepted: true"));
}
