//! The sent-packet store of one packet number space (RFC 9002 Appendix A.1).
//!
//! Packets are kept in a ring indexed by `pkt_num - base`, in packet-number order. Acknowledged
//! and lost packets leave a tombstone in their slot; tombstones are dropped from the front as
//! soon as no tracked packet precedes them, so the ring spans the oldest unresolved packet to the
//! newest sent one and lookups are plain index arithmetic. The ring's buffer is reused, so the
//! steady state does not allocate.
//!
//! Tombstones remember whether the packet was acknowledged or lost, because persistent
//! congestion (RFC 9002 §7.6.2) is broken by any acknowledged packet between two lost ones, and
//! numbers the sender skipped are remembered so that an ACK for one of them can be refused.

use std::collections::VecDeque;
use std::ops::Range;
use std::time::Instant;

use crate::error::{Error, Result};

/// The largest gap of skipped packet numbers the store records. A sender skips a number now and
/// then (RFC 9000 §21.4); a larger jump is only accepted when nothing is tracked.
const MAX_SKIPPED_GAP: u64 = 1024;

/// A sent packet as tracked by recovery (RFC 9002 Appendix A.1.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentPacket<P> {
    /// The packet number.
    pub pkt_num: u64,
    /// When the packet was sent.
    pub time_sent: Instant,
    /// Bytes sent in the packet, QUIC header and AEAD overhead included, UDP/IP excluded.
    pub size: usize,
    /// Whether the packet is ack-eliciting.
    pub ack_eliciting: bool,
    /// Whether the packet counts towards bytes in flight (ack-eliciting or carrying PADDING).
    pub in_flight: bool,
    /// What the connection needs to know about the packet's frames when it is acknowledged or
    /// lost. Recovery never looks inside.
    pub payload: P,
    /// The delivery-rate snapshot taken when the packet was sent; left default unless the
    /// controller wants rate samples.
    pub rate: super::rate::PacketRateState,
    /// Whether the packet is a path MTU probe (RFC 9000 §14.4): it takes congestion window
    /// like any packet, but its loss says nothing about congestion (RFC 8899 §3 item 7), so
    /// loss detection keeps it out of congestion signals and persistent congestion.
    pub pmtu_probe: bool,
}

impl<P> SentPacket<P> {
    /// Describes a packet; `time_sent` is set again from `now` when it is handed to recovery.
    pub fn new(
        pkt_num: u64,
        time_sent: Instant,
        size: usize,
        ack_eliciting: bool,
        in_flight: bool,
        payload: P,
    ) -> Self {
        SentPacket {
            pkt_num,
            time_sent,
            size,
            ack_eliciting,
            in_flight,
            payload,
            rate: Default::default(),
            pmtu_probe: false,
        }
    }
}

/// One slot of the ring.
#[derive(Debug)]
enum Slot<P> {
    Sent(SentPacket<P>),
    Acked,
    Lost,
    Skipped,
}

/// What a visitor of [`SentPackets::scan`] sees in a slot.
pub(crate) enum SlotView<'a, P> {
    /// A packet still waiting for its fate.
    Sent(&'a SentPacket<P>),
    /// An acknowledged packet.
    Acked,
    /// A lost or skipped packet number.
    Other,
}

/// A visitor's decision for one slot of [`SentPackets::scan`].
pub(crate) enum Verdict {
    /// Go on with the next slot.
    Next,
    /// Declare this (sent) packet lost and go on.
    Lose,
    /// Stop scanning.
    Stop,
}

/// What one ACK frame newly acknowledged in this space.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AckScan {
    /// The largest packet number the frame acknowledges.
    pub largest_acked: Option<u64>,
    /// Newly acknowledged packets.
    pub packets: usize,
    /// The largest newly acknowledged packet: number, send time, ack-eliciting.
    pub largest_newly_acked: Option<(u64, Instant, bool)>,
    /// Whether a newly acknowledged packet was ack-eliciting.
    pub ack_eliciting: bool,
    /// Newly acknowledged in-flight packets and their bytes.
    pub in_flight_packets: usize,
    /// Bytes of the newly acknowledged in-flight packets.
    pub in_flight_bytes: usize,
    /// The largest newly acknowledged in-flight packet: number and send time.
    pub largest_in_flight: Option<(u64, Instant)>,
}

/// Running totals over the packets still tracked.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    tracked: usize,
    bytes_in_flight: usize,
    ack_eliciting_in_flight: usize,
}

impl Totals {
    fn add<P>(&mut self, pkt: &SentPacket<P>) {
        self.tracked += 1;
        if pkt.in_flight {
            self.bytes_in_flight = self.bytes_in_flight.saturating_add(pkt.size);
            if pkt.ack_eliciting {
                self.ack_eliciting_in_flight += 1;
            }
        }
    }

    fn remove<P>(&mut self, pkt: &SentPacket<P>) {
        self.tracked = self.tracked.saturating_sub(1);
        if pkt.in_flight {
            self.bytes_in_flight = self.bytes_in_flight.saturating_sub(pkt.size);
            if pkt.ack_eliciting {
                self.ack_eliciting_in_flight = self.ack_eliciting_in_flight.saturating_sub(1);
            }
        }
    }
}

/// The sent packets of one packet number space.
#[derive(Debug)]
pub struct SentPackets<P> {
    slots: VecDeque<Slot<P>>,
    /// Packet number of `slots[0]`.
    base: u64,
    /// Whether any packet was ever sent (distinguishes "nothing sent" from "packet 0 sent").
    any_sent: bool,
    totals: Totals,
    /// The last numbers skipped on purpose, kept after compaction drops their slots: a peer
    /// never receives them, so an ACK covering one is optimistic whenever it comes.
    recent_skips: [Option<u64>; RECENT_SKIPS],
    recent_skips_next: usize,
}

/// The slots a drained [`SentPackets`] ring keeps allocated (a slot is 264 bytes).
const KEPT_SLOTS_WHEN_DRAINED: usize = 4;

/// How many skipped numbers [`SentPackets`] remembers beyond its ring.
const RECENT_SKIPS: usize = 8;

impl<P> Default for SentPackets<P> {
    fn default() -> Self {
        SentPackets {
            slots: VecDeque::new(),
            base: 0,
            any_sent: false,
            totals: Totals::default(),
            recent_skips: [None; RECENT_SKIPS],
            recent_skips_next: 0,
        }
    }
}

impl<P> SentPackets<P> {
    /// Creates an empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The packet number after the largest sent (or the first expected).
    fn next_pkt_num(&self) -> u64 {
        self.base.saturating_add(self.slots.len() as u64)
    }

    /// The largest packet number sent so far.
    pub fn largest_sent(&self) -> Option<u64> {
        self.any_sent.then(|| self.next_pkt_num().saturating_sub(1))
    }

    /// Bytes of the tracked in-flight packets.
    pub fn bytes_in_flight(&self) -> usize {
        self.totals.bytes_in_flight
    }

    /// Number of tracked ack-eliciting in-flight packets.
    pub fn ack_eliciting_in_flight(&self) -> usize {
        self.totals.ack_eliciting_in_flight
    }

    /// Number of packets waiting to be acknowledged or declared lost.
    pub fn len(&self) -> usize {
        self.totals.tracked
    }

    /// Whether no packet waits to be acknowledged or declared lost.
    pub fn is_empty(&self) -> bool {
        self.totals.tracked == 0
    }

    /// The tracked packets in packet-number order.
    pub fn iter(&self) -> impl Iterator<Item = &SentPacket<P>> {
        self.slots.iter().filter_map(|s| match s {
            Slot::Sent(p) => Some(p),
            _ => None,
        })
    }

    /// Takes every tracked packet out of flight (they stay tracked, to be acknowledged or
    /// declared lost, but no longer count against a congestion window); returns their bytes.
    pub fn take_out_of_flight(&mut self) -> usize {
        let bytes = self.totals.bytes_in_flight;
        for slot in self.slots.iter_mut() {
            if let Slot::Sent(p) = slot {
                p.in_flight = false;
            }
        }
        self.totals.bytes_in_flight = 0;
        self.totals.ack_eliciting_in_flight = 0;
        bytes
    }

    /// Records a sent packet. Packet numbers must increase; numbers skipped in between are
    /// remembered (up to 1024 of them) so that acknowledging one is an error.
    pub fn push(&mut self, pkt: SentPacket<P>) -> Result<()> {
        let next = self.next_pkt_num();
        if self.any_sent && pkt.pkt_num < next {
            return Err(Error::InvalidState);
        }
        let gap = pkt.pkt_num.saturating_sub(next);
        if self.slots.is_empty() && (gap > MAX_SKIPPED_GAP || !self.any_sent) {
            self.base = pkt.pkt_num;
        } else if gap > MAX_SKIPPED_GAP {
            return Err(Error::InvalidState);
        } else {
            for skipped in next..pkt.pkt_num {
                self.slots.push_back(Slot::Skipped);
                self.recent_skips[self.recent_skips_next] = Some(skipped);
                self.recent_skips_next = (self.recent_skips_next + 1) % RECENT_SKIPS;
            }
        }
        self.totals.add(&pkt);
        self.any_sent = true;
        self.slots.push_back(Slot::Sent(pkt));
        Ok(())
    }

    /// Drops tombstones from the front.
    fn compact(&mut self) {
        while matches!(
            self.slots.front(),
            Some(Slot::Acked | Slot::Lost | Slot::Skipped)
        ) {
            self.slots.pop_front();
            self.base += 1;
        }
        // A ring a flight made large gives its slots back once it is nearly empty: an idle
        // connection keeps a few (its last ACK-only packets stay until the peer acknowledges
        // a later packet), while one exchanging small flights keeps its few slots instead of
        // reallocating them each time (issue 29 item 5).
        if self.slots.len() <= KEPT_SLOTS_WHEN_DRAINED / 2
            && self.slots.capacity() > KEPT_SLOTS_WHEN_DRAINED
        {
            self.slots.shrink_to(KEPT_SLOTS_WHEN_DRAINED);
        }
    }

    /// Applies the ranges of one ACK frame (any order; the frame decoder yields them
    /// descending), moving newly acknowledged packets to `acked` in the order visited.
    ///
    /// `on_range` sees every valid range, so that acknowledgments of packets already declared
    /// lost can be recognised by the caller. Acknowledging a number never sent is
    /// [`Error::InvalidAckRange`] and one the sender skipped [`Error::OptimisticAckDetected`]
    /// (both PROTOCOL_VIOLATION, RFC 9000 §13.1, §21.4); the ranges before the offending one have
    /// then been applied.
    pub(crate) fn on_ack_received<I, F>(
        &mut self,
        ranges: I,
        acked: &mut Vec<SentPacket<P>>,
        mut on_range: F,
    ) -> Result<AckScan>
    where
        I: IntoIterator<Item = Range<u64>>,
        F: FnMut(Range<u64>),
    {
        let next = self.next_pkt_num();
        let mut scan = AckScan::default();
        for range in ranges {
            if range.start >= range.end {
                continue;
            }
            if !self.any_sent || range.end > next {
                self.compact();
                return Err(Error::InvalidAckRange);
            }
            if self
                .recent_skips
                .iter()
                .flatten()
                .any(|pn| range.contains(pn))
            {
                self.compact();
                return Err(Error::OptimisticAckDetected);
            }
            let largest = range.end - 1;
            scan.largest_acked = Some(scan.largest_acked.map_or(largest, |l| l.max(largest)));
            on_range(range.clone());
            self.ack_range(range, acked, &mut scan)?;
        }
        self.compact();
        Ok(scan)
    }

    /// Acknowledges the packets of one range (within the sent numbers), highest first.
    fn ack_range(
        &mut self,
        range: Range<u64>,
        acked: &mut Vec<SentPacket<P>>,
        scan: &mut AckScan,
    ) -> Result<()> {
        let lo = range.start.max(self.base) - self.base;
        let hi = range.end.saturating_sub(self.base);
        for idx in (lo..hi).rev() {
            let Some(slot) = usize::try_from(idx)
                .ok()
                .and_then(|i| self.slots.get_mut(i))
            else {
                continue;
            };
            match slot {
                Slot::Sent(_) => {}
                Slot::Skipped => return Err(Error::OptimisticAckDetected),
                Slot::Acked | Slot::Lost => continue,
            }
            let Slot::Sent(pkt) = std::mem::replace(slot, Slot::Acked) else {
                continue;
            };
            self.totals.remove(&pkt);
            scan.packets += 1;
            scan.ack_eliciting |= pkt.ack_eliciting;
            if scan
                .largest_newly_acked
                .is_none_or(|(pn, _, _)| pkt.pkt_num > pn)
            {
                scan.largest_newly_acked = Some((pkt.pkt_num, pkt.time_sent, pkt.ack_eliciting));
            }
            if pkt.in_flight {
                scan.in_flight_packets += 1;
                scan.in_flight_bytes = scan.in_flight_bytes.saturating_add(pkt.size);
                if scan
                    .largest_in_flight
                    .is_none_or(|(pn, _)| pkt.pkt_num > pn)
                {
                    scan.largest_in_flight = Some((pkt.pkt_num, pkt.time_sent));
                }
            }
            acked.push(pkt);
        }
        Ok(())
    }

    /// Visits the slots up to packet number `upto` in order. A [`Verdict::Lose`] on a sent
    /// packet turns it into a lost tombstone and moves it to `lost`.
    pub(crate) fn scan<F>(&mut self, upto: u64, lost: &mut Vec<SentPacket<P>>, mut visit: F)
    where
        F: FnMut(SlotView<'_, P>) -> Verdict,
    {
        let end = upto.saturating_add(1).saturating_sub(self.base);
        let end = usize::try_from(end)
            .unwrap_or(usize::MAX)
            .min(self.slots.len());
        for slot in self.slots.iter_mut().take(end) {
            let view = match slot {
                Slot::Sent(p) => SlotView::Sent(p),
                Slot::Acked => SlotView::Acked,
                Slot::Lost | Slot::Skipped => SlotView::Other,
            };
            match visit(view) {
                Verdict::Next => {}
                Verdict::Stop => break,
                Verdict::Lose => {
                    if matches!(slot, Slot::Sent(_)) {
                        if let Slot::Sent(pkt) = std::mem::replace(slot, Slot::Lost) {
                            self.totals.remove(&pkt);
                            lost.push(pkt);
                        }
                    }
                }
            }
        }
        self.compact();
    }

    /// Forgets every packet (the space's keys were discarded); returns the in-flight bytes
    /// removed. Packet numbers keep increasing from where they were.
    pub fn clear(&mut self) -> usize {
        let bytes = self.totals.bytes_in_flight;
        let next = self.next_pkt_num();
        // The slots go too: a discarded space (Initial, Handshake) sends nothing more, and an
        // established connection would otherwise keep two rings it never uses again.
        self.slots = VecDeque::new();
        self.base = next;
        self.totals = Totals::default();
        bytes
    }
}

#[cfg(any(test, feature = "fuzzing"))]
impl<P> SentPackets<P> {
    /// Panics when the running totals differ from a recount over the tracked packets.
    pub(crate) fn debug_check_invariants(&self) {
        let (mut bytes, mut eliciting, mut tracked) = (0usize, 0usize, 0usize);
        for slot in &self.slots {
            if let Slot::Sent(p) = slot {
                tracked += 1;
                if p.in_flight {
                    bytes += p.size;
                    eliciting += usize::from(p.ack_eliciting);
                }
            }
        }
        assert_eq!(bytes, self.totals.bytes_in_flight, "bytes in flight");
        assert_eq!(eliciting, self.totals.ack_eliciting_in_flight);
        assert_eq!(tracked, self.totals.tracked);
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use crate::recovery::test_now;

    fn pkt(pn: u64, t: Instant) -> SentPacket<u64> {
        SentPacket::new(pn, t, 1000, true, true, pn)
    }

    #[test]
    fn acks_in_descending_ranges_and_compacts() {
        let t = test_now();
        let mut s = SentPackets::new();
        for pn in 0..10 {
            s.push(pkt(pn, t)).unwrap();
        }
        assert_eq!(s.bytes_in_flight(), 10_000);
        let mut acked = Vec::new();
        let mut seen = Vec::new();
        let scan = s
            .on_ack_received([7..10, 2..5], &mut acked, |r| seen.push(r))
            .unwrap();
        assert_eq!(
            acked.iter().map(|p| p.payload).collect::<Vec<_>>(),
            [9, 8, 7, 4, 3, 2]
        );
        assert_eq!(seen, [7..10, 2..5]);
        assert_eq!(scan.largest_acked, Some(9));
        assert_eq!(scan.largest_newly_acked.map(|l| l.0), Some(9));
        assert_eq!(scan.in_flight_bytes, 6000);
        assert_eq!(s.bytes_in_flight(), 4000);
        assert_eq!(s.ack_eliciting_in_flight(), 4);
        assert_eq!(
            s.iter().map(|p| p.pkt_num).collect::<Vec<_>>(),
            [0, 1, 5, 6]
        );

        // Acking 0..2 compacts the front up to the next unresolved packet.
        acked.clear();
        s.on_ack_received([0..2], &mut acked, |_| {}).unwrap();
        assert_eq!(s.base, 5);
        // Duplicate acknowledgments are ignored.
        acked.clear();
        let scan = s.on_ack_received([0..10], &mut acked, |_| {}).unwrap();
        assert_eq!(scan.packets, 2);
        assert!(s.is_empty());
        assert_eq!(s.largest_sent(), Some(9));
    }

    #[test]
    fn a_drained_ring_gives_back_what_a_large_flight_took() {
        let t = test_now();
        let mut s = SentPackets::new();
        for pn in 0..200 {
            s.push(pkt(pn, t)).unwrap();
        }
        assert!(s.slots.capacity() >= 200);
        let mut acked = Vec::new();
        // Most of the flight acknowledged: still large, nothing given back yet.
        s.on_ack_received([0..100], &mut acked, |_| {}).unwrap();
        assert!(s.slots.capacity() >= 100);
        // All but the last packet: drained, the ring shrinks to what small flights use.
        s.on_ack_received([100..199], &mut acked, |_| {}).unwrap();
        assert_eq!(s.iter().map(|p| p.pkt_num).collect::<Vec<_>>(), [199]);
        assert!(s.slots.capacity() <= KEPT_SLOTS_WHEN_DRAINED);
        // Discarding the space (its keys are gone) frees the ring altogether.
        assert_eq!(s.clear(), 1000);
        assert_eq!(s.slots.capacity(), 0);
        assert_eq!(s.next_pkt_num(), 200);
    }

    #[test]
    fn a_skipped_number_is_refused_after_compaction_dropped_its_slot() {
        let t = test_now();
        let mut s = SentPackets::new();
        let mut acked = Vec::new();
        s.push(pkt(0, t)).unwrap();
        s.push(pkt(2, t)).unwrap();
        s.on_ack_received([0..1], &mut acked, |_| {}).unwrap();
        s.on_ack_received([2..3], &mut acked, |_| {}).unwrap();
        assert!(s.is_empty());
        // The slot of 1 is gone, the memory of skipping it is not.
        assert_eq!(
            s.on_ack_received([0..3], &mut acked, |_| {}).unwrap_err(),
            Error::OptimisticAckDetected
        );
    }

    #[test]
    fn acking_unsent_or_skipped_numbers_is_a_protocol_violation() {
        let t = test_now();
        let mut s = SentPackets::new();
        let mut acked = Vec::new();
        assert_eq!(
            s.on_ack_received([0..1], &mut acked, |_| {}).unwrap_err(),
            Error::InvalidAckRange
        );
        s.push(pkt(0, t)).unwrap();
        s.push(pkt(2, t)).unwrap();
        assert_eq!(
            s.on_ack_received([3..4], &mut acked, |_| {}).unwrap_err(),
            Error::InvalidAckRange
        );
        assert_eq!(
            s.on_ack_received([1..2], &mut acked, |_| {}).unwrap_err(),
            Error::OptimisticAckDetected
        );
        assert_eq!(
            s.on_ack_received([0..u64::MAX], &mut acked, |_| {})
                .unwrap_err(),
            Error::InvalidAckRange
        );
        assert_eq!(Error::InvalidAckRange.to_wire(), 0xa);
        assert_eq!(Error::OptimisticAckDetected.to_wire(), 0xa);
        assert!(acked.is_empty());
        s.on_ack_received([2..3, 0..1], &mut acked, |_| {}).unwrap();
        assert_eq!(acked.len(), 2);
    }

    #[test]
    fn packet_numbers_must_increase() {
        let t = test_now();
        let mut s = SentPackets::new();
        s.push(pkt(5, t)).unwrap();
        assert_eq!(s.push(pkt(5, t)), Err(Error::InvalidState));
        assert_eq!(s.push(pkt(3, t)), Err(Error::InvalidState));
        assert_eq!(
            s.push(pkt(6 + MAX_SKIPPED_GAP + 1, t)),
            Err(Error::InvalidState)
        );
        s.push(pkt(6 + MAX_SKIPPED_GAP, t)).unwrap();
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn scan_loses_packets_and_keeps_counters() {
        let t = test_now();
        let mut s = SentPackets::new();
        for pn in 0..5 {
            s.push(pkt(pn, t)).unwrap();
        }
        let mut lost = Vec::new();
        s.scan(3, &mut lost, |v| match v {
            SlotView::Sent(p) if p.pkt_num < 2 => Verdict::Lose,
            _ => Verdict::Stop,
        });
        assert_eq!(lost.iter().map(|p| p.pkt_num).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(s.bytes_in_flight(), 3000);
        assert_eq!(s.base, 2);
        assert_eq!(s.clear(), 3000);
        assert!(s.is_empty());
        s.push(pkt(5, t)).unwrap();
        assert_eq!(s.largest_sent(), Some(5));
    }

    #[test]
    fn packets_taken_out_of_flight_stay_tracked() {
        let now = crate::recovery::test_now();
        let mut s: SentPackets<()> = SentPackets::new();
        for pn in 0..4 {
            s.push(SentPacket::new(pn, now, 1000, true, true, ()))
                .unwrap();
        }
        assert_eq!(s.take_out_of_flight(), 4000);
        assert_eq!(
            (s.bytes_in_flight(), s.ack_eliciting_in_flight(), s.len()),
            (0, 0, 4)
        );
        s.push(SentPacket::new(4, now, 500, true, true, ()))
            .unwrap();
        let mut acked = Vec::new();
        let scan = s.on_ack_received([0..5], &mut acked, |_| {}).unwrap();
        assert_eq!((scan.packets, scan.in_flight_bytes), (5, 500));
        assert_eq!(s.bytes_in_flight(), 0);
    }
}
