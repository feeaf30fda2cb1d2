//! quiche's stream calls beyond send and receive: the one-shot readable / writable events,
//! reads into a `bytes::BufMut` or discarding without a copy, zero-copy writes of the buffer
//! factory's buffers, and the stream and connection state queries that go with them.

use bytes::BufMut;

use super::Connection;
use crate::buffers::{BufFactory, BufSplit};
use crate::error::Result;

impl<F: BufFactory> Connection<F> {
    /// Reads from a stream into `out`, which is filled with what is readable up to its
    /// remaining capacity (limit a growing buffer such as `Vec<u8>` with
    /// [`BufMut::limit`]); `out` is advanced by the bytes read. Returns them and whether the
    /// stream ended, as [`stream_recv`](Self::stream_recv) does.
    pub fn stream_recv_buf<B: BufMut>(
        &mut self,
        stream_id: u64,
        mut out: B,
    ) -> Result<(usize, bool)> {
        let max = out.remaining_mut();
        self.stream_recv_with(stream_id, max, |chunk| out.put_slice(chunk))
    }

    /// Drops up to `len` readable bytes of a stream without copying them, as if read: returns
    /// how many and whether the stream ended; flow control credits them like a read.
    pub fn stream_discard(&mut self, stream_id: u64, len: usize) -> Result<(usize, bool)> {
        self.stream_recv_with(stream_id, len, |_| {})
    }

    /// The body of the stream reads: `sink` gets up to `max` bytes in one or two slices.
    pub(super) fn stream_recv_with(
        &mut self,
        stream_id: u64,
        max: usize,
        sink: impl FnMut(&[u8]),
    ) -> Result<(usize, bool)> {
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        let srtt = self.sender().rtt().smoothed_rtt();
        let result = self
            .streams
            .stream_recv_with(stream_id, max, now, srtt, sink);
        let read = match &result {
            Ok((n, _)) => *n as u64,
            Err(_) => 0,
        };
        let consumed = read + self.streams.take_recv_discarded();
        self.on_consumed(consumed, now);
        result
    }

    /// Writes `buf` to a stream without copying it: the stream keeps the buffer (or the part
    /// of it that fits, split off with [`BufSplit::split_at`]) until the peer acknowledges it.
    /// Returns how many bytes were taken and the rest of `buf` if not all of it was; the rest
    /// comes back also with [`Error::Done`](crate::Error::Done) when nothing fits. Otherwise as
    /// [`stream_send`](Self::stream_send).
    pub fn stream_send_zc(
        &mut self,
        stream_id: u64,
        buf: F::Buf,
        fin: bool,
    ) -> Result<(usize, Option<F::Buf>)>
    where
        F::Buf: BufSplit,
    {
        let len = buf.as_ref().len();
        // `stream_send` takes what fits (and the FIN only with all of it).
        let taken = self.stream_send(stream_id, buf.as_ref(), fin)?;
        let mut head = buf;
        let rest = (taken < len).then(|| head.split_at(taken));
        Ok((taken, rest))
    }

    /// The next stream with data to read (or its end, or a reset) that this call has not
    /// returned since; see [`crate::stream`]'s event rules: a stream comes back once more
    /// data arrives, or right away if a read left data behind. Unlike
    /// [`readable`](Self::readable), which lists every readable stream each time.
    pub fn stream_readable_next(&mut self) -> Option<u64> {
        self.streams.stream_readable_next()
    }

    /// The next stream that can take data (at least its low-water mark: 1 byte, or what a
    /// [`stream_writable`](Self::stream_writable) call found missing) and that this call has
    /// not returned since; it comes back when its capacity grows or after a write that leaves
    /// it writable. `None` while connection-level flow control allows nothing.
    pub fn stream_writable_next(&mut self) -> Option<u64> {
        let capacity = self.send_capacity();
        if capacity == 0 {
            return None;
        }
        self.streams.stream_writable_next(capacity)
    }

    /// How many bytes [`stream_recv`](Self::stream_recv) would return now on a stream, at
    /// most `max_len` (in-order bytes only: data past a gap does not count); 0 for a stream
    /// that does not exist.
    pub fn stream_readable_len(&self, stream_id: u64, max_len: usize) -> usize {
        self.streams.stream_readable_len(stream_id, max_len)
    }

    /// Whether a stream is over in each direction it has (its data read to the end or reset,
    /// and its sending side ended or reset); true once collected, false if never opened.
    pub fn stream_closed(&self, stream_id: u64) -> bool {
        self.streams.stream_closed(stream_id)
    }

    /// Whether a stream has data to read or a datagram waits in the receive queue.
    pub fn is_readable(&self) -> bool {
        self.readable().len() > 0 || self.dgram_recv_front_len().is_some()
    }
}
