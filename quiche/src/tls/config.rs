//! TLS settings shared by the connections of one `Config`, on the backend it chose.

use std::fmt;

#[cfg(feature = "boringssl-boring-crate")]
use super::boringssl::BoringConfig;
use super::rustls::RustlsConfig;
use super::CipherSuite;
use crate::error::{Error, Result};

/// Which TLS library runs the handshakes of a config's connections.
///
/// The default is rustls, or BoringSSL in a build with the `boringssl-boring-crate` feature (as
/// in quiche, whose `Config::new` is BoringSSL's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TlsBackend {
    /// rustls with the *ring* provider: pure Rust, nothing compiled in C.
    #[cfg_attr(not(feature = "boringssl-boring-crate"), default)]
    Rustls,
    /// BoringSSL through the `boring` crate (feature `boringssl-boring-crate`).
    #[cfg(feature = "boringssl-boring-crate")]
    #[cfg_attr(feature = "boringssl-boring-crate", default)]
    BoringSsl,
}

impl TlsBackend {
    /// Every backend this build has.
    pub const ALL: &'static [TlsBackend] = &[
        TlsBackend::Rustls,
        #[cfg(feature = "boringssl-boring-crate")]
        TlsBackend::BoringSsl,
    ];
}

/// The settings of one backend.
pub(crate) enum ConfigBackend {
    Rustls(RustlsConfig),
    #[cfg(feature = "boringssl-boring-crate")]
    BoringSsl(BoringConfig),
}

/// Calls `$body` with `$c` bound to the backend settings of `$backend`.
macro_rules! with_config {
    ($backend:expr, $c:ident => $body:expr) => {
        match $backend {
            ConfigBackend::Rustls($c) => $body,
            #[cfg(feature = "boringssl-boring-crate")]
            ConfigBackend::BoringSsl($c) => $body,
        }
    };
}

/// TLS settings of a `Config`: certificates, peer verification, ALPN, early data, key logging and
/// cipher suites, kept by the backend that will run the connections' handshakes.
pub struct TlsConfig {
    backend: ConfigBackend,
}

impl TlsConfig {
    /// Default settings on the default backend: verify servers only when asked (against the
    /// loaded CAs, else the system bundle), no client certificates, no ALPN, no early data, no
    /// key log, all three TLS 1.3 suites.
    pub fn new() -> Result<Self> {
        Self::with_backend(TlsBackend::default())
    }

    /// Default settings on `backend`. Fails only if BoringSSL cannot make a context.
    pub fn with_backend(backend: TlsBackend) -> Result<Self> {
        let backend = match backend {
            TlsBackend::Rustls => ConfigBackend::Rustls(RustlsConfig::new()),
            #[cfg(feature = "boringssl-boring-crate")]
            TlsBackend::BoringSsl => ConfigBackend::BoringSsl(BoringConfig::new()?),
        };
        Ok(TlsConfig { backend })
    }

    /// Settings on BoringSSL, from an application's own context (see
    /// `Config::with_boring_ssl_ctx_builder`).
    #[cfg(feature = "boringssl-boring-crate")]
    pub fn with_boring_ssl_ctx_builder(builder: boring::ssl::SslContextBuilder) -> Result<Self> {
        Ok(TlsConfig {
            backend: ConfigBackend::BoringSsl(BoringConfig::from_builder(builder)?),
        })
    }

    /// The backend that runs the handshakes.
    pub fn backend(&self) -> TlsBackend {
        match &self.backend {
            ConfigBackend::Rustls(_) => TlsBackend::Rustls,
            #[cfg(feature = "boringssl-boring-crate")]
            ConfigBackend::BoringSsl(_) => TlsBackend::BoringSsl,
        }
    }

    pub(crate) fn backend_mut(&mut self) -> &mut ConfigBackend {
        &mut self.backend
    }

    /// The rustls settings, if rustls runs the handshakes.
    #[cfg(test)]
    pub(crate) fn rustls_mut(&mut self) -> Option<&mut RustlsConfig> {
        match &mut self.backend {
            ConfigBackend::Rustls(cfg) => Some(cfg),
            #[cfg(feature = "boringssl-boring-crate")]
            ConfigBackend::BoringSsl(_) => None,
        }
    }

    /// Loads the certificate chain (leaf first) from a PEM file.
    pub fn load_cert_chain_from_pem_file(&mut self, file: &str) -> Result<()> {
        with_config!(&mut self.backend, cfg => cfg.load_cert_chain_from_pem_file(file))
    }

    /// Loads the private key (PKCS#8, SEC1 or PKCS#1) from a PEM file.
    pub fn load_priv_key_from_pem_file(&mut self, file: &str) -> Result<()> {
        with_config!(&mut self.backend, cfg => cfg.load_priv_key_from_pem_file(file))
    }

    /// Adds the CA certificates of a PEM file to the trust anchors used to verify peers.
    pub fn load_verify_locations_from_file(&mut self, file: &str) -> Result<()> {
        with_config!(&mut self.backend, cfg => cfg.load_verify_locations_from_file(file))
    }

    /// Adds the CA certificates of every PEM file in a directory to the trust anchors; files that
    /// hold no usable certificate are skipped.
    pub fn load_verify_locations_from_directory(&mut self, dir: &str) -> Result<()> {
        with_config!(&mut self.backend, cfg => cfg.load_verify_locations_from_directory(dir))
    }

    /// Whether to verify the peer's certificate. Off by default on both sides, as in quiche. A
    /// client with `false` accepts any server certificate (the handshake signature is still
    /// checked against it); a server with `true` asks clients for a certificate and checks it
    /// against the loaded CAs if one is sent.
    pub fn verify_peer(&mut self, verify: bool) {
        with_config!(&mut self.backend, cfg => cfg.verify_peer(verify))
    }

    /// Sets the ALPN protocols, most preferred first. Each must be 1 to 255 bytes long.
    pub fn set_application_protos(&mut self, protos: &[&[u8]]) -> Result<()> {
        if protos.iter().any(|p| p.is_empty() || p.len() > 255) {
            return Err(Error::TlsFail);
        }
        with_config!(&mut self.backend, cfg => cfg.set_application_protos(protos))
    }

    /// Sets the ALPN protocols from the TLS wire format: each name prefixed by its length byte.
    pub fn set_application_protos_wire_format(&mut self, protos: &[u8]) -> Result<()> {
        let mut b = octets::Octets::with_slice(protos);
        let mut list = Vec::new();
        while b.cap() > 0 {
            let proto = b.get_bytes_with_u8_length().map_err(|_| Error::TlsFail)?;
            list.push(proto.buf());
        }
        self.set_application_protos(&list)
    }

    /// The configured ALPN protocols.
    pub fn application_protos(&self) -> &[Vec<u8>] {
        with_config!(&self.backend, cfg => cfg.application_protos())
    }

    /// Enables 0-RTT: clients offer early data with resumed sessions, servers accept it and issue
    /// tickets that allow it (with max_early_data_size 0xffffffff, RFC 9001 §4.6.1).
    pub fn enable_early_data(&mut self) {
        with_config!(&mut self.backend, cfg => cfg.enable_early_data())
    }

    /// Whether 0-RTT is enabled.
    pub fn is_early_data_enabled(&self) -> bool {
        with_config!(&self.backend, cfg => cfg.is_early_data_enabled())
    }

    /// Sets how many resumable sessions a server remembers (default 4,096), the oldest
    /// forgotten first; 0 remembers none (no tickets are issued). Replaces the cache, so
    /// sessions remembered so far are forgotten.
    pub fn set_server_session_cache_size(&mut self, n: usize) {
        with_config!(&mut self.backend, cfg => cfg.set_server_session_cache_size(n))
    }

    /// Enables key logging: connections then write NSS key log lines to the writer given to
    /// `Handshake::set_keylog`.
    pub fn log_keys(&mut self) {
        with_config!(&mut self.backend, cfg => cfg.log_keys())
    }

    /// Whether key logging is enabled.
    pub fn is_log_keys_enabled(&self) -> bool {
        with_config!(&self.backend, cfg => cfg.is_log_keys_enabled())
    }

    /// Restricts the TLS 1.3 cipher suites, in order of preference, e.g. only
    /// `TLS13_CHACHA20_POLY1305_SHA256`. Fails on an empty list or a suite we do not support.
    pub fn set_cipher_suites(&mut self, suites: &[CipherSuite]) -> Result<()> {
        if suites.is_empty() {
            return Err(Error::TlsFail);
        }
        with_config!(&mut self.backend, cfg => cfg.set_cipher_suites(suites))
    }
}

impl TlsConfig {
    /// Sets the key exchange groups, a colon-separated list of names in order of preference,
    /// e.g. `"X25519:P-256"` (OpenSSL's `SSL_CTX_set1_curves_list`). Fails on an empty list or
    /// a group the backend does not have.
    pub fn set_curves_list(&mut self, curves: &str) -> Result<()> {
        if curves.is_empty() {
            return Err(Error::TlsFail);
        }
        with_config!(&mut self.backend, cfg => cfg.set_curves_list(curves))
    }

    /// Sets the key that encrypts a server's session tickets (BoringSSL: 48 bytes), so that
    /// servers sharing it resume each other's sessions. BoringSSL only.
    #[cfg(feature = "boringssl-boring-crate")]
    pub fn set_ticket_key(&mut self, key: &[u8]) -> Result<()> {
        match &mut self.backend {
            ConfigBackend::BoringSsl(cfg) => cfg.set_ticket_key(key),
            ConfigBackend::Rustls(_) => {
                log::error!("set_ticket_key: BoringSSL only");
                Err(Error::TlsFail)
            }
        }
    }
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        with_config!(&self.backend, cfg => cfg.fmt(f))
    }
}
