//! The send pipeline: which packet number spaces have something to say, packet assembly with
//! frames written straight into the output buffer, coalescing, padding, sealing in place.

use std::time::Instant;

use octets::OctetsMut;

use super::qlog::qlog;
use super::sent_frames::{SentFrame, SentFrames};
use super::{Connection, SendInfo, HANDSHAKE_ACK_DELAY_EXPONENT};
use crate::config::MIN_UDP_PAYLOAD_SIZE;
use crate::error::{Error, Result};
use crate::frame::{self, Frame};
use crate::packet::{encode_pkt_num_len, encrypt_pkt, ConnectionId, Epoch, Header, Type};
use crate::recovery::SentPacket;
use crate::stream::ControlFrame;
use crate::tls::{HeaderProtectionKey, PacketKey};

/// Smallest room worth starting a packet in: header, a few frame bytes and the AEAD tag.
pub(super) const MIN_PACKET_ROOM: usize = 64;

/// What `write_packet` produced.
pub(super) struct Written {
    pub(super) len: usize,
    ack_eliciting: bool,
}

/// A packet `write_packet` just sealed, for `on_packet_sealed`.
struct Sealed {
    pn: u64,
    len: usize,
    ack_eliciting: bool,
    /// PADDING bytes added after the frames.
    padding: usize,
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Writes one datagram to send at `now` into `out`.
    pub fn send_at(&mut self, out: &mut [u8], now: Instant) -> Result<(usize, SendInfo)> {
        self.send_on_path_at(out, None, None, now)
    }

    /// Writes one datagram to send at `now` on a path matching `from` and `to` (any when
    /// `None`); see [`Connection::send_on_path`].
    pub fn send_on_path_at(
        &mut self,
        out: &mut [u8],
        from: Option<std::net::SocketAddr>,
        to: Option<std::net::SocketAddr>,
        now: Instant,
    ) -> Result<(usize, SendInfo)> {
        let path = self.pick_send_path(from, to)?;
        if path != self.paths.active_id() {
            match self.send_probe(out, path, now) {
                // A probe that cannot go now (its path's amplification budget is spent) must
                // not hold up the active path.
                Err(Error::Done) if from.is_none() && to.is_none() => {}
                result => return result,
            }
        }
        let path = self.paths.active_id();
        self.send_path = path;
        let result = self.send_active(out, now);
        self.track_bytes_in_flight(now);
        result
    }

    /// Writes one datagram for the active path: its size limit, then its packets
    /// (`write_coalesced`), then what sending it means (`on_active_datagram_sent`).
    fn send_active(&mut self, out: &mut [u8], now: Instant) -> Result<(usize, SendInfo)> {
        if out.is_empty() {
            return Err(Error::BufferTooShort);
        }
        self.last_now = Some(now);
        if self.lifecycle.is_closed() || self.lifecycle.is_draining() {
            return Err(Error::Done);
        }
        self.lifecycle.start_idle_timer(now, self.sender().pto());

        if !self.is_server && self.stats.sent == 0 {
            self.drive_handshake()?;
        }

        let (limit, pmtu_probe) = self.datagram_limit(out.len(), now);
        if limit < MIN_PACKET_ROOM {
            return Err(Error::Done);
        }
        let (written, eliciting) = self.write_coalesced(&mut out[..limit], pmtu_probe, now)?;
        if written == 0 {
            // Nothing to send although the window has room: the application is the limit, and
            // the window must not grow on ACKs until it is used again (RFC 9002 §7.8).
            if self.recovery.cwnd_available(&self.paths.active().sender)
                >= self.max_send_udp_payload_size
                && !self.recovery.app_limited()
            {
                self.recovery
                    .set_app_limited(true, now, &mut self.paths.active_mut().sender);
            }
            return Err(Error::Done);
        }
        Ok((
            written,
            self.on_active_datagram_sent(written, eliciting, now),
        ))
    }

    /// The size of the next datagram on the active path, and whether it is a PMTU probe (which
    /// goes out alone, in a datagram of the probed size).
    fn datagram_limit(&mut self, out_len: usize, now: Instant) -> (usize, bool) {
        let pmtu_probe = self.pmtu_probe_due(out_len, now);
        let mut limit = match pmtu_probe {
            Some(size) => size,
            None => out_len.min(self.pmtud_datagram_limit()),
        };
        if let Some(allowance) = self.paths.active().amplification_allowance() {
            // Anti-amplification: at most three times what the peer sent from the address
            // until it is validated (RFC 9000 §8.1, §9.3.1).
            let allowance = usize::try_from(allowance).unwrap_or(usize::MAX);
            self.recovery.set_amplification_limited(
                allowance < limit,
                now,
                &self.paths.active().sender,
            );
            limit = limit.min(allowance);
        }
        (limit, pmtu_probe.is_some())
    }

    /// Writes the packets of one datagram into `out` (all of it may be used): a PMTU probe
    /// alone, or Initial, Handshake and 1-RTT packets coalesced. Returns the bytes written and
    /// whether any packet was ack-eliciting.
    fn write_coalesced(
        &mut self,
        out: &mut [u8],
        pmtu_probe: bool,
        now: Instant,
    ) -> Result<(usize, bool)> {
        let limit = out.len();
        let mut written = 0;
        let mut eliciting = false;
        let mut has_initial = false;
        let mut has_eliciting_initial = false;
        let mut epochs: &[Epoch] = &[Epoch::Initial, Epoch::Handshake, Epoch::Application];
        if pmtu_probe {
            written = self.write_pmtu_probe(&mut out[..limit], now)?;
            eliciting = true;
            epochs = &[];
        }
        for (i, &epoch) in epochs.iter().enumerate() {
            if !self.has_pending(epoch, now) {
                continue;
            }
            if limit - written < MIN_PACKET_ROOM {
                break;
            }
            let is_last = !epochs[i + 1..].iter().any(|&e| self.has_pending(e, now));
            // Datagrams carrying Initial packets are padded to 1200 bytes: all of the client's,
            // and the server's ack-eliciting ones (RFC 9000 §14.1).
            let pad_to = if is_last && (has_initial || epoch == Epoch::Initial) {
                MIN_UDP_PAYLOAD_SIZE.min(limit)
            } else {
                0
            };
            let pad_to = if self.is_server && !has_eliciting_initial && epoch != Epoch::Initial {
                0
            } else {
                pad_to
            };
            match self.write_packet(epoch, &mut out[written..limit], written, pad_to, now) {
                Ok(w) => {
                    written += w.len;
                    eliciting |= w.ack_eliciting;
                    if epoch == Epoch::Initial {
                        has_initial = true;
                        has_eliciting_initial |= w.ack_eliciting;
                    }
                    // A client discards its Initial keys once it sends a Handshake packet
                    // (RFC 9001 §4.9.1).
                    if epoch == Epoch::Handshake && !self.is_server {
                        self.discard_epoch(Epoch::Initial, now);
                    }
                }
                Err(Error::Done) => continue,
                Err(e) => return Err(e),
            }
            // A short header packet has no Length: it must end the datagram.
            if epoch == Epoch::Application {
                break;
            }
        }

        Ok((written, eliciting))
    }

    /// A datagram of `written` bytes leaves on the active path: closing, path and app-limited
    /// state, the pacer's release time (ack-eliciting datagrams only) and ECN.
    fn on_active_datagram_sent(
        &mut self,
        written: usize,
        eliciting: bool,
        now: Instant,
    ) -> SendInfo {
        if self.lifecycle.close_pending() {
            self.lifecycle.on_close_sent();
        }
        self.on_datagram_sent(self.send_path, written);
        // Data went out: the application is not the limit (waiting for the pacer is not being
        // application-limited, RFC 9002 §7.8).
        if eliciting && self.recovery.app_limited() {
            self.recovery
                .set_app_limited(false, now, &mut self.paths.active_mut().sender);
        }
        // Pacing: ack-eliciting datagrams leave at the pacer's release time; ACK-only and close
        // datagrams go at once.
        let at = if eliciting {
            self.sender_mut().pace(now, written)
        } else {
            now
        };
        let ecn = self.paths.active().ecn.codepoint();
        let pto = self.sender().pto();
        let ecn_change = self
            .paths
            .active_mut()
            .ecn
            .on_datagram_sent(ecn != 0, now, pto);
        self.log_ecn_change(ecn_change, now);
        let path = self.paths.active();
        SendInfo {
            from: path.local,
            to: path.peer,
            at,
            ecn,
        }
    }

    /// Writes one 1-RTT packet in `buf` (a probe on another path), padded to `pad_to`.
    pub(super) fn write_probe_packet(
        &mut self,
        buf: &mut [u8],
        pad_to: usize,
        now: Instant,
    ) -> Result<usize> {
        self.write_packet(Epoch::Application, buf, 0, pad_to, now)
            .map(|w| w.len)
    }

    /// The keys to seal packets of `epoch` with, as the packet type they make.
    fn sealing_type(&self, epoch: Epoch) -> Option<Type> {
        match epoch {
            Epoch::Initial => self.spaces[0].seal.as_ref().map(|_| Type::Initial),
            Epoch::Handshake => self.spaces[1].seal.as_ref().map(|_| Type::Handshake),
            Epoch::Application => {
                if self.one_rtt.is_some() {
                    Some(Type::Short)
                } else if !self.is_server && self.zero_rtt.is_some() {
                    Some(Type::ZeroRTT)
                } else {
                    None
                }
            }
        }
    }

    pub(super) fn is_probing(&self, epoch: Epoch) -> bool {
        self.recovery.pending_probes(epoch) > 0
            || (self.anti_deadlock_probe && epoch == self.anti_deadlock_epoch())
    }

    /// The space of a client's anti-deadlock probe (RFC 9002 §6.2.2.1).
    fn anti_deadlock_epoch(&self) -> Epoch {
        if self.spaces[Epoch::Handshake.index()].seal.is_some() {
            Epoch::Handshake
        } else {
            Epoch::Initial
        }
    }

    /// Whether a packet of `epoch` has something to carry now.
    fn has_pending(&self, epoch: Epoch, now: Instant) -> bool {
        let space = &self.spaces[epoch.index()];
        let Some(ty) = self.sealing_type(epoch) else {
            return false;
        };
        if space.discarded {
            return false;
        }
        if self.lifecycle.close_pending() {
            return true;
        }
        if self.lifecycle.is_closing_or_draining() {
            return false;
        }
        if ty != Type::ZeroRTT && space.acks.should_send_ack(now) {
            return true;
        }
        if ty == Type::Short && self.paths.active().has_path_frames() {
            return true;
        }
        if self.paths.active().ack_eliciting_due() && self.ack_eliciting_epoch() == Some(epoch) {
            return true;
        }
        if self.is_probing(epoch) {
            return true;
        }
        if self.recovery.cwnd_available(&self.paths.active().sender) == 0 {
            return false;
        }
        if space.crypto_send.has_pending() {
            return true;
        }
        epoch == Epoch::Application && self.app_has_pending(ty)
    }

    fn app_has_pending(&self, ty: Type) -> bool {
        let one_rtt = ty == Type::Short;
        (one_rtt
            && (self.handshake_done_pending && self.is_server
                || self.paths.active().has_path_frames()))
            || self.flow.max_data_pending()
            || (one_rtt && (self.cids.has_frames_to_send() || self.has_datagrams_to_send()))
            || self.streams.has_control_frames()
            || (self.streams.has_data_to_send() && self.flow.tx_max_data() > 0)
    }

    /// Builds and seals one packet of `epoch` in `buf`. `datagram_off` is how much of the
    /// datagram precedes it; the packet is padded so the datagram reaches `pad_to` bytes.
    pub(super) fn write_packet(
        &mut self,
        epoch: Epoch,
        buf: &mut [u8],
        datagram_off: usize,
        pad_to: usize,
        now: Instant,
    ) -> Result<Written> {
        let ty = self.sealing_type(epoch).ok_or(Error::Done)?;
        if ty == Type::Short {
            self.maybe_update_keys_for_limit(now);
        }
        let pn = self.spaces[epoch.index()].next_pn;
        let pn_len = encode_pkt_num_len(pn, self.recovery.largest_acked(epoch));
        let tag_len = crate::crypto::TAG_LEN;
        let pn_offset = self.write_header(ty, buf, pn, pn_len)?;
        let hdr_len = pn_offset + pn_len;
        if buf.len() < hdr_len + tag_len + 4 {
            return Err(Error::Done);
        }
        let payload_cap = buf.len() - hdr_len - tag_len;

        let mut frames = self.scratch.frames();
        let (payload_len, ack_eliciting) = {
            let payload = &mut buf[hdr_len..hdr_len + payload_cap];
            self.write_frames(epoch, ty, payload, &mut frames, now)?
        };

        // Datagrams with PATH_CHALLENGE or PATH_RESPONSE are expanded to 1200 bytes as far as
        // the room (the amplification limit) allows (RFC 9000 §8.2.1, §8.2.2).
        let pad_to = if std::mem::take(&mut self.pad_for_path_frames) {
            pad_to.max(MIN_UDP_PAYLOAD_SIZE.min(datagram_off + buf.len()))
        } else {
            pad_to
        };
        // Pad for the header protection sample (RFC 9001 §5.4.2) and the datagram minimum.
        let min_payload = 4usize.saturating_sub(pn_len);
        let for_datagram = pad_to.saturating_sub(datagram_off + hdr_len + tag_len);
        let padded_len = payload_len
            .max(min_payload)
            .max(for_datagram)
            .min(payload_cap);
        if payload_len == 0 && padded_len == 0 {
            self.scratch.put_unused_frames(frames);
            qlog!(self, q => q.sent_frames().clear());
            return Err(Error::Done);
        }
        buf[hdr_len + payload_len..hdr_len + padded_len].fill(0);

        let (hp, key) = self.seal_keys(ty)?;
        let len = encrypt_pkt(buf, pn, pn_offset, pn_len, padded_len, hp, key)?;

        let sealed = Sealed {
            pn,
            len,
            ack_eliciting,
            padding: padded_len.saturating_sub(payload_len),
        };
        self.on_packet_sealed(epoch, ty, sealed, frames, now)
    }

    /// Writes the header of a packet of type `ty` numbered `pn` (in `pn_len` bytes) at the
    /// start of `buf`; returns the offset of the packet number.
    fn write_header(&mut self, ty: Type, buf: &mut [u8], pn: u64, pn_len: usize) -> Result<usize> {
        // The header borrows the token for the write and hands it back: no copy per Initial.
        let token = if ty == Type::Initial {
            self.token.take()
        } else {
            None
        };
        let key_phase = self.one_rtt.as_ref().is_some_and(|k| k.key_phase);
        // A probe on another path carries that path's connection ID (RFC 9000 §9.5).
        let dcid = match self.paths.get(self.send_path) {
            Some(p) if self.send_path != self.paths.active_id() => &p.dcid,
            _ => &self.dcid,
        };
        let mut hdr = match ty {
            Type::Short => Header::new_short(ConnectionId::from_ref(dcid), key_phase),
            _ => Header::new_long(
                ty,
                // 0-RTT stays in the version the client started in (RFC 9369 §4.1).
                match (ty, self.compat_original) {
                    (Type::ZeroRTT, Some(original)) if !self.is_server => original,
                    _ => self.version,
                },
                ConnectionId::from_ref(&self.dcid),
                ConnectionId::from_ref(&self.scid),
                token,
            ),
        };
        hdr.pkt_num = pn;
        hdr.pkt_num_len = pn_len;
        let mut b = OctetsMut::with_slice(buf);
        let written = hdr.to_bytes(&mut b).map_err(|_| Error::Done);
        if hdr.token.is_some() {
            self.token = hdr.token.take();
        }
        written
    }

    /// Records a packet just sealed: its number, key-phase counters, statistics, recovery (a
    /// probe on another path stays out of it), timers and qlog.
    fn on_packet_sealed(
        &mut self,
        epoch: Epoch,
        ty: Type,
        sealed: Sealed,
        mut frames: SentFrames,
        now: Instant,
    ) -> Result<Written> {
        let Sealed {
            pn,
            len,
            ack_eliciting,
            padding,
        } = sealed;
        let padded = padding > 0;
        self.spaces[epoch.index()].next_pn += 1;
        // Only 1-RTT numbers are skipped: the handshake is short and its spaces are not worth a
        // gap's immediate ACK.
        if ty == Type::Short && self.pn_skipper.on_packet_sent() {
            self.spaces[epoch.index()].next_pn += 1;
        }
        if let Some(keys) = self.one_rtt.as_mut().filter(|_| ty == Type::Short) {
            keys.first_sent_in_phase.get_or_insert(pn);
            keys.sealed_in_phase += 1;
        }
        // A probe on another path stays out of the active path's congestion control and loss
        // recovery (RFC 9000 §9.4): its own timer repeats the challenge.
        let probe = self.probe_only;
        if ack_eliciting {
            if let Some(path) = self.paths.get_mut(self.send_path) {
                path.on_ack_eliciting_sent();
            }
        }
        let in_flight = (ack_eliciting || padded) && !probe;
        let ack_eliciting = ack_eliciting && !probe;
        if frames.retransmission {
            self.stats.retrans += 1;
            // Probes are counted before recovery hears of the packet and takes one off.
            if self.recovery.pending_probes(epoch) > 0 {
                self.stats.retrans_in_probes += 1;
            } else {
                self.stats.retrans_after_loss += 1;
            }
        }
        // The whole datagram carries one codepoint: marking never changes within `send_at`.
        frames.ecn_marked = self.paths.active().ecn.marking() && !self.probe_only;
        frames.path = self.paths.get(self.send_path).map_or(0, |p| p.uid());
        if frames.ecn_marked {
            self.ecn.on_marked_sent(epoch);
            self.stats.ecn_ect0_sent += 1;
        }
        let mut pkt = SentPacket::new(pn, now, len, ack_eliciting, in_flight, frames);
        pkt.pmtu_probe = self.pmtu_probe_building;
        self.recovery
            .on_packet_sent(pkt, epoch, now, &mut self.paths.active_mut().sender)?;
        if ack_eliciting {
            self.lifecycle
                .on_ack_eliciting_sent(now, self.sender().pto());
            if self.anti_deadlock_probe && epoch == self.anti_deadlock_epoch() {
                self.anti_deadlock_probe = false;
            }
        }
        self.stats.sent += 1;
        qlog!(self, q => {
            if padded {
                q.sent_frames().push_padding(padding);
            }
            q.packet_sent_from_log(now, ty, pn, len)
        });
        self.qlog_metrics(now);
        Ok(Written { len, ack_eliciting })
    }

    fn seal_keys(&self, ty: Type) -> Result<(&dyn HeaderProtectionKey, &dyn PacketKey)> {
        let keys = match ty {
            Type::Initial => self.spaces[0].seal.as_ref(),
            Type::Handshake => self.spaces[1].seal.as_ref(),
            Type::ZeroRTT => self.zero_rtt.as_ref(),
            Type::Short => {
                let k = self.one_rtt.as_ref().ok_or(Error::InvalidState)?;
                return Ok((&*k.hp_seal, &*k.seal));
            }
            _ => None,
        };
        let keys = keys.ok_or(Error::InvalidState)?;
        Ok((&*keys.header, &*keys.packet))
    }

    /// Writes the frames of one packet into `payload`; returns the bytes written and whether
    /// the packet is ack-eliciting.
    fn write_frames(
        &mut self,
        epoch: Epoch,
        ty: Type,
        payload: &mut [u8],
        frames: &mut SentFrames,
        now: Instant,
    ) -> Result<(usize, bool)> {
        if self.pmtu_probe_building {
            return self.write_probe_ping(payload, frames);
        }
        let cap = payload.len();
        let mut b = OctetsMut::with_slice(payload);
        if self.probe_only {
            let mut eliciting = self.write_path_frames(self.send_path, &mut b, frames, now)?;
            eliciting |= self.write_requested_ping(eliciting, &mut b, frames)?;
            return Ok((b.off(), eliciting));
        }

        let probing = self.is_probing(epoch);
        let can_send_data =
            probing || self.recovery.cwnd_available(&self.paths.active().sender) > 0;
        // ACK first: it is never limited by the congestion window. 0-RTT packets cannot carry
        // one (RFC 9000 §12.4). An ACK that is only riding along (no ack-eliciting packet is
        // waiting for it, RFC 9000 §13.2.1) goes last instead when its bytes are all that keeps
        // the lost stream range this packet repairs from fitting whole: the range then goes in
        // one frame, as it did in the packet that lost it, rather than leaving a sliver that
        // costs a second repair packet.
        let ack_owed = ty != Type::ZeroRTT && self.spaces[epoch.index()].acks.can_piggyback();
        let mut ack_last = None;
        if ack_owed {
            let ack_len = self.encode_ack(epoch, &mut b, now);
            let splits =
                ack_len > 0 && can_send_data && self.ack_splits_repair(epoch, cap, ack_len);
            // An ACK only riding along waits behind repairs, even several in a row (each one
            // would otherwise shift every following repair by the ACK's bytes); one that is
            // owed (RFC 9000 §13.2.1) goes first.
            if splits && !self.spaces[epoch.index()].acks.should_send_ack(now) {
                // Nothing else was written yet: start the payload over without the ACK.
                b = OctetsMut::with_slice(payload);
                ack_last = Some(ack_len);
            } else if ack_len > 0 {
                self.on_ack_written(epoch, frames, now);
            }
        }

        if self.lifecycle.close_pending() {
            self.write_close(epoch, &mut b, frames)?;
            return Ok((b.off(), false));
        }

        // PATH_CHALLENGE/PATH_RESPONSE go whatever the window: the first packet on a new path
        // carries the challenge (RFC 9000 §9.3), and they are a few bytes.
        let path_frames = epoch == Epoch::Application
            && ty == Type::Short
            && self.write_path_frames(self.send_path, &mut b, frames, now)?;
        if !can_send_data {
            let ping = self.write_requested_ping(path_frames, &mut b, frames)?;
            return Ok((b.off(), path_frames || ping));
        }
        // The congestion window bounds ack-eliciting bytes (probes may exceed it, RFC 9002
        // §7.5): leave the packet shorter rather than overshoot.
        let room_limit = if probing {
            cap
        } else {
            let overhead = cap.saturating_sub(b.cap()) + 64;
            (self.recovery.cwnd_available(&self.paths.active().sender) + overhead).min(cap)
        };
        let mut eliciting = path_frames;
        eliciting |= self.write_data_frames((epoch, ty), probing, &mut b, room_limit, frames)?;
        eliciting |= self.write_requested_ping(eliciting, &mut b, frames)?;
        // Only whole: a truncated ACK would drop ranges the peer never heard of once this
        // packet is acknowledged. If it does not fit, a later packet carries it.
        if let Some(len) = ack_last {
            if len <= b.cap() && self.encode_ack(epoch, &mut b, now) > 0 {
                self.on_ack_written(epoch, frames, now);
            }
        }
        Ok((b.off(), eliciting))
    }

    /// The frames the congestion window bounds, in order: control frames, CRYPTO, DATAGRAM,
    /// STREAM, and a PING if a probe has nothing else to elicit an ACK; returns whether any
    /// is ack-eliciting. Nothing goes past `room_limit` bytes of the packet.
    fn write_data_frames(
        &mut self,
        (epoch, ty): (Epoch, Type),
        probing: bool,
        b: &mut OctetsMut,
        room_limit: usize,
        frames: &mut SentFrames,
    ) -> Result<bool> {
        let mut eliciting = false;
        if probing {
            self.refill_probe(epoch, ty);
        }
        if epoch == Epoch::Application && ty == Type::Short {
            eliciting |= self.write_app_control(b, frames)?;
        } else if epoch == Epoch::Application {
            eliciting |= self.write_stream_control(b, frames)?;
        }
        eliciting |= self.write_crypto(epoch, b, room_limit, frames)?;
        if ty == Type::Short {
            eliciting |= self.write_datagrams(b, room_limit, frames)?;
        }
        if epoch == Epoch::Application {
            eliciting |= self.write_streams(b, room_limit, frames)?;
        }
        if probing && !eliciting && b.cap() > 0 {
            write_ping(self, b, frames)?;
            eliciting = true;
        }
        Ok(eliciting)
    }

    /// A PING when the application asked for an ack-eliciting packet on the path being sent
    /// on (`send_ack_eliciting`) and the packet has no other ack-eliciting frame.
    fn write_requested_ping(
        &mut self,
        eliciting: bool,
        b: &mut OctetsMut,
        frames: &mut SentFrames,
    ) -> Result<bool> {
        let due = self
            .paths
            .get(self.send_path)
            .is_some_and(crate::path::Path::ack_eliciting_due);
        if eliciting || !due || b.cap() == 0 {
            return Ok(false);
        }
        write_ping(self, b, frames)?;
        Ok(true)
    }

    /// The packet number space an ack-eliciting packet asked for by the application goes
    /// in: the highest one with keys to seal.
    pub(super) fn ack_eliciting_epoch(&self) -> Option<Epoch> {
        [Epoch::Application, Epoch::Handshake, Epoch::Initial]
            .into_iter()
            .find(|&e| !self.spaces[e.index()].discarded && self.sealing_type(e).is_some())
    }

    /// Whether an ACK of `ack_len` bytes at the front of a packet with `cap` payload bytes
    /// would split the lost stream range the packet is about to repair, which would fit whole
    /// without it.
    fn ack_splits_repair(&self, epoch: Epoch, cap: usize, ack_len: usize) -> bool {
        if epoch != Epoch::Application || self.lifecycle.close_pending() {
            return false;
        }
        let Some(id) = self.streams.next_stream_to_send() else {
            return false;
        };
        if !self.streams.next_emit_is_repair(id) {
            return false;
        }
        let Some((offset, ready)) = self.streams.peek_emit(id) else {
            return false;
        };
        let ready = usize::try_from(ready).unwrap_or(usize::MAX);
        let frame_len = frame::stream_header_len(id, offset, ready).saturating_add(ready);
        frame_len <= cap && frame_len > cap.saturating_sub(ack_len)
    }

    /// Encodes the ACK frame of `epoch` if it fits (dropping the oldest ranges if needed);
    /// returns its length, 0 if none was written. [`Connection::on_ack_written`] commits it.
    fn encode_ack(&self, epoch: Epoch, b: &mut OctetsMut, now: Instant) -> usize {
        let acks = &self.spaces[epoch.index()].acks;
        let exponent = if epoch == Epoch::Application {
            self.local_tp.ack_delay_exponent
        } else {
            HANDSHAKE_ACK_DELAY_EXPONENT
        };
        let delay = acks.ack_delay(now).as_micros() as u64 >> exponent;
        let ecn = Self::ack_ecn(acks);
        let max_len = b.cap();
        frame::encode_ack(acks.ranges(), delay, ecn.as_ref(), max_len, b).unwrap_or(0)
    }

    fn ack_ecn(acks: &crate::ack_tracker::AckTracker) -> Option<frame::EcnCounts> {
        acks.ecn_counts().map(|c| frame::EcnCounts {
            ect0: c.ect0,
            ect1: c.ect1,
            ecn_ce: c.ce,
        })
    }

    /// The ACK frame just encoded goes out: record it in the packet and in qlog (`now` dates
    /// the qlog event: unused without the feature).
    #[cfg_attr(not(feature = "qlog"), allow(unused_variables))]
    fn on_ack_written(&mut self, epoch: Epoch, frames: &mut SentFrames, now: Instant) {
        let space = &mut self.spaces[epoch.index()];
        qlog!(self, q => q.sent_frames().push_ack(
            space.acks.ranges(),
            space.acks.ack_delay(now),
            Self::ack_ecn(&space.acks)
        ));
        if let Some(largest) = space.acks.largest_received() {
            frames.push(SentFrame::Ack { largest });
        }
        space.acks.on_ack_sent();
        self.stats.ack_frames_sent += 1;
    }

    /// CONNECTION_CLOSE. In Initial and Handshake packets an application close becomes a
    /// transport close with APPLICATION_ERROR and no reason (RFC 9000 §10.2.3).
    fn write_close(
        &mut self,
        epoch: Epoch,
        b: &mut OctetsMut,
        frames: &mut SentFrames,
    ) -> Result<()> {
        let Some(err) = self.lifecycle.local_error() else {
            return Ok(());
        };
        let frame = if err.is_app && epoch == Epoch::Application {
            Frame::ApplicationClose {
                error_code: err.error_code,
                reason: &err.reason,
            }
        } else if err.is_app {
            Frame::ConnectionClose {
                error_code: crate::error::WireErrorCode::ApplicationError as u64,
                frame_type: 0,
                reason: &[],
            }
        } else {
            Frame::ConnectionClose {
                error_code: err.error_code,
                frame_type: 0,
                reason: &err.reason,
            }
        };
        if frame.wire_len() <= b.cap() {
            frame.to_bytes(b)?;
            frames.push(SentFrame::Other);
            qlog!(self, q => q.sent_frames().push_frame(&frame));
        }
        Ok(())
    }

    /// Gives a probe packet the handshake's unacknowledged data to carry again: every probe,
    /// not only the first of the two a PTO sends (RFC 9002 §6.2.4: probes SHOULD carry data,
    /// and two guard against a single lost datagram), and without waiting for the packets
    /// that carried it to be declared lost, which takes an acknowledgment that may never come.
    /// In the handshake spaces that is the CRYPTO data; in 1-RTT the CRYPTO data (tickets)
    /// and the server's HANDSHAKE_DONE until acknowledged. With PING-only probes, a client
    /// whose first probe of each PTO was lost sent its ClientHello in vain for a minute, and a
    /// server whose HANDSHAKE_DONE was lost probed with PINGs while the client, unconfirmed,
    /// could only keep probing its Handshake space (both under 30 % loss, in
    /// tests_handshake_loss).
    ///
    /// In 1-RTT the tickets go again only when no stream data waits: they complete nothing,
    /// and repeated in both probes of every PTO they take the room the probes' share of the
    /// body was counted on (`requeue_stream_for_probes`); with BoringSSL's tickets (about
    /// 400 bytes against rustls's 160) a 4 kB response stalled past 30 s.
    fn refill_probe(&mut self, epoch: Epoch, ty: Type) {
        let tickets_may_wait = epoch == Epoch::Application && self.streams.has_data_to_send();
        let crypto = &mut self.spaces[epoch.index()].crypto_send;
        if !crypto.has_pending() && !tickets_may_wait {
            crypto.resend_all_unacked();
        }
        if ty == Type::Short
            && self.is_server
            && self.handshake_complete
            && !self.handshake_done_acked
        {
            self.handshake_done_pending = true;
        }
    }

    /// HANDSHAKE_DONE, MAX_DATA, DATA_BLOCKED and stream control frames.
    fn write_app_control(&mut self, b: &mut OctetsMut, frames: &mut SentFrames) -> Result<bool> {
        let mut eliciting = false;
        eliciting |= self.write_ack_frequency_frames(b, frames)?;
        if self.is_server && self.handshake_done_pending && b.cap() >= 1 {
            b.put_u8(0x1e)?;
            frames.push(SentFrame::HandshakeDone);
            qlog!(self, q => q.sent_frames().push_frame(&Frame::HandshakeDone));
            self.handshake_done_pending = false;
            eliciting = true;
        }
        eliciting |= self.write_cid_frames(b, frames)?;
        eliciting |= self.write_stream_control(b, frames)?;
        Ok(eliciting)
    }

    /// MAX_DATA, DATA_BLOCKED and the stream map's control frames (allowed in 0-RTT too).
    fn write_stream_control(&mut self, b: &mut OctetsMut, frames: &mut SentFrames) -> Result<bool> {
        let mut eliciting = false;
        let now = self.last_now;
        if let Some(max) = self.flow.max_data_to_send(now) {
            let frame = Frame::MaxData { max };
            if frame.wire_len() <= b.cap() {
                frame.to_bytes(b)?;
                frames.push(SentFrame::MaxData);
                qlog!(self, q => q.sent_frames().push_frame(&frame));
                self.flow.on_max_data_sent();
                eliciting = true;
            }
        }
        let streams = &self.streams;
        if let Some(limit) = self.flow.data_blocked_due(|| streams.has_data_to_send()) {
            let frame = Frame::DataBlocked { limit };
            if frame.wire_len() <= b.cap() {
                frame.to_bytes(b)?;
                frames.push(SentFrame::DataBlocked);
                self.stats.data_blocked_sent_count += 1;
                qlog!(self, q => q.sent_frames().push_frame(&frame));
                self.flow.on_data_blocked_sent(limit);
                eliciting = true;
            }
        }
        while let Some(cf) = self.streams.next_control_frame() {
            let frame = control_frame(&cf);
            if frame.wire_len() > b.cap() {
                break;
            }
            frame.to_bytes(b)?;
            if let ControlFrame::StreamDataBlocked { .. } = cf {
                self.stats.stream_data_blocked_sent_count += 1;
            }
            self.streams.on_control_frame_sent(&cf);
            frames.push(SentFrame::Control(cf));
            qlog!(self, q => q.sent_frames().push_frame(&frame));
            eliciting = true;
        }
        Ok(eliciting)
    }

    /// CRYPTO frames: lost data first, then new data.
    fn write_crypto(
        &mut self,
        epoch: Epoch,
        b: &mut OctetsMut,
        room_limit: usize,
        frames: &mut SentFrames,
    ) -> Result<bool> {
        let mut eliciting = false;
        let start = b.off();
        loop {
            let used = b.off() - start;
            let room = b.cap().min(room_limit.saturating_sub(used));
            // Type byte, offset (up to 8 bytes) and a 2-byte length.
            let max_data = room.saturating_sub(1 + 8 + 2);
            if max_data == 0 {
                break;
            }
            let crypto = &mut self.spaces[epoch.index()].crypto_send;
            let sent_before = crypto.sent_off();
            let Some((offset, data)) = crypto.next_chunk(max_data) else {
                break;
            };
            frames.retransmission |= offset < sent_before;
            frame::encode_crypto_header(offset, data.len(), b)?;
            b.put_bytes(data)?;
            let len = data.len() as u64;
            frames.push(SentFrame::Crypto { offset, len });
            qlog!(self, q => q.sent_frames().push_crypto(offset, len));
            eliciting = true;
        }
        Ok(eliciting)
    }

    /// STREAM frames in priority order, data copied from the send buffers straight into the
    /// packet.
    fn write_streams(
        &mut self,
        b: &mut OctetsMut,
        room_limit: usize,
        frames: &mut SentFrames,
    ) -> Result<bool> {
        let mut eliciting = false;
        let start = b.off();
        while let Some(id) = self.streams.next_stream_to_send() {
            let used = b.off() - start;
            let room = b.cap().min(room_limit.saturating_sub(used));
            let Some((offset, ready)) = self.streams.peek_emit(id) else {
                break;
            };
            // A frame whose data fills the rest of the packet needs no Length field: the 2 bytes
            // it would take carry data instead (0.14 % of a bulk transfer). Only when nothing
            // can follow it (no room limit below the packet's end, no ACK or padding after).
            let to_end_hdr = frame::stream_header_len_to_end(id, offset);
            let to_end = room == b.cap()
                && room > to_end_hdr
                && usize::try_from(ready).unwrap_or(usize::MAX) >= room - to_end_hdr;
            let want = usize::try_from(ready).unwrap_or(usize::MAX).min(room);
            let hdr_max = if to_end {
                to_end_hdr
            } else {
                frame::stream_header_len(id, offset, want)
            };
            if room <= hdr_max {
                break;
            }
            let (emitted, hdr_len) = {
                let rest = b.as_mut();
                let data_area = &mut rest[hdr_max..room];
                let emitted = match self.streams.emit(id, data_area) {
                    Ok(e) => e,
                    Err(Error::Done) => break,
                    Err(e) => return Err(e),
                };
                if to_end {
                    // emit() sends what peek_emit() announced, so the area is full.
                    if hdr_max + emitted.len != room || emitted.offset != offset {
                        return Err(Error::InvalidState);
                    }
                    (emitted, hdr_max)
                } else {
                    let hdr_len = frame::stream_header_len(id, emitted.offset, emitted.len);
                    if hdr_len < hdr_max {
                        // The header came out shorter than reserved: close the gap.
                        rest.copy_within(hdr_max..hdr_max + emitted.len, hdr_len);
                    }
                    (emitted, hdr_len)
                }
            };
            if to_end {
                frame::encode_stream_header_to_end(
                    id,
                    emitted.offset,
                    emitted.len,
                    emitted.fin,
                    b,
                )?;
            } else {
                frame::encode_stream_header(id, emitted.offset, emitted.len, emitted.fin, b)?;
                debug_assert_eq!(
                    hdr_len,
                    frame::stream_header_len(id, emitted.offset, emitted.len)
                );
            }
            b.skip(emitted.len)?;
            frames.retransmission |= emitted.retransmission;
            if emitted.retransmission {
                self.stats.stream_resent_bytes += emitted.len as u64;
            } else {
                self.flow.on_emitted(emitted.len as u64);
            }
            frames.push(SentFrame::Stream {
                stream_id: id,
                offset: emitted.offset,
                len: emitted.len as u64,
                fin: emitted.fin,
            });
            qlog!(self, q => q.sent_frames().push_stream(
                id,
                emitted.offset,
                emitted.len as u64,
                emitted.fin
            ));
            eliciting = true;
            if emitted.len == 0 && !emitted.fin {
                break;
            }
        }
        Ok(eliciting)
    }
}

/// The wire frame for a stream-map control frame.
fn control_frame(cf: &ControlFrame) -> Frame<'static> {
    match *cf {
        ControlFrame::ResetStream {
            stream_id,
            error_code,
            final_size,
        } => Frame::ResetStream {
            stream_id,
            error_code,
            final_size,
        },
        ControlFrame::StopSending {
            stream_id,
            error_code,
        } => Frame::StopSending {
            stream_id,
            error_code,
        },
        ControlFrame::MaxStreamData { stream_id, max } => Frame::MaxStreamData { stream_id, max },
        ControlFrame::StreamDataBlocked { stream_id, limit } => {
            Frame::StreamDataBlocked { stream_id, limit }
        }
        ControlFrame::MaxStreams { bidi: true, max } => Frame::MaxStreamsBidi { max },
        ControlFrame::MaxStreams { bidi: false, max } => Frame::MaxStreamsUni { max },
        ControlFrame::StreamsBlocked { bidi: true, limit } => Frame::StreamsBlockedBidi { limit },
        ControlFrame::StreamsBlocked { bidi: false, limit } => Frame::StreamsBlockedUni { limit },
    }
}

/// Writes a PING frame (RFC 9000 §19.2).
fn write_ping<F: crate::buffers::BufFactory>(
    conn: &mut Connection<F>,
    b: &mut OctetsMut,
    frames: &mut SentFrames,
) -> Result<()> {
    b.put_u8(0x01)?;
    frames.push(SentFrame::Other);
    qlog!(conn, q => q.sent_frames().push_ping());
    #[cfg(not(feature = "qlog"))]
    let _ = conn;
    Ok(())
}
