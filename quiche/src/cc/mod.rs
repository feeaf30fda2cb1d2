//! Congestion control: the controller trait and the built-in algorithms.
//!
//! Recovery (see [`crate::recovery`]) owns bytes in flight, loss detection and persistent
//! congestion; a controller only reacts to the batched facts it is fed (ARCHITECTURE.md,
//! "Congestion control"):
//!
//! - [`CongestionControl::on_packet_sent`] for every in-flight packet;
//! - [`CongestionControl::on_ack`] once per ACK frame that newly acknowledges in-flight packets;
//! - [`CongestionControl::on_congestion_event`] once per batch of losses (or ECN-CE increase),
//!   before `on_ack` for the same frame; the controller itself applies the recovery-period rule;
//! - [`CongestionControl::on_spurious_congestion`] when every loss behind the last reduction was
//!   later acknowledged.
//!
//! The loss-based built-in algorithms are compositions [`Classic<S, G>`] of a slow-start
//! strategy `S` and a window-growth law `G`; [`Bbr`] (draft-ietf-ccwg-bbr-06) is model-based and
//! asks recovery for delivery-rate samples ([`CongestionControl::wants_rate_samples`]). All are
//! dispatched through the [`Controller`] enum; user-written algorithms plug in as
//! [`Controller::Custom`] through a [`CcFactory`].

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

mod bbr;
mod classic;
mod congestion_control;
mod cubic;
mod factory;
mod hystart;
mod input;
pub mod pacer;
mod reno;
mod search;
mod slow_start;
#[cfg(test)]
mod test_sender;

pub use self::bbr::{Bbr, BbrOptions, BbrState};
pub use self::classic::{Classic, SlowStart, Window, WindowGrowth};
pub use self::congestion_control::{
    CcState, CcStats, CongestionControl, StartupExit, StartupExitReason,
};
pub use self::cubic::{cubic_k, w_cubic, Cubic, ALPHA_CUBIC, BETA_CUBIC};
pub use self::factory::{CcFactory, CongestionControlAlgorithm, Controller};
pub use self::hystart::{
    HyStart, HystartVariant, CSS_GROWTH_DIVISOR, CSS_ROUNDS, LOW_CWND_PACKETS, MAX_RTT_THRESH,
    MIN_RTT_THRESH, N_RTT_SAMPLE, UNPACED_L,
};
pub use self::input::{
    AckBatch, CongestionKind, CongestionSignal, LostPacketRate, RateSample, SentInfo,
};
pub use self::reno::Reno;
pub use self::search::{
    Search, Verdict as SearchVerdict, EXTRA_BINS, NUM_BINS, THRESH_PERCENT, W as SEARCH_W,
};
pub use self::slow_start::StandardSlowStart;

/// Default maximum datagram size before path MTU discovery: the smallest a QUIC path may carry
/// (RFC 9000 §14).
pub const DEFAULT_MAX_DATAGRAM_SIZE: usize = 1200;

/// Default initial congestion window, in packets (RFC 9002 §7.2).
pub const DEFAULT_INITIAL_WINDOW_PACKETS: usize = 10;

/// The byte limit RFC 9002 §7.2 puts on a ten-packet initial window (RFC 6928's 14,600 bytes
/// adjusted for UDP's smaller header).
const INITIAL_WINDOW_BYTE_LIMIT: usize = 14_720;

/// The minimum congestion window, in packets (kMinimumWindow, RFC 9002 §7.2).
pub const MINIMUM_WINDOW_PACKETS: usize = 2;

/// Configuration of a congestion controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcConfig {
    /// The sender's maximum datagram size (RFC 9002 Appendix B.2), in bytes.
    pub max_datagram_size: usize,
    /// The initial congestion window, in packets. See [`CcConfig::initial_window`].
    pub initial_window_packets: usize,
    /// Whether slow start may end before a loss: `false` forces standard slow start whatever
    /// [`slow_start`](CcConfig::slow_start) says (quiche's `enable_hystart(false)`).
    pub hystart: bool,
    /// The slow-start strategy used when `hystart` is set.
    pub slow_start: SlowStartStrategy,
    /// Which HyStart++ variant runs when `hystart` is set.
    pub hystart_variant: HystartVariant,
    /// Whether the sender paces. HyStart++ caps the growth per ACK at
    /// [`UNPACED_L`] datagrams only when it does not (RFC 9406 §4.3).
    pub pacing: bool,
    /// BBR's departures from draft-ietf-ccwg-bbr-06, all off by default.
    pub bbr: BbrOptions,
    /// How CUBIC measures the idle time of a restart (see [`Cubic::set_idle_restart_fix`]);
    /// on by default, as quiche's `enable_cubic_idle_restart_fix`.
    pub cubic_idle_restart_fix: bool,
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig {
            max_datagram_size: DEFAULT_MAX_DATAGRAM_SIZE,
            initial_window_packets: DEFAULT_INITIAL_WINDOW_PACKETS,
            hystart: true,
            slow_start: SlowStartStrategy::default(),
            hystart_variant: HystartVariant::Css,
            pacing: true,
            bbr: BbrOptions::default(),
            cubic_idle_restart_fix: true,
        }
    }
}

impl CcConfig {
    /// The slow-start strategy in effect: [`SlowStartStrategy::Standard`] unless `hystart`.
    pub fn strategy(&self) -> SlowStartStrategy {
        if self.hystart {
            self.slow_start
        } else {
            SlowStartStrategy::Standard
        }
    }

    /// The initial congestion window in bytes.
    ///
    /// With the default of ten packets this is RFC 9002 §7.2's
    /// `min(10 * mss, max(14720, 2 * mss))`. Any other packet count is taken literally as
    /// `initial_window_packets * mss`: whoever configures it asked for that many packets (the
    /// point of the setting is a larger window on long-RTT paths), so the 14,720-byte cap, which
    /// belongs to the ten-packet recommendation, is not applied. It is never below the minimum
    /// window.
    pub fn initial_window(&self) -> usize {
        let mss = self.max_datagram_size;
        let window = if self.initial_window_packets == DEFAULT_INITIAL_WINDOW_PACKETS {
            let cap = INITIAL_WINDOW_BYTE_LIMIT.max(mss.saturating_mul(2));
            mss.saturating_mul(DEFAULT_INITIAL_WINDOW_PACKETS).min(cap)
        } else {
            mss.saturating_mul(self.initial_window_packets)
        };
        window.max(self.minimum_window())
    }

    /// The minimum congestion window in bytes: two datagrams (RFC 9002 §7.2).
    pub fn minimum_window(&self) -> usize {
        self.max_datagram_size
            .saturating_mul(MINIMUM_WINDOW_PACKETS)
    }
}

/// How slow start decides to end before a loss. The values are those of
/// `quiche_config_set_slow_start` in the C API.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum SlowStartStrategy {
    /// Standard slow start (RFC 9002 §7.3.1): the window doubles each round trip until the
    /// first congestion event.
    Standard = 0,
    /// HyStart++ (RFC 9406): leaves slow start when the minimum RTT of a round rises.
    #[default]
    HyStartPlusPlus = 1,
    /// SEARCH (draft-chung-ccwg-search-00): leaves slow start when the delivered bytes stop
    /// doubling each RTT.
    Search = 2,
}

impl SlowStartStrategy {
    /// The name [`FromStr`] accepts: `standard`, `hystart` or `search`.
    pub fn as_str(self) -> &'static str {
        match self {
            SlowStartStrategy::Standard => "standard",
            SlowStartStrategy::HyStartPlusPlus => "hystart",
            SlowStartStrategy::Search => "search",
        }
    }
}

impl fmt::Display for SlowStartStrategy {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SlowStartStrategy {
    type Err = Error;

    /// Parses `standard`, `hystart` (or `hystart++`) and `search`, ASCII case-insensitive;
    /// anything else is [`Error::CongestionControl`].
    fn from_str(name: &str) -> Result<Self> {
        let name = name.to_ascii_lowercase();
        match name.as_str() {
            "standard" => Ok(SlowStartStrategy::Standard),
            "hystart" | "hystart++" => Ok(SlowStartStrategy::HyStartPlusPlus),
            "search" => Ok(SlowStartStrategy::Search),
            _ => Err(Error::CongestionControl),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_window_follows_rfc9002_section_7_2() {
        let mut cfg = CcConfig::default();
        assert_eq!(cfg.initial_window(), 12_000);
        cfg.max_datagram_size = 1500;
        assert_eq!(cfg.initial_window(), 14_720);
        cfg.max_datagram_size = 9000;
        // max(14720, 2 * 9000) = 18000 caps 10 * 9000.
        assert_eq!(cfg.initial_window(), 18_000);
        assert_eq!(cfg.minimum_window(), 18_000);
    }

    #[test]
    fn configured_initial_window_is_taken_literally() {
        let cfg = CcConfig {
            initial_window_packets: 100,
            ..CcConfig::default()
        };
        assert_eq!(cfg.initial_window(), 120_000);
        let cfg = CcConfig {
            initial_window_packets: 1,
            ..CcConfig::default()
        };
        assert_eq!(
            cfg.initial_window(),
            2_400,
            "never below the minimum window"
        );
        let cfg = CcConfig {
            initial_window_packets: usize::MAX,
            ..CcConfig::default()
        };
        assert_eq!(
            cfg.initial_window(),
            usize::MAX,
            "saturates instead of overflowing"
        );
    }
}
