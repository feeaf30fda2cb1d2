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

/// A bounded FIFO of datagram payloads.
#[derive(Debug, Default)]
pub struct DatagramQueue {
    queue: VecDeque<Vec<u8>>,
    max_len: usize,
    bytes: usize,
    dropped: u64,
}

impl DatagramQueue {
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
        if self.is_full() {
            return Err(Error::Done);
        }
        self.bytes += data.len();
        self.queue.push_back(data.to_vec());
        Ok(())
    }

    /// Appends a copy of `data`, dropping the oldest datagram first if the queue is full (and
    /// counting it). A queue of capacity zero drops `data` itself.
    pub fn push_drop_oldest(&mut self, data: &[u8]) {
        if self.max_len == 0 {
            self.dropped += 1;
            return;
        }
        while self.is_full() {
            if let Some(old) = self.queue.pop_front() {
                self.bytes -= old.len();
            }
            self.dropped += 1;
        }
        self.bytes += data.len();
        self.queue.push_back(data.to_vec());
    }

    /// Copies the oldest datagram into `out` and removes it; returns its length. `Done` when
    /// the queue is empty; `BufferTooShort` (and the datagram stays) when `out` is too small.
    pub fn pop_into(&mut self, out: &mut [u8]) -> Result<usize> {
        let len = self.front_len().ok_or(Error::Done)?;
        let dst = out.get_mut(..len).ok_or(Error::BufferTooShort)?;
        let data = self.queue.pop_front().ok_or(Error::Done)?;
        dst.copy_from_slice(&data);
        self.bytes -= len;
        Ok(len)
    }

    /// Removes and returns the oldest datagram.
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        let data = self.queue.pop_front()?;
        self.bytes -= data.len();
        Some(data)
    }

    /// The length of the oldest datagram.
    pub fn front_len(&self) -> Option<usize> {
        self.queue.front().map(Vec::len)
    }

    /// Removes every queued datagram for which `drop` returns true.
    pub fn purge(&mut self, mut drop: impl FnMut(&[u8]) -> bool) {
        let before = self.queue.len();
        self.queue.retain(|d| !drop(d));
        self.bytes = self.queue.iter().map(Vec::len).sum();
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
        let mut q = DatagramQueue::new(2);
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
        let mut q = DatagramQueue::new(2);
        for d in [&b"one"[..], b"two", b"three"] {
            q.push_drop_oldest(d);
        }
        assert_eq!(q.len(), 2);
        assert_eq!(q.dropped(), 1);
        let mut out = [0u8; 8];
        assert_eq!(q.pop_into(&mut out), Ok(3));
        assert_eq!(&out[..3], b"two");
        assert_eq!(q.byte_size(), 5);

        let mut zero = DatagramQueue::new(0);
        zero.push_drop_oldest(b"x");
        assert!(zero.is_empty());
        assert_eq!(zero.dropped(), 1);
    }

    #[test]
    fn short_buffer_keeps_the_datagram() {
        let mut q = DatagramQueue::new(4);
        q.push(b"hello").unwrap();
        let mut small = [0u8; 4];
        assert_eq!(q.pop_into(&mut small), Err(Error::BufferTooShort));
        assert_eq!(q.len(), 1);
        let mut out = [0u8; 5];
        assert_eq!(q.pop_into(&mut out), Ok(5));
        assert_eq!(q.pop_into(&mut out), Err(Error::Done));
        // An empty datagram is a datagram too.
        q.push(b"").unwrap();
        assert_eq!(q.pop_into(&mut []), Ok(0));
    }

    #[test]
    fn purge_removes_matching_and_keeps_byte_count() {
        let mut q = DatagramQueue::new(8);
        for d in [&b"keep"[..], b"drop", b"keep2"] {
            q.push(d).unwrap();
        }
        q.purge(|d| d == b"drop");
        assert_eq!(q.len(), 2);
        assert_eq!(q.byte_size(), 9);
        assert_eq!(q.dropped(), 1);
    }
}
