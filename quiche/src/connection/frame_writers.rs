//! The frames of one packet, written straight into the packet buffer in their order (RFC 9000
//! §12.4 says which packet types may carry which): ACK, CONNECTION_CLOSE, PATH_CHALLENGE and
//! PATH_RESPONSE, then within the congestion window the control frames, CRYPTO, DATAGRAM and
//! STREAM, each recorded in the packet's `SentFrames`. `send.rs` builds the packet around them.

use std::time::Instant;

use octets::OctetsMut;

use super::qlog::qlog;
use super::sent_frames::{SentFrame, SentFrames};
use super::{Connection, HANDSHAKE_ACK_DELAY_EXPONENT};
use crate::error::{Error, Result};
use crate::frame::{self, Frame};
use crate::packet::{Epoch, Type};
use crate::stream::ControlFrame;

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Writes the frames of one packet into `payload`; returns the bytes written and whether
    /// the packet is ack-eliciting.
    pub(super) fn write_frames(
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
