//! Probe timeout (RFC 9002 §6.2, Appendix A.8 GetPtoTimeAndSpace).

use std::time::{Duration, Instant};

use crate::packet::Epoch;
use crate::rtt::RttStats;

/// Ack-eliciting packets to send when the PTO fires. RFC 9002 §6.2.4 allows up to two; two make
/// a single lost probe less likely to cost another, doubled, timeout.
pub const MAX_PTO_PROBES: usize = 2;

/// The backoff exponent stops growing here; the idle timeout ends a connection long before.
const MAX_BACKOFF_EXPONENT: u32 = 30;

/// The PTO period for a space, backed off `pto_count` times (§6.2.1):
/// `(smoothed_rtt + max(4 * rttvar, kGranularity) + max_ack_delay) * 2^pto_count`, where
/// max_ack_delay only counts for the Application space, whose acknowledgments the peer may delay.
pub fn pto_period(rtt: &RttStats, pto_count: u32, epoch: Epoch) -> Duration {
    let mut period = rtt.pto_base();
    if epoch == Epoch::Application {
        period = period.saturating_add(rtt.max_ack_delay);
    }
    period.saturating_mul(1 << pto_count.min(MAX_BACKOFF_EXPONENT))
}

/// What a space contributes to the PTO deadline.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SpaceTimes {
    /// Whether ack-eliciting packets are in flight in the space.
    pub ack_eliciting_in_flight: bool,
    /// When the last ack-eliciting packet was sent in the space.
    pub last_ack_eliciting: Option<Instant>,
}

/// When the PTO fires, and for what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PtoDeadline {
    /// Nothing is in flight but the peer may be blocked by its anti-amplification limit: the
    /// client must send something to unblock it (§6.2.2.1).
    AntiDeadlock(Instant),
    /// Probe this space.
    Space(Instant, Epoch),
}

impl PtoDeadline {
    /// When it fires.
    pub fn time(self) -> Instant {
        match self {
            PtoDeadline::AntiDeadlock(t) | PtoDeadline::Space(t, _) => t,
        }
    }
}

/// The earliest PTO deadline over the spaces (GetPtoTimeAndSpace). The Application space is not
/// armed before the handshake is confirmed (§6.2.1); `None` when nothing can be armed.
pub(crate) fn pto_deadline(
    rtt: &RttStats,
    pto_count: u32,
    handshake_confirmed: bool,
    spaces: &[SpaceTimes; 3],
    now: Instant,
) -> Option<PtoDeadline> {
    if spaces.iter().all(|s| !s.ack_eliciting_in_flight) {
        // Anti-deadlock PTO: counted from now, as there is no packet to count from.
        let period = pto_period(rtt, pto_count, Epoch::Initial);
        return now.checked_add(period).map(PtoDeadline::AntiDeadlock);
    }
    let mut best: Option<(Instant, Epoch)> = None;
    for epoch in Epoch::ALL {
        let Some(space) = spaces.get(epoch.index()) else {
            continue;
        };
        if !space.ack_eliciting_in_flight {
            continue;
        }
        if epoch == Epoch::Application && !handshake_confirmed {
            break;
        }
        let Some(sent) = space.last_ack_eliciting else {
            continue;
        };
        let Some(t) = sent.checked_add(pto_period(rtt, pto_count, epoch)) else {
            continue;
        };
        if best.is_none_or(|(b, _)| t < b) {
            best = Some((t, epoch));
        }
    }
    best.map(|(t, epoch)| PtoDeadline::Space(t, epoch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::test_now;
    use crate::rtt::RttEstimator;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn period_backs_off_and_adds_max_ack_delay_for_application_only() {
        let rtt = RttEstimator::new(ms(333), ms(25)).stats();
        assert_eq!(pto_period(&rtt, 0, Epoch::Initial), ms(999));
        assert_eq!(pto_period(&rtt, 0, Epoch::Handshake), ms(999));
        assert_eq!(pto_period(&rtt, 0, Epoch::Application), ms(1024));
        assert_eq!(pto_period(&rtt, 2, Epoch::Application), ms(4096));
        // Huge counts saturate instead of overflowing.
        assert!(pto_period(&rtt, u32::MAX, Epoch::Application) > ms(1_000_000));
    }

    #[test]
    fn deadline_picks_the_earliest_space_and_skips_unconfirmed_application() {
        let t0 = test_now();
        let rtt = RttEstimator::new(ms(333), ms(25)).stats();
        let mut spaces = [SpaceTimes::default(); 3];
        spaces[2] = SpaceTimes {
            ack_eliciting_in_flight: true,
            last_ack_eliciting: Some(t0),
        };
        assert_eq!(pto_deadline(&rtt, 0, false, &spaces, t0), None);
        assert_eq!(
            pto_deadline(&rtt, 0, true, &spaces, t0),
            Some(PtoDeadline::Space(t0 + ms(1024), Epoch::Application))
        );
        spaces[1] = SpaceTimes {
            ack_eliciting_in_flight: true,
            last_ack_eliciting: Some(t0 + ms(10)),
        };
        assert_eq!(
            pto_deadline(&rtt, 0, true, &spaces, t0),
            Some(PtoDeadline::Space(t0 + ms(1009), Epoch::Handshake))
        );
        let none = [SpaceTimes::default(); 3];
        let later = t0 + ms(5);
        assert_eq!(
            pto_deadline(&rtt, 1, false, &none, later),
            Some(PtoDeadline::AntiDeadlock(later + ms(1998)))
        );
    }
}
