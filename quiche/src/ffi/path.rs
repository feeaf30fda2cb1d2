//! The connection-migration functions of the C API (quiche's `quiche_conn_probe_path`,
//! `quiche_conn_migrate`, `quiche_conn_migrate_source`, `quiche_conn_is_path_validated`,
//! `quiche_conn_send_on_path`, the path events and `quiche_conn_paths_iter`). The rules of the
//! parent module apply.
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::net::SocketAddr;

use libc::{size_t, sockaddr, sockaddr_storage, socklen_t, ssize_t};

use super::conn::{write_send_info, CSendInfo, Conn};
use super::{
    err_ssize, guard, invalid, invalid_ssize, len_ssize, slice_out, sockaddr_to_std,
    std_to_sockaddr, zeroed_storage,
};
use crate::path::{PathEvent, SocketAddrIter};

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

/// Calls `f` with the connection and the two addresses (the body of `quiche_conn_probe_path`
/// and `quiche_conn_migrate`); the sequence number it returns goes to `*seq`.
///
/// # Safety
/// As [`quiche_conn_probe_path`].
unsafe fn on_two_addresses(
    conn: *mut Conn,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    seq: *mut u64,
    f: impl FnOnce(&mut crate::Connection, SocketAddr, SocketAddr) -> crate::Result<u64>,
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
        unsafe { seq_code(f(&mut conn.conn, local, peer), seq) }
    })
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
    // SAFETY: the contract is passed on.
    unsafe {
        on_two_addresses(
            conn,
            local,
            local_len,
            peer,
            peer_len,
            seq,
            |c, local, peer| c.probe_path(local, peer),
        )
    }
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
    // SAFETY: the contract is passed on.
    unsafe {
        on_two_addresses(
            conn,
            local,
            local_len,
            peer,
            peer_len,
            seq,
            |c, local, peer| c.migrate(local, peer),
        )
    }
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
    from_len: size_t,
    to: *const sockaddr,
    to_len: size_t,
) -> c_int {
    guard(invalid(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, from, to) = unsafe {
            (
                conn.as_ref(),
                sockaddr_to_std(from, from_len),
                sockaddr_to_std(to, to_len),
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

/// The next path event (to free with `quiche_path_event_free`), or NULL.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_path_event_next(conn: *mut Conn) -> *mut PathEvent {
    guard(std::ptr::null_mut(), || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let Some(conn) = (unsafe { conn.as_mut() }) else {
            return std::ptr::null_mut();
        };
        conn.conn
            .path_event_next()
            .map_or(std::ptr::null_mut(), |e| Box::into_raw(Box::new(e)))
    })
}

/// The event's type: quiche's `enum quiche_path_event_type` (NEW 0, VALIDATED 1,
/// FAILED_VALIDATION 2, CLOSED 3, REUSED_SOURCE_CONNECTION_ID 4, PEER_MIGRATED 5,
/// PMTU_UPDATED 6); -1 for NULL.
///
/// # Safety
/// `ev` is NULL or an event from `quiche_conn_path_event_next` not freed yet.
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_type(ev: *const PathEvent) -> c_int {
    // SAFETY: NULL is checked; otherwise live by contract.
    match unsafe { ev.as_ref() } {
        Some(PathEvent::New(..)) => 0,
        Some(PathEvent::Validated(..)) => 1,
        Some(PathEvent::FailedValidation(..)) => 2,
        Some(PathEvent::Closed(..)) => 3,
        Some(PathEvent::ReusedSourceConnectionId(..)) => 4,
        Some(PathEvent::PeerMigrated(..)) => 5,
        Some(PathEvent::PmtuUpdated { .. }) => 6,
        None => -1,
    }
}

/// Writes `addr` to `out`/`out_len` when both are non-NULL.
///
/// # Safety
/// Each pointer is NULL or valid for a write.
unsafe fn put_addr(addr: &SocketAddr, out: *mut sockaddr_storage, out_len: *mut socklen_t) {
    let mut storage = zeroed_storage();
    let len = std_to_sockaddr(addr, &mut storage);
    // SAFETY: NULL is checked; otherwise valid for writes by contract.
    unsafe {
        if let (Some(out), Some(out_len)) = (out.as_mut(), out_len.as_mut()) {
            *out = storage;
            *out_len = len;
        }
    }
}

/// The two addresses of an event of the given kind, if `ev` is one.
///
/// # Safety
/// `ev` is NULL or live.
unsafe fn event_addrs(
    ev: *const PathEvent,
    want: fn(&PathEvent) -> Option<(SocketAddr, SocketAddr)>,
) -> Option<(SocketAddr, SocketAddr)> {
    // SAFETY: NULL is checked; otherwise live by contract.
    unsafe { ev.as_ref() }.and_then(want)
}

macro_rules! path_event_addrs {
    ($(#[$doc:meta] $name:ident => $variant:ident;)*) => {$(
        #[$doc]
        ///
        /// # Safety
        /// `ev` is NULL or live; the out pointers NULL or valid for writes.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            ev: *const PathEvent,
            local: *mut sockaddr_storage,
            local_len: *mut socklen_t,
            peer: *mut sockaddr_storage,
            peer_len: *mut socklen_t,
        ) {
            guard((), || {
                let want = |e: &PathEvent| match e {
                    PathEvent::$variant(l, p) => Some((*l, *p)),
                    _ => None,
                };
                // SAFETY: the contract is passed on.
                if let Some((l, p)) = unsafe { event_addrs(ev, want) } {
                    // SAFETY: the contract is passed on.
                    unsafe {
                        put_addr(&l, local, local_len);
                        put_addr(&p, peer, peer_len);
                    }
                }
            })
        }
    )*};
}

path_event_addrs! {
    /// The addresses of a NEW event (left untouched for another type).
    quiche_path_event_new => New;
    /// The addresses of a VALIDATED event.
    quiche_path_event_validated => Validated;
    /// The addresses of a FAILED_VALIDATION event.
    quiche_path_event_failed_validation => FailedValidation;
    /// The addresses of a CLOSED event.
    quiche_path_event_closed => Closed;
    /// The addresses of a PEER_MIGRATED event.
    quiche_path_event_peer_migrated => PeerMigrated;
}

/// The sequence number and both address pairs of a REUSED_SOURCE_CONNECTION_ID event (never
/// raised by this library).
///
/// # Safety
/// `ev` is NULL or live; the out pointers NULL or valid for writes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn quiche_path_event_reused_source_connection_id(
    ev: *const PathEvent,
    id: *mut u64,
    old_local: *mut sockaddr_storage,
    old_local_len: *mut socklen_t,
    old_peer: *mut sockaddr_storage,
    old_peer_len: *mut socklen_t,
    local: *mut sockaddr_storage,
    local_len: *mut socklen_t,
    peer: *mut sockaddr_storage,
    peer_len: *mut socklen_t,
) {
    guard((), || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let ev = unsafe { ev.as_ref() };
        if let Some(PathEvent::ReusedSourceConnectionId(seq, (ol, op), (l, p))) = ev {
            // SAFETY: NULL is checked; the out pointers are valid for writes by contract.
            unsafe {
                if let Some(id) = id.as_mut() {
                    *id = *seq;
                }
                put_addr(ol, old_local, old_local_len);
                put_addr(op, old_peer, old_peer_len);
                put_addr(l, local, local_len);
                put_addr(p, peer, peer_len);
            }
        }
    })
}

/// The addresses and the new path MTU of a PMTU_UPDATED event (left untouched for another
/// type).
///
/// # Safety
/// `ev` is NULL or live; the out pointers NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_pmtu_updated(
    ev: *const PathEvent,
    local: *mut sockaddr_storage,
    local_len: *mut socklen_t,
    peer: *mut sockaddr_storage,
    peer_len: *mut socklen_t,
    pmtu: *mut size_t,
) {
    guard((), || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let ev = unsafe { ev.as_ref() };
        if let Some(PathEvent::PmtuUpdated {
            local: l,
            peer: p,
            pmtu: size,
        }) = ev
        {
            // SAFETY: NULL is checked; the out pointers are valid for writes by contract.
            unsafe {
                put_addr(l, local, local_len);
                put_addr(p, peer, peer_len);
                if let Some(pmtu) = pmtu.as_mut() {
                    *pmtu = *size;
                }
            }
        }
    })
}

/// Frees an event from `quiche_conn_path_event_next` (NULL is ignored).
///
/// # Safety
/// `ev` is NULL or an event not freed yet.
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_free(ev: *mut PathEvent) {
    if !ev.is_null() {
        // SAFETY: from `Box::into_raw` in `quiche_conn_path_event_next`, not freed yet.
        drop(unsafe { Box::from_raw(ev) });
    }
}

/// The peer addresses of the paths from local address `from` (to free with
/// `quiche_socket_addr_iter_free`), or NULL on a bad argument.
///
/// # Safety
/// `conn` is NULL or live; `from` NULL or valid for `from_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_paths_iter(
    conn: *const Conn,
    from: *const sockaddr,
    from_len: size_t,
) -> *mut SocketAddrIter {
    guard(std::ptr::null_mut(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, from) = unsafe { (conn.as_ref(), sockaddr_to_std(from, from_len)) };
        let (Some(conn), Some(from)) = (conn, from) else {
            return std::ptr::null_mut();
        };
        Box::into_raw(Box::new(conn.conn.paths_iter(from)))
    })
}

/// Writes the next peer address to `peer`/`peer_len`; false when there is none.
///
/// # Safety
/// `iter` is NULL or live; the out pointers valid for writes.
#[no_mangle]
pub unsafe extern "C" fn quiche_socket_addr_iter_next(
    iter: *mut SocketAddrIter,
    peer: *mut sockaddr_storage,
    peer_len: *mut size_t,
) -> bool {
    guard(false, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let Some(iter) = (unsafe { iter.as_mut() }) else {
            return false;
        };
        if peer.is_null() || peer_len.is_null() {
            return false;
        }
        match iter.next() {
            Some(addr) => {
                let mut len: socklen_t = 0;
                // SAFETY: non-NULL (checked) and valid for writes by contract; `len` is local.
                unsafe {
                    put_addr(&addr, peer, &mut len);
                    // quiche.h declares this length a size_t (quiche 0.30's own code writes a
                    // socklen_t into it): all of the caller's size_t is written.
                    *peer_len = len as size_t;
                }
                true
            }
            None => false,
        }
    })
}

/// Frees an iterator from `quiche_conn_paths_iter` (NULL is ignored).
///
/// # Safety
/// `iter` is NULL or an iterator not freed yet.
#[no_mangle]
pub unsafe extern "C" fn quiche_socket_addr_iter_free(iter: *mut SocketAddrIter) {
    if !iter.is_null() {
        // SAFETY: from `Box::into_raw` in `quiche_conn_paths_iter`, not freed yet.
        drop(unsafe { Box::from_raw(iter) });
    }
}
