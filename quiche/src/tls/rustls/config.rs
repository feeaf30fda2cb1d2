//! The rustls backend's TLS settings, and the rustls configs built from them.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::ServerCertVerifier;
use rustls::client::{ResolvesClientCert, Resumption};
use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ServerSessionMemoryCache, StoresServerSessions, WebPkiClientVerifier};
use rustls::{CipherSuite, ClientConfig, RootCertStore, ServerConfig, SupportedCipherSuite};

use super::session::SessionRegistry;
use super::verify::ServerVerifier;
use crate::error::{Error, Result};

/// Resumable sessions a server remembers (shared by all its connections). Stateful tickets are
/// what makes 0-RTT possible with rustls: its single-use lookup is the anti-replay defence of
/// RFC 8446 §8.1, and rustls refuses early data with stateless tickets.
const SERVER_SESSION_CACHE_SIZE: usize = 4096;

/// CA bundles of common systems, tried when a client verifies peers but was given no CA.
const SYSTEM_CA_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The TLS 1.3 suites of the *ring* provider in our default order of preference. AES-128-GCM
/// comes first: Initial packets use it anyway (RFC 9001 §5.2) and it is the cheapest with AES
/// instructions.
fn default_suites() -> Vec<SupportedCipherSuite> {
    use rustls::crypto::ring::cipher_suite;
    vec![
        cipher_suite::TLS13_AES_128_GCM_SHA256,
        cipher_suite::TLS13_AES_256_GCM_SHA384,
        cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
    ]
}

fn tls_err(e: rustls::Error) -> Error {
    log::error!("TLS configuration error: {e}");
    Error::TlsFail
}

/// TLS settings of a `Config`: certificates, peer verification, ALPN, early data, key logging and
/// cipher suites.
///
/// The rustls client and server configs are built on first use, cached and rebuilt only after a
/// setting changes. The certificate verifier and the client-certificate resolver survive rebuilds
/// that do not touch them, because rustls only resumes sessions received under the same ones.
pub(crate) struct RustlsConfig {
    cert_chain: Vec<CertificateDer<'static>>,
    priv_key: Option<PrivateKeyDer<'static>>,
    /// CAs loaded by the application; `None` if it loaded none.
    roots: Option<RootCertStore>,
    /// `None`: verify servers, do not ask clients for certificates.
    verify_peer: Option<bool>,
    alpn: Vec<Vec<u8>>,
    early_data: bool,
    log_keys: bool,
    suites: Vec<SupportedCipherSuite>,
    /// Key exchange groups in order of preference; `None`: the provider's default.
    groups: Option<Vec<&'static dyn SupportedKxGroup>>,

    client: Option<Arc<ClientConfig>>,
    server: Option<Arc<ServerConfig>>,
    verifier: Option<Arc<dyn ServerCertVerifier>>,
    client_resolver: Option<Arc<dyn ResolvesClientCert>>,

    sessions: Arc<SessionRegistry>,
    server_sessions: Arc<dyn StoresServerSessions>,
}

impl RustlsConfig {
    /// Default settings: verify servers (against the loaded CAs, else the system bundle), no
    /// client certificates, no ALPN, no early data, no key log, all three TLS 1.3 suites.
    pub fn new() -> Self {
        RustlsConfig {
            cert_chain: Vec::new(),
            priv_key: None,
            roots: None,
            verify_peer: None,
            alpn: Vec::new(),
            early_data: false,
            log_keys: false,
            suites: default_suites(),
            groups: None,
            client: None,
            server: None,
            verifier: None,
            client_resolver: None,
            sessions: Arc::new(SessionRegistry::default()),
            server_sessions: ServerSessionMemoryCache::new(SERVER_SESSION_CACHE_SIZE),
        }
    }

    /// Drops the built rustls configs so the next connection sees the new settings.
    fn changed(&mut self) {
        self.client = None;
        self.server = None;
    }

    /// Loads the certificate chain (leaf first) from a PEM file.
    pub fn load_cert_chain_from_pem_file(&mut self, file: &str) -> Result<()> {
        let chain = CertificateDer::pem_file_iter(file)
            .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
            .map_err(|e| {
                log::error!("cannot load certificates from {file}: {e}");
                Error::TlsFail
            })?;
        if chain.is_empty() {
            log::error!("no certificate in {file}");
            return Err(Error::TlsFail);
        }
        self.cert_chain = chain;
        self.client_resolver = None;
        self.changed();
        Ok(())
    }

    /// Loads the private key (PKCS#8, SEC1 or PKCS#1) from a PEM file.
    pub fn load_priv_key_from_pem_file(&mut self, file: &str) -> Result<()> {
        let key = PrivateKeyDer::from_pem_file(file).map_err(|e| {
            log::error!("cannot load a private key from {file}: {e}");
            Error::TlsFail
        })?;
        self.priv_key = Some(key);
        self.client_resolver = None;
        self.changed();
        Ok(())
    }

    /// Adds the CA certificates of a PEM file to the trust anchors used to verify peers.
    pub fn load_verify_locations_from_file(&mut self, file: &str) -> Result<()> {
        let certs = CertificateDer::pem_file_iter(file)
            .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
            .map_err(|e| {
                log::error!("cannot load CA certificates from {file}: {e}");
                Error::TlsFail
            })?;
        if certs.is_empty() {
            log::error!("no CA certificate in {file}");
            return Err(Error::TlsFail);
        }
        let roots = self.roots.get_or_insert_with(RootCertStore::empty);
        for cert in certs {
            roots.add(cert).map_err(tls_err)?;
        }
        self.verifier = None;
        self.changed();
        Ok(())
    }

    /// Adds the CA certificates of every PEM file in a directory to the trust anchors; files that
    /// hold no usable certificate are skipped.
    pub fn load_verify_locations_from_directory(&mut self, dir: &str) -> Result<()> {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            log::error!("cannot read CA directory {dir}: {e}");
            Error::TlsFail
        })?;
        let roots = self.roots.get_or_insert_with(RootCertStore::empty);
        let mut added = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            if let Ok(certs) = CertificateDer::pem_file_iter(&path) {
                added += roots.add_parsable_certificates(certs.flatten()).0;
            }
        }
        if added == 0 {
            log::error!("no CA certificate in {dir}");
            return Err(Error::TlsFail);
        }
        self.verifier = None;
        self.changed();
        Ok(())
    }

    /// Whether to verify the peer's certificate. Defaults to `true` for clients and `false` for
    /// servers. A client with `false` accepts any server certificate (the handshake signature is
    /// still checked against it); a server with `true` asks clients for a certificate and checks
    /// it against the loaded CAs if one is sent.
    pub fn verify_peer(&mut self, verify: bool) {
        self.verify_peer = Some(verify);
        self.verifier = None;
        self.changed();
    }

    /// Sets the ALPN protocols, most preferred first (validated by `TlsConfig`).
    pub fn set_application_protos(&mut self, protos: &[&[u8]]) -> Result<()> {
        self.alpn = protos.iter().map(|p| p.to_vec()).collect();
        self.changed();
        Ok(())
    }

    /// The configured ALPN protocols.
    pub fn application_protos(&self) -> &[Vec<u8>] {
        &self.alpn
    }

    /// Enables 0-RTT: clients offer early data with resumed sessions, servers accept it and issue
    /// tickets that allow it (with max_early_data_size 0xffffffff, RFC 9001 §4.6.1).
    pub fn enable_early_data(&mut self) {
        self.early_data = true;
        self.changed();
    }

    /// Sets how many resumable sessions a server remembers (default 4,096), the oldest
    /// forgotten first; 0 remembers none (no tickets are issued). Replaces the cache, so
    /// sessions remembered so far are forgotten.
    pub fn set_server_session_cache_size(&mut self, n: usize) {
        self.server_sessions = if n == 0 {
            Arc::new(rustls::server::NoServerSessionStorage {})
        } else {
            ServerSessionMemoryCache::new(n)
        };
        self.changed();
    }

    /// Whether 0-RTT is enabled.
    pub fn is_early_data_enabled(&self) -> bool {
        self.early_data
    }

    /// Enables key logging: connections then write NSS key log lines to the writer given to
    /// `Handshake::set_keylog`.
    pub fn log_keys(&mut self) {
        self.log_keys = true;
    }

    /// Whether key logging is enabled.
    pub fn is_log_keys_enabled(&self) -> bool {
        self.log_keys
    }

    /// Restricts the TLS 1.3 cipher suites, in order of preference, e.g. only
    /// `TLS13_CHACHA20_POLY1305_SHA256`. Fails on an empty list or a suite we do not support.
    pub fn set_cipher_suites(&mut self, suites: &[CipherSuite]) -> Result<()> {
        if suites.is_empty() {
            return Err(Error::TlsFail);
        }
        let available = default_suites();
        let mut chosen = Vec::with_capacity(suites.len());
        for want in suites {
            let suite = available
                .iter()
                .find(|s| s.suite() == *want)
                .ok_or(Error::TlsFail)?;
            if !chosen
                .iter()
                .any(|s: &SupportedCipherSuite| s.suite() == *want)
            {
                chosen.push(*suite);
            }
        }
        self.suites = chosen;
        self.changed();
        Ok(())
    }

    /// The registry of session tickets received by this config's client connections.
    pub(crate) fn sessions(&self) -> &Arc<SessionRegistry> {
        &self.sessions
    }

    /// Sets the key exchange groups from OpenSSL-style names, e.g. `"X25519:P-256"` (the
    /// *ring* provider has X25519, P-256 and P-384; `prime256v1`, `secp256r1` and `secp384r1`
    /// name the NIST curves too).
    pub fn set_curves_list(&mut self, curves: &str) -> Result<()> {
        use rustls::crypto::ring::kx_group;
        let mut groups: Vec<&'static dyn SupportedKxGroup> = Vec::new();
        for name in curves.split(':') {
            let group: &'static dyn SupportedKxGroup = match name {
                "X25519" | "x25519" => kx_group::X25519,
                "P-256" | "prime256v1" | "secp256r1" => kx_group::SECP256R1,
                "P-384" | "secp384r1" => kx_group::SECP384R1,
                _ => {
                    log::error!("set_curves_list: unknown or unsupported group {name:?}");
                    return Err(Error::TlsFail);
                }
            };
            if !groups.iter().any(|g| g.name() == group.name()) {
                groups.push(group);
            }
        }
        self.groups = Some(groups);
        self.changed();
        Ok(())
    }

    fn provider(&self) -> Arc<CryptoProvider> {
        let mut provider = CryptoProvider {
            cipher_suites: self.suites.clone(),
            ..rustls::crypto::ring::default_provider()
        };
        if let Some(groups) = &self.groups {
            provider.kx_groups = groups.clone();
        }
        Arc::new(provider)
    }

    /// The trust anchors a client verifies servers with: the loaded CAs, else the first system
    /// bundle found (OpenSSL's default verify paths do the same). Empty if there is none: every
    /// server certificate then fails with unknown_ca.
    fn client_roots(&self) -> RootCertStore {
        if let Some(roots) = &self.roots {
            return roots.clone();
        }
        let mut roots = RootCertStore::empty();
        for bundle in SYSTEM_CA_BUNDLES {
            if let Ok(certs) = CertificateDer::pem_file_iter(bundle) {
                roots.add_parsable_certificates(certs.flatten());
                if !roots.is_empty() {
                    break;
                }
            }
        }
        if roots.is_empty() {
            log::warn!("no CA certificates: servers cannot be verified");
        }
        roots
    }

    /// The rustls client config for the current settings (built if needed).
    pub fn client_config(&mut self) -> Result<Arc<ClientConfig>> {
        if let Some(config) = &self.client {
            return Ok(config.clone());
        }
        let provider = self.provider();
        let verifier = match &self.verifier {
            Some(verifier) => verifier.clone(),
            None => {
                // As in quiche, a client verifies the server only when asked to
                // (`verify_peer(true)`): its documented default is no verification.
                let roots = match self.verify_peer {
                    Some(true) => Some(Arc::new(self.client_roots())),
                    _ => None,
                };
                let algs = provider.signature_verification_algorithms;
                let verifier: Arc<dyn ServerCertVerifier> =
                    Arc::new(ServerVerifier::new(roots, algs));
                self.verifier = Some(verifier.clone());
                verifier
            }
        };
        let builder = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(tls_err)?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let mut config = match &self.priv_key {
            Some(key) if !self.cert_chain.is_empty() => builder
                .with_client_auth_cert(self.cert_chain.clone(), key.clone_key())
                .map_err(tls_err)?,
            _ => builder.with_no_client_auth(),
        };
        match &self.client_resolver {
            Some(resolver) => config.client_auth_cert_resolver = resolver.clone(),
            None => self.client_resolver = Some(config.client_auth_cert_resolver.clone()),
        }
        config.alpn_protocols = self.alpn.clone();
        config.enable_early_data = self.early_data;
        // Each connection gets its own store (see `Handshake::new_client`).
        config.resumption = Resumption::disabled();
        let config = Arc::new(config);
        self.client = Some(config.clone());
        Ok(config)
    }

    /// The rustls server config for the current settings (built if needed). Fails without a
    /// certificate chain and a matching private key.
    pub fn server_config(&mut self) -> Result<Arc<ServerConfig>> {
        if let Some(config) = &self.server {
            return Ok(config.clone());
        }
        let provider = self.provider();
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(tls_err)?;
        let builder = if self.verify_peer == Some(true) {
            let roots = Arc::new(self.roots.clone().unwrap_or_else(RootCertStore::empty));
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider.clone())
                .allow_unauthenticated()
                .build()
                .map_err(|e| {
                    log::error!("cannot verify clients: {e}");
                    Error::TlsFail
                })?;
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let Some(key) = &self.priv_key else {
            log::error!("a server needs a private key");
            return Err(Error::TlsFail);
        };
        if self.cert_chain.is_empty() {
            log::error!("a server needs a certificate chain");
            return Err(Error::TlsFail);
        }
        let signing_key = provider
            .key_provider
            .load_private_key(key.clone_key())
            .map_err(tls_err)?;
        let certified = rustls::sign::CertifiedKey::new(self.cert_chain.clone(), signing_key);
        match certified.keys_match() {
            Ok(()) => {}
            Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
                log::error!("the private key does not match the certificate");
                return Err(Error::TlsFail);
            }
            // webpki parses X.509 v3 only: an older certificate (quiche's example one is v1)
            // is served as given, and the client decides whether it accepts it.
            Err(e) => log::warn!("cannot check the key against the certificate: {e}"),
        }
        let resolver = rustls::sign::SingleCertAndKey::from(certified);
        let mut config = builder.with_cert_resolver(Arc::new(resolver));
        config.alpn_protocols = self.alpn.clone();
        // RFC 9001 §4.6.1: 0xffffffff or no early_data extension at all.
        config.max_early_data_size = if self.early_data { u32::MAX } else { 0 };
        config.session_storage = self.server_sessions.clone();
        let config = Arc::new(config);
        self.server = Some(config.clone());
        Ok(config)
    }
}

impl fmt::Debug for RustlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("cert_chain_len", &self.cert_chain.len())
            .field("has_priv_key", &self.priv_key.is_some())
            .field("roots", &self.roots.as_ref().map(RootCertStore::len))
            .field("verify_peer", &self.verify_peer)
            .field("alpn", &self.alpn)
            .field("early_data", &self.early_data)
            .field("log_keys", &self.log_keys)
            .field("suites", &self.suites)
            .finish_non_exhaustive()
    }
}
