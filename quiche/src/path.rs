//! Per-path state (RFC 9000 §8.2, §9): the addresses of a path, its validation by
//! PATH_CHALLENGE/PATH_RESPONSE, the anti-amplification budget of an unvalidated path and the
//! responses owed on it. The set of paths is bounded ([`MAX_PATHS`]): a flood of datagrams from
//! spoofed addresses evicts old idle paths rather than growing the connection's state.
//!
//! This module knows nothing of `Connection`: the connection decides when a path becomes the
//! active one and what that means for recovery. Each path owns its sender
//! ([`crate::sender::PathSender`]: congestion controller, RTT estimate, pacer, path MTU search
//! and datagram size), so a migration changes which path is active rather than swapping
//! state, and its ECN validation ([`crate::ecn`]).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::ecn::EcnValidation;
use crate::packet::ConnectionId;
use crate::sender::PathSender;

/// Paths a connection keeps at most (the active one, a fallback, probes).
pub const MAX_PATHS: usize = 4;

/// PATH_RESPONSE frames owed on one path at most: a flood of PATH_CHALLENGE frames gets answers
/// for the first few, the rest are dropped (RFC 9000 §8.2.2 lets an endpoint limit them).
pub const MAX_PENDING_RESPONSES: usize = 4;

/// PATH_CHALLENGE frames sent per validation at most (one at the start, then one per PTO).
pub const MAX_CHALLENGES: usize = 3;

/// Path events kept for the application at most; older ones are dropped first.
const MAX_EVENTS: usize = 32;

/// The anti-amplification factor of RFC 9000 §8.1 and §9.3.1.
pub const AMPLIFICATION_FACTOR: u64 = 3;

/// A path-specific event, as quiche reports them (`Connection::path_event_next`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathEvent {
    /// A new path (local address, peer address) was seen on a received packet (servers only).
    New(SocketAddr, SocketAddr),
    /// The path (local, peer) was validated.
    Validated(SocketAddr, SocketAddr),
    /// The path (local, peer) failed validation and is no longer used, unless probed again.
    FailedValidation(SocketAddr, SocketAddr),
    /// The path (local, peer) was closed and is unusable on this connection.
    Closed(SocketAddr, SocketAddr),
    /// The source connection ID of the given sequence number, used by the peer on the first
    /// path, is now used on the second one. Never raised by this library (kept for API
    /// compatibility).
    ReusedSourceConnectionId(u64, (SocketAddr, SocketAddr), (SocketAddr, SocketAddr)),
    /// The peer migrated to the path (local, peer): non-probing packets arrived on it and it is
    /// validated (servers only).
    PeerMigrated(SocketAddr, SocketAddr),
    /// The path MTU usable for application traffic on the path changed (path MTU discovery
    /// on): a probe proved a larger size, or a black hole or `revalidate_pmtu` sent it back
    /// to the minimum. The size a new path starts with is not reported.
    PmtuUpdated {
        /// The path's local address.
        local: SocketAddr,
        /// The path's peer address.
        peer: SocketAddr,
        /// The new path MTU (the largest UDP payload sent on the path).
        pmtu: usize,
    },
}

/// Where a path is in its validation (RFC 9000 §8.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathState {
    /// Validation timed out.
    Failed,
    /// Not validated and no validation running.
    Unknown,
    /// PATH_CHALLENGE sent, waiting for the matching PATH_RESPONSE.
    Validating,
    /// The address is validated but not the path's MTU (quiche's state). Never reported here:
    /// challenges travel in datagrams padded to 1200 bytes (RFC 9000 §8.2.1), so one answer
    /// validates both.
    ValidatingMTU,
    /// The peer answered a challenge on this path (or the handshake validated it).
    Validated,
}

impl PathState {
    /// The state as `quiche_path_stats.validation_state` gives it (quiche's numbering).
    #[cfg(feature = "ffi")]
    pub fn to_c(self) -> libc::ssize_t {
        match self {
            PathState::Failed => -1,
            PathState::Unknown => 0,
            PathState::Validating => 1,
            PathState::ValidatingMTU => 2,
            PathState::Validated => 3,
        }
    }
}

/// What a path timer produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathTimeout {
    /// Nothing to do.
    None,
    /// A new PATH_CHALLENGE should go out.
    Resend,
    /// Validation gave up (RFC 9000 §8.2.4).
    Failed,
}

/// One network path: a (local, peer) address pair.
#[derive(Debug)]
pub struct Path {
    /// Our address on the path.
    pub local: SocketAddr,
    /// The peer's address on the path.
    pub peer: SocketAddr,
    state: PathState,
    /// Challenges in flight: their data and when they were sent.
    challenges: [Option<([u8; 8], Instant)>; MAX_CHALLENGES],
    challenges_sent: usize,
    /// A PATH_CHALLENGE should go out on this path.
    challenge_due: bool,
    /// A validated path is being checked again (RFC 9000 §9.3.3): one challenge, and the
    /// path stays validated whatever comes of it.
    recheck: bool,
    validation_deadline: Option<Instant>,
    /// PATH_RESPONSE data owed on this path.
    responses: VecDeque<[u8; 8]>,
    /// UDP payload bytes received and sent on the path (anti-amplification, statistics).
    pub recv_bytes: u64,
    /// See `recv_bytes`.
    pub sent_bytes: u64,
    /// Packets received on the path.
    pub recv_packets: usize,
    /// Packets sent on the path.
    pub sent_packets: usize,
    /// DATAGRAM frames received on the path.
    pub dgram_recv: usize,
    /// DATAGRAM frames sent on the path.
    pub dgram_sent: usize,
    /// DATAGRAM frames in packets declared lost that went out on the path.
    pub dgram_lost: usize,
    /// Whether the amplification limit applies until validation: true for a peer address a
    /// server learnt from received datagrams, false for a path this endpoint opened itself.
    pub amplification_limited: bool,
    /// The sequence number of the peer's connection ID used on this path.
    pub dcid_seq: u64,
    /// That connection ID (kept in sync by the connection for the active path).
    pub dcid: ConnectionId<'static>,
    /// Recency for eviction: higher is more recent.
    last_used: u64,
    /// Unique among the connection's paths over its lifetime (0 until the path joins a
    /// [`PathSet`]): sent packets record it, so that an acknowledgement or a loss is credited
    /// to the path the packet went out on even after the path's slot was reused.
    uid: u64,
    /// ECN validation of the path (RFC 9000 §13.4.2): starts in "testing"; the connection
    /// replaces it when ECN is disabled.
    pub ecn: EcnValidation,
    /// The path's congestion controller, RTT estimate and pacer: fresh for a new path, kept
    /// when the connection leaves it, so that coming back (a failed migration) finds them.
    pub sender: PathSender,
    /// Bytes the path may carry per byte received before validation (RFC 9000 §8.1).
    amplification_factor: u64,
    /// PATH_RESPONSE frames owed on the path at most.
    max_pending_responses: usize,
    /// The application asked for an ack-eliciting packet on the path
    /// (`Connection::send_ack_eliciting`): the next packet sent on it carries a PING if it
    /// has no other ack-eliciting frame.
    ack_eliciting_due: bool,
}

impl Path {
    /// A path between `local` and `peer`; `validated` for the handshake's path of a client or a
    /// server that validated the address with a Retry token.
    pub fn new(local: SocketAddr, peer: SocketAddr, validated: bool, sender: PathSender) -> Self {
        Path {
            local,
            peer,
            state: if validated {
                PathState::Validated
            } else {
                PathState::Unknown
            },
            challenges: [None; MAX_CHALLENGES],
            challenges_sent: 0,
            challenge_due: false,
            recheck: false,
            validation_deadline: None,
            responses: VecDeque::new(),
            recv_bytes: 0,
            sent_bytes: 0,
            recv_packets: 0,
            sent_packets: 0,
            dgram_recv: 0,
            dgram_sent: 0,
            dgram_lost: 0,
            amplification_limited: true,
            dcid_seq: 0,
            dcid: ConnectionId::default(),
            last_used: 0,
            uid: 0,
            ecn: EcnValidation::new(true),
            sender,
            amplification_factor: AMPLIFICATION_FACTOR,
            max_pending_responses: MAX_PENDING_RESPONSES,
            ack_eliciting_due: false,
        }
    }

    /// Takes the connection's per-path limits.
    fn apply_limits(&mut self, limits: PathLimits) {
        self.amplification_factor = limits.amplification_factor;
        self.max_pending_responses = limits.max_pending_responses;
    }

    /// Asks for an ack-eliciting packet on the path (a PING if nothing else elicits an ACK).
    pub fn request_ack_eliciting(&mut self) {
        self.ack_eliciting_due = true;
    }

    /// Whether an ack-eliciting packet was asked for and not sent yet.
    pub fn ack_eliciting_due(&self) -> bool {
        self.ack_eliciting_due
    }

    /// An ack-eliciting packet went out on the path.
    pub fn on_ack_eliciting_sent(&mut self) {
        self.ack_eliciting_due = false;
    }

    /// The path's unique id (see the field).
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// The validation state.
    pub fn state(&self) -> PathState {
        self.state
    }

    /// Whether the path is validated.
    pub fn validated(&self) -> bool {
        self.state == PathState::Validated
    }

    /// Marks the path validated without a challenge (the handshake did it, RFC 9000 §8.1).
    pub fn set_validated(&mut self) {
        self.state = PathState::Validated;
        self.clear_challenges();
    }

    /// How many more bytes may be sent on the path before the peer's address is validated,
    /// `None` when unlimited (RFC 9000 §8.1, §9.3.1).
    pub fn amplification_allowance(&self) -> Option<u64> {
        if self.validated() || !self.amplification_limited {
            return None;
        }
        Some(
            self.recv_bytes
                .saturating_mul(self.amplification_factor)
                .saturating_sub(self.sent_bytes),
        )
    }

    /// Starts (or restarts) validation at `now`; it fails after `timeout` (RFC 9000 §8.2.4
    /// recommends three times the larger of the current PTO and the initial one).
    pub fn start_validation(&mut self, now: Instant, timeout: Duration) {
        if self.state == PathState::Validating {
            return;
        }
        self.state = PathState::Validating;
        self.clear_challenges();
        self.challenge_due = true;
        self.validation_deadline = Some(now + timeout);
    }

    fn clear_challenges(&mut self) {
        self.recheck = false;
        self.challenges = [None; MAX_CHALLENGES];
        self.challenges_sent = 0;
        self.challenge_due = false;
        self.validation_deadline = None;
    }

    /// Whether a PATH_CHALLENGE should be written on this path now.
    pub fn challenge_due(&self) -> bool {
        self.challenge_due && (self.state == PathState::Validating || self.recheck)
    }

    /// Sends one PATH_CHALLENGE on a validated path, which stays validated: after an apparent
    /// migration away from it, so that a genuine peer answers there and an attacker's copy
    /// cannot keep the connection (RFC 9000 §9.3.3).
    pub fn recheck(&mut self) {
        if self.state == PathState::Validated {
            self.recheck = true;
            self.challenge_due = true;
        }
    }

    /// A PATH_CHALLENGE carrying `data` was sent at `now`.
    pub fn on_challenge_sent(&mut self, data: [u8; 8], now: Instant) {
        let slot = self.challenges_sent % MAX_CHALLENGES;
        self.challenges[slot] = Some((data, now));
        self.challenges_sent += 1;
        self.challenge_due = false;
    }

    /// Whether `data` answers one of our challenges on this path; if so the path is validated
    /// (RFC 9000 §8.2.3: a PATH_RESPONSE validates the path its challenge was sent on,
    /// wherever the response arrives).
    pub fn on_response(&mut self, data: &[u8; 8]) -> bool {
        if self.recheck
            && self
                .challenges
                .iter()
                .flatten()
                .any(|(sent, _)| sent == data)
        {
            // Still validated: nothing new to report.
            self.recheck = false;
            self.clear_challenges();
            return false;
        }
        if self.state != PathState::Validating {
            return false;
        }
        let matched = self
            .challenges
            .iter()
            .flatten()
            .any(|(sent, _)| sent == data);
        if matched {
            self.set_validated();
        }
        matched
    }

    /// Queues a PATH_RESPONSE for `data`; false when the queue is full and it was dropped.
    pub fn push_response(&mut self, data: [u8; 8]) -> bool {
        if self.responses.len() >= self.max_pending_responses {
            return false;
        }
        self.responses.push_back(data);
        true
    }

    /// The next PATH_RESPONSE data owed on the path.
    pub fn peek_response(&self) -> Option<[u8; 8]> {
        self.responses.front().copied()
    }

    /// How many PATH_RESPONSE frames are owed on the path.
    pub fn pending_responses(&self) -> usize {
        self.responses.len()
    }

    /// The response returned by `peek_response` was written.
    pub fn pop_response(&mut self) {
        self.responses.pop_front();
    }

    /// Whether PATH_CHALLENGE or PATH_RESPONSE frames wait to be sent on the path.
    pub fn has_path_frames(&self) -> bool {
        self.challenge_due() || !self.responses.is_empty()
    }

    /// When the path's timer fires: the next challenge (one per `pto`) or the end of
    /// validation.
    pub fn next_timeout(&self, pto: Duration) -> Option<Instant> {
        if self.state != PathState::Validating {
            return None;
        }
        let resend = self
            .last_challenge_sent()
            .filter(|_| self.challenges_sent < MAX_CHALLENGES && !self.challenge_due)
            .map(|t| t + pto);
        [resend, self.validation_deadline]
            .into_iter()
            .flatten()
            .min()
    }

    fn last_challenge_sent(&self) -> Option<Instant> {
        self.challenges.iter().flatten().map(|(_, t)| *t).max()
    }

    /// Handles the path's timer at `now`.
    pub fn on_timeout(&mut self, now: Instant, pto: Duration) -> PathTimeout {
        if self.state != PathState::Validating {
            return PathTimeout::None;
        }
        if self.validation_deadline.is_some_and(|d| now >= d) {
            self.state = PathState::Failed;
            self.clear_challenges();
            self.responses.clear();
            return PathTimeout::Failed;
        }
        let resend_at = self
            .last_challenge_sent()
            .filter(|_| self.challenges_sent < MAX_CHALLENGES)
            .map(|t| t + pto);
        if !self.challenge_due && resend_at.is_some_and(|t| now >= t) {
            self.challenge_due = true;
            return PathTimeout::Resend;
        }
        PathTimeout::None
    }
}

/// The bounded set of a connection's paths, with one active path.
#[derive(Debug)]
pub struct PathSet {
    slots: Vec<Option<Path>>,
    /// Applied to every path that joins the set.
    limits: PathLimits,
    active: usize,
    use_counter: u64,
    /// The last uid given to a path.
    last_uid: u64,
    events: VecDeque<PathEvent>,
}

/// Per-path limits a connection configures (`Config::set_max_amplification_factor`,
/// `Config::set_path_challenge_recv_max_queue_len`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathLimits {
    /// Bytes a path may carry per byte received before it is validated.
    pub amplification_factor: u64,
    /// PATH_RESPONSE frames owed on one path at most.
    pub max_pending_responses: usize,
}

impl Default for PathLimits {
    fn default() -> Self {
        PathLimits {
            amplification_factor: AMPLIFICATION_FACTOR,
            max_pending_responses: MAX_PENDING_RESPONSES,
        }
    }
}

impl PathSet {
    /// Applies `limits` to the paths in the set and to every path that joins it.
    pub fn set_limits(&mut self, limits: PathLimits) {
        self.limits = limits;
        for path in self.slots.iter_mut().flatten() {
            path.apply_limits(limits);
        }
    }

    /// A set holding `initial` as the active path.
    pub fn new(mut initial: Path) -> Self {
        initial.last_used = 1;
        initial.uid = 1;
        // Slots are added as paths come (up to MAX_PATHS): each path holds a sender, and most
        // connections never have a second path.
        let slots: Vec<Option<Path>> = vec![Some(initial)];
        PathSet {
            slots,
            limits: PathLimits::default(),
            active: 0,
            use_counter: 1,
            last_uid: 1,
            events: VecDeque::new(),
        }
    }

    /// The index of the active path.
    pub fn active_id(&self) -> usize {
        self.active
    }

    /// The active path.
    #[inline]
    pub fn active(&self) -> &Path {
        // The active slot is never emptied (`remove` refuses it).
        self.slots[self.active]
            .as_ref()
            .expect("the active path exists")
    }

    /// The active path, mutably.
    #[inline]
    pub fn active_mut(&mut self) -> &mut Path {
        self.slots[self.active]
            .as_mut()
            .expect("the active path exists")
    }

    /// The path at `id`, if any.
    pub fn get(&self, id: usize) -> Option<&Path> {
        self.slots.get(id).and_then(Option::as_ref)
    }

    /// The path at `id`, mutably.
    pub fn get_mut(&mut self, id: usize) -> Option<&mut Path> {
        self.slots.get_mut(id).and_then(Option::as_mut)
    }

    /// The path whose uid is `uid` (sent packets record it), mutably.
    pub fn by_uid_mut(&mut self, uid: u64) -> Option<&mut Path> {
        self.slots.iter_mut().flatten().find(|p| p.uid == uid)
    }

    /// The id of the path between `local` and `peer`.
    pub fn find(&self, local: SocketAddr, peer: SocketAddr) -> Option<usize> {
        self.iter()
            .find(|(_, p)| p.local == local && p.peer == peer)
            .map(|(id, _)| id)
    }

    /// All paths with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Path)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (i, p)))
    }

    /// All paths with their ids, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (usize, &mut Path)> + '_ {
        self.slots
            .iter_mut()
            .enumerate()
            .filter_map(|(i, p)| p.as_mut().map(|p| (i, p)))
    }

    /// Marks the path as just used (eviction keeps recently used paths).
    pub fn touch(&mut self, id: usize) {
        self.use_counter += 1;
        let counter = self.use_counter;
        if let Some(p) = self.get_mut(id) {
            p.last_used = counter;
        }
    }

    /// Inserts a path; when the set is full, the least recently used path other than the
    /// active one and `keep` is evicted (a Closed event reports it) and returned so the caller
    /// can release what it held (its connection ID). Returns the new path's id. A path taken
    /// out of the set and put back keeps its uid.
    pub fn insert(&mut self, mut path: Path, keep: Option<usize>) -> (usize, Option<Path>) {
        if path.uid == 0 {
            self.last_uid += 1;
            path.uid = self.last_uid;
        }
        let mut evicted = None;
        let id = match self.slots.iter().position(Option::is_none) {
            Some(id) => id,
            None if self.slots.len() < MAX_PATHS => {
                self.slots.push(None);
                self.slots.len() - 1
            }
            None => {
                let victim = self
                    .iter()
                    .filter(|(id, _)| *id != self.active && Some(*id) != keep)
                    .min_by_key(|(_, p)| p.last_used)
                    .map(|(id, _)| id)
                    .unwrap_or(if self.active == 0 { 1 } else { 0 });
                evicted = self.remove(victim);
                victim
            }
        };
        path.apply_limits(self.limits);
        self.slots[id] = Some(path);
        self.touch(id);
        (id, evicted)
    }

    /// Removes a path other than the active one, reporting it closed.
    pub fn remove(&mut self, id: usize) -> Option<Path> {
        if id == self.active {
            return None;
        }
        let path = self.slots.get_mut(id)?.take()?;
        self.push_event(PathEvent::Closed(path.local, path.peer));
        Some(path)
    }

    /// Removes a path other than the active one without reporting it (one the application
    /// never heard of).
    pub fn remove_silently(&mut self, id: usize) -> Option<Path> {
        if id == self.active {
            return None;
        }
        self.slots.get_mut(id)?.take()
    }

    /// Exchanges the senders of paths `a` and `b` (a NAT rebinding keeps the sender with the
    /// traffic); nothing happens unless both exist.
    pub fn swap_senders(&mut self, a: usize, b: usize) {
        let (lo, hi) = (a.min(b), a.max(b));
        if lo == hi || hi >= self.slots.len() {
            return;
        }
        let (left, right) = self.slots.split_at_mut(hi);
        if let (Some(x), Some(y)) = (left[lo].as_mut(), right[0].as_mut()) {
            std::mem::swap(&mut x.sender, &mut y.sender);
        }
    }

    /// Makes `id` the active path.
    pub fn set_active(&mut self, id: usize) {
        if self.get(id).is_some() {
            self.active = id;
            self.touch(id);
        }
    }

    /// Queues an event for the application (bounded: the oldest goes first).
    pub fn push_event(&mut self, event: PathEvent) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(event);
    }

    /// The next event for the application.
    pub fn pop_event(&mut self) -> Option<PathEvent> {
        self.events.pop_front()
    }

    /// The earliest timer of all paths.
    pub fn next_timeout(&self, pto: Duration) -> Option<Instant> {
        self.iter().filter_map(|(_, p)| p.next_timeout(pto)).min()
    }
}

/// Whether a move from `a` to `b` changes only ports (both IP addresses unchanged): a NAT
/// rebinding, after which RFC 9000 §9.4 lets an endpoint keep its congestion and RTT state.
pub fn only_ports_changed(a: &Path, b: &Path) -> bool {
    a.local.ip() == b.local.ip() && a.peer.ip() == b.peer.ip()
}

/// An iterator over socket addresses (the peers of paths, for `Connection::paths_iter`).
#[derive(Clone, Debug, Default)]
pub struct SocketAddrIter {
    addrs: Vec<SocketAddr>,
    next: usize,
}

impl SocketAddrIter {
    pub(crate) fn new(addrs: Vec<SocketAddr>) -> Self {
        SocketAddrIter { addrs, next: 0 }
    }
}

impl Iterator for SocketAddrIter {
    type Item = SocketAddr;

    fn next(&mut self) -> Option<SocketAddr> {
        let a = self.addrs.get(self.next).copied()?;
        self.next += 1;
        Some(a)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.addrs.len() - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for SocketAddrIter {}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn sender() -> PathSender {
        crate::recovery::RecoveryConfig::default().sender(false)
    }

    #[test]
    fn validation_matches_only_our_challenges_and_times_out() {
        let t0 = crate::recovery::test_now();
        let pto = Duration::from_millis(100);
        let mut p = Path::new(addr("127.0.0.1:1"), addr("127.0.0.1:2"), false, sender());
        p.start_validation(t0, Duration::from_millis(900));
        assert!(p.challenge_due());
        p.on_challenge_sent([1; 8], t0);
        assert!(!p.challenge_due());
        assert_eq!(p.next_timeout(pto), Some(t0 + pto));
        assert_eq!(p.on_timeout(t0 + pto, pto), PathTimeout::Resend);
        p.on_challenge_sent([2; 8], t0 + pto);
        assert!(!p.on_response(&[3; 8]));
        assert!(p.on_response(&[1; 8]), "an earlier challenge still counts");
        assert!(p.validated());
        assert_eq!(p.next_timeout(pto), None);

        let mut q = Path::new(addr("127.0.0.1:1"), addr("127.0.0.1:3"), false, sender());
        q.start_validation(t0, Duration::from_millis(900));
        let mut now = t0;
        let mut sent = 0;
        while q.state() == PathState::Validating {
            if q.challenge_due() {
                q.on_challenge_sent([sent as u8; 8], now);
                sent += 1;
            }
            now = q.next_timeout(pto).unwrap();
            q.on_timeout(now, pto);
        }
        assert_eq!(q.state(), PathState::Failed);
        assert_eq!(sent, MAX_CHALLENGES);
        assert_eq!(now, t0 + Duration::from_millis(900));
    }

    #[test]
    fn a_recheck_sends_one_challenge_and_keeps_the_path_validated() {
        let t0 = crate::recovery::test_now();
        let mut p = Path::new(addr("127.0.0.1:1"), addr("127.0.0.1:2"), true, sender());
        p.recheck();
        assert!(p.challenge_due() && p.validated());
        p.on_challenge_sent([9; 8], t0);
        assert!(!p.challenge_due());
        assert_eq!(p.next_timeout(Duration::from_millis(100)), None);
        assert!(!p.on_response(&[9; 8]), "nothing new");
        assert!(p.validated() && !p.challenge_due());
        let mut q = Path::new(addr("127.0.0.1:1"), addr("127.0.0.1:3"), false, sender());
        q.recheck();
        assert!(!q.challenge_due(), "only validated paths are rechecked");
    }

    #[test]
    fn responses_are_bounded() {
        let mut p = Path::new(addr("127.0.0.1:1"), addr("127.0.0.1:2"), true, sender());
        for i in 0..100u8 {
            p.push_response([i; 8]);
        }
        let mut n = 0;
        while let Some(d) = p.peek_response() {
            assert_eq!(d, [n; 8]);
            p.pop_response();
            n += 1;
        }
        assert_eq!(n as usize, MAX_PENDING_RESPONSES);
    }

    #[test]
    fn amplification_budget_is_three_times_what_was_received() {
        let mut p = Path::new(addr("127.0.0.1:1"), addr("127.0.0.1:2"), false, sender());
        p.recv_bytes = 100;
        p.sent_bytes = 250;
        assert_eq!(p.amplification_allowance(), Some(50));
        p.amplification_limited = false;
        assert_eq!(p.amplification_allowance(), None);
        p.amplification_limited = true;
        p.set_validated();
        assert_eq!(p.amplification_allowance(), None);
    }

    #[test]
    fn uids_are_never_reused_and_survive_a_reinsertion() {
        let local = addr("10.0.0.1:443");
        let mut set = PathSet::new(Path::new(local, addr("10.0.0.2:1"), true, sender()));
        let mut seen = vec![set.active().uid()];
        for port in 2..10u16 {
            let (id, _) = set.insert(
                Path::new(local, SocketAddr::new(local.ip(), port), false, sender()),
                None,
            );
            let uid = set.get(id).unwrap().uid();
            assert!(uid != 0 && !seen.contains(&uid), "uid {uid} of {seen:?}");
            seen.push(uid);
        }
        // A path taken out (to change its connection ID) and put back is the same path.
        let id = set
            .iter()
            .map(|(id, _)| id)
            .find(|&id| id != set.active_id())
            .unwrap();
        let path = set.remove_silently(id).unwrap();
        let uid = path.uid();
        let (id, _) = set.insert(path, None);
        assert_eq!(set.get(id).unwrap().uid(), uid);
    }

    #[test]
    fn the_set_is_bounded_and_evicts_the_least_recently_used() {
        let local = addr("10.0.0.1:443");
        let mut set = PathSet::new(Path::new(local, addr("10.0.0.2:1"), true, sender()));
        for port in 2..10u16 {
            let peer = SocketAddr::new(addr("10.0.0.2:1").ip(), port);
            set.insert(Path::new(local, peer, false, sender()), None);
            set.touch(0);
        }
        assert_eq!(set.iter().count(), MAX_PATHS);
        assert_eq!(set.active().peer, addr("10.0.0.2:1"));
        // The most recent ones survive.
        assert!(set.find(local, addr("10.0.0.2:9")).is_some());
        assert!(set.find(local, addr("10.0.0.2:2")).is_none());
        let closed = std::iter::from_fn(|| set.pop_event())
            .filter(|e| matches!(e, PathEvent::Closed(..)))
            .count();
        assert_eq!(closed, 8 - (MAX_PATHS - 1));
        assert!(
            set.remove(set.active_id()).is_none(),
            "the active path stays"
        );
    }
}
