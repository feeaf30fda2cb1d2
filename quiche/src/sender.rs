//! One path's sender (RFC 9002 §5-7, RFC 9000 §9.4, RFC 8899): the congestion controller, the
//! RTT estimate, the pacer, the path MTU search and the datagram size they count in.
//!
//! Each [`crate::path::Path`] owns one, so a migration changes which path is active instead of
//! swapping state in and out of the connection. Loss detection and the PTO, which are about
//! packet number spaces rather than paths, stay in [`crate::recovery::Recovery`], which is
//! handed the active path's sender where it needs the controller or the RTT.

use std::time::{Duration, Instant};

use crate::cc::pacer::Pacer;
use crate::cc::{CongestionControl, Controller};
use crate::pmtud::{Pmtud, PmtudConfig};
use crate::rtt::RttEstimator;

/// The sender state of one path.
#[derive(Debug)]
pub struct PathSender {
    /// The congestion controller. Recovery feeds it (`recovery/`); the connection reads it.
    pub(crate) cc: Controller,
    rtt: RttEstimator,
    /// The PTO period without backoff, with max_ack_delay, kept up to date with the RTT
    /// estimate: the connection asks for it several times per packet (idle timer, key
    /// retention).
    pto: Duration,
    /// The largest UDP payload to send on the path: the PLPMTU of `pmtud` when it searches,
    /// otherwise the configured size capped by the peer's `max_udp_payload_size`.
    max_datagram_size: usize,
    pacer: Pacer,
    /// The path MTU search of this path (RFC 8899): a path the connection moves to searches
    /// its own, one it returns to keeps what it found.
    pmtud: Pmtud,
}

impl PathSender {
    /// A sender with controller `cc` and RTT estimator `rtt`, counting in datagrams of
    /// `max_datagram_size` bytes, pacing if `pacing`, without a path MTU search (see
    /// [`PathSender::with_pmtud`]).
    pub fn new(cc: Controller, rtt: RttEstimator, max_datagram_size: usize, pacing: bool) -> Self {
        let pmtud = Pmtud::new(PmtudConfig {
            enabled: false,
            max: max_datagram_size,
            ..PmtudConfig::default()
        });
        let mut sender = PathSender {
            cc,
            rtt,
            pto: Duration::ZERO,
            max_datagram_size,
            pacer: Pacer::new(pacing, max_datagram_size),
            pmtud,
        };
        sender.refresh_pto();
        sender
    }

    /// `smoothed_rtt + max(4 * rttvar, kGranularity) + max_ack_delay` (RFC 9002 §6.2.1, the
    /// Application space's period without backoff).
    fn refresh_pto(&mut self) {
        let stats = self.rtt.stats();
        self.pto = stats.pto_base().saturating_add(stats.max_ack_delay);
    }

    /// The congestion controller.
    pub fn controller(&self) -> &Controller {
        &self.cc
    }

    /// The congestion controller, mutably.
    #[inline]
    pub fn controller_mut(&mut self) -> &mut Controller {
        &mut self.cc
    }

    /// The congestion window in bytes.
    #[inline]
    pub fn cwnd(&self) -> usize {
        self.cc.cwnd()
    }

    /// The RTT estimator.
    #[inline]
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Takes an RTT sample (RFC 9002 §5.3; see [`RttEstimator::update`]).
    pub fn update_rtt(
        &mut self,
        now: Instant,
        latest_rtt: Duration,
        ack_delay: Duration,
        handshake_confirmed: bool,
    ) {
        self.rtt
            .update(now, latest_rtt, ack_delay, handshake_confirmed);
        self.refresh_pto();
    }

    /// Forgets min_rtt after persistent congestion (RFC 9002 §5.2).
    pub fn reset_min_rtt(&mut self) {
        self.rtt.reset_min_rtt();
    }

    /// Sets the peer's max_ack_delay (from its transport parameters).
    pub fn set_max_ack_delay(&mut self, max_ack_delay: Duration) {
        self.rtt.set_max_ack_delay(max_ack_delay);
        self.refresh_pto();
    }

    /// The PTO period without backoff, with max_ack_delay (for idle and closing timeouts, RFC
    /// 9000 §10).
    pub fn pto(&self) -> Duration {
        self.pto
    }

    /// The datagram size the controller and the pacer count in.
    pub fn max_datagram_size(&self) -> usize {
        self.max_datagram_size
    }

    /// The maximum datagram size changed (the peer's limit, path MTU discovery).
    pub fn on_mtu_update(&mut self, max_datagram_size: usize) {
        if max_datagram_size == self.max_datagram_size {
            return;
        }
        self.max_datagram_size = max_datagram_size;
        self.cc.on_mtu_update(max_datagram_size);
        self.pacer.set_max_datagram_size(max_datagram_size);
    }

    /// The sender with the path MTU search `pmtud`: with the search on, datagrams start at its
    /// PLPMTU (BASE_PLPMTU until probes prove more, RFC 8899 §5.1.2).
    pub fn with_pmtud(mut self, pmtud: Pmtud) -> Self {
        if pmtud.is_enabled() {
            self.on_mtu_update(pmtud.current());
        }
        self.pmtud = pmtud;
        self
    }

    /// The path MTU search.
    pub fn pmtud(&self) -> &Pmtud {
        &self.pmtud
    }

    /// The path MTU search, mutably; [`PathSender::apply_pmtu_update`] then applies what it
    /// changed.
    pub fn pmtud_mut(&mut self) -> &mut Pmtud {
        &mut self.pmtud
    }

    /// Applies a PLPMTU the search changed (or the end of the search) to the datagram size,
    /// the controller and the pacer; returns the old and the new size, if there was an update.
    pub fn apply_pmtu_update(&mut self) -> Option<(usize, usize)> {
        let size = self.pmtud.take_update()?;
        let old = self.max_datagram_size;
        self.on_mtu_update(size);
        Some((old, size))
    }

    /// The peer's `max_udp_payload_size`: it caps the search, or without one the datagram size.
    pub fn set_peer_max_udp_payload_size(&mut self, peer_max: usize) {
        let size = if self.pmtud.is_enabled() {
            self.pmtud.set_max(peer_max);
            let _ = self.pmtud.take_update();
            self.pmtud.current()
        } else {
            self.max_datagram_size.min(peer_max)
        };
        self.on_mtu_update(size);
    }

    /// The pacer.
    #[inline]
    pub fn pacer(&self) -> &Pacer {
        &self.pacer
    }

    /// Caps the pacing rate at `max` bytes per second (`Config::set_max_pacing_rate`).
    pub fn set_max_pacing_rate(&mut self, max: Option<u64>) {
        self.pacer.set_max_rate(max);
    }

    /// An ack-eliciting datagram of `bytes` is ready at `now`: returns when the pacer
    /// releases it, and charges it to the pacer.
    #[inline]
    pub fn pace(&mut self, now: Instant, bytes: usize) -> Instant {
        let at = self.pacer.next_send_time(now);
        let srtt = self.rtt.smoothed_rtt();
        self.pacer.on_packet_sent(at, bytes, &self.cc, srtt);
        at
    }
}
