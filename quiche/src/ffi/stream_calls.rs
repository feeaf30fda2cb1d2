//! The one-shot stream events and the readability query of the C API
//! (`quiche_conn_stream_readable_next`, `quiche_conn_stream_writable_next`,
//! `quiche_conn_is_readable`). The rules of the parent module apply.
#![allow(unsafe_code)]

use super::conn::Conn;
use super::guard;

/// A stream ID as the C API returns it: -1 for none (IDs stay below 2^62, so they fit).
fn id_or_minus_one(id: Option<u64>) -> i64 {
    id.and_then(|id| i64::try_from(id).ok()).unwrap_or(-1)
}

/// The next stream with something to read that was not returned since (see the Rust
/// `stream_readable_next`), or -1.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_readable_next(conn: *mut Conn) -> i64 {
    guard(-1, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let Some(conn) = (unsafe { conn.as_mut() }) else {
            return -1;
        };
        id_or_minus_one(conn.conn.stream_readable_next())
    })
}

/// The next stream that can take data and was not returned since (see the Rust
/// `stream_writable_next`), or -1.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_writable_next(conn: *mut Conn) -> i64 {
    guard(-1, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let Some(conn) = (unsafe { conn.as_mut() }) else {
            return -1;
        };
        id_or_minus_one(conn.conn.stream_writable_next())
    })
}

/// Whether a stream has data to read or a datagram waits to be read.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_readable(conn: *const Conn) -> bool {
    guard(false, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        unsafe { conn.as_ref() }.is_some_and(|c| c.conn.is_readable())
    })
}
