//! The rustls backend (the default): the handshake through rustls's QUIC support.
//!
//! rustls hands out packet keys (built on *ring*, as ours are) rather than secrets, builds a
//! client's ClientHello as soon as its connection object exists (so that object is created
//! lazily, once `set_session` can no longer be called), and cannot serialize a client session
//! (see `session`).

use std::collections::VecDeque;
use std::fmt;
use std::io::Write;
use std::sync::Arc;

use rustls::client::Resumption;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::quic::KeyChange;
use rustls::{ClientConfig, HandshakeKind};

pub(crate) use self::config::RustlsConfig;

use self::session::ConnSessionStore;
use self::version::SecretLog;
use super::keylog::ConnKeyLog;
use super::{Backend, CipherSuite, DirectionalKeys, HandshakeEvent, NextSecrets};
use crate::error::{Error, Result};
use crate::packet::Epoch;

mod config;
mod keylog;
mod session;
mod verify;
mod version;

enum State {
    /// A client whose ClientHello is not built yet: rustls builds it, and looks up the session
    /// to resume, as soon as the connection object exists, so creating it waits until
    /// `set_session` can no longer be called.
    ClientPending {
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
        params: Vec<u8>,
    },
    /// A server waiting for its transport parameters: they echo the client's original
    /// Destination Connection ID, known only once its first Initial arrives (RFC 9000 §7.3).
    ServerPending {
        config: Arc<rustls::ServerConfig>,
        params: Vec<u8>,
    },
    /// Boxed: a rustls connection is over a kilobyte.
    Running(Box<rustls::quic::Connection>),
    /// A server whose handshake completed and whose tickets were taken out: rustls has
    /// nothing more to do (a QUIC client sends no TLS message after its Finished, RFC 9001
    /// §4.1.3), so its state (about 4 KB: record-layer keys QUIC never uses, the deframer, the
    /// handshake state) is freed and only what the API still reports is kept.
    Settled(Box<Settled>),
    /// rustls refused to create the connection.
    Failed,
}

/// What a settled server handshake still reports.
struct Settled {
    peer_transport_params: Option<Vec<u8>>,
    alpn: Option<Vec<u8>>,
    server_name: Option<String>,
    resumed: bool,
    early_data_accepted: bool,
    cipher_suite: Option<CipherSuite>,
    peer_certificates: Option<Vec<CertificateDer<'static>>>,
}

impl Settled {
    fn of(conn: &rustls::quic::Connection) -> Self {
        let server_name = match conn {
            rustls::quic::Connection::Server(server) => server.server_name().map(str::to_owned),
            rustls::quic::Connection::Client(_) => None,
        };
        Settled {
            peer_transport_params: conn.quic_transport_parameters().map(<[u8]>::to_vec),
            alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
            server_name,
            resumed: conn.handshake_kind() == Some(HandshakeKind::Resumed),
            early_data_accepted: conn.zero_rtt_keys().is_some(),
            cipher_suite: conn.negotiated_cipher_suite().map(|s| s.suite()),
            peer_certificates: conn.peer_certificates().map(<[CertificateDer<'_>]>::to_vec),
        }
    }
}

/// The TLS handshake of one connection, on rustls.
pub(crate) struct RustlsHandshake {
    state: State,
    /// The name the client was given, for `server_name` (the server asks rustls for the SNI).
    client_server_name: Option<String>,
    /// The epoch in which rustls's next handshake bytes must be sent.
    write_epoch: Epoch,
    have_handshake_keys: bool,
    have_one_rtt_keys: bool,
    events: VecDeque<HandshakeEvent>,
    keylog: Option<Arc<ConnKeyLog>>,
    /// Clients only.
    sessions: Option<Arc<ConnSessionStore>>,
    /// A client's rustls config and server name, kept so that the handshake can start again
    /// after Version Negotiation ([`Self::restart_client`]).
    client_origin: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// The session handle given to `set_session`, kept so that the ClientHello built again
    /// after Version Negotiation offers a ticket too (the first one consumed its ticket).
    resume_handle: Option<Vec<u8>>,
    /// The first fatal error; every later call that feeds the handshake returns it again.
    error: Option<Error>,
    /// The QUIC version the rustls connection is (or will be) made for.
    quic_version: u32,
    /// The QUIC version whose labels Handshake and 1-RTT keys use: differs from `quic_version`
    /// only on a client that a server switched to another compatible version (RFC 9368 §2.3).
    key_version: u32,
    /// A client's traffic secrets, kept when it may be switched to another version.
    secret_log: Option<Arc<SecretLog>>,
    /// A server's ClientHello bytes until it is whole (`None` once it was looked at, and on a
    /// client): rustls does not say whether the client offered a session.
    hello_scan: Option<Vec<u8>>,
    /// The client offered a session (client: given one by `set_session`; server: its
    /// ClientHello has a pre_shared_key extension).
    session_offered: bool,
}

fn rustls_err(e: rustls::Error) -> Error {
    log::error!("TLS error: {e}");
    Error::TlsFail
}

impl RustlsHandshake {
    /// Starts a client handshake.
    ///
    /// `server_name` is sent as SNI and checked against the server's certificate; an IP address
    /// is checked against the certificate but not sent (RFC 6066 §3 allows only host names).
    /// Without a name no SNI is sent and only the certificate chain is verified, as with
    /// OpenSSL/BoringSSL when no host is set. `local_transport_params` is the encoded
    /// quic_transport_parameters extension (RFC 9000 §18).
    pub fn new_client(
        cfg: &mut RustlsConfig,
        server_name: Option<&str>,
        local_transport_params: Vec<u8>,
    ) -> Result<Self> {
        let base = cfg.client_config()?;
        let name = match server_name {
            Some(name) => ServerName::try_from(name)
                .map_err(|e| {
                    log::error!("invalid server name {name:?}: {e}");
                    Error::TlsFail
                })?
                .to_owned(),
            None => verify::unnamed_server(),
        };
        // The per-connection copy shares every Arc of the cached config (so resumption sees the
        // same verifier) but has its own session store, which is what lets `session` return this
        // connection's tickets, and its own key log.
        let sessions = Arc::new(ConnSessionStore::new(cfg.sessions().clone())?);
        let mut config = ClientConfig::clone(&base);
        config.resumption = Resumption::store(sessions.clone());
        let keylog = cfg
            .is_log_keys_enabled()
            .then(|| Arc::new(ConnKeyLog::new()));
        if let Some(keylog) = &keylog {
            config.key_log = keylog.clone();
        }
        Ok(RustlsHandshake {
            state: State::ClientPending {
                config: Arc::new(config),
                name,
                params: local_transport_params,
            },
            client_server_name: server_name.map(str::to_owned),
            write_epoch: Epoch::Initial,
            have_handshake_keys: false,
            have_one_rtt_keys: false,
            events: VecDeque::new(),
            keylog,
            sessions: Some(sessions),
            client_origin: None,
            resume_handle: None,
            error: None,
            quic_version: crate::packet::QUIC_V1,
            key_version: crate::packet::QUIC_V1,
            secret_log: None,
            hello_scan: None,
            session_offered: false,
        })
    }

    /// Starts a server handshake. Fails if the config has no certificate and key.
    pub fn new_server(cfg: &mut RustlsConfig, local_transport_params: Vec<u8>) -> Result<Self> {
        let mut config = cfg.server_config()?;
        // The key log lives in the rustls config, which is shared by all connections: a
        // connection that logs keys gets a shallow copy holding its own key log, so each line
        // reaches the right writer without matching client randoms across connections. The copy
        // shares the session cache and certificate, and costs one allocation per connection.
        let keylog = cfg
            .is_log_keys_enabled()
            .then(|| Arc::new(ConnKeyLog::new()));
        if let Some(keylog) = &keylog {
            let mut own = rustls::ServerConfig::clone(&config);
            own.key_log = keylog.clone();
            config = Arc::new(own);
        }
        Ok(RustlsHandshake {
            state: State::ServerPending {
                config,
                params: local_transport_params,
            },
            client_server_name: None,
            write_epoch: Epoch::Initial,
            have_handshake_keys: false,
            have_one_rtt_keys: false,
            events: VecDeque::new(),
            keylog,
            sessions: None,
            client_origin: None,
            resume_handle: None,
            error: None,
            quic_version: crate::packet::QUIC_V1,
            key_version: crate::packet::QUIC_V1,
            secret_log: None,
            hello_scan: Some(Vec::new()),
            session_offered: false,
        })
    }

    /// Notes whether a server's ClientHello offers a session, once it is whole. The first
    /// CRYPTO bytes usually hold all of it and are read in place; otherwise they are kept
    /// until it is (bounded like any ClientHello; past that, rustls refuses it anyway).
    fn scan_client_hello(&mut self, data: &[u8]) {
        let Some(kept) = &mut self.hello_scan else {
            return;
        };
        let hello: &[u8] = if kept.is_empty() {
            data
        } else {
            kept.extend_from_slice(data);
            kept
        };
        match crate::tls::hello::first_message_len(hello) {
            Some(len) if hello.len() >= len => {
                self.session_offered = crate::tls::hello::client_hello_offers_psk(hello);
                self.hello_scan = None;
            }
            Some(len) if len > crate::tls::hello::MAX_CLIENT_HELLO => self.hello_scan = None,
            _ if kept.is_empty() => kept.extend_from_slice(data),
            _ => {}
        }
    }

    /// Builds a pending client's ClientHello, or a pending server's connection.
    fn start(&mut self) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if !matches!(
            self.state,
            State::ClientPending { .. } | State::ServerPending { .. }
        ) {
            return Ok(());
        }
        let created = match std::mem::replace(&mut self.state, State::Failed) {
            State::ClientPending {
                config,
                name,
                params,
            } => {
                self.client_origin = Some((config.clone(), name.clone()));
                rustls::quic::ClientConnection::new(
                    config,
                    version::rustls_version(self.quic_version),
                    name,
                    params,
                )
                .map(rustls::quic::Connection::from)
            }
            State::ServerPending { config, params } => rustls::quic::ServerConnection::new(
                config,
                version::rustls_version(self.quic_version),
                params,
            )
            .map(rustls::quic::Connection::from),
            other => {
                self.state = other;
                return Ok(());
            }
        };
        match created {
            Ok(conn) => {
                self.state = State::Running(Box::new(conn));
                self.drain();
                Ok(())
            }
            Err(e) => {
                let e = rustls_err(e);
                self.error = Some(e);
                Err(e)
            }
        }
    }

    fn conn(&self) -> Option<&rustls::quic::Connection> {
        match &self.state {
            State::Running(conn) => Some(conn.as_ref()),
            _ => None,
        }
    }

    /// A server whose handshake completed keeps only what the API reports (see
    /// [`State::Settled`]); called after [`Self::drain`] took out its last bytes (tickets).
    fn settle_server(&mut self) {
        let State::Running(conn) = &self.state else {
            return;
        };
        let rustls::quic::Connection::Server(server) = conn.as_ref() else {
            return;
        };
        if server.is_handshaking() || self.error.is_some() {
            return;
        }
        self.state = State::Settled(Box::new(Settled::of(conn)));
    }

    fn peer_certificates(&self) -> Option<&[CertificateDer<'static>]> {
        match &self.state {
            State::Settled(settled) => settled.peer_certificates.as_deref(),
            State::Running(conn) => conn.peer_certificates(),
            _ => None,
        }
    }

    /// Whether the rustls state was freed ([`State::Settled`]).
    #[cfg(test)]
    pub(crate) fn is_settled(&self) -> bool {
        self.settled().is_some()
    }

    fn settled(&self) -> Option<&Settled> {
        match &self.state {
            State::Settled(settled) => Some(settled),
            _ => None,
        }
    }

    /// Moves everything rustls has to say into `events`.
    ///
    /// `write_hs` appends the queued messages up to the first one that needs keys not yet handed
    /// out, then returns those keys: the bytes belong to the level that was current before the
    /// key change. The only exception would be a pending key change whose first queued message
    /// already needs it; rustls queues such messages either right behind an unencrypted one of
    /// the same flight (the server's ServerHello) or after the key change, which this drain,
    /// run after every `read_hs`, has always collected by then.
    fn drain(&mut self) {
        let State::Running(conn) = &mut self.state else {
            return;
        };
        loop {
            let mut data = Vec::new();
            let change = conn.write_hs(&mut data);
            if !data.is_empty() {
                let epoch = self.write_epoch;
                match self.events.back_mut() {
                    Some(HandshakeEvent::Data { epoch: e, data: d }) if *e == epoch => {
                        d.extend_from_slice(&data)
                    }
                    _ => self.events.push_back(HandshakeEvent::Data { epoch, data }),
                }
            }
            // A client switched to another version after its ClientHello: rustls's keys carry
            // the original version's labels, ours are derived from the logged secrets.
            let rederive = match &self.secret_log {
                Some(log) if self.key_version != self.quic_version => {
                    let alg = conn
                        .negotiated_cipher_suite()
                        .and_then(|s| crate::crypto::Algorithm::from_cipher_suite(s.suite()));
                    alg.map(|alg| (log.clone(), alg, crate::crypto::labels(self.key_version)))
                }
                _ => None,
            };
            match change {
                None => break,
                Some(KeyChange::Handshake { keys }) => {
                    self.write_epoch = Epoch::Handshake;
                    self.have_handshake_keys = true;
                    let keys = match &rederive {
                        Some((log, alg, labels)) => match log.handshake_keys(*alg, labels) {
                            Ok(k) => k,
                            Err(e) => {
                                self.error = Some(e);
                                return;
                            }
                        },
                        None => keys,
                    };
                    self.events.push_back(HandshakeEvent::HandshakeKeys(keys));
                }
                Some(KeyChange::OneRtt { keys, next }) => {
                    self.write_epoch = Epoch::Application;
                    self.have_one_rtt_keys = true;
                    let (keys, next) = match &rederive {
                        Some((log, alg, labels)) => match log.one_rtt_keys(*alg, labels) {
                            Ok(k) => k,
                            Err(e) => {
                                self.error = Some(e);
                                return;
                            }
                        },
                        None => (keys, NextSecrets::Rustls(next)),
                    };
                    self.events
                        .push_back(HandshakeEvent::OneRttKeys { keys, next });
                }
            }
        }
    }
}

impl Backend for RustlsHandshake {
    fn set_transport_params(&mut self, local_transport_params: Vec<u8>) -> Result<()> {
        match &mut self.state {
            State::ClientPending { params, .. } | State::ServerPending { params, .. } => {
                *params = local_transport_params;
                Ok(())
            }
            _ => Err(Error::InvalidState),
        }
    }

    fn set_version(&mut self, version: u32) -> Result<()> {
        self.key_version = version;
        if matches!(
            self.state,
            State::ClientPending { .. } | State::ServerPending { .. }
        ) {
            self.quic_version = version;
        } else if version != self.quic_version
            && (self.secret_log.is_none() || self.have_handshake_keys)
        {
            return Err(Error::InvalidState);
        }
        Ok(())
    }

    fn capture_secrets(&mut self) -> Result<()> {
        let State::ClientPending { config, .. } = &mut self.state else {
            return Err(Error::InvalidState);
        };
        let log = Arc::new(SecretLog::new(config.key_log.clone()));
        let mut own = ClientConfig::clone(config);
        own.key_log = log.clone();
        *config = Arc::new(own);
        self.secret_log = Some(log);
        Ok(())
    }

    fn restart_client(&mut self, local_transport_params: Vec<u8>) -> Result<()> {
        let (config, name) = match &self.state {
            State::ClientPending { config, name, .. } => (config.clone(), name.clone()),
            _ => self.client_origin.clone().ok_or(Error::InvalidState)?,
        };
        self.state = State::ClientPending {
            config,
            name,
            params: local_transport_params,
        };
        self.write_epoch = Epoch::Initial;
        self.have_handshake_keys = false;
        self.have_one_rtt_keys = false;
        self.events.clear();
        self.error = None;
        if let (Some(sessions), Some(handle)) = (&self.sessions, &self.resume_handle) {
            // The next ticket stored under the handle, if the server sent more than one;
            // without one the new handshake is simply a full one.
            let _ = sessions.resume_from(handle);
        }
        Ok(())
    }

    fn next_event(&mut self) -> Result<Option<HandshakeEvent>> {
        self.start()?;
        Ok(self.events.pop_front())
    }

    fn read_epoch(&self) -> Epoch {
        if !self.have_handshake_keys {
            Epoch::Initial
        } else if !self.have_one_rtt_keys || (self.is_server() && self.is_handshaking()) {
            Epoch::Handshake
        } else {
            Epoch::Application
        }
    }

    fn write_epoch(&self) -> Epoch {
        self.write_epoch
    }

    fn provide_data(&mut self, epoch: Epoch, data: &[u8]) -> Result<()> {
        self.start()?;
        if epoch != self.read_epoch() {
            return Err(Error::ProtocolViolation);
        }
        if data.is_empty() {
            return Ok(());
        }
        if self.settled().is_some() {
            // No TLS message may follow a client's Finished in QUIC (RFC 9001 §4.1.3):
            // rustls would refuse it as well, with this alert.
            let error = Error::TlsAlert(u8::from(rustls::AlertDescription::UnexpectedMessage));
            self.error = Some(error);
            return Err(error);
        }
        if epoch == Epoch::Initial {
            self.scan_client_hello(data);
        }
        let State::Running(conn) = &mut self.state else {
            return Err(Error::InvalidState);
        };
        if let Err(e) = conn.read_hs(data) {
            let error = match conn.alert() {
                Some(alert) => Error::TlsAlert(u8::from(alert)),
                None => Error::TlsFail,
            };
            log::debug!("TLS handshake failed: {e} ({error:?})");
            self.error = Some(error);
            return Err(error);
        }
        self.drain();
        self.settle_server();
        Ok(())
    }

    fn is_server(&self) -> bool {
        self.sessions.is_none()
    }

    fn is_handshaking(&self) -> bool {
        match &self.state {
            State::Settled(_) => false,
            _ => self.conn().is_none_or(|conn| conn.is_handshaking()),
        }
    }

    fn peer_transport_params(&self) -> Option<&[u8]> {
        if let Some(settled) = self.settled() {
            return settled.peer_transport_params.as_deref();
        }
        self.conn()?.quic_transport_parameters()
    }

    fn alpn(&self) -> Option<&[u8]> {
        if let Some(settled) = self.settled() {
            return settled.alpn.as_deref();
        }
        self.conn()?.alpn_protocol()
    }

    fn server_name(&self) -> Option<&str> {
        if let Some(settled) = self.settled() {
            return settled.server_name.as_deref();
        }
        match self.conn() {
            Some(rustls::quic::Connection::Server(conn)) => conn.server_name(),
            _ => self.client_server_name.as_deref(),
        }
    }

    fn is_resumed(&self) -> bool {
        if let Some(settled) = self.settled() {
            return settled.resumed;
        }
        self.conn()
            .and_then(|conn| conn.handshake_kind())
            .is_some_and(|kind| kind == HandshakeKind::Resumed)
    }

    fn zero_rtt_keys(&self) -> Option<DirectionalKeys> {
        self.conn()?.zero_rtt_keys()
    }

    fn is_early_data_accepted(&self) -> bool {
        if let Some(settled) = self.settled() {
            return settled.early_data_accepted;
        }
        match self.conn() {
            Some(rustls::quic::Connection::Client(conn)) => conn.is_early_data_accepted(),
            Some(rustls::quic::Connection::Server(conn)) => conn.zero_rtt_keys().is_some(),
            None => false,
        }
    }

    fn session_offered(&self) -> bool {
        self.session_offered
    }

    fn reject_early_data(&mut self) -> Result<()> {
        if self.have_handshake_keys || self.error.is_some() {
            return Err(Error::InvalidState);
        }
        if matches!(self.state, State::ServerPending { .. }) {
            self.start()?;
        }
        match &mut self.state {
            State::Running(conn) => match conn.as_mut() {
                rustls::quic::Connection::Server(conn) if conn.is_handshaking() => {
                    conn.reject_early_data();
                    Ok(())
                }
                _ => Err(Error::InvalidState),
            },
            _ => Err(Error::InvalidState),
        }
    }

    fn cipher_suite(&self) -> Option<CipherSuite> {
        if let Some(settled) = self.settled() {
            return settled.cipher_suite;
        }
        self.conn()?.negotiated_cipher_suite().map(|s| s.suite())
    }

    fn peer_cert_chain(&self) -> Option<Vec<&[u8]>> {
        let chain = self.peer_certificates()?;
        Some(chain.iter().map(CertificateDer::as_ref).collect())
    }

    fn peer_cert(&self) -> Option<&[u8]> {
        let chain = self.peer_certificates()?;
        chain.first().map(CertificateDer::as_ref)
    }

    fn alert(&self) -> Option<u8> {
        self.conn()?.alert().map(u8::from)
    }

    fn session(&self) -> Option<&[u8]> {
        self.sessions.as_ref()?.handle()
    }

    fn set_session(&mut self, session: &[u8]) -> Result<()> {
        let Some(sessions) = &self.sessions else {
            return Err(Error::InvalidState);
        };
        if !matches!(self.state, State::ClientPending { .. }) {
            return Err(Error::InvalidState);
        }
        sessions.resume_from(session)?;
        self.resume_handle = Some(session.to_vec());
        self.session_offered = true;
        Ok(())
    }

    fn set_keylog(&mut self, writer: Box<dyn Write + Send>) -> Result<()> {
        let keylog = self.keylog.as_ref().ok_or(Error::InvalidState)?;
        keylog.set_writer(writer);
        Ok(())
    }

    #[cfg(any(test, feature = "fuzzing"))]
    fn fuzz_take_local_params(&mut self) -> Option<Vec<u8>> {
        match &mut self.state {
            State::ClientPending { params, .. } | State::ServerPending { params, .. } => {
                Some(std::mem::take(params))
            }
            _ => None,
        }
    }
}

impl fmt::Debug for RustlsHandshake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handshake")
            .field("is_server", &self.is_server())
            .field("read_epoch", &self.read_epoch())
            .field("write_epoch", &self.write_epoch)
            .field("is_handshaking", &self.is_handshaking())
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}
