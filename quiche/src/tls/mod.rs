//! The TLS 1.3 handshake through rustls's QUIC support (RFC 9001 §4).
//!
//! This module knows nothing about packets or frames. A [`Handshake`] consumes the CRYPTO stream
//! bytes of each epoch and produces [`HandshakeEvent`]s: bytes to send, each already tagged with
//! the epoch it must be sent in, and packet protection keys as they become available.
//!
//! How the connection drives it:
//! 1. A client builds its Handshake with [`Handshake::new_client`], may call
//!    [`Handshake::set_session`], then drains [`Handshake::next_event`] (the first call builds the
//!    ClientHello). With a resumable session, [`Handshake::zero_rtt_keys`] then returns the 0-RTT
//!    keys and [`Handshake::peer_transport_params`] the server's remembered transport parameters
//!    (RFC 9000 §7.4.1). A server starts with [`Handshake::new_server`].
//! 2. In-order CRYPTO data of the epoch [`Handshake::read_epoch`] goes to
//!    [`Handshake::provide_data`], followed by draining `next_event` until it returns `None`.
//!    Data of a later epoch must be buffered until `read_epoch` reaches it; new data of an
//!    earlier epoch is a PROTOCOL_VIOLATION (RFC 9001 §4.1.3), which `provide_data` reports.
//! 3. A server must not process 1-RTT packets until [`Handshake::is_handshaking`] is false
//!    (RFC 9001 §5.7), although it gets the 1-RTT keys (and may send) one flight earlier.

use std::collections::VecDeque;
use std::fmt;
use std::io::Write;
use std::sync::Arc;

use rustls::client::Resumption;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::quic::KeyChange;
use rustls::{ClientConfig, HandshakeKind};

pub use rustls::quic::{DirectionalKeys, HeaderProtectionKey, Keys, PacketKey, Secrets};
pub use rustls::CipherSuite;

pub use self::config::TlsConfig;

use self::keylog::ConnKeyLog;
use self::session::ConnSessionStore;
use crate::error::{Error, Result};
use crate::packet::Epoch;

mod config;
#[cfg(any(test, feature = "fuzzing"))]
mod fuzzing;
mod keylog;
mod session;
mod verify;

#[cfg(test)]
mod tests;

use self::version::SecretLog;
pub use self::version::{NextSecrets, OwnSecrets};

mod version;

/// Something the handshake produced for the connection.
pub enum HandshakeEvent {
    /// Handshake bytes to send in CRYPTO frames of `epoch`, after the bytes sent before in it.
    Data {
        /// The epoch (packet number space) whose CRYPTO stream carries the bytes.
        epoch: Epoch,
        /// The bytes.
        data: Vec<u8>,
    },
    /// Handshake packet protection keys, for both directions.
    HandshakeKeys(Keys),
    /// 1-RTT packet protection keys for both directions, and the secrets that derive the keys of
    /// the next key phases (RFC 9001 §6). A server gets them with its first flight: it may send
    /// with them at once but must not process 1-RTT packets before the handshake is complete.
    OneRttKeys {
        /// The keys of key phase 0.
        keys: Keys,
        /// `next.next_packet_keys()` gives the keys of phase 1, then 2, and so on.
        next: NextSecrets,
    },
}

impl fmt::Debug for HandshakeEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeEvent::Data { epoch, data } => f
                .debug_struct("Data")
                .field("epoch", epoch)
                .field("len", &data.len())
                .finish(),
            HandshakeEvent::HandshakeKeys(_) => f.write_str("HandshakeKeys"),
            HandshakeEvent::OneRttKeys { .. } => f.write_str("OneRttKeys"),
        }
    }
}

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
    /// Boxed: a rustls connection is over a kilobyte and lives as long as the connection.
    Running(Box<rustls::quic::Connection>),
    /// rustls refused to create the connection.
    Failed,
    /// No TLS at all: a connection put straight into the established state for fuzzing
    /// ([`Handshake::fuzz_establish`]), holding what a handshake would have left behind.
    #[cfg(any(test, feature = "fuzzing"))]
    Bypassed {
        /// The peer's encoded transport parameters.
        peer_params: Vec<u8>,
        /// The application protocol taken as negotiated.
        alpn: Vec<u8>,
    },
}

/// The TLS handshake of one connection.
pub struct Handshake {
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
    /// after Version Negotiation ([`Handshake::restart_client`]).
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
    /// A server that waits for the whole ClientHello, so that the connection can choose the
    /// version (and set its transport parameters) before TLS starts ([`Handshake::hold_server`]).
    hold_server: bool,
    /// What a held server received so far.
    hello: Vec<u8>,
}

fn rustls_err(e: rustls::Error) -> Error {
    log::error!("TLS error: {e}");
    Error::TlsFail
}

impl Handshake {
    /// Starts a client handshake.
    ///
    /// `server_name` is sent as SNI and checked against the server's certificate; an IP address
    /// is checked against the certificate but not sent (RFC 6066 §3 allows only host names).
    /// Without a name no SNI is sent and only the certificate chain is verified, as with
    /// OpenSSL/BoringSSL when no host is set. `local_transport_params` is the encoded
    /// quic_transport_parameters extension (RFC 9000 §18).
    pub fn new_client(
        cfg: &mut TlsConfig,
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
        Ok(Handshake {
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
            hold_server: false,
            hello: Vec::new(),
        })
    }

    /// Starts a server handshake. Fails if the config has no certificate and key.
    pub fn new_server(cfg: &mut TlsConfig, local_transport_params: Vec<u8>) -> Result<Self> {
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
        Ok(Handshake {
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
            hold_server: false,
            hello: Vec::new(),
        })
    }

    /// Replaces the encoded transport parameters before the handshake starts (a server sets
    /// them once the client's first Initial is known). `InvalidState` once rustls has them.
    pub fn set_transport_params(&mut self, local_transport_params: Vec<u8>) -> Result<()> {
        match &mut self.state {
            State::ClientPending { params, .. } | State::ServerPending { params, .. } => {
                *params = local_transport_params;
                Ok(())
            }
            _ => Err(Error::InvalidState),
        }
    }

    /// Sets the QUIC version whose key derivation labels the Handshake and 1-RTT keys use
    /// (RFC 9369 §3.3.2). Before the handshake starts this is the version rustls works in;
    /// afterwards (a client switched by compatible version negotiation, RFC 9368 §2.3) the keys
    /// are derived here from the traffic secrets, which [`Handshake::capture_secrets`] must have
    /// been asked to keep.
    pub fn set_version(&mut self, version: u32) -> Result<()> {
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

    /// Makes a pending client keep its traffic secrets, so that a server may switch it to
    /// another compatible version after its ClientHello was sent. `InvalidState` once started.
    pub fn capture_secrets(&mut self) -> Result<()> {
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

    /// Makes a pending server buffer the client's first CRYPTO bytes until its ClientHello is
    /// whole, instead of starting TLS: the connection then reads the client's transport
    /// parameters ([`Handshake::held_client_params`]), may pick another version and set its
    /// own, and calls [`Handshake::release_server`].
    pub fn hold_server(&mut self) {
        if matches!(self.state, State::ServerPending { .. }) {
            self.hold_server = true;
        }
    }

    /// A held server's view of the client's encoded transport parameters, once its whole
    /// ClientHello arrived (`Some(None)` if the ClientHello has none: TLS will refuse it).
    pub fn held_client_params(&self) -> Option<Option<&[u8]>> {
        if !self.hold_server {
            return None;
        }
        let len = version::first_message_len(&self.hello)?;
        (self.hello.len() >= len).then(|| version::client_hello_transport_params(&self.hello))
    }

    /// Starts a held server's TLS and gives it what was buffered. With `reject_early_data`
    /// the server refuses 0-RTT: a client moved to another version sent its 0-RTT packets in
    /// the original one, whose keys a TLS connection made for the new version cannot derive
    /// (RFC 9368 §7.3 lets a version pair define that 0-RTT is then rejected).
    pub fn release_server(&mut self, reject_early_data: bool) -> Result<()> {
        if !self.hold_server {
            return Ok(());
        }
        self.hold_server = false;
        if reject_early_data {
            self.start()?;
            if let State::Running(conn) = &mut self.state {
                if let rustls::quic::Connection::Server(conn) = conn.as_mut() {
                    conn.reject_early_data();
                }
            }
        }
        let hello = std::mem::take(&mut self.hello);
        self.provide_data(Epoch::Initial, &hello)
    }

    /// Starts a client's handshake over with new transport parameters: the next event is a new
    /// ClientHello, for the new first flight that answers Version Negotiation (RFC 9368 §2.1).
    /// The session to resume is looked up again. `InvalidState` on a server.
    pub fn restart_client(&mut self, local_transport_params: Vec<u8>) -> Result<()> {
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
            State::ServerPending { config, params } if self.hold_server => {
                self.state = State::ServerPending { config, params };
                return Ok(());
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

    /// The next thing to send or install, or `None` when there is nothing until more data is
    /// provided. A pending client builds its ClientHello on the first call.
    pub fn next_event(&mut self) -> Result<Option<HandshakeEvent>> {
        self.start()?;
        Ok(self.events.pop_front())
    }

    /// The epoch whose CRYPTO data TLS expects next.
    ///
    /// Handshake once Handshake keys exist; Application for a client once it has 1-RTT keys (it
    /// has then read the server's Finished) and for a server once the handshake is complete.
    pub fn read_epoch(&self) -> Epoch {
        if !self.have_handshake_keys {
            Epoch::Initial
        } else if !self.have_one_rtt_keys || (self.is_server() && self.is_handshaking()) {
            Epoch::Handshake
        } else {
            Epoch::Application
        }
    }

    /// The epoch in which the handshake sends its next bytes.
    pub fn write_epoch(&self) -> Epoch {
        self.write_epoch
    }

    /// Feeds in-order CRYPTO data received in `epoch`.
    ///
    /// Fails with `ProtocolViolation` if `epoch` is not [`Handshake::read_epoch`], with
    /// `TlsAlert(alert)` when TLS fails with an alert (CRYPTO_ERROR 0x100 + alert on the wire),
    /// and with `TlsFail` otherwise. After a TLS failure every later call fails the same way.
    pub fn provide_data(&mut self, epoch: Epoch, data: &[u8]) -> Result<()> {
        if self.hold_server && matches!(self.state, State::ServerPending { .. }) {
            if epoch != Epoch::Initial {
                return Err(Error::ProtocolViolation);
            }
            if self.hello.len() + data.len() > version::MAX_CLIENT_HELLO {
                return Err(Error::CryptoBufferExceeded);
            }
            self.hello.extend_from_slice(data);
            return Ok(());
        }
        self.start()?;
        if epoch != self.read_epoch() {
            return Err(Error::ProtocolViolation);
        }
        if data.is_empty() {
            return Ok(());
        }
        #[cfg(any(test, feature = "fuzzing"))]
        if matches!(self.state, State::Bypassed { .. }) {
            return self.fuzz_post_handshake_data();
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
        Ok(())
    }

    /// Whether this is the server side.
    pub fn is_server(&self) -> bool {
        self.sessions.is_none()
    }

    /// Whether the handshake is still in progress: true until the client has sent its Finished
    /// (client) or received and checked it (server), i.e. until the handshake is complete in the
    /// sense of RFC 9001 §4.1.1.
    pub fn is_handshaking(&self) -> bool {
        #[cfg(any(test, feature = "fuzzing"))]
        if matches!(self.state, State::Bypassed { .. }) {
            return false;
        }
        self.conn().is_none_or(|conn| conn.is_handshaking())
    }

    /// The peer's encoded transport parameters, once received. A resuming client sees the
    /// parameters remembered with the session until the server's own arrive.
    pub fn peer_transport_params(&self) -> Option<&[u8]> {
        #[cfg(any(test, feature = "fuzzing"))]
        if let State::Bypassed { peer_params, .. } = &self.state {
            return Some(peer_params);
        }
        self.conn()?.quic_transport_parameters()
    }

    /// The negotiated ALPN protocol.
    pub fn alpn(&self) -> Option<&[u8]> {
        #[cfg(any(test, feature = "fuzzing"))]
        if let State::Bypassed { alpn, .. } = &self.state {
            return Some(alpn);
        }
        self.conn()?.alpn_protocol()
    }

    /// The server name: the one given to the client, or the SNI the server received.
    pub fn server_name(&self) -> Option<&str> {
        match self.conn() {
            Some(rustls::quic::Connection::Server(conn)) => conn.server_name(),
            _ => self.client_server_name.as_deref(),
        }
    }

    /// Whether the handshake resumed a session (PSK, no certificate exchanged).
    pub fn is_resumed(&self) -> bool {
        self.conn()
            .and_then(|conn| conn.handshake_kind())
            .is_some_and(|kind| kind == HandshakeKind::Resumed)
    }

    /// The 0-RTT keys: for a client once its ClientHello offers early data (after the first
    /// [`Handshake::next_event`] with a session set by [`Handshake::set_session`]), for a server
    /// once it has accepted early data in response to the ClientHello. The client encrypts with
    /// them, the server decrypts.
    pub fn zero_rtt_keys(&self) -> Option<DirectionalKeys> {
        self.conn()?.zero_rtt_keys()
    }

    /// Whether the server accepted 0-RTT: for a client, known once the server's
    /// EncryptedExtensions were read; for a server, decided when the ClientHello was read.
    pub fn is_early_data_accepted(&self) -> bool {
        match self.conn() {
            Some(rustls::quic::Connection::Client(conn)) => conn.is_early_data_accepted(),
            Some(rustls::quic::Connection::Server(conn)) => conn.zero_rtt_keys().is_some(),
            None => false,
        }
    }

    /// Makes a server refuse 0-RTT. Only possible before the ClientHello was provided, since the
    /// server's answer is part of its first flight; fails with `InvalidState` otherwise.
    pub fn reject_early_data(&mut self) -> Result<()> {
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

    /// The negotiated cipher suite (for a resuming client, the session's until the ServerHello).
    pub fn cipher_suite(&self) -> Option<CipherSuite> {
        self.conn()?.negotiated_cipher_suite().map(|s| s.suite())
    }

    /// The peer's certificate chain, leaf first, as DER.
    pub fn peer_cert_chain(&self) -> Option<&[CertificateDer<'static>]> {
        self.conn()?.peer_certificates()
    }

    /// The peer's leaf certificate as DER.
    pub fn peer_cert(&self) -> Option<&[u8]> {
        self.peer_cert_chain()?.first().map(|c| c.as_ref())
    }

    /// The TLS alert that failed the handshake, if any.
    pub fn alert(&self) -> Option<u8> {
        self.conn()?.alert().map(u8::from)
    }

    /// A handle to the session tickets this client connection received, to pass to
    /// [`Handshake::set_session`] of a later connection from the same [`TlsConfig`] in the same
    /// process. `None` on servers and until a ticket arrived (after the handshake).
    ///
    /// rustls 0.23 cannot serialize a session (no public encoding or constructor), so these
    /// bytes are an opaque handle, not the session: read back by another process (a session
    /// file), [`Handshake::set_session`] refuses them and logs why.
    pub fn session(&self) -> Option<Vec<u8>> {
        self.sessions.as_ref()?.handle()
    }

    /// Offers a ticket from `session` (a [`Handshake::session`] handle) for resumption and, if
    /// the config enables early data and the ticket allows it, 0-RTT. The ticket is offered only
    /// if the server name matches the one it was received from.
    ///
    /// Fails with `InvalidState` on a server or once the ClientHello was built, and with
    /// `TlsFail` (the reason logged as a warning) for bytes that are no handle, a handle from
    /// another process or another config, or one whose tickets are all used.
    pub fn set_session(&mut self, session: &[u8]) -> Result<()> {
        let Some(sessions) = &self.sessions else {
            return Err(Error::InvalidState);
        };
        if !matches!(self.state, State::ClientPending { .. }) {
            return Err(Error::InvalidState);
        }
        sessions.resume_from(session)?;
        self.resume_handle = Some(session.to_vec());
        Ok(())
    }

    /// Sends this connection's key log lines (NSS format) to `writer`, including those logged
    /// before this call. Fails with `InvalidState` unless the config enabled key logging.
    pub fn set_keylog(&mut self, writer: Box<dyn Write + Send>) -> Result<()> {
        let keylog = self.keylog.as_ref().ok_or(Error::InvalidState)?;
        keylog.set_writer(writer);
        Ok(())
    }
}

impl fmt::Debug for Handshake {
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
