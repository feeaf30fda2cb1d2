//! Refusing replayed 0-RTT on a BoringSSL server (RFC 8446 §8.2, ClientHello recording).
//!
//! BoringSSL resumes from stateless tickets, so on its own it would accept the same 0-RTT
//! ClientHello, replayed by an attacker, as often as it arrives. Each server config keeps the
//! offered PSKs (identities and binders, which are MACs over the whole ClientHello, random
//! included) of the ClientHellos whose early data it let through; a ClientHello seen before
//! gets its early data refused (the handshake and the resumption go on). BoringSSL itself
//! refuses early data whose ticket age is off by more than 60 s, so remembering the last
//! `capacity` ClientHellos protects servers that accept fewer than `capacity` 0-RTT
//! handshakes a minute; rustls servers get the same guarantee from their single-use session
//! cache of the same size.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use ring::digest;

/// What is remembered of one ClientHello: a digest of its offered PSK.
type Fingerprint = [u8; 32];

#[derive(Default)]
struct Seen {
    set: HashSet<Fingerprint>,
    order: VecDeque<Fingerprint>,
}

/// The 0-RTT ClientHellos a server config saw, the oldest forgotten first.
#[derive(Clone)]
pub(crate) struct ReplayGuard {
    seen: Arc<Mutex<Seen>>,
    capacity: usize,
}

impl ReplayGuard {
    /// Remembers up to `capacity` ClientHellos (0: early data is never refused for replay).
    pub(crate) fn new(capacity: usize) -> Self {
        ReplayGuard {
            seen: Arc::default(),
            capacity,
        }
    }

    /// Whether early data offered with `psk` (the pre_shared_key extension's body) may be
    /// accepted: false if the same ClientHello came before.
    pub(crate) fn admit(&self, psk: &[u8]) -> bool {
        if self.capacity == 0 {
            return true;
        }
        let mut fingerprint = [0u8; 32];
        fingerprint.copy_from_slice(digest::digest(&digest::SHA256, psk).as_ref());
        let mut seen = match self.seen.lock() {
            Ok(seen) => seen,
            Err(poisoned) => poisoned.into_inner(),
        };
        if !seen.set.insert(fingerprint) {
            return false;
        }
        seen.order.push_back(fingerprint);
        while seen.order.len() > self.capacity {
            if let Some(old) = seen.order.pop_front() {
                seen.set.remove(&old);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clienthello_is_admitted_once_until_forgotten() {
        let guard = ReplayGuard::new(2);
        assert!(guard.admit(b"a"));
        assert!(!guard.admit(b"a"));
        assert!(guard.admit(b"b"));
        assert!(guard.admit(b"c"));
        // "a" was the oldest of three: forgotten.
        assert!(guard.admit(b"a"));
        assert!(!guard.admit(b"c"));
        let off = ReplayGuard::new(0);
        assert!(off.admit(b"a") && off.admit(b"a"));
    }
}
