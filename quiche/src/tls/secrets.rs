//! The secrets that derive the packet keys of the next 1-RTT key phases (RFC 9001 §6), when
//! they are derived here rather than by rustls: after a compatible version switch (another
//! version's key update label), and for backends that hand out traffic secrets.

use rustls::quic::{Keys, PacketKeySet, Secrets};

use crate::crypto::{self, Algorithm, Labels};
use crate::error::Result;

/// The packet keys of both directions from their traffic secrets (RFC 9001 §5.1).
pub(crate) fn keys_from_secrets(
    alg: Algorithm,
    labels: &Labels,
    local: &[u8],
    remote: &[u8],
) -> Result<Keys> {
    Ok(Keys {
        local: crypto::derive_keys_with(labels, alg, local)?,
        remote: crypto::derive_keys_with(labels, alg, remote)?,
    })
}

/// The 1-RTT packet keys of key phase 0 from the traffic secrets, and the secrets of the
/// phases after it.
pub(crate) fn one_rtt_from_secrets(
    alg: Algorithm,
    labels: &'static Labels,
    local: &[u8],
    remote: &[u8],
) -> Result<(Keys, NextSecrets)> {
    let keys = keys_from_secrets(alg, labels, local, remote)?;
    let mut next = OwnSecrets {
        alg,
        labels,
        local: local.to_vec(),
        remote: remote.to_vec(),
    };
    next.update()?;
    Ok((keys, NextSecrets::Own(next)))
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
/// or ours (after a compatible version switch, or from a backend that hands out secrets).
pub enum NextSecrets {
    /// The secrets rustls handed out, with the labels of its connection's version.
    Rustls(Secrets),
    /// Secrets derived here from the traffic secrets.
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
