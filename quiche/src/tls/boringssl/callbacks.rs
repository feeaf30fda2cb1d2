//! BoringSSL's callbacks: the QUIC hooks (`SSL_QUIC_METHOD`), the key log, new client
//! sessions and the server's ALPN choice. Each finds its connection's [`QuicState`] in the
//! `SSL`'s ex_data; an `SSL` without one (not made by us) is left alone.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

use boring::ex_data::Index;
use boring::ssl::{Ssl, SslRef};
use boring_sys as ffi;
use foreign_types_shared::ForeignTypeRef;

use super::session;
use super::state::QuicState;
use crate::crypto::Algorithm;

/// The ex_data slot of every `SSL` we drive.
pub(crate) fn state_index() -> Option<Index<Ssl, QuicState>> {
    static INDEX: OnceLock<Option<Index<Ssl, QuicState>>> = OnceLock::new();
    *INDEX.get_or_init(|| Ssl::new_ex_index().ok())
}

/// The state of the connection `ssl` belongs to.
///
/// # Safety
/// `ssl` must be a valid `SSL` that nothing else borrows for the returned lifetime (BoringSSL
/// calls back from inside our own calls, which hold no reference to the state meanwhile).
unsafe fn state<'a>(ssl: *const ffi::SSL) -> Option<&'a mut QuicState> {
    let index = state_index()?;
    if ssl.is_null() {
        return None;
    }
    // SAFETY: the caller guarantees `ssl` is valid and not otherwise borrowed; BoringSSL passes
    // a `const SSL *` only to callbacks that may not free it.
    let ssl = unsafe { SslRef::from_ptr_mut(ssl.cast_mut()) };
    ssl.ex_data_mut(index)
}

/// The algorithm of a TLS 1.3 cipher suite BoringSSL negotiated.
fn algorithm(cipher: *const ffi::SSL_CIPHER) -> Option<Algorithm> {
    if cipher.is_null() {
        return None;
    }
    // SAFETY: BoringSSL passes a valid, static cipher description.
    let id = unsafe { ffi::SSL_CIPHER_get_protocol_id(cipher) };
    Algorithm::from_cipher_suite(rustls::CipherSuite::from(id))
}

/// A secret of `level` in one direction.
///
/// # Safety
/// As for the `SSL_QUIC_METHOD` callbacks: valid `ssl`, `cipher`, and `secret` of `len` bytes.
unsafe fn on_secret(
    ssl: *mut ffi::SSL,
    level: ffi::ssl_encryption_level_t,
    cipher: *const ffi::SSL_CIPHER,
    secret: *const u8,
    len: usize,
    local: bool,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let Some(state) = (unsafe { state(ssl) }) else {
        return 0;
    };
    let Some(alg) = algorithm(cipher) else {
        log::error!("BoringSSL negotiated a cipher suite QUIC cannot use");
        return 0;
    };
    if secret.is_null() || len != alg.secret_len() {
        return 0;
    }
    // SAFETY: BoringSSL passes `len` readable bytes.
    let secret = unsafe { std::slice::from_raw_parts(secret, len) };
    state.on_secret(level.0, local, alg, secret);
    c_int::from(state.error.is_none())
}

unsafe extern "C" fn set_read_secret(
    ssl: *mut ffi::SSL,
    level: ffi::ssl_encryption_level_t,
    cipher: *const ffi::SSL_CIPHER,
    secret: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: BoringSSL's guarantees for this callback.
    unsafe { on_secret(ssl, level, cipher, secret, len, false) }
}

unsafe extern "C" fn set_write_secret(
    ssl: *mut ffi::SSL,
    level: ffi::ssl_encryption_level_t,
    cipher: *const ffi::SSL_CIPHER,
    secret: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: BoringSSL's guarantees for this callback.
    unsafe { on_secret(ssl, level, cipher, secret, len, true) }
}

unsafe extern "C" fn add_handshake_data(
    ssl: *mut ffi::SSL,
    level: ffi::ssl_encryption_level_t,
    data: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: BoringSSL passes the `SSL` it is driving.
    let Some(state) = (unsafe { state(ssl) }) else {
        return 0;
    };
    if data.is_null() && len > 0 {
        return 0;
    }
    let data = if len == 0 {
        &[][..]
    } else {
        // SAFETY: BoringSSL passes `len` readable bytes.
        unsafe { std::slice::from_raw_parts(data, len) }
    };
    state.on_handshake_data(level.0, data);
    1
}

unsafe extern "C" fn flush_flight(_ssl: *mut ffi::SSL) -> c_int {
    // The connection sends what `next_event` returns whenever it builds packets.
    1
}

unsafe extern "C" fn send_alert(
    ssl: *mut ffi::SSL,
    _level: ffi::ssl_encryption_level_t,
    alert: u8,
) -> c_int {
    // SAFETY: BoringSSL passes the `SSL` it is driving.
    if let Some(state) = unsafe { state(ssl) } {
        // QUIC carries the alert in CONNECTION_CLOSE (RFC 9001 §4.8), not as a TLS record.
        state.alert.get_or_insert(alert);
    }
    1
}

/// The QUIC hooks of every `SSL` we drive.
pub(crate) static QUIC_METHOD: ffi::SSL_QUIC_METHOD = ffi::SSL_QUIC_METHOD {
    set_read_secret: Some(set_read_secret),
    set_write_secret: Some(set_write_secret),
    add_handshake_data: Some(add_handshake_data),
    flush_flight: Some(flush_flight),
    send_alert: Some(send_alert),
};

/// The key log callback of our contexts.
pub(crate) unsafe extern "C" fn keylog(ssl: *const ffi::SSL, line: *const c_char) {
    if line.is_null() {
        return;
    }
    // SAFETY: BoringSSL passes a NUL-terminated line, valid during the call.
    let line_c = unsafe { CStr::from_ptr(line) };
    // SAFETY: BoringSSL calls this from inside our own calls on `ssl`.
    let Some(state) = (unsafe { state(ssl) }) else {
        return;
    };
    if let Ok(text) = line_c.to_str() {
        state.on_keylog_line(text);
    }
    if let Some(app) = state.app_keylog {
        // SAFETY: the application's callback, with the arguments BoringSSL gave us.
        unsafe { app(ssl, line) };
    }
}

/// A client received a session (a NewSessionTicket): kept in quiche's encoding for
/// `Connection::session`.
pub(crate) unsafe extern "C" fn new_session(
    ssl: *mut ffi::SSL,
    session: *mut ffi::SSL_SESSION,
) -> c_int {
    // SAFETY: BoringSSL passes the `SSL` it is driving.
    let Some(state) = (unsafe { state(ssl) }) else {
        return 0;
    };
    if state.is_server || session.is_null() {
        return 0;
    }
    // SAFETY: `ssl` and `session` are valid during the call; the encoder copies what it needs.
    let encoded = unsafe { session::encode(ssl, session) };
    if let Some(encoded) = encoded {
        state.session = Some(encoded);
    }
    // 0: we did not take ownership of `session`.
    0
}

/// A server's ALPN choice: its most preferred protocol the client offers; none fails the
/// handshake with no_application_protocol (RFC 9001 §8.1).
pub(crate) unsafe extern "C" fn select_alpn(
    ssl: *mut ffi::SSL,
    out: *mut *const u8,
    out_len: *mut u8,
    input: *const u8,
    input_len: c_uint,
    _arg: *mut c_void,
) -> c_int {
    const ALERT_FATAL: c_int = ffi::SSL_TLSEXT_ERR_ALERT_FATAL as c_int;
    // SAFETY: BoringSSL passes the `SSL` it is driving.
    let Some(state) = (unsafe { state(ssl) }) else {
        return ffi::SSL_TLSEXT_ERR_NOACK as c_int;
    };
    if input.is_null() || out.is_null() || out_len.is_null() {
        return ALERT_FATAL;
    }
    // SAFETY: BoringSSL passes `input_len` readable bytes of the client's list, which stay
    // valid for the rest of the handshake (the chosen name points into them).
    let offered = unsafe { std::slice::from_raw_parts(input, input_len as usize) };
    for want in state.alpn.iter() {
        let mut b = octets::Octets::with_slice(offered);
        while let Ok(name) = b.get_bytes_with_u8_length() {
            if name.buf() == want.as_slice() {
                // SAFETY: `out` and `out_len` are valid out-pointers; `name` points into
                // BoringSSL's copy of the ClientHello.
                unsafe {
                    *out = name.buf().as_ptr();
                    *out_len = name.len() as u8;
                }
                return ffi::SSL_TLSEXT_ERR_OK as c_int;
            }
        }
    }
    ALERT_FATAL
}
