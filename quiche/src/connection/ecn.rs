//! ECN validation of a path (RFC 9000 §13.4.2, Appendix A.4): whether our packets go out with
//! ECT(0), and whether the peer's ECN counts can be trusted as a congestion signal.
//!
//! The state is meant per path, but the connection holds one for all its paths so far: a
//! migration does not start a new validation. A fresh state per path needs a baseline of the
//! peer's counts, which are cumulative per packet number space across paths (RFC 9000
//! §13.4.1), so that the new path's first ACK is not read as a jump. Probes of other paths go
//! unmarked.

use std::time::{Duration, Instant};

use crate::frame::EcnCounts;
use crate::packet::Epoch;

/// The ECT(0) codepoint, the two low bits of the IP TOS / traffic class byte (RFC 3168 §5).
pub const ECT0: u8 = 0b10;

/// Marked packets sent while testing a new path before the test ends (RFC 9000 §13.4.2 suggests
/// ten).
const TESTING_PACKETS: u64 = 10;

/// Testing also ends after this many PTOs (RFC 9000 §13.4.2), whichever comes first.
const TESTING_PTOS: u32 = 3;

/// The ECN validation state of a path (RFC 9000 Appendix A.4), named as in qlog's
/// `ecn_state_updated` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnState {
    /// Marked packets are being sent to see what the path and the peer do with them.
    Testing,
    /// Testing ended; waiting for an acknowledgement that validates the counts.
    Unknown,
    /// The path or the peer does not support ECN: packets go out unmarked.
    Failed,
    /// The counts were validated: packets go out marked.
    Capable,
}

impl EcnState {
    /// The name qlog uses.
    pub fn as_str(self) -> &'static str {
        match self {
            EcnState::Testing => "testing",
            EcnState::Unknown => "unknown",
            EcnState::Failed => "failed",
            EcnState::Capable => "capable",
        }
    }
}

/// What an ACK frame's ECN counts meant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnAckOutcome {
    /// The peer's CE count grew: a congestion event (RFC 9002 §7.1).
    pub ce_increase: bool,
    /// The state changed from this one (qlog).
    pub changed_from: Option<EcnState>,
}

/// ECN validation of one path.
#[derive(Clone, Debug)]
pub struct EcnValidation {
    state: EcnState,
    /// When the first marked packet of the test went out.
    testing_since: Option<Instant>,
    /// Marked datagrams sent while testing.
    testing_sent: u64,
    /// Marked packets acknowledged, and declared lost, since testing began.
    marked_acked: u64,
    marked_lost: u64,
    /// Per packet number space: ECT(0) packets sent, the last counts that passed validation
    /// (the baseline of the next check), and the largest packet number acknowledged.
    sent_ect0: [u64; 3],
    peer_counts: [EcnCounts; 3],
    largest_acked: [Option<u64>; 3],
}

impl EcnValidation {
    /// Validation of a new path; `enabled` false keeps every packet unmarked.
    pub fn new(enabled: bool) -> Self {
        EcnValidation {
            state: if enabled {
                EcnState::Testing
            } else {
                EcnState::Failed
            },
            testing_since: None,
            testing_sent: 0,
            marked_acked: 0,
            marked_lost: 0,
            sent_ect0: [0; 3],
            peer_counts: [EcnCounts::default(); 3],
            largest_acked: [None; 3],
        }
    }

    /// The current state.
    pub fn state(&self) -> EcnState {
        self.state
    }

    /// Whether packets sent now carry ECT(0).
    pub fn marking(&self) -> bool {
        matches!(self.state, EcnState::Testing | EcnState::Capable)
    }

    /// The codepoint for the IP header of a datagram sent now.
    pub fn codepoint(&self) -> u8 {
        if self.marking() {
            ECT0
        } else {
            0
        }
    }

    /// A packet of `epoch` went out marked (call only when [`Self::marking`]).
    pub fn on_marked_packet_sent(&mut self, epoch: Epoch) {
        self.sent_ect0[epoch.index()] += 1;
    }

    /// A datagram went out: while testing, counts it and ends the test after enough packets or
    /// time. Returns the previous state if it changed.
    pub fn on_datagram_sent(
        &mut self,
        marked: bool,
        now: Instant,
        pto: Duration,
    ) -> Option<EcnState> {
        if self.state != EcnState::Testing || !marked {
            return None;
        }
        let since = *self.testing_since.get_or_insert(now);
        self.testing_sent += 1;
        if self.testing_sent >= TESTING_PACKETS
            || now.saturating_duration_since(since) >= pto * TESTING_PTOS
        {
            // Counts that already validated marked packets during the test settle it: waiting
            // in "unknown" for another acknowledgement could take for ever on a side that
            // sends only ACK frames, which the peer does not acknowledge (Appendix A.4 leaves
            // the testing method open).
            let next = if self.marked_acked > 0 {
                EcnState::Capable
            } else {
                EcnState::Unknown
            };
            return self.set(next);
        }
        None
    }

    /// Marked packets were declared lost: if every packet of the test is lost and none was
    /// acknowledged, the marks are taken to be what the path drops (Appendix A.4).
    pub fn on_marked_lost(&mut self, packets: u64) -> Option<EcnState> {
        self.marked_lost += packets;
        if self.state == EcnState::Unknown
            && self.marked_acked == 0
            && self.marked_lost >= self.testing_sent
        {
            return self.set(EcnState::Failed);
        }
        None
    }

    /// Validates the ECN counts of an ACK frame of `epoch` whose largest acknowledged packet is
    /// `largest`, which newly acknowledged `newly_marked` packets sent with ECT(0)
    /// (RFC 9000 §13.4.2.1).
    pub fn on_ack(
        &mut self,
        epoch: Epoch,
        largest: u64,
        counts: Option<&EcnCounts>,
        newly_marked: u64,
    ) -> EcnAckOutcome {
        let mut out = EcnAckOutcome::default();
        let i = epoch.index();
        self.marked_acked += newly_marked;
        // Reordered ACK frames carry stale counts: they neither fail nor update anything.
        if self.largest_acked[i].is_some_and(|l| largest <= l) {
            return out;
        }
        self.largest_acked[i] = Some(largest);
        if self.state == EcnState::Failed {
            return out;
        }
        let base = self.peer_counts[i];
        let valid = match counts {
            // Marked packets acknowledged without counts: the path bleaches the field or the
            // peer does not report it.
            None => newly_marked == 0,
            Some(c) => {
                c.ect0 >= base.ect0
                    && c.ect1 >= base.ect1
                    && c.ecn_ce >= base.ecn_ce
                    // Fewer ECT(0)+CE than marked packets acknowledged: remarked to not-ECT.
                    && (c.ect0 - base.ect0) + (c.ecn_ce - base.ecn_ce) >= newly_marked
                    // More than we sent, or a codepoint we never use: remarked in the network.
                    && c.ect0 <= self.sent_ect0[i]
                    && c.ect1 == 0
            }
        };
        if !valid {
            out.changed_from = self.set(EcnState::Failed);
            return out;
        }
        if let Some(c) = counts {
            out.ce_increase = c.ecn_ce > base.ecn_ce;
            self.peer_counts[i] = *c;
        }
        if self.state == EcnState::Unknown && self.marked_acked > 0 {
            out.changed_from = self.set(EcnState::Capable);
        }
        out
    }

    /// ECT(0) packets sent in `epoch` (tests).
    #[cfg(test)]
    pub fn sent_ect0(&self, epoch: Epoch) -> u64 {
        self.sent_ect0[epoch.index()]
    }

    /// The peer's last validated ECT(0) count in `epoch` (tests).
    #[cfg(test)]
    pub fn peer_ect0(&self, epoch: Epoch) -> u64 {
        self.peer_counts[epoch.index()].ect0
    }

    fn set(&mut self, new: EcnState) -> Option<EcnState> {
        let old = std::mem::replace(&mut self.state, new);
        (old != new).then_some(old)
    }
}

// ---------------------------------------------------------------------------------------------
// The connection's side: what acknowledgements and losses tell the validation, and what the
// validation tells the controller and qlog.

impl super::Connection {
    /// After recovery processed an ACK frame of `epoch` (largest acknowledged `largest`, with
    /// `counts` if it was an ACK_ECN) that newly acknowledged `marked_acked` ECT(0) packets:
    /// validates the counts, and an increase of the CE count is a congestion event for the
    /// controller (RFC 9002 §7.1; its recovery period makes it one per round trip, and nothing
    /// is retransmitted).
    pub(super) fn on_ack_ecn(
        &mut self,
        epoch: Epoch,
        largest: u64,
        counts: Option<&EcnCounts>,
        marked_acked: u64,
        now: Instant,
    ) {
        let out = self.ecn.on_ack(epoch, largest, counts, marked_acked);
        self.log_ecn_change(out.changed_from, now);
        if out.ce_increase && self.recovery.on_ecn_ce_increase(epoch, now) {
            self.stats.ecn_ce_congestion_events += 1;
            super::qlog::qlog!(self, q => {
                use crate::cc::CongestionControl;
                let state = self.recovery.controller().state().as_str();
                q.congestion_state_updated(now, state, Some(crate::qlog::CongestionTrigger::Ecn));
            });
        }
    }

    /// Packets sent with ECT(0) were declared lost.
    pub(super) fn on_ecn_marked_lost(&mut self, packets: u64) {
        let change = self.ecn.on_marked_lost(packets);
        if let Some(now) = self.last_now {
            self.log_ecn_change(change, now);
        }
    }

    /// Logs `recovery:ecn_state_updated` if the state changed from `old`.
    #[cfg_attr(not(feature = "qlog"), allow(unused_variables))]
    pub(super) fn log_ecn_change(&mut self, old: Option<EcnState>, now: Instant) {
        if let Some(old) = old {
            let new = self.ecn.state();
            log::debug!(
                "{} ECN {} -> {}",
                self.trace_id(),
                old.as_str(),
                new.as_str()
            );
            super::qlog::qlog!(self, q => q.ecn_state_updated(now, Some(old.as_str()), new.as_str()));
        }
    }

    /// The ECN validation state of the path (RFC 9000 Appendix A.4). Beyond quiche's API.
    pub fn ecn_state(&self) -> EcnState {
        self.ecn.state()
    }

    /// The ECN codepoint the next datagram [`send`](super::Connection::send) writes will
    /// carry in its [`SendInfo::ecn`](super::SendInfo::ecn). Beyond quiche's API.
    pub fn send_ecn_codepoint(&self) -> u8 {
        self.ecn.codepoint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: Epoch = Epoch::Application;
    const PTO: Duration = Duration::from_millis(100);

    fn counts(ect0: u64, ect1: u64, ecn_ce: u64) -> EcnCounts {
        EcnCounts { ect0, ect1, ecn_ce }
    }

    /// Sends `n` marked single-packet datagrams.
    fn send(v: &mut EcnValidation, n: u64, now: Instant) {
        for _ in 0..n {
            assert!(v.marking());
            v.on_marked_packet_sent(APP);
            v.on_datagram_sent(true, now, PTO);
        }
    }

    #[test]
    fn testing_ends_after_ten_packets_then_valid_counts_make_the_path_capable() {
        let now = crate::testing::virtual_epoch();
        let mut v = EcnValidation::new(true);
        assert_eq!(v.codepoint(), ECT0);
        send(&mut v, 9, now);
        assert_eq!(v.state(), EcnState::Testing);
        send(&mut v, 1, now);
        assert_eq!(v.state(), EcnState::Unknown);
        assert_eq!(v.codepoint(), 0);
        let out = v.on_ack(APP, 9, Some(&counts(10, 0, 0)), 10);
        assert_eq!(out.changed_from, Some(EcnState::Unknown));
        assert!(!out.ce_increase);
        assert_eq!(v.state(), EcnState::Capable);
        assert_eq!(v.codepoint(), ECT0);
    }

    #[test]
    fn marked_packets_validated_during_the_test_make_the_path_capable_when_it_ends() {
        let now = crate::testing::virtual_epoch();
        let mut v = EcnValidation::new(true);
        send(&mut v, 3, now);
        assert_eq!(
            v.on_ack(APP, 2, Some(&counts(3, 0, 0)), 3),
            EcnAckOutcome::default()
        );
        assert_eq!(v.state(), EcnState::Testing);
        assert_eq!(v.on_datagram_sent(true, now, PTO), None);
        send(&mut v, 6, now);
        assert_eq!(v.state(), EcnState::Capable);
    }

    #[test]
    fn testing_ends_after_three_ptos() {
        let now = crate::testing::virtual_epoch();
        let mut v = EcnValidation::new(true);
        send(&mut v, 1, now);
        send(&mut v, 1, now + PTO * 3);
        assert_eq!(v.state(), EcnState::Unknown);
    }

    #[test]
    fn missing_counts_fail_validation() {
        let now = crate::testing::virtual_epoch();
        let mut v = EcnValidation::new(true);
        send(&mut v, 3, now);
        // An ACK of unmarked packets without counts says nothing.
        assert_eq!(v.on_ack(APP, 0, None, 0).changed_from, None);
        let out = v.on_ack(APP, 2, None, 2);
        assert_eq!(out.changed_from, Some(EcnState::Testing));
        assert_eq!(v.state(), EcnState::Failed);
        assert!(!v.marking());
    }

    #[test]
    fn remarked_counts_fail_validation() {
        let now = crate::testing::virtual_epoch();
        // ECT(0) remarked to not-ECT on the way: too few counts.
        let mut v = EcnValidation::new(true);
        send(&mut v, 4, now);
        v.on_ack(APP, 3, Some(&counts(2, 0, 0)), 4);
        assert_eq!(v.state(), EcnState::Failed);
        // ECT(1), which we never send.
        let mut v = EcnValidation::new(true);
        send(&mut v, 4, now);
        v.on_ack(APP, 3, Some(&counts(3, 1, 0)), 4);
        assert_eq!(v.state(), EcnState::Failed);
        // More ECT(0) than we sent.
        let mut v = EcnValidation::new(true);
        send(&mut v, 4, now);
        v.on_ack(APP, 3, Some(&counts(5, 0, 0)), 4);
        assert_eq!(v.state(), EcnState::Failed);
        // Counts going down.
        let mut v = EcnValidation::new(true);
        send(&mut v, 4, now);
        v.on_ack(APP, 1, Some(&counts(2, 0, 0)), 2);
        v.on_ack(APP, 3, Some(&counts(1, 0, 0)), 0);
        assert_eq!(v.state(), EcnState::Failed);
    }

    #[test]
    fn ce_counts_are_congestion_and_reordered_acks_are_ignored() {
        let now = crate::testing::virtual_epoch();
        let mut v = EcnValidation::new(true);
        send(&mut v, 4, now);
        let out = v.on_ack(APP, 1, Some(&counts(1, 0, 1)), 2);
        assert!(out.ce_increase);
        let out = v.on_ack(APP, 3, Some(&counts(3, 0, 1)), 2);
        assert!(!out.ce_increase);
        // A late ACK with older, smaller counts neither fails nor signals.
        let out = v.on_ack(APP, 2, Some(&counts(1, 0, 0)), 0);
        assert_eq!(out, EcnAckOutcome::default());
        assert_eq!(v.state(), EcnState::Testing);
    }

    #[test]
    fn all_test_packets_lost_fails() {
        let now = crate::testing::virtual_epoch();
        let mut v = EcnValidation::new(true);
        send(&mut v, 10, now);
        assert_eq!(v.on_marked_lost(4), None);
        assert_eq!(v.on_marked_lost(6), Some(EcnState::Unknown));
        assert_eq!(v.state(), EcnState::Failed);
        // With one acknowledged, losses are just losses.
        let mut v = EcnValidation::new(true);
        send(&mut v, 10, now);
        v.on_ack(APP, 0, Some(&counts(1, 0, 0)), 1);
        v.on_marked_lost(9);
        assert_eq!(v.state(), EcnState::Capable);
    }

    #[test]
    fn disabled_never_marks() {
        let now = crate::testing::virtual_epoch();
        let mut v = EcnValidation::new(false);
        assert_eq!(v.codepoint(), 0);
        assert_eq!(v.on_datagram_sent(false, now, PTO), None);
        assert_eq!(
            v.on_ack(APP, 5, Some(&counts(0, 0, 3)), 0),
            EcnAckOutcome::default()
        );
    }
}
