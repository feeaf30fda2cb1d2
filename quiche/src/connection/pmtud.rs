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
        if !path.sender.pmtud().is_enabled()
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
        let size = self.sender_mut().pmtud_mut().probe_size(now)?;
        // Probes take congestion window like any packet (RFC 9000 §14.4); they wait for room
        // rather than overshoot it.
        (size <= buf_len && self.recovery.cwnd_available(self.sender()) >= size).then_some(size)
    }

    /// The largest datagram to send now: PTO probes stay at BASE_PLPMTU while the PLPMTU is
    /// larger, so that after a drop of the path MTU they get through and their acknowledgment
    /// reveals the black hole (a path that only lost full-size packets).
    pub(super) fn pmtud_datagram_limit(&self) -> usize {
        let sender = self.sender();
        if sender.pmtud().is_enabled()
            && self.handshake_confirmed
            && self.is_probing(Epoch::Application)
        {
            sender.max_datagram_size().min(BASE_PLPMTU)
        } else {
            sender.max_datagram_size()
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
        self.sender_mut().pmtud_mut().on_probe_sent(pn, written.len);
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

    /// Tells the searches what an ACK frame or the loss timer resolved in `epoch` (each packet
    /// to the search of the path it went out on), and applies new PLPMTUs.
    pub(super) fn pmtud_on_outcome(
        &mut self,
        epoch: Epoch,
        outcome: &AckOutcome<SentFrames>,
        now: Instant,
    ) {
        if epoch != Epoch::Application {
            return;
        }
        let mut touched = [false; crate::path::MAX_PATHS];
        for pkt in &outcome.acked {
            if let Some((id, pmtud)) = self.packet_pmtud(pkt.payload.path) {
                touched[id % crate::path::MAX_PATHS] = true;
                if pkt.pmtu_probe {
                    pmtud.on_probe_acked(pkt.pkt_num, now);
                } else {
                    pmtud.on_packet_acked(pkt.pkt_num, pkt.size);
                }
            }
        }
        for pkt in &outcome.lost {
            if let Some((id, pmtud)) = self.packet_pmtud(pkt.payload.path) {
                touched[id % crate::path::MAX_PATHS] = true;
                if pkt.pmtu_probe {
                    pmtud.on_probe_lost(pkt.pkt_num, now);
                } else if pkt.in_flight {
                    pmtud.on_packet_lost(pkt.pkt_num, pkt.size, now);
                }
            }
        }
        for (id, _) in touched.iter().enumerate().filter(|(_, t)| **t) {
            self.apply_pmtu_update(id, now, true);
        }
    }

    /// The running search of the path with uid `uid` (the path a packet went out on) and the
    /// path's id; `None` when the path is gone or does not search.
    fn packet_pmtud(&mut self, uid: u64) -> Option<(usize, &mut crate::pmtud::Pmtud)> {
        let id = self.paths.iter().find(|(_, p)| p.uid() == uid)?.0;
        let pmtud = self.paths.get_mut(id)?.sender.pmtud_mut();
        pmtud.is_enabled().then_some((id, pmtud))
    }

    /// The handshake is confirmed: the active path's search may start.
    pub(super) fn pmtud_start(&mut self, now: Instant) {
        self.sender_mut().pmtud_mut().start(now);
        self.apply_pmtu_update(self.paths.active_id(), now, false);
    }

    /// Another path became the active one: its own search runs there (a new path's from
    /// BASE_PLPMTU, started now; one the connection returns to goes on where it was).
    pub(super) fn pmtud_on_path_switch(&mut self, now: Instant) {
        if self.handshake_confirmed {
            self.pmtud_start(now);
        }
    }

    /// The peer's `max_udp_payload_size` caps the search, or without one the datagram size;
    /// the active path's sender (controller and pacer) counts in the new size. Paths made
    /// later take the cap from it.
    pub(super) fn pmtud_set_peer_max(&mut self, peer_max: usize) {
        self.sender_mut().set_peer_max_udp_payload_size(peer_max);
    }

    /// Applies a PLPMTU the search of path `id` changed: datagram size, congestion controller,
    /// pacer, qlog (the active path's), and with `report` a `PathEvent::PmtuUpdated`.
    fn apply_pmtu_update(&mut self, id: usize, now: Instant, report: bool) {
        let active = id == self.paths.active_id();
        let Some(path) = self.paths.get_mut(id) else {
            return;
        };
        let Some((old, size)) = path.sender.apply_pmtu_update() else {
            return;
        };
        let (local, peer) = (path.local, path.peer);
        let done = path.sender.pmtud().is_search_complete();
        if size != old && report {
            self.paths.push_event(crate::path::PathEvent::PmtuUpdated {
                local,
                peer,
                pmtu: size,
            });
        }
        if active {
            qlog!(self, q => q.mtu_updated(now, old, size, done));
        }
        #[cfg(not(feature = "qlog"))]
        let _ = (now, done);
        log::debug!(
            "{} path MTU {local} -> {peer}: {old} -> {size}",
            self.trace_id()
        );
    }

    /// Counters of the path MTU search.
    pub fn pmtud_stats(&self) -> crate::pmtud::PmtudStats {
        self.sender().pmtud().stats()
    }

    /// The path MTU the search settled on for the active path, once it has (`None` while it
    /// runs, or with path MTU discovery off): the largest UDP payload known to get through.
    pub fn pmtu(&self) -> Option<usize> {
        let pmtud = self.sender().pmtud();
        pmtud.is_search_complete().then(|| pmtud.current())
    }

    /// Checks the active path's MTU again: datagrams go back to the minimum size at once and
    /// a probe of the old size goes out; if it gets through the size comes back, otherwise
    /// the search finds the new one. A `PathEvent::PmtuUpdated` reports each change.
    pub fn revalidate_pmtu(&mut self) {
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        self.sender_mut().pmtud_mut().revalidate();
        self.apply_pmtu_update(self.paths.active_id(), now, true);
    }
}
