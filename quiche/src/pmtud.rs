//! Datagram Packetization Layer Path MTU Discovery (DPLPMTUD, RFC 8899; RFC 9000 §14.3).
//!
//! The search knows nothing of connections or packets beyond numbers and sizes: the connection
//! asks [`Pmtud::probe_size`] whether a probe (PING + PADDING, RFC 9000 §14.4) should go out
//! now, and reports what became of probes and of ordinary packets. That keeps the state machine
//! testable alone, and lets one instance live in each path.
//!
//! States (RFC 8899 §5.2): `Disabled` until the handshake is confirmed (QUIC's handshake proves
//! BASE_PLPMTU = 1200, §14.3.1, so BASE is left at once), `Searching` while probes are
//! outstanding, `SearchComplete` once the range is closed; the PMTU raise timer
//! (PMTU_RAISE_TIMER) reopens the search later. Black-hole detection sends the PLPMTU back to
//! BASE_PLPMTU and searches again below the size that stopped working.
//!
//! Search: the first probe of a search tries the largest size allowed (most paths carry a full
//! 1500-byte Ethernet frame, so one round trip usually settles it); after that a binary search
//! between the largest size confirmed and the smallest size that failed. A size fails after
//! [`PmtudConfig::max_probes`] losses in a row (MAX_PROBES, RFC 8899 §5.1.2), so a random loss
//! does not shrink the range. The search stops when the range is narrower than
//! [`SEARCH_RESOLUTION`]: a few bytes per packet are not worth the round trips.

use std::time::{Duration, Instant};

/// BASE_PLPMTU and MIN_PLPMTU for QUIC: the smallest maximum datagram size (RFC 9000 §14.3).
pub const BASE_PLPMTU: usize = 1200;

/// MAX_PROBES (RFC 8899 §5.1.2): consecutive losses after which a probed size has failed.
///
/// RFC 8899 suggests 3; 2 is used here. Each failed size costs MAX_PROBES round trips, and a
/// binary search meets two or three of them, so 3 would stretch a search over 15 round trips
/// where 2 needs about 10. A probe is only declared lost once later packets were acknowledged
/// (the path was up), so two losses in a row at a random loss rate `p` fail a good size with
/// probability `p²` (1e-4 at 1 %), and the raise timer corrects even that later.
pub const DEFAULT_MAX_PROBES: u8 = 2;

/// PMTU_RAISE_TIMER (RFC 8899 §5.1.1): how long a completed search stands before the next.
pub const DEFAULT_RAISE_INTERVAL: Duration = Duration::from_secs(600);

/// The search stops when the largest confirmed size is this close to the smallest failed one.
pub const SEARCH_RESOLUTION: usize = 8;

/// Losses of full-size packets (larger than BASE_PLPMTU) sent after the last full-size packet
/// that was acknowledged, while smaller packets sent later do get through, that declare a
/// black hole. Congestion drops rarely form such a run: a loss is only declared when a later
/// packet is acknowledged, and in a bulk transfer later packets are full-size too.
pub const BLACK_HOLE_THRESHOLD: u32 = 3;

/// Parameters of the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmtudConfig {
    /// Whether to search at all.
    pub enabled: bool,
    /// MAX_PLPMTU: the largest datagram to try (the local limit, lowered by the peer's
    /// `max_udp_payload_size` with [`Pmtud::set_max`]).
    pub max: usize,
    /// MAX_PROBES.
    pub max_probes: u8,
    /// PMTU_RAISE_TIMER.
    pub raise_interval: Duration,
}

impl Default for PmtudConfig {
    fn default() -> Self {
        PmtudConfig {
            enabled: true,
            max: BASE_PLPMTU,
            max_probes: DEFAULT_MAX_PROBES,
            raise_interval: DEFAULT_RAISE_INTERVAL,
        }
    }
}

/// The DPLPMTUD phases of RFC 8899 §5.2 (BASE is passed through at once in QUIC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmtudState {
    /// Not searching: disabled, or the handshake is not confirmed yet.
    Disabled,
    /// Probing larger sizes.
    Searching,
    /// The range is closed; the raise timer will reopen it.
    SearchComplete,
}

/// Counters of the search, for statistics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmtudStats {
    /// Probes sent.
    pub probes_sent: u64,
    /// Probes acknowledged.
    pub probes_acked: u64,
    /// Probes declared lost.
    pub probes_lost: u64,
    /// Black holes detected (each one sent the PLPMTU back to BASE_PLPMTU).
    pub black_holes: u64,
}

/// The path MTU search of one path.
#[derive(Clone, Debug)]
pub struct Pmtud {
    config: PmtudConfig,
    state: PmtudState,
    /// The PLPMTU: the largest datagram known to get through.
    current: usize,
    /// Largest confirmed size of the running search.
    lo: usize,
    /// Smallest size known (or supposed) not to get through; sizes from here up are not tried.
    hi: usize,
    /// The next probe of this search is its first: it tries `hi - 1` rather than the middle.
    first: bool,
    /// The probe in flight: packet number and size.
    in_flight: Option<(u64, usize)>,
    /// Consecutive losses of probes of the size being tried.
    losses: u8,
    raise_at: Option<Instant>,
    /// The largest packet number of an acknowledged packet larger than BASE_PLPMTU.
    largest_acked_full: Option<u64>,
    /// Full-size losses since then (see [`BLACK_HOLE_THRESHOLD`]).
    suspect_losses: u32,
    /// The PLPMTU changed, or the search completed, since [`Pmtud::take_update`] was last
    /// called.
    updated: bool,
    stats: PmtudStats,
}

impl Pmtud {
    /// A search that waits for [`Pmtud::start`].
    pub fn new(config: PmtudConfig) -> Self {
        let max = config.max.max(BASE_PLPMTU);
        Pmtud {
            config: PmtudConfig { max, ..config },
            state: PmtudState::Disabled,
            current: BASE_PLPMTU,
            lo: BASE_PLPMTU,
            hi: max + 1,
            first: true,
            in_flight: None,
            losses: 0,
            raise_at: None,
            largest_acked_full: None,
            suspect_losses: 0,
            updated: false,
            stats: PmtudStats::default(),
        }
    }

    /// Whether the search is enabled at all.
    pub fn is_enabled(&self) -> bool {
        self.config.enabled
    }

    /// The phase of the search.
    pub fn state(&self) -> PmtudState {
        self.state
    }

    /// The PLPMTU: the largest datagram to send now.
    pub fn current(&self) -> usize {
        self.current
    }

    /// The search's settings (with MAX_PLPMTU as lowered so far).
    pub fn config(&self) -> PmtudConfig {
        self.config
    }

    /// MAX_PLPMTU.
    pub fn max(&self) -> usize {
        self.config.max
    }

    /// Counters of the search.
    pub fn stats(&self) -> PmtudStats {
        self.stats
    }

    /// Lowers MAX_PLPMTU (the peer's `max_udp_payload_size`); never below BASE_PLPMTU.
    pub fn set_max(&mut self, max: usize) {
        let max = max.clamp(BASE_PLPMTU, self.config.max);
        self.config.max = max;
        self.hi = self.hi.min(max + 1);
        if self.current > max {
            self.set_current(max);
        }
        self.lo = self.lo.min(max);
        self.maybe_complete(None);
    }

    /// The handshake is confirmed: BASE_PLPMTU is proven, the search begins (RFC 9000
    /// §14.3.1).
    pub fn start(&mut self, now: Instant) {
        if !self.config.enabled || self.state != PmtudState::Disabled {
            return;
        }
        self.state = PmtudState::Searching;
        self.maybe_complete(Some(now));
    }

    /// The search for another network path, made from this one: nothing learned here holds
    /// there (RFC 8899 §4.3, RFC 9000 §14.3), so it starts at BASE_PLPMTU with this search's
    /// settings (MAX_PLPMTU as lowered by the peer) and waits for [`Pmtud::start`]. The
    /// counters go on from this search's.
    pub fn for_new_path(&self) -> Pmtud {
        Pmtud {
            stats: self.stats,
            ..Pmtud::new(self.config)
        }
    }

    /// The size of the probe to send now, if one is due. The caller still applies the
    /// congestion window and the buffer size; it reports the probe with [`Pmtud::on_probe_sent`].
    pub fn probe_size(&mut self, now: Instant) -> Option<usize> {
        if self.state == PmtudState::SearchComplete && self.raise_at.is_some_and(|t| now >= t) {
            self.reopen();
        }
        if self.state != PmtudState::Searching || self.in_flight.is_some() {
            return None;
        }
        Some(self.candidate())
    }

    /// The size the search tries next.
    fn candidate(&self) -> usize {
        if self.first {
            self.hi - 1
        } else {
            self.lo + (self.hi - self.lo) / 2
        }
    }

    /// A probe of `size` bytes went out as packet `pn`.
    pub fn on_probe_sent(&mut self, pn: u64, size: usize) {
        self.in_flight = Some((pn, size));
        self.stats.probes_sent += 1;
    }

    /// The probe sent as `pn` was acknowledged: its size gets through.
    pub fn on_probe_acked(&mut self, pn: u64, now: Instant) {
        let Some((probe_pn, size)) = self.in_flight else {
            return;
        };
        if probe_pn != pn {
            return;
        }
        self.in_flight = None;
        self.stats.probes_acked += 1;
        self.losses = 0;
        self.first = false;
        if self.state != PmtudState::Searching {
            return;
        }
        self.lo = self.lo.max(size);
        // Evidence that full-size packets get through again.
        self.largest_acked_full = Some(self.largest_acked_full.map_or(pn, |l| l.max(pn)));
        self.suspect_losses = 0;
        if size > self.current {
            self.set_current(size);
        }
        self.maybe_complete(Some(now));
    }

    /// The probe sent as `pn` was declared lost.
    pub fn on_probe_lost(&mut self, pn: u64, now: Instant) {
        let Some((probe_pn, size)) = self.in_flight else {
            return;
        };
        if probe_pn != pn {
            return;
        }
        self.in_flight = None;
        self.stats.probes_lost += 1;
        self.losses += 1;
        if self.losses < self.config.max_probes.max(1) {
            // Try the same size again: one loss may be chance.
            return;
        }
        self.losses = 0;
        self.first = false;
        self.hi = self.hi.min(size).max(self.lo + 1);
        self.maybe_complete(Some(now));
    }

    /// An ordinary (non-probe) packet of `size` bytes sent as `pn` was acknowledged.
    pub fn on_packet_acked(&mut self, pn: u64, size: usize) {
        if size > BASE_PLPMTU {
            self.largest_acked_full = Some(self.largest_acked_full.map_or(pn, |l| l.max(pn)));
            self.suspect_losses = 0;
        }
    }

    /// An ordinary (non-probe) packet of `size` bytes sent as `pn` was declared lost. Returns
    /// true when this detected a black hole: the PLPMTU went back to BASE_PLPMTU.
    ///
    /// Loss is declared only when a later packet is acknowledged, so a run of full-size losses
    /// newer than any acknowledged full-size packet means smaller packets got through where
    /// full ones did not. (A path that drops everything never acknowledges anything; the
    /// connection keeps PTO probes at BASE_PLPMTU so that such probes show the difference.)
    pub fn on_packet_lost(&mut self, pn: u64, size: usize, now: Instant) -> bool {
        if !self.config.enabled || size <= BASE_PLPMTU || self.current <= BASE_PLPMTU {
            return false;
        }
        if self.largest_acked_full.is_some_and(|l| pn < l) {
            return false;
        }
        self.suspect_losses += 1;
        if self.suspect_losses < BLACK_HOLE_THRESHOLD {
            return false;
        }
        self.on_black_hole(now);
        true
    }

    /// Falls back to BASE_PLPMTU and searches again below the size that stopped working
    /// (RFC 8899 §4.3, §5.2).
    fn on_black_hole(&mut self, now: Instant) {
        self.stats.black_holes += 1;
        let failed = self.current;
        self.set_current(BASE_PLPMTU);
        self.suspect_losses = 0;
        self.in_flight = None;
        self.losses = 0;
        self.lo = BASE_PLPMTU;
        self.hi = failed.max(BASE_PLPMTU + 1);
        self.first = false;
        if self.state != PmtudState::Disabled {
            self.state = PmtudState::Searching;
            self.maybe_complete(Some(now));
        }
    }

    /// Checks the PLPMTU again (quiche's `revalidate_pmtu`): the PLPMTU falls back to
    /// BASE_PLPMTU and a search starts that tries the old size first, so the size comes back
    /// with the first probe's acknowledgment, or the search goes on below it if the probes are
    /// lost. Nothing happens while the PLPMTU is BASE_PLPMTU or the search has not started.
    pub fn revalidate(&mut self) {
        if self.state == PmtudState::Disabled || self.current <= BASE_PLPMTU {
            return;
        }
        let old = self.current;
        self.set_current(BASE_PLPMTU);
        self.suspect_losses = 0;
        self.in_flight = None;
        self.losses = 0;
        self.raise_at = None;
        self.lo = BASE_PLPMTU;
        self.hi = old + 1;
        self.first = true;
        self.state = PmtudState::Searching;
    }

    /// The raise timer fired: search again from the PLPMTU up to MAX_PLPMTU.
    fn reopen(&mut self) {
        self.raise_at = None;
        self.lo = self.current;
        self.hi = self.config.max + 1;
        self.first = true;
        self.losses = 0;
        if self.hi - self.lo > 1 {
            self.state = PmtudState::Searching;
        }
    }

    /// Closes the search once the range is narrow enough, arming the raise timer.
    fn maybe_complete(&mut self, now: Option<Instant>) {
        if self.state != PmtudState::Searching {
            return;
        }
        let nothing_above = self.hi <= self.lo + 1;
        let narrow = !self.first && self.hi - self.lo <= SEARCH_RESOLUTION;
        if !nothing_above && !narrow {
            return;
        }
        self.state = PmtudState::SearchComplete;
        // Reported even without a new size: qlog's `done` says the search ended.
        self.updated = true;
        self.in_flight = None;
        self.losses = 0;
        if let Some(now) = now {
            self.raise_at = now.checked_add(self.config.raise_interval);
        }
    }

    fn set_current(&mut self, size: usize) {
        if size != self.current {
            self.current = size;
            self.updated = true;
        }
    }

    /// The PLPMTU if it changed, or the search completed, since the last call.
    pub fn take_update(&mut self) -> Option<usize> {
        std::mem::take(&mut self.updated).then_some(self.current)
    }

    /// Whether the search is over for now (nothing left to try before the raise timer).
    pub fn is_search_complete(&self) -> bool {
        self.state == PmtudState::SearchComplete
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(max: usize) -> (Pmtud, Instant) {
        let now = crate::testing::virtual_epoch();
        let mut p = Pmtud::new(PmtudConfig {
            max,
            ..PmtudConfig::default()
        });
        assert_eq!(p.probe_size(now), None, "no probe before the handshake");
        p.start(now);
        (p, now)
    }

    /// Runs the search against a path that carries datagrams up to `path_max` bytes; returns
    /// the sizes probed in order.
    fn run(p: &mut Pmtud, now: Instant, path_max: usize, pn: &mut u64) -> Vec<usize> {
        let mut probed = Vec::new();
        while let Some(size) = p.probe_size(now) {
            assert!(probed.len() < 100, "the search does not end: {probed:?}");
            probed.push(size);
            *pn += 1;
            p.on_probe_sent(*pn, size);
            if size <= path_max {
                p.on_probe_acked(*pn, now);
            } else {
                p.on_probe_lost(*pn, now);
            }
        }
        probed
    }

    #[test]
    fn the_first_probe_tries_the_maximum_and_one_success_ends_the_search() {
        let (mut p, now) = search(1452);
        let probed = run(&mut p, now, 1500, &mut 0);
        assert_eq!(probed, vec![1452]);
        assert_eq!(p.current(), 1452);
        assert_eq!(p.take_update(), Some(1452));
        assert_eq!(p.take_update(), None);
        assert!(p.is_search_complete());
    }

    #[test]
    fn binary_search_settles_within_the_resolution_below_the_path_limit() {
        for path_max in [1200, 1232, 1252, 1300, 1372, 1400, 1451] {
            let (mut p, now) = search(1452);
            let probed = run(&mut p, now, path_max, &mut 0);
            assert!(p.current() <= path_max, "{path_max}: {}", p.current());
            assert!(
                p.current() + SEARCH_RESOLUTION >= path_max,
                "{path_max}: settled at {}",
                p.current()
            );
            // Two tries of each failed size, one of each good one: a handful of halvings.
            assert!(probed.len() <= 14, "{path_max}: {probed:?}");
            assert!(probed.iter().all(|&s| s > BASE_PLPMTU && s <= 1452));
        }
    }

    #[test]
    fn a_single_probe_loss_does_not_fail_the_size() {
        let (mut p, now) = search(1452);
        assert_eq!(p.probe_size(now), Some(1452));
        p.on_probe_sent(1, 1452);
        p.on_probe_lost(1, now);
        assert_eq!(p.probe_size(now), Some(1452), "tried again");
        p.on_probe_sent(2, 1452);
        p.on_probe_acked(2, now);
        assert_eq!(p.current(), 1452);
        // Unknown packet numbers change nothing.
        p.on_probe_lost(7, now);
        assert_eq!(p.current(), 1452);
    }

    #[test]
    fn a_new_path_starts_from_the_base_and_searches_again() {
        let (mut p, now) = search(1452);
        let mut pn = 0;
        run(&mut p, now, 1500, &mut pn);
        assert_eq!(p.current(), 1452);
        let _ = p.take_update();
        let sent = p.stats().probes_sent;
        let mut p = p.for_new_path();
        assert_eq!(p.current(), BASE_PLPMTU);
        assert_eq!(p.stats().probes_sent, sent, "the counters go on");
        assert_eq!(
            p.probe_size(now),
            None,
            "the new path's search waits for start"
        );
        p.start(now);
        let probed = run(&mut p, now, 1300, &mut pn);
        assert!(!probed.is_empty());
        assert!(p.current() <= 1300 && p.current() + SEARCH_RESOLUTION >= 1300);

        // The peer's limit holds on the new path too.
        let mut capped = search(1452).0;
        capped.set_max(1300);
        assert_eq!(capped.for_new_path().max(), 1300);
    }

    #[test]
    fn one_probe_at_a_time() {
        let (mut p, now) = search(1452);
        let size = p.probe_size(now).unwrap();
        p.on_probe_sent(1, size);
        assert_eq!(p.probe_size(now), None);
    }

    #[test]
    fn the_peer_limit_caps_the_search() {
        let now = crate::testing::virtual_epoch();
        let mut p = Pmtud::new(PmtudConfig {
            max: 1452,
            ..PmtudConfig::default()
        });
        p.set_max(1300);
        p.start(now);
        assert_eq!(p.probe_size(now), Some(1300));
        p.set_max(1000);
        assert_eq!(p.max(), BASE_PLPMTU, "never below the QUIC minimum");
        assert_eq!(p.probe_size(now), None, "nothing above 1200 to try");
    }

    #[test]
    fn disabled_never_probes_nor_detects() {
        let now = crate::testing::virtual_epoch();
        let mut p = Pmtud::new(PmtudConfig {
            enabled: false,
            max: 1452,
            ..PmtudConfig::default()
        });
        p.start(now);
        assert_eq!(p.probe_size(now), None);
        assert_eq!(p.current(), BASE_PLPMTU);
        for pn in 0..10 {
            assert!(!p.on_packet_lost(pn, 1452, now));
        }
    }

    #[test]
    fn full_size_losses_newer_than_any_full_size_ack_are_a_black_hole() {
        let (mut p, now) = search(1452);
        let mut pn = 0;
        run(&mut p, now, 1452, &mut pn);
        assert_eq!(p.current(), 1452);
        p.take_update();
        // Packets 10..20 full-size, all acknowledged: fine.
        for n in 10..20 {
            p.on_packet_acked(n, 1452);
        }
        // Losses older than an acknowledged full-size packet are congestion, not a black hole.
        for n in 0..10 {
            assert!(!p.on_packet_lost(n, 1452, now));
        }
        // Small losses never count.
        for n in 20..30 {
            assert!(!p.on_packet_lost(n, 1200, now));
        }
        assert!(!p.on_packet_lost(30, 1452, now));
        assert!(!p.on_packet_lost(31, 1452, now));
        assert!(p.on_packet_lost(32, 1452, now));
        assert_eq!(p.current(), BASE_PLPMTU);
        assert_eq!(p.take_update(), Some(BASE_PLPMTU));
        assert_eq!(p.stats().black_holes, 1);
        // The search resumes below the size that failed and finds the new limit.
        let probed = run(&mut p, now, 1252, &mut pn);
        assert!(probed.iter().all(|&s| s < 1452), "{probed:?}");
        assert!(p.current() <= 1252 && p.current() + SEARCH_RESOLUTION >= 1252);
    }

    #[test]
    fn a_full_size_ack_clears_the_suspicion() {
        let (mut p, now) = search(1452);
        run(&mut p, now, 1452, &mut 0);
        assert!(!p.on_packet_lost(100, 1452, now));
        assert!(!p.on_packet_lost(101, 1452, now));
        p.on_packet_acked(102, 1452);
        assert!(!p.on_packet_lost(103, 1452, now));
        assert!(!p.on_packet_lost(104, 1452, now));
        assert_eq!(p.current(), 1452);
    }

    #[test]
    fn the_raise_timer_reopens_a_completed_search() {
        let now = crate::testing::virtual_epoch();
        let mut p = Pmtud::new(PmtudConfig {
            max: 1452,
            raise_interval: Duration::from_secs(10),
            ..PmtudConfig::default()
        });
        p.start(now);
        let mut pn = 0;
        run(&mut p, now, 1300, &mut pn);
        let settled = p.current();
        assert!(settled <= 1300);
        assert_eq!(p.probe_size(now + Duration::from_secs(9)), None);
        // The path got better: the next search, ten seconds on, finds it.
        let later = now + Duration::from_secs(10);
        let probed = run(&mut p, later, 1452, &mut pn);
        assert_eq!(probed, vec![1452]);
        assert_eq!(p.current(), 1452);
        // A failed raise never lowers the PLPMTU (it may refine it within the resolution).
        let (mut q, now) = search(1452);
        run(&mut q, now, 1300, &mut pn);
        let before = q.current();
        let probed = run(&mut q, now + DEFAULT_RAISE_INTERVAL, 1300, &mut pn);
        assert_eq!(probed[..2], [1452; 2]);
        assert!((before..=1300).contains(&q.current()), "{}", q.current());
    }
}
