//! Loss detection and recovery (RFC 9002): RTT, sent packets, loss, PTO.
//!
//! [`Recovery`] is one path's sender side: it tracks sent packets per packet number space, owns
//! bytes in flight, the RTT estimate, the loss detection timer and the congestion controller, and
//! tells the connection which packets were acknowledged or lost (their opaque payloads come
//! back) and when to send probes. It never reads the clock: every entry point takes `now`.
//!
//! One ACK frame is processed in this order (DESIGN.md §7): newly acknowledged packets are taken
//! out of the store; the RTT is updated (if the largest acknowledged packet is newly acknowledged
//! and something ack-eliciting was); losses are detected; the controller hears of the losses
//! ([`CongestionControl::on_congestion_event`]), then of the acknowledgment
//! ([`CongestionControl::on_ack`]); and if the frame proved that every loss behind the last
//! window reduction was spurious, the reduction is undone
//! ([`CongestionControl::on_spurious_congestion`]).

use std::ops::Range;
use std::time::{Duration, Instant};

use crate::cc::{
    AckBatch, CcConfig, CongestionControl, CongestionControlAlgorithm, CongestionKind,
    CongestionSignal, Controller, SentInfo,
};
use crate::error::{Error, Result};
use crate::packet::Epoch;
use crate::rtt::{RttEstimator, DEFAULT_MAX_ACK_DELAY, INITIAL_RTT};

mod loss;
mod pto;
mod rate;
mod sent;
#[cfg(test)]
mod tests;

pub use self::loss::{
    loss_delay, persistent_congestion_duration, PACKET_THRESHOLD, PERSISTENT_CONGESTION_THRESHOLD,
};
pub use self::pto::{pto_period, MAX_PTO_PROBES};
pub use self::rate::PacketRateState;
pub use self::sent::{SentPacket, SentPackets};

use self::loss::{LostHistory, SpuriousTally};
use self::pto::{PtoDeadline, SpaceTimes};
use self::rate::RateSampler;

/// Below this many full datagrams of window, [`Recovery::cwnd_available`] offers whatever room
/// there is, even less than a datagram.
const SMALL_WINDOW_PACKETS: usize = 4;

/// Configuration of a path's recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecoveryConfig {
    /// The peer's max_ack_delay transport parameter (it can be changed later with
    /// [`Recovery::set_max_ack_delay`] once the parameters arrive).
    pub max_ack_delay: Duration,
    /// The RTT assumed before the first sample (kInitialRtt).
    pub initial_rtt: Duration,
    /// Whether this endpoint is the server. A server considers the client's view of address
    /// validation complete from the start (RFC 9002 Appendix A.8).
    pub is_server: bool,
    /// The built-in congestion control algorithm.
    pub cc_algorithm: CongestionControlAlgorithm,
    /// The congestion controller's configuration (maximum datagram size, initial window).
    pub cc: CcConfig,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        RecoveryConfig {
            max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            initial_rtt: INITIAL_RTT,
            is_server: false,
            cc_algorithm: CongestionControlAlgorithm::default(),
            cc: CcConfig::default(),
        }
    }
}

/// Counters of a path's recovery, for `Connection::stats` and qlog.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryStats {
    /// Packets sent.
    pub sent_packets: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Packets acknowledged.
    pub acked_packets: u64,
    /// Packets declared lost.
    pub lost_packets: u64,
    /// Packets declared lost by the packet threshold.
    pub lost_by_packet_threshold: u64,
    /// Packets declared lost by the time threshold.
    pub lost_by_time_threshold: u64,
    /// In-flight bytes declared lost.
    pub lost_bytes: u64,
    /// Probe timeouts that fired.
    pub pto_count: u64,
    /// Ack-eliciting packets sent as probes.
    pub probes_sent: u64,
    /// Packets acknowledged after having been declared lost.
    pub spurious_losses: u64,
    /// Congestion events that reduced the window.
    pub congestion_events: u64,
    /// Window reductions undone because their losses proved spurious.
    pub congestion_events_undone: u64,
    /// Times persistent congestion was established.
    pub persistent_congestion: u64,
    /// Packets declared lost that were sent before the first slow start ended for good
    /// ([`CcStats::first_slow_start_end`](crate::cc::CcStats::first_slow_start_end): standard
    /// slow start and any HyStart++ Conservative or Limited Slow Start after it). A controller
    /// that never reports that end counts every loss here.
    pub lost_in_first_slow_start: u64,
}

/// What an ACK frame or a timeout resolved. The caller keeps one and passes it to every call, so
/// the vectors' buffers are reused; each call clears it first.
#[derive(Debug)]
pub struct AckOutcome<P> {
    /// Newly acknowledged packets, in the order the ACK ranges were visited (descending packet
    /// numbers for the frame decoder's descending ranges).
    pub acked: Vec<SentPacket<P>>,
    /// Packets declared lost, in ascending packet number order: their frames need retransmitting.
    pub lost: Vec<SentPacket<P>>,
    /// In-flight bytes newly acknowledged.
    pub acked_bytes: usize,
    /// In-flight bytes declared lost.
    pub lost_bytes: usize,
    /// Packets acknowledged that had been declared lost.
    pub spurious_losses: usize,
    /// Whether the frame produced an RTT sample.
    pub rtt_updated: bool,
    /// Whether the controller reduced its window.
    pub congestion_event: bool,
    /// Whether persistent congestion was established.
    pub persistent_congestion: bool,
    /// Whether an earlier window reduction was undone as spurious.
    pub congestion_undone: bool,
}

impl<P> Default for AckOutcome<P> {
    fn default() -> Self {
        AckOutcome {
            acked: Vec::new(),
            lost: Vec::new(),
            acked_bytes: 0,
            lost_bytes: 0,
            spurious_losses: 0,
            rtt_updated: false,
            congestion_event: false,
            persistent_congestion: false,
            congestion_undone: false,
        }
    }
}

impl<P> AckOutcome<P> {
    /// Creates an empty outcome.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties it, keeping the vectors' buffers.
    pub fn clear(&mut self) {
        self.acked.clear();
        self.lost.clear();
        self.acked_bytes = 0;
        self.lost_bytes = 0;
        self.spurious_losses = 0;
        self.rtt_updated = false;
        self.congestion_event = false;
        self.persistent_congestion = false;
        self.congestion_undone = false;
    }
}

/// What the loss detection timer asked for (RFC 9002 Appendix A.9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutAction {
    /// The timer had not expired (or was not armed): nothing was done.
    None,
    /// Packets of `epoch` were declared lost by the time threshold; they are in the outcome.
    Lost {
        /// The packet number space.
        epoch: Epoch,
    },
    /// The PTO fired: send `probes` ack-eliciting packets in `epoch`, regardless of the
    /// congestion window (RFC 9002 §7.5), new data if there is some. Probing other spaces with
    /// ack-eliciting packets in flight as well is recommended (§6.2.4).
    Probe {
        /// The packet number space to probe.
        epoch: Epoch,
        /// How many ack-eliciting packets to send.
        probes: usize,
    },
    /// The client's anti-deadlock PTO fired (§6.2.2.1): send one ack-eliciting Handshake packet
    /// if Handshake keys are available, otherwise an Initial packet in a datagram of at least
    /// 1200 bytes.
    AntiDeadlock,
}

/// The window reduction that on_spurious_congestion would undo, and the losses behind it.
#[derive(Clone, Copy, Debug)]
struct UndoGroup {
    /// The first loss detection pass of the group.
    first_event: u64,
    /// In-flight packets declared lost since the reduction.
    lost: usize,
    /// Of those, the ones acknowledged since.
    spurious: usize,
    /// False once an ECN-CE signal took part: that congestion was real.
    undoable: bool,
}

/// Loss recovery state of one packet number space.
#[derive(Debug)]
struct Space<P> {
    sent: SentPackets<P>,
    lost_history: LostHistory,
    largest_acked: Option<u64>,
    /// Send time of the largest packet acknowledged so far, for ECN-CE signals.
    largest_acked_sent_time: Option<Instant>,
    /// When the next packet can be declared lost by the time threshold.
    loss_time: Option<Instant>,
    last_ack_eliciting: Option<Instant>,
    pending_probes: usize,
    discarded: bool,
}

impl<P> Default for Space<P> {
    fn default() -> Self {
        Space {
            sent: SentPackets::new(),
            lost_history: LostHistory::default(),
            largest_acked: None,
            largest_acked_sent_time: None,
            loss_time: None,
            last_ack_eliciting: None,
            pending_probes: 0,
            discarded: false,
        }
    }
}

/// Loss detection, RTT estimation and congestion control of one path.
///
/// `P` is the connection's per-packet record (which frames to retransmit); recovery moves it
/// around but never looks inside.
#[derive(Debug)]
pub struct Recovery<P> {
    spaces: [Space<P>; 3],
    rtt: RttEstimator,
    /// [`Recovery::pto`], recomputed when the RTT estimate or max_ack_delay changes: the
    /// connection asks for it several times per packet (idle timer, key retention).
    pto: Duration,
    cc: Controller,
    max_datagram_size: usize,
    timer: Option<Instant>,
    pto_count: u32,
    handshake_confirmed: bool,
    peer_completed_address_validation: bool,
    amplification_limited: bool,
    app_limited: bool,
    anti_deadlock_probe: bool,
    /// Bytes that may be sent beyond the congestion window: one datagram on entering a recovery
    /// period because of loss (RFC 9002 §7.3.2), for the repair of what was lost.
    recovery_allowance: usize,
    /// Numbers the loss detection passes, to attribute later spurious acknowledgments.
    loss_event_seq: u64,
    undo: Option<UndoGroup>,
    stats: RecoveryStats,
    /// Delivery-rate sampling, run only for controllers that want it.
    rate: RateSampler,
    /// When the connection last moved to a path with fresh congestion state: packets sent
    /// before it give no RTT samples and no congestion events.
    path_start: Option<Instant>,
}

impl<P> Recovery<P> {
    /// Creates recovery with the configured built-in congestion controller.
    pub fn new(cfg: &RecoveryConfig) -> Self {
        Self::with_controller(cfg, Controller::new(cfg.cc_algorithm, &cfg.cc))
    }

    /// Creates recovery with a given controller (e.g. from [`Controller::from_factory`]).
    pub fn with_controller(cfg: &RecoveryConfig, cc: Controller) -> Self {
        let rtt = RttEstimator::new(cfg.initial_rtt, cfg.max_ack_delay);
        Recovery {
            spaces: Default::default(),
            pto: pto_period(&rtt.stats(), 0, Epoch::Application),
            rtt,
            max_datagram_size: cfg.cc.max_datagram_size,
            timer: None,
            pto_count: 0,
            handshake_confirmed: false,
            peer_completed_address_validation: cfg.is_server,
            amplification_limited: false,
            app_limited: false,
            anti_deadlock_probe: false,
            recovery_allowance: 0,
            loss_event_seq: 0,
            undo: None,
            stats: RecoveryStats::default(),
            rate: RateSampler::default(),
            path_start: None,
            cc,
        }
    }

    fn space(&self, epoch: Epoch) -> &Space<P> {
        &self.spaces[epoch.index()]
    }

    fn space_mut(&mut self, epoch: Epoch) -> &mut Space<P> {
        &mut self.spaces[epoch.index()]
    }

    /// Records a sent packet (RFC 9002 Appendix A.5); its send time is set to `now`.
    ///
    /// Packet numbers must increase within a space, and the space must not have been
    /// discarded: otherwise [`Error::InvalidState`].
    pub fn on_packet_sent(
        &mut self,
        mut pkt: SentPacket<P>,
        epoch: Epoch,
        now: Instant,
    ) -> Result<()> {
        if self.space(epoch).discarded {
            return Err(Error::InvalidState);
        }
        pkt.time_sent = now;
        if self.cc.wants_rate_samples() && pkt.in_flight {
            pkt.rate = self
                .rate
                .on_packet_sent(now, self.bytes_in_flight(), pkt.size);
        }
        let (pkt_num, size) = (pkt.pkt_num, pkt.size);
        let (ack_eliciting, in_flight) = (pkt.ack_eliciting, pkt.in_flight);
        self.space_mut(epoch).sent.push(pkt)?;
        self.stats.sent_packets += 1;
        self.stats.sent_bytes = self.stats.sent_bytes.saturating_add(size as u64);
        if ack_eliciting {
            self.note_probe_sent(epoch);
        }
        if !in_flight {
            return Ok(());
        }
        if ack_eliciting {
            self.space_mut(epoch).last_ack_eliciting = Some(now);
        }
        let bytes_in_flight = self.bytes_in_flight();
        if bytes_in_flight > self.cc.cwnd() {
            // This packet needed the recovery allowance: it is spent.
            self.recovery_allowance = 0;
        }
        let info = SentInfo {
            epoch,
            pkt_num,
            size,
            ack_eliciting,
            bytes_in_flight,
        };
        self.cc.on_packet_sent(now, &info);
        // A sender that cannot fit another full datagram is using its window.
        if bytes_in_flight.saturating_add(self.max_datagram_size) > self.cc.cwnd() {
            self.app_limited = false;
        }
        self.set_timer(now);
        Ok(())
    }

    fn note_probe_sent(&mut self, epoch: Epoch) {
        let space = self.space_mut(epoch);
        if space.pending_probes > 0 {
            space.pending_probes -= 1;
            self.stats.probes_sent += 1;
        } else if self.anti_deadlock_probe && epoch != Epoch::Application {
            self.anti_deadlock_probe = false;
            self.stats.probes_sent += 1;
        }
    }

    /// Processes one ACK frame of `epoch` (RFC 9002 Appendix A.7).
    ///
    /// `ranges` are the acknowledged packet numbers as half-open ranges, in the descending order
    /// the frame decoder yields them (any order works); `ack_delay` is the decoded ACK Delay
    /// (ignored for the Initial space); `handshake_confirmed` says whether the handshake is
    /// confirmed now (once true it stays so, as with [`Recovery::on_handshake_confirmed`]).
    /// `out` is cleared, then receives the acknowledged and lost packets.
    ///
    /// Acknowledging a packet number that was never sent ([`Error::InvalidAckRange`]) or was
    /// skipped ([`Error::OptimisticAckDetected`]) is a PROTOCOL_VIOLATION (RFC 9000 §13.1);
    /// the connection must then close, as the
    /// state is left half-updated.
    pub fn on_ack_received<I>(
        &mut self,
        epoch: Epoch,
        ranges: I,
        ack_delay: Duration,
        now: Instant,
        handshake_confirmed: bool,
        out: &mut AckOutcome<P>,
    ) -> Result<()>
    where
        I: IntoIterator<Item = Range<u64>>,
    {
        out.clear();
        if handshake_confirmed {
            self.handshake_confirmed = true;
            self.peer_completed_address_validation = true;
        }
        if self.space(epoch).discarded {
            return Ok(());
        }
        let bytes_in_flight_before = self.bytes_in_flight();
        // An allowance not used before the next acknowledgment has served its purpose.
        self.recovery_allowance = 0;
        let mut tally = SpuriousTally {
            since_event: self.undo.map(|g| g.first_event),
            ..Default::default()
        };
        let space = &mut self.spaces[epoch.index()];
        // Room for every tracked packet at once: the buffer then only grows when more packets
        // are in flight than ever before, not step by step as ACKs cover more of them.
        out.acked.reserve(space.sent.len());
        let history = &mut space.lost_history;
        let scan = space.sent.on_ack_received(ranges, &mut out.acked, |r| {
            history.on_acked_range(r, &mut tally)
        })?;
        let Some(largest_acked) = scan.largest_acked else {
            return Ok(());
        };
        space.largest_acked = Some(
            space
                .largest_acked
                .map_or(largest_acked, |l| l.max(largest_acked)),
        );
        if let Some((pn, time_sent, _)) = scan.largest_newly_acked {
            if pn == largest_acked {
                space.largest_acked_sent_time = Some(time_sent);
            }
        }
        if epoch == Epoch::Handshake {
            // A client that got a Handshake ACK knows the server validated its address (A.8).
            self.peer_completed_address_validation = true;
        }
        out.spurious_losses = tally.count;
        self.stats.spurious_losses += tally.count as u64;
        if let Some(group) = &mut self.undo {
            group.spurious += tally.since_event_count;
        }
        if scan.packets == 0 {
            self.maybe_undo(now, out);
            self.set_timer(now);
            return Ok(());
        }
        self.stats.acked_packets += scan.packets as u64;
        out.acked_bytes = scan.in_flight_bytes;

        let rtt_sample = self.take_rtt_sample(epoch, &scan, largest_acked, ack_delay, now);
        out.rtt_updated = rtt_sample.is_some();

        self.detect_lost(epoch, now, out);

        if self.cc.wants_rate_samples() {
            for p in out.acked.iter().filter(|p| p.in_flight) {
                self.rate.on_packet_acked(now, &p.rate, p.size, p.time_sent);
            }
            let min_rtt = self.rtt.stats().min_rtt;
            if let Some(rs) = self.rate.generate(min_rtt, out.lost_bytes as u64) {
                self.cc.on_rate_sample(now, &rs);
            }
        }
        if let Some((pn, time_sent)) = scan.largest_in_flight {
            let batch = AckBatch {
                epoch,
                acked_bytes: scan.in_flight_bytes,
                acked_packets: scan.in_flight_packets,
                largest_acked: pn,
                largest_acked_sent_time: time_sent,
                rtt_sample,
                bytes_in_flight_before,
                bytes_in_flight: self.bytes_in_flight(),
                app_limited: self.app_limited,
            };
            self.cc.on_ack(now, &batch, &self.rtt.stats());
            if self.cc.wants_rate_samples() && self.cc.take_app_limited_mark() {
                self.rate.on_app_limited(self.bytes_in_flight());
            }
        }
        self.maybe_undo(now, out);

        // A client not yet sure the server validated its address keeps backing off (§6.2.1).
        if self.peer_completed_address_validation {
            self.pto_count = 0;
        }
        self.set_timer(now);
        Ok(())
    }

    /// Updates the RTT if the frame newly acknowledges its largest packet and something
    /// ack-eliciting (RFC 9002 §5.1); returns the sample.
    fn take_rtt_sample(
        &mut self,
        epoch: Epoch,
        scan: &sent::AckScan,
        largest_acked: u64,
        ack_delay: Duration,
        now: Instant,
    ) -> Option<Duration> {
        let (pn, time_sent, _) = scan.largest_newly_acked?;
        if pn != largest_acked || !scan.ack_eliciting {
            return None;
        }
        // Packets sent on the path the connection left say nothing of this one's RTT
        // (RFC 9000 §9.4).
        if self.path_start.is_some_and(|start| time_sent < start) {
            return None;
        }
        let latest_rtt = now.saturating_duration_since(time_sent);
        // The peer does not delay Initial acknowledgments (RFC 9002 §5.3).
        let ack_delay = if epoch == Epoch::Initial {
            Duration::ZERO
        } else {
            ack_delay
        };
        self.rtt
            .update(now, latest_rtt, ack_delay, self.handshake_confirmed);
        self.pto = pto_period(&self.rtt.stats(), 0, Epoch::Application);
        Some(latest_rtt)
    }

    /// Runs loss detection on a space and tells the controller (Appendix A.10, B.8).
    fn detect_lost(&mut self, epoch: Epoch, now: Instant, out: &mut AckOutcome<P>) {
        let rtt = self.rtt.stats();
        self.loss_event_seq += 1;
        let event = self.loss_event_seq;
        // Read before the controller hears of these losses, which may end slow start now.
        let first_slow_start_end = self.cc.stats().first_slow_start_end;
        let space = &mut self.spaces[epoch.index()];
        let Some(largest_acked) = space.largest_acked else {
            space.loss_time = None;
            return;
        };
        let already_lost = out.lost.len();
        let det = loss::detect_lost(
            &mut space.sent,
            largest_acked,
            now,
            &rtt,
            &mut out.lost,
            &mut space.lost_history,
            event,
        );
        space.loss_time = det.loss_time;
        if self.cc.wants_rate_samples() {
            for p in out.lost.get(already_lost..).unwrap_or_default() {
                if p.in_flight && !p.pmtu_probe {
                    let lost = self.rate.on_packet_lost(&p.rate, p.size);
                    self.cc.on_packet_lost_rate(now, &lost);
                }
            }
        }
        if det.packets > 0 {
            let in_first = out.lost.get(already_lost..).unwrap_or_default().iter();
            let in_first = in_first
                .filter(|p| first_slow_start_end.is_none_or(|end| p.time_sent < end))
                .count();
            self.stats.lost_in_first_slow_start += in_first as u64;
        }
        // Lost PMTU probes are the search's business, not the path's loss rate.
        self.stats.lost_packets += (det.packets - det.probes) as u64;
        self.stats.lost_by_packet_threshold += det.by_packet_threshold as u64;
        self.stats.lost_by_time_threshold += det.by_time_threshold as u64;
        self.stats.lost_bytes = self
            .stats
            .lost_bytes
            .saturating_add(det.in_flight_bytes as u64);
        out.lost_bytes = out.lost_bytes.saturating_add(det.in_flight_bytes);
        if det.in_flight_packets == 0 {
            return;
        }
        // Losses on the path the connection left are no congestion of this one (RFC 9000
        // §9.4): the data is repaired, the controller does not react.
        if self.path_start.is_some_and(|start| {
            det.largest_in_flight_sent_time
                .is_some_and(|sent| sent < start)
        }) {
            return;
        }
        let signal = CongestionSignal {
            kind: CongestionKind::Loss,
            largest_sent_time: det.largest_in_flight_sent_time.unwrap_or(now),
            lost_bytes: det.in_flight_bytes,
            lost_packets: det.in_flight_packets,
            persistent_congestion: det.persistent_congestion,
            bytes_in_flight: self.bytes_in_flight(),
        };
        if self.cc.on_congestion_event(now, &signal, &rtt) {
            // The window was cut at once rather than gradually: one more packet may go out
            // before the reduction takes hold (RFC 9002 §7.3.2), so the lost data is repaired
            // now instead of after the next acknowledgment. On a path of a few packets' window
            // that acknowledgment may be the peer's delayed one, a max_ack_delay away.
            self.recovery_allowance = self.max_datagram_size;
            self.undo = Some(UndoGroup {
                first_event: event,
                lost: det.in_flight_packets,
                spurious: 0,
                undoable: true,
            });
            self.stats.congestion_events += 1;
            out.congestion_event = true;
        } else if let Some(group) = &mut self.undo {
            group.lost += det.in_flight_packets;
        }
        if det.persistent_congestion {
            self.stats.persistent_congestion += 1;
            out.persistent_congestion = true;
            self.rtt.reset_min_rtt();
        }
    }

    /// Undoes the last reduction once every loss behind it was acknowledged after all.
    fn maybe_undo(&mut self, now: Instant, out: &mut AckOutcome<P>) {
        let Some(group) = self.undo else {
            return;
        };
        if group.undoable && group.lost > 0 && group.spurious >= group.lost {
            self.cc.on_spurious_congestion(now);
            self.undo = None;
            self.stats.congestion_events_undone += 1;
            out.congestion_undone = true;
        }
    }

    /// The peer's ECN-CE count for `epoch` increased in the ACK frame just processed (RFC 9002
    /// §7.1, Appendix B.7): a congestion event for the largest acknowledged packet. Returns
    /// whether the window was reduced.
    pub fn on_ecn_ce_increase(&mut self, epoch: Epoch, now: Instant) -> bool {
        let sent_time = self.space(epoch).largest_acked_sent_time.unwrap_or(now);
        let signal = CongestionSignal {
            kind: CongestionKind::EcnCe,
            largest_sent_time: sent_time,
            lost_bytes: 0,
            lost_packets: 0,
            persistent_congestion: false,
            bytes_in_flight: self.bytes_in_flight(),
        };
        let reduced = self.cc.on_congestion_event(now, &signal, &self.rtt.stats());
        if reduced {
            self.loss_event_seq += 1;
            self.undo = Some(UndoGroup {
                first_event: self.loss_event_seq,
                lost: 0,
                spurious: 0,
                undoable: false,
            });
            self.stats.congestion_events += 1;
        } else if let Some(group) = &mut self.undo {
            group.undoable = false;
        }
        reduced
    }

    /// The earliest time-threshold loss time over the spaces (GetLossTimeAndSpace).
    fn earliest_loss_time(&self) -> Option<(Instant, Epoch)> {
        let mut best: Option<(Instant, Epoch)> = None;
        for epoch in Epoch::ALL {
            if let Some(t) = self.space(epoch).loss_time {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, epoch));
                }
            }
        }
        best
    }

    fn ack_eliciting_in_flight_total(&self) -> usize {
        self.spaces
            .iter()
            .map(|s| s.sent.ack_eliciting_in_flight())
            .sum()
    }

    fn pto_deadline(&self, now: Instant) -> Option<PtoDeadline> {
        let spaces = [0, 1, 2].map(|i| SpaceTimes {
            ack_eliciting_in_flight: self.spaces[i].sent.ack_eliciting_in_flight() > 0,
            last_ack_eliciting: self.spaces[i].last_ack_eliciting,
        });
        pto::pto_deadline(
            &self.rtt.stats(),
            self.pto_count,
            self.handshake_confirmed,
            &spaces,
            now,
        )
    }

    /// Re-arms the loss detection timer (SetLossDetectionTimer, Appendix A.8).
    fn set_timer(&mut self, now: Instant) {
        self.timer = if let Some((t, _)) = self.earliest_loss_time() {
            Some(t)
        } else if self.amplification_limited {
            // Nothing could be sent on expiry (§6.2.2.1).
            None
        } else if self.ack_eliciting_in_flight_total() == 0
            && self.peer_completed_address_validation
        {
            None
        } else {
            self.pto_deadline(now).map(PtoDeadline::time)
        };
    }

    /// When the loss detection timer fires; `None` when it is not armed. Call
    /// [`Recovery::on_loss_detection_timeout`] at that time.
    pub fn loss_detection_timer(&self) -> Option<Instant> {
        self.timer
    }

    /// Handles the loss detection timer (OnLossDetectionTimeout, Appendix A.9). Does nothing
    /// unless the timer is armed and due at `now`. `out` is cleared, then receives the packets
    /// declared lost.
    pub fn on_loss_detection_timeout(
        &mut self,
        now: Instant,
        out: &mut AckOutcome<P>,
    ) -> TimeoutAction {
        out.clear();
        if self.timer.is_none_or(|t| t > now) {
            return TimeoutAction::None;
        }
        if let Some((_, epoch)) = self.earliest_loss_time() {
            self.detect_lost(epoch, now, out);
            self.set_timer(now);
            return TimeoutAction::Lost { epoch };
        }
        let action = match self.pto_deadline(now) {
            Some(PtoDeadline::AntiDeadlock(_)) => {
                self.anti_deadlock_probe = true;
                TimeoutAction::AntiDeadlock
            }
            Some(PtoDeadline::Space(_, epoch)) => {
                self.space_mut(epoch).pending_probes = MAX_PTO_PROBES;
                // The other handshake space with ack-eliciting data in flight gets a probe too,
                // coalesced in the same datagram (RFC 9002 §6.2.4: the peer may hold the keys
                // of only one of them, e.g. a client that lost the server's Initial cannot
                // read its Handshake packets, and one that has Handshake keys no longer reads
                // Initials).
                for other in [Epoch::Initial, Epoch::Handshake] {
                    let space = self.space_mut(other);
                    if other != epoch && space.sent.ack_eliciting_in_flight() > 0 {
                        space.pending_probes = space.pending_probes.max(1);
                    }
                }
                TimeoutAction::Probe {
                    epoch,
                    probes: MAX_PTO_PROBES,
                }
            }
            None => {
                self.set_timer(now);
                return TimeoutAction::None;
            }
        };
        self.pto_count = self.pto_count.saturating_add(1);
        self.stats.pto_count += 1;
        self.set_timer(now);
        action
    }

    /// Drops a packet number space whose keys were discarded (Appendix A.11): its packets leave
    /// bytes in flight (the controller hears of it), its loss state is reset, the PTO backoff is
    /// reset and the timer re-armed. Later packets for the space are refused.
    pub fn discard_epoch(&mut self, epoch: Epoch, now: Instant) {
        let space = self.space_mut(epoch);
        let bytes = space.sent.clear();
        space.lost_history.clear();
        space.loss_time = None;
        space.last_ack_eliciting = None;
        space.pending_probes = 0;
        space.discarded = true;
        if bytes > 0 {
            self.cc.on_packets_discarded(bytes);
        }
        self.pto_count = 0;
        self.set_timer(now);
    }

    /// Forgets the packets in flight of `epoch` without declaring them lost, keeping the space
    /// usable: when 0-RTT is rejected, its packets can never be acknowledged and their recovery
    /// state is discarded (RFC 9002 §6.4), which is no congestion signal. The caller repairs
    /// what they carried first ([`Recovery::sent_packets`]).
    pub fn discard_in_flight(&mut self, epoch: Epoch, now: Instant) {
        let space = self.space_mut(epoch);
        let bytes = space.sent.clear();
        space.lost_history.clear();
        space.loss_time = None;
        space.last_ack_eliciting = None;
        if bytes > 0 {
            self.cc.on_packets_discarded(bytes);
        }
        self.set_timer(now);
    }

    /// The handshake is confirmed (RFC 9001 §4.1.2): ACK delays are capped by max_ack_delay, the
    /// Application space's PTO may be armed, and the peer has validated our address.
    pub fn on_handshake_confirmed(&mut self, now: Instant) {
        self.handshake_confirmed = true;
        self.peer_completed_address_validation = true;
        self.set_timer(now);
    }

    /// Sets whether the peer has validated our address (PeerCompletedAddressValidation, Appendix
    /// A.8). Servers start with true; a client learns it from a Handshake ACK or handshake
    /// confirmation (both noted automatically). Until then a client keeps an anti-deadlock PTO
    /// armed even with nothing in flight.
    pub fn set_peer_completed_address_validation(&mut self, validated: bool, now: Instant) {
        self.peer_completed_address_validation = validated;
        self.set_timer(now);
    }

    /// Sets whether a server is blocked by its anti-amplification limit: then the timer is not
    /// armed, since nothing could be sent on expiry (§6.2.2.1). When unblocked, if the timer is
    /// already due the caller should run [`Recovery::on_loss_detection_timeout`] at once
    /// (Appendix A.6).
    pub fn set_amplification_limited(&mut self, limited: bool, now: Instant) {
        self.amplification_limited = limited;
        self.set_timer(now);
    }

    /// Sets whether the sender is application-limited: it has nothing to send although the
    /// window allows it (RFC 9002 §7.8). The window does not grow on ACKs while it is. Cleared
    /// automatically when a sent packet leaves less than a datagram of window.
    pub fn set_app_limited(&mut self, limited: bool, now: Instant) {
        self.app_limited = limited;
        if limited {
            if self.cc.wants_rate_samples() {
                self.rate.on_app_limited(self.bytes_in_flight());
            }
            self.cc.on_app_limited(now);
        }
    }

    /// Whether the sender is considered application-limited.
    pub fn app_limited(&self) -> bool {
        self.app_limited
    }

    /// Sets the peer's max_ack_delay (from its transport parameters).
    pub fn set_max_ack_delay(&mut self, max_ack_delay: Duration) {
        self.rtt.set_max_ack_delay(max_ack_delay);
        self.pto = pto_period(&self.rtt.stats(), 0, Epoch::Application);
    }

    /// The maximum datagram size changed (path MTU discovery).
    pub fn on_mtu_update(&mut self, max_datagram_size: usize) {
        self.max_datagram_size = max_datagram_size;
        self.cc.on_mtu_update(max_datagram_size);
    }

    /// Whether a packet of `bytes` in-flight bytes fits in the congestion window (RFC 9002 §7).
    /// Probes (see [`Recovery::pending_probes`]) may be sent regardless, and so may one packet
    /// just after a loss reduced the window (§7.3.2).
    pub fn can_send(&self, bytes: usize) -> bool {
        self.bytes_in_flight().saturating_add(bytes) <= self.cc.cwnd()
            || bytes <= self.recovery_allowance
    }

    /// How many more in-flight bytes the congestion window allows now: 0 while less than a
    /// full datagram fits and packets are in flight.
    ///
    /// Growth laws such as CUBIC open the window by fractions of a datagram; filling each such
    /// sliver at once would split the flow into a full packet and a short one every few ACKs,
    /// paying the per-packet overhead (header, AEAD tag, ACK work) for a few bytes. Waiting for
    /// the next ACK to free a full datagram respects the window just the same (RFC 9002 §7).
    /// With nothing in flight the whole window (at least two datagrams) is available, so this
    /// never stalls the sender.
    ///
    /// Just after a loss reduced the window, one datagram is allowed beyond it (RFC 9002
    /// §7.3.2).
    pub fn cwnd_available(&self) -> usize {
        let available = self.cc.cwnd().saturating_sub(self.bytes_in_flight());
        let small_window = self.cc.cwnd() < SMALL_WINDOW_PACKETS * self.max_datagram_size;
        let available =
            if available < self.max_datagram_size && self.bytes_in_flight() > 0 && !small_window {
                0
            } else {
                available
            };
        available.max(self.recovery_allowance)
    }

    /// Ack-eliciting packets still owed to the last PTO in `epoch` (including the anti-deadlock
    /// probe for Initial and Handshake). Sending them is not limited by the congestion window.
    pub fn pending_probes(&self, epoch: Epoch) -> usize {
        let anti_deadlock = self.anti_deadlock_probe && epoch != Epoch::Application;
        self.space(epoch).pending_probes + usize::from(anti_deadlock)
    }

    /// The congestion window in bytes.
    pub fn cwnd(&self) -> usize {
        self.cc.cwnd()
    }

    /// Bytes in flight over all spaces.
    pub fn bytes_in_flight(&self) -> usize {
        self.spaces.iter().map(|s| s.sent.bytes_in_flight()).sum()
    }

    /// Bytes in flight in one space.
    pub fn bytes_in_flight_in(&self, epoch: Epoch) -> usize {
        self.space(epoch).sent.bytes_in_flight()
    }

    /// Whether ack-eliciting packets are in flight in `epoch`.
    pub fn has_ack_eliciting_in_flight(&self, epoch: Epoch) -> bool {
        self.space(epoch).sent.ack_eliciting_in_flight() > 0
    }

    /// The packets of `epoch` still waiting to be acknowledged or declared lost.
    pub fn sent_packets(&self, epoch: Epoch) -> &SentPackets<P> {
        &self.space(epoch).sent
    }

    /// The largest packet number the peer acknowledged in `epoch`.
    pub fn largest_acked(&self, epoch: Epoch) -> Option<u64> {
        self.space(epoch).largest_acked
    }

    /// When the next packet of `epoch` can be declared lost by the time threshold.
    pub fn loss_time(&self, epoch: Epoch) -> Option<Instant> {
        self.space(epoch).loss_time
    }

    /// The RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// The PTO period without backoff, with max_ack_delay (for idle and closing timeouts, RFC
    /// 9000 §10).
    pub fn pto(&self) -> Duration {
        debug_assert_eq!(
            self.pto,
            pto_period(&self.rtt.stats(), 0, Epoch::Application)
        );
        self.pto
    }

    /// Consecutive PTOs without an acknowledgment (the backoff exponent).
    pub fn pto_count(&self) -> u32 {
        self.pto_count
    }

    /// Whether the handshake is known to be confirmed.
    pub fn handshake_confirmed(&self) -> bool {
        self.handshake_confirmed
    }

    /// The congestion controller.
    pub fn controller(&self) -> &Controller {
        &self.cc
    }

    /// The congestion controller, mutably.
    pub fn controller_mut(&mut self) -> &mut Controller {
        &mut self.cc
    }

    /// The counters.
    pub fn stats(&self) -> &RecoveryStats {
        &self.stats
    }

    /// Moves to a new path (RFC 9000 §9.4): the congestion controller becomes `fresh` and the
    /// RTT estimator starts over from the initial RTT; what the old path had is returned so a
    /// failed migration can restore it. Packets sent so far stay tracked (their
    /// acknowledgements or losses are still owed) but leave the bytes in flight; the PTO
    /// backoff restarts.
    pub fn switch_path_state(&mut self, fresh: Controller, now: Instant) -> PathCcState {
        let mut rtt = self.rtt.clone();
        rtt.reset();
        self.swap_path_state(PathCcState { cc: fresh, rtt }, now)
    }

    /// Installs `state` (saved by [`Recovery::switch_path_state`]) at `now` and returns the
    /// current one. Packets sent before `now` no longer feed the RTT estimate or the
    /// controller's loss response.
    pub fn swap_path_state(&mut self, state: PathCcState, now: Instant) -> PathCcState {
        self.path_start = Some(now);
        // What the old path carries no longer fills the new path's window (RFC 9000 §9.4);
        // its packets stay tracked, so their data is still repaired if they are lost.
        let bytes = self.space_mut(Epoch::Application).sent.take_out_of_flight();
        if bytes > 0 {
            self.cc.on_packets_discarded(bytes);
        }
        let old = PathCcState {
            cc: std::mem::replace(&mut self.cc, state.cc),
            rtt: std::mem::replace(&mut self.rtt, state.rtt),
        };
        self.pto = pto_period(&self.rtt.stats(), 0, Epoch::Application);
        self.pto_count = 0;
        self.undo = None;
        self.recovery_allowance = 0;
        self.rate = RateSampler::default();
        old
    }
}

/// The congestion controller and RTT estimate of a path the connection left, kept so that it
/// can come back to the path without starting over.
#[derive(Debug)]
pub struct PathCcState {
    cc: Controller,
    rtt: RttEstimator,
}

/// A fixed base instant for tests on a manual clock (the library itself never reads the clock).
/// Decides which packet numbers a sender skips, so that a peer acknowledging packets it never
/// received (an optimistic ACK, RFC 9000 §21.4) names a number never sent and is caught.
///
/// One number in [`PnSkipper::MIN_INTERVAL`] to twice that is skipped, at a random place drawn
/// from a generator seeded per connection: a peer cannot predict which, and the cost is one
/// number (and the receiver's one immediate ACK for the gap) per few hundred packets.
#[derive(Clone, Debug)]
pub struct PnSkipper {
    state: u64,
    countdown: u64,
}

impl PnSkipper {
    /// The shortest run of packets between two skips.
    pub const MIN_INTERVAL: u64 = 256;

    /// A skipper drawing from `seed` (any value).
    pub fn new(seed: u64) -> Self {
        let mut s = PnSkipper {
            state: seed | 1,
            countdown: 0,
        };
        s.rearm();
        s
    }

    fn rearm(&mut self) {
        // xorshift64*: cheap and good enough to hide the next skip from a peer.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        self.countdown = Self::MIN_INTERVAL + (r >> 32) % Self::MIN_INTERVAL;
    }

    /// Called once per packet sent: whether to skip the number after it.
    pub fn on_packet_sent(&mut self) -> bool {
        self.countdown -= 1;
        if self.countdown == 0 {
            self.rearm();
            return true;
        }
        false
    }
}

#[cfg(any(test, feature = "fuzzing"))]
impl<P> Recovery<P> {
    /// Panics when a space's in-flight totals differ from a recount of its packets.
    pub(crate) fn debug_check_invariants(&self) {
        for s in &self.spaces {
            s.sent.debug_check_invariants();
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
pub(crate) fn test_now() -> Instant {
    Instant::now()
}
