//! What the process-level tests share: the binaries, the test certificates, a temporary
//! directory and a running `quiche-server` (each ended by its guard when dropped).

// Each test file compiles this module on its own and uses part of it.
#![allow(dead_code)]

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const SERVER: &str = env!("CARGO_BIN_EXE_quiche-server");
pub const CLIENT: &str = env!("CARGO_BIN_EXE_quiche-client");

/// A file of `quiche/tests/certs`.
pub fn cert(name: &str) -> String {
    format!(
        "{}/../quiche/tests/certs/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Deterministic test data.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    quiche::testing::Rng(seed | 1).bytes(len)
}

pub fn sha256(data: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, data)
        .as_ref()
        .to_vec()
}

/// A temporary directory removed when dropped, with the server's `root/` inside.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("quiche-apps-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("root")).unwrap();
        TempDir(dir)
    }

    pub fn root(&self) -> PathBuf {
        self.0.join("root")
    }

    pub fn out(&self) -> PathBuf {
        self.0.join("out")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Servers started by this test binary: each logs to a file of its own.
static SERVERS: AtomicUsize = AtomicUsize::new(0);

/// A running `quiche-server` logging at debug level, killed by PID when dropped.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub log: PathBuf,
}

impl Server {
    /// Starts a server on a free port of 127.0.0.1 serving `dir.root()`, and reads the
    /// address it reports.
    pub fn start(dir: &TempDir, extra: &[&str]) -> Server {
        Self::start_with_env(dir, extra, &[])
    }

    /// [`Server::start`] with extra environment variables (e.g. `QLOGDIR`).
    pub fn start_with_env(dir: &TempDir, extra: &[&str], env: &[(&str, &Path)]) -> Server {
        Self::start_on(dir, "127.0.0.1:0", extra, env)
    }

    /// [`Server::start_with_env`] on the address `listen` (e.g. the port of a server that
    /// was stopped, to restart it).
    pub fn start_on(dir: &TempDir, listen: &str, extra: &[&str], env: &[(&str, &Path)]) -> Server {
        let log = dir.0.join(format!(
            "server-{}.log",
            SERVERS.fetch_add(1, Ordering::Relaxed)
        ));
        let mut child = Command::new(SERVER)
            .args(["--listen", listen, "--cert", &cert("cert.crt")])
            .args(["--key", &cert("cert.key"), "--root"])
            .arg(dir.root())
            .args(extra)
            .env("RUST_LOG", "debug")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server did not report its address");
        };
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        Server { child, addr, log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }

    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The counters of the server's latest stats line.
    pub fn stats(&self) -> HashMap<String, u64> {
        let log = self.log();
        let Some(line) = log.lines().rev().find_map(|l| l.split_once("stats: ")) else {
            return HashMap::new();
        };
        line.1
            .split(' ')
            .filter_map(|f| {
                let (k, v) = f.split_once('=')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect()
    }

    /// Waits for a stats line that satisfies `want`.
    pub fn wait_stats(
        &self,
        what: &str,
        want: impl Fn(&HashMap<String, u64>) -> bool,
    ) -> HashMap<String, u64> {
        let deadline = Instant::now() + STATS_DEADLINE;
        loop {
            let stats = self.stats();
            if want(&stats) {
                return stats;
            }
            assert!(
                Instant::now() < deadline,
                "the server never reported {what}; last stats {stats:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// How long the server may take to report what a test waits for in its stats line (e.g. that a
/// client's connection is gone: its draining period is three PTOs, milliseconds on loopback,
/// plus the stats line interval).
pub const STATS_DEADLINE: Duration = Duration::from_secs(10);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The longest any client run may take; a hung transfer fails the test instead of CI.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(30);

/// Runs the client to completion (killed by PID past the deadline).
pub fn client(args: &[String]) -> Output {
    client_within(args, CLIENT_DEADLINE)
}

/// Runs the client to completion, killed by PID past `limit`.
pub fn client_within(args: &[String], limit: Duration) -> Output {
    let mut child = Command::new(CLIENT)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Output is small (a summary line, a few messages), well within the pipe buffers.
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the client ran over {limit:?}: {}", describe(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

pub fn client_args(out: Option<&Path>, urls: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut args = vec!["--ca".to_string(), cert("rootca.crt")];
    if let Some(out) = out {
        args.push("--dump-responses".into());
        args.push(out.display().to_string());
    }
    args.extend(urls);
    args
}

/// The value of `key=` in the summary line.
pub fn summary_field(stdout: &[u8], key: &str) -> String {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("bytes="))
        .unwrap_or_else(|| panic!("no summary line in {text:?}"));
    line.split(' ')
        .find_map(|f| f.strip_prefix(&format!("{key}=")).map(str::to_string))
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
}

pub fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
