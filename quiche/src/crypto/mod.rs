//! Packet protection keys: Initial secrets, AEAD and header protection (RFC 9001 §5).
//!
//! Keys are handed around as rustls's QUIC key traits ([`rustls::quic::PacketKey`] and
//! [`rustls::quic::HeaderProtectionKey`], bundled in [`DirectionalKeys`]), so keys that rustls
//! derives during the handshake and the keys this module derives itself (Initial keys, test
//! vectors) are interchangeable. The implementations here use `ring` directly.

mod keys;

pub use self::keys::{HeaderProtectionKey, PacketKey};
pub use rustls::quic::DirectionalKeys;

use ring::aead;
use ring::hkdf;

use crate::error::{Error, Result};

/// The salt for deriving QUIC v1 Initial secrets (RFC 9001 §5.2).
const INITIAL_SALT_V1: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad,
    0xcc, 0xbb, 0x7f, 0x0a,
];

/// The salt for deriving QUIC v2 Initial secrets (RFC 9369 §3.3.1).
const INITIAL_SALT_V2: [u8; 20] = [
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb,
    0xf9, 0xbd, 0x2e, 0xd9,
];

/// The HKDF labels that turn a traffic secret into packet protection keys, which differ
/// between QUIC versions (RFC 9001 §5.1, RFC 9369 §3.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Labels {
    /// The AEAD key's label.
    pub key: &'static [u8],
    /// The IV's label.
    pub iv: &'static [u8],
    /// The header protection key's label.
    pub hp: &'static [u8],
    /// The key update label.
    pub ku: &'static [u8],
}

/// Version 1's labels (RFC 9001).
pub const LABELS_V1: Labels = Labels {
    key: b"quic key",
    iv: b"quic iv",
    hp: b"quic hp",
    ku: b"quic ku",
};

/// Version 2's labels (RFC 9369 §3.3.2).
pub const LABELS_V2: Labels = Labels {
    key: b"quicv2 key",
    iv: b"quicv2 iv",
    hp: b"quicv2 hp",
    ku: b"quicv2 ku",
};

/// The labels of `version`: version 2's for QUIC v2, version 1's otherwise.
pub fn labels(version: u32) -> &'static Labels {
    if version == crate::packet::QUIC_V2 {
        &LABELS_V2
    } else {
        &LABELS_V1
    }
}

fn initial_salt(version: u32) -> &'static [u8; 20] {
    if version == crate::packet::QUIC_V2 {
        &INITIAL_SALT_V2
    } else {
        &INITIAL_SALT_V1
    }
}

/// The longest traffic secret of the supported algorithms (SHA-384).
pub const MAX_SECRET_LEN: usize = 48;

/// The length of the AEAD nonce (and IV) of every supported algorithm.
pub const NONCE_LEN: usize = aead::NONCE_LEN;

/// The length of the AEAD authentication tag of every supported algorithm.
pub const TAG_LEN: usize = 16;

/// An AEAD algorithm usable for QUIC packet protection (RFC 9001 §5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// AEAD_AES_128_GCM with HKDF-SHA256 (TLS_AES_128_GCM_SHA256). Initial packets use it.
    Aes128Gcm,
    /// AEAD_AES_256_GCM with HKDF-SHA384 (TLS_AES_256_GCM_SHA384).
    Aes256Gcm,
    /// AEAD_CHACHA20_POLY1305 with HKDF-SHA256 (TLS_CHACHA20_POLY1305_SHA256).
    ChaCha20Poly1305,
}

impl Algorithm {
    /// The TLS 1.3 cipher suite's algorithm, if QUIC can use it.
    pub fn from_cipher_suite(suite: rustls::CipherSuite) -> Option<Self> {
        match suite {
            rustls::CipherSuite::TLS13_AES_128_GCM_SHA256 => Some(Algorithm::Aes128Gcm),
            rustls::CipherSuite::TLS13_AES_256_GCM_SHA384 => Some(Algorithm::Aes256Gcm),
            rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => {
                Some(Algorithm::ChaCha20Poly1305)
            }
            _ => None,
        }
    }

    /// Length of the AEAD key in bytes.
    pub const fn key_len(self) -> usize {
        match self {
            Algorithm::Aes128Gcm => 16,
            Algorithm::Aes256Gcm | Algorithm::ChaCha20Poly1305 => 32,
        }
    }

    /// Length of the IV in bytes.
    pub const fn iv_len(self) -> usize {
        NONCE_LEN
    }

    /// Length of the header protection key in bytes: the same as the AEAD key (RFC 9001 §5.4).
    pub const fn hp_key_len(self) -> usize {
        self.key_len()
    }

    /// Length of the authentication tag in bytes.
    pub const fn tag_len(self) -> usize {
        TAG_LEN
    }

    /// Length of traffic secrets: the output length of the cipher suite's hash.
    pub const fn secret_len(self) -> usize {
        match self {
            Algorithm::Aes128Gcm | Algorithm::ChaCha20Poly1305 => 32,
            Algorithm::Aes256Gcm => 48,
        }
    }

    /// How many packets one key may protect (RFC 9001 §6.6).
    pub const fn confidentiality_limit(self) -> u64 {
        match self {
            Algorithm::Aes128Gcm | Algorithm::Aes256Gcm => 1 << 23,
            // Larger than the number of possible packets (2^62): no limit in practice.
            Algorithm::ChaCha20Poly1305 => u64::MAX,
        }
    }

    /// How many packets may fail authentication within a connection (RFC 9001 §6.6).
    pub const fn integrity_limit(self) -> u64 {
        match self {
            Algorithm::Aes128Gcm | Algorithm::Aes256Gcm => 1 << 52,
            Algorithm::ChaCha20Poly1305 => 1 << 36,
        }
    }

    /// The HKDF variant (the cipher suite's hash) that derives keys from secrets.
    pub fn hkdf(self) -> hkdf::Algorithm {
        match self {
            Algorithm::Aes128Gcm | Algorithm::ChaCha20Poly1305 => hkdf::HKDF_SHA256,
            Algorithm::Aes256Gcm => hkdf::HKDF_SHA384,
        }
    }

    fn aead(self) -> &'static aead::Algorithm {
        match self {
            Algorithm::Aes128Gcm => &aead::AES_128_GCM,
            Algorithm::Aes256Gcm => &aead::AES_256_GCM,
            Algorithm::ChaCha20Poly1305 => &aead::CHACHA20_POLY1305,
        }
    }

    fn hp(self) -> &'static aead::quic::Algorithm {
        match self {
            Algorithm::Aes128Gcm => &aead::quic::AES_128,
            Algorithm::Aes256Gcm => &aead::quic::AES_256,
            Algorithm::ChaCha20Poly1305 => &aead::quic::CHACHA20,
        }
    }
}

/// An HKDF output length, as ring wants it.
struct OutLen(usize);

impl hkdf::KeyType for OutLen {
    fn len(&self) -> usize {
        self.0
    }
}

/// TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1) with an empty context, filling `out`.
///
/// The label is given without the "tls13 " prefix, e.g. `b"quic key"`.
pub fn hkdf_expand_label(prk: &hkdf::Prk, label: &[u8], out: &mut [u8]) -> Result<()> {
    const PREFIX: &[u8] = b"tls13 ";

    // HkdfLabel { uint16 length; opaque label<7..255>; opaque context<0..255>; }
    let out_len = u16::try_from(out.len()).map_err(|_| Error::CryptoFail)?;
    let label_len = u8::try_from(PREFIX.len() + label.len()).map_err(|_| Error::CryptoFail)?;
    let length = out_len.to_be_bytes();
    let label_len = [label_len];
    let context_len = [0u8];
    let info: [&[u8]; 5] = [&length, &label_len, PREFIX, label, &context_len];

    prk.expand(&info, OutLen(out.len()))
        .and_then(|okm| okm.fill(out))
        .map_err(|_| Error::CryptoFail)
}

/// Derives the key material of one direction from a traffic secret (RFC 9001 §5.1): the AEAD
/// key ("quic key"), IV ("quic iv") and header protection key ("quic hp").
pub fn derive_keys(alg: Algorithm, secret: &[u8]) -> Result<DirectionalKeys> {
    derive_keys_with(&LABELS_V1, alg, secret)
}

/// [`derive_keys`] with the labels of another version (see [`labels`]).
pub fn derive_keys_with(labels: &Labels, alg: Algorithm, secret: &[u8]) -> Result<DirectionalKeys> {
    Ok(DirectionalKeys {
        header: Box::new(HeaderProtectionKey::from_secret_with(labels, alg, secret)?),
        packet: Box::new(PacketKey::from_secret_with(labels, alg, secret)?),
    })
}

/// Derives the traffic secret that follows `secret` after a key update ("quic ku", RFC 9001
/// §6.1) into `out`, which must be `alg.secret_len()` bytes long.
///
/// Connections normally update keys through `rustls::quic::Secrets::next_packet_keys`; this is
/// the same derivation for secrets this module holds itself.
pub fn next_secret(alg: Algorithm, secret: &[u8], out: &mut [u8]) -> Result<()> {
    next_secret_with(&LABELS_V1, alg, secret, out)
}

/// [`next_secret`] with the labels of another version ("quicv2 ku" for QUIC v2).
pub fn next_secret_with(
    labels: &Labels,
    alg: Algorithm,
    secret: &[u8],
    out: &mut [u8],
) -> Result<()> {
    if out.len() != alg.secret_len() {
        return Err(Error::CryptoFail);
    }
    let prk = hkdf::Prk::new_less_safe(alg.hkdf(), secret);
    hkdf_expand_label(&prk, labels.ku, out)
}

/// The client and server Initial secrets (RFC 9001 §5.2) of QUIC v1 for the Destination
/// Connection ID of the client's first Initial packet, as `(client, server)`.
pub fn initial_secrets(dcid: &[u8]) -> Result<([u8; 32], [u8; 32])> {
    initial_secrets_for(crate::packet::QUIC_V1, dcid)
}

/// [`initial_secrets`] for `version`, whose Initial salt they depend on (RFC 9369 §3.3.1).
pub fn initial_secrets_for(version: u32, dcid: &[u8]) -> Result<([u8; 32], [u8; 32])> {
    let initial_secret = hkdf::Salt::new(hkdf::HKDF_SHA256, initial_salt(version)).extract(dcid);

    let mut client = [0; 32];
    hkdf_expand_label(&initial_secret, b"client in", &mut client)?;

    let mut server = [0; 32];
    hkdf_expand_label(&initial_secret, b"server in", &mut server)?;

    Ok((client, server))
}

/// The QUIC v1 Initial packet keys (RFC 9001 §5.2) for the Destination Connection ID of the client's
/// first Initial packet, as `(open, seal)`: `open` removes the peer's protection, `seal`
/// protects what this endpoint sends.
pub fn initial_keys(dcid: &[u8], is_server: bool) -> Result<(DirectionalKeys, DirectionalKeys)> {
    initial_keys_for(crate::packet::QUIC_V1, dcid, is_server)
}

/// [`initial_keys`] for `version`: its salt and labels.
pub fn initial_keys_for(
    version: u32,
    dcid: &[u8],
    is_server: bool,
) -> Result<(DirectionalKeys, DirectionalKeys)> {
    let (client, server) = initial_secrets_for(version, dcid)?;
    let labels = labels(version);
    let client = derive_keys_with(labels, Algorithm::Aes128Gcm, &client)?;
    let server = derive_keys_with(labels, Algorithm::Aes128Gcm, &server)?;

    if is_server {
        Ok((client, server))
    } else {
        Ok((server, client))
    }
}

#[cfg(test)]
pub(crate) mod tests;
