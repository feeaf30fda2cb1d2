//! Bounded queues of DATAGRAM payloads (RFC 9221).
//!
//! DATAGRAM frames are unreliable: nothing is retransmitted, and an endpoint may drop a datagram
//! whenever it runs out of room (RFC 9221 §5). The connection keeps two queues: datagrams the
//! application wrote and that wait for a packet, and datagrams received and not yet read. Both
//! hold at most a configured number of payloads, so a peer cannot make us buffer without bound.
//! What happens when a queue is full differs by side: a full send queue refuses the new
//! datagram (the application learns of it and decides), a full receive queue drops its oldest
//! entry (the newest data is usually the most useful one, and the peer cannot be pushed back).

use std::collections::VecDeque;

use crate::error::{Error, Result};

/// A bounded FIFO of datagram payloads, each held in a buffer of type `B` (the connection's
/// `BufFactory::DgramBuf`: a payload handed over by `dgram_send_buf` is queued as it is).
#[derive(Debug)]
pub struct DatagramQueue<B = Vec<u8>> {
    queue: VecDeque<B>,
    max_len: usize,
    bytes: usize,
    dropped: u64,
}

impl<B> Default for DatagramQueue<B> {
    fn default() -> Self {
        DatagramQueue {
            queue: VecDeque::new(),
            max_len: 0,
            bytes: 0,
            dropped: 0,
        }
    }
}

impl<B: AsRef<[u8]> + From<Vec<u8>>> DatagramQueue<B> {
    /// A queue holding at most `max_len` datagrams.
    pub fn new(max_len: usize) -> Self {
        DatagramQueue {
            queue: VecDeque::new(),
            max_len,
            bytes: 0,
            dropped: 0,
        }
    }

    /// Appends a copy of `data`; `Error::Done` when the queue is full (nothing is dropped).
    pub fn push(&mut self, data: &[u8]) -> Result<()> {
        self.push_buf(B::from(data.to_vec()))
    }

    /// Appends `data` as it is; `Error::Done` when the queue is full (nothing is dropped).
    pub fn push_buf(&mut self, data: B) -> Result<()> {
        if self.is_full() {
            return Err(Error::Done);
        }
        self.bytes += data.as_ref().len();
        self.queue.push_back(data);
        Ok(())
    }

    /// Appends `data`, dropping the oldest datagram first if the queue is full (and counting
    /// it). A queue of capacity zero drops `data` itself.
    pub fn push_drop_oldest(&mut self, data: B) {
        if self.max_len == 0 {
            self.dropped += 1;
            return;
        }
        while self.is_full() {
            if let Some(old) = self.queue.pop_front() {
                self.bytes -= old.as_ref().len();
            }
            self.dropped += 1;
        }
        self.bytes += data.as_ref().len();
        self.queue.push_back(data);
    }

    /// Copies the oldest datagram into `out` and removes it; returns its length. `Done` when
    /// the queue is empty; `BufferTooShort` (and the datagram stays) when `out` is too small.
    pub fn pop_into(&mut self, out: &mut [u8]) -> Result<usize> {
        let len = self.front_len().ok_or(Error::Done)?;
        let dst = out.get_mut(..len).ok_or(Error::BufferTooShort)?;
        let data = self.queue.pop_front().ok_or(Error::Done)?;
        dst.copy_from_slice(data.as_ref());
        self.bytes -= len;
        Ok(len)
    }

    /// Copies the first `len` bytes of the oldest datagram into `out`, leaving it queued;
    /// returns `len`. `Done` when the queue is empty; `BufferTooShort` when `len` exceeds the
    /// datagram or `out`.
    pub fn peek_into(&self, out: &mut [u8], len: usize) -> Result<usize> {
        let front = self.queue.front().ok_or(Error::Done)?;
        let src = front.as_ref().get(..len).ok_or(Error::BufferTooShort)?;
        let dst = out.get_mut(..len).ok_or(Error::BufferTooShort)?;
        dst.copy_from_slice(src);
        Ok(len)
    }

    /// Removes and returns the oldest datagram.
    pub fn pop(&mut self) -> Option<B> {
        let data = self.queue.pop_front()?;
        self.bytes -= data.as_ref().len();
        Some(data)
    }

    /// The length of the oldest datagram.
    pub fn front_len(&self) -> Option<usize> {
        self.queue.front().map(|d| d.as_ref().len())
    }

    /// Removes every queued datagram for which `drop` returns true.
    pub fn purge(&mut self, mut drop: impl FnMut(&[u8]) -> bool) {
        let before = self.queue.len();
        self.queue.retain(|d| !drop(d.as_ref()));
        self.bytes = self.queue.iter().map(|d| d.as_ref().len()).sum();
        self.dropped += (before - self.queue.len()) as u64;
    }

    /// Number of queued datagrams.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether another push would be refused (or would drop the oldest).
    pub fn is_full(&self) -> bool {
        self.queue.len() >= self.max_len
    }

    /// Total payload bytes queued.
    pub fn byte_size(&self) -> usize {
        self.bytes
    }

    /// Datagrams dropped so far (the oldest ones of a full receive queue, or purged ones).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_side_refuses_when_full() {
        let mut q = DatagramQueue::<Vec<u8>>::new(2);
        q.push(b"a").unwrap();
        q.push(b"bc").unwrap();
        assert!(q.is_full());
        assert_eq!(q.push(b"d"), Err(Error::Done));
        assert_eq!(q.len(), 2);
        assert_eq!(q.byte_size(), 3);
        assert_eq!(q.dropped(), 0);
        assert_eq!(q.pop().as_deref(), Some(&b"a"[..]));
        q.push(b"d").unwrap();
        assert_eq!(q.byte_size(), 3);
    }

    #[test]
    fn receive_side_drops_the_oldest_and_counts() {
        let mut q = DatagramQueue::<Vec<u8>>::new(2);
        for d in [&b"one"[..], b"two", b"three"] {
            q.push_drop_oldest(d.to_vec());
        }
        assert_eq!(q.len(), 2);
        assert_eq!(q.dropped(), 1);
        let mut out = [0u8; 8];
        assert_eq!(q.pop_into(&mut out), Ok(3));
        assert_eq!(&out[..3], b"two");
        assert_eq!(q.byte_size(), 5);

        let mut zero = DatagramQueue::<Vec<u8>>::new(0);
        zero.push_drop_oldest(b"x".to_vec());
        assert!(zero.is_empty());
        assert_eq!(zero.dropped(), 1);
    }

    #[test]
    fn short_buffer_keeps_the_datagram() {
        let mut q = DatagramQueue::<Vec<u8>>::new(4);
        q.push(b"hello").unwrap();
        let mut small = [0u8; 4];
        assert_eq!(q.pop_into(&mut small), Err(Error::BufferTooShort));
        assert_eq!(q.len(), 1);
        let mut out = [0u8; 5];
        assert_eq!(q.pop_into(&mut out), Ok(5));
        assert_eq!(q.pop_into(&mut out), Err(Error::Done));
        q.push(b"peek").unwrap();
        assert_eq!(q.peek_into(&mut out, 2), Ok(2));
        assert_eq!(&out[..2], b"pe");
        assert_eq!(
            q.peek_into(&mut out, 5),
            Err(Error::BufferTooShort),
            "longer than it"
        );
        assert_eq!(q.peek_into(&mut small[..1], 2), Err(Error::BufferTooShort));
        assert_eq!(q.len(), 1, "peeking leaves it queued");
        q.pop();
        // An empty datagram is a datagram too.
        q.push(b"").unwrap();
        assert_eq!(q.pop_into(&mut []), Ok(0));
    }

    #[test]
    fn purge_removes_matching_and_keeps_byte_count() {
        let mut q = DatagramQueue::<Vec<u8>>::new(8);
        for d in [&b"keep"[..], b"drop", b"keep2"] {
            q.push(d).unwrap();
        }
        q.purge(|d| d == b"drop");
        assert_eq!(q.len(), 2);
        assert_eq!(q.byte_size(), 9);
        assert_eq!(q.dropped(), 1);
    }
}
