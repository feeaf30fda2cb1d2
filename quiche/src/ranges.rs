//! A set of disjoint `u64` ranges for ACK tracking (RFC 9000 §13.2, §19.3).
//!
//! Packet numbers arrive mostly in order, so a receiver's set of received packet numbers is a
//! handful of long runs. [`RangeSet`] stores those runs as half-open ranges, sorted, disjoint and
//! never adjacent (adjacent runs are merged), so that every range maps to one ACK Range on the
//! wire. The number of ranges is bounded: an ACK frame can only carry so many, and a peer that
//! sends packet numbers with holes everywhere must not make us grow without limit. When the bound
//! is hit the lowest range goes first, because the oldest packet numbers are the ones the peer
//! has most likely already seen acknowledged.

use std::fmt;
use std::ops::Range;

/// How many ranges are kept without a heap allocation. In-order delivery with a few losses
/// rarely needs more, so the per-packet path stays allocation-free in the usual case.
const INLINE: usize = 4;

/// Start (inclusive) and end (exclusive) of one range. A tuple rather than `Range<u64>` because
/// `Range` is not `Copy`, which the inline array needs.
type Span = (u64, u64);

/// The storage: a fixed array while the set is small, a `Vec` once it outgrows it.
#[derive(Clone)]
enum Store {
    Inline { len: usize, buf: [Span; INLINE] },
    Heap(Vec<Span>),
}

impl Store {
    fn as_slice(&self) -> &[Span] {
        match self {
            Store::Inline { len, buf } => buf.get(..*len).unwrap_or(&[]),
            Store::Heap(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Span] {
        match self {
            Store::Inline { len, buf } => buf.get_mut(..*len).unwrap_or(&mut []),
            Store::Heap(v) => v,
        }
    }

    /// Inserts `span` before position `idx` (`idx <= len`), spilling to the heap when the inline
    /// array is full.
    fn insert(&mut self, idx: usize, span: Span) {
        match self {
            Store::Inline { len, buf } if *len < INLINE => {
                // Shift the tail right by one; `idx <= len < INLINE` keeps this in bounds.
                if let Some(tail) = buf.get_mut(idx..=*len) {
                    tail.rotate_right(1);
                    tail[0] = span;
                    *len += 1;
                }
            }
            Store::Inline { len, buf } => {
                let mut v = Vec::with_capacity(INLINE * 2);
                v.extend_from_slice(buf.get(..*len).unwrap_or(&[]));
                v.insert(idx.min(v.len()), span);
                *self = Store::Heap(v);
            }
            Store::Heap(v) => v.insert(idx.min(v.len()), span),
        }
    }

    /// Removes the spans in `from..to` (clamped to the current length).
    fn remove_span(&mut self, from: usize, to: usize) {
        match self {
            Store::Inline { len, buf } => {
                let to = to.min(*len);
                let from = from.min(to);
                let n = to - from;
                if let Some(tail) = buf.get_mut(from..*len) {
                    tail.rotate_left(n);
                }
                *len -= n;
            }
            Store::Heap(v) => {
                let to = to.min(v.len());
                v.drain(from.min(to)..to);
            }
        }
    }
}

/// A bounded set of disjoint, non-adjacent `u64` ranges, kept in ascending order.
///
/// The first few ranges are stored inline; more spill to the heap. At most
/// [`capacity`](Self::capacity) ranges are kept: an insert that would exceed it drops the range
/// with the lowest values.
///
/// `u64::MAX` itself can never be a member, since ranges are half-open.
#[derive(Clone)]
pub struct RangeSet {
    store: Store,
    capacity: usize,
}

impl RangeSet {
    /// Creates an empty set that keeps at most `capacity` ranges.
    pub fn new(capacity: usize) -> Self {
        RangeSet {
            store: Store::Inline {
                len: 0,
                buf: [(0, 0); INLINE],
            },
            capacity,
        }
    }

    /// Adds every value of `r` to the set, merging it with ranges it overlaps or touches.
    /// An empty range is ignored.
    pub fn insert(&mut self, r: Range<u64>) {
        if r.start >= r.end {
            return;
        }
        let spans = self.store.as_slice();
        // `first` is the first range that ends at or after `r.start` (so overlaps or touches it),
        // `past` the first range that starts after `r.end` (so neither overlaps nor touches it).
        let first = spans.partition_point(|s| s.1 < r.start);
        let past = spans.partition_point(|s| s.0 <= r.end);
        if first >= past {
            self.store.insert(first, (r.start, r.end));
        } else {
            let start = spans.get(first).map_or(r.start, |s| s.0.min(r.start));
            let end = spans.get(past - 1).map_or(r.end, |s| s.1.max(r.end));
            if let Some(s) = self.store.as_mut_slice().get_mut(first) {
                *s = (start, end);
            }
            self.store.remove_span(first + 1, past);
        }
        self.enforce_capacity();
    }

    /// Adds the single value `v`.
    ///
    /// Packet numbers mostly arrive in order, so extending the last range by one is done in
    /// constant time without searching. `u64::MAX` cannot be stored and is ignored.
    pub fn push_item(&mut self, v: u64) {
        let Some(next) = v.checked_add(1) else {
            return;
        };
        if let Some(last) = self.store.as_mut_slice().last_mut() {
            if last.1 == v {
                last.1 = next;
                return;
            }
            if last.1 < v {
                let len = self.len();
                self.store.insert(len, (v, next));
                self.enforce_capacity();
                return;
            }
        }
        self.insert(v..next);
    }

    /// Removes every value less than or equal to `largest`, splitting a range if needed.
    pub fn remove_until(&mut self, largest: u64) {
        // A range holds values up to `end - 1`; `end >= 1` because ranges are never empty.
        let gone = self
            .store
            .as_slice()
            .partition_point(|s| s.1 - 1 <= largest);
        self.store.remove_span(0, gone);
        if let Some(first) = self.store.as_mut_slice().first_mut() {
            if first.0 <= largest {
                // `largest < end - 1` here, so the addition cannot overflow.
                first.0 = largest + 1;
            }
        }
    }

    /// Iterates over the ranges in ascending order; `.rev()` gives descending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            inner: self.store.as_slice().iter(),
        }
    }

    /// The smallest value in the set.
    pub fn first(&self) -> Option<u64> {
        self.store.as_slice().first().map(|s| s.0)
    }

    /// The largest value in the set.
    pub fn last(&self) -> Option<u64> {
        self.store.as_slice().last().map(|s| s.1 - 1)
    }

    /// The number of ranges (not values) in the set.
    pub fn len(&self) -> usize {
        self.store.as_slice().len()
    }

    /// Whether the set holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `v` is in the set.
    pub fn contains(&self, v: u64) -> bool {
        let spans = self.store.as_slice();
        let idx = spans.partition_point(|s| s.1 <= v);
        spans.get(idx).is_some_and(|s| s.0 <= v)
    }

    /// The maximum number of ranges the set keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Removes every value.
    pub fn clear(&mut self) {
        let len = self.len();
        self.store.remove_span(0, len);
    }

    fn enforce_capacity(&mut self) {
        let len = self.len();
        if len > self.capacity {
            self.store.remove_span(0, len - self.capacity);
        }
    }
}

impl PartialEq for RangeSet {
    /// Two sets are equal when they hold the same values; the capacity and the storage form do
    /// not matter.
    fn eq(&self, other: &Self) -> bool {
        self.store.as_slice() == other.store.as_slice()
    }
}

impl Eq for RangeSet {}

impl fmt::Debug for RangeSet {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a RangeSet {
    type Item = Range<u64>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Iterator over the ranges of a [`RangeSet`], ascending (double-ended).
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    inner: std::slice::Iter<'a, Span>,
}

impl Iterator for Iter<'_> {
    type Item = Range<u64>;

    fn next(&mut self) -> Option<Range<u64>> {
        self.inner.next().map(|s| s.0..s.1)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Range<u64>> {
        self.inner.next_back().map(|s| s.0..s.1)
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;
    use std::collections::BTreeSet;

    fn collect(s: &RangeSet) -> Vec<Range<u64>> {
        s.iter().collect()
    }

    #[test]
    fn empty() {
        let s = RangeSet::new(8);
        assert!(s.is_empty());
        assert_eq!(s.len(), 0);
        assert_eq!(s.first(), None);
        assert_eq!(s.last(), None);
        assert!(!s.contains(0));
        assert_eq!(s.capacity(), 8);
        assert_eq!(s.iter().next(), None);
    }

    #[test]
    fn insert_merges_overlapping_and_adjacent() {
        let mut s = RangeSet::new(16);
        s.insert(10..20);
        s.insert(30..40);
        assert_eq!(collect(&s), vec![10..20, 30..40]);
        s.insert(20..25); // adjacent to the first
        assert_eq!(collect(&s), vec![10..25, 30..40]);
        s.insert(25..30); // fills the hole: all three merge
        assert_eq!(collect(&s), vec![10..40]);
        s.insert(5..10);
        s.insert(40..41);
        assert_eq!(collect(&s), vec![5..41]);
        s.insert(0..2);
        s.insert(50..60);
        s.insert(45..47);
        assert_eq!(collect(&s), vec![0..2, 5..41, 45..47, 50..60]);
        s.insert(1..55); // swallows everything up to 60
        assert_eq!(collect(&s), vec![0..60]);
        s.insert(7..7); // empty: ignored
        #[allow(clippy::reversed_empty_ranges)]
        s.insert(70..65); // reversed: ignored
        assert_eq!(collect(&s), vec![0..60]);
    }

    #[test]
    fn push_item_extends_and_appends() {
        let mut s = RangeSet::new(16);
        for v in 0..10 {
            s.push_item(v);
        }
        assert_eq!(collect(&s), vec![0..10]);
        s.push_item(12);
        s.push_item(11);
        assert_eq!(collect(&s), vec![0..10, 11..13]);
        s.push_item(10);
        assert_eq!(collect(&s), vec![0..13]);
        s.push_item(5); // already present
        assert_eq!(collect(&s), vec![0..13]);
        s.push_item(20);
        s.push_item(15);
        assert_eq!(collect(&s), vec![0..13, 15..16, 20..21]);
        s.push_item(u64::MAX);
        assert_eq!(s.last(), Some(20));
        s.push_item(u64::MAX - 1);
        assert_eq!(s.last(), Some(u64::MAX - 1));
        assert!(s.contains(u64::MAX - 1));
        assert!(!s.contains(u64::MAX));
    }

    #[test]
    fn spills_to_heap_and_keeps_order() {
        let mut s = RangeSet::new(100);
        for i in (0..50u64).rev() {
            s.insert(i * 10..i * 10 + 5);
        }
        assert_eq!(s.len(), 50);
        let want: Vec<_> = (0..50u64).map(|i| i * 10..i * 10 + 5).collect();
        assert_eq!(collect(&s), want);
        let rev: Vec<_> = s.iter().rev().collect();
        assert_eq!(rev, want.iter().rev().cloned().collect::<Vec<_>>());
        assert_eq!(s.iter().len(), 50);
    }

    #[test]
    fn capacity_drops_lowest_range() {
        let mut s = RangeSet::new(3);
        s.insert(10..11);
        s.insert(20..21);
        s.insert(30..31);
        s.insert(40..41);
        assert_eq!(collect(&s), vec![20..21, 30..31, 40..41]);
        // A new range below all others is itself the lowest, so it is the one dropped.
        s.insert(0..5);
        assert_eq!(collect(&s), vec![20..21, 30..31, 40..41]);
        s.push_item(50);
        assert_eq!(collect(&s), vec![30..31, 40..41, 50..51]);
        let mut z = RangeSet::new(0);
        z.insert(1..5);
        z.push_item(9);
        assert!(z.is_empty());
    }

    #[test]
    fn remove_until_splits() {
        let mut s = RangeSet::new(16);
        s.insert(0..10);
        s.insert(20..30);
        s.insert(40..50);
        s.remove_until(4);
        assert_eq!(collect(&s), vec![5..10, 20..30, 40..50]);
        s.remove_until(9);
        assert_eq!(collect(&s), vec![20..30, 40..50]);
        s.remove_until(35);
        assert_eq!(collect(&s), vec![40..50]);
        s.remove_until(48);
        assert_eq!(collect(&s), vec![49..50]);
        s.remove_until(u64::MAX);
        assert!(s.is_empty());
        s.remove_until(3);
        assert!(s.is_empty());
    }

    #[test]
    fn equality_ignores_storage() {
        let mut a = RangeSet::new(100);
        for i in 0..10u64 {
            a.insert(i * 3..i * 3 + 1);
        }
        a.remove_until(20); // heap form with few ranges left
        let mut b = RangeSet::new(5);
        b.insert(21..22);
        b.insert(24..25);
        b.insert(27..28);
        assert_eq!(a, b);
        assert_eq!(format!("{b:?}"), "[21..22, 24..25, 27..28]");
    }

    /// The model: a plain set of values, with the same eviction rule applied to its runs.
    fn model_ranges(m: &BTreeSet<u64>) -> Vec<Range<u64>> {
        let mut out: Vec<Range<u64>> = Vec::new();
        for &v in m {
            match out.last_mut() {
                Some(r) if r.end == v => r.end = v + 1,
                _ => out.push(v..v + 1),
            }
        }
        out
    }

    fn model_evict(m: &mut BTreeSet<u64>, cap: usize) {
        loop {
            let runs = model_ranges(m);
            if runs.len() <= cap {
                return;
            }
            for v in runs[0].clone() {
                m.remove(&v);
            }
        }
    }

    fn check_invariants(s: &RangeSet) {
        let v = collect(s);
        for r in &v {
            assert!(r.start < r.end, "empty range in {v:?}");
        }
        for w in v.windows(2) {
            assert!(
                w[0].end < w[1].start,
                "unsorted, overlapping or adjacent: {v:?}"
            );
        }
        assert!(s.len() <= s.capacity());
        assert_eq!(s.first(), v.first().map(|r| r.start));
        assert_eq!(s.last(), v.last().map(|r| r.end - 1));
    }

    fn run_sequence(rng: &mut Rng, cap: usize, domain: u64, ops: usize) {
        let mut s = RangeSet::new(cap);
        let mut m = BTreeSet::new();
        for _ in 0..ops {
            match rng.below(10) {
                0..=3 => {
                    let a = rng.below(domain);
                    let b = a + rng.below(8);
                    s.insert(a..b);
                    m.extend(a..b);
                    model_evict(&mut m, cap);
                }
                4..=7 => {
                    // Mostly in-order pushes, like packet numbers, with some jumps back.
                    let v = match (s.last(), rng.below(4)) {
                        (Some(l), 0..=1) => l + 1,
                        (Some(l), 2) => l + 1 + rng.below(3),
                        _ => rng.below(domain),
                    };
                    s.push_item(v);
                    m.insert(v);
                    model_evict(&mut m, cap);
                }
                8 => {
                    let l = rng.below(domain);
                    s.remove_until(l);
                    m.retain(|&v| v > l);
                }
                _ => {
                    let v = rng.below(domain + 8);
                    assert_eq!(s.contains(v), m.contains(&v), "contains({v})");
                }
            }
            check_invariants(&s);
            assert_eq!(collect(&s), model_ranges(&m));
        }
    }

    #[test]
    fn random_sequences_match_model() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for seq in 0..4000 {
            let cap = match seq % 4 {
                0 => 1,
                1 => 3,
                2 => 6,
                _ => 1000,
            };
            let domain = if seq % 2 == 0 { 64 } else { 300 };
            run_sequence(&mut rng, cap, domain, 60);
        }
    }
}
