//! Updating the control parameters (draft-ietf-ccwg-bbr-06 §5.6): the pacing rate, the send
//! quantum and the congestion window from the model, and saving and restoring the window
//! around loss recovery and ProbeRTT.

use super::*;

impl Bbr {
    pub(super) fn save_cwnd(&mut self) {
        if !self.in_recovery && self.state != BbrState::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    pub(super) fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    pub(super) fn save_state_upon_loss(&mut self) {
        self.save_cwnd();
        self.undo = Undo {
            state: None,
            bw_shortterm: self.m.bw_shortterm,
            inflight_shortterm: self.m.inflight_shortterm,
            inflight_longterm: self.m.inflight_longterm,
        };
    }

    /// Inflight(gain): the BDP times `gain`, with the quantization budget (§5.6.4.2).
    pub(super) fn inflight(&self, gain: u64) -> u64 {
        let cap = self.m.bdp_multiple(gain, self.initial_cwnd as u64);
        self.quantization_budget(cap)
    }

    pub(super) fn quantization_budget(&self, cap: u64) -> u64 {
        // QUIC's offload budget is one send quantum (§5.5.8.2; TCP's is three).
        let offload_budget = self.send_quantum as u64;
        let mut cap = cap.max(offload_budget).max(self.min_pipe_cwnd());
        if self.state == BbrState::ProbeBwUp {
            cap += 2 * self.mss as u64;
        }
        cap
    }

    pub(super) fn set_pacing_rate(&mut self) {
        self.set_pacing_rate_with_gain(self.pacing_gain);
    }

    pub(super) fn set_pacing_rate_with_gain(&mut self, gain: u64) {
        let rate =
            (self.m.bw as u128) * gain as u128 * (100 - PACING_MARGIN_PERCENT) as u128 / 100_000;
        let rate = u64::try_from(rate).unwrap_or(u64::MAX);
        if self.m.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    pub(super) fn set_send_quantum(&mut self) {
        let quantum = (self.pacing_rate / 1_000).min(64 * 1024) as usize;
        self.send_quantum = quantum.max(2 * self.mss);
    }

    pub(super) fn set_cwnd(&mut self, rs: &RateSample) {
        let max_inflight = {
            let cap = self
                .m
                .bdp_multiple(self.cwnd_gain, self.initial_cwnd as u64);
            self.quantization_budget(cap.saturating_add(self.m.extra_acked()))
        };
        let newly_acked = rs.newly_acked as usize;
        let max_inflight = usize::try_from(max_inflight).unwrap_or(usize::MAX);
        if self.m.full_bw_reached {
            self.cwnd = self.cwnd.saturating_add(newly_acked).min(max_inflight);
        } else if self.cwnd < max_inflight || rs.total_delivered < self.initial_cwnd as u64 {
            self.cwnd = self.cwnd.saturating_add(newly_acked);
        }
        let min_pipe = self.min_pipe_cwnd() as usize;
        self.cwnd = self.cwnd.max(min_pipe);
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd() as usize);
        }
        self.bound_cwnd_for_model();
    }

    fn bound_cwnd_for_model(&mut self) {
        let mut cap = u64::MAX;
        if self.state.is_probe_bw() && self.state != BbrState::ProbeBwCruise {
            cap = self.m.inflight_longterm;
        } else if matches!(self.state, BbrState::ProbeRtt | BbrState::ProbeBwCruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.m.inflight_shortterm).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(usize::try_from(cap).unwrap_or(usize::MAX));
    }
}
