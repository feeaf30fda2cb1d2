//! Connection lifecycle (RFC 9000 §10): idle timeout, the closing and draining periods, and the
//! errors that ended the connection.

use std::time::{Duration, Instant};

/// The error a connection was closed with, as sent or received in CONNECTION_CLOSE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionError {
    /// Whether it was an application close (frame type 0x1d) rather than a transport one.
    pub is_app: bool,
    /// The error code.
    pub error_code: u64,
    /// The reason phrase.
    pub reason: Vec<u8>,
}

/// Where the connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Handshake in progress.
    Handshaking,
    /// Handshake complete.
    Established,
    /// We sent CONNECTION_CLOSE and answer further packets with it until the deadline (§10.2.1).
    Closing {
        /// When the closing period ends.
        until: Instant,
    },
    /// We received CONNECTION_CLOSE (or a stateless reset) and send nothing until the deadline
    /// (§10.2.2).
    Draining {
        /// When the draining period ends.
        until: Instant,
    },
    /// Done: every state can be freed.
    Closed,
}

/// Lifecycle state of one connection.
#[derive(Debug)]
pub struct Lifecycle {
    phase: Phase,
    local_idle_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    idle_deadline: Option<Instant>,
    /// Whether an ack-eliciting packet was sent since the last packet was received; the idle
    /// timer restarts on the first one only (§10.1).
    sent_eliciting_since_recv: bool,
    timed_out: bool,
    /// The close we initiated, to be sent in CONNECTION_CLOSE.
    local_error: Option<ConnectionError>,
    /// The close the peer sent us.
    peer_error: Option<ConnectionError>,
    /// Whether a CONNECTION_CLOSE frame should go out in the next packet.
    close_pending: bool,
    /// Whether our CONNECTION_CLOSE has gone out at least once.
    close_sent: bool,
    /// Whether a stateless reset from the peer ended the connection.
    reset: bool,
}

impl Lifecycle {
    /// A new connection with our `max_idle_timeout` (None: no timeout of ours).
    pub fn new(local_idle_timeout: Option<Duration>) -> Self {
        Lifecycle {
            phase: Phase::Handshaking,
            local_idle_timeout,
            idle_timeout: local_idle_timeout,
            idle_deadline: None,
            sent_eliciting_since_recv: false,
            timed_out: false,
            local_error: None,
            peer_error: None,
            close_pending: false,
            close_sent: false,
            reset: false,
        }
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether the handshake completed and the connection is not closing.
    pub fn is_established(&self) -> bool {
        self.phase == Phase::Established
    }

    /// Marks the handshake as complete.
    pub fn on_established(&mut self) {
        if self.phase == Phase::Handshaking {
            self.phase = Phase::Established;
        }
    }

    /// Whether the connection is closing, draining or closed: no application data any more.
    pub fn is_closing_or_draining(&self) -> bool {
        matches!(
            self.phase,
            Phase::Closing { .. } | Phase::Draining { .. } | Phase::Closed
        )
    }

    /// Whether we are in the draining period.
    pub fn is_draining(&self) -> bool {
        matches!(self.phase, Phase::Draining { .. })
    }

    /// What the API reports as draining: the draining period, or the closing period once our
    /// CONNECTION_CLOSE went out. quiche reports both as draining: no application data moves any
    /// more and the application need not call `send` (in the closing period it still may, to
    /// answer the peer's packets with CONNECTION_CLOSE again, RFC 9000 §10.2.1).
    pub fn is_draining_for_api(&self) -> bool {
        match self.phase {
            Phase::Draining { .. } => true,
            Phase::Closing { .. } => self.close_sent,
            _ => false,
        }
    }

    /// Whether everything is over.
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// Whether the idle timeout closed the connection.
    pub fn is_timed_out(&self) -> bool {
        self.timed_out
    }

    /// The error we closed with.
    pub fn local_error(&self) -> Option<&ConnectionError> {
        self.local_error.as_ref()
    }

    /// The error the peer closed with.
    pub fn peer_error(&self) -> Option<&ConnectionError> {
        self.peer_error.as_ref()
    }

    /// Replaces our own `max_idle_timeout` before the peer's is known (the connection's
    /// `set_max_idle_timeout`).
    pub fn set_local_idle_timeout(&mut self, local: Option<Duration>) {
        self.local_idle_timeout = local;
        self.idle_timeout = local;
    }

    /// Applies the peer's `max_idle_timeout`: the effective timeout is the smaller of both
    /// non-zero values (§10.1).
    pub fn on_peer_idle_timeout(&mut self, peer: Option<Duration>) {
        self.idle_timeout = match (self.local_idle_timeout, peer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// The idle timeout in force, made at least three PTOs so that probes get their chance
    /// (§10.1).
    fn effective_idle_timeout(&self, pto: Duration) -> Option<Duration> {
        self.idle_timeout.map(|t| t.max(pto * 3))
    }

    /// Starts the idle timer if nothing has started it yet (the connection's first use).
    pub fn start_idle_timer(&mut self, now: Instant, pto: Duration) {
        if self.idle_deadline.is_none() && !self.is_closing_or_draining() {
            self.idle_deadline = self.effective_idle_timeout(pto).map(|t| now + t);
        }
    }

    /// A packet from the peer was processed: the idle timer restarts.
    pub fn on_packet_received(&mut self, now: Instant, pto: Duration) {
        self.idle_deadline = self.effective_idle_timeout(pto).map(|t| now + t);
        self.sent_eliciting_since_recv = false;
    }

    /// An ack-eliciting packet was sent: the first one since a receipt restarts the idle timer.
    pub fn on_ack_eliciting_sent(&mut self, now: Instant, pto: Duration) {
        if !self.sent_eliciting_since_recv || self.idle_deadline.is_none() {
            self.idle_deadline = self.effective_idle_timeout(pto).map(|t| now + t);
            self.sent_eliciting_since_recv = true;
        }
    }

    /// We close the connection with `error`: CONNECTION_CLOSE goes out and the closing period
    /// (three PTOs, §10.2) begins. Returns false if the connection was already closing.
    pub fn close(&mut self, error: ConnectionError, now: Instant, pto: Duration) -> bool {
        if self.is_closing_or_draining() {
            return false;
        }
        self.local_error = Some(error);
        self.close_pending = true;
        self.phase = Phase::Closing {
            until: now + pto * 3,
        };
        true
    }

    /// Ends the connection at once without sending anything (e.g. nothing was ever sent, or
    /// the handshake cannot continue before keys exist).
    pub fn close_immediately(&mut self, error: Option<ConnectionError>) {
        if let Some(e) = error {
            self.local_error.get_or_insert(e);
        }
        self.close_pending = false;
        self.phase = Phase::Closed;
    }

    /// The peer closed the connection (or sent a stateless reset, with `error` None): enter the
    /// draining period (§10.2.2).
    pub fn on_peer_close(&mut self, error: Option<ConnectionError>, now: Instant, pto: Duration) {
        if let Some(e) = error {
            self.peer_error.get_or_insert(e);
        }
        self.close_pending = false;
        match self.phase {
            Phase::Draining { .. } | Phase::Closed => {}
            _ => {
                self.phase = Phase::Draining {
                    until: now + pto * 3,
                }
            }
        }
    }

    /// The peer sent a stateless reset (RFC 9000 §10.3.1): it has no state left, so nothing is
    /// sent any more and the connection is closed at once, as quiche does. (The draining period
    /// §10.3.1 asks for exists to ignore the peer's late packets without answering them; a
    /// closed connection does that too.)
    pub fn on_stateless_reset(&mut self) {
        self.reset = true;
        self.close_pending = false;
        self.phase = Phase::Closed;
    }

    /// Whether a stateless reset ended the connection.
    pub fn is_reset(&self) -> bool {
        self.reset
    }

    /// In the closing period, a packet from the peer calls for our CONNECTION_CLOSE again
    /// (§10.2.1).
    pub fn on_packet_while_closing(&mut self) {
        if matches!(self.phase, Phase::Closing { .. }) {
            self.close_pending = true;
        }
    }

    /// Whether a CONNECTION_CLOSE frame must be sent.
    pub fn close_pending(&self) -> bool {
        self.close_pending
    }

    /// The CONNECTION_CLOSE frame went out.
    pub fn on_close_sent(&mut self) {
        self.close_pending = false;
        self.close_sent = true;
    }

    /// The next lifecycle deadline: idle timeout or the end of closing/draining.
    pub fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Closing { until } | Phase::Draining { until } => Some(until),
            Phase::Closed => None,
            Phase::Handshaking | Phase::Established => self.idle_deadline,
        }
    }

    /// Fires the lifecycle timers due at `now`.
    pub fn on_timeout(&mut self, now: Instant) {
        let Some(deadline) = self.deadline() else {
            return;
        };
        if deadline > now {
            return;
        }
        if matches!(self.phase, Phase::Handshaking | Phase::Established) {
            // Idle timeout: the connection is silently closed (§10.1).
            self.timed_out = true;
        }
        self.close_pending = false;
        self.phase = Phase::Closed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTO: Duration = Duration::from_millis(100);

    fn err(code: u64) -> ConnectionError {
        ConnectionError {
            is_app: true,
            error_code: code,
            reason: b"bye".to_vec(),
        }
    }

    #[test]
    fn idle_timeout_is_the_smaller_of_both_and_at_least_three_ptos() {
        let now = crate::testing::virtual_epoch();
        let mut l = Lifecycle::new(Some(Duration::from_secs(30)));
        l.on_peer_idle_timeout(Some(Duration::from_secs(5)));
        l.on_packet_received(now, PTO);
        assert_eq!(l.deadline(), Some(now + Duration::from_secs(5)));

        let mut short = Lifecycle::new(Some(Duration::from_millis(10)));
        short.on_packet_received(now, PTO);
        assert_eq!(short.deadline(), Some(now + PTO * 3));

        let mut none = Lifecycle::new(None);
        none.on_peer_idle_timeout(None);
        none.on_packet_received(now, PTO);
        assert_eq!(none.deadline(), None);
    }

    #[test]
    fn idle_timer_restarts_on_first_eliciting_send_only() {
        let now = crate::testing::virtual_epoch();
        let mut l = Lifecycle::new(Some(Duration::from_secs(1)));
        l.on_packet_received(now, PTO);
        l.on_ack_eliciting_sent(now + Duration::from_millis(100), PTO);
        let after_first = l.deadline();
        l.on_ack_eliciting_sent(now + Duration::from_millis(200), PTO);
        assert_eq!(l.deadline(), after_first);
        assert_eq!(after_first, Some(now + Duration::from_millis(1100)));
    }

    #[test]
    fn idle_timeout_closes_silently() {
        let now = crate::testing::virtual_epoch();
        let mut l = Lifecycle::new(Some(Duration::from_secs(1)));
        l.on_packet_received(now, PTO);
        l.on_timeout(now + Duration::from_millis(999));
        assert!(!l.is_closed());
        l.on_timeout(now + Duration::from_secs(1));
        assert!(l.is_closed());
        assert!(l.is_timed_out());
        assert!(!l.close_pending());
    }

    #[test]
    fn local_close_enters_closing_then_closed() {
        let now = crate::testing::virtual_epoch();
        let mut l = Lifecycle::new(None);
        assert!(l.close(err(7), now, PTO));
        assert!(!l.close(err(8), now, PTO), "second close is ignored");
        assert!(l.close_pending());
        l.on_close_sent();
        l.on_packet_while_closing();
        assert!(
            l.close_pending(),
            "packets in the closing period get CONNECTION_CLOSE again"
        );
        assert_eq!(l.local_error().map(|e| e.error_code), Some(7));
        l.on_timeout(now + PTO * 3);
        assert!(l.is_closed());
        assert!(!l.is_timed_out());
    }

    #[test]
    fn stateless_reset_closes_at_once_even_while_closing() {
        let now = crate::testing::virtual_epoch();
        let mut l = Lifecycle::new(Some(Duration::from_secs(1)));
        l.on_packet_received(now, PTO);
        assert!(l.close(err(7), now, PTO));
        assert!(l.close_pending());
        l.on_stateless_reset();
        assert!(l.is_closed() && l.is_reset());
        assert!(!l.close_pending() && !l.is_timed_out() && !l.is_draining_for_api());
        assert_eq!(l.deadline(), None);
        assert!(l.peer_error().is_none());
    }

    #[test]
    fn peer_close_enters_draining_and_sends_nothing() {
        let now = crate::testing::virtual_epoch();
        let mut l = Lifecycle::new(None);
        l.on_peer_close(Some(err(9)), now, PTO);
        assert!(l.is_draining());
        assert!(!l.close_pending());
        l.on_packet_while_closing();
        assert!(!l.close_pending());
        assert_eq!(l.peer_error().map(|e| e.error_code), Some(9));
        l.on_timeout(now + PTO * 3);
        assert!(l.is_closed());
    }
}
