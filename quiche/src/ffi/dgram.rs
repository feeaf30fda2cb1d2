//! The DATAGRAM functions of the C API (RFC 9221). The rules of the parent module apply.
#![allow(unsafe_code)]

use libc::{size_t, ssize_t};

use super::conn::Conn;
use super::{err_ssize, guard, invalid_ssize, len_ssize, slice_in, slice_out};
use crate::error::Error;

/// Runs `f` on the connection, or returns `fallback` if it is NULL or panics.
///
/// # Safety
/// `conn` is NULL or a live connection not used elsewhere during the call.
unsafe fn on_conn<T>(conn: *mut Conn, fallback: T, f: impl FnOnce(&mut Conn) -> T) -> T {
    // SAFETY: NULL is checked by `as_mut`; otherwise live and unaliased by contract.
    match unsafe { conn.as_mut() } {
        Some(conn) => guard(fallback, || f(conn)),
        None => fallback,
    }
}

/// Runs `f` on a live connection it only reads; `fallback` for NULL or a panic.
///
/// # Safety
/// `conn` is NULL or live.
unsafe fn on_conn_ref<T>(conn: *const Conn, fallback: T, f: impl FnOnce(&Conn) -> T) -> T {
    // SAFETY: NULL is checked by `as_ref`; otherwise live by contract.
    match unsafe { conn.as_ref() } {
        Some(conn) => guard(fallback, || f(conn)),
        None => fallback,
    }
}

/// A length the Rust API reports as optional: `QUICHE_ERR_DONE` when there is none.
fn optional_len(v: Option<usize>) -> ssize_t {
    v.map_or(err_ssize(Error::Done), len_ssize)
}

/// The largest datagram `quiche_conn_dgram_send` accepts now; `QUICHE_ERR_DONE` until the
/// peer has said it accepts datagrams.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_max_writable_len(conn: *const Conn) -> ssize_t {
    // SAFETY: the contract is passed on.
    unsafe {
        on_conn_ref(conn, invalid_ssize(), |c| {
            optional_len(c.conn.dgram_max_writable_len())
        })
    }
}

/// The length of the oldest received datagram; `QUICHE_ERR_DONE` when none is queued.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_recv_front_len(conn: *const Conn) -> ssize_t {
    // SAFETY: the contract is passed on.
    unsafe {
        on_conn_ref(conn, invalid_ssize(), |c| {
            optional_len(c.conn.dgram_recv_front_len())
        })
    }
}

/// Defines an exported queue-size query returning `ssize_t`.
macro_rules! dgram_size {
    ($(#[$doc:meta])* $name:ident => $method:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `conn` is NULL or live.
        #[no_mangle]
        pub unsafe extern "C" fn $name(conn: *const Conn) -> ssize_t {
            // SAFETY: the contract is passed on.
            unsafe { on_conn_ref(conn, invalid_ssize(), |c| len_ssize(c.conn.$method())) }
        }
    };
}

dgram_size!(
    /// Received datagrams waiting to be read.
    quiche_conn_dgram_recv_queue_len => dgram_recv_queue_len
);
dgram_size!(
    /// Bytes of the received datagrams waiting to be read.
    quiche_conn_dgram_recv_queue_byte_size => dgram_recv_queue_byte_size
);
dgram_size!(
    /// Datagrams waiting to be sent.
    quiche_conn_dgram_send_queue_len => dgram_send_queue_len
);
dgram_size!(
    /// Bytes of the datagrams waiting to be sent.
    quiche_conn_dgram_send_queue_byte_size => dgram_send_queue_byte_size
);

/// Whether the send queue is full.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_dgram_send_queue_full(conn: *const Conn) -> bool {
    // SAFETY: the contract is passed on.
    unsafe { on_conn_ref(conn, false, |c| c.conn.is_dgram_send_queue_full()) }
}

/// Whether the receive queue is full.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_dgram_recv_queue_full(conn: *const Conn) -> bool {
    // SAFETY: the contract is passed on.
    unsafe { on_conn_ref(conn, false, |c| c.conn.is_dgram_recv_queue_full()) }
}

/// Reads the oldest received datagram into `buf`: its length, `QUICHE_ERR_DONE` when none is
/// queued, `QUICHE_ERR_BUFFER_TOO_SHORT` (it stays queued) when `buf` is too small.
///
/// # Safety
/// `conn` is NULL or live; `buf` NULL or `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_recv(
    conn: *mut Conn,
    buf: *mut u8,
    buf_len: size_t,
) -> ssize_t {
    // SAFETY: NULL is checked; otherwise valid by contract.
    let Some(buf) = (unsafe { slice_out(buf, buf_len) }) else {
        return invalid_ssize();
    };
    // SAFETY: the contract is passed on.
    unsafe {
        on_conn(conn, invalid_ssize(), |c| match c.conn.dgram_recv(buf) {
            Ok(n) => len_ssize(n),
            Err(e) => err_ssize(e),
        })
    }
}

/// Queues a datagram to send: its length, or an error (`QUICHE_ERR_DONE` when the send queue
/// is full, `QUICHE_ERR_INVALID_STATE` when the peer does not accept datagrams).
///
/// # Safety
/// `conn` is NULL or live; `buf` NULL or `buf_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_send(
    conn: *mut Conn,
    buf: *const u8,
    buf_len: size_t,
) -> ssize_t {
    // SAFETY: NULL is checked; otherwise valid by contract.
    let Some(buf) = (unsafe { slice_in(buf, buf_len) }) else {
        return invalid_ssize();
    };
    // SAFETY: the contract is passed on.
    unsafe {
        on_conn(conn, invalid_ssize(), |c| match c.conn.dgram_send(buf) {
            Ok(()) => len_ssize(buf.len()),
            Err(e) => err_ssize(e),
        })
    }
}

/// Removes the queued outgoing datagrams for which `f` returns true. `f` sees each payload
/// and must not modify it.
///
/// # Safety
/// `conn` is NULL or live; `f` is NULL or a function that reads at most `len` bytes at the
/// pointer it is given and does not keep the pointer.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_purge_outgoing(
    conn: *mut Conn,
    f: Option<unsafe extern "C" fn(*mut u8, size_t) -> bool>,
) {
    let Some(f) = f else {
        return;
    };
    let purge = |c: &mut Conn| {
        c.conn.dgram_purge_outgoing(|d: &[u8]| {
            // SAFETY: `d` is valid for `d.len()` reads during the call; the callback only reads
            // (its contract), so handing out a `*mut` to shared bytes is sound.
            unsafe { f(d.as_ptr().cast_mut(), d.len()) }
        });
    };
    // SAFETY: the contract is passed on.
    unsafe { on_conn(conn, (), purge) }
}
