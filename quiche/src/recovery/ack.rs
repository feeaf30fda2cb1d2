//! Processing an ACK frame (RFC 9002 Appendix A.7): the acknowledged packets, the RTT sample,
//! loss detection, the controller's congestion event and ACK, and undoing a reduction that
//! proved spurious, in that order (see the order in [`super`]'s docs); and ECN-CE signals.

use super::*;

impl<P> Recovery<P> {
    /// Processes one ACK frame of `epoch` (RFC 9002 Appendix A.7).
    ///
    /// `ranges` are the acknowledged packet numbers as half-open ranges, in the descending order
    /// the frame decoder yields them (any order works); `ack_delay` is the decoded ACK Delay
    /// (ignored for the Initial space); `handshake_confirmed` says whether the handshake is
    /// confirmed now (once true it stays so, as with [`Recovery::on_handshake_confirmed`]).
    /// `out` is cleared, then receives the acknowledged and lost packets.
    ///
    /// Acknowledging a packet number that was never sent ([`Error::InvalidAckRange`]) or was
    /// skipped ([`Error::OptimisticAckDetected`]) is a PROTOCOL_VIOLATION (RFC 9000 §13.1);
    /// the connection must then close, as the
    /// state is left half-updated.
    // The frame's parts, the time, the handshake state, the reused outcome and the path's
    // sender: a struct bundling them would only move the list.
    #[allow(clippy::too_many_arguments)]
    pub fn on_ack_received<I>(
        &mut self,
        epoch: Epoch,
        ranges: I,
        ack_delay: Duration,
        now: Instant,
        handshake_confirmed: bool,
        out: &mut AckOutcome<P>,
        s: &mut PathSender,
    ) -> Result<()>
    where
        I: IntoIterator<Item = Range<u64>>,
    {
        out.clear();
        if handshake_confirmed {
            self.handshake_confirmed = true;
            self.peer_completed_address_validation = true;
        }
        if self.space(epoch).discarded {
            return Ok(());
        }
        let bytes_in_flight_before = self.bytes_in_flight();
        // An allowance not used before the next acknowledgment has served its purpose.
        self.recovery_allowance = 0;
        let mut tally = SpuriousTally {
            since_event: self.undo.map(|g| g.first_event),
            ..Default::default()
        };
        let space = &mut self.spaces[epoch.index()];
        // Room for every tracked packet at once: the buffer then only grows when more packets
        // are in flight than ever before, not step by step as ACKs cover more of them.
        out.acked.reserve(space.sent.len());
        let history = &mut space.lost_history;
        let scan = space.sent.on_ack_received(ranges, &mut out.acked, |r| {
            history.on_acked_range(r, &mut tally)
        })?;
        let Some(largest_acked) = scan.largest_acked else {
            return Ok(());
        };
        space.largest_acked = Some(
            space
                .largest_acked
                .map_or(largest_acked, |l| l.max(largest_acked)),
        );
        if let Some((pn, time_sent, _)) = scan.largest_newly_acked {
            if pn == largest_acked {
                space.largest_acked_sent_time = Some(time_sent);
            }
        }
        if epoch == Epoch::Handshake {
            // A client that got a Handshake ACK knows the server validated its address (A.8).
            self.peer_completed_address_validation = true;
        }
        out.spurious_losses = tally.count;
        self.stats.spurious_losses += tally.count as u64;
        if self.relaxed_loss_threshold && tally.count > 0 {
            // RFC 9002 §6.1.1: tolerate the reordering that made these losses spurious.
            let needed = tally.max_reordering.saturating_add(1);
            self.packet_threshold = needed.clamp(self.packet_threshold, MAX_PACKET_THRESHOLD);
        }
        if let Some(group) = &mut self.undo {
            group.spurious += tally.since_event_count;
        }
        if scan.packets == 0 {
            self.maybe_undo(now, out, s);
            self.set_timer(now, s);
            return Ok(());
        }
        self.stats.acked_packets += scan.packets as u64;
        out.acked_bytes = scan.in_flight_bytes;

        let rtt_sample = self.take_rtt_sample(epoch, &scan, largest_acked, ack_delay, now, s);
        out.rtt_updated = rtt_sample.is_some();

        self.detect_lost(epoch, now, out, s);

        if s.cc.wants_rate_samples() {
            for p in out.acked.iter().filter(|p| p.in_flight) {
                self.rate.on_packet_acked(now, &p.rate, p.size, p.time_sent);
            }
            let min_rtt = s.rtt().stats().min_rtt;
            if let Some(rs) = self.rate.generate(min_rtt, out.lost_bytes as u64) {
                s.cc.on_rate_sample(now, &rs);
            }
        }
        if let Some((pn, time_sent)) = scan.largest_in_flight {
            let batch = AckBatch {
                epoch,
                acked_bytes: scan.in_flight_bytes,
                acked_packets: scan.in_flight_packets,
                largest_acked: pn,
                largest_acked_sent_time: time_sent,
                rtt_sample,
                bytes_in_flight_before,
                bytes_in_flight: self.bytes_in_flight(),
                app_limited: self.app_limited,
            };
            let rtt = s.rtt().stats();
            s.cc.on_ack(now, &batch, &rtt);
            if s.cc.wants_rate_samples() && s.cc.take_app_limited_mark() {
                self.rate.on_app_limited(self.bytes_in_flight());
            }
        }
        self.maybe_undo(now, out, s);

        // A client not yet sure the server validated its address keeps backing off (§6.2.1).
        if self.peer_completed_address_validation {
            self.pto_count = 0;
        }
        self.set_timer(now, s);
        Ok(())
    }

    /// Updates the RTT if the frame newly acknowledges its largest packet and something
    /// ack-eliciting (RFC 9002 §5.1); returns the sample.
    fn take_rtt_sample(
        &mut self,
        epoch: Epoch,
        scan: &sent_packets::AckScan,
        largest_acked: u64,
        ack_delay: Duration,
        now: Instant,
        s: &mut PathSender,
    ) -> Option<Duration> {
        let (pn, time_sent, _) = scan.largest_newly_acked?;
        if pn != largest_acked || !scan.ack_eliciting {
            return None;
        }
        // Packets sent on the path the connection left say nothing of this one's RTT
        // (RFC 9000 §9.4).
        if self.path_start.is_some_and(|start| time_sent < start) {
            return None;
        }
        let latest_rtt = now.saturating_duration_since(time_sent);
        // The peer does not delay Initial acknowledgments (RFC 9002 §5.3).
        let ack_delay = if epoch == Epoch::Initial {
            Duration::ZERO
        } else {
            ack_delay
        };
        s.update_rtt(now, latest_rtt, ack_delay, self.handshake_confirmed);
        Some(latest_rtt)
    }

    /// Runs loss detection on a space and tells the controller (Appendix A.10, B.8).
    pub(super) fn detect_lost(
        &mut self,
        epoch: Epoch,
        now: Instant,
        out: &mut AckOutcome<P>,
        s: &mut PathSender,
    ) {
        let rtt = s.rtt().stats();
        self.loss_event_seq += 1;
        let event = self.loss_event_seq;
        // Read before the controller hears of these losses, which may end slow start now.
        let first_slow_start_end = s.cc.stats().first_slow_start_end;
        let space = &mut self.spaces[epoch.index()];
        let Some(largest_acked) = space.largest_acked else {
            space.loss_time = None;
            return;
        };
        let already_lost = out.lost.len();
        let det = loss::detect_lost(
            &mut space.sent,
            (largest_acked, self.packet_threshold),
            now,
            &rtt,
            &mut out.lost,
            &mut space.lost_history,
            event,
        );
        space.loss_time = det.loss_time;
        if s.cc.wants_rate_samples() {
            for p in out.lost.get(already_lost..).unwrap_or_default() {
                if p.in_flight && !p.pmtu_probe {
                    let lost = self.rate.on_packet_lost(&p.rate, p.size);
                    s.cc.on_packet_lost_rate(now, &lost);
                }
            }
        }
        if det.packets > 0 {
            let in_first = out.lost.get(already_lost..).unwrap_or_default().iter();
            let in_first = in_first
                .filter(|p| first_slow_start_end.is_none_or(|end| p.time_sent < end))
                .count();
            self.stats.lost_in_first_slow_start += in_first as u64;
        }
        // Lost PMTU probes are the search's business, not the path's loss rate.
        self.stats.lost_packets += (det.packets - det.probes) as u64;
        self.stats.lost_by_packet_threshold += det.by_packet_threshold as u64;
        self.stats.lost_by_time_threshold += det.by_time_threshold as u64;
        self.stats.lost_bytes = self
            .stats
            .lost_bytes
            .saturating_add(det.in_flight_bytes as u64);
        out.lost_bytes = out.lost_bytes.saturating_add(det.in_flight_bytes);
        if det.in_flight_packets == 0 {
            return;
        }
        // Losses on the path the connection left are no congestion of this one (RFC 9000
        // §9.4): the data is repaired, the controller does not react.
        if self.path_start.is_some_and(|start| {
            det.largest_in_flight_sent_time
                .is_some_and(|sent| sent < start)
        }) {
            return;
        }
        let signal = CongestionSignal {
            kind: CongestionKind::Loss,
            largest_sent_time: det.largest_in_flight_sent_time.unwrap_or(now),
            lost_bytes: det.in_flight_bytes,
            lost_packets: det.in_flight_packets,
            persistent_congestion: det.persistent_congestion,
            bytes_in_flight: self.bytes_in_flight(),
        };
        if s.cc.on_congestion_event(now, &signal, &rtt) {
            // The window was cut at once rather than gradually: one more packet may go out
            // before the reduction takes hold (RFC 9002 §7.3.2), so the lost data is repaired
            // now instead of after the next acknowledgment. On a path of a few packets' window
            // that acknowledgment may be the peer's delayed one, a max_ack_delay away.
            self.recovery_allowance = s.max_datagram_size();
            self.undo = Some(UndoGroup {
                first_event: event,
                lost: det.in_flight_packets,
                spurious: 0,
                undoable: true,
            });
            self.stats.congestion_events += 1;
            out.congestion_event = true;
        } else if let Some(group) = &mut self.undo {
            group.lost += det.in_flight_packets;
        }
        if det.persistent_congestion {
            self.stats.persistent_congestion += 1;
            out.persistent_congestion = true;
            s.reset_min_rtt();
        }
    }

    /// Undoes the last reduction once every loss behind it was acknowledged after all.
    fn maybe_undo(&mut self, now: Instant, out: &mut AckOutcome<P>, s: &mut PathSender) {
        let Some(group) = self.undo else {
            return;
        };
        if group.undoable && group.lost > 0 && group.spurious >= group.lost {
            s.cc.on_spurious_congestion(now);
            self.undo = None;
            self.stats.congestion_events_undone += 1;
            out.congestion_undone = true;
        }
    }

    /// The peer's ECN-CE count for `epoch` increased in the ACK frame just processed (RFC 9002
    /// §7.1, Appendix B.7): a congestion event for the largest acknowledged packet. Returns
    /// whether the window was reduced.
    pub fn on_ecn_ce_increase(&mut self, epoch: Epoch, now: Instant, s: &mut PathSender) -> bool {
        let sent_time = self.space(epoch).largest_acked_sent_time.unwrap_or(now);
        let signal = CongestionSignal {
            kind: CongestionKind::EcnCe,
            largest_sent_time: sent_time,
            lost_bytes: 0,
            lost_packets: 0,
            persistent_congestion: false,
            bytes_in_flight: self.bytes_in_flight(),
        };
        let rtt = s.rtt().stats();
        let reduced = s.cc.on_congestion_event(now, &signal, &rtt);
        if reduced {
            self.loss_event_seq += 1;
            self.undo = Some(UndoGroup {
                first_event: self.loss_event_seq,
                lost: 0,
                spurious: 0,
                undoable: false,
            });
            self.stats.congestion_events += 1;
        } else if let Some(group) = &mut self.undo {
            group.undoable = false;
        }
        reduced
    }
}
