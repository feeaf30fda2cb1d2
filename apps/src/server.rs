//! The server's event loop: one UDP socket, many connections.
//!
//! Datagrams are routed by Destination Connection ID. A datagram for no known connection may
//! start one: unknown versions get Version Negotiation; a client Initial without a token gets a
//! stateless Retry (`--retry always`, the default; with `--retry auto` only while the
//! half-open connections, accepted but not through their handshake, reach
//! `--retry-threshold`; never with `--retry never`) and one with a valid token gets a
//! connection whose `original_destination_connection_id` comes from the token. A connection is kept only if a
//! packet of its first datagram decrypted: forged Initials leave no state behind. The
//! counters are logged (info level) as a `stats:` line when they change.
//!
//! A short-header datagram for no connection (one this server lost in a restart, or closed)
//! gets a stateless reset (RFC 9000 §10.3, see [`crate::stateless_reset`] for the key and the
//! limit per address), so that its client ends the connection at once.
//!
//! Nothing is reflected: Version Negotiation answers only long-header datagrams of at least
//! 1200 bytes (never a Version Negotiation packet), and a stateless reset is always smaller
//! than the datagram it answers, never answers one too small to be a packet for our IDs (which
//! could itself be a reset) and is rate-limited per address (RFC 9000 §6.1, §10.3.3: no
//! amplification and no loop can start here). `apps/tests/reflection.rs` checks it, two
//! servers spoofed at each other included.
//!
//! Each loop iteration reads a batch of datagrams (several per system call, coalesced by GRO
//! where the kernel can), answers the requests that arrived, fires expired timers, then sends
//! round-robin, at most [`SEND_BURST`] datagrams per connection per round (in GSO batches), so
//! that one busy connection cannot starve the others. Closed connections are removed.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use quiche::{Config, Connection, ConnectionId, Header, RecvInfo, Type};

use crate::args::{RetryMode, ServerArgs};
use crate::http09::{self, ServerStreams};
use crate::http3::{self, H3Server};
use crate::send_queue::{flush, send_stateless, Flush, SendBuffers, SendQueue};
pub use crate::server_stats::ServerStats;
use crate::setup::{self, KeyLog, LOCAL_CID_LEN, MAX_DATAGRAM_SIZE};
use crate::stateless_reset::{self, ResetDecision, StatelessResets};
use crate::token::TokenKey;
use crate::udp::{RecvBatch, UdpIo, GSO_MAX_SEGMENTS};

/// The most connections served at once; Initials beyond it are dropped.
pub const MAX_CONNECTIONS: usize = 10_000;

/// Datagrams one connection may send before the next connection's turn: one full GSO batch.
pub const SEND_BURST: usize = GSO_MAX_SEGMENTS;

/// Datagrams read before the loop turns to answering and sending.
const RECV_BATCH: usize = 256;

/// The shortest Destination Connection ID a client's first Initial may carry (RFC 9000 §7.2).
const MIN_INITIAL_DCID_LEN: usize = 8;

/// The smallest datagram that may open a connection (RFC 9000 §14.1).
const MIN_INITIAL_DATAGRAM: usize = 1200;

/// The shortest time between two stats lines in the log.
const STATS_INTERVAL: Duration = Duration::from_millis(250);

/// Why an Initial whose token did not open is dropped (counted in `invalid_tokens`).
const INVALID_TOKEN: &str = "invalid token";

const SOCKET: Token = Token(0);

/// One connection and its application state.
struct Peer {
    conn: Connection,
    queue: SendQueue,
    streams: ServerStreams,
    /// The HTTP/3 state, when the connection negotiated `h3`.
    h3: H3Server,
    /// The connection IDs routed to this peer.
    cids: Vec<Vec<u8>>,
    /// Whether it received something since its streams were last looked at.
    dirty: bool,
    /// Whether it is in the list of connections to flush and settle in this turn.
    ready: bool,
    /// Whether it is counted in [`ServerStats::half_open`]: until its handshake completes
    /// or it is removed, whichever comes first.
    half_open: bool,
    /// Its entry in the timer set: the earlier of its connection timer and its next paced
    /// datagram.
    deadline: Option<Instant>,
}

/// What to do with a datagram, decided from its header.
enum Route {
    Known(usize),
    Drop(&'static str),
    Negotiate {
        scid: Vec<u8>,
        dcid: Vec<u8>,
    },
    /// A short header for no connection: a stateless reset, if the datagram may have one.
    Reset {
        dcid: Vec<u8>,
    },
    Retry {
        scid: Vec<u8>,
        dcid: Vec<u8>,
        version: u32,
    },
    /// Another worker's connection (`--threads`): hand the datagram to it.
    Forward(usize),
    Accept {
        scid: ConnectionId<'static>,
        odcid: Option<ConnectionId<'static>>,
        /// The client's chosen DCID, routed here too: without a Retry its Initial
        /// retransmissions and 0-RTT packets keep using it until our first reply arrives.
        alias: Option<Vec<u8>>,
    },
}

/// The HTTP/0.9 server.
pub struct Server {
    poll: Poll,
    events: Events,
    io: UdpIo,
    local: SocketAddr,
    config: Config,
    root: PathBuf,
    /// `None` with `--retry never`: tokens are then neither issued nor checked.
    token_key: Option<TokenKey>,
    /// With `--retry auto`, the half-open count from which new clients get a Retry; 0 with
    /// `--retry always` (every one does).
    retry_threshold: usize,
    keylog: Option<KeyLog>,
    /// Which short headers for no connection get a stateless reset.
    resets: StatelessResets,
    peers: Vec<Option<Peer>>,
    free: Vec<usize>,
    live: usize,
    by_cid: HashMap<Vec<u8>, usize>,
    send_bufs: SendBuffers,
    /// Taken while its datagrams are handled (`None` only then).
    recv_batch: Option<Box<RecvBatch>>,
    out: Vec<u8>,
    dirty: Vec<usize>,
    /// The connections something happened to in this turn (a datagram, a timer, a new
    /// request): only they may have datagrams to send, a new deadline or a closed state, so
    /// that a turn costs what happened in it, not the number of connections.
    ready: Vec<usize>,
    /// Every connection's deadline, earliest first.
    timers: BTreeSet<(Instant, usize)>,
    active: Vec<usize>,
    rr_next: usize,
    send_blocked: bool,
    read_pending: bool,
    stats: ServerStats,
    /// What the last stats line said (counters and connections) and when it was logged.
    logged: Option<(ServerStats, usize, Instant)>,
    /// With `--threads`: this worker's place among the others.
    worker: Option<Worker>,
}

/// A datagram, its source and its ECN codepoint.
type Forwarded = (Vec<u8>, SocketAddr, u8);

/// The most datagrams waiting in a worker's inbox; more are dropped (and recovered by QUIC).
const INBOX_LEN: usize = 4096;

/// How one worker thread reaches the others (`--threads`).
struct Worker {
    id: usize,
    /// Decodes the worker index from our connection IDs.
    lb: quiche::quic_lb::LbConfig,
    inbox: std::sync::mpsc::Receiver<Forwarded>,
    /// Per worker, its inbox and the waker of its event loop.
    links: Arc<Vec<(std::sync::mpsc::SyncSender<Forwarded>, Arc<mio::Waker>)>>,
}

const WAKER: Token = Token(1);

impl Server {
    /// Loads the certificate, binds the socket and makes the Retry token key.
    pub fn new(args: &ServerArgs) -> Result<Server, String> {
        Self::bind(args, args.listen, false, &reset_key(args)?)
    }

    /// `--threads N`: N servers on one address (SO_REUSEPORT), each to run on a thread of
    /// its own, whose connection IDs name their worker.
    pub fn workers(args: &ServerArgs, n: usize) -> Result<Vec<Server>, String> {
        let mut key = [0u8; 16];
        setup::fill_random(&mut key);
        // 16-byte IDs: first octet, the worker's index, a 14-byte nonce.
        let lb = quiche::quic_lb::LbConfig::new(0, 1, LOCAL_CID_LEN - 2, Some(&key))
            .map_err(|e| format!("--threads: {e:?}"))?;
        let mut servers: Vec<Server> = Vec::with_capacity(n);
        let mut links = Vec::with_capacity(n);
        let mut inboxes = Vec::with_capacity(n);
        // One reset key for all: any worker may answer for an ID another issued.
        let reset_key = reset_key(args)?;
        for i in 0..n {
            // The first binds (port 0 picks one); the others join its address.
            let addr = servers.first().map_or(args.listen, |s| s.local);
            let mut server = Self::bind(args, addr, true, &reset_key)?;
            let generator = quiche::quic_lb::QuicLbGenerator::new(lb.clone(), &[i as u8])
                .map_err(|e| format!("--threads: {e:?}"))?;
            server.config.set_cid_generator(Arc::new(generator));
            let waker =
                mio::Waker::new(server.poll.registry(), WAKER).map_err(|e| e.to_string())?;
            let (tx, rx) = std::sync::mpsc::sync_channel(INBOX_LEN);
            links.push((tx, Arc::new(waker)));
            inboxes.push(rx);
            servers.push(server);
        }
        let links = Arc::new(links);
        for (id, (server, inbox)) in servers.iter_mut().zip(inboxes).enumerate() {
            server.worker = Some(Worker {
                id,
                lb: lb.clone(),
                inbox,
                links: Arc::clone(&links),
            });
        }
        Ok(servers)
    }

    fn bind(
        args: &ServerArgs,
        listen: SocketAddr,
        reuseport: bool,
        reset_key: &[u8; 32],
    ) -> Result<Server, String> {
        // HTTP/3 and HTTP/0.9 on the same port: the client's ALPN picks.
        let mut config = setup::config(&args.transport, &[http3::ALPN, http09::ALPN])?;
        config.set_stateless_reset_key(reset_key);
        config
            .load_cert_chain_from_pem_file(&args.cert)
            .map_err(|e| format!("--cert {}: {e:?}", args.cert))?;
        config
            .load_priv_key_from_pem_file(&args.key)
            .map_err(|e| format!("--key {}: {e:?}", args.key))?;
        config.enable_early_data();
        let mut lb_self = None;
        if let Some(crate::args::HexBytes(id)) = &args.server_id {
            // All 16 bytes of our IDs are QUIC-LB's: first octet, server ID, nonce.
            let nonce_len = LOCAL_CID_LEN - 1 - id.len();
            let lb = quiche::quic_lb::LbConfig::new(
                args.lb_config_id,
                id.len(),
                nonce_len,
                args.lb_key.as_ref(),
            )
            .map_err(|e| format!("--server-id: {e:?}"))?;
            let me = quiche::quic_lb::ServerId::new(id).ok_or("--server-id: bad length")?;
            lb_self = Some((lb.clone(), me));
            let generator = quiche::quic_lb::QuicLbGenerator::new(lb, id)
                .map_err(|e| format!("--server-id: {e:?}"))?;
            config.set_cid_generator(Arc::new(generator));
        }
        let root = args
            .root
            .canonicalize()
            .ok()
            .filter(|r| r.is_dir())
            .ok_or_else(|| format!("--root {}: not a directory", args.root.display()))?;
        let keylog = KeyLog::from_env().map_err(|e| format!("SSLKEYLOGFILE: {e}"))?;

        let mut io = UdpIo::bind_with(listen, args.transport.disable_gso, reuseport)
            .map_err(|e| format!("bind {listen}: {e}"))?;
        let local = io.local_addr().map_err(|e| e.to_string())?;
        let poll = Poll::new().map_err(|e| e.to_string())?;
        poll.registry()
            .register(
                io.socket_mut(),
                SOCKET,
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(|e| e.to_string())?;

        Ok(Server {
            poll,
            events: Events::with_capacity(16),
            io,
            local,
            config,
            root,
            token_key: (args.retry_mode() != RetryMode::Never)
                .then(|| TokenKey::new(Instant::now())),
            retry_threshold: match args.retry_mode() {
                RetryMode::Auto => args.retry_threshold as usize,
                RetryMode::Always | RetryMode::Never => 0,
            },
            keylog,
            resets: StatelessResets::new(lb_self),
            peers: Vec::new(),
            free: Vec::new(),
            live: 0,
            by_cid: HashMap::new(),
            send_bufs: SendBuffers::new(args.transport.max_udp_payload),
            recv_batch: Some(Box::new(RecvBatch::new())),
            out: vec![0; MAX_DATAGRAM_SIZE],
            dirty: Vec::new(),
            ready: Vec::new(),
            timers: BTreeSet::new(),
            active: Vec::new(),
            rr_next: 0,
            send_blocked: false,
            read_pending: false,
            stats: ServerStats::default(),
            worker: None,
            logged: None,
        })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The counters so far.
    pub fn stats(&self) -> ServerStats {
        self.stats
    }

    /// Connections currently served.
    pub fn connections(&self) -> usize {
        self.live
    }

    /// Serves until an I/O error on the socket.
    pub fn run(&mut self) -> io::Result<()> {
        loop {
            self.run_once(None)?;
        }
    }

    /// One turn of the event loop: waits for the socket or the next timer (at most
    /// `max_wait`), then receives, answers, fires timers, sends and removes closed connections.
    pub fn run_once(&mut self, max_wait: Option<Duration>) -> io::Result<()> {
        let timeout = if self.read_pending {
            Some(Duration::ZERO)
        } else {
            let next = [
                self.timers.first().map(|&(t, _)| t),
                self.stats_due(Instant::now()),
            ]
            .into_iter()
            .flatten()
            .min();
            let wait = next.map(|t| t.saturating_duration_since(Instant::now()));
            match (wait, max_wait) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        };
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e),
        }
        let (mut woken, mut writable) = (false, false);
        for event in self.events.iter() {
            if event.token() == WAKER {
                woken = true;
                continue;
            }
            self.read_pending |= event.is_readable();
            writable |= event.is_writable();
        }
        if writable && self.send_blocked {
            self.send_blocked = false;
            // The connections that waited for room are still in `ready`; those whose paced
            // datagrams were not timed while blocked get a turn too.
            self.mark_all_ready();
        }
        if self.read_pending {
            self.read_pending = self.recv_batch();
        }
        if woken {
            self.recv_forwarded();
        }
        self.serve_dirty();
        self.fire_timers();
        self.flush_all();
        self.settle();
        self.log_stats();
        Ok(())
    }

    /// When the stats line must be logged: counters changed since the last one.
    fn stats_due(&self, now: Instant) -> Option<Instant> {
        match self.logged {
            None => Some(now),
            Some((stats, live, _)) if stats == self.stats && live == self.live => None,
            Some((_, _, at)) => Some(at + STATS_INTERVAL),
        }
    }

    /// Logs the counters (at info level) when they changed, at most once per
    /// [`STATS_INTERVAL`]: tests and operators read the connection count from the last line.
    fn log_stats(&mut self) {
        let now = Instant::now();
        if self.stats_due(now).is_some_and(|due| due <= now) {
            log::info!("stats: {}", self.stats.line(self.live));
            self.logged = Some((self.stats, self.live, now));
        }
    }

    /// Reads about [`RECV_BATCH`] datagrams (whole system calls' worth); returns whether more
    /// may be waiting.
    fn recv_batch(&mut self) -> bool {
        let mut batch = self.recv_batch.take().unwrap_or_default();
        let mut datagrams = 0;
        let mut more = true;
        while datagrams < RECV_BATCH {
            let n = match self.io.recv(&mut batch) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    more = false;
                    break;
                }
                Err(e) => {
                    log::warn!("recvmmsg: {e}");
                    datagrams += 1;
                    continue;
                }
            };
            // One clock reading per system call: the datagrams arrived together.
            let now = Instant::now();
            for i in 0..n {
                let Some(message) = batch.message(i) else {
                    self.stats.dropped += 1;
                    continue;
                };
                let (from, ecn) = (message.from, message.ecn);
                for datagram in message.datagrams() {
                    datagrams += 1;
                    self.stats.datagrams += 1;
                    self.on_datagram(datagram, from, ecn, now);
                }
            }
        }
        self.recv_batch = Some(batch);
        more
    }

    /// The datagrams other workers handed over (`--threads`).
    fn recv_forwarded(&mut self) {
        let mut batch = Vec::new();
        if let Some(w) = &self.worker {
            batch.extend(w.inbox.try_iter().take(INBOX_LEN));
        }
        let now = Instant::now();
        for (mut datagram, from, ecn) in batch {
            self.stats.datagrams += 1;
            self.on_datagram(&mut datagram, from, ecn, now);
        }
    }

    /// With `--threads`: the other worker whose connection ID `dcid` is, if any. The named
    /// worker always handles a datagram itself, so nothing is handed on twice.
    fn owner_elsewhere(&self, dcid: &[u8]) -> Option<usize> {
        let w = self.worker.as_ref()?;
        let owner = usize::from(*w.lb.decode_server_id(dcid)?.as_bytes().first()?);
        (owner != w.id && owner < w.links.len()).then_some(owner)
    }

    /// Hands a datagram to worker `owner`; dropped if its inbox is full.
    fn forward(&mut self, owner: usize, buf: &[u8], from: SocketAddr, ecn: u8) {
        let Some((tx, waker)) = self.worker.as_ref().and_then(|w| w.links.get(owner)) else {
            return;
        };
        if tx.try_send((buf.to_vec(), from, ecn)).is_ok() {
            self.stats.forwarded += 1;
            log::debug!("{from}: datagram handed to worker {owner}");
            let _ = waker.wake();
        } else {
            self.stats.dropped += 1;
        }
    }

    /// A datagram from `from` whose IP header carried the ECN codepoint `ecn`.
    fn on_datagram(&mut self, buf: &mut [u8], from: SocketAddr, ecn: u8, now: Instant) {
        let route = self.route(buf, from);
        let (scid, odcid, alias) = match route {
            Route::Known(idx) => return self.deliver(idx, buf, from, ecn, now),
            Route::Forward(owner) => return self.forward(owner, buf, from, ecn),
            Route::Drop(why) => {
                self.stats.dropped += 1;
                if why == INVALID_TOKEN {
                    self.stats.invalid_tokens += 1;
                }
                log::trace!("{from}: dropped datagram: {why}");
                return;
            }
            Route::Negotiate { scid, dcid } => return self.negotiate_version(&scid, &dcid, from),
            Route::Reset { dcid } => return self.stateless_reset(&dcid, buf.len(), from, now),
            Route::Retry {
                scid,
                dcid,
                version,
            } => return self.send_retry(&scid, &dcid, version, from),
            Route::Accept { scid, odcid, alias } => (scid, odcid, alias),
        };
        let mut conn =
            match quiche::accept(&scid, odcid.as_ref(), self.local, from, &mut self.config) {
                Ok(conn) => conn,
                Err(e) => {
                    log::warn!("{from}: accept: {e:?}");
                    return;
                }
            };
        if let Some(keylog) = &self.keylog {
            keylog.attach(&mut conn);
        }
        setup::setup_qlog(&mut conn, "server");
        let info = RecvInfo {
            from,
            to: self.local,
        };
        let received = conn.recv_with_ecn_at(buf, info, ecn, now);
        // Anyone can forge an Initial header (its keys derive from the DCID in clear), so
        // the state exists only if a packet of the datagram decrypted; otherwise it is
        // dropped now and the datagram ignored, as if it had been dropped unopened. A packet
        // that decrypted and then broke the protocol (a local error) keeps its connection,
        // which sends CONNECTION_CLOSE and ends.
        if conn.stats().recv == 0 && conn.local_error().is_none() {
            self.stats.unauthenticated += 1;
            log::trace!("{from}: Initial did not decrypt ({received:?}): no connection");
            return;
        }
        if let Err(e) = received {
            log::debug!("{}: recv: {e:?}", conn.trace_id());
        }
        log::info!("{}: new connection from {from}", conn.trace_id());

        let mut cids = vec![scid.to_vec()];
        cids.extend(alias);
        let peer = Peer {
            conn,
            queue: SendQueue::new(),
            streams: ServerStreams::new(),
            h3: H3Server::new(),
            cids,
            dirty: false,
            ready: false,
            half_open: true,
            deadline: None,
        };
        let idx = match self.free.pop() {
            Some(idx) => idx,
            None => {
                self.peers.push(None);
                self.peers.len() - 1
            }
        };
        for cid in &peer.cids {
            self.by_cid.insert(cid.clone(), idx);
        }
        if let Some(slot) = self.peers.get_mut(idx) {
            *slot = Some(peer);
        }
        self.live += 1;
        self.stats.half_open += 1;
        self.stats.accepted += 1;
        self.stats.peak = self.stats.peak.max(self.live);
        self.mark_dirty(idx);
    }

    /// Decides from the header what becomes of a datagram.
    fn route(&self, buf: &mut [u8], from: SocketAddr) -> Route {
        let len = buf.len();
        // `parse` borrows the connection IDs: no allocation per datagram.
        let Ok(hdr) = Header::parse(buf, LOCAL_CID_LEN) else {
            return Route::Drop("unparsable header");
        };
        if let Some(&idx) = self.by_cid.get(&hdr.dcid[..]) {
            return Route::Known(idx);
        }
        // Only IDs we made name a worker: those of short headers, Handshake packets and
        // Initials answering a Retry. A client's first Initials and 0-RTT packets carry its
        // own random ID; the kernel's 4-tuple hash keeps them on one worker already.
        let ours = match hdr.ty {
            Type::Short | Type::Handshake => true,
            Type::Initial => hdr.token.as_ref().is_some_and(|t| !t.is_empty()),
            _ => false,
        };
        if let Some(owner) = ours.then(|| self.owner_elsewhere(&hdr.dcid)).flatten() {
            return Route::Forward(owner);
        }
        match hdr.ty {
            Type::Short => {
                return Route::Reset {
                    dcid: hdr.dcid.to_vec(),
                }
            }
            // Never answered with another one (RFC 9000 §6.1).
            Type::VersionNegotiation => return Route::Drop("Version Negotiation from a client"),
            _ => {}
        }
        if !quiche::version_is_supported(hdr.version) {
            // Only datagrams that could open a connection get an answer, so that Version
            // Negotiation cannot amplify (RFC 9000 §6.1, §14.1).
            if len < MIN_INITIAL_DATAGRAM {
                return Route::Drop("small datagram of an unknown version");
            }
            return Route::Negotiate {
                scid: hdr.scid.to_vec(),
                dcid: hdr.dcid.to_vec(),
            };
        }
        if hdr.ty != Type::Initial {
            return Route::Drop("long header for no connection");
        }
        if len < MIN_INITIAL_DATAGRAM {
            return Route::Drop("Initial in a datagram under 1200 bytes");
        }
        if hdr.dcid.len() < MIN_INITIAL_DCID_LEN {
            return Route::Drop("Initial DCID under 8 bytes");
        }
        if self.live >= MAX_CONNECTIONS {
            return Route::Drop("connection limit reached");
        }
        let token = hdr.token.as_deref().unwrap_or(&[]);
        let key = match &self.token_key {
            Some(key) if !token.is_empty() || self.stats.half_open >= self.retry_threshold => key,
            // `--retry never`, or `--retry auto` below its threshold: accepted at once.
            _ => {
                // From the config's generator: with QUIC-LB, the ID routes to this server.
                let Ok(scid) = self.config.new_scid(LOCAL_CID_LEN) else {
                    return Route::Drop("no connection ID");
                };
                return Route::Accept {
                    scid,
                    odcid: None,
                    alias: Some(hdr.dcid.to_vec()),
                };
            }
        };
        if token.is_empty() {
            return Route::Retry {
                scid: hdr.scid.to_vec(),
                dcid: hdr.dcid.to_vec(),
                version: hdr.version,
            };
        }
        match key.open(token, from, &hdr.dcid, Instant::now()) {
            // The client now uses the connection ID our Retry gave it: it becomes ours.
            Some(odcid) => Route::Accept {
                scid: hdr.dcid.clone().into_owned(),
                odcid: Some(odcid),
                alias: None,
            },
            None => Route::Drop(INVALID_TOKEN),
        }
    }

    fn deliver(&mut self, idx: usize, buf: &mut [u8], from: SocketAddr, ecn: u8, now: Instant) {
        let Some(Some(peer)) = self.peers.get_mut(idx) else {
            return;
        };
        let info = RecvInfo {
            from,
            to: self.local,
        };
        if let Err(e) = peer.conn.recv_with_ecn_at(buf, info, ecn, now) {
            log::debug!("{}: recv: {e:?}", peer.conn.trace_id());
        }
        // The client's address may change (NAT rebinding, migration, RFC 9000 §9): the
        // connection follows it and its replies say where to go (`SendInfo::to`).
        while let Some(event) = peer.conn.path_event_next() {
            log::info!("{}: path event {event:?}", peer.conn.trace_id());
        }
        self.sync_routes(idx);
        self.mark_dirty(idx);
    }

    /// The connection issues new IDs after the handshake and when the client retires some:
    /// routes the new ones here and forgets the retired ones. Done after every datagram and
    /// every flush, so that no ID the client may use goes unrouted: a datagram for an
    /// unrouted ID would draw a stateless reset.
    fn sync_routes(&mut self, idx: usize) {
        let Some(Some(peer)) = self.peers.get_mut(idx) else {
            return;
        };
        while let Some(cid) = peer.conn.retired_scid_next() {
            self.by_cid.remove(&cid[..]);
            peer.cids.retain(|c| c[..] != cid[..]);
        }
        for cid in peer.conn.source_ids() {
            if !peer.cids.iter().any(|c| c[..] == cid[..]) {
                peer.cids.push(cid.to_vec());
                self.by_cid.insert(cid.to_vec(), idx);
            }
        }
    }

    /// Queues the connection's streams to be looked at in this turn (and the connection to
    /// be flushed).
    fn mark_dirty(&mut self, idx: usize) {
        if let Some(Some(peer)) = self.peers.get_mut(idx) {
            if !peer.dirty {
                peer.dirty = true;
                self.dirty.push(idx);
            }
        }
        self.mark_ready(idx);
    }

    /// Queues the connection to be flushed and settled in this turn.
    fn mark_ready(&mut self, idx: usize) {
        if let Some(Some(peer)) = self.peers.get_mut(idx) {
            if !peer.ready {
                peer.ready = true;
                self.ready.push(idx);
            }
        }
    }

    /// Queues every connection (the socket has room again after being full, a rare event).
    fn mark_all_ready(&mut self) {
        for idx in 0..self.peers.len() {
            self.mark_ready(idx);
        }
    }

    fn negotiate_version(&mut self, scid: &[u8], dcid: &[u8], to: SocketAddr) {
        let (scid, dcid) = (ConnectionId::from_ref(scid), ConnectionId::from_ref(dcid));
        match quiche::negotiate_version(&scid, &dcid, &mut self.out) {
            Ok(len) => {
                self.stats.version_negotiations += 1;
                self.send_stateless(len, to);
            }
            Err(e) => log::debug!("{to}: version negotiation: {e:?}"),
        }
    }

    /// Answers a short-header datagram of `len` bytes for no connection with a stateless reset,
    /// if it may have one.
    fn stateless_reset(&mut self, dcid: &[u8], len: usize, to: SocketAddr, now: Instant) {
        match self
            .resets
            .answer(&self.config, dcid, len, to, now, &mut self.out)
        {
            ResetDecision::Send(n) => {
                self.stats.resets += 1;
                log::debug!("{to}: stateless reset ({n} bytes) for a {len}-byte datagram");
                self.send_stateless(n, to);
            }
            ResetDecision::Limited => {
                self.stats.resets_limited += 1;
                self.stats.dropped += 1;
            }
            ResetDecision::None(why) => {
                self.stats.dropped += 1;
                log::trace!("{to}: {len}-byte short header for no connection: {why}");
            }
        }
    }

    fn send_retry(&mut self, scid: &[u8], odcid: &[u8], version: u32, to: SocketAddr) {
        let Some(key) = &self.token_key else {
            return;
        };
        // With QUIC-LB the Retry's ID is the connection's handshake ID: it must route here too.
        let Ok(new_scid) = self.config.new_scid(LOCAL_CID_LEN) else {
            self.stats.dropped += 1;
            return;
        };
        let Some(token) = key.seal(to, odcid, &new_scid, Instant::now()) else {
            self.stats.dropped += 1;
            return;
        };
        let (scid, odcid) = (ConnectionId::from_ref(scid), ConnectionId::from_ref(odcid));
        match quiche::retry(&scid, &odcid, &new_scid, &token, version, &mut self.out) {
            Ok(len) => {
                self.stats.retries += 1;
                log::debug!("{to}: Retry sent, connection ID {new_scid:?}");
                self.send_stateless(len, to);
            }
            Err(e) => log::debug!("{to}: retry: {e:?}"),
        }
    }

    /// Sends a packet that belongs to no connection; if the socket is full it is dropped (the
    /// client retransmits its Initial).
    fn send_stateless(&mut self, len: usize, to: SocketAddr) {
        if let Some(packet) = self.out.get(..len) {
            send_stateless(self.io.socket(), packet, to);
        }
    }

    /// Reads the requests that arrived and continues the responses whose streams opened up.
    fn serve_dirty(&mut self) {
        for idx in self.dirty.drain(..) {
            let Some(Some(peer)) = self.peers.get_mut(idx) else {
                continue;
            };
            peer.dirty = false;
            if peer.conn.is_established() || peer.conn.is_in_early_data() {
                if peer.conn.application_proto() == http3::ALPN {
                    peer.h3.on_readable(&mut peer.conn, &self.root);
                    peer.h3.on_writable(&mut peer.conn);
                } else {
                    peer.streams.on_readable(&mut peer.conn, &self.root);
                    peer.streams.on_writable(&mut peer.conn);
                }
            }
        }
    }

    /// Runs the connection timers that expired and queues the connections whose paced
    /// datagrams are due; both then get flushed.
    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(&(at, idx)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            if let Some(Some(peer)) = self.peers.get_mut(idx) {
                peer.deadline = None;
                if peer.conn.timeout_instant().is_some_and(|t| t <= now) {
                    peer.conn.on_timeout();
                }
            }
            self.mark_ready(idx);
        }
    }

    /// Sends round-robin among the connections of this turn: each with datagrams due sends
    /// up to [`SEND_BURST`] per round, rounds repeat while any has more, starting one
    /// connection later each turn.
    fn flush_all(&mut self) {
        let n = self.ready.len();
        if self.send_blocked || n == 0 {
            return;
        }
        let start = self.rr_next % n;
        self.rr_next = self.rr_next.wrapping_add(1);
        let mut active = std::mem::take(&mut self.active);
        active.clear();
        active.extend((0..n).map(|k| self.ready[(start + k) % n]));
        // One clock reading per round: the flushes of a round take microseconds.
        while !active.is_empty() {
            let now = Instant::now();
            let mut keep = 0;
            for j in 0..active.len() {
                let idx = active[j];
                let Some(Some(peer)) = self.peers.get_mut(idx) else {
                    continue;
                };
                let flushed = flush(
                    &mut peer.conn,
                    &mut peer.queue,
                    &mut self.send_bufs,
                    &mut self.io,
                    SEND_BURST,
                    now,
                );
                match flushed {
                    Flush::Burst => {
                        active[keep] = idx;
                        keep += 1;
                    }
                    Flush::Blocked => {
                        self.send_blocked = true;
                        keep = 0;
                        break;
                    }
                    Flush::Idle | Flush::Paced(_) => {}
                }
            }
            active.truncate(keep);
        }
        self.active = active;
    }

    /// After the flush: removes the connections of this turn that closed and re-times the
    /// others. While the socket is full they stay queued (to be flushed once it has room)
    /// and only their connection timers count, not their paced datagrams.
    fn settle(&mut self) {
        let mut ready = std::mem::take(&mut self.ready);
        let blocked = self.send_blocked;
        let mut keep = 0;
        for j in 0..ready.len() {
            let idx = ready[j];
            let Some(Some(peer)) = self.peers.get_mut(idx) else {
                continue;
            };
            if let Some(old) = peer.deadline.take() {
                self.timers.remove(&(old, idx));
            }
            if peer.conn.is_closed() {
                self.remove(idx);
                continue;
            }
            self.sync_routes(idx);
            let Some(Some(peer)) = self.peers.get_mut(idx) else {
                continue;
            };
            // Every event of a connection (its handshake completing included) passes here.
            if peer.half_open && peer.conn.is_established() {
                peer.half_open = false;
                self.stats.half_open -= 1;
            }
            let paced = (!blocked).then(|| peer.queue.next_at()).flatten();
            peer.deadline = [peer.conn.timeout_instant(), paced]
                .into_iter()
                .flatten()
                .min();
            if let Some(at) = peer.deadline {
                self.timers.insert((at, idx));
            }
            peer.ready = blocked;
            if blocked {
                ready[keep] = idx;
                keep += 1;
            }
        }
        ready.truncate(keep);
        self.ready = ready;
    }

    /// Forgets a closed connection.
    fn remove(&mut self, idx: usize) {
        let Some(mut peer) = self.peers.get_mut(idx).and_then(Option::take) else {
            return;
        };
        for cid in &peer.cids {
            self.by_cid.remove(cid);
        }
        peer.queue.clear(&mut self.send_bufs);
        if peer.half_open {
            self.stats.half_open -= 1;
        }
        log_closed(&peer);
        self.free.push(idx);
        self.live -= 1;
        self.stats.closed += 1;
        log::debug!("{} connections, {:?}", self.live, self.stats);
    }
}

fn log_closed(peer: &Peer) {
    let conn = &peer.conn;
    let stats = conn.stats();
    log::info!(
        "{}: closed (timed out: {}, local error: {:?}, peer error: {:?}): {} requests served, \
         {} refused, {} packets sent, {} lost, {} bytes sent; retrans={} (after loss {}, \
         in probes {}) spurious_lost={} pto_count={} lost_by_time={} lost_by_packets={} \
         lost_bytes={} stream_lost_bytes={} stream_resent_bytes={} ack_frames_sent={} \
         ack_frames_received={} ack_frequency_frames_sent={}",
        conn.trace_id(),
        conn.is_timed_out(),
        conn.local_error(),
        conn.peer_error(),
        peer.streams.served + peer.h3.served,
        peer.streams.refused + peer.h3.refused,
        stats.sent,
        stats.lost,
        stats.sent_bytes,
        stats.retrans,
        stats.retrans_after_loss,
        stats.retrans_in_probes,
        stats.spurious_lost,
        stats.pto_count,
        stats.lost_by_time_threshold,
        stats.lost_by_packet_threshold,
        stats.lost_bytes,
        stats.stream_retrans_bytes,
        stats.stream_resent_bytes,
        stats.ack_frames_sent,
        stats.ack_frames_received,
        stats.ack_frequency_frames_sent,
    );
}

/// The stateless reset key: from `--reset-key`, or random for this run.
fn reset_key(args: &ServerArgs) -> Result<[u8; 32], String> {
    match &args.reset_key {
        Some(path) => stateless_reset::load_or_create_key(path),
        None => Ok(stateless_reset::random_key()),
    }
}
