//! The 0-RTT keys (RFC 9001 §4.6): a client seals early data with them from the moment TLS
//! resumes a session that allows it, a server opens the client's 0-RTT packets with them once
//! its TLS accepted early data. Both drop them when the handshake completes (§4.9.3), and a
//! client when it restarts its first flight in another version. What a rejection of 0-RTT
//! means for the data sent with them is `handshake.rs`'s (`on_zero_rtt_rejected`).

use super::Connection;
use crate::crypto::DirectionalKeys;
use crate::tls::{HeaderProtectionKey, PacketKey};

/// The 0-RTT keys of one endpoint, used in the one direction its role allows.
pub(super) struct ZeroRttKeys {
    is_server: bool,
    keys: Option<DirectionalKeys>,
}

impl ZeroRttKeys {
    /// No keys yet, for a server (`is_server`) or a client.
    pub fn new(is_server: bool) -> Self {
        ZeroRttKeys {
            is_server,
            keys: None,
        }
    }

    /// Whether the keys are here (early data offered by a client, accepted by a server).
    pub fn is_installed(&self) -> bool {
        self.keys.is_some()
    }

    /// Keeps `keys` unless some are installed already.
    pub fn install(&mut self, keys: Option<DirectionalKeys>) {
        if self.keys.is_none() {
            self.keys = keys;
        }
    }

    /// Drops the keys.
    pub fn discard(&mut self) {
        self.keys = None;
    }

    /// Whether received 0-RTT packets can be opened (servers only).
    pub fn can_open(&self) -> bool {
        self.is_server && self.keys.is_some()
    }

    /// Whether 0-RTT packets can be sealed (clients only).
    pub fn can_seal(&self) -> bool {
        !self.is_server && self.keys.is_some()
    }

    /// Header protection of 0-RTT packets.
    pub fn header(&self) -> Option<&dyn HeaderProtectionKey> {
        self.keys.as_ref().map(|k| &*k.header)
    }

    /// The packet protection key of 0-RTT packets.
    pub fn packet(&self) -> Option<&dyn PacketKey> {
        self.keys.as_ref().map(|k| &*k.packet)
    }
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Takes the 0-RTT keys TLS has now, if it has some and the handshake is not complete:
    /// a client's once a resumable session was set up, a server's once the ClientHello's
    /// early data was accepted.
    pub(super) fn install_zero_rtt_keys(&mut self) {
        if !self.zero_rtt.is_installed() && !self.handshake_complete {
            self.zero_rtt.install(self.tls.zero_rtt_keys());
        }
    }

    /// Whether the connection is sending or accepting 0-RTT data.
    pub fn is_in_early_data(&self) -> bool {
        !self.handshake_complete && self.zero_rtt.is_installed()
    }
}
