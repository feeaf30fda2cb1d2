//! Connection-level flow control (RFC 9000 §4.1): the MAX_DATA we grant and its auto-tuned
//! window, the peer's MAX_DATA and what we committed against it, and the DATA_BLOCKED we owe.
//!
//! Streams keep their own windows (`stream/`); this is the one limit over all of them. The
//! receive window's rules (when to update, auto-tuning) are `crate::flow_control`'s; this file
//! keeps the connection's counters beside it and decides when a frame is due.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::flow_control::FlowControl;

/// The connection's flow-control state, both directions.
pub(super) struct ConnFlowControl {
    /// Connection-level receive window (MAX_DATA we advertise).
    rx: FlowControl,
    /// Sum of the highest offsets received on all streams (checked against our MAX_DATA).
    rx_data: u64,
    /// A MAX_DATA frame is due.
    max_data_pending: bool,
    /// The peer's MAX_DATA.
    tx_max_data: u64,
    /// Stream bytes the application committed for sending.
    tx_data: u64,
    /// Stream bytes sent for the first time (not retransmissions): `tx_data - tx_emitted` were
    /// written and wait to be sent.
    tx_emitted: u64,
    /// `Config::set_max_unsent_stream_data`: the bound on `tx_data - tx_emitted`.
    max_unsent_stream_data: u64,
    /// The limit our last DATA_BLOCKED reported (one frame per limit).
    data_blocked_sent_at: Option<u64>,
}

impl ConnFlowControl {
    /// A receive window of `initial_max_data` (our transport parameter) that auto-tuning may
    /// grow to `max_window`, at least `min_window`; nothing granted by the peer yet.
    pub(super) fn new(
        initial_max_data: u64,
        max_window: u64,
        min_window: u64,
        max_unsent_stream_data: u64,
    ) -> Self {
        let mut rx = FlowControl::new(initial_max_data, max_window);
        rx.ensure_window_lower_bound(min_window);
        ConnFlowControl {
            rx,
            rx_data: 0,
            max_data_pending: false,
            tx_max_data: 0,
            tx_data: 0,
            tx_emitted: 0,
            max_unsent_stream_data,
            data_blocked_sent_at: None,
        }
    }

    // -------------------------------------------------------------------------------------
    // Receiving: the credit we grant.

    /// The MAX_DATA currently advertised.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn rx_max_data(&self) -> u64 {
        self.rx.max_data()
    }

    /// Stream bytes received so far (highest offsets, summed over streams).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn rx_data(&self) -> u64 {
        self.rx_data
    }

    /// Counts `new` stream bytes from the peer against our MAX_DATA (RFC 9000 §4.1).
    pub(super) fn on_peer_data(&mut self, new: u64) -> Result<()> {
        self.rx_data = self.rx_data.saturating_add(new);
        if self.rx_data > self.rx.max_data() {
            return Err(Error::FlowControl);
        }
        Ok(())
    }

    /// The application read or discarded `n` bytes. `min_window` keeps the window ahead of
    /// the largest stream window (a stream window that grew raises the connection's at once,
    /// not only at the next update, which would throttle the stream); `alongside` says a
    /// stream update goes out anyway, which may take the connection's with it a little early.
    pub(super) fn on_consumed(
        &mut self,
        n: u64,
        min_window: u64,
        alongside: bool,
        now: Instant,
        srtt: Duration,
    ) {
        self.rx.add_consumed(n);
        self.rx.ensure_window_lower_bound(min_window);
        // One decision per MAX_DATA frame: a pending one carries the newest credit anyway.
        let alongside = alongside && self.rx.worth_updating_alongside();
        if !self.max_data_pending && (self.rx.should_update_max_data() || alongside) {
            self.rx.autotune_window(now, srtt);
            self.max_data_pending = true;
        }
    }

    /// The peer said it is blocked by our window: make sure an update is on its way.
    pub(super) fn on_peer_data_blocked(&mut self) {
        self.max_data_pending |= self.rx.should_update_max_data();
    }

    /// Whether a MAX_DATA frame is due.
    pub(super) fn max_data_pending(&self) -> bool {
        self.max_data_pending
    }

    /// The limit a MAX_DATA frame written now carries, if one is due; the limit is raised
    /// (at `now`, for auto-tuning) before the frame is written. [`Self::on_max_data_sent`]
    /// once it is in the packet.
    pub(super) fn max_data_to_send(&mut self, now: Option<Instant>) -> Option<u64> {
        if !self.max_data_pending {
            return None;
        }
        if let Some(now) = now {
            self.rx.update_max_data(now);
        }
        Some(self.rx.max_data())
    }

    /// The MAX_DATA frame went into a packet.
    pub(super) fn on_max_data_sent(&mut self) {
        self.max_data_pending = false;
    }

    /// A packet with a MAX_DATA frame was lost: send the (newest) limit again.
    pub(super) fn on_max_data_lost(&mut self) {
        self.max_data_pending = true;
    }

    // -------------------------------------------------------------------------------------
    // Sending: the credit the peer grants.

    /// The peer's MAX_DATA (0 until its transport parameters are known).
    pub(super) fn tx_max_data(&self) -> u64 {
        self.tx_max_data
    }

    /// A MAX_DATA frame or the peer's `initial_max_data`: a limit is never lowered.
    pub(super) fn on_peer_max_data(&mut self, max: u64) {
        self.tx_max_data = self.tx_max_data.max(max);
    }

    /// The remembered `initial_max_data` of a resumed session, for 0-RTT data.
    pub(super) fn set_remembered_max_data(&mut self, max: u64) {
        self.tx_max_data = max;
    }

    /// 0-RTT was rejected: the server's `initial_max_data` holds, and of what the application
    /// committed only `kept` bytes remain (RFC 9000 §7.4.1).
    pub(super) fn on_zero_rtt_rejected(&mut self, initial_max_data: u64, kept: u64) {
        self.tx_max_data = initial_max_data;
        self.tx_data = kept;
        // What 0-RTT carried is sent again as retransmissions, so it stays counted as sent.
        self.tx_emitted = self.tx_emitted.min(kept);
        self.data_blocked_sent_at = None;
    }

    /// The application committed `n` more stream bytes.
    pub(super) fn on_written(&mut self, n: u64) {
        self.tx_data += n;
    }

    /// A reset withdrew `reclaimed` unsent bytes: they no longer count against the window.
    pub(super) fn on_reclaimed(&mut self, reclaimed: u64) {
        self.tx_data = self.tx_data.saturating_sub(reclaimed);
    }

    /// `n` stream bytes went out for the first time.
    pub(super) fn on_emitted(&mut self, n: u64) {
        self.tx_emitted += n;
    }

    /// Bytes written and not sent yet.
    pub(super) fn unsent(&self) -> u64 {
        self.tx_data.saturating_sub(self.tx_emitted)
    }

    /// How many more stream bytes the peer's window and the bound on unsent data accept.
    pub(super) fn send_capacity(&self) -> u64 {
        self.tx_max_data
            .saturating_sub(self.tx_data)
            .min(self.max_unsent_stream_data.saturating_sub(self.unsent()))
    }

    /// The limit a DATA_BLOCKED frame reports, when the window is used up while streams have
    /// data to send and the frame was not sent for this limit yet (RFC 9000 §4.1).
    pub(super) fn data_blocked_due(&self, streams_have_data: impl FnOnce() -> bool) -> Option<u64> {
        (self.tx_data >= self.tx_max_data
            && streams_have_data()
            && self.data_blocked_sent_at != Some(self.tx_max_data))
        .then_some(self.tx_max_data)
    }

    /// A DATA_BLOCKED frame for `limit` went into a packet.
    pub(super) fn on_data_blocked_sent(&mut self, limit: u64) {
        self.data_blocked_sent_at = Some(limit);
    }

    /// A packet with a DATA_BLOCKED frame was lost: it may be sent again.
    pub(super) fn on_data_blocked_lost(&mut self) {
        self.data_blocked_sent_at = None;
    }
}
