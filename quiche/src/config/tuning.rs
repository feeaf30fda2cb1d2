//! The tuning setters of quiche 0.30's `Config` beyond the core ones: the anti-amplification
//! factor, the send capacity factor, the initial RTT, a pacing rate ceiling, connection-ID
//! reuse across paths, CUBIC's idle restart, relaxed loss detection, STREAMS_BLOCKED, the
//! PATH_CHALLENGE answer queue and the ALPN list in wire format. Each one changes what
//! connections made from the config do; `Config` holds the values in one [`Tuning`].

use std::time::Duration;

use crate::config::Config;
use crate::error::{Error, Result};

/// The values the setters of this module set, with quiche's defaults.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tuning {
    /// How many bytes a server may send per byte received from an address it has not
    /// validated (RFC 9000 §8.1: 3).
    pub(crate) max_amplification_factor: u64,
    /// When set, stream data the application may have written but not sent is also bounded
    /// by this times the congestion window's free room.
    pub(crate) send_capacity_factor: Option<f64>,
    /// The RTT assumed before the first sample (RFC 9002 §6.2.2: 333 ms).
    pub(crate) initial_rtt: Duration,
    /// A ceiling on the pacing rate, in bytes per second.
    pub(crate) max_pacing_rate: Option<u64>,
    /// A new path never reuses the connection ID of another path.
    pub(crate) disable_dcid_reuse: bool,
    /// CUBIC measures an idle period from the later of the last acknowledgement and the start
    /// of the idle period, to the first packet sent after it.
    pub(crate) cubic_idle_restart_fix: bool,
    /// A spurious loss raises the packet reordering threshold (RFC 9002 §6.1.1).
    pub(crate) relaxed_loss_threshold: bool,
    /// STREAMS_BLOCKED frames are sent when the peer's stream limit stops us.
    pub(crate) send_streams_blocked: bool,
    /// PATH_RESPONSE frames owed on a path at most.
    pub(crate) path_challenge_recv_max_queue_len: usize,
    /// Connections issue their own connection IDs up to the peer's limit once the handshake
    /// completes and replace the ones the peer retires ([`Config::enable_automatic_connection_ids`];
    /// quiche leaves that to the application's `new_scid`).
    pub(crate) automatic_connection_ids: bool,
    /// The byte budget for the peer's unknown transport parameters the connection keeps;
    /// `None`: none kept.
    pub(crate) unknown_transport_params_budget: Option<usize>,
    /// HTTP/3 sends its reserved setting, frame and stream ([`Config::grease`]).
    pub(crate) grease: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            max_amplification_factor: crate::path::AMPLIFICATION_FACTOR,
            send_capacity_factor: None,
            initial_rtt: crate::rtt::INITIAL_RTT,
            max_pacing_rate: None,
            disable_dcid_reuse: false,
            cubic_idle_restart_fix: true,
            relaxed_loss_threshold: false,
            send_streams_blocked: true,
            path_challenge_recv_max_queue_len: crate::path::MAX_PENDING_RESPONSES,
            automatic_connection_ids: false,
            unknown_transport_params_budget: None,
            grease: true,
        }
    }
}

impl Config {
    /// Sets the ALPN protocols from their TLS wire format: each one prefixed with its length
    /// in one byte (e.g. `b"\x02h3\x0ahq-interop"`). Errors: `InvalidState` for a list that
    /// does not parse or is empty.
    pub fn set_application_protos_wire_format(&mut self, protos: &[u8]) -> Result<()> {
        let mut list = Vec::new();
        let mut rest = protos;
        while let Some((&len, tail)) = rest.split_first() {
            let len = usize::from(len);
            if len == 0 || tail.len() < len {
                return Err(Error::InvalidState);
            }
            list.push(&tail[..len]);
            rest = &tail[len..];
        }
        if list.is_empty() {
            return Err(Error::InvalidState);
        }
        self.set_application_protos(&list)
    }

    /// Sets how many bytes a server sends at most per byte received from a client address it
    /// has not validated yet (RFC 9000 §8.1 asks for at most 3, the default). Values below 1
    /// are taken as 1.
    pub fn set_max_amplification_factor(&mut self, v: usize) {
        self.tuning.max_amplification_factor = (v as u64).max(1);
    }

    /// Bounds the stream data the application may have written but the connection not sent
    /// yet to `v` times the room left in the congestion window (in addition to flow control
    /// and [`Config::set_max_unsent_stream_data`]): `stream_send` and `stream_capacity` follow
    /// the window. Not set by default (quiche: 1). Negative and non-finite values are ignored.
    pub fn set_send_capacity_factor(&mut self, v: f64) {
        if v.is_finite() && v >= 0.0 {
            self.tuning.send_capacity_factor = Some(v);
        }
    }

    /// Sets the RTT assumed before the first RTT sample (default 333 ms, RFC 9002 §6.2.2): it
    /// sets the first probe timeouts of the handshake. At least 1 ms.
    pub fn set_initial_rtt(&mut self, v: Duration) {
        self.tuning.initial_rtt = v.max(Duration::from_millis(1));
    }

    /// Caps the pacing rate at `v` bytes per second: however large the congestion window,
    /// datagrams leave no faster. No cap by default.
    pub fn set_max_pacing_rate(&mut self, v: u64) {
        self.tuning.max_pacing_rate = Some(v.max(1));
    }

    /// With `true`, a new path (a peer's new address, a probed path) is used only with a
    /// connection ID of the peer's not used on another path, so that an observer cannot link
    /// the paths (RFC 9000 §9.5); a server then does not follow a peer that moved without
    /// giving it a spare ID. Default `false`: the current ID is reused when no spare is left.
    pub fn set_disable_dcid_reuse(&mut self, v: bool) {
        self.tuning.disable_dcid_reuse = v;
    }

    /// How CUBIC measures the idle time when it sends with nothing in flight without having
    /// been reported application-limited (an idle restart, RFC 9438 §5.8: its epoch moves
    /// forward by that time). With `true` (the default, as in quiche), from the later of the
    /// last send and the last acknowledgement, so that a window drained only because all of it
    /// was acknowledged counts no idle time; with `false`, from the last send, which counts the
    /// round trip the packets spent in flight and, repeated each round, keeps the window off
    /// the cubic curve (see [`crate::cc::Cubic::set_idle_restart_fix`]).
    pub fn set_enable_cubic_idle_restart_fix(&mut self, enable: bool) {
        self.tuning.cubic_idle_restart_fix = enable;
    }

    /// With `true`, a packet declared lost by the packet threshold and acknowledged later
    /// (a spurious loss) raises the packet threshold to one more than the reordering it saw,
    /// up to [`crate::recovery::MAX_PACKET_THRESHOLD`] (RFC 9002 §6.1.1; quiche documents
    /// only "relaxed loss detection on spurious loss", so the adaptation is the RFC's), so
    /// that a reordering path stops causing spurious retransmissions and window reductions.
    /// Default `false`: kPacketThreshold (3) throughout.
    pub fn set_enable_relaxed_loss_threshold(&mut self, enable: bool) {
        self.tuning.relaxed_loss_threshold = enable;
    }

    /// Whether to send STREAMS_BLOCKED when the peer's limit stops the application from
    /// opening a stream (RFC 9000 §4.6 says it should). Default `true` (quiche: `false`).
    pub fn set_enable_send_streams_blocked(&mut self, enable: bool) {
        self.tuning.send_streams_blocked = enable;
    }

    /// Sets how many PATH_CHALLENGE frames received on a path wait for their PATH_RESPONSE at
    /// most; further ones are dropped until some are answered (default 4). At least 1.
    pub fn set_path_challenge_recv_max_queue_len(&mut self, queue_len: usize) {
        self.tuning.path_challenge_recv_max_queue_len = queue_len.max(1);
    }

    /// Keeps the transport parameters the peer sent that this library does not know (RFC 9000
    /// §7.4.2 has them ignored otherwise), up to `size` bytes in all (each costs its value's
    /// length plus 8): `Connection::peer_transport_params()` then has them in
    /// `unknown_params`, in the order the peer sent them. Off by default.
    pub fn enable_track_unknown_transport_parameters(&mut self, size: usize) {
        self.tuning.unknown_transport_params_budget = Some(size);
    }

    /// Kept for quiche's API: the connection's flow-control window always starts at
    /// `initial_max_data`, as in quiche 0.30, where this setter is deprecated and does nothing.
    #[deprecated(note = "This is now always enabled. This method is a no-op.")]
    pub fn set_use_initial_max_data_as_flow_control_win(&mut self, _v: bool) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpn_wire_format_parses_length_prefixed_names() {
        let mut c = Config::new(crate::PROTOCOL_VERSION).unwrap();
        c.set_application_protos_wire_format(b"\x02h3\x0ahq-interop")
            .unwrap();
        assert_eq!(
            c.tls.application_protos(),
            &[b"h3".to_vec(), b"hq-interop".to_vec()]
        );
        assert_eq!(
            c.set_application_protos_wire_format(b"\x05ab"),
            Err(Error::InvalidState)
        );
        assert_eq!(
            c.set_application_protos_wire_format(b""),
            Err(Error::InvalidState)
        );
    }

    #[test]
    fn setters_clamp_what_would_break_the_connection() {
        let mut c = Config::new(crate::PROTOCOL_VERSION).unwrap();
        c.set_max_amplification_factor(0);
        c.set_initial_rtt(Duration::ZERO);
        c.set_send_capacity_factor(f64::NAN);
        c.set_path_challenge_recv_max_queue_len(0);
        assert_eq!(c.tuning.max_amplification_factor, 1);
        assert_eq!(c.tuning.initial_rtt, Duration::from_millis(1));
        assert_eq!(c.tuning.send_capacity_factor, None);
        assert_eq!(c.tuning.path_challenge_recv_max_queue_len, 1);
    }
}
