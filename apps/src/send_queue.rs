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

/// Where datagrams come from: a connection, or a stand-in in tests.
pub trait DatagramSource {
    /// Writes the next datagram into `out` and returns its length, destination and due time;
    /// `Error::Done` when there is nothing to send.
    fn next_datagram(&mut self, out: &mut [u8]) -> quiche::Result<(usize, SocketAddr, Instant)>;

    /// A name for log messages.
    fn name(&self) -> String;
}

impl DatagramSource for Connection {
    fn next_datagram(&mut self, out: &mut [u8]) -> quiche::Result<(usize, SocketAddr, Instant)> {
        let (len, info) = self.send(out)?;
        Ok((len, info.to, info.at))
    }

    fn name(&self) -> String {
        self.trace_id()
    }
}

/// Sends the connection's datagrams that are due: first those waiting in `queue`, then new
/// ones from `conn`, at most `burst` of them.
pub fn flush(
    conn: &mut impl DatagramSource,
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
        match conn.next_datagram(&mut buf) {
            Ok((len, to, at)) => queue.queue.push_back(Datagram { buf, len, to, at }),
            Err(e) => {
                pool.put(buf);
                if e != Error::Done {
                    log::warn!("{}: send: {e:?}", conn.name());
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out datagrams of 100 bytes due at the given times.
    struct Script {
        due: VecDeque<Instant>,
        to: SocketAddr,
        calls: usize,
    }

    impl DatagramSource for Script {
        fn next_datagram(
            &mut self,
            out: &mut [u8],
        ) -> quiche::Result<(usize, SocketAddr, Instant)> {
            self.calls += 1;
            let at = self.due.pop_front().ok_or(Error::Done)?;
            out.get_mut(..100).ok_or(Error::BufferTooShort)?.fill(7);
            Ok((100, self.to, at))
        }

        fn name(&self) -> String {
            "script".into()
        }
    }

    struct Harness {
        sender: mio::net::UdpSocket,
        receiver: std::net::UdpSocket,
        pool: BufferPool,
        queue: SendQueue,
    }

    impl Harness {
        fn new() -> Harness {
            let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            receiver.set_nonblocking(true).unwrap();
            Harness {
                sender: mio::net::UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap(),
                receiver,
                pool: BufferPool::new(1350),
                queue: SendQueue::new(),
            }
        }

        fn script(&self, due: impl IntoIterator<Item = Instant>) -> Script {
            Script {
                due: due.into_iter().collect(),
                to: self.receiver.local_addr().unwrap(),
                calls: 0,
            }
        }

        fn flush(&mut self, source: &mut Script, burst: usize) -> Flush {
            flush(source, &mut self.queue, &self.sender, &mut self.pool, burst)
        }

        /// Datagrams that arrived (loopback delivers synchronously).
        fn received(&self) -> usize {
            let mut buf = [0u8; 2048];
            let mut n = 0;
            while let Ok((len, _)) = self.receiver.recv_from(&mut buf) {
                assert_eq!(len, 100);
                n += 1;
            }
            n
        }
    }

    #[test]
    fn a_datagram_due_later_waits_and_stops_the_connection() {
        let mut h = Harness::new();
        let now = Instant::now();
        let later = now + Duration::from_secs(60);
        let mut source = h.script([now, now, later, later]);

        assert_eq!(h.flush(&mut source, usize::MAX), Flush::Paced(later));
        assert_eq!(h.received(), 2);
        assert_eq!((h.queue.len(), h.queue.next_at()), (1, Some(later)));
        assert_eq!(source.calls, 3);

        // While one waits, the connection is not asked for more.
        assert_eq!(h.flush(&mut source, usize::MAX), Flush::Paced(later));
        assert_eq!(h.received(), 0);
        assert_eq!(source.calls, 3);

        h.queue.clear(&mut h.pool);
        assert!(h.queue.is_empty());
    }

    #[test]
    fn datagrams_due_within_the_horizon_go_now() {
        let mut h = Harness::new();
        let soon = Instant::now() + PACING_HORIZON / 2;
        let mut source = h.script([soon, soon]);
        assert_eq!(h.flush(&mut source, usize::MAX), Flush::Idle);
        assert_eq!(h.received(), 2);
        assert!(h.queue.is_empty());
    }

    #[test]
    fn the_burst_limit_hands_over_and_resumes() {
        let mut h = Harness::new();
        let now = Instant::now();
        let mut source = h.script(std::iter::repeat_n(now, 10));
        assert_eq!(h.flush(&mut source, 4), Flush::Burst);
        assert_eq!(h.received(), 4);
        assert_eq!(h.flush(&mut source, 4), Flush::Burst);
        assert_eq!(h.received(), 4);
        assert_eq!(h.flush(&mut source, 4), Flush::Idle);
        assert_eq!(h.received(), 2);
        // 10 datagrams, then one `Done`.
        assert_eq!(source.calls, 11);
        // Buffers went back to the pool.
        assert!(!h.pool.free.is_empty() && h.pool.free.len() <= POOL_MAX_FREE);
    }
}
