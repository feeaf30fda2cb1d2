//! The C API declared in `include/quiche.h` (feature `ffi`).
//!
//! This module only translates: C pointers and lengths become slices and references, the Rust
//! API is called, and [`Error`] becomes the negative `QUICHE_ERR_*` code of [`Error::to_c`].
//! Three rules hold for every exported function:
//!
//! - every pointer argument is checked for NULL (a NULL buffer is accepted only with a length
//!   of 0) and every length is checked before a slice is built from it;
//! - invalid arguments give an error return, never a crash: `QUICHE_ERR_INVALID_STATE` for
//!   functions returning a code, NULL, `false` or 0 for the others, and nothing for `void`
//!   functions;
//! - no panic crosses into C: each body runs under `catch_unwind`, and a panic becomes the same
//!   error return as an invalid argument (unwinding into a C frame is undefined behaviour).
#![allow(unsafe_code)]
// Every unsafe operation sits in its own block with its own SAFETY line, also inside the
// `unsafe fn` helpers.
#![deny(unsafe_op_in_unsafe_fn)]

use std::ffi::{c_char, c_int, c_long, c_void, CStr, CString};
use std::mem::size_of;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::slice;
use std::time::Instant;

use libc::{
    in6_addr, in_addr, sa_family_t, size_t, sockaddr, sockaddr_in, sockaddr_in6, sockaddr_storage,
    socklen_t, ssize_t, time_t, timespec, AF_INET, AF_INET6,
};

use crate::cc::CongestionControlAlgorithm;
use crate::config::Config;
use crate::error::Error;
use crate::packet::{ConnectionId, Header, Type};

// -------------------------------------------------------------------------------------------
// Helpers shared by the exported functions.

/// Runs an exported function's body; a panic becomes `fallback`.
fn guard<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The code returned for invalid arguments and for panics caught at the boundary.
fn invalid() -> c_int {
    Error::InvalidState.to_c()
}

/// [`invalid`] for functions returning `ssize_t`.
fn invalid_ssize() -> ssize_t {
    Error::InvalidState.to_c() as ssize_t
}

/// An error as the `ssize_t` some functions return.
fn err_ssize(e: Error) -> ssize_t {
    e.to_c() as ssize_t
}

/// A success length as `ssize_t` (lengths come from slices, so they fit; saturate anyway).
fn len_ssize(n: usize) -> ssize_t {
    ssize_t::try_from(n).unwrap_or(ssize_t::MAX)
}

/// A `Result<()>` as the C code: 0 or a negative error.
fn code(r: crate::Result<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_c(),
    }
}

/// `len` bytes at `ptr` as a shared slice; NULL is accepted only with `len` 0.
///
/// # Safety
/// If `ptr` is not NULL and `len` is not 0, `ptr` must point to `len` readable bytes that stay
/// valid and unmodified for `'a`.
unsafe fn slice_in<'a>(ptr: *const u8, len: size_t) -> Option<&'a [u8]> {
    if len == 0 {
        return Some(&[]);
    }
    if ptr.is_null() || len > isize::MAX as usize {
        return None;
    }
    // SAFETY: non-NULL, `len` fits in isize, and the caller guarantees `len` readable bytes.
    Some(unsafe { slice::from_raw_parts(ptr, len) })
}

/// `len` bytes at `ptr` as a mutable slice; NULL is accepted only with `len` 0.
///
/// # Safety
/// If `ptr` is not NULL and `len` is not 0, `ptr` must point to `len` writable bytes that no one
/// else accesses during `'a`.
unsafe fn slice_out<'a>(ptr: *mut u8, len: size_t) -> Option<&'a mut [u8]> {
    if len == 0 {
        return Some(&mut []);
    }
    if ptr.is_null() || len > isize::MAX as usize {
        return None;
    }
    // SAFETY: non-NULL, `len` fits in isize, and the caller guarantees exclusive access to `len`
    // writable bytes.
    Some(unsafe { slice::from_raw_parts_mut(ptr, len) })
}

/// A NUL-terminated UTF-8 C string; `None` for NULL or invalid UTF-8.
///
/// # Safety
/// `s` is NULL or points to a NUL-terminated string that stays valid for `'a`.
unsafe fn c_str<'a>(s: *const c_char) -> Option<&'a str> {
    if s.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(s) }.to_str().ok()
}

/// Writes `v` through `p` unless `p` is NULL; returns whether it wrote.
///
/// # Safety
/// `p` is NULL or valid and aligned for a write of `T`.
unsafe fn put<T>(p: *mut T, v: T) -> bool {
    if p.is_null() {
        return false;
    }
    // SAFETY: non-NULL, and valid and aligned for writes by the caller's contract. `write`
    // does not read (or drop) what was there, which may be uninitialized.
    unsafe { p.write(v) };
    true
}

/// Lends `bytes` to C through `out`/`out_len` (NULL and 0 when empty), if both are non-NULL.
///
/// # Safety
/// `out` and `out_len` are each NULL or valid for writes.
unsafe fn lend(bytes: &[u8], out: *mut *const u8, out_len: *mut size_t) {
    if out.is_null() || out_len.is_null() {
        return;
    }
    let p = if bytes.is_empty() {
        ptr::null()
    } else {
        bytes.as_ptr()
    };
    // SAFETY: both pointers are non-NULL and writable by the caller's contract.
    unsafe {
        put(out, p);
        put(out_len, bytes.len());
    }
}

/// Reads a socket address in the C layout (`sockaddr_in` or `sockaddr_in6`).
///
/// # Safety
/// `addr` is NULL or points to `len` readable bytes.
unsafe fn sockaddr_to_std(addr: *const sockaddr, len: usize) -> Option<SocketAddr> {
    if addr.is_null() || len < size_of::<sockaddr>() {
        return None;
    }
    // SAFETY: `addr` points to at least a whole `sockaddr`; the read is unaligned because a C
    // caller may hand us a byte buffer.
    let family = unsafe { ptr::addr_of!((*addr).sa_family).read_unaligned() };
    match c_int::from(family) {
        AF_INET if len >= size_of::<sockaddr_in>() => {
            // SAFETY: the family says sockaddr_in and `len` covers one.
            let sin = unsafe { addr.cast::<sockaddr_in>().read_unaligned() };
            // `s_addr` holds the address in network order: its bytes in memory are the octets.
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        AF_INET6 if len >= size_of::<sockaddr_in6>() => {
            // SAFETY: the family says sockaddr_in6 and `len` covers one.
            let sin6 = unsafe { addr.cast::<sockaddr_in6>().read_unaligned() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// A zeroed `sockaddr_storage`.
fn zeroed_storage() -> sockaddr_storage {
    // SAFETY: sockaddr_storage is plain integers, for which all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

/// Writes `addr` in the C layout into `out`; returns the length of the written address.
fn std_to_sockaddr(addr: &SocketAddr, out: &mut sockaddr_storage) -> socklen_t {
    *out = zeroed_storage();
    let storage: *mut sockaddr_storage = out;
    match addr {
        SocketAddr::V4(a) => {
            let sin = sockaddr_in {
                sin_family: AF_INET as sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is large and aligned enough for every socket address
            // type (that is its purpose in POSIX), and `storage` is a live exclusive borrow.
            unsafe { storage.cast::<sockaddr_in>().write(sin) };
            size_of::<sockaddr_in>() as socklen_t
        }
        SocketAddr::V6(a) => {
            let sin6 = sockaddr_in6 {
                sin6_family: AF_INET6 as sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { storage.cast::<sockaddr_in6>().write(sin6) };
            size_of::<sockaddr_in6>() as socklen_t
        }
    }
}

const NANOS_PER_SEC: i128 = 1_000_000_000;

/// `at` as a time on CLOCK_MONOTONIC, the clock C programs schedule their sends on.
///
/// The C API has no `now` parameter, so like the compatibility wrappers of
/// `connection/mod.rs` this helper reads the clock: it pairs a reading of `Instant` with one of
/// CLOCK_MONOTONIC and carries the offset of `at` over.
#[allow(clippy::disallowed_methods)]
fn instant_to_timespec(at: Instant) -> timespec {
    let now = Instant::now();
    let mut ts = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write to, and CLOCK_MONOTONIC always exists on the
    // platforms libc supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return ts;
    }
    let base = i128::from(ts.tv_sec) * NANOS_PER_SEC + i128::from(ts.tv_nsec);
    let offset = match at.checked_duration_since(now) {
        Some(ahead) => ahead.as_nanos() as i128,
        None => -(now.saturating_duration_since(at).as_nanos() as i128),
    };
    let t = (base + offset).max(0);
    timespec {
        tv_sec: (t / NANOS_PER_SEC) as time_t,
        tv_nsec: (t % NANOS_PER_SEC) as c_long,
    }
}

// -------------------------------------------------------------------------------------------
// Library information and logging.

/// The library version as a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn quiche_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The C callback that receives log lines, with its opaque argument.
struct CLogger {
    cb: unsafe extern "C" fn(line: *const c_char, argp: *mut c_void),
    argp: *mut c_void,
}

// SAFETY: `argp` is never dereferenced here, only handed back to the callback; by calling
// `quiche_enable_debug_logging` the application declares that its callback and argument may be
// used from any thread that drives a connection.
unsafe impl Send for CLogger {}
// SAFETY: as above; the logger itself holds no mutable state.
unsafe impl Sync for CLogger {}

impl log::Log for CLogger {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }

    fn log(&self, record: &log::Record) {
        let line = format!("{} {}: {}", record.level(), record.target(), record.args());
        // Messages with an interior NUL are cut there rather than dropped.
        let line = CString::new(line).unwrap_or_else(|e| {
            let end = e.nul_position();
            let mut bytes = e.into_vec();
            bytes.truncate(end);
            CString::new(bytes).unwrap_or_default()
        });
        // SAFETY: the callback was given by the application for exactly this use; `line` is a
        // valid C string for the duration of the call.
        unsafe { (self.cb)(line.as_ptr(), self.argp) };
    }

    fn flush(&self) {}
}

/// Sends the library's log lines (all levels) to `cb`. Only one logger can be installed per
/// process: returns -1 if one already is or `cb` is NULL.
#[no_mangle]
pub extern "C" fn quiche_enable_debug_logging(
    cb: Option<unsafe extern "C" fn(line: *const c_char, argp: *mut c_void)>,
    argp: *mut c_void,
) -> c_int {
    guard(-1, || {
        let Some(cb) = cb else {
            return -1;
        };
        // The logger lives for the rest of the process, as `log` requires; a static rather
        // than a leaked box, so that a refused second call costs nothing.
        static LOGGER: std::sync::OnceLock<CLogger> = std::sync::OnceLock::new();
        if LOGGER.set(CLogger { cb, argp }).is_err() {
            return -1;
        }
        let Some(logger) = LOGGER.get() else {
            return -1;
        };
        if log::set_logger(logger).is_err() {
            return -1;
        }
        log::set_max_level(log::LevelFilter::Trace);
        0
    })
}

// -------------------------------------------------------------------------------------------
// Configuration.

/// Creates a configuration for `version`; NULL if the version is not supported.
#[no_mangle]
pub extern "C" fn quiche_config_new(version: u32) -> *mut Config {
    guard(ptr::null_mut(), || match Config::new(version) {
        Ok(c) => Box::into_raw(Box::new(c)),
        Err(_) => ptr::null_mut(),
    })
}

/// Calls a `Config` method taking a file path; 0 or a negative error.
///
/// # Safety
/// `config` is NULL or a live configuration; `path` is NULL or a C string.
unsafe fn config_with_path(
    config: *mut Config,
    path: *const c_char,
    f: fn(&mut Config, &str) -> crate::Result<()>,
) -> c_int {
    guard(invalid(), || {
        // SAFETY: both pointers are NULL or valid by the caller's contract; NULL is checked.
        let (config, path) = unsafe { (config.as_mut(), c_str(path)) };
        match (config, path) {
            (Some(config), Some(path)) => code(f(config, path)),
            _ => invalid(),
        }
    })
}

/// Loads the certificate chain from a PEM file.
///
/// # Safety
/// `config` is NULL or from `quiche_config_new`; `path` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_load_cert_chain_from_pem_file(
    config: *mut Config,
    path: *const c_char,
) -> c_int {
    // SAFETY: the contract is passed on unchanged.
    unsafe { config_with_path(config, path, Config::load_cert_chain_from_pem_file) }
}

/// Loads the private key from a PEM file.
///
/// # Safety
/// As [`quiche_config_load_cert_chain_from_pem_file`].
#[no_mangle]
pub unsafe extern "C" fn quiche_config_load_priv_key_from_pem_file(
    config: *mut Config,
    path: *const c_char,
) -> c_int {
    // SAFETY: the contract is passed on unchanged.
    unsafe { config_with_path(config, path, Config::load_priv_key_from_pem_file) }
}

/// Loads trusted CA certificates from a PEM file.
///
/// # Safety
/// As [`quiche_config_load_cert_chain_from_pem_file`].
#[no_mangle]
pub unsafe extern "C" fn quiche_config_load_verify_locations_from_file(
    config: *mut Config,
    path: *const c_char,
) -> c_int {
    // SAFETY: the contract is passed on unchanged.
    unsafe { config_with_path(config, path, Config::load_verify_locations_from_file) }
}

/// Defines an exported setter that forwards one value to a `Config` method; NULL configs are
/// ignored (the function returns nothing to report them with).
macro_rules! config_setter {
    ($(#[$doc:meta])* $name:ident => |$c:ident, $v:ident: $ty:ty| $call:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `config` is NULL or from `quiche_config_new` and not freed.
        #[no_mangle]
        pub unsafe extern "C" fn $name(config: *mut Config, $v: $ty) {
            guard((), || {
                // SAFETY: `config` is NULL (checked by `as_mut`) or a live configuration.
                if let Some($c) = unsafe { config.as_mut() } {
                    $call;
                }
            })
        }
    };
}

config_setter!(
    /// Whether to verify the peer's certificate.
    quiche_config_verify_peer => |c, v: bool| c.verify_peer(v)
);
config_setter!(
    /// Whether to send GREASE values.
    quiche_config_grease => |c, v: bool| c.grease(v)
);
config_setter!(
    /// Sets the `max_idle_timeout` transport parameter (milliseconds).
    quiche_config_set_max_idle_timeout => |c, v: u64| c.set_max_idle_timeout(v)
);
config_setter!(
    /// Sets the largest UDP payload accepted.
    quiche_config_set_max_recv_udp_payload_size => |c, v: size_t| c.set_max_recv_udp_payload_size(v)
);
config_setter!(
    /// Sets the largest UDP payload sent.
    quiche_config_set_max_send_udp_payload_size => |c, v: size_t| c.set_max_send_udp_payload_size(v)
);
config_setter!(
    /// Whether to run path MTU discovery (on by default).
    quiche_config_discover_pmtu => |c, v: bool| c.discover_pmtu(v)
);
config_setter!(
    /// Sets `initial_max_data`.
    quiche_config_set_initial_max_data => |c, v: u64| c.set_initial_max_data(v)
);
config_setter!(
    /// Sets `initial_max_stream_data_bidi_local`.
    quiche_config_set_initial_max_stream_data_bidi_local =>
        |c, v: u64| c.set_initial_max_stream_data_bidi_local(v)
);
config_setter!(
    /// Sets `initial_max_stream_data_bidi_remote`.
    quiche_config_set_initial_max_stream_data_bidi_remote =>
        |c, v: u64| c.set_initial_max_stream_data_bidi_remote(v)
);
config_setter!(
    /// Sets `initial_max_stream_data_uni`.
    quiche_config_set_initial_max_stream_data_uni =>
        |c, v: u64| c.set_initial_max_stream_data_uni(v)
);
config_setter!(
    /// Sets `initial_max_streams_bidi`.
    quiche_config_set_initial_max_streams_bidi => |c, v: u64| c.set_initial_max_streams_bidi(v)
);
config_setter!(
    /// Sets `initial_max_streams_uni`.
    quiche_config_set_initial_max_streams_uni => |c, v: u64| c.set_initial_max_streams_uni(v)
);
config_setter!(
    /// Sets `ack_delay_exponent`.
    quiche_config_set_ack_delay_exponent => |c, v: u64| c.set_ack_delay_exponent(v)
);
config_setter!(
    /// Sets `max_ack_delay` (milliseconds).
    quiche_config_set_max_ack_delay => |c, v: u64| c.set_max_ack_delay(v)
);
config_setter!(
    /// Sets `active_connection_id_limit`.
    quiche_config_set_active_connection_id_limit =>
        |c, v: u64| c.set_active_connection_id_limit(v)
);
config_setter!(
    /// Sets `disable_active_migration`.
    quiche_config_set_disable_active_migration =>
        |c, v: bool| c.set_disable_active_migration(v)
);
config_setter!(
    /// Selects Reno (0), CUBIC (1) or BBR (4, quiche's `QUICHE_CC_BBR2_GCONGESTION`); other
    /// values are ignored. Taken as an `int` because an
    /// out-of-range C enum value must not become an invalid Rust enum.
    quiche_config_set_cc_algorithm => |c, algo: c_int| match algo {
        0 => c.set_cc_algorithm(CongestionControlAlgorithm::Reno),
        1 => c.set_cc_algorithm(CongestionControlAlgorithm::CUBIC),
        4 => c.set_cc_algorithm(CongestionControlAlgorithm::Bbr),
        _ => {}
    }
);
config_setter!(
    /// Sets the initial congestion window, in packets.
    quiche_config_set_initial_congestion_window_packets =>
        |c, v: size_t| c.set_initial_congestion_window_packets(v)
);
config_setter!(
    /// Enables or disables HyStart++.
    quiche_config_enable_hystart => |c, v: bool| c.enable_hystart(v)
);
config_setter!(
    /// Selects the slow-start strategy: standard (0), HyStart++ (1) or SEARCH (2); other
    /// values are ignored (an `int` for the same reason as the algorithm's).
    quiche_config_set_slow_start => |c, v: c_int| match v {
        0 => c.set_slow_start(crate::SlowStartStrategy::Standard),
        1 => c.set_slow_start(crate::SlowStartStrategy::HyStartPlusPlus),
        2 => c.set_slow_start(crate::SlowStartStrategy::Search),
        _ => {}
    }
);
config_setter!(
    /// Enables or disables pacing.
    quiche_config_enable_pacing => |c, v: bool| c.enable_pacing(v)
);
config_setter!(
    /// Sets the ceiling of the auto-tuned connection receive window.
    quiche_config_set_max_connection_window => |c, v: u64| c.set_max_connection_window(v)
);
config_setter!(
    /// Sets the ceiling of the auto-tuned stream receive window.
    quiche_config_set_max_stream_window => |c, v: u64| c.set_max_stream_window(v)
);

/// Enables DATAGRAM frames (RFC 9221) with the given receive and send queue lengths.
///
/// # Safety
/// `config` is NULL or from `quiche_config_new` and not freed.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_enable_dgram(
    config: *mut Config,
    enabled: bool,
    recv_queue_len: size_t,
    send_queue_len: size_t,
) {
    guard((), || {
        // SAFETY: `config` is NULL (checked) or a live configuration.
        if let Some(c) = unsafe { config.as_mut() } {
            c.enable_dgram(enabled, recv_queue_len, send_queue_len);
        }
    })
}

/// Enables key logging (written where `quiche_conn_set_keylog_path` says).
///
/// # Safety
/// `config` is NULL or from `quiche_config_new` and not freed.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_log_keys(config: *mut Config) {
    guard((), || {
        // SAFETY: `config` is NULL (checked) or a live configuration.
        if let Some(c) = unsafe { config.as_mut() } {
            c.log_keys();
        }
    })
}

/// Enables 0-RTT.
///
/// # Safety
/// `config` is NULL or from `quiche_config_new` and not freed.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_enable_early_data(config: *mut Config) {
    guard((), || {
        // SAFETY: `config` is NULL (checked) or a live configuration.
        if let Some(c) = unsafe { config.as_mut() } {
            c.enable_early_data();
        }
    })
}

/// Splits the TLS wire format of an ALPN list (each protocol preceded by its length byte).
fn parse_alpn_list(mut wire: &[u8]) -> Option<Vec<&[u8]>> {
    let mut protos = Vec::new();
    while let Some((&len, rest)) = wire.split_first() {
        let len = usize::from(len);
        protos.push(rest.get(..len)?);
        wire = rest.get(len..)?;
    }
    Some(protos)
}

/// Sets the ALPN protocols from their TLS wire format, e.g. `"\x0ahq-interop"`.
///
/// # Safety
/// `config` is NULL or from `quiche_config_new`; `protos` is NULL or `protos_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_application_protos(
    config: *mut Config,
    protos: *const u8,
    protos_len: size_t,
) -> c_int {
    guard(invalid(), || {
        // SAFETY: NULL is checked; otherwise valid by the caller's contract.
        let (config, protos) = unsafe { (config.as_mut(), slice_in(protos, protos_len)) };
        let (Some(config), Some(protos)) = (config, protos) else {
            return invalid();
        };
        match parse_alpn_list(protos) {
            Some(list) => code(config.set_application_protos(&list)),
            None => Error::BufferTooShort.to_c(),
        }
    })
}

/// Selects the congestion control algorithm by name ("reno", "cubic", "bbr" or "bbr2").
///
/// # Safety
/// `config` is NULL or from `quiche_config_new`; `algo` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_cc_algorithm_name(
    config: *mut Config,
    algo: *const c_char,
) -> c_int {
    // SAFETY: the contract is passed on unchanged.
    unsafe { config_with_path(config, algo, Config::set_cc_algorithm_name) }
}

/// Frees a configuration (NULL is ignored). Connections made from it stay usable.
///
/// # Safety
/// `config` is NULL or from `quiche_config_new` and not freed before.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_free(config: *mut Config) {
    guard((), || {
        if !config.is_null() {
            // SAFETY: the pointer came from `Box::into_raw` in `quiche_config_new` and is
            // freed once.
            drop(unsafe { Box::from_raw(config) });
        }
    })
}

// -------------------------------------------------------------------------------------------
// Packets before a connection exists.

/// The packet type numbers of `quiche_header_info`, as in quiche's C API.
fn type_to_c(ty: Type) -> u8 {
    match ty {
        Type::Initial => 1,
        Type::Retry => 2,
        Type::Handshake => 3,
        Type::ZeroRTT => 4,
        Type::Short => 5,
        Type::VersionNegotiation => 6,
    }
}

/// Copies `src` into `dst`; the copied length, or `None` if `dst` is too short.
fn copy_out(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    dst.get_mut(..src.len())?.copy_from_slice(src);
    Some(src.len())
}

/// Parses a packet's header: version, type, connection IDs and token. The `*_len` arguments
/// give the capacity of each output buffer and receive the length written.
///
/// # Safety
/// Every pointer is NULL or valid: `buf` for `buf_len` bytes, each output buffer for the
/// capacity its length pointer holds, the others for one write.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn quiche_header_info(
    buf: *const u8,
    buf_len: size_t,
    dcil: size_t,
    version: *mut u32,
    ty: *mut u8,
    scid: *mut u8,
    scid_len: *mut size_t,
    dcid: *mut u8,
    dcid_len: *mut size_t,
    token: *mut u8,
    token_len: *mut size_t,
) -> c_int {
    guard(invalid(), || {
        if version.is_null() || ty.is_null() {
            return invalid();
        }
        if scid_len.is_null() || dcid_len.is_null() || token_len.is_null() {
            return invalid();
        }
        // SAFETY: the length pointers are non-NULL and readable; each buffer holds the
        // capacity its length names (NULL is checked by `slice_out`/`slice_in`).
        let (buf, scid_out, dcid_out, token_out) = unsafe {
            (
                slice_in(buf, buf_len),
                slice_out(scid, scid_len.read()),
                slice_out(dcid, dcid_len.read()),
                slice_out(token, token_len.read()),
            )
        };
        let (Some(buf), Some(scid_out), Some(dcid_out), Some(token_out)) =
            (buf, scid_out, dcid_out, token_out)
        else {
            return invalid();
        };
        let hdr = match Header::parse(buf, dcil) {
            Ok(h) => h,
            Err(e) => return e.to_c(),
        };
        let lens = (
            copy_out(&hdr.scid, scid_out),
            copy_out(&hdr.dcid, dcid_out),
            copy_out(hdr.token.as_deref().unwrap_or(&[]), token_out),
        );
        let (Some(s), Some(d), Some(t)) = lens else {
            return Error::BufferTooShort.to_c();
        };
        // SAFETY: all five pointers were checked non-NULL above and are writable.
        unsafe {
            put(version, hdr.version);
            put(ty, type_to_c(hdr.ty));
            put(scid_len, s);
            put(dcid_len, d);
            put(token_len, t);
        }
        0
    })
}

/// Writes a Version Negotiation packet answering a packet with the given IDs.
///
/// # Safety
/// Each buffer is NULL or valid for its length.
#[no_mangle]
pub unsafe extern "C" fn quiche_negotiate_version(
    scid: *const u8,
    scid_len: size_t,
    dcid: *const u8,
    dcid_len: size_t,
    out: *mut u8,
    out_len: size_t,
) -> ssize_t {
    guard(invalid_ssize(), || {
        // SAFETY: NULL is checked; otherwise valid for the given lengths by contract.
        let (scid, dcid, out) = unsafe {
            (
                slice_in(scid, scid_len),
                slice_in(dcid, dcid_len),
                slice_out(out, out_len),
            )
        };
        let (Some(scid), Some(dcid), Some(out)) = (scid, dcid, out) else {
            return invalid_ssize();
        };
        let scid = ConnectionId::from_ref(scid);
        let dcid = ConnectionId::from_ref(dcid);
        match crate::negotiate_version(&scid, &dcid, out) {
            Ok(n) => len_ssize(n),
            Err(e) => err_ssize(e),
        }
    })
}

/// Writes a Retry packet.
///
/// # Safety
/// Each buffer is NULL or valid for its length.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn quiche_retry(
    scid: *const u8,
    scid_len: size_t,
    dcid: *const u8,
    dcid_len: size_t,
    new_scid: *const u8,
    new_scid_len: size_t,
    token: *const u8,
    token_len: size_t,
    version: u32,
    out: *mut u8,
    out_len: size_t,
) -> ssize_t {
    guard(invalid_ssize(), || {
        // SAFETY: NULL is checked; otherwise valid for the given lengths by contract.
        let args = unsafe {
            (
                slice_in(scid, scid_len),
                slice_in(dcid, dcid_len),
                slice_in(new_scid, new_scid_len),
                slice_in(token, token_len),
                slice_out(out, out_len),
            )
        };
        let (Some(scid), Some(dcid), Some(new_scid), Some(token), Some(out)) = args else {
            return invalid_ssize();
        };
        let scid = ConnectionId::from_ref(scid);
        let dcid = ConnectionId::from_ref(dcid);
        let new_scid = ConnectionId::from_ref(new_scid);
        match crate::retry(&scid, &dcid, &new_scid, token, version, out) {
            Ok(n) => len_ssize(n),
            Err(e) => err_ssize(e),
        }
    })
}

/// Whether `version` is supported.
#[no_mangle]
pub extern "C" fn quiche_version_is_supported(version: u32) -> bool {
    guard(false, || crate::version_is_supported(version))
}

mod conn;
mod dgram;
mod h3;
mod ids;
mod keepalive;
mod logs;
mod path;
mod reset;
mod stats;
mod stream;
mod stream_calls;
#[cfg(test)]
mod tests;
mod tls;
mod tuning;
