//! An in-memory pipe that connects a client and a server [`Connection`] on a
//! virtual clock through a modelled link, and a pcap writer for dissecting what they exchanged.
//!
//! Everything here is deterministic: the clock only moves when the pipe moves it, and random
//! loss, reordering, duplication and jitter come from a seeded generator.

use super::link::{Bottleneck, InFlight, Jitter, PathMtu};
use super::{pcap, virtual_epoch, Rng};

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::{Config, Connection, ConnectionId, Error, RecvInfo, Result};

/// Which way a datagram travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the client to the server.
    ToServer,
    /// From the server to the client.
    ToClient,
}

/// What the pipe's hook decides for one datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Deliver it as the link model says.
    Deliver,
    /// Drop it.
    Drop,
    /// Deliver it this much later than the link model says (reordering).
    Delay(Duration),
    /// Deliver it twice.
    Duplicate,
    /// Deliver it with one byte among its last 16 flipped: those belong to the AEAD tag of the
    /// datagram's last packet, which then fails to authenticate while its header stays
    /// intact (the corruption of the interop runner's corruption cases).
    Corrupt,
}

/// A datagram as the hook sees it.
#[derive(Debug)]
pub struct DatagramInfo<'a> {
    /// Which way it travels.
    pub direction: Direction,
    /// How many datagrams this side sent before it.
    pub index: u64,
    /// When it was sent.
    pub sent_at: Instant,
    /// Its bytes.
    pub data: &'a [u8],
}

/// A decision made for each datagram before the link model applies.
pub type Hook = Box<dyn FnMut(&DatagramInfo) -> Verdict>;

/// The model of one direction of the link: a bottleneck with a drop-tail queue, a propagation
/// delay, and random loss, reordering, duplication and jitter.
#[derive(Clone, Debug)]
pub struct LinkConfig {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Bottleneck rate in bits per second; `None` is infinitely fast.
    pub rate_bps: Option<u64>,
    /// Bytes the bottleneck queue holds before it drops arrivals; `None` is unbounded.
    pub queue_bytes: Option<usize>,
    /// Probability that a datagram is lost at random.
    pub loss: f64,
    /// Probability that a datagram is delayed by `reorder_delay` (arrives after later ones).
    pub reorder: f64,
    /// The extra delay of reordered datagrams.
    pub reorder_delay: Duration,
    /// Probability that a datagram is delivered twice.
    pub duplicate: f64,
    /// The link MTU: larger datagrams are dropped without notice.
    pub mtu: PathMtu,
    /// ECN-capable datagrams that find more than this many bytes queued are marked CE (an AQM
    /// in front of the bottleneck, see [`Bottleneck::ecn_mark`]); `None` marks nothing.
    pub ce_threshold: Option<usize>,
    /// Whether the link clears the ECN field of every datagram (a bleaching middlebox).
    pub ecn_bleach: bool,
    /// The largest random extra delay of a datagram (uniform, order kept; see [`Jitter`]).
    /// Zero, the default, draws nothing from the generator, so runs without jitter are the
    /// same as before the option existed.
    pub jitter: Duration,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            delay: Duration::from_millis(10),
            rate_bps: None,
            queue_bytes: None,
            loss: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(5),
            duplicate: 0.0,
            mtu: PathMtu::default(),
            ce_threshold: None,
            ecn_bleach: false,
            jitter: Duration::ZERO,
        }
    }
}

/// Counters of what the link did.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinkStats {
    /// Datagrams offered to the link.
    pub sent: u64,
    /// Datagrams delivered (duplicates count twice).
    pub delivered: u64,
    /// Datagrams lost at random or by the hook.
    pub dropped_random: u64,
    /// Datagrams dropped because the bottleneck queue was full.
    pub dropped_queue: u64,
    /// Datagrams dropped because they were larger than the link MTU.
    pub dropped_mtu: u64,
    /// Datagrams the hook had corrupted (delivered, with a flipped byte).
    pub corrupted: u64,
    /// Datagrams that entered the link ECN-capable (ECT(0) or ECT(1)).
    pub ecn_capable: u64,
    /// Datagrams the AQM marked CE.
    pub ce_marked: u64,
    /// Bytes offered to the link.
    pub bytes: u64,
}

struct Link {
    config: LinkConfig,
    bottleneck: Bottleneck,
    jitter: Jitter,
    sent_index: u64,
    stats: LinkStats,
}

impl Link {
    fn new(config: LinkConfig) -> Self {
        Link {
            config,
            bottleneck: Bottleneck::default(),
            jitter: Jitter::default(),
            sent_index: 0,
            stats: LinkStats::default(),
        }
    }

    /// When a datagram of `len` bytes offered at `now` reaches the far end, or `None` when the
    /// drop-tail queue is full.
    fn schedule(&mut self, now: Instant, len: usize) -> Option<Instant> {
        let c = &self.config;
        self.bottleneck
            .schedule(now, len, c.rate_bps, c.queue_bytes, c.delay)
    }
}

/// The capacity of a new datagram buffer: any common datagram fits, so buffers are reused
/// without growing whatever they carried before.
const SPARE_CAPACITY: usize = 1500;

/// Steps one [`Pipe::run_until`] may take by default: over 15 times what any test of the crate
/// needed when this was written (30,000), and at most a minute or two of a debug build (a
/// bulk transfer steps about twice per datagram, at some 100 µs a step when unoptimised).
pub const DEFAULT_MAX_STEPS: u64 = 500_000;

/// Steps in a row at one instant of virtual time after which [`Pipe::run_until`] gives up.
/// Each step moves the clock to the next event, so a healthy run hardly ever takes two.
const MAX_STEPS_AT_ONE_INSTANT: u64 = 10_000;

/// A client and a server connection joined by a modelled link on a virtual clock.
pub struct Pipe {
    /// The client side.
    pub client: Connection,
    /// The server side.
    pub server: Connection,
    /// The virtual time now.
    pub now: Instant,
    /// The client's address.
    pub client_addr: SocketAddr,
    /// The server's address.
    pub server_addr: SocketAddr,
    /// Decides the fate of individual datagrams before the link model applies.
    pub hook: Option<Hook>,
    /// Network address translation of the client's datagrams: (client's local address, the
    /// address the server sees them come from). A local address not listed is seen as is.
    /// Changing an entry mid-transfer models a NAT rebinding (black-hole the old public
    /// address too for a NAT that forgot the mapping).
    pub nat: Vec<(SocketAddr, SocketAddr)>,
    /// Client addresses whose datagrams the network drops in both directions (local ones, or
    /// public ones of `nat` for the server's datagrams).
    pub blackholed: Vec<SocketAddr>,
    /// Client addresses (local ones, or public ones of `nat`) on whose paths the network
    /// clears the ECN field of every datagram, both ways: a bleaching middlebox on those paths
    /// only (`LinkConfig::ecn_bleach` bleaches everything in one direction).
    pub ecn_bleached: Vec<SocketAddr>,
    /// Records every datagram that enters the link, for tshark.
    pub pcap: Option<pcap::PcapWriter<Box<dyn std::io::Write>>>,
    /// Steps one [`Pipe::run_until`] may take before it panics ([`DEFAULT_MAX_STEPS`]).
    pub max_steps: u64,
    start: Instant,
    links: [Link; 2],
    in_flight: InFlight<(Direction, Vec<u8>, RecvInfo, u8)>,
    /// Per direction, the release time of the last paced datagram: like an application that
    /// holds a paced datagram until its time, the pipe asks that side for more only then.
    paced_until: [Option<Instant>; 2],
    rng: Rng,
    buf: Vec<u8>,
    /// Buffers of delivered datagrams, reused for new ones (no allocation per datagram once
    /// the pipe has warmed up).
    spare: Vec<Vec<u8>>,
}

impl Pipe {
    /// A pipe whose connections use the given configurations and a symmetric link.
    pub fn new(client_config: &mut Config, server_config: &mut Config) -> Result<Pipe> {
        Self::with_links(
            client_config,
            server_config,
            LinkConfig::default(),
            LinkConfig::default(),
            1,
        )
    }

    /// A pipe with a link model per direction and a seed for its randomness.
    pub fn with_links(
        client_config: &mut Config,
        server_config: &mut Config,
        to_server: LinkConfig,
        to_client: LinkConfig,
        seed: u64,
    ) -> Result<Pipe> {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let (client_addr, server_addr) = Self::addresses()?;
        let now = virtual_epoch();

        let mut client_scid = [0u8; 16];
        rng.fill(&mut client_scid);
        let mut server_scid = [0u8; 16];
        rng.fill(&mut server_scid);

        let client = crate::connect(
            Some("localhost"),
            &ConnectionId::from_ref(&client_scid),
            client_addr,
            server_addr,
            client_config,
        )?;
        let server = crate::accept(
            &ConnectionId::from_ref(&server_scid),
            None,
            server_addr,
            client_addr,
            server_config,
        )?;
        let addrs = (client_addr, server_addr);
        Ok(Self::joining(
            client,
            server,
            now,
            addrs,
            [to_server, to_client],
            rng,
        ))
    }

    /// A pipe whose connections start established without a TLS handshake, with fixed
    /// connection IDs and 1-RTT keys ([`Connection::fuzz_established_pair`]): what the
    /// connection fuzz targets drive, at a fraction of a handshake's cost.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn fuzz_established(
        client_config: &mut Config,
        server_config: &mut Config,
    ) -> Result<Pipe> {
        let (client_addr, server_addr) = Self::addresses()?;
        let now = virtual_epoch();
        let (client, server) = <Connection>::fuzz_established_pair(
            client_config,
            server_config,
            client_addr,
            server_addr,
            now,
        )?;
        let addrs = (client_addr, server_addr);
        let links = [LinkConfig::default(), LinkConfig::default()];
        Ok(Self::joining(
            client,
            server,
            now,
            addrs,
            links,
            Rng(0x9E37_79B9_7F4A_7C15),
        ))
    }

    /// The addresses of the pipe's client and server.
    fn addresses() -> Result<(SocketAddr, SocketAddr)> {
        let client_addr: SocketAddr = "127.0.0.1:4321".parse().map_err(|_| Error::InvalidState)?;
        let server_addr: SocketAddr = "127.0.0.1:443".parse().map_err(|_| Error::InvalidState)?;
        Ok((client_addr, server_addr))
    }

    /// Joins `client` and `server` at `(client_addr, server_addr)` by links of the given
    /// configs (to the server, to the client).
    fn joining(
        client: Connection,
        server: Connection,
        now: Instant,
        (client_addr, server_addr): (SocketAddr, SocketAddr),
        [to_server, to_client]: [LinkConfig; 2],
        rng: Rng,
    ) -> Pipe {
        Pipe {
            client,
            server,
            now,
            client_addr,
            server_addr,
            hook: None,
            nat: Vec::new(),
            blackholed: Vec::new(),
            ecn_bleached: Vec::new(),
            pcap: None,
            max_steps: DEFAULT_MAX_STEPS,
            start: now,
            links: [Link::new(to_server), Link::new(to_client)],
            in_flight: InFlight::default(),
            paced_until: [None; 2],
            rng,
            buf: vec![0; 65535],
            spare: Vec::new(),
        }
    }

    /// Makes room for `n` datagrams in flight at once, so that a long transfer does not
    /// allocate a buffer each time the windows let more datagrams into the link (tests that
    /// count the library's allocations call this first).
    pub fn reserve_datagrams(&mut self, n: usize) {
        self.in_flight.reserve(n);
        self.spare.reserve(n);
        while self.spare.len() < n {
            self.spare.push(Vec::with_capacity(SPARE_CAPACITY));
        }
    }

    /// Virtual time elapsed since the pipe was created.
    pub fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    /// The link model of one direction, to change mid-run (a route change, an AQM switched
    /// on).
    pub fn link_config_mut(&mut self, direction: Direction) -> &mut LinkConfig {
        &mut self.links[direction as usize].config
    }

    /// Counters of the link in one direction.
    pub fn link_stats(&self, direction: Direction) -> LinkStats {
        self.links[direction as usize].stats
    }

    /// How long a datagram entering the link in one direction now would wait in the
    /// bottleneck's queue before its serialisation starts (the queueing delay).
    pub fn queue_delay(&self, direction: Direction) -> Duration {
        self.links[direction as usize]
            .bottleneck
            .queue_delay(self.now)
    }

    /// Lets both sides send everything they can now, putting the datagrams on the link.
    pub fn flush(&mut self) -> Result<()> {
        for direction in [Direction::ToServer, Direction::ToClient] {
            if self.paced_until[direction as usize].is_some_and(|t| t > self.now) {
                continue;
            }
            loop {
                let conn = match direction {
                    Direction::ToServer => &mut self.client,
                    Direction::ToClient => &mut self.server,
                };
                let (len, info) = match conn.send_at(&mut self.buf, self.now) {
                    Ok(v) => v,
                    Err(Error::Done) => break,
                    Err(e) => return Err(e),
                };
                // Pacing: a datagram leaves no earlier than the time the sender asked for.
                let leave = info.at.max(self.now);
                // New buffers get room for any usual datagram, so that a reused one never grows.
                let mut data = self
                    .spare
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(len.max(SPARE_CAPACITY)));
                data.clear();
                data.extend_from_slice(&self.buf[..len]);
                let addrs = RecvInfo {
                    from: info.from,
                    to: info.to,
                };
                self.offer(direction, leave, data, addrs, info.ecn);
                if leave > self.now {
                    // The sender is pacing: give the other side its turn and come back when
                    // this datagram has left.
                    self.paced_until[direction as usize] = Some(leave);
                    break;
                }
            }
        }
        Ok(())
    }

    fn offer(
        &mut self,
        direction: Direction,
        at: Instant,
        mut data: Vec<u8>,
        mut addrs: RecvInfo,
        ecn: u8,
    ) {
        // The client's end of the path, as a local address and as the public one of the NAT.
        let client_side = match direction {
            Direction::ToServer => addrs.from,
            Direction::ToClient => addrs.to,
        };
        let other_side = self.nat.iter().find_map(|&(local, public)| {
            (local == client_side)
                .then_some(public)
                .or((public == client_side).then_some(local))
        });
        let path_bleaches = self
            .ecn_bleached
            .iter()
            .any(|a| *a == client_side || Some(*a) == other_side);
        if direction == Direction::ToServer {
            if let Some(&(_, public)) = self.nat.iter().find(|(l, _)| *l == addrs.from) {
                addrs.from = public;
            }
            if self.blackholed.contains(&addrs.from) {
                self.spare.push(data);
                return;
            }
        }
        let link = &mut self.links[direction as usize];
        let index = link.sent_index;
        link.sent_index += 1;
        link.stats.sent += 1;
        link.stats.bytes += data.len() as u64;

        if let Some(pcap) = self.pcap.as_mut() {
            let (from, to) = (addrs.from, addrs.to);
            // A capture that fails to write only loses the capture, never the transfer.
            let _ = pcap.write_datagram(at - self.start, from, to, &data);
        }

        let verdict = match self.hook.as_mut() {
            Some(hook) => hook(&DatagramInfo {
                direction,
                index,
                sent_at: at,
                data: &data,
            }),
            None => Verdict::Deliver,
        };
        let link = &mut self.links[direction as usize];
        if !link.config.mtu.carries(at - self.start, data.len()) {
            link.stats.dropped_mtu += 1;
            self.spare.push(data);
            return;
        }
        if verdict == Verdict::Drop || self.rng.chance(link.config.loss) {
            link.stats.dropped_random += 1;
            self.spare.push(data);
            return;
        }
        let ecn = if link.config.ecn_bleach || path_bleaches {
            0
        } else {
            ecn
        };
        if ecn != 0 {
            link.stats.ecn_capable += 1;
        }
        let ecn = link
            .bottleneck
            .ecn_mark(at, ecn, link.config.rate_bps, link.config.ce_threshold);
        let Some(mut arrival) = link.schedule(at, data.len()) else {
            link.stats.dropped_queue += 1;
            self.spare.push(data);
            return;
        };
        if verdict == Verdict::Corrupt && !data.is_empty() {
            link.stats.corrupted += 1;
            let span = data.len().min(16) as u64;
            let at = data.len() - 1 - self.rng.below(span) as usize;
            data[at] ^= 1 + self.rng.below(255) as u8;
        }
        if !link.config.jitter.is_zero() {
            let draw = self.rng.next_f64();
            arrival = link.jitter.apply(arrival, link.config.jitter, draw);
        }
        if let Verdict::Delay(extra) = verdict {
            arrival += extra;
        } else if self.rng.chance(link.config.reorder) {
            arrival += link.config.reorder_delay;
        }
        if verdict == Verdict::Duplicate || self.rng.chance(link.config.duplicate) {
            self.in_flight
                .push(arrival, (direction, data.clone(), addrs, ecn));
        }
        if ecn == super::link::CE {
            link.stats.ce_marked += 1;
        }
        self.in_flight.push(arrival, (direction, data, addrs, ecn));
    }

    /// Delivers every datagram that has arrived by now. Errors from `recv` of a single datagram
    /// are the receiver's business (it drops the datagram or closes); they are not returned.
    pub fn deliver(&mut self) {
        while let Some((direction, mut data, mut info, ecn)) = self.in_flight.pop_arrived(self.now)
        {
            if direction == Direction::ToClient {
                // The NAT maps the public address back to the client's local one; an address
                // it no longer maps, or a black-holed one, loses the datagram.
                let local = match self.nat.iter().find(|(_, p)| *p == info.to) {
                    Some(&(local, _)) => Some(local),
                    None => (!self.nat.iter().any(|(l, _)| *l == info.to)).then_some(info.to),
                };
                match local.filter(|l| !self.blackholed.contains(l)) {
                    Some(local) => info.to = local,
                    None => {
                        self.spare.push(data);
                        continue;
                    }
                }
            }
            let link = &mut self.links[direction as usize];
            link.stats.delivered += 1;
            let conn = match direction {
                Direction::ToServer => &mut self.server,
                Direction::ToClient => &mut self.client,
            };
            let _ = conn.recv_with_ecn_at(&mut data, info, ecn, self.now);
            // Bounded by the datagrams ever in flight at once.
            self.spare.push(data);
        }
    }

    /// When the next thing happens: an arrival, a timer or the end of a pacing delay.
    pub fn next_event(&self) -> Option<Instant> {
        let arrival = self.in_flight.next_arrival();
        let timers = [self.client.timeout_instant(), self.server.timeout_instant()];
        let paced = self
            .paced_until
            .into_iter()
            .flatten()
            .filter(|&t| t > self.now);
        arrival
            .into_iter()
            .chain(timers.into_iter().flatten())
            .chain(paced)
            .min()
    }

    /// Runs one step: both sides send, arrivals are delivered, the clock jumps to the next
    /// event and due timers fire. Returns false when nothing is left to happen.
    pub fn step(&mut self) -> Result<bool> {
        self.flush()?;
        self.deliver();
        self.flush()?;
        let Some(next) = self.next_event() else {
            return Ok(false);
        };
        if next > self.now {
            self.now = next;
        }
        self.deliver();
        if self.client.timeout_instant().is_some_and(|t| t <= self.now) {
            self.client.on_timeout_at(self.now);
        }
        if self.server.timeout_instant().is_some_and(|t| t <= self.now) {
            self.server.on_timeout_at(self.now);
        }
        Ok(true)
    }

    /// Steps until `done` holds, failing after `limit` of virtual time. Panics after
    /// [`Pipe::max_steps`] steps, or after many steps in a row at one instant: endpoints that
    /// keep waking each other up without progress make a test fail, not hang.
    pub fn run_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&mut Pipe) -> bool,
    ) -> Result<()> {
        let deadline = self.now + limit;
        let (mut steps, mut still, mut last) = (0u64, 0u64, self.now);
        while !done(self) {
            if self.now > deadline || !self.step()? {
                return Err(Error::Done);
            }
            steps += 1;
            if self.now == last {
                still += 1;
            } else {
                (still, last) = (0, self.now);
            }
            // Every step moves the clock to the next event, so a run that keeps stepping at
            // one instant, or takes far more steps than any transfer needs, is two endpoints
            // waking each other up without end: fail here rather than hang the test.
            assert!(
                still < MAX_STEPS_AT_ONE_INSTANT && steps < self.max_steps,
                "run_until: {steps} steps ({still} in a row at {:?} of virtual time) without \
                 reaching its goal: the endpoints keep waking each other up (raise \
                 Pipe::max_steps if a long run really needs more)",
                self.elapsed()
            );
        }
        Ok(())
    }

    /// Runs every event due in the next `duration` of virtual time and leaves the clock exactly
    /// `duration` later. Unlike `run_until(.., |p| p.now >= t)`, which steps to the next event
    /// and so can jump straight to an idle timeout when nothing else is pending, this never
    /// moves the clock past its end.
    pub fn run_for(&mut self, duration: Duration) -> Result<()> {
        let end = self.now + duration;
        let mut steps = 0u64;
        loop {
            // Whatever the endpoints have to send now goes out before the clock may move.
            self.flush()?;
            self.deliver();
            self.flush()?;
            if self.next_event().is_none_or(|next| next > end) {
                break;
            }
            self.step()?;
            steps += 1;
            assert!(
                steps < self.max_steps,
                "run_for: {steps} steps within {duration:?}: the endpoints keep waking each \
                 other up"
            );
        }
        self.now = end;
        Ok(())
    }

    /// Completes the handshake on both sides.
    pub fn handshake(&mut self) -> Result<()> {
        self.run_until(Duration::from_secs(30), |p| {
            p.client.is_established() && p.server.is_established()
        })
    }
}
