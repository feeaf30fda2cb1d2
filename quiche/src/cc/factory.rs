//! Choosing and building a controller: the built-in algorithms by name
//! ([`CongestionControlAlgorithm`]), user-written ones through a [`CcFactory`], and
//! [`Controller`], the enum that dispatches to either without allocating for the built-ins.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use super::*;
use crate::error::{Error, Result};
use crate::rtt::RttStats;

/// The built-in congestion control algorithms. The values are those of quiche's C API
/// (`QUICHE_CC_RENO`, `QUICHE_CC_CUBIC`, `QUICHE_CC_BBR2_GCONGESTION`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum CongestionControlAlgorithm {
    /// NewReno (RFC 9002 §7).
    #[default]
    Reno = 0,
    /// CUBIC (RFC 8312 with RFC 9438's corrections).
    CUBIC = 1,
    /// BBR (draft-ietf-ccwg-bbr-06, BBRv3), under quiche's name for its BBRv2-family
    /// controller (`QUICHE_CC_BBR2_GCONGESTION`), so that quiche programs that name or match
    /// it build unchanged. [`CongestionControlAlgorithm::Bbr`] is the same value.
    Bbr2Gcongestion = 4,
}

#[allow(non_upper_case_globals)]
impl CongestionControlAlgorithm {
    /// BBR (draft-ietf-ccwg-bbr-06): this crate's name for
    /// [`CongestionControlAlgorithm::Bbr2Gcongestion`].
    pub const Bbr: CongestionControlAlgorithm = CongestionControlAlgorithm::Bbr2Gcongestion;
}

impl FromStr for CongestionControlAlgorithm {
    type Err = Error;

    /// Parses `"reno"`, `"cubic"` or `"bbr"` (also `"bbr2"` and quiche's
    /// `"bbr2_gcongestion"`), ASCII case-insensitive; anything else is
    /// [`Error::CongestionControl`].
    fn from_str(name: &str) -> Result<Self> {
        if name.eq_ignore_ascii_case("reno") {
            Ok(CongestionControlAlgorithm::Reno)
        } else if name.eq_ignore_ascii_case("cubic") {
            Ok(CongestionControlAlgorithm::CUBIC)
        } else if ["bbr", "bbr2", "bbr2_gcongestion"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
        {
            Ok(CongestionControlAlgorithm::Bbr)
        } else {
            Err(Error::CongestionControl)
        }
    }
}

/// Builds user-written congestion controllers, one per path.
pub trait CcFactory: Send + Sync {
    /// Creates a controller for a new path.
    fn build(&self, cfg: &CcConfig) -> Box<dyn CongestionControl>;

    /// The algorithm's name.
    fn name(&self) -> &str;
}

/// A path's congestion controller: a built-in algorithm (enum dispatch, no allocation) or a
/// user-written one.
// The CUBIC variants are the largest (CUBIC's state is kept twice, for undo): one value per
// path, updated on every ACK, so kept inline rather than boxed.
#[allow(clippy::large_enum_variant)]
pub enum Controller {
    /// NewReno with standard slow start.
    Reno(Classic<StandardSlowStart, Reno>),
    /// NewReno with HyStart++.
    RenoHystart(Classic<HyStart, Reno>),
    /// CUBIC with standard slow start.
    Cubic(Classic<StandardSlowStart, Cubic>),
    /// CUBIC with HyStart++.
    CubicHystart(Classic<HyStart, Cubic>),
    /// NewReno with SEARCH.
    RenoSearch(Classic<Search, Reno>),
    /// CUBIC with SEARCH.
    CubicSearch(Classic<Search, Cubic>),
    /// BBR (HyStart++ does not apply: BBR has its own Startup).
    Bbr(Box<Bbr>),
    /// A controller built by a [`CcFactory`].
    Custom(Box<dyn CongestionControl>),
}

/// CUBIC with the configured idle-restart measure.
fn cubic(cfg: &CcConfig) -> Cubic {
    let mut cubic = Cubic::default();
    cubic.set_idle_restart_fix(cfg.cubic_idle_restart_fix);
    cubic
}

impl Controller {
    /// Creates a built-in controller: the algorithm's window growth, with the slow-start
    /// strategy `cfg.strategy()` names (HyStart++ in the configured variant).
    pub fn new(algorithm: CongestionControlAlgorithm, cfg: &CcConfig) -> Self {
        use CongestionControlAlgorithm as A;
        use SlowStartStrategy as S;
        match (algorithm, cfg.strategy()) {
            (A::Reno, S::Standard) => {
                Controller::Reno(Classic::new(cfg, StandardSlowStart, Reno::default()))
            }
            (A::Reno, S::HyStartPlusPlus) => {
                Controller::RenoHystart(Classic::new(cfg, HyStart::new(cfg), Reno::default()))
            }
            (A::Reno, S::Search) => {
                Controller::RenoSearch(Classic::new(cfg, Search::new(), Reno::default()))
            }
            (A::CUBIC, S::Standard) => {
                Controller::Cubic(Classic::new(cfg, StandardSlowStart, cubic(cfg)))
            }
            (A::CUBIC, S::HyStartPlusPlus) => {
                Controller::CubicHystart(Classic::new(cfg, HyStart::new(cfg), cubic(cfg)))
            }
            (A::CUBIC, S::Search) => {
                Controller::CubicSearch(Classic::new(cfg, Search::new(), cubic(cfg)))
            }
            (A::Bbr, _) => Controller::Bbr(Box::new(Bbr::new(cfg))),
        }
    }

    /// Gives a controller that randomises its behaviour (BBR's probe timing) a per-connection
    /// seed; the others ignore it.
    pub fn seed(&mut self, seed: u64) {
        if let Controller::Bbr(bbr) = self {
            bbr.seed(seed);
        }
    }

    /// Creates a controller with a user-supplied factory.
    pub fn from_factory(factory: &dyn CcFactory, cfg: &CcConfig) -> Self {
        Controller::Custom(factory.build(cfg))
    }
}

impl fmt::Debug for Controller {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name())
            .field("cwnd", &self.cwnd())
            .field("ssthresh", &self.ssthresh())
            .field("state", &self.state())
            .finish()
    }
}

/// Forwards a call to whichever controller the enum holds.
macro_rules! dispatch {
    ($self:expr, $cc:ident => $call:expr) => {
        match $self {
            Controller::Reno($cc) => $call,
            Controller::RenoHystart($cc) => $call,
            Controller::Cubic($cc) => $call,
            Controller::CubicHystart($cc) => $call,
            Controller::RenoSearch($cc) => $call,
            Controller::CubicSearch($cc) => $call,
            Controller::Bbr($cc) => $call,
            Controller::Custom($cc) => $call,
        }
    };
}

impl CongestionControl for Controller {
    fn on_packet_sent(&mut self, now: Instant, info: &SentInfo) {
        dispatch!(self, cc => cc.on_packet_sent(now, info))
    }

    fn on_ack(&mut self, now: Instant, ack: &AckBatch, rtt: &RttStats) {
        dispatch!(self, cc => cc.on_ack(now, ack, rtt))
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        signal: &CongestionSignal,
        rtt: &RttStats,
    ) -> bool {
        dispatch!(self, cc => cc.on_congestion_event(now, signal, rtt))
    }

    fn on_spurious_congestion(&mut self, now: Instant) {
        dispatch!(self, cc => cc.on_spurious_congestion(now))
    }

    fn on_packets_discarded(&mut self, bytes: usize) {
        dispatch!(self, cc => cc.on_packets_discarded(bytes))
    }

    fn on_mtu_update(&mut self, max_datagram_size: usize) {
        dispatch!(self, cc => cc.on_mtu_update(max_datagram_size))
    }

    fn on_app_limited(&mut self, now: Instant) {
        dispatch!(self, cc => cc.on_app_limited(now))
    }

    fn wants_rate_samples(&self) -> bool {
        dispatch!(self, cc => cc.wants_rate_samples())
    }

    fn on_rate_sample(&mut self, now: Instant, sample: &RateSample) {
        dispatch!(self, cc => cc.on_rate_sample(now, sample))
    }

    fn on_packet_lost_rate(&mut self, now: Instant, lost: &LostPacketRate) {
        dispatch!(self, cc => cc.on_packet_lost_rate(now, lost))
    }

    fn take_app_limited_mark(&mut self) -> bool {
        dispatch!(self, cc => cc.take_app_limited_mark())
    }

    fn cwnd(&self) -> usize {
        dispatch!(self, cc => cc.cwnd())
    }

    fn ssthresh(&self) -> Option<usize> {
        dispatch!(self, cc => cc.ssthresh())
    }

    fn pacing_rate(&self) -> Option<u64> {
        dispatch!(self, cc => cc.pacing_rate())
    }

    fn send_quantum(&self) -> usize {
        dispatch!(self, cc => cc.send_quantum())
    }

    fn bandwidth_estimate(&self) -> Option<u64> {
        dispatch!(self, cc => cc.bandwidth_estimate())
    }

    fn min_rtt_estimate(&self) -> Option<Duration> {
        dispatch!(self, cc => cc.min_rtt_estimate())
    }

    fn state(&self) -> CcState {
        dispatch!(self, cc => cc.state())
    }

    fn name(&self) -> &'static str {
        dispatch!(self, cc => cc.name())
    }

    fn stats(&self) -> CcStats {
        dispatch!(self, cc => cc.stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_starts_with_the_initial_window() {
        let cfg = CcConfig::default();
        let cc = Controller::new(CongestionControlAlgorithm::Reno, &cfg);
        assert_eq!(cc.cwnd(), 12_000);
        assert_eq!(cc.ssthresh(), None);
        assert_eq!(cc.state(), CcState::SlowStart);
        assert_eq!(cc.name(), "reno");
        assert_eq!(cc.pacing_rate(), None);
        assert_eq!(cc.send_quantum(), 12_000);
    }

    #[test]
    fn algorithm_names_parse() {
        assert_eq!("reno".parse(), Ok(CongestionControlAlgorithm::Reno));
        assert_eq!("cubic".parse(), Ok(CongestionControlAlgorithm::CUBIC));
        assert_eq!("CUBIC".parse(), Ok(CongestionControlAlgorithm::CUBIC));
        assert_eq!("bbr".parse(), Ok(CongestionControlAlgorithm::Bbr));
        assert_eq!("BBR2".parse(), Ok(CongestionControlAlgorithm::Bbr));
        assert_eq!(
            "bbr3".parse::<CongestionControlAlgorithm>(),
            Err(Error::CongestionControl)
        );
        assert_eq!(CongestionControlAlgorithm::Bbr as i32, 4);
        // quiche's three variants, matched exhaustively as a quiche program would.
        let quiche_name = |a: CongestionControlAlgorithm| match a {
            CongestionControlAlgorithm::Reno => "reno",
            CongestionControlAlgorithm::CUBIC => "cubic",
            CongestionControlAlgorithm::Bbr2Gcongestion => "bbr2_gcongestion",
        };
        for a in [
            CongestionControlAlgorithm::Reno,
            CongestionControlAlgorithm::CUBIC,
            CongestionControlAlgorithm::Bbr,
        ] {
            assert_eq!(quiche_name(a).parse(), Ok(a));
        }
        assert_eq!(
            "".parse::<CongestionControlAlgorithm>(),
            Err(Error::CongestionControl)
        );
        assert_eq!(CongestionControlAlgorithm::Reno as i32, 0);
        assert_eq!(CongestionControlAlgorithm::CUBIC as i32, 1);
    }

    #[test]
    fn algorithm_and_hystart_choose_the_variant() {
        let mut cfg = CcConfig::default();
        for (algorithm, hystart, name) in [
            (CongestionControlAlgorithm::Reno, false, "reno"),
            (CongestionControlAlgorithm::Reno, true, "reno"),
            (CongestionControlAlgorithm::CUBIC, false, "cubic"),
            (CongestionControlAlgorithm::CUBIC, true, "cubic"),
            (CongestionControlAlgorithm::Bbr, false, "bbr"),
            (CongestionControlAlgorithm::Bbr, true, "bbr"),
        ] {
            cfg.hystart = hystart;
            let cc = Controller::new(algorithm, &cfg);
            assert_eq!(cc.name(), name);
            let expected = match (algorithm, hystart) {
                (CongestionControlAlgorithm::Reno, false) => matches!(cc, Controller::Reno(_)),
                (CongestionControlAlgorithm::Reno, true) => {
                    matches!(cc, Controller::RenoHystart(_))
                }
                (CongestionControlAlgorithm::CUBIC, false) => matches!(cc, Controller::Cubic(_)),
                (CongestionControlAlgorithm::CUBIC, true) => {
                    matches!(cc, Controller::CubicHystart(_))
                }
                (CongestionControlAlgorithm::Bbr, _) => matches!(cc, Controller::Bbr(_)),
            };
            assert!(expected, "{algorithm:?} hystart={hystart}: {cc:?}");
            assert_eq!(cc.stats(), CcStats::default());
        }
    }

    /// A user-written controller: a fixed window.
    struct Fixed(usize);

    impl CongestionControl for Fixed {
        fn on_packet_sent(&mut self, _: Instant, _: &SentInfo) {}
        fn on_ack(&mut self, _: Instant, _: &AckBatch, _: &RttStats) {}
        fn on_congestion_event(&mut self, _: Instant, _: &CongestionSignal, _: &RttStats) -> bool {
            false
        }
        fn cwnd(&self) -> usize {
            self.0
        }
        fn ssthresh(&self) -> Option<usize> {
            None
        }
        fn state(&self) -> CcState {
            CcState::CongestionAvoidance
        }
        fn name(&self) -> &'static str {
            "fixed"
        }
    }

    struct FixedFactory;

    impl CcFactory for FixedFactory {
        fn build(&self, cfg: &CcConfig) -> Box<dyn CongestionControl> {
            Box::new(Fixed(cfg.max_datagram_size * 4))
        }
        fn name(&self) -> &str {
            "fixed"
        }
    }

    #[test]
    fn factory_builds_custom_controllers() {
        let factory: std::sync::Arc<dyn CcFactory> = std::sync::Arc::new(FixedFactory);
        let cc = Controller::from_factory(factory.as_ref(), &CcConfig::default());
        assert!(matches!(cc, Controller::Custom(_)));
        assert_eq!(cc.cwnd(), 4800);
        assert_eq!(
            cc.send_quantum(),
            4800,
            "default send quantum is the window"
        );
        assert_eq!(cc.name(), "fixed");
        assert_eq!(factory.name(), "fixed");
    }
}
