//! The send pipeline: which packet number spaces have something to say, packet assembly with
//! frames written straight into the output buffer, coalescing, padding, sealing in place.

use std::time::Instant;

use octets::OctetsMut;

use super::qlog::qlog;
use super::sent_frames::SentFrames;
use super::{Connection, SendInfo};
use crate::config::MIN_UDP_PAYLOAD_SIZE;
use crate::error::{Error, Result};
use crate::packet::{encode_pkt_num_len, encrypt_pkt, ConnectionId, Epoch, Header, Type};
use crate::recovery::SentPacket;
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
                >= self.sender().max_datagram_size()
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
    pub(super) fn sealing_type(&self, epoch: Epoch) -> Option<Type> {
        match epoch {
            Epoch::Initial => self.spaces[0].seal.as_ref().map(|_| Type::Initial),
            Epoch::Handshake => self.spaces[1].seal.as_ref().map(|_| Type::Handshake),
            Epoch::Application => {
                if self.one_rtt.is_some() {
                    Some(Type::Short)
                } else if self.zero_rtt.can_seal() {
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
                self.versions.of_long_header(self.is_server, ty),
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
            Type::ZeroRTT => {
                let z = &self.zero_rtt;
                return z.header().zip(z.packet()).ok_or(Error::InvalidState);
            }
            Type::Short => {
                let k = self.one_rtt.as_ref().ok_or(Error::InvalidState)?;
                return Ok((&*k.hp_seal, &*k.seal));
            }
            _ => None,
        };
        let keys = keys.ok_or(Error::InvalidState)?;
        Ok((&*keys.header, &*keys.packet))
    }
}
