//! Where the HTTP/3 layer reports to the connection's qlog trace: the hooks here, the events
//! in `events.rs` (HTTP/3 and QPACK events written through the connection's
//! [`crate::qlog::AppQlog`]). Without the `qlog` feature the hooks compile to nothing, and
//! without a trace each is one `Option` check on the connection.

/// Runs `$body` with the connection's [`crate::qlog::AppQlog`] bound to `$q`, if a trace is
/// being written.
macro_rules! h3_qlog {
    ($conn:expr, $q:ident => $body:expr) => {
        #[cfg(feature = "qlog")]
        if let Some(mut $q) = $conn.app_qlog() {
            $body;
        }
    };
}
pub(super) use h3_qlog;

#[cfg(feature = "qlog")]
mod events;

#[cfg(feature = "qlog")]
pub use self::events::{Framing, QpackState};

use super::qpack;

/// The streams and frames HTTP/3 opens with (RFC 9114 §6.2.1, RFC 9204 §4.2): our settings,
/// the control stream with its SETTINGS and reserved frames, the QPACK streams and the reserved
/// stream.
#[cfg_attr(not(feature = "qlog"), allow(dead_code))]
pub(super) struct Start<'a> {
    /// Our SETTINGS, the reserved one included.
    pub settings: &'a [(u64, u64)],
    /// (stream ID, stream type) of each unidirectional stream opened.
    pub streams: &'a [(u64, u64)],
    /// (frame type, payload) of each frame on the control stream.
    pub control_frames: &'a [(u64, &'a [u8])],
}

/// Logs how HTTP/3 starts.
pub(super) fn start<F: crate::BufFactory>(conn: &mut crate::Connection<F>, s: &Start) {
    h3_qlog!(conn, q => {
        use crate::qlog::Owner;
        // Requests are served before the peer's SETTINGS arrive (RFC 9114 §7.2.4.2 allows it).
        q.parameters_set(Owner::Local, s.settings, Some(false));
        for &(id, ty) in s.streams {
            q.stream_type_set(Owner::Local, id, Some(ty));
        }
        for &(ty, payload) in s.control_frames {
            let len = payload.len() as u64;
            q.frame(Framing::Created, s.streams[0].0, ty, len, Some(payload));
        }
    });
    #[cfg(not(feature = "qlog"))]
    let _ = (conn, s);
}

/// Logs the QPACK instructions parsed since the last call and, with `pending` (when they are
/// about to be written, and only then, so that each is logged once), the pending encoder and
/// decoder stream bytes; then the tables' state when it changed. The encoder and decoder keep
/// parsed instructions only while a trace is written.
pub(super) fn qpack<F: crate::BufFactory>(
    conn: &mut crate::Connection<F>,
    encoder: &mut qpack::Encoder,
    decoder: &mut qpack::Decoder,
    pending: bool,
) {
    #[cfg(feature = "qlog")]
    {
        use crate::qlog::Owner;
        use qpack::log::Stream;
        let Some(mut q) = conn.app_qlog() else {
            if encoder.parsed_log().is_enabled() || decoder.parsed_log().is_enabled() {
                // The trace stopped (a write failed): nothing more is kept for it.
                encoder.parsed_log().set_enabled(false);
                decoder.parsed_log().set_enabled(false);
            }
            return;
        };
        encoder.parsed_log().set_enabled(true);
        decoder.parsed_log().set_enabled(true);
        if !decoder.parsed_log().is_empty() {
            let parsed = decoder.parsed_log().take();
            q.qpack_instructions(Framing::Parsed, Stream::Encoder, &parsed);
        }
        if !encoder.parsed_log().is_empty() {
            let parsed = encoder.parsed_log().take();
            q.qpack_instructions(Framing::Parsed, Stream::Decoder, &parsed);
        }
        if pending {
            let created = encoder.encoder_stream_pending();
            q.qpack_instructions(Framing::Created, Stream::Encoder, created);
            let created = decoder.decoder_stream_pending();
            q.qpack_instructions(Framing::Created, Stream::Decoder, created);
        }
        let t = encoder.table();
        q.qpack_state(
            Owner::Local,
            QpackState {
                capacity: t.capacity() as u64,
                size: t.size() as u64,
                insert_count: t.insert_count(),
                known_received_count: Some(encoder.known_received_count()),
            },
        );
        let t = decoder.table();
        q.qpack_state(
            Owner::Remote,
            QpackState {
                capacity: t.capacity() as u64,
                size: t.size() as u64,
                insert_count: t.insert_count(),
                known_received_count: None,
            },
        );
    }
    #[cfg(not(feature = "qlog"))]
    let _ = (conn, encoder, decoder, pending);
}

#[cfg(all(test, feature = "qlog"))]
mod tests;
