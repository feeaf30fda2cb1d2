//! ProbeRTT (draft-ietf-ccwg-bbr-06 §5.3.4): when the minimum RTT estimate is stale, a short
//! stretch at a small window to measure it again.

use super::*;

impl Bbr {
    pub(super) fn check_probe_rtt(&mut self, now: Instant, inflight: u64, rs: &RateSample) {
        if self.state != BbrState::ProbeRtt && self.m.probe_rtt_expired && !self.idle_restart {
            self.state = BbrState::ProbeRtt;
            self.pacing_gain = 1_000;
            self.cwnd_gain = PROBE_RTT_CWND_GAIN;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.m.start_round();
        }
        if self.state == BbrState::ProbeRtt {
            self.handle_probe_rtt(now, inflight);
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    fn handle_probe_rtt(&mut self, now: Instant, inflight: u64) {
        // Samples of what ProbeRTT sends say nothing of the path's bandwidth: mark the
        // connection app-limited (MarkConnectionAppLimited; recovery's sampler applies it).
        self.mark_app_limited = true;
        if self.probe_rtt_done_stamp.is_none() && inflight <= self.probe_rtt_cwnd() {
            self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
            self.probe_rtt_round_done = false;
            self.m.start_round();
        } else if self.probe_rtt_done_stamp.is_some() {
            if self.m.round_start {
                self.probe_rtt_round_done = true;
            }
            if self.probe_rtt_round_done {
                self.check_probe_rtt_done(now);
            }
        }
    }

    /// CheckProbeRTTDone: past the 200 ms, schedule the next ProbeRTT and leave.
    pub(super) fn check_probe_rtt_done(&mut self, now: Instant) {
        if self.probe_rtt_done_stamp.is_some_and(|done| now > done) {
            self.m.probe_rtt_min_stamp = Some(now);
            self.restore_cwnd();
            self.exit_probe_rtt(now);
        }
    }

    fn exit_probe_rtt(&mut self, now: Instant) {
        self.m.reset_short_term_model();
        if self.m.full_bw_reached {
            self.start_probe_bw_down(now);
            self.start_probe_bw_cruise();
        } else {
            self.enter_startup();
        }
    }

    pub(super) fn probe_rtt_cwnd(&self) -> u64 {
        let cwnd = self
            .m
            .bdp_multiple(PROBE_RTT_CWND_GAIN, self.initial_cwnd as u64);
        cwnd.max(self.min_pipe_cwnd())
    }
}
