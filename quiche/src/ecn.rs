//! ECN validation (RFC 9000 §13.4.2, Appendix A.4), per path: whether packets sent on a path
//! go out with ECT(0), and whether the peer's ECN counts can be trusted as a congestion signal
//! for that path.
//!
//! Two pieces, because the peer's counts and the paths do not line up:
//! - [`EcnLedger`], one per connection: what RFC 9000 §13.4.1 makes per packet number space
//!   rather than per path. The peer counts every packet it receives in a space, whatever path
//!   it came on, so the counts of an ACK_ECN frame are cumulative across paths; the ledger
//!   keeps the counts of the last ACK frame processed (the baseline from which the next
//!   frame's increase is measured, §13.4.2.1) and the ECT(0) packets sent on all paths.
//! - [`EcnValidation`], one per path (`crate::path::Path::ecn`): the state of Appendix A.4.
//!   A path the connection starts sending on begins in "testing"; moving back to a path it
//!   used before keeps that path's state.
//!
//! Each sent packet remembers the path it went out on, so an ACK frame is split by path: what
//! it newly acknowledged of each path's packets ([`AckedOnPath`]). The increase of the counts
//! cannot be split that way, so a verdict is given to a path only when the frame speaks for
//! it alone (see [`EcnValidation::on_ack`]); this keeps acknowledgements of packets still in
//! flight on the old path, which arrive for about a round trip after a migration, from
//! deciding the new path's validation either way.
//!
//! The baseline a new path is validated against is thus not a snapshot of the counts taken
//! when the connection moved (Appendix A.4's "existing ECN counts are remembered"): the old
//! path's packets acknowledged after the move raise the counts too, and measured from such a
//! snapshot they would make up for marks the new path removes, or, bleached on the old path,
//! fail a new path that passes them. Measured from the last frame, each frame's increase only
//! has to cover what that frame newly acknowledged (§13.4.2.1), and whose packets those are
//! is known.

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

/// Tests of one path at most. A test whose marked packets were acknowledged only by frames
/// that could not be attributed to the path gives no verdict and is run again; a path that
/// keeps giving none is treated as failed, so that a path never stays in "unknown" for good.
const MAX_TESTS: u8 = 3;

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

/// What one ACK frame newly acknowledged (or one loss detection declared lost) of the packets
/// sent on one path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckedOnPath {
    /// Packets, marked or not.
    pub packets: u64,
    /// Packets sent with ECT(0).
    pub marked: u64,
}

impl AckedOnPath {
    /// Adds one packet.
    pub fn add(&mut self, marked: bool) {
        self.packets += 1;
        self.marked += u64::from(marked);
    }
}

/// How the ECN counts of one ACK frame compare with the last frame's and with what was sent,
/// over all paths (RFC 9000 §13.4.2.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountCheck {
    /// The frame did not increase the largest acknowledged packet number: it must not fail
    /// validation (§13.4.2.1), and it validates nothing either.
    pub stale: bool,
    /// Marked packets the frame newly acknowledged, on all paths.
    pub marked: u64,
    /// How many of those the increase of the ECT(0) and CE counts does not account for
    /// (all of them when the frame has no counts): marks removed on the way.
    pub missing: u64,
    /// A count went down: the peer's doing, never a path's.
    pub decreased: bool,
    /// The ECT(1) count rose (we never send ECT(1)), or the ECT(0) count rose above the
    /// packets ever sent with it: something remarked packets to ECT on the way.
    pub remarked: bool,
    /// The CE count rose (RFC 9002 §7.1).
    pub ce_increase: bool,
}

impl CountCheck {
    /// Whether the counts passed every check.
    pub fn clean(&self) -> bool {
        !self.stale && self.missing == 0 && !self.decreased && !self.remarked
    }
}

/// The connection's ECN bookkeeping that belongs to packet number spaces rather than paths.
#[derive(Clone, Debug)]
pub struct EcnLedger {
    enabled: bool,
    /// Per packet number space: ECT(0) packets sent on any path, the counts of the last ACK
    /// frame processed (the baseline of the next increase), and the largest packet number
    /// acknowledged.
    sent_ect0: [u64; 3],
    counts: [EcnCounts; 3],
    largest_acked: [Option<u64>; 3],
    /// Marked packets newly acknowledged while another path than theirs was the active one
    /// (the tail of a path the connection left), for tests and diagnostics.
    pub(crate) off_path_marked_acked: u64,
    /// ACK frames among those whose counts missed marks: what a validation that ignored the
    /// path of each packet would have held against the active path.
    pub(crate) off_path_missing_frames: u64,
}

impl EcnLedger {
    /// The ledger of a new connection; `enabled` false keeps every packet unmarked.
    pub fn new(enabled: bool) -> Self {
        EcnLedger {
            enabled,
            sent_ect0: [0; 3],
            counts: [EcnCounts::default(); 3],
            largest_acked: [None; 3],
            off_path_marked_acked: 0,
            off_path_missing_frames: 0,
        }
    }

    /// The validation a path the connection starts using begins with.
    pub fn new_path(&self) -> EcnValidation {
        EcnValidation::new(self.enabled)
    }

    /// A packet of `epoch` went out marked.
    pub fn on_marked_sent(&mut self, epoch: Epoch) {
        self.sent_ect0[epoch.index()] += 1;
    }

    /// Compares the counts of an ACK frame of `epoch` whose largest acknowledged packet is
    /// `largest` with the last frame's, given `marked` ECT(0) packets it newly acknowledged on
    /// all paths, and makes them the baseline of the next frame.
    ///
    /// The baseline moves with every frame that raises the largest acknowledged packet, even
    /// one that fails a path: the next frame's increase must only cover what that frame
    /// newly acknowledges, or one path's packets counted in an earlier frame would make up for
    /// another path's missing marks.
    pub fn check(
        &mut self,
        epoch: Epoch,
        largest: u64,
        counts: Option<&EcnCounts>,
        marked: u64,
    ) -> CountCheck {
        let i = epoch.index();
        let mut out = CountCheck {
            marked,
            ..CountCheck::default()
        };
        if !self.enabled || self.largest_acked[i].is_some_and(|l| largest <= l) {
            out.stale = true;
            return out;
        }
        self.largest_acked[i] = Some(largest);
        let base = self.counts[i];
        let Some(c) = counts else {
            // Marked packets acknowledged without counts: the path bleaches the field or the
            // peer does not report it.
            out.missing = marked;
            return out;
        };
        out.decreased = c.ect0 < base.ect0 || c.ect1 < base.ect1 || c.ecn_ce < base.ecn_ce;
        let increase = c.ect0.saturating_sub(base.ect0) + c.ecn_ce.saturating_sub(base.ecn_ce);
        // Fewer ECT(0)+CE than marked packets acknowledged: remarked to not-ECT.
        out.missing = marked.saturating_sub(increase);
        // Relative to this frame's increase, so that one remarking event is judged once and
        // does not stay against every later frame.
        out.remarked = c.ect1 > base.ect1 || (c.ect0 > base.ect0 && c.ect0 > self.sent_ect0[i]);
        out.ce_increase = c.ecn_ce > base.ecn_ce;
        self.counts[i] = *c;
        out
    }

    /// ECT(0) packets sent in `epoch` (tests).
    #[cfg(test)]
    pub fn sent_ect0(&self, epoch: Epoch) -> u64 {
        self.sent_ect0[epoch.index()]
    }

    /// The peer's last ECT(0) count in `epoch` (tests).
    #[cfg(test)]
    pub fn peer_ect0(&self, epoch: Epoch) -> u64 {
        self.counts[epoch.index()].ect0
    }
}

/// ECN validation of one path.
#[derive(Clone, Debug)]
pub struct EcnValidation {
    state: EcnState,
    /// When the first marked packet of the test went out.
    testing_since: Option<Instant>,
    /// Marked datagrams sent while testing.
    testing_sent: u64,
    /// Tests run (see [`MAX_TESTS`]).
    tests: u8,
    /// Marked packets of the path acknowledged by any frame, acknowledged by frames whose
    /// counts validated them, and declared lost, since the test began.
    marked_acked: u64,
    marked_validated: u64,
    marked_lost: u64,
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
            tests: 1,
            marked_acked: 0,
            marked_validated: 0,
            marked_lost: 0,
        }
    }

    /// The current state.
    pub fn state(&self) -> EcnState {
        self.state
    }

    /// Whether packets sent now on the path carry ECT(0).
    pub fn marking(&self) -> bool {
        matches!(self.state, EcnState::Testing | EcnState::Capable)
    }

    /// The codepoint for the IP header of a datagram sent now on the path.
    pub fn codepoint(&self) -> u8 {
        if self.marking() {
            ECT0
        } else {
            0
        }
    }

    /// A datagram went out on the path: while testing, counts it and ends the test after
    /// enough packets or time. Returns the previous state if it changed.
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
            let next = if self.marked_validated > 0 {
                EcnState::Capable
            } else {
                EcnState::Unknown
            };
            return self.set(next);
        }
        None
    }

    /// Marked packets sent on the path were declared lost: if every packet of the test is lost
    /// and none was acknowledged, the marks are taken to be what the path drops (Appendix A.4).
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

    /// Applies the `check` of an ACK frame to the path, given what the frame newly
    /// acknowledged of the path's packets (`on`) and whether those were all it newly
    /// acknowledged (`sole`). Returns the previous state if it changed.
    ///
    /// RFC 9000 §13.4.2.1 validates an increase of the counts against the packets a frame
    /// newly acknowledges. After a migration, frames acknowledge packets of both paths for
    /// about a round trip, and the increase does not say which path's marks went missing or
    /// were rewritten. So:
    /// - missing marks fail the path only if the other paths' marked packets in the frame are
    ///   too few to account for them all (always so when the frame acknowledges this path's
    ///   packets alone);
    /// - a rewrite to ECT fails the path only when the frame acknowledges its packets alone;
    /// - a count that went down fails every path: only the peer can do that;
    /// - clean counts validate every path the frame acknowledged packets of;
    /// - otherwise the frame is inconclusive for the path, which neither fails nor is
    ///   validated by it; the next frames, which acknowledge the new path's packets alone once
    ///   the old path's are settled, decide.
    pub fn on_ack(&mut self, check: &CountCheck, on: AckedOnPath, sole: bool) -> Option<EcnState> {
        self.marked_acked += on.marked;
        if self.state == EcnState::Failed || check.stale {
            return None;
        }
        if check.decreased {
            return self.set(EcnState::Failed);
        }
        if on.packets == 0 {
            return None;
        }
        let others_marked = check.marked.saturating_sub(on.marked);
        if (on.marked > 0 && check.missing > others_marked) || (check.remarked && sole) {
            return self.set(EcnState::Failed);
        }
        if !check.clean() {
            return None;
        }
        self.marked_validated += on.marked;
        if self.state != EcnState::Unknown {
            return None;
        }
        if self.marked_validated > 0 {
            return self.set(EcnState::Capable);
        }
        if self.marked_acked > 0 {
            // The test's marked packets were acknowledged, but only by inconclusive frames,
            // and now clean counts acknowledged the path's packets with nothing marked left to
            // judge: test again.
            return self.retest();
        }
        None
    }

    fn retest(&mut self) -> Option<EcnState> {
        if self.tests >= MAX_TESTS {
            return self.set(EcnState::Failed);
        }
        self.tests += 1;
        self.testing_since = None;
        self.testing_sent = 0;
        self.marked_acked = 0;
        self.marked_lost = 0;
        self.set(EcnState::Testing)
    }

    fn set(&mut self, new: EcnState) -> Option<EcnState> {
        let old = std::mem::replace(&mut self.state, new);
        (old != new).then_some(old)
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

    /// One path and its connection's ledger.
    struct One {
        ledger: EcnLedger,
        v: EcnValidation,
    }

    impl One {
        fn new(enabled: bool) -> Self {
            let ledger = EcnLedger::new(enabled);
            let v = ledger.new_path();
            One { ledger, v }
        }

        /// Sends `n` marked single-packet datagrams.
        fn send(&mut self, n: u64, now: Instant) {
            for _ in 0..n {
                assert!(self.v.marking());
                self.ledger.on_marked_sent(APP);
                self.v.on_datagram_sent(true, now, PTO);
            }
        }

        /// An ACK frame that newly acknowledges `marked` marked packets of this path only.
        fn ack(
            &mut self,
            largest: u64,
            c: Option<EcnCounts>,
            marked: u64,
        ) -> (CountCheck, Option<EcnState>) {
            let check = self.ledger.check(APP, largest, c.as_ref(), marked);
            let on = AckedOnPath {
                packets: marked.max(1),
                marked,
            };
            (check, self.v.on_ack(&check, on, true))
        }
    }

    #[test]
    fn testing_ends_after_ten_packets_then_valid_counts_make_the_path_capable() {
        let now = crate::testing::virtual_epoch();
        let mut o = One::new(true);
        assert_eq!(o.v.codepoint(), ECT0);
        o.send(9, now);
        assert_eq!(o.v.state(), EcnState::Testing);
        o.send(1, now);
        assert_eq!(o.v.state(), EcnState::Unknown);
        assert_eq!(o.v.codepoint(), 0);
        let (check, change) = o.ack(9, Some(counts(10, 0, 0)), 10);
        assert_eq!(change, Some(EcnState::Unknown));
        assert!(!check.ce_increase);
        assert_eq!(o.v.state(), EcnState::Capable);
        assert_eq!(o.v.codepoint(), ECT0);
    }

    #[test]
    fn marked_packets_validated_during_the_test_make_the_path_capable_when_it_ends() {
        let now = crate::testing::virtual_epoch();
        let mut o = One::new(true);
        o.send(3, now);
        let (check, change) = o.ack(2, Some(counts(3, 0, 0)), 3);
        assert!(check.clean() && !check.ce_increase);
        assert_eq!(change, None);
        assert_eq!(o.v.state(), EcnState::Testing);
        assert_eq!(o.v.on_datagram_sent(true, now, PTO), None);
        o.send(6, now);
        assert_eq!(o.v.state(), EcnState::Capable);
    }

    #[test]
    fn testing_ends_after_three_ptos() {
        let now = crate::testing::virtual_epoch();
        let mut o = One::new(true);
        o.send(1, now);
        o.send(1, now + PTO * 3);
        assert_eq!(o.v.state(), EcnState::Unknown);
    }

    #[test]
    fn missing_counts_fail_validation() {
        let now = crate::testing::virtual_epoch();
        let mut o = One::new(true);
        o.send(3, now);
        // An ACK of unmarked packets without counts says nothing.
        assert_eq!(o.ack(0, None, 0).1, None);
        assert_eq!(o.ack(2, None, 2).1, Some(EcnState::Testing));
        assert_eq!(o.v.state(), EcnState::Failed);
        assert!(!o.v.marking());
    }

    #[test]
    fn remarked_counts_fail_validation() {
        let now = crate::testing::virtual_epoch();
        let cases = [
            // ECT(0) remarked to not-ECT on the way: too few counts.
            vec![(3, counts(2, 0, 0), 4)],
            // ECT(1), which we never send.
            vec![(3, counts(3, 1, 0), 4)],
            // More ECT(0) than we sent.
            vec![(3, counts(5, 0, 0), 4)],
            // Counts going down.
            vec![(1, counts(2, 0, 0), 2), (3, counts(1, 0, 0), 0)],
        ];
        for acks in cases {
            let mut o = One::new(true);
            o.send(4, now);
            for (largest, c, marked) in &acks {
                o.ack(*largest, Some(*c), *marked);
            }
            assert_eq!(o.v.state(), EcnState::Failed, "{acks:?}");
        }
    }

    #[test]
    fn ce_counts_are_congestion_and_reordered_acks_are_ignored() {
        let now = crate::testing::virtual_epoch();
        let mut o = One::new(true);
        o.send(4, now);
        assert!(o.ack(1, Some(counts(1, 0, 1)), 2).0.ce_increase);
        assert!(!o.ack(3, Some(counts(3, 0, 1)), 2).0.ce_increase);
        // A late ACK with older, smaller counts neither fails nor signals.
        let (check, change) = o.ack(2, Some(counts(1, 0, 0)), 0);
        assert!(check.stale && !check.ce_increase);
        assert_eq!(change, None);
        assert_eq!(o.v.state(), EcnState::Testing);
    }

    #[test]
    fn all_test_packets_lost_fails() {
        let now = crate::testing::virtual_epoch();
        let mut o = One::new(true);
        o.send(10, now);
        assert_eq!(o.v.on_marked_lost(4), None);
        assert_eq!(o.v.on_marked_lost(6), Some(EcnState::Unknown));
        assert_eq!(o.v.state(), EcnState::Failed);
        // With one acknowledged, losses are just losses.
        let mut o = One::new(true);
        o.send(10, now);
        o.ack(0, Some(counts(1, 0, 0)), 1);
        o.v.on_marked_lost(9);
        assert_eq!(o.v.state(), EcnState::Capable);
    }

    #[test]
    fn disabled_never_marks() {
        let now = crate::testing::virtual_epoch();
        let mut o = One::new(false);
        assert_eq!(o.v.codepoint(), 0);
        assert_eq!(o.v.on_datagram_sent(false, now, PTO), None);
        let (check, change) = o.ack(5, Some(counts(0, 0, 3)), 0);
        assert!(!check.ce_increase);
        assert_eq!(change, None);
    }

    /// Two paths: `old` validated, `new` just started; frames acknowledge packets of both.
    fn two_paths(now: Instant) -> (EcnLedger, EcnValidation, EcnValidation) {
        let mut ledger = EcnLedger::new(true);
        let mut old = ledger.new_path();
        for _ in 0..20 {
            ledger.on_marked_sent(APP);
            old.on_datagram_sent(true, now, PTO);
        }
        let check = ledger.check(APP, 9, Some(&counts(10, 0, 0)), 10);
        old.on_ack(
            &check,
            AckedOnPath {
                packets: 10,
                marked: 10,
            },
            true,
        );
        assert_eq!(old.state(), EcnState::Capable);
        let mut new = ledger.new_path();
        for _ in 0..5 {
            ledger.on_marked_sent(APP);
            new.on_datagram_sent(true, now, PTO);
        }
        (ledger, old, new)
    }

    #[test]
    fn missing_marks_in_a_frame_of_two_paths_fail_only_a_path_that_must_have_lost_them() {
        let now = crate::testing::virtual_epoch();
        // 10 old and 5 new marked packets acknowledged, 7 counted: 8 marks missing. The old
        // path's 10 could account for all 8: inconclusive for the new path, which stays in its
        // test. The new path's 5 cannot: the old path lost some for sure and fails.
        let (mut ledger, mut old, mut new) = two_paths(now);
        let check = ledger.check(APP, 24, Some(&counts(17, 0, 0)), 15);
        assert_eq!(check.missing, 8);
        assert_eq!(
            new.on_ack(
                &check,
                AckedOnPath {
                    packets: 5,
                    marked: 5
                },
                false
            ),
            None
        );
        assert_eq!(new.state(), EcnState::Testing);
        assert_eq!(
            old.on_ack(
                &check,
                AckedOnPath {
                    packets: 10,
                    marked: 10
                },
                false
            ),
            Some(EcnState::Capable)
        );
        assert_eq!(old.state(), EcnState::Failed);
        // Next, a frame of the new path alone with its marks missing fails it.
        ledger.on_marked_sent(APP);
        let check = ledger.check(APP, 25, Some(&counts(17, 0, 0)), 1);
        assert_eq!(
            new.on_ack(
                &check,
                AckedOnPath {
                    packets: 1,
                    marked: 1
                },
                true
            ),
            Some(EcnState::Testing)
        );
    }

    #[test]
    fn clean_counts_in_a_frame_of_two_paths_validate_both_and_remarks_fail_only_a_sole_path() {
        let now = crate::testing::virtual_epoch();
        let (mut ledger, mut old, mut new) = two_paths(now);
        let check = ledger.check(APP, 24, Some(&counts(25, 0, 0)), 15);
        assert!(check.clean());
        assert_eq!(
            old.on_ack(
                &check,
                AckedOnPath {
                    packets: 10,
                    marked: 10
                },
                false
            ),
            None
        );
        assert_eq!(
            new.on_ack(
                &check,
                AckedOnPath {
                    packets: 5,
                    marked: 5
                },
                false
            ),
            None
        );
        for _ in 0..5 {
            ledger.on_marked_sent(APP);
            new.on_datagram_sent(true, now, PTO);
        }
        assert_eq!(new.state(), EcnState::Capable, "validated during its test");
        // ECT(1) in a frame of both paths: whose? Neither fails; in a frame of one, it does.
        let check = ledger.check(APP, 26, Some(&counts(25, 1, 0)), 0);
        assert!(check.remarked);
        let on = AckedOnPath {
            packets: 1,
            marked: 0,
        };
        assert_eq!(old.on_ack(&check, on, false), None);
        assert_eq!(new.on_ack(&check, on, false), None);
        let check = ledger.check(APP, 27, Some(&counts(25, 2, 0)), 0);
        assert_eq!(new.on_ack(&check, on, true), Some(EcnState::Capable));
        assert_eq!(old.state(), EcnState::Capable);
        // A count going down fails every path, whatever the frame acknowledged.
        let check = ledger.check(APP, 28, Some(&counts(24, 2, 0)), 0);
        assert_eq!(
            old.on_ack(&check, AckedOnPath::default(), false),
            Some(EcnState::Capable)
        );
    }

    #[test]
    fn a_test_acknowledged_only_by_inconclusive_frames_is_run_again_a_bounded_number_of_times() {
        let now = crate::testing::virtual_epoch();
        let mut ledger = EcnLedger::new(true);
        let mut v = ledger.new_path();
        let (mut largest, mut ect0) = (0, 0);
        for round in 1..=MAX_TESTS {
            assert_eq!(v.state(), EcnState::Testing, "round {round}");
            for _ in 0..TESTING_PACKETS {
                ledger.on_marked_sent(APP);
                v.on_datagram_sent(true, now, PTO);
            }
            assert_eq!(v.state(), EcnState::Unknown);
            // Acknowledged with another path's 10 marked packets, 10 marks missing: no
            // verdict.
            largest += 20;
            ect0 += 10;
            let check = ledger.check(APP, largest, Some(&counts(ect0, 0, 0)), 20);
            let on = AckedOnPath {
                packets: 10,
                marked: 10,
            };
            assert_eq!(v.on_ack(&check, on, false), None);
            // A clean frame of this path alone, nothing marked: test again.
            largest += 1;
            let check = ledger.check(APP, largest, Some(&counts(ect0, 0, 0)), 0);
            let on = AckedOnPath {
                packets: 1,
                marked: 0,
            };
            let want = if round < MAX_TESTS {
                EcnState::Testing
            } else {
                EcnState::Failed
            };
            v.on_ack(&check, on, true);
            assert_eq!(v.state(), want);
        }
    }
}
