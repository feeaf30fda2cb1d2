//! ProbeBW (draft-ietf-ccwg-bbr-06 §5.3.3): the DOWN, CRUISE, REFILL and UP phases, when to
//! probe for more bandwidth, and how loss adapts the long-term model while probing.

use super::*;

impl Bbr {
    pub(super) fn enter_probe_bw(&mut self, now: Instant) {
        self.cwnd_gain = self.probe_bw_cwnd_gain;
        self.start_probe_bw_down(now);
    }

    pub(super) fn start_probe_bw_down(&mut self, now: Instant) {
        self.m.reset_congestion_signals();
        self.probe_up_acked_per_inc = u64::MAX;
        self.pick_probe_wait();
        self.cycle_stamp = Some(now);
        self.ack_phase = AckPhase::ProbeStopping;
        self.m.start_round();
        self.state = BbrState::ProbeBwDown;
        self.pacing_gain = PROBE_DOWN_PACING_GAIN;
        self.cwnd_gain = self.probe_bw_cwnd_gain;
    }

    pub(super) fn start_probe_bw_cruise(&mut self) {
        self.state = BbrState::ProbeBwCruise;
        self.pacing_gain = 1_000;
        self.cwnd_gain = self.probe_bw_cwnd_gain;
    }

    pub(super) fn start_probe_bw_refill(&mut self) {
        self.m.reset_short_term_model();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acked = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.m.start_round();
        self.state = BbrState::ProbeBwRefill;
        self.pacing_gain = 1_000;
        self.cwnd_gain = self.probe_bw_cwnd_gain;
    }

    fn start_probe_bw_up(&mut self, rs: &RateSample) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.m.start_round();
        self.m.reset_full_bw();
        self.m.full_bw = rs.delivery_rate;
        self.state = BbrState::ProbeBwUp;
        self.pacing_gain = PROBE_UP_PACING_GAIN;
        self.cwnd_gain = PROBE_UP_CWND_GAIN;
        self.raise_inflight_longterm_slope();
    }

    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe_up = self.random() % 2;
        // 2 s plus a uniform 0..1 s, in microseconds.
        let jitter = self.random() % 1_000_000;
        self.bw_probe_wait = Duration::from_secs(2) + Duration::from_micros(jitter);
    }

    fn target_inflight(&self) -> u64 {
        self.bdp().min(self.cwnd as u64)
    }

    fn has_elapsed_in_phase(&self, now: Instant, interval: Duration) -> bool {
        self.cycle_stamp.is_some_and(|s| now > s + interval)
    }

    fn is_reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = self.target_inflight() / self.mss.max(1) as u64;
        self.rounds_since_probe_up >= reno_rounds.min(63)
    }

    fn is_time_to_probe_bw(&mut self, now: Instant) -> bool {
        if self.has_elapsed_in_phase(now, self.bw_probe_wait)
            || self.is_reno_coexistence_probe_time()
        {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    pub(super) fn inflight_with_headroom(&self) -> u64 {
        let hi = self.m.inflight_longterm;
        if hi == u64::MAX {
            return u64::MAX;
        }
        let headroom = (self.mss as u64).max(HEADROOM * hi / 1_000);
        hi.saturating_sub(headroom).max(self.min_pipe_cwnd())
    }

    /// IsTimeToCruise (§5.3.3.9): enough headroom below `inflight_longterm`, and in flight
    /// no more than `Inflight(BBR.max_bw, 1.0)`, the BDP of the unbounded estimate.
    fn is_time_to_cruise(&self, inflight: u64) -> bool {
        let bw = if self.cruise_on_bounded_bw {
            self.m.bw
        } else {
            self.m.max_bw()
        };
        let bdp = self.m.bdp_multiple_of(bw, 1_000, self.initial_cwnd as u64);
        inflight <= self.inflight_with_headroom() && inflight <= self.quantization_budget(bdp)
    }

    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited || self.cwnd_limited_prev
    }

    fn is_time_to_go_down(&mut self, inflight: u64, rs: &RateSample) -> bool {
        if self.prev_probe_too_high && inflight >= self.m.inflight_longterm {
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && self.cwnd as u64 >= self.m.inflight_longterm {
            self.m.reset_full_bw();
            self.m.full_bw = rs.delivery_rate;
        } else if self.m.full_bw_now {
            return true;
        }
        false
    }

    fn raise_inflight_longterm_slope(&mut self) {
        let growth_this_round = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_acked_per_inc = (self.cwnd as u64 / growth_this_round).max(self.mss as u64);
    }

    fn probe_inflight_longterm_upward(&mut self, rs: &RateSample) {
        if !self.is_cwnd_limited() || (self.cwnd as u64) < self.m.inflight_longterm {
            return;
        }
        self.bw_probe_up_acked += rs.newly_acked;
        if self.bw_probe_up_acked >= self.probe_up_acked_per_inc {
            let delta = self.bw_probe_up_acked / self.probe_up_acked_per_inc;
            self.bw_probe_up_acked -= delta * self.probe_up_acked_per_inc;
            self.m.inflight_longterm = self
                .m
                .inflight_longterm
                .saturating_add(delta * self.mss as u64);
        }
        if self.m.round_start {
            self.raise_inflight_longterm_slope();
        }
    }

    /// Whether a loss now should count as congestion (see [`BbrOptions::filter_random_loss`]).
    /// `lost` bytes out of `of`: the loss rate that counts without a queue.
    pub(super) fn loss_is_congestion(&self, lost: u64, of: u64) -> bool {
        !self.filter_random_loss
            || self.m.latest_shows_queue()
            || lost.saturating_mul(1_000) > of.saturating_mul(HIGH_LOSS_PERMILLE)
    }

    pub(super) fn is_inflight_too_high(lost: u64, tx_in_flight: u64) -> bool {
        lost.saturating_mul(1_000) > tx_in_flight.saturating_mul(LOSS_THRESH_PERMILLE)
    }

    pub(super) fn handle_inflight_too_high(
        &mut self,
        now: Instant,
        tx_in_flight: u64,
        app_limited: bool,
    ) {
        self.prev_probe_too_high = true;
        self.is_bw_probe_sample = false;
        if !app_limited {
            let beta_target = self.target_inflight() * BETA / 1_000;
            self.m.inflight_longterm = tx_in_flight.max(beta_target);
        }
        if self.state == BbrState::ProbeBwUp {
            self.undo.state = Some(BbrState::ProbeBwUp);
            self.start_probe_bw_down(now);
        }
    }

    /// Returns true if it decided a state transition (AdaptLongTermModel).
    fn adapt_long_term_model(&mut self, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.m.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.m.round_start {
            self.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && !rs.is_app_limited {
                self.m.advance_max_bw_filter();
            }
            if self.state.is_probe_bw()
                && self.prev_probe_precautionary
                && !self.prev_probe_too_high
            {
                self.start_probe_bw_refill();
                return true;
            }
        }
        // The response to too high a loss rate is per lost packet (HandleLostPacket); here
        // an ACK only raises the upper bound, and only when the loss rate is safe.
        if Self::is_inflight_too_high(rs.lost, rs.tx_in_flight)
            && self.loss_is_congestion(rs.lost, rs.tx_in_flight)
        {
            return false;
        }
        if self.m.inflight_longterm == u64::MAX {
            return false;
        }
        if rs.tx_in_flight > self.m.inflight_longterm {
            self.m.inflight_longterm = rs.tx_in_flight;
        }
        if self.state == BbrState::ProbeBwUp {
            self.probe_inflight_longterm_upward(rs);
        }
        false
    }

    pub(super) fn update_probe_bw_cycle_phase(
        &mut self,
        now: Instant,
        inflight: u64,
        rs: &RateSample,
    ) {
        if !self.m.full_bw_reached {
            return;
        }
        if self.adapt_long_term_model(rs) {
            return;
        }
        let state = self.state;
        match state {
            BbrState::ProbeBwDown => {
                if self.is_time_to_probe_bw(now) {
                    return;
                }
                if self.is_time_to_cruise(inflight) {
                    self.start_probe_bw_cruise();
                }
            }
            BbrState::ProbeBwCruise => {
                self.is_time_to_probe_bw(now);
            }
            BbrState::ProbeBwRefill if self.m.round_start => {
                // After one round of REFILL, probe.
                self.is_bw_probe_sample = true;
                self.start_probe_bw_up(rs);
            }
            BbrState::ProbeBwUp if self.is_time_to_go_down(inflight, rs) => {
                self.prev_probe_too_high = false;
                self.start_probe_bw_down(now);
            }
            _ => {}
        }
    }
}
