//! The ranges of an ACK frame (RFC 9000 §19.3.1): as received, read in place from the packet,
//! or as built from a [`RangeSet`], behind one type that iterates and compares either way.

use std::fmt;
use std::ops::Range;

use octets::Octets;

use super::wire::{get_varint, put_varint, vlen, vlen_usize};
use super::*;
use crate::error::{Error, Result};
use crate::ranges::RangeSet;

/// The ranges of an ACK frame, in one of two forms that compare equal when they hold the same
/// packet numbers.
#[derive(Clone, Copy)]
pub enum AckRanges<'a> {
    /// As received: the encoded fields, read in place and validated when the frame was decoded.
    Wire(WireAckRanges<'a>),
    /// A receiver's set of packet numbers, to be encoded.
    Set(&'a RangeSet),
}

/// The ranges of a received ACK frame, still in their encoded form (RFC 9000 §19.3.1).
///
/// Only the decoder builds these, after checking that every range lies at or above zero, so
/// iterating over them cannot fail.
#[derive(Clone, Copy, Debug)]
pub struct WireAckRanges<'a> {
    pub(super) largest: u64,
    pub(super) first_range: u64,
    pub(super) count: u64,
    pub(super) smallest: u64,
    /// The ACK Range Count gap/length pairs, as encoded.
    pub(super) raw: &'a [u8],
}

impl<'a> AckRanges<'a> {
    /// Iterates over the acknowledged ranges, largest first (descending order).
    pub fn iter(&self) -> AckRangesIter<'a> {
        match self {
            AckRanges::Wire(w) => AckRangesIter(IterInner::Wire {
                next: Some((w.largest, w.largest.saturating_sub(w.first_range))),
                remaining: w.count,
                raw: w.raw,
            }),
            AckRanges::Set(s) => AckRangesIter(IterInner::Set(s.iter().rev())),
        }
    }

    /// The largest acknowledged packet number (0 for an empty set, which cannot be encoded).
    pub fn largest(&self) -> u64 {
        match self {
            AckRanges::Wire(w) => w.largest,
            AckRanges::Set(s) => s.last().unwrap_or(0),
        }
    }

    /// The smallest acknowledged packet number (0 for an empty set, which cannot be encoded).
    pub fn smallest(&self) -> u64 {
        match self {
            AckRanges::Wire(w) => w.smallest,
            AckRanges::Set(s) => s.first().unwrap_or(0),
        }
    }

    /// The number of ranges.
    pub fn len(&self) -> usize {
        match self {
            AckRanges::Wire(w) => {
                usize::try_from(w.count).map_or(usize::MAX, |c| c.saturating_add(1))
            }
            AckRanges::Set(s) => s.len(),
        }
    }

    /// Whether there is no range (only possible for an empty [`AckRanges::Set`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn encoded_len(&self) -> usize {
        match self {
            AckRanges::Wire(w) => {
                vlen(w.largest) + vlen(w.count) + vlen(w.first_range) + w.raw.len()
            }
            AckRanges::Set(s) => set_ack_ranges_len(s, s.len().saturating_sub(1)),
        }
    }

    pub(super) fn encode(&self, b: &mut OctetsMut, ack_delay: u64) -> Result<()> {
        match self {
            AckRanges::Wire(w) => {
                put_varint(b, w.largest)?;
                put_varint(b, ack_delay)?;
                put_varint(b, w.count)?;
                put_varint(b, w.first_range)?;
                b.put_bytes(w.raw)?;
                Ok(())
            }
            AckRanges::Set(s) => put_set_ack_ranges(b, s, s.len().saturating_sub(1), ack_delay),
        }
    }
}

impl PartialEq for AckRanges<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for AckRanges<'_> {}

impl fmt::Debug for AckRanges<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterator over [`AckRanges`], largest range first.
#[derive(Clone)]
pub struct AckRangesIter<'a>(IterInner<'a>);

#[derive(Clone)]
enum IterInner<'a> {
    /// Walking the encoded gap/length pairs.
    Wire {
        /// Largest and smallest packet number of the range to yield next.
        next: Option<(u64, u64)>,
        /// Encoded pairs left in `raw`.
        remaining: u64,
        /// The encoded pairs not yet read.
        raw: &'a [u8],
    },
    /// Walking a set from its top.
    Set(std::iter::Rev<crate::ranges::Iter<'a>>),
}

impl Iterator for AckRangesIter<'_> {
    type Item = Range<u64>;

    fn next(&mut self) -> Option<Range<u64>> {
        match &mut self.0 {
            IterInner::Wire {
                next,
                remaining,
                raw,
            } => {
                let (largest, smallest) = next.take()?;
                if *remaining > 0 {
                    *remaining -= 1;
                    // Validated at decode time; a failure here would only end the iteration.
                    let mut b = Octets::with_slice(raw);
                    *next = read_ack_range(&mut b, smallest).ok();
                    *raw = raw.get(b.off()..).unwrap_or(&[]);
                }
                Some(smallest..largest.saturating_add(1))
            }
            IterInner::Set(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterInner::Wire { next: None, .. } => (0, Some(0)),
            IterInner::Wire { remaining, .. } => {
                let n = usize::try_from(*remaining).map_or(usize::MAX, |r| r.saturating_add(1));
                (n, Some(n))
            }
            IterInner::Set(it) => it.size_hint(),
        }
    }
}

impl std::iter::FusedIterator for AckRangesIter<'_> {}

/// Reads one Gap/ACK Range Length pair following a range whose smallest packet number is
/// `prev_smallest`, and returns the next range's largest and smallest packet numbers.
pub(super) fn read_ack_range(b: &mut Octets, prev_smallest: u64) -> Result<(u64, u64)> {
    let gap = get_varint(b)?;
    let len = get_varint(b)?;
    // RFC 9000 §19.3.1: largest = previous_smallest - gap - 2, smallest = largest - length;
    // a negative result is a FRAME_ENCODING_ERROR.
    let largest = prev_smallest
        .checked_sub(gap)
        .and_then(|v| v.checked_sub(2))
        .ok_or(Error::InvalidFrame)?;
    let smallest = largest.checked_sub(len).ok_or(Error::InvalidFrame)?;
    Ok((largest, smallest))
}

/// Length of Largest Acknowledged, ACK Range Count and First ACK Range for `extra` ranges below
/// the first. `set` must not be empty.
pub(super) fn set_ack_head_len(set: &RangeSet, extra: usize) -> usize {
    let first = set.iter().next_back().unwrap_or(0..0);
    let largest = first.end.saturating_sub(1);
    vlen(largest) + vlen_usize(extra) + vlen(largest.saturating_sub(first.start))
}

/// Length of the ACK range fields (without type, delay and ECN) for the top `extra + 1` ranges.
pub(super) fn set_ack_ranges_len(set: &RangeSet, extra: usize) -> usize {
    let mut it = set.iter().rev();
    let Some(mut prev) = it.next() else {
        return 0;
    };
    let mut len = set_ack_head_len(set, extra);
    for r in it.take(extra) {
        let (gap, l) = gap_and_len(&prev, &r);
        len += vlen(gap) + vlen(l);
        prev = r;
    }
    len
}

/// Writes Largest Acknowledged, ACK Delay, ACK Range Count, First ACK Range and `extra`
/// Gap/Length pairs for the top ranges of `set`.
pub(super) fn put_set_ack_ranges(
    b: &mut OctetsMut,
    set: &RangeSet,
    extra: usize,
    delay: u64,
) -> Result<()> {
    let mut it = set.iter().rev();
    let Some(first) = it.next() else {
        return Err(Error::InvalidFrame);
    };
    let largest = first.end - 1;
    put_varint(b, largest)?;
    put_varint(b, delay)?;
    put_varint(b, extra as u64)?;
    put_varint(b, largest - first.start)?;
    let mut prev = first;
    for r in it.take(extra) {
        let (gap, len) = gap_and_len(&prev, &r);
        put_varint(b, gap)?;
        put_varint(b, len)?;
        prev = r;
    }
    Ok(())
}

/// The Gap and ACK Range Length fields for range `cur` following the higher range `prev`
/// (RFC 9000 §19.3.1). A [`RangeSet`] never holds adjacent ranges, so the gap is never negative.
pub(super) fn gap_and_len(prev: &Range<u64>, cur: &Range<u64>) -> (u64, u64) {
    let gap = prev.start.saturating_sub(cur.end).saturating_sub(1);
    let len = cur.end.saturating_sub(1).saturating_sub(cur.start);
    (gap, len)
}

pub(super) fn ecn_len(ecn: &EcnCounts) -> usize {
    vlen(ecn.ect0) + vlen(ecn.ect1) + vlen(ecn.ecn_ce)
}

pub(super) fn put_ecn(b: &mut OctetsMut, ecn: &EcnCounts) -> Result<()> {
    put_varint(b, ecn.ect0)?;
    put_varint(b, ecn.ect1)?;
    put_varint(b, ecn.ecn_ce)
}
