//! The ACK frequency extension's hooks (draft-ietf-quic-ack-frequency-12): negotiation from
//! the transport parameters, the peer's ACK_FREQUENCY and IMMEDIATE_ACK frames handed to the
//! receiver (`ack_tracker`), and the sender policy (`crate::ack_frequency`) fed after each ACK
//! and written into packets.

use std::time::{Duration, Instant};

use octets::OctetsMut;

use super::qlog::qlog;
use super::sent_frames::{SentFrame, SentFrames};
use super::Connection;
use crate::ack_frequency::{AckFrequencySender, SenderView};
use crate::ack_tracker::AckFrequencyRequest;
use crate::cc::CongestionControl;
use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::packet::Epoch;
use crate::transport_params::TransportParams;

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// The extension is used towards the peer only when both sides offered it. §3 makes the
    /// peer's min_ack_delay alone enough to allow our frames; we also require our own offer, so
    /// that a `Config` with the extension off changes nothing on the wire, in either direction.
    pub(super) fn negotiate_ack_frequency(&mut self, peer: &TransportParams) {
        self.ack_freq = match (self.local_tp.min_ack_delay, peer.min_ack_delay) {
            (Some(_), Some(peer_min)) => Some(AckFrequencySender::new(
                Duration::from_micros(peer_min),
                Duration::from_millis(peer.max_ack_delay),
            )),
            _ => None,
        };
    }

    /// Whether the peer may send ACK_FREQUENCY and IMMEDIATE_ACK: we offered min_ack_delay. A
    /// peer that sends them unasked sends frames of a type we do not know (RFC 9000 §12.4:
    /// FRAME_ENCODING_ERROR), as before the extension existed.
    pub(super) fn check_ack_frequency_offered(&self) -> Result<()> {
        if self.local_tp.min_ack_delay.is_none() {
            return Err(Error::InvalidFrame);
        }
        Ok(())
    }

    /// A received ACK_FREQUENCY frame (§4). Its Requested Max Ack Delay below our min_ack_delay
    /// is a PROTOCOL_VIOLATION (the 2^14 ms bound was checked when it was decoded); an
    /// obsolete one (Sequence Number not above the largest seen) is ignored.
    pub(super) fn on_ack_frequency_frame(
        &mut self,
        seq_num: u64,
        ack_eliciting_threshold: u64,
        request_max_ack_delay: u64,
        reordering_threshold: u64,
    ) -> Result<()> {
        self.check_ack_frequency_offered()?;
        if self
            .local_tp
            .min_ack_delay
            .is_some_and(|min| request_max_ack_delay < min)
        {
            return Err(Error::ProtocolViolation);
        }
        self.spaces[Epoch::Application.index()]
            .acks
            .on_ack_frequency(AckFrequencyRequest {
                seq: seq_num,
                ack_eliciting_threshold,
                max_ack_delay: Duration::from_micros(request_max_ack_delay),
                reordering_threshold,
            });
        Ok(())
    }

    /// After an ACK frame of the application space was processed: the policy looks at the
    /// controller again.
    pub(super) fn ack_frequency_after_ack(&mut self, congestion_event: bool, now: Instant) {
        let Some(policy) = self.ack_freq.as_mut() else {
            return;
        };
        let rtt = self.paths.active().sender.rtt();
        let view = SenderView {
            cwnd: self.paths.active().sender.cwnd(),
            max_datagram_size: self.paths.active().sender.max_datagram_size(),
            smoothed_rtt: rtt.smoothed_rtt(),
            has_rtt_sample: rtt.first_sample_time().is_some(),
            state: self.paths.active().sender.controller().state(),
            congestion_event,
        };
        policy.on_ack_processed(now, &view);
    }

    /// A probe timeout fired in the application space: the probes ask for an immediate ACK.
    pub(super) fn ack_frequency_on_probe(&mut self) {
        if let Some(policy) = self.ack_freq.as_mut() {
            policy.on_probe_timeout();
        }
    }

    /// Writes the ACK_FREQUENCY and IMMEDIATE_ACK frames due into a 1-RTT packet; returns
    /// whether it wrote one (both are ack-eliciting).
    pub(super) fn write_ack_frequency_frames(
        &mut self,
        b: &mut OctetsMut,
        frames: &mut SentFrames,
    ) -> Result<bool> {
        let Some(policy) = self.ack_freq.as_ref() else {
            return Ok(false);
        };
        let due = policy.frame_to_send();
        let immediate = policy.immediate_ack_due();
        let mut wrote = false;
        if let Some((seq, ask)) = due {
            let frame = Frame::AckFrequency {
                seq_num: seq,
                ack_eliciting_threshold: ask.ack_eliciting_threshold,
                request_max_ack_delay: u64::try_from(ask.max_ack_delay.as_micros())
                    .unwrap_or(u64::MAX),
                reordering_threshold: ask.reordering_threshold,
            };
            if frame.wire_len() <= b.cap() {
                frame.to_bytes(b)?;
                let now = self.last_now.unwrap_or_else(Self::wall_now);
                if let Some(policy) = self.ack_freq.as_mut() {
                    policy.on_frame_sent(now);
                }
                frames.push(SentFrame::AckFrequency { seq });
                self.stats.ack_frequency_frames_sent += 1;
                qlog!(self, q => q.sent_frames().push_frame(&frame));
                self.ack_frequency_update_pto();
                wrote = true;
            }
        }
        if immediate && b.cap() >= 1 {
            Frame::ImmediateAck.to_bytes(b)?;
            if let Some(policy) = self.ack_freq.as_mut() {
                policy.on_immediate_ack_sent();
            }
            // Needs no repair when lost (§5).
            frames.push(SentFrame::Other);
            qlog!(self, q => q.sent_frames().push_frame(&Frame::ImmediateAck));
            wrote = true;
        }
        Ok(wrote)
    }

    /// The packet carrying ACK_FREQUENCY `seq` was acknowledged.
    pub(super) fn on_ack_frequency_acked(&mut self, seq: u64) {
        if let Some(policy) = self.ack_freq.as_mut() {
            policy.on_frame_acked(seq);
            self.ack_frequency_update_pto();
        }
    }

    /// The packet carrying ACK_FREQUENCY `seq` was declared lost.
    pub(super) fn on_ack_frequency_lost(&mut self, seq: u64) {
        if let Some(policy) = self.ack_freq.as_mut() {
            policy.on_frame_lost(seq);
        }
    }

    /// The PTO uses the largest max_ack_delay the peer may be using (§7).
    fn ack_frequency_update_pto(&mut self) {
        if let Some(policy) = self.ack_freq.as_ref() {
            let delay = policy.pto_max_ack_delay();
            if delay != self.sender().rtt().max_ack_delay() {
                self.set_peer_max_ack_delay(delay);
            }
        }
    }
}
