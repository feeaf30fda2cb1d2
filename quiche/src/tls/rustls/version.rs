//! What rustls needs for QUIC version 2 (RFC 9369) and compatible version negotiation
//! (RFC 9368): packet keys derived with another version's labels than the rustls connection
//! was made for.
//!
//! rustls fixes a connection's QUIC version when the connection is created. A server decides
//! the version before that (it reads the client's Version Information from the ClientHello
//! itself, `tls::hello`), so only a client that started in one version and is switched by the
//! server needs keys rustls cannot give: it takes the traffic secrets from rustls's key log
//! hook ([`SecretLog`]) and derives the keys itself.

use std::sync::{Arc, Mutex};

use rustls::quic::Keys;
use rustls::KeyLog;

use crate::crypto::{Algorithm, Labels};
use crate::error::{Error, Result};
use crate::packet::QUIC_V2;
use crate::tls::secrets::{keys_from_secrets, one_rtt_from_secrets, NextSecrets};

/// The rustls QUIC version whose labels `version` uses.
pub(crate) fn rustls_version(version: u32) -> rustls::quic::Version {
    if version == QUIC_V2 {
        rustls::quic::Version::V2
    } else {
        rustls::quic::Version::V1
    }
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
        let (Some(client), Some(server)) =
            (c.client_handshake.as_deref(), c.server_handshake.as_deref())
        else {
            return Err(not_logged());
        };
        keys_from_secrets(alg, labels, client, server)
    }

    /// A client's 1-RTT keys with `labels` and the secrets of the following key phases.
    pub(crate) fn one_rtt_keys(
        &self,
        alg: Algorithm,
        labels: &'static Labels,
    ) -> Result<(Keys, NextSecrets)> {
        let c = self.captured();
        let (Some(client), Some(server)) =
            (c.client_traffic.as_deref(), c.server_traffic.as_deref())
        else {
            return Err(not_logged());
        };
        one_rtt_from_secrets(alg, labels, client, server)
    }
}

fn not_logged() -> Error {
    log::error!("TLS secrets for a version switch were not logged");
    Error::TlsFail
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
