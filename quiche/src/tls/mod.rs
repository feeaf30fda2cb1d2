//! The TLS 1.3 handshake of QUIC (RFC 9001 §4), behind one interface with interchangeable
//! backends: rustls (`rustls/`, the default: pure Rust) and BoringSSL (`boringssl/`, feature
//! `boringssl-boring-crate`, quiche's backend). The connection sees only [`Handshake`] and
//! [`TlsConfig`]; packet and header protection stay on *ring* whichever backend runs.
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
//!
//! A backend implements `Backend`; [`Handshake`] adds what does not depend on it (a server
//! holding the ClientHello for compatible version negotiation) and dispatches to it.

use std::fmt;
use std::io::Write;

pub use ::rustls::quic::{DirectionalKeys, HeaderProtectionKey, Keys, PacketKey, Secrets};
pub use ::rustls::CipherSuite;

pub use self::config::{TlsBackend, TlsConfig};
pub use self::secrets::{NextSecrets, OwnSecrets};

#[cfg(feature = "boringssl-boring-crate")]
pub(crate) use self::boringssl::in_handshake;
#[cfg(feature = "boringssl-boring-crate")]
use self::boringssl::BoringHandshake;
use self::rustls::RustlsHandshake;
use crate::error::{Error, Result};
use crate::packet::Epoch;

#[cfg(feature = "boringssl-boring-crate")]
mod boringssl;
mod config;
#[cfg(any(test, feature = "fuzzing"))]
mod fuzzing;
pub(crate) mod hello;

/// BoringSSL's `ssl_early_data_reason_t` values that both backends report (quiche's
/// `early_data_reason`).
pub(crate) mod early_data_reason {
    /// `ssl_early_data_disabled`.
    pub const DISABLED: u32 = 1;
    /// `ssl_early_data_accepted`.
    pub const ACCEPTED: u32 = 2;
    /// `ssl_early_data_peer_declined`.
    pub const PEER_DECLINED: u32 = 4;
    /// `ssl_early_data_no_session_offered`.
    pub const NO_SESSION_OFFERED: u32 = 5;
    /// `ssl_early_data_session_not_resumed`.
    pub const SESSION_NOT_RESUMED: u32 = 6;
    /// `ssl_early_data_unsupported_for_session`.
    pub const UNSUPPORTED_FOR_SESSION: u32 = 7;
    /// `ssl_early_data_alpn_mismatch` (BoringSSL only: rustls does not report it).
    #[cfg(all(test, feature = "boringssl-boring-crate"))]
    pub const ALPN_MISMATCH: u32 = 9;
}
mod keylog;
mod rustls;
mod secrets;

#[cfg(test)]
mod tests;

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

/// What the connection needs from a TLS backend: one connection's handshake.
///
/// Errors: `TlsAlert(alert)` when TLS fails with an alert (CRYPTO_ERROR 0x100 + alert on the
/// wire), `TlsFail` otherwise; after a TLS failure every later call that feeds the handshake
/// fails the same way. `InvalidState` for a call the handshake's state does not allow.
pub(crate) trait Backend {
    /// Replaces the encoded transport parameters before the handshake starts (a server sets
    /// them once the client's first Initial is known). `InvalidState` once TLS has them.
    fn set_transport_params(&mut self, local_transport_params: Vec<u8>) -> Result<()>;

    /// Sets the QUIC version whose key derivation labels the Handshake and 1-RTT keys use
    /// (RFC 9369 §3.3.2). Before the handshake starts this is the version TLS works in;
    /// afterwards (a client switched by compatible version negotiation, RFC 9368 §2.3) the keys
    /// are derived with the new labels from the traffic secrets, which
    /// [`Backend::capture_secrets`] must have been asked to keep.
    fn set_version(&mut self, version: u32) -> Result<()>;

    /// Makes a pending client keep its traffic secrets, so that a server may switch it to
    /// another compatible version after its ClientHello was sent. `InvalidState` once started.
    fn capture_secrets(&mut self) -> Result<()>;

    /// Starts a client's handshake over with new transport parameters: the next event is a new
    /// ClientHello, for the new first flight that answers Version Negotiation (RFC 9368 §2.1).
    /// The session to resume is offered again. `InvalidState` on a server.
    fn restart_client(&mut self, local_transport_params: Vec<u8>) -> Result<()>;

    /// The next thing to send or install, or `None` when there is nothing until more data is
    /// provided. A pending client builds its ClientHello on the first call.
    fn next_event(&mut self) -> Result<Option<HandshakeEvent>>;

    /// The epoch whose CRYPTO data TLS expects next.
    ///
    /// Handshake once Handshake keys exist; Application for a client once it has 1-RTT keys (it
    /// has then read the server's Finished) and for a server once the handshake is complete.
    fn read_epoch(&self) -> Epoch;

    /// The epoch in which the handshake sends its next bytes.
    fn write_epoch(&self) -> Epoch;

    /// Feeds in-order CRYPTO data received in `epoch`; `ProtocolViolation` if `epoch` is not
    /// [`Backend::read_epoch`].
    fn provide_data(&mut self, epoch: Epoch, data: &[u8]) -> Result<()>;

    /// Whether this is the server side.
    fn is_server(&self) -> bool;

    /// Whether the handshake is still in progress: true until the client has sent its Finished
    /// (client) or received and checked it (server), i.e. until the handshake is complete in the
    /// sense of RFC 9001 §4.1.1.
    fn is_handshaking(&self) -> bool;

    /// The peer's encoded transport parameters, once received. A resuming client sees the
    /// parameters remembered with the session until the server's own arrive.
    fn peer_transport_params(&self) -> Option<&[u8]>;

    /// The negotiated ALPN protocol.
    fn alpn(&self) -> Option<&[u8]>;

    /// The server name: the one given to the client, or the SNI the server received.
    fn server_name(&self) -> Option<&str>;

    /// Whether the handshake resumed a session (PSK, no certificate exchanged).
    fn is_resumed(&self) -> bool;

    /// The 0-RTT keys: for a client once its ClientHello offers early data, for a server once
    /// it has accepted early data in response to the ClientHello. The client encrypts with
    /// them, the server decrypts.
    fn zero_rtt_keys(&self) -> Option<DirectionalKeys>;

    /// Whether the server accepted 0-RTT: for a client, known once the server's
    /// EncryptedExtensions were read; for a server, decided when the ClientHello was read.
    fn is_early_data_accepted(&self) -> bool;

    /// Whether a session to resume was offered: by a client given one with `set_session`, to a
    /// server whose ClientHello carries a pre_shared_key extension.
    fn session_offered(&self) -> bool;

    /// Why 0-RTT was or was not used as the TLS library itself reports it, in BoringSSL's
    /// `ssl_early_data_reason_t` numbering; `None` where the library has no such report and the
    /// connection derives the reason (rustls).
    fn early_data_reason(&self) -> Option<u32> {
        None
    }

    /// Makes a server refuse 0-RTT. Only possible before the ClientHello was provided, since the
    /// server's answer is part of its first flight; `InvalidState` otherwise.
    fn reject_early_data(&mut self) -> Result<()>;

    /// The negotiated cipher suite (for a resuming client, the session's until the ServerHello).
    fn cipher_suite(&self) -> Option<CipherSuite>;

    /// The peer's certificate chain, leaf first, as DER.
    fn peer_cert_chain(&self) -> Option<Vec<&[u8]>>;

    /// The peer's leaf certificate as DER.
    fn peer_cert(&self) -> Option<&[u8]>;

    /// The TLS alert that failed the handshake, if any.
    fn alert(&self) -> Option<u8>;

    /// The session a later client connection resumes with [`Backend::set_session`]: `None` on
    /// servers and until the server sent a ticket (after the handshake).
    fn session(&self) -> Option<&[u8]>;

    /// Offers `session` for resumption and, if the config enables early data and the session
    /// allows it, 0-RTT. `InvalidState` on a server or once the ClientHello was built, and
    /// `TlsFail` (the reason logged as a warning) for bytes the backend cannot resume with.
    fn set_session(&mut self, session: &[u8]) -> Result<()>;

    /// Sends this connection's key log lines (NSS format) to `writer`, including those logged
    /// before this call. `InvalidState` unless the config enabled key logging.
    fn set_keylog(&mut self, writer: Box<dyn Write + Send>) -> Result<()>;

    /// The encoded transport parameters a pending handshake would have sent (taken: the
    /// handshake will not send them any more), or `None` once TLS runs.
    #[cfg(any(test, feature = "fuzzing"))]
    fn fuzz_take_local_params(&mut self) -> Option<Vec<u8>>;
}

/// The backend of one handshake.
enum Inner {
    Rustls(RustlsHandshake),
    #[cfg(feature = "boringssl-boring-crate")]
    BoringSsl(BoringHandshake),
    /// No TLS at all: a connection put straight into the established state for fuzzing.
    #[cfg(any(test, feature = "fuzzing"))]
    Bypassed(fuzzing::Bypassed),
}

/// Calls `$body` with `$h` bound to the backend of `$inner`.
macro_rules! with_backend {
    ($inner:expr, $h:ident => $body:expr) => {
        match $inner {
            Inner::Rustls($h) => $body,
            #[cfg(feature = "boringssl-boring-crate")]
            Inner::BoringSsl($h) => $body,
            #[cfg(any(test, feature = "fuzzing"))]
            Inner::Bypassed($h) => $body,
        }
    };
}

/// The TLS handshake of one connection, on the backend its [`TlsConfig`] chose.
pub struct Handshake {
    inner: Inner,
    /// A server that waits for the whole ClientHello, so that the connection can choose the
    /// version (and set its transport parameters) before TLS starts
    /// ([`Handshake::hold_server`]): what it received so far. `None` once TLS runs.
    held_hello: Option<Vec<u8>>,
}

impl Handshake {
    fn from_inner(inner: Inner) -> Self {
        Handshake {
            inner,
            held_hello: None,
        }
    }

    fn backend(&self) -> &dyn Backend {
        with_backend!(&self.inner, h => h)
    }

    fn backend_mut(&mut self) -> &mut dyn Backend {
        with_backend!(&mut self.inner, h => h)
    }

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
        let inner =
            match cfg.backend_mut() {
                config::ConfigBackend::Rustls(cfg) => Inner::Rustls(RustlsHandshake::new_client(
                    cfg,
                    server_name,
                    local_transport_params,
                )?),
                #[cfg(feature = "boringssl-boring-crate")]
                config::ConfigBackend::BoringSsl(cfg) => Inner::BoringSsl(
                    BoringHandshake::new_client(cfg, server_name, local_transport_params)?,
                ),
            };
        Ok(Self::from_inner(inner))
    }

    /// Starts a server handshake. Fails if the config has no certificate and key.
    pub fn new_server(cfg: &mut TlsConfig, local_transport_params: Vec<u8>) -> Result<Self> {
        let inner = match cfg.backend_mut() {
            config::ConfigBackend::Rustls(cfg) => {
                Inner::Rustls(RustlsHandshake::new_server(cfg, local_transport_params)?)
            }
            #[cfg(feature = "boringssl-boring-crate")]
            config::ConfigBackend::BoringSsl(cfg) => {
                Inner::BoringSsl(BoringHandshake::new_server(cfg, local_transport_params)?)
            }
        };
        Ok(Self::from_inner(inner))
    }

    /// Replaces the encoded transport parameters before the handshake starts (a server sets
    /// them once the client's first Initial is known). `InvalidState` once TLS has them.
    pub fn set_transport_params(&mut self, local_transport_params: Vec<u8>) -> Result<()> {
        self.backend_mut()
            .set_transport_params(local_transport_params)
    }

    /// Sets the QUIC version whose key derivation labels the Handshake and 1-RTT keys use
    /// (RFC 9369 §3.3.2); see [`Handshake::capture_secrets`] for a client switched later.
    pub fn set_version(&mut self, version: u32) -> Result<()> {
        self.backend_mut().set_version(version)
    }

    /// Makes a pending client keep its traffic secrets, so that a server may switch it to
    /// another compatible version after its ClientHello was sent. `InvalidState` once started.
    pub fn capture_secrets(&mut self) -> Result<()> {
        self.backend_mut().capture_secrets()
    }

    /// Makes a pending server buffer the client's first CRYPTO bytes until its ClientHello is
    /// whole, instead of starting TLS: the connection then reads the client's transport
    /// parameters ([`Handshake::held_client_params`]), may pick another version and set its
    /// own, and calls [`Handshake::release_server`].
    pub fn hold_server(&mut self) {
        let pending = self.backend().is_server()
            && self.backend().read_epoch() == Epoch::Initial
            && self.backend().is_handshaking();
        if pending {
            self.held_hello = Some(Vec::new());
        }
    }

    /// A held server's view of the client's encoded transport parameters, once its whole
    /// ClientHello arrived (`Some(None)` if the ClientHello has none: TLS will refuse it).
    pub fn held_client_params(&self) -> Option<Option<&[u8]>> {
        let hello = self.held_hello.as_deref()?;
        let len = hello::first_message_len(hello)?;
        (hello.len() >= len).then(|| hello::client_hello_transport_params(hello))
    }

    /// Starts a held server's TLS and gives it what was buffered. With `reject_early_data`
    /// the server refuses 0-RTT: a client moved to another version sent its 0-RTT packets in
    /// the original one, whose keys a TLS connection made for the new version cannot derive
    /// (RFC 9368 §7.3 lets a version pair define that 0-RTT is then rejected).
    pub fn release_server(&mut self, reject_early_data: bool) -> Result<()> {
        let Some(hello) = self.held_hello.take() else {
            return Ok(());
        };
        if reject_early_data {
            self.backend_mut().reject_early_data()?;
        }
        self.provide_data(Epoch::Initial, &hello)
    }

    /// Starts a client's handshake over with new transport parameters: the next event is a new
    /// ClientHello, for the new first flight that answers Version Negotiation (RFC 9368 §2.1).
    /// The session to resume is looked up again. `InvalidState` on a server.
    pub fn restart_client(&mut self, local_transport_params: Vec<u8>) -> Result<()> {
        self.backend_mut().restart_client(local_transport_params)
    }

    /// The next thing to send or install, or `None` when there is nothing until more data is
    /// provided. A pending client builds its ClientHello on the first call.
    pub fn next_event(&mut self) -> Result<Option<HandshakeEvent>> {
        if self.held_hello.is_some() {
            return Ok(None);
        }
        self.backend_mut().next_event()
    }

    /// The epoch whose CRYPTO data TLS expects next.
    ///
    /// Handshake once Handshake keys exist; Application for a client once it has 1-RTT keys (it
    /// has then read the server's Finished) and for a server once the handshake is complete.
    pub fn read_epoch(&self) -> Epoch {
        self.backend().read_epoch()
    }

    /// The epoch in which the handshake sends its next bytes.
    pub fn write_epoch(&self) -> Epoch {
        self.backend().write_epoch()
    }

    /// Feeds in-order CRYPTO data received in `epoch`.
    ///
    /// Fails with `ProtocolViolation` if `epoch` is not [`Handshake::read_epoch`], with
    /// `TlsAlert(alert)` when TLS fails with an alert (CRYPTO_ERROR 0x100 + alert on the wire),
    /// and with `TlsFail` otherwise. After a TLS failure every later call fails the same way.
    pub fn provide_data(&mut self, epoch: Epoch, data: &[u8]) -> Result<()> {
        if let Some(hello) = &mut self.held_hello {
            if epoch != Epoch::Initial {
                return Err(Error::ProtocolViolation);
            }
            if hello.len() + data.len() > hello::MAX_CLIENT_HELLO {
                return Err(Error::CryptoBufferExceeded);
            }
            hello.extend_from_slice(data);
            return Ok(());
        }
        self.backend_mut().provide_data(epoch, data)
    }

    /// Whether this is the server side.
    pub fn is_server(&self) -> bool {
        self.backend().is_server()
    }

    /// Whether the handshake is still in progress: true until the client has sent its Finished
    /// (client) or received and checked it (server), i.e. until the handshake is complete in the
    /// sense of RFC 9001 §4.1.1.
    pub fn is_handshaking(&self) -> bool {
        self.backend().is_handshaking()
    }

    /// The peer's encoded transport parameters, once received. A resuming client sees the
    /// parameters remembered with the session until the server's own arrive.
    pub fn peer_transport_params(&self) -> Option<&[u8]> {
        self.backend().peer_transport_params()
    }

    /// The negotiated ALPN protocol.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.backend().alpn()
    }

    /// The server name: the one given to the client, or the SNI the server received.
    pub fn server_name(&self) -> Option<&str> {
        self.backend().server_name()
    }

    /// Whether the handshake resumed a session (PSK, no certificate exchanged).
    pub fn is_resumed(&self) -> bool {
        self.backend().is_resumed()
    }

    /// The 0-RTT keys: for a client once its ClientHello offers early data (after the first
    /// [`Handshake::next_event`] with a session set by [`Handshake::set_session`]), for a server
    /// once it has accepted early data in response to the ClientHello. The client encrypts with
    /// them, the server decrypts.
    pub fn zero_rtt_keys(&self) -> Option<DirectionalKeys> {
        self.backend().zero_rtt_keys()
    }

    /// Whether the server accepted 0-RTT: for a client, known once the server's
    /// EncryptedExtensions were read; for a server, decided when the ClientHello was read.
    pub fn is_early_data_accepted(&self) -> bool {
        self.backend().is_early_data_accepted()
    }

    /// Whether a session to resume was offered: by a client given one with
    /// [`Handshake::set_session`], to a server whose ClientHello carries a pre_shared_key
    /// extension.
    pub fn session_offered(&self) -> bool {
        self.backend().session_offered()
    }

    /// Why 0-RTT was or was not used as the TLS library itself reports it (BoringSSL's
    /// `SSL_get_early_data_reason`); `None` on rustls, where the connection derives it.
    pub fn early_data_reason(&self) -> Option<u32> {
        self.backend().early_data_reason()
    }

    /// Makes a server refuse 0-RTT. Only possible before the ClientHello was provided, since the
    /// server's answer is part of its first flight; fails with `InvalidState` otherwise.
    pub fn reject_early_data(&mut self) -> Result<()> {
        self.backend_mut().reject_early_data()
    }

    /// The negotiated cipher suite (for a resuming client, the session's until the ServerHello).
    pub fn cipher_suite(&self) -> Option<CipherSuite> {
        self.backend().cipher_suite()
    }

    /// The peer's certificate chain, leaf first, as DER.
    pub fn peer_cert_chain(&self) -> Option<Vec<&[u8]>> {
        self.backend().peer_cert_chain()
    }

    /// The peer's leaf certificate as DER.
    pub fn peer_cert(&self) -> Option<&[u8]> {
        self.backend().peer_cert()
    }

    /// The TLS alert that failed the handshake, if any.
    pub fn alert(&self) -> Option<u8> {
        self.backend().alert()
    }

    /// The session to pass to [`Handshake::set_session`] of a later client connection. `None` on
    /// servers and until a ticket arrived (after the handshake).
    ///
    /// With rustls this is an opaque handle, valid only in this process and for connections of
    /// the same [`TlsConfig`]: rustls 0.23 cannot serialize a session (see `rustls::session`).
    pub fn session(&self) -> Option<&[u8]> {
        self.backend().session()
    }

    /// Offers `session` (from [`Handshake::session`]) for resumption and, if the config enables
    /// early data and the session allows it, 0-RTT. The session is offered only to the server
    /// name it was received from.
    ///
    /// Fails with `InvalidState` on a server or once the ClientHello was built, and with
    /// `TlsFail` (the reason logged as a warning) for bytes this backend cannot resume with.
    pub fn set_session(&mut self, session: &[u8]) -> Result<()> {
        self.backend_mut().set_session(session)
    }

    /// Sends this connection's key log lines (NSS format) to `writer`, including those logged
    /// before this call. Fails with `InvalidState` unless the config enabled key logging.
    pub fn set_keylog(&mut self, writer: Box<dyn Write + Send>) -> Result<()> {
        self.backend_mut().set_keylog(writer)
    }
}

#[cfg(feature = "boringssl-boring-crate")]
impl Handshake {
    /// The BoringSSL `SSL` of this handshake, if it runs on BoringSSL.
    pub fn boringssl_mut(&mut self) -> Option<&mut boring::ssl::SslRef> {
        match &mut self.inner {
            Inner::BoringSsl(h) => Some(h.ssl_mut()),
            _ => None,
        }
    }

    /// Takes what BoringSSL's callbacks changed through quiche's `set_*_in_handshake` since
    /// the last call; `None` when nothing.
    pub fn take_overrides(&mut self) -> Option<in_handshake::HandshakeOverrides> {
        match &mut self.inner {
            Inner::BoringSsl(h) => h.take_overrides(),
            _ => None,
        }
    }

    /// Takes over an application's configured `SSL` (quiche's `quiche_conn_new_with_tls`):
    /// its context supplies verification, certificates, ALPN and key logging.
    pub fn with_ssl(
        ssl: boring::ssl::Ssl,
        is_server: bool,
        local_transport_params: Vec<u8>,
    ) -> Result<Self> {
        Ok(Self::from_inner(Inner::BoringSsl(
            BoringHandshake::from_ssl(ssl, is_server, local_transport_params)?,
        )))
    }
}

impl fmt::Debug for Handshake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handshake")
            .field("is_server", &self.is_server())
            .field("held", &self.held_hello.is_some())
            .field("read_epoch", &self.read_epoch())
            .field("write_epoch", &self.write_epoch())
            .field("is_handshaking", &self.is_handshaking())
            .finish_non_exhaustive()
    }
}
