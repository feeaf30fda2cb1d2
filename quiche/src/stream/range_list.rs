//! A small sorted list of disjoint, non-adjacent `u64` ranges, for the send buffer's acked and
//! lost byte ranges.
//!
//! The ranges describe frames we sent ourselves, so their number is bounded by what we put in
//! flight; a `Vec` with binary search is compact and keeps its capacity between uses (no
//! allocation in steady state).

use std::ops::Range;

/// Disjoint ranges, sorted by start; adjacent or overlapping insertions are merged.
#[derive(Clone, Debug, Default)]
pub(crate) struct RangeList {
    ranges: Vec<Range<u64>>,
}

impl RangeList {
    /// Whether no range is stored.
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Number of disjoint ranges.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }

    /// The lowest range.
    pub(crate) fn first(&self) -> Option<Range<u64>> {
        self.ranges.first().cloned()
    }

    /// The ranges in ascending order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Range<u64>> + '_ {
        self.ranges.iter()
    }

    /// Removes every range.
    pub(crate) fn clear(&mut self) {
        self.ranges.clear();
    }

    /// Whether `x` lies in one of the ranges.
    pub(crate) fn contains(&self, x: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.end <= x);
        self.ranges.get(i).is_some_and(|r| r.start <= x)
    }

    /// Adds `r`, merging it with every range it overlaps or touches.
    pub(crate) fn insert(&mut self, r: Range<u64>) {
        if r.start >= r.end {
            return;
        }
        // First range that ends at or after r.start (could merge), and the first that starts
        // after r.end (cannot).
        let i = self.ranges.partition_point(|x| x.end < r.start);
        let j = self.ranges.partition_point(|x| x.start <= r.end);
        if i == j {
            self.ranges.insert(i, r);
            return;
        }
        let start = r.start.min(self.ranges[i].start);
        let end = r.end.max(self.ranges[j - 1].end);
        self.ranges[i] = start..end;
        self.ranges.drain(i + 1..j);
    }

    /// Removes `r` from the set, splitting a range that contains it.
    pub(crate) fn remove(&mut self, r: Range<u64>) {
        if r.start >= r.end {
            return;
        }
        // Ranges overlapping r are those at indices i..j.
        let i = self.ranges.partition_point(|x| x.end <= r.start);
        let j = self.ranges.partition_point(|x| x.start < r.end);
        if i >= j {
            return;
        }
        let head = self.ranges[i].start..r.start;
        let tail = r.end..self.ranges[j - 1].end;
        let mut keep = i;
        if head.start < head.end {
            self.ranges[keep] = head;
            keep += 1;
        }
        if tail.start < tail.end {
            if keep < j {
                self.ranges[keep] = tail;
            } else {
                // Only when a single range is split in two.
                self.ranges.insert(keep, tail);
            }
            keep += 1;
        }
        if keep < j {
            self.ranges.drain(keep..j);
        }
    }

    /// Removes and returns the lowest range if it starts at or below `x` (used to advance a
    /// contiguous front).
    pub(crate) fn pop_if_starts_at_or_below(&mut self, x: u64) -> Option<Range<u64>> {
        if self.ranges.first().is_some_and(|r| r.start <= x) {
            Some(self.ranges.remove(0))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn as_vec(l: &RangeList) -> Vec<Range<u64>> {
        l.iter().cloned().collect()
    }

    #[test]
    fn insert_merges_overlapping_and_adjacent() {
        let mut l = RangeList::default();
        l.insert(10..20);
        l.insert(30..40);
        l.insert(20..25);
        assert_eq!(as_vec(&l), vec![10..25, 30..40]);
        l.insert(5..8);
        l.insert(24..31);
        assert_eq!(as_vec(&l), vec![5..8, 10..40]);
        l.insert(0..100);
        assert_eq!(as_vec(&l), vec![0..100]);
        l.insert(50..50);
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn remove_splits_and_trims() {
        let mut l = RangeList::default();
        l.insert(0..100);
        l.remove(10..20);
        assert_eq!(as_vec(&l), vec![0..10, 20..100]);
        l.remove(5..30);
        assert_eq!(as_vec(&l), vec![0..5, 30..100]);
        l.insert(200..300);
        l.remove(50..250);
        assert_eq!(as_vec(&l), vec![0..5, 30..50, 250..300]);
        l.remove(0..1000);
        assert!(l.is_empty());
    }

    #[test]
    fn matches_a_bitmap_model() {
        let mut seed = 0x1234_5678_9abc_def1_u64;
        let mut next = move || {
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let mut l = RangeList::default();
        let mut model = [false; 200];
        for _ in 0..5000 {
            let a = next() % 200;
            let b = (a + next() % 20).min(200);
            if next() % 3 == 0 {
                l.remove(a..b);
                model[a as usize..b as usize].fill(false);
            } else {
                l.insert(a..b);
                model[a as usize..b as usize].fill(true);
            }
            for (x, &m) in model.iter().enumerate() {
                assert_eq!(l.contains(x as u64), m, "offset {x}");
            }
            // Disjoint, sorted, non-adjacent.
            let v = as_vec(&l);
            for w in v.windows(2) {
                assert!(w[0].end < w[1].start);
            }
        }
    }
}
