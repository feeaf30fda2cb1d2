//! DATAGRAM frames (RFC 9221): the application API, the receive rule and the send path. The
//! queues themselves are in [`crate::dgram`].
//!
//! Datagrams travel in 1-RTT packets only, count against the congestion window like any
//! ack-eliciting data (RFC 9221 §5.4), and are never retransmitted: a lost packet's datagrams
//! are simply gone.

use octets::OctetsMut;

use super::qlog::qlog;
use super::sent_frames::{SentFrame, SentFrames};
use super::Connection;
use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::packet::MAX_PKT_NUM_LEN;

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// The peer's max_datagram_frame_size, if it accepts DATAGRAM frames (a non-zero value,
    /// RFC 9221 §3).
    fn peer_max_datagram_frame(&self) -> Option<u64> {
        self.peer_tp
            .as_ref()
            .and_then(|tp| tp.max_datagram_frame_size)
            .filter(|&v| v > 0)
    }

    /// Whether this endpoint accepts DATAGRAM frames (`Config::enable_dgram`): what HTTP/3
    /// announces with SETTINGS_H3_DATAGRAM (RFC 9297 §2.1.1).
    pub fn dgram_enabled(&self) -> bool {
        self.local_tp.max_datagram_frame_size.is_some_and(|v| v > 0)
    }

    /// The largest datagram payload `dgram_send` accepts now: what fits in one 1-RTT packet
    /// on its own and in the peer's max_datagram_frame_size (which counts the frame's type and
    /// length). `None` until the peer has said it accepts datagrams.
    pub fn dgram_max_writable_len(&self) -> Option<usize> {
        let peer_max = self.peer_max_datagram_frame()?;
        let packet_overhead = 1 + self.dcid.len() + MAX_PKT_NUM_LEN + crate::crypto::TAG_LEN;
        let room = self
            .sender()
            .max_datagram_size()
            .saturating_sub(packet_overhead);
        let frame_max = usize::try_from(peer_max).unwrap_or(usize::MAX).min(room);
        // The frame is a type byte, the payload length as a varint, and the payload: the
        // largest payload whose length field is as long as assumed.
        let largest = [1usize, 2, 4, 8]
            .into_iter()
            .filter_map(|len_len| frame_max.checked_sub(1 + len_len))
            .find(|&p| 1 + octets::varint_len(p as u64) + p <= frame_max)
            .unwrap_or(0);
        Some(largest)
    }

    /// Queues a datagram to send. Errors: `InvalidState` if the peer does not accept
    /// datagrams (or not yet known) or the connection is closing; `BufferTooShort` if it is
    /// larger than [`Connection::dgram_max_writable_len`]; `Done` if the send queue is full.
    pub fn dgram_send(&mut self, buf: &[u8]) -> Result<()> {
        self.check_dgram_send(buf.len())?;
        self.dgram_send.push_buf(F::dgram_buf_from_slice(buf))
    }

    /// [`Connection::dgram_send`] of a buffer the connection takes over without copying it.
    pub fn dgram_send_buf(&mut self, buf: F::DgramBuf) -> Result<()> {
        self.check_dgram_send(buf.as_ref().len())?;
        self.dgram_send.push_buf(buf)
    }

    fn check_dgram_send(&self, len: usize) -> Result<()> {
        if self.lifecycle.is_closing_or_draining() {
            return Err(Error::InvalidState);
        }
        let max = self.dgram_max_writable_len().ok_or(Error::InvalidState)?;
        if len > max {
            return Err(Error::BufferTooShort);
        }
        Ok(())
    }

    /// Reads the oldest received datagram into `out`; returns its length. `Done` when none
    /// is queued; `BufferTooShort` (the datagram stays queued) when `out` is too small.
    pub fn dgram_recv(&mut self, out: &mut [u8]) -> Result<usize> {
        self.dgram_recv.pop_into(out)
    }

    /// Takes the oldest received datagram out of the queue, in the buffer it was received
    /// into (no copy); `Done` when none is queued.
    pub fn dgram_recv_buf(&mut self) -> Result<F::DgramBuf> {
        self.dgram_recv.pop().ok_or(Error::Done)
    }

    /// Copies the first `len` bytes of the oldest received datagram into `buf` and leaves it
    /// queued; returns `len`. `Done` when none is queued, `BufferTooShort` when `len` is
    /// larger than the datagram or than `buf`.
    pub fn dgram_recv_peek(&self, buf: &mut [u8], len: usize) -> Result<usize> {
        self.dgram_recv.peek_into(buf, len)
    }

    /// The length of the oldest received datagram, if any.
    pub fn dgram_recv_front_len(&self) -> Option<usize> {
        self.dgram_recv.front_len()
    }

    /// Received datagrams waiting to be read.
    pub fn dgram_recv_queue_len(&self) -> usize {
        self.dgram_recv.len()
    }

    /// Bytes of the received datagrams waiting to be read.
    pub fn dgram_recv_queue_byte_size(&self) -> usize {
        self.dgram_recv.byte_size()
    }

    /// Datagrams waiting to be sent.
    pub fn dgram_send_queue_len(&self) -> usize {
        self.dgram_send.len()
    }

    /// Bytes of the datagrams waiting to be sent.
    pub fn dgram_send_queue_byte_size(&self) -> usize {
        self.dgram_send.byte_size()
    }

    /// Whether `dgram_send` would return `Done` because the send queue is full.
    pub fn is_dgram_send_queue_full(&self) -> bool {
        self.dgram_send.is_full()
    }

    /// Whether the receive queue is full (the next arrival drops the oldest datagram).
    pub fn is_dgram_recv_queue_full(&self) -> bool {
        self.dgram_recv.is_full()
    }

    /// Received datagrams dropped because the application did not read them in time.
    pub fn dgram_recv_dropped(&self) -> u64 {
        self.dgram_recv.dropped()
    }

    /// Removes the queued outgoing datagrams for which `drop` returns true.
    pub fn dgram_purge_outgoing<FN: Fn(&[u8]) -> bool>(&mut self, drop: FN) {
        self.dgram_send.purge(drop);
    }

    /// A DATAGRAM frame arrived (RFC 9221 §3): only if we advertised support, and no larger
    /// than we advertised; otherwise PROTOCOL_VIOLATION.
    pub(super) fn on_datagram_frame(&mut self, data: &[u8]) -> Result<()> {
        let max = self
            .local_tp
            .max_datagram_frame_size
            .filter(|&v| v > 0)
            .ok_or(Error::ProtocolViolation)?;
        // The frame carried at least a type byte besides the payload; the length field, if
        // any, is not known here, so the smallest possible frame size is checked, which never
        // rejects a frame within the limit.
        if 1 + data.len() as u64 > max {
            return Err(Error::ProtocolViolation);
        }
        self.dgram_recv
            .push_drop_oldest(F::dgram_buf_from_slice(data));
        self.stats.dgram_recv += 1;
        let path = self.recv_path.unwrap_or(self.paths.active_id());
        if let Some(path) = self.paths.get_mut(path) {
            path.dgram_recv += 1;
        }
        Ok(())
    }

    /// Whether datagrams wait to be sent.
    pub(super) fn has_datagrams_to_send(&self) -> bool {
        !self.dgram_send.is_empty()
    }

    /// DATAGRAM frames, oldest first, as far as they fit in the packet and `room_limit` (the
    /// congestion window's share). A datagram that can no longer fit in any packet (the
    /// peer's ID grew longer) is dropped rather than block the queue.
    pub(super) fn write_datagrams(
        &mut self,
        b: &mut OctetsMut,
        room_limit: usize,
        frames: &mut SentFrames,
    ) -> Result<bool> {
        let mut eliciting = false;
        let start = b.off();
        let max = self.dgram_max_writable_len().unwrap_or(0);
        while let Some(len) = self.dgram_send.front_len() {
            if len > max {
                self.dgram_send.pop();
                continue;
            }
            let used = b.off() - start;
            let room = b.cap().min(room_limit.saturating_sub(used));
            if 1 + octets::varint_len(len as u64) + len > room {
                break;
            }
            let Some(data) = self.dgram_send.pop() else {
                break;
            };
            let data = data.as_ref();
            Frame::Datagram { data }.to_bytes(b)?;
            frames.push(SentFrame::Datagram);
            self.stats.dgram_sent += 1;
            if let Some(path) = self.paths.get_mut(self.send_path) {
                path.dgram_sent += 1;
            }
            qlog!(self, q => q.sent_frames().push_datagram(data.len()));
            eliciting = true;
        }
        Ok(eliciting)
    }
}
