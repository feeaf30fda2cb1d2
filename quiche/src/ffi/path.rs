//! The connection-migration functions of the C API (quiche's `quiche_conn_probe_path`,
//! `quiche_conn_migrate`, `quiche_conn_migrate_source`, `quiche_conn_is_path_validated`,
//! `quiche_conn_send_on_path`). The rules of the parent module apply.
#![allow(unsafe_code)]

use std::ffi::c_int;

use libc::{size_t, sockaddr, socklen_t, ssize_t};

use super::conn::{write_send_info, CSendInfo, Conn};
use super::{err_ssize, guard, invalid, invalid_ssize, len_ssize, slice_out, sockaddr_to_std};

/// Writes `v` to `out` and returns 0, or the error's code.
///
/// # Safety
/// `out` is NULL or valid for a write of a `u64`.
unsafe fn seq_code(r: crate::Result<u64>, out: *mut u64) -> c_int {
    match r {
        Ok(seq) => {
            // SAFETY: NULL is checked; otherwise valid by contract.
            if let Some(out) = unsafe { out.as_mut() } {
                *out = seq;
            }
            0
        }
        Err(e) => e.to_c(),
    }
}

/// Starts validating the path from `local` to `peer`; the peer connection ID's sequence
/// number goes to `*seq`. 0 on success, or an error code.
///
/// # Safety
/// `conn` is NULL or live; the addresses NULL or valid for their lengths; `seq` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_probe_path(
    conn: *mut Conn,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    seq: *mut u64,
) -> c_int {
    guard(invalid(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, local, peer) = unsafe {
            (
                conn.as_mut(),
                sockaddr_to_std(local, local_len as usize),
                sockaddr_to_std(peer, peer_len as usize),
            )
        };
        let (Some(conn), Some(local), Some(peer)) = (conn, local, peer) else {
            return invalid();
        };
        // SAFETY: the contract is passed on.
        unsafe { seq_code(conn.conn.probe_path(local, peer), seq) }
    })
}

/// Moves the connection to the path from `local` to `peer` (clients); the peer connection
/// ID's sequence number goes to `*seq`. 0 on success, or an error code.
///
/// # Safety
/// As [`quiche_conn_probe_path`].
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_migrate(
    conn: *mut Conn,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    seq: *mut u64,
) -> c_int {
    guard(invalid(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, local, peer) = unsafe {
            (
                conn.as_mut(),
                sockaddr_to_std(local, local_len as usize),
                sockaddr_to_std(peer, peer_len as usize),
            )
        };
        let (Some(conn), Some(local), Some(peer)) = (conn, local, peer) else {
            return invalid();
        };
        // SAFETY: the contract is passed on.
        unsafe { seq_code(conn.conn.migrate(local, peer), seq) }
    })
}

/// Moves the connection to a new local address (clients). 0 on success, or an error code.
///
/// # Safety
/// As [`quiche_conn_probe_path`].
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_migrate_source(
    conn: *mut Conn,
    local: *const sockaddr,
    local_len: socklen_t,
    seq: *mut u64,
) -> c_int {
    guard(invalid(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, local) = unsafe { (conn.as_mut(), sockaddr_to_std(local, local_len as usize)) };
        let (Some(conn), Some(local)) = (conn, local) else {
            return invalid();
        };
        // SAFETY: the contract is passed on.
        unsafe { seq_code(conn.conn.migrate_source(local), seq) }
    })
}

/// 1 if the path from `from` to `to` is validated, 0 if not, or an error code (unknown path:
/// `QUICHE_ERR_INVALID_STATE`).
///
/// # Safety
/// `conn` is NULL or live; the addresses NULL or valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_path_validated(
    conn: *const Conn,
    from: *const sockaddr,
    from_len: socklen_t,
    to: *const sockaddr,
    to_len: socklen_t,
) -> c_int {
    guard(invalid(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, from, to) = unsafe {
            (
                conn.as_ref(),
                sockaddr_to_std(from, from_len as usize),
                sockaddr_to_std(to, to_len as usize),
            )
        };
        let (Some(conn), Some(from), Some(to)) = (conn, from, to) else {
            return invalid();
        };
        match conn.conn.is_path_validated(from, to) {
            Ok(v) => c_int::from(v),
            Err(e) => e.to_c(),
        }
    })
}

/// Like `quiche_conn_send`, for a path whose local address is `from` and peer address `to`
/// (either NULL: any).
///
/// # Safety
/// As `quiche_conn_send`; the addresses NULL or valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send_on_path(
    conn: *mut Conn,
    out: *mut u8,
    out_len: size_t,
    from: *const sockaddr,
    from_len: socklen_t,
    to: *const sockaddr,
    to_len: socklen_t,
    out_info: *mut CSendInfo,
) -> ssize_t {
    guard(invalid_ssize(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, out) = unsafe { (conn.as_mut(), slice_out(out, out_len)) };
        let (Some(conn), Some(out)) = (conn, out) else {
            return invalid_ssize();
        };
        if out_info.is_null() {
            return invalid_ssize();
        }
        // SAFETY: NULL means "any"; otherwise valid for their lengths by contract.
        let (from_addr, to_addr) = unsafe {
            (
                sockaddr_to_std(from, from_len as usize),
                sockaddr_to_std(to, to_len as usize),
            )
        };
        if (!from.is_null() && from_addr.is_none()) || (!to.is_null() && to_addr.is_none()) {
            return invalid_ssize();
        }
        match conn.conn.send_on_path(out, from_addr, to_addr) {
            Ok((n, info)) => {
                // SAFETY: `out_info` is non-NULL (checked) and valid by contract.
                unsafe { write_send_info(out_info, &info) };
                len_ssize(n)
            }
            Err(e) => err_ssize(e),
        }
    })
}
