//! Client-side session tickets for resumption and 0-RTT.
//!
//! rustls 0.23 keeps a resumable TLS 1.3 session as a `Tls13ClientSessionValue`. That type has no
//! public encoding, constructor or accessor for its secret, and it holds weak references to the
//! certificate verifier and client-certificate resolver of the config that received it (rustls
//! refuses to resume with a different verifier). A session therefore cannot be serialized to
//! bytes and restored in another process through rustls's public API.
//!
//! What we offer instead: every client connection stores the tickets it receives in the
//! [`SessionRegistry`] of its `TlsConfig`, under a random per-connection handle. The bytes that
//! `Handshake::session` returns are that handle, and `Handshake::set_session` takes one ticket
//! back out for a new connection made from the same `TlsConfig` in the same process. A handle
//! from another process, another config or whose tickets were all used is refused.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ring::rand::SecureRandom;
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

use crate::{Error, Result};

/// The magic that starts a session handle ("quiche-rs session handle"), then a format version.
const HANDLE_MAGIC: &[u8; 5] = b"QRSH\x01";

/// Random part of a handle: unguessable, so a stale handle from an earlier process never matches.
const HANDLE_ID_LEN: usize = 16;

/// Total length of a handle.
pub(crate) const HANDLE_LEN: usize = HANDLE_MAGIC.len() + HANDLE_ID_LEN;

/// How many connections' tickets a registry keeps; the oldest are dropped first.
const MAX_HANDLES: usize = 256;

/// How many tickets are kept per connection (rustls servers send two by default).
const MAX_TICKETS_PER_HANDLE: usize = 4;

type HandleId = [u8; HANDLE_ID_LEN];

struct Entry {
    id: HandleId,
    server_name: ServerName<'static>,
    tickets: VecDeque<Tls13ClientSessionValue>,
}

/// Tickets received by the client connections of one `TlsConfig`, by connection handle.
#[derive(Default)]
pub(crate) struct SessionRegistry {
    entries: Mutex<VecDeque<Entry>>,
}

impl SessionRegistry {
    fn lock(&self) -> MutexGuard<'_, VecDeque<Entry>> {
        match self.entries.lock() {
            Ok(entries) => entries,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn insert(
        &self,
        id: HandleId,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        let mut entries = self.lock();
        if let Some(entry) = entries.iter_mut().find(|e| e.id == id) {
            if entry.tickets.len() >= MAX_TICKETS_PER_HANDLE {
                entry.tickets.pop_front();
            }
            entry.tickets.push_back(value);
            return;
        }
        if entries.len() >= MAX_HANDLES {
            entries.pop_front();
        }
        entries.push_back(Entry {
            id,
            server_name,
            tickets: VecDeque::from([value]),
        });
    }

    fn contains(&self, id: &HandleId) -> bool {
        self.lock().iter().any(|e| e.id == *id)
    }

    /// Takes the newest ticket stored under `handle` (tickets are single-use, RFC 8446 §C.4).
    pub(crate) fn take(
        &self,
        handle: &[u8],
    ) -> Result<(ServerName<'static>, Tls13ClientSessionValue)> {
        let id = parse_handle(handle)?;
        let mut entries = self.lock();
        let pos = entries
            .iter()
            .position(|e| e.id == id)
            .ok_or(Error::TlsFail)?;
        let entry = entries.get_mut(pos).ok_or(Error::TlsFail)?;
        let server_name = entry.server_name.clone();
        let value = entry.tickets.pop_back().ok_or(Error::TlsFail)?;
        if entry.tickets.is_empty() {
            entries.remove(pos);
        }
        Ok((server_name, value))
    }
}

impl fmt::Debug for SessionRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionRegistry")
            .field("handles", &self.lock().len())
            .finish()
    }
}

fn parse_handle(handle: &[u8]) -> Result<HandleId> {
    let id = handle
        .strip_prefix(HANDLE_MAGIC.as_slice())
        .ok_or(Error::TlsFail)?;
    HandleId::try_from(id).map_err(|_| Error::TlsFail)
}

/// The session store of one client connection.
///
/// rustls asks it for a ticket when it builds the ClientHello and gives it the tickets the server
/// sends after the handshake.
pub(crate) struct ConnSessionStore {
    registry: Arc<SessionRegistry>,
    id: HandleId,
    /// The ticket set with `set_session`, for the server it was issued by.
    resume: Mutex<Option<(ServerName<'static>, Tls13ClientSessionValue)>>,
    received: AtomicBool,
}

impl ConnSessionStore {
    /// A store whose received tickets go to `registry` under a fresh random handle.
    pub(crate) fn new(registry: Arc<SessionRegistry>) -> Result<Self> {
        let mut id = [0; HANDLE_ID_LEN];
        ring::rand::SystemRandom::new()
            .fill(&mut id)
            .map_err(|_| Error::TlsFail)?;
        Ok(ConnSessionStore {
            registry,
            id,
            resume: Mutex::new(None),
            received: AtomicBool::new(false),
        })
    }

    fn resume_slot(
        &self,
    ) -> MutexGuard<'_, Option<(ServerName<'static>, Tls13ClientSessionValue)>> {
        match self.resume.lock() {
            Ok(slot) => slot,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Takes a ticket stored under `handle` to offer it in this connection's ClientHello.
    pub(crate) fn resume_from(&self, handle: &[u8]) -> Result<()> {
        let ticket = self.registry.take(handle)?;
        *self.resume_slot() = Some(ticket);
        Ok(())
    }

    /// The handle of this connection's tickets, if it received any that are still stored.
    pub(crate) fn handle(&self) -> Option<Vec<u8>> {
        if !self.received.load(Ordering::Acquire) || !self.registry.contains(&self.id) {
            return None;
        }
        let mut handle = Vec::with_capacity(HANDLE_LEN);
        handle.extend_from_slice(HANDLE_MAGIC);
        handle.extend_from_slice(&self.id);
        Some(handle)
    }
}

impl fmt::Debug for ConnSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnSessionStore")
            .field("received", &self.received.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl ClientSessionStore for ConnSessionStore {
    // Key-exchange hints only save a HelloRetryRequest with servers that reject our first key
    // share; every QUIC stack accepts X25519, our first choice, so they are not kept.
    fn set_kx_hint(&self, _: ServerName<'static>, _: NamedGroup) {}

    fn kx_hint(&self, _: &ServerName<'_>) -> Option<NamedGroup> {
        None
    }

    // QUIC is TLS 1.3 only (RFC 9001 §4.2).
    fn set_tls12_session(&self, _: ServerName<'static>, _: Tls12ClientSessionValue) {}

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        None
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {}

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        self.registry.insert(self.id, server_name, value);
        self.received.store(true, Ordering::Release);
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        let mut slot = self.resume_slot();
        // A ticket is only offered to the server name it was issued for: another server could not
        // decrypt it, and it would tell that server which one we talked to before.
        match &*slot {
            Some((name, _)) if name == server_name => slot.take().map(|(_, value)| value),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_or_unknown_handles_are_refused() {
        let registry = SessionRegistry::default();
        assert_eq!(registry.take(b"").err(), Some(Error::TlsFail));
        assert_eq!(registry.take(b"QRSH\x01short").err(), Some(Error::TlsFail));
        assert_eq!(
            registry.take(b"QRSH\x02aaaaaaaaaaaaaaaa").err(),
            Some(Error::TlsFail)
        );
        let mut unknown = HANDLE_MAGIC.to_vec();
        unknown.extend_from_slice(&[7; HANDLE_ID_LEN]);
        assert_eq!(unknown.len(), HANDLE_LEN);
        assert_eq!(registry.take(&unknown).err(), Some(Error::TlsFail));
        let mut too_long = unknown.clone();
        too_long.push(0);
        assert_eq!(registry.take(&too_long).err(), Some(Error::TlsFail));
    }

    #[test]
    fn no_handle_before_tickets_arrive() {
        let store = ConnSessionStore::new(Arc::new(SessionRegistry::default())).unwrap();
        assert!(store.handle().is_none());
        let other = ConnSessionStore::new(store.registry.clone()).unwrap();
        assert_ne!(store.id, other.id);
    }
}
