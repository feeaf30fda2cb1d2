//! A set of disjoint `u64` ranges for ACK tracking (owned by the frames work).
