//! The C API's tuning calls beyond the examples' core: the configuration setters of
//! `config/tuning.rs` (`quiche_config_set_max_amplification_factor` and its siblings),
//! `quiche_conn_set_max_idle_timeout`, and quiche's varint helpers
//! (`quiche_put_varint`, `quiche_get_varint`, RFC 9000 §16). The rules of the parent module
//! apply.
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::slice;

use libc::{size_t, ssize_t};

use super::conn::Conn;
use super::{code, err_ssize, guard, invalid, invalid_ssize, len_ssize};
use crate::config::Config;
use crate::error::Error;

config_setter!(
    /// Bytes sent per byte received from an unvalidated address, at most (default 3).
    quiche_config_set_max_amplification_factor => |c, v: size_t| c.set_max_amplification_factor(v)
);
config_setter!(
    /// Caps the pacing rate, in bytes per second.
    quiche_config_set_max_pacing_rate => |c, v: u64| c.set_max_pacing_rate(v)
);
config_setter!(
    /// Whether a new path needs a connection ID of the peer's not used on another path.
    quiche_config_set_disable_dcid_reuse => |c, v: bool| c.set_disable_dcid_reuse(v)
);
config_setter!(
    /// Beyond quiche's API: whether connections issue and replace their own connection IDs.
    quiche_config_enable_automatic_connection_ids =>
        |c, v: bool| c.enable_automatic_connection_ids(v)
);
config_setter!(
    /// Whether CUBIC measures idle periods from when the sender ran out of data.
    quiche_config_set_enable_cubic_idle_restart_fix =>
        |c, v: bool| c.set_enable_cubic_idle_restart_fix(v)
);
config_setter!(
    /// Kept for quiche's API: does nothing (the connection window always starts at
    /// `initial_max_data`, as in quiche 0.30).
    quiche_config_set_use_initial_max_data_as_flow_control_win => |c, v: bool| {
        #[allow(deprecated)]
        c.set_use_initial_max_data_as_flow_control_win(v)
    }
);

/// Sets our `max_idle_timeout` (milliseconds) on a connection that has sent and received
/// nothing yet. 0, or an error code.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_set_max_idle_timeout(conn: *mut Conn, v: u64) -> c_int {
    guard(invalid(), || {
        // SAFETY: NULL is checked; otherwise live by contract.
        match unsafe { conn.as_mut() } {
            Some(conn) => code(conn.conn.set_max_idle_timeout(v)),
            None => invalid(),
        }
    })
}

/// Writes `val` as a QUIC varint into `buf`: 0, or `QUICHE_ERR_BUFFER_TOO_SHORT` (also for a
/// value over 2^62 - 1).
///
/// # Safety
/// `buf` is NULL or writable for `buf_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_put_varint(buf: *mut u8, buf_len: size_t, val: u64) -> c_int {
    guard(invalid(), || {
        if buf.is_null() {
            return invalid();
        }
        // SAFETY: non-NULL and writable for `buf_len` bytes by contract.
        let out = unsafe { slice::from_raw_parts_mut(buf, buf_len) };
        if val > octets::MAX_VAR_INT {
            return Error::BufferTooShort.to_c();
        }
        match octets::OctetsMut::with_slice(out).put_varint(val) {
            Ok(_) => 0,
            Err(_) => Error::BufferTooShort.to_c(),
        }
    })
}

/// Reads a QUIC varint from `buf` into `*val`: its length on the wire, or
/// `QUICHE_ERR_BUFFER_TOO_SHORT`.
///
/// # Safety
/// `buf` is NULL or readable for `buf_len` bytes; `val` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_get_varint(
    buf: *const u8,
    buf_len: size_t,
    val: *mut u64,
) -> ssize_t {
    guard(invalid_ssize(), || {
        if buf.is_null() || val.is_null() {
            return invalid_ssize();
        }
        // SAFETY: non-NULL and readable for `buf_len` bytes by contract.
        let input = unsafe { slice::from_raw_parts(buf, buf_len) };
        let mut b = octets::Octets::with_slice(input);
        match b.get_varint() {
            Ok(v) => {
                // SAFETY: non-NULL and writable by contract.
                unsafe { *val = v };
                len_ssize(b.off())
            }
            Err(_) => err_ssize(Error::BufferTooShort),
        }
    })
}
