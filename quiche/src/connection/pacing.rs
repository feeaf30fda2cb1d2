//! What the pacer says to an application that schedules its own sends (quiche's release-time
//! calls): when the next packet may leave, whether it may join the previous burst, how far
//! ahead to schedule. The same pacer sets `SendInfo::at`.

use std::time::Duration;

use super::Connection;
use crate::buffers::BufFactory;
use crate::cc::pacer::ReleaseDecision;
use crate::cc::CongestionControlAlgorithm;

/// The bounds of [`Connection::max_release_into_future`].
const MIN_RELEASE_HORIZON: Duration = Duration::from_millis(1);
const MAX_RELEASE_HORIZON: Duration = Duration::from_millis(5);

impl<F: BufFactory> Connection<F> {
    /// When the next packet should leave, by the pacer of the active path: the release time
    /// the next ack-eliciting datagram will get in its `SendInfo::at`, and whether it may go
    /// in the same burst as the one before. `time(now)` is `None` when pacing is off or the
    /// pacer holds nothing back. `Some` while the connection has an active path (always,
    /// here).
    pub fn get_next_release_time(&self) -> Option<ReleaseDecision> {
        Some(self.sender().pacer().release_decision())
    }

    /// Whether the connection's congestion control is quiche's "gcongestion" one, the
    /// algorithm [`CongestionControlAlgorithm::Bbr2Gcongestion`] (this crate's BBR). quiche
    /// gives release times only for that one; here [`Connection::get_next_release_time`]
    /// gives them whatever the algorithm. `Some` while there is an active path.
    pub fn gcongestion_enabled(&self) -> Option<bool> {
        Some(
            self.cc_factory.is_none()
                && self.recovery_config.cc_algorithm == CongestionControlAlgorithm::Bbr2Gcongestion,
        )
    }

    /// How far ahead of its release time an application should hand a packet to its socket
    /// (the horizon of a scheduler such as the kernel's fq qdisc): an eighth of the smoothed
    /// RTT, at least 1 ms and at most 5 ms, so that a batch never spans much of a round trip.
    pub fn max_release_into_future(&self) -> Duration {
        let srtt = self.sender().rtt().smoothed_rtt();
        (srtt / 8).clamp(MIN_RELEASE_HORIZON, MAX_RELEASE_HORIZON)
    }

    /// Whether pacing is on ([`crate::Config::enable_pacing`]): ack-eliciting datagrams then
    /// carry release times in `SendInfo::at`.
    pub fn pacing_enabled(&self) -> bool {
        self.sender().pacer().enabled()
    }
}
