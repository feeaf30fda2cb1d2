//! A `quiche-server` restarted mid-transfer with the same `--reset-key` ends its clients'
//! connections at once with a stateless reset (RFC 9000 §10.3), over real sockets on loopback:
//! the client's next datagram reaches the new process, which knows no connection and answers
//! with a reset the client recognizes. Restarted with another key, the reset is not
//! recognized and the client waits for its idle timeout, as it did before resets existed.
//!
//! The transfer is an upload, so that the client has data in flight when the server dies and
//! keeps probing for it (a client with nothing to send has nothing to draw a reset with).
//! Every process is bounded in time and ended by its PID.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{cert, describe, Server, TempDir, CLIENT};

/// The upload: large enough to last well beyond the moment the server is killed.
const BODY_LEN: u64 = 64 << 20;

/// How long after the connection starts the server is killed.
const TRANSFER_BEFORE_KILL: Duration = Duration::from_millis(300);

/// The client's idle timeout: what ends it when no reset does.
const IDLE_TIMEOUT_MS: u64 = 3000;

/// The longest a client may run in these tests.
const CLIENT_LIMIT: Duration = Duration::from_secs(60);

/// A client uploading `body` to `server`, writing its qlog into `qlog_dir`.
fn start_upload(server: &Server, body: &Path, qlog_dir: &Path) -> Child {
    Command::new(CLIENT)
        .args(["--ca", &cert("rootca.crt"), "--method", "POST", "--body"])
        .arg(body)
        .args(["--idle-timeout", &IDLE_TIMEOUT_MS.to_string()])
        .arg(server.url("/upload"))
        .env("QLOGDIR", qlog_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the client to exit (killed past [`CLIENT_LIMIT`]); returns its output and when
/// it exited.
fn wait_exit(mut child: Child) -> (Output, Instant) {
    let deadline = Instant::now() + CLIENT_LIMIT;
    loop {
        if child.try_wait().unwrap().is_some() {
            let exited = Instant::now();
            return (child.wait_with_output().unwrap(), exited);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the client ran over {CLIENT_LIMIT:?}: {}", describe(&out));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until `server` accepted a connection.
fn wait_connection(server: &Server) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !server.log().contains("new connection from") {
        assert!(Instant::now() < deadline, "no connection: {}", server.log());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts a server with `key`, a client uploading to it, kills the server mid-transfer and
/// restarts it on the same port with `restart_key`.
fn restart_mid_upload(dir: &TempDir, key: &Path, restart_key: &Path) -> Restart {
    let body = dir.0.join("body");
    // Zeros (a sparse file, made at once): the bytes do not matter, only that they last.
    fs::File::create(&body).unwrap().set_len(BODY_LEN).unwrap();
    let qlog_dir = dir.0.join("qlog");
    fs::create_dir_all(&qlog_dir).unwrap();
    let key = key.to_str().unwrap();
    let mut first = Server::start(dir, &["--reset-key", key]);
    let listen = first.addr.to_string();
    let client = start_upload(&first, &body, &qlog_dir);
    wait_connection(&first);
    std::thread::sleep(TRANSFER_BEFORE_KILL);

    // The server process dies with all its state, and a new one takes its port.
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let killed = Instant::now();
    let restart_key = restart_key.to_str().unwrap();
    let server = Server::start_on(dir, &listen, &["--reset-key", restart_key], &[]);
    let ready = Instant::now();
    let (out, exited) = wait_exit(client);
    Restart {
        out,
        after_kill: exited - killed,
        after_ready: exited - ready,
        server,
    }
}

/// What became of a client whose server was restarted.
struct Restart {
    /// The client's output.
    out: Output,
    /// How long after the first server died the client ended.
    after_kill: Duration,
    /// How long after the restarted server was ready the client ended.
    after_ready: Duration,
    /// The restarted server.
    server: Server,
}

#[test]
fn a_restarted_server_resets_its_clients_within_a_second() {
    let dir = TempDir::new("sreset-restart");
    let key = dir.0.join("reset.key");
    let Restart {
        out,
        after_ready,
        server,
        ..
    } = restart_mid_upload(&dir, &key, &key);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stateless reset"),
        "not ended by a reset: {}",
        describe(&out)
    );
    assert!(!out.status.success(), "the upload cannot have completed");
    assert!(
        !stderr.contains("timed out"),
        "timed out instead: {}",
        describe(&out)
    );
    // Loopback: the reset follows the client's next datagram within a millisecond; what the
    // second allows for is that datagram (a probe, backed off while no server answered) and a
    // busy machine.
    assert!(
        after_ready < Duration::from_secs(1),
        "the client ended {after_ready:?} after the restart: {}",
        describe(&out)
    );
    let stats = server.stats();
    assert!(stats.get("resets").is_some_and(|&n| n >= 1), "{stats:?}");
    assert_eq!(stats.get("accepted"), Some(&0), "{stats:?}");

    // The client's qlog says how its connection ended.
    let qlog = fs::read_dir(dir.0.join("qlog"))
        .unwrap()
        .map(|e| fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|t| t.contains("\"vantage_point\":{\"type\":\"client\""))
        .expect("the client's qlog");
    assert!(qlog.contains("\"packet_type\":\"stateless_reset\""));
    assert!(qlog.contains("\"trigger\":\"stateless_reset\""));
}

#[test]
fn a_server_restarted_with_another_key_leaves_its_clients_to_their_idle_timeout() {
    let dir = TempDir::new("sreset-other-key");
    let (key, other) = (dir.0.join("reset.key"), dir.0.join("other.key"));
    let Restart {
        out,
        after_kill,
        server,
        ..
    } = restart_mid_upload(&dir, &key, &other);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The new process answers with resets, but their tokens are not the connection's.
    let stats = server.stats();
    assert!(stats.get("resets").is_some_and(|&n| n >= 1), "{stats:?}");
    assert!(stderr.contains("timed out"), "{}", describe(&out));
    assert!(!stderr.contains("stateless reset"), "{}", describe(&out));
    // The idle timer ran from the last datagram of the first server, just before it died.
    assert!(
        after_kill >= Duration::from_millis(IDLE_TIMEOUT_MS * 2 / 3),
        "ended {after_kill:?} after the server died"
    );
}
