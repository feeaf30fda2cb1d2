//! Buffers the connection reuses from packet to packet, so that the hot paths allocate nothing
//! per packet (ARCHITECTURE.md, "Invariants"): the records of what a sent packet carried, and
//! the lists of packets an ACK or a timer acknowledged or declared lost.

use super::sent_frames::SentFrames;
use crate::recovery::AckOutcome;

/// How many emptied sent-packet records the pool keeps at most (the rest are dropped).
const MAX_POOLED_RECORDS: usize = 1024;

/// The connection's reused buffers.
#[derive(Default)]
pub(super) struct Scratch {
    /// What recovery reports for one ACK frame or loss timer; taken out while it is filled
    /// and handled, then put back with its capacity.
    ack_outcome: AckOutcome<SentFrames>,
    /// Records of sent packets reused to avoid an allocation per packet.
    frames_pool: Vec<SentFrames>,
}

impl Scratch {
    /// The reused outcome buffer, to be given back with [`Scratch::put_outcome`].
    pub(super) fn take_outcome(&mut self) -> AckOutcome<SentFrames> {
        std::mem::take(&mut self.ack_outcome)
    }

    /// Gives the outcome buffer back for the next ACK or timer.
    pub(super) fn put_outcome(&mut self, outcome: AckOutcome<SentFrames>) {
        self.ack_outcome = outcome;
    }

    /// The outcome buffer, to check what it holds on to.
    #[cfg(test)]
    pub(super) fn outcome(&self) -> &AckOutcome<SentFrames> {
        &self.ack_outcome
    }

    /// A sent-packet record for the next packet: a pooled one, or a new one.
    pub(super) fn frames(&mut self) -> SentFrames {
        self.frames_pool.pop().unwrap_or_default()
    }

    /// Gives back a record that stayed empty (no packet was built).
    pub(super) fn put_unused_frames(&mut self, frames: SentFrames) {
        self.frames_pool.push(frames);
    }

    /// Keeps a record's heap buffer for a later packet. Records that fit inline own no buffer
    /// and are simply dropped: pooling them would only copy them around and grow the pool.
    pub(super) fn recycle(&mut self, mut frames: SentFrames) {
        if frames.has_spill_capacity() && self.frames_pool.len() < MAX_POOLED_RECORDS {
            frames.clear();
            self.frames_pool.push(frames);
        }
    }
}
