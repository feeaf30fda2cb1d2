//! A loopback UDP relay that sits between a QUIC client and a QUIC server and impairs the path:
//! seeded random drops and corruption per direction (of every datagram or of long-header ones
//! only), a fixed delay, a black-out window, and NAT-like rebinding of the source port or
//! address it uses towards the server. The interop runner's loss, corruption and rebinding
//! cases (tools/interop) run through it on loopback, without the runner's network simulator.
//!
//! The relay behaves like a NAT: every client address gets its own upstream socket, so the
//! server sees one address per client connection (a client that opens one socket per
//! connection, as in the `multiconnect` case, gets one upstream socket each). Rebinding swaps
//! those upstream sockets for new ones; the server then sees the client's packets arrive from
//! a new port (or address), and the relay forwards the server's answers on the new socket only,
//! as a NAT that dropped the old mapping would.
//!
//! Everything runs on one mio event loop; the poll timeout is the next due time (a delayed
//! datagram, a rebinding, the black-out's edges, the end of the run, or the stop-flag check).

// A tool on real sockets, not the library core: it runs on the wall clock.
#![allow(clippy::disallowed_methods)]

use std::collections::{HashMap, VecDeque};
use std::io::{self, ErrorKind};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};

use sock::bind_udp;

/// Largest UDP payload the relay forwards; QUIC datagrams on loopback stay far below it (a GSO
/// batch arriving as one oversized datagram is truncated here, so peers must not batch).
const MAX_DATAGRAM: usize = 65_535;

/// The token of the socket that faces the clients; upstream sockets use 1, 2, ...
const LISTEN: Token = Token(0);

/// How often the loop wakes to look at the stop flag when nothing else is due.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// A direction through the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// From a client towards the server.
    ClientToServer,
    /// From the server back to a client.
    ServerToClient,
}

/// How one direction is impaired.
#[derive(Clone, Debug, Default)]
pub struct Impairment {
    /// Probability (0..=1) that an eligible datagram is dropped.
    pub drop_rate: f64,
    /// Probability (0..=1) that an eligible datagram that was not dropped is corrupted.
    pub corrupt_rate: f64,
}

/// What the relay does; see `relay --help` for the meaning of each option.
#[derive(Clone, Debug)]
pub struct Options {
    /// Address the clients send to.
    pub listen: SocketAddr,
    /// The server's address.
    pub server: SocketAddr,
    /// Impairment of client-to-server datagrams.
    pub c2s: Impairment,
    /// Impairment of server-to-client datagrams.
    pub s2c: Impairment,
    /// Only datagrams that start with a long-header packet (Initial, 0-RTT, Handshake, Retry)
    /// are eligible for drops and corruption.
    pub long_header_only: bool,
    /// At most this many eligible datagrams in a row are dropped or corrupted in one
    /// direction (0: no cap), as the interop runner's network simulator caps its bursts.
    pub max_burst: u32,
    /// Seed of the random choices (each direction draws from its own stream).
    pub seed: u64,
    /// Extra one-way delay of every forwarded datagram.
    pub delay: Duration,
    /// Give every upstream socket a new source port at this period.
    pub rebind_port_every: Option<Duration>,
    /// Give every upstream socket a new source port when the bytes received from the server
    /// reach each of these counts: rebindings at fixed points of a transfer, however fast it
    /// runs (the apps' migration test).
    pub rebind_port_at_s2c_bytes: Vec<u64>,
    /// Move every upstream socket to `rebind_addr` (new port too) at this time.
    pub rebind_addr_at: Option<Duration>,
    /// The source address used from `rebind_addr_at` on.
    pub rebind_addr: IpAddr,
    /// Drop everything, both ways, from this time ...
    pub blackhole_at: Option<Duration>,
    /// ... for this long.
    pub blackhole_for: Duration,
    /// Drop the client-to-server datagrams with these 1-based sequence numbers (counted over
    /// all clients), e.g. 2..=7 for the amplification-limit case.
    pub drop_c2s_range: Option<(u64, u64)>,
    /// Stop after this long (measured from the start).
    pub duration: Option<Duration>,
    /// Count the times of the rebindings and the black-out from the first client datagram
    /// instead of from [`Relay::bind`]: a client that is slow to start (an interpreter) then
    /// still gets its handshake done before the first rebinding, as in the runner, where the
    /// NAT's clock starts with the connection.
    pub clock_from_first_datagram: bool,
}

impl Options {
    /// Options that forward everything unchanged between `listen` and `server`.
    pub fn transparent(listen: SocketAddr, server: SocketAddr) -> Self {
        Options {
            listen,
            server,
            c2s: Impairment::default(),
            s2c: Impairment::default(),
            long_header_only: false,
            max_burst: 0,
            seed: 0,
            delay: Duration::ZERO,
            rebind_port_every: None,
            rebind_port_at_s2c_bytes: Vec::new(),
            rebind_addr_at: None,
            rebind_addr: IpAddr::from([127, 0, 0, 2]),
            blackhole_at: None,
            blackhole_for: Duration::ZERO,
            drop_c2s_range: None,
            duration: None,
            clock_from_first_datagram: false,
        }
    }
}

/// Counters of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirCounters {
    /// Datagrams received.
    pub received: u64,
    /// Datagrams received whose first packet has a long header.
    pub received_long: u64,
    /// Datagrams sent on (corrupted ones included).
    pub forwarded: u64,
    /// Datagrams dropped on purpose (random drops, black-out, drop range).
    pub dropped: u64,
    /// Of those, datagrams whose first packet has a long header.
    pub dropped_long: u64,
    /// Datagrams forwarded with a flipped byte.
    pub corrupted: u64,
    /// Of those, datagrams whose first packet has a long header.
    pub corrupted_long: u64,
    /// Datagrams lost to a send error (a full socket buffer, or an unreachable peer).
    pub send_errors: u64,
}

/// What the relay did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Client to server.
    pub c2s: DirCounters,
    /// Server to client.
    pub s2c: DirCounters,
    /// Client addresses seen (one upstream socket each).
    pub sessions: u64,
    /// Upstream sockets replaced by a port or address rebinding.
    pub rebinds: u64,
}

impl Counters {
    /// The counters as `key=value` lines, the format `relay` prints at exit and run.sh reads.
    pub fn report(&self) -> String {
        let dir = |name: &str, d: &DirCounters| {
            format!(
                "{name}: received={} received_long={} forwarded={} dropped={} dropped_long={} \
                 corrupted={} corrupted_long={} send_errors={}\n",
                d.received,
                d.received_long,
                d.forwarded,
                d.dropped,
                d.dropped_long,
                d.corrupted,
                d.corrupted_long,
                d.send_errors
            )
        };
        format!(
            "{}{}relay: sessions={} rebinds={}\n",
            dir("c2s", &self.c2s),
            dir("s2c", &self.s2c),
            self.sessions,
            self.rebinds
        )
    }
}

/// A small seeded generator (SplitMix64): reproducible choices without a dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        // 53 random bits give a uniform value in [0, 1).
        p > 0.0 && ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// What to do with one datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it on unchanged.
    Forward,
    /// Send it on with one byte flipped.
    Corrupt,
    /// Do not send it.
    Drop,
}

/// The random part of one direction's impairment, kept apart from the sockets so that it can
/// be tested on its own.
#[derive(Clone, Debug)]
pub struct Impairer {
    imp: Impairment,
    long_header_only: bool,
    max_burst: u32,
    rng: Rng,
    burst: u32,
}

impl Impairer {
    /// An impairer of one direction drawing from `seed`.
    pub fn new(imp: Impairment, long_header_only: bool, max_burst: u32, seed: u64) -> Self {
        Impairer {
            imp,
            long_header_only,
            max_burst,
            rng: Rng::new(seed),
            burst: 0,
        }
    }

    /// Decides the fate of `datagram`. After `max_burst` impaired (dropped or corrupted)
    /// datagrams in a row the next one goes through intact: without the cap, a connection
    /// whose every Initial within its idle timeout is hit (0.3^9 at 30 % for a client that
    /// sends nine in 30 s) fails the test without any fault of either endpoint.
    pub fn judge(&mut self, datagram: &[u8]) -> Verdict {
        if self.long_header_only && !is_long_header(datagram) {
            return Verdict::Forward;
        }
        let capped = self.max_burst > 0 && self.burst >= self.max_burst;
        let verdict = if capped {
            Verdict::Forward
        } else if self.rng.chance(self.imp.drop_rate) {
            Verdict::Drop
        } else if self.rng.chance(self.imp.corrupt_rate) {
            Verdict::Corrupt
        } else {
            Verdict::Forward
        };
        self.burst = if verdict == Verdict::Forward {
            0
        } else {
            self.burst + 1
        };
        verdict
    }

    /// Flips one byte of `datagram` among its last 16: they belong to the AEAD tag of the last
    /// packet in the datagram (every QUIC packet ends with a 16-byte tag), so that packet fails
    /// authentication for sure, while its header and connection IDs stay intact: the receiver
    /// drops it as undecryptable (RFC 9001 §5.5) instead of taking it for another connection's
    /// packet and answering with a stateless reset.
    pub fn corrupt(&mut self, datagram: &mut [u8]) {
        if datagram.is_empty() {
            return;
        }
        let span = datagram.len().min(16) as u64;
        let at = datagram.len() - 1 - (self.rng.next_u64() % span) as usize;
        let flip = 1 + (self.rng.next_u64() % 255) as u8;
        datagram[at] ^= flip;
    }
}

/// Does the datagram start with a long-header packet (RFC 9000 §17.2: the header form bit)?
pub fn is_long_header(datagram: &[u8]) -> bool {
    datagram.first().is_some_and(|b| b & 0x80 != 0)
}

/// One client's mapping: the client's address and the socket that stands for it upstream.
struct Session {
    client: SocketAddr,
    upstream: UdpSocket,
}

/// A datagram waiting for its delay to pass.
struct Delayed {
    due: Instant,
    dir: Dir,
    session: usize,
    data: Vec<u8>,
}

/// The relay's state; [`Relay::run`] drives it.
pub struct Relay {
    opts: Options,
    poll: Poll,
    listen: UdpSocket,
    sessions: Vec<Session>,
    by_client: HashMap<SocketAddr, usize>,
    /// The address upstream sockets bind to (changes at `rebind_addr_at`).
    upstream_ip: IpAddr,
    c2s: Impairer,
    s2c: Impairer,
    counters: Counters,
    queue: VecDeque<Delayed>,
    c2s_seq: u64,
    start: Instant,
    next_port_rebind: Option<Instant>,
    addr_rebind: Option<Instant>,
    /// Bytes received from the server so far.
    s2c_bytes: u64,
    /// The byte counts of `rebind_port_at_s2c_bytes` still to come, the next one last.
    byte_rebinds: Vec<u64>,
}

impl Relay {
    /// Binds the listening socket; nothing is forwarded before [`Relay::run`].
    pub fn bind(opts: Options) -> io::Result<Relay> {
        let poll = Poll::new()?;
        let mut listen = bind_udp(opts.listen)?;
        poll.registry()
            .register(&mut listen, LISTEN, Interest::READABLE)?;
        let upstream_ip = if opts.server.ip().is_loopback() && opts.server.is_ipv4() {
            IpAddr::from([127, 0, 0, 1])
        } else if opts.server.is_ipv4() {
            IpAddr::from([0, 0, 0, 0])
        } else {
            IpAddr::from([0u16; 8])
        };
        let c2s = Impairer::new(
            opts.c2s.clone(),
            opts.long_header_only,
            opts.max_burst,
            opts.seed ^ 0x6332_7300,
        );
        let s2c = Impairer::new(
            opts.s2c.clone(),
            opts.long_header_only,
            opts.max_burst,
            opts.seed ^ 0x7332_6300,
        );
        let start = Instant::now();
        // With the clock started by the first client datagram, nothing is armed before it.
        let armed = !opts.clock_from_first_datagram;
        let mut byte_rebinds = opts.rebind_port_at_s2c_bytes.clone();
        byte_rebinds.sort_unstable_by(|a, b| b.cmp(a));
        Ok(Relay {
            s2c_bytes: 0,
            byte_rebinds,
            next_port_rebind: opts.rebind_port_every.filter(|_| armed).map(|t| start + t),
            addr_rebind: opts.rebind_addr_at.filter(|_| armed).map(|t| start + t),
            opts,
            poll,
            listen,
            sessions: Vec::new(),
            by_client: HashMap::new(),
            upstream_ip,
            c2s,
            s2c,
            counters: Counters::default(),
            queue: VecDeque::new(),
            c2s_seq: 0,
            start,
        })
    }

    /// The address the clients should send to (the bound one, if port 0 was asked for).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listen.local_addr()
    }

    /// Relays until `stop` is set or the run's duration is over; returns the counters.
    /// Times in the options count from the call to [`Relay::bind`].
    pub fn run(mut self, stop: &AtomicBool) -> io::Result<Counters> {
        let mut events = Events::with_capacity(64);
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let end = self.opts.duration.map(|d| self.start + d);
        loop {
            let now = Instant::now();
            if stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) {
                return Ok(self.counters);
            }
            self.on_timers(now)?;
            let timeout = self
                .next_due(end)
                .saturating_duration_since(now)
                .min(STOP_CHECK);
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for ev in events.iter() {
                if ev.token() == LISTEN {
                    self.drain_listen(&mut buf)?;
                } else {
                    self.drain_upstream(ev.token().0 - 1, &mut buf);
                }
            }
            if self
                .byte_rebinds
                .last()
                .is_some_and(|&at| self.s2c_bytes >= at)
            {
                self.byte_rebinds.pop();
                self.rebind_all()?;
            }
        }
    }

    fn next_due(&self, end: Option<Instant>) -> Instant {
        let far = Instant::now() + STOP_CHECK;
        [
            self.queue.front().map(|d| d.due),
            self.next_port_rebind,
            self.addr_rebind,
            end,
        ]
        .into_iter()
        .flatten()
        .fold(far, Instant::min)
    }

    /// Sends the delayed datagrams that are due, and rebinds when it is time.
    fn on_timers(&mut self, now: Instant) -> io::Result<()> {
        while self.queue.front().is_some_and(|d| d.due <= now) {
            let d = self.queue.pop_front().expect("front checked");
            self.send(d.dir, d.session, &d.data);
        }
        if self.addr_rebind.is_some_and(|t| t <= now) {
            self.addr_rebind = None;
            self.upstream_ip = self.opts.rebind_addr;
            self.rebind_all()?;
        }
        if let (Some(t), Some(every)) = (self.next_port_rebind, self.opts.rebind_port_every) {
            if t <= now {
                self.next_port_rebind = Some(t + every);
                self.rebind_all()?;
            }
        }
        Ok(())
    }

    /// Gives every session a new upstream socket (a new port, on `upstream_ip`). The old
    /// socket is closed: the server's packets to the old mapping go nowhere, as behind a NAT
    /// that forgot it.
    fn rebind_all(&mut self) -> io::Result<()> {
        for i in 0..self.sessions.len() {
            let mut fresh = bind_udp(SocketAddr::new(self.upstream_ip, 0))?;
            self.poll
                .registry()
                .register(&mut fresh, Token(i + 1), Interest::READABLE)?;
            let mut old = std::mem::replace(&mut self.sessions[i].upstream, fresh);
            self.poll.registry().deregister(&mut old)?;
            self.counters.rebinds += 1;
        }
        Ok(())
    }

    /// Counts the rebinding and black-out times from `now` on.
    fn restart_clock(&mut self, now: Instant) {
        self.start = now;
        self.next_port_rebind = self.opts.rebind_port_every.map(|t| now + t);
        self.addr_rebind = self.opts.rebind_addr_at.map(|t| now + t);
    }

    fn blacked_out(&self, now: Instant) -> bool {
        self.opts.blackhole_at.is_some_and(|at| {
            let from = self.start + at;
            now >= from && now < from + self.opts.blackhole_for
        })
    }

    fn drain_listen(&mut self, buf: &mut [u8]) -> io::Result<()> {
        loop {
            let (n, from) = match self.listen.recv_from(buf) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                // An ICMP error for an earlier send (a client that went away): keep going.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            };
            let session = match self.by_client.get(&from) {
                Some(&i) => i,
                None => {
                    if self.sessions.is_empty() && self.opts.clock_from_first_datagram {
                        self.restart_clock(Instant::now());
                    }
                    let i = self.sessions.len();
                    let mut upstream = bind_udp(SocketAddr::new(self.upstream_ip, 0))?;
                    self.poll.registry().register(
                        &mut upstream,
                        Token(i + 1),
                        Interest::READABLE,
                    )?;
                    self.sessions.push(Session {
                        client: from,
                        upstream,
                    });
                    self.by_client.insert(from, i);
                    self.counters.sessions += 1;
                    i
                }
            };
            self.c2s_seq += 1;
            let forced_drop = self
                .opts
                .drop_c2s_range
                .is_some_and(|(a, b)| (a..=b).contains(&self.c2s_seq));
            self.impair_and_forward(Dir::ClientToServer, session, &mut buf[..n], forced_drop);
        }
    }

    fn drain_upstream(&mut self, session: usize, buf: &mut [u8]) {
        loop {
            let Some(s) = self.sessions.get(session) else {
                return;
            };
            let n = match s.upstream.recv_from(buf) {
                // Only the server's packets go back (anything else on that port is stray).
                Ok((n, from)) if from == self.opts.server => n,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                // ICMP port unreachable from a server that is not up (yet): not fatal.
                Err(_) => continue,
            };
            self.s2c_bytes += n as u64;
            self.impair_and_forward(Dir::ServerToClient, session, &mut buf[..n], false);
        }
    }

    fn impair_and_forward(&mut self, dir: Dir, session: usize, data: &mut [u8], forced_drop: bool) {
        let long = is_long_header(data);
        let blackout = self.blacked_out(Instant::now());
        let (imp, c) = match dir {
            Dir::ClientToServer => (&mut self.c2s, &mut self.counters.c2s),
            Dir::ServerToClient => (&mut self.s2c, &mut self.counters.s2c),
        };
        c.received += 1;
        c.received_long += u64::from(long);
        // The random draw happens for every datagram, so a forced drop or a black-out does not
        // shift the choices made for the datagrams after it.
        let verdict = imp.judge(data);
        let verdict = if forced_drop || blackout {
            Verdict::Drop
        } else {
            verdict
        };
        match verdict {
            Verdict::Drop => {
                c.dropped += 1;
                c.dropped_long += u64::from(long);
                return;
            }
            Verdict::Corrupt => {
                imp.corrupt(data);
                c.corrupted += 1;
                c.corrupted_long += u64::from(long);
            }
            Verdict::Forward => {}
        }
        if self.opts.delay.is_zero() {
            self.send(dir, session, data);
        } else {
            let due = Instant::now() + self.opts.delay;
            self.queue.push_back(Delayed {
                due,
                dir,
                session,
                data: data.to_vec(),
            });
        }
    }

    fn send(&mut self, dir: Dir, session: usize, data: &[u8]) {
        let s = &self.sessions[session];
        let (res, c) = match dir {
            Dir::ClientToServer => (
                s.upstream.send_to(data, self.opts.server),
                &mut self.counters.c2s,
            ),
            Dir::ServerToClient => (self.listen.send_to(data, s.client), &mut self.counters.s2c),
        };
        match res {
            Ok(_) => c.forwarded += 1,
            Err(_) => c.send_errors += 1,
        }
    }
}

/// Binds and runs a relay on a thread of its own until `stop` is set; returns the address the
/// clients should use and the thread, which yields the counters.
pub fn spawn(
    opts: Options,
    stop: Arc<AtomicBool>,
) -> io::Result<(SocketAddr, std::thread::JoinHandle<io::Result<Counters>>)> {
    let relay = Relay::bind(opts)?;
    let addr = relay.local_addr()?;
    let handle = std::thread::spawn(move || relay.run(&stop));
    Ok((addr, handle))
}

mod sock;

#[cfg(test)]
mod tests;
