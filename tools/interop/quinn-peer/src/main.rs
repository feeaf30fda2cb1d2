//! HTTP/0.9 (ALPN hq-interop) interop peer on top of quinn's public API.
//!
//! Command line (shared by every peer in tools/interop, see README.md):
//!
//! ```text
//! quinn-peer server --listen HOST:PORT --cert FILE --key FILE --root DIR [--retry] [--keylog FILE]
//! quinn-peer client (--ca FILE | --no-verify) --out DIR [--case NAME] [--keylog FILE] URL...
//! ```
//!
//! Exit status: 0 on success, 1 on failure, 127 (and the line "unsupported") for a test case this
//! peer does not implement. The last line printed is always `bytes=N secs=S mbps=M`. quinn has no
//! HTTP/3 of its own here: the client answers the case `http3` with "unsupported", and so does the
//! server when run.sh names that case in the environment variable TESTCASE.

// A test tool, not the library: wall-clock time is what it measures, so the workspace ban on
// `Instant::now` (time is a parameter there) does not apply.
#![allow(clippy::disallowed_methods)]

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{Connection, Endpoint, Incoming, TransportConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionMemoryCache, ClientSessionStore, Resumption};
use rustls::client::{Tls12ClientSessionValue, Tls13ClientSessionValue, WebPkiServerVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, NamedGroup, SignatureScheme};
use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T> = std::result::Result<T, Error>;

const ALPN: &[u8] = b"hq-interop";
/// A request line is tiny; anything longer is a broken or hostile client.
const MAX_REQUEST: usize = 64 * 1024;
/// Files are streamed in chunks of this size both ways, never held whole in memory: the
/// benchmark (tools/bench) transfers 1 GiB.
const CHUNK: usize = 256 * 1024;
/// The client initiates its key update once this much data has arrived: by then the handshake is
/// confirmed (RFC 9001 §6.1 forbids an earlier update) and the transfer has barely started.
const KEY_UPDATE_AFTER: u64 = 64 * 1024;
const EXIT_UNSUPPORTED: i32 = 127;
/// connectionmigration: how long after the handshake the client moves to a new socket (the
/// server's HANDSHAKE_DONE is in by then on loopback).
const MIGRATE_AFTER: Duration = Duration::from_millis(100);
const CASES: &[&str] = &[
    // quinn (quinn-udp) marks ECT(0) and reports ECN counts by default.
    "ecn",
    // Active migration (RFC 9000 §9.2) to a new local socket after the handshake.
    "connectionmigration",
    "handshake",
    "transfer",
    "multiplexing",
    "retry",
    "resumption",
    "zerortt",
    "chacha20",
    "keyupdate",
];

fn summary(bytes: u64, secs: f64) {
    let secs = secs.max(1e-9);
    println!(
        "bytes={bytes} secs={secs:.3} mbps={:.2}",
        bytes as f64 * 8.0 / secs / 1e6
    );
}

macro_rules! log {
    ($($arg:tt)*) => { eprintln!("quinn: {}", format!($($arg)*)) };
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let start = Instant::now();
    // The client runs on one thread so that requests written right after `into_0rtt` are all
    // queued before the connection task next runs: on loopback a second worker thread could
    // finish the handshake first, and the "0-RTT" requests would leave in 1-RTT packets.
    let rt = match argv.first().map(String::as_str) {
        Some("client") => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        _ => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build(),
    }
    .expect("tokio runtime");
    let res = match argv.first().map(String::as_str) {
        Some("server") => rt.block_on(run_server(&argv[1..])),
        Some("client") => rt.block_on(run_client(&argv[1..])),
        _ => {
            eprintln!("usage: quinn-peer server|client [options]");
            std::process::exit(2);
        }
    };
    match res {
        Ok(Outcome::Done) => std::process::exit(0),
        Ok(Outcome::Unsupported) => {
            println!("unsupported");
            std::process::exit(EXIT_UNSUPPORTED);
        }
        Err(e) => {
            log!("error: {e}");
            summary(0, start.elapsed().as_secs_f64());
            std::process::exit(1);
        }
    }
}

enum Outcome {
    Done,
    Unsupported,
}

/// Options of either role; which ones are required depends on the role.
#[derive(Default)]
struct Args {
    listen: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    root: Option<String>,
    retry: bool,
    keylog: Option<String>,
    ca: Option<String>,
    no_verify: bool,
    out: Option<String>,
    case: Option<String>,
    urls: Vec<String>,
}

fn parse_args(argv: &[String]) -> Result<Args> {
    let mut a = Args::default();
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{arg} needs a value"))
        };
        match arg.as_str() {
            "--listen" => a.listen = Some(value()?),
            "--cert" => a.cert = Some(value()?),
            "--key" => a.key = Some(value()?),
            "--root" => a.root = Some(value()?),
            "--retry" => a.retry = true,
            "--keylog" => a.keylog = Some(value()?),
            "--ca" => a.ca = Some(value()?),
            "--no-verify" => a.no_verify = true,
            "--out" => a.out = Some(value()?),
            "--case" => a.case = Some(value()?),
            s if s.starts_with("--") => return Err(format!("unknown option {s}").into()),
            s => a.urls.push(s.to_string()),
        }
    }
    Ok(a)
}

fn required(v: &Option<String>, name: &str) -> Result<String> {
    v.clone()
        .ok_or_else(|| format!("{name} is required").into())
}

/// NSS key log written to a named file (rustls' own `KeyLogFile` only reads `SSLKEYLOGFILE`).
#[derive(Debug)]
struct FileKeyLog(Mutex<File>);

impl rustls::KeyLog for FileKeyLog {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        if let Ok(mut f) = self.0.lock() {
            let _ = writeln!(f, "{label} {} {}", hex(client_random), hex(secret));
        }
    }
}

fn key_log(path: &Option<String>) -> Result<Option<Arc<dyn rustls::KeyLog>>> {
    Ok(match path {
        Some(p) => {
            let f = OpenOptions::new().create(true).append(true).open(p)?;
            Some(Arc::new(FileKeyLog(Mutex::new(f))))
        }
        None => None,
    })
}

fn transport() -> Arc<TransportConfig> {
    let mut t = TransportConfig::default();
    // Every peer in tools/interop gives up on a silent connection after 30 s, the handshake
    // included (quinn has no other handshake timer): our apps' idle timeout.
    t.max_idle_timeout(Some(Duration::from_secs(30).try_into().expect("small")));
    // run.sh sets INTEROP_NO_GSO when it captures the test: on loopback a GSO batch is captured
    // as one oversized datagram, and tshark cannot split it into its QUIC packets.
    if std::env::var_os("INTEROP_NO_GSO").is_some() {
        t.enable_segmentation_offload(false);
    }
    // tools/cclab's several-flows runs choose the congestion controller (quinn's default is
    // CUBIC).
    match std::env::var("QUINN_CC").as_deref() {
        Ok("bbr") => {
            t.congestion_controller_factory(Arc::new(quinn::congestion::BbrConfig::default()));
        }
        Ok("reno") => {
            t.congestion_controller_factory(Arc::new(quinn::congestion::NewRenoConfig::default()));
        }
        _ => {}
    }
    Arc::new(t)
}

// ------------------------------------------------------------------ server

#[derive(Default)]
struct ServerStats {
    bytes: AtomicU64,
    span: Mutex<(Option<Instant>, Option<Instant>)>,
}

impl ServerStats {
    fn begin(&self) {
        if let Ok(mut s) = self.span.lock() {
            s.0.get_or_insert_with(Instant::now);
        }
    }
    /// The transfer span ends when a client closes its connection, after it got everything.
    fn conn_done(&self) {
        if let Ok(mut s) = self.span.lock() {
            if s.0.is_some() {
                s.1 = Some(Instant::now());
            }
        }
    }
    fn secs(&self) -> f64 {
        match self.span.lock().map(|s| *s) {
            Ok((Some(a), Some(b))) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        }
    }
}

async fn run_server(argv: &[String]) -> Result<Outcome> {
    let a = parse_args(argv)?;
    // run.sh names the case in TESTCASE, as the interop runner does. This peer speaks only
    // HTTP/0.9 (quinn has no HTTP/3 of its own), so an HTTP/3 client could not even connect.
    // Nor does quinn speak QUIC v2 (RFC 9369).
    if matches!(std::env::var("TESTCASE").as_deref(), Ok("http3" | "v2")) {
        return Ok(Outcome::Unsupported);
    }
    let listen: SocketAddr = required(&a.listen, "--listen")?.parse()?;
    let root = PathBuf::from(required(&a.root, "--root")?);
    let certs = CertificateDer::pem_file_iter(required(&a.cert, "--cert")?)?
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(required(&a.key, "--key")?)?;

    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    // QUIC requires 0xffffffff here when 0-RTT is offered at all (RFC 9001 §4.6.1).
    tls.max_early_data_size = u32::MAX;
    if let Some(k) = key_log(&a.keylog)? {
        tls.key_log = k;
    }
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(tls)?));
    config.transport_config(transport());
    let endpoint = Endpoint::server(config, listen)?;
    log!("listening on {} retry={}", endpoint.local_addr()?, a.retry);

    let stats = Arc::new(ServerStats::default());
    let root = Arc::new(root);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        tokio::select! {
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                tokio::spawn(serve_conn(incoming, a.retry, root.clone(), stats.clone()));
            }
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    endpoint.close(0u32.into(), b"");
    summary(stats.bytes.load(Ordering::Relaxed), stats.secs());
    Ok(Outcome::Done)
}

async fn serve_conn(incoming: Incoming, retry: bool, root: Arc<PathBuf>, stats: Arc<ServerStats>) {
    if retry && !incoming.remote_address_validated() {
        // RFC 9000 §8.1.2: the client must echo the Retry token in its next Initial.
        if let Err(e) = incoming.retry() {
            log!("retry failed: {e}");
        }
        return;
    }
    let connecting = match incoming.accept() {
        Ok(c) => c,
        Err(e) => return log!("accept: {e}"),
    };
    // Taking the connection before the handshake completes lets 0-RTT requests be answered at
    // once (0.5-RTT data).
    let conn = match connecting.into_0rtt() {
        Ok((conn, _)) => conn,
        Err(connecting) => match connecting.await {
            Ok(conn) => conn,
            Err(e) => return log!("handshake: {e}"),
        },
    };
    // The congestion window sampled every 5 ms while the connection lives, for tools/cclab
    // (its time average is what sets the throughput of a window-limited download).
    let sampler = {
        let conn = conn.clone();
        tokio::spawn(async move {
            let (mut sum, mut n) = (0u64, 0u64);
            let mut tick = tokio::time::interval(Duration::from_millis(5));
            while conn.close_reason().is_none() {
                tick.tick().await;
                sum += conn.stats().path.cwnd;
                n += 1;
            }
            sum.checked_div(n).unwrap_or(0)
        })
    };
    while let Ok((send, recv)) = conn.accept_bi().await {
        tokio::spawn(serve_stream(send, recv, root.clone(), stats.clone()));
    }
    // The sender's loss-recovery counters, for tools/cclab (which compares them with ours and
    // with Linux TCP's): one line per connection.
    let s = conn.stats();
    log!(
        "conn_stats sent_packets={} lost_packets={} lost_bytes={} congestion_events={} cwnd={} \
         rtt_ms={:.3} mean_cwnd={}",
        s.path.sent_packets,
        s.path.lost_packets,
        s.path.lost_bytes,
        s.path.congestion_events,
        s.path.cwnd,
        s.path.rtt.as_secs_f64() * 1e3,
        sampler.await.unwrap_or(0)
    );
    log_ack_frames(&conn);
    stats.conn_done();
}

/// The ACK frames each way and the ACK frequency frames received, to check an ACK frequency
/// interop run (draft-ietf-quic-ack-frequency) from this side too.
fn log_ack_frames(conn: &Connection) {
    let s = conn.stats();
    log!(
        "ack_stats acks_sent={} acks_received={} ack_frequency_received={} \
         immediate_ack_received={} ack_frequency_sent={}",
        s.frame_tx.acks,
        s.frame_rx.acks,
        s.frame_rx.ack_frequency,
        s.frame_rx.immediate_ack,
        s.frame_tx.ack_frequency
    );
}

/// Maps an HTTP/0.9 request to a file below `root`, refusing anything that climbs out of it.
fn resolve(root: &Path, request: &[u8]) -> Option<PathBuf> {
    let text = std::str::from_utf8(request).ok()?;
    let line = text.lines().next()?.trim();
    let target = line.strip_prefix("GET ")?.trim();
    let path = target.split(['?', '#']).next()?.trim_start_matches('/');
    let rel = Path::new(path);
    if path.is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(root.join(rel))
}

async fn serve_stream(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    root: Arc<PathBuf>,
    stats: Arc<ServerStats>,
) {
    stats.begin();
    let Ok(request) = recv.read_to_end(MAX_REQUEST).await else {
        let _ = send.reset(1u32.into());
        return;
    };
    let Some(file) = resolve(&root, &request) else {
        log!("bad request {:?}", String::from_utf8_lossy(&request));
        let _ = send.reset(1u32.into());
        return;
    };
    let mut body = match tokio::fs::File::open(&file).await {
        Ok(f) => f,
        Err(e) => {
            log!("{}: {e}", file.display());
            let _ = send.reset(1u32.into());
            return;
        }
    };
    let mut buf = vec![0; CHUNK];
    loop {
        let n = match body.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                log!("{}: {e}", file.display());
                let _ = send.reset(1u32.into());
                return;
            }
        };
        if send.write_all(&buf[..n]).await.is_err() {
            return;
        }
        stats.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
    let _ = send.finish();
}

// ------------------------------------------------------------------ client

/// Counts certificate verifications: a resumed (PSK) handshake carries no server certificate,
/// so a second connection that verified one was not resumed.
#[derive(Debug)]
struct CountingVerifier {
    inner: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
    count: AtomicUsize,
}

impl ServerCertVerifier for CountingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        self.count.fetch_add(1, Ordering::SeqCst);
        match &self.inner {
            Some(v) => v.verify_server_cert(end_entity, intermediates, server_name, ocsp, now),
            None => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The in-memory session store, plus a signal when the server's first ticket arrives.
#[derive(Debug)]
struct NotifyingStore {
    inner: ClientSessionMemoryCache,
    got_ticket: Arc<Notify>,
    has_ticket: AtomicBool,
}

impl ClientSessionStore for NotifyingStore {
    fn set_kx_hint(&self, name: ServerName<'static>, group: NamedGroup) {
        self.inner.set_kx_hint(name, group)
    }
    fn kx_hint(&self, name: &ServerName<'_>) -> Option<NamedGroup> {
        self.inner.kx_hint(name)
    }
    fn set_tls12_session(&self, name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.inner.set_tls12_session(name, value)
    }
    fn tls12_session(&self, name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.inner.tls12_session(name)
    }
    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.inner.remove_tls12_session(name)
    }
    fn insert_tls13_ticket(&self, name: ServerName<'static>, value: Tls13ClientSessionValue) {
        self.inner.insert_tls13_ticket(name, value);
        self.has_ticket.store(true, Ordering::SeqCst);
        self.got_ticket.notify_waiters();
    }
    fn take_tls13_ticket(&self, name: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        self.inner.take_tls13_ticket(name)
    }
}

struct Target {
    addr: SocketAddr,
    host: String,
    paths: Vec<String>,
}

fn parse_urls(urls: &[String]) -> Result<Target> {
    let mut target: Option<Target> = None;
    for url in urls {
        let rest = url
            .strip_prefix("https://")
            .ok_or_else(|| format!("bad URL {url}"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let addr: SocketAddr = authority
            .parse()
            .map_err(|_| format!("URL {url}: expected an IP address and port"))?;
        let host = addr.ip().to_string();
        match &mut target {
            None => {
                target = Some(Target {
                    addr,
                    host,
                    paths: vec![path.to_string()],
                })
            }
            Some(t) if t.addr == addr => t.paths.push(path.to_string()),
            Some(_) => return Err("all URLs must name the same server".into()),
        }
    }
    target.ok_or_else(|| "no URL".into())
}

struct Client {
    endpoint: Endpoint,
    target: Target,
    out: PathBuf,
    verifier: Arc<CountingVerifier>,
    store: Arc<NotifyingStore>,
    key_update: bool,
}

async fn run_client(argv: &[String]) -> Result<Outcome> {
    let a = parse_args(argv)?;
    let case = a.case.clone().unwrap_or_else(|| "transfer".into());
    if !CASES.contains(&case.as_str()) {
        return Ok(Outcome::Unsupported);
    }
    if a.ca.is_some() == a.no_verify {
        return Err("exactly one of --ca and --no-verify is required".into());
    }
    let out = PathBuf::from(required(&a.out, "--out")?);
    std::fs::create_dir_all(&out)?;
    let target = parse_urls(&a.urls)?;

    let mut provider = ring::default_provider();
    if case == "chacha20" {
        provider.cipher_suites = vec![ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256];
    } else if std::env::var_os("QUINN_PEER_AES128").is_some() {
        // tools/bench sets this: ring's default order puts AES-256-GCM first, while our apps
        // negotiate AES-128-GCM; the benchmark compares both on the same cipher.
        provider.cipher_suites = vec![ring::cipher_suite::TLS13_AES_128_GCM_SHA256];
    }
    let provider = Arc::new(provider);
    let inner = match &a.ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(ca)? {
                roots.add(cert?)?;
            }
            Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()?,
            )
        }
        None => None,
    };
    let verifier = Arc::new(CountingVerifier {
        inner,
        provider: provider.clone(),
        count: AtomicUsize::new(0),
    });
    let store = Arc::new(NotifyingStore {
        inner: ClientSessionMemoryCache::new(32),
        got_ticket: Arc::new(Notify::new()),
        has_ticket: AtomicBool::new(false),
    });
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.enable_early_data = true;
    tls.resumption = Resumption::store(store.clone());
    if let Some(k) = key_log(&a.keylog)? {
        tls.key_log = k;
    }
    // Initial packets always use AES-128-GCM (RFC 9001 §5.2), whatever suites TLS offers.
    let initial = ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|s| s.quic_suite())
        .ok_or("no initial suite")?;
    let crypto = QuicClientConfig::with_initial(Arc::new(tls), initial)?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(transport());
    let bind: SocketAddr = if target.addr.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let mut endpoint = Endpoint::client(bind)?;
    endpoint.set_default_client_config(config);

    let client = Arc::new(Client {
        endpoint,
        target,
        out,
        verifier,
        store,
        key_update: case == "keyupdate",
    });
    let start = Instant::now();
    let total = match case.as_str() {
        "resumption" | "zerortt" => resume(&client, case == "zerortt").await?,
        "connectionmigration" => {
            let conn = client.connect_1rtt().await?;
            // Wait for the handshake to be confirmed (HANDSHAKE_DONE: a client must not
            // migrate before, RFC 9000 §9), then move the endpoint to a new socket:
            // quinn-proto switches to a fresh connection ID and pings from the new address,
            // and the server validates it.
            tokio::time::sleep(MIGRATE_AFTER).await;
            client.endpoint.rebind(std::net::UdpSocket::bind(bind)?)?;
            let n = fetch_all(&client, &conn, &client.target.paths).await;
            conn.close(0u32.into(), b"");
            n?
        }
        _ => {
            let conn = client.connect_1rtt().await?;
            let n = fetch_all(&client, &conn, &client.target.paths).await;
            log_ack_frames(&conn);
            conn.close(0u32.into(), b"");
            n?
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), client.endpoint.wait_idle()).await;
    summary(total, start.elapsed().as_secs_f64());
    Ok(Outcome::Done)
}

impl Client {
    async fn connect_1rtt(&self) -> Result<Connection> {
        Ok(self
            .endpoint
            .connect(self.target.addr, &self.target.host)?
            .await?)
    }
}

/// First URL on a first connection, the rest on a second, resumed one (in 0-RTT if `early`).
async fn resume(client: &Arc<Client>, early: bool) -> Result<u64> {
    let paths = &client.target.paths;
    let conn = client.connect_1rtt().await?;
    let first = fetch_all(client, &conn, &paths[..1]).await;
    let ticket = wait_ticket(client).await;
    conn.close(0u32.into(), b"");
    let mut total = first?;
    ticket?;

    let connecting = client
        .endpoint
        .connect(client.target.addr, &client.target.host)?;
    let more = if early {
        let (conn, accepted) = connecting
            .into_0rtt()
            .map_err(|_| "no 0-RTT ticket to resume with")?;
        // Streams opened now carry their requests in 0-RTT packets.
        let n = fetch_all(client, &conn, &paths[1..]).await;
        let was_accepted = accepted.await;
        conn.close(0u32.into(), b"");
        let n = n?;
        if !was_accepted {
            return Err("server rejected 0-RTT".into());
        }
        n
    } else {
        let conn = connecting.await?;
        let n = fetch_all(client, &conn, &paths[1..]).await;
        conn.close(0u32.into(), b"");
        n?
    };
    total += more;
    if client.verifier.count.load(Ordering::SeqCst) != 1 {
        return Err("second connection was not resumed (server sent a certificate)".into());
    }
    Ok(total)
}

async fn wait_ticket(client: &Client) -> Result<()> {
    let wait = async {
        loop {
            let notified = client.store.got_ticket.notified();
            if client.store.has_ticket.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), wait)
        .await
        .map_err(|_| "server sent no session ticket".into())
}

/// Requests every path on its own stream, all at once; `open_bi` waits for stream credit
/// (MAX_STREAMS) when the server's limit is reached.
async fn fetch_all(client: &Arc<Client>, conn: &Connection, paths: &[String]) -> Result<u64> {
    let received = Arc::new(AtomicU64::new(0));
    let updated = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    // tools/cclab's several-flows runs: the bytes received so far, every 100 ms, as
    // `UNIX_MS BYTES` lines in the file CCLAB_RATE_LOG names.
    if let Some(path) = std::env::var_os("CCLAB_RATE_LOG") {
        let mut log = File::create(path)?;
        let received = received.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                tick.tick().await;
                let ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis());
                let n = received.load(Ordering::Relaxed);
                if writeln!(log, "{ms} {n}").is_err() {
                    break;
                }
            }
        });
    }
    for path in paths {
        let (client, conn, path) = (client.clone(), conn.clone(), path.clone());
        let (received, updated) = (received.clone(), updated.clone());
        tasks.spawn(async move {
            fetch(&client, &conn, &path, &received, &updated)
                .await
                .map_err(|e| format!("{path}: {e}"))
        });
    }
    let mut total = 0;
    while let Some(res) = tasks.join_next().await {
        total += res??;
    }
    Ok(total)
}

async fn fetch(
    client: &Client,
    conn: &Connection,
    path: &str,
    received: &AtomicU64,
    updated: &AtomicBool,
) -> Result<u64> {
    let (mut send, mut recv) = conn.open_bi().await?;
    send.write_all(format!("GET {path}\r\n").as_bytes()).await?;
    send.finish()?;
    let name = path
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or("index.html");
    let mut out = std::io::BufWriter::with_capacity(CHUNK, File::create(client.out.join(name))?);
    let mut len = 0;
    while let Some(chunk) = recv.read_chunk(usize::MAX, true).await? {
        out.write_all(&chunk.bytes)?;
        len += chunk.bytes.len() as u64;
        let seen = received.fetch_add(chunk.bytes.len() as u64, Ordering::Relaxed);
        if client.key_update && seen >= KEY_UPDATE_AFTER && !updated.swap(true, Ordering::Relaxed) {
            conn.force_key_update();
        }
    }
    out.flush()?;
    Ok(len)
}
