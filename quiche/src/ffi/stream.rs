//! The stream functions of the C API: reading and writing stream data, priorities, shutdown,
//! capacity, and the readable and writable iterators. The rules of the parent module apply.
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::ptr;

use libc::{size_t, ssize_t};

use super::conn::{with_conn, with_conn_mut, Conn};
use super::{code, err_ssize, guard, invalid, invalid_ssize, len_ssize, put, slice_in, slice_out};
use crate::error::Error;
use crate::stream::{Shutdown, StreamIter};

/// Reads stream data into `out`: the bytes read, with `*fin` set when the stream ended. When
/// the peer reset the stream, its error code goes to `*out_error_code` (if not NULL).
///
/// # Safety
/// `conn` is NULL or live; `out` NULL or `buf_len` writable bytes; `fin` and
/// `out_error_code` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_recv(
    conn: *mut Conn,
    stream_id: u64,
    out: *mut u8,
    buf_len: size_t,
    fin: *mut bool,
    out_error_code: *mut u64,
) -> ssize_t {
    guard(invalid_ssize(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, out) = unsafe { (conn.as_mut(), slice_out(out, buf_len)) };
        let (Some(conn), Some(out)) = (conn, out) else {
            return invalid_ssize();
        };
        if fin.is_null() {
            return invalid_ssize();
        }
        match conn.conn.stream_recv(stream_id, out) {
            Ok((n, f)) => {
                // SAFETY: `fin` is non-NULL (checked) and writable by contract.
                unsafe { put(fin, f) };
                len_ssize(n)
            }
            // SAFETY: NULL or writable by contract.
            Err(e) => unsafe { stream_err_ssize(e, out_error_code) },
        }
    })
}

/// A stream error as `ssize_t`; the peer's application error code of a reset or stopped stream
/// also goes to `*out_error_code`.
///
/// # Safety
/// `out_error_code` is NULL or writable.
unsafe fn stream_err_ssize(e: Error, out_error_code: *mut u64) -> ssize_t {
    if let Error::StreamReset(app) | Error::StreamStopped(app) = e {
        // SAFETY: NULL or writable by the caller's contract; `put` checks NULL.
        unsafe { put(out_error_code, app) };
    }
    err_ssize(e)
}

/// Writes stream data: the bytes accepted (possibly fewer than `buf_len`: write the rest
/// later). When the peer stopped the stream, its error code goes to `*out_error_code` (if not
/// NULL).
///
/// # Safety
/// `conn` is NULL or live; `buf` NULL or `buf_len` bytes; `out_error_code` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_send(
    conn: *mut Conn,
    stream_id: u64,
    buf: *const u8,
    buf_len: size_t,
    fin: bool,
    out_error_code: *mut u64,
) -> ssize_t {
    guard(invalid_ssize(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, buf) = unsafe { (conn.as_mut(), slice_in(buf, buf_len)) };
        let (Some(conn), Some(buf)) = (conn, buf) else {
            return invalid_ssize();
        };
        match conn.conn.stream_send(stream_id, buf, fin) {
            Ok(n) => len_ssize(n),
            // SAFETY: NULL or writable by contract.
            Err(e) => unsafe { stream_err_ssize(e, out_error_code) },
        }
    })
}

/// Sets a stream's priority (urgency 0-7, lower first; incremental or not).
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_priority(
    conn: *mut Conn,
    stream_id: u64,
    urgency: u8,
    incremental: bool,
) -> c_int {
    // SAFETY: the contract is passed on.
    unsafe {
        with_conn_mut(conn, invalid(), |c| {
            code(c.conn.stream_priority(stream_id, urgency, incremental))
        })
    }
}

/// Shuts a stream down for reading (0) or writing (1), with the application error `err`.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_shutdown(
    conn: *mut Conn,
    stream_id: u64,
    direction: c_int,
    err: u64,
) -> c_int {
    let direction = match direction {
        0 => Shutdown::Read,
        1 => Shutdown::Write,
        _ => return invalid(),
    };
    // SAFETY: the contract is passed on.
    unsafe {
        with_conn_mut(conn, invalid(), |c| {
            code(c.conn.stream_shutdown(stream_id, direction, err))
        })
    }
}

/// How many bytes `quiche_conn_stream_send` would accept on the stream now.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_capacity(conn: *const Conn, stream_id: u64) -> ssize_t {
    // SAFETY: the contract is passed on.
    unsafe {
        with_conn(conn, invalid_ssize(), |c| {
            match c.conn.stream_capacity(stream_id) {
                Ok(n) => len_ssize(n),
                Err(e) => err_ssize(e),
            }
        })
    }
}

/// Whether `len` bytes can be written to the stream now: 1, 0 or a negative error. On 0, `len`
/// becomes the low-water mark `quiche_conn_stream_writable_next` waits for.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_writable(
    conn: *mut Conn,
    stream_id: u64,
    len: size_t,
) -> c_int {
    // SAFETY: the contract is passed on.
    unsafe {
        with_conn_mut(conn, invalid(), |c| {
            match c.conn.stream_writable(stream_id, len) {
                Ok(w) => c_int::from(w),
                Err(e) => e.to_c(),
            }
        })
    }
}

/// Whether the stream has data (or its end) to read.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_readable(conn: *const Conn, stream_id: u64) -> bool {
    // SAFETY: the contract is passed on.
    unsafe { with_conn(conn, false, |c| c.conn.stream_readable(stream_id)) }
}

/// Whether all of the stream's data, and its end, were read.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_finished(conn: *const Conn, stream_id: u64) -> bool {
    // SAFETY: the contract is passed on.
    unsafe { with_conn(conn, false, |c| c.conn.stream_finished(stream_id)) }
}

/// Boxes a stream iterator for C.
fn new_iter(iter: StreamIter) -> *mut StreamIter {
    Box::into_raw(Box::new(iter))
}

/// The streams with data to read, as an iterator to free with `quiche_stream_iter_free`.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_readable(conn: *const Conn) -> *mut StreamIter {
    // SAFETY: the contract is passed on.
    unsafe { with_conn(conn, ptr::null_mut(), |c| new_iter(c.conn.readable())) }
}

/// The streams that accept data, as an iterator to free with `quiche_stream_iter_free`.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_writable(conn: *const Conn) -> *mut StreamIter {
    // SAFETY: the contract is passed on.
    unsafe { with_conn(conn, ptr::null_mut(), |c| new_iter(c.conn.writable())) }
}

/// Takes the next stream ID from the iterator; false when there is none.
///
/// # Safety
/// `iter` is NULL or live; `stream_id` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_stream_iter_next(
    iter: *mut StreamIter,
    stream_id: *mut u64,
) -> bool {
    guard(false, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let Some(iter) = (unsafe { iter.as_mut() }) else {
            return false;
        };
        if stream_id.is_null() {
            return false;
        }
        match iter.next() {
            // SAFETY: non-NULL (checked) and writable by contract.
            Some(id) => unsafe { put(stream_id, id) },
            None => false,
        }
    })
}

/// Frees a stream iterator (NULL is ignored).
///
/// # Safety
/// `iter` is NULL or from `quiche_conn_readable`/`quiche_conn_writable`, freed once.
#[no_mangle]
pub unsafe extern "C" fn quiche_stream_iter_free(iter: *mut StreamIter) {
    guard((), || {
        if !iter.is_null() {
            // SAFETY: from `Box::into_raw` in `new_iter`, freed once by contract.
            drop(unsafe { Box::from_raw(iter) });
        }
    })
}
