//! The connection's side of ECN (RFC 9000 §13.4, RFC 9002 §7.1): what acknowledgements and
//! losses tell each path's validation, and what the validation tells the controller and qlog.
//! The validation itself is in [`crate::ecn`]: one state per path, started afresh ("testing")
//! on every path the connection starts sending on (a NAT rebinding the server follows, a
//! client's migration), kept with the path if the connection comes back to it. Probes of
//! other paths go unmarked.

pub use crate::ecn::{EcnState, ECT0};

use std::time::Instant;

use super::sent_frames::SentFrames;
use crate::ecn::AckedOnPath;
use crate::frame::EcnCounts;
use crate::packet::Epoch;
use crate::path::MAX_PATHS;

/// What an ACK frame newly acknowledged, or a loss detection declared lost, split by the path
/// each packet went out on. Fixed size: nothing is allocated per ACK frame.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PathTallies {
    /// Per path of the set: its uid (0 for an empty entry) and its packets.
    paths: [(u64, AckedOnPath); MAX_PATHS],
    /// Packets of paths no longer in the set.
    gone: AckedOnPath,
}

impl PathTallies {
    /// The packets of the path with `uid`.
    fn on(&self, uid: u64) -> AckedOnPath {
        self.paths
            .iter()
            .find(|(u, _)| *u == uid && uid != 0)
            .map(|(_, a)| *a)
            .unwrap_or_default()
    }

    /// The packets of all paths.
    fn total(&self) -> AckedOnPath {
        self.paths.iter().map(|(_, a)| a).chain([&self.gone]).fold(
            AckedOnPath::default(),
            |t, a| AckedOnPath {
                packets: t.packets + a.packets,
                marked: t.marked + a.marked,
            },
        )
    }

    /// How many paths (the paths gone counting as one) the packets were sent on.
    fn owners(&self) -> usize {
        self.paths
            .iter()
            .map(|(_, a)| a)
            .chain([&self.gone])
            .filter(|a| a.packets > 0)
            .count()
    }
}

impl<F: crate::buffers::BufFactory> super::Connection<F> {
    /// Splits `packets` (newly acknowledged or lost) by the path they went out on.
    pub(super) fn ecn_tally<'a>(
        &self,
        packets: impl Iterator<Item = &'a SentFrames>,
    ) -> PathTallies {
        let mut t = PathTallies::default();
        for (entry, (_, path)) in t.paths.iter_mut().zip(self.paths.iter()) {
            entry.0 = path.uid();
        }
        for frames in packets {
            let entry = t
                .paths
                .iter_mut()
                .find(|(uid, _)| *uid != 0 && *uid == frames.path);
            match entry {
                Some((_, a)) => a.add(frames.ecn_marked),
                None => t.gone.add(frames.ecn_marked),
            }
        }
        t
    }

    /// After recovery processed an ACK frame of `epoch` (largest acknowledged `largest`, with
    /// `counts` if it was an ACK_ECN) whose newly acknowledged packets are `acked`: validates
    /// the counts for each path (see [`crate::ecn::EcnValidation::on_ack`] for how a frame
    /// that acknowledges packets of several paths is attributed), and an increase of the CE
    /// count is a congestion event for the active path's controller (RFC 9002 §7.1; its
    /// recovery period makes it one per round trip, and nothing is retransmitted).
    pub(super) fn on_ack_ecn(
        &mut self,
        epoch: Epoch,
        largest: u64,
        counts: Option<&EcnCounts>,
        acked: &PathTallies,
        now: Instant,
    ) {
        let total = acked.total();
        let check = self.ecn.check(epoch, largest, counts, total.marked);
        let sole = acked.owners() == 1;
        let mut changes = [None; MAX_PATHS];
        for (id, path) in self.paths.iter_mut() {
            let change = path.ecn.on_ack(&check, acked.on(path.uid()), sole);
            if let Some(slot) = changes.get_mut(id) {
                *slot = change;
            }
        }
        self.log_ecn_changes(&changes, now);
        let active = self.paths.active();
        let on_active = acked.on(active.uid());
        let off_path = total.marked - on_active.marked;
        self.ecn.off_path_marked_acked += off_path;
        if off_path > 0 && check.missing > 0 {
            self.ecn.off_path_missing_frames += 1;
        }
        // A rise of the CE count with no marked packet of the active path newly acknowledged
        // reports congestion on a path the connection left, whose controller is not this one
        // (RFC 9000 §9.4).
        let ce = check.ce_increase
            && check.clean()
            && active.ecn.state() != EcnState::Failed
            && (total.marked == 0 || on_active.marked > 0);
        if ce && self.recovery.on_ecn_ce_increase(epoch, now) {
            self.stats.ecn_ce_congestion_events += 1;
            super::qlog::qlog!(self, q => {
                use crate::cc::CongestionControl;
                let state = self.recovery.controller().state().as_str();
                q.congestion_state_updated(now, state, Some(crate::qlog::CongestionTrigger::Ecn));
            });
        }
    }

    /// Packets were declared lost: the marked ones count against the test of the path they
    /// went out on.
    pub(super) fn on_ecn_lost(&mut self, lost: &PathTallies) {
        let mut changes = [None; MAX_PATHS];
        for (id, path) in self.paths.iter_mut() {
            let marked = lost.on(path.uid()).marked;
            if marked > 0 {
                if let Some(slot) = changes.get_mut(id) {
                    *slot = path.ecn.on_marked_lost(marked);
                }
            }
        }
        if let Some(now) = self.last_now {
            self.log_ecn_changes(&changes, now);
        }
    }

    /// The connection now sends on path `id` instead of `old`: the state that governs marking
    /// is now that path's, fresh ("testing") for a path not used before (RFC 9000 §13.4.2,
    /// Appendix A.4).
    pub(super) fn on_ecn_path_switch(&mut self, old: usize, now: Instant) {
        if let Some(old_state) = self.paths.get(old).map(|p| p.ecn.state()) {
            if old_state != self.paths.active().ecn.state() {
                self.log_ecn_change(Some(old_state), now);
            }
        }
    }

    /// Logs the state changes of paths (indexed by path id): qlog's `ecn_state_updated`
    /// describes the state that governs marking, the active path's; changes of other paths
    /// (late acknowledgements of packets sent there) go to the debug log only.
    fn log_ecn_changes(&mut self, changes: &[Option<EcnState>; MAX_PATHS], now: Instant) {
        let active = self.paths.active_id();
        for (id, change) in changes.iter().enumerate() {
            match (change, self.paths.get(id)) {
                (Some(old), _) if id == active => self.log_ecn_change(Some(*old), now),
                (Some(old), Some(p)) => log::debug!(
                    "{} ECN on path {} -> {}: {} -> {}",
                    self.trace_id(),
                    p.local,
                    p.peer,
                    old.as_str(),
                    p.ecn.state().as_str()
                ),
                _ => {}
            }
        }
    }

    /// Logs `recovery:ecn_state_updated` if the active path's state changed from `old`.
    #[cfg_attr(not(feature = "qlog"), allow(unused_variables))]
    pub(super) fn log_ecn_change(&mut self, old: Option<EcnState>, now: Instant) {
        if let Some(old) = old {
            let new = self.paths.active().ecn.state();
            log::debug!(
                "{} ECN {} -> {}",
                self.trace_id(),
                old.as_str(),
                new.as_str()
            );
            super::qlog::qlog!(self, q => q.ecn_state_updated(now, Some(old.as_str()), new.as_str()));
        }
    }

    /// The ECN validation state of the active path (RFC 9000 Appendix A.4). Beyond quiche's
    /// API.
    pub fn ecn_state(&self) -> EcnState {
        self.paths.active().ecn.state()
    }

    /// The ECN codepoint the next datagram [`send`](super::Connection::send) writes on the
    /// active path will carry in its [`SendInfo::ecn`](super::SendInfo::ecn). Beyond quiche's
    /// API.
    pub fn send_ecn_codepoint(&self) -> u8 {
        self.paths.active().ecn.codepoint()
    }
}
