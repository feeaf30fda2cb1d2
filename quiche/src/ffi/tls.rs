//! The TLS functions of the C API beyond those of every build: CA directories and key exchange
//! groups (both backends), and quiche's BoringSSL-only functions (feature
//! `boringssl-boring-crate`): an application's own `SSL *` for a connection, ticket keys.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int};

#[cfg(feature = "boringssl-boring-crate")]
use libc::size_t;

use super::config_with_path;
#[cfg(feature = "boringssl-boring-crate")]
use super::{code, guard, invalid, slice_in};
use crate::config::Config;

/// Loads trusted CA certificates from a directory (rustls: every PEM file in it; BoringSSL:
/// OpenSSL's hashed layout).
///
/// # Safety
/// `config` is NULL or from `quiche_config_new`; `path` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_load_verify_locations_from_directory(
    config: *mut Config,
    path: *const c_char,
) -> c_int {
    // SAFETY: the contract is passed on unchanged.
    unsafe { config_with_path(config, path, Config::load_verify_locations_from_directory) }
}

/// Sets the key exchange groups, a colon-separated list, e.g. "X25519:P-256".
///
/// # Safety
/// `config` is NULL or from `quiche_config_new`; `curves` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_curves_list(
    config: *mut Config,
    curves: *const c_char,
) -> c_int {
    // SAFETY: the contract is passed on unchanged.
    unsafe { config_with_path(config, curves, Config::set_curves_list) }
}

/// Sets the session ticket key (48 bytes with BoringSSL).
///
/// # Safety
/// `config` is NULL or from `quiche_config_new`; `key` is NULL or `key_len` readable bytes.
#[cfg(feature = "boringssl-boring-crate")]
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_ticket_key(
    config: *mut Config,
    key: *const u8,
    key_len: size_t,
) -> c_int {
    guard(invalid(), || {
        // SAFETY: NULL is checked; otherwise valid for the given length by contract.
        let (config, key) = unsafe { (config.as_mut(), slice_in(key, key_len)) };
        match (config, key) {
            (Some(config), Some(key)) => code(config.set_ticket_key(key)),
            _ => invalid(),
        }
    })
}

#[cfg(feature = "boringssl-boring-crate")]
mod boringssl {
    use std::ffi::c_void;
    use std::ptr;

    use boring::ssl::Ssl;
    use foreign_types_shared::ForeignType;
    use libc::{size_t, sockaddr, socklen_t};

    use super::super::conn::{new_conn, Conn};
    use super::super::{guard, slice_in, sockaddr_to_std};
    use crate::config::Config;
    use crate::connection::Connection;
    use crate::packet::ConnectionId;
    use crate::tls::Handshake;

    /// The arguments both constructors share, checked; `None` for a NULL or invalid one.
    struct Args<'a> {
        scid: ConnectionId<'a>,
        cid: Option<ConnectionId<'a>>,
        local: std::net::SocketAddr,
        peer: std::net::SocketAddr,
        config: &'a Config,
    }

    /// # Safety
    /// As for [`quiche_conn_new_with_tls`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn args<'a>(
        scid: *const u8,
        scid_len: size_t,
        cid: *const u8,
        cid_len: size_t,
        local: *const sockaddr,
        local_len: socklen_t,
        peer: *const sockaddr,
        peer_len: socklen_t,
        config: *const Config,
    ) -> Option<Args<'a>> {
        // SAFETY: NULL is checked; otherwise valid for the given lengths by contract.
        let (scid, cid, local, peer, config) = unsafe {
            (
                slice_in(scid, scid_len)?,
                slice_in(cid, cid_len)?,
                sockaddr_to_std(local, local_len as usize)?,
                sockaddr_to_std(peer, peer_len as usize)?,
                config.as_ref()?,
            )
        };
        Some(Args {
            scid: ConnectionId::from_ref(scid),
            cid: (!cid.is_empty()).then(|| ConnectionId::from_ref(cid)),
            local,
            peer,
            config,
        })
    }

    /// Takes ownership of the application's `SSL *` (freed with the connection, or at once if
    /// the connection cannot be made, as quiche does).
    ///
    /// # Safety
    /// `ssl` is NULL or a valid `SSL *` the caller gives up.
    unsafe fn take_ssl(ssl: *mut c_void) -> Option<Ssl> {
        if ssl.is_null() {
            return None;
        }
        // SAFETY: a valid SSL whose ownership the caller hands over.
        Some(unsafe { Ssl::from_ptr(ssl.cast()) })
    }

    /// A connection whose TLS runs on the application's configured BoringSSL `SSL` (its
    /// context supplies verification, certificates, ALPN, session cache and key log; the
    /// connection sets the QUIC hooks and transport parameters on it). `odcid`: a server's
    /// original Destination Connection ID after a Retry, else NULL. The connection owns `ssl`
    /// from now on, also when NULL is returned.
    ///
    /// # Safety
    /// Pointers are NULL or valid for their lengths; `ssl` is a valid `SSL *` the caller gives
    /// up; `config` is from `quiche_config_new`.
    #[no_mangle]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn quiche_conn_new_with_tls(
        scid: *const u8,
        scid_len: size_t,
        odcid: *const u8,
        odcid_len: size_t,
        local: *const sockaddr,
        local_len: socklen_t,
        peer: *const sockaddr,
        peer_len: socklen_t,
        config: *const Config,
        ssl: *mut c_void,
        is_server: bool,
    ) -> *mut Conn {
        guard(ptr::null_mut(), || {
            // SAFETY: the contract is passed on.
            let ssl = unsafe { take_ssl(ssl) };
            // SAFETY: the contract is passed on.
            let args = unsafe {
                args(
                    scid, scid_len, odcid, odcid_len, local, local_len, peer, peer_len, config,
                )
            };
            let (Some(ssl), Some(a)) = (ssl, args) else {
                return ptr::null_mut();
            };
            let conn = Handshake::with_ssl(ssl, is_server, Vec::new()).and_then(|tls| {
                if is_server {
                    Connection::new(
                        true,
                        tls,
                        &a.scid,
                        a.cid.as_ref(),
                        a.local,
                        a.peer,
                        a.config,
                    )
                } else {
                    let dcid = crate::connection::random_client_dcid()?;
                    crate::connection::connect_with_tls(
                        tls, &a.scid, &dcid, a.local, a.peer, a.config,
                    )
                }
            });
            new_conn(conn)
        })
    }

    /// A client connection on the application's `SSL *` (as [`quiche_conn_new_with_tls`])
    /// whose first Destination Connection ID is `dcid` (random if NULL). quiche builds it only
    /// with its `custom-client-dcid` feature; here it is always there.
    ///
    /// # Safety
    /// As for [`quiche_conn_new_with_tls`].
    #[no_mangle]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn quiche_conn_new_with_tls_and_client_dcid(
        scid: *const u8,
        scid_len: size_t,
        dcid: *const u8,
        dcid_len: size_t,
        local: *const sockaddr,
        local_len: socklen_t,
        peer: *const sockaddr,
        peer_len: socklen_t,
        config: *const Config,
        ssl: *mut c_void,
    ) -> *mut Conn {
        guard(ptr::null_mut(), || {
            // SAFETY: the contract is passed on.
            let ssl = unsafe { take_ssl(ssl) };
            // SAFETY: the contract is passed on.
            let args = unsafe {
                args(
                    scid, scid_len, dcid, dcid_len, local, local_len, peer, peer_len, config,
                )
            };
            let (Some(ssl), Some(a)) = (ssl, args) else {
                return ptr::null_mut();
            };
            let conn = Handshake::with_ssl(ssl, false, Vec::new()).and_then(|tls| {
                let dcid = match a.cid {
                    // RFC 9000 §7.2: at least 8 bytes of unpredictable value.
                    Some(dcid) if dcid.len() >= 8 && dcid.len() <= crate::MAX_CONN_ID_LEN => dcid,
                    Some(_) => return Err(crate::Error::InvalidState),
                    None => crate::connection::random_client_dcid()?,
                };
                crate::connection::connect_with_tls(tls, &a.scid, &dcid, a.local, a.peer, a.config)
            });
            new_conn(conn)
        })
    }
}
