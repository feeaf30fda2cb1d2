//! Delivery-rate sampling (draft-ietf-ccwg-bbr-06 §4.1, after
//! draft-cheng-iccrg-delivery-rate-estimation): for controllers that ask for it
//! ([`CongestionControl::wants_rate_samples`](crate::cc::CongestionControl::wants_rate_samples)),
//! every sent packet remembers how much the connection had delivered when it left, and every
//! ACK turns the newest acknowledged packet's snapshot into one [`RateSample`].
//!
//! Everything here is plain counters: nothing allocates, and nothing runs for controllers that
//! do not want samples.

use std::time::{Duration, Instant};

use crate::cc::{LostPacketRate, RateSample};

/// The connection's delivery state a packet snapshots when it is sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketRateState {
    /// Bytes the connection had delivered (acknowledged) when the packet was sent (P.delivered).
    pub delivered: u64,
    /// When the connection's delivered count last grew before the packet was sent
    /// (P.delivered_time); `None` when the packet was sent without sampling.
    pub delivered_time: Option<Instant>,
    /// The send time of the first packet of the flight this packet belongs to
    /// (P.first_sent_time).
    pub first_sent_time: Option<Instant>,
    /// Whether the connection was application-limited when the packet was sent.
    pub is_app_limited: bool,
    /// Bytes in flight when the packet was sent, the packet included (P.tx_in_flight).
    pub tx_in_flight: u64,
    /// Bytes the connection had declared lost when the packet was sent (P.lost).
    pub lost: u64,
}

/// The per-connection delivery counters (C.delivered and friends).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RateSampler {
    delivered: u64,
    delivered_time: Option<Instant>,
    first_sent_time: Option<Instant>,
    /// C.app_limited: the delivered count at which the current app-limited phase ends; 0 when
    /// not app-limited.
    app_limited_until: u64,
    lost: u64,
    /// The sample being built from the current ACK frame.
    pending: Option<Pending>,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    prior_delivered: u64,
    is_app_limited: bool,
    send_elapsed: Duration,
    ack_elapsed: Duration,
    tx_in_flight: u64,
    lost_at_send: u64,
    rtt: Duration,
    newly_acked: u64,
}

impl RateSampler {
    /// Snapshot for a packet being sent now; `bytes_in_flight` excludes the packet.
    pub(crate) fn on_packet_sent(
        &mut self,
        now: Instant,
        bytes_in_flight: usize,
        size: usize,
    ) -> PacketRateState {
        if bytes_in_flight == 0 {
            self.first_sent_time = Some(now);
            self.delivered_time = Some(now);
        }
        PacketRateState {
            delivered: self.delivered,
            delivered_time: Some(self.delivered_time.unwrap_or(now)),
            first_sent_time: Some(self.first_sent_time.unwrap_or(now)),
            is_app_limited: self.app_limited_until != 0,
            tx_in_flight: (bytes_in_flight + size) as u64,
            lost: self.lost,
        }
    }

    /// One packet of the current ACK frame was acknowledged (UpdateRateSample).
    pub(crate) fn on_packet_acked(
        &mut self,
        now: Instant,
        st: &PacketRateState,
        size: usize,
        time_sent: Instant,
    ) {
        let (Some(delivered_time), Some(first_sent)) = (st.delivered_time, st.first_sent_time)
        else {
            return;
        };
        self.delivered = self.delivered.saturating_add(size as u64);
        self.delivered_time = Some(now);
        let newly_acked = self.pending.map_or(0, |p| p.newly_acked) + size as u64;
        let newer = self
            .pending
            .is_none_or(|p| st.delivered >= p.prior_delivered);
        if newer {
            self.pending = Some(Pending {
                prior_delivered: st.delivered,
                is_app_limited: st.is_app_limited,
                send_elapsed: time_sent.saturating_duration_since(first_sent),
                ack_elapsed: now.saturating_duration_since(delivered_time),
                tx_in_flight: st.tx_in_flight,
                lost_at_send: st.lost,
                rtt: now.saturating_duration_since(time_sent),
                newly_acked,
            });
            // The next flight starts where this packet was sent.
            self.first_sent_time = Some(time_sent);
        } else if let Some(p) = &mut self.pending {
            p.newly_acked = newly_acked;
        }
    }

    /// A packet was declared lost; returns its loss facts.
    pub(crate) fn on_packet_lost(&mut self, st: &PacketRateState, size: usize) -> LostPacketRate {
        self.lost = self.lost.saturating_add(size as u64);
        LostPacketRate {
            size: size as u64,
            tx_in_flight: st.tx_in_flight,
            lost_since_sent: self.lost.saturating_sub(st.lost),
            is_app_limited: st.is_app_limited,
            total_delivered: self.delivered,
        }
    }

    /// Finishes the sample of the current ACK frame (GenerateRateSample); `None` when no
    /// sampled packet was acknowledged.
    pub(crate) fn generate(&mut self, min_rtt: Duration, newly_lost: u64) -> Option<RateSample> {
        let p = self.pending.take()?;
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let delivered = self.delivered.saturating_sub(p.prior_delivered);
        let interval = p.send_elapsed.max(p.ack_elapsed);
        // A sample shorter than the minimum RTT is compressed by ACK aggregation and would
        // overstate the rate.
        let delivery_rate = if interval.is_zero() || interval < min_rtt {
            0
        } else {
            let rate = (delivered as u128) * 1_000_000_000 / interval.as_nanos();
            u64::try_from(rate).unwrap_or(u64::MAX)
        };
        Some(RateSample {
            delivery_rate,
            interval,
            delivered,
            prior_delivered: p.prior_delivered,
            is_app_limited: p.is_app_limited,
            tx_in_flight: p.tx_in_flight,
            lost: self.lost.saturating_sub(p.lost_at_send),
            newly_acked: p.newly_acked,
            newly_lost,
            total_delivered: self.delivered,
            rtt: p.rtt,
        })
    }

    /// The sender is application-limited now (draft §4.1.2.4): samples until what is in flight
    /// now is delivered are marked app-limited.
    pub(crate) fn on_app_limited(&mut self, bytes_in_flight: usize) {
        self.app_limited_until = self.delivered.saturating_add(bytes_in_flight as u64).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::test_now;

    #[test]
    fn flights_are_sampled_from_their_first_packet() {
        // 20 packets of 1000 bytes sent 1 ms apart before any acknowledgment.
        let t0 = test_now();
        let mut s = RateSampler::default();
        let mut sent = Vec::new();
        for i in 0..20u64 {
            let now = t0 + Duration::from_millis(i);
            let inflight = sent.len() * 1000;
            sent.push((now, s.on_packet_sent(now, inflight, 1000)));
        }
        let mut last = None;
        // Acknowledged one by one, 50 ms after each was sent.
        for (i, (ts, st)) in sent.iter().enumerate() {
            let now = *ts + Duration::from_millis(50);
            s.on_packet_acked(now, st, 1000, *ts);
            let rs = s.generate(Duration::from_millis(50), 0).unwrap();
            assert_eq!(rs.newly_acked, 1000);
            assert_eq!(rs.tx_in_flight, 1000 * (i as u64 + 1));
            last = Some(rs);
        }
        let rs = last.unwrap();
        // The last packet was sent with nothing delivered yet: its sample covers the whole
        // flight over max(19 ms of sending, 69 ms of acknowledgments).
        assert_eq!(rs.prior_delivered, 0);
        assert_eq!(rs.delivered, 20_000);
        assert_eq!(rs.interval, Duration::from_millis(69));
        assert_eq!(rs.delivery_rate, 20_000 * 1000 / 69);
        assert!(!rs.is_app_limited);
        // A second flight, acknowledged as one frame: the sample is the newest packet's, from
        // the flight's start (delivered 20,000) to now.
        let t1 = t0 + Duration::from_millis(70);
        let mut second = Vec::new();
        for i in 0..20u64 {
            let now = t1 + Duration::from_millis(i);
            let st = s.on_packet_sent(now, (i as usize) * 1000, 1000);
            second.push((now, st));
        }
        for (ts, st) in &second {
            s.on_packet_acked(*ts + Duration::from_millis(50), st, 1000, *ts);
        }
        let rs = s.generate(Duration::from_millis(50), 0).unwrap();
        assert_eq!(rs.prior_delivered, 20_000);
        assert_eq!(rs.delivered, 20_000);
        assert_eq!(rs.total_delivered, 40_000);
        assert_eq!(rs.newly_acked, 20_000);
        assert_eq!(rs.interval, Duration::from_millis(69));
        assert_eq!(rs.tx_in_flight, 20_000);
    }

    #[test]
    fn short_intervals_and_app_limited_phases_are_flagged() {
        let t0 = test_now();
        let mut s = RateSampler::default();
        let st = s.on_packet_sent(t0, 0, 1000);
        s.on_packet_acked(t0 + Duration::from_millis(10), &st, 1000, t0);
        let rs = s.generate(Duration::from_millis(20), 0).unwrap();
        assert_eq!(rs.delivery_rate, 0, "interval below min_rtt is not trusted");
        s.on_app_limited(0);
        let t1 = t0 + Duration::from_millis(30);
        let st = s.on_packet_sent(t1, 0, 1000);
        assert!(st.is_app_limited);
        s.on_packet_acked(t1 + Duration::from_millis(10), &st, 1000, t1);
        let rs = s.generate(Duration::from_millis(5), 0).unwrap();
        assert!(rs.is_app_limited);
        // Delivered passed the mark: the next packet is not app-limited.
        let st = s.on_packet_sent(t1 + Duration::from_millis(20), 0, 1000);
        assert!(!st.is_app_limited);
        let lost = s.on_packet_lost(&st, 1000);
        assert_eq!(lost.lost_since_sent, 1000);
        assert_eq!(s.lost, 1000);
        assert_eq!(
            s.generate(Duration::ZERO, 0),
            None,
            "no acked packet, no sample"
        );
    }

    use crate::cc::{AckBatch, CcState, CongestionControl, CongestionSignal, Controller, SentInfo};
    use crate::packet::Epoch;
    use crate::recovery::{AckOutcome, Recovery, RecoveryConfig, SentPacket};
    use crate::rtt::RttStats;
    use std::sync::{Arc, Mutex};

    /// A user-written controller with a fixed window that records what it is fed.
    struct Recorder {
        wants: bool,
        log: Arc<Mutex<(Vec<RateSample>, Vec<LostPacketRate>)>>,
    }

    impl CongestionControl for Recorder {
        fn on_packet_sent(&mut self, _: Instant, _: &SentInfo) {}
        fn on_ack(&mut self, _: Instant, _: &AckBatch, _: &RttStats) {}
        fn on_congestion_event(&mut self, _: Instant, _: &CongestionSignal, _: &RttStats) -> bool {
            false
        }
        fn wants_rate_samples(&self) -> bool {
            self.wants
        }
        fn on_rate_sample(&mut self, _: Instant, rs: &RateSample) {
            self.log.lock().unwrap().0.push(*rs);
        }
        fn on_packet_lost_rate(&mut self, _: Instant, lost: &LostPacketRate) {
            self.log.lock().unwrap().1.push(*lost);
        }
        fn cwnd(&self) -> usize {
            1_000_000
        }
        fn ssthresh(&self) -> Option<usize> {
            None
        }
        fn state(&self) -> CcState {
            CcState::CongestionAvoidance
        }
        fn name(&self) -> &'static str {
            "recorder"
        }
    }

    /// Sends 10 packets 1 ms apart, acknowledges 0..4 and 5..10 at 50 ms + send time (so 4 is
    /// lost by the packet threshold), one ACK frame per packet.
    fn drive(wants: bool) -> (Vec<RateSample>, Vec<LostPacketRate>) {
        let log = Arc::new(Mutex::new((Vec::new(), Vec::new())));
        let cc = Recorder {
            wants,
            log: log.clone(),
        };
        let cfg = RecoveryConfig {
            is_server: true,
            ..RecoveryConfig::default()
        };
        let mut r: Recovery<()> = Recovery::with_controller(&cfg, Controller::Custom(Box::new(cc)));
        let t0 = test_now();
        r.on_handshake_confirmed(t0);
        for pn in 0..10u64 {
            let now = t0 + Duration::from_millis(pn);
            let pkt = SentPacket::new(pn, now, 1000, true, true, ());
            r.on_packet_sent(pkt, Epoch::Application, now).unwrap();
        }
        let mut out = AckOutcome::new();
        for pn in (0..10u64).filter(|&pn| pn != 4) {
            let now = t0 + Duration::from_millis(50 + pn);
            r.on_ack_received(
                Epoch::Application,
                std::iter::once(pn..pn + 1),
                Duration::ZERO,
                now,
                true,
                &mut out,
            )
            .unwrap();
        }
        let log = log.lock().unwrap();
        (log.0.clone(), log.1.clone())
    }

    #[test]
    fn custom_controllers_get_samples_only_when_they_ask() {
        let (samples, lost) = drive(false);
        assert!(samples.is_empty() && lost.is_empty());
        let (samples, lost) = drive(true);
        assert_eq!(samples.len(), 9, "one per ACK frame");
        assert!(samples.iter().all(|rs| rs.newly_acked == 1000));
        assert_eq!(samples[0].tx_in_flight, 1000);
        assert_eq!(
            samples[8].tx_in_flight, 10_000,
            "packet 9 left with 10 in flight"
        );
        assert_eq!(samples[8].total_delivered, 9_000);
        assert_eq!(samples[8].rtt, Duration::from_millis(50));
        // Packet 4 is lost once 7 is acknowledged (three later packets, RFC 9002 §6.1.1).
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].size, 1000);
        assert_eq!(lost[0].tx_in_flight, 5000);
        assert_eq!(lost[0].lost_since_sent, 1000);
        assert_eq!(samples[6].newly_lost, 1000, "the frame acknowledging 7");
        assert_eq!(samples[8].lost, 1000, "lost since packet 9 was sent");
    }
}
