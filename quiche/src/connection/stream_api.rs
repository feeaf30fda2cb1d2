//! The stream API: sending, receiving, priorities, shutdown, capacity and the readable and
//! writable iterators (RFC 9000 §2, §3), and crediting the connection's receive window as the
//! application reads.

use super::*;

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Writes data to a stream; returns how much was accepted (back-pressure: the rest must be
    /// written again later), `Error::Done` if nothing fits.
    pub fn stream_send(&mut self, stream_id: u64, buf: &[u8], fin: bool) -> Result<usize> {
        if self.lifecycle.is_closing_or_draining() {
            return Err(Error::InvalidState);
        }
        let capacity = self.send_capacity();
        let n = self.streams.stream_send(stream_id, buf, fin, capacity)?;
        self.flow.on_written(n as u64);
        Ok(n)
    }

    /// A reset (ours, or the answer to the peer's STOP_SENDING) withdrew streams' unsent
    /// bytes: they no longer count against the peer's connection window nor wait to be sent.
    pub(super) fn reclaim_unsent_stream_data(&mut self) {
        let reclaimed = self.streams.take_send_reclaimed();
        self.flow.on_reclaimed(reclaimed);
    }

    /// How many more stream bytes the connection accepts over all streams: the peer's
    /// connection window (MAX_DATA) and the bound on data written but not yet sent.
    pub(super) fn send_capacity(&self) -> u64 {
        let unsent = self.flow.unsent();
        let capacity = self.flow.send_capacity();
        match self.tuning.send_capacity_factor {
            // `Config::set_send_capacity_factor`: the window's free room, scaled.
            Some(factor) => {
                let room = self.recovery.cwnd_available(self.sender()) as f64 * factor;
                capacity.min((room as u64).saturating_sub(unsent))
            }
            None => capacity,
        }
    }

    /// Reads data from a stream into `out`; returns the bytes read and whether the stream
    /// ended. `Error::Done` when nothing is readable.
    pub fn stream_recv(&mut self, stream_id: u64, out: &mut [u8]) -> Result<(usize, bool)> {
        let mut filled = 0;
        let max = out.len();
        self.stream_recv_with(stream_id, max, |chunk| {
            if let Some(dst) = out.get_mut(filled..filled + chunk.len()) {
                dst.copy_from_slice(chunk);
            }
            filled += chunk.len();
        })
    }

    /// Sets a stream's priority (RFC 9218: urgency 0..=7, lower first; incremental streams of
    /// one urgency share bandwidth round-robin).
    pub fn stream_priority(
        &mut self,
        stream_id: u64,
        urgency: u8,
        incremental: bool,
    ) -> Result<()> {
        self.streams
            .stream_priority(stream_id, urgency, incremental)
    }

    /// Shuts down reading (STOP_SENDING) or writing (RESET_STREAM) of a stream.
    pub fn stream_shutdown(&mut self, stream_id: u64, direction: Shutdown, err: u64) -> Result<()> {
        self.streams.stream_shutdown(stream_id, direction, err)?;
        match direction {
            Shutdown::Read => self.stats.stopped_stream_count_local += 1,
            Shutdown::Write => self.stats.reset_stream_count_local += 1,
        }
        self.reclaim_unsent_stream_data();
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        let discarded = self.streams.take_recv_discarded();
        self.on_consumed(discarded, now);
        Ok(())
    }

    /// How many bytes `stream_send` would accept on the stream now.
    pub fn stream_capacity(&self, stream_id: u64) -> Result<usize> {
        let stream = self.streams.stream_capacity(stream_id)?;
        Ok(stream
            .min(self.send_capacity())
            .try_into()
            .unwrap_or(usize::MAX))
    }

    /// Whether the stream has data to read (or an end to report).
    pub fn stream_readable(&self, stream_id: u64) -> bool {
        self.streams.stream_readable(stream_id)
    }

    /// Whether all of the stream's data was read, including its end.
    pub fn stream_finished(&self, stream_id: u64) -> bool {
        self.streams.stream_finished(stream_id)
    }

    /// Whether `len` bytes can be written to the stream now. When not, `len` becomes the
    /// stream's low-water mark: [`stream_writable_next`](Self::stream_writable_next) returns
    /// it only once it can take that much.
    pub fn stream_writable(&mut self, stream_id: u64, len: usize) -> Result<bool> {
        let writable = self.streams.stream_writable(stream_id, len)?;
        if writable && self.send_capacity() >= len as u64 {
            return Ok(true);
        }
        self.streams.set_send_lowat(stream_id, len as u64);
        Ok(false)
    }

    /// Stream bytes written by the application and not yet acknowledged by the peer, over all
    /// streams: what back-pressure bounds (each stream holds at most the peer's window).
    pub fn stream_send_buffered(&self) -> u64 {
        self.streams.send_buffered()
    }

    /// The streams with data to read.
    pub fn readable(&self) -> StreamIter {
        self.streams.readable()
    }

    /// The streams that accept data.
    pub fn writable(&self) -> StreamIter {
        self.streams.writable()
    }

    /// How many more bidirectional streams we may open.
    pub fn peer_streams_left_bidi(&self) -> u64 {
        self.streams.peer_streams_left_bidi()
    }

    /// How many more unidirectional streams we may open.
    pub fn peer_streams_left_uni(&self) -> u64 {
        self.streams.peer_streams_left_uni()
    }

    /// The application read or discarded `n` bytes: credit the connection window.
    pub(super) fn on_consumed(&mut self, n: u64, now: Instant) {
        if n == 0 {
            return;
        }
        self.flow.on_consumed(
            n,
            self.streams.largest_recv_window().saturating_mul(3) / 2,
            self.streams.has_control_frames(),
            now,
            self.sender().rtt().smoothed_rtt(),
        );
    }
}
