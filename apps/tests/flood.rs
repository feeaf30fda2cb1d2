//! The real `quiche-server` under a flood of garbage datagrams and truncated or corrupted
//! Initials, sent to its port while a real `quiche-client` downloads a file.
//!
//! What must hold (issue "Apps and interoperability", Done when):
//! - the download completes and arrives intact (SHA-256);
//! - the flood creates no connection: the server's stats line counts exactly one accepted
//!   connection per download, at most one served at a time, and none left once the client
//!   has closed;
//! - the server stays within its memory bound: its peak RSS (`VmHWM`) after the flooded
//!   download is at most [`RSS_MARGIN`] above the peak of a download without flood on the
//!   same process, and under [`RSS_CEILING`] in any case.
//!
//! Both server modes are flooded: `--no-retry`, where Initials that look valid make the
//! server derive Initial keys and try to open them, and the default (Retry), where they get a
//! stateless Retry and forged tokens are refused. Every process is ended by its PID
//! (`Child::kill`) when its guard drops, and every wait is bounded.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::fs;
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use quiche::{ConnectionId, Header};

mod common;

use common::{cert, sha256, Server, TempDir, CLIENT};
use quiche::testing::Rng;

/// Datagrams in one flood.
const FLOOD: usize = 10_000;

/// Datagrams sent back to back before the flood pauses for [`FLOOD_PAUSE`]: the pauses let
/// the server read most of the flood instead of the kernel dropping it at a full socket.
const FLOOD_BURST: usize = 50;
const FLOOD_PAUSE: Duration = Duration::from_millis(1);

/// The downloaded file: large enough that the flood (0.3-0.6 s) ends well before the download
/// does. A debug build downloads 80 MiB in well under 1 s on a quiet machine (once, in CI, before
/// a 0.5 s flood ended), so 200 MiB; an optimized one (`cargo test --release`) 1 GiB in 1-3 s.
const FILE_LEN: usize = if cfg!(debug_assertions) {
    200 << 20
} else {
    1 << 30
};

/// How far the flooded peak RSS may rise above the unflooded one. The flood may add what
/// the server holds per datagram in flight (its receive buffer and send queue are reused),
/// the allocator's slack, and a larger window of unacknowledged data for the download (the
/// flood lengthens the round trip, and the congestion window follows): 4 to 5 MiB here. One
/// leaked connection state per flood datagram would add tens of MiB.
const RSS_MARGIN_KIB: u64 = 8 << 10;

/// An absolute ceiling for the server's peak RSS, whatever the baseline.
const RSS_CEILING_KIB: u64 = 200 << 10;

/// The client's flow-control windows, fixed (no auto-tuning): what the server buffers for
/// the download is then bounded the same way with and without the flood. Auto-tuning grows
/// the windows when the round trip lengthens, as it does while the server is busy with the
/// flood, and the server legitimately buffers up to the larger window: that would be
/// measured as the flood's cost.
const CLIENT_WINDOWS: &[&str] = &[
    "--max-data",
    "6M",
    "--max-window",
    "6M",
    "--max-stream-data",
    "4M",
    "--max-stream-window",
    "4M",
];

/// The longest a download may take, flood or not; a hung transfer fails the test.
const CLIENT_DEADLINE: Duration = Duration::from_secs(60);

/// The two floods run one after the other: each measures time and memory.
static SERIAL: Mutex<()> = Mutex::new(());

/// Uniform in `lo..=hi`.
fn range(rng: &mut Rng, lo: usize, hi: usize) -> usize {
    lo + rng.below_usize(hi - lo + 1)
}

/// What the flood tests read of the server's state.
impl Server {
    /// A field of `/proc/PID/status`, in KiB.
    fn status_kib(&self, field: &str) -> u64 {
        let status = fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in {status}"))
    }
}

/// A running `quiche-client`, killed by PID when dropped.
struct Client(Option<Child>);

impl Client {
    fn start(server: &Server, out: &std::path::Path) -> Client {
        let url = format!("https://localhost:{}/file.bin", server.addr.port());
        let child = Command::new(CLIENT)
            .args(CLIENT_WINDOWS)
            .args(["--ca", &cert("rootca.crt"), "--dump-responses"])
            .arg(out)
            .arg(url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Client(Some(child))
    }

    fn running(&mut self) -> bool {
        self.0
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    /// Waits for the client to exit (killing it past the deadline) and returns its output.
    fn finish(mut self, deadline: Instant) -> Output {
        let mut child = self.0.take().unwrap();
        // Its output is a summary line and a few messages, within the pipe buffers.
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!(
                    "the client ran over {CLIENT_DEADLINE:?}; stderr: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        child.wait_with_output().unwrap()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One download to `out`; panics unless it completes intact.
fn download(server: &Server, out: &std::path::Path, body_hash: &[u8]) -> f64 {
    let started = Instant::now();
    let out_put = Client::start(server, out).finish(started + CLIENT_DEADLINE);
    check_download(&out_put, out, body_hash);
    started.elapsed().as_secs_f64()
}

fn check_download(output: &Output, out: &std::path::Path, body_hash: &[u8]) {
    assert!(
        output.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let received = fs::read(out.join("file.bin")).unwrap();
    assert_eq!(received.len(), FILE_LEN);
    assert!(sha256(&received) == body_hash, "the download differs");
    fs::remove_file(out.join("file.bin")).unwrap();
}

/// Client Initials made by the library (real ClientHellos, sealed with the Initial keys of
/// a random DCID), to be truncated and corrupted.
fn real_initials(server: SocketAddr, n: usize) -> Vec<Vec<u8>> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    config.set_application_protos(&[b"hq-interop"]).unwrap();
    config.verify_peer(false);
    let local: SocketAddr = "127.0.0.1:1".parse().unwrap();
    (0..n)
        .map(|i| {
            let scid = [i as u8; 16];
            let scid = ConnectionId::from_ref(&scid);
            let mut conn =
                quiche::connect(Some("localhost"), &scid, local, server, &mut config).unwrap();
            let mut buf = vec![0; 1500];
            let (len, _) = conn.send(&mut buf).unwrap();
            buf.truncate(len);
            assert!(len >= 1200);
            buf
        })
        .collect()
}

/// A long-header Initial for QUIC v1 (RFC 9000 §17.2.2) with a random DCID, a header that
/// parses and
/// `payload_len` bytes of garbage as its (protected) packet number and payload.
fn forged_initial(rng: &mut Rng, token: &[u8], payload_len: usize) -> Vec<u8> {
    // At least the 8 bytes a client's first DCID has (RFC 9000 §7.2), at most 20.
    let dcid_len = range(rng, 8, 20);
    let mut p = vec![0xc3];
    p.extend_from_slice(&1u32.to_be_bytes());
    p.push(dcid_len as u8);
    p.extend(rng.bytes(dcid_len));
    let scid_len = range(rng, 0, 20);
    p.push(scid_len as u8);
    p.extend(rng.bytes(scid_len));
    // Token length and packet length as 2-byte varints (RFC 9000 §16).
    p.extend_from_slice(&(0x4000 | token.len() as u16).to_be_bytes());
    p.extend_from_slice(token);
    p.extend_from_slice(&(0x4000 | payload_len as u16).to_be_bytes());
    p.extend(rng.bytes(payload_len));
    p
}

/// The flood's kinds of datagram, in turn.
const KINDS: usize = 8;

/// Datagram number `i` of the flood.
fn flood_datagram(rng: &mut Rng, i: usize, templates: &[Vec<u8>]) -> Vec<u8> {
    let template = &templates[i / KINDS % templates.len()];
    match i % KINDS {
        // Random bytes of random sizes, now and then a large one.
        0 => {
            let len = if range(rng, 0, 20) == 0 {
                range(rng, 1500, 9000)
            } else {
                range(rng, 1, 1500)
            };
            rng.bytes(len)
        }
        // A long header (any type, version 1 or another) with random connection IDs, some
        // longer than QUIC v1 allows, then garbage.
        1 => {
            let mut p = vec![0xc0 | (rng.next() as u8 & 0x3f)];
            let version = if range(rng, 0, 3) == 0 {
                rng.next() as u32
            } else {
                1
            };
            p.extend_from_slice(&version.to_be_bytes());
            for _ in 0..2 {
                let len = range(rng, 0, 24);
                p.push(len as u8);
                p.extend(rng.bytes(len));
            }
            let len = range(rng, 0, 1400);
            p.extend(rng.bytes(len));
            p
        }
        // A real client Initial truncated at a random point.
        2 => template[..range(rng, 1, template.len() - 1)].to_vec(),
        // An Initial whose header parses, in a datagram under 1200 bytes (RFC 9000 §14.1).
        3 => {
            let len = range(rng, 20, 1100);
            forged_initial(rng, &[], len)
        }
        // Initial-sized, valid header with a fresh DCID, garbage payload: the server derives
        // Initial keys for the DCID and fails to open the packet.
        4 => {
            let len = range(rng, 1200, 1400);
            forged_initial(rng, &[], len)
        }
        // A real Initial with one payload byte flipped: its header protection comes off, its
        // AEAD tag does not verify.
        5 => {
            let mut p = template.clone();
            let at = range(rng, p.len() - 200, p.len() - 1);
            p[at] ^= 1 << range(rng, 0, 7);
            p
        }
        // Initial-sized with a forged address-validation token (refused when Retry is on).
        6 => {
            let token_len = range(rng, 1, 200);
            let token = rng.bytes(token_len);
            forged_initial(rng, &token, 1200)
        }
        // A short header with a random DCID: no connection has it.
        _ => {
            let len = range(rng, 20, 1400);
            let mut p = rng.bytes(len);
            p[0] = 0x40 | (p[0] & 0x3f);
            p
        }
    }
}

/// Sends the flood from a few sockets (a few source ports); returns when it is all sent.
fn flood(to: SocketAddr, templates: &[Vec<u8>], seed: u64) -> Duration {
    let started = Instant::now();
    let sockets: Vec<_> = (0..4)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    let mut rng = Rng(seed);
    for i in 0..FLOOD {
        let datagram = flood_datagram(&mut rng, i, templates);
        // The kernel may refuse a datagram (full buffers): the flood goes on.
        let _ = sockets[i % sockets.len()].send_to(&datagram, to);
        if i % FLOOD_BURST == FLOOD_BURST - 1 {
            std::thread::sleep(FLOOD_PAUSE);
        }
    }
    started.elapsed()
}

/// The generated datagrams are what they claim to be: the header parser accepts the forged
/// headers, truncated templates are shorter than the original.
#[test]
fn the_flood_has_every_kind_of_datagram() {
    let server: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let templates = real_initials(server, 2);
    let mut rng = Rng(7);
    for i in 0..KINDS * 20 {
        let mut d = flood_datagram(&mut rng, i, &templates);
        match i % KINDS {
            2 => assert!(d.len() < templates[i / KINDS % 2].len()),
            3 => {
                assert!(d.len() < 1200);
                let hdr = Header::from_slice(&mut d, 16).unwrap();
                assert_eq!(hdr.ty, quiche::Type::Initial);
            }
            4 | 6 => {
                assert!(d.len() >= 1200);
                let hdr = Header::from_slice(&mut d, 16).unwrap();
                assert_eq!(hdr.ty, quiche::Type::Initial);
                assert!(hdr.dcid.len() >= 8);
                assert_eq!(hdr.token.unwrap().is_empty(), i % KINDS == 4);
            }
            5 => assert_ne!(d, templates[i / KINDS % 2]),
            _ => {}
        }
    }
}

/// What one flooded run measured.
#[derive(Debug)]
struct Figures {
    baseline_hwm_kib: u64,
    flooded_hwm_kib: u64,
    rss_after_kib: u64,
    baseline_secs: f64,
    flooded_secs: f64,
    flood_secs: f64,
    stats: HashMap<String, u64>,
}

impl Figures {
    /// `cargo test -- --nocapture` shows the figures.
    fn print(&self, name: &str) {
        let mut stats: Vec<_> = self.stats.iter().collect();
        stats.sort();
        println!(
            "{name}: peak RSS {} KiB after a download, {} KiB after a flooded one, RSS {} KiB \
             at the end; download {:.2} s, flooded {:.2} s; {FLOOD} datagrams sent in {:.2} s; \
             server stats {stats:?}",
            self.baseline_hwm_kib,
            self.flooded_hwm_kib,
            self.rss_after_kib,
            self.baseline_secs,
            self.flooded_secs,
            self.flood_secs,
        );
    }
}

fn flood_during_download(name: &str, server_args: &[&str]) -> Figures {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = TempDir::new(name);
    let mut rng = Rng(0x5eed);
    let body = rng.bytes(FILE_LEN);
    let body_hash = sha256(&body);
    fs::write(dir.root().join("file.bin"), &body).unwrap();
    drop(body);
    let server = Server::start(&dir, server_args);
    let templates = real_initials(server.addr, 8);

    // The baseline: one download without flood.
    let baseline_secs = download(&server, &dir.out(), &body_hash);
    let stats = server.wait_stats("the first connection closed", |s| {
        s.get("closed") == Some(&1) && s.get("connections") == Some(&0)
    });
    assert_eq!(stats["accepted"], 1, "{stats:?}");
    let baseline_hwm_kib = server.status_kib("VmHWM");

    // The same download with the flood on the server's port once the connection is up.
    let started = Instant::now();
    let mut client = Client::start(&server, &dir.out());
    server.wait_stats("the second connection", |s| s.get("accepted") == Some(&2));
    let flood_secs = flood(server.addr, &templates, 0xf100d).as_secs_f64();
    assert!(
        client.running(),
        "the download ended before the flood did: make FILE_LEN larger"
    );
    let output = client.finish(started + CLIENT_DEADLINE);
    let flooded_secs = started.elapsed().as_secs_f64();
    check_download(&output, &dir.out(), &body_hash);

    // The flood opened nothing: two connections in all, one at a time, both gone now.
    let stats = server.wait_stats("the second connection closed", |s| {
        s.get("closed") == Some(&2) && s.get("connections") == Some(&0)
    });
    assert_eq!(stats["accepted"], 2, "{stats:?}");
    assert_eq!(stats["peak"], 1, "{stats:?}");
    let flooded_hwm_kib = server.status_kib("VmHWM");
    let rss_after_kib = server.status_kib("VmRSS");
    assert!(
        flooded_hwm_kib <= baseline_hwm_kib + RSS_MARGIN_KIB,
        "peak RSS {flooded_hwm_kib} KiB with the flood, {baseline_hwm_kib} KiB without"
    );
    assert!(
        flooded_hwm_kib < RSS_CEILING_KIB,
        "peak RSS {flooded_hwm_kib} KiB"
    );
    let figures = Figures {
        baseline_hwm_kib,
        flooded_hwm_kib,
        rss_after_kib,
        baseline_secs,
        flooded_secs,
        flood_secs,
        stats,
    };
    figures.print(name);
    figures
}

/// Without Retry, Initials that look valid reach the Initial keys: the server must open a
/// connection only for one whose packet decrypts.
#[test]
fn flood_without_retry() {
    let f = flood_during_download("no-retry", &["--no-retry"]);
    // Every Initial-sized forged or corrupted Initial got as far as the Initial keys (some
    // may have been dropped by the kernel before the server read them).
    let tried = f.stats["unauthenticated"];
    assert!(tried > (FLOOD / KINDS) as u64, "{f:?}");
    assert_eq!(f.stats["retries"], 0, "{f:?}");
}

/// With Retry, Initials without a token get a stateless Retry and forged tokens are
/// refused: no connection state at all.
#[test]
fn flood_with_retry() {
    let f = flood_during_download("retry", &[]);
    // One Retry per download, the rest for the flood's token-less Initials.
    assert!(f.stats["retries"] > 2, "{f:?}");
    assert!(f.stats["invalid_tokens"] > 0, "{f:?}");
    assert_eq!(f.stats["unauthenticated"], 0, "{f:?}");
}
