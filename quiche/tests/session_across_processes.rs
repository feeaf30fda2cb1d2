//! A client session written to a file and read back by another process: on BoringSSL
//! (feature `boringssl-boring-crate`) it resumes there with 0-RTT, as with quiche; on rustls it
//! is refused with `TlsFail` (rustls 0.23 has no public API to write a client session out and
//! read it back, so a session is only valid in the process that received it). In both cases
//! the same bytes resume the session in the process that saved them. The other process is this
//! test binary again, run with an environment variable that selects the reading side.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use quiche::testing::Pipe;
use quiche::{Config, ConnectionId, Error};

/// Set in the child process: the session file to read.
const CHILD_ENV: &str = "QUICHE_TEST_SESSION_FILE";

/// What the child prints once it checked the session (a filter matching no test would also
/// exit with success, so the parent looks for this line).
const CHILD_DONE: &str = "session file checked in the child process";

const TEST_NAME: &str = "a_session_file_read_by_another_process";

fn cert_path(name: &str) -> String {
    format!("{}/tests/certs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn config() -> Config {
    let mut c = Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(&[b"hq-interop"]).unwrap();
    c.set_max_idle_timeout(30_000);
    c.set_initial_max_data(1 << 20);
    c.set_initial_max_stream_data_bidi_local(1 << 20);
    c.set_initial_max_stream_data_bidi_remote(1 << 20);
    c.set_initial_max_streams_bidi(10);
    c.enable_early_data();
    c
}

fn client_config() -> Config {
    let mut c = config();
    c.verify_peer(false);
    c
}

fn server_config() -> Config {
    let mut c = config();
    c.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
        .unwrap();
    c.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    c
}

/// Keeps the warnings the library logs.
struct Warnings(Mutex<Vec<String>>);

impl log::Log for Warnings {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
            kept.push(record.args().to_string());
        }
    }

    fn flush(&self) {}
}

static WARNINGS: Warnings = Warnings(Mutex::new(Vec::new()));

/// The reading side, in the child process.
fn child(path: &Path) {
    log::set_logger(&WARNINGS).unwrap();
    log::set_max_level(log::LevelFilter::Warn);
    let session = std::fs::read(path).unwrap();
    let mut config = client_config();
    let scid = ConnectionId::from_ref(&[7; 16]);
    let local = "127.0.0.1:1".parse().unwrap();
    let peer = "127.0.0.1:2".parse().unwrap();
    let mut conn = quiche::connect(Some("localhost"), &scid, local, peer, &mut config).unwrap();
    if quiche::tls::TlsBackend::default() != quiche::tls::TlsBackend::Rustls {
        // BoringSSL: the session is bytes; the first flight offers it with 0-RTT.
        conn.set_session(&session).unwrap();
        let mut out = [0; 1500];
        conn.send(&mut out).unwrap();
        assert!(conn.is_in_early_data());
        println!("{CHILD_DONE}");
        return;
    }
    assert_eq!(conn.set_session(&session), Err(Error::TlsFail));
    // The log says why: the bytes come from another process (not merely another config).
    let warnings = WARNINGS.0.lock().unwrap().clone();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("saved by another process")),
        "{warnings:?}"
    );
    println!("{CHILD_DONE}");
}

#[test]
fn a_session_file_read_by_another_process() {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&path));
        return;
    }
    let (mut client, mut server) = (client_config(), server_config());
    let mut first = Pipe::new(&mut client, &mut server).unwrap();
    first.handshake().unwrap();
    first
        .run_until(Duration::from_secs(5), |p| p.client.session().is_some())
        .unwrap();
    let session = first.client.session().unwrap().to_vec();

    let path = std::env::temp_dir().join(format!("quiche-session-{}.bin", std::process::id()));
    std::fs::write(&path, &session).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: at most 60 s (3000 polls 20 ms apart; the child needs well under a second).
    let mut polls = 0;
    while child.try_wait().unwrap().is_none() {
        polls += 1;
        if polls > 3000 {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(CHILD_DONE),
        "child: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );

    // In this process the same bytes resume the session, and a request goes out as 0-RTT.
    let mut second = Pipe::new(&mut client, &mut server).unwrap();
    second.client.set_session(&session).unwrap();
    second.flush().unwrap();
    assert!(second.client.is_in_early_data());
    let request = b"GET /index.html\r\n";
    assert_eq!(
        second.client.stream_send(0, request, true),
        Ok(request.len())
    );
    second.handshake().unwrap();
    assert!(second.client.is_resumed() && second.server.is_resumed());
    second
        .run_until(Duration::from_secs(5), |p| {
            p.server.stream_finished(0) || p.server.stream_readable(0)
        })
        .unwrap();
    let mut buf = [0; 64];
    let (n, fin) = second.server.stream_recv(0, &mut buf).unwrap();
    assert_eq!((&buf[..n], fin), (&request[..], true));
}
