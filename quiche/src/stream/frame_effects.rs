//! Effects of received stream frames, and the STREAM-frame side of the send path (emission,
//! acknowledgement, loss).

use crate::error::{Error, Result};
use crate::stream::control::CtlKey;
use crate::stream::{dir_index, Emitted, Part, StreamMap, MAX_STREAMS_LIMIT};

impl StreamMap {
    /// A STREAM frame arrived. Returns the bytes beyond the stream's previous highest offset,
    /// which the connection counts against connection-level flow control (0 for a collected
    /// stream: the frame is ignored).
    ///
    /// Errors: `InvalidStreamState(id)` (our send-only stream, or ours not yet opened),
    /// `StreamLimit` (peer stream beyond our limit), `FlowControl` (beyond MAX_STREAM_DATA),
    /// `FinalSize` (§4.5).
    pub fn on_stream_frame(&mut self, id: u64, offset: u64, data: &[u8], fin: bool) -> Result<u64> {
        if !self.stream_for_frame(id, Part::Recv)? {
            return Ok(0);
        }
        let recv = self
            .streams
            .get_mut(&id)
            .and_then(|s| s.recv.as_mut())
            .ok_or(Error::InvalidStreamState(id))?;
        let readable_before = recv.readable_len();
        let credit = recv.write(offset, data, fin)?;
        // New in-order bytes, or the end, re-arm `stream_readable_next`.
        let news = recv.readable_len() > readable_before || (fin && recv.is_readable());
        self.recv_discarded = self.recv_discarded.saturating_add(credit.discarded);
        self.refresh(id);
        if news {
            self.arm_readable(id);
        }
        Ok(credit.new)
    }

    /// A RESET_STREAM frame arrived. Returns the bytes the final size adds beyond the stream's
    /// previous highest offset (for connection-level flow control). The application's next read
    /// returns `StreamReset(code)`; unread data is dropped and reported through
    /// [`StreamMap::take_recv_discarded`]. Errors as for [`StreamMap::on_stream_frame`].
    pub fn on_reset_stream(&mut self, id: u64, error_code: u64, final_size: u64) -> Result<u64> {
        if !self.stream_for_frame(id, Part::Recv)? {
            return Ok(0);
        }
        let recv = self
            .streams
            .get_mut(&id)
            .and_then(|s| s.recv.as_mut())
            .ok_or(Error::InvalidStreamState(id))?;
        let credit = recv.reset(error_code, final_size)?;
        let readable = recv.is_readable();
        self.recv_discarded = self.recv_discarded.saturating_add(credit.discarded);
        self.refresh(id);
        if readable {
            self.arm_readable(id);
        }
        Ok(credit.new)
    }

    /// A STOP_SENDING frame arrived: the sending part is reset with the same error code
    /// (§3.5), queuing RESET_STREAM, and the application's next `stream_send` returns
    /// `StreamStopped(code)`. Errors: `InvalidStreamState(id)` (a receive-only stream, or ours
    /// not yet opened), `StreamLimit`. Returns whether this frame reset the sending part
    /// (false when it was already reset or all its data acknowledged, or the stream is gone).
    pub fn on_stop_sending(&mut self, id: u64, error_code: u64) -> Result<bool> {
        if !self.stream_for_frame(id, Part::Send)? {
            return Ok(false);
        }
        let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return Err(Error::InvalidStreamState(id));
        };
        send.stop(error_code);
        let reset = send.reset(error_code);
        if let Some((_, unsent)) = reset {
            self.send_reclaimed = self.send_reclaimed.saturating_add(unsent);
            self.queue_control(CtlKey::Reset(id));
        }
        self.refresh(id);
        // The next write reports the stop: the application should hear of the stream.
        self.rearm_writable_if_writable(id);
        Ok(reset.is_some())
    }

    /// A MAX_STREAM_DATA frame arrived; a limit that does not grow is ignored (§4.1). Errors as
    /// for [`StreamMap::on_stop_sending`].
    pub fn on_max_stream_data(&mut self, id: u64, max: u64) -> Result<()> {
        if !self.stream_for_frame(id, Part::Send)? {
            return Ok(());
        }
        if let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) {
            send.set_peer_max_data(max);
        }
        self.refresh(id);
        self.rearm_writable_if_writable(id);
        Ok(())
    }

    /// A MAX_STREAMS frame arrived; a limit that does not grow is ignored (§4.6). Error:
    /// `InvalidFrame` (FRAME_ENCODING_ERROR) above 2^60 (§19.11).
    pub fn on_max_streams(&mut self, bidi: bool, max: u64) -> Result<()> {
        if max > MAX_STREAMS_LIMIT {
            return Err(Error::InvalidFrame);
        }
        let d = &mut self.dirs[dir_index(bidi)];
        d.peer_max_streams = d.peer_max_streams.max(max);
        Ok(())
    }

    /// A STREAM_DATA_BLOCKED frame arrived (it opens the stream like STREAM does). If our
    /// limit is already above the one the peer is blocked at, our MAX_STREAM_DATA has not
    /// reached it: send it again. Errors as for [`StreamMap::on_stream_frame`].
    pub fn on_stream_data_blocked(&mut self, id: u64, limit: u64) -> Result<()> {
        if !self.stream_for_frame(id, Part::Recv)? {
            return Ok(());
        }
        let resend = self
            .streams
            .get(&id)
            .and_then(|s| s.recv.as_ref())
            .is_some_and(|r| r.wants_credit() && r.max_data() > limit);
        if resend {
            self.queue_control(CtlKey::MaxStreamData(id));
        }
        Ok(())
    }

    /// A STREAMS_BLOCKED frame arrived. If our limit is above the one the peer reports, our
    /// MAX_STREAMS has not reached it: send it again; if completed streams allow a higher limit,
    /// raise it now. Error: `InvalidFrame` above 2^60 (§19.14).
    pub fn on_streams_blocked(&mut self, bidi: bool, limit: u64) -> Result<()> {
        if limit > MAX_STREAMS_LIMIT {
            return Err(Error::InvalidFrame);
        }
        if self.dirs[dir_index(bidi)].local_max_streams > limit {
            self.queue_control(CtlKey::MaxStreams(bidi));
        }
        self.maybe_update_max_streams(bidi, true);
        Ok(())
    }

    /// What [`StreamMap::emit`] would send next on stream `id` given unlimited room: the
    /// offset and how many bytes are ready there (so the caller can size the frame header).
    pub fn peek_emit(&self, id: u64) -> Option<(u64, u64)> {
        self.streams.get(&id)?.send.as_ref()?.peek()
    }

    /// Whether the next [`StreamMap::emit`] on stream `id` sends bytes again (repairs a loss),
    /// so the caller can keep room for the whole range in one frame.
    pub fn next_emit_is_repair(&self, id: u64) -> bool {
        self.streams
            .get(&id)
            .and_then(|s| s.send.as_ref())
            .is_some_and(|s| s.next_is_repair())
    }

    /// Writes the next STREAM frame's data for stream `id` straight into `out` (the payload
    /// area of the packet being built): lost data first, then new data, with the FIN on the
    /// frame that reaches the final size. An incremental stream passes its turn to the next one
    /// of its urgency. `Done` if the stream has nothing to send.
    pub fn emit(&mut self, id: u64, out: &mut [u8]) -> Result<Emitted> {
        let stream = self.streams.get_mut(&id).ok_or(Error::Done)?;
        let emitted = stream
            .send
            .as_mut()
            .and_then(|w| w.emit(out))
            .ok_or(Error::Done)?;
        let priority = stream.priority;
        self.sched.on_emitted(id, priority);
        self.refresh(id);
        Ok(emitted)
    }

    /// A STREAM frame of stream `id` was acknowledged. Acknowledged data is released; the
    /// stream is collected once both parts are done. Unknown streams are ignored.
    pub fn on_data_acked(&mut self, id: u64, offset: u64, len: u64, fin: bool) {
        if let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) {
            send.on_acked(offset, len, fin);
            self.refresh(id);
            self.rearm_writable_if_writable(id);
        }
    }

    /// A STREAM frame of stream `id` was declared lost: its unacknowledged bytes (and FIN) are
    /// queued for retransmission ahead of new data. Unknown or reset streams are ignored.
    pub fn on_data_lost(&mut self, id: u64, offset: u64, len: u64, fin: bool) {
        if let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) {
            send.on_lost(offset, len, fin);
            self.refresh(id);
        }
    }

    /// A PTO probe found nothing new to send: up to `max` unacknowledged bytes of stream `id`
    /// from offset `from` on are queued again (see `SendBuf::requeue_unacked`). Returns the
    /// offset reached, or `None` when nothing there lacks an acknowledgment.
    pub fn requeue_unacked(&mut self, id: u64, from: u64, max: u64) -> Option<u64> {
        let send = self.streams.get_mut(&id).and_then(|s| s.send.as_mut())?;
        let reached = send.requeue_unacked(from, max);
        self.refresh(id);
        reached
    }
}
