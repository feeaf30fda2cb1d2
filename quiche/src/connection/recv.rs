//! The receive pipeline: datagram → packets → header protection → decryption → frames.

use std::time::{Duration, Instant};

use super::qlog::qlog;
use super::{Connection, RecvInfo};
use crate::config::MIN_UDP_PAYLOAD_SIZE;
use crate::error::{Error, Result};
use crate::frame::parse_all;
use crate::packet::{decrypt_hdr, decrypt_pkt, peek_long_header, Epoch, HeaderLayout, Type};
use crate::tls::{HeaderProtectionKey, PacketKey};

/// Packets kept while the keys to open them are not yet available (RFC 9001 §5.7).
pub(super) const MAX_UNDECRYPTABLE: usize = 16;

/// What became of one packet of a datagram.
enum Fate {
    /// Processed or dropped on its own; the next coalesced packet starts after this many bytes.
    Next(usize),
    /// The rest of the datagram cannot be parsed.
    StopDatagram,
}

/// What `classify_packet` made of a packet.
enum Classified {
    /// To be opened; `first_initial` for a server's first Initial, whose keys were just
    /// derived from it.
    Open { first_initial: bool },
    /// Handled or skipped without opening.
    Done(Fate),
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Processes a datagram received at `now`; returns the bytes consumed.
    pub fn recv_at(&mut self, buf: &mut [u8], info: RecvInfo, now: Instant) -> Result<usize> {
        self.recv_with_ecn_at(buf, info, 0, now)
    }

    /// Processes a datagram received at `now` whose IP header carried the ECN codepoint `ecn`
    /// (see [`Connection::recv_with_ecn`]); returns the bytes consumed.
    pub fn recv_with_ecn_at(
        &mut self,
        buf: &mut [u8],
        info: RecvInfo,
        ecn: u8,
        now: Instant,
    ) -> Result<usize> {
        self.recv_ecn = ecn & 0b11;
        let result = self.recv_datagram(buf, info, now);
        self.recv_ecn = 0;
        self.track_bytes_in_flight(now);
        result
    }

    fn recv_datagram(&mut self, buf: &mut [u8], info: RecvInfo, now: Instant) -> Result<usize> {
        let len = buf.len();
        if len == 0 {
            return Err(Error::BufferTooShort);
        }
        self.last_now = Some(now);
        if self.lifecycle.is_closed() {
            return Err(Error::Done);
        }
        // The idle timeout runs from the first use, handshake included (RFC 9000 §10.1): a
        // connection whose packets never authenticate must still end.
        self.lifecycle.start_idle_timer(now, self.sender().pto());
        if self.lifecycle.is_draining() {
            // Nothing is processed or answered while draining (RFC 9000 §10.2.2).
            return Ok(len);
        }

        // A server drops client Initial datagrams smaller than 1200 bytes (RFC 9000 §14.1):
        // answering them would let an attacker amplify.
        let is_initial = matches!(peek_long_header(buf), Some((Type::Initial, _)));
        if self.is_server && is_initial && len < MIN_UDP_PAYLOAD_SIZE {
            self.stats.dropped += 1;
            return Err(Error::InvalidPacket);
        }

        self.stats.recv_bytes += len as u64;
        self.on_datagram_path(info, len);

        // Kept aside for stateless reset detection: decryption attempts modify the buffer.
        let tail: Option<[u8; crate::cid::RESET_TOKEN_LEN]> = buf
            .get(len.saturating_sub(crate::cid::RESET_TOKEN_LEN)..)
            .and_then(|t| t.try_into().ok());
        let recv_before = self.stats.recv;

        let mut off = 0;
        while off < len {
            match self.recv_packet(&mut buf[off..], info, now)? {
                Fate::Next(n) => off += n.max(1),
                Fate::StopDatagram => {
                    self.stats.dropped += 1;
                    break;
                }
            }
        }

        if let Some(tail) = tail.filter(|_| self.stats.recv == recv_before) {
            if self.on_unprocessed_datagram(len, &tail, now) {
                return Ok(len);
            }
        }

        self.replay_undecryptable(now)?;
        Ok(len)
    }

    /// Handles the packet at the start of `b`. A server that moved the client to another
    /// version opens the client's Initial packets that still come in the original version
    /// with that version's keys (RFC 9369 §4.1).
    fn recv_packet(&mut self, b: &mut [u8], info: RecvInfo, now: Instant) -> Result<Fate> {
        let original_initial = self.is_server
            && self.versions.compat_original().is_some()
            && !self.spaces[0].discarded
            && matches!(peek_long_header(b),
                Some((Type::Initial, v)) if Some(v) == self.versions.compat_original());
        if !original_initial {
            return self.recv_one_packet(b, info, now);
        }
        let open = self.original_initial_open()?;
        let current = self.spaces[0].open.replace(open);
        let fate = self.recv_one_packet(b, info, now);
        if !self.spaces[0].discarded {
            self.spaces[0].open = current;
        }
        fate
    }

    /// One packet of a datagram: classify (`classify_packet`) → unprotect
    /// (`unprotect_packet`) → process and commit (`commit_packet`).
    fn recv_one_packet(&mut self, b: &mut [u8], info: RecvInfo, now: Instant) -> Result<Fate> {
        let mut hdr = match HeaderLayout::parse(b, self.scid.len()) {
            Ok(hdr) => hdr,
            Err(_) => return Ok(Fate::StopDatagram),
        };
        let packet_len = hdr.packet_len;
        let first_initial = match self.classify_packet(b, &hdr, info)? {
            Classified::Open { first_initial } => first_initial,
            Classified::Done(fate) => return Ok(fate),
        };
        let Some(key_update) = self.unprotect_packet(b, &mut hdr, first_initial, now)? else {
            return Ok(Fate::Next(packet_len));
        };
        self.commit_packet(b, &hdr, first_initial, key_update, now)?;
        Ok(Fate::Next(packet_len))
    }

    /// Decides what a packet is before any cryptography: Version Negotiation and Retry go to
    /// their handlers; a packet for another connection, a discarded space, another version or
    /// while closing is skipped; one whose keys are not there yet is kept for later. A
    /// server's first Initial derives the Initial keys from the packet's DCID, but nothing
    /// about the client is committed until the packet authenticates, so that forged Initials
    /// cannot fix the connection's IDs or keys.
    fn classify_packet(
        &mut self,
        b: &[u8],
        hdr: &HeaderLayout,
        info: RecvInfo,
    ) -> Result<Classified> {
        let skip = Classified::Done(Fate::Next(hdr.packet_len));
        match hdr.ty {
            Type::VersionNegotiation => {
                self.on_version_negotiation(b, hdr)?;
                return Ok(Classified::Done(Fate::StopDatagram));
            }
            Type::Retry => {
                self.on_retry(b, hdr)?;
                return Ok(Classified::Done(Fate::StopDatagram));
            }
            _ => {}
        }
        if self.lifecycle.is_closing_or_draining() {
            // Closing: answer with CONNECTION_CLOSE, process nothing (RFC 9000 §10.2.1).
            self.lifecycle.on_packet_while_closing();
            return Ok(skip);
        }
        let dcid = hdr.dcid.get(b);
        let dcid_ok = self.is_our_dcid(dcid)
            || (self.is_server
                && matches!(hdr.ty, Type::Initial | Type::ZeroRTT)
                && (!self.dcid_from_peer
                    || dcid == &self.odcid[..]
                    || self.retry_scid.as_deref() == Some(dcid)));
        if !dcid_ok || self.spaces[hdr.ty.epoch().index()].discarded {
            return Ok(skip);
        }
        let first_initial = self.is_server && !self.dcid_from_peer;
        if first_initial {
            if hdr.ty != Type::Initial {
                return Ok(skip);
            }
            let (open, seal) = crate::crypto::initial_keys_for(hdr.version, hdr.dcid.get(b), true)?;
            self.spaces[0].open = Some(open);
            self.spaces[0].seal = Some(seal);
        } else if hdr.ty != Type::Short
            && !self.accepts_version(hdr.ty, hdr.version)
            && !self.try_follow_version(hdr.ty, hdr.version)
        {
            // Handshake and 1-RTT packets come in the negotiated version only (RFC 9369 §4.1).
            self.stats.dropped += 1;
            return Ok(skip);
        }
        if !self.keys_ready(hdr.ty) {
            if matches!(hdr.ty, Type::Short | Type::Handshake)
                && self.undecryptable.len() < MAX_UNDECRYPTABLE
            {
                let packet = b.get(..hdr.packet_len).unwrap_or(b).to_vec();
                self.undecryptable.push((packet, info, self.recv_ecn));
            }
            return Ok(skip);
        }
        Ok(Classified::Open { first_initial })
    }

    /// Removes header protection and decrypts the payload in place; returns whether the
    /// packet started a key update, or `None` when it did not authenticate (then what
    /// `classify_packet` set up on its word is undone and the packet is dropped).
    fn unprotect_packet(
        &mut self,
        b: &mut [u8],
        hdr: &mut HeaderLayout,
        first_initial: bool,
        now: Instant,
    ) -> Result<Option<bool>> {
        let largest = self.spaces[hdr.ty.epoch().index()]
            .acks
            .largest_received()
            .unwrap_or(0);
        let ty = hdr.ty;
        let opened = match decrypt_hdr(b, hdr, self.hp_open(ty)?, largest) {
            Ok(()) => self.open_payload(b, hdr),
            Err(_) => Err(Error::CryptoFail),
        };
        match opened {
            Ok(key_update) => Ok(Some(key_update)),
            Err(Error::CryptoFail) => {
                if first_initial {
                    self.spaces[0].open = None;
                    self.spaces[0].seal = None;
                }
                self.undo_version_switch();
                self.stats.dropped += 1;
                qlog!(self, q => q.packet_dropped(
                    now,
                    Some(ty),
                    hdr.packet_len,
                    crate::qlog::DropReason::PayloadDecryptError
                ));
                Ok(None)
            }
            Err(e) => {
                self.close_on_error(e, now);
                Err(e)
            }
        }
    }

    /// An authenticated packet: drops a duplicate, commits what the packet proves (the
    /// version, a server's first Initial, a key update, the peer's connection ID, the path),
    /// then processes its frames.
    fn commit_packet(
        &mut self,
        b: &[u8],
        hdr: &HeaderLayout,
        first_initial: bool,
        key_update: bool,
        now: Instant,
    ) -> Result<()> {
        let (pn, epoch, packet_len) = (hdr.pkt_num, hdr.ty.epoch(), hdr.packet_len);
        self.confirm_version_switch()?;
        if self.spaces[epoch.index()].acks.is_duplicate(pn) {
            self.stats.dropped += 1;
            qlog!(self, q => q.packet_dropped(
                now,
                Some(hdr.ty),
                packet_len,
                crate::qlog::DropReason::Duplicate
            ));
            return Ok(());
        }
        if first_initial {
            let (dcid, scid) = (hdr.dcid.get(b).to_vec(), hdr.scid.get(b).to_vec());
            self.on_first_client_initial(&dcid, &scid, hdr.version)?;
        }
        if key_update {
            self.on_peer_key_update(now);
        }
        // Only packets of the current phase mark where it began for the peer.
        if let Some(keys) = self
            .one_rtt
            .as_mut()
            .filter(|k| hdr.ty == Type::Short && hdr.key_phase == k.key_phase)
        {
            keys.first_recv_in_phase = Some(keys.first_recv_in_phase.map_or(pn, |p| p.min(pn)));
        }
        if !self.is_server && matches!(hdr.ty, Type::Initial | Type::Handshake) {
            let scid = hdr.scid.get(b).to_vec();
            self.learn_peer_cid(&scid);
        }
        if !self.accept_packet_path() {
            self.stats.dropped += 1;
            return Ok(());
        }
        self.on_authenticated_packet(b, hdr, epoch, packet_len, now)
    }

    /// Processes the frames of a packet that decrypted and is no duplicate, then records it
    /// (acknowledgement, idle timer, address validation) and lets TLS speak. `packet_len` is
    /// for qlog only.
    #[cfg_attr(not(feature = "qlog"), allow(unused_variables))]
    fn on_authenticated_packet(
        &mut self,
        b: &[u8],
        hdr: &HeaderLayout,
        epoch: Epoch,
        packet_len: usize,
        now: Instant,
    ) -> Result<()> {
        let pn = hdr.pkt_num;
        let payload = hdr_payload(b, hdr);
        let mut ack_eliciting = false;
        let mut non_probing = false;
        let mut carries_data = false;
        let mut immediate_ack = false;
        for frame in parse_all(payload, hdr.ty) {
            let frame = match frame {
                Ok(frame) => frame,
                Err(e) => {
                    self.close_on_error(e, now);
                    return Err(e);
                }
            };
            ack_eliciting |= frame.is_ack_eliciting();
            immediate_ack |= matches!(frame, crate::frame::Frame::ImmediateAck);
            carries_data |= matches!(
                frame,
                crate::frame::Frame::Stream { .. }
                    | crate::frame::Frame::Crypto { .. }
                    | crate::frame::Frame::Datagram { .. }
            );
            non_probing |= !matches!(
                frame,
                crate::frame::Frame::Padding { .. }
                    | crate::frame::Frame::PathChallenge { .. }
                    | crate::frame::Frame::PathResponse { .. }
                    | crate::frame::Frame::NewConnectionId { .. }
            );
            qlog!(self, q => q.received_frames().push_frame(&frame));
            if let Err(e) = self.process_frame(frame, epoch, now) {
                self.close_on_error(e, now);
                return Err(e);
            }
            if self.lifecycle.is_draining() {
                break;
            }
        }

        let largest_so_far = self.spaces[epoch.index()]
            .acks
            .largest_received()
            .is_none_or(|l| pn > l);
        let max_ack_delay = std::time::Duration::from_millis(self.local_tp.max_ack_delay);
        // Only a flow of data is held back by a held ACK; a lone control frame (a peer's
        // MAX_DATA while it receives) rides along with the next packet we send anyway.
        let sparse_gap = if carries_data {
            crate::ack_tracker::sparse_ack_gap(self.sender().rtt().smoothed_rtt())
        } else {
            Duration::MAX
        };
        let acks = &mut self.spaces[epoch.index()].acks;
        acks.on_packet_received(pn, ack_eliciting, now, max_ack_delay, sparse_gap);
        if immediate_ack {
            // draft-ietf-quic-ack-frequency-12 §5.
            acks.request_ack_now();
        }
        // Each processed packet of a datagram counts its IP header's codepoint (RFC 9000 §13.4.1).
        acks.on_ecn(self.recv_ecn);
        self.stats.recv += 1;
        if let Some(path) = self.recv_path.and_then(|id| self.paths.get_mut(id)) {
            path.recv_packets += 1;
        }
        if non_probing && largest_so_far && epoch == Epoch::Application {
            self.on_non_probing_packet(now);
        }
        self.settle_new_path(now);
        qlog!(self, q => q.packet_received_from_log(now, hdr.ty, pn, packet_len));
        self.lifecycle.on_packet_received(now, self.sender().pto());

        // A Handshake packet from the client proves it owns its address (RFC 9000 §8.1), and
        // the server no longer needs Initial packets (RFC 9001 §4.9.1).
        if self.is_server && hdr.ty == Type::Handshake {
            self.paths.active_mut().set_validated();
            self.recovery
                .set_amplification_limited(false, now, &self.paths.active().sender);
            self.discard_epoch(Epoch::Initial, now);
        }

        // Once the handshake is complete, TLS has something to say only after it read
        // CRYPTO data (a NewSessionTicket, say): most packets skip the question.
        if !self.handshake_complete || std::mem::take(&mut self.tls_fed) {
            if let Err(e) = self.drive_handshake() {
                self.close_on_tls_error(e, now);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Whether the keys that open packets of type `ty` are usable.
    fn keys_ready(&self, ty: Type) -> bool {
        match ty {
            Type::Initial => self.spaces[0].open.is_some(),
            Type::Handshake => self.spaces[1].open.is_some(),
            Type::ZeroRTT => self.zero_rtt.can_open(),
            // A server must not process 1-RTT packets before the handshake completes
            // (RFC 9001 §5.7), although it has the keys earlier.
            Type::Short => self.one_rtt.is_some() && (!self.is_server || self.handshake_complete),
            _ => false,
        }
    }

    fn hp_open(&self, ty: Type) -> Result<&dyn HeaderProtectionKey> {
        let key = match ty {
            Type::Initial => self.spaces[0].open.as_ref().map(|k| &*k.header),
            Type::Handshake => self.spaces[1].open.as_ref().map(|k| &*k.header),
            Type::ZeroRTT => self.zero_rtt.header(),
            Type::Short => self.one_rtt.as_ref().map(|k| &*k.hp_open),
            _ => None,
        };
        key.ok_or(Error::InvalidState)
    }

    /// Decrypts the payload in place. For 1-RTT packets picks the key by key phase (RFC 9001
    /// §6.3): the current key, the previous one for reordered packets, or the next one when
    /// the peer updated keys; returns whether it was the next one.
    fn open_payload(&mut self, b: &mut [u8], hdr: &HeaderLayout) -> Result<bool> {
        let key: &dyn PacketKey = match hdr.ty {
            Type::Initial => {
                &*self.spaces[0]
                    .open
                    .as_ref()
                    .ok_or(Error::InvalidState)?
                    .packet
            }
            Type::Handshake => {
                &*self.spaces[1]
                    .open
                    .as_ref()
                    .ok_or(Error::InvalidState)?
                    .packet
            }
            Type::ZeroRTT => self.zero_rtt.packet().ok_or(Error::InvalidState)?,
            Type::Short => {
                let keys = self.one_rtt.as_ref().ok_or(Error::InvalidState)?;
                if hdr.key_phase == keys.key_phase {
                    &*keys.open
                } else if let Some((prev, _)) = keys.prev_open.as_ref().filter(|_| {
                    // The old phase: reordered packets from before the peer switched, or,
                    // right after we initiated the update, everything until the peer follows.
                    keys.first_recv_in_phase.is_none_or(|f| hdr.pkt_num < f)
                }) {
                    &**prev
                } else {
                    let next = &*keys.next.as_ref().ok_or(Error::CryptoFail)?.1;
                    decrypt_pkt(b, hdr, next)?;
                    return Ok(true);
                }
            }
            _ => return Err(Error::InvalidPacket),
        };
        decrypt_pkt(b, hdr, key)?;
        Ok(false)
    }

    /// The peer moved to the next key phase: follow it (RFC 9001 §6.2).
    fn on_peer_key_update(&mut self, now: Instant) {
        let keep_prev = now + self.sender().pto() * 3;
        if let Some(keys) = self.one_rtt.as_mut() {
            keys.update(keep_prev);
            self.stats.peer_key_updates += 1;
        }
    }

    /// Closes after a TLS failure, with the TLS alert as CRYPTO_ERROR.
    pub(super) fn close_on_tls_error(&mut self, e: Error, now: Instant) {
        let e = match (e, self.tls.alert()) {
            (Error::TlsFail, Some(alert)) => Error::TlsAlert(alert),
            (e, _) => e,
        };
        self.close_on_error(e, now);
    }

    /// Processes packets that arrived before their keys, now that keys may be ready.
    fn replay_undecryptable(&mut self, now: Instant) -> Result<()> {
        if self.undecryptable.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.undecryptable);
        let mut still = Vec::new();
        let datagram_ecn = self.recv_ecn;
        for (mut packet, info, ecn) in pending {
            let ty = match HeaderLayout::parse(&packet, self.scid.len()) {
                Ok(hdr) => hdr.ty,
                Err(_) => continue,
            };
            if !self.keys_ready(ty) {
                still.push((packet, info, ecn));
                continue;
            }
            self.on_datagram_path(info, 0);
            self.recv_ecn = ecn;
            let result = self.recv_packet(&mut packet, info, now);
            self.recv_ecn = datagram_ecn;
            result?;
        }
        still.append(&mut self.undecryptable);
        still.truncate(MAX_UNDECRYPTABLE);
        self.undecryptable = still;
        Ok(())
    }
}

/// The decrypted payload of a packet, without the AEAD tag.
fn hdr_payload<'a>(b: &'a [u8], hdr: &HeaderLayout) -> &'a [u8] {
    let start = hdr.payload_offset();
    let end = hdr.packet_len.saturating_sub(crate::crypto::TAG_LEN);
    b.get(start..end).unwrap_or(&[])
}
