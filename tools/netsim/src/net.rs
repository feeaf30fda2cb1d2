//! Several client/server connection pairs sharing one bottleneck, on a virtual clock.
//!
//! The library's [`quiche::testing::Pipe`] joins exactly one client and one server. A browser
//! fetching a page over HTTP/1.1 opens up to six connections to the same server, and they
//! compete for the same access link: their datagrams wait in the same drop-tail queue. [`Net`]
//! models that with the link model of `Pipe`, built from the same pieces
//! ([`quiche::testing::link`]: per direction: a bottleneck of a given rate that
//! serialises datagrams one after the other, a drop-tail queue in bytes in front of it, a
//! one-way delay and random loss from a seeded PRNG), but one link per direction for every pair,
//! and pairs that can join while the others run.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use quiche::testing::{virtual_epoch, Bottleneck, Direction, InFlight, Rng};
use quiche::{Config, Connection, ConnectionId, Error, RecvInfo};

/// One direction of the shared path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkModel {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Bottleneck rate in bits per second (of UDP payload bytes).
    pub rate_bps: u64,
    /// Bytes the drop-tail queue holds; `None` is unbounded.
    pub queue_bytes: Option<u64>,
    /// Probability that a datagram is lost at random (before it reaches the queue).
    pub loss: f64,
    /// A change of rate mid-run: from this time after the network was created, the
    /// bottleneck serialises at this rate (bits per second) instead of `rate_bps`. Datagrams
    /// already accepted keep the times they were given; the queue limit stays in bytes.
    pub rate_change: Option<(Duration, u64)>,
}

impl LinkModel {
    /// The rate in force `elapsed` after the network was created.
    pub fn rate_at(&self, elapsed: Duration) -> u64 {
        match self.rate_change {
            Some((at, rate)) if elapsed >= at => rate,
            _ => self.rate_bps,
        }
    }
}

/// What one direction of the shared link did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Datagrams offered to the link.
    pub sent: u64,
    /// Bytes offered to the link.
    pub bytes: u64,
    /// Datagrams lost at random.
    pub dropped_random: u64,
    /// Datagrams dropped because the queue was full.
    pub dropped_queue: u64,
}

struct Link {
    model: LinkModel,
    bottleneck: Bottleneck,
    counters: LinkCounters,
}

impl Link {
    /// When a datagram of `len` bytes offered at `now` reaches the far end, or `None` when the
    /// queue has no room for it.
    fn schedule(&mut self, now: Instant, elapsed: Duration, len: usize) -> Option<Instant> {
        let m = &self.model;
        let queue = m
            .queue_bytes
            .map(|q| usize::try_from(q).unwrap_or(usize::MAX));
        // The bottleneck takes its rate per datagram, so a scheduled change needs no state.
        self.bottleneck
            .schedule(now, len, Some(m.rate_at(elapsed)), queue, m.delay)
    }
}

/// A client and the server connection that serves it.
pub struct Pair {
    /// The client side.
    pub client: Connection,
    /// The server side.
    pub server: Connection,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    /// Per direction, when the last paced datagram leaves: the sender is asked for more only
    /// then, as an application holding a paced datagram until its time would.
    paced_until: [Option<Instant>; 2],
}

impl Pair {
    fn sender(&mut self, direction: Direction) -> &mut Connection {
        match direction {
            Direction::ToServer => &mut self.client,
            Direction::ToClient => &mut self.server,
        }
    }
}

const DIRECTIONS: [Direction; 2] = [Direction::ToServer, Direction::ToClient];

/// Connection pairs sharing one link per direction, on a virtual clock.
pub struct Net {
    /// The virtual time now.
    pub now: Instant,
    /// The connection pairs, in the order they joined.
    pub pairs: Vec<Pair>,
    start: Instant,
    links: [Link; 2],
    in_flight: InFlight<(usize, Direction, Vec<u8>)>,
    rng: Rng,
    buf: Vec<u8>,
    /// Buffers of delivered datagrams, reused for new ones.
    spare: Vec<Vec<u8>>,
    /// Which pair sends first in the next flush: rotating it keeps the order in which pairs
    /// reach the shared queue from favouring one of them.
    first: usize,
}

impl Net {
    /// An empty network with a link model per direction and a seed for its randomness (loss
    /// and connection IDs).
    pub fn new(to_server: LinkModel, to_client: LinkModel, seed: u64) -> Net {
        let link = |model| Link {
            model,
            bottleneck: Bottleneck::default(),
            counters: LinkCounters::default(),
        };
        let now = virtual_epoch();
        Net {
            now,
            pairs: Vec::new(),
            start: now,
            links: [link(to_server), link(to_client)],
            in_flight: InFlight::default(),
            rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            buf: vec![0; 65535],
            spare: Vec::new(),
            first: 0,
        }
    }

    /// Opens a new connection pair now (the client sends its first Initial at the next step);
    /// returns its index in [`Net::pairs`].
    pub fn connect(
        &mut self,
        client_config: &mut Config,
        server_config: &mut Config,
    ) -> Result<usize, Error> {
        let index = self.pairs.len();
        let port = u16::try_from(10_000 + index).map_err(|_| Error::InvalidState)?;
        let client_addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), port);
        let server_addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), 443);
        let mut client_scid = [0u8; 16];
        self.rng.fill(&mut client_scid);
        let mut server_scid = [0u8; 16];
        self.rng.fill(&mut server_scid);
        let client = quiche::connect(
            Some("localhost"),
            &ConnectionId::from_ref(&client_scid),
            client_addr,
            server_addr,
            client_config,
        )?;
        let server = quiche::accept(
            &ConnectionId::from_ref(&server_scid),
            None,
            server_addr,
            client_addr,
            server_config,
        )?;
        self.pairs.push(Pair {
            client,
            server,
            client_addr,
            server_addr,
            paced_until: [None; 2],
        });
        Ok(index)
    }

    /// Virtual time since the network was created.
    pub fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    /// What the link in one direction did so far.
    pub fn counters(&self, direction: Direction) -> LinkCounters {
        self.links[direction as usize].counters
    }

    /// How long a datagram put on the link in `direction` now would wait in the queue.
    pub fn queue_delay(&self, direction: Direction) -> Duration {
        self.links[direction as usize]
            .bottleneck
            .queue_delay(self.now)
    }

    /// Lets every connection send what it can now, putting its datagrams on the shared link.
    fn flush(&mut self) -> Result<(), Error> {
        let n = self.pairs.len();
        for k in 0..n {
            let p = (self.first + k) % n;
            for direction in DIRECTIONS {
                self.flush_one(p, direction)?;
            }
        }
        if n > 0 {
            self.first = (self.first + 1) % n;
        }
        Ok(())
    }

    fn flush_one(&mut self, p: usize, direction: Direction) -> Result<(), Error> {
        let d = direction as usize;
        // A paced sender waits, unless one of its timers is due: a delayed ACK's deadline is
        // handled by sending (not by `on_timeout`), and skipping the send would leave the
        // deadline due forever, the clock stuck at it.
        let due = self.pairs[p]
            .sender(direction)
            .timeout_instant()
            .is_some_and(|t| t <= self.now);
        if !due && self.pairs[p].paced_until[d].is_some_and(|t| t > self.now) {
            return Ok(());
        }
        loop {
            let (len, info) = match self.pairs[p]
                .sender(direction)
                .send_at(&mut self.buf, self.now)
            {
                Ok(v) => v,
                Err(Error::Done) => return Ok(()),
                Err(e) => return Err(e),
            };
            // Pacing: a datagram leaves no earlier than the time its sender asked for.
            let leave = info.at.max(self.now);
            let mut data = self.spare.pop().unwrap_or_default();
            data.clear();
            data.extend_from_slice(&self.buf[..len]);
            self.offer(p, direction, leave, data);
            if leave > self.now {
                self.pairs[p].paced_until[d] = Some(leave);
                return Ok(());
            }
        }
    }

    fn offer(&mut self, pair: usize, direction: Direction, at: Instant, data: Vec<u8>) {
        let link = &mut self.links[direction as usize];
        link.counters.sent += 1;
        link.counters.bytes += data.len() as u64;
        if self.rng.chance(link.model.loss) {
            link.counters.dropped_random += 1;
            self.spare.push(data);
            return;
        }
        let elapsed = at.saturating_duration_since(self.start);
        let Some(arrival) = link.schedule(at, elapsed, data.len()) else {
            link.counters.dropped_queue += 1;
            self.spare.push(data);
            return;
        };
        self.in_flight.push(arrival, (pair, direction, data));
    }

    /// Delivers every datagram that has arrived by now. A receiver's error on one datagram is
    /// its own business (it drops the datagram or closes the connection).
    fn deliver(&mut self) {
        while let Some((pair, direction, mut data)) = self.in_flight.pop_arrived(self.now) {
            let pair = &mut self.pairs[pair];
            let (conn, info) = match direction {
                Direction::ToServer => (
                    &mut pair.server,
                    RecvInfo {
                        from: pair.client_addr,
                        to: pair.server_addr,
                    },
                ),
                Direction::ToClient => (
                    &mut pair.client,
                    RecvInfo {
                        from: pair.server_addr,
                        to: pair.client_addr,
                    },
                ),
            };
            let _ = conn.recv_at(&mut data, info, self.now);
            self.spare.push(data);
        }
    }

    /// When the next thing happens: an arrival, a timer, or the end of a pacing delay.
    pub fn next_event(&self) -> Option<Instant> {
        let arrival = self.in_flight.next_arrival();
        let pairs = self.pairs.iter().flat_map(|p| {
            let paced = p
                .paced_until
                .into_iter()
                .flatten()
                .filter(|&t| t > self.now);
            [p.client.timeout_instant(), p.server.timeout_instant()]
                .into_iter()
                .flatten()
                .chain(paced)
        });
        arrival.into_iter().chain(pairs).min()
    }

    /// One step: every connection sends, arrivals are delivered, the clock jumps to the next
    /// event and due timers fire. Returns false when nothing is left to happen.
    pub fn step(&mut self) -> Result<bool, Error> {
        self.step_until(None)
    }

    /// [`Net::step`], but the clock stops at `limit` if nothing happens before it (so that a
    /// caller can open a connection or take a sample at a time of its choosing).
    pub fn step_until(&mut self, limit: Option<Instant>) -> Result<bool, Error> {
        self.flush()?;
        self.deliver();
        self.flush()?;
        let Some(next) = self.next_event() else {
            return Ok(false);
        };
        let next = limit
            .filter(|&l| l > self.now)
            .map_or(next, |l| next.min(l));
        self.now = self.now.max(next);
        self.deliver();
        let now = self.now;
        for pair in &mut self.pairs {
            for conn in [&mut pair.client, &mut pair.server] {
                if conn.timeout_instant().is_some_and(|t| t <= now) {
                    conn.on_timeout_at(now);
                }
            }
        }
        Ok(true)
    }
}
