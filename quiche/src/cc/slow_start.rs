//! Standard slow start (RFC 9002 §7.3.1).

use std::time::Instant;

use super::{AckBatch, SlowStart, Window};
use crate::rtt::RttStats;

/// Standard slow start: the window grows by the number of bytes acknowledged, doubling each
/// round trip, until the first congestion event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StandardSlowStart;

impl SlowStart for StandardSlowStart {
    fn on_ack(&mut self, _now: Instant, ack: &AckBatch, _rtt: &RttStats, win: &mut Window) {
        win.cwnd = win.cwnd.saturating_add(ack.acked_bytes);
    }
}
