//! QUIC-LB (draft-ietf-quic-load-balancers-21): connection IDs that carry a server ID, so that
//! a layer-4 load balancer routes every packet of a connection to the same server by its
//! Destination Connection ID alone, even after the client's address changes.
//!
//! Three pieces:
//! - [`LbConfig`]: one configuration (config rotation codepoint, server ID and nonce lengths,
//!   optional 16-byte AES key) with the draft's algorithms: plaintext (§5.4 without a key),
//!   single-pass AES-128-ECB when server ID and nonce fill exactly one block (§5.4.1), and the
//!   four-pass Feistel network otherwise (§5.4.2);
//! - [`QuicLbGenerator`]: the server side, a [`crate::cid::ConnectionIdGenerator`] a server
//!   installs with [`crate::Config::set_cid_generator`]; its configuration can be rotated while
//!   connections run;
//! - [`QuicLbDecoder`]: the load balancer side, which extracts the server ID from a datagram's
//!   Destination Connection ID, with up to seven configurations told apart by their rotation
//!   bits.
//!
//! Everything works on fixed-size arrays: no allocation per connection ID or per datagram, and
//! every input length is checked, so a short or foreign connection ID is simply unroutable.
//!
//! AES comes from the `aes` crate because `ring` offers AES only inside AEAD and QUIC header
//! protection: header protection yields 5 bytes of one encrypted block, while the Feistel rounds
//! need up to 10 and single-pass decoding needs the AES *decryption* direction, which `ring`
//! does not expose at all.

use std::sync::Mutex;

use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use aes::Aes128;

use crate::cid::ConnectionIdGenerator;
use crate::error::{Error, Result};

#[cfg(test)]
mod tests;

/// The config rotation codepoint of connection IDs made without a usable configuration
/// (§3.2): load balancers never route them by server ID.
pub const UNROUTABLE_CONFIG_ID: u8 = 0b111;

/// The longest server ID plus nonce: QUIC v1 IDs have at most 20 bytes, one is the first octet.
pub const MAX_PLAINTEXT_LEN: usize = 19;

/// The shortest nonce the draft allows (§5.3).
pub const MIN_NONCE_LEN: usize = 4;

/// Length of an AES-128 key.
pub const KEY_LEN: usize = 16;

const BLOCK_LEN: usize = 16;

/// A server ID as decoded from a connection ID (1 to 15 bytes, inline).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServerId {
    len: u8,
    bytes: [u8; MAX_PLAINTEXT_LEN],
}

impl ServerId {
    /// A server ID from its bytes; `None` if empty or longer than any configuration allows.
    pub fn new(id: &[u8]) -> Option<ServerId> {
        if id.is_empty() || id.len() > MAX_PLAINTEXT_LEN - MIN_NONCE_LEN {
            return None;
        }
        let mut bytes = [0u8; MAX_PLAINTEXT_LEN];
        bytes[..id.len()].copy_from_slice(id);
        Some(ServerId {
            len: id.len() as u8,
            bytes,
        })
    }

    /// The ID's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for ServerId {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("ServerId(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

/// One QUIC-LB configuration, shared by the servers of a pool and their load balancers.
#[derive(Clone)]
pub struct LbConfig {
    config_id: u8,
    server_id_len: usize,
    nonce_len: usize,
    cipher: Option<Aes128>,
    encode_len: bool,
}

impl std::fmt::Debug for LbConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("LbConfig")
            .field("config_id", &self.config_id)
            .field("server_id_len", &self.server_id_len)
            .field("nonce_len", &self.nonce_len)
            .field("encrypted", &self.cipher.is_some())
            .field("encode_len", &self.encode_len)
            .finish()
    }
}

impl LbConfig {
    /// A configuration with rotation codepoint `config_id` (0 to 6; 7 is reserved for
    /// unroutable IDs), server IDs of `server_id_len` bytes (at least 1), nonces of `nonce_len`
    /// bytes (at least 4), the two summing to at most 19, and an optional AES-128 key (without
    /// one, server IDs are visible to observers: §5.3). Errors: `InvalidState` for lengths or a
    /// codepoint the draft forbids.
    pub fn new(
        config_id: u8,
        server_id_len: usize,
        nonce_len: usize,
        key: Option<&[u8; KEY_LEN]>,
    ) -> Result<LbConfig> {
        if config_id >= UNROUTABLE_CONFIG_ID
            || server_id_len == 0
            || nonce_len < MIN_NONCE_LEN
            || server_id_len + nonce_len > MAX_PLAINTEXT_LEN
        {
            return Err(Error::InvalidState);
        }
        Ok(LbConfig {
            config_id,
            server_id_len,
            nonce_len,
            cipher: key.map(|k| Aes128::new(&GenericArray::from(*k))),
            encode_len: false,
        })
    }

    /// Whether the first octet's low five bits carry the length of the rest of the ID (§3.3)
    /// instead of random bits. Off by default.
    pub fn set_encode_length(&mut self, on: bool) {
        self.encode_len = on;
    }

    /// The config rotation codepoint.
    pub fn config_id(&self) -> u8 {
        self.config_id
    }

    /// Server ID length in bytes.
    pub fn server_id_len(&self) -> usize {
        self.server_id_len
    }

    /// Nonce length in bytes.
    pub fn nonce_len(&self) -> usize {
        self.nonce_len
    }

    /// Whether the configuration has a key.
    pub fn is_encrypted(&self) -> bool {
        self.cipher.is_some()
    }

    /// The length of the IDs it makes before any extra bytes: first octet, server ID, nonce.
    pub fn cid_len(&self) -> usize {
        1 + self.server_id_len + self.nonce_len
    }

    fn plaintext_len(&self) -> usize {
        self.server_id_len + self.nonce_len
    }

    /// Writes a connection ID for `server_id` and `nonce` into `cid`, whose length is the ID's:
    /// at least [`LbConfig::cid_len`], the bytes after it are left as they are (the caller
    /// fills them at random, §5.4). `first_octet_bits` supplies the low five bits of the first
    /// octet when the length is not encoded. Errors: `InvalidState` if a length does not match
    /// the configuration.
    pub fn encode(
        &self,
        server_id: &[u8],
        nonce: &[u8],
        first_octet_bits: u8,
        cid: &mut [u8],
    ) -> Result<()> {
        if server_id.len() != self.server_id_len
            || nonce.len() != self.nonce_len
            || cid.len() < self.cid_len()
        {
            return Err(Error::InvalidState);
        }
        let low = if self.encode_len {
            // The length of what follows the first octet, truncated to the five bits it has.
            (cid.len() - 1) as u8
        } else {
            first_octet_bits
        };
        cid[0] = (self.config_id << 5) | (low & 0x1f);
        let n = self.plaintext_len();
        let block = &mut cid[1..1 + n];
        block[..self.server_id_len].copy_from_slice(server_id);
        block[self.server_id_len..].copy_from_slice(nonce);
        match &self.cipher {
            None => {}
            Some(aes) if n == BLOCK_LEN => {
                let b = GenericArray::from_mut_slice(block);
                aes.encrypt_block(b);
            }
            Some(aes) => feistel_encrypt(aes, block),
        }
        Ok(())
    }

    /// The server ID in `cid`, or `None` if the ID is too short for this configuration or its
    /// rotation bits name another. Never fails otherwise: any bytes decode to some server ID,
    /// which the caller looks up in its pool.
    pub fn decode_server_id(&self, cid: &[u8]) -> Option<ServerId> {
        let mut plain = [0u8; MAX_PLAINTEXT_LEN];
        self.decode_into(cid, &mut plain, false)?;
        ServerId::new(&plain[..self.server_id_len])
    }

    /// Both the server ID and the nonce of `cid` (`None` as for
    /// [`LbConfig::decode_server_id`]); the nonce is written to `nonce`, which must hold
    /// [`LbConfig::nonce_len`] bytes.
    pub fn decode(&self, cid: &[u8], nonce: &mut [u8]) -> Option<ServerId> {
        if nonce.len() != self.nonce_len {
            return None;
        }
        let mut plain = [0u8; MAX_PLAINTEXT_LEN];
        self.decode_into(cid, &mut plain, true)?;
        nonce.copy_from_slice(&plain[self.server_id_len..self.plaintext_len()]);
        ServerId::new(&plain[..self.server_id_len])
    }

    /// Recovers the plaintext block of `cid` into `plain`; with `full` false, only as far as
    /// the server ID needs (three Feistel passes suffice when it fits in the left half).
    fn decode_into(
        &self,
        cid: &[u8],
        plain: &mut [u8; MAX_PLAINTEXT_LEN],
        full: bool,
    ) -> Option<()> {
        let n = self.plaintext_len();
        let first = *cid.first()?;
        if first >> 5 != self.config_id || cid.len() < 1 + n {
            return None;
        }
        let block = &mut plain[..n];
        block.copy_from_slice(&cid[1..1 + n]);
        match &self.cipher {
            None => {}
            Some(aes) if n == BLOCK_LEN => {
                aes.decrypt_block(GenericArray::from_mut_slice(block));
            }
            Some(aes) => {
                let need_fourth = full || self.server_id_len > n / 2;
                feistel_decrypt(aes, block, need_fourth);
            }
        }
        Some(())
    }
}

/// A half of the Feistel state: up to 10 bytes.
type Half = [u8; MAX_PLAINTEXT_LEN.div_ceil(2)];

/// `AES-ECB(key, expand(len, pass, half))` truncated to the half's length (§5.4.2.2), XORed
/// into `target`.
fn feistel_round(aes: &Aes128, len: usize, pass: u8, input: &[u8], target: &mut [u8]) {
    let mut block = [0u8; BLOCK_LEN];
    block[..input.len()].copy_from_slice(input);
    block[14] = len as u8;
    block[15] = pass;
    let mut b = GenericArray::from(block);
    aes.encrypt_block(&mut b);
    for (t, m) in target.iter_mut().zip(b.iter()) {
        *t ^= m;
    }
}

/// Splits a plaintext (or ciphertext) of `n` bytes into two halves of `ceil(n/2)` bytes; with
/// an odd `n` the middle byte's high nibble goes left and its low nibble right (§5.4.2.3).
fn split(block: &[u8]) -> (Half, Half, usize) {
    let n = block.len();
    let half = n.div_ceil(2);
    let (mut left, mut right) = (Half::default(), Half::default());
    left[..half].copy_from_slice(&block[..half]);
    right[..half].copy_from_slice(&block[n - half..]);
    if n % 2 == 1 {
        left[half - 1] &= 0xf0;
        right[0] &= 0x0f;
    }
    (left, right, half)
}

/// The inverse of [`split`].
fn join(left: &Half, right: &Half, half: usize, block: &mut [u8]) {
    let n = block.len();
    block[..half].copy_from_slice(&left[..half]);
    if n % 2 == 1 {
        block[half - 1] |= right[0];
        block[half..].copy_from_slice(&right[1..half]);
    } else {
        block[half..].copy_from_slice(&right[..half]);
    }
}

/// Keeps the nibbles an odd-length half does not own at zero.
fn clear(half_bytes: &mut Half, half: usize, odd: bool, is_left: bool) {
    if odd {
        if is_left {
            half_bytes[half - 1] &= 0xf0;
        } else {
            half_bytes[0] &= 0x0f;
        }
    }
}

/// The four-pass encryption of §5.4.2.3, in place.
fn feistel_encrypt(aes: &Aes128, block: &mut [u8]) {
    let n = block.len();
    let odd = n % 2 == 1;
    let (mut left, mut right, half) = split(block);
    for pass in 1..=4u8 {
        if pass % 2 == 1 {
            feistel_round(aes, n, pass, &left[..half], &mut right[..half]);
            clear(&mut right, half, odd, false);
        } else {
            feistel_round(aes, n, pass, &right[..half], &mut left[..half]);
            clear(&mut left, half, odd, true);
        }
    }
    join(&left, &right, half, block);
}

/// The decryption of §5.5.2, in place; without `fourth`, the right half (the nonce's end) is
/// left undone, which is enough when the server ID lies in the left half.
fn feistel_decrypt(aes: &Aes128, block: &mut [u8], fourth: bool) {
    let n = block.len();
    let odd = n % 2 == 1;
    let (mut left, mut right, half) = split(block);
    let last = if fourth { 1 } else { 2 };
    for pass in (last..=4u8).rev() {
        if pass % 2 == 0 {
            feistel_round(aes, n, pass, &right[..half], &mut left[..half]);
            clear(&mut left, half, odd, true);
        } else {
            feistel_round(aes, n, pass, &left[..half], &mut right[..half]);
            clear(&mut right, half, odd, false);
        }
    }
    join(&left, &right, half, block);
}

/// Fills `buf` from the system's secure random source.
fn fill_random(buf: &mut [u8]) -> Result<()> {
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), buf)
        .map_err(|_| Error::CryptoFail)
}

/// What the generator issues with.
#[derive(Debug)]
struct GenState {
    /// `None`: no active configuration; IDs are unroutable (§3.2).
    config: Option<LbConfig>,
    server_id: ServerId,
    /// The next nonce of an encrypted configuration (a counter, §9.6), big-endian.
    nonce: [u8; MAX_PLAINTEXT_LEN],
    /// Where the counter started: reaching it again means every nonce was used.
    nonce_start: [u8; MAX_PLAINTEXT_LEN],
    exhausted: bool,
}

/// The server side of QUIC-LB: makes connection IDs that encode this server's ID.
///
/// Install it with [`crate::Config::set_cid_generator`] and make the handshake ID with
/// [`crate::Config::new_scid`] too. IDs longer than the configuration's
/// [`LbConfig::cid_len`] get random bytes appended (§5.4: all servers of a pool must use the
/// same length). An ID too short for the configuration, a configuration removed with
/// [`QuicLbGenerator::clear_config`], or an exhausted nonce space gives an unroutable ID
/// (codepoint 0b111, length self-encoded, random otherwise) that the load balancer routes by
/// its fallback.
///
/// With a key, nonces count up from a random start, so none repeats until the space wraps
/// (§9.6); without one, nonces are random, since a counter in clear would link the IDs.
#[derive(Debug)]
pub struct QuicLbGenerator {
    state: Mutex<GenState>,
}

impl QuicLbGenerator {
    /// A generator for server `server_id` (of the configuration's server ID length) under
    /// `config`. Errors: `InvalidState` if the length differs; `CryptoFail` without randomness.
    pub fn new(config: LbConfig, server_id: &[u8]) -> Result<QuicLbGenerator> {
        let state = Self::state_for(config, server_id)?;
        Ok(QuicLbGenerator {
            state: Mutex::new(state),
        })
    }

    fn state_for(config: LbConfig, server_id: &[u8]) -> Result<GenState> {
        if server_id.len() != config.server_id_len {
            return Err(Error::InvalidState);
        }
        let server_id = ServerId::new(server_id).ok_or(Error::InvalidState)?;
        let mut nonce = [0u8; MAX_PLAINTEXT_LEN];
        fill_random(&mut nonce[..config.nonce_len])?;
        Ok(GenState {
            config: Some(config),
            server_id,
            nonce,
            nonce_start: nonce,
            exhausted: false,
        })
    }

    /// Switches to a new configuration (a rotation, §3.1): IDs issued from now on use it. The
    /// draft then wants the server to move each connection to new IDs: call
    /// [`crate::Connection::new_source_cid`] with `retire_prior` on them.
    pub fn rotate(&self, config: LbConfig, server_id: &[u8]) -> Result<()> {
        let state = Self::state_for(config, server_id)?;
        *self.lock() = state;
        Ok(())
    }

    /// Drops the configuration: IDs issued from now on are unroutable (§3.2).
    pub fn clear_config(&self) {
        self.lock().config = None;
    }

    /// The configuration in use, if any.
    pub fn config_id(&self) -> Option<u8> {
        self.lock().config.as_ref().map(LbConfig::config_id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GenState> {
        // A panic elsewhere cannot leave the state half-written: every update is one store.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[cfg(test)]
    fn set_nonce_for_test(&self, nonce: &[u8]) {
        let mut s = self.lock();
        s.nonce[..nonce.len()].copy_from_slice(nonce);
    }
}

/// Adds one to a big-endian counter, wrapping.
fn increment(counter: &mut [u8]) {
    for b in counter.iter_mut().rev() {
        *b = b.wrapping_add(1);
        if *b != 0 {
            break;
        }
    }
}

/// An unroutable ID (§3.2): codepoint 0b111, the length self-encoded, random otherwise.
fn unroutable(cid: &mut [u8]) -> Result<()> {
    fill_random(cid)?;
    let rest = cid.len().saturating_sub(1) as u8;
    if let Some(first) = cid.first_mut() {
        *first = (UNROUTABLE_CONFIG_ID << 5) | (rest & 0x1f);
    }
    Ok(())
}

impl ConnectionIdGenerator for QuicLbGenerator {
    fn generate(&self, cid: &mut [u8]) -> Result<()> {
        let mut s = self.lock();
        let GenState {
            config,
            server_id,
            nonce,
            nonce_start,
            exhausted,
        } = &mut *s;
        let Some(config) = config.as_ref() else {
            return unroutable(cid);
        };
        if cid.len() < config.cid_len() || *exhausted {
            return unroutable(cid);
        }
        let nonce_len = config.nonce_len;
        let mut this_nonce = [0u8; MAX_PLAINTEXT_LEN];
        if config.is_encrypted() {
            this_nonce[..nonce_len].copy_from_slice(&nonce[..nonce_len]);
            increment(&mut nonce[..nonce_len]);
            *exhausted = nonce[..nonce_len] == nonce_start[..nonce_len];
        } else {
            fill_random(&mut this_nonce[..nonce_len])?;
        }
        // Random first-octet bits and extra bytes, overwritten where the configuration writes.
        fill_random(cid)?;
        let bits = cid[0];
        config.encode(server_id.as_bytes(), &this_nonce[..nonce_len], bits, cid)
    }
}

/// The load balancer side: extracts server IDs from connection IDs under up to seven
/// configurations, told apart by the rotation bits of the first octet.
#[derive(Debug, Default)]
pub struct QuicLbDecoder {
    configs: [Option<LbConfig>; 7],
}

impl QuicLbDecoder {
    /// A decoder without configurations (every ID is unroutable).
    pub fn new() -> QuicLbDecoder {
        QuicLbDecoder::default()
    }

    /// Adds `config`, replacing one of the same rotation codepoint.
    pub fn add_config(&mut self, config: LbConfig) {
        let id = usize::from(config.config_id);
        if let Some(slot) = self.configs.get_mut(id) {
            *slot = Some(config);
        }
    }

    /// Removes the configuration of codepoint `config_id`: its IDs become unroutable.
    pub fn remove_config(&mut self, config_id: u8) {
        if let Some(slot) = self.configs.get_mut(usize::from(config_id)) {
            *slot = None;
        }
    }

    /// The configuration a connection ID's rotation bits name, if known.
    fn config_for(&self, cid: &[u8]) -> Option<&LbConfig> {
        let first = *cid.first()?;
        self.configs.get(usize::from(first >> 5))?.as_ref()
    }

    /// The server ID in connection ID `cid`; `None` if it is unroutable (unknown rotation
    /// codepoint, 0b111, or too short for its configuration).
    pub fn server_id(&self, cid: &[u8]) -> Option<ServerId> {
        self.config_for(cid)?.decode_server_id(cid)
    }

    /// The server ID in the Destination Connection ID of the first QUIC packet of `datagram`,
    /// or `None` if it is unroutable or the datagram is too short to hold one. A long header
    /// states its DCID length; a short header does not, and the configuration named by the
    /// DCID's first octet gives the length to read (extra bytes the servers append are
    /// ignored).
    pub fn route_datagram(&self, datagram: &[u8]) -> Option<ServerId> {
        let first = *datagram.first()?;
        if first & 0x80 != 0 {
            // Long header: flags, version (4), DCID length, DCID (RFC 8999 §5.1).
            let len = usize::from(*datagram.get(5)?);
            let dcid = datagram.get(6..6 + len)?;
            return self.server_id(dcid);
        }
        let rest = datagram.get(1..)?;
        let config = self.config_for(rest)?;
        config.decode_server_id(rest.get(..config.cid_len())?)
    }
}
