//! The connection's side of connection-ID management (the bookkeeping is in [`crate::cid`]):
//! the frames, the switch of the ID we send with, stateless reset detection, and the API a
//! server application routes with.

use std::time::Instant;

use octets::OctetsMut;

use super::qlog::qlog;
use super::sent_frames::{SentFrame, SentFrames};
use super::Connection;
use crate::cid::{MIN_STATELESS_RESET_LEN, RESET_TOKEN_LEN};
use crate::error::{Error, Result};
use crate::packet::ConnectionId;
use crate::transport_params::TransportParams;

/// Fills `buf` from the system's secure random source.
pub(super) fn fill_random(buf: &mut [u8]) -> Result<()> {
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), buf)
        .map_err(|_| Error::CryptoFail)
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Where our new IDs come from: the config's generator, or random bytes.
    fn cid_source(
        generator: Option<&std::sync::Arc<dyn crate::cid::ConnectionIdGenerator>>,
    ) -> impl FnMut(&mut [u8]) -> Result<()> + '_ {
        move |buf: &mut [u8]| match generator {
            Some(g) => g.generate(buf),
            None => fill_random(buf),
        }
    }

    /// The peer's transport parameters arrived: how many of our IDs it stores, and the token
    /// of its handshake ID (servers only send one).
    pub(super) fn init_peer_cids(&mut self, tp: &TransportParams) {
        self.cids.set_peer_limit(tp.active_conn_id_limit);
        let token = tp.stateless_reset_token.map(u128::to_be_bytes);
        self.cids.set_peer_initial(&self.dcid, token);
    }

    /// Issues our IDs up to the peer's limit (after the handshake, RFC 9000 §5.1.1).
    pub(super) fn issue_scids(&mut self) -> Result<()> {
        let mut source = Self::cid_source(self.cid_generator.as_ref());
        self.cids.issue_up_to_limit(&mut source)
    }

    /// Whether a packet addressed to `dcid` is ours (any of our active IDs).
    pub(super) fn is_our_dcid(&mut self, dcid: &[u8]) -> bool {
        self.cids.on_packet_dcid(dcid)
    }

    /// NEW_CONNECTION_ID (RFC 9000 §19.15).
    pub(super) fn on_new_connection_id_frame(
        &mut self,
        seq: u64,
        retire_prior_to: u64,
        cid: &[u8],
        token: [u8; RESET_TOKEN_LEN],
    ) -> Result<()> {
        // An endpoint using a zero-length ID cannot be given others.
        if self.dcid.is_empty() {
            return Err(Error::ProtocolViolation);
        }
        self.cids.set_peer_initial(&self.dcid, None);
        if let Some(dcid) = self
            .cids
            .on_new_connection_id(seq, retire_prior_to, cid, token)?
        {
            self.dcid = dcid;
        }
        self.refresh_path_dcids();
        Ok(())
    }

    /// RETIRE_CONNECTION_ID (RFC 9000 §19.16): the peer no longer uses one of our IDs; a
    /// replacement keeps it supplied up to its limit.
    pub(super) fn on_retire_connection_id_frame(&mut self, seq: u64) -> Result<()> {
        if self.cids.on_retire_connection_id(seq)?.is_some()
            && self.handshake_complete
            && self.tuning.automatic_connection_ids
        {
            self.issue_scids()?;
        }
        Ok(())
    }

    /// NEW_CONNECTION_ID and RETIRE_CONNECTION_ID frames, as far as they fit.
    pub(super) fn write_cid_frames(
        &mut self,
        b: &mut OctetsMut,
        frames: &mut SentFrames,
    ) -> Result<bool> {
        let mut eliciting = false;
        while let Some((cf, frame)) = self.cids.next_frame() {
            if frame.wire_len() > b.cap() {
                break;
            }
            frame.to_bytes(b)?;
            qlog!(self, q => q.sent_frames().push_frame(&frame));
            self.cids.on_frame_sent(cf);
            frames.push(SentFrame::Cid(cf));
            eliciting = true;
        }
        Ok(eliciting)
    }

    /// A datagram none of whose packets could be processed: if it ends in the stateless reset
    /// token of a peer ID we used, the peer lost the connection's state and the connection is
    /// over (RFC 9000 §10.3.1). `tail` is the datagram's last 16 bytes as received (the
    /// decryption attempt may have changed the buffer). Long headers count too: other versions
    /// may send resets with one (§10.3).
    pub(super) fn on_unprocessed_datagram(
        &mut self,
        len: usize,
        tail: &[u8; RESET_TOKEN_LEN],
        now: Instant,
    ) -> bool {
        if len < MIN_STATELESS_RESET_LEN || !self.cids.is_stateless_reset(tail) {
            return false;
        }
        self.lifecycle.on_stateless_reset();
        log::debug!("{}: stateless reset received", self.trace_id());
        #[cfg(feature = "qlog")]
        {
            qlog!(self, q => q.stateless_reset(now, len, tail));
            self.qlog_state(now, crate::qlog::ConnectionState::Closed);
            qlog!(self, q => q.flush());
        }
        #[cfg(not(feature = "qlog"))]
        let _ = now;
        true
    }

    /// Whether a stateless reset from the peer ended the connection (RFC 9000 §10.3): the peer
    /// lost the connection's state (a server that restarted, say). [`Connection::is_closed`]
    /// is then true at once, while `peer_error()`, `local_error()` and `is_timed_out()` say
    /// nothing, as in quiche. Beyond quiche's API.
    pub fn is_stateless_reset(&self) -> bool {
        self.lifecycle.is_reset()
    }

    /// Our active connection IDs: a server routes datagrams addressed to any of them to this
    /// connection. New ones appear after the handshake and whenever the peer retires one.
    pub fn source_ids(&self) -> impl Iterator<Item = &ConnectionId<'static>> + '_ {
        self.cids.source_ids()
    }

    /// The next of our connection IDs the peer retired (to stop routing it), if any.
    pub fn retired_scid_next(&mut self) -> Option<ConnectionId<'static>> {
        self.cids.retired_scid_next()
    }

    /// How many of our connection IDs are active.
    pub fn active_scids(&self) -> usize {
        self.cids.active_source_count()
    }

    /// How many of the peer's connection IDs we hold and have not used yet: the spare ones a
    /// new path or a retirement can take (0 with zero-length IDs).
    pub fn available_dcids(&self) -> usize {
        self.cids.available_dcids()
    }

    /// Issues a new connection ID of ours and announces it. With `retire_prior`, the peer is
    /// asked to retire all earlier ones (it then switches to this or a later one). Errors:
    /// `InvalidState` before the peer's transport parameters are known or with zero-length IDs;
    /// `IdLimit` when the peer stores no more (and `retire_prior` is false).
    pub fn new_source_cid(&mut self, retire_prior: bool) -> Result<ConnectionId<'static>> {
        if self.peer_tp.is_none() {
            return Err(Error::InvalidState);
        }
        let mut source = Self::cid_source(self.cid_generator.as_ref());
        self.cids.issue(&mut source, retire_prior)
    }

    /// Adds `scid`, an ID of ours the application chose, with its stateless reset token, and
    /// announces it (NEW_CONNECTION_ID); returns its sequence number (the same one again for
    /// an ID already active with the same token). When the peer stores no more of our IDs
    /// ([`Connection::scids_left`] is 0), `retire_if_needed` asks it to retire the oldest
    /// ones; otherwise [`Error::IdLimit`]. [`Error::InvalidState`] with zero-length IDs, for
    /// an active ID given another token, or before the peer's limit is known.
    pub fn new_scid(
        &mut self,
        scid: &ConnectionId,
        reset_token: u128,
        retire_if_needed: bool,
    ) -> Result<u64> {
        if self.peer_tp.is_none() {
            return Err(Error::InvalidState);
        }
        self.cids
            .add_local(scid, reset_token.to_be_bytes(), retire_if_needed)
    }

    /// How many more of our IDs the peer stores: the smaller of its and our
    /// active_connection_id_limit, less the IDs active now (0 while a retirement is pending
    /// or before the peer's limit is known).
    pub fn scids_left(&self) -> usize {
        let peer = self
            .peer_tp
            .as_ref()
            .map_or(0, |tp| tp.active_conn_id_limit);
        let limit = peer.min(self.local_tp.active_conn_id_limit);
        usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .saturating_sub(self.active_scids())
    }

    /// How many of our IDs the peer retired that [`Connection::retired_scid_next`] has not
    /// returned yet.
    pub fn retired_scids(&self) -> usize {
        self.cids.retired_local_count()
    }

    /// Stops using the peer's connection ID `dcid_seq` and tells the peer
    /// (RETIRE_CONNECTION_ID, RFC 9000 §5.1.2). If the active path uses it, the path moves to
    /// a spare ID of the peer's; a probed path that used it gets another one or is dropped.
    /// Errors: [`Error::InvalidState`] with zero-length IDs or for an ID not held;
    /// [`Error::OutOfIdentifiers`] while we hold only one of the peer's IDs (whatever
    /// `dcid_seq` is, as quiche checks), or for the active path's ID when no spare one is left.
    pub fn retire_dcid(&mut self, dcid_seq: u64) -> Result<()> {
        if self.dcid.is_empty() {
            return Err(Error::InvalidState);
        }
        if self.cids.held_dcids() <= 1 {
            return Err(Error::OutOfIdentifiers);
        }
        if self.cids.peer_cid(dcid_seq).is_none() {
            return Err(Error::InvalidState);
        }
        if dcid_seq == self.cids.current_dcid_seq() {
            let (seq, cid) = self
                .cids
                .take_unused_dcid()
                .ok_or(Error::OutOfIdentifiers)?;
            self.cids.set_current_dcid_seq(seq);
            let path = self.paths.active_mut();
            path.dcid_seq = seq;
            path.dcid = cid.clone();
            self.dcid = cid;
        }
        self.cids.retire_dcid(dcid_seq);
        self.refresh_path_dcids();
        Ok(())
    }
}
