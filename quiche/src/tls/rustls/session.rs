//! Client-side session tickets for resumption and 0-RTT.
//!
//! rustls 0.23 keeps a resumable TLS 1.3 session as a `Tls13ClientSessionValue`. Its only
//! constructor is crate-private (rustls builds one from a NewSessionTicket), its resumption
//! secret and ticket have crate-private accessors, it implements no encoding, and it holds weak
//! references to the certificate verifier and client-certificate resolver of the config that
//! received it (rustls refuses to resume with a different verifier). A session therefore cannot
//! be written to bytes and rebuilt in another process through rustls's public API: a
//! cross-process session file is impossible without forking rustls.
//!
//! What we offer instead: every client connection stores the tickets it receives in the
//! [`SessionRegistry`] of its `TlsConfig`, under a random per-connection handle. The bytes that
//! `Handshake::session` returns are that handle, and `Handshake::set_session` takes one ticket
//! back out for a new connection made from the same `TlsConfig` in the same process.
//!
//! A handle names the process and the registry that made it, so that bytes which cannot work are
//! refused with the reason (logged, and `Error::TlsFail`), never silently ignored: a handle saved
//! by another process (a session file), one from another config, one whose tickets were all used
//! or dropped, and bytes that are no handle at all (such as a session saved by Cloudflare quiche,
//! whose BoringSSL sessions this library cannot read).

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use ring::rand::SecureRandom;
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

use crate::error::{Error, Result};

/// The magic that starts a session handle ("quiche-rs session handle"), then a format version.
const HANDLE_MAGIC: &[u8; 5] = b"QRSH\x02";

/// Random tag of the process (and of a registry): tells a handle saved by another process, or
/// made by another config, from one whose tickets are gone.
const TAG_LEN: usize = 8;

/// Random part of a handle: unguessable, so a stale handle never matches.
const HANDLE_ID_LEN: usize = 16;

/// Total length of a handle: magic, process tag, registry tag, id.
pub(crate) const HANDLE_LEN: usize = HANDLE_MAGIC.len() + 2 * TAG_LEN + HANDLE_ID_LEN;

/// How many connections' tickets a registry keeps; the oldest are dropped first.
const MAX_HANDLES: usize = 256;

/// How many tickets are kept per connection (rustls servers send two by default).
const MAX_TICKETS_PER_HANDLE: usize = 4;

type Tag = [u8; TAG_LEN];
type HandleId = [u8; HANDLE_ID_LEN];

fn random<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0; N];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Error::TlsFail)?;
    Ok(bytes)
}

/// This process's tag, drawn once.
fn process_tag() -> Result<Tag> {
    static TAG: OnceLock<Tag> = OnceLock::new();
    if let Some(tag) = TAG.get() {
        return Ok(*tag);
    }
    let tag = random()?;
    Ok(*TAG.get_or_init(|| tag))
}

/// Why `set_session` refused its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not a handle of this library (another format, or damaged).
    NotAHandle,
    /// A handle made by another process, e.g. read back from a file.
    OtherProcess,
    /// A handle made by a connection of another `Config`.
    OtherConfig,
    /// Every ticket of the handle was used, or dropped to make room for newer ones.
    NoTicketLeft,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::NotAHandle => {
                "not a session of this library (sessions saved by Cloudflare quiche hold \
                 BoringSSL state, which rustls cannot read)"
            }
            Refusal::OtherProcess => {
                "the session was saved by another process: rustls 0.23 cannot write a TLS \
                 session out and read it back, so a session is only valid in the process that \
                 received it (resume from a second connection of the same Config instead)"
            }
            Refusal::OtherConfig => {
                "the session belongs to another Config: rustls resumes only with the \
                 certificate verifier that received the ticket"
            }
            Refusal::NoTicketLeft => {
                "every ticket of this session was used (tickets are single-use) or dropped"
            }
        })
    }
}

struct Entry {
    id: HandleId,
    server_name: ServerName<'static>,
    tickets: VecDeque<Tls13ClientSessionValue>,
}

/// Tickets received by the client connections of one `TlsConfig`, by connection handle.
pub(crate) struct SessionRegistry {
    /// This registry's random tag, in the handles of its connections.
    tag: Tag,
    entries: Mutex<VecDeque<Entry>>,
}

impl Default for SessionRegistry {
    fn default() -> Self {
        SessionRegistry {
            // Without randomness a fixed tag only makes `OtherConfig` read as `NoTicketLeft`.
            tag: random().unwrap_or_default(),
            entries: Mutex::default(),
        }
    }
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
    ) -> std::result::Result<(ServerName<'static>, Tls13ClientSessionValue), Refusal> {
        let (process, registry, id) = parse_handle(handle).ok_or(Refusal::NotAHandle)?;
        if process_tag().ok() != Some(process) {
            return Err(Refusal::OtherProcess);
        }
        if registry != self.tag {
            return Err(Refusal::OtherConfig);
        }
        let mut entries = self.lock();
        let pos = entries
            .iter()
            .position(|e| e.id == id)
            .ok_or(Refusal::NoTicketLeft)?;
        let entry = entries.get_mut(pos).ok_or(Refusal::NoTicketLeft)?;
        let server_name = entry.server_name.clone();
        let value = entry.tickets.pop_back().ok_or(Refusal::NoTicketLeft)?;
        if entry.tickets.is_empty() {
            entries.remove(pos);
        }
        Ok((server_name, value))
    }

    /// The handle of the tickets stored under `id`.
    fn handle(&self, id: &HandleId) -> Option<Vec<u8>> {
        let mut handle = Vec::with_capacity(HANDLE_LEN);
        handle.extend_from_slice(HANDLE_MAGIC);
        handle.extend_from_slice(&process_tag().ok()?);
        handle.extend_from_slice(&self.tag);
        handle.extend_from_slice(id);
        Some(handle)
    }
}

impl fmt::Debug for SessionRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionRegistry")
            .field("handles", &self.lock().len())
            .finish()
    }
}

/// Splits a handle into its process tag, registry tag and id.
fn parse_handle(handle: &[u8]) -> Option<(Tag, Tag, HandleId)> {
    let rest = handle.strip_prefix(HANDLE_MAGIC.as_slice())?;
    if rest.len() != 2 * TAG_LEN + HANDLE_ID_LEN {
        return None;
    }
    let (process, rest) = rest.split_at(TAG_LEN);
    let (registry, id) = rest.split_at(TAG_LEN);
    Some((
        process.try_into().ok()?,
        registry.try_into().ok()?,
        id.try_into().ok()?,
    ))
}

/// The session store of one client connection.
///
/// rustls asks it for a ticket when it builds the ClientHello and gives it the tickets the server
/// sends after the handshake.
pub(crate) struct ConnSessionStore {
    registry: Arc<SessionRegistry>,
    id: HandleId,
    /// The handle of this connection's tickets (see [`ConnSessionStore::handle`]).
    handle: Vec<u8>,
    /// The ticket set with `set_session`, for the server it was issued by.
    resume: Mutex<Option<(ServerName<'static>, Tls13ClientSessionValue)>>,
    received: AtomicBool,
}

impl ConnSessionStore {
    /// A store whose received tickets go to `registry` under a fresh random handle.
    pub(crate) fn new(registry: Arc<SessionRegistry>) -> Result<Self> {
        let id = random()?;
        let handle = registry.handle(&id).ok_or(Error::TlsFail)?;
        Ok(ConnSessionStore {
            registry,
            id,
            handle,
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
    /// Refused bytes fail with `TlsFail`, and the reason is logged as a warning: the error
    /// variants are quiche's, which has no finer one.
    pub(crate) fn resume_from(&self, handle: &[u8]) -> Result<()> {
        match self.registry.take(handle) {
            Ok(ticket) => {
                *self.resume_slot() = Some(ticket);
                Ok(())
            }
            Err(why) => {
                log::warn!("set_session: {why}");
                Err(Error::TlsFail)
            }
        }
    }

    /// The handle of this connection's tickets, if it received any that are still stored.
    pub(crate) fn handle(&self) -> Option<&[u8]> {
        if !self.received.load(Ordering::Acquire) || !self.registry.contains(&self.id) {
            return None;
        }
        Some(&self.handle)
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
    fn malformed_handles_are_refused() {
        let registry = SessionRegistry::default();
        let good = registry.handle(&[7; HANDLE_ID_LEN]).unwrap();
        assert_eq!(good.len(), HANDLE_LEN);
        let mut too_long = good.clone();
        too_long.push(0);
        let mut old_version = good.clone();
        old_version[4] = 1;
        // A session as Cloudflare quiche writes it: lengths and BoringSSL bytes.
        let mut quiche_session = 40u64.to_be_bytes().to_vec();
        quiche_session.extend_from_slice(&[0x30; 40]);
        for bytes in [
            &b""[..],
            b"QRSH\x02short",
            &good[..HANDLE_LEN - 1],
            &too_long,
            &old_version,
            &quiche_session,
        ] {
            assert_eq!(registry.take(bytes).err(), Some(Refusal::NotAHandle));
        }
    }

    #[test]
    fn refusals_say_why() {
        let registry = SessionRegistry::default();
        let handle = registry.handle(&[7; HANDLE_ID_LEN]).unwrap();
        // Well formed, from this process and registry, but no ticket was stored under it.
        assert_eq!(registry.take(&handle).err(), Some(Refusal::NoTicketLeft));

        let other = SessionRegistry::default();
        assert_ne!(other.tag, registry.tag);
        assert_eq!(other.take(&handle).err(), Some(Refusal::OtherConfig));

        // The same bytes read back by another process: only the process tag differs.
        let mut saved = handle.clone();
        let tag = HANDLE_MAGIC.len();
        saved[tag] ^= 0xff;
        assert_eq!(registry.take(&saved).err(), Some(Refusal::OtherProcess));
        assert!(Refusal::OtherProcess
            .to_string()
            .contains("another process"));
    }

    #[test]
    fn refused_bytes_fail_with_tls_fail() {
        let store = ConnSessionStore::new(Arc::new(SessionRegistry::default())).unwrap();
        assert_eq!(store.resume_from(b"not a session"), Err(Error::TlsFail));
        assert!(store.resume_slot().is_none());
    }

    #[test]
    fn no_handle_before_tickets_arrive() {
        let store = ConnSessionStore::new(Arc::new(SessionRegistry::default())).unwrap();
        assert!(store.handle().is_none());
        let other = ConnSessionStore::new(store.registry.clone()).unwrap();
        assert_ne!(store.id, other.id);
    }
}
