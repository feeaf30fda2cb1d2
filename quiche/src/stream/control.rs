//! Stream-related control frames the send path drains: RESET_STREAM, STOP_SENDING,
//! MAX_STREAM_DATA, STREAM_DATA_BLOCKED, MAX_STREAMS and STREAMS_BLOCKED.
//!
//! Each pending frame is a flag on its stream (or on the map, for the stream-count frames) plus
//! an entry in one FIFO that orders them. The frame's content is built when it is sent, from the
//! current state, so an update queued twice goes out once with the newest value. The send path
//! reports what became of each frame: sent ([`StreamMap::on_control_frame_sent`]), lost
//! ([`StreamMap::on_control_frame_lost`]: queued again unless a newer frame superseded it or it no
//! longer matters) or acknowledged ([`StreamMap::on_control_frame_acked`]).

use crate::stream::{dir_index, StreamMap};

/// A stream-related control frame to send (RFC 9000 §19.4, 19.5, 19.10, 19.11, 19.13, 19.14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControlFrame {
    /// RESET_STREAM: we abandoned the sending part of a stream.
    ResetStream {
        /// The stream.
        stream_id: u64,
        /// Application error code.
        error_code: u64,
        /// Final size: the bytes sent before the reset.
        final_size: u64,
    },
    /// STOP_SENDING: we no longer read the receiving part of a stream.
    StopSending {
        /// The stream.
        stream_id: u64,
        /// Application error code.
        error_code: u64,
    },
    /// MAX_STREAM_DATA: more credit on a stream.
    MaxStreamData {
        /// The stream.
        stream_id: u64,
        /// The new limit (absolute offset).
        max: u64,
    },
    /// STREAM_DATA_BLOCKED: the peer's stream limit stops us.
    StreamDataBlocked {
        /// The stream.
        stream_id: u64,
        /// The limit at which we are blocked.
        limit: u64,
    },
    /// MAX_STREAMS: the peer may open more streams.
    MaxStreams {
        /// Bidirectional (type 0x12) or unidirectional (0x13).
        bidi: bool,
        /// Cumulative number of streams the peer may open.
        max: u64,
    },
    /// STREAMS_BLOCKED: the peer's stream-count limit stops us opening a stream.
    StreamsBlocked {
        /// Bidirectional (type 0x16) or unidirectional (0x17).
        bidi: bool,
        /// The limit at which we are blocked.
        limit: u64,
    },
}

impl ControlFrame {
    /// Encoded size in bytes (all these frame types take one byte).
    pub fn wire_len(&self) -> usize {
        let v = octets::varint_len;
        1 + match *self {
            ControlFrame::ResetStream {
                stream_id,
                error_code,
                final_size,
            } => v(stream_id) + v(error_code) + v(final_size),
            ControlFrame::StopSending {
                stream_id,
                error_code,
            } => v(stream_id) + v(error_code),
            ControlFrame::MaxStreamData { stream_id, max } => v(stream_id) + v(max),
            ControlFrame::StreamDataBlocked { stream_id, limit } => v(stream_id) + v(limit),
            ControlFrame::MaxStreams { max, .. } => v(max),
            ControlFrame::StreamsBlocked { limit, .. } => v(limit),
        }
    }

    fn key(&self) -> CtlKey {
        match *self {
            ControlFrame::ResetStream { stream_id, .. } => CtlKey::Reset(stream_id),
            ControlFrame::StopSending { stream_id, .. } => CtlKey::StopSending(stream_id),
            ControlFrame::MaxStreamData { stream_id, .. } => CtlKey::MaxStreamData(stream_id),
            ControlFrame::StreamDataBlocked { stream_id, .. } => CtlKey::DataBlocked(stream_id),
            ControlFrame::MaxStreams { bidi, .. } => CtlKey::MaxStreams(bidi),
            ControlFrame::StreamsBlocked { bidi, .. } => CtlKey::StreamsBlocked(bidi),
        }
    }
}

/// Identifies a pending control frame in the queue; its content is built at send time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CtlKey {
    Reset(u64),
    StopSending(u64),
    MaxStreamData(u64),
    DataBlocked(u64),
    MaxStreams(bool),
    StreamsBlocked(bool),
}

/// Per-stream pending control frames.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StreamCtl {
    /// RESET_STREAM waiting to be sent (content from the send buffer).
    pub(crate) reset: bool,
    /// Error code of the STOP_SENDING we send, kept for retransmission.
    pub(crate) stop_code: Option<u64>,
    /// STOP_SENDING waiting to be sent.
    pub(crate) stop_sending: bool,
    /// MAX_STREAM_DATA waiting to be sent.
    pub(crate) max_stream_data: bool,
    /// STREAM_DATA_BLOCKED waiting to be sent.
    pub(crate) data_blocked: bool,
    /// The limit of the last STREAM_DATA_BLOCKED queued (one per limit value).
    pub(crate) data_blocked_at: Option<u64>,
}

impl StreamMap {
    /// Marks `key` pending and queues it, unless it is pending already.
    pub(crate) fn queue_control(&mut self, key: CtlKey) {
        let flag = match key {
            CtlKey::Reset(id)
            | CtlKey::StopSending(id)
            | CtlKey::MaxStreamData(id)
            | CtlKey::DataBlocked(id) => {
                let Some(s) = self.streams.get_mut(&id) else {
                    return;
                };
                match key {
                    CtlKey::Reset(_) => &mut s.ctl.reset,
                    CtlKey::StopSending(_) => &mut s.ctl.stop_sending,
                    CtlKey::MaxStreamData(_) => &mut s.ctl.max_stream_data,
                    _ => &mut s.ctl.data_blocked,
                }
            }
            CtlKey::MaxStreams(bidi) => &mut self.dirs[dir_index(bidi)].max_streams_pending,
            CtlKey::StreamsBlocked(bidi) => &mut self.dirs[dir_index(bidi)].streams_blocked_pending,
        };
        if !*flag {
            *flag = true;
            self.ctl_queue.push_back(key);
        }
    }

    /// Builds the frame for `key` if it is still pending and still meaningful.
    fn build_control(&self, key: CtlKey) -> Option<ControlFrame> {
        match key {
            CtlKey::Reset(id) => {
                let s = self.streams.get(&id).filter(|s| s.ctl.reset)?;
                let (error_code, final_size) = s.send.as_ref()?.reset_frame()?;
                Some(ControlFrame::ResetStream {
                    stream_id: id,
                    error_code,
                    final_size,
                })
            }
            CtlKey::StopSending(id) => {
                let s = self.streams.get(&id).filter(|s| s.ctl.stop_sending)?;
                Some(ControlFrame::StopSending {
                    stream_id: id,
                    error_code: s.ctl.stop_code?,
                })
            }
            CtlKey::MaxStreamData(id) => {
                let s = self.streams.get(&id).filter(|s| s.ctl.max_stream_data)?;
                let recv = s.recv.as_ref().filter(|r| r.wants_credit())?;
                Some(ControlFrame::MaxStreamData {
                    stream_id: id,
                    max: recv.max_data(),
                })
            }
            CtlKey::DataBlocked(id) => {
                let s = self.streams.get(&id).filter(|s| s.ctl.data_blocked)?;
                let limit = s.ctl.data_blocked_at?;
                Some(ControlFrame::StreamDataBlocked {
                    stream_id: id,
                    limit,
                })
            }
            CtlKey::MaxStreams(bidi) => {
                let d = &self.dirs[dir_index(bidi)];
                d.max_streams_pending.then_some(ControlFrame::MaxStreams {
                    bidi,
                    max: d.local_max_streams,
                })
            }
            CtlKey::StreamsBlocked(bidi) => {
                let d = &self.dirs[dir_index(bidi)];
                let limit = d.streams_blocked_at.filter(|_| d.streams_blocked_pending)?;
                Some(ControlFrame::StreamsBlocked { bidi, limit })
            }
        }
    }

    /// The next control frame to send, without removing it: call
    /// [`StreamMap::on_control_frame_sent`] once it is written into a packet. Frames that went
    /// stale (stream collected, state moved on) are dropped here.
    pub fn next_control_frame(&mut self) -> Option<ControlFrame> {
        while let Some(&key) = self.ctl_queue.front() {
            if let CtlKey::MaxStreamData(id) = key {
                // The frame carries the credit of everything read by the time it is sent.
                if let Some(recv) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut()) {
                    recv.refresh_max_data();
                }
            }
            if let Some(frame) = self.build_control(key) {
                return Some(frame);
            }
            self.ctl_queue.pop_front();
        }
        None
    }

    /// Whether a control frame may be waiting (stale entries are only pruned by
    /// [`StreamMap::next_control_frame`], so this can report `true` spuriously, never `false`
    /// wrongly).
    pub fn has_control_frames(&self) -> bool {
        !self.ctl_queue.is_empty()
    }

    /// `frame` (as returned by [`StreamMap::next_control_frame`]) was written into a packet.
    pub fn on_control_frame_sent(&mut self, frame: &ControlFrame) {
        let key = frame.key();
        match key {
            CtlKey::Reset(id)
            | CtlKey::StopSending(id)
            | CtlKey::MaxStreamData(id)
            | CtlKey::DataBlocked(id) => {
                if let Some(s) = self.streams.get_mut(&id) {
                    match key {
                        CtlKey::Reset(_) => s.ctl.reset = false,
                        CtlKey::StopSending(_) => s.ctl.stop_sending = false,
                        CtlKey::MaxStreamData(_) => s.ctl.max_stream_data = false,
                        _ => s.ctl.data_blocked = false,
                    }
                }
            }
            CtlKey::MaxStreams(bidi) => self.dirs[dir_index(bidi)].max_streams_pending = false,
            CtlKey::StreamsBlocked(bidi) => {
                self.dirs[dir_index(bidi)].streams_blocked_pending = false
            }
        }
        if self.ctl_queue.front() == Some(&key) {
            self.ctl_queue.pop_front();
        }
    }

    /// The packet carrying `frame` was lost: queue it again unless a newer frame superseded
    /// it or the stream no longer needs it.
    pub fn on_control_frame_lost(&mut self, frame: &ControlFrame) {
        let again = match *frame {
            ControlFrame::ResetStream { stream_id, .. } => self
                .streams
                .get(&stream_id)
                .and_then(|s| s.send.as_ref())
                .is_some_and(|w| w.reset_unacked()),
            ControlFrame::StopSending { stream_id, .. } => self
                .streams
                .get(&stream_id)
                .and_then(|s| s.recv.as_ref())
                .is_some_and(|r| !r.is_reset() && !r.is_complete()),
            ControlFrame::MaxStreamData { stream_id, max } => self
                .streams
                .get(&stream_id)
                .and_then(|s| s.recv.as_ref())
                .is_some_and(|r| r.wants_credit() && r.max_data() == max),
            ControlFrame::StreamDataBlocked { stream_id, limit } => {
                self.streams.get(&stream_id).is_some_and(|s| {
                    s.ctl.data_blocked_at == Some(limit)
                        && s.send
                            .as_ref()
                            .is_some_and(|w| w.is_flow_blocked() && w.peer_max_data() == limit)
                })
            }
            ControlFrame::MaxStreams { bidi, max } => {
                self.dirs[dir_index(bidi)].local_max_streams == max
            }
            ControlFrame::StreamsBlocked { bidi, limit } => {
                let d = &self.dirs[dir_index(bidi)];
                d.peer_max_streams == limit && d.streams_blocked_at == Some(limit)
            }
        };
        if again {
            self.queue_control(frame.key());
        }
    }

    /// The packet carrying `frame` was acknowledged. Only RESET_STREAM matters: its
    /// acknowledgement ends the sending part ("Reset Recvd"), which may complete the stream.
    pub fn on_control_frame_acked(&mut self, frame: &ControlFrame) {
        if let ControlFrame::ResetStream { stream_id, .. } = *frame {
            if let Some(w) = self
                .streams
                .get_mut(&stream_id)
                .and_then(|s| s.send.as_mut())
            {
                w.on_reset_acked();
            }
            self.refresh(stream_id);
        }
    }

    /// Queues STREAMS_BLOCKED for direction `bidi` at the peer's current limit, once per limit.
    pub(crate) fn queue_streams_blocked(&mut self, bidi: bool) {
        if !self.config.send_streams_blocked {
            return;
        }
        let d = &mut self.dirs[dir_index(bidi)];
        if d.streams_blocked_at != Some(d.peer_max_streams) {
            d.streams_blocked_at = Some(d.peer_max_streams);
            self.queue_control(CtlKey::StreamsBlocked(bidi));
        }
    }

    /// Queues STREAM_DATA_BLOCKED for `id` if its send part is held by the peer's limit, once
    /// per limit value.
    pub(crate) fn queue_data_blocked(&mut self, id: u64) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(limit) = s
            .send
            .as_ref()
            .filter(|w| w.is_flow_blocked())
            .map(|w| w.peer_max_data())
        else {
            return;
        };
        if s.ctl.data_blocked_at != Some(limit) {
            s.ctl.data_blocked_at = Some(limit);
            self.queue_control(CtlKey::DataBlocked(id));
        }
    }
}
