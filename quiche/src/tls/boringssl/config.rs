//! The BoringSSL backend's TLS settings: one `SSL_CTX` shared by the connections of a `Config`.
//!
//! The settings are applied to the `SSL_CTX` at once (as quiche does), so a connection sees the
//! settings of the moment it was created. An application that built its own context
//! ([`BoringConfig::from_builder`], quiche's `Config::with_boring_ssl_ctx_builder`) keeps
//! everything it set there; what the context needs for QUIC is added to it.

use std::ffi::{c_int, CString};
use std::fmt;
use std::sync::Arc;

use boring::ssl::{SslContext, SslContextBuilder, SslMethod, SslVersion};
use boring_sys as ffi;
use foreign_types_shared::ForeignType;

use super::callbacks;
use super::replay::ReplayGuard;
use super::state::KeylogCallback;
use crate::error::{Error, Result};
use crate::tls::CipherSuite;

/// The settings and the `SSL_CTX` of the BoringSSL backend.
pub(crate) struct BoringConfig {
    ctx: SslContext,
    /// The ALPN protocols, most preferred first: a server chooses among them in this order.
    alpn: Arc<Vec<Vec<u8>>>,
    early_data: bool,
    log_keys: bool,
    /// The key log callback the application's own context had, called after ours.
    app_keylog: Option<KeylogCallback>,
    /// The 0-RTT ClientHellos this server config let through.
    replay: ReplayGuard,
}

/// How many 0-RTT ClientHellos a server remembers by default: as many sessions as a rustls
/// server remembers.
const DEFAULT_REPLAY_MEMORY: usize = 4096;

/// Maps BoringSSL's 1/0 result to ours, logging BoringSSL's error queue on failure.
pub(crate) fn check(rc: c_int, what: &str) -> Result<()> {
    if rc == 1 {
        return Ok(());
    }
    log::error!("{what}: {}", boring::error::ErrorStack::get());
    Err(Error::TlsFail)
}

fn c_path(path: &str) -> Result<CString> {
    CString::new(path).map_err(|_| Error::TlsFail)
}

impl BoringConfig {
    /// A fresh context with the defaults quiche has: TLS 1.3 only, peers not verified, the
    /// system's default CA locations, tickets and client session callbacks.
    pub(crate) fn new() -> Result<Self> {
        let builder = SslContextBuilder::new(SslMethod::tls()).map_err(|e| {
            log::error!("SSL_CTX_new: {e}");
            Error::TlsFail
        })?;
        let mut config = Self::from_builder(builder)?;
        // SAFETY: `config.ctx` is a valid SSL_CTX for the duration of the call.
        let rc = unsafe { ffi::SSL_CTX_set_default_verify_paths(config.ctx.as_ptr()) };
        // A system without CA locations is not an error: verification then fails per handshake.
        if rc != 1 {
            log::debug!("no default CA locations");
        }
        config.verify_peer(false);
        Ok(config)
    }

    /// Takes an application's context, adding what QUIC needs: TLS 1.3 only, the key log hook
    /// (which also hands the traffic secrets over early, see `callbacks`) chained before the
    /// application's own, and the client session callback. Its verification, certificates,
    /// curves, ticket keys and callbacks stay as the application set them.
    pub(crate) fn from_builder(mut builder: SslContextBuilder) -> Result<Self> {
        let tls13 = Some(SslVersion::TLS1_3);
        builder
            .set_min_proto_version(tls13)
            .and_then(|()| builder.set_max_proto_version(tls13))
            .map_err(|e| {
                log::error!("cannot restrict the context to TLS 1.3: {e}");
                Error::TlsFail
            })?;
        let ctx = builder.build();
        let ptr = ctx.as_ptr();
        // SAFETY: `ptr` is the valid SSL_CTX `ctx` owns; the callbacks are `extern "C"`
        // functions with the signatures BoringSSL expects, valid for the program's lifetime.
        let app_keylog = unsafe {
            let previous = ffi::SSL_CTX_get_keylog_callback(ptr);
            ffi::SSL_CTX_set_keylog_callback(ptr, Some(callbacks::keylog));
            ffi::SSL_CTX_set_session_cache_mode(
                ptr,
                (ffi::SSL_SESS_CACHE_CLIENT | ffi::SSL_SESS_CACHE_SERVER) as c_int,
            );
            ffi::SSL_CTX_sess_set_new_cb(ptr, Some(callbacks::new_session));
            previous.filter(|cb| *cb as *const () != callbacks::keylog as *const ())
        };
        Ok(BoringConfig {
            ctx,
            alpn: Arc::new(Vec::new()),
            early_data: false,
            log_keys: false,
            app_keylog,
            replay: ReplayGuard::new(DEFAULT_REPLAY_MEMORY),
        })
    }

    /// The context new connections are made from.
    pub(crate) fn context(&self) -> &SslContext {
        &self.ctx
    }

    /// The ALPN protocols a server chooses from.
    pub(crate) fn alpn(&self) -> &Arc<Vec<Vec<u8>>> {
        &self.alpn
    }

    /// The server's record of 0-RTT ClientHellos.
    pub(crate) fn replay_guard(&self) -> &ReplayGuard {
        &self.replay
    }

    /// The application's own key log callback, if its context had one.
    pub(crate) fn app_keylog(&self) -> Option<KeylogCallback> {
        self.app_keylog
    }

    /// Loads the certificate chain (leaf first) from a PEM file.
    pub(crate) fn load_cert_chain_from_pem_file(&mut self, file: &str) -> Result<()> {
        let path = c_path(file)?;
        // SAFETY: valid context and NUL-terminated path for the duration of the call.
        let rc =
            unsafe { ffi::SSL_CTX_use_certificate_chain_file(self.ctx.as_ptr(), path.as_ptr()) };
        check(rc, &format!("cannot load certificates from {file}"))
    }

    /// Loads the private key from a PEM file.
    pub(crate) fn load_priv_key_from_pem_file(&mut self, file: &str) -> Result<()> {
        let path = c_path(file)?;
        // SAFETY: valid context and NUL-terminated path for the duration of the call.
        let rc = unsafe {
            ffi::SSL_CTX_use_PrivateKey_file(
                self.ctx.as_ptr(),
                path.as_ptr(),
                ffi::SSL_FILETYPE_PEM as c_int,
            )
        };
        check(rc, &format!("cannot load a private key from {file}"))
    }

    /// Adds the CA certificates of a PEM file to the trust anchors.
    pub(crate) fn load_verify_locations_from_file(&mut self, file: &str) -> Result<()> {
        let path = c_path(file)?;
        // SAFETY: valid context and NUL-terminated path (or NULL) for the duration of the call.
        let rc = unsafe {
            ffi::SSL_CTX_load_verify_locations(self.ctx.as_ptr(), path.as_ptr(), std::ptr::null())
        };
        check(rc, &format!("cannot load CA certificates from {file}"))
    }

    /// Adds a directory of CA certificates named by subject hash (OpenSSL's `c_rehash`
    /// layout), looked up as certificates are verified.
    pub(crate) fn load_verify_locations_from_directory(&mut self, dir: &str) -> Result<()> {
        if !std::path::Path::new(dir).is_dir() {
            log::error!("no CA directory {dir}");
            return Err(Error::TlsFail);
        }
        let path = c_path(dir)?;
        // SAFETY: valid context and NUL-terminated path (or NULL) for the duration of the call.
        let rc = unsafe {
            ffi::SSL_CTX_load_verify_locations(self.ctx.as_ptr(), std::ptr::null(), path.as_ptr())
        };
        check(rc, &format!("cannot use CA directory {dir}"))
    }

    /// Whether to verify the peer: a client checks the server's chain (and name); a server
    /// asks for a client certificate and checks one if sent.
    pub(crate) fn verify_peer(&mut self, verify: bool) {
        let mode = if verify {
            ffi::SSL_VERIFY_PEER
        } else {
            ffi::SSL_VERIFY_NONE
        };
        // SAFETY: valid context; no callback.
        unsafe { ffi::SSL_CTX_set_verify(self.ctx.as_ptr(), mode as c_int, None) };
    }

    /// Sets the ALPN protocols (validated by `TlsConfig`): offered by clients, chosen from in
    /// this order by servers.
    pub(crate) fn set_application_protos(&mut self, protos: &[&[u8]]) -> Result<()> {
        let mut wire = Vec::new();
        for p in protos {
            wire.push(u8::try_from(p.len()).map_err(|_| Error::TlsFail)?);
            wire.extend_from_slice(p);
        }
        // SAFETY: valid context and buffer; the callback is an `extern "C"` function valid for
        // the program's lifetime that takes no argument pointer.
        let rc = unsafe {
            ffi::SSL_CTX_set_alpn_select_cb(
                self.ctx.as_ptr(),
                Some(callbacks::select_alpn),
                std::ptr::null_mut(),
            );
            ffi::SSL_CTX_set_alpn_protos(self.ctx.as_ptr(), wire.as_ptr(), wire.len())
        };
        // Unlike everything else, 0 means success here.
        if rc != 0 {
            return Err(Error::TlsFail);
        }
        self.alpn = Arc::new(protos.iter().map(|p| p.to_vec()).collect());
        Ok(())
    }

    /// The configured ALPN protocols.
    pub(crate) fn application_protos(&self) -> &[Vec<u8>] {
        &self.alpn
    }

    /// Enables 0-RTT for clients and servers of this context.
    pub(crate) fn enable_early_data(&mut self) {
        // SAFETY: valid context.
        unsafe { ffi::SSL_CTX_set_early_data_enabled(self.ctx.as_ptr(), 1) };
        self.early_data = true;
    }

    /// Whether 0-RTT is enabled.
    pub(crate) fn is_early_data_enabled(&self) -> bool {
        self.early_data
    }

    /// Sessions a server remembers: BoringSSL resumes from stateless tickets, so this bounds
    /// its stateful cache and the 0-RTT ClientHellos it records against replay, and 0 stops
    /// issuing tickets (no resumption at all).
    pub(crate) fn set_server_session_cache_size(&mut self, n: usize) {
        self.replay = ReplayGuard::new(n);
        let ptr = self.ctx.as_ptr();
        // SAFETY: valid context.
        unsafe {
            ffi::SSL_CTX_sess_set_cache_size(ptr, n as _);
            if n == 0 {
                ffi::SSL_CTX_set_options(ptr, ffi::SSL_OP_NO_TICKET as _);
            } else {
                ffi::SSL_CTX_clear_options(ptr, ffi::SSL_OP_NO_TICKET as _);
            }
        }
    }

    /// Enables key logging through the connections' `set_keylog` writers.
    pub(crate) fn log_keys(&mut self) {
        self.log_keys = true;
    }

    /// Whether key logging is enabled.
    pub(crate) fn is_log_keys_enabled(&self) -> bool {
        self.log_keys
    }

    /// Restricts the TLS 1.3 cipher suites, in order of preference.
    pub(crate) fn set_cipher_suites(&mut self, suites: &[CipherSuite]) -> Result<()> {
        let mut ids: Vec<u16> = Vec::with_capacity(suites.len());
        for suite in suites {
            if crate::crypto::Algorithm::from_cipher_suite(*suite).is_none() {
                return Err(Error::TlsFail);
            }
            let id = u16::from(*suite);
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        // SAFETY: valid context; `ids` holds `ids.len()` elements; no flags.
        let rc = unsafe {
            ffi::SSL_CTX_set1_tls13_ciphers(
                self.ctx.as_ptr(),
                ids.as_ptr(),
                std::ptr::null(),
                ids.len(),
            )
        };
        check(rc, "cannot set the TLS 1.3 cipher suites")
    }

    /// Sets the session ticket key (48 bytes in BoringSSL), e.g. one shared by the servers of a
    /// deployment so that each resumes the others' tickets.
    pub(crate) fn set_ticket_key(&mut self, key: &[u8]) -> Result<()> {
        // SAFETY: valid context; `key` holds `key.len()` bytes.
        let rc = unsafe {
            ffi::SSL_CTX_set_tlsext_ticket_keys(self.ctx.as_ptr(), key.as_ptr().cast(), key.len())
        };
        check(rc, "cannot set the ticket key (BoringSSL takes 48 bytes)")
    }

    /// Sets the key exchange groups, a colon-separated list in order of preference, e.g.
    /// `"X25519:P-256"`.
    pub(crate) fn set_curves_list(&mut self, curves: &str) -> Result<()> {
        let list = CString::new(curves).map_err(|_| Error::TlsFail)?;
        // SAFETY: valid context and NUL-terminated list for the duration of the call.
        let rc = unsafe { ffi::SSL_CTX_set1_groups_list(self.ctx.as_ptr(), list.as_ptr()) };
        check(rc, &format!("unknown group in {curves:?}"))
    }
}

impl fmt::Debug for BoringConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("backend", &"boringssl")
            .field("alpn", &self.alpn)
            .field("early_data", &self.early_data)
            .field("log_keys", &self.log_keys)
            .finish_non_exhaustive()
    }
}
