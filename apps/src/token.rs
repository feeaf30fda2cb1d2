//! The tokens of the server's Retry packets (RFC 9000 §8.1.2): stateless proof that a client
//! receives at the address it claims.
//!
//! A token is sealed with AES-256-GCM under a key made at random when the server starts (so
//! tokens die with the process; RFC 9000 §8.1.4 leaves the format to the server). The
//! plaintext holds the client's original Destination Connection ID, which the server must echo
//! in `original_destination_connection_id` (§7.3), and an expiry time; the associated data
//! binds the client's address and the connection ID the Retry told the client to use, so a
//! token is worthless from another address or on another connection.
//!
//! Layout: `TOKEN_FORMAT | nonce (12) | AEAD(expiry_ms (8) | odcid_len (1) | odcid) | tag (16)`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use quiche::ConnectionId;
use ring::aead;

use crate::setup::fill_random;

/// How long a Retry token is accepted: long enough for a slow client's second Initial, short
/// enough that a captured token is of little use.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(10);

/// First byte of our tokens: a format tag, authenticated with the rest.
const TOKEN_FORMAT: u8 = 0x52;

const NONCE_LEN: usize = aead::NONCE_LEN;
const TAG_LEN: usize = 16;

/// The server's token sealing key.
pub struct TokenKey {
    key: aead::LessSafeKey,
    /// Expiry times are milliseconds since this instant (tokens never outlive the key).
    epoch: Instant,
}

impl TokenKey {
    /// A fresh random key.
    pub fn new(now: Instant) -> TokenKey {
        let mut bytes = [0u8; 32];
        fill_random(&mut bytes);
        #[allow(clippy::expect_used)]
        let key = aead::UnboundKey::new(&aead::AES_256_GCM, &bytes)
            .expect("a 32-byte key is valid for AES-256-GCM");
        TokenKey {
            key: aead::LessSafeKey::new(key),
            epoch: now,
        }
    }

    fn millis(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    /// A token for a client at `peer` whose first Initial had Destination Connection ID
    /// `odcid`, told by the Retry to use `retry_scid` from now on.
    pub fn seal(
        &self,
        peer: SocketAddr,
        odcid: &[u8],
        retry_scid: &[u8],
        now: Instant,
    ) -> Option<Vec<u8>> {
        let odcid_len = u8::try_from(odcid.len())
            .ok()
            .filter(|&l| usize::from(l) <= quiche::MAX_CONN_ID_LEN)?;
        let mut nonce = [0u8; NONCE_LEN];
        fill_random(&mut nonce);

        let mut token = Vec::with_capacity(1 + NONCE_LEN + 9 + odcid.len() + TAG_LEN);
        token.push(TOKEN_FORMAT);
        token.extend_from_slice(&nonce);
        let plain_start = token.len();
        let expiry = self
            .millis(now)
            .saturating_add(TOKEN_LIFETIME.as_millis() as u64);
        token.extend_from_slice(&expiry.to_be_bytes());
        token.push(odcid_len);
        token.extend_from_slice(odcid);

        let aad = associated_data(peer, retry_scid);
        let (_, plain) = token.split_at_mut(plain_start);
        let tag = self
            .key
            .seal_in_place_separate_tag(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(&aad[..]),
                plain,
            )
            .ok()?;
        token.extend_from_slice(tag.as_ref());
        Some(token)
    }

    /// The original Destination Connection ID sealed in `token`, if the token is ours,
    /// intact, unexpired, for a client at `peer`, and arrived on connection ID `dcid`.
    pub fn open(
        &self,
        token: &[u8],
        peer: SocketAddr,
        dcid: &[u8],
        now: Instant,
    ) -> Option<ConnectionId<'static>> {
        let (&format, rest) = token.split_first()?;
        if format != TOKEN_FORMAT || rest.len() < NONCE_LEN + 9 + TAG_LEN {
            return None;
        }
        let (nonce, sealed) = rest.split_at(NONCE_LEN);
        let nonce = aead::Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let aad = associated_data(peer, dcid);
        let plain = self
            .key
            .open_in_place(nonce, aead::Aad::from(&aad[..]), &mut sealed)
            .ok()?;

        let (expiry, rest) = plain.split_first_chunk::<8>()?;
        if self.millis(now) > u64::from_be_bytes(*expiry) {
            return None;
        }
        let (&odcid_len, odcid) = rest.split_first()?;
        if usize::from(odcid_len) != odcid.len() || odcid.len() > quiche::MAX_CONN_ID_LEN {
            return None;
        }
        Some(ConnectionId::from_vec(odcid.to_vec()))
    }
}

/// Format tag, client address (family, IP, port) and the connection ID the token is for.
fn associated_data(peer: SocketAddr, cid: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(1 + 1 + 16 + 2 + cid.len());
    aad.push(TOKEN_FORMAT);
    match peer {
        SocketAddr::V4(a) => {
            aad.push(4);
            aad.extend_from_slice(&a.ip().octets());
        }
        SocketAddr::V6(a) => {
            aad.push(6);
            aad.extend_from_slice(&a.ip().octets());
        }
    }
    aad.extend_from_slice(&peer.port().to_be_bytes());
    aad.extend_from_slice(cid);
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_token_opens_for_its_address_and_connection_id_until_it_expires() {
        let t0 = Instant::now();
        let key = TokenKey::new(t0);
        let peer = addr("192.0.2.1:5000");
        let odcid = [7u8; 8];
        let scid = [9u8; 16];
        let token = key.seal(peer, &odcid, &scid, t0).unwrap();

        let opened = key.open(&token, peer, &scid, t0 + Duration::from_secs(1));
        assert_eq!(opened.as_deref(), Some(&odcid[..]));
        // Valid up to the end of its lifetime, not after.
        assert!(key.open(&token, peer, &scid, t0 + TOKEN_LIFETIME).is_some());
        let late = t0 + TOKEN_LIFETIME + Duration::from_millis(1);
        assert!(key.open(&token, peer, &scid, late).is_none());

        // Another port, another address, another family, another connection ID.
        assert!(key
            .open(&token, addr("192.0.2.1:5001"), &scid, t0)
            .is_none());
        assert!(key
            .open(&token, addr("192.0.2.2:5000"), &scid, t0)
            .is_none());
        assert!(key
            .open(&token, addr("[::ffff:192.0.2.1]:5000"), &scid, t0)
            .is_none());
        assert!(key.open(&token, peer, &[9u8; 15], t0).is_none());
        // Another server (key).
        assert!(TokenKey::new(t0).open(&token, peer, &scid, t0).is_none());
    }

    #[test]
    fn tampered_and_malformed_tokens_are_refused() {
        let t0 = Instant::now();
        let key = TokenKey::new(t0);
        let peer = addr("[2001:db8::1]:443");
        let token = key.seal(peer, &[1; 20], &[2; 16], t0).unwrap();
        assert_eq!(token.len(), 1 + 12 + 8 + 1 + 20 + 16);
        for i in 0..token.len() {
            let mut bad = token.clone();
            bad[i] ^= 0x01;
            assert!(key.open(&bad, peer, &[2; 16], t0).is_none(), "byte {i}");
        }
        for len in 0..token.len() {
            assert!(key.open(&token[..len], peer, &[2; 16], t0).is_none());
        }
        let mut longer = token.clone();
        longer.push(0);
        assert!(key.open(&longer, peer, &[2; 16], t0).is_none());
        assert!(key.seal(peer, &[0; 21], &[2; 16], t0).is_none());
        // Two tokens for the same client differ (random nonces).
        assert_ne!(token, key.seal(peer, &[1; 20], &[2; 16], t0).unwrap());
    }
}
