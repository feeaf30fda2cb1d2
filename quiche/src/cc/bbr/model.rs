//! BBR's network path model (draft-ietf-ccwg-bbr-06 §5.5): round counting, the bandwidth and
//! min-RTT estimates, the ACK-aggregation estimate, the full-pipe detector and the short- and
//! long-term bounds that congestion signals set.

use std::time::{Duration, Instant};

use super::filter::WindowedMax;
use crate::cc::RateSample;

/// The model's state; the state machine in the parent module drives it.
#[derive(Debug)]
pub(crate) struct Model {
    // Round counting (§5.5.1).
    pub round_count: u64,
    pub round_start: bool,
    next_round_delivered: u64,
    /// C.delivered as of the last sample.
    delivered_now: u64,
    // Bandwidth (§5.5.2 to §5.5.6).
    max_bw_filter: WindowedMax,
    cycle_count: u64,
    pub bw: u64,
    pub bw_shortterm: u64,
    pub inflight_shortterm: u64,
    pub inflight_longterm: u64,
    bw_latest: u64,
    pub inflight_latest: u64,
    // Congestion signals of the current loss round (§5.5.10.3).
    pub loss_round_delivered: u64,
    pub loss_round_start: bool,
    pub is_loss_in_round: bool,
    /// Whether an ECN-CE mark arrived in the current loss round: explicit congestion, which
    /// the random-loss filter never discounts.
    pub ecn_in_round: bool,
    /// Bytes and packets lost, and bytes delivered, in the current loss round (for Startup's
    /// high-loss exit).
    pub round_lost_bytes: u64,
    pub round_lost_packets: u64,
    pub round_delivered_bytes: u64,
    /// The smallest RTT sample of the current loss round, and the latest sample.
    round_min_rtt: Option<Duration>,
    pub last_rtt: Option<Duration>,
    // Full-pipe detection (§5.3.1.2).
    pub full_bw: u64,
    full_bw_count: u32,
    pub full_bw_now: bool,
    pub full_bw_reached: bool,
    // Minimum RTT (§5.5.7, §5.3.4).
    pub min_rtt: Option<Duration>,
    min_rtt_stamp: Option<Instant>,
    probe_rtt_min_delay: Option<Duration>,
    pub probe_rtt_min_stamp: Option<Instant>,
    pub probe_rtt_expired: bool,
    // ACK aggregation (§5.5.9).
    extra_acked_filter: WindowedMax,
    extra_acked_interval_start: Option<Instant>,
    extra_acked_delivered: u64,
}

impl Model {
    pub(crate) fn new() -> Self {
        Model {
            round_count: 0,
            round_start: false,
            next_round_delivered: 0,
            delivered_now: 0,
            max_bw_filter: WindowedMax::default(),
            cycle_count: 0,
            bw: 0,
            bw_shortterm: u64::MAX,
            inflight_shortterm: u64::MAX,
            inflight_longterm: u64::MAX,
            bw_latest: 0,
            inflight_latest: 0,
            loss_round_delivered: 0,
            loss_round_start: false,
            is_loss_in_round: false,
            ecn_in_round: false,
            round_lost_bytes: 0,
            round_lost_packets: 0,
            round_delivered_bytes: 0,
            round_min_rtt: None,
            last_rtt: None,
            full_bw: 0,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            min_rtt: None,
            min_rtt_stamp: None,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: None,
            probe_rtt_expired: false,
            extra_acked_filter: WindowedMax::default(),
            extra_acked_interval_start: None,
            extra_acked_delivered: 0,
        }
    }

    /// BBR.max_bw.
    pub(crate) fn max_bw(&self) -> u64 {
        self.max_bw_filter.get()
    }

    /// BBR.extra_acked.
    pub(crate) fn extra_acked(&self) -> u64 {
        self.extra_acked_filter.get()
    }

    /// StartRound: the round ends when a packet sent after now is acknowledged.
    pub(crate) fn start_round(&mut self) {
        self.next_round_delivered = self.delivered_now;
    }

    /// UpdateRound and UpdateMaxBw (§5.5.1, §5.5.5); returns whether a round started.
    pub(crate) fn update_round_and_max_bw(
        &mut self,
        rs: &RateSample,
        app_limited: bool,
        filter_len: u64,
    ) -> bool {
        self.delivered_now = rs.total_delivered;
        if rs.prior_delivered >= self.next_round_delivered {
            self.start_round();
            self.round_count += 1;
            self.round_start = true;
        } else {
            self.round_start = false;
        }
        let rate = rs.delivery_rate;
        if rate > 0 && (rate >= self.max_bw() || !app_limited) {
            self.max_bw_filter
                .update(rate, self.cycle_count, filter_len.saturating_sub(1));
        }
        self.round_start
    }

    /// AdvanceMaxBwFilter: one more ProbeBW cycle of virtual time.
    pub(crate) fn advance_max_bw_filter(&mut self) {
        self.cycle_count += 1;
    }

    /// ResetFullBW.
    pub(crate) fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// CheckFullBWReached: three rounds without 25 % growth fill the pipe.
    pub(crate) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || !self.round_start || rs.is_app_limited {
            return;
        }
        if rs.delivery_rate.saturating_mul(4) >= self.full_bw.saturating_mul(5) {
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= super::FULL_BW_COUNT;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// UpdateMinRTT (§5.3.4.3) with the sample's RTT.
    pub(crate) fn update_min_rtt(
        &mut self,
        now: Instant,
        rtt: Duration,
        filter_len: Duration,
        probe_rtt_interval: Duration,
    ) {
        self.probe_rtt_expired = self
            .probe_rtt_min_stamp
            .is_some_and(|s| now > s + probe_rtt_interval);
        if self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired {
            self.probe_rtt_min_delay = Some(rtt);
            self.probe_rtt_min_stamp = Some(now);
        }
        let min_rtt_expired = self.min_rtt_stamp.is_some_and(|s| now > s + filter_len);
        let delay = self.probe_rtt_min_delay;
        if self.min_rtt.is_none() || delay < self.min_rtt || min_rtt_expired {
            self.min_rtt = delay;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
    }

    /// Restarts the ProbeRTT interval without a new minimum ([`super::BbrOptions`]'s
    /// `skip_probe_rtt_without_queue`).
    pub(crate) fn postpone_probe_rtt(&mut self, now: Instant) {
        self.probe_rtt_min_stamp = Some(now);
        self.probe_rtt_expired = false;
    }

    /// BDPMultiple(gain), gain in thousandths; `initial_cwnd` before any RTT sample.
    pub(crate) fn bdp_multiple(&self, gain: u64, initial_cwnd: u64) -> u64 {
        self.bdp_multiple_of(self.bw, gain, initial_cwnd)
    }

    /// BDPMultiple(bw, gain): the same with a given bandwidth (the draft's two-argument
    /// form, used with `BBR.max_bw` by IsTimeToCruise).
    pub(crate) fn bdp_multiple_of(&self, bw: u64, gain: u64, initial_cwnd: u64) -> u64 {
        let Some(min_rtt) = self.min_rtt else {
            return initial_cwnd;
        };
        let bdp = (bw as u128) * min_rtt.as_nanos() / 1_000_000_000;
        u64::try_from(bdp * gain as u128 / 1_000).unwrap_or(u64::MAX)
    }

    /// UpdateACKAggregation (§5.5.9).
    pub(crate) fn update_ack_aggregation(
        &mut self,
        now: Instant,
        newly_acked: u64,
        cwnd: u64,
        window: u64,
    ) {
        let start = *self.extra_acked_interval_start.get_or_insert(now);
        let interval = now.saturating_duration_since(start);
        let mut expected = (self.bw as u128) * interval.as_nanos() / 1_000_000_000;
        if (self.extra_acked_delivered as u128) <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_interval_start = Some(now);
            expected = 0;
        }
        self.extra_acked_delivered = self.extra_acked_delivered.saturating_add(newly_acked);
        let extra = (self.extra_acked_delivered as u128).saturating_sub(expected);
        let extra = u64::try_from(extra).unwrap_or(u64::MAX).min(cwnd);
        self.extra_acked_filter
            .update(extra, self.round_count, window.saturating_sub(1));
    }

    /// Restarts the aggregation interval (HandleRestartFromIdle, §5.4).
    pub(crate) fn restart_ack_aggregation(&mut self, now: Instant) {
        self.extra_acked_interval_start = Some(now);
        self.extra_acked_delivered = 0;
    }

    /// NoteLoss: a packet of `size` bytes (0 for an ECN-CE mark) was lost.
    pub(crate) fn note_loss(&mut self, size: u64) {
        self.is_loss_in_round = true;
        self.round_lost_bytes = self.round_lost_bytes.saturating_add(size);
        if size > 0 {
            self.round_lost_packets += 1;
        }
    }

    /// UpdateLatestDeliverySignals.
    pub(crate) fn update_latest_delivery_signals(&mut self, rs: &RateSample) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(rs.delivery_rate);
        self.inflight_latest = self.inflight_latest.max(rs.delivered);
        self.round_delivered_bytes = self.round_delivered_bytes.saturating_add(rs.newly_acked);
        self.round_min_rtt = Some(self.round_min_rtt.map_or(rs.rtt, |r| r.min(rs.rtt)));
        self.last_rtt = Some(rs.rtt);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = rs.total_delivered;
            self.loss_round_start = true;
        }
    }

    /// AdvanceLatestDeliverySignals, and the start of a new loss round's tallies.
    pub(crate) fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = rs.delivery_rate;
            self.inflight_latest = rs.delivered;
            self.round_lost_bytes = 0;
            self.round_lost_packets = 0;
            self.round_delivered_bytes = 0;
            self.round_min_rtt = None;
        }
    }

    /// Whether `rtt` shows a standing queue: it exceeds the min RTT by an eighth (at least
    /// [`super::QUEUE_DELAY_FLOOR`]). True before any min-RTT estimate.
    pub(crate) fn shows_queue(&self, rtt: Option<Duration>) -> bool {
        let (Some(min), Some(rtt)) = (self.min_rtt, rtt) else {
            return true;
        };
        rtt > min + (min / 8).max(super::QUEUE_DELAY_FLOOR)
    }

    /// Whether every RTT sample of the current loss round showed a queue: losses in such a
    /// round come from congestion rather than from random loss.
    pub(crate) fn round_shows_queue(&self) -> bool {
        self.shows_queue(self.round_min_rtt)
    }

    /// Whether the latest RTT sample showed a queue.
    pub(crate) fn latest_shows_queue(&self) -> bool {
        self.shows_queue(self.last_rtt)
    }

    /// ResetCongestionSignals.
    pub(crate) fn reset_congestion_signals(&mut self) {
        self.is_loss_in_round = false;
        self.ecn_in_round = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// InitLowerBounds and LossLowerBounds: once per round with losses, outside probing.
    pub(crate) fn adapt_lower_bounds_from_congestion(&mut self, cwnd: u64, beta: u64) {
        if self.bw_shortterm == u64::MAX {
            self.bw_shortterm = self.max_bw();
        }
        if self.inflight_shortterm == u64::MAX {
            self.inflight_shortterm = cwnd;
        }
        self.bw_shortterm = self
            .bw_latest
            .max((self.bw_shortterm as u128 * beta as u128 / 1_000) as u64);
        self.inflight_shortterm = self
            .inflight_latest
            .max((self.inflight_shortterm as u128 * beta as u128 / 1_000) as u64);
    }

    /// ResetShortTermModel.
    pub(crate) fn reset_short_term_model(&mut self) {
        self.bw_shortterm = u64::MAX;
        self.inflight_shortterm = u64::MAX;
    }

    /// BoundBWForModel.
    pub(crate) fn bound_bw_for_model(&mut self) {
        self.bw = self.max_bw().min(self.bw_shortterm);
    }
}

/// InflightAtLoss (§5.5.10.2): the in-flight volume at which the losses since `P` was sent
/// crossed the loss threshold (`thresh_permille` thousandths).
pub(crate) fn inflight_at_loss(
    size: u64,
    tx_in_flight: u64,
    lost: u64,
    thresh_permille: u64,
) -> u64 {
    let inflight_prev = tx_in_flight.saturating_sub(size) as i128;
    let lost_prev = lost.saturating_sub(size) as i128;
    let t = thresh_permille as i128;
    let lost_prefix = ((t * inflight_prev - 1_000 * lost_prev) / (1_000 - t)).max(0);
    u64::try_from(inflight_prev + lost_prefix).unwrap_or(u64::MAX)
}
