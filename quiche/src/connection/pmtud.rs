//! The connection's side of path MTU discovery: when a probe goes out, how it is built (PING +
//! PADDING in a datagram of the probed size, RFC 9000 §14.4), and what acknowledgments and
//! losses tell the search. The search itself is [`crate::pmtud`].

use std::time::Instant;

use octets::OctetsMut;

use super::qlog::qlog;
use super::sent_frames::{SentFrame, SentFrames};
use super::Connection;
use crate::error::Result;
use crate::packet::Epoch;
use crate::pmtud::BASE_PLPMTU;
use crate::recovery::AckOutcome;

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// The size of the PMTU probe to send now, if one is due and the congestion window and a
    /// buffer of `buf_len` bytes allow it. Probes wait for the handshake to be confirmed
    /// (RFC 9000 §14.3.1) and give way to loss-recovery probes and to closing.
    ///
    /// They also wait until the active path is validated, and for its PATH_CHALLENGE and
    /// PATH_RESPONSE frames: a probe goes out alone, and on a peer address not yet validated
    /// it would take the whole anti-amplification budget (RFC 9000 §9.3.1). Every ACK of such
    /// a probe buys a budget for the next one, so the challenge, ACKs and data would never
    /// go out and validation would fail while the peer is actively using the address.
    pub(super) fn pmtu_probe_due(&mut self, buf_len: usize, now: Instant) -> Option<usize> {
        let path = self.paths.active();
        if !self.pmtud.is_enabled()
            || !self.handshake_confirmed
            || self.one_rtt.is_none()
            || self.lifecycle.close_pending()
            || self.lifecycle.is_closing_or_draining()
            || self.is_probing(Epoch::Application)
            // Not on a path still being validated, nor before its PATH_CHALLENGE/PATH_RESPONSE
            // are out: its first datagrams carry the challenge (RFC 9000 §9.3), and the
            // amplification limit would cut the probe short of its size.
            || !path.validated()
            || path.has_path_frames()
        {
            return None;
        }
        let size = self.pmtud.probe_size(now)?;
        // Probes take congestion window like any packet (RFC 9000 §14.4); they wait for room
        // rather than overshoot it.
        (size <= buf_len && self.recovery.cwnd_available(&self.paths.active().sender) >= size)
            .then_some(size)
    }

    /// The largest datagram to send now: PTO probes stay at BASE_PLPMTU while the PLPMTU is
    /// larger, so that after a drop of the path MTU they get through and their acknowledgment
    /// reveals the black hole (a path that only lost full-size packets).
    pub(super) fn pmtud_datagram_limit(&self) -> usize {
        if self.pmtud.is_enabled()
            && self.handshake_confirmed
            && self.is_probing(Epoch::Application)
        {
            self.max_send_udp_payload_size.min(BASE_PLPMTU)
        } else {
            self.max_send_udp_payload_size
        }
    }

    /// Writes a PMTU probe of exactly `out.len()` bytes; returns its length.
    pub(super) fn write_pmtu_probe(&mut self, out: &mut [u8], now: Instant) -> Result<usize> {
        let pn = self.spaces[Epoch::Application.index()].next_pn;
        let size = out.len();
        self.pmtu_probe_building = true;
        let written = self.write_packet(Epoch::Application, out, 0, size, now);
        self.pmtu_probe_building = false;
        let written = written?;
        self.pmtud.on_probe_sent(pn, written.len);
        Ok(written.len)
    }

    /// The payload of a probe: one PING, padded by the caller to the probed size.
    pub(super) fn write_probe_ping(
        &mut self,
        payload: &mut [u8],
        frames: &mut SentFrames,
    ) -> Result<(usize, bool)> {
        let mut b = OctetsMut::with_slice(payload);
        b.put_u8(0x01)?; // PING
        frames.push(SentFrame::Other);
        qlog!(self, q => q.sent_frames().push_ping());
        Ok((b.off(), true))
    }

    /// Tells the search what an ACK frame or the loss timer resolved in `epoch`, and applies a
    /// new PLPMTU.
    pub(super) fn pmtud_on_outcome(
        &mut self,
        epoch: Epoch,
        outcome: &AckOutcome<SentFrames>,
        now: Instant,
    ) {
        if epoch != Epoch::Application || !self.pmtud.is_enabled() {
            return;
        }
        for pkt in &outcome.acked {
            if pkt.pmtu_probe {
                self.pmtud.on_probe_acked(pkt.pkt_num, now);
            } else {
                self.pmtud.on_packet_acked(pkt.pkt_num, pkt.size);
            }
        }
        for pkt in &outcome.lost {
            if pkt.pmtu_probe {
                self.pmtud.on_probe_lost(pkt.pkt_num, now);
            } else if pkt.in_flight {
                self.pmtud.on_packet_lost(pkt.pkt_num, pkt.size, now);
            }
        }
        self.apply_pmtu_update(now, true);
    }

    /// The handshake is confirmed: the search may start.
    pub(super) fn pmtud_start(&mut self, now: Instant) {
        self.pmtud.start(now);
        self.apply_pmtu_update(now, false);
    }

    /// The active path changed to one with another address: search its MTU afresh.
    pub(super) fn pmtud_on_new_path(&mut self, now: Instant) {
        if self.pmtud.is_enabled() {
            self.pmtud.restart_for_new_path(now);
            self.apply_pmtu_update(now, false);
        }
    }

    /// The peer's `max_udp_payload_size` caps the search, or without one the datagram size;
    /// the active path's sender (controller and pacer) counts in the new size.
    pub(super) fn pmtud_set_peer_max(&mut self, peer_max: usize) {
        let size = if self.pmtud.is_enabled() {
            self.pmtud.set_max(peer_max);
            let _ = self.pmtud.take_update();
            self.pmtud.current()
        } else {
            self.max_send_udp_payload_size.min(peer_max)
        };
        if size != self.max_send_udp_payload_size {
            self.max_send_udp_payload_size = size;
            self.sender_mut().on_mtu_update(size);
        }
    }

    /// Applies a PLPMTU the search changed: datagram size, congestion controller, pacer, qlog,
    /// and with `report` a `PathEvent::PmtuUpdated`.
    fn apply_pmtu_update(&mut self, now: Instant, report: bool) {
        let Some(size) = self.pmtud.take_update() else {
            return;
        };
        let old = self.max_send_udp_payload_size;
        if size != old {
            self.max_send_udp_payload_size = size;
            self.sender_mut().on_mtu_update(size);
            if report {
                let path = self.paths.active();
                let (local, peer) = (path.local, path.peer);
                self.paths.push_event(crate::path::PathEvent::PmtuUpdated {
                    local,
                    peer,
                    pmtu: size,
                });
            }
        }
        let done = self.pmtud.is_search_complete();
        qlog!(self, q => q.mtu_updated(now, old, size, done));
        #[cfg(not(feature = "qlog"))]
        let _ = (now, old, done);
        log::debug!("{} path MTU {old} -> {size}", self.trace_id());
    }

    /// Counters of the path MTU search.
    pub fn pmtud_stats(&self) -> crate::pmtud::PmtudStats {
        self.pmtud.stats()
    }

    /// The path MTU the search settled on for the active path, once it has (`None` while it
    /// runs, or with path MTU discovery off): the largest UDP payload known to get through.
    pub fn pmtu(&self) -> Option<usize> {
        self.pmtud
            .is_search_complete()
            .then(|| self.pmtud.current())
    }

    /// Checks the active path's MTU again: datagrams go back to the minimum size at once and
    /// a probe of the old size goes out; if it gets through the size comes back, otherwise
    /// the search finds the new one. A `PathEvent::PmtuUpdated` reports each change.
    pub fn revalidate_pmtu(&mut self) {
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        self.pmtud.revalidate();
        self.apply_pmtu_update(now, true);
    }
}
