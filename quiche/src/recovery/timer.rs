//! The loss detection timer (RFC 9002 Appendix A.8, A.9): the earliest time-threshold loss or
//! probe timeout over the spaces, and what firing it does.

use super::*;

impl<P> Recovery<P> {
    /// The earliest time-threshold loss time over the spaces (GetLossTimeAndSpace).
    fn earliest_loss_time(&self) -> Option<(Instant, Epoch)> {
        let mut best: Option<(Instant, Epoch)> = None;
        for epoch in Epoch::ALL {
            if let Some(t) = self.space(epoch).loss_time {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, epoch));
                }
            }
        }
        best
    }

    fn ack_eliciting_in_flight_total(&self) -> usize {
        self.spaces
            .iter()
            .map(|s| s.sent.ack_eliciting_in_flight())
            .sum()
    }

    fn pto_deadline(&self, now: Instant) -> Option<PtoDeadline> {
        let spaces = [0, 1, 2].map(|i| SpaceTimes {
            ack_eliciting_in_flight: self.spaces[i].sent.ack_eliciting_in_flight() > 0,
            last_ack_eliciting: self.spaces[i].last_ack_eliciting,
        });
        pto::pto_deadline(
            &self.rtt.stats(),
            self.pto_count,
            self.handshake_confirmed,
            &spaces,
            now,
        )
    }

    /// Re-arms the loss detection timer (SetLossDetectionTimer, Appendix A.8).
    pub(super) fn set_timer(&mut self, now: Instant) {
        self.timer = if let Some((t, _)) = self.earliest_loss_time() {
            Some(t)
        } else if self.amplification_limited {
            // Nothing could be sent on expiry (§6.2.2.1).
            None
        } else if self.ack_eliciting_in_flight_total() == 0
            && self.peer_completed_address_validation
        {
            None
        } else {
            self.pto_deadline(now).map(PtoDeadline::time)
        };
    }

    /// When the loss detection timer fires; `None` when it is not armed. Call
    /// [`Recovery::on_loss_detection_timeout`] at that time.
    pub fn loss_detection_timer(&self) -> Option<Instant> {
        self.timer
    }

    /// Handles the loss detection timer (OnLossDetectionTimeout, Appendix A.9). Does nothing
    /// unless the timer is armed and due at `now`. `out` is cleared, then receives the packets
    /// declared lost.
    pub fn on_loss_detection_timeout(
        &mut self,
        now: Instant,
        out: &mut AckOutcome<P>,
    ) -> TimeoutAction {
        out.clear();
        if self.timer.is_none_or(|t| t > now) {
            return TimeoutAction::None;
        }
        if let Some((_, epoch)) = self.earliest_loss_time() {
            self.detect_lost(epoch, now, out);
            self.set_timer(now);
            return TimeoutAction::Lost { epoch };
        }
        let action = match self.pto_deadline(now) {
            Some(PtoDeadline::AntiDeadlock(_)) => {
                self.anti_deadlock_probe = true;
                TimeoutAction::AntiDeadlock
            }
            Some(PtoDeadline::Space(_, epoch)) => {
                self.space_mut(epoch).pending_probes = MAX_PTO_PROBES;
                // The other handshake space with ack-eliciting data in flight gets a probe too,
                // coalesced in the same datagram (RFC 9002 §6.2.4: the peer may hold the keys
                // of only one of them, e.g. a client that lost the server's Initial cannot
                // read its Handshake packets, and one that has Handshake keys no longer reads
                // Initials).
                for other in [Epoch::Initial, Epoch::Handshake] {
                    let space = self.space_mut(other);
                    if other != epoch && space.sent.ack_eliciting_in_flight() > 0 {
                        space.pending_probes = space.pending_probes.max(1);
                    }
                }
                TimeoutAction::Probe {
                    epoch,
                    probes: MAX_PTO_PROBES,
                }
            }
            None => {
                self.set_timer(now);
                return TimeoutAction::None;
            }
        };
        self.pto_count = self.pto_count.saturating_add(1);
        self.stats.pto_count += 1;
        self.set_timer(now);
        action
    }
}
