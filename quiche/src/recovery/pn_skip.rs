//! Skipping packet numbers now and then, to catch optimistic acknowledgments (RFC 9000 §21.4).

/// A fixed base instant for tests on a manual clock (the library itself never reads the clock).
/// Decides which packet numbers a sender skips, so that a peer acknowledging packets it never
/// received (an optimistic ACK, RFC 9000 §21.4) names a number never sent and is caught.
///
/// One number in [`PnSkipper::MIN_INTERVAL`] to twice that is skipped, at a random place drawn
/// from a generator seeded per connection: a peer cannot predict which, and the cost is one
/// number (and the receiver's one immediate ACK for the gap) per few hundred packets.
#[derive(Clone, Debug)]
pub struct PnSkipper {
    state: u64,
    countdown: u64,
}

impl PnSkipper {
    /// The shortest run of packets between two skips.
    pub const MIN_INTERVAL: u64 = 256;

    /// A skipper drawing from `seed` (any value).
    pub fn new(seed: u64) -> Self {
        let mut s = PnSkipper {
            state: seed | 1,
            countdown: 0,
        };
        s.rearm();
        s
    }

    fn rearm(&mut self) {
        // xorshift64*: cheap and good enough to hide the next skip from a peer.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        self.countdown = Self::MIN_INTERVAL + (r >> 32) % Self::MIN_INTERVAL;
    }

    /// Called once per packet sent: whether to skip the number after it.
    pub fn on_packet_sent(&mut self) -> bool {
        self.countdown -= 1;
        if self.countdown == 0 {
            self.rearm();
            return true;
        }
        false
    }
}
