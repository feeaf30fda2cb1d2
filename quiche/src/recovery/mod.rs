//! Loss detection and recovery (RFC 9002): RTT, sent packets, loss, PTO.
//!
//! [`Recovery`] is one path's sender side: it tracks sent packets per packet number space, owns
//! bytes in flight, the RTT estimate, the loss detection timer and the congestion controller, and
//! tells the connection which packets were acknowledged or lost (their opaque payloads come
//! back) and when to send probes. It never reads the clock: every entry point takes `now`.
//!
//! One ACK frame is processed in this order (ARCHITECTURE.md, "Congestion control"): newly
//! acknowledged packets are taken out of the store; the RTT is updated (if the largest acknowledged packet is newly acknowledged
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
use crate::sender::PathSender;

mod ack;
mod loss;
mod outcome;
mod pn_skip;
mod pto;
mod rate;
mod sent_packets;
#[cfg(test)]
mod tests;
mod timer;

pub use self::loss::{
    loss_delay, persistent_congestion_duration, MAX_PACKET_THRESHOLD, PACKET_THRESHOLD,
    PERSISTENT_CONGESTION_THRESHOLD,
};
pub use self::outcome::{AckOutcome, TimeoutAction};
pub use self::pn_skip::PnSkipper;
pub use self::pto::{pto_period, MAX_PTO_PROBES};
pub use self::rate::PacketRateState;
pub use self::sent_packets::{SentPacket, SentPackets};

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
    /// [`crate::sender::PathSender::set_max_ack_delay`] once the parameters arrive).
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
    /// Whether a spurious loss raises the packet threshold (see
    /// [`Recovery::set_relaxed_loss_threshold`]).
    pub relaxed_loss_threshold: bool,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        RecoveryConfig {
            max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            initial_rtt: INITIAL_RTT,
            is_server: false,
            cc_algorithm: CongestionControlAlgorithm::default(),
            cc: CcConfig::default(),
            relaxed_loss_threshold: false,
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
    /// The packet threshold in use: kPacketThreshold, raised by spurious losses when relaxed.
    packet_threshold: u64,
    relaxed_loss_threshold: bool,
}

impl RecoveryConfig {
    /// A path's sender with the configured built-in congestion controller.
    pub fn sender(&self, pacing: bool) -> PathSender {
        self.sender_with(Controller::new(self.cc_algorithm, &self.cc), pacing)
    }

    /// A path's sender with a given controller (e.g. from [`Controller::from_factory`]).
    pub fn sender_with(&self, cc: Controller, pacing: bool) -> PathSender {
        let rtt = RttEstimator::new(self.initial_rtt, self.max_ack_delay);
        PathSender::new(cc, rtt, self.cc.max_datagram_size, pacing)
    }
}

impl<P> Recovery<P> {
    /// Creates recovery; its paths' senders are made by [`RecoveryConfig::sender`].
    pub fn new(cfg: &RecoveryConfig) -> Self {
        Recovery {
            spaces: Default::default(),
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
            packet_threshold: PACKET_THRESHOLD,
            relaxed_loss_threshold: cfg.relaxed_loss_threshold,
        }
    }

    /// Sets whether a spurious loss raises the packet threshold (quiche's
    /// `Config::set_enable_relaxed_loss_threshold`, "relaxed loss detection on spurious loss";
    /// off by default). quiche's documentation says no more, so this follows RFC 9002 §6.1.1,
    /// which lets an implementation adapt its reordering threshold: when a packet declared lost
    /// by the packet threshold is acknowledged after all, the threshold becomes one more than
    /// the reordering that packet saw (how far the largest acknowledged packet was past it),
    /// never lower than before and at most [`MAX_PACKET_THRESHOLD`]. Off, it stays at
    /// kPacketThreshold (3).
    pub fn set_relaxed_loss_threshold(&mut self, on: bool) {
        self.relaxed_loss_threshold = on;
        if !on {
            self.packet_threshold = PACKET_THRESHOLD;
        }
    }

    /// The packet threshold in use (§6.1.1): kPacketThreshold unless raised by spurious losses
    /// ([`Recovery::set_relaxed_loss_threshold`]).
    pub fn packet_threshold(&self) -> u64 {
        self.packet_threshold
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
        s: &mut PathSender,
    ) -> Result<()> {
        if self.space(epoch).discarded {
            return Err(Error::InvalidState);
        }
        pkt.time_sent = now;
        if s.cc.wants_rate_samples() && pkt.in_flight {
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
        if bytes_in_flight > s.cc.cwnd() {
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
        s.cc.on_packet_sent(now, &info);
        // A sender that cannot fit another full datagram is using its window.
        if bytes_in_flight.saturating_add(s.max_datagram_size()) > s.cc.cwnd() {
            self.app_limited = false;
        }
        self.set_timer(now, s);
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

    /// Drops a packet number space whose keys were discarded (Appendix A.11): its packets leave
    /// bytes in flight (the controller hears of it), its loss state is reset, the PTO backoff is
    /// reset and the timer re-armed. Later packets for the space are refused.
    pub fn discard_epoch(&mut self, epoch: Epoch, now: Instant, s: &mut PathSender) {
        let space = self.space_mut(epoch);
        let bytes = space.sent.clear();
        space.lost_history.clear();
        space.loss_time = None;
        space.last_ack_eliciting = None;
        space.pending_probes = 0;
        space.discarded = true;
        if bytes > 0 {
            s.cc.on_packets_discarded(bytes);
        }
        self.pto_count = 0;
        self.set_timer(now, s);
    }

    /// Forgets the packets in flight of `epoch` without declaring them lost, keeping the space
    /// usable: when 0-RTT is rejected, its packets can never be acknowledged and their recovery
    /// state is discarded (RFC 9002 §6.4), which is no congestion signal. The caller repairs
    /// what they carried first ([`Recovery::sent_packets`]).
    pub fn discard_in_flight(&mut self, epoch: Epoch, now: Instant, s: &mut PathSender) {
        let space = self.space_mut(epoch);
        let bytes = space.sent.clear();
        space.lost_history.clear();
        space.loss_time = None;
        space.last_ack_eliciting = None;
        if bytes > 0 {
            s.cc.on_packets_discarded(bytes);
        }
        self.set_timer(now, s);
    }

    /// The handshake is confirmed (RFC 9001 §4.1.2): ACK delays are capped by max_ack_delay, the
    /// Application space's PTO may be armed, and the peer has validated our address.
    pub fn on_handshake_confirmed(&mut self, now: Instant, s: &PathSender) {
        self.handshake_confirmed = true;
        self.peer_completed_address_validation = true;
        self.set_timer(now, s);
    }

    /// Sets whether the peer has validated our address (PeerCompletedAddressValidation, Appendix
    /// A.8). Servers start with true; a client learns it from a Handshake ACK or handshake
    /// confirmation (both noted automatically). Until then a client keeps an anti-deadlock PTO
    /// armed even with nothing in flight.
    pub fn set_peer_completed_address_validation(
        &mut self,
        validated: bool,
        now: Instant,
        s: &PathSender,
    ) {
        self.peer_completed_address_validation = validated;
        self.set_timer(now, s);
    }

    /// Sets whether a server is blocked by its anti-amplification limit: then the timer is not
    /// armed, since nothing could be sent on expiry (§6.2.2.1). When unblocked, if the timer is
    /// already due the caller should run [`Recovery::on_loss_detection_timeout`] at once
    /// (Appendix A.6).
    pub fn set_amplification_limited(&mut self, limited: bool, now: Instant, s: &PathSender) {
        self.amplification_limited = limited;
        self.set_timer(now, s);
    }

    /// Sets whether the sender is application-limited: it has nothing to send although the
    /// window allows it (RFC 9002 §7.8). The window does not grow on ACKs while it is. Cleared
    /// automatically when a sent packet leaves less than a datagram of window.
    pub fn set_app_limited(&mut self, limited: bool, now: Instant, s: &mut PathSender) {
        self.app_limited = limited;
        if limited {
            if s.cc.wants_rate_samples() {
                self.rate.on_app_limited(self.bytes_in_flight());
            }
            s.cc.on_app_limited(now);
        }
    }

    /// Whether the sender is considered application-limited.
    pub fn app_limited(&self) -> bool {
        self.app_limited
    }

    /// Whether a packet of `bytes` in-flight bytes fits in the congestion window (RFC 9002 §7).
    /// Probes (see [`Recovery::pending_probes`]) may be sent regardless, and so may one packet
    /// just after a loss reduced the window (§7.3.2).
    pub fn can_send(&self, bytes: usize, s: &PathSender) -> bool {
        self.bytes_in_flight().saturating_add(bytes) <= s.cwnd() || bytes <= self.recovery_allowance
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
    pub fn cwnd_available(&self, s: &PathSender) -> usize {
        let mds = s.max_datagram_size();
        let available = s.cwnd().saturating_sub(self.bytes_in_flight());
        let small_window = s.cwnd() < SMALL_WINDOW_PACKETS * mds;
        let available = if available < mds && self.bytes_in_flight() > 0 && !small_window {
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

    /// Consecutive PTOs without an acknowledgment (the backoff exponent).
    pub fn pto_count(&self) -> u32 {
        self.pto_count
    }

    /// Whether the handshake is known to be confirmed.
    pub fn handshake_confirmed(&self) -> bool {
        self.handshake_confirmed
    }

    /// The counters.
    pub fn stats(&self) -> &RecoveryStats {
        &self.stats
    }

    /// The connection moved to another path at `now` (RFC 9000 §9.4); `left` is the sender
    /// of the path it left. Packets sent so far stay tracked (their acknowledgements or losses
    /// are still owed, and their data is repaired if lost) but leave the bytes in flight, and
    /// they no longer feed the RTT estimate or a controller's loss response; the PTO backoff
    /// restarts.
    pub fn on_path_change(&mut self, left: &mut PathSender, now: Instant) {
        self.path_start = Some(now);
        // What the old path carries no longer fills the new path's window.
        let bytes = self.space_mut(Epoch::Application).sent.take_out_of_flight();
        if bytes > 0 {
            left.cc.on_packets_discarded(bytes);
        }
        self.pto_count = 0;
        self.undo = None;
        self.recovery_allowance = 0;
        self.rate = RateSampler::default();
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
