//! A test sender that drives a congestion controller on a manual clock: it sends full-sized
//! packets within the window, acknowledges them after a fixed RTT and declares losses, building
//! the batched events recovery would.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::{AckBatch, CongestionControl, CongestionKind, CongestionSignal, SentInfo};
use crate::cc::pacer::Pacer;
use crate::packet::Epoch;
use crate::recovery::test_now;
use crate::rtt::RttStats;

/// One packet in flight: number, send time, size.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    pkt_num: u64,
    time_sent: Instant,
    size: usize,
}

/// Drives a controller through send / ack / loss events on a manual clock.
pub(crate) struct TestSender<C> {
    pub cc: C,
    pub now: Instant,
    pub rtt: RttStats,
    pub mss: usize,
    /// Reported in every ACK batch.
    pub app_limited: bool,
    next_pkt_num: u64,
    in_flight: VecDeque<InFlight>,
    bytes_in_flight: usize,
    /// Paces [`TestSender::run_paced`].
    pacer: Pacer,
}

impl<C: CongestionControl> TestSender<C> {
    /// A sender on a path of the given RTT, with an RTT sample already taken.
    pub fn new(cc: C, mss: usize, rtt: Duration) -> Self {
        let now = test_now();
        TestSender {
            cc,
            now,
            rtt: RttStats {
                latest_rtt: rtt,
                smoothed_rtt: rtt,
                rttvar: rtt / 2,
                min_rtt: rtt,
                max_ack_delay: Duration::from_millis(25),
                first_sample_time: Some(now),
            },
            mss,
            app_limited: false,
            next_pkt_num: 0,
            in_flight: VecDeque::new(),
            bytes_in_flight: 0,
            pacer: Pacer::new(true, mss),
        }
    }

    pub fn bytes_in_flight(&self) -> usize {
        self.bytes_in_flight
    }

    pub fn advance(&mut self, d: Duration) {
        self.now += d;
    }

    /// Sends one full-sized packet, whatever the window says; returns its number.
    pub fn send(&mut self) -> u64 {
        let pkt_num = self.next_pkt_num;
        self.next_pkt_num += 1;
        self.bytes_in_flight += self.mss;
        self.in_flight.push_back(InFlight {
            pkt_num,
            time_sent: self.now,
            size: self.mss,
        });
        let info = SentInfo {
            epoch: Epoch::Application,
            pkt_num,
            size: self.mss,
            ack_eliciting: true,
            bytes_in_flight: self.bytes_in_flight,
        };
        self.cc.on_packet_sent(self.now, &info);
        pkt_num
    }

    /// Sends as many full-sized packets as the window allows; returns their numbers.
    pub fn send_window(&mut self) -> Vec<u64> {
        let mut sent = Vec::new();
        while self.bytes_in_flight + self.mss <= self.cc.cwnd() {
            sent.push(self.send());
        }
        sent
    }

    fn take(&mut self, pkt_num: u64) -> InFlight {
        let idx = self
            .in_flight
            .iter()
            .position(|p| p.pkt_num == pkt_num)
            .unwrap_or_else(|| panic!("packet {pkt_num} is not in flight"));
        let pkt = self.in_flight.remove(idx).unwrap();
        self.bytes_in_flight -= pkt.size;
        pkt
    }

    /// Acknowledges the given packets in one ACK frame.
    pub fn ack(&mut self, pkt_nums: &[u64]) {
        let before = self.bytes_in_flight;
        let mut largest: Option<InFlight> = None;
        let mut bytes = 0;
        for &pn in pkt_nums {
            let pkt = self.take(pn);
            bytes += pkt.size;
            if largest.is_none_or(|l| pkt.pkt_num > l.pkt_num) {
                largest = Some(pkt);
            }
        }
        let largest = largest.expect("an ACK acknowledges something");
        let batch = AckBatch {
            epoch: Epoch::Application,
            acked_bytes: bytes,
            acked_packets: pkt_nums.len(),
            largest_acked: largest.pkt_num,
            largest_acked_sent_time: largest.time_sent,
            rtt_sample: Some(self.now.saturating_duration_since(largest.time_sent)),
            bytes_in_flight_before: before,
            bytes_in_flight: self.bytes_in_flight,
            app_limited: self.app_limited,
        };
        let rtt = self.rtt;
        self.cc.on_ack(self.now, &batch, &rtt);
    }

    /// Acknowledges the given packets one ACK frame each.
    pub fn ack_each(&mut self, pkt_nums: &[u64]) {
        for &pn in pkt_nums {
            self.ack(&[pn]);
        }
    }

    /// Declares the given packets lost in one congestion event; returns whether the window was
    /// reduced.
    pub fn lose(&mut self, pkt_nums: &[u64], persistent_congestion: bool) -> bool {
        let mut largest_sent_time = None;
        let mut bytes = 0;
        for &pn in pkt_nums {
            let pkt = self.take(pn);
            bytes += pkt.size;
            largest_sent_time = largest_sent_time.max(Some(pkt.time_sent));
        }
        let signal = CongestionSignal {
            kind: CongestionKind::Loss,
            largest_sent_time: largest_sent_time.expect("something is lost"),
            lost_bytes: bytes,
            lost_packets: pkt_nums.len(),
            persistent_congestion,
            bytes_in_flight: self.bytes_in_flight,
        };
        let rtt = self.rtt;
        self.cc.on_congestion_event(self.now, &signal, &rtt)
    }

    /// One round trip whose packets take `rtt` to be acknowledged: fill the window, wait `rtt`,
    /// acknowledge every packet (one frame each).
    pub fn round_trip_rtt(&mut self, rtt: Duration) -> Vec<u64> {
        let sent = self.send_window();
        self.advance(rtt);
        self.ack_each(&sent);
        sent
    }

    /// The packets in flight, oldest first.
    pub fn in_flight(&self) -> Vec<u64> {
        self.in_flight.iter().map(|p| p.pkt_num).collect()
    }

    /// A paced, ACK-clocked transfer until `end`, in steps of `tick`: at each step every packet
    /// sent one smoothed RTT ago or earlier is acknowledged (one frame each), then packets leave
    /// as the window and the pacer allow, unless the sender is application-limited (then it
    /// has nothing to send). The RTT should be a multiple of `tick`.
    ///
    /// The pacing rate is exactly `cwnd / srtt` with a burst of two ticks' worth, so that
    /// acknowledgments arrive evenly over the round trip, as the CUBIC rules assume.
    pub fn run_paced(&mut self, end: Instant, tick: Duration) {
        while self.now < end {
            self.advance(tick);
            let rtt = self.rtt.smoothed_rtt;
            while let Some(p) = self.in_flight.front().copied() {
                if p.time_sent + rtt > self.now {
                    break;
                }
                self.ack(&[p.pkt_num]);
            }
            while !self.app_limited
                && self.bytes_in_flight + self.mss <= self.cc.cwnd()
                && self.pacer.next_send_time(self.now) <= self.now
            {
                self.send();
                let rate = (self.cc.cwnd() as f64 / rtt.as_secs_f64()) as u64;
                let burst = (2.0 * rate as f64 * tick.as_secs_f64()) as usize;
                let (now, mss) = (self.now, self.mss);
                self.pacer.on_packet_sent_with(now, mss, Some(rate), burst);
            }
        }
    }

    /// One round trip: fill the window, wait an RTT, acknowledge every packet (one frame each).
    pub fn round_trip(&mut self) -> Vec<u64> {
        let sent = self.send_window();
        self.advance(self.rtt.smoothed_rtt);
        self.ack_each(&sent);
        sent
    }
}
