//! The connection functions of the C API: creating connections, moving datagrams and stream
//! data, timers, state queries and statistics. The rules of the parent module apply.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int};
use std::fs::OpenOptions;
use std::ptr;

use libc::{size_t, sockaddr, sockaddr_storage, socklen_t, ssize_t, timespec};

use super::{
    c_str, code, err_ssize, guard, instant_to_timespec, invalid, invalid_ssize, len_ssize, lend,
    put, slice_in, slice_out, sockaddr_to_std, std_to_sockaddr, zeroed_storage,
};
use crate::config::Config;
use crate::connection::{Connection, ConnectionError, RecvInfo};
use crate::packet::ConnectionId;

/// What a `quiche_conn *` points to: the connection (a struct of its own, so that values the
/// C API lends out by pointer have a place to live should the Rust API return one by value).
pub struct Conn {
    pub(super) conn: Connection,
}

/// Boxes a new connection for C.
pub(super) fn new_conn(conn: crate::Result<Connection>) -> *mut Conn {
    match conn {
        Ok(conn) => Box::into_raw(Box::new(Conn { conn })),
        Err(e) => {
            log::debug!("creating a connection failed: {e:?}");
            ptr::null_mut()
        }
    }
}

/// Creates a server-side connection; `odcid` (may be NULL with length 0) is the original
/// Destination Connection ID when the client came back after a Retry.
///
/// # Safety
/// Buffers and addresses are NULL or valid for their lengths; `config` is NULL or live.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn quiche_accept(
    scid: *const u8,
    scid_len: size_t,
    odcid: *const u8,
    odcid_len: size_t,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    config: *mut Config,
) -> *mut Conn {
    guard(ptr::null_mut(), || {
        // SAFETY: NULL is checked; otherwise valid for the given lengths by contract.
        let args = unsafe {
            (
                slice_in(scid, scid_len),
                slice_in(odcid, odcid_len),
                sockaddr_to_std(local, local_len as usize),
                sockaddr_to_std(peer, peer_len as usize),
                config.as_mut(),
            )
        };
        let (Some(scid), Some(odcid), Some(local), Some(peer), Some(config)) = args else {
            return ptr::null_mut();
        };
        let scid = ConnectionId::from_ref(scid);
        let odcid = (!odcid.is_empty()).then(|| ConnectionId::from_ref(odcid));
        new_conn(crate::accept(&scid, odcid.as_ref(), local, peer, config))
    })
}

/// Creates a client-side connection; `server_name` (SNI and certificate name) may be NULL.
///
/// # Safety
/// `server_name` is NULL or a C string; the rest as for [`quiche_accept`].
#[no_mangle]
pub unsafe extern "C" fn quiche_connect(
    server_name: *const c_char,
    scid: *const u8,
    scid_len: size_t,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    config: *mut Config,
) -> *mut Conn {
    guard(ptr::null_mut(), || {
        // SAFETY: NULL is checked; otherwise valid for the given lengths by contract.
        let args = unsafe {
            (
                slice_in(scid, scid_len),
                sockaddr_to_std(local, local_len as usize),
                sockaddr_to_std(peer, peer_len as usize),
                config.as_mut(),
            )
        };
        let (Some(scid), Some(local), Some(peer), Some(config)) = args else {
            return ptr::null_mut();
        };
        let name = if server_name.is_null() {
            None
        } else {
            // SAFETY: non-NULL, so a C string by contract.
            match unsafe { c_str(server_name) } {
                Some(name) => Some(name),
                None => return ptr::null_mut(),
            }
        };
        let scid = ConnectionId::from_ref(scid);
        new_conn(crate::connect(name, &scid, local, peer, config))
    })
}

/// Appends the connection's TLS secrets (NSS key log format) to the file at `path`; lines are
/// written only with `quiche_config_log_keys`. Returns whether the file could be opened (as
/// quiche does).
///
/// # Safety
/// `conn` is NULL or live; `path` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_set_keylog_path(conn: *mut Conn, path: *const c_char) -> bool {
    guard(false, || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, path) = unsafe { (conn.as_mut(), c_str(path)) };
        let (Some(conn), Some(path)) = (conn, path) else {
            return false;
        };
        match OpenOptions::new().create(true).append(true).open(path) {
            Ok(file) => {
                conn.conn.set_keylog(Box::new(file));
                true
            }
            Err(_) => false,
        }
    })
}

/// Writes the connection's qlog (JSON-SEQ, qlog 0.3) to the file at `path`, created or
/// truncated, with the given trace title and description. Returns whether it worked (false
/// also when the library was built without the `qlog` feature).
///
/// # Safety
/// `conn` is NULL or live; the strings are NULL or C strings.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_set_qlog_path(
    conn: *mut Conn,
    path: *const c_char,
    log_title: *const c_char,
    log_desc: *const c_char,
) -> bool {
    guard(false, || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let args = unsafe {
            (
                conn.as_mut(),
                c_str(path),
                c_str(log_title),
                c_str(log_desc),
            )
        };
        let (Some(conn), Some(path), Some(title), Some(desc)) = args else {
            return false;
        };
        set_qlog(conn, path, title, desc)
    })
}

#[cfg(feature = "qlog")]
fn set_qlog(conn: &mut Conn, path: &str, title: &str, desc: &str) -> bool {
    match std::fs::File::create(path) {
        Ok(file) => {
            let writer = std::io::BufWriter::new(file);
            conn.conn
                .set_qlog(Box::new(writer), title.to_string(), desc.to_string());
            true
        }
        Err(_) => false,
    }
}

#[cfg(not(feature = "qlog"))]
fn set_qlog(_: &mut Conn, _: &str, _: &str, _: &str) -> bool {
    false
}

/// Offers a session saved by `quiche_conn_session` for resumption (client, before sending).
///
/// # Safety
/// `conn` is NULL or live; `buf` is NULL or `buf_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_set_session(
    conn: *mut Conn,
    buf: *const u8,
    buf_len: size_t,
) -> c_int {
    guard(invalid(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, buf) = unsafe { (conn.as_mut(), slice_in(buf, buf_len)) };
        match (conn, buf) {
            (Some(conn), Some(buf)) if !buf.is_empty() => code(conn.conn.set_session(buf)),
            _ => invalid(),
        }
    })
}

/// The C layout of a received datagram's addresses.
#[repr(C)]
pub struct CRecvInfo {
    from: *const sockaddr,
    from_len: socklen_t,
    to: *const sockaddr,
    to_len: socklen_t,
}

/// The C layout of where and when to send a datagram.
#[repr(C)]
pub struct CSendInfo {
    from: sockaddr_storage,
    from_len: socklen_t,
    to: sockaddr_storage,
    to_len: socklen_t,
    at: timespec,
}

/// Processes a received datagram (decrypted in place); the bytes consumed or an error.
///
/// # Safety
/// `conn` is NULL or live; `buf` NULL or `buf_len` writable bytes; `info` NULL or a valid
/// `quiche_recv_info` whose addresses are NULL or valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_recv(
    conn: *mut Conn,
    buf: *mut u8,
    buf_len: size_t,
    info: *const CRecvInfo,
) -> ssize_t {
    guard(invalid_ssize(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, buf, info) = unsafe { (conn.as_mut(), slice_out(buf, buf_len), info.as_ref()) };
        let (Some(conn), Some(buf), Some(info)) = (conn, buf, info) else {
            return invalid_ssize();
        };
        // SAFETY: the addresses are NULL (checked) or valid for their lengths by contract.
        let (from, to) = unsafe {
            (
                sockaddr_to_std(info.from, info.from_len as usize),
                sockaddr_to_std(info.to, info.to_len as usize),
            )
        };
        let (Some(from), Some(to)) = (from, to) else {
            return invalid_ssize();
        };
        match conn.conn.recv(buf, RecvInfo { from, to }) {
            Ok(n) => len_ssize(n),
            Err(e) => err_ssize(e),
        }
    })
}

/// As `quiche_conn_recv`, for a datagram whose IP header carried the ECN codepoint `ecn` (the
/// two low bits of the TOS / traffic class byte).
///
/// # Safety
/// As `quiche_conn_recv`.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_recv_with_ecn(
    conn: *mut Conn,
    buf: *mut u8,
    buf_len: size_t,
    info: *const CRecvInfo,
    ecn: u8,
) -> ssize_t {
    guard(invalid_ssize(), || {
        // SAFETY: NULL is checked; otherwise valid by contract.
        let (conn, buf, info) = unsafe { (conn.as_mut(), slice_out(buf, buf_len), info.as_ref()) };
        let (Some(conn), Some(buf), Some(info)) = (conn, buf, info) else {
            return invalid_ssize();
        };
        // SAFETY: the addresses are NULL (checked) or valid for their lengths by contract.
        let (from, to) = unsafe {
            (
                sockaddr_to_std(info.from, info.from_len as usize),
                sockaddr_to_std(info.to, info.to_len as usize),
            )
        };
        let (Some(from), Some(to)) = (from, to) else {
            return invalid_ssize();
        };
        match conn.conn.recv_with_ecn(buf, RecvInfo { from, to }, ecn) {
            Ok(n) => len_ssize(n),
            Err(e) => err_ssize(e),
        }
    })
}

/// The ECN codepoint to set on the next datagram `quiche_conn_send` writes (2 for ECT(0), 0 for
/// none). `quiche_send_info` keeps quiche's layout, so the codepoint comes from here.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send_ecn(conn: *const Conn) -> u8 {
    // SAFETY: forwarded contract.
    unsafe { with_conn(conn, 0, |c| c.conn.send_ecn_codepoint()) }
}

/// Writes one datagram to send into `out` and its addresses and send time into `out_info`;
/// the datagram's length, or `QUICHE_ERR_DONE` when there is nothing to send.
///
/// # Safety
/// `conn` is NULL or live; `out` NULL or `out_len` writable bytes; `out_info` NULL or valid
/// for a write of `quiche_send_info`.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send(
    conn: *mut Conn,
    out: *mut u8,
    out_len: size_t,
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
        match conn.conn.send(out) {
            Ok((n, info)) => {
                // SAFETY: `out_info` is non-NULL (checked) and valid by contract.
                unsafe { write_send_info(out_info, &info) };
                len_ssize(n)
            }
            Err(e) => err_ssize(e),
        }
    })
}

/// Writes `info` into `*out_info`.
///
/// # Safety
/// `out_info` is non-NULL and valid for writes of a whole `quiche_send_info`.
pub(super) unsafe fn write_send_info(out_info: *mut CSendInfo, info: &crate::SendInfo) {
    let mut from = zeroed_storage();
    let mut to = zeroed_storage();
    let from_len = std_to_sockaddr(&info.from, &mut from);
    let to_len = std_to_sockaddr(&info.to, &mut to);
    let at = instant_to_timespec(info.at);
    // SAFETY: valid for writes by contract. The struct is zeroed first so that its padding is
    // initialized too (C code may copy or compare it bytewise); the fields are then written
    // through raw pointers, without reading the old contents.
    unsafe {
        out_info.write_bytes(0, 1);
        ptr::addr_of_mut!((*out_info).from).write(from);
        ptr::addr_of_mut!((*out_info).from_len).write(from_len);
        ptr::addr_of_mut!((*out_info).to).write(to);
        ptr::addr_of_mut!((*out_info).to_len).write(to_len);
        ptr::addr_of_mut!((*out_info).at).write(at);
    }
}

/// Runs `f` on the connection behind `conn`, or returns `fallback` if it is NULL or panics.
///
/// # Safety
/// `conn` is NULL or a live connection not used elsewhere during the call.
pub(super) unsafe fn with_conn<T>(conn: *const Conn, fallback: T, f: impl FnOnce(&Conn) -> T) -> T {
    // SAFETY: NULL is checked by `as_ref`; otherwise live by contract.
    let conn = unsafe { conn.as_ref() };
    match conn {
        Some(conn) => guard(fallback, || f(conn)),
        None => fallback,
    }
}

/// As [`with_conn`], with mutable access.
///
/// # Safety
/// As [`with_conn`].
pub(super) unsafe fn with_conn_mut<T>(
    conn: *mut Conn,
    fallback: T,
    f: impl FnOnce(&mut Conn) -> T,
) -> T {
    // SAFETY: NULL is checked by `as_mut`; otherwise live and unaliased by contract.
    let conn = unsafe { conn.as_mut() };
    match conn {
        Some(conn) => guard(fallback, || f(conn)),
        None => fallback,
    }
}

/// How many bytes the application may send in one burst now.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send_quantum(conn: *const Conn) -> size_t {
    // SAFETY: the contract is passed on.
    unsafe { with_conn(conn, 0, |c| c.conn.send_quantum()) }
}

/// The largest UDP payload the connection sends.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_max_send_udp_payload_size(conn: *const Conn) -> size_t {
    // SAFETY: the contract is passed on.
    unsafe { with_conn(conn, 0, |c| c.conn.max_send_udp_payload_size()) }
}

/// Nanoseconds until `quiche_conn_on_timeout` is due; `UINT64_MAX` when no timer is armed.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_timeout_as_nanos(conn: *const Conn) -> u64 {
    // SAFETY: the contract is passed on.
    unsafe {
        with_conn(conn, u64::MAX, |c| match c.conn.timeout() {
            Some(d) => u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
            None => u64::MAX,
        })
    }
}

/// Milliseconds until `quiche_conn_on_timeout` is due (rounded down); `UINT64_MAX` when no
/// timer is armed.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_timeout_as_millis(conn: *const Conn) -> u64 {
    // SAFETY: the contract is passed on.
    unsafe {
        with_conn(conn, u64::MAX, |c| match c.conn.timeout() {
            Some(d) => u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
            None => u64::MAX,
        })
    }
}

/// Handles the timers that expired.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_on_timeout(conn: *mut Conn) {
    // SAFETY: the contract is passed on.
    unsafe { with_conn_mut(conn, (), |c| c.conn.on_timeout()) }
}

/// Closes the connection (an application close when `app`) with `err` and `reason`.
///
/// # Safety
/// `conn` is NULL or live; `reason` NULL or `reason_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_close(
    conn: *mut Conn,
    app: bool,
    err: u64,
    reason: *const u8,
    reason_len: size_t,
) -> c_int {
    // SAFETY: NULL is checked; otherwise valid by contract.
    let Some(reason) = (unsafe { slice_in(reason, reason_len) }) else {
        return invalid();
    };
    // SAFETY: the contract is passed on.
    unsafe { with_conn_mut(conn, invalid(), |c| code(c.conn.close(app, err, reason))) }
}

/// Defines an exported function lending bytes owned by the connection through `out`/`out_len`.
macro_rules! conn_bytes {
    ($(#[$doc:meta])* $name:ident => |$c:ident| $bytes:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `conn` is NULL or live; `out` and `out_len` are NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            conn: *const Conn,
            out: *mut *const u8,
            out_len: *mut size_t,
        ) {
            // SAFETY: the contract is passed on; the lent bytes live in `*conn`, so they stay
            // valid until the connection is freed (the session until the next ticket).
            unsafe {
                lend(&[], out, out_len);
                with_conn(conn, (), |$c| lend($bytes, out, out_len));
            }
        }
    };
}

conn_bytes!(
    /// A string identifying the connection in logs (not NUL-terminated).
    quiche_conn_trace_id => |c| c.conn.trace_id().as_bytes()
);
conn_bytes!(
    /// Our connection ID.
    quiche_conn_source_id => |c| &c.conn.source_id()
);
conn_bytes!(
    /// The peer's connection ID.
    quiche_conn_destination_id => |c| &c.conn.destination_id()
);
conn_bytes!(
    /// The negotiated ALPN protocol (empty before the handshake chose one).
    quiche_conn_application_proto => |c| c.conn.application_proto()
);
conn_bytes!(
    /// The session to resume later with `quiche_conn_set_session` (empty if none yet): with
    /// BoringSSL, quiche's encoding, valid in any process; with rustls, a handle valid in this
    /// process only.
    quiche_conn_session => |c| c.conn.session().unwrap_or(&[])
);
conn_bytes!(
    /// The peer's leaf certificate, DER-encoded (empty if it sent none).
    quiche_conn_peer_cert => |c| c.conn.peer_cert().unwrap_or(&[])
);
conn_bytes!(
    /// The server name: the client's SNI on a server, the name given to `quiche_connect` on a
    /// client (empty if none; not NUL-terminated).
    quiche_conn_server_name => |c| c.conn.server_name().unwrap_or("").as_bytes()
);

/// Defines an exported boolean query of the connection (false for NULL).
macro_rules! conn_bool {
    ($(#[$doc:meta])* $name:ident => $method:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `conn` is NULL or live.
        #[no_mangle]
        pub unsafe extern "C" fn $name(conn: *const Conn) -> bool {
            // SAFETY: the contract is passed on.
            unsafe { with_conn(conn, false, |c| c.conn.$method()) }
        }
    };
}

conn_bool!(
    /// Whether the handshake completed.
    quiche_conn_is_established => is_established
);
conn_bool!(
    /// Whether the connection resumed an earlier session.
    quiche_conn_is_resumed => is_resumed
);
conn_bool!(
    /// Whether 0-RTT data is being sent or accepted.
    quiche_conn_is_in_early_data => is_in_early_data
);
conn_bool!(
    /// Whether the connection is draining.
    quiche_conn_is_draining => is_draining
);
conn_bool!(
    /// Whether the connection is closed and can be freed.
    quiche_conn_is_closed => is_closed
);
conn_bool!(
    /// Whether the idle timeout closed the connection.
    quiche_conn_is_timed_out => is_timed_out
);
conn_bool!(
    /// Whether this is the server side.
    quiche_conn_is_server => is_server
);

/// How many more bidirectional streams we may open.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_peer_streams_left_bidi(conn: *const Conn) -> u64 {
    // SAFETY: the contract is passed on.
    unsafe { with_conn(conn, 0, |c| c.conn.peer_streams_left_bidi()) }
}

/// How many more unidirectional streams we may open.
///
/// # Safety
/// `conn` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_peer_streams_left_uni(conn: *const Conn) -> u64 {
    // SAFETY: the contract is passed on.
    unsafe { with_conn(conn, 0, |c| c.conn.peer_streams_left_uni()) }
}

/// Reports a connection error through the four output pointers; false if there is none or an
/// output pointer is NULL.
///
/// # Safety
/// The output pointers are NULL or writable.
unsafe fn report_error(
    error: Option<&ConnectionError>,
    is_app: *mut bool,
    error_code: *mut u64,
    reason: *mut *const u8,
    reason_len: *mut size_t,
) -> bool {
    if is_app.is_null() || error_code.is_null() || reason.is_null() || reason_len.is_null() {
        return false;
    }
    let Some(error) = error else {
        return false;
    };
    // SAFETY: all four are non-NULL (checked) and writable by contract.
    unsafe {
        put(is_app, error.is_app);
        put(error_code, error.error_code);
        lend(&error.reason, reason, reason_len);
    }
    true
}

/// The error the peer closed the connection with, if any.
///
/// # Safety
/// `conn` is NULL or live; the output pointers NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_peer_error(
    conn: *const Conn,
    is_app: *mut bool,
    error_code: *mut u64,
    reason: *mut *const u8,
    reason_len: *mut size_t,
) -> bool {
    // SAFETY: the contract is passed on; the reason lives in `*conn`.
    unsafe {
        with_conn(conn, false, |c| {
            report_error(c.conn.peer_error(), is_app, error_code, reason, reason_len)
        })
    }
}

/// The error we closed the connection with, if any.
///
/// # Safety
/// As [`quiche_conn_peer_error`].
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_local_error(
    conn: *const Conn,
    is_app: *mut bool,
    error_code: *mut u64,
    reason: *mut *const u8,
    reason_len: *mut size_t,
) -> bool {
    // SAFETY: the contract is passed on; the reason lives in `*conn`.
    unsafe {
        with_conn(conn, false, |c| {
            report_error(c.conn.local_error(), is_app, error_code, reason, reason_len)
        })
    }
}

/// Frees a connection (NULL is ignored).
///
/// # Safety
/// `conn` is NULL or from `quiche_accept`/`quiche_connect`, freed once.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_free(conn: *mut Conn) {
    guard((), || {
        if !conn.is_null() {
            // SAFETY: from `Box::into_raw` in `new_conn`, freed once by contract.
            drop(unsafe { Box::from_raw(conn) });
        }
    })
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod layout_tests {
    use std::mem::{offset_of, size_of};

    use super::{CRecvInfo, CSendInfo};
    use crate::ffi::stats::{CPathStats, CStats, CTransportParams};

    /// The sizes and offsets gcc gives the structures of include/quiche.h on x86-64 Linux.
    #[test]
    fn structures_match_the_header() {
        assert_eq!(size_of::<CRecvInfo>(), 32);
        assert_eq!(offset_of!(CRecvInfo, from_len), 8);
        assert_eq!(offset_of!(CRecvInfo, to), 16);
        assert_eq!(offset_of!(CRecvInfo, to_len), 24);

        assert_eq!(size_of::<CSendInfo>(), 288);
        assert_eq!(offset_of!(CSendInfo, from_len), 128);
        assert_eq!(offset_of!(CSendInfo, to), 136);
        assert_eq!(offset_of!(CSendInfo, to_len), 264);
        assert_eq!(offset_of!(CSendInfo, at), 272);

        // quiche 0.30's quiche_stats, quiche_transport_params and quiche_path_stats.
        assert_eq!(size_of::<CStats>(), 208);
        assert_eq!(offset_of!(CStats, paths_count), 96);
        assert_eq!(offset_of!(CStats, tx_buffered_inconsistent), 200);
        assert_eq!(size_of::<CTransportParams>(), 104);
        assert_eq!(offset_of!(CTransportParams, peer_active_conn_id_limit), 88);
        assert_eq!(size_of::<CPathStats>(), 448);
        assert_eq!(offset_of!(CPathStats, validation_state), 272);
        assert_eq!(offset_of!(CPathStats, rtt), 344);
        assert_eq!(offset_of!(CPathStats, startup_exit_cwnd), 440);
    }
}
