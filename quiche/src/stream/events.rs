//! The one-shot stream events of quiche's `stream_readable_next` and `stream_writable_next`:
//! unlike the `readable()` / `writable()` lists, a stream returned once is not returned again
//! until something "re-arms" it.
//!
//! * Readable: a stream is armed when data (or its end, or a reset) arrives that the
//!   application has not been told of, and again after a read that leaves data behind.
//! * Writable: a stream is armed when it becomes writable, when its capacity grows (the
//!   peer's MAX_STREAM_DATA, acknowledgements that free its buffer), after a write that leaves
//!   it writable, and when the peer stops it (so that the next write reports the stop). It is
//!   returned once it can take at least its low-water mark (1 byte, or what the last
//!   `stream_writable` call asked for) within the connection's capacity.
//!
//! Each queue holds a stream at most once (the stream's `armed_*` flag), so both are bounded
//! by the number of live streams.

use crate::stream::StreamMap;

impl StreamMap {
    /// Queues stream `id` for `stream_readable_next` unless it already is.
    pub(crate) fn arm_readable(&mut self, id: u64) {
        if let Some(s) = self.streams.get_mut(&id) {
            if !s.armed_readable {
                s.armed_readable = true;
                self.readable_queue.push_back(id);
            }
        }
    }

    /// Queues stream `id` for `stream_writable_next` unless it already is.
    pub(crate) fn arm_writable(&mut self, id: u64) {
        if let Some(s) = self.streams.get_mut(&id) {
            if !s.armed_writable && s.send.is_some() {
                s.armed_writable = true;
                self.writable_queue.push_back(id);
            }
        }
    }

    /// Arms stream `id` for `stream_writable_next` if it is writable now (after an event that
    /// may have raised its capacity).
    pub(crate) fn rearm_writable_if_writable(&mut self, id: u64) {
        if self.writable.contains(&id) {
            self.arm_writable(id);
        }
    }

    /// The next stream with something to read that the application was not yet told of
    /// (quiche's `stream_readable_next`).
    pub fn stream_readable_next(&mut self) -> Option<u64> {
        while let Some(id) = self.readable_queue.pop_front() {
            let Some(s) = self.streams.get_mut(&id) else {
                continue;
            };
            s.armed_readable = false;
            if s.recv.as_ref().is_some_and(|r| r.is_readable()) {
                return Some(id);
            }
        }
        None
    }

    /// The next stream that can take data that the application was not yet told of (quiche's
    /// `stream_writable_next`): one whose capacity, within `connection_capacity`, reaches its
    /// low-water mark, or one the peer stopped. Streams waiting for capacity stay queued.
    pub fn stream_writable_next(&mut self, connection_capacity: u64) -> Option<u64> {
        let mut i = 0;
        while let Some(&id) = self.writable_queue.get(i) {
            let state = self.streams.get(&id).and_then(|s| {
                let send = s.send.as_ref()?;
                let stopped = send.stopped().is_some() && !s.stop_reported;
                let open = !send.is_fin() && !send.is_reset();
                let ready = stopped || send.capacity().min(connection_capacity) >= s.send_lowat;
                Some((open || stopped, ready))
            });
            match state {
                Some((true, false)) => i += 1,
                Some((true, true)) => {
                    self.writable_queue.remove(i);
                    if let Some(s) = self.streams.get_mut(&id) {
                        s.armed_writable = false;
                    }
                    return Some(id);
                }
                // Gone, ended or reset: it will not take data again.
                _ => {
                    self.writable_queue.remove(i);
                    if let Some(s) = self.streams.get_mut(&id) {
                        s.armed_writable = false;
                    }
                }
            }
        }
        None
    }

    /// Sets the capacity stream `id` must reach before `stream_writable_next` returns it
    /// (at least 1), and arms it.
    pub(crate) fn set_send_lowat(&mut self, id: u64, lowat: u64) {
        if let Some(s) = self.streams.get_mut(&id) {
            s.send_lowat = lowat.max(1);
        }
        self.arm_writable(id);
    }
}
