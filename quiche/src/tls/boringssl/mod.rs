//! The BoringSSL backend (feature `boringssl-boring-crate`): the handshake through BoringSSL's
//! QUIC API (`SSL_QUIC_METHOD`, `SSL_provide_quic_data`), on the `boring`/`boring-sys` crates
//! as quiche uses them. It is quiche's backend: applications configure it through their own
//! `SslContextBuilder` or `SSL *`, and sessions are BoringSSL's, serializable across processes.
//!
//! BoringSSL hands out traffic secrets; the packet keys are derived from them here, on *ring*,
//! exactly as for Initial keys (`state`), so packet protection is the same whichever backend
//! ran the handshake.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fmt;
use std::io::Write;

use boring::ssl::{NameType, Ssl, SslRef};
use boring_sys as ffi;
use foreign_types_shared::{ForeignType, ForeignTypeRef};

pub(crate) use self::config::BoringConfig;

use self::callbacks::{state_index, QUIC_METHOD};
use self::state::QuicState;
use super::early_data_reason::NO_SESSION_OFFERED;
use super::keylog::ConnKeyLog;
use super::{Backend, CipherSuite, DirectionalKeys, HandshakeEvent};
use crate::error::{Error, Result};
use crate::packet::Epoch;

mod callbacks;
mod config;
pub(crate) mod in_handshake;
mod replay;
mod session;
mod state;

/// The TLS handshake of one connection, on BoringSSL.
pub(crate) struct BoringHandshake {
    ssl: Ssl,
    /// Whether we made the `SSL` (and may make it again for a client's new first flight);
    /// false for an application's own (`quiche_conn_new_with_tls`).
    made_here: bool,
    is_server: bool,
    /// TLS has been given the transport parameters: a client's ClientHello is built, a server
    /// was fed its first bytes.
    started: bool,
    /// The encoded transport parameters, until TLS takes them.
    params: Vec<u8>,
    /// The name a client was given: SNI, and the name its certificate is checked against.
    client_server_name: Option<String>,
    /// The session given to `set_session`, offered again by a client's new first flight.
    resume: Option<Vec<u8>>,
    /// The server's transport parameters remembered with that session.
    remembered_params: Option<Vec<u8>>,
    /// The first fatal error; every later call that feeds the handshake returns it again.
    error: Option<Error>,
    /// A server's record of 0-RTT ClientHellos, and what it received of the ClientHello until
    /// it is whole: BoringSSL reads it only then, after the replay check.
    replay: Option<(replay::ReplayGuard, Vec<u8>)>,
    /// Early data was turned off for the ClientHello only: on again once it was read, so that
    /// the tickets this connection issues still allow 0-RTT (BoringSSL writes the limit into
    /// each ticket from the same switch).
    early_data_refused_once: bool,
    /// The config enables early data (unknown, so false, for an application's own `SSL`).
    early_data_enabled: bool,
}

/// BoringSSL's encryption level of an epoch.
fn level_of(epoch: Epoch) -> ffi::ssl_encryption_level_t {
    ffi::ssl_encryption_level_t(match epoch {
        Epoch::Initial => 0,
        Epoch::Handshake => 2,
        Epoch::Application => 3,
    })
}

impl BoringHandshake {
    /// Starts a client handshake (see `Handshake::new_client`).
    pub(crate) fn new_client(
        cfg: &mut BoringConfig,
        server_name: Option<&str>,
        local_transport_params: Vec<u8>,
    ) -> Result<Self> {
        if let Some(name) = server_name {
            // The same names as with rustls are accepted (DNS names and IP addresses).
            if ::rustls::pki_types::ServerName::try_from(name).is_err() {
                log::error!("invalid server name {name:?}");
                return Err(Error::TlsFail);
            }
        }
        let ssl = Self::new_ssl(cfg)?;
        let mut hs = Self::adopt(ssl, false, true, Some(cfg))?;
        hs.params = local_transport_params;
        hs.client_server_name = server_name.map(str::to_owned);
        hs.set_peer_name()?;
        Ok(hs)
    }

    /// Starts a server handshake (see `Handshake::new_server`).
    pub(crate) fn new_server(
        cfg: &mut BoringConfig,
        local_transport_params: Vec<u8>,
    ) -> Result<Self> {
        let ssl = Self::new_ssl(cfg)?;
        let mut hs = Self::adopt(ssl, true, true, Some(cfg))?;
        hs.params = local_transport_params;
        hs.replay = Some((cfg.replay_guard().clone(), Vec::new()));
        hs.early_data_enabled = cfg.is_early_data_enabled();
        Ok(hs)
    }

    /// Takes over an application's configured `SSL` (`quiche_conn_new_with_tls`): its own
    /// context supplies verification, certificates, ALPN and the key log.
    pub(crate) fn from_ssl(
        ssl: Ssl,
        is_server: bool,
        local_transport_params: Vec<u8>,
    ) -> Result<Self> {
        let mut hs = Self::adopt(ssl, is_server, false, None)?;
        hs.params = local_transport_params;
        Ok(hs)
    }

    fn new_ssl(cfg: &BoringConfig) -> Result<Ssl> {
        Ssl::new(cfg.context()).map_err(|e| {
            log::error!("SSL_new: {e}");
            Error::TlsFail
        })
    }

    /// Makes `ssl` a QUIC connection of ours: its state, the QUIC hooks, its role.
    fn adopt(
        mut ssl: Ssl,
        is_server: bool,
        made_here: bool,
        cfg: Option<&BoringConfig>,
    ) -> Result<Self> {
        let index = state_index().ok_or(Error::TlsFail)?;
        let alpn = cfg.map(|c| c.alpn().clone()).unwrap_or_default();
        let mut state = QuicState::new(is_server, alpn);
        if let Some(cfg) = cfg {
            state.app_keylog = cfg.app_keylog();
            if cfg.is_log_keys_enabled() {
                state.keylog = Some(ConnKeyLog::new());
            }
        }
        ssl.set_ex_data(index, state);
        let ptr = ssl.as_ptr();
        // SAFETY: `ptr` is the valid SSL `ssl` owns; `QUIC_METHOD` is a static.
        let rc = unsafe {
            if is_server {
                ffi::SSL_set_accept_state(ptr);
            } else {
                ffi::SSL_set_connect_state(ptr);
            }
            ffi::SSL_set_quic_method(ptr, &QUIC_METHOD)
        };
        config::check(rc, "SSL_set_quic_method")?;
        Ok(BoringHandshake {
            ssl,
            made_here,
            is_server,
            started: false,
            params: Vec::new(),
            client_server_name: None,
            resume: None,
            remembered_params: None,
            error: None,
            replay: None,
            early_data_refused_once: false,
            early_data_enabled: false,
        })
    }

    /// A client's server name: SNI for a host name, and the identity its certificate must
    /// carry (checked only when the config verifies peers).
    fn set_peer_name(&mut self) -> Result<()> {
        let Some(name) = self.client_server_name.clone() else {
            return Ok(());
        };
        let c_name = CString::new(name.as_str()).map_err(|_| Error::TlsFail)?;
        let ptr = self.ssl.as_ptr();
        // SAFETY: valid `ssl`, NUL-terminated name; BoringSSL copies both.
        let rc = unsafe {
            let param = ffi::SSL_get0_param(ptr);
            if name.parse::<std::net::IpAddr>().is_ok() {
                // An address is checked but not sent: SNI carries host names only (RFC 6066 §3).
                ffi::X509_VERIFY_PARAM_set1_ip_asc(param, c_name.as_ptr())
            } else {
                ffi::SSL_set_tlsext_host_name(ptr, c_name.as_ptr())
                    & ffi::X509_VERIFY_PARAM_set1_host(param, c_name.as_ptr(), name.len())
            }
        };
        config::check(rc, "cannot set the server name")
    }

    fn state(&self) -> Option<&QuicState> {
        self.ssl.ex_data(state_index()?)
    }

    fn state_mut(&mut self) -> Option<&mut QuicState> {
        self.ssl.ex_data_mut(state_index()?)
    }

    /// The `SSL`, for `AsMut<SslRef> for Connection`.
    pub(crate) fn ssl_mut(&mut self) -> &mut SslRef {
        &mut self.ssl
    }

    /// Gives TLS the transport parameters (and a server its early data context); a client
    /// then builds its ClientHello.
    fn start(&mut self) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.started {
            return Ok(());
        }
        self.started = true;
        let params = self.params.clone();
        if let Some(state) = self.state_mut() {
            state.local_params = params;
        }
        let ptr = self.ssl.as_ptr();
        // SAFETY: valid `ssl` and buffer; BoringSSL copies the parameters.
        let rc = unsafe {
            ffi::SSL_set_quic_transport_params(ptr, self.params.as_ptr(), self.params.len())
        };
        self.check(rc)?;
        if self.is_server {
            // Parameters that do not parse (TLS does not read them) must match byte for byte.
            let context =
                session::early_data_context(&self.params).unwrap_or_else(|| self.params.clone());
            // SAFETY: valid `ssl` and buffer; BoringSSL copies the context.
            let rc = unsafe {
                ffi::SSL_set_quic_early_data_context(ptr, context.as_ptr(), context.len())
            };
            self.check(rc)?;
            return Ok(());
        }
        self.do_handshake()
    }

    /// Turns a BoringSSL failure into the handshake's sticky error: the alert BoringSSL raised,
    /// or `TlsFail`.
    fn fail(&mut self) -> Error {
        let error = match self.state().and_then(|s| s.alert) {
            Some(alert) => Error::TlsAlert(alert),
            None => Error::TlsFail,
        };
        let stack = boring::error::ErrorStack::get();
        let no_alpn = stack.errors().iter().any(|e| {
            e.library_reason(ffi::ERR_LIB_SSL) == Some(ffi::SSL_R_NO_APPLICATION_PROTOCOL)
        });
        if no_alpn && !self.is_server {
            // A configuration mistake, not the peer's doing: say so where it will be seen.
            // quiche 0.30 fails the same way (TlsFail at the first send), silently.
            log::error!(
                "TLS: BoringSSL builds no QUIC ClientHello without ALPN (RFC 9001 §8.1): \
                 set the application protocols (Config::set_application_protos, \
                 quiche_config_set_application_protos)"
            );
        } else {
            log::debug!("TLS handshake failed: {stack} ({error:?})");
        }
        self.error = Some(error);
        error
    }

    fn check(&mut self, rc: std::ffi::c_int) -> Result<()> {
        if rc == 1 {
            return self.callback_error();
        }
        Err(self.fail())
    }

    /// A failure inside a callback (keys that could not be derived) fails the handshake.
    fn callback_error(&mut self) -> Result<()> {
        match self.state().and_then(|s| s.error) {
            Some(e) => {
                self.error = Some(e);
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// Runs `call` on the `SSL` with the state marked as inside a TLS call, so that the
    /// callbacks it runs may change the connection's settings (see `in_handshake`).
    fn tls_call<T>(&mut self, call: impl FnOnce(*mut ffi::SSL) -> T) -> T {
        self.set_in_tls_call(true);
        let result = call(self.ssl.as_ptr());
        self.set_in_tls_call(false);
        result
    }

    fn set_in_tls_call(&mut self, on: bool) {
        if let Some(state) = self.state_mut() {
            state.in_tls_call = on;
        }
    }

    /// Takes what handshake callbacks changed through quiche's `set_*_in_handshake`.
    pub(crate) fn take_overrides(&mut self) -> Option<in_handshake::HandshakeOverrides> {
        let state = self.state_mut()?;
        (!state.overrides.is_empty()).then(|| std::mem::take(&mut state.overrides))
    }

    /// Runs the handshake as far as the data provided so far allows.
    fn do_handshake(&mut self) -> Result<()> {
        let ptr = self.ssl.as_ptr();
        loop {
            // SAFETY: valid `ssl`; the callbacks reach our state through its ex_data, which
            // nothing borrows during the call.
            let rc = self.tls_call(|ssl| unsafe { ffi::SSL_do_handshake(ssl) });
            if rc == 1 {
                // Done, or returned early: a client that sent 0-RTT, a server that accepted it.
                return self.callback_error();
            }
            // SAFETY: valid `ssl`, and `rc` is the result of the call just made on it.
            let code = unsafe { ffi::SSL_get_error(ptr, rc) };
            match code {
                ffi::SSL_ERROR_WANT_READ => return self.callback_error(),
                ffi::SSL_ERROR_EARLY_DATA_REJECTED => {
                    // The server refused our 0-RTT: the handshake goes on without it, and the
                    // connection sends again in 1-RTT what 0-RTT carried.
                    // SAFETY: valid `ssl`, in the state this call expects.
                    unsafe { ffi::SSL_reset_early_data_reject(ptr) };
                }
                _ => return Err(self.fail()),
            }
        }
    }

    /// The peer's certificates, leaf first, as BoringSSL keeps them.
    fn peer_certificates(&self) -> Option<Vec<&[u8]>> {
        // SAFETY: valid `ssl`; the stack and its buffers are owned by it and live as long as
        // `self` (they change only during the handshake, which needs `&mut self`).
        unsafe {
            let stack = ffi::SSL_get0_peer_certificates(self.ssl.as_ptr());
            if stack.is_null() {
                return None;
            }
            let n = ffi::OPENSSL_sk_num(stack.cast());
            let mut chain = Vec::with_capacity(n);
            for i in 0..n {
                let buf = ffi::OPENSSL_sk_value(stack.cast(), i).cast::<ffi::CRYPTO_BUFFER>();
                if buf.is_null() {
                    continue;
                }
                let data = ffi::CRYPTO_BUFFER_data(buf);
                let len = ffi::CRYPTO_BUFFER_len(buf);
                chain.push(std::slice::from_raw_parts(data, len));
            }
            Some(chain)
        }
    }

    /// Gives TLS in-order CRYPTO data of `epoch` and runs the handshake on.
    fn feed(&mut self, epoch: Epoch, data: &[u8]) -> Result<()> {
        let ptr = self.ssl.as_ptr();
        // SAFETY: valid `ssl` and buffer; BoringSSL copies the data.
        let rc =
            unsafe { ffi::SSL_provide_quic_data(ptr, level_of(epoch), data.as_ptr(), data.len()) };
        if rc != 1 {
            return Err(self.fail());
        }
        if self.is_handshaking() {
            return self.do_handshake();
        }
        // SAFETY: valid `ssl`; post-handshake messages (tickets) go through the callbacks.
        let rc = self.tls_call(|ssl| unsafe { ffi::SSL_process_quic_post_handshake(ssl) });
        self.check(rc)
    }

    /// A server's ClientHello, once whole: a replay of one that already brought early data
    /// gets its early data refused (see `replay`), then TLS reads it.
    fn check_client_hello(&mut self) -> Result<()> {
        let Some((guard, hello)) = &self.replay else {
            return Ok(());
        };
        match crate::tls::hello::first_message_len(hello) {
            // Whole; or no ClientHello that fits at all, which TLS refuses at once.
            Some(len) if hello.len() >= len => {}
            Some(len) if hello[0] != 1 || len > crate::tls::hello::MAX_CLIENT_HELLO => {}
            _ => return Ok(()),
        }
        if let Some(psk) = crate::tls::hello::client_hello_early_data_psk(hello) {
            if !guard.admit(psk) {
                log::debug!("refusing the early data of a replayed ClientHello");
                self.refuse_early_data_once();
            }
        }
        let Some((_, hello)) = self.replay.take() else {
            return Ok(());
        };
        let fed = self.feed(Epoch::Initial, &hello);
        if self.early_data_refused_once && self.read_epoch() != Epoch::Initial {
            self.early_data_refused_once = false;
            // SAFETY: valid `ssl`; the ClientHello was read, only tickets see this now.
            unsafe { ffi::SSL_set_early_data_enabled(self.ssl.as_ptr(), 1) };
        }
        fed
    }

    /// Turns early data off for the ClientHello not yet read (on again afterwards if the
    /// config enables it, see `early_data_refused_once`).
    fn refuse_early_data_once(&mut self) {
        // SAFETY: valid `ssl`; takes effect on the ClientHello not yet provided.
        unsafe { ffi::SSL_set_early_data_enabled(self.ssl.as_ptr(), 0) };
        self.early_data_refused_once = self.early_data_enabled;
    }

    /// Makes a new `SSL` for a client's new first flight.
    fn remake_client(&mut self, params: Vec<u8>) -> Result<()> {
        let ctx = self.ssl.ssl_context().to_owned();
        let ssl = Ssl::new(&ctx).map_err(|_| Error::TlsFail)?;
        let (alpn, app_keylog, keylog) = match self.state_mut() {
            Some(s) => (s.alpn.clone(), s.app_keylog, s.keylog.take()),
            None => return Err(Error::InvalidState),
        };
        let mut fresh = Self::adopt(ssl, false, true, None)?;
        if let Some(state) = fresh.state_mut() {
            state.alpn = alpn;
            state.app_keylog = app_keylog;
            state.keylog = keylog;
        }
        fresh.params = params;
        fresh.client_server_name = self.client_server_name.take();
        fresh.set_peer_name()?;
        if let Some(session) = self.resume.take() {
            // An unusable session was refused the first time already.
            let _ = fresh.set_session(&session);
        }
        *self = fresh;
        Ok(())
    }
}

impl Backend for BoringHandshake {
    fn set_transport_params(&mut self, local_transport_params: Vec<u8>) -> Result<()> {
        if self.started {
            return Err(Error::InvalidState);
        }
        self.params = local_transport_params;
        Ok(())
    }

    fn set_version(&mut self, version: u32) -> Result<()> {
        let state = self.state_mut().ok_or(Error::InvalidState)?;
        if version != state.key_version && state.have_handshake_keys() {
            return Err(Error::InvalidState);
        }
        // BoringSSL knows nothing of QUIC versions: only the labels of our key derivation
        // change, so a client may be switched at any point before its Handshake keys.
        state.key_version = version;
        Ok(())
    }

    fn capture_secrets(&mut self) -> Result<()> {
        // Secrets always reach us; only the moment is checked, as with rustls.
        if self.started || self.is_server {
            return Err(Error::InvalidState);
        }
        Ok(())
    }

    fn restart_client(&mut self, local_transport_params: Vec<u8>) -> Result<()> {
        if self.is_server || !self.made_here {
            return Err(Error::InvalidState);
        }
        let version = self.state().map(|s| s.key_version);
        self.remake_client(local_transport_params)?;
        if let (Some(version), Some(state)) = (version, self.state_mut()) {
            state.key_version = version;
        }
        Ok(())
    }

    fn next_event(&mut self) -> Result<Option<HandshakeEvent>> {
        if !self.is_server {
            self.start()?;
        }
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(self.state_mut().and_then(|s| s.events.pop_front()))
    }

    fn read_epoch(&self) -> Epoch {
        self.state().map_or(Epoch::Initial, |s| s.read_epoch)
    }

    fn write_epoch(&self) -> Epoch {
        self.state().map_or(Epoch::Initial, |s| s.write_epoch)
    }

    fn provide_data(&mut self, epoch: Epoch, data: &[u8]) -> Result<()> {
        self.start()?;
        if epoch != self.read_epoch() {
            return Err(Error::ProtocolViolation);
        }
        if data.is_empty() {
            return Ok(());
        }
        if let Some((_, hello)) = &mut self.replay {
            if hello.len() + data.len() > crate::tls::hello::MAX_CLIENT_HELLO {
                return Err(Error::CryptoBufferExceeded);
            }
            hello.extend_from_slice(data);
            return self.check_client_hello();
        }
        self.feed(epoch, data)
    }

    fn is_server(&self) -> bool {
        self.is_server
    }

    fn is_handshaking(&self) -> bool {
        // SAFETY: valid `ssl`.
        unsafe { ffi::SSL_in_init(self.ssl.as_ptr()) == 1 }
    }

    fn peer_transport_params(&self) -> Option<&[u8]> {
        let mut params: *const u8 = std::ptr::null();
        let mut len = 0usize;
        // SAFETY: valid `ssl`; the parameters are owned by it and outlive `&self`.
        unsafe {
            ffi::SSL_get_peer_quic_transport_params(self.ssl.as_ptr(), &mut params, &mut len)
        };
        if !params.is_null() && len > 0 {
            // SAFETY: BoringSSL reports `len` readable bytes owned by `ssl`.
            return Some(unsafe { std::slice::from_raw_parts(params, len) });
        }
        self.remembered_params.as_deref()
    }

    fn alpn(&self) -> Option<&[u8]> {
        self.ssl.selected_alpn_protocol()
    }

    fn server_name(&self) -> Option<&str> {
        if self.is_server {
            self.ssl.servername(NameType::HOST_NAME)
        } else {
            self.client_server_name.as_deref()
        }
    }

    fn is_resumed(&self) -> bool {
        self.ssl.session_reused()
    }

    fn zero_rtt_keys(&self) -> Option<DirectionalKeys> {
        self.state()?.zero_rtt_keys()
    }

    fn is_early_data_accepted(&self) -> bool {
        // SAFETY: valid `ssl`.
        unsafe { ffi::SSL_early_data_accepted(self.ssl.as_ptr()) == 1 }
    }

    fn session_offered(&self) -> bool {
        if !self.is_server {
            return self.resume.is_some();
        }
        // BoringSSL's reason says whether the ClientHello offered a ticket, except when early
        // data is off, where it does not look; a resumed session was offered all the same.
        let reason = self.early_data_reason().unwrap_or(0);
        self.is_resumed() || !matches!(reason, 0 | 1 | NO_SESSION_OFFERED)
    }

    fn early_data_reason(&self) -> Option<u32> {
        // SAFETY: valid `ssl`.
        Some(unsafe { ffi::SSL_get_early_data_reason(self.ssl.as_ptr()) }.0 as u32)
    }

    fn reject_early_data(&mut self) -> Result<()> {
        let fed = self.state().is_none_or(|s| s.read_epoch != Epoch::Initial);
        if !self.is_server || fed || self.error.is_some() {
            return Err(Error::InvalidState);
        }
        self.refuse_early_data_once();
        Ok(())
    }

    fn cipher_suite(&self) -> Option<CipherSuite> {
        let cipher = self.ssl.current_cipher()?;
        // SAFETY: a valid, static cipher description.
        let id = unsafe { ffi::SSL_CIPHER_get_protocol_id(cipher.as_ptr()) };
        Some(CipherSuite::from(id))
    }

    fn peer_cert_chain(&self) -> Option<Vec<&[u8]>> {
        self.peer_certificates()
    }

    fn peer_cert(&self) -> Option<&[u8]> {
        self.peer_certificates()?.first().copied()
    }

    fn alert(&self) -> Option<u8> {
        self.state()?.alert
    }

    fn session(&self) -> Option<&[u8]> {
        self.state()?.session.as_deref()
    }

    fn set_session(&mut self, encoded: &[u8]) -> Result<()> {
        if self.is_server || self.started {
            return Err(Error::InvalidState);
        }
        let (bytes, params) = session::decode(encoded).inspect_err(|_| {
            log::warn!("set_session: not a session in quiche's encoding");
        })?;
        let ctx = self.ssl.ssl_context().as_ptr();
        // SAFETY: valid buffer and context; the session is owned here and freed below (the
        // `SSL` takes its own reference).
        let rc = unsafe {
            let sess = ffi::SSL_SESSION_from_bytes(bytes.as_ptr(), bytes.len(), ctx);
            if sess.is_null() {
                log::warn!(
                    "set_session: BoringSSL cannot read the session: {}",
                    boring::error::ErrorStack::get()
                );
                return Err(Error::TlsFail);
            }
            let rc = ffi::SSL_set_session(self.ssl.as_ptr(), sess);
            ffi::SSL_SESSION_free(sess);
            rc
        };
        config::check(rc, "SSL_set_session")?;
        self.remembered_params = (!params.is_empty()).then(|| params.to_vec());
        self.resume = Some(encoded.to_vec());
        Ok(())
    }

    fn set_keylog(&mut self, writer: Box<dyn Write + Send>) -> Result<()> {
        let keylog = self
            .state()
            .and_then(|s| s.keylog.as_ref())
            .ok_or(Error::InvalidState)?;
        keylog.set_writer(writer);
        Ok(())
    }

    #[cfg(any(test, feature = "fuzzing"))]
    fn fuzz_take_local_params(&mut self) -> Option<Vec<u8>> {
        (!self.started).then(|| std::mem::take(&mut self.params))
    }
}

impl fmt::Debug for BoringHandshake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoringHandshake")
            .field("is_server", &self.is_server)
            .field("started", &self.started)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}
