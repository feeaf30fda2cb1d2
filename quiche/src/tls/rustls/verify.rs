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
use rustls::crypto::{
    verify_tls12_signature, verify_tls13_signature, verify_tls13_signature_with_raw_key,
    WebPkiSupportedAlgorithms,
};
use rustls::pki_types::{CertificateDer, ServerName, SubjectPublicKeyInfoDer, UnixTime};
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
        match verify_tls13_signature(message, cert, dss, &self.algs) {
            // Without verification, a certificate webpki does not parse (X.509 v1, as quiche's
            // example certificate) is still held to its key: the signature is checked against
            // the key read from the certificate by hand.
            Err(e) if self.roots.is_none() => match spki_of(cert) {
                Some(spki) => {
                    let spki = SubjectPublicKeyInfoDer::from(spki);
                    verify_tls13_signature_with_raw_key(message, &spki, dss, &self.algs)
                }
                None => Err(e),
            },
            result => result,
        }
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// One DER element: its tag, the whole element, its content, and what follows it.
type DerElement<'a> = (u8, &'a [u8], &'a [u8], &'a [u8]);

/// The DER element at the start of `der`.
fn der_element(der: &[u8]) -> Option<DerElement<'_>> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let header = der.len() - rest.len();
    Some((tag, &der[..header + len], &rest[..len], &rest[len..]))
}

/// The SubjectPublicKeyInfo of an X.509 certificate of any version (RFC 5280 §4.1): the
/// element after serial number, signature algorithm, issuer, validity and subject.
fn spki_of<'a>(cert: &'a CertificateDer<'_>) -> Option<&'a [u8]> {
    let (0x30, _, certificate, _) = der_element(cert.as_ref())? else {
        return None;
    };
    let (0x30, _, tbs, _) = der_element(certificate)? else {
        return None;
    };
    let mut rest = tbs;
    // [0] EXPLICIT version, absent in v1 certificates.
    if rest.first() == Some(&0xa0) {
        rest = der_element(rest)?.3;
    }
    for _ in 0..5 {
        rest = der_element(rest)?.3;
    }
    match der_element(rest)? {
        (0x30, spki, _, _) => Some(spki),
        _ => None,
    }
}

#[cfg(test)]
mod spki_tests {
    use super::*;

    #[test]
    fn spki_of_v3_certificates_matches_webpki() {
        let pem = std::fs::read(format!(
            "{}/tests/certs/cert.crt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        use rustls::pki_types::pem::PemObject;
        let cert = CertificateDer::from_pem_slice(&pem).unwrap();
        let parsed = ParsedCertificate::try_from(&cert).unwrap();
        assert_eq!(
            spki_of(&cert).unwrap(),
            parsed.subject_public_key_info().as_ref()
        );
        // Truncated or wrong input gives nothing, never a panic.
        for cut in 0..cert.as_ref().len() {
            let short = CertificateDer::from(&cert.as_ref()[..cut]);
            assert!(spki_of(&short).is_none_or(|s| s.len() < cut));
        }
    }
}
