//! The HTTP/3 functions of the C API (`quiche_h3_*`): configuration, the HTTP/3 connection on
//! top of a `quiche_conn`, events, requests, responses and bodies, priorities and GOAWAY. The
//! rules of the parent module apply: NULL and length checks, error returns instead of crashes,
//! no panic across the boundary.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::ptr;

use libc::{size_t, ssize_t};

use super::conn::Conn;
use super::{guard, len_ssize, put, slice_in, slice_out};
use crate::h3::{self, NameValue};

/// `QUICHE_H3_ERR_*` for invalid arguments and caught panics: the H3 "internal error".
const H3_INVALID: c_int = -3;

/// The negative code of `quiche_h3_error` for an HTTP/3 error (quiche's numbering: H3 errors
/// -1 to -20, transport errors 1000 below their `QUICHE_ERR_*`).
fn h3_code(e: h3::Error) -> c_int {
    match e {
        h3::Error::Done => -1,
        h3::Error::BufferTooShort => -2,
        h3::Error::InternalError => -3,
        h3::Error::ExcessiveLoad => -4,
        h3::Error::IdError => -5,
        h3::Error::StreamCreationError => -6,
        h3::Error::ClosedCriticalStream => -7,
        h3::Error::MissingSettings => -8,
        h3::Error::FrameUnexpected => -9,
        h3::Error::FrameError => -10,
        h3::Error::QpackDecompressionFailed => -11,
        h3::Error::StreamBlocked => -13,
        h3::Error::SettingsError => -14,
        h3::Error::RequestRejected => -15,
        h3::Error::RequestCancelled => -16,
        h3::Error::RequestIncomplete => -17,
        h3::Error::MessageError => -18,
        h3::Error::ConnectError => -19,
        h3::Error::VersionFallback => -20,
        h3::Error::TransportError(e) => e.to_c() - 1000,
    }
}

fn h3_code_ssize(e: h3::Error) -> ssize_t {
    h3_code(e) as ssize_t
}

fn h3_result(r: h3::Result<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => h3_code(e),
    }
}

/// What a `quiche_h3_event *` points to (its stream ID is `quiche_h3_conn_poll`'s return).
pub struct Event {
    event: h3::Event,
}

/// A `quiche_h3_header` as C lays it out.
#[repr(C)]
pub struct CHeader {
    name: *const u8,
    name_len: size_t,
    value: *const u8,
    value_len: size_t,
}

/// A `quiche_h3_priority` as C lays it out.
#[repr(C)]
pub struct CPriority {
    urgency: u8,
    incremental: bool,
}

/// The `quiche_h3_stats` structure.
#[repr(C)]
pub struct CStats {
    qpack_encoder_stream_recv_bytes: u64,
    qpack_decoder_stream_recv_bytes: u64,
}

/// The header list at `headers` as borrowed name/value pairs.
///
/// # Safety
/// `headers` is NULL (with `len` 0) or points to `len` headers whose names and values point to
/// their lengths' readable bytes, valid for `'a`.
unsafe fn header_list<'a>(headers: *const CHeader, len: size_t) -> Option<Vec<h3::HeaderRef<'a>>> {
    if len == 0 {
        return Some(Vec::new());
    }
    if headers.is_null() || len > isize::MAX as usize / std::mem::size_of::<CHeader>() {
        return None;
    }
    // SAFETY: non-NULL and `len` headers by the caller's contract; the size fits in isize.
    let list = unsafe { std::slice::from_raw_parts(headers, len) };
    list.iter()
        .map(|h| {
            // SAFETY: each name and value points to its length's bytes (caller's contract).
            let (name, value) = unsafe {
                (
                    slice_in(h.name, h.name_len)?,
                    slice_in(h.value, h.value_len)?,
                )
            };
            Some(h3::HeaderRef::new(name, value))
        })
        .collect()
}

/// Creates an HTTP/3 configuration with the default settings.
#[no_mangle]
pub extern "C" fn quiche_h3_config_new() -> *mut h3::Config {
    guard(ptr::null_mut(), || match h3::Config::new() {
        Ok(c) => Box::into_raw(Box::new(c)),
        Err(_) => ptr::null_mut(),
    })
}

macro_rules! h3_config_setter {
    ($(#[$doc:meta])* $name:ident, $method:ident, $ty:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `config` is NULL or a live configuration.
        #[no_mangle]
        pub unsafe extern "C" fn $name(config: *mut h3::Config, v: $ty) {
            guard((), || {
                // SAFETY: NULL is checked; otherwise live by contract.
                if let Some(config) = unsafe { config.as_mut() } {
                    config.$method(v);
                }
            })
        }
    };
}

h3_config_setter!(
    /// SETTINGS_MAX_FIELD_SECTION_SIZE: the largest header section accepted.
    quiche_h3_config_set_max_field_section_size, set_max_field_section_size, u64
);
h3_config_setter!(
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY: the QPACK dynamic table the peer may use.
    quiche_h3_config_set_qpack_max_table_capacity, set_qpack_max_table_capacity, u64
);
h3_config_setter!(
    /// SETTINGS_QPACK_BLOCKED_STREAMS: how many streams the peer may block on QPACK.
    quiche_h3_config_set_qpack_blocked_streams, set_qpack_blocked_streams, u64
);
h3_config_setter!(
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220).
    quiche_h3_config_enable_extended_connect, enable_extended_connect, bool
);
h3_config_setter!(
    /// The largest PRIORITY_UPDATE payload accepted.
    quiche_h3_config_set_max_priority_update_size, set_max_priority_update_size, u64
);

/// Frees a configuration.
///
/// # Safety
/// `config` is NULL or came from `quiche_h3_config_new` and is not used again.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_config_free(config: *mut h3::Config) {
    guard((), || {
        if !config.is_null() {
            // SAFETY: created by Box::into_raw in quiche_h3_config_new, freed once.
            drop(unsafe { Box::from_raw(config) });
        }
    })
}

/// Starts HTTP/3 on an established (or 0-RTT) QUIC connection: opens the control and QPACK
/// streams and sends SETTINGS. NULL on failure.
///
/// # Safety
/// `quic` and `config` are NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_conn_new_with_transport(
    quic: *mut Conn,
    config: *mut h3::Config,
) -> *mut h3::Connection {
    guard(ptr::null_mut(), || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let (quic, config) = unsafe { (quic.as_mut(), config.as_ref()) };
        let (Some(quic), Some(config)) = (quic, config) else {
            return ptr::null_mut();
        };
        match h3::Connection::with_transport(&mut quic.conn, config) {
            Ok(h3) => Box::into_raw(Box::new(h3)),
            Err(_) => ptr::null_mut(),
        }
    })
}

/// The next event: its stream ID (and the event through `ev`, to free with
/// `quiche_h3_event_free`), or a negative `quiche_h3_error`.
///
/// # Safety
/// `conn`, `quic` and `ev` are NULL or live/writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_conn_poll(
    conn: *mut h3::Connection,
    quic: *mut Conn,
    ev: *mut *mut Event,
) -> i64 {
    guard(i64::from(H3_INVALID), || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let (conn, quic) = unsafe { (conn.as_mut(), quic.as_mut()) };
        let (Some(conn), Some(quic)) = (conn, quic) else {
            return i64::from(H3_INVALID);
        };
        if ev.is_null() {
            return i64::from(H3_INVALID);
        }
        match conn.poll(&mut quic.conn) {
            Ok((stream_id, event)) => {
                let boxed = Box::into_raw(Box::new(Event { event }));
                // SAFETY: `ev` is non-NULL and writable by contract.
                unsafe { put(ev, boxed) };
                i64::try_from(stream_id).unwrap_or(i64::MAX)
            }
            Err(e) => i64::from(h3_code(e)),
        }
    })
}

/// The kind of an event (`QUICHE_H3_EVENT_*`).
///
/// # Safety
/// `ev` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_event_type(ev: *mut Event) -> u32 {
    guard(0, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        match unsafe { ev.as_ref() }.map(|e| &e.event) {
            Some(h3::Event::Headers { .. }) | None => 0,
            Some(h3::Event::Data) => 1,
            Some(h3::Event::Finished) => 2,
            Some(h3::Event::GoAway) => 3,
            Some(h3::Event::Reset(_)) => 4,
            Some(h3::Event::PriorityUpdate) => 5,
        }
    })
}

/// Calls `cb` for each header of a HEADERS event, stopping at the first non-zero return,
/// which is returned. 0 for other events.
///
/// # Safety
/// `ev` is NULL or live; `cb` is a valid function.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_event_for_each_header(
    ev: *mut Event,
    cb: Option<unsafe extern "C" fn(*mut u8, size_t, *mut u8, size_t, *mut c_void) -> c_int>,
    argp: *mut c_void,
) -> c_int {
    guard(H3_INVALID, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let (Some(ev), Some(cb)) = (unsafe { ev.as_ref() }, cb) else {
            return H3_INVALID;
        };
        let h3::Event::Headers { list, .. } = &ev.event else {
            return 0;
        };
        for h in list {
            // quiche's prototype passes non-const pointers; C must not write through them.
            let (name, value) = (h.name(), h.value());
            // SAFETY: the callback gets pointers to bytes that live as long as the event.
            let rc = unsafe {
                cb(
                    name.as_ptr().cast_mut(),
                    name.len(),
                    value.as_ptr().cast_mut(),
                    value.len(),
                    argp,
                )
            };
            if rc != 0 {
                return rc;
            }
        }
        0
    })
}

/// Whether more frames (trailers, body) follow the headers of a HEADERS event.
///
/// # Safety
/// `ev` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_event_headers_has_more_frames(ev: *mut Event) -> bool {
    guard(false, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let ev = unsafe { ev.as_ref() };
        matches!(
            ev.map(|e| &e.event),
            Some(h3::Event::Headers {
                more_frames: true,
                ..
            })
        )
    })
}

/// Frees an event.
///
/// # Safety
/// `ev` is NULL or came from `quiche_h3_conn_poll` and is not used again.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_event_free(ev: *mut Event) {
    guard((), || {
        if !ev.is_null() {
            // SAFETY: created by Box::into_raw in quiche_h3_conn_poll, freed once.
            drop(unsafe { Box::from_raw(ev) });
        }
    })
}

/// Calls `cb` for each setting the peer sent (identifier, value), stopping at the first
/// non-zero return. `QUICHE_H3_ERR_DONE` before the peer's SETTINGS arrived.
///
/// # Safety
/// `conn` is NULL or live; `cb` is a valid function.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_for_each_setting(
    conn: *mut h3::Connection,
    cb: Option<unsafe extern "C" fn(u64, u64, *mut c_void) -> c_int>,
    argp: *mut c_void,
) -> c_int {
    guard(H3_INVALID, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let (Some(conn), Some(cb)) = (unsafe { conn.as_ref() }, cb) else {
            return H3_INVALID;
        };
        let Some(settings) = conn.peer_settings_raw() else {
            return h3_code(h3::Error::Done);
        };
        for &(id, value) in settings {
            // SAFETY: a plain call of the caller's callback.
            let rc = unsafe { cb(id, value, argp) };
            if rc != 0 {
                return rc;
            }
        }
        0
    })
}

/// Whether the peer enabled extended CONNECT (RFC 9220).
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_extended_connect_enabled_by_peer(
    conn: *mut h3::Connection,
) -> bool {
    guard(false, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let conn = unsafe { conn.as_ref() };
        conn.is_some_and(|c| c.extended_connect_enabled_by_peer())
    })
}

/// Whether the peer accepts HTTP Datagrams (RFC 9297) and the transport DATAGRAM frames.
///
/// # Safety
/// `conn` and `quic` are NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_dgram_enabled_by_peer(
    conn: *mut h3::Connection,
    quic: *mut Conn,
) -> bool {
    guard(false, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        match unsafe { (conn.as_ref(), quic.as_ref()) } {
            (Some(conn), Some(quic)) => conn.dgram_enabled_by_peer(&quic.conn),
            _ => false,
        }
    })
}

/// Sends a request's headers on a new stream; returns its ID or a negative error.
///
/// # Safety
/// `conn` and `quic` are NULL or live; `headers` holds `headers_len` valid headers.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_request(
    conn: *mut h3::Connection,
    quic: *mut Conn,
    headers: *const CHeader,
    headers_len: size_t,
    fin: bool,
) -> i64 {
    guard(i64::from(H3_INVALID), || {
        // SAFETY: NULL is checked; the header list by contract.
        let (conn, quic, list) = unsafe {
            (
                conn.as_mut(),
                quic.as_mut(),
                header_list(headers, headers_len),
            )
        };
        let (Some(conn), Some(quic), Some(list)) = (conn, quic, list) else {
            return i64::from(H3_INVALID);
        };
        match conn.send_request(&mut quic.conn, &list, fin) {
            Ok(id) => i64::try_from(id).unwrap_or(i64::MAX),
            Err(e) => i64::from(h3_code(e)),
        }
    })
}

/// Sends a response's headers on `stream_id`.
///
/// # Safety
/// `conn` and `quic` are NULL or live; `headers` holds `headers_len` valid headers.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_response(
    conn: *mut h3::Connection,
    quic: *mut Conn,
    stream_id: u64,
    headers: *const CHeader,
    headers_len: size_t,
    fin: bool,
) -> c_int {
    guard(H3_INVALID, || {
        // SAFETY: NULL is checked; the header list by contract.
        let (conn, quic, list) = unsafe {
            (
                conn.as_mut(),
                quic.as_mut(),
                header_list(headers, headers_len),
            )
        };
        let (Some(conn), Some(quic), Some(list)) = (conn, quic, list) else {
            return H3_INVALID;
        };
        h3_result(conn.send_response(&mut quic.conn, stream_id, &list, fin))
    })
}

/// Like `quiche_h3_send_response`, with the response's priority.
///
/// # Safety
/// As `quiche_h3_send_response`; `priority` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_response_with_priority(
    conn: *mut h3::Connection,
    quic: *mut Conn,
    stream_id: u64,
    headers: *const CHeader,
    headers_len: size_t,
    priority: *mut CPriority,
    fin: bool,
) -> c_int {
    guard(H3_INVALID, || {
        // SAFETY: NULL is checked; the header list and priority by contract.
        let (conn, quic, list, priority) = unsafe {
            (
                conn.as_mut(),
                quic.as_mut(),
                header_list(headers, headers_len),
                priority.as_ref(),
            )
        };
        let (Some(conn), Some(quic), Some(list), Some(p)) = (conn, quic, list, priority) else {
            return H3_INVALID;
        };
        let priority = h3::Priority::new(p.urgency, p.incremental);
        h3_result(conn.send_response_with_priority(
            &mut quic.conn,
            stream_id,
            &list,
            &priority,
            fin,
        ))
    })
}

/// Sends trailers (`is_trailer_section`) or interim (1xx) headers on `stream_id`.
///
/// # Safety
/// `conn` and `quic` are NULL or live; `headers` holds `headers_len` valid headers.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_additional_headers(
    conn: *mut h3::Connection,
    quic: *mut Conn,
    stream_id: u64,
    headers: *mut CHeader,
    headers_len: size_t,
    is_trailer_section: bool,
    fin: bool,
) -> c_int {
    guard(H3_INVALID, || {
        // SAFETY: NULL is checked; the header list by contract.
        let (conn, quic, list) = unsafe {
            (
                conn.as_mut(),
                quic.as_mut(),
                header_list(headers, headers_len),
            )
        };
        let (Some(conn), Some(quic), Some(list)) = (conn, quic, list) else {
            return H3_INVALID;
        };
        h3_result(conn.send_additional_headers(
            &mut quic.conn,
            stream_id,
            &list,
            is_trailer_section,
            fin,
        ))
    })
}

/// Sends body bytes on `stream_id`; returns how many were accepted or a negative error.
///
/// # Safety
/// `conn` and `quic` are NULL or live; `body` points to `body_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_body(
    conn: *mut h3::Connection,
    quic: *mut Conn,
    stream_id: u64,
    body: *const u8,
    body_len: size_t,
    fin: bool,
) -> ssize_t {
    guard(H3_INVALID as ssize_t, || {
        // SAFETY: NULL is checked; the buffer by contract.
        let (conn, quic, body) =
            unsafe { (conn.as_mut(), quic.as_mut(), slice_in(body, body_len)) };
        let (Some(conn), Some(quic), Some(body)) = (conn, quic, body) else {
            return H3_INVALID as ssize_t;
        };
        match conn.send_body(&mut quic.conn, stream_id, body, fin) {
            Ok(n) => len_ssize(n),
            Err(e) => h3_code_ssize(e),
        }
    })
}

/// Reads body bytes of `stream_id` into `out`; returns how many or a negative error.
///
/// # Safety
/// `conn` and `quic` are NULL or live; `out` points to `out_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_recv_body(
    conn: *mut h3::Connection,
    quic: *mut Conn,
    stream_id: u64,
    out: *mut u8,
    out_len: size_t,
) -> ssize_t {
    guard(H3_INVALID as ssize_t, || {
        // SAFETY: NULL is checked; the buffer by contract.
        let (conn, quic, out) = unsafe { (conn.as_mut(), quic.as_mut(), slice_out(out, out_len)) };
        let (Some(conn), Some(quic), Some(out)) = (conn, quic, out) else {
            return H3_INVALID as ssize_t;
        };
        match conn.recv_body(&mut quic.conn, stream_id, out) {
            Ok(n) => len_ssize(n),
            Err(e) => h3_code_ssize(e),
        }
    })
}

/// Sends GOAWAY with `id`: no request (client: push) beyond it will be processed.
///
/// # Safety
/// `conn` and `quic` are NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_goaway(
    conn: *mut h3::Connection,
    quic: *mut Conn,
    id: u64,
) -> c_int {
    guard(H3_INVALID, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let (Some(conn), Some(quic)) = (unsafe { conn.as_mut() }, unsafe { quic.as_mut() }) else {
            return H3_INVALID;
        };
        h3_result(conn.send_goaway(&mut quic.conn, id))
    })
}

/// Parses an RFC 9218 `priority` field value into `parsed`.
///
/// # Safety
/// `priority` points to `priority_len` readable bytes; `parsed` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_parse_extensible_priority(
    priority: *mut u8,
    priority_len: size_t,
    parsed: *mut CPriority,
) -> c_int {
    guard(H3_INVALID, || {
        // SAFETY: the buffer by contract.
        let Some(value) = (unsafe { slice_in(priority, priority_len) }) else {
            return H3_INVALID;
        };
        if parsed.is_null() {
            return H3_INVALID;
        }
        match h3::Priority::try_from(value) {
            Ok(p) => {
                let c = CPriority {
                    urgency: p.urgency(),
                    incremental: p.incremental(),
                };
                // SAFETY: non-NULL and writable by contract.
                unsafe { put(parsed, c) };
                0
            }
            Err(e) => h3_code(e),
        }
    })
}

/// Sends a PRIORITY_UPDATE for the request on `stream_id`.
///
/// # Safety
/// `conn` and `quic` are NULL or live; `priority` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_priority_update_for_request(
    conn: *mut h3::Connection,
    quic: *mut Conn,
    stream_id: u64,
    priority: *mut CPriority,
) -> c_int {
    guard(H3_INVALID, || {
        // SAFETY: NULL is checked; otherwise live/valid by contract.
        let (conn, quic, p) = unsafe { (conn.as_mut(), quic.as_mut(), priority.as_ref()) };
        let (Some(conn), Some(quic), Some(p)) = (conn, quic, p) else {
            return H3_INVALID;
        };
        let priority = h3::Priority::new(p.urgency, p.incremental);
        h3_result(conn.send_priority_update_for_request(&mut quic.conn, stream_id, &priority))
    })
}

/// Hands the last PRIORITY_UPDATE field value received for `prioritized_element_id` to `cb`
/// (and forgets it); `QUICHE_H3_ERR_DONE` if there is none.
///
/// # Safety
/// `conn` is NULL or live; `cb` is a valid function.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_take_last_priority_update(
    conn: *mut h3::Connection,
    prioritized_element_id: u64,
    cb: Option<unsafe extern "C" fn(*mut u8, u64, *mut c_void) -> c_int>,
    argp: *mut c_void,
) -> c_int {
    guard(H3_INVALID, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let (Some(conn), Some(cb)) = (unsafe { conn.as_mut() }, cb) else {
            return H3_INVALID;
        };
        match conn.take_last_priority_update(prioritized_element_id) {
            Ok(mut value) => {
                // SAFETY: a plain call of the caller's callback with a buffer it may read.
                unsafe { cb(value.as_mut_ptr(), value.len() as u64, argp) }
            }
            Err(e) => h3_code(e),
        }
    })
}

/// Statistics of the HTTP/3 connection.
///
/// # Safety
/// `conn` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_conn_stats(conn: *const h3::Connection, out: *mut CStats) {
    guard((), || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let Some(conn) = (unsafe { conn.as_ref() }) else {
            return;
        };
        let stats = conn.stats();
        let c = CStats {
            qpack_encoder_stream_recv_bytes: stats.qpack_encoder_stream_recv_bytes,
            qpack_decoder_stream_recv_bytes: stats.qpack_decoder_stream_recv_bytes,
        };
        // SAFETY: NULL-checked by put; writable by contract.
        unsafe { put(out, c) };
    })
}

/// Frees an HTTP/3 connection (the QUIC connection stays).
///
/// # Safety
/// `conn` is NULL or came from `quiche_h3_conn_new_with_transport` and is not used again.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_conn_free(conn: *mut h3::Connection) {
    guard((), || {
        if !conn.is_null() {
            // SAFETY: created by Box::into_raw, freed once.
            drop(unsafe { Box::from_raw(conn) });
        }
    })
}
