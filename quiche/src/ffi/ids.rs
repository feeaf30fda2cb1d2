//! Connection-ID management in the C API: IDs the application supplies
//! (`quiche_conn_new_scid`), retiring the peer's (`quiche_conn_retire_dcid`), the counts, and
//! `quiche_connection_id_iter` over our active IDs or the ones the peer retired. The rules of
//! the parent module apply.
#![allow(unsafe_code)]

use std::ffi::c_int;

use libc::size_t;

use super::conn::Conn;
use super::{guard, invalid, lend, put, slice_in};
use crate::packet::ConnectionId;

/// What a `quiche_connection_id_iter *` points to: copies of the IDs, lent out one by one.
pub struct ConnectionIdIter {
    ids: Vec<ConnectionId<'static>>,
    next: usize,
}

fn new_iter(ids: Vec<ConnectionId<'static>>) -> *mut ConnectionIdIter {
    Box::into_raw(Box::new(ConnectionIdIter { ids, next: 0 }))
}

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

/// Adds `scid` (with its 16-byte stateless reset token) as an ID of ours and announces it;
/// its sequence number goes to `*scid_seq`. 0, or an error code (`QUICHE_ERR_ID_LIMIT` when the
/// peer stores no more and `retire_if_needed` is false).
///
/// # Safety
/// `conn` is NULL or live; `scid` NULL or `scid_len` bytes; `reset_token` NULL or 16 bytes;
/// `scid_seq` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_new_scid(
    conn: *mut Conn,
    scid: *const u8,
    scid_len: size_t,
    reset_token: *const u8,
    retire_if_needed: bool,
    scid_seq: *mut u64,
) -> c_int {
    // SAFETY: NULL and lengths are checked; otherwise valid by contract.
    let (scid, token) = unsafe { (slice_in(scid, scid_len), slice_in(reset_token, 16)) };
    let (Some(scid), Some(token)) = (scid, token) else {
        return invalid();
    };
    let Ok(token) = <[u8; 16]>::try_from(token) else {
        return invalid();
    };
    let add = |c: &mut Conn| {
        let cid = ConnectionId::from_ref(scid);
        match c
            .conn
            .new_scid(&cid, u128::from_be_bytes(token), retire_if_needed)
        {
            Ok(seq) => {
                // SAFETY: NULL is checked; otherwise writable by contract.
                unsafe { put(scid_seq, seq) };
                0
            }
            Err(e) => e.to_c(),
        }
    };
    // SAFETY: the contract is passed on.
    unsafe { on_conn(conn, invalid(), add) }
}

/// Retires the peer's connection ID `dcid_seq` (see the Rust `retire_dcid`). 0, or an error
/// code.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_retire_dcid(conn: *mut Conn, dcid_seq: u64) -> c_int {
    // SAFETY: the contract is passed on.
    unsafe {
        on_conn(conn, invalid(), |c| match c.conn.retire_dcid(dcid_seq) {
            Ok(()) => 0,
            Err(e) => e.to_c(),
        })
    }
}

/// How many more of our IDs the peer stores (0 for NULL).
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_scids_left(conn: *mut Conn) -> size_t {
    // SAFETY: the contract is passed on.
    unsafe { on_conn(conn, 0, |c| c.conn.scids_left()) }
}

/// How many of our IDs are active (0 for NULL).
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_active_scids(conn: *mut Conn) -> size_t {
    // SAFETY: the contract is passed on.
    unsafe { on_conn(conn, 0, |c| c.conn.active_scids()) }
}

/// How many of the peer's IDs we hold (0 for NULL).
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_available_dcids(conn: *const Conn) -> size_t {
    guard(0, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        unsafe { conn.as_ref() }.map_or(0, |c| c.conn.available_dcids())
    })
}

/// How many of our IDs the peer retired that were not taken yet (0 for NULL).
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_retired_scids(conn: *const Conn) -> size_t {
    guard(0, || {
        // SAFETY: NULL is checked; otherwise live by contract.
        unsafe { conn.as_ref() }.map_or(0, |c| c.conn.retired_scids())
    })
}

/// Takes every ID of ours the peer retired (to stop routing them) into a new iterator; NULL
/// for NULL. Free it with `quiche_connection_id_iter_free`.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_retired_scid_iter(conn: *mut Conn) -> *mut ConnectionIdIter {
    // SAFETY: the contract is passed on.
    unsafe {
        on_conn(conn, std::ptr::null_mut(), |c| {
            new_iter(std::iter::from_fn(|| c.conn.retired_scid_next()).collect())
        })
    }
}

/// Our active IDs in a new iterator; NULL for NULL. Free it with
/// `quiche_connection_id_iter_free`.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_source_ids(conn: *mut Conn) -> *mut ConnectionIdIter {
    // SAFETY: the contract is passed on.
    unsafe {
        on_conn(conn, std::ptr::null_mut(), |c| {
            new_iter(c.conn.source_ids().cloned().collect())
        })
    }
}

/// Lends the next ID through `out`/`out_len` (valid until the iterator is freed); false when
/// there is none left or an argument is NULL.
///
/// # Safety
/// `iter` is NULL or live; `out` and `out_len` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_connection_id_iter_next(
    iter: *mut ConnectionIdIter,
    out: *mut *const u8,
    out_len: *mut size_t,
) -> bool {
    guard(false, || {
        // SAFETY: NULL is checked; otherwise live and unaliased by contract.
        let Some(iter) = (unsafe { iter.as_mut() }) else {
            return false;
        };
        if out.is_null() || out_len.is_null() {
            return false;
        }
        let Some(id) = iter.ids.get(iter.next) else {
            return false;
        };
        iter.next += 1;
        // SAFETY: both checked non-NULL, writable by contract; the bytes live as long as the
        // iterator.
        unsafe { lend(id, out, out_len) };
        true
    })
}

/// Frees an iterator (NULL is ignored).
///
/// # Safety
/// `iter` is NULL or a live iterator, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn quiche_connection_id_iter_free(iter: *mut ConnectionIdIter) {
    if !iter.is_null() {
        // SAFETY: created by `Box::into_raw` in this module and not freed before (contract).
        drop(unsafe { Box::from_raw(iter) });
    }
}
