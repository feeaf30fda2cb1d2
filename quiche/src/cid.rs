//! Connection IDs (RFC 9000 §5.1): the IDs we issue to the peer and the IDs the peer issued to
//! us, NEW_CONNECTION_ID / RETIRE_CONNECTION_ID bookkeeping, and stateless reset tokens
//! (§10.3).
//!
//! # Our IDs
//!
//! Sequence number 0 is the ID chosen at the handshake; more are issued with NEW_CONNECTION_ID
//! up to the peer's `active_connection_id_limit` (capped at [`MAX_ISSUED`] so that a peer
//! advertising a huge limit cannot make us hold many). A packet may be addressed to any active
//! one. When the peer retires one, it is moved to a list the application drains
//! ([`ConnectionIds::retired_scid_next`]) to stop routing it, and a replacement is issued.
//!
//! Stateless reset tokens are `HMAC-SHA256(static key, connection ID)` truncated to 16 bytes
//! (§10.3.2 suggests exactly this kind of derivation): a server that lost all state for a
//! connection, or another server process sharing the key, can recompute the token from the
//! Destination Connection ID of a packet it cannot route.
//!
//! # The peer's IDs
//!
//! We keep at most our `active_connection_id_limit` of them (§5.1.1: more is
//! CONNECTION_ID_LIMIT_ERROR). `retire_prior_to` retires the older ones with
//! RETIRE_CONNECTION_ID, switching the ID we send with if it was among them (§5.1.2). The tokens
//! of the peer IDs we have used are what a stateless reset is recognised by (§10.3.1).

use std::collections::{BTreeSet, VecDeque};

use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::packet::{ConnectionId, MAX_CONN_ID_LEN};
use crate::ranges::RangeSet;
use ring::hmac;

/// Length of a stateless reset token (RFC 9000 §10.3).
pub const RESET_TOKEN_LEN: usize = 16;

/// Length of the static key stateless reset tokens are derived from.
pub const RESET_KEY_LEN: usize = 32;

/// The most connection IDs of ours we keep active, whatever limit the peer advertises.
pub const MAX_ISSUED: u64 = 8;

/// The most retired IDs kept for the application to collect; older ones are forgotten if it
/// never does.
const MAX_RETIRED_KEPT: usize = 64;

/// The smallest datagram that can be a stateless reset: 5 bytes that look like a short header
/// and the token (RFC 9000 §10.3).
pub const MIN_STATELESS_RESET_LEN: usize = 5 + RESET_TOKEN_LEN;

/// A stateless reset of at least this size looks like a short-header packet to a peer whatever
/// the length of its connection IDs (RFC 9000 §10.3.3: 20-byte IDs and the 21-byte minimum),
/// so it is the size one aims for when the triggering datagram leaves room.
pub const INDISTINGUISHABLE_RESET_LEN: usize = MIN_STATELESS_RESET_LEN + MAX_CONN_ID_LEN;

/// The largest stateless reset sent: a reset needs no more to look like a small packet (an
/// ACK), and a small one costs little if it is reflected at someone.
pub const MAX_STATELESS_RESET_LEN: usize = 64;

/// The smallest short-header packet that can be valid for an endpoint whose connection IDs are
/// `cid_len` bytes: the first byte, the ID, and the header protection sample, which starts 4
/// bytes after the packet number and is 16 bytes long (RFC 9001 §5.4.2). Smaller datagrams are
/// discarded (RFC 9000 §10.3); one that size or larger may be a packet of a connection.
pub fn min_short_packet_len(cid_len: usize) -> usize {
    1 + cid_len + 4 + 16
}

/// The size of the stateless reset answering a short-header datagram of `received_len` bytes
/// addressed to a `cid_len`-byte connection ID of ours, or `None` if it must not be answered.
/// `random` picks the size within the allowed range (unpredictable sizes look like packets).
///
/// - Too small to be a packet for us (under [`min_short_packet_len`]): never answered. Such a
///   datagram can only be garbage or someone's stateless reset, and answering resets is how
///   two endpoints would loop (RFC 9000 §10.3.3).
/// - Otherwise the reset is smaller than the datagram, so that a loop, if one starts, shrinks
///   to nothing (§10.3.3): one byte smaller up to 43 bytes (§10.3, which makes it as long as
///   the peer's own smallest packets, hence as indistinguishable), otherwise between
///   [`INDISTINGUISHABLE_RESET_LEN`] + 1 and [`MAX_STATELESS_RESET_LEN`] bytes. Never under
///   [`MIN_STATELESS_RESET_LEN`].
pub fn stateless_reset_len(received_len: usize, cid_len: usize, random: u32) -> Option<usize> {
    if received_len < min_short_packet_len(cid_len) {
        return None;
    }
    let upper = received_len.checked_sub(1)?.min(MAX_STATELESS_RESET_LEN);
    let lower = upper.min(INDISTINGUISHABLE_RESET_LEN + 1);
    if lower < MIN_STATELESS_RESET_LEN {
        return None;
    }
    let span = (upper - lower + 1) as u32;
    Some(lower + (random % span) as usize)
}

/// Writes a stateless reset of `len` bytes ending in `token` into `out` (RFC 9000 §10.3): the
/// fixed bits `01` of a short header, then random bytes, then the token. `random` fills the
/// unpredictable bytes. Errors: `BufferTooShort` if `out` is shorter than `len`,
/// `InvalidState` if `len` is under [`MIN_STATELESS_RESET_LEN`].
pub fn write_stateless_reset(
    token: &[u8; RESET_TOKEN_LEN],
    len: usize,
    random: &mut dyn FnMut(&mut [u8]) -> Result<()>,
    out: &mut [u8],
) -> Result<usize> {
    if len < MIN_STATELESS_RESET_LEN {
        return Err(Error::InvalidState);
    }
    let out = out.get_mut(..len).ok_or(Error::BufferTooShort)?;
    let (unpredictable, tail) = out.split_at_mut(len - RESET_TOKEN_LEN);
    random(unpredictable)?;
    unpredictable[0] = 0x40 | (unpredictable[0] & 0x3f);
    tail.copy_from_slice(token);
    Ok(len)
}

/// Derives stateless reset tokens from a static key.
#[derive(Clone)]
pub struct ResetTokenKey(hmac::Key);

impl std::fmt::Debug for ResetTokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        // Never print key material.
        f.write_str("ResetTokenKey(..)")
    }
}

impl ResetTokenKey {
    /// A key from `secret`; endpoints sharing the secret derive the same tokens.
    pub fn new(secret: &[u8; RESET_KEY_LEN]) -> Self {
        ResetTokenKey(hmac::Key::new(hmac::HMAC_SHA256, secret))
    }

    /// The stateless reset token of connection ID `cid`.
    pub fn token(&self, cid: &[u8]) -> [u8; RESET_TOKEN_LEN] {
        let tag = hmac::sign(&self.0, cid);
        let mut token = [0u8; RESET_TOKEN_LEN];
        token.copy_from_slice(&tag.as_ref()[..RESET_TOKEN_LEN]);
        token
    }
}

/// Makes the connection IDs a server (or client) issues, instead of random bytes: a hook for
/// IDs that carry routing information, such as QUIC-LB's server IDs ([`crate::quic_lb`]).
///
/// Installed with [`crate::Config::set_cid_generator`]; every connection made from the config
/// then issues its NEW_CONNECTION_ID IDs with it, and the application makes the handshake ID
/// it passes to `accept` with [`crate::Config::new_scid`]. Shared between connections (and
/// threads), hence `Send + Sync` and `&self`.
pub trait ConnectionIdGenerator: Send + Sync {
    /// Writes a new connection ID into `cid`, whose length is the one the connection's IDs
    /// have. IDs must be unpredictable to observers and unique among the server's IDs; an
    /// error fails the operation that wanted the ID.
    fn generate(&self, cid: &mut [u8]) -> Result<()>;
}

/// Compares two tokens in time independent of where they differ (RFC 9000 §10.3.1: the
/// comparison must not leak the token).
pub fn tokens_equal(a: &[u8; RESET_TOKEN_LEN], b: &[u8; RESET_TOKEN_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A connection-ID frame we send, as remembered in the sent-packet record so that a loss sends
/// it again and an acknowledgement settles it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CidFrame {
    /// NEW_CONNECTION_ID for our ID of this sequence number.
    NewConnectionId {
        /// Sequence number of the ID.
        seq: u64,
    },
    /// RETIRE_CONNECTION_ID for the peer's ID of this sequence number.
    RetireConnectionId {
        /// Sequence number of the ID.
        seq: u64,
    },
}

#[derive(Clone, Debug)]
struct LocalCid {
    seq: u64,
    cid: ConnectionId<'static>,
    token: [u8; RESET_TOKEN_LEN],
}

#[derive(Clone, Debug)]
struct PeerCid {
    seq: u64,
    cid: ConnectionId<'static>,
    token: Option<[u8; RESET_TOKEN_LEN]>,
    /// We have sent packets with it: only such IDs' tokens identify a stateless reset.
    used: bool,
}

/// Both sets of connection IDs of one connection.
#[derive(Debug)]
pub struct ConnectionIds {
    key: ResetTokenKey,
    cid_len: usize,

    /// Our active IDs, ascending by sequence number.
    local: Vec<LocalCid>,
    next_local_seq: u64,
    /// The Retire Prior To we asked of the peer.
    local_retire_prior_to: u64,
    /// How many of our IDs the peer stores (its active_connection_id_limit, capped).
    peer_limit: u64,
    /// Sequence numbers of our IDs to announce.
    new_cid_queue: VecDeque<u64>,
    /// Our IDs the peer retired, for the application to stop routing.
    retired_local: VecDeque<ConnectionId<'static>>,
    /// The sequence number of our ID the packet being processed was addressed to.
    recv_dcid_seq: Option<u64>,

    /// The peer's active IDs, ascending by sequence number.
    peer: Vec<PeerCid>,
    /// Sequence number of the peer ID we send with.
    current_dcid_seq: u64,
    peer_retire_prior_to: u64,
    /// How many peer IDs we store (our active_connection_id_limit).
    local_limit: u64,
    /// Peer sequence numbers we have retired (or must retire when they show up).
    retired_peer: RangeSet,
    /// RETIRE_CONNECTION_ID frames to send.
    retire_queue: VecDeque<u64>,
    /// Retired peer IDs whose RETIRE_CONNECTION_ID is not acknowledged yet.
    retiring: BTreeSet<u64>,
}

impl ConnectionIds {
    /// The IDs of a new connection whose handshake ID is `scid`; `local_limit` is our
    /// active_connection_id_limit. The handshake ID's token is `handshake_token` if given (the
    /// application chose it, as with quiche's `Config::set_stateless_reset_token`), otherwise
    /// derived from `key` like the tokens of the IDs issued later.
    pub fn new(
        key: ResetTokenKey,
        scid: &ConnectionId,
        local_limit: u64,
        handshake_token: Option<[u8; RESET_TOKEN_LEN]>,
    ) -> Self {
        let token = handshake_token.unwrap_or_else(|| key.token(scid));
        ConnectionIds {
            key,
            cid_len: scid.len(),
            local: vec![LocalCid {
                seq: 0,
                cid: scid.clone().into_owned(),
                token,
            }],
            next_local_seq: 1,
            local_retire_prior_to: 0,
            peer_limit: 0,
            new_cid_queue: VecDeque::new(),
            retired_local: VecDeque::new(),
            recv_dcid_seq: None,
            peer: Vec::new(),
            current_dcid_seq: 0,
            peer_retire_prior_to: 0,
            local_limit: local_limit.max(2),
            retired_peer: RangeSet::new(16),
            retire_queue: VecDeque::new(),
            retiring: BTreeSet::new(),
        }
    }

    /// The token of our handshake ID (the server's `stateless_reset_token` parameter), while
    /// that ID is active.
    pub fn handshake_token(&self) -> Option<[u8; RESET_TOKEN_LEN]> {
        self.local.first().filter(|l| l.seq == 0).map(|l| l.token)
    }

    // -----------------------------------------------------------------------------------------
    // Our IDs.

    /// Applies the peer's active_connection_id_limit.
    pub fn set_peer_limit(&mut self, limit: u64) {
        self.peer_limit = limit.min(MAX_ISSUED);
    }

    /// Our IDs the peer has not been asked to retire.
    fn active_local_count(&self) -> u64 {
        self.local
            .iter()
            .filter(|l| l.seq >= self.local_retire_prior_to)
            .count() as u64
    }

    /// Issues a new ID of ours, queuing its NEW_CONNECTION_ID. With `retire_prior`, the frame
    /// asks the peer to retire every earlier ID (which may then exceed its limit briefly, as
    /// §5.1.1 allows). Errors: `IdLimit` if the peer's limit is reached (without
    /// `retire_prior`); `InvalidState` with zero-length IDs, which cannot be changed (§5.1.1);
    /// `CryptoFail` if no randomness is available.
    pub fn issue(
        &mut self,
        rng: &mut dyn FnMut(&mut [u8]) -> Result<()>,
        retire_prior: bool,
    ) -> Result<ConnectionId<'static>> {
        if self.cid_len == 0 {
            return Err(Error::InvalidState);
        }
        if !retire_prior && self.active_local_count() >= self.peer_limit {
            return Err(Error::IdLimit);
        }
        let mut bytes = [0u8; MAX_CONN_ID_LEN];
        let bytes = bytes.get_mut(..self.cid_len).ok_or(Error::InvalidState)?;
        // Random IDs of 8 bytes or more collide with negligible probability; a few redraws
        // make a collision with our own active IDs impossible in practice.
        for _ in 0..4 {
            rng(bytes)?;
            if !self.local.iter().any(|l| l.cid[..] == bytes[..]) {
                break;
            }
        }
        let seq = self.next_local_seq;
        self.next_local_seq += 1;
        let cid = ConnectionId::from_vec(bytes.to_vec());
        self.local.push(LocalCid {
            seq,
            token: self.key.token(&cid),
            cid: cid.clone(),
        });
        if retire_prior {
            self.local_retire_prior_to = seq;
        }
        self.new_cid_queue.push_back(seq);
        Ok(cid)
    }

    /// Adds an ID of ours chosen by the application, with its stateless reset token, and
    /// queues its NEW_CONNECTION_ID; returns its sequence number (the existing one if the ID
    /// is already active with the same token). When the peer stores no more IDs,
    /// `retire_if_needed` asks it to retire the oldest ones to make room (Retire Prior To);
    /// otherwise `IdLimit`. Errors: `InvalidState` with zero-length IDs, for an empty or
    /// too long ID, or for an active ID given another token.
    pub fn add_local(
        &mut self,
        cid: &ConnectionId,
        token: [u8; RESET_TOKEN_LEN],
        retire_if_needed: bool,
    ) -> Result<u64> {
        if self.cid_len == 0 || cid.is_empty() || cid.len() > MAX_CONN_ID_LEN {
            return Err(Error::InvalidState);
        }
        if let Some(l) = self.local.iter().find(|l| l.cid[..] == cid[..]) {
            return if tokens_equal(&l.token, &token) {
                Ok(l.seq)
            } else {
                Err(Error::InvalidState)
            };
        }
        let seq = self.next_local_seq;
        let active: Vec<u64> = self
            .local
            .iter()
            .map(|l| l.seq)
            .filter(|&q| q >= self.local_retire_prior_to)
            .collect();
        let excess = (active.len() as u64 + 1).saturating_sub(self.peer_limit);
        if excess > 0 {
            if !retire_if_needed {
                return Err(Error::IdLimit);
            }
            // Every ID below the new Retire Prior To goes: just enough of the oldest ones.
            let excess = usize::try_from(excess).unwrap_or(usize::MAX);
            self.local_retire_prior_to = active.get(excess).copied().unwrap_or(seq);
        }
        self.next_local_seq += 1;
        self.local.push(LocalCid {
            seq,
            cid: cid.clone().into_owned(),
            token,
        });
        self.new_cid_queue.push_back(seq);
        Ok(seq)
    }

    /// How many of our IDs the peer retired that [`ConnectionIds::retired_scid_next`] has not
    /// returned yet.
    pub fn retired_local_count(&self) -> usize {
        self.retired_local.len()
    }

    /// Issues IDs until the peer's limit is reached (nothing with zero-length IDs).
    pub fn issue_up_to_limit(
        &mut self,
        rng: &mut dyn FnMut(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        while self.cid_len > 0 && self.active_local_count() < self.peer_limit {
            self.issue(rng, false)?;
        }
        Ok(())
    }

    /// Whether a packet addressed to `dcid` is for us (one of our active IDs); remembers which
    /// one for [`ConnectionIds::on_retire_connection_id`].
    pub fn on_packet_dcid(&mut self, dcid: &[u8]) -> bool {
        self.recv_dcid_seq = self
            .local
            .iter()
            .find(|l| &l.cid[..] == dcid)
            .map(|l| l.seq);
        self.recv_dcid_seq.is_some()
    }

    /// The peer retired our ID `seq` (RFC 9000 §19.16). Returns the retired ID, if it was
    /// active; the caller issues a replacement. Errors (PROTOCOL_VIOLATION): a sequence number
    /// we never issued, the ID the packet carrying the frame was sent to, or any retirement
    /// when we use zero-length IDs.
    pub fn on_retire_connection_id(&mut self, seq: u64) -> Result<Option<ConnectionId<'static>>> {
        if self.cid_len == 0 || seq >= self.next_local_seq || self.recv_dcid_seq == Some(seq) {
            return Err(Error::ProtocolViolation);
        }
        let Some(pos) = self.local.iter().position(|l| l.seq == seq) else {
            return Ok(None);
        };
        let gone = self.local.remove(pos);
        if self.retired_local.len() >= MAX_RETIRED_KEPT {
            self.retired_local.pop_front();
        }
        self.retired_local.push_back(gone.cid.clone());
        Ok(Some(gone.cid))
    }

    /// Our active IDs (the ones a packet may be addressed to).
    pub fn source_ids(&self) -> impl Iterator<Item = &ConnectionId<'static>> + '_ {
        self.local.iter().map(|l| &l.cid)
    }

    /// The next of our IDs the peer retired, to stop routing it.
    pub fn retired_scid_next(&mut self) -> Option<ConnectionId<'static>> {
        self.retired_local.pop_front()
    }

    /// Number of our active IDs.
    pub fn active_source_count(&self) -> usize {
        self.local.len()
    }

    // -----------------------------------------------------------------------------------------
    // The peer's IDs.

    /// Records the peer's handshake ID (sequence number 0) if no peer ID is known yet, and its
    /// stateless reset token once known (from the server's transport parameters).
    pub fn set_peer_initial(&mut self, dcid: &ConnectionId, token: Option<[u8; RESET_TOKEN_LEN]>) {
        if self.peer.is_empty() && self.current_dcid_seq == 0 && self.peer_retire_prior_to == 0 {
            self.peer.push(PeerCid {
                seq: 0,
                cid: dcid.clone().into_owned(),
                token: None,
                used: true,
            });
        }
        if let Some(p) = self.peer.first_mut().filter(|p| p.seq == 0) {
            if token.is_some() && p.cid[..] == dcid[..] {
                p.token = token;
            }
        }
    }

    /// A NEW_CONNECTION_ID frame arrived (RFC 9000 §19.15). Returns the ID to send with from
    /// now on if the one in use was retired by `retire_prior_to`.
    ///
    /// Errors: PROTOCOL_VIOLATION for a sequence number reused with another ID or an ID reused
    /// with another sequence number; CONNECTION_ID_LIMIT_ERROR (`IdLimit`) when more IDs are
    /// active than our limit, or too many retirements are unacknowledged (§5.1.2).
    pub fn on_new_connection_id(
        &mut self,
        seq: u64,
        retire_prior_to: u64,
        cid: &[u8],
        token: [u8; RESET_TOKEN_LEN],
    ) -> Result<Option<ConnectionId<'static>>> {
        if let Some(p) = self.peer.iter().find(|p| p.seq == seq) {
            // A repeated frame is fine; a sequence number reused with another ID is not.
            return if &p.cid[..] == cid && p.token.is_none_or(|t| tokens_equal(&t, &token)) {
                Ok(None)
            } else {
                Err(Error::ProtocolViolation)
            };
        }
        if self.peer.iter().any(|p| &p.cid[..] == cid) {
            return Err(Error::ProtocolViolation);
        }

        if seq < self.peer_retire_prior_to || self.retired_peer.contains(seq) {
            // Already retired by an earlier Retire Prior To: retire it (once) without using it.
            if !self.retired_peer.contains(seq) {
                self.retire_peer(seq);
            }
            return self.check_retiring().map(|_| None);
        }

        let pos = self.peer.partition_point(|p| p.seq < seq);
        self.peer.insert(
            pos,
            PeerCid {
                seq,
                cid: ConnectionId::from_vec(cid.to_vec()),
                token: Some(token),
                used: false,
            },
        );

        let mut switched = None;
        if retire_prior_to > self.peer_retire_prior_to {
            self.peer_retire_prior_to = retire_prior_to;
            let old: Vec<u64> = self
                .peer
                .iter()
                .filter(|p| p.seq < retire_prior_to)
                .map(|p| p.seq)
                .collect();
            self.peer.retain(|p| p.seq >= retire_prior_to);
            for s in old {
                self.retire_peer(s);
            }
            if self.current_dcid_seq < retire_prior_to {
                // The frame's own ID is at or above Retire Prior To, so one is always left.
                if let Some(next) = self.peer.first_mut() {
                    next.used = true;
                    self.current_dcid_seq = next.seq;
                    switched = Some(next.cid.clone());
                }
            }
        }

        if self.peer.len() as u64 > self.local_limit {
            return Err(Error::IdLimit);
        }
        self.check_retiring()?;
        Ok(switched)
    }

    fn retire_peer(&mut self, seq: u64) {
        self.retired_peer.insert(seq..seq.saturating_add(1));
        self.retiring.insert(seq);
        self.retire_queue.push_back(seq);
    }

    /// §5.1.2: the retirements awaiting acknowledgement are bounded; a peer that makes us exceed
    /// twice our limit (the least the RFC lets us allow) is treated as exceeding the limit.
    fn check_retiring(&self) -> Result<()> {
        if self.retiring.len() as u64 > self.max_unacked_retirements() {
            return Err(Error::IdLimit);
        }
        Ok(())
    }

    /// The most retirements of peer IDs that may await acknowledgement before the peer is
    /// treated as exceeding our limit. Saturating: an application may advertise any limit.
    pub(crate) fn max_unacked_retirements(&self) -> u64 {
        self.local_limit.max(MAX_ISSUED).saturating_mul(2)
    }

    /// Retirements of peer IDs not acknowledged yet, and RETIRE_CONNECTION_ID frames queued.
    #[cfg(test)]
    pub(crate) fn retirements_pending(&self) -> (usize, usize) {
        (self.retiring.len(), self.retire_queue.len())
    }

    /// Whether `tail` (the last 16 bytes of a datagram that could not be processed) is the
    /// stateless reset token of a peer ID we have used (RFC 9000 §10.3.1).
    pub fn is_stateless_reset(&self, tail: &[u8; RESET_TOKEN_LEN]) -> bool {
        // Every candidate is compared, so the time taken does not tell which one matched.
        self.peer
            .iter()
            .filter(|p| p.used)
            .filter_map(|p| p.token.as_ref())
            .fold(false, |found, t| found | tokens_equal(t, tail))
    }

    /// Takes a peer connection ID not used yet (for a new path, RFC 9000 §9.5): its sequence
    /// number and value, marked used. `None` when the peer gave no spare one.
    pub fn take_unused_dcid(&mut self) -> Option<(u64, ConnectionId<'static>)> {
        let p = self
            .peer
            .iter_mut()
            .find(|p| !p.used && p.seq >= self.peer_retire_prior_to)?;
        p.used = true;
        Some((p.seq, p.cid.clone()))
    }

    /// Whether the peer gave a connection ID not used yet.
    pub fn has_unused_dcid(&self) -> bool {
        self.peer.iter().any(|p| !p.used)
    }

    /// The sequence number of the peer connection ID packets on the active path carry.
    pub fn current_dcid_seq(&self) -> u64 {
        self.current_dcid_seq
    }

    /// The active path now uses the peer's connection ID `seq`.
    pub fn set_current_dcid_seq(&mut self, seq: u64) {
        self.current_dcid_seq = seq;
    }

    /// The peer connection ID `seq`, if still held.
    pub fn peer_cid(&self, seq: u64) -> Option<&ConnectionId<'static>> {
        self.peer.iter().find(|p| p.seq == seq).map(|p| &p.cid)
    }

    /// Stops using the peer connection ID `seq` (the path it served is gone) and tells the
    /// peer with RETIRE_CONNECTION_ID (RFC 9000 §5.1.2). The current one is never retired here.
    pub fn retire_dcid(&mut self, seq: u64) {
        if seq == self.current_dcid_seq || self.retired_peer.contains(seq) {
            return;
        }
        if let Some(pos) = self.peer.iter().position(|p| p.seq == seq) {
            self.peer.remove(pos);
            self.retire_peer(seq);
        }
    }

    /// Number of the peer's IDs we hold and have not used on any path yet (quiche's
    /// `available_dcids`: the spare ones, 0 with zero-length IDs).
    pub fn available_dcids(&self) -> usize {
        self.peer
            .iter()
            .filter(|p| !p.used && p.seq >= self.peer_retire_prior_to)
            .count()
    }

    /// Number of the peer's IDs we hold, the one in use included.
    pub fn held_dcids(&self) -> usize {
        self.peer.len()
    }

    // -----------------------------------------------------------------------------------------
    // Frames to send.

    /// Whether a NEW_CONNECTION_ID or RETIRE_CONNECTION_ID frame may be waiting.
    pub fn has_frames_to_send(&self) -> bool {
        !self.new_cid_queue.is_empty() || !self.retire_queue.is_empty()
    }

    /// The next frame to send, without removing it: call [`ConnectionIds::on_frame_sent`] once
    /// it is written. Entries that no longer matter are dropped here.
    pub fn next_frame(&mut self) -> Option<(CidFrame, Frame<'_>)> {
        while let Some(&seq) = self.retire_queue.front() {
            if self.retiring.contains(&seq) {
                return Some((
                    CidFrame::RetireConnectionId { seq },
                    Frame::RetireConnectionId { seq_num: seq },
                ));
            }
            self.retire_queue.pop_front();
        }
        while let Some(&seq) = self.new_cid_queue.front() {
            if let Some(pos) = self.local.iter().position(|l| l.seq == seq) {
                let retire_prior_to = self.local_retire_prior_to.min(seq);
                let l = &self.local[pos];
                return Some((
                    CidFrame::NewConnectionId { seq },
                    Frame::NewConnectionId {
                        seq_num: seq,
                        retire_prior_to,
                        conn_id: &l.cid,
                        reset_token: l.token,
                    },
                ));
            }
            self.new_cid_queue.pop_front();
        }
        None
    }

    /// The frame [`ConnectionIds::next_frame`] returned was written into a packet.
    pub fn on_frame_sent(&mut self, frame: CidFrame) {
        match frame {
            CidFrame::RetireConnectionId { seq } => {
                if self.retire_queue.front() == Some(&seq) {
                    self.retire_queue.pop_front();
                }
            }
            CidFrame::NewConnectionId { seq } => {
                if self.new_cid_queue.front() == Some(&seq) {
                    self.new_cid_queue.pop_front();
                }
            }
        }
    }

    /// The packet carrying `frame` was acknowledged.
    pub fn on_frame_acked(&mut self, frame: CidFrame) {
        if let CidFrame::RetireConnectionId { seq } = frame {
            self.retiring.remove(&seq);
        }
    }

    /// The packet carrying `frame` was lost: send it again if it still matters.
    pub fn on_frame_lost(&mut self, frame: CidFrame) {
        match frame {
            CidFrame::RetireConnectionId { seq } => {
                if self.retiring.contains(&seq) && !self.retire_queue.contains(&seq) {
                    self.retire_queue.push_back(seq);
                }
            }
            CidFrame::NewConnectionId { seq } => {
                if self.local.iter().any(|l| l.seq == seq) && !self.new_cid_queue.contains(&seq) {
                    self.new_cid_queue.push_back(seq);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic "random" source for the tests.
    fn counter() -> impl FnMut(&mut [u8]) -> Result<()> {
        let mut n = 0u8;
        move |dest: &mut [u8]| {
            for b in dest {
                n = n.wrapping_add(1);
                *b = n;
            }
            Ok(())
        }
    }

    fn ids(limit: u64) -> ConnectionIds {
        let key = ResetTokenKey::new(&[7; RESET_KEY_LEN]);
        let mut ids = ConnectionIds::new(key, &ConnectionId::from_ref(&[0xaa; 8]), limit, None);
        ids.set_peer_initial(&ConnectionId::from_ref(&[0xbb; 8]), Some([1; 16]));
        ids
    }

    fn drain_frames(ids: &mut ConnectionIds) -> Vec<CidFrame> {
        let mut out = Vec::new();
        while let Some((f, _)) = ids.next_frame() {
            ids.on_frame_sent(f);
            out.push(f);
        }
        out
    }

    #[test]
    fn tokens_are_stateless_and_key_dependent() {
        let a = ResetTokenKey::new(&[1; RESET_KEY_LEN]);
        let b = ResetTokenKey::new(&[1; RESET_KEY_LEN]);
        let c = ResetTokenKey::new(&[2; RESET_KEY_LEN]);
        assert_eq!(a.token(b"cid-1"), b.token(b"cid-1"));
        assert_ne!(a.token(b"cid-1"), a.token(b"cid-2"));
        assert_ne!(a.token(b"cid-1"), c.token(b"cid-1"));
        assert!(tokens_equal(&[3; 16], &[3; 16]));
        let mut other = [3; 16];
        other[15] = 4;
        assert!(!tokens_equal(&[3; 16], &other));
        assert_eq!(format!("{a:?}"), "ResetTokenKey(..)");
    }

    #[test]
    fn stateless_reset_is_smaller_than_its_trigger_and_never_tiny() {
        for cid_len in [0, 4, 8, 16, MAX_CONN_ID_LEN] {
            let min = min_short_packet_len(cid_len);
            for received in 0..1600 {
                for random in [0, 1, 7, 1 << 31, u32::MAX] {
                    let Some(len) = stateless_reset_len(received, cid_len, random) else {
                        assert!(received < min || received <= MIN_STATELESS_RESET_LEN);
                        continue;
                    };
                    assert!(received >= min, "{received} answered, cid {cid_len}");
                    assert!(len < received, "{len} answering {received}");
                    assert!((MIN_STATELESS_RESET_LEN..=MAX_STATELESS_RESET_LEN).contains(&len));
                    if received <= 43 {
                        assert_eq!(len, received - 1, "RFC 9000 §10.3: one byte shorter");
                    } else {
                        assert!(len > INDISTINGUISHABLE_RESET_LEN, "{len} for {received}");
                    }
                }
            }
        }
        // 16-byte IDs: 37 bytes is the smallest packet for us, so the smallest one answered.
        assert_eq!(stateless_reset_len(36, 16, 0), None);
        assert_eq!(stateless_reset_len(37, 16, 0), Some(36));
        // The size varies with `random` when there is room.
        let sizes: BTreeSet<_> = (0..64)
            .filter_map(|r| stateless_reset_len(1500, 16, r))
            .collect();
        assert_eq!(sizes.first(), Some(&(INDISTINGUISHABLE_RESET_LEN + 1)));
        assert_eq!(sizes.last(), Some(&MAX_STATELESS_RESET_LEN));
    }

    #[test]
    fn stateless_reset_looks_like_a_short_header_and_ends_in_the_token() {
        let token = [0x5a; RESET_TOKEN_LEN];
        let mut ones = |b: &mut [u8]| {
            b.fill(0xff);
            Ok(())
        };
        let mut out = [0u8; 100];
        assert_eq!(
            write_stateless_reset(&token, 42, &mut ones, &mut out),
            Ok(42)
        );
        assert_eq!(out[0], 0x7f, "fixed bits 01, the rest random");
        assert!(out[1..26].iter().all(|&b| b == 0xff));
        assert_eq!(&out[26..42], &token);
        assert_eq!(out[42], 0, "nothing written past the reset");
        let mut zeros = |b: &mut [u8]| {
            b.fill(0);
            Ok(())
        };
        write_stateless_reset(&token, 21, &mut zeros, &mut out).unwrap();
        assert_eq!(out[0], 0x40);
        assert_eq!(
            write_stateless_reset(&token, 20, &mut zeros, &mut out),
            Err(Error::InvalidState)
        );
        assert_eq!(
            write_stateless_reset(&token, 101, &mut zeros, &mut out),
            Err(Error::BufferTooShort)
        );
        let mut failing = |_: &mut [u8]| Err(Error::CryptoFail);
        assert_eq!(
            write_stateless_reset(&token, 30, &mut failing, &mut out),
            Err(Error::CryptoFail)
        );
    }

    #[test]
    fn handshake_token_is_derived_unless_given() {
        let key = ResetTokenKey::new(&[7; RESET_KEY_LEN]);
        let scid = ConnectionId::from_ref(&[0xaa; 8]);
        let derived = ConnectionIds::new(key.clone(), &scid, 2, None);
        assert_eq!(derived.handshake_token(), Some(key.token(&scid)));
        let given = ConnectionIds::new(key, &scid, 2, Some([3; RESET_TOKEN_LEN]));
        assert_eq!(given.handshake_token(), Some([3; RESET_TOKEN_LEN]));
    }

    #[test]
    fn issues_up_to_the_peer_limit_and_replaces_retired_ones() {
        let mut rng = counter();
        let mut ids = ids(4);
        ids.set_peer_limit(3);
        ids.issue_up_to_limit(&mut rng).unwrap();
        assert_eq!(ids.active_source_count(), 3);
        assert_eq!(ids.issue(&mut rng, false), Err(Error::IdLimit));
        let frames = drain_frames(&mut ids);
        assert_eq!(
            frames,
            vec![
                CidFrame::NewConnectionId { seq: 1 },
                CidFrame::NewConnectionId { seq: 2 }
            ]
        );
        // A packet to ID 1 retiring ID 1 is a violation; retiring ID 0 from it is fine.
        let one = ids.source_ids().nth(1).unwrap().clone();
        assert!(ids.on_packet_dcid(&one));
        assert_eq!(
            ids.on_retire_connection_id(1),
            Err(Error::ProtocolViolation)
        );
        assert_eq!(
            ids.on_retire_connection_id(9),
            Err(Error::ProtocolViolation)
        );
        let gone = ids.on_retire_connection_id(0).unwrap().unwrap();
        assert_eq!(&gone[..], &[0xaa; 8]);
        assert_eq!(
            ids.on_retire_connection_id(0),
            Ok(None),
            "repeats are ignored"
        );
        assert_eq!(ids.retired_scid_next().as_deref(), Some(&[0xaa; 8][..]));
        assert!(!ids.on_packet_dcid(&[0xaa; 8]));
        ids.issue_up_to_limit(&mut rng).unwrap();
        assert_eq!(
            drain_frames(&mut ids),
            vec![CidFrame::NewConnectionId { seq: 3 }]
        );
        // A lost announcement goes out again; one for a retired ID does not.
        ids.on_frame_lost(CidFrame::NewConnectionId { seq: 3 });
        ids.on_frame_lost(CidFrame::NewConnectionId { seq: 0 });
        assert_eq!(
            drain_frames(&mut ids),
            vec![CidFrame::NewConnectionId { seq: 3 }]
        );
    }

    #[test]
    fn retire_prior_announces_and_may_exceed_the_limit() {
        let mut rng = counter();
        let mut ids = ids(2);
        ids.set_peer_limit(2);
        ids.issue_up_to_limit(&mut rng).unwrap();
        ids.issue(&mut rng, true).unwrap();
        let mut seen = Vec::new();
        while let Some((f, frame)) = ids.next_frame() {
            if let Frame::NewConnectionId {
                seq_num,
                retire_prior_to,
                ..
            } = frame
            {
                seen.push((seq_num, retire_prior_to));
            }
            ids.on_frame_sent(f);
        }
        assert_eq!(seen, vec![(1, 1), (2, 2)]);
    }

    #[test]
    fn peer_ids_limit_duplicates_and_retire_prior_to() {
        let mut ids = ids(3);
        assert_eq!(ids.on_new_connection_id(1, 0, &[1; 8], [11; 16]), Ok(None));
        // Repeats are harmless; conflicting ones are violations.
        assert_eq!(ids.on_new_connection_id(1, 0, &[1; 8], [11; 16]), Ok(None));
        assert_eq!(
            ids.on_new_connection_id(1, 0, &[9; 8], [11; 16]),
            Err(Error::ProtocolViolation)
        );
        assert_eq!(
            ids.on_new_connection_id(5, 0, &[1; 8], [11; 16]),
            Err(Error::ProtocolViolation)
        );
        // Two held, one of them (the handshake's) in use: one to spare.
        assert_eq!((ids.held_dcids(), ids.available_dcids()), (2, 1));

        // Retire Prior To 3 retires 0 and 1, including the one in use (2 has not arrived).
        let switched = ids.on_new_connection_id(3, 3, &[3; 8], [13; 16]).unwrap();
        assert_eq!(switched.as_deref(), Some(&[3; 8][..]));
        assert_eq!((ids.held_dcids(), ids.available_dcids()), (1, 0));
        assert_eq!(
            drain_frames(&mut ids),
            vec![
                CidFrame::RetireConnectionId { seq: 0 },
                CidFrame::RetireConnectionId { seq: 1 }
            ]
        );
        // A late ID below Retire Prior To is retired at once without being used, and only once.
        assert_eq!(ids.on_new_connection_id(2, 0, &[2; 8], [12; 16]), Ok(None));
        assert_eq!(ids.on_new_connection_id(2, 0, &[2; 8], [12; 16]), Ok(None));
        assert_eq!(
            drain_frames(&mut ids),
            vec![CidFrame::RetireConnectionId { seq: 2 }]
        );
        assert_eq!((ids.held_dcids(), ids.available_dcids()), (1, 0));
        // A lost retirement is sent again until acknowledged.
        ids.on_frame_lost(CidFrame::RetireConnectionId { seq: 1 });
        assert_eq!(
            drain_frames(&mut ids),
            vec![CidFrame::RetireConnectionId { seq: 1 }]
        );
        ids.on_frame_acked(CidFrame::RetireConnectionId { seq: 1 });
        ids.on_frame_lost(CidFrame::RetireConnectionId { seq: 1 });
        assert!(drain_frames(&mut ids).is_empty());

        assert_eq!(ids.on_new_connection_id(4, 0, &[4; 8], [14; 16]), Ok(None));
        assert_eq!(ids.on_new_connection_id(5, 0, &[5; 8], [15; 16]), Ok(None));
        assert_eq!(
            ids.on_new_connection_id(6, 0, &[6; 8], [16; 16]),
            Err(Error::IdLimit)
        );
    }

    #[test]
    fn stateless_reset_matches_only_used_ids() {
        let mut ids = ids(4);
        assert!(ids.is_stateless_reset(&[1; 16]), "handshake ID token");
        assert!(!ids.is_stateless_reset(&[2; 16]));
        ids.on_new_connection_id(1, 0, &[1; 8], [2; 16]).unwrap();
        assert!(!ids.is_stateless_reset(&[2; 16]), "not used yet");
        ids.on_new_connection_id(2, 2, &[2; 8], [3; 16]).unwrap();
        assert!(ids.is_stateless_reset(&[3; 16]), "in use now");
        assert!(!ids.is_stateless_reset(&[1; 16]), "retired");
    }

    #[test]
    fn zero_length_ids_are_never_issued_nor_retired() {
        let key = ResetTokenKey::new(&[7; RESET_KEY_LEN]);
        let mut rng = counter();
        let mut ids = ConnectionIds::new(key, &ConnectionId::default(), 2, None);
        ids.set_peer_limit(4);
        ids.issue_up_to_limit(&mut rng).unwrap();
        assert_eq!(ids.active_source_count(), 1);
        assert_eq!(ids.issue(&mut rng, false), Err(Error::InvalidState));
        assert_eq!(
            ids.on_retire_connection_id(0),
            Err(Error::ProtocolViolation)
        );
    }

    #[test]
    fn unacked_retirement_bound_saturates_with_a_huge_limit() {
        // An application may advertise any active_connection_id_limit; twice it must not wrap.
        let mut ids = ids(u64::MAX);
        assert_eq!(ids.max_unacked_retirements(), u64::MAX);
        assert_eq!(
            ids.on_new_connection_id(5, 5, &[0xcc; 8], [5; 16])
                .map(|s| s.is_some()),
            Ok(true)
        );
        assert_eq!(ids.retirements_pending(), (1, 1));
        assert_eq!(self::ids(3).max_unacked_retirements(), 2 * MAX_ISSUED);
    }
}
