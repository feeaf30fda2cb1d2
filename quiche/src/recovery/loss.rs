//! Acknowledgment-based loss detection (RFC 9002 §6.1, Appendix A.10), persistent congestion
//! (§7.6) and the memory of recently lost packets that spurious-loss detection needs.

use std::collections::VecDeque;
use std::ops::Range;
use std::time::{Duration, Instant};

use super::sent_packets::{SentPacket, SentPackets, SlotView, Verdict};
use crate::rtt::{RttStats, GRANULARITY};

/// Packets this many numbers below an acknowledged one are lost (kPacketThreshold, §6.1.1).
pub const PACKET_THRESHOLD: u64 = 3;

/// The highest a spurious loss raises the packet threshold to (§6.1.1 sets no bound; this one
/// keeps a real loss from waiting for more than a few dozen later acknowledgments, the time
/// threshold declaring it lost before then in any case).
pub const MAX_PACKET_THRESHOLD: u64 = 20;

/// kTimeThreshold (§6.1.2), 9/8, as numerator and denominator.
const TIME_THRESHOLD_NUMERATOR: u32 = 9;
const TIME_THRESHOLD_DENOMINATOR: u32 = 8;

/// kPersistentCongestionThreshold (§7.6.1): a multiple of the PTO period.
pub const PERSISTENT_CONGESTION_THRESHOLD: u32 = 3;

/// How many lost packet numbers a space remembers for spurious-loss detection. A loss burst
/// larger than this cannot be undone, which only makes undo more conservative.
const LOST_HISTORY_CAPACITY: usize = 512;

/// The time threshold: `max(9/8 * max(smoothed_rtt, latest_rtt), kGranularity)` (§6.1.2).
pub fn loss_delay(rtt: &RttStats) -> Duration {
    let base = rtt.smoothed_rtt.max(rtt.latest_rtt);
    (base.saturating_mul(TIME_THRESHOLD_NUMERATOR) / TIME_THRESHOLD_DENOMINATOR).max(GRANULARITY)
}

/// The persistent congestion duration (§7.6.1): the PTO period including max_ack_delay, whatever
/// the space, times kPersistentCongestionThreshold.
pub fn persistent_congestion_duration(rtt: &RttStats) -> Duration {
    rtt.pto_base()
        .saturating_add(rtt.max_ack_delay)
        .saturating_mul(PERSISTENT_CONGESTION_THRESHOLD)
}

/// The outcome of one loss detection pass over a space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Detected {
    /// Packets declared lost, in flight or not.
    pub packets: usize,
    /// Of those, the ones declared lost by the packet threshold.
    pub by_packet_threshold: usize,
    /// Of those, the ones declared lost by the time threshold only.
    pub by_time_threshold: usize,
    /// In-flight packets declared lost, and their bytes.
    pub in_flight_packets: usize,
    /// Bytes of the in-flight packets declared lost.
    pub in_flight_bytes: usize,
    /// When the last in-flight lost packet was sent.
    pub largest_in_flight_sent_time: Option<Instant>,
    /// When the next packet of the space can be declared lost by the time threshold.
    pub loss_time: Option<Instant>,
    /// Whether the losses establish persistent congestion.
    pub persistent_congestion: bool,
    /// Path MTU probes declared lost (counted in `packets`, not in the in-flight figures).
    pub probes: usize,
}

/// Declares lost the packets of a space that the acknowledgment of `largest_acked` shows to be
/// lost (DetectAndRemoveLostPackets, Appendix A.10) with a packet threshold of
/// `packet_threshold` (the pair's second), moving them to `lost` and recording the in-flight ones in `history`
/// under `event`.
///
/// Packets are sent in packet-number order with non-decreasing send times, so the lost packets
/// form a prefix of the unresolved ones: the scan stops at the first packet that is not lost yet,
/// which also has the earliest loss time.
///
/// Persistent congestion (§7.6.2) is established when two ack-eliciting packets lost in this pass,
/// both sent after the first RTT sample, are further apart than the persistent congestion
/// duration with no acknowledged packet between them. Only this space is consulted, which
/// §7.6.2 allows; it can only err towards declaring persistent congestion.
pub(crate) fn detect_lost<P>(
    sent: &mut SentPackets<P>,
    (largest_acked, packet_threshold): (u64, u64),
    now: Instant,
    rtt: &RttStats,
    lost: &mut Vec<SentPacket<P>>,
    history: &mut LostHistory,
    event: u64,
) -> Detected {
    let delay = loss_delay(rtt);
    let lost_send_time = now.checked_sub(delay);
    let pc_duration = persistent_congestion_duration(rtt);
    let mut det = Detected::default();
    let mut run_start: Option<Instant> = None;
    sent.scan(largest_acked, lost, |slot| {
        let pkt = match slot {
            SlotView::Sent(pkt) => pkt,
            SlotView::Acked => {
                run_start = None;
                return Verdict::Next;
            }
            SlotView::Other => return Verdict::Next,
        };
        let by_packets = largest_acked >= pkt.pkt_num.saturating_add(packet_threshold);
        let by_time = lost_send_time.is_some_and(|t| pkt.time_sent <= t);
        if !by_packets && !by_time {
            det.loss_time = pkt.time_sent.checked_add(delay);
            return Verdict::Stop;
        }
        det.packets += 1;
        if by_packets {
            det.by_packet_threshold += 1;
        } else {
            det.by_time_threshold += 1;
        }
        if pkt.pmtu_probe {
            // Out of flight all the same (the store removes it), but not a congestion signal
            // and no part of a persistent-congestion run.
            det.probes += 1;
            return Verdict::Lose;
        }
        if pkt.in_flight {
            det.in_flight_packets += 1;
            det.in_flight_bytes = det.in_flight_bytes.saturating_add(pkt.size);
            det.largest_in_flight_sent_time = Some(pkt.time_sent);
            history.record(pkt.pkt_num, event, largest_acked - pkt.pkt_num);
        }
        let after_first_sample = rtt.first_sample_time.is_some_and(|t| pkt.time_sent > t);
        if pkt.ack_eliciting && after_first_sample {
            match run_start {
                None => run_start = Some(pkt.time_sent),
                Some(start) => {
                    if pkt.time_sent.saturating_duration_since(start) > pc_duration {
                        det.persistent_congestion = true;
                    }
                }
            }
        }
        Verdict::Lose
    });
    det
}

/// A lost packet number remembered for spurious-loss detection.
#[derive(Clone, Copy, Debug)]
struct LostEntry {
    pkt_num: u64,
    /// The loss detection pass that declared it lost.
    event: u64,
    /// How far the largest acknowledged packet was past it then.
    reordering: u64,
    acked: bool,
}

/// Counts acknowledgments of packets previously declared lost.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SpuriousTally {
    /// Lost packets acknowledged.
    pub count: usize,
    /// Of those, the ones declared lost in or after pass `since_event`.
    pub since_event_count: usize,
    /// The first detection pass of the current undo group, if any.
    pub since_event: Option<u64>,
    /// The largest reordering a lost packet acknowledged after all had seen when it was
    /// declared lost (0 when none was).
    pub max_reordering: u64,
}

/// The recently lost in-flight packet numbers of one space, ascending, bounded.
#[derive(Clone, Debug, Default)]
pub(crate) struct LostHistory {
    entries: VecDeque<LostEntry>,
}

impl LostHistory {
    /// Remembers a lost packet; the oldest entry goes when full. Numbers must ascend (losses are
    /// declared in packet-number order); an out-of-order one is not recorded.
    pub fn record(&mut self, pkt_num: u64, event: u64, reordering: u64) {
        if self.entries.back().is_some_and(|e| e.pkt_num >= pkt_num) {
            return;
        }
        if self.entries.len() >= LOST_HISTORY_CAPACITY {
            self.entries.pop_front();
        }
        self.entries.push_back(LostEntry {
            pkt_num,
            event,
            reordering,
            acked: false,
        });
    }

    /// Notes the acknowledgment of `range`, counting remembered lost packets in it once each.
    pub fn on_acked_range(&mut self, range: Range<u64>, tally: &mut SpuriousTally) {
        let first = self.entries.partition_point(|e| e.pkt_num < range.start);
        for entry in self.entries.range_mut(first..) {
            if entry.pkt_num >= range.end {
                break;
            }
            if entry.acked {
                continue;
            }
            entry.acked = true;
            tally.count += 1;
            tally.max_reordering = tally.max_reordering.max(entry.reordering);
            if tally.since_event.is_some_and(|since| entry.event >= since) {
                tally.since_event_count += 1;
            }
        }
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::test_now;
    use crate::rtt::RttEstimator;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn loss_delay_uses_the_larger_rtt_and_granularity() {
        let t0 = test_now();
        let mut rtt = RttEstimator::new(ms(333), ms(25));
        rtt.update(t0, ms(80), Duration::ZERO, true);
        rtt.update(t0, ms(160), Duration::ZERO, true);
        // smoothed = 90, latest = 160: 9/8 * 160 = 180.
        assert_eq!(loss_delay(&rtt.stats()), ms(180));
        let mut rtt = RttEstimator::new(ms(333), ms(25));
        rtt.update(t0, Duration::from_micros(100), Duration::ZERO, true);
        assert_eq!(loss_delay(&rtt.stats()), GRANULARITY);
    }

    #[test]
    fn persistent_congestion_duration_includes_max_ack_delay() {
        let t0 = test_now();
        let mut rtt = RttEstimator::new(ms(333), ms(25));
        rtt.update(t0, ms(100), Duration::ZERO, true);
        // (100 + 4 * 50 + 25) * 3.
        assert_eq!(persistent_congestion_duration(&rtt.stats()), ms(975));
    }

    #[test]
    fn history_counts_each_spurious_loss_once() {
        let mut h = LostHistory::default();
        for pn in [1, 3, 5, 7] {
            h.record(pn, if pn < 5 { 1 } else { 2 }, pn);
        }
        h.record(6, 3, 1); // out of order: ignored
        let mut tally = SpuriousTally {
            since_event: Some(2),
            ..Default::default()
        };
        h.on_acked_range(3..6, &mut tally);
        assert_eq!((tally.count, tally.since_event_count), (2, 1));
        assert_eq!(tally.max_reordering, 5, "the largest of packets 3 and 5's");
        h.on_acked_range(0..10, &mut tally);
        assert_eq!((tally.count, tally.since_event_count), (4, 2));
    }

    #[test]
    fn history_is_bounded() {
        let mut h = LostHistory::default();
        for pn in 0..(LOST_HISTORY_CAPACITY as u64 + 10) {
            h.record(pn, 1, 3);
        }
        assert_eq!(h.entries.len(), LOST_HISTORY_CAPACITY);
        let mut tally = SpuriousTally::default();
        h.on_acked_range(0..10, &mut tally);
        assert_eq!(tally.count, 0, "the oldest entries were forgotten");
    }
}
