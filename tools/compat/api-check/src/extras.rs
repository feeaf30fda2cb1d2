//! The items quiche 0.30 has that the other checks do not call: the peer's transport
//! parameters (with unknown ones tracked), both sides' early data reasons, the pacing queries,
//! `readable`/`writable` as `StreamIter`, and the wire
//! error codes. Printed values are those both stacks must agree on.

use crate::loopback::{settle, Client, Server};
use crate::{quiche, Report};

/// Runs on the established connection, after `calls::run`.
pub fn run(client: &mut Client, server: &mut Server, r: &mut Report) {
    settle(client, server, 20);
    transport_params(client, r);
    r.line(
        "extras.client.early_data_reason",
        client.conn.early_data_reason(),
    );
    r.line("extras.client.pacing_enabled", client.conn.pacing_enabled());
    r.line(
        "extras.client.gcongestion_enabled",
        format!("{:?}", client.conn.gcongestion_enabled()),
    );
    r.line(
        "extras.client.max_release_into_future>0",
        client.conn.max_release_into_future() > std::time::Duration::ZERO,
    );
    r.line(
        "extras.client.get_next_release_time.is_some",
        client.conn.get_next_release_time().is_some(),
    );
    let readable: quiche::StreamIter = client.conn.readable();
    r.line("extras.client.readable(quiet).count", readable.count());
    let writable: quiche::StreamIter = client.conn.writable();
    r.line(
        "extras.client.writable are client bidi streams",
        writable.into_iter().all(|id| id % 4 == 0),
    );
    // Not called: `revalidate_pmtu` (ours lowers the PMTU to 1200 with path MTU discovery
    // off; quiche does nothing then). No path event: the initial path is reported by neither
    // (quiche's `PathEvent::New` is for paths a server sees later), and path MTU discovery,
    // whose updates are events, is off here.
    r.line(
        "extras.client.path_event_next",
        format!("{:?}", client.conn.path_event_next()),
    );
    let sc = server.only().expect("server connection");
    // No session offered: BoringSSL's ssl_early_data_no_session_offered (5).
    r.line(
        "extras.server.early_data_reason",
        sc.conn.early_data_reason(),
    );
    r.line(
        "extras.server.peer_transport_params.initial_max_streams_uni",
        format!(
            "{:?}",
            sc.conn
                .peer_transport_params()
                .map(|tp| tp.initial_max_streams_uni)
        ),
    );
    error_codes(r);
    settle(client, server, 5);
}

/// The server's transport parameters as the client decoded them.
fn transport_params(client: &Client, r: &mut Report) {
    let Some(tp): Option<&quiche::TransportParams> = client.conn.peer_transport_params() else {
        r.line("extras.client.peer_transport_params", "None");
        return;
    };
    r.line(
        "extras.client.peer_transport_params",
        format!(
            "max_idle_timeout={} max_udp_payload_size={} initial_max_data={} \
             initial_max_stream_data_bidi_local={} initial_max_stream_data_bidi_remote={} \
             initial_max_stream_data_uni={} initial_max_streams_bidi={} \
             initial_max_streams_uni={} ack_delay_exponent={} max_ack_delay={} \
             disable_active_migration={} active_conn_id_limit={}",
            tp.max_idle_timeout,
            tp.max_udp_payload_size,
            tp.initial_max_data,
            tp.initial_max_stream_data_bidi_local,
            tp.initial_max_stream_data_bidi_remote,
            tp.initial_max_stream_data_uni,
            tp.initial_max_streams_bidi,
            tp.initial_max_streams_uni,
            tp.ack_delay_exponent,
            tp.max_ack_delay,
            tp.disable_active_migration,
            tp.active_conn_id_limit,
        ),
    );
    // Not printed: stateless_reset_token (ours always sends one, derived from the config's
    // key; quiche only after `set_stateless_reset_token`).
    r.line(
        "extras.client.peer_transport_params.unknown_params (tracked)",
        tp.unknown_params.is_some(),
    );
}

/// The wire codes of the error enums, and HTTP/3's reserved values.
fn error_codes(r: &mut Report) {
    use quiche::h3::WireErrorCode as H3;
    use quiche::WireErrorCode as Quic;
    let quic = [
        Quic::NoError,
        Quic::FlowControlError,
        Quic::StreamLimitError,
        Quic::FinalSizeError,
        Quic::ProtocolViolation,
        Quic::CryptoBufferExceeded,
    ];
    let quic: Vec<String> = quic.iter().map(|c| format!("{:#x}", *c as u64)).collect();
    r.line("extras.WireErrorCode", quic.join(","));
    let h3 = [
        H3::NoError,
        H3::GeneralProtocolError,
        H3::FrameUnexpected,
        H3::SettingsError,
        H3::MessageError,
        H3::VersionFallback,
    ];
    let h3: Vec<String> = h3.iter().map(|c| format!("{:#x}", *c as u64)).collect();
    r.line("extras.h3::WireErrorCode", h3.join(","));
    let grease = quiche::h3::grease_value();
    r.line(
        "extras.h3::grease_value is reserved",
        grease >= 0x21 && (grease - 0x21).is_multiple_of(0x1f) && grease < (1 << 62),
    );
}
