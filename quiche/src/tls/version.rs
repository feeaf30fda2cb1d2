//! What the handshake needs for QUIC version 2 (RFC 9369) and compatible version negotiation
//! (RFC 9368): the client's transport parameters read from its ClientHello before TLS runs, and
//! packet keys derived with another version's labels than the rustls connection was made for.
//!
//! rustls fixes a connection's QUIC version when the connection is created. A server decides
//! the version before that (it reads the client's Version Information from the ClientHello
//! itself, [`client_hello_transport_params`]), so only a client that started in one version and
//! is switched by the server needs keys rustls cannot give: it takes the traffic secrets from
//! rustls's key log hook ([`SecretLog`]) and derives the keys itself.

use std::sync::{Arc, Mutex};

use rustls::quic::{Keys, PacketKeySet, Secrets};
use rustls::KeyLog;

use crate::crypto::{self, Algorithm, Labels};
use crate::error::{Error, Result};
use crate::packet::QUIC_V2;

/// The rustls QUIC version whose labels `version` uses.
pub(crate) fn rustls_version(version: u32) -> rustls::quic::Version {
    if version == QUIC_V2 {
        rustls::quic::Version::V2
    } else {
        rustls::quic::Version::V1
    }
}

/// TLS handshake message type of ClientHello (RFC 8446 §4).
const CLIENT_HELLO: u8 = 1;
/// The quic_transport_parameters extension (RFC 9001 §8.2).
const QUIC_TRANSPORT_PARAMETERS: u16 = 0x39;
/// The largest ClientHello a server buffers before TLS sees it: far beyond any real one
/// (post-quantum key shares included), small enough to bound what a peer can make us keep.
pub(crate) const MAX_CLIENT_HELLO: usize = 16 * 1024;

/// The length of the first handshake message in `buf` (header included), once `buf` holds
/// its header; `None` before.
pub(crate) fn first_message_len(buf: &[u8]) -> Option<usize> {
    let h = buf.get(..4)?;
    Some(4 + ((usize::from(h[1]) << 16) | (usize::from(h[2]) << 8) | usize::from(h[3])))
}

/// The encoded transport parameters in the ClientHello at the start of `buf`, or `None` if
/// `buf` does not start with a whole, well-formed ClientHello carrying them. Nothing is
/// validated beyond the framing: TLS checks the message again when it reads it.
pub(crate) fn client_hello_transport_params(buf: &[u8]) -> Option<&[u8]> {
    let len = first_message_len(buf)?;
    if buf.first() != Some(&CLIENT_HELLO) {
        return None;
    }
    let mut b = octets::Octets::with_slice(buf.get(4..len)?);
    b.skip(2 + 32).ok()?; // legacy_version, random
    let session_id = b.get_u8().ok()?;
    b.skip(usize::from(session_id)).ok()?;
    let suites = b.get_u16().ok()?;
    b.skip(usize::from(suites)).ok()?;
    let compression = b.get_u8().ok()?;
    b.skip(usize::from(compression)).ok()?;
    let mut exts = b.get_bytes_with_u16_length().ok()?;
    while exts.cap() > 0 {
        let ty = exts.get_u16().ok()?;
        let body = exts.get_bytes_with_u16_length().ok()?;
        if ty == QUIC_TRANSPORT_PARAMETERS {
            return Some(body.buf());
        }
    }
    None
}

/// The 1-RTT traffic secrets of both directions and the handshake ones, as the key log hook
/// saw them.
#[derive(Default)]
struct Captured {
    client_handshake: Option<Vec<u8>>,
    server_handshake: Option<Vec<u8>>,
    client_traffic: Option<Vec<u8>>,
    server_traffic: Option<Vec<u8>>,
}

/// A key log that keeps the handshake and 1-RTT traffic secrets of its connection and passes
/// every line on to the application's key log, if any.
pub(crate) struct SecretLog {
    inner: Arc<dyn KeyLog>,
    captured: Mutex<Captured>,
}

impl SecretLog {
    pub(crate) fn new(inner: Arc<dyn KeyLog>) -> Self {
        SecretLog {
            inner,
            captured: Mutex::new(Captured::default()),
        }
    }

    fn captured(&self) -> std::sync::MutexGuard<'_, Captured> {
        match self.captured.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// A client's Handshake keys with `labels`, from the secrets logged so far.
    pub(crate) fn handshake_keys(&self, alg: Algorithm, labels: &Labels) -> Result<Keys> {
        let c = self.captured();
        client_keys(
            alg,
            labels,
            c.client_handshake.as_deref(),
            c.server_handshake.as_deref(),
        )
    }

    /// A client's 1-RTT keys with `labels` and the secrets of the following key phases.
    pub(crate) fn one_rtt_keys(
        &self,
        alg: Algorithm,
        labels: &'static Labels,
    ) -> Result<(Keys, NextSecrets)> {
        let c = self.captured();
        let (client, server) = (c.client_traffic.as_deref(), c.server_traffic.as_deref());
        let keys = client_keys(alg, labels, client, server)?;
        let mut next = OwnSecrets {
            alg,
            labels,
            local: client.ok_or(Error::TlsFail)?.to_vec(),
            remote: server.ok_or(Error::TlsFail)?.to_vec(),
        };
        next.update()?;
        Ok((keys, NextSecrets::Own(next)))
    }
}

fn client_keys(
    alg: Algorithm,
    labels: &Labels,
    client: Option<&[u8]>,
    server: Option<&[u8]>,
) -> Result<Keys> {
    let (Some(client), Some(server)) = (client, server) else {
        log::error!("TLS secrets for a version switch were not logged");
        return Err(Error::TlsFail);
    };
    Ok(Keys {
        local: crypto::derive_keys_with(labels, alg, client)?,
        remote: crypto::derive_keys_with(labels, alg, server)?,
    })
}

impl KeyLog for SecretLog {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        {
            let mut c = self.captured();
            let slot = match label {
                "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => Some(&mut c.client_handshake),
                "SERVER_HANDSHAKE_TRAFFIC_SECRET" => Some(&mut c.server_handshake),
                "CLIENT_TRAFFIC_SECRET_0" => Some(&mut c.client_traffic),
                "SERVER_TRAFFIC_SECRET_0" => Some(&mut c.server_traffic),
                _ => None,
            };
            if let Some(slot) = slot {
                *slot = Some(secret.to_vec());
            }
        }
        if self.inner.will_log(label) {
            self.inner.log(label, client_random, secret);
        }
    }

    fn will_log(&self, _label: &str) -> bool {
        true
    }
}

impl std::fmt::Debug for SecretLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretLog")
    }
}

/// Secrets of the next 1-RTT key phases derived here, with a version's key update label.
pub struct OwnSecrets {
    alg: Algorithm,
    labels: &'static Labels,
    local: Vec<u8>,
    remote: Vec<u8>,
}

impl OwnSecrets {
    /// The secrets `local` (ours) and `remote` of the next key phase.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn new(
        alg: Algorithm,
        labels: &'static Labels,
        local: &[u8],
        remote: &[u8],
    ) -> Self {
        OwnSecrets {
            alg,
            labels,
            local: local.to_vec(),
            remote: remote.to_vec(),
        }
    }

    fn update(&mut self) -> Result<()> {
        for secret in [&mut self.local, &mut self.remote] {
            let mut next = vec![0; self.alg.secret_len()];
            crypto::next_secret_with(self.labels, self.alg, secret, &mut next)?;
            *secret = next;
        }
        Ok(())
    }
}

/// What derives the packet keys of the next 1-RTT key phases (RFC 9001 §6): rustls's secrets,
/// or ours after a compatible version switch.
pub enum NextSecrets {
    /// The secrets rustls handed out, with the labels of its connection's version.
    Rustls(Secrets),
    /// Secrets derived here from the logged traffic secrets.
    Own(OwnSecrets),
}

impl NextSecrets {
    /// The packet keys of the next phase; the secrets move on to the phase after it.
    pub fn next_packet_keys(&mut self) -> PacketKeySet {
        match self {
            NextSecrets::Rustls(s) => s.next_packet_keys(),
            NextSecrets::Own(s) => {
                let key = |secret: &[u8]| -> Box<dyn rustls::quic::PacketKey> {
                    match crypto::PacketKey::from_secret_with(s.labels, s.alg, secret) {
                        Ok(k) => Box::new(k),
                        // Lengths are right by construction; a key that cannot be built
                        // would only fail to open packets, never panic.
                        Err(_) => Box::new(FailingKey),
                    }
                };
                let keys = PacketKeySet {
                    local: key(&s.local),
                    remote: key(&s.remote),
                };
                if s.update().is_err() {
                    log::error!("key update derivation failed");
                }
                keys
            }
        }
    }
}

/// A packet key that refuses everything: the stand-in for a key whose derivation failed.
struct FailingKey;

impl rustls::quic::PacketKey for FailingKey {
    fn encrypt_in_place(
        &self,
        _: u64,
        _: &[u8],
        _: &mut [u8],
    ) -> std::result::Result<rustls::quic::Tag, rustls::Error> {
        Err(rustls::Error::EncryptError)
    }

    fn decrypt_in_place<'a>(
        &self,
        _: u64,
        _: &[u8],
        _: &'a mut [u8],
    ) -> std::result::Result<&'a [u8], rustls::Error> {
        Err(rustls::Error::DecryptError)
    }

    fn tag_len(&self) -> usize {
        crypto::TAG_LEN
    }

    fn confidentiality_limit(&self) -> u64 {
        0
    }

    fn integrity_limit(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(exts: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.extend_from_slice(&[0]); // session id
        body.extend_from_slice(&[0, 2, 0x13, 0x01]);
        body.extend_from_slice(&[1, 0]);
        let mut e = Vec::new();
        for (ty, v) in exts {
            e.extend_from_slice(&ty.to_be_bytes());
            e.extend_from_slice(&(v.len() as u16).to_be_bytes());
            e.extend_from_slice(v);
        }
        body.extend_from_slice(&(e.len() as u16).to_be_bytes());
        body.extend_from_slice(&e);
        let mut msg = vec![CLIENT_HELLO, 0, (body.len() >> 8) as u8, body.len() as u8];
        msg.extend_from_slice(&body);
        msg
    }

    #[test]
    fn finds_the_transport_parameters_of_a_whole_client_hello() {
        let msg = hello(&[(0x10, b"alpn"), (0x39, b"params"), (0x2b, b"v")]);
        assert_eq!(first_message_len(&msg), Some(msg.len()));
        assert_eq!(client_hello_transport_params(&msg), Some(&b"params"[..]));
        // Trailing bytes of later messages do not matter.
        let mut more = msg.clone();
        more.extend_from_slice(&[1, 2, 3]);
        assert_eq!(client_hello_transport_params(&more), Some(&b"params"[..]));
        // Incomplete, absent or malformed: nothing.
        for len in 0..msg.len() {
            assert_eq!(client_hello_transport_params(&msg[..len]), None);
        }
        assert_eq!(client_hello_transport_params(&hello(&[(0x10, b"x")])), None);
        let mut wrong_type = msg.clone();
        wrong_type[0] = 2;
        assert_eq!(client_hello_transport_params(&wrong_type), None);
        let mut bad_ext_len = msg;
        let n = bad_ext_len.len();
        // The extension's length field now runs past the message.
        bad_ext_len[n - 13] = 0xff;
        assert_eq!(client_hello_transport_params(&bad_ext_len), None);
    }
}
