//! Round-trip time estimation (RFC 9002 §5).

use std::time::{Duration, Instant};

/// Timer granularity (kGranularity, RFC 9002 §6.1.2).
pub const GRANULARITY: Duration = Duration::from_millis(1);

/// The RTT assumed before the first sample (kInitialRtt, RFC 9002 §6.2.2).
pub const INITIAL_RTT: Duration = Duration::from_millis(333);

/// The default max_ack_delay transport parameter (RFC 9000 §18.2), used until the peer's is known.
pub const DEFAULT_MAX_ACK_DELAY: Duration = Duration::from_millis(25);

/// A snapshot of the RTT estimate, as handed to congestion controllers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttStats {
    /// The most recent RTT sample, not adjusted for ACK delay (zero before the first sample).
    pub latest_rtt: Duration,
    /// The smoothed RTT.
    pub smoothed_rtt: Duration,
    /// The RTT variation.
    pub rttvar: Duration,
    /// The minimum RTT observed, never adjusted for ACK delay (zero before the first sample).
    pub min_rtt: Duration,
    /// The peer's max_ack_delay.
    pub max_ack_delay: Duration,
    /// When the first RTT sample was taken; `None` before it.
    pub first_sample_time: Option<Instant>,
}

impl RttStats {
    /// Whether an RTT sample has been taken.
    pub fn has_sample(&self) -> bool {
        self.first_sample_time.is_some()
    }

    /// `smoothed_rtt + max(4 * rttvar, kGranularity)`: the PTO period without max_ack_delay and
    /// backoff (RFC 9002 §6.2.1).
    pub fn pto_base(&self) -> Duration {
        self.smoothed_rtt
            .saturating_add(self.rttvar.saturating_mul(4).max(GRANULARITY))
    }
}

/// The RTT estimator of one path (RFC 9002 §5, Appendix A.7 UpdateRtt).
#[derive(Clone, Debug)]
pub struct RttEstimator {
    latest_rtt: Duration,
    smoothed_rtt: Duration,
    rttvar: Duration,
    min_rtt: Duration,
    max_ack_delay: Duration,
    initial_rtt: Duration,
    first_sample_time: Option<Instant>,
}

impl RttEstimator {
    /// Creates an estimator that assumes `initial_rtt` until the first sample (RFC 9002 §5.3).
    pub fn new(initial_rtt: Duration, max_ack_delay: Duration) -> Self {
        RttEstimator {
            latest_rtt: Duration::ZERO,
            smoothed_rtt: initial_rtt,
            rttvar: initial_rtt / 2,
            min_rtt: Duration::ZERO,
            max_ack_delay,
            initial_rtt,
            first_sample_time: None,
        }
    }

    /// Forgets every sample, as for a new path (RFC 9002 §5.3).
    pub fn reset(&mut self) {
        *self = RttEstimator::new(self.initial_rtt, self.max_ack_delay);
    }

    /// Sets the peer's max_ack_delay (from its transport parameters).
    pub fn set_max_ack_delay(&mut self, max_ack_delay: Duration) {
        self.max_ack_delay = max_ack_delay;
    }

    /// Takes an RTT sample.
    ///
    /// `ack_delay` is the delay the peer reported for the largest acknowledged packet; pass zero
    /// for Initial packets, whose acknowledgments the peer does not delay (RFC 9002 §5.3). After
    /// the handshake is confirmed the delay is capped by max_ack_delay; before, it is taken as
    /// reported, because handshake delays can legitimately exceed it. The delay is never
    /// subtracted when that would take the sample below min_rtt.
    pub fn update(
        &mut self,
        now: Instant,
        latest_rtt: Duration,
        ack_delay: Duration,
        handshake_confirmed: bool,
    ) {
        self.latest_rtt = latest_rtt;
        if self.first_sample_time.is_none() {
            // The first sample resets the estimator: no history from kInitialRtt is kept.
            self.min_rtt = latest_rtt;
            self.smoothed_rtt = latest_rtt;
            self.rttvar = latest_rtt / 2;
            self.first_sample_time = Some(now);
            return;
        }
        self.min_rtt = self.min_rtt.min(latest_rtt);
        let ack_delay = if handshake_confirmed {
            ack_delay.min(self.max_ack_delay)
        } else {
            ack_delay
        };
        let adjusted_rtt = match self.min_rtt.checked_add(ack_delay) {
            Some(floor) if latest_rtt >= floor => latest_rtt - ack_delay,
            _ => latest_rtt,
        };
        // Appendix A.7 order: the variation is measured against the previous smoothed RTT.
        let sample_var = self.smoothed_rtt.abs_diff(adjusted_rtt);
        self.rttvar = (self.rttvar.saturating_mul(3).saturating_add(sample_var)) / 4;
        self.smoothed_rtt = (self
            .smoothed_rtt
            .saturating_mul(7)
            .saturating_add(adjusted_rtt))
            / 8;
    }

    /// Restarts min_rtt from the latest sample, as RFC 9002 §5.2 recommends once persistent
    /// congestion is established, so that a higher path RTT does not keep declaring it.
    pub fn reset_min_rtt(&mut self) {
        if self.first_sample_time.is_some() {
            self.min_rtt = self.latest_rtt;
        }
    }

    /// A copy of the current estimate.
    pub fn stats(&self) -> RttStats {
        RttStats {
            latest_rtt: self.latest_rtt,
            smoothed_rtt: self.smoothed_rtt,
            rttvar: self.rttvar,
            min_rtt: self.min_rtt,
            max_ack_delay: self.max_ack_delay,
            first_sample_time: self.first_sample_time,
        }
    }

    /// The most recent sample (zero before the first).
    pub fn latest_rtt(&self) -> Duration {
        self.latest_rtt
    }

    /// The smoothed RTT.
    pub fn smoothed_rtt(&self) -> Duration {
        self.smoothed_rtt
    }

    /// The RTT variation.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The minimum RTT (zero before the first sample).
    pub fn min_rtt(&self) -> Duration {
        self.min_rtt
    }

    /// The peer's max_ack_delay.
    pub fn max_ack_delay(&self) -> Duration {
        self.max_ack_delay
    }

    /// When the first sample was taken.
    pub fn first_sample_time(&self) -> Option<Instant> {
        self.first_sample_time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn starts_from_the_initial_rtt() {
        let rtt = RttEstimator::new(INITIAL_RTT, DEFAULT_MAX_ACK_DELAY);
        let s = rtt.stats();
        assert_eq!(s.smoothed_rtt, ms(333));
        assert_eq!(s.rttvar, Duration::from_micros(166_500));
        assert_eq!(s.min_rtt, Duration::ZERO);
        assert_eq!(s.latest_rtt, Duration::ZERO);
        assert!(!s.has_sample());
        // 333 + 4 * 166.5 = 999 ms.
        assert_eq!(s.pto_base(), ms(999));
    }

    #[test]
    fn first_sample_resets_the_estimator() {
        let t0 = crate::recovery::test_now();
        let mut rtt = RttEstimator::new(INITIAL_RTT, DEFAULT_MAX_ACK_DELAY);
        // The ACK delay of the first sample is ignored.
        rtt.update(t0, ms(100), ms(50), false);
        assert_eq!(rtt.smoothed_rtt(), ms(100));
        assert_eq!(rtt.rttvar(), ms(50));
        assert_eq!(rtt.min_rtt(), ms(100));
        assert_eq!(rtt.latest_rtt(), ms(100));
        assert_eq!(rtt.first_sample_time(), Some(t0));
    }

    #[test]
    fn later_samples_follow_the_ewma_formulas() {
        let t0 = crate::recovery::test_now();
        let mut rtt = RttEstimator::new(INITIAL_RTT, DEFAULT_MAX_ACK_DELAY);
        rtt.update(t0, ms(100), Duration::ZERO, true);
        // rttvar = 3/4 * 50 + 1/4 * |100 - 180| = 57.5; srtt = 7/8 * 100 + 1/8 * 180 = 110.
        rtt.update(t0, ms(180), Duration::ZERO, true);
        assert_eq!(rtt.rttvar(), Duration::from_micros(57_500));
        assert_eq!(rtt.smoothed_rtt(), ms(110));
        assert_eq!(rtt.min_rtt(), ms(100));
        // rttvar = 3/4 * 57.5 + 1/4 * |110 - 30| = 63.125; srtt = 7/8 * 110 + 1/8 * 30 = 100.
        rtt.update(t0, ms(30), Duration::ZERO, true);
        assert_eq!(rtt.rttvar(), Duration::from_micros(63_125));
        assert_eq!(rtt.smoothed_rtt(), ms(100));
        assert_eq!(rtt.min_rtt(), ms(30));
        assert_eq!(rtt.latest_rtt(), ms(30));
    }

    #[test]
    fn ack_delay_is_capped_only_once_the_handshake_is_confirmed() {
        let t0 = crate::recovery::test_now();
        let mut rtt = RttEstimator::new(INITIAL_RTT, ms(25));
        rtt.update(t0, ms(100), Duration::ZERO, false);
        // Not confirmed: the full 60 ms are subtracted, adjusted = 100.
        rtt.update(t0, ms(160), ms(60), false);
        assert_eq!(rtt.smoothed_rtt(), ms(100));
        assert_eq!(rtt.rttvar(), Duration::from_micros(37_500));

        let mut rtt = RttEstimator::new(INITIAL_RTT, ms(25));
        rtt.update(t0, ms(100), Duration::ZERO, true);
        // Confirmed: capped to 25 ms, adjusted = 135: srtt = 87.5 + 16.875.
        rtt.update(t0, ms(160), ms(60), true);
        assert_eq!(rtt.smoothed_rtt(), Duration::from_micros(104_375));
    }

    #[test]
    fn ack_delay_never_takes_the_sample_below_min_rtt() {
        let t0 = crate::recovery::test_now();
        let mut rtt = RttEstimator::new(INITIAL_RTT, ms(25));
        rtt.update(t0, ms(100), Duration::ZERO, true);
        // 110 - 20 would be below min_rtt = 100: the delay is not subtracted.
        rtt.update(t0, ms(110), ms(20), true);
        // srtt = 7/8 * 100 + 1/8 * 110 = 101.25.
        assert_eq!(rtt.smoothed_rtt(), Duration::from_micros(101_250));
        // min_rtt ignores the delay.
        assert_eq!(rtt.min_rtt(), ms(100));
        // A huge reported delay neither overflows nor is subtracted.
        rtt.update(t0, ms(110), Duration::MAX, false);
        assert!(rtt.smoothed_rtt() > ms(101));
    }

    #[test]
    fn min_rtt_restarts_from_the_latest_sample() {
        let t0 = crate::recovery::test_now();
        let mut rtt = RttEstimator::new(INITIAL_RTT, ms(25));
        rtt.update(t0, ms(50), Duration::ZERO, true);
        rtt.update(t0, ms(200), Duration::ZERO, true);
        assert_eq!(rtt.min_rtt(), ms(50));
        rtt.reset_min_rtt();
        assert_eq!(rtt.min_rtt(), ms(200));
        rtt.reset();
        assert_eq!(rtt.smoothed_rtt(), INITIAL_RTT);
        assert!(!rtt.stats().has_sample());
    }
}
