//! Streams (RFC 9000 §2–4): the stream map, the per-stream send and receive buffers, stream
//! limits, stream-level flow control and the send order between streams (RFC 9218).
//!
//! The [`StreamMap`] is driven from three sides:
//!
//! * **the application** (through `Connection`): [`StreamMap::stream_send`],
//!   [`StreamMap::stream_recv`], [`StreamMap::stream_shutdown`], [`StreamMap::stream_priority`],
//!   the `readable()` / `writable()` iterators and the capacity queries;
//! * **the frame handlers**: `on_stream_frame`, `on_reset_stream`, `on_stop_sending`,
//!   `on_max_stream_data`, `on_max_streams`, `on_stream_data_blocked`, `on_streams_blocked`, with
//!   already-decoded values;
//! * **the send path and loss recovery**: [`StreamMap::next_stream_to_send`] and
//!   [`StreamMap::emit`] for STREAM frames, [`StreamMap::next_control_frame`] for control frames,
//!   and the acknowledgement / loss notifications for both.
//!
//! Connection-level flow control is the connection's job; the map reports what it needs:
//! new bytes received (return value of `on_stream_frame` / `on_reset_stream`), bytes read
//! (return value of `stream_recv`), bytes dropped unread ([`StreamMap::take_recv_discarded`]),
//! buffered bytes a reset withdrew before sending ([`StreamMap::take_send_reclaimed`]), and the
//! largest stream window for [`crate::flow_control::FlowControl::ensure_window_lower_bound`].
//!
//! Memory: a stream is removed from the map ("collected") as soon as both its parts are in a
//! terminal state, so the map holds only live streams; which IDs were used is remembered as one
//! counter per stream type, so late frames for collected streams are recognised and ignored.
//!
//! The send path, in outline:
//!
//! ```
//! use quiche::stream::{StreamConfig, StreamMap};
//!
//! let mut streams = StreamMap::new(false, StreamConfig::default());
//! streams.set_peer_transport_params(65536, 65536, 65536, 10, 10)?;
//! streams.stream_send(0, b"hello", true, u64::MAX)?;
//!
//! let mut packet = [0u8; 1200];
//! let mut sent = Vec::new();
//! while let Some(id) = streams.next_stream_to_send() {
//!     // The offset sizes the STREAM frame header; the data goes right after it.
//!     let (offset, _ready) = streams.peek_emit(id).unwrap();
//!     let header_len = 1 + octets::varint_len(id) + octets::varint_len(offset) + 2;
//!     let e = streams.emit(id, &mut packet[header_len..])?;
//!     // ... write the header, then remember the frame for on_data_acked / on_data_lost:
//!     sent.push((id, e.offset, e.len, e.fin));
//! }
//! assert_eq!(sent, vec![(0, 0, 5, true)]);
//! # Ok::<(), quiche::Error>(())
//! ```

mod app;
mod control;
mod events;
mod frame_effects;
mod id_hash;
pub mod priority;
mod range_list;
mod recv_buf;
mod ring;
mod send_buf;
mod zero_rtt;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use crate::error::{Error, Result};

pub use self::control::ControlFrame;
pub use self::priority::{Priority, DEFAULT_URGENCY, MAX_URGENCY};
pub use self::send_buf::Emitted;

use self::control::{CtlKey, StreamCtl};
use self::id_hash::{StreamIdMap, StreamIdSet};
use self::priority::Scheduler;
use self::range_list::RangeList;
use self::recv_buf::RecvBuf;
use self::send_buf::SendBuf;

/// The largest stream count a MAX_STREAMS frame or transport parameter may carry (RFC 9000
/// §4.6: beyond it stream IDs would not fit a varint).
pub const MAX_STREAMS_LIMIT: u64 = 1 << 60;

/// Default ceiling for a stream's receive window when auto-tuning.
pub const DEFAULT_MAX_STREAM_WINDOW: u64 = 16 * 1024 * 1024;

/// Default bound on unacknowledged bytes buffered per stream on the sending side.
pub const DEFAULT_MAX_STREAM_SEND_BUFFER: u64 = 16 * 1024 * 1024;

/// Whether the stream is bidirectional (bit 0x02 clear, RFC 9000 §2.1).
pub fn is_bidi(stream_id: u64) -> bool {
    stream_id & 0x2 == 0
}

/// Whether the stream was initiated by this endpoint (bit 0x01 is the initiator, §2.1).
pub fn is_local(stream_id: u64, is_server: bool) -> bool {
    (stream_id & 0x1 == 1) == is_server
}

/// Index of the per-direction state: 0 for bidirectional, 1 for unidirectional.
pub(crate) fn dir_index(bidi: bool) -> usize {
    usize::from(!bidi)
}

/// Local limits: what we advertise in our transport parameters, plus memory bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    /// How many bidirectional streams the peer may open (initial_max_streams_bidi); also how
    /// many may be open at once, since the limit is raised only as streams complete. Memory per
    /// connection grows with it: one frame can open that many streams (§3.2).
    pub initial_max_streams_bidi: u64,
    /// The same for unidirectional streams (initial_max_streams_uni).
    pub initial_max_streams_uni: u64,
    /// Receive window of bidirectional streams we open (initial_max_stream_data_bidi_local).
    pub initial_max_stream_data_bidi_local: u64,
    /// Receive window of bidirectional streams the peer opens
    /// (initial_max_stream_data_bidi_remote).
    pub initial_max_stream_data_bidi_remote: u64,
    /// Receive window of unidirectional streams the peer opens (initial_max_stream_data_uni).
    pub initial_max_stream_data_uni: u64,
    /// Ceiling for receive windows grown by auto-tuning.
    pub max_stream_window: u64,
    /// Bound on the bytes one stream buffers for sending (written, not yet acknowledged).
    pub max_stream_send_buffer: u64,
    /// Whether to send STREAMS_BLOCKED when the peer's limit stops us from opening a stream.
    pub send_streams_blocked: bool,
}

impl Default for StreamConfig {
    /// No streams and no credit (as the transport parameters default to), default ceilings.
    fn default() -> Self {
        StreamConfig {
            initial_max_streams_bidi: 0,
            initial_max_streams_uni: 0,
            initial_max_stream_data_bidi_local: 0,
            initial_max_stream_data_bidi_remote: 0,
            initial_max_stream_data_uni: 0,
            max_stream_window: DEFAULT_MAX_STREAM_WINDOW,
            max_stream_send_buffer: DEFAULT_MAX_STREAM_SEND_BUFFER,
            send_streams_blocked: true,
        }
    }
}

/// Which direction of a stream [`StreamMap::stream_shutdown`] ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub enum Shutdown {
    /// Stop reading: incoming data is discarded and STOP_SENDING asks the peer to stop.
    Read = 0,
    /// Stop writing: buffered data is dropped and RESET_STREAM is sent.
    Write = 1,
}

/// An iterator over stream IDs, in ascending order.
#[derive(Clone, Debug, Default)]
pub struct StreamIter {
    ids: std::vec::IntoIter<u64>,
}

impl StreamIter {
    fn from_set(set: &StreamIdSet) -> Self {
        let mut ids: Vec<u64> = set.iter().copied().collect();
        ids.sort_unstable();
        StreamIter {
            ids: ids.into_iter(),
        }
    }
}

impl Iterator for StreamIter {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        self.ids.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ids.size_hint()
    }
}

impl ExactSizeIterator for StreamIter {}

/// One live stream: its parts (absent for the direction a unidirectional stream lacks), its
/// priority and its pending control frames.
#[derive(Debug)]
pub(crate) struct Stream {
    recv: Option<RecvBuf>,
    send: Option<SendBuf>,
    priority: Priority,
    /// In the scheduler (under `priority`).
    scheduled: bool,
    /// `stream_send` has reported the peer's STOP_SENDING to the application.
    stop_reported: bool,
    /// In the map's `readable` set. The flags let `refresh`, which runs for every packet sent
    /// and every acknowledged frame, touch the sets only when membership changes.
    listed_readable: bool,
    /// In the map's `writable` set.
    listed_writable: bool,
    /// In the map's `readable_queue`: `stream_readable_next` may return it.
    armed_readable: bool,
    /// In the map's `writable_queue`: `stream_writable_next` may return it.
    armed_writable: bool,
    /// The capacity `stream_writable_next` waits for before returning the stream (set by a
    /// `stream_writable` call that found too little; 1 otherwise).
    send_lowat: u64,
    ctl: StreamCtl,
}

/// The peer's transport parameters that concern streams.
#[derive(Clone, Copy, Debug, Default)]
struct PeerParams {
    bidi_local: u64,
    bidi_remote: u64,
    uni: u64,
}

/// Stream-count state for one direction (bidirectional or unidirectional).
#[derive(Debug, Default)]
struct DirState {
    /// Streams of ours opened so far: every local index below this was opened (or skipped).
    local_opened: u64,
    /// Local indices below `local_opened` the application skipped (opened implicitly at the
    /// peer, not yet used here).
    local_skipped: RangeList,
    /// The peer's limit on the streams we open (its MAX_STREAMS).
    peer_max_streams: u64,
    /// Limit at which we last queued STREAMS_BLOCKED.
    streams_blocked_at: Option<u64>,
    streams_blocked_pending: bool,
    /// Peer streams opened so far: every peer index below this was opened.
    peer_opened: u64,
    /// Peer streams collected.
    peer_collected: u64,
    /// Our limit on the streams the peer opens (our MAX_STREAMS).
    local_max_streams: u64,
    /// The initial limit: the number of peer streams allowed to be open at once.
    local_max_streams_initial: u64,
    max_streams_pending: bool,
}

/// All streams of a connection and the state shared between them.
#[derive(Debug)]
pub struct StreamMap {
    is_server: bool,
    config: StreamConfig,
    peer: PeerParams,
    streams: StreamIdMap<Stream>,
    /// Indexed by [`dir_index`].
    dirs: [DirState; 2],
    readable: StreamIdSet,
    writable: StreamIdSet,
    /// Streams `stream_readable_next` may return, in the order they became readable (each at
    /// most once: `Stream::armed_readable`).
    readable_queue: VecDeque<u64>,
    /// The same for `stream_writable_next`.
    writable_queue: VecDeque<u64>,
    sched: Scheduler,
    ctl_queue: VecDeque<CtlKey>,
    recv_discarded: u64,
    send_reclaimed: u64,
    largest_recv_window: u64,
}

/// Which part of a stream a received frame addresses (RFC 9000 §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// STREAM, RESET_STREAM, STREAM_DATA_BLOCKED: sent by the peer's sending part.
    Recv,
    /// MAX_STREAM_DATA, STOP_SENDING: sent by the peer's receiving part.
    Send,
}

impl StreamMap {
    /// A map for a client or server endpoint with the given local limits. The peer's limits are
    /// zero (no streams, no credit) until [`StreamMap::set_peer_transport_params`].
    pub fn new(is_server: bool, config: StreamConfig) -> Self {
        let mut dirs: [DirState; 2] = Default::default();
        for (d, initial) in dirs.iter_mut().zip([
            config.initial_max_streams_bidi,
            config.initial_max_streams_uni,
        ]) {
            let initial = initial.min(MAX_STREAMS_LIMIT);
            d.local_max_streams = initial;
            d.local_max_streams_initial = initial;
        }
        let largest_recv_window = config
            .initial_max_stream_data_bidi_local
            .max(config.initial_max_stream_data_bidi_remote)
            .max(config.initial_max_stream_data_uni);
        StreamMap {
            is_server,
            config,
            peer: PeerParams::default(),
            streams: StreamIdMap::default(),
            dirs,
            readable: StreamIdSet::default(),
            writable: StreamIdSet::default(),
            readable_queue: VecDeque::new(),
            writable_queue: VecDeque::new(),
            sched: Scheduler::default(),
            ctl_queue: VecDeque::new(),
            recv_discarded: 0,
            send_reclaimed: 0,
            largest_recv_window,
        }
    }

    /// Applies the peer's transport parameters: the credit it gives our sending parts and the
    /// number of streams we may open. Streams that already exist get at least the new credit.
    /// `InvalidTransportParam` if a stream count exceeds 2^60 (§4.6).
    pub fn set_peer_transport_params(
        &mut self,
        initial_max_stream_data_bidi_local: u64,
        initial_max_stream_data_bidi_remote: u64,
        initial_max_stream_data_uni: u64,
        initial_max_streams_bidi: u64,
        initial_max_streams_uni: u64,
    ) -> Result<()> {
        let credit = PeerParams {
            bidi_local: initial_max_stream_data_bidi_local,
            bidi_remote: initial_max_stream_data_bidi_remote,
            uni: initial_max_stream_data_uni,
        };
        self.take_peer_limits(
            credit,
            [initial_max_streams_bidi, initial_max_streams_uni],
            false,
        )?;
        let ids: Vec<u64> = self.streams.keys().copied().collect();
        for id in ids {
            let max = self.peer_send_window(id);
            if let Some(w) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) {
                w.set_peer_max_data(max);
            }
            self.refresh(id);
        }
        Ok(())
    }

    /// Takes the peer's per-stream credits and its stream counts (bidirectional,
    /// unidirectional). The counts only grow unless `replace` (0-RTT rejected: the new
    /// parameters replace the remembered ones). `InvalidTransportParam` if a count exceeds
    /// 2^60 (§4.6).
    fn take_peer_limits(
        &mut self,
        credit: PeerParams,
        max_streams: [u64; 2],
        replace: bool,
    ) -> Result<()> {
        if max_streams.iter().any(|&m| m > MAX_STREAMS_LIMIT) {
            return Err(Error::InvalidTransportParam);
        }
        self.peer = credit;
        for (d, max) in self.dirs.iter_mut().zip(max_streams) {
            if replace {
                d.peer_max_streams = max;
                d.streams_blocked_at = None;
            } else {
                d.peer_max_streams = d.peer_max_streams.max(max);
            }
        }
        Ok(())
    }

    /// The credit the peer's transport parameters give our sending part of `id`.
    fn peer_send_window(&self, id: u64) -> u64 {
        match (is_bidi(id), self.is_local(id)) {
            // The peer's "remote" value covers bidirectional streams we open.
            (true, true) => self.peer.bidi_remote,
            (true, false) => self.peer.bidi_local,
            (false, _) => self.peer.uni,
        }
    }

    /// Our receive window for the receiving part of `id`.
    fn local_recv_window(&self, id: u64) -> u64 {
        match (is_bidi(id), self.is_local(id)) {
            (true, true) => self.config.initial_max_stream_data_bidi_local,
            (true, false) => self.config.initial_max_stream_data_bidi_remote,
            (false, _) => self.config.initial_max_stream_data_uni,
        }
    }

    fn is_local(&self, id: u64) -> bool {
        is_local(id, self.is_server)
    }

    /// Creates the state for `id` (not yet in the map).
    fn create(&mut self, id: u64) {
        let (bidi, local) = (is_bidi(id), self.is_local(id));
        let recv = (bidi || !local)
            .then(|| RecvBuf::new(self.local_recv_window(id), self.config.max_stream_window));
        let send = (bidi || local).then(|| {
            SendBuf::new(
                self.peer_send_window(id),
                self.config.max_stream_send_buffer,
            )
        });
        let stream = Stream {
            recv,
            send,
            priority: Priority::default(),
            scheduled: false,
            stop_reported: false,
            listed_readable: false,
            listed_writable: false,
            armed_readable: false,
            armed_writable: false,
            send_lowat: 1,
            ctl: StreamCtl::default(),
        };
        self.streams.insert(id, stream);
        self.refresh(id);
    }

    /// Finds or opens the stream a received frame refers to. `Ok(false)`: the stream was
    /// collected, ignore the frame. Errors: a frame for a part the stream does not have, or for
    /// a local stream not yet opened → `InvalidStreamState`; a peer stream beyond our limit →
    /// `StreamLimit`.
    fn stream_for_frame(&mut self, id: u64, part: Part) -> Result<bool> {
        let (bidi, local) = (is_bidi(id), self.is_local(id));
        if !bidi && local == (part == Part::Recv) {
            // STREAM etc. on our send-only stream, or MAX_STREAM_DATA etc. on a receive-only one.
            return Err(Error::InvalidStreamState(id));
        }
        if self.streams.contains_key(&id) {
            return Ok(true);
        }
        let index = id >> 2;
        let d = &mut self.dirs[dir_index(bidi)];
        if local {
            if index >= d.local_opened {
                return Err(Error::InvalidStreamState(id));
            }
            if !d.local_skipped.contains(index) {
                return Ok(false);
            }
            // A stream we skipped exists at the peer (implicitly opened): materialise it.
            d.local_skipped.remove(index..index + 1);
            self.create(id);
            return Ok(true);
        }
        if index < d.peer_opened {
            return Ok(false);
        }
        if index >= d.local_max_streams {
            return Err(Error::StreamLimit);
        }
        // §3.2: opening a stream opens every lower-numbered one of its type. At most
        // `local_max_streams - peer_opened` (≤ the initial limit) are created.
        let first = d.peer_opened;
        d.peer_opened = index + 1;
        for i in first..=index {
            self.create((i << 2) | (id & 0x3));
        }
        self.maybe_update_max_streams(bidi, false);
        Ok(true)
    }

    /// Opens our stream `id` for the application if needed. `Ok(false)`: it was collected.
    /// `StreamLimit` (and STREAMS_BLOCKED queued) if the peer's limit does not allow it.
    fn open_local(&mut self, id: u64) -> Result<bool> {
        if self.streams.contains_key(&id) {
            return Ok(true);
        }
        let bidi = is_bidi(id);
        let index = id >> 2;
        let d = &mut self.dirs[dir_index(bidi)];
        if index < d.local_opened {
            if !d.local_skipped.contains(index) {
                return Ok(false);
            }
            d.local_skipped.remove(index..index + 1);
        } else {
            if index >= d.peer_max_streams {
                self.queue_streams_blocked(bidi);
                return Err(Error::StreamLimit);
            }
            d.local_skipped.insert(d.local_opened..index);
            d.local_opened = index + 1;
        }
        self.create(id);
        Ok(true)
    }

    /// Raises our limit on peer streams as they are collected, keeping the number the peer may
    /// have open at once at the initial limit (so the total advertised grows only with
    /// completed streams). The update is sent once the peer has used half of its remaining
    /// credit, or at once with `force`.
    fn maybe_update_max_streams(&mut self, bidi: bool, force: bool) {
        let d = &mut self.dirs[dir_index(bidi)];
        let target = d
            .local_max_streams_initial
            .saturating_add(d.peer_collected)
            .min(MAX_STREAMS_LIMIT);
        if target <= d.local_max_streams {
            return;
        }
        let remaining = d.local_max_streams.saturating_sub(d.peer_opened);
        if force || remaining.saturating_mul(2) < d.local_max_streams_initial {
            d.local_max_streams = target;
            self.queue_control(CtlKey::MaxStreams(bidi));
        }
    }

    /// Brings the readable / writable sets and the scheduler up to date with stream `id`, and
    /// collects it if both parts are done.
    fn refresh(&mut self, id: u64) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let readable = s.recv.as_ref().is_some_and(|r| r.is_readable());
        // A stopped stream stays listed until `stream_send` has reported the stop, unless the
        // application had already finished writing.
        let writable = s.send.as_ref().is_some_and(|w| {
            w.capacity() > 0 || (w.stopped().is_some() && !s.stop_reported && !w.is_fin())
        });
        let sendable = s.send.as_ref().is_some_and(|w| w.has_pending());
        let complete = s.recv.as_ref().is_none_or(|r| r.is_complete())
            && s.send.as_ref().is_none_or(|w| w.is_complete());
        if sendable != s.scheduled {
            s.scheduled = sendable;
            if sendable {
                self.sched.insert(id, s.priority);
            } else {
                self.sched.remove(id, s.priority);
            }
        }
        if complete {
            self.collect(id);
            return;
        }
        if readable != s.listed_readable {
            s.listed_readable = readable;
            set_membership(&mut self.readable, id, readable);
            if readable {
                self.arm_readable(id);
            }
        }
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if writable != s.listed_writable {
            s.listed_writable = writable;
            set_membership(&mut self.writable, id, writable);
            if writable {
                self.arm_writable(id);
            }
        }
    }

    /// Removes a finished stream; a peer stream frees a slot for the peer (MAX_STREAMS).
    fn collect(&mut self, id: u64) {
        let Some(s) = self.streams.remove(&id) else {
            return;
        };
        if s.scheduled {
            self.sched.remove(id, s.priority);
        }
        if s.listed_readable {
            self.readable.remove(&id);
        }
        if s.listed_writable {
            self.writable.remove(&id);
        }
        if !self.is_local(id) {
            let bidi = is_bidi(id);
            self.dirs[dir_index(bidi)].peer_collected += 1;
            self.maybe_update_max_streams(bidi, false);
        }
    }

    /// Whether `id` was used and has been collected (or never existed locally though its
    /// number was passed).
    fn is_collected(&self, id: u64) -> bool {
        if self.streams.contains_key(&id) {
            return false;
        }
        let d = &self.dirs[dir_index(is_bidi(id))];
        let index = id >> 2;
        if self.is_local(id) {
            index < d.local_opened && !d.local_skipped.contains(index)
        } else {
            index < d.peer_opened
        }
    }

    /// Number of live streams in the map.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// Whether no stream is live.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Whether `id` is a live stream.
    pub fn contains(&self, id: u64) -> bool {
        self.streams.contains_key(&id)
    }

    /// How many more bidirectional streams we may open under the peer's limit.
    pub fn peer_streams_left_bidi(&self) -> u64 {
        let d = &self.dirs[0];
        d.peer_max_streams.saturating_sub(d.local_opened)
    }

    /// How many more unidirectional streams we may open under the peer's limit.
    pub fn peer_streams_left_uni(&self) -> u64 {
        let d = &self.dirs[1];
        d.peer_max_streams.saturating_sub(d.local_opened)
    }

    /// Bytes held in the send buffers of all streams: written by the application and not yet
    /// acknowledged. Bounded by the peer's stream windows (and the local buffer limit).
    pub fn send_buffered(&self) -> u64 {
        self.streams
            .values()
            .filter_map(|s| s.send.as_ref())
            .map(|w| w.buffered() as u64)
            .sum()
    }

    /// Our current limit on peer-initiated streams of one direction (what MAX_STREAMS says).
    pub fn local_max_streams(&self, bidi: bool) -> u64 {
        self.dirs[dir_index(bidi)].local_max_streams
    }

    /// Replaces our initial limit of bidirectional streams (`initial_max_streams_bidi`) before
    /// the peer opened any (quiche's `set_initial_max_streams_bidi_in_handshake`).
    pub fn set_initial_local_max_streams_bidi(&mut self, v: u64) {
        let v = v.min(MAX_STREAMS_LIMIT);
        self.config.initial_max_streams_bidi = v;
        let d = &mut self.dirs[dir_index(true)];
        d.local_max_streams = v;
        d.local_max_streams_initial = v;
    }

    /// Bytes of received stream data dropped without the application reading them (resets,
    /// read shutdowns) since the last call. The connection adds them to its connection-level
    /// consumed count, as it does with the bytes `stream_recv` returns.
    pub fn take_recv_discarded(&mut self) -> u64 {
        std::mem::take(&mut self.recv_discarded)
    }

    /// Bytes the application had written that a reset withdrew before they were ever sent,
    /// since the last call. The connection may give them back to its connection-level send
    /// capacity, since the final size does not include them.
    pub fn take_send_reclaimed(&mut self) -> u64 {
        std::mem::take(&mut self.send_reclaimed)
    }

    /// The largest receive window of any stream so far (initial or auto-tuned). The connection
    /// keeps its own window at least 1.5 times this.
    pub fn largest_recv_window(&self) -> u64 {
        self.largest_recv_window
    }
}

fn set_membership(set: &mut StreamIdSet, id: u64, member: bool) {
    if member {
        set.insert(id);
    } else {
        set.remove(&id);
    }
}

#[cfg(any(test, feature = "fuzzing"))]
impl StreamMap {
    /// Panics when a peer opened more streams than we allowed or a receive buffer broke its
    /// bounds (see [`RecvBuf::debug_check_invariants`]).
    pub(crate) fn debug_check_invariants(&self) {
        for d in &self.dirs {
            assert!(
                d.peer_opened <= d.local_max_streams,
                "peer opened {} streams, limit {}",
                d.peer_opened,
                d.local_max_streams
            );
        }
        for s in self.streams.values() {
            if let Some(r) = &s.recv {
                r.debug_check_invariants();
            }
        }
    }
}
