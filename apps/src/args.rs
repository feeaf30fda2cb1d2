//! Command-line parsing for both programs (clap, derive) and their `--help` texts, which are
//! the programs' documentation. Scripts rely on every flag name, default and the client's
//! summary line: tools/interop/ours-peer.sh, tools/bench/run.sh (which looks for
//! `--disable-gso` in `--help`), tools/demo.sh, tools/ffi-check.sh, tools/compat/examples.sh and
//! the apps' tests.
//!
//! Usage errors (unknown flag, bad value, missing argument, flags that exclude each other) are
//! clap errors naming the flag; `clap::Error::exit` prints them on stderr with exit status 2,
//! and `--help`/`--version` on stdout with status 0.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, ValueEnum};

use crate::http09::Url;

/// Default initial connection receive window (`--max-data`).
pub const DEFAULT_MAX_DATA: u64 = 10_000_000;
/// Default initial stream receive window (`--max-stream-data`).
pub const DEFAULT_MAX_STREAM_DATA: u64 = 1_000_000;
/// Default idle timeout in milliseconds (`--idle-timeout`).
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 30_000;
/// Default largest UDP payload sent (`--max-udp-payload`): what a 1500-byte MTU carries over
/// IPv6 (and over IPv4 with 20 bytes to spare). Path MTU discovery starts at 1200 bytes and
/// probes up to it, so paths with a smaller MTU (tunnels, IPv6's 1280 minimum) still work.
pub const DEFAULT_MAX_UDP_PAYLOAD: usize = 1452;

/// Why `--session-file` is refused on rustls (the TLS stack cannot keep a session across
/// processes).
pub const SESSION_FILE_UNSUPPORTED: &str = "--session-file: this build runs TLS on rustls, \
and rustls 0.23 has no public API to write a TLS client session out and read it back (no \
encoding, no constructor, and a session is bound to the certificate verifier that received it), \
so a session is only valid in the process that received it. Build with the \
boringssl-boring-crate feature (BoringSSL sessions serialize), or use --resume for a resumed \
connection (with --early-data for 0-RTT) within one run";

/// Why `--early-data` needs `--resume` or `--session-file`.
pub const EARLY_DATA_NEEDS_RESUME: &str = "--early-data needs --resume or --session-file: 0-RTT \
needs a session, from an earlier connection of the same run or (BoringSSL builds) from a file";

/// Whether sessions survive the process: the library's default TLS backend can serialize them
/// (BoringSSL, in a build with the `boringssl-boring-crate` feature), rustls cannot.
pub fn sessions_serialize() -> bool {
    quiche::tls::TlsBackend::default() != quiche::tls::TlsBackend::Rustls
}

/// The transport options of both programs.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
#[command(next_help_heading = "Transport options (client and server)")]
pub struct TransportArgs {
    /// Congestion control: reno, cubic or bbr (BBR, draft-ietf-ccwg-bbr-06; bbr2 is an alias)
    /// [default: cubic]
    #[arg(long, value_name = "NAME", value_parser = ["reno", "cubic", "bbr", "bbr2"])]
    pub cc_algorithm: Option<String>,
    /// Turn HyStart++ off (default: on)
    #[arg(long)]
    pub disable_hystart: bool,
    /// Slow-start strategy: standard, hystart (HyStart++, RFC 9406) or search (SEARCH,
    /// draft-chung-ccwg-search); overrides --disable-hystart [default: hystart]
    #[arg(long, value_name = "NAME", value_parser = ["standard", "hystart", "search"])]
    pub slow_start: Option<String>,
    /// Initial congestion window in packets [default: 10]
    #[arg(long, value_name = "N", value_parser = parse_usize)]
    pub initial_cwnd_packets: Option<usize>,
    /// Turn pacing off (default: on; datagrams are sent at SendInfo.at)
    #[arg(long)]
    pub disable_pacing: bool,
    /// Offer the ACK frequency extension (draft-ietf-quic-ack-frequency-12) and print the ACK
    /// frame counters when a connection closes: with a peer that offers it too, ask it for
    /// fewer ACKs when the congestion window is large (default: the library's, off)
    #[arg(long)]
    pub ack_frequency: bool,
    /// Do not offer the ACK frequency extension, whatever the library's default
    #[arg(long, conflicts_with = "ack_frequency")]
    pub disable_ack_frequency: bool,
    /// Initial connection receive window in bytes
    #[arg(long, value_name = "N", value_parser = parse_size_arg, default_value_t = DEFAULT_MAX_DATA)]
    pub max_data: u64,
    /// Initial stream receive window in bytes
    #[arg(long, value_name = "N", value_parser = parse_size_arg, default_value_t = DEFAULT_MAX_STREAM_DATA)]
    pub max_stream_data: u64,
    /// Ceiling of the auto-tuned connection window [default: 24M]
    #[arg(long, value_name = "N", value_parser = parse_size_arg)]
    pub max_window: Option<u64>,
    /// Ceiling of the auto-tuned stream window [default: 16M]
    #[arg(long, value_name = "N", value_parser = parse_size_arg)]
    pub max_stream_window: Option<u64>,
    /// Idle timeout in milliseconds, 0 for none
    #[arg(long = "idle-timeout", value_name = "MS", value_parser = parse_size_arg, default_value_t = DEFAULT_IDLE_TIMEOUT_MS)]
    pub idle_timeout_ms: u64,
    /// Largest UDP payload to send, 1200 to 65527
    #[arg(long = "max-udp-payload", value_name = "N", value_parser = parse_udp_payload, default_value_t = DEFAULT_MAX_UDP_PAYLOAD)]
    pub max_udp_payload: usize,
    /// Send and receive without UDP GSO/GRO (default: on where the kernel has them, Linux 5.0
    /// and later): batches of datagrams go through sendmmsg/recvmmsg instead
    #[arg(long)]
    pub disable_gso: bool,
    /// Turn path MTU discovery off: datagrams of --max-udp-payload from the first one
    /// (default: start at 1200 bytes and probe up to it)
    #[arg(long)]
    pub disable_pmtud: bool,
    /// Send the disable_active_migration transport parameter: the peer may not move to a new
    /// address (a server still follows a NAT's port change, RFC 9000 §9)
    #[arg(long)]
    pub disable_active_migration: bool,
    /// Send without ECN marks (default: ECT(0) while the path is validated for ECN and once it
    /// proved capable, RFC 9000 §13.4); received marks are still reported to the peer
    #[arg(long)]
    pub disable_ecn: bool,
    /// QUIC version a client starts in: 1, or 0x6b3343cf for QUIC v2 (RFC 9369) [default: 1].
    /// A server takes clients in either whatever this says
    #[arg(long, value_name = "VERSION", value_parser = parse_quic_version)]
    pub quic_version: Option<u32>,
    /// Versions for compatible version negotiation (RFC 9368), most preferred first, e.g.
    /// 0x6b3343cf,1: a client offers them and follows a server that moves it to one; a server
    /// moves a client to the first of them that the client offers [default: none]
    #[arg(long, value_name = "V,V", value_delimiter = ',', value_parser = parse_quic_version)]
    pub compatible_versions: Vec<u32>,
}

impl Default for TransportArgs {
    fn default() -> Self {
        TransportArgs {
            cc_algorithm: None,
            disable_hystart: false,
            slow_start: None,
            initial_cwnd_packets: None,
            disable_pacing: false,
            ack_frequency: false,
            disable_ack_frequency: false,
            max_data: DEFAULT_MAX_DATA,
            max_stream_data: DEFAULT_MAX_STREAM_DATA,
            max_window: None,
            max_stream_window: None,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            max_udp_payload: DEFAULT_MAX_UDP_PAYLOAD,
            disable_gso: false,
            disable_pmtud: false,
            disable_active_migration: false,
            disable_ecn: false,
            quic_version: None,
            compatible_versions: Vec::new(),
        }
    }
}

/// Parses a QUIC version, hexadecimal with 0x or decimal, that the library supports.
fn parse_quic_version(s: &str) -> Result<u32, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("not a version: {s}"))?;
    if !quiche::version_is_supported(v) {
        return Err(format!(
            "version {v:#010x} is not supported (1 or 0x6b3343cf)"
        ));
    }
    Ok(v)
}

/// Parses a size: decimal digits with an optional K, M or G suffix (powers of 1024).
pub fn parse_size(s: &str) -> Option<u64> {
    let (digits, mult) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).ok_or_else(|| "not a number (digits, optionally followed by K, M or G)".into())
}

fn parse_usize(s: &str) -> Result<usize, String> {
    usize::try_from(parse_size_arg(s)?).map_err(|_| "value too large".into())
}

fn parse_udp_payload(s: &str) -> Result<usize, String> {
    let n = parse_usize(s)?;
    if !(1200..=65527).contains(&n) {
        return Err("must be between 1200 and 65527".into());
    }
    Ok(n)
}

/// Bytes given in hexadecimal on the command line (a type of its own: clap would take a
/// `Vec<u8>` for a list of numbers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HexBytes(pub Vec<u8>);

/// Bytes from hexadecimal digits (an even number of them).
fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{s}: not an even number of hexadecimal digits"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

/// A QUIC-LB server ID: 1 to 11 bytes, so that with a nonce of at least 4 it fits the
/// server's 16-byte connection IDs.
fn parse_server_id(s: &str) -> Result<HexBytes, String> {
    let id = parse_hex(s)?;
    if id.is_empty() || id.len() > 11 {
        return Err(format!("{s}: a server ID has 1 to 11 bytes"));
    }
    Ok(HexBytes(id))
}

/// A 16-byte AES key in hex.
fn parse_lb_key(s: &str) -> Result<[u8; 16], String> {
    parse_hex(s)?
        .try_into()
        .map_err(|_| format!("{s}: a key has 16 bytes (32 hex digits)"))
}

fn parse_url(s: &str) -> Result<Url, String> {
    Url::parse(s).map_err(|e| e.to_string())
}

fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) = s.split_once(':').ok_or("expected NAME:VALUE")?;
    let name = name.trim().to_ascii_lowercase();
    if name.is_empty() || name.starts_with(':') {
        return Err("a field name is needed (no pseudo-header)".into());
    }
    Ok((name, value.trim().to_string()))
}

/// Default `--retry-threshold` (see its help).
pub const DEFAULT_RETRY_THRESHOLD: u32 = 100;

/// When the server sends Retry (`--retry`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryMode {
    /// To every client whose Initial carries no token.
    Always,
    /// Only while the half-open connections reach `--retry-threshold`.
    Auto,
    /// Never: every client is accepted at once.
    Never,
}

impl ServerArgs {
    /// The Retry policy, `--no-retry` folded in.
    pub fn retry_mode(&self) -> RetryMode {
        if self.no_retry {
            RetryMode::Never
        } else {
            self.retry
        }
    }
}

/// The server's arguments.
#[derive(Parser, Debug, Clone, PartialEq)]
#[command(
    name = "quiche-server",
    version,
    about = "quiche-server: serves files over HTTP/3 (ALPN h3) and HTTP/0.9 (hq-interop) on one \
             QUIC port.",
    after_help = SERVER_AFTER_HELP,
    max_term_width = 100
)]
pub struct ServerArgs {
    /// UDP address to listen on (`--listen`).
    #[arg(
        long,
        value_name = "ADDR",
        help = "UDP address to listen on, e.g. 127.0.0.1:4433 or [::]:443; port 0 picks a free \
                port. The bound address is printed on stdout as `listening on ADDR`"
    )]
    pub listen: SocketAddr,
    /// Certificate chain (PEM)
    #[arg(long, value_name = "FILE")]
    pub cert: String,
    /// Private key (PEM)
    #[arg(long, value_name = "FILE")]
    pub key: String,
    /// Directory served: `GET /a/b` answers with the bytes of DIR/a/b. Over HTTP/3 with status
    /// 200, content-length and a content-type from the extension (HEAD too), 404 for a missing
    /// file, a directory or a path leaving DIR; POST and PUT bodies are read and answered with
    /// `SIZE SHA256HEX`. Over HTTP/0.9 the bytes then FIN, or a stream reset with 404
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// When a new client's address is validated with a stateless Retry (its token expires in
    /// 10 s; an Initial carrying a valid token is accepted whatever the mode): `always` (every
    /// new client), `auto` (only while the half-open connections, accepted but not through
    /// their handshake yet, number at least --retry-threshold: Retry costs every client a
    /// round trip, so it is kept for when handshake state piles up, as under a flood of
    /// spoofed Initials) or `never`
    #[arg(long, value_name = "MODE", value_enum, default_value_t = RetryMode::Always)]
    pub retry: RetryMode,
    /// The same as `--retry never` (kept for existing scripts)
    #[arg(long = "no-retry", conflicts_with = "retry")]
    pub no_retry: bool,
    /// `--retry auto`: the number of half-open connections from which new clients get a
    /// Retry. Counted per worker with --threads (each worker sees about 1/N of the new
    /// clients). The default, 100, is far above what legitimate traffic keeps half open (a
    /// handshake lasts one or two round trips: 100 at once is about 2,000 new connections a
    /// second at a 50 ms round trip) and 1% of the 10,000-connection limit, so a flood of
    /// Initials triggers Retry long before it can fill the server
    #[arg(
        long,
        value_name = "N",
        default_value_t = DEFAULT_RETRY_THRESHOLD,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub retry_threshold: u32,
    /// QUIC-LB (draft-ietf-quic-load-balancers-21): this server's ID, 1 to 11 bytes in hex.
    /// Every connection ID it issues then encodes it (16-byte IDs: first octet, server ID,
    /// nonce filling the rest), so that a load balancer sharing the configuration routes each
    /// connection to this server by its connection ID alone, across client address changes
    #[arg(long, value_name = "HEX", value_parser = parse_server_id)]
    pub server_id: Option<HexBytes>,
    /// QUIC-LB: the configuration's 16-byte AES key (32 hex digits); without one the server ID
    /// is in clear in the connection IDs. Needs --server-id
    #[arg(long, value_name = "HEX", value_parser = parse_lb_key, requires = "server_id")]
    pub lb_key: Option<[u8; 16]>,
    /// QUIC-LB: the configuration's rotation codepoint, 0 to 6 (the top 3 bits of every
    /// connection ID). Needs --server-id
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        value_parser = clap::value_parser!(u8).range(0..=6),
        requires = "server_id"
    )]
    pub lb_config_id: u8,
    /// Worker threads, each with its own event loop and its own SO_REUSEPORT socket on the
    /// address. Connection IDs encode the owning worker (QUIC-LB, a key shared by the
    /// workers); a worker hands a datagram the kernel gave it for another's connection (after
    /// a client's address change) to that worker. Not with --server-id
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        value_parser = clap::value_parser!(u8).range(1..=64),
        conflicts_with = "server_id"
    )]
    pub threads: u8,
    /// Stateless reset key (RFC 9000 §10.3): the secret in FILE (16 to 4096 bytes; created
    /// with 32 random bytes if missing) keys the reset tokens of the connection IDs this server
    /// issues. Restarted with the same FILE, the server answers a packet of a connection it
    /// lost with a stateless reset, and the client ends the connection at once instead of
    /// waiting for its idle timeout. Without it the key is random per run. Resets are smaller
    /// than the datagram they answer, never sent for datagrams under 37 bytes, and limited to
    /// 3 in a row then 5 a second per client address. Servers sharing FILE must not share
    /// connection IDs (a reset from one ends the other's connection)
    #[arg(long, value_name = "FILE")]
    pub reset_key: Option<PathBuf>,
    /// The transport options.
    #[command(flatten)]
    pub transport: TransportArgs,
}

const SERVER_AFTER_HELP: &str = concat!(
    "\
With RUST_LOG=info (or debug) the server logs its counters when they change, at most four
times a second: `stats: connections=N peak=N half_open=N accepted=N closed=N datagrams=N
retries=N version_negotiations=N invalid_tokens=N unauthenticated=N dropped=N forwarded=N
resets=N resets_limited=N` (half_open: connections whose handshake is not complete, what
`--retry auto` counts; unauthenticated: Initials that would have opened a connection but did
not decrypt; no state is kept; resets: stateless resets sent, resets_limited: withheld by the
limit per address).

",
    "Sizes (N) take an optional K, M or G suffix (powers of 1024).

Environment:
  SSLKEYLOGFILE  append TLS secrets in NSS key log format (for Wireshark/tshark)
  QLOGDIR        write one qlog file per connection into this directory:
                 QLOGDIR/<connection id>-<role>.sqlog (JSON-SEQ, qlog 0.3, which qvis opens)
  RUST_LOG       log filter (error, warn, info, debug, trace); default: warn"
);

/// Parses the server's arguments (without the program name). `Err` is a usage error, or the
/// `--help`/`--version` text: `clap::Error::exit` prints either and exits.
pub fn parse_server(args: impl IntoIterator<Item = String>) -> Result<ServerArgs, clap::Error> {
    ServerArgs::try_parse_from(std::iter::once("quiche-server".to_string()).chain(args))
}

/// The server's usage text (what `--help` prints).
pub fn server_help() -> String {
    ServerArgs::command().render_long_help().to_string()
}

/// The client's command line as clap reads it, before the checks that span several flags.
#[derive(Parser, Debug)]
#[command(
    name = "quiche-client",
    version,
    about = "quiche-client: downloads URLs over HTTP/3 (ALPN h3), or HTTP/0.9 on QUIC (hq-interop).",
    after_help = CLIENT_AFTER_HELP,
    max_term_width = 100
)]
struct ClientCli {
    /// https://host[:port]/path. All URLs share one connection to the first URL's host and
    /// port and are requested in parallel, one bidirectional stream each, as many at a time as
    /// the server's stream limit allows. The host is the server name for SNI and verification
    #[arg(value_name = "URL", required = true, value_parser = parse_url)]
    urls: Vec<Url>,
    /// Trust the CA certificates in FILE (PEM) instead of the system's
    #[arg(long, value_name = "FILE", conflicts_with = "no_verify")]
    ca: Option<String>,
    /// Do not verify the server's certificate
    #[arg(long)]
    no_verify: bool,
    /// Write each body to DIR/<last path segment> (default: discard)
    #[arg(long = "dump-responses", value_name = "DIR")]
    dump_dir: Option<PathBuf>,
    /// Make two connections: the first requests the first URL, the second resumes its TLS
    /// session and requests the others (all URLs again if there is only one); fails unless the
    /// session resumed
    #[arg(long)]
    resume: bool,
    /// With --resume: send the second connection's requests as 0-RTT
    #[arg(long)]
    early_data: bool,
    /// Resume the TLS session saved in FILE, if it exists, and save the newest session there
    /// after the run, for the next process (0-RTT with --early-data). BoringSSL builds only:
    /// refused with rustls, which cannot write a session out (use --resume)
    #[arg(long, value_name = "FILE")]
    session_file: Option<PathBuf>,
    /// Initiate a key update once the body starts arriving
    #[arg(long)]
    key_update: bool,
    /// Move the connection to a new socket (a new local port) mid-transfer: once half the
    /// expected bytes arrived, or after the first MiB when the size is not known (connection
    /// migration, RFC 9000 §9.2)
    #[arg(long)]
    migrate: bool,
    /// First send an Initial with the reserved version 0x1a2a3a4a: the server must answer
    /// with Version Negotiation (the client gives up on that attempt, RFC 9000 §6.2); then
    /// connect with version 1
    #[arg(long)]
    version_negotiation: bool,
    /// Offer only TLS_CHACHA20_POLY1305_SHA256
    #[arg(long)]
    chacha20: bool,
    /// HTTP/0.9 (ALPN hq-interop, `GET /path` lines) instead of HTTP/3 (h3)
    #[arg(long)]
    http09: bool,
    /// HTTP/3 request method [default: GET, or POST with --body]
    #[arg(long, value_name = "METHOD")]
    method: Option<String>,
    /// An extra request header field (repeatable)
    #[arg(long = "header", value_name = "NAME:VALUE", value_parser = parse_header)]
    headers: Vec<(String, String)>,
    /// Send FILE's bytes as the request body of every request (upload); the summary's bytes
    /// then count body bytes in both directions
    #[arg(long, value_name = "FILE")]
    body: Option<PathBuf>,
    #[command(flatten)]
    transport: TransportArgs,
}

const CLIENT_AFTER_HELP: &str = concat!(
    "\
Output: one summary line on stdout when done,
  bytes=<body bytes> secs=<transfer time> mbps=<body rate> handshake_ms=<handshake time>
where secs runs from the start of the connection (handshake included) to its last response
(added up over both connections with --resume), and handshake_ms is the (last) connection's
handshake time, nan if it never completed. On a terminal, a progress bar on stderr (bytes,
rate, and the ETA once every response's content-length is known) for transfers over a second.
Exit status: 0 if every request completed, 1 if any failed (reset stream, connection error,
timeout), 2 for usage errors and options not supported.

",
    "Sizes (N) take an optional K, M or G suffix (powers of 1024).

Environment:
  SSLKEYLOGFILE  append TLS secrets in NSS key log format (for Wireshark/tshark)
  QLOGDIR        write one qlog file per connection into this directory:
                 QLOGDIR/<connection id>-<role>.sqlog (JSON-SEQ, qlog 0.3, which qvis opens)
  RUST_LOG       log filter (error, warn, info, debug, trace); default: warn"
);

/// The client's arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientArgs {
    /// The URLs to download, in order.
    pub urls: Vec<Url>,
    /// `--ca`.
    pub ca: Option<String>,
    /// `--no-verify`.
    pub no_verify: bool,
    /// `--dump-responses`.
    pub dump_dir: Option<PathBuf>,
    /// `--session-file` (refused by [`parse_client`] on rustls; kept so that programs building
    /// `ClientArgs` themselves get the same refusal from `client::run`).
    pub session_file: Option<PathBuf>,
    /// `--resume`.
    pub resume: bool,
    /// `--early-data`.
    pub early_data: bool,
    /// `--key-update`.
    pub key_update: bool,
    /// `--migrate`.
    pub migrate: bool,
    /// `--chacha20`.
    pub chacha20: bool,
    /// `--version-negotiation`.
    pub version_negotiation: bool,
    /// `--http09`: HTTP/0.9 (ALPN hq-interop) instead of HTTP/3.
    pub http09: bool,
    /// `--method` (HTTP/3), upper case.
    pub method: String,
    /// `--header NAME:VALUE`, repeated (HTTP/3).
    pub headers: Vec<(String, String)>,
    /// `--body FILE`: the request body (HTTP/3).
    pub body: Option<PathBuf>,
    /// The transport options.
    pub transport: TransportArgs,
}

/// Parses the client's arguments (without the program name) and checks the rules that span
/// several of them. `Err` is a usage error, or the `--help`/`--version` text:
/// `clap::Error::exit` prints either and exits.
pub fn parse_client(args: impl IntoIterator<Item = String>) -> Result<ClientArgs, clap::Error> {
    let cli = ClientCli::try_parse_from(std::iter::once("quiche-client".to_string()).chain(args))?;
    let usage = |kind: ErrorKind, msg: String| ClientCli::command().error(kind, msg);
    if cli.session_file.is_some() && !sessions_serialize() {
        return Err(usage(
            ErrorKind::ArgumentConflict,
            SESSION_FILE_UNSUPPORTED.into(),
        ));
    }
    if cli.early_data && !cli.resume && cli.session_file.is_none() {
        return Err(usage(
            ErrorKind::MissingRequiredArgument,
            EARLY_DATA_NEEDS_RESUME.into(),
        ));
    }
    let method = match cli.method {
        Some(m) => m.to_ascii_uppercase(),
        None if cli.body.is_some() => "POST".into(),
        None => "GET".into(),
    };
    if cli.http09 && (method != "GET" || !cli.headers.is_empty() || cli.body.is_some()) {
        return Err(usage(
            ErrorKind::ArgumentConflict,
            "--http09 sends GET requests only: no --method, --header or --body".into(),
        ));
    }
    let first = &cli.urls[0];
    if let Some(other) = cli.urls.iter().find(|u| !u.same_origin(first)) {
        return Err(usage(
            ErrorKind::ValueValidation,
            format!(
                "all URLs must share one host and port (one connection): {} vs {}",
                other.authority(),
                first.authority()
            ),
        ));
    }
    Ok(ClientArgs {
        urls: cli.urls,
        ca: cli.ca,
        no_verify: cli.no_verify,
        dump_dir: cli.dump_dir,
        session_file: cli.session_file,
        resume: cli.resume,
        early_data: cli.early_data,
        key_update: cli.key_update,
        migrate: cli.migrate,
        chacha20: cli.chacha20,
        version_negotiation: cli.version_negotiation,
        http09: cli.http09,
        method,
        headers: cli.headers,
        body: cli.body,
        transport: cli.transport,
    })
}

/// The client's usage text (what `--help` prints).
pub fn client_help() -> String {
    ClientCli::command().render_long_help().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    fn client_err(s: &[&str]) -> clap::Error {
        parse_client(strings(s)).unwrap_err()
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("4M"), Some(4 << 20));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("M"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("1.5M"), None);
        assert_eq!(parse_size("99999999999999999999"), None);
        assert_eq!(parse_size("17179869184G"), None);
    }

    #[test]
    fn quic_versions_parse_in_hex_or_decimal() {
        assert_eq!(parse_quic_version("0x6b3343cf"), Ok(0x6b33_43cf));
        assert_eq!(parse_quic_version("1"), Ok(1));
        assert_eq!(parse_quic_version("0x00000001"), Ok(1));
        assert!(parse_quic_version("0x1a2a3a4a").is_err());
        assert!(parse_quic_version("2").is_err());
        assert!(parse_quic_version("v2").is_err());
        let args = parse_server(
            [
                "--listen",
                "127.0.0.1:4433",
                "--cert",
                "c",
                "--key",
                "k",
                "--root",
                ".",
                "--compatible-versions",
                "0x6b3343cf,1",
                "--quic-version",
                "0x6b3343cf",
            ]
            .iter()
            .map(|s| s.to_string()),
        )
        .unwrap();
        assert_eq!(args.transport.compatible_versions, vec![0x6b33_43cf, 1]);
        assert_eq!(args.transport.quic_version, Some(0x6b33_43cf));
    }

    #[test]
    fn the_command_definitions_are_consistent() {
        ServerArgs::command().debug_assert();
        ClientCli::command().debug_assert();
    }

    #[test]
    fn quic_lb_arguments() {
        let base = ["--listen=[::1]:0", "--cert=c", "--key=k", "--root=r"];
        let parse = |extra: &[&str]| {
            let mut v = strings(&base);
            v.extend(strings(extra));
            parse_server(v)
        };
        let a = parse(&["--server-id", "0a0B", "--lb-key", &"42".repeat(16)]).unwrap();
        assert_eq!(a.server_id, Some(HexBytes(vec![0x0a, 0x0b])));
        assert_eq!(a.lb_key, Some([0x42; 16]));
        assert_eq!(a.lb_config_id, 0);
        let a = parse(&["--server-id=01", "--lb-config-id=6"]).unwrap();
        assert_eq!((a.lb_key, a.lb_config_id), (None, 6));
        // Odd digits, too long an ID, a short key, the reserved codepoint, no server ID.
        assert!(parse(&["--server-id=abc"]).is_err());
        assert!(parse(&["--server-id", &"11".repeat(12)]).is_err());
        assert!(parse(&["--server-id=01", "--lb-key=0011"]).is_err());
        assert!(parse(&["--server-id=01", "--lb-config-id=7"]).is_err());
        assert!(parse(&["--lb-config-id=1"]).is_err());
        assert!(parse(&["--lb-key", &"42".repeat(16)]).is_err());
    }

    #[test]
    fn server_arguments() {
        let a = parse_server(strings(&[
            "--listen",
            "127.0.0.1:4433",
            "--cert=c.pem",
            "--key",
            "k.pem",
            "--root",
            "/srv",
            "--no-retry",
            "--cc-algorithm",
            "reno",
            "--max-data",
            "8M",
            "--idle-timeout",
            "500",
            "--disable-pacing",
            "--disable-gso",
            "--ack-frequency",
        ]))
        .unwrap();
        assert_eq!(a.listen, "127.0.0.1:4433".parse().unwrap());
        assert_eq!(a.cert, "c.pem");
        assert_eq!(a.key, "k.pem");
        assert_eq!(a.root, PathBuf::from("/srv"));
        assert_eq!(a.retry_mode(), RetryMode::Never);
        assert_eq!(a.server_id, None);
        assert_eq!(a.transport.cc_algorithm.as_deref(), Some("reno"));
        assert_eq!(a.transport.max_data, 8 << 20);
        assert_eq!(a.transport.idle_timeout_ms, 500);
        assert!(a.transport.disable_pacing);
        assert!(a.transport.disable_gso);
        assert!(a.transport.ack_frequency);
        assert!(!a.transport.disable_ack_frequency);
        assert!(!a.transport.disable_hystart);
    }

    #[test]
    fn ack_frequency_flags_are_exclusive() {
        let base = ["--listen=[::1]:0", "--cert=c", "--key=k", "--root=r"];
        let a = parse_server(strings(&base)).unwrap();
        assert!(!a.transport.disable_ack_frequency);
        let mut off = base.to_vec();
        off.push("--disable-ack-frequency");
        assert!(
            parse_server(strings(&off))
                .unwrap()
                .transport
                .disable_ack_frequency
        );
        off.push("--ack-frequency");
        assert!(
            parse_server(strings(&off)).is_err(),
            "the two contradict each other"
        );
    }

    #[test]
    fn retry_takes_a_mode_and_no_retry_is_never() {
        let base = ["--listen=[::1]:0", "--cert=c", "--key=k", "--root=r"];
        let with = |extra: &[&str]| {
            let mut args: Vec<&str> = base.to_vec();
            args.extend(extra);
            parse_server(strings(&args))
        };
        for (flag, mode) in [
            ("always", RetryMode::Always),
            ("auto", RetryMode::Auto),
            ("never", RetryMode::Never),
        ] {
            assert_eq!(with(&["--retry", flag]).unwrap().retry_mode(), mode);
        }
        let a = with(&["--retry=auto", "--retry-threshold", "5"]).unwrap();
        assert_eq!((a.retry_mode(), a.retry_threshold), (RetryMode::Auto, 5));
        assert_eq!(
            with(&["--no-retry"]).unwrap().retry_mode(),
            RetryMode::Never
        );
        // An unknown mode, a zero threshold, and both spellings at once are usage errors.
        for bad in [
            &["--retry", "sometimes"][..],
            &["--retry-threshold", "0"],
            &["--no-retry", "--retry", "always"],
        ] {
            assert_eq!(with(bad).unwrap_err().exit_code(), 2, "{bad:?}");
        }
    }

    #[test]
    fn slow_start_takes_a_strategy_name() {
        let base = ["--listen=[::1]:0", "--cert=c", "--key=k", "--root=r"];
        let mut args: Vec<&str> = base.to_vec();
        args.extend(["--slow-start", "search"]);
        let a = parse_server(strings(&args)).unwrap();
        assert_eq!(a.transport.slow_start.as_deref(), Some("search"));
        assert!(crate::setup::config(&a.transport, &[b"h3"]).is_ok());
        let mut args: Vec<&str> = base.to_vec();
        args.extend(["--slow-start", "fastest"]);
        assert!(parse_server(strings(&args)).is_err());
        assert_eq!(
            parse_server(strings(&base)).unwrap().transport.slow_start,
            None
        );
    }

    #[test]
    fn bbr_is_a_congestion_control_name() {
        let base = ["--listen=[::1]:0", "--cert=c", "--key=k", "--root=r"];
        for name in ["bbr", "bbr2"] {
            let mut args: Vec<&str> = base.to_vec();
            args.extend(["--cc-algorithm", name]);
            let a = parse_server(strings(&args)).unwrap();
            assert_eq!(a.transport.cc_algorithm.as_deref(), Some(name));
            assert!(crate::setup::config(&a.transport, &[b"h3"]).is_ok());
        }
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let a = parse_server(strings(&[
            "--listen=[::1]:0",
            "--cert=c",
            "--key=k",
            "--root=r",
        ]))
        .unwrap();
        assert_eq!(a.retry_mode(), RetryMode::Always);
        assert_eq!(a.retry_threshold, DEFAULT_RETRY_THRESHOLD);
        assert_eq!(a.transport, TransportArgs::default());
        let c = parse_client(strings(&["https://h/x"])).unwrap();
        assert_eq!(c.transport, TransportArgs::default());
        assert_eq!(c.method, "GET");
        assert!(!c.http09 && !c.resume && !c.no_verify && c.ca.is_none());
    }

    #[test]
    fn server_errors_name_the_flag() {
        let help = parse_server(strings(&["--help"])).unwrap_err();
        assert_eq!(help.kind(), ErrorKind::DisplayHelp);
        assert_eq!(help.exit_code(), 0);
        let version = parse_server(strings(&["--version"])).unwrap_err();
        assert_eq!(version.kind(), ErrorKind::DisplayVersion);
        for (args, needle) in [
            (&["--listen", "127.0.0.1:1"][..], "--cert"),
            (&["--listen", "localhost"], "--listen"),
            (&["--frobnicate"], "--frobnicate"),
            (&["--cc-algorithm", "vegas"], "vegas"),
            (&["--max-data"], "--max-data"),
            (&["--max-data", "lots"], "--max-data"),
            (&["--max-udp-payload", "1000"], "1200"),
        ] {
            let e = parse_server(strings(args)).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert!(e.to_string().contains(needle), "{args:?}: {e}");
        }
    }

    #[test]
    fn client_arguments() {
        let a = parse_client(strings(&[
            "--ca",
            "root.pem",
            "https://localhost:4433/a",
            "--dump-responses",
            "/tmp/out",
            "https://localhost:4433/b/c",
            "--resume",
            "--early-data",
            "--initial-cwnd-packets",
            "32",
            "--max-udp-payload=1200",
            "--",
            "https://localhost:4433/-dash",
        ]))
        .unwrap();
        assert_eq!(a.urls.len(), 3);
        assert_eq!(a.urls[1].path, "/b/c");
        assert_eq!(a.urls[2].path, "/-dash");
        assert_eq!(a.ca.as_deref(), Some("root.pem"));
        assert_eq!(a.dump_dir, Some(PathBuf::from("/tmp/out")));
        assert!(a.resume && a.early_data && !a.key_update && !a.chacha20);
        assert_eq!(a.transport.initial_cwnd_packets, Some(32));
        assert_eq!(a.transport.max_udp_payload, 1200);
        assert!(!a.transport.disable_gso);
    }

    #[test]
    fn client_http3_options() {
        let a = parse_client(strings(&[
            "--method",
            "put",
            "--header",
            " X-Test : one ",
            "--header=accept:*/*",
            "--body",
            "f.bin",
            "https://h/x",
        ]))
        .unwrap();
        assert_eq!(a.method, "PUT");
        assert_eq!(
            a.headers,
            vec![
                ("x-test".to_string(), "one".to_string()),
                ("accept".to_string(), "*/*".to_string())
            ]
        );
        let post = parse_client(strings(&["--body", "f", "https://h/x"])).unwrap();
        assert_eq!(post.method, "POST");
        let get = parse_client(strings(&["--http09", "--method", "get", "https://h/x"])).unwrap();
        assert!(get.http09);
    }

    #[test]
    fn client_errors_name_the_flag() {
        assert_eq!(client_err(&[]).kind(), ErrorKind::MissingRequiredArgument);
        for (args, needle) in [
            (&["https://a:1/x", "https://b:1/y"][..], "one host"),
            (&["--ca", "x", "--no-verify", "https://a/x"], "--no-verify"),
            (&["http://a/x"], "http://a/x"),
            (&["--header", "novalue", "https://a/x"], "--header"),
            (&["--header", ":path:/", "https://a/x"], "pseudo-header"),
            (&["--http09", "--method", "POST", "https://a/x"], "--http09"),
            (&["--early-data", "https://a/x"], "--resume"),
        ] {
            let e = client_err(args);
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert!(e.to_string().contains(needle), "{args:?}: {e}");
        }
        assert_eq!(client_err(&["-h"]).kind(), ErrorKind::DisplayHelp);
        assert_eq!(client_err(&["--version"]).exit_code(), 0);
        // A session file needs a TLS stack that writes sessions out.
        let file =
            parse_client(["--session-file", "s", "--early-data", "https://a/x"].map(String::from));
        if sessions_serialize() {
            let args = file.unwrap();
            assert!(args.early_data && args.session_file.is_some());
        } else {
            let e = file.unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains("rustls"), "{e}");
        }
    }

    #[test]
    fn help_texts_document_every_flag() {
        let server = server_help();
        for flag in [
            "--listen",
            "--cert",
            "--key",
            "--root",
            "--no-retry",
            "--retry <MODE>",
            "--retry-threshold",
            "h3",
        ] {
            assert!(server.contains(flag), "{flag}");
        }
        let client = client_help();
        for flag in [
            "--ca",
            "--no-verify",
            "--dump-responses",
            "--session-file",
            "--resume",
            "--early-data",
            "--key-update",
            "--version-negotiation",
            "--chacha20",
            "--http09",
            "--method",
            "--header",
            "--body",
            "h3",
            "bytes=<body bytes> secs=<transfer time> mbps=<body rate> handshake_ms=<handshake time>",
        ] {
            assert!(client.contains(flag), "{flag}");
        }
        for flag in [
            "--cc-algorithm",
            "--disable-hystart",
            "--slow-start",
            "--initial-cwnd-packets",
            "--disable-pacing",
            "--ack-frequency",
            "--disable-ack-frequency",
            "--max-data",
            "--max-stream-data",
            "--max-window",
            "--max-stream-window",
            "--idle-timeout",
            "--max-udp-payload",
            "--disable-gso",
            "--quic-version",
            "--compatible-versions",
            "--help",
            "--version",
            "SSLKEYLOGFILE",
            "QLOGDIR",
        ] {
            assert!(server.contains(flag) && client.contains(flag), "{flag}");
        }
        // QLOGDIR is written (no "reserved" text left from before the library wrote qlog).
        assert!(!client.contains("reserved for"));
    }
}
