//! Getting a connection's datagrams onto the socket, honouring pacing.
//!
//! `Connection::send` stamps each datagram with `SendInfo.at`, the moment the pacer wants it on
//! the wire. A datagram due later than [`PACING_HORIZON`] from now waits in its connection's
//! [`SendQueue`] and the event loop sleeps until then (mio's timeout); one the socket refused
//! (its buffer is full) waits there too, for the socket to become writable. While a datagram
//! waits, the connection is not asked for more: the next one would be due even later.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use quiche::{Connection, Error};

/// Datagrams due within this much time are sent now. The event loop's timer has millisecond
/// resolution (epoll), so waiting for anything closer would oversleep.
pub const PACING_HORIZON: Duration = Duration::from_millis(1);

/// How many free buffers a [`BufferPool`] keeps.
const POOL_MAX_FREE: usize = 64;

/// A datagram waiting to be sent.
struct Datagram {
    buf: Vec<u8>,
    len: usize,
    to: SocketAddr,
    at: Instant,
}

/// Reusable datagram buffers, so that the steady state allocates nothing per packet.
pub struct BufferPool {
    free: Vec<Vec<u8>>,
    size: usize,
}

impl BufferPool {
    /// A pool of buffers of `size` bytes (the largest datagram a connection sends).
    pub fn new(size: usize) -> Self {
        BufferPool {
            free: Vec::new(),
            size,
        }
    }

    fn get(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_else(|| vec![0; self.size])
    }

    fn put(&mut self, buf: Vec<u8>) {
        if self.free.len() < POOL_MAX_FREE {
            self.free.push(buf);
        }
    }
}

/// The datagrams of one connection that are built but not sent yet.
#[derive(Default)]
pub struct SendQueue {
    queue: VecDeque<Datagram>,
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
        self.queue.front().map(|d| d.at)
    }

    /// How many datagrams wait.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no datagram waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Returns the buffers of the waiting datagrams to `pool` (the connection is gone).
    pub fn clear(&mut self, pool: &mut BufferPool) {
        for d in self.queue.drain(..) {
            pool.put(d.buf);
        }
    }
}

/// Sends the connection's datagrams that are due: first those waiting in `queue`, then new
/// ones from `conn`, at most `burst` of them.
pub fn flush(
    conn: &mut Connection,
    queue: &mut SendQueue,
    socket: &mio::net::UdpSocket,
    pool: &mut BufferPool,
    burst: usize,
) -> Flush {
    let now = Instant::now();
    let mut sent = 0;
    loop {
        while let Some(d) = queue.queue.front() {
            if d.at > now + PACING_HORIZON {
                return Flush::Paced(d.at);
            }
            match send_datagram(socket, d.buf.get(..d.len).unwrap_or(&[]), d.to) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Flush::Blocked,
                // The datagram is dropped; recovery treats it as lost.
                Err(e) => log::debug!("send_to {}: {e}", d.to),
            }
            if let Some(d) = queue.queue.pop_front() {
                pool.put(d.buf);
            }
            sent += 1;
            if sent >= burst {
                return Flush::Burst;
            }
        }
        let mut buf = pool.get();
        match conn.send(&mut buf) {
            Ok((len, info)) => queue.queue.push_back(Datagram {
                buf,
                len,
                to: info.to,
                at: info.at,
            }),
            Err(e) => {
                pool.put(buf);
                if e != Error::Done {
                    log::warn!("{}: send: {e:?}", conn.trace_id());
                }
                return Flush::Idle;
            }
        }
    }
}

fn send_datagram(socket: &mio::net::UdpSocket, buf: &[u8], to: SocketAddr) -> io::Result<()> {
    loop {
        match socket.send_to(buf, to) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}
