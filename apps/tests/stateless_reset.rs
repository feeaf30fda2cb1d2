//! A `quiche-server` restarted mid-transfer with the same `--reset-key` ends its clients'
//! connections at once with a stateless reset (RFC 9000 §10.3), over real sockets on loopback:
//! the client's next datagram reaches the new process, which knows no connection and answers
//! with a reset the client recognizes. Restarted with another key, the reset is not
//! recognized and the client waits for its idle timeout, as it did before resets existed.
//!
//! The transfer is an upload, so that the client has data in flight when the server dies and
//! keeps probing for it (a client with nothing to send has nothing to draw a reset with). The
//! client learns of the restart at its next probe, whose time depends on how long the restart
//! took (probes back off while no server answers); from the reset the new process sends, the
//! client must end within a round trip plus processing.
//! Every process is bounded in time and ended by its PID.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

mod common;

use common::{cert, describe, Server, TempDir, CLIENT};

/// The upload: large enough to last well beyond the moment the server is killed.
const BODY_LEN: u64 = 64 << 20;

/// How long after the connection starts the server is killed.
const TRANSFER_BEFORE_KILL: Duration = Duration::from_millis(300);

/// The client's idle timeout in the test where no reset can end it (long in the other, so
/// that the reset ends it however long the restart takes).
const SHORT_IDLE_TIMEOUT_MS: u64 = 3000;
const LONG_IDLE_TIMEOUT_MS: u64 = 30_000;

/// The longest a client may run in these tests.
const CLIENT_LIMIT: Duration = Duration::from_secs(60);

/// A client uploading `body` to `server`, writing its qlog into `qlog_dir`.
fn start_upload(server: &Server, body: &Path, qlog_dir: &Path, idle_timeout_ms: u64) -> Child {
    Command::new(CLIENT)
        .args(["--ca", &cert("rootca.crt"), "--method", "POST", "--body"])
        .arg(body)
        .args(["--idle-timeout", &idle_timeout_ms.to_string()])
        .arg(server.url("/upload"))
        .env("QLOGDIR", qlog_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the client to exit (killed past [`CLIENT_LIMIT`]); returns its output and when
/// it exited, by the monotonic and the wall clock.
fn wait_exit(mut child: Child) -> (Output, Instant, SystemTime) {
    let deadline = Instant::now() + CLIENT_LIMIT;
    loop {
        if child.try_wait().unwrap().is_some() {
            let exited = (Instant::now(), SystemTime::now());
            return (child.wait_with_output().unwrap(), exited.0, exited.1);
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
fn restart_mid_upload(
    dir: &TempDir,
    key: &Path,
    restart_key: &Path,
    idle_timeout_ms: u64,
) -> Restart {
    let body = dir.0.join("body");
    // Zeros (a sparse file, made at once): the bytes do not matter, only that they last.
    fs::File::create(&body).unwrap().set_len(BODY_LEN).unwrap();
    let qlog_dir = dir.0.join("qlog");
    fs::create_dir_all(&qlog_dir).unwrap();
    let key = key.to_str().unwrap();
    let mut first = Server::start(dir, &["--reset-key", key]);
    let listen = first.addr.to_string();
    let client = start_upload(&first, &body, &qlog_dir, idle_timeout_ms);
    wait_connection(&first);
    std::thread::sleep(TRANSFER_BEFORE_KILL);

    // The server process dies with all its state, and a new one takes its port.
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let killed = Instant::now();
    let restart_key = restart_key.to_str().unwrap();
    let server = Server::start_on(dir, &listen, &["--reset-key", restart_key], &[]);
    let ready = Instant::now();
    let (out, exited, exited_wall) = wait_exit(client);
    Restart {
        out,
        after_kill: exited - killed,
        after_ready: exited - ready,
        exited_wall,
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
    /// When the client ended, by the wall clock (the servers' logs use it).
    exited_wall: SystemTime,
    /// The restarted server.
    server: Server,
}

#[test]
fn a_restarted_server_resets_its_clients_within_a_second() {
    let dir = TempDir::new("sreset-restart");
    let key = dir.0.join("reset.key");
    let Restart {
        out,
        after_kill,
        after_ready,
        exited_wall,
        server,
    } = restart_mid_upload(&dir, &key, &key, LONG_IDLE_TIMEOUT_MS);
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
    // The client ended at the reset, long before its idle timeout.
    assert!(
        after_kill < Duration::from_millis(LONG_IDLE_TIMEOUT_MS / 3),
        "the client ended {after_kill:?} after the server died: {}",
        describe(&out)
    );
    // From the first reset the new process sent (its log's wall-clock time, in ms) to the
    // client's exit: one round trip on loopback plus processing; a second allows for a busy
    // machine.
    let reset_at = first_reset_time(&server.log()).expect("a reset in the server's log");
    let after_reset = exited_wall
        .duration_since(reset_at)
        .unwrap_or(Duration::ZERO);
    assert!(
        after_reset < Duration::from_secs(1),
        "the client ended {after_reset:?} after the reset: {}",
        describe(&out)
    );
    eprintln!(
        "restart: the client ended {after_reset:?} after the first reset, {after_ready:?} \
         after the new process was ready, {after_kill:?} after the first one died"
    );
    let stats = server.wait_stats("a reset sent", |s| s.get("resets").is_some_and(|&n| n >= 1));
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
    } = restart_mid_upload(&dir, &key, &other, SHORT_IDLE_TIMEOUT_MS);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The new process answers what reaches it with resets, but their tokens are not the
    // connection's. (Under a heavy load the client's backed-off probes may all have gone out
    // before the new process was up: then there was nothing to answer.)
    std::thread::sleep(Duration::from_millis(500));
    let stats = server.stats();
    if stats.get("datagrams").is_some_and(|&n| n > 0) {
        assert!(stats.get("resets").is_some_and(|&n| n >= 1), "{stats:?}");
    }
    assert!(stderr.contains("timed out"), "{}", describe(&out));
    assert!(!stderr.contains("stateless reset"), "{}", describe(&out));
    // The idle timer ran from the last datagram of the first server, just before it died.
    assert!(
        after_kill >= Duration::from_millis(SHORT_IDLE_TIMEOUT_MS * 2 / 3),
        "ended {after_kill:?} after the server died"
    );
}

/// The wall-clock time of the first "stateless reset" line of a server log (env_logger's
/// `[YYYY-MM-DDTHH:MM:SS.mmmZ LEVEL target] message`, UTC).
fn first_reset_time(log: &str) -> Option<SystemTime> {
    let line = log.lines().find(|l| l.contains(": stateless reset ("))?;
    let stamp = line
        .strip_prefix('[')?
        .split(' ')
        .next()?
        .strip_suffix('Z')?;
    let (date, time) = stamp.split_once('T')?;
    let mut d = date.split('-').map(|v| v.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, ms) = time.split_once('.')?;
    let mut t = hms.split(':').map(|v| v.parse::<i64>());
    let (h, min, sec) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    // Days since 1970-01-01 of a proleptic Gregorian date (years counted from March, so that
    // the leap day ends a year).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + min * 60 + sec;
    let ms: u64 = ms.parse().ok()?;
    Some(
        SystemTime::UNIX_EPOCH
            + Duration::from_secs(secs.try_into().ok()?)
            + Duration::from_millis(ms),
    )
}

#[test]
fn log_times_are_read_as_utc() {
    let log = "[2024-02-29T23:59:58.250Z INFO x] listening\n\
               [2024-03-01T00:00:01.125Z DEBUG quiche_apps::server] 127.0.0.1:1: stateless \
               reset (42 bytes) for a 60-byte datagram\n";
    let t = first_reset_time(log).unwrap();
    // 2024-03-01T00:00:01Z is 1709251201 s after the epoch.
    assert_eq!(
        t.duration_since(SystemTime::UNIX_EPOCH).unwrap(),
        Duration::from_millis(1_709_251_201_125)
    );
    assert_eq!(
        first_reset_time("[2024-03-01T00:00:01.125Z INFO x] other\n"),
        None
    );
}
