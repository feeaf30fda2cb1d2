//! Ack-eliciting packets on demand and per-path send quanta in the C API
//! (`quiche_conn_send_ack_eliciting`, which curl's configure step looks for,
//! `quiche_conn_send_ack_eliciting_on_path`, `quiche_conn_send_quantum_on_path`). The rules of
//! the parent module apply.
#![allow(unsafe_code)]

use libc::{size_t, sockaddr, socklen_t, ssize_t};

use super::conn::Conn;
use super::{err_ssize, guard, invalid_ssize, sockaddr_to_std};

/// Makes the next packet on the active path ack-eliciting (a PING if nothing else is). 0, or
/// an error code.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send_ack_eliciting(conn: *mut Conn) -> ssize_t {
    guard(invalid_ssize(), || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let Some(conn) = (unsafe { conn.as_mut() }) else {
            return invalid_ssize();
        };
        match conn.conn.send_ack_eliciting() {
            Ok(()) => 0,
            Err(e) => err_ssize(e),
        }
    })
}

/// As `quiche_conn_send_ack_eliciting`, on the path from `local` to `peer`;
/// `QUICHE_ERR_INVALID_STATE` if the connection has no such path.
///
/// # Safety
/// `conn` is NULL or live; the addresses NULL or valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send_ack_eliciting_on_path(
    conn: *mut Conn,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
) -> ssize_t {
    guard(invalid_ssize(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let args = unsafe {
            (
                conn.as_mut(),
                sockaddr_to_std(local, local_len as usize),
                sockaddr_to_std(peer, peer_len as usize),
            )
        };
        let (Some(conn), Some(local), Some(peer)) = args else {
            return invalid_ssize();
        };
        match conn.conn.send_ack_eliciting_on_path(local, peer) {
            Ok(()) => 0,
            Err(e) => err_ssize(e),
        }
    })
}

/// The send quantum on the path from `local_addr` to `peer_addr`, in bytes; 0 for a path the
/// connection does not have (and for invalid arguments).
///
/// # Safety
/// `conn` is NULL or live; the addresses NULL or valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send_quantum_on_path(
    conn: *const Conn,
    local_addr: *const sockaddr,
    local_len: socklen_t,
    peer_addr: *const sockaddr,
    peer_len: socklen_t,
) -> size_t {
    guard(0, || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let args = unsafe {
            (
                conn.as_ref(),
                sockaddr_to_std(local_addr, local_len as usize),
                sockaddr_to_std(peer_addr, peer_len as usize),
            )
        };
        let (Some(conn), Some(local), Some(peer)) = args else {
            return 0;
        };
        conn.conn.send_quantum_on_path(local, peer)
    })
}
