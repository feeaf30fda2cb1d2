//! Key logs and qlog traces written to file descriptors the application opened
//! (`quiche_conn_set_keylog_fd`, `quiche_conn_set_qlog_fd`; curl hands its qlog file over this
//! way). The connection takes the descriptor over and closes it when it is done with it. The
//! rules of the parent module apply.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int};
use std::fs::File;
use std::os::fd::FromRawFd;

use super::conn::Conn;
use super::{c_str, guard};

/// The file behind `fd`, owned from now on; `None` for a negative descriptor.
///
/// # Safety
/// `fd` is negative or an open descriptor that nothing else closes.
unsafe fn take_fd(fd: c_int) -> Option<File> {
    if fd < 0 {
        return None;
    }
    // SAFETY: an open descriptor whose ownership the caller hands over.
    Some(unsafe { File::from_raw_fd(fd) })
}

/// Writes the connection's TLS key log (`SSLKEYLOGFILE` format) to `fd`, which the connection
/// now owns.
///
/// # Safety
/// `conn` is NULL or live; `fd` is negative or an open descriptor handed over to the library.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_set_keylog_fd(conn: *mut Conn, fd: c_int) {
    guard((), || {
        // SAFETY: NULL is checked; otherwise live by contract.
        let Some(conn) = (unsafe { conn.as_mut() }) else {
            return;
        };
        // SAFETY: the contract is passed on.
        if let Some(file) = unsafe { take_fd(fd) } {
            conn.conn.set_keylog(Box::new(file));
        }
    })
}

/// Writes the connection's qlog (JSON-SEQ, qlog 0.3) to `fd`, which the connection now owns,
/// with the given trace title and description. Without the `qlog` feature the descriptor is
/// closed and nothing is written.
///
/// # Safety
/// `conn` is NULL or live; `fd` is negative or an open descriptor handed over to the library;
/// the strings are NULL or C strings.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_set_qlog_fd(
    conn: *mut Conn,
    fd: c_int,
    log_title: *const c_char,
    log_desc: *const c_char,
) {
    guard((), || {
        // SAFETY: the contract is passed on; a descriptor is owned (and closed on every early
        // return) from here.
        let file = unsafe { take_fd(fd) };
        // SAFETY: NULL is checked; otherwise valid by contract.
        let args = unsafe { (conn.as_mut(), c_str(log_title), c_str(log_desc)) };
        let (Some(conn), Some(file), Some(title), Some(desc)) = (args.0, file, args.1, args.2)
        else {
            return;
        };
        set_qlog(conn, file, title, desc);
    })
}

#[cfg(feature = "qlog")]
fn set_qlog(conn: &mut Conn, file: File, title: &str, desc: &str) {
    let writer = std::io::BufWriter::new(file);
    conn.conn
        .set_qlog(Box::new(writer), title.to_string(), desc.to_string());
}

#[cfg(not(feature = "qlog"))]
fn set_qlog(_: &mut Conn, _: File, _: &str, _: &str) {}
