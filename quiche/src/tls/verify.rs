//! Server certificate verification for clients.
//!
//! One verifier covers the three client settings: verification against the configured roots with
//! a server name, verification of the chain only when the application gave no name (as OpenSSL
//! and BoringSSL do when no host is set), and no verification at all (`verify_peer(false)`). In
//! every case the TLS 1.3 CertificateVerify signature is still checked with the provider's
//! algorithms, so the handshake stays bound to the key of the certificate the server presented.

use std::net::Ipv6Addr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// The name given to rustls when the application connects without a server name.
///
/// rustls needs a `ServerName`; an IP address makes it omit SNI, and no certificate can
/// legitimately be issued for the unspecified address, so this value means "no name" below.
pub(crate) fn unnamed_server() -> ServerName<'static> {
    ServerName::IpAddress(Ipv6Addr::UNSPECIFIED.into())
}

fn is_unnamed(name: &ServerName<'_>) -> bool {
    *name == unnamed_server()
}

/// Verifies the server's certificate for a client.
#[derive(Debug)]
pub(crate) struct ServerVerifier {
    /// Trust anchors; `None` accepts any certificate (signatures are still checked).
    roots: Option<Arc<RootCertStore>>,
    algs: WebPkiSupportedAlgorithms,
}

impl ServerVerifier {
    /// A verifier that checks the chain against `roots` (and the name when there is one), or
    /// accepts any certificate when `roots` is `None`.
    pub(crate) fn new(roots: Option<Arc<RootCertStore>>, algs: WebPkiSupportedAlgorithms) -> Self {
        ServerVerifier { roots, algs }
    }
}

impl ServerCertVerifier for ServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(roots) = &self.roots else {
            return Ok(ServerCertVerified::assertion());
        };
        let cert = ParsedCertificate::try_from(end_entity)?;
        verify_server_cert_signed_by_trust_anchor(&cert, roots, intermediates, now, self.algs.all)?;
        if !is_unnamed(server_name) {
            verify_server_name(&cert, server_name)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // Unreachable with TLS 1.3 only, but answering correctly costs nothing.
        verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}
