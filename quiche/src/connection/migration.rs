//! Connection migration (RFC 9000 §9) and path validation (§8.2): which path a datagram
//! arrived on, following a peer that moved (servers), probing and moving to a new local address
//! (clients), PATH_CHALLENGE/PATH_RESPONSE, and what a new path means for recovery.
//!
//! Decisions (RFC 9000 references):
//! - A server follows a peer address change only on the highest-numbered non-probing packet,
//!   after the handshake is confirmed (§9, §9.3), and validates the new address while it sends
//!   to it at most three times what it received from it (§9.3.1).
//! - Congestion control and the RTT estimate start over on a new path (§9.4) from the moment
//!   the connection sends on it (so nothing sent on the old path feeds the new path's
//!   estimates) unless only ports changed (both IP addresses the same: a NAT rebinding, which
//!   §9.4 lets an endpoint keep its state for). The old path's state is kept with the old path
//!   and restored if validation of the new one fails and the connection falls back (§9.3.2).
//! - A new path gets a peer connection ID not used before when the peer gave spare ones
//!   (§9.5); a server that has none keeps the current one, as §9.5 allows after a rebinding
//!   the peer did not initiate. A client needs a spare one to probe or migrate
//!   (`Error::OutOfIdentifiers`).
//! - With our `disable_active_migration`, a server drops packets from a new peer IP address
//!   (§18.2: drop, never reset or close) but still follows a port change, which is a NAT
//!   rebinding rather than an active migration.
//! - ECN is validated per path (§13.4.2): a path the connection starts sending on is tested
//!   afresh, and one it returns to keeps its state (`crate::ecn`).
//! - So is the path MTU (RFC 8899 §4.3, RFC 9000 §14.3): a new path searches its own from
//!   BASE_PLPMTU once it is the active one, and one the connection returns to keeps its size
//!   (`crate::sender::PathSender::pmtud`).
//! - Validation gives up after three times the larger of the current PTO and the initial PTO
//!   (§8.2.4), with a PATH_CHALLENGE per PTO meanwhile; a failed active path falls back to the
//!   last validated one, and without one the connection ends silently (§9.3.2).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use octets::OctetsMut;

use super::qlog::qlog;
use super::sent_frames::{SentFrame, SentFrames};
use super::{Connection, RecvInfo, SendInfo};
use crate::config::MIN_UDP_PAYLOAD_SIZE;
use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::path::{only_ports_changed, Path, PathEvent, PathTimeout, SocketAddrIter};

/// Smallest room worth writing a probe in (header, a PATH frame, the AEAD tag).
const MIN_PROBE_ROOM: usize = 64;

impl<F: crate::buffers::BufFactory> Connection<F> {
    // ---------------------------------------------------------------------------------------
    // Receiving.

    /// Finds the path a datagram of `len` bytes from `info` arrived on and credits its
    /// amplification budget; an unknown path is created only once a packet of the datagram
    /// authenticates ([`Connection::accept_packet_path`]).
    pub(super) fn on_datagram_path(&mut self, info: RecvInfo, len: usize) {
        self.recv_info = Some((info, len));
        self.recv_path = self.lookup_recv_path(info);
        self.recv_path_new = false;
        self.migrate_to = None;
        if let Some(path) = self.recv_path.and_then(|id| self.paths.get_mut(id)) {
            path.recv_bytes += len as u64;
        }
    }

    /// The path of a datagram from `info`. Before the handshake is confirmed no path may
    /// change (§9), and an application that reports the local address differently from what
    /// it passed to `connect`/`accept` must not look like a migration: a datagram from the
    /// active peer address then counts on the active path.
    pub(super) fn lookup_recv_path(&self, info: RecvInfo) -> Option<usize> {
        if let Some(id) = self.paths.find(info.to, info.from) {
            return Some(id);
        }
        let active = self.paths.active();
        let lenient = !self.handshake_confirmed || !self.is_server;
        (active.peer == info.from && (lenient || active.local.ip().is_unspecified()))
            .then(|| self.paths.active_id())
    }

    /// A packet of the current datagram authenticated: whether it may be processed, creating
    /// the path it came on if needed (servers, once the handshake is confirmed).
    pub(super) fn accept_packet_path(&mut self) -> bool {
        if self.recv_path.is_some() {
            return true;
        }
        let Some((info, len)) = self.recv_info else {
            return true;
        };
        // Clients discard packets from server addresses they do not know (§9); nobody
        // migrates before the handshake is confirmed.
        if !self.is_server || !self.handshake_confirmed {
            return false;
        }
        let active = self.paths.active();
        if self.local_tp.disable_active_migration && active.peer.ip() != info.from.ip() {
            return false;
        }
        // Kept only if the packet makes it matter (`settle_new_path`): a late packet from an
        // address the peer left must not bring its path back.
        let mut path = Path::new(info.to, info.from, false, self.fresh_sender());
        path.ecn = self.ecn.new_path();
        path.amplification_limited = true;
        path.recv_bytes = len as u64;
        path.dcid_seq = self.cids.current_dcid_seq();
        path.dcid = self.dcid.clone();
        let (id, evicted) = self.paths.insert(path, self.fallback_path);
        if let Some(evicted) = evicted {
            self.release_path(evicted);
        }
        self.recv_path = Some(id);
        self.recv_path_new = true;
        true
    }

    /// After the packet that created a path was processed: the path stays if the peer moved
    /// to it or probes it (a PATH_CHALLENGE to answer there), with a connection ID of its own
    /// when the peer gave a spare one (§9.5); otherwise it goes again, silently.
    pub(super) fn settle_new_path(&mut self, now: Instant) {
        if !std::mem::take(&mut self.recv_path_new) {
            return;
        }
        let Some(id) = self.recv_path else {
            return;
        };
        let Some(path) = self.paths.get(id) else {
            return;
        };
        let (local, peer) = (path.local, path.peer);
        let migrating = self.migrate_to == Some(id);
        // `Config::set_disable_dcid_reuse`: without a spare ID of the peer's the path cannot
        // be used without linking it to the current one.
        let no_fresh_dcid =
            self.tuning.disable_dcid_reuse && !self.dcid.is_empty() && !self.cids.has_unused_dcid();
        if (!migrating && !path.has_path_frames()) || no_fresh_dcid {
            self.paths.remove_silently(id);
            self.recv_path = None;
            if migrating {
                self.migrate_to = None;
            }
            return;
        }
        self.stats.paths_count += 1;
        self.paths.push_event(PathEvent::New(local, peer));
        // The first packet to a new address carries a PATH_CHALLENGE (§8.2, §9.3), with the
        // PATH_RESPONSE a probe asked for.
        let timeout = self.validation_timeout();
        if let Some(p) = self.paths.get_mut(id) {
            p.start_validation(now, timeout);
        }
        if !self.dcid.is_empty() {
            if let Some((seq, cid)) = self.cids.take_unused_dcid() {
                if let Some(p) = self.paths.get_mut(id) {
                    p.dcid_seq = seq;
                    p.dcid = cid;
                }
            }
        }
        if let Some(id) = self.migrate_to.take() {
            self.switch_active_path(id, now);
        }
    }

    /// Gives `path` a peer connection ID of its own (§9.5); false when the peer gave no spare
    /// one. With zero-length IDs every path shares the empty one.
    fn assign_dcid(&mut self, path: &mut Path) -> bool {
        if !self.dcid.is_empty() {
            let Some((seq, cid)) = self.cids.take_unused_dcid() else {
                return false;
            };
            path.dcid_seq = seq;
            path.dcid = cid;
            return true;
        }
        path.dcid_seq = self.cids.current_dcid_seq();
        path.dcid = self.dcid.clone();
        true
    }

    /// The highest-numbered non-probing packet so far arrived: if it came on another path, the
    /// peer moved there (§9.3).
    pub(super) fn on_non_probing_packet(&mut self, now: Instant) {
        let Some(id) = self.recv_path else {
            return;
        };
        if id == self.paths.active_id() || !self.is_server || !self.handshake_confirmed {
            return;
        }
        if self.recv_path_new {
            // The path gets its connection ID first (`settle_new_path`).
            self.migrate_to = Some(id);
            return;
        }
        self.switch_active_path(id, now);
    }

    /// PATH_CHALLENGE: answer on the path it arrived on (§8.2.2); a bounded number per path.
    pub(super) fn on_path_challenge(&mut self, data: [u8; 8]) {
        let id = self.recv_path.unwrap_or(self.paths.active_id());
        if let Some(path) = self.paths.get_mut(id) {
            // A full queue drops the challenge: a flood gets a bounded number of answers.
            let _ = path.push_response(data);
        }
    }

    /// PATH_RESPONSE: it validates the path its challenge went out on, wherever it arrives
    /// (§8.2.3); one that matches nothing is ignored.
    pub(super) fn on_path_response(&mut self, data: [u8; 8], now: Instant) {
        let matched = self
            .paths
            .iter_mut()
            .find_map(|(id, p)| p.on_response(&data).then_some(id));
        if let Some(id) = matched {
            self.on_path_validated(id, now);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Path changes.

    /// How long validation of a path may take: three times the larger of the active path's
    /// PTO and the PTO from the initial RTT (§8.2.4).
    fn validation_timeout(&self) -> Duration {
        self.validation_timeout_on(self.paths.active_id())
    }

    /// [`Self::validation_timeout`] with the PTO of path `id` (the path about to become the
    /// active one).
    fn validation_timeout_on(&self, id: usize) -> Duration {
        let rtt = self.recovery_config.initial_rtt;
        let initial_pto = rtt * 3 + self.recovery_config.max_ack_delay;
        let pto = self
            .paths
            .get(id)
            .map_or(self.sender().pto(), |p| p.sender.pto());
        pto.max(initial_pto) * 3
    }

    /// A sender for a new path (RFC 9000 §9.4): a fresh controller and pacer, the RTT estimate
    /// from the initial RTT (with the peer's max_ack_delay), and a path MTU search of its own
    /// from BASE_PLPMTU (RFC 8899 §4.3; it starts when the path becomes the active one,
    /// `pmtud_on_path_switch`); without the search, the active path's datagram size.
    pub(super) fn fresh_sender(&self) -> crate::sender::PathSender {
        let current = self.sender();
        let pmtud = current.pmtud().for_new_path();
        let mut cfg = self.recovery_config;
        cfg.cc.max_datagram_size = if pmtud.is_enabled() {
            pmtud.current()
        } else {
            current.max_datagram_size()
        };
        let cc = super::open::build_controller(&cfg, self.cc_factory.as_deref());
        let rtt = crate::rtt::RttEstimator::new(cfg.initial_rtt, current.rtt().max_ack_delay());
        let mut sender = crate::sender::PathSender::new(
            cc,
            rtt,
            cfg.cc.max_datagram_size,
            current.pacer().enabled(),
        )
        .with_pmtud(pmtud);
        sender.set_max_pacing_rate(current.pacer().max_rate());
        sender
    }

    /// Makes `id` the active path: its connection ID goes into packets, its sender takes
    /// over (the old path's when only ports changed: the same network path behind a NAT
    /// rebinding), and validation starts if the path is not validated.
    fn switch_active_path(&mut self, id: usize, now: Instant) {
        let old = self.paths.active_id();
        if id == old || self.paths.get(id).is_none() {
            return;
        }
        let (current_seq, current_dcid) = (self.cids.current_dcid_seq(), self.dcid.clone());
        let keep_cc = {
            let (Some(a), Some(b)) = (self.paths.get(old), self.paths.get(id)) else {
                return;
            };
            only_ports_changed(a, b)
        };
        if keep_cc {
            self.paths.swap_senders(old, id);
        } else {
            self.recovery
                .on_path_change(&mut self.paths.active_mut().sender, now);
        }
        let is_server = self.is_server;
        let old_validated = match self.paths.get_mut(old) {
            Some(p) => {
                p.dcid_seq = current_seq;
                p.dcid = current_dcid;
                if is_server {
                    // The peer moved: check the path it left too (§9.3.3), so that a copy
                    // forwarded by an attacker cannot take the connection away for good.
                    p.recheck();
                }
                p.validated()
            }
            None => false,
        };
        let timeout = self.validation_timeout_on(id);
        let validated = match self.paths.get_mut(id) {
            Some(p) => {
                if !p.validated() {
                    p.start_validation(now, timeout);
                }
                self.dcid = p.dcid.clone();
                self.cids.set_current_dcid_seq(p.dcid_seq);
                p.validated()
            }
            None => false,
        };
        self.paths.set_active(id);
        self.pmtud_on_path_switch(now);
        self.on_ecn_path_switch(old, now);
        if old_validated {
            self.fallback_path = Some(old);
        }
        if validated {
            self.finish_migration(old, now);
        } else {
            let limited = self.paths.active().amplification_allowance().is_some();
            self.recovery
                .set_amplification_limited(limited, now, &self.paths.active().sender);
        }
    }

    /// The active path is validated: the path the connection left (and the fallback) are
    /// freed, their connection IDs retired.
    fn finish_migration(&mut self, old: usize, now: Instant) {
        let active = self.paths.active();
        let (local, peer) = (active.local, active.peer);
        if self.is_server {
            self.paths.push_event(PathEvent::PeerMigrated(local, peer));
        }
        self.recovery
            .set_amplification_limited(false, now, &self.paths.active().sender);
        for id in [Some(old), self.fallback_path.take()].into_iter().flatten() {
            if let Some(path) = self.paths.remove(id) {
                self.release_path(path);
            }
        }
    }

    /// A path is gone: retire its connection ID unless another path still uses it.
    fn release_path(&mut self, path: Path) {
        let seq = path.dcid_seq;
        let in_use = seq == self.cids.current_dcid_seq()
            || self.paths.iter().any(|(_, p)| p.dcid_seq == seq);
        if !in_use && !path.dcid.is_empty() {
            self.cids.retire_dcid(seq);
        }
    }

    fn on_path_validated(&mut self, id: usize, now: Instant) {
        let Some(path) = self.paths.get(id) else {
            return;
        };
        let (local, peer) = (path.local, path.peer);
        self.paths.push_event(PathEvent::Validated(local, peer));
        if id == self.paths.active_id() {
            if let Some(old) = self.fallback_path {
                self.finish_migration(old, now);
            } else {
                self.recovery
                    .set_amplification_limited(false, now, &self.paths.active().sender);
            }
        }
    }

    fn on_path_failed(&mut self, id: usize, now: Instant) {
        let Some(path) = self.paths.get(id) else {
            return;
        };
        let (local, peer) = (path.local, path.peer);
        self.paths
            .push_event(PathEvent::FailedValidation(local, peer));
        if id == self.paths.active_id() {
            match self.fallback_path.take() {
                Some(fallback) => self.switch_active_path(fallback, now),
                None => {
                    // No validated address to return to: end silently (§9.3.2).
                    self.lifecycle.close_immediately(None);
                    return;
                }
            }
        }
        if let Some(path) = self.paths.remove(id) {
            self.release_path(path);
        }
    }

    /// Path timers: repeated challenges, failed validations.
    pub(super) fn on_path_timeout(&mut self, now: Instant) {
        let pto = self.sender().pto();
        let mut failed = [false; crate::path::MAX_PATHS];
        for (id, path) in self.paths.iter_mut() {
            if path.on_timeout(now, pto) == PathTimeout::Failed {
                if let Some(f) = failed.get_mut(id) {
                    *f = true;
                }
            }
        }
        for (id, _) in failed.iter().enumerate().filter(|(_, f)| **f) {
            self.on_path_failed(id, now);
        }
    }

    /// The peer retired connection IDs: a path other than the active one whose ID is gone
    /// takes a spare one, or is dropped.
    pub(super) fn refresh_path_dcids(&mut self) {
        let mut lost = [false; crate::path::MAX_PATHS];
        let active = self.paths.active_id();
        for (id, path) in self.paths.iter() {
            if id != active && !path.dcid.is_empty() && self.cids.peer_cid(path.dcid_seq).is_none()
            {
                lost[id] = true;
            }
        }
        for (id, _) in lost.iter().enumerate().filter(|(_, l)| **l) {
            let Some(mut path) = self.paths.remove(id) else {
                continue;
            };
            if self.assign_dcid(&mut path) {
                let _ = self.paths.insert(path, None);
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // Sending.

    /// The path the next datagram goes out on: with `from`/`to`, one that matches; otherwise a
    /// path other than the active one that owes PATH_CHALLENGE/PATH_RESPONSE frames, or the
    /// active path.
    pub(super) fn pick_send_path(
        &self,
        from: Option<SocketAddr>,
        to: Option<SocketAddr>,
    ) -> Result<usize> {
        let active = self.paths.active_id();
        let can_probe = self.one_rtt.is_some() && !self.lifecycle.is_closing_or_draining();
        if from.is_none() && to.is_none() {
            // The active path's own challenge first: it limits what the path may carry.
            if self.paths.active().has_path_frames() {
                return Ok(active);
            }
            let probe = self
                .paths
                .iter()
                .find(|(id, p)| *id != active && (p.has_path_frames() || p.ack_eliciting_due()))
                .map(|(id, _)| id);
            return Ok(probe.filter(|_| can_probe).unwrap_or(active));
        }
        let matches =
            |p: &Path| from.is_none_or(|a| a == p.local) && to.is_none_or(|a| a == p.peer);
        if self.paths.get(active).is_some_and(matches) {
            if let Some((id, _)) = self.paths.iter().find(|(id, p)| {
                *id != active && matches(p) && (p.has_path_frames() || p.ack_eliciting_due())
            }) {
                return Ok(id);
            }
            return Ok(active);
        }
        self.paths
            .iter()
            .find(|(_, p)| matches(p))
            .map(|(id, _)| id)
            .ok_or(Error::InvalidState)
    }

    /// Writes a probe datagram (PATH_CHALLENGE/PATH_RESPONSE, padded to 1200 bytes within the
    /// path's amplification budget) for path `id`, not the active one.
    pub(super) fn send_probe(
        &mut self,
        out: &mut [u8],
        id: usize,
        now: Instant,
    ) -> Result<(usize, SendInfo)> {
        if out.is_empty() {
            return Err(Error::BufferTooShort);
        }
        self.last_now = Some(now);
        if self.lifecycle.is_closing_or_draining() || self.one_rtt.is_none() {
            return Err(Error::Done);
        }
        let Some(path) = self
            .paths
            .get(id)
            .filter(|p| p.has_path_frames() || p.ack_eliciting_due())
        else {
            return Err(Error::Done);
        };
        let (local, peer) = (path.local, path.peer);
        let mut limit = out.len().min(path.sender.max_datagram_size());
        if let Some(allowance) = path.amplification_allowance() {
            limit = limit.min(usize::try_from(allowance).unwrap_or(usize::MAX));
        }
        if limit < MIN_PROBE_ROOM {
            return Err(Error::Done);
        }
        self.send_path = id;
        self.probe_only = true;
        let pad_to = MIN_UDP_PAYLOAD_SIZE.min(limit);
        let written = self.write_probe_packet(&mut out[..limit], pad_to, now);
        self.probe_only = false;
        self.send_path = self.paths.active_id();
        let len = written?;
        self.on_datagram_sent(id, len);
        Ok((
            len,
            SendInfo {
                from: local,
                to: peer,
                at: now,
                // Marks are validated on the path the connection sends on; probes of other
                // paths go unmarked.
                ecn: 0,
            },
        ))
    }

    /// A datagram of `len` bytes went out on path `id`.
    pub(super) fn on_datagram_sent(&mut self, id: usize, len: usize) {
        self.stats.sent_bytes += len as u64;
        if let Some(path) = self.paths.get_mut(id) {
            let budget_before = path.amplification_allowance();
            path.sent_bytes += len as u64;
            path.sent_packets += 1;
            // The datagram spent what was left of the anti-amplification budget: the path is
            // stuck until the peer sends more (or is validated).
            let room = super::send::MIN_PACKET_ROOM as u64;
            let spent = path
                .amplification_allowance()
                .is_some_and(|left| left < room);
            if spent && budget_before.is_some_and(|b| b >= room) {
                self.stats.amplification_limited_count += 1;
            }
        }
    }

    /// PATH_RESPONSE frames owed on path `id`, then a PATH_CHALLENGE if one is due. The
    /// datagram is then padded to 1200 bytes.
    pub(super) fn write_path_frames(
        &mut self,
        id: usize,
        b: &mut OctetsMut,
        frames: &mut SentFrames,
        now: Instant,
    ) -> Result<bool> {
        let mut written = false;
        while let Some(data) = self.paths.get(id).and_then(Path::peek_response) {
            let frame = Frame::PathResponse { data };
            if frame.wire_len() > b.cap() {
                break;
            }
            frame.to_bytes(b)?;
            frames.push(SentFrame::Other);
            qlog!(self, q => q.sent_frames().push_frame(&frame));
            if let Some(p) = self.paths.get_mut(id) {
                p.pop_response();
            }
            written = true;
        }
        if self.paths.get(id).is_some_and(Path::challenge_due) && b.cap() >= 9 {
            let mut data = [0u8; 8];
            super::ids::fill_random(&mut data)?;
            let frame = Frame::PathChallenge { data };
            frame.to_bytes(b)?;
            frames.push(SentFrame::Other);
            qlog!(self, q => q.sent_frames().push_frame(&frame));
            if let Some(p) = self.paths.get_mut(id) {
                p.on_challenge_sent(data, now);
            }
            written = true;
        }
        self.pad_for_path_frames |= written;
        Ok(written)
    }

    // ---------------------------------------------------------------------------------------
    // The API (quiche's names and signatures).

    /// Whether this endpoint may start a migration now: after the handshake is confirmed
    /// (§9) and unless the peer sent `disable_active_migration` (§18.2).
    fn check_may_migrate(&self) -> Result<()> {
        if !self.handshake_confirmed || self.lifecycle.is_closing_or_draining() {
            return Err(Error::InvalidState);
        }
        if self
            .peer_tp
            .as_ref()
            .is_none_or(|tp| tp.disable_active_migration)
        {
            return Err(Error::InvalidState);
        }
        Ok(())
    }

    /// The path between `local` and `peer`, created (with a spare peer connection ID) if new.
    fn path_for_api(&mut self, local: SocketAddr, peer: SocketAddr) -> Result<usize> {
        if let Some(id) = self.paths.find(local, peer) {
            return Ok(id);
        }
        let mut path = Path::new(local, peer, false, self.fresh_sender());
        path.ecn = self.ecn.new_path();
        path.amplification_limited = false;
        if !self.assign_dcid(&mut path) {
            return Err(Error::OutOfIdentifiers);
        }
        let (id, evicted) = self.paths.insert(path, self.fallback_path);
        if let Some(evicted) = evicted {
            self.release_path(evicted);
        }
        self.stats.paths_count += 1;
        Ok(id)
    }

    /// Starts validating the path from `local_addr` to `peer_addr` (a client checking a new
    /// network before moving to it, RFC 9000 §9.1); returns the sequence number of the peer
    /// connection ID the path uses. The PATH_CHALLENGE goes out with the next `send` (its
    /// `SendInfo` names the path) or `send_on_path`. Errors: `InvalidState` before the
    /// handshake is confirmed or when the peer disabled active migration;
    /// `OutOfIdentifiers` when the peer gave no spare connection ID.
    pub fn probe_path(&mut self, local_addr: SocketAddr, peer_addr: SocketAddr) -> Result<u64> {
        self.check_may_migrate()?;
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        let timeout = self.validation_timeout();
        let id = self.path_for_api(local_addr, peer_addr)?;
        let path = self.paths.get_mut(id).ok_or(Error::InvalidState)?;
        if !path.validated() {
            path.start_validation(now, timeout);
        }
        Ok(path.dcid_seq)
    }

    /// Moves the connection to the path from `local_addr` to `peer_addr` (client only, RFC
    /// 9000 §9.2): packets go out on it from now on, and it is validated if it was not. If
    /// validation fails, the connection returns to the previous path. Returns the sequence
    /// number of the peer connection ID in use. Errors as [`Connection::probe_path`], and
    /// `InvalidState` on a server.
    pub fn migrate(&mut self, local_addr: SocketAddr, peer_addr: SocketAddr) -> Result<u64> {
        if self.is_server {
            return Err(Error::InvalidState);
        }
        self.check_may_migrate()?;
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        let id = self.path_for_api(local_addr, peer_addr)?;
        self.switch_active_path(id, now);
        Ok(self.cids.current_dcid_seq())
    }

    /// Moves the connection to a new local address, keeping the peer address (see
    /// [`Connection::migrate`]).
    pub fn migrate_source(&mut self, local_addr: SocketAddr) -> Result<u64> {
        let peer = self.paths.active().peer;
        self.migrate(local_addr, peer)
    }

    /// Whether the path from `from` to `to` is validated; `InvalidState` for an unknown path.
    pub fn is_path_validated(&self, from: SocketAddr, to: SocketAddr) -> Result<bool> {
        self.paths
            .find(from, to)
            .and_then(|id| self.paths.get(id))
            .map(Path::validated)
            .ok_or(Error::InvalidState)
    }

    /// The next path event (new, validated, failed, closed, peer migrated), if any.
    pub fn path_event_next(&mut self) -> Option<PathEvent> {
        self.paths.pop_event()
    }

    /// The peer addresses of the paths whose local address is `from`.
    pub fn paths_iter(&self, from: SocketAddr) -> SocketAddrIter {
        SocketAddrIter::new(
            self.paths
                .iter()
                .filter(|(_, p)| p.local == from)
                .map(|(_, p)| p.peer)
                .collect(),
        )
    }

    /// Like `send`, restricted to a path whose local address is `from` and peer address is
    /// `to` (either may be `None`: any). Applications with one socket per local address use it
    /// to write each socket's datagrams; `SendInfo::from` names the path's local address.
    /// `InvalidState` when no path matches, `Done` when it has nothing to send.
    pub fn send_on_path(
        &mut self,
        out: &mut [u8],
        from: Option<SocketAddr>,
        to: Option<SocketAddr>,
    ) -> Result<(usize, SendInfo)> {
        self.send_on_path_at(out, from, to, Self::wall_now())
    }

    /// The local and peer addresses of the active path.
    pub fn active_path(&self) -> (SocketAddr, SocketAddr) {
        let p = self.paths.active();
        (p.local, p.peer)
    }
}
