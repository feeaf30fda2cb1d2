//! The application-facing operations of the stream map.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::stream::control::CtlKey;
use crate::stream::{Priority, Shutdown, StreamIter, StreamMap};

impl StreamMap {
    /// Writes `data` to stream `id`, ending it with `fin` if all of `data` is accepted.
    ///
    /// Accepts only what the peer's stream limit, `connection_send_capacity` (what
    /// connection-level flow control still allows; the connection tracks it) and the local send
    /// buffer allow, and returns how much that was: the rest is back-pressure for the caller to
    /// retry after [`StreamMap::writable`] lists the stream again. Opens our stream `id` if
    /// needed.
    ///
    /// Errors: `Done` if nothing fits (and `data` is not empty); `StreamLimit` if opening the
    /// stream would exceed the peer's limit; `StreamStopped(code)` after the peer's STOP_SENDING;
    /// `InvalidStreamState(id)` for a receive-only or unknown peer stream, after a local reset,
    /// or for new data after the FIN.
    pub fn stream_send(
        &mut self,
        id: u64,
        data: &[u8],
        fin: bool,
        connection_send_capacity: u64,
    ) -> Result<usize> {
        let live = if self.is_local(id) {
            self.open_local(id)?
        } else {
            self.contains(id)
        };
        if !live {
            return Err(Error::InvalidStreamState(id));
        }
        let Some(stream) = self.streams.get_mut(&id) else {
            return Err(Error::InvalidStreamState(id));
        };
        let Some(send) = stream.send.as_mut() else {
            return Err(Error::InvalidStreamState(id));
        };
        if let Some(code) = send.stopped() {
            stream.stop_reported = true;
            self.refresh(id);
            return Err(Error::StreamStopped(code));
        }
        if send.is_reset() {
            return Err(Error::InvalidStreamState(id));
        }
        if send.is_fin() {
            // Repeating the end is harmless; new data after it is not.
            return if data.is_empty() {
                Ok(0)
            } else {
                Err(Error::InvalidStreamState(id))
            };
        }
        let cap = send.capacity().min(connection_send_capacity);
        let n = usize::try_from(cap).unwrap_or(usize::MAX).min(data.len());
        let all = n == data.len();
        if all || n > 0 {
            send.append(data.get(..n).unwrap_or(&[]), fin && all);
        }
        if !all {
            self.queue_data_blocked(id);
        }
        self.refresh(id);
        self.rearm_writable_if_writable(id);
        if n == 0 && !data.is_empty() {
            return Err(Error::Done);
        }
        Ok(n)
    }

    /// Reads from stream `id` into `out`, in order. Returns the byte count and whether the end
    /// of the stream was reached. `now` and `srtt` drive the stream window's auto-tuning when
    /// the read makes a MAX_STREAM_DATA update due (see [`crate::flow_control`]).
    ///
    /// Errors: `Done` if nothing is readable; `StreamReset(code)` once the peer reset the stream
    /// (the unread data is dropped); `InvalidStreamState(id)` for a send-only, unknown or
    /// collected stream.
    pub fn stream_recv(
        &mut self,
        id: u64,
        out: &mut [u8],
        now: Instant,
        srtt: Duration,
    ) -> Result<(usize, bool)> {
        let mut filled = 0;
        let max = out.len();
        self.stream_recv_with(id, max, now, srtt, |chunk| {
            if let Some(dst) = out.get_mut(filled..filled + chunk.len()) {
                dst.copy_from_slice(chunk);
            }
            filled += chunk.len();
        })
    }

    /// [`StreamMap::stream_recv`] of up to `max` bytes handed to `sink` (one or two slices)
    /// instead of copied into a slice; a sink that ignores them discards them. A read that
    /// leaves data behind queues the stream for `stream_readable_next` again.
    pub fn stream_recv_with(
        &mut self,
        id: u64,
        max: usize,
        now: Instant,
        srtt: Duration,
        sink: impl FnMut(&[u8]),
    ) -> Result<(usize, bool)> {
        let Some(stream) = self.streams.get_mut(&id) else {
            return Err(Error::InvalidStreamState(id));
        };
        // While an update waits to be sent, further reads only add to the credit it will carry
        // (it is computed when written): deciding again would count one update twice for
        // auto-tuning.
        let update_pending = stream.ctl.max_stream_data;
        let Some(recv) = stream.recv.as_mut() else {
            return Err(Error::InvalidStreamState(id));
        };
        let res = recv.read_with(max, sink);
        let more = recv.is_readable();
        let updated = res.is_ok() && !update_pending && recv.update_max_data(now, srtt);
        let window = recv.window();
        if updated {
            self.largest_recv_window = self.largest_recv_window.max(window);
            self.queue_control(CtlKey::MaxStreamData(id));
        }
        self.refresh(id);
        if more && res.is_ok() {
            self.arm_readable(id);
        }
        res
    }

    /// How many bytes a read of stream `id` would return now, at most `max_len`; 0 for a
    /// stream not in the map.
    pub fn stream_readable_len(&self, id: u64, max_len: usize) -> usize {
        self.streams
            .get(&id)
            .and_then(|s| s.recv.as_ref())
            .map_or(0, |r| r.readable_len().min(max_len))
    }

    /// Whether stream `id` is over in every direction it has: both ends (FIN or reset) of a
    /// bidirectional stream, the one end of a unidirectional one. True for a collected stream,
    /// false for one never opened (as in quiche).
    pub fn stream_closed(&self, id: u64) -> bool {
        match self.streams.get(&id) {
            None => self.is_collected(id),
            Some(s) => {
                let recv_over = s.recv.as_ref().is_none_or(|r| r.is_finished());
                let send_over = s.send.as_ref().is_none_or(|w| w.is_fin() || w.is_reset());
                recv_over && send_over
            }
        }
    }

    /// Ends one direction of stream `id` with application error code `err`.
    ///
    /// * `Read`: buffered and future data is discarded and STOP_SENDING is queued (unless the
    ///   stream was reset or all data has arrived already).
    /// * `Write`: unsent and unacknowledged data is dropped and RESET_STREAM is queued, with the
    ///   bytes sent so far as final size (nothing happens if all data was already acknowledged).
    ///
    /// Errors: `InvalidStreamState(id)` if the stream lacks that direction or does not exist;
    /// `Done` if it was already collected.
    pub fn stream_shutdown(&mut self, id: u64, direction: Shutdown, err: u64) -> Result<()> {
        // A unidirectional stream has no such direction on this side: a usage error, whether
        // or not the stream exists yet. Any other stream not (or no longer) in the map has
        // nothing to shut down: `Done`, as quiche answers.
        let wrong_direction = !super::is_bidi(id)
            && match direction {
                Shutdown::Read => self.is_local(id),
                Shutdown::Write => !self.is_local(id),
            };
        if wrong_direction {
            return Err(Error::InvalidStreamState(id));
        }
        let Some(stream) = self.streams.get_mut(&id) else {
            return Err(Error::Done);
        };
        match direction {
            Shutdown::Read => {
                let recv = stream.recv.as_mut().ok_or(Error::InvalidStreamState(id))?;
                let (dropped, stop) = recv.shutdown();
                self.recv_discarded = self.recv_discarded.saturating_add(dropped);
                if stop {
                    stream.ctl.stop_code = Some(err);
                    self.queue_control(CtlKey::StopSending(id));
                }
            }
            Shutdown::Write => {
                let send = stream.send.as_mut().ok_or(Error::InvalidStreamState(id))?;
                if let Some((_, unsent)) = send.reset(err) {
                    self.send_reclaimed = self.send_reclaimed.saturating_add(unsent);
                    self.queue_control(CtlKey::Reset(id));
                }
            }
        }
        self.refresh(id);
        Ok(())
    }

    /// Sets the priority of stream `id` (RFC 9218): `urgency` 0 (most urgent) to 7, and whether
    /// it is served incrementally. Opens our stream `id` if needed, so the priority applies from
    /// its first byte. Errors: `InvalidStreamState(id)` for an urgency above 7 or an unknown
    /// peer stream; `StreamLimit` as for `stream_send`.
    pub fn stream_priority(&mut self, id: u64, urgency: u8, incremental: bool) -> Result<()> {
        let priority = Priority::new(urgency, incremental).ok_or(Error::InvalidStreamState(id))?;
        if self.is_local(id) {
            if !self.open_local(id)? {
                return Ok(());
            }
        } else if !self.contains(id) {
            return if self.is_collected(id) {
                Ok(())
            } else {
                Err(Error::InvalidStreamState(id))
            };
        }
        let Some(stream) = self.streams.get_mut(&id) else {
            return Err(Error::InvalidStreamState(id));
        };
        if stream.priority == priority {
            return Ok(());
        }
        if stream.scheduled {
            self.sched.remove(id, stream.priority);
            self.sched.insert(id, priority);
        }
        stream.priority = priority;
        Ok(())
    }

    /// How many bytes stream `id` accepts now as far as the stream is concerned (the peer's
    /// stream limit and the local buffer); the connection takes the minimum with its own
    /// capacity. Errors: `StreamStopped(code)` after STOP_SENDING; `InvalidStreamState(id)` for
    /// a stream without a sending part or not in the map.
    pub fn stream_capacity(&self, id: u64) -> Result<u64> {
        let send = self
            .streams
            .get(&id)
            .and_then(|s| s.send.as_ref())
            .ok_or(Error::InvalidStreamState(id))?;
        if let Some(code) = send.stopped() {
            return Err(Error::StreamStopped(code));
        }
        Ok(send.capacity())
    }

    /// Whether stream `id` can accept `len` bytes now (stream-level; see
    /// [`StreamMap::stream_capacity`]).
    pub fn stream_writable(&self, id: u64, len: usize) -> Result<bool> {
        Ok(self.stream_capacity(id)? >= len as u64)
    }

    /// Whether stream `id` has data, its end or its reset to deliver.
    pub fn stream_readable(&self, id: u64) -> bool {
        self.readable.contains(&id)
    }

    /// Whether the receiving side of stream `id` is over: all data read including the FIN, or
    /// reset by the peer. True for streams no longer in the map (as in quiche), false for a
    /// stream without a receiving part.
    pub fn stream_finished(&self, id: u64) -> bool {
        match self.streams.get(&id) {
            None => true,
            Some(s) => s.recv.as_ref().is_some_and(|r| r.is_finished()),
        }
    }

    /// The streams with something to read (data, the end, or a reset), in ID order.
    pub fn readable(&self) -> StreamIter {
        StreamIter::from_set(&self.readable)
    }

    /// The streams that accept data now as far as the streams are concerned, plus those stopped
    /// by the peer until `stream_send` reports it; the connection yields nothing while its own
    /// capacity is zero.
    pub fn writable(&self) -> StreamIter {
        StreamIter::from_set(&self.writable)
    }

    /// The stream whose data should go out next (RFC 9218 order; see
    /// [`crate::stream::priority`]), or `None` if no stream has anything to send.
    pub fn next_stream_to_send(&self) -> Option<u64> {
        self.sched.next()
    }

    /// Whether any stream has data (or a FIN) to send.
    pub fn has_data_to_send(&self) -> bool {
        !self.sched.is_empty()
    }
}
