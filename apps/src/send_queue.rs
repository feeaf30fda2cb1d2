//! Getting a connection's datagrams onto the socket in batches, honouring pacing.
//!
//! `Connection::send` writes each datagram straight into the batch buffer of [`SendBuffers`],
//! right after the previous one, and stamps it with `SendInfo.at`, the moment the pacer wants
//! it on the wire. Consecutive datagrams join one batch, sent with one system call (UDP GSO,
//! see [`crate::udp`]), while they
//! - go to the same destination,
//! - have the size of the first one (the last may be shorter, and then ends the batch),
//! - are due within [`PACING_HORIZON`],
//! - fit in the connection's send quantum (`Connection::send_quantum`, the burst its
//!   congestion controller allows at once) and the kernel's limits ([`GSO_MAX_SEGMENTS`],
//!   [`GSO_MAX_BYTES`]), and in the caller's burst.
//!
//! A datagram that does not join waits for the next batch. One due later than the horizon
//! waits in its connection's [`SendQueue`] and the event loop sleeps until then (mio's
//! timeout); while it waits the connection is not asked for more, the next one would be due
//! even later. A batch the socket refused (its buffer is full) waits there too, whole, for the
//! socket to become writable; it keeps the batch buffer, and the loop takes a fresh one.
//! Every datagram is sent once, in the order the connection produced it.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use quiche::{Connection, Error};

use crate::udp::{Segments, Transmit, GSO_MAX_BYTES, GSO_MAX_SEGMENTS};

/// Datagrams due within this much time are sent now. The event loop's timer has millisecond
/// resolution (epoll), so waiting for anything closer would oversleep.
pub const PACING_HORIZON: Duration = Duration::from_millis(1);

/// How many free datagram-sized buffers [`SendBuffers`] keeps.
const MAX_FREE_SINGLES: usize = 64;

/// How many free batch-sized buffers [`SendBuffers`] keeps: one connection at a time holds a
/// refused batch (sending stops when the socket is full), so few are ever needed.
const MAX_FREE_BATCHES: usize = 2;

/// The batch buffer being filled and reusable buffers for what waits in the queues, shared by
/// the connections of one socket, so that the steady state allocates nothing per packet.
pub struct SendBuffers {
    work: Vec<u8>,
    max_payload: usize,
    batches: Vec<Vec<u8>>,
    singles: Vec<Vec<u8>>,
}

impl SendBuffers {
    /// Buffers for datagrams of up to `max_payload` bytes (the largest a connection sends).
    pub fn new(max_payload: usize) -> Self {
        let max_payload = max_payload.max(1);
        SendBuffers {
            work: vec![0; Self::batch_size(max_payload)],
            max_payload,
            batches: Vec::new(),
            singles: Vec::new(),
        }
    }

    /// A batch buffer holds the largest batch plus room for the datagram that may not join.
    fn batch_size(max_payload: usize) -> usize {
        GSO_MAX_BYTES.max(max_payload) + max_payload
    }

    /// Takes the filled work buffer (for a refused batch) and puts a fresh one in its place.
    fn take_work(&mut self) -> Vec<u8> {
        let fresh = self
            .batches
            .pop()
            .unwrap_or_else(|| vec![0; Self::batch_size(self.max_payload)]);
        std::mem::replace(&mut self.work, fresh)
    }

    fn put_batch(&mut self, buf: Vec<u8>) {
        if self.batches.len() < MAX_FREE_BATCHES {
            self.batches.push(buf);
        }
    }

    /// Copies the datagram at `work[off..off + len]` into a datagram-sized buffer to wait.
    fn hold(&mut self, c: Pending) -> Held {
        let mut buf = self
            .singles
            .pop()
            .unwrap_or_else(|| vec![0; self.max_payload]);
        let bytes = self.work.get(c.off..c.off + c.len).unwrap_or(&[]);
        buf.clear();
        buf.extend_from_slice(bytes);
        Held {
            buf,
            to: c.to,
            at: c.at,
            ecn: c.ecn,
        }
    }

    fn put_single(&mut self, buf: Vec<u8>) {
        if self.singles.len() < MAX_FREE_SINGLES {
            self.singles.push(buf);
        }
    }
}

/// A datagram due later than the horizon.
struct Held {
    /// Exactly the datagram's bytes.
    buf: Vec<u8>,
    to: SocketAddr,
    at: Instant,
    ecn: u8,
}

/// A batch the socket refused, with how many of its datagrams went before.
struct Refused {
    buf: Vec<u8>,
    len: usize,
    segment: usize,
    to: SocketAddr,
    at: Instant,
    ecn: u8,
    done: usize,
}

impl Refused {
    fn segments(&self) -> Segments<'_> {
        Segments {
            buf: self.buf.get(..self.len).unwrap_or(&[]),
            segment: self.segment,
            to: self.to,
            ecn: self.ecn,
        }
        .skip(self.done)
    }
}

/// The datagrams of one connection that are built but not sent yet: a batch the socket
/// refused, then a datagram due later (in this order).
#[derive(Default)]
pub struct SendQueue {
    refused: Option<Refused>,
    held: Option<Held>,
}

/// Why [`flush`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// The connection has nothing more to send now.
    Idle,
    /// The next datagram is due at this instant.
    Paced(Instant),
    /// The socket's buffer is full: wait until it is writable.
    Blocked,
    /// The burst limit was reached with more to send.
    Burst,
}

impl SendQueue {
    /// Creates an empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// When the first waiting datagram is due.
    pub fn next_at(&self) -> Option<Instant> {
        match (&self.refused, &self.held) {
            (Some(r), _) => Some(r.at),
            (None, Some(h)) => Some(h.at),
            (None, None) => None,
        }
    }

    /// How many datagrams wait.
    pub fn len(&self) -> usize {
        let refused = self.refused.as_ref().map_or(0, |r| r.segments().count());
        refused + usize::from(self.held.is_some())
    }

    /// Whether no datagram waits.
    pub fn is_empty(&self) -> bool {
        self.refused.is_none() && self.held.is_none()
    }

    /// Returns the waiting datagrams' buffers to `bufs` (the connection is gone).
    pub fn clear(&mut self, bufs: &mut SendBuffers) {
        if let Some(r) = self.refused.take() {
            bufs.put_batch(r.buf);
        }
        if let Some(h) = self.held.take() {
            bufs.put_single(h.buf);
        }
    }
}

/// Where datagrams come from: a connection, or a stand-in in tests.
pub trait DatagramSource {
    /// Writes the next datagram into `out` and returns its length, destination, due time and
    /// ECN codepoint; `Error::Done` when there is nothing to send. `now` is the time of the
    /// flush (one clock reading serves a whole batch).
    fn next_datagram(
        &mut self,
        out: &mut [u8],
        now: Instant,
    ) -> quiche::Result<(usize, SocketAddr, Instant, u8)>;

    /// How many bytes may go out in one burst now.
    fn send_quantum(&self) -> usize;

    /// A name for log messages.
    fn name(&self) -> String;
}

impl DatagramSource for Connection {
    fn next_datagram(
        &mut self,
        out: &mut [u8],
        now: Instant,
    ) -> quiche::Result<(usize, SocketAddr, Instant, u8)> {
        let (len, info) = self.send_at(out, now)?;
        Ok((len, info.to, info.at, info.ecn))
    }

    fn send_quantum(&self) -> usize {
        Connection::send_quantum(self)
    }

    fn name(&self) -> String {
        self.trace_id().to_string()
    }
}

/// A datagram written into the work buffer at `off`.
#[derive(Debug, Clone, Copy)]
struct Pending {
    off: usize,
    len: usize,
    to: SocketAddr,
    at: Instant,
    ecn: u8,
}

/// The batch being assembled at the start of the work buffer.
#[derive(Debug, Clone, Copy)]
struct Assembly {
    len: usize,
    segment: usize,
    count: usize,
    /// A datagram shorter than the segment size ended the batch.
    closed: bool,
    to: Option<SocketAddr>,
    at: Option<Instant>,
    /// The ECN codepoint every datagram of the batch carries (one per send call).
    ecn: u8,
    /// The most bytes the batch may hold.
    limit: usize,
    /// The most datagrams it may hold.
    max_count: usize,
}

impl Assembly {
    fn new(limit: usize, max_count: usize) -> Self {
        Assembly {
            len: 0,
            segment: 0,
            count: 0,
            closed: false,
            to: None,
            at: None,
            ecn: 0,
            limit,
            max_count: max_count.clamp(1, GSO_MAX_SEGMENTS),
        }
    }

    /// No further datagram can join.
    fn is_full(&self) -> bool {
        self.count >= self.max_count
            || (self.count > 0 && (self.closed || self.len + self.segment > self.limit))
    }

    /// Whether a datagram of `len` bytes to `to`, due at `at`, marked `ecn`, may join. The
    /// first one joins whatever its size (a datagram is never split), unless it is not due yet.
    fn admits(&self, len: usize, to: SocketAddr, at: Instant, ecn: u8, horizon: Instant) -> bool {
        if at > horizon || len == 0 {
            return false;
        }
        self.count == 0
            || (!self.is_full()
                && self.to == Some(to)
                && self.ecn == ecn
                && len <= self.segment
                && self.len + len <= self.limit)
    }

    fn push(&mut self, len: usize, to: SocketAddr, at: Instant, ecn: u8) {
        if self.count == 0 {
            self.segment = len;
            self.to = Some(to);
            self.at = Some(at);
            self.ecn = ecn;
        }
        self.closed |= len < self.segment;
        self.len += len;
        self.count += 1;
    }
}

/// How filling a batch ended.
enum Fill {
    /// The batch can take no more.
    Full,
    /// The connection has nothing more to send now.
    Done,
    /// The connection wrote a datagram that does not join.
    Carry(Pending),
}

/// Asks `conn` for datagrams, written right after the batch's bytes, until one does not join.
fn fill(
    conn: &mut impl DatagramSource,
    a: &mut Assembly,
    bufs: &mut SendBuffers,
    now: Instant,
) -> Fill {
    let horizon = now + PACING_HORIZON;
    loop {
        if a.is_full() {
            return Fill::Full;
        }
        let off = a.len;
        let Some(out) = bufs.work.get_mut(off..off + bufs.max_payload) else {
            return Fill::Full;
        };
        match conn.next_datagram(out, now) {
            Ok((len, to, at, ecn)) if a.admits(len, to, at, ecn, horizon) => {
                a.push(len, to, at, ecn)
            }
            Ok((len, to, at, ecn)) => {
                return Fill::Carry(Pending {
                    off,
                    len,
                    to,
                    at,
                    ecn,
                })
            }
            Err(Error::Done) => return Fill::Done,
            Err(e) => {
                log::warn!("{}: send: {e:?}", conn.name());
                return Fill::Done;
            }
        }
    }
}

/// Sends the connection's datagrams that are due, in batches: first those waiting in
/// `queue`, then new ones from `conn`, at most `burst` datagrams in all.
pub fn flush(
    conn: &mut impl DatagramSource,
    queue: &mut SendQueue,
    bufs: &mut SendBuffers,
    out: &mut impl Transmit,
    burst: usize,
    now: Instant,
) -> Flush {
    let horizon = now + PACING_HORIZON;
    let mut sent = 0;
    if let Some(r) = queue.refused.as_mut() {
        let waiting = r.segments().count();
        let n = out.transmit(r.segments()).min(waiting);
        r.done += n;
        sent += n;
        if n < waiting {
            return Flush::Blocked;
        }
        if let Some(r) = queue.refused.take() {
            bufs.put_batch(r.buf);
        }
    }
    // A datagram that did not join the previous batch opens the next one.
    let mut carry: Option<Pending> = None;
    loop {
        if sent >= burst {
            if let Some(c) = carry {
                queue.held = Some(bufs.hold(c));
            }
            return Flush::Burst;
        }
        let limit = conn.send_quantum().min(GSO_MAX_BYTES).max(bufs.max_payload);
        let mut a = Assembly::new(limit, burst - sent);
        if let Some(c) = carry.take() {
            bufs.work.copy_within(c.off..c.off + c.len, 0);
            a.push(c.len, c.to, c.at, c.ecn);
        } else if let Some(h) = queue.held.take() {
            if h.at > horizon {
                let at = h.at;
                queue.held = Some(h);
                return Flush::Paced(at);
            }
            let Some(dst) = bufs.work.get_mut(..h.buf.len()) else {
                queue.held = Some(h);
                return Flush::Idle;
            };
            dst.copy_from_slice(&h.buf);
            a.push(h.buf.len(), h.to, h.at, h.ecn);
            bufs.put_single(h.buf);
        }
        let filled = fill(conn, &mut a, bufs, now);
        if let (Some(to), Some(at)) = (a.to, a.at) {
            let segments = Segments {
                buf: bufs.work.get(..a.len).unwrap_or(&[]),
                segment: a.segment,
                to,
                ecn: a.ecn,
            };
            let n = out.transmit(segments).min(a.count);
            sent += n;
            if n < a.count {
                if let Fill::Carry(c) = filled {
                    queue.held = Some(bufs.hold(c));
                }
                queue.refused = Some(Refused {
                    buf: bufs.take_work(),
                    len: a.len,
                    segment: a.segment,
                    to,
                    at,
                    ecn: a.ecn,
                    done: n,
                });
                return Flush::Blocked;
            }
        }
        match filled {
            Fill::Full => {}
            Fill::Done => return Flush::Idle,
            Fill::Carry(c) if c.at > horizon => {
                queue.held = Some(bufs.hold(c));
                return Flush::Paced(c.at);
            }
            Fill::Carry(c) => carry = Some(c),
        }
    }
}

/// Sends one datagram that belongs to no connection (Version Negotiation, Retry); if the
/// socket is full it is dropped (the client retransmits its Initial).
pub fn send_stateless(socket: &mio::net::UdpSocket, buf: &[u8], to: SocketAddr) {
    loop {
        match socket.send_to(buf, to) {
            Ok(_) => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                log::debug!("{to}: send_to: {e}");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
