//! `ring`-backed implementations of rustls's QUIC key traits.

use std::fmt;

use ring::aead;
use ring::hkdf;

use super::{hkdf_expand_label, Algorithm, Labels, LABELS_V1, MAX_SECRET_LEN, NONCE_LEN};
use crate::error::{Error, Result};

/// Longest AEAD or header protection key of the supported algorithms.
const MAX_KEY_LEN: usize = 32;

/// Packet number bytes a header protection mask covers (RFC 9001 §5.4.1).
const MAX_PN_LEN: usize = 4;

/// Expands `label` from `secret` into a stack buffer of `len` bytes.
fn expand(
    alg: Algorithm,
    secret: &[u8],
    label: &[u8],
    len: usize,
) -> Result<([u8; MAX_SECRET_LEN], usize)> {
    let mut out = [0; MAX_SECRET_LEN];
    let dst = out.get_mut(..len).ok_or(Error::CryptoFail)?;
    let prk = hkdf::Prk::new_less_safe(alg.hkdf(), secret);
    hkdf_expand_label(&prk, label, dst)?;
    Ok((out, len))
}

/// An AEAD packet protection key with its IV (RFC 9001 §5.3).
pub struct PacketKey {
    key: aead::LessSafeKey,
    iv: [u8; NONCE_LEN],
    alg: Algorithm,
}

impl PacketKey {
    /// A packet key from raw key and IV bytes.
    pub fn new(alg: Algorithm, key: &[u8], iv: &[u8]) -> Result<Self> {
        if key.len() != alg.key_len() || key.len() > MAX_KEY_LEN {
            return Err(Error::CryptoFail);
        }
        let iv: [u8; NONCE_LEN] = iv.try_into().map_err(|_| Error::CryptoFail)?;
        let key = aead::UnboundKey::new(alg.aead(), key).map_err(|_| Error::CryptoFail)?;

        Ok(PacketKey {
            key: aead::LessSafeKey::new(key),
            iv,
            alg,
        })
    }

    /// The packet key of a traffic secret ("quic key" and "quic iv", RFC 9001 §5.1).
    pub fn from_secret(alg: Algorithm, secret: &[u8]) -> Result<Self> {
        Self::from_secret_with(&LABELS_V1, alg, secret)
    }

    /// [`PacketKey::from_secret`] with another version's labels ("quicv2 key" and "quicv2 iv"
    /// for QUIC v2, RFC 9369 §3.3.2).
    pub fn from_secret_with(labels: &Labels, alg: Algorithm, secret: &[u8]) -> Result<Self> {
        let (key, key_len) = expand(alg, secret, labels.key, alg.key_len())?;
        let (iv, iv_len) = expand(alg, secret, labels.iv, alg.iv_len())?;
        let key = key.get(..key_len).ok_or(Error::CryptoFail)?;
        let iv = iv.get(..iv_len).ok_or(Error::CryptoFail)?;
        Self::new(alg, key, iv)
    }

    /// The key's AEAD algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The nonce for a packet: the IV XORed with the packet number, left-padded with zeros to
    /// the IV's length (RFC 9001 §5.3).
    fn nonce_bytes(&self, pn: u64) -> [u8; NONCE_LEN] {
        let mut nonce = self.iv;
        let pn = pn.to_be_bytes();
        let tail = nonce.len() - pn.len();
        for (n, p) in nonce.iter_mut().skip(tail).zip(pn) {
            *n ^= p;
        }
        nonce
    }

    fn nonce(&self, pn: u64) -> aead::Nonce {
        aead::Nonce::assume_unique_for_key(self.nonce_bytes(pn))
    }

    #[cfg(test)]
    pub(crate) fn nonce_for_test(&self, pn: u64) -> [u8; NONCE_LEN] {
        self.nonce_bytes(pn)
    }
}

impl fmt::Debug for PacketKey {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("PacketKey")
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl rustls::quic::PacketKey for PacketKey {
    fn encrypt_in_place(
        &self,
        packet_number: u64,
        header: &[u8],
        payload: &mut [u8],
    ) -> std::result::Result<rustls::quic::Tag, rustls::Error> {
        let tag = self
            .key
            .seal_in_place_separate_tag(self.nonce(packet_number), aead::Aad::from(header), payload)
            .map_err(|_| rustls::Error::EncryptError)?;
        Ok(rustls::quic::Tag::from(tag.as_ref()))
    }

    fn decrypt_in_place<'a>(
        &self,
        packet_number: u64,
        header: &[u8],
        payload: &'a mut [u8],
    ) -> std::result::Result<&'a [u8], rustls::Error> {
        let plain = self
            .key
            .open_in_place(self.nonce(packet_number), aead::Aad::from(header), payload)
            .map_err(|_| rustls::Error::DecryptError)?;
        Ok(plain)
    }

    fn tag_len(&self) -> usize {
        self.alg.tag_len()
    }

    fn confidentiality_limit(&self) -> u64 {
        self.alg.confidentiality_limit()
    }

    fn integrity_limit(&self) -> u64 {
        self.alg.integrity_limit()
    }
}

/// A header protection key (RFC 9001 §5.4).
pub struct HeaderProtectionKey {
    key: aead::quic::HeaderProtectionKey,
    alg: Algorithm,
}

impl HeaderProtectionKey {
    /// A header protection key from raw key bytes.
    pub fn new(alg: Algorithm, key: &[u8]) -> Result<Self> {
        let key =
            aead::quic::HeaderProtectionKey::new(alg.hp(), key).map_err(|_| Error::CryptoFail)?;
        Ok(HeaderProtectionKey { key, alg })
    }

    /// The header protection key of a traffic secret ("quic hp", RFC 9001 §5.1).
    pub fn from_secret(alg: Algorithm, secret: &[u8]) -> Result<Self> {
        Self::from_secret_with(&LABELS_V1, alg, secret)
    }

    /// [`HeaderProtectionKey::from_secret`] with another version's label ("quicv2 hp" for QUIC
    /// v2, RFC 9369 §3.3.2).
    pub fn from_secret_with(labels: &Labels, alg: Algorithm, secret: &[u8]) -> Result<Self> {
        let (key, len) = expand(alg, secret, labels.hp, alg.hp_key_len())?;
        Self::new(alg, key.get(..len).ok_or(Error::CryptoFail)?)
    }

    /// The key's AEAD algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// Applies or removes the mask (RFC 9001 §5.4.1). Nothing changes unless the sample and
    /// packet number field have valid lengths.
    fn xor(
        &self,
        sample: &[u8],
        first: &mut u8,
        packet_number: &mut [u8],
        removing: bool,
    ) -> std::result::Result<(), rustls::Error> {
        if packet_number.len() > MAX_PN_LEN {
            return Err(rustls::Error::General("packet number too long".into()));
        }
        let mask = self
            .key
            .new_mask(sample)
            .map_err(|_| rustls::Error::General("wrong header protection sample length".into()))?;

        // Long headers protect the low 4 bits (type-specific), short headers the low 5 (with
        // the key phase bit).
        let bits = if *first & 0x80 != 0 { 0x0f } else { 0x1f };

        // The packet number length is read from the unprotected first byte: after unmasking
        // when removing protection, before masking when applying it.
        let plain_first = if removing {
            *first ^ (mask[0] & bits)
        } else {
            *first
        };
        let pn_len = usize::from(plain_first & 0x03) + 1;

        *first ^= mask[0] & bits;
        for (b, m) in packet_number.iter_mut().zip(&mask[1..]).take(pn_len) {
            *b ^= m;
        }
        Ok(())
    }
}

impl fmt::Debug for HeaderProtectionKey {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("HeaderProtectionKey")
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl rustls::quic::HeaderProtectionKey for HeaderProtectionKey {
    fn encrypt_in_place(
        &self,
        sample: &[u8],
        first: &mut u8,
        packet_number: &mut [u8],
    ) -> std::result::Result<(), rustls::Error> {
        self.xor(sample, first, packet_number, false)
    }

    fn decrypt_in_place(
        &self,
        sample: &[u8],
        first: &mut u8,
        packet_number: &mut [u8],
    ) -> std::result::Result<(), rustls::Error> {
        self.xor(sample, first, packet_number, true)
    }

    fn sample_len(&self) -> usize {
        self.key.algorithm().sample_len()
    }
}
