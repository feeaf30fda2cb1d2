//! The client's event loop: one connection (two with `--resume`) fetching every URL.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use quiche::{Config, Connection, Error, RecvInfo};

use crate::args::ClientArgs;
use crate::downloads::{Downloads, Failure, H3Request, Protocol};
use crate::http09::Url;
use crate::progress::Progress;
use crate::send_queue::{flush, Flush, SendBuffers, SendQueue};
use crate::setup::{self, KeyLog};
use crate::udp::{RecvBatch, UdpIo};

/// Exit status: every request completed.
pub const EXIT_OK: i32 = 0;
/// Exit status: some request or the connection failed.
pub const EXIT_FAILED: i32 = 1;
/// Exit status: bad usage, or an option the library cannot support.
pub const EXIT_USAGE: i32 = 2;

/// Datagrams read before the loop turns to reading streams and sending (ACKs).
const RECV_BATCH: usize = 512;

/// Size of the buffer bodies are read into.
const BODY_BUF: usize = 256 * 1024;

const SOCKET: Token = Token(0);
/// The second socket of `--migrate`.
const SOCKET2: Token = Token(1);

/// Bytes received before `--migrate` moves when the download's size is not known.
const MIGRATE_AFTER_UNKNOWN: u64 = 1 << 20;

/// The version `--version-negotiation` starts with: reserved (0x?a?a?a?a, RFC 9000 §15), so
/// no server speaks it.
const RESERVED_VERSION: u32 = 0x1a2a_3a4a;

/// How long `--version-negotiation` waits for the server's Version Negotiation packet.
const VN_PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// `Connection::early_data_reason` when the server accepted 0-RTT (BoringSSL's
/// `ssl_early_data_accepted`, as quiche reports it).
const EARLY_DATA_ACCEPTED: u32 = 2;

/// Why the client stopped before or outside the requests.
#[derive(Debug)]
pub enum ClientError {
    /// An option the library cannot support (exit status 2).
    NotSupported(String),
    /// Setup or I/O failed (exit status 1).
    Fatal(String),
}

impl ClientError {
    /// The exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            ClientError::NotSupported(_) => EXIT_USAGE,
            ClientError::Fatal(_) => EXIT_FAILED,
        }
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::NotSupported(m) => write!(f, "not supported: {m}"),
            ClientError::Fatal(m) => f.write_str(m),
        }
    }
}

fn fatal(e: impl std::fmt::Display) -> ClientError {
    ClientError::Fatal(e.to_string())
}

/// What one connection achieved.
#[derive(Debug, Default)]
pub struct ConnReport {
    /// Body bytes received.
    pub bytes: u64,
    /// Requests completed.
    pub completed: usize,
    /// Requests made.
    pub requested: usize,
    /// When the handshake completed, after the connection started.
    pub handshake: Option<Duration>,
    /// When the last request ended, after the connection started.
    pub transfer: Duration,
    /// Whether the TLS session was resumed.
    pub resumed: bool,
    /// Whether requests were sent as 0-RTT data.
    pub early_data: bool,
    /// Whether the server accepted the 0-RTT data (`early_data_reason` 2, BoringSSL's
    /// `ssl_early_data_accepted`).
    pub early_data_accepted: bool,
    /// The session to resume later.
    pub session: Option<Vec<u8>>,
}

/// The result of a run: the summary line's numbers and whether everything completed.
#[derive(Debug, Default)]
pub struct Summary {
    /// Body bytes over all connections.
    pub bytes: u64,
    /// Transfer time: from the start of each connection to its last response, added up.
    pub secs: f64,
    /// The handshake time of the last connection.
    pub handshake_ms: Option<f64>,
    /// Whether every request completed (and, with `--resume`, the session resumed).
    pub success: bool,
}

impl Summary {
    /// The summary line: `bytes=<N> secs=<float> mbps=<float> handshake_ms=<float>`.
    pub fn line(&self) -> String {
        let mbps = if self.secs > 0.0 {
            self.bytes as f64 * 8.0 / self.secs / 1e6
        } else {
            0.0
        };
        format!(
            "bytes={} secs={:.3} mbps={:.1} handshake_ms={}",
            self.bytes,
            self.secs,
            mbps,
            self.handshake_ms
                .map_or_else(|| "nan".to_string(), |ms| format!("{ms:.3}"))
        )
    }
}

/// Checks the options the library cannot serve, before any network activity (the command
/// line already refuses them; this covers `ClientArgs` built by other code).
pub fn check_supported(args: &ClientArgs) -> Result<(), ClientError> {
    if args.session_file.is_some() && !crate::args::sessions_serialize() {
        return Err(ClientError::NotSupported(
            crate::args::SESSION_FILE_UNSUPPORTED.into(),
        ));
    }
    if args.early_data && !args.resume && args.session_file.is_none() {
        return Err(ClientError::NotSupported(
            crate::args::EARLY_DATA_NEEDS_RESUME.into(),
        ));
    }
    Ok(())
}

/// Runs the client: fetches every URL and returns the summary.
pub fn run(args: &ClientArgs) -> Result<Summary, ClientError> {
    check_supported(args)?;
    let first = args.urls.first().ok_or_else(|| fatal("no URL given"))?;
    let peer = (first.host.as_str(), first.port)
        .to_socket_addrs()
        .map_err(|e| fatal(format!("{}: {e}", first.authority())))?
        .next()
        .ok_or_else(|| fatal(format!("{}: no address", first.authority())))?;
    if let Some(dir) = &args.dump_dir {
        std::fs::create_dir_all(dir).map_err(|e| fatal(format!("{}: {e}", dir.display())))?;
    }
    let mut client = Client::new(args, peer)?;
    if args.version_negotiation {
        client.probe_version_negotiation(&first.host)?;
    }

    // With --resume the first connection fetches the first URL and the second the others (or
    // the first again when it is alone).
    let plan: Vec<&[Url]> = match (args.resume, args.urls.len()) {
        (false, _) => vec![&args.urls[..]],
        (true, 1) => vec![&args.urls[..], &args.urls[..]],
        (true, _) => vec![&args.urls[..1], &args.urls[1..]],
    };
    let mut summary = Summary {
        success: true,
        ..Summary::default()
    };
    // A session saved by an earlier run (absent or empty: a full handshake).
    let mut session = match &args.session_file {
        Some(path) => read_session(path)?,
        None => None,
    };
    let from_file = session.is_some();
    let connections = plan.len();
    for (i, urls) in plan.into_iter().enumerate() {
        let report = client.fetch(urls, session.as_deref(), &first.host)?;
        summary.bytes += report.bytes;
        summary.handshake_ms = report.handshake.map(|d| d.as_secs_f64() * 1e3);
        summary.success &= report.completed == report.requested;
        if connections > 1 {
            eprintln!(
                "connection {}: {} of {} requests, resumed: {}, 0-RTT requests: {}, 0-RTT \
                 accepted: {}",
                i + 1,
                report.completed,
                report.requested,
                report.resumed,
                report.early_data,
                report.early_data_accepted
            );
            if i > 0 && !report.resumed {
                eprintln!("the session was not resumed");
                summary.success = false;
            }
        }
        if i == 0 && from_file {
            eprintln!(
                "session file: resumed: {}, 0-RTT requests: {}, 0-RTT accepted: {}",
                report.resumed, report.early_data, report.early_data_accepted
            );
        }
        // A connection that got no ticket leaves the previous session in place.
        if report.session.is_some() {
            session = report.session;
        }
        summary.secs += report.transfer.as_secs_f64();
        if !summary.success {
            // A failed first connection leaves nothing worth resuming.
            break;
        }
    }
    if let (Some(path), Some(session)) = (&args.session_file, &session) {
        write_session(path, session)?;
    }
    Ok(summary)
}

/// Reads the session an earlier run saved; `None` if there is no file yet or it is empty.
fn read_session(path: &std::path::Path) -> Result<Option<Vec<u8>>, ClientError> {
    match std::fs::read(path) {
        Ok(bytes) if bytes.is_empty() => Ok(None),
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(fatal(format!("--session-file {}: {e}", path.display()))),
    }
}

/// Saves the session for the next run: written beside the file and renamed over it, so that
/// a run that stops half-way never leaves half a session.
fn write_session(path: &std::path::Path, session: &[u8]) -> Result<(), ClientError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, session)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| fatal(format!("--session-file {}: {e}", path.display())))
}

/// The socket, configuration and buffers the client's connections share.
struct Client<'a> {
    args: &'a ClientArgs,
    poll: Poll,
    io: UdpIo,
    local: SocketAddr,
    /// After `--migrate`: the socket the connection left, still read (late datagrams, and the
    /// way back if the new path fails validation).
    old_io: Option<UdpIo>,
    peer: SocketAddr,
    config: Config,
    keylog: Option<KeyLog>,
    send_bufs: SendBuffers,
    recv_batch: RecvBatch,
    /// The last error a connection's `recv` returned.
    last_recv_error: Option<Error>,
    body_buf: Vec<u8>,
}

impl<'a> Client<'a> {
    fn new(args: &'a ClientArgs, peer: SocketAddr) -> Result<Self, ClientError> {
        let alpn = if args.http09 {
            crate::http09::ALPN
        } else {
            crate::http3::ALPN
        };
        let mut config = setup::config(&args.transport, &[alpn]).map_err(fatal)?;
        if args.no_verify {
            config.verify_peer(false);
        } else {
            config.verify_peer(true);
            if let Some(ca) = &args.ca {
                config
                    .load_verify_locations_from_file(ca)
                    .map_err(|e| fatal(format!("--ca {ca}: {e:?}")))?;
            }
        }
        if args.chacha20 {
            config
                .set_chacha20_only()
                .map_err(|e| fatal(format!("--chacha20: {e:?}")))?;
        }
        if args.early_data {
            config.enable_early_data();
        }
        let keylog = KeyLog::from_env().map_err(|e| fatal(format!("SSLKEYLOGFILE: {e}")))?;

        let bind_addr: SocketAddr = match peer {
            SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let mut io = UdpIo::bind(bind_addr, args.transport.disable_gso)
            .map_err(|e| fatal(format!("bind: {e}")))?;
        let local = io.local_addr().map_err(fatal)?;
        let poll = Poll::new().map_err(fatal)?;
        poll.registry()
            .register(
                io.socket_mut(),
                SOCKET,
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(fatal)?;
        Ok(Client {
            args,
            poll,
            io,
            local,
            old_io: None,
            peer,
            config,
            keylog,
            send_bufs: SendBuffers::new(args.transport.max_udp_payload),
            recv_batch: RecvBatch::new(),
            last_recv_error: None,
            body_buf: vec![0; BODY_BUF],
        })
    }

    /// One connection fetching `urls`, resuming `session` if given.
    fn fetch(
        &mut self,
        urls: &[Url],
        session: Option<&[u8]>,
        server_name: &str,
    ) -> Result<ConnReport, ClientError> {
        let scid = setup::new_cid();
        let mut conn = quiche::connect(
            Some(server_name),
            &scid,
            self.local,
            self.peer,
            &mut self.config,
        )
        .map_err(|e| fatal(format!("connect: {e:?}")))?;
        if let Some(keylog) = &self.keylog {
            keylog.attach(&mut conn);
        }
        setup::setup_qlog(&mut conn, "client");
        if let Some(session) = session {
            // A session that cannot be resumed (a damaged or foreign file, a ticket used up)
            // only costs the full handshake, as in quiche's clients.
            if let Err(e) = conn.set_session(session) {
                eprintln!("set_session: {e:?}: the session is not resumed");
            }
        }
        let dump_dir = self.args.dump_dir.as_deref();
        let protocol = if self.args.http09 {
            Protocol::Http09
        } else {
            Protocol::Http3(Box::new(H3Request::new(
                self.args.method.clone(),
                self.args.headers.clone(),
                self.args.body.clone(),
            )))
        };
        let mut downloads = Downloads::new(urls, dump_dir, protocol);
        let report = self.drive(&mut conn, &mut downloads)?;
        Ok(report)
    }

    /// `--version-negotiation`: an Initial with a reserved version, which the server must
    /// answer with Version Negotiation within [`VN_PROBE_TIMEOUT`].
    fn probe_version_negotiation(&mut self, server_name: &str) -> Result<(), ClientError> {
        let mut config = Config::new(RESERVED_VERSION).map_err(|e| fatal(format!("{e:?}")))?;
        config
            .set_application_protos(&[crate::http09::ALPN])
            .map_err(|e| fatal(format!("ALPN: {e:?}")))?;
        let scid = setup::new_cid();
        let mut conn =
            quiche::connect(Some(server_name), &scid, self.local, self.peer, &mut config)
                .map_err(|e| fatal(format!("connect: {e:?}")))?;
        let deadline = Instant::now() + VN_PROBE_TIMEOUT;
        let mut queue = SendQueue::new();
        let mut events = Events::with_capacity(16);
        self.last_recv_error = None;
        // The library answers Version Negotiation by starting again in a version from its
        // list; the probe stops there, before that new first flight goes out.
        while !conn.is_closed() && conn.version() == RESERVED_VERSION {
            let now = Instant::now();
            flush(
                &mut conn,
                &mut queue,
                &mut self.send_bufs,
                &mut self.io,
                usize::MAX,
                now,
            );
            if now >= deadline {
                break;
            }
            let wake = conn.timeout_instant().map_or(deadline, |t| t.min(deadline));
            match self
                .poll
                .poll(&mut events, Some(wake.saturating_duration_since(now)))
            {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(fatal(format!("poll: {e}"))),
            }
            while self.recv_batch(&mut conn)? {}
            if conn.timeout_instant().is_some_and(|t| t <= Instant::now()) {
                conn.on_timeout();
            }
        }
        queue.clear(&mut self.send_bufs);
        let negotiated = conn.version() != RESERVED_VERSION;
        if !negotiated && self.last_recv_error != Some(Error::UnknownVersion) {
            return Err(fatal(format!(
                "no Version Negotiation in answer to version {RESERVED_VERSION:#010x}"
            )));
        }
        eprintln!(
            "version negotiation: the server does not speak {RESERVED_VERSION:#010x}; \
             connecting with version 1"
        );
        Ok(())
    }

    /// The event loop of one connection, until it is closed.
    fn drive(
        &mut self,
        conn: &mut Connection,
        downloads: &mut Downloads,
    ) -> Result<ConnReport, ClientError> {
        let start = Instant::now();
        let mut queue = SendQueue::new();
        let mut progress = Progress::new(start);
        let mut events = Events::with_capacity(16);
        let mut handshake = None;
        let mut finished_at = None;
        // --key-update: initiate one key update once data flows (the library allows it once
        // the handshake is confirmed and a packet of the current phase was acknowledged).
        let mut key_update_pending = self.args.key_update;
        let mut migrate_pending = self.args.migrate;
        let (mut read_pending, mut send_blocked) = (false, false);

        loop {
            if conn.is_established() || conn.is_in_early_data() {
                downloads.send_requests(conn);
            }
            if finished_at.is_none() && (downloads.done() || conn.is_closed()) {
                finished_at = Some(Instant::now());
                progress.finish();
                if !conn.is_closed() {
                    let _ = conn.close(true, 0, b"done");
                }
            }
            let could_request = conn.is_established() || conn.is_in_early_data();
            self.follow_active_path(conn);
            if !send_blocked {
                let flushed = flush(
                    conn,
                    &mut queue,
                    &mut self.send_bufs,
                    &mut self.io,
                    usize::MAX,
                    Instant::now(),
                );
                send_blocked = flushed == Flush::Blocked;
            }
            if conn.is_closed() {
                if self.args.transport.ack_frequency {
                    let s = conn.stats();
                    eprintln!(
                        "ack_stats ack_frames_sent={} ack_frames_received={} \
                         ack_frequency_frames_sent={}",
                        s.ack_frames_sent, s.ack_frames_received, s.ack_frequency_frames_sent
                    );
                }
                break;
            }
            if !could_request && conn.is_in_early_data() {
                // The first flush built the ClientHello and, with a resumed session, the 0-RTT
                // keys: write the requests now, before the server's reply can complete the
                // handshake and push them into 1-RTT.
                continue;
            }

            let timeout = if read_pending {
                Some(Duration::ZERO)
            } else {
                let paced = (!send_blocked).then(|| queue.next_at()).flatten();
                [conn.timeout_instant(), paced, progress.next_draw()]
                    .into_iter()
                    .flatten()
                    .min()
                    .map(|t| t.saturating_duration_since(Instant::now()))
            };
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(fatal(format!("poll: {e}"))),
            }
            for event in events.iter() {
                read_pending |= event.is_readable();
                send_blocked &= !event.is_writable();
            }
            if read_pending {
                read_pending = self.recv_batch(conn)?;
            }
            let now = Instant::now();
            if conn.timeout_instant().is_some_and(|t| t <= now) {
                conn.on_timeout();
            }
            if handshake.is_none() && conn.is_established() {
                handshake = Some(now.saturating_duration_since(start));
                log::info!(
                    "{}: handshake done in {:?} (resumed: {})",
                    conn.trace_id(),
                    handshake.unwrap_or_default(),
                    conn.is_resumed()
                );
            }
            downloads.read(conn, &mut self.body_buf);
            let migrate_at = downloads
                .expected_bytes()
                .map_or(MIGRATE_AFTER_UNKNOWN, |e| e / 2)
                .max(1);
            if migrate_pending && downloads.bytes >= migrate_at && !conn.is_closed() {
                migrate_pending = false;
                let bytes = downloads.bytes;
                let moved = self.migrate(conn);
                progress.suspend(|| match moved {
                    Ok(to) => eprintln!("migrated to {to} after {bytes} bytes"),
                    Err(e) => eprintln!("migration failed after {bytes} bytes: {e}"),
                });
            }
            if key_update_pending && downloads.bytes > 0 && conn.initiate_key_update().is_ok() {
                key_update_pending = false;
                let bytes = downloads.bytes;
                progress.suspend(|| eprintln!("key update initiated after {bytes} bytes"));
            }
            if finished_at.is_none() {
                progress.update(downloads.bytes, downloads.expected_bytes(), now);
            }
        }

        report_connection_end(conn, downloads, handshake.is_some());
        let end = finished_at.unwrap_or_else(Instant::now);
        downloads.abandon();
        for (url, why) in &downloads.failed {
            if let Some(url) = downloads_url(downloads, *url) {
                eprintln!("request {url} failed: {}", describe(why));
            }
        }
        Ok(ConnReport {
            bytes: downloads.bytes,
            completed: downloads.completed,
            requested: downloads.completed + downloads.failed.len(),
            handshake,
            transfer: end.saturating_duration_since(start),
            resumed: conn.is_resumed(),
            early_data: downloads.sent_early,
            early_data_accepted: conn.early_data_reason() == EARLY_DATA_ACCEPTED,
            session: conn.session().map(<[u8]>::to_vec),
        })
    }

    /// `--migrate`: opens a new socket and moves the connection to it; the old socket stays
    /// open for late datagrams. Returns the new local address.
    fn migrate(&mut self, conn: &mut Connection) -> Result<SocketAddr, String> {
        let bind_addr = SocketAddr::new(self.local.ip(), 0);
        let mut io = UdpIo::bind(bind_addr, self.args.transport.disable_gso)
            .map_err(|e| format!("bind: {e}"))?;
        let local = io.local_addr().map_err(|e| e.to_string())?;
        self.poll
            .registry()
            .register(
                io.socket_mut(),
                SOCKET2,
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(|e| format!("register: {e}"))?;
        conn.migrate_source(local)
            .map_err(|e| format!("migrate_source: {e:?}"))?;
        let old = std::mem::replace(&mut self.io, io);
        self.old_io = Some(old);
        self.local = local;
        Ok(local)
    }

    /// Sends from the socket of the connection's active path: after a failed migration the
    /// connection returns to the old one.
    fn follow_active_path(&mut self, conn: &Connection) {
        let active = conn.active_path().0;
        if active == self.local {
            return;
        }
        if let Some(old) = self.old_io.as_mut() {
            if old.local_addr().is_ok_and(|a| a == active) {
                std::mem::swap(&mut self.io, old);
                self.local = active;
            }
        }
    }

    /// Reads about [`RECV_BATCH`] datagrams (whole system calls' worth) into the connection
    /// from each socket; returns whether more may wait.
    fn recv_batch(&mut self, conn: &mut Connection) -> Result<bool, ClientError> {
        let mut more = self.recv_socket(conn, false)?;
        if self.old_io.is_some() {
            more |= self.recv_socket(conn, true)?;
        }
        Ok(more)
    }

    fn recv_socket(&mut self, conn: &mut Connection, old: bool) -> Result<bool, ClientError> {
        let (io, local) = match (old, self.old_io.as_mut()) {
            (true, Some(io)) => {
                let local = io.local_addr().unwrap_or(self.local);
                (io, local)
            }
            _ => (&mut self.io, self.local),
        };
        let mut datagrams = 0;
        while datagrams < RECV_BATCH {
            let n = match io.recv(&mut self.recv_batch) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                // ICMP errors (port unreachable) surface here on some systems; the
                // connection's timers decide when to give up.
                Err(e) => {
                    log::debug!("recvmmsg: {e}");
                    datagrams += 1;
                    continue;
                }
            };
            // One clock reading per system call: the datagrams arrived together.
            let now = Instant::now();
            for i in 0..n {
                let Some(message) = self.recv_batch.message(i) else {
                    continue;
                };
                let info = RecvInfo {
                    from: message.from,
                    to: local,
                };
                let ecn = message.ecn;
                for datagram in message.datagrams() {
                    datagrams += 1;
                    if let Err(e) = conn.recv_with_ecn_at(datagram, info, ecn, now) {
                        log::debug!("{}: recv: {e:?}", conn.trace_id());
                        self.last_recv_error = Some(e);
                    }
                }
            }
        }
        Ok(true)
    }
}

fn downloads_url<'u>(downloads: &Downloads<'u>, idx: usize) -> Option<String> {
    downloads
        .url(idx)
        .map(|u| format!("https://{}{}", u.authority(), u.path))
}

fn describe(f: &Failure) -> String {
    match f {
        Failure::Reset(code) => format!("stream reset by the server (error {code})"),
        Failure::Write(e) => format!("cannot write the body: {e}"),
        Failure::ConnectionEnded => "the connection ended first".to_string(),
        Failure::Stream(e) => format!("stream error {e}"),
        Failure::Status(s) => format!("the server answered with status {s}"),
    }
}

fn report_connection_end(conn: &Connection, downloads: &Downloads, handshake_done: bool) {
    if downloads.done() && conn.peer_error().is_none() && !conn.is_timed_out() {
        return;
    }
    if conn.is_timed_out() {
        eprintln!(
            "connection timed out ({})",
            if handshake_done {
                "idle"
            } else {
                "during the handshake"
            }
        );
    }
    if conn.is_stateless_reset() {
        eprintln!("the server reset the connection (stateless reset: it lost the connection)");
    }
    if let Some(e) = conn.peer_error() {
        eprintln!(
            "the server closed the connection: {} error {:#x} {:?}",
            if e.is_app { "application" } else { "transport" },
            e.error_code,
            String::from_utf8_lossy(&e.reason)
        );
    }
    if let Some(e) = conn
        .local_error()
        .filter(|e| !e.is_app || e.error_code != 0)
    {
        eprintln!(
            "the client closed the connection: {} error {:#x} {:?}",
            if e.is_app { "application" } else { "transport" },
            e.error_code,
            String::from_utf8_lossy(&e.reason)
        );
    }
}
