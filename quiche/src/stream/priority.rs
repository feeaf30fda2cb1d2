//! Send order between streams, following the Extensible Priorities of RFC 9218.
//!
//! * Lower urgency (0–7, default 3, §4.1) is served first.
//! * Within one urgency, non-incremental streams are served one after another in stream-ID order
//!   (§4.2 and §10: "in ascending order of the stream ID"), each until it has nothing left.
//! * Within one urgency, incremental streams share the bandwidth round-robin: after a stream
//!   emits a frame, the next one in ID order gets the next turn (wrapping around).
//! * When one urgency holds both kinds, the non-incremental ones go first: they are useless to
//!   the receiver until complete, so finishing them early helps most. (RFC 9218 §10 leaves the
//!   mix to the implementation.)
//!
//! Only streams with something to send are in the scheduler, kept in per-urgency ordered sets, so
//! choosing the next stream costs O(log n) whatever the number of idle streams.

use std::collections::BTreeSet;
use std::ops::Bound;

/// The default urgency (RFC 9218 §4.1).
pub const DEFAULT_URGENCY: u8 = 3;

/// The largest (least urgent) urgency value.
pub const MAX_URGENCY: u8 = 7;

const LEVELS: usize = MAX_URGENCY as usize + 1;

/// A stream's priority: urgency and the incremental flag (RFC 9218 §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Priority {
    urgency: u8,
    incremental: bool,
}

impl Default for Priority {
    /// Urgency 3, not incremental (RFC 9218 §4.1–4.2).
    fn default() -> Self {
        Priority {
            urgency: DEFAULT_URGENCY,
            incremental: false,
        }
    }
}

impl Priority {
    /// A priority; `None` if `urgency` is above [`MAX_URGENCY`].
    pub fn new(urgency: u8, incremental: bool) -> Option<Self> {
        (urgency <= MAX_URGENCY).then_some(Priority {
            urgency,
            incremental,
        })
    }

    /// The urgency, 0 (most urgent) to 7.
    pub fn urgency(&self) -> u8 {
        self.urgency
    }

    /// Whether the stream's data is useful incrementally.
    pub fn incremental(&self) -> bool {
        self.incremental
    }
}

#[derive(Debug, Default)]
struct Level {
    /// Non-incremental streams, served lowest ID first.
    sequential: BTreeSet<u64>,
    /// Incremental streams, served round-robin in ID order.
    incremental: BTreeSet<u64>,
    /// The incremental stream that had the last turn.
    last_turn: Option<u64>,
}

impl Level {
    fn next(&self) -> Option<u64> {
        if let Some(&id) = self.sequential.first() {
            return Some(id);
        }
        let after = self.last_turn.and_then(|last| {
            self.incremental
                .range((Bound::Excluded(last), Bound::Unbounded))
                .next()
        });
        after.or_else(|| self.incremental.first()).copied()
    }
}

/// The streams that have data to send, by priority.
#[derive(Debug, Default)]
pub(crate) struct Scheduler {
    levels: [Level; LEVELS],
}

impl Scheduler {
    fn level(&mut self, p: Priority) -> &mut Level {
        // `Priority` cannot hold an urgency above MAX_URGENCY; `min` keeps the index in range
        // regardless.
        let i = usize::from(p.urgency).min(LEVELS - 1);
        &mut self.levels[i]
    }

    /// Adds a stream that has something to send.
    pub(crate) fn insert(&mut self, id: u64, p: Priority) {
        let level = self.level(p);
        if p.incremental {
            level.incremental.insert(id);
        } else {
            level.sequential.insert(id);
        }
    }

    /// Removes a stream (nothing left to send, priority change, or gone).
    pub(crate) fn remove(&mut self, id: u64, p: Priority) {
        let level = self.level(p);
        if p.incremental {
            level.incremental.remove(&id);
        } else {
            level.sequential.remove(&id);
        }
    }

    /// The stream that should send next.
    pub(crate) fn next(&self) -> Option<u64> {
        self.levels.iter().find_map(Level::next)
    }

    /// Records that `id` just emitted a frame: an incremental stream passes the turn on.
    pub(crate) fn on_emitted(&mut self, id: u64, p: Priority) {
        if p.incremental {
            self.level(p).last_turn = Some(id);
        }
    }

    /// Whether no stream has anything to send.
    pub(crate) fn is_empty(&self) -> bool {
        self.levels
            .iter()
            .all(|l| l.sequential.is_empty() && l.incremental.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(u: u8, i: bool) -> Priority {
        Priority::new(u, i).unwrap()
    }

    #[test]
    fn urgency_above_seven_is_rejected() {
        assert!(Priority::new(8, false).is_none());
        assert_eq!(Priority::new(7, true).unwrap().urgency(), 7);
        assert_eq!(Priority::default(), p(3, false));
    }

    #[test]
    fn lower_urgency_first_then_id_order() {
        let mut s = Scheduler::default();
        s.insert(8, p(3, false));
        s.insert(4, p(3, false));
        s.insert(12, p(1, false));
        assert_eq!(s.next(), Some(12));
        s.remove(12, p(1, false));
        assert_eq!(s.next(), Some(4));
        // Emitting does not rotate non-incremental streams.
        s.on_emitted(4, p(3, false));
        assert_eq!(s.next(), Some(4));
        s.remove(4, p(3, false));
        assert_eq!(s.next(), Some(8));
        s.remove(8, p(3, false));
        assert!(s.is_empty());
        assert_eq!(s.next(), None);
    }

    #[test]
    fn incremental_round_robin() {
        let mut s = Scheduler::default();
        for id in [0, 4, 8] {
            s.insert(id, p(5, true));
        }
        let mut seq = Vec::new();
        for _ in 0..7 {
            let id = s.next().unwrap();
            seq.push(id);
            s.on_emitted(id, p(5, true));
        }
        assert_eq!(seq, vec![0, 4, 8, 0, 4, 8, 0]);
        // A stream leaving the rotation is skipped; one joining takes its place in ID order.
        s.remove(4, p(5, true));
        s.insert(6, p(5, true));
        let mut seq = Vec::new();
        for _ in 0..4 {
            let id = s.next().unwrap();
            seq.push(id);
            s.on_emitted(id, p(5, true));
        }
        assert_eq!(seq, vec![6, 8, 0, 6]);
    }

    #[test]
    fn sequential_before_incremental_within_an_urgency() {
        let mut s = Scheduler::default();
        s.insert(0, p(3, true));
        s.insert(40, p(3, false));
        assert_eq!(s.next(), Some(40));
        s.remove(40, p(3, false));
        assert_eq!(s.next(), Some(0));
    }
}
