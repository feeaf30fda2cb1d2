//! A cheap hasher for stream IDs.
//!
//! The stream map and its readable / writable sets are looked up for every STREAM frame sent,
//! received and acknowledged; the standard SipHash cost a few percent of a bulk transfer's
//! CPU. SipHash's keyed hashing defends against hash flooding, which stream IDs cannot mount:
//! a peer may only use IDs below the MAX_STREAMS limits we advertise, and opening a stream
//! opens every lower-numbered one of its type (RFC 9000 §3.2), so the live IDs form a nearly
//! contiguous run whose length our limits bound. The peer cannot choose a set of colliding IDs
//! that is not also a run of consecutive ones.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes one `u64` with a folded multiply: the 128-bit product with an odd constant, high
/// half XOR low half, so both the low bits (the bucket index) and the high bits (the tag the
/// table compares first) depend on every bit of the ID.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StreamIdHasher(u64);

/// 2^64 divided by the golden ratio, rounded to odd.
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

fn fold(x: u64) -> u64 {
    let product = u128::from(x) * u128::from(MULTIPLIER);
    (product as u64) ^ ((product >> 64) as u64)
}

impl Hasher for StreamIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = fold(self.0 ^ x);
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys use this hasher; byte input is folded in 8 bytes at a time anyway.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
}

/// A map keyed by stream ID.
pub(crate) type StreamIdMap<V> = HashMap<u64, V, BuildHasherDefault<StreamIdHasher>>;

/// A set of stream IDs.
pub(crate) type StreamIdSet = HashSet<u64, BuildHasherDefault<StreamIdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash(id: u64) -> u64 {
        BuildHasherDefault::<StreamIdHasher>::default().hash_one(id)
    }

    #[test]
    fn consecutive_ids_spread_over_buckets_and_tags() {
        // Client bidirectional streams 0, 4, 8, ...: the low two bits never change, yet the
        // low bits of the hashes (the bucket) and the top seven (the tag) must.
        let ids: Vec<u64> = (0..256).map(|i| i << 2).collect();
        let buckets: HashSet<u64> = ids.iter().map(|&id| hash(id) & 255).collect();
        let tags: HashSet<u64> = ids.iter().map(|&id| hash(id) >> 57).collect();
        // Random hashes would fill about 162 of 256 buckets and 110 of 128 tags.
        assert!(
            buckets.len() > 140,
            "only {} of 256 buckets used",
            buckets.len()
        );
        assert!(tags.len() > 100, "only {} of 128 tags used", tags.len());
    }

    #[test]
    fn maps_and_sets_work() {
        let mut m: StreamIdMap<u64> = StreamIdMap::default();
        let mut s = StreamIdSet::default();
        for id in (0..10_000u64).map(|i| i * 4 + 1) {
            m.insert(id, id * 2);
            s.insert(id);
        }
        assert_eq!(m.len(), 10_000);
        assert!((0..10_000u64).all(|i| m.get(&(i * 4 + 1)) == Some(&(i * 8 + 2))));
        assert!(!s.contains(&0) && s.contains(&5));
        let mut h = StreamIdHasher::default();
        h.write(&7u64.to_le_bytes());
        assert_eq!(h.finish(), hash(7));
    }
}
