//! What recovery hands back: the packets an ACK frame or a timeout resolved ([`AckOutcome`]) and
//! what the loss detection timer asks for ([`TimeoutAction`]).

use crate::packet::Epoch;

use super::SentPacket;

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
