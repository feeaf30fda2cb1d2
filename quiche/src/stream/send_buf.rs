//! The sending part of a stream (RFC 9000 §3.1): application data waiting to be sent or
//! acknowledged, retransmission of lost ranges, the FIN and RESET_STREAM.
//!
//! The bytes `[acked_front, write_off)` live in one byte ring: appended once by the application
//! (the only copy in), emitted straight into the caller's packet buffer (the only copy out, per
//! transmission) and released from the front as acknowledgements make the acknowledged prefix
//! grow. Offsets partition as
//!
//! ```text
//!   0 ... acked_front ... sent_off ... write_off
//!   released | in flight, acked or lost | not yet sent
//! ```
//!
//! Lost ranges (below `sent_off`) are sent again before new data (RFC 9000 §13.3 recommends
//! retransmitting before sending new data).

use std::collections::VecDeque;

use crate::stream::range_list::RangeList;
use crate::stream::ring;

/// What one call to [`StreamMap::emit`](crate::stream::StreamMap::emit) produced: a STREAM frame's offset, length and FIN bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Emitted {
    /// Stream offset of the first byte written.
    pub offset: u64,
    /// Number of bytes written into the output slice.
    pub len: usize,
    /// Whether the frame carries the FIN bit (its end is the final size).
    pub fin: bool,
    /// Whether the bytes were sent before (a lost range sent again).
    pub retransmission: bool,
}

/// A RESET_STREAM we decided to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ResetState {
    code: u64,
    final_size: u64,
    acked: bool,
}

/// The sending part of one stream.
#[derive(Debug)]
pub(crate) struct SendBuf {
    /// Bytes `[acked_front, write_off)`.
    data: VecDeque<u8>,
    /// Every byte below this is acknowledged and released.
    acked_front: u64,
    /// One past the last byte the application wrote.
    write_off: u64,
    /// Next byte never sent before.
    sent_off: u64,
    /// Ranges below `sent_off` declared lost and not yet sent again.
    lost: RangeList,
    /// Acknowledged ranges above `acked_front`.
    acked: RangeList,
    /// The application ended the stream; the final size is `write_off`.
    fin: bool,
    /// A frame with the FIN is in flight or acknowledged.
    fin_sent: bool,
    /// The FIN has been acknowledged.
    fin_acked: bool,
    /// The peer's MAX_STREAM_DATA for this stream.
    peer_max_data: u64,
    /// Local bound on `write_off - acked_front`.
    max_buffer: u64,
    /// A RESET_STREAM replaced the data.
    reset: Option<ResetState>,
    /// Error code of a STOP_SENDING received.
    stopped: Option<u64>,
}

impl SendBuf {
    /// A sending part the peer lets us send `peer_max_data` bytes on, buffering at most
    /// `max_buffer` unacknowledged bytes locally.
    pub(crate) fn new(peer_max_data: u64, max_buffer: u64) -> Self {
        SendBuf {
            data: VecDeque::new(),
            acked_front: 0,
            write_off: 0,
            sent_off: 0,
            lost: RangeList::default(),
            acked: RangeList::default(),
            fin: false,
            fin_sent: false,
            fin_acked: false,
            peer_max_data,
            max_buffer,
            reset: None,
            stopped: None,
        }
    }

    /// How many more bytes the application may write now: bounded by the peer's stream limit
    /// and the local buffer limit; zero once ended, reset or stopped.
    pub(crate) fn capacity(&self) -> u64 {
        if self.fin || self.reset.is_some() || self.stopped.is_some() {
            return 0;
        }
        let flow = self.peer_max_data.saturating_sub(self.write_off);
        let buffered = self.write_off - self.acked_front;
        flow.min(self.max_buffer.saturating_sub(buffered))
    }

    /// Appends `data` (the caller has already limited it to the capacity) and, with `fin`,
    /// ends the stream.
    pub(crate) fn append(&mut self, data: &[u8], fin: bool) {
        self.data.extend(data);
        self.write_off += data.len() as u64;
        if fin {
            self.fin = true;
        }
    }

    /// Writes the next STREAM frame's data into `out`: lost ranges first, then new data; the
    /// FIN rides on the frame that reaches the final size (alone, with zero bytes, if needed).
    /// Returns `None` when there is nothing to send.
    pub(crate) fn emit(&mut self, out: &mut [u8]) -> Option<Emitted> {
        if self.reset.is_some() {
            return None;
        }
        let (offset, avail) = match self.lost.first() {
            Some(r) => (r.start, r.end - r.start),
            None => (self.sent_off, self.write_off - self.sent_off),
        };
        let len = usize::try_from(avail).unwrap_or(usize::MAX).min(out.len());
        let end = offset + len as u64;
        let fin = self.fin && !self.fin_sent && end == self.write_off;
        if len == 0 && !fin {
            return None;
        }
        // Lost ranges and `sent_off` never fall below `acked_front` (acknowledged bytes are
        // removed from the lost list, and losses are clamped to it).
        let at = usize::try_from(offset.saturating_sub(self.acked_front)).unwrap_or(usize::MAX);
        let copied = ring::copy_from(&self.data, at, out.get_mut(..len).unwrap_or(&mut []));
        debug_assert_eq!(copied, len);
        let retransmission = offset < self.sent_off;
        if retransmission {
            self.lost.remove(offset..end);
        } else {
            self.sent_off = end;
        }
        if fin {
            self.fin_sent = true;
        }
        Some(Emitted {
            offset,
            len,
            fin,
            retransmission,
        })
    }

    /// What [`SendBuf::emit`] would send with unlimited room: offset and length.
    pub(crate) fn peek(&self) -> Option<(u64, u64)> {
        if !self.has_pending() {
            return None;
        }
        Some(match self.lost.first() {
            Some(r) => (r.start, r.end - r.start),
            None => (self.sent_off, self.write_off - self.sent_off),
        })
    }

    /// Whether the next [`SendBuf::emit`] sends bytes again (a range declared lost).
    pub(crate) fn next_is_repair(&self) -> bool {
        self.reset.is_none() && !self.lost.is_empty()
    }

    /// Whether something (data or a lone FIN) is waiting to be emitted.
    pub(crate) fn has_pending(&self) -> bool {
        self.reset.is_none()
            && (!self.lost.is_empty()
                || self.sent_off < self.write_off
                || self.fin && !self.fin_sent)
    }

    /// A STREAM frame `[offset, offset + len)` (with `fin`) was acknowledged.
    pub(crate) fn on_acked(&mut self, offset: u64, len: u64, fin: bool) {
        if self.reset.is_some() {
            return;
        }
        let end = offset.saturating_add(len).min(self.sent_off);
        let start = offset.max(self.acked_front);
        if start < end {
            self.acked.insert(start..end);
            // An acknowledgement of a range declared lost (spurious loss) cancels its resend.
            self.lost.remove(start..end);
        }
        if fin && self.fin {
            // Also covers a FIN declared lost whose original is acknowledged after all.
            self.fin_acked = true;
            self.fin_sent = true;
        }
        while let Some(r) = self.acked.pop_if_starts_at_or_below(self.acked_front) {
            if r.end > self.acked_front {
                let n = usize::try_from(r.end - self.acked_front).unwrap_or(usize::MAX);
                self.data.drain(..n.min(self.data.len()));
                self.acked_front = r.end;
            }
        }
    }

    /// A STREAM frame `[offset, offset + len)` (with `fin`) was declared lost: its bytes that are
    /// not acknowledged in the meantime are sent again.
    pub(crate) fn on_lost(&mut self, offset: u64, len: u64, fin: bool) {
        if self.reset.is_some() {
            return;
        }
        let end = offset.saturating_add(len).min(self.sent_off);
        let start = offset.max(self.acked_front);
        if start < end {
            self.lost.insert(start..end);
            for r in self.acked.iter() {
                if r.start >= end {
                    break;
                }
                if r.end > start {
                    self.lost.remove(r.start.max(start)..r.end.min(end));
                }
            }
        }
        if fin && !self.fin_acked {
            self.fin_sent = false;
        }
    }

    /// A PTO probe found nothing new to send: the first `max` bytes that were sent but are not
    /// acknowledged, from offset `from` on, go out again (and the FIN if they reach the end).
    /// Returns the offset after the last byte queued, or `None` when no byte from `from` on
    /// lacks an acknowledgment.
    pub(crate) fn requeue_unacked(&mut self, from: u64, max: u64) -> Option<u64> {
        if self.reset.is_some() {
            return None;
        }
        let mut at = from.max(self.acked_front);
        let mut left = max;
        let mut queued = false;
        while at < self.sent_off && left > 0 {
            if let Some(r) = self.acked.iter().find(|r| r.start <= at && at < r.end) {
                at = r.end;
                continue;
            }
            let next_acked = self
                .acked
                .iter()
                .find(|r| r.start > at)
                .map_or(self.sent_off, |r| r.start.min(self.sent_off));
            let end = next_acked.min(at.saturating_add(left));
            self.lost.insert(at..end);
            left -= end - at;
            at = end;
            queued = true;
        }
        // The FIN goes with the last bytes; alone it would repair nothing the walk is for.
        if queued && at >= self.sent_off && self.fin && self.fin_sent && !self.fin_acked {
            self.fin_sent = false;
        }
        queued.then_some(at)
    }

    /// Raises the peer's limit (MAX_STREAM_DATA); smaller values are ignored (§4.1). Returns
    /// whether it grew.
    pub(crate) fn set_peer_max_data(&mut self, max: u64) -> bool {
        if max > self.peer_max_data {
            self.peer_max_data = max;
            return true;
        }
        false
    }

    /// 0-RTT was rejected: nothing sent so far reached the peer, and its limit for this stream
    /// is now `peer_max_data`, possibly below the remembered one (RFC 9000 §7.4.1). Returns the
    /// bytes written if they fit both that and `conn_room`; they are then sent again as the
    /// lost 0-RTT packets are repaired. Otherwise forgets every transmission, so that the
    /// RESET_STREAM the caller then sends has the final size the peer saw (zero), and returns
    /// `None`.
    pub(crate) fn on_zero_rtt_rejected(
        &mut self,
        peer_max_data: u64,
        conn_room: u64,
    ) -> Option<u64> {
        self.peer_max_data = peer_max_data;
        if self.write_off <= peer_max_data.min(conn_room) {
            return Some(self.write_off);
        }
        self.sent_off = self.acked_front;
        self.lost.clear();
        self.acked.clear();
        self.fin_sent = self.fin_acked;
        None
    }

    /// The peer's current limit.
    pub(crate) fn peer_max_data(&self) -> u64 {
        self.peer_max_data
    }

    /// Whether the peer's stream limit is what stops the application writing more.
    pub(crate) fn is_flow_blocked(&self) -> bool {
        self.write_off >= self.peer_max_data && !self.fin && self.reset.is_none()
    }

    /// Abandons the stream: drops all data and returns the RESET_STREAM's final size (the bytes
    /// sent so far) and how many buffered bytes were never sent. `None` if already reset or if
    /// everything was delivered ("Data Recvd" is terminal).
    pub(crate) fn reset(&mut self, code: u64) -> Option<(u64, u64)> {
        if self.reset.is_some() || self.is_all_acked() {
            return None;
        }
        let final_size = self.sent_off;
        let unsent = self.write_off - self.sent_off;
        self.reset = Some(ResetState {
            code,
            final_size,
            acked: false,
        });
        self.data = VecDeque::new();
        self.lost.clear();
        self.acked.clear();
        Some((final_size, unsent))
    }

    /// Error code and final size of the RESET_STREAM, if the stream was reset.
    pub(crate) fn reset_frame(&self) -> Option<(u64, u64)> {
        self.reset.map(|r| (r.code, r.final_size))
    }

    /// Whether the RESET_STREAM still needs to reach the peer.
    pub(crate) fn reset_unacked(&self) -> bool {
        self.reset.is_some_and(|r| !r.acked)
    }

    /// The RESET_STREAM was acknowledged ("Reset Recvd").
    pub(crate) fn on_reset_acked(&mut self) {
        if let Some(r) = self.reset.as_mut() {
            r.acked = true;
        }
    }

    /// Records a STOP_SENDING from the peer; ignored once this part is terminal (all data
    /// acknowledged, or reset and acknowledged), as there is nothing left to stop.
    pub(crate) fn stop(&mut self, code: u64) {
        if !self.is_complete() {
            self.stopped.get_or_insert(code);
        }
    }

    /// Error code of the STOP_SENDING received, if any.
    pub(crate) fn stopped(&self) -> Option<u64> {
        self.stopped
    }

    /// Whether the application ended the stream.
    pub(crate) fn is_fin(&self) -> bool {
        self.fin
    }

    /// Whether a reset replaced the data.
    pub(crate) fn is_reset(&self) -> bool {
        self.reset.is_some()
    }

    fn is_all_acked(&self) -> bool {
        self.fin && self.fin_acked && self.acked_front == self.write_off
    }

    /// Whether this part reached a terminal state: "Data Recvd" or "Reset Recvd".
    pub(crate) fn is_complete(&self) -> bool {
        match self.reset {
            Some(r) => r.acked,
            None => self.is_all_acked(),
        }
    }

    /// Bytes held in the ring (unacknowledged or unsent).
    pub(crate) fn buffered(&self) -> usize {
        self.data.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emit_all(sb: &mut SendBuf, max: usize) -> Vec<(u64, Vec<u8>, bool)> {
        let mut v = Vec::new();
        let mut out = vec![0u8; max];
        while let Some(e) = sb.emit(&mut out) {
            v.push((e.offset, out[..e.len].to_vec(), e.fin));
        }
        v
    }

    #[test]
    fn emits_in_order_and_respects_out_len() {
        let mut sb = SendBuf::new(1000, 1000);
        sb.append(b"abcdefghij", true);
        let frames = emit_all(&mut sb, 4);
        assert_eq!(
            frames,
            vec![
                (0, b"abcd".to_vec(), false),
                (4, b"efgh".to_vec(), false),
                (8, b"ij".to_vec(), true),
            ]
        );
        assert!(!sb.has_pending());
        assert_eq!(sb.emit(&mut [0; 10]), None);
    }

    #[test]
    fn requeue_unacked_skips_acknowledged_ranges_and_walks_on() {
        let mut sb = SendBuf::new(1000, 1000);
        sb.append(&[7u8; 30], true);
        let mut out = [0u8; 100];
        let e = sb.emit(&mut out).unwrap();
        assert_eq!((e.offset, e.len, e.fin), (0, 30, true));
        sb.on_acked(10, 10, false);
        // From 0, 15 bytes: [0,10) then, past the acknowledged [10,20), [20,25).
        assert_eq!(sb.requeue_unacked(0, 15), Some(25));
        let e = sb.emit(&mut out).unwrap();
        assert_eq!((e.offset, e.len, e.retransmission), (0, 10, true));
        let e = sb.emit(&mut out).unwrap();
        assert_eq!((e.offset, e.len, e.fin), (20, 5, false));
        // Walking on from there reaches the end and the FIN.
        assert_eq!(sb.requeue_unacked(25, 100), Some(30));
        let e = sb.emit(&mut out).unwrap();
        assert_eq!((e.offset, e.len, e.fin), (25, 5, true));
        // Nothing unacknowledged past the end: the walk starts over (the FIN alone is no
        // reason to stop there).
        assert_eq!(sb.requeue_unacked(30, 100), None);
        sb.on_acked(0, 30, true);
        assert_eq!(sb.requeue_unacked(0, 100), None);
    }

    #[test]
    fn lost_ranges_go_before_new_data() {
        let mut sb = SendBuf::new(1000, 1000);
        sb.append(b"0123456789", false);
        let mut out = [0u8; 3];
        for _ in 0..2 {
            sb.emit(&mut out).unwrap();
        }
        // [0,3) and [3,6) sent; [3,6) lost, then [0,3) lost.
        sb.on_lost(3, 3, false);
        sb.on_lost(0, 3, false);
        sb.append(b"ab", true);
        let frames = emit_all(&mut sb, 4);
        assert_eq!(
            frames,
            vec![
                (0, b"0123".to_vec(), false),
                (4, b"45".to_vec(), false),
                (6, b"6789".to_vec(), false),
                (10, b"ab".to_vec(), true),
            ]
        );
    }

    #[test]
    fn acks_release_the_front_in_order() {
        let mut sb = SendBuf::new(1000, 1000);
        sb.append(&[7; 30], true);
        emit_all(&mut sb, 10);
        assert_eq!(sb.buffered(), 30);
        sb.on_acked(10, 10, false);
        assert_eq!(sb.buffered(), 30, "a hole at the front keeps everything");
        sb.on_acked(0, 10, false);
        assert_eq!(sb.buffered(), 10);
        assert!(!sb.is_complete());
        sb.on_acked(20, 10, true);
        assert_eq!(sb.buffered(), 0);
        assert!(sb.is_complete());
    }

    #[test]
    fn acked_bytes_are_not_retransmitted() {
        let mut sb = SendBuf::new(1000, 1000);
        sb.append(&[1; 30], false);
        emit_all(&mut sb, 10);
        // [10,20) acked by a later packet carrying a retransmission, then the original of
        // [0,30) declared lost: only [0,10) and [20,30) go out again.
        sb.on_acked(10, 10, false);
        sb.on_lost(0, 30, false);
        let frames: Vec<_> = emit_all(&mut sb, 100)
            .iter()
            .map(|f| (f.0, f.1.len()))
            .collect();
        assert_eq!(frames, vec![(0, 10), (20, 10)]);
        // A spurious loss acked after all: cancelled.
        sb.on_lost(0, 10, false);
        sb.on_acked(0, 10, false);
        assert!(!sb.has_pending());
    }

    #[test]
    fn lost_fin_is_resent_alone() {
        let mut sb = SendBuf::new(1000, 1000);
        sb.append(b"xyz", false);
        emit_all(&mut sb, 100);
        sb.append(b"", true);
        assert_eq!(emit_all(&mut sb, 100), vec![(3, vec![], true)]);
        sb.on_lost(3, 0, true);
        assert!(sb.has_pending());
        assert_eq!(emit_all(&mut sb, 100), vec![(3, vec![], true)]);
        sb.on_acked(0, 3, false);
        assert!(!sb.is_complete());
        sb.on_acked(3, 0, true);
        assert!(sb.is_complete());
    }

    #[test]
    fn capacity_is_bounded_by_peer_window_and_local_buffer() {
        let mut sb = SendBuf::new(100, 60);
        assert_eq!(sb.capacity(), 60);
        sb.append(&[0; 60], false);
        assert_eq!(sb.capacity(), 0);
        emit_all(&mut sb, 100);
        sb.on_acked(0, 50, false);
        assert_eq!(sb.capacity(), 40, "peer window left");
        assert!(sb.set_peer_max_data(200));
        assert!(!sb.set_peer_max_data(150));
        assert_eq!(sb.capacity(), 50, "local buffer left");
        sb.append(&[0; 50], true);
        assert_eq!(sb.capacity(), 0);
    }

    #[test]
    fn reset_reports_sent_size_and_unsent_bytes() {
        let mut sb = SendBuf::new(1000, 1000);
        sb.append(&[0; 50], false);
        let mut out = [0u8; 20];
        sb.emit(&mut out).unwrap();
        assert_eq!(sb.reset(4), Some((20, 30)));
        assert_eq!(sb.reset(5), None);
        assert_eq!(sb.reset_frame(), Some((4, 20)));
        assert!(!sb.has_pending());
        assert_eq!(sb.capacity(), 0);
        assert!(!sb.is_complete());
        sb.on_lost(0, 20, false);
        assert!(!sb.has_pending());
        sb.on_reset_acked();
        assert!(sb.is_complete());
    }

    #[test]
    fn no_reset_after_everything_is_acked() {
        let mut sb = SendBuf::new(1000, 1000);
        sb.append(&[0; 5], true);
        emit_all(&mut sb, 100);
        sb.on_acked(0, 5, true);
        assert!(sb.is_complete());
        assert_eq!(sb.reset(1), None);
    }
}
