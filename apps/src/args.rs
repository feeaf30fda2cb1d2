//! Command-line parsing for both programs, by hand (no argument-parsing crate is among the
//! project's dependencies), and the `--help` texts, which are the programs' documentation.

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::http09::Url;

/// Default initial connection receive window (`--max-data`).
pub const DEFAULT_MAX_DATA: u64 = 10_000_000;
/// Default initial stream receive window (`--max-stream-data`).
pub const DEFAULT_MAX_STREAM_DATA: u64 = 1_000_000;
/// Default idle timeout in milliseconds (`--idle-timeout`).
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 30_000;
/// Default largest UDP payload sent (`--max-udp-payload`): fits common 1500-byte MTUs with
/// room for tunnels, like quiche's apps.
pub const DEFAULT_MAX_UDP_PAYLOAD: usize = 1350;

/// The transport options both programs accept.
const TRANSPORT_HELP: &str = "\
Transport options (client and server):
  --cc-algorithm NAME       congestion control: reno or cubic (default: cubic)
  --disable-hystart         turn HyStart++ off (default: on)
  --initial-cwnd-packets N  initial congestion window in packets (default: 10)
  --disable-pacing          turn pacing off (default: on; datagrams are sent at SendInfo.at)
  --max-data N              initial connection receive window in bytes (default: 10000000)
  --max-stream-data N       initial stream receive window in bytes (default: 1000000)
  --max-window N            ceiling of the auto-tuned connection window (default: 24M)
  --max-stream-window N     ceiling of the auto-tuned stream window (default: 16M)
  --idle-timeout MS         idle timeout in milliseconds, 0 for none (default: 30000)
  --max-udp-payload N       largest UDP payload to send, at least 1200 (default: 1350)
  --disable-gso             send and receive without UDP GSO/GRO (default: on where the
                            kernel has them, Linux 5.0 and later): batches of datagrams go
                            through sendmmsg/recvmmsg instead
Sizes take an optional K, M or G suffix (powers of 1024).

Environment:
  SSLKEYLOGFILE  append TLS secrets in NSS key log format (for Wireshark/tshark)
  QLOGDIR        write one qlog file (JSON-SEQ, qvis opens it) per connection into this directory
  RUST_LOG       log filter (error, warn, info, debug, trace); default: warn
";

/// The server's usage text.
pub fn server_help() -> String {
    format!(
        "\
quiche-server: serves files over HTTP/3 (ALPN h3) and HTTP/0.9 (hq-interop) on one QUIC port.

Usage: quiche-server --listen ADDR --cert FILE --key FILE --root DIR [options]

  --listen ADDR   UDP address to listen on, e.g. 127.0.0.1:4433 or [::]:443; port 0 picks a
                  free port. The bound address is printed on stdout as `listening on ADDR`.
  --cert FILE     certificate chain (PEM)
  --key FILE      private key (PEM)
  --root DIR      directory served: `GET /a/b` answers with the bytes of DIR/a/b. Over
                  HTTP/3 with status 200, content-length and a content-type from the
                  extension (HEAD too), 404 for a missing file, a directory or a path leaving
                  DIR; POST and PUT bodies are read and answered with `SIZE SHA256HEX`. Over
                  HTTP/0.9 the bytes then FIN, or a stream reset with 404
  --no-retry      accept clients without a Retry round trip (default: every new client's
                  address is validated with a stateless Retry whose token expires in 10 s)
  -h, --help      this text

With RUST_LOG=info (or debug) the server logs its counters when they change, at most four
times a second: `stats: connections=N peak=N accepted=N closed=N datagrams=N retries=N
version_negotiations=N invalid_tokens=N unauthenticated=N dropped=N` (unauthenticated:
Initials that would have opened a connection but did not decrypt; no state is kept).

{TRANSPORT_HELP}"
    )
}

/// The client's usage text.
pub fn client_help() -> String {
    format!(
        "\
quiche-client: downloads URLs over HTTP/3 (ALPN h3), or HTTP/0.9 on QUIC (hq-interop).

Usage: quiche-client [options] URL...

All URLs (https://host[:port]/path) share one connection to the first URL's host and port
and are requested in parallel, one bidirectional stream each, as many at a time as the
server's stream limit allows. The host is the server name for SNI and verification.

  --ca FILE               trust the CA certificates in FILE (PEM) instead of the system's
  --no-verify             do not verify the server's certificate
  --dump-responses DIR    write each body to DIR/<last path segment> (default: discard)
  --resume                make two connections: the first requests the first URL, the
                          second resumes its TLS session and requests the others (all URLs
                          again if there is only one); fails unless the session resumed
  --early-data            with --resume: send the second connection's requests as 0-RTT
  --session-file FILE     store/load the session in FILE across runs (not supported yet:
                          sessions are only valid within one process; use --resume)
  --key-update            initiate a key update once the body starts arriving
  --version-negotiation   first send an Initial with the reserved version 0x1a2a3a4a: the
                          server must answer with Version Negotiation (the client gives up on
                          that attempt, RFC 9000 §6.2); then connect with version 1
  --chacha20              offer only TLS_CHACHA20_POLY1305_SHA256
  --http09                HTTP/0.9 (ALPN hq-interop, `GET /path` lines) instead of HTTP/3
  --method METHOD         HTTP/3 request method (default: GET, or POST with --body)
  --header NAME:VALUE     an extra request header field (repeatable)
  --body FILE             send FILE's bytes as the request body of every request (upload);
                          the summary's bytes then count body bytes in both directions
  -h, --help              this text

Output: one summary line on stdout when done,
  bytes=<body bytes> secs=<transfer time> mbps=<body rate> handshake_ms=<handshake time>
where secs runs from the start of the connection (handshake included) to its last response
(added up over both connections with --resume), and handshake_ms is the (last) connection's
handshake time, nan if it never completed; a progress line on stderr when it is a terminal
and the transfer takes over a second.
Exit status: 0 if every request completed, 1 if any failed (reset stream, connection error,
timeout), 2 for usage errors and options not supported yet.

{TRANSPORT_HELP}"
    )
}

/// A command-line error, shown with a pointer to `--help`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgError {}

fn err<T>(msg: impl Into<String>) -> Result<T, ArgError> {
    Err(ArgError(msg.into()))
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command<T> {
    /// Print the usage text and exit.
    Help,
    /// Run with these arguments.
    Run(T),
}

/// The transport options of both programs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportArgs {
    /// `--cc-algorithm`.
    pub cc_algorithm: Option<String>,
    /// `--disable-hystart`.
    pub disable_hystart: bool,
    /// `--initial-cwnd-packets`.
    pub initial_cwnd_packets: Option<usize>,
    /// `--disable-pacing`.
    pub disable_pacing: bool,
    /// `--max-data`.
    pub max_data: u64,
    /// `--max-stream-data`.
    pub max_stream_data: u64,
    /// `--max-window`.
    pub max_window: Option<u64>,
    /// `--max-stream-window`.
    pub max_stream_window: Option<u64>,
    /// `--idle-timeout`, in milliseconds.
    pub idle_timeout_ms: u64,
    /// `--max-udp-payload`.
    pub max_udp_payload: usize,
    /// `--disable-gso` (also turns GRO off).
    pub disable_gso: bool,
}

impl Default for TransportArgs {
    fn default() -> Self {
        TransportArgs {
            cc_algorithm: None,
            disable_hystart: false,
            initial_cwnd_packets: None,
            disable_pacing: false,
            max_data: DEFAULT_MAX_DATA,
            max_stream_data: DEFAULT_MAX_STREAM_DATA,
            max_window: None,
            max_stream_window: None,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            max_udp_payload: DEFAULT_MAX_UDP_PAYLOAD,
            disable_gso: false,
        }
    }
}

impl TransportArgs {
    /// Consumes `flag` (and its value) if it is a transport option; `Ok(false)` if it is not.
    fn parse_flag(&mut self, flag: &str, args: &mut ArgList) -> Result<bool, ArgError> {
        match flag {
            "--cc-algorithm" => {
                let name = args.value(flag)?;
                if !matches!(name.as_str(), "reno" | "cubic") {
                    return err(format!("--cc-algorithm: unknown algorithm {name:?}"));
                }
                self.cc_algorithm = Some(name);
            }
            "--disable-hystart" => self.disable_hystart = true,
            "--initial-cwnd-packets" => {
                let n = args.number(flag)?;
                self.initial_cwnd_packets = Some(to_usize(flag, n)?);
            }
            "--disable-pacing" => self.disable_pacing = true,
            "--disable-gso" => self.disable_gso = true,
            "--max-data" => self.max_data = args.number(flag)?,
            "--max-stream-data" => self.max_stream_data = args.number(flag)?,
            "--max-window" => self.max_window = Some(args.number(flag)?),
            "--max-stream-window" => self.max_stream_window = Some(args.number(flag)?),
            "--idle-timeout" => self.idle_timeout_ms = args.number(flag)?,
            "--max-udp-payload" => {
                let n = to_usize(flag, args.number(flag)?)?;
                if !(1200..=65527).contains(&n) {
                    return err("--max-udp-payload: must be between 1200 and 65527");
                }
                self.max_udp_payload = n;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

fn to_usize(flag: &str, n: u64) -> Result<usize, ArgError> {
    usize::try_from(n).or_else(|_| err(format!("{flag}: value too large")))
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

/// The remaining arguments, with `--flag=value` split into two.
struct ArgList(VecDeque<String>);

impl ArgList {
    fn new(args: impl IntoIterator<Item = String>) -> Self {
        let mut list = VecDeque::new();
        let mut options_done = false;
        for arg in args {
            match arg.split_once('=') {
                Some((flag, value)) if !options_done && flag.starts_with("--") => {
                    list.push_back(flag.to_string());
                    list.push_back(value.to_string());
                }
                _ => {
                    options_done |= arg == "--";
                    list.push_back(arg);
                }
            }
        }
        ArgList(list)
    }

    fn next(&mut self) -> Option<String> {
        self.0.pop_front()
    }

    fn value(&mut self, flag: &str) -> Result<String, ArgError> {
        match self.0.pop_front() {
            Some(v) => Ok(v),
            None => err(format!("{flag}: missing value")),
        }
    }

    fn number(&mut self, flag: &str) -> Result<u64, ArgError> {
        let v = self.value(flag)?;
        match parse_size(&v) {
            Some(n) => Ok(n),
            None => err(format!("{flag}: not a number: {v:?}")),
        }
    }
}

/// The server's arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerArgs {
    /// `--listen`.
    pub listen: SocketAddr,
    /// `--cert`.
    pub cert: String,
    /// `--key`.
    pub key: String,
    /// `--root`.
    pub root: PathBuf,
    /// Whether new clients get a Retry (not `--no-retry`).
    pub retry: bool,
    /// The transport options.
    pub transport: TransportArgs,
}

/// Parses the server's arguments (without the program name).
pub fn parse_server(
    args: impl IntoIterator<Item = String>,
) -> Result<Command<ServerArgs>, ArgError> {
    let mut args = ArgList::new(args);
    let (mut listen, mut cert, mut key, mut root) = (None, None, None, None);
    let mut retry = true;
    let mut transport = TransportArgs::default();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--listen" => {
                let v = args.value(&flag)?;
                match v.parse::<SocketAddr>() {
                    Ok(a) => listen = Some(a),
                    Err(_) => return err(format!("--listen: not an IP address and port: {v:?}")),
                }
            }
            "--cert" => cert = Some(args.value(&flag)?),
            "--key" => key = Some(args.value(&flag)?),
            "--root" => root = Some(PathBuf::from(args.value(&flag)?)),
            "--no-retry" => retry = false,
            _ if transport.parse_flag(&flag, &mut args)? => {}
            _ => return err(format!("unknown argument {flag:?}")),
        }
    }
    Ok(Command::Run(ServerArgs {
        listen: listen.map_or_else(|| err("--listen is required"), Ok)?,
        cert: cert.map_or_else(|| err("--cert is required"), Ok)?,
        key: key.map_or_else(|| err("--key is required"), Ok)?,
        root: root.map_or_else(|| err("--root is required"), Ok)?,
        retry,
        transport,
    }))
}

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
    /// `--session-file`.
    pub session_file: Option<PathBuf>,
    /// `--resume`.
    pub resume: bool,
    /// `--early-data`.
    pub early_data: bool,
    /// `--key-update`.
    pub key_update: bool,
    /// `--chacha20`.
    pub chacha20: bool,
    /// `--version-negotiation`.
    pub version_negotiation: bool,
    /// `--http09`: HTTP/0.9 (ALPN hq-interop) instead of HTTP/3.
    pub http09: bool,
    /// `--method` (HTTP/3).
    pub method: String,
    /// `--header NAME:VALUE`, repeated (HTTP/3).
    pub headers: Vec<(String, String)>,
    /// `--body FILE`: the request body (HTTP/3).
    pub body: Option<PathBuf>,
    /// The transport options.
    pub transport: TransportArgs,
}

/// Parses the client's arguments (without the program name).
pub fn parse_client(
    args: impl IntoIterator<Item = String>,
) -> Result<Command<ClientArgs>, ArgError> {
    let mut args = ArgList::new(args);
    let mut c = ClientArgs {
        urls: Vec::new(),
        ca: None,
        no_verify: false,
        dump_dir: None,
        session_file: None,
        resume: false,
        early_data: false,
        key_update: false,
        chacha20: false,
        version_negotiation: false,
        http09: false,
        method: String::new(),
        headers: Vec::new(),
        body: None,
        transport: TransportArgs::default(),
    };
    let mut only_urls = false;
    while let Some(arg) = args.next() {
        if only_urls || !arg.starts_with('-') {
            match Url::parse(&arg) {
                Ok(url) => c.urls.push(url),
                Err(e) => return err(format!("{arg:?}: {e}")),
            }
            continue;
        }
        match arg.as_str() {
            "--" => only_urls = true,
            "-h" | "--help" => return Ok(Command::Help),
            "--ca" => c.ca = Some(args.value(&arg)?),
            "--no-verify" => c.no_verify = true,
            "--dump-responses" => c.dump_dir = Some(PathBuf::from(args.value(&arg)?)),
            "--session-file" => c.session_file = Some(PathBuf::from(args.value(&arg)?)),
            "--resume" => c.resume = true,
            "--early-data" => c.early_data = true,
            "--key-update" => c.key_update = true,
            "--chacha20" => c.chacha20 = true,
            "--version-negotiation" => c.version_negotiation = true,
            "--http09" => c.http09 = true,
            "--method" => c.method = args.value(&arg)?.to_ascii_uppercase(),
            "--header" => {
                let v = args.value(&arg)?;
                let Some((name, value)) = v.split_once(':') else {
                    return err(format!("--header {v:?}: expected NAME:VALUE"));
                };
                let name = name.trim().to_ascii_lowercase();
                if name.is_empty() || name.starts_with(':') {
                    return err(format!(
                        "--header {v:?}: a field name is needed (no pseudo-header)"
                    ));
                }
                c.headers.push((name, value.trim().to_string()));
            }
            "--body" => c.body = Some(PathBuf::from(args.value(&arg)?)),
            _ if c.transport.parse_flag(&arg, &mut args)? => {}
            _ => return err(format!("unknown argument {arg:?}")),
        }
    }
    if c.urls.is_empty() {
        return err("no URL given");
    }
    if c.method.is_empty() {
        c.method = if c.body.is_some() { "POST" } else { "GET" }.to_string();
    }
    if c.http09 && (c.method != "GET" || !c.headers.is_empty() || c.body.is_some()) {
        return err("--http09 sends GET requests only: no --method, --header or --body");
    }
    if c.ca.is_some() && c.no_verify {
        return err("--ca and --no-verify exclude each other");
    }
    let first = &c.urls[0];
    if let Some(other) = c.urls.iter().find(|u| !u.same_origin(first)) {
        return err(format!(
            "all URLs must share one host and port (one connection): {} vs {}",
            other.authority(),
            first.authority()
        ));
    }
    Ok(Command::Run(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
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
    fn server_arguments() {
        let cmd = parse_server(strings(&[
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
        ]))
        .unwrap();
        let Command::Run(a) = cmd else {
            panic!("expected Run")
        };
        assert_eq!(a.listen, "127.0.0.1:4433".parse().unwrap());
        assert_eq!(a.cert, "c.pem");
        assert_eq!(a.key, "k.pem");
        assert_eq!(a.root, PathBuf::from("/srv"));
        assert!(!a.retry);
        assert_eq!(a.transport.cc_algorithm.as_deref(), Some("reno"));
        assert_eq!(a.transport.max_data, 8 << 20);
        assert_eq!(a.transport.idle_timeout_ms, 500);
        assert!(a.transport.disable_pacing);
        assert!(a.transport.disable_gso);
        assert!(!a.transport.disable_hystart);
    }

    #[test]
    fn server_errors() {
        assert_eq!(parse_server(strings(&["--help"])), Ok(Command::Help));
        let missing = parse_server(strings(&["--listen", "127.0.0.1:1"])).unwrap_err();
        assert!(missing.0.contains("--cert"), "{missing}");
        let bad = parse_server(strings(&["--listen", "localhost"])).unwrap_err();
        assert!(bad.0.contains("--listen"), "{bad}");
        let unknown = parse_server(strings(&["--frobnicate"])).unwrap_err();
        assert!(unknown.0.contains("--frobnicate"));
        let algo = parse_server(strings(&["--cc-algorithm", "bbr"])).unwrap_err();
        assert!(algo.0.contains("bbr"));
        let value = parse_server(strings(&["--max-data"])).unwrap_err();
        assert!(value.0.contains("missing value"));
    }

    #[test]
    fn client_arguments() {
        let Command::Run(a) = parse_client(strings(&[
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
            "--",
            "https://localhost:4433/-dash",
        ]))
        .unwrap() else {
            panic!("expected Run")
        };
        assert_eq!(a.urls.len(), 3);
        assert_eq!(a.urls[1].path, "/b/c");
        assert_eq!(a.urls[2].path, "/-dash");
        assert_eq!(a.ca.as_deref(), Some("root.pem"));
        assert_eq!(a.dump_dir, Some(PathBuf::from("/tmp/out")));
        assert!(a.resume && a.early_data && !a.key_update && !a.chacha20);
        assert_eq!(a.transport.initial_cwnd_packets, Some(32));
        assert!(!a.transport.disable_gso);
    }

    #[test]
    fn client_errors() {
        assert!(parse_client(strings(&[])).unwrap_err().0.contains("no URL"));
        let mixed = parse_client(strings(&["https://a:1/x", "https://b:1/y"])).unwrap_err();
        assert!(mixed.0.contains("one host"), "{mixed}");
        let both = parse_client(strings(&["--ca", "x", "--no-verify", "https://a/x"])).unwrap_err();
        assert!(both.0.contains("exclude"));
        assert!(parse_client(strings(&["http://a/x"])).is_err());
        assert_eq!(parse_client(strings(&["-h"])), Ok(Command::Help));
    }

    #[test]
    fn help_texts_document_every_flag() {
        let server = server_help();
        for flag in ["--listen", "--cert", "--key", "--root", "--no-retry"] {
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
            "--chacha20",
        ] {
            assert!(client.contains(flag), "{flag}");
        }
        for flag in [
            "--cc-algorithm",
            "--disable-hystart",
            "--initial-cwnd-packets",
            "--disable-pacing",
            "--max-data",
            "--max-stream-data",
            "--max-window",
            "--max-stream-window",
            "--idle-timeout",
            "--max-udp-payload",
            "--disable-gso",
            "SSLKEYLOGFILE",
            "QLOGDIR",
        ] {
            assert!(server.contains(flag) && client.contains(flag), "{flag}");
        }
    }
}
