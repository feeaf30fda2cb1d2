//! Pacing (RFC 9002 §7.7): spreads a window's packets over the round trip instead of sending
//! them back to back.
//!
//! A token bucket: tokens are bytes, refilled at the pacing rate up to a burst size; a packet may
//! leave once the bucket holds a full datagram's worth. The rate is the controller's
//! [`pacing_rate`](CongestionControl::pacing_rate) when it gives one, otherwise
//! `5/4 * cwnd / smoothed_rtt` (RFC 9002 §7.7's N = 1.25, so that pacing itself does not keep
//! the sender from filling its window within a round trip). The burst is the controller's
//! [`send_quantum`](CongestionControl::send_quantum) (for the built-in controllers
//! `min(cwnd, initial window)`, i.e. ten datagrams once the window is larger; RFC 9002 §7.7
//! limits bursts to the initial window), never less than one datagram and never more than the
//! window.
//!
//! Tokens are counted in nano-bytes (bytes × 10⁻⁹), so that `rate [bytes/s] × elapsed [ns]`
//! refills exactly and the computed departure times are exact to the nanosecond, with no
//! floating point drift. Nothing allocates; time only comes in as `now`.

use std::time::{Duration, Instant};

use crate::cc::CongestionControl;

/// Nano-bytes per byte.
const NANOS_PER_BYTE: u128 = 1_000_000_000;

/// RFC 9002 §7.7's pacing gain N = 5/4, as a fraction.
const GAIN_NUMERATOR: u128 = 5;
const GAIN_DENOMINATOR: u128 = 4;

/// One path's pacer.
#[derive(Clone, Debug)]
pub struct Pacer {
    enabled: bool,
    /// The datagram size a departure must have tokens for, in bytes.
    max_datagram_size: usize,
    /// Bucket capacity in nano-bytes.
    capacity: u128,
    /// Tokens in nano-bytes at `last`; negative when a packet larger than the tokens left.
    tokens: i128,
    /// The rate in bytes per second; 0 for unpaced (no RTT estimate yet, or a zero RTT).
    rate: u64,
    /// A ceiling on `rate` (`Config::set_max_pacing_rate`).
    max_rate: Option<u64>,
    /// When `tokens` was last brought up to date; `None` before the first packet.
    last: Option<Instant>,
}

/// When the pacer lets the next packet leave, and whether it may follow the previous one
/// without a gap (quiche's `ReleaseDecision`, from `Connection::get_next_release_time`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseDecision {
    /// The release instant; `None` when the pacer does not hold the packet back (pacing off,
    /// no rate yet, nothing sent yet).
    at: Option<Instant>,
    allow_burst: bool,
}

impl ReleaseDecision {
    /// How close two release times must be to count as the same (see
    /// [`ReleaseDecision::time_eq`]): well below any pacing interval worth keeping (a 1200-byte
    /// packet every 50 µs is 190 Mbit/s), so that only packets one burst could carry match.
    pub const EQUAL_THRESHOLD: Duration = Duration::from_micros(50);

    /// The instant the next packet should leave, if it lies after `now`; `None` means it may
    /// leave now.
    pub fn time(&self, now: Instant) -> Option<Instant> {
        self.at.filter(|&at| at > now)
    }

    /// Whether the packet may leave right after the previous one, in the same burst (the
    /// bucket had a datagram's worth left, or the pacer holds nothing back).
    pub fn can_burst(&self) -> bool {
        self.allow_burst
    }

    /// Whether this release time and `other`'s are within [`Self::EQUAL_THRESHOLD`] of each
    /// other, as seen at `now` (a time not after `now` counts as `now`): the packets may
    /// leave together.
    pub fn time_eq(&self, other: &Self, now: Instant) -> bool {
        let a = self.time(now).unwrap_or(now);
        let b = other.time(now).unwrap_or(now);
        a.max(b).duration_since(a.min(b)) <= Self::EQUAL_THRESHOLD
    }
}

impl Pacer {
    /// A pacer for datagrams of `max_datagram_size` bytes. A disabled pacer lets every packet
    /// leave at once.
    pub fn new(enabled: bool, max_datagram_size: usize) -> Self {
        Pacer {
            enabled,
            max_datagram_size: max_datagram_size.max(1),
            capacity: 0,
            tokens: 0,
            rate: 0,
            max_rate: None,
            last: None,
        }
    }

    /// Whether pacing is on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The current pacing rate in bytes per second, if pacing and known.
    pub fn rate(&self) -> Option<u64> {
        (self.enabled && self.rate > 0).then_some(self.rate)
    }

    /// Caps the pacing rate at `max` bytes per second (`None`: no cap).
    pub fn set_max_rate(&mut self, max: Option<u64>) {
        self.max_rate = max.map(|m| m.max(1));
    }

    /// The cap on the pacing rate, if any (see [`Pacer::set_max_rate`]).
    pub fn max_rate(&self) -> Option<u64> {
        self.max_rate
    }

    /// The maximum datagram size changed (path MTU discovery).
    pub fn set_max_datagram_size(&mut self, max_datagram_size: usize) {
        self.max_datagram_size = max_datagram_size.max(1);
    }

    /// The pacing rate RFC 9002 §7.7 suggests, `5/4 * cwnd / smoothed_rtt` in bytes per second;
    /// `None` without a usable RTT.
    pub fn default_rate(cwnd: usize, smoothed_rtt: Duration) -> Option<u64> {
        let rtt_ns = smoothed_rtt.as_nanos();
        if rtt_ns == 0 {
            return None;
        }
        let rate = (cwnd as u128)
            .saturating_mul(GAIN_NUMERATOR * NANOS_PER_BYTE)
            .checked_div(GAIN_DENOMINATOR * rtt_ns)?;
        Some(u64::try_from(rate).unwrap_or(u64::MAX))
    }

    /// Tokens at `now`, in nano-bytes, refilled at the current rate up to the capacity.
    fn tokens_at(&self, now: Instant) -> i128 {
        let Some(last) = self.last else {
            return self.capacity_i128();
        };
        let elapsed = now.saturating_duration_since(last).as_nanos();
        let refill = (self.rate as u128).saturating_mul(elapsed);
        let refill = i128::try_from(refill).unwrap_or(i128::MAX);
        self.tokens.saturating_add(refill).min(self.capacity_i128())
    }

    fn capacity_i128(&self) -> i128 {
        i128::try_from(self.capacity).unwrap_or(i128::MAX)
    }

    fn datagram_tokens(&self) -> i128 {
        (self.max_datagram_size as i128).saturating_mul(NANOS_PER_BYTE as i128)
    }

    /// When the next packet may leave: `now` if the bucket holds a full datagram's worth (or
    /// pacing is off or has no rate yet), otherwise the instant it will.
    ///
    /// An application may build several datagrams at one `now` and hold each until its release
    /// time (the apps send those due within a millisecond at once, in one GSO batch). The
    /// previous packet's release time may then lie after `now`: the wait counts from that
    /// release, never from `now`, so that such datagrams are a pacing interval apart and
    /// not all released at the same instant. Release times never go backwards.
    pub fn next_send_time(&self, now: Instant) -> Instant {
        let Some(last) = self.last else {
            return now;
        };
        if !self.enabled || self.rate == 0 {
            return now;
        }
        let from = now.max(last);
        let deficit = self.datagram_tokens().saturating_sub(self.tokens_at(from));
        if deficit <= 0 {
            return from;
        }
        // Round up so that at the returned instant the tokens suffice.
        let rate = self.rate as u128;
        let wait_ns = (deficit as u128).div_ceil(rate);
        let wait = Duration::from_nanos(u64::try_from(wait_ns).unwrap_or(u64::MAX));
        from.checked_add(wait).unwrap_or(from)
    }

    /// When the next packet may leave, without a `now`: what [`Pacer::next_send_time`] gives
    /// for any `now` up to the release instant (after it, the packet may leave at once).
    pub fn release_decision(&self) -> ReleaseDecision {
        let paced = self.enabled && self.rate > 0;
        let Some(last) = self.last.filter(|_| paced) else {
            return ReleaseDecision {
                at: None,
                allow_burst: true,
            };
        };
        // The tokens at `last` are exact; from there they grow at `rate`.
        let deficit = self.datagram_tokens().saturating_sub(self.tokens);
        if deficit <= 0 {
            return ReleaseDecision {
                at: Some(last),
                allow_burst: true,
            };
        }
        let wait_ns = (deficit as u128).div_ceil(self.rate as u128);
        let wait = Duration::from_nanos(u64::try_from(wait_ns).unwrap_or(u64::MAX));
        ReleaseDecision {
            at: Some(last.checked_add(wait).unwrap_or(last)),
            allow_burst: false,
        }
    }

    /// A packet of `bytes` left at `now`; `cc` gives the window, its pacing rate and send
    /// quantum at this instant, `smoothed_rtt` the RTT the default rate divides by.
    pub fn on_packet_sent<C: CongestionControl + ?Sized>(
        &mut self,
        now: Instant,
        bytes: usize,
        cc: &C,
        smoothed_rtt: Duration,
    ) {
        let cwnd = cc.cwnd();
        let rate = match cc.pacing_rate() {
            // A zero rate would never let anything leave; treat it as "no opinion".
            Some(rate) if rate > 0 => Some(rate),
            _ => Pacer::default_rate(cwnd, smoothed_rtt),
        };
        let burst = cc.send_quantum().min(cwnd).max(self.max_datagram_size);
        self.on_packet_sent_with(now, bytes, rate, burst);
    }

    /// As [`on_packet_sent`](Pacer::on_packet_sent), with the rate (bytes per second; `None`
    /// for unpaced) and burst (bytes) given directly.
    pub fn on_packet_sent_with(
        &mut self,
        now: Instant,
        bytes: usize,
        rate: Option<u64>,
        burst: usize,
    ) {
        // Refill at the old rate up to the old capacity, then apply the new parameters: the
        // time already elapsed was paced by what held then. The first packet finds the bucket
        // full.
        let refilled = self.last.map(|_| self.tokens_at(now));
        self.capacity = (burst.max(self.max_datagram_size) as u128).saturating_mul(NANOS_PER_BYTE);
        let tokens = refilled.unwrap_or(self.capacity_i128());
        self.rate = match (rate, self.max_rate) {
            (Some(rate), Some(max)) => rate.min(max),
            // Without an estimate of its own the pacer still keeps to the ceiling.
            (None, Some(max)) => max,
            (rate, None) => rate.unwrap_or(0),
        };
        let sent = (bytes as i128).saturating_mul(NANOS_PER_BYTE as i128);
        self.tokens = tokens.min(self.capacity_i128()).saturating_sub(sent);
        self.last = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CcConfig, CongestionControlAlgorithm, Controller};
    use crate::recovery::test_now;

    const MSS: usize = 1200;

    /// Sends full-sized packets as soon as the pacer allows, `n` times; returns the departure
    /// offsets from the first.
    fn departures(
        pacer: &mut Pacer,
        start: Instant,
        n: usize,
        rate: u64,
        burst: usize,
    ) -> Vec<Duration> {
        let mut now = start;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            now = pacer.next_send_time(now);
            out.push(now - start);
            pacer.on_packet_sent_with(now, MSS, Some(rate), burst);
        }
        out
    }

    #[test]
    fn release_decisions_agree_with_next_send_time() {
        let t0 = test_now();
        let mut pacer = Pacer::new(true, MSS);
        // Nothing sent yet: nothing held back.
        let first = pacer.release_decision();
        assert_eq!(first.time(t0), None);
        assert!(first.can_burst());
        let mut now = t0;
        let mut held = 0;
        for i in 0..30 {
            let d = pacer.release_decision();
            // At any instant before the release, and at and after it, the same answer as
            // next_send_time.
            for probe in [
                now,
                now + Duration::from_micros(300),
                now + Duration::from_millis(5),
            ] {
                assert_eq!(
                    d.time(probe).unwrap_or(probe),
                    pacer.next_send_time(probe),
                    "packet {i}"
                );
            }
            if d.time(now).is_some() {
                held += 1;
                assert!(
                    !d.can_burst(),
                    "packet {i} waits, so it is not part of a burst"
                );
            }
            now = pacer.next_send_time(now);
            pacer.on_packet_sent_with(now, MSS, Some(1_200_000), 4 * MSS);
        }
        // After the four-packet burst, each packet waited for the pacer.
        assert_eq!(held, 26);
        // Disabled: never held back.
        let mut off = Pacer::new(false, MSS);
        off.on_packet_sent_with(t0, MSS, Some(1_200_000), MSS);
        assert_eq!(off.release_decision().time(t0), None);
    }

    #[test]
    fn release_times_within_the_threshold_are_equal() {
        let t0 = test_now();
        let at = |us: u64| ReleaseDecision {
            at: Some(t0 + Duration::from_micros(us)),
            allow_burst: false,
        };
        assert!(at(100).time_eq(&at(150), t0));
        assert!(!at(100).time_eq(&at(151), t0));
        // Times already past count as now.
        assert!(at(0).time_eq(&at(50), t0));
        assert!(at(100).time_eq(&at(100), t0 + Duration::from_millis(1)));
    }

    #[test]
    fn default_rate_is_five_quarters_of_the_window_per_rtt() {
        // 120,000 bytes per 100 ms, times 5/4: 1.5 MB/s.
        assert_eq!(
            Pacer::default_rate(120_000, Duration::from_millis(100)),
            Some(1_500_000)
        );
        assert_eq!(Pacer::default_rate(120_000, Duration::ZERO), None);
        assert_eq!(
            Pacer::default_rate(usize::MAX, Duration::from_nanos(1)),
            Some(u64::MAX),
            "saturates"
        );
    }

    #[test]
    fn packets_leave_at_the_pacing_interval_after_a_burst() {
        // cwnd 120,000 bytes, srtt 100 ms: 1.5 MB/s, one 1200-byte packet every 800 µs.
        let rate = Pacer::default_rate(120_000, Duration::from_millis(100)).unwrap();
        let mut pacer = Pacer::new(true, MSS);
        let t0 = test_now();
        let d = departures(&mut pacer, t0, 16, rate, 10 * MSS);
        // The first ten (the burst) leave at once.
        assert!(d[..10].iter().all(|&t| t == Duration::ZERO), "{d:?}");
        // Then one every 800 µs.
        for (i, &t) in d[10..].iter().enumerate() {
            assert_eq!(t, Duration::from_micros(800 * (i as u64 + 1)), "{d:?}");
        }
    }

    #[test]
    fn datagrams_built_ahead_of_their_release_are_a_pacing_interval_apart() {
        // 1.2 MB/s, 1200-byte packets: one per millisecond once the burst is spent. An
        // application asks for five more datagrams at the same instant t0 (it holds each until
        // its release time): they must leave 1, 2, 3, 4 and 5 ms later, not all at 1 ms.
        let mut pacer = Pacer::new(true, MSS);
        let t0 = test_now();
        departures(&mut pacer, t0, 10, 1_200_000, 10 * MSS);
        let mut released = Vec::new();
        for _ in 0..5 {
            let at = pacer.next_send_time(t0);
            released.push(at - t0);
            pacer.on_packet_sent_with(at, MSS, Some(1_200_000), 10 * MSS);
        }
        assert_eq!(
            released,
            [1, 2, 3, 4, 5].map(Duration::from_millis).to_vec()
        );
        // Asked between two releases, the next still waits for its turn after the last one.
        let t1 = t0 + Duration::from_micros(2_500);
        assert_eq!(pacer.next_send_time(t1), t0 + Duration::from_millis(6));
        // With the bucket holding enough at the last release (a full refill), the next goes
        // with it, not before it.
        let mut pacer = Pacer::new(true, MSS);
        pacer.on_packet_sent_with(
            t0 + Duration::from_millis(3),
            MSS,
            Some(1_200_000),
            10 * MSS,
        );
        assert_eq!(pacer.next_send_time(t0), t0 + Duration::from_millis(3));
    }

    #[test]
    fn an_idle_pacer_refills_only_up_to_the_burst() {
        let mut pacer = Pacer::new(true, MSS);
        let t0 = test_now();
        departures(&mut pacer, t0, 20, 1_500_000, 4 * MSS);
        // A long pause: the bucket is full again, but holds only the burst.
        let t1 = t0 + Duration::from_secs(10);
        let d = departures(&mut pacer, t1, 6, 1_500_000, 4 * MSS);
        assert_eq!(
            d,
            [0, 0, 0, 0, 800, 1600].map(Duration::from_micros).to_vec()
        );
    }

    #[test]
    fn controller_rate_and_quantum_drive_the_pacer() {
        let cc = Controller::new(CongestionControlAlgorithm::Reno, &CcConfig::default());
        // Initial window 12,000 bytes, srtt 10 ms: 1.5 MB/s; quantum min(cwnd, iw) = 10
        // packets.
        let srtt = Duration::from_millis(10);
        let mut pacer = Pacer::new(true, MSS);
        let t0 = test_now();
        let mut now = t0;
        let mut times = Vec::new();
        for _ in 0..12 {
            now = pacer.next_send_time(now);
            times.push(now - t0);
            pacer.on_packet_sent(now, MSS, &cc, srtt);
        }
        assert_eq!(pacer.rate(), Some(1_500_000));
        assert!(times[..10].iter().all(|t| t.is_zero()));
        assert_eq!(times[10], Duration::from_micros(800));
        assert_eq!(times[11], Duration::from_micros(1600));
    }

    #[test]
    fn disabled_or_rateless_pacers_never_delay() {
        let t0 = test_now();
        let mut pacer = Pacer::new(false, MSS);
        assert_eq!(
            departures(&mut pacer, t0, 50, 1_000, MSS),
            vec![Duration::ZERO; 50]
        );
        assert_eq!(pacer.rate(), None);
        let mut pacer = Pacer::new(true, MSS);
        for _ in 0..50 {
            assert_eq!(pacer.next_send_time(t0), t0);
            pacer.on_packet_sent_with(t0, MSS, None, MSS);
        }
        assert_eq!(pacer.rate(), None);
    }

    #[test]
    fn an_oversized_packet_is_paid_back_before_the_next() {
        let t0 = test_now();
        let mut pacer = Pacer::new(true, MSS);
        // One-datagram burst at 1.2 MB/s: 1 ms per datagram. A 3-datagram write leaves a debt
        // of two datagrams, so the next may leave after 3 ms.
        pacer.on_packet_sent_with(t0, 3 * MSS, Some(1_200_000), MSS);
        assert_eq!(pacer.next_send_time(t0), t0 + Duration::from_millis(3));
        // Asking later, the wait shrinks accordingly.
        let t1 = t0 + Duration::from_millis(2);
        assert_eq!(pacer.next_send_time(t1), t0 + Duration::from_millis(3));
        assert_eq!(
            pacer.next_send_time(t0 + Duration::from_secs(1)),
            t0 + Duration::from_secs(1)
        );
    }
}
