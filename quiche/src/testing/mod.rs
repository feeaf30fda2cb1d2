//! Test support: an in-memory pipe joining a client and a server on a virtual clock through a
//! modelled link (whose pieces, in [`link`], simulators reuse), a pcap writer for dissecting what they exchanged, and a seeded PRNG.

pub mod link;
pub mod pcap;
pub mod pipe;

pub use self::link::{Bottleneck, InFlight, Jitter, PathMtu, IPV4_UDP_OVERHEAD};
pub use self::pipe::{Direction, LinkConfig, LinkStats, Pipe, Verdict};

use std::time::Instant;

/// The origin of a virtual clock. Any `Instant` would do: virtual time is never compared with
/// the wall clock, and this is the one place in the library core that reads it.
#[allow(clippy::disallowed_methods)]
pub fn virtual_epoch() -> Instant {
    Instant::now()
}

/// A tiny deterministic PRNG (xorshift64*) for randomized tests and loss models: the same seed
/// gives the same sequence on every machine.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `[0, n)` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index in `[0, n)` (0 when `n` is 0).
    pub fn below_usize(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with a probability of `percent` in 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A uniform value in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// Fills `buf` with random bytes, one draw per byte.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next() as u8;
        }
    }

    /// `len` random bytes, one draw per byte.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn rng_is_deterministic_and_in_range() {
        let mut a = Rng(7);
        let mut b = Rng(7);
        for _ in 0..1000 {
            assert_eq!(a.next(), b.next());
        }
        assert!((0..1000).all(|_| a.below(10) < 10));
        assert_eq!(a.below(0), 0);
        let hits = (0..10_000).filter(|_| a.percent(25)).count();
        assert!((2000..3000).contains(&hits), "{hits}");
        let mut buf = [0u8; 64];
        a.fill(&mut buf);
        assert!(buf.iter().any(|&x| x != 0));
    }
}
