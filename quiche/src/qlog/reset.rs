//! The events of a connection ended by a stateless reset (RFC 9000 §10.3.1).

use std::time::Instant;

use ::qlog::events::connectivity::{ConnectionClosed, ConnectionClosedTrigger, TransportOwner};
use ::qlog::events::EventData;

use super::frame_log::hex;
use super::{json_time, QlogLogger};

impl QlogLogger {
    /// A stateless reset of `len` bytes ending in `token` arrived and closed the connection:
    /// `transport:packet_received` of type `stateless_reset` with the token (quic-events-04
    /// §5.6; written as plain JSON, the qlog crate's packet types lack that one), then
    /// `connectivity:connection_closed` from the peer with the trigger `stateless_reset`
    /// (§4.3).
    pub fn stateless_reset(&mut self, now: Instant, len: usize, token: &[u8]) {
        if !self.is_enabled() {
            return;
        }
        let time = self.event_time(now);
        let event = serde_json::json!({
            "time": json_time(time),
            "name": "transport:packet_received",
            "data": {
                "header": { "packet_type": "stateless_reset" },
                "stateless_reset_token": hex(token),
                "raw": { "length": len },
            },
        });
        self.write_record(|buf| serde_json::to_writer(buf, &event));
        let data = EventData::ConnectionClosed(ConnectionClosed {
            owner: Some(TransportOwner::Remote),
            connection_code: None,
            application_code: None,
            internal_code: None,
            reason: Some("stateless reset".to_string()),
            trigger: Some(ConnectionClosedTrigger::StatelessReset),
        });
        self.write_event(now, data);
    }
}
