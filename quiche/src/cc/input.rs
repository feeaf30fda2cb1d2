//! What a controller is fed: facts about sent packets, ACK frames, congestion events and, for
//! controllers that ask for them, delivery-rate samples and per-loss facts. Recovery builds
//! them; the controller only reads them (the order of the calls is in [`super`]'s docs).

use std::time::{Duration, Instant};

use crate::packet::Epoch;

/// Facts about one sent in-flight packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentInfo {
    /// The packet number space the packet was sent in. Packet numbers are only comparable within
    /// a space; round tracking (HyStart++) uses the Application space.
    pub epoch: Epoch,
    /// The packet number.
    pub pkt_num: u64,
    /// Bytes sent in the packet, QUIC header and AEAD overhead included, UDP/IP excluded.
    pub size: usize,
    /// Whether the packet is ack-eliciting.
    pub ack_eliciting: bool,
    /// Bytes in flight after this packet was added.
    pub bytes_in_flight: usize,
}

/// Facts about one ACK frame that newly acknowledged in-flight packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckBatch {
    /// The packet number space the ACK frame acknowledged packets in.
    pub epoch: Epoch,
    /// In-flight bytes newly acknowledged by this frame.
    pub acked_bytes: usize,
    /// In-flight packets newly acknowledged by this frame.
    pub acked_packets: usize,
    /// The largest packet number among the newly acknowledged in-flight packets.
    pub largest_acked: u64,
    /// When the packet `largest_acked` was sent. A controller leaves its recovery period when
    /// this is after the period started (RFC 9002 §7.3.2).
    pub largest_acked_sent_time: Instant,
    /// The RTT sample this frame produced, if it produced one (RFC 9002 §5.1).
    pub rtt_sample: Option<Duration>,
    /// Bytes in flight before this frame was processed.
    pub bytes_in_flight_before: usize,
    /// Bytes in flight after removing the acknowledged and the newly lost packets.
    pub bytes_in_flight: usize,
    /// Whether the sender was application-limited (RFC 9002 §7.8): the window must not grow.
    pub app_limited: bool,
}

/// What kind of congestion signal a [`CongestionSignal`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CongestionKind {
    /// In-flight packets were declared lost.
    Loss,
    /// The peer reported an increase of the ECN-CE count (RFC 9002 §7.1).
    EcnCe,
}

/// One congestion event: a batch of losses from one detection pass, or an ECN-CE increase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CongestionSignal {
    /// Loss or ECN-CE.
    pub kind: CongestionKind,
    /// When the largest lost packet (or, for ECN-CE, the largest acknowledged packet) was sent.
    /// Packets sent before the current recovery period started do not reduce the window again
    /// (RFC 9002 §7.3.2).
    pub largest_sent_time: Instant,
    /// In-flight bytes declared lost (0 for ECN-CE).
    pub lost_bytes: usize,
    /// In-flight packets declared lost (0 for ECN-CE).
    pub lost_packets: usize,
    /// Whether these losses establish persistent congestion (RFC 9002 §7.6): the window collapses
    /// to the minimum window.
    pub persistent_congestion: bool,
    /// Bytes in flight after removing the lost packets.
    pub bytes_in_flight: usize,
}

/// One delivery-rate sample, produced per ACK frame (draft-ietf-ccwg-bbr-06 §4.1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSample {
    /// Bytes per second delivered over the sample's interval; 0 when the interval was too short
    /// (below the minimum RTT) to be trusted.
    pub delivery_rate: u64,
    /// The sample's interval: the longer of its send and ACK phases.
    pub interval: Duration,
    /// Bytes delivered over the interval.
    pub delivered: u64,
    /// The connection's delivered count when the sample's packet was sent (rs.prior_delivered).
    pub prior_delivered: u64,
    /// Whether the sample's packet was sent while application-limited: its rate is a lower
    /// bound, not a measure of the path.
    pub is_app_limited: bool,
    /// Bytes in flight when the sample's packet was sent (rs.tx_in_flight).
    pub tx_in_flight: u64,
    /// Bytes declared lost between the sample's packet being sent and now (rs.lost).
    pub lost: u64,
    /// Bytes newly acknowledged by this ACK frame.
    pub newly_acked: u64,
    /// Bytes newly declared lost while processing this ACK frame.
    pub newly_lost: u64,
    /// The connection's total delivered bytes after this ACK (C.delivered).
    pub total_delivered: u64,
    /// The RTT of the sample's packet.
    pub rtt: Duration,
}

/// A packet declared lost, with its send-time snapshot (for BBR's per-loss bound checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostPacketRate {
    /// The packet's size in bytes.
    pub size: u64,
    /// Bytes in flight when it was sent, itself included.
    pub tx_in_flight: u64,
    /// Bytes declared lost since it was sent, itself included.
    pub lost_since_sent: u64,
    /// Whether it was sent application-limited.
    pub is_app_limited: bool,
    /// The connection's total delivered bytes now.
    pub total_delivered: u64,
}
