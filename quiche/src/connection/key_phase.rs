//! The 1-RTT keys and their phases (RFC 9001 §6): the current keys, the next phase's derived
//! ahead, the previous receive key kept for reordered packets, and what a key update may
//! start on (§6.5) and must start before (the confidentiality limit, §6.6). When to update is
//! the connection's (`initiate_key_update`, `maybe_update_keys_for_limit` in `mod.rs`); which
//! key opens a received packet is `open_payload`'s (`recv.rs`).

use std::time::Instant;

use crate::tls::{HeaderProtectionKey, NextSecrets, PacketKey};

/// The 1-RTT keys and their phases (RFC 9001 §6).
pub struct OneRttKeys {
    /// Header protection for received packets (constant across key updates).
    pub hp_open: Box<dyn HeaderProtectionKey>,
    /// Header protection for sent packets.
    pub hp_seal: Box<dyn HeaderProtectionKey>,
    /// Packet key for received packets of the current phase.
    pub open: Box<dyn PacketKey>,
    /// Packet key for sent packets of the current phase.
    pub seal: Box<dyn PacketKey>,
    /// The current key phase bit.
    pub key_phase: bool,
    /// Secrets that derive the next phase's keys.
    pub secrets: NextSecrets,
    /// The next phase's keys, derived ahead so that a peer's update can be recognised.
    pub next: Option<(Box<dyn PacketKey>, Box<dyn PacketKey>)>,
    /// The previous phase's receive key, kept for reordered packets until this time.
    pub prev_open: Option<(Box<dyn PacketKey>, Instant)>,
    /// The first packet number we sent in the current phase; a new update may only start once
    /// it is acknowledged (RFC 9001 §6.5).
    pub first_sent_in_phase: Option<u64>,
    /// The first packet number received in the current phase (older ones use `prev_open`).
    pub first_recv_in_phase: Option<u64>,
    /// Packets sealed with the current key (confidentiality limit, RFC 9001 §6.6).
    pub sealed_in_phase: u64,
}

impl OneRttKeys {
    /// The keys of phase 0, with the secrets for the next phases.
    pub fn new(keys: crate::tls::Keys, mut secrets: NextSecrets) -> Self {
        let next = secrets.next_packet_keys();
        OneRttKeys {
            hp_open: keys.remote.header,
            hp_seal: keys.local.header,
            open: keys.remote.packet,
            seal: keys.local.packet,
            key_phase: false,
            secrets,
            next: Some((next.local, next.remote)),
            prev_open: None,
            first_sent_in_phase: None,
            first_recv_in_phase: None,
            sealed_in_phase: 0,
        }
    }

    /// Moves to the next key phase: the next keys become current, the current receive key is
    /// kept for reordered packets until `keep_prev_until`.
    pub fn update(&mut self, keep_prev_until: Instant) {
        let (local, remote) = match self.next.take() {
            Some(keys) => keys,
            None => {
                let k = self.secrets.next_packet_keys();
                (k.local, k.remote)
            }
        };
        let old_open = std::mem::replace(&mut self.open, remote);
        self.seal = local;
        self.prev_open = Some((old_open, keep_prev_until));
        self.key_phase = !self.key_phase;
        self.first_sent_in_phase = None;
        self.first_recv_in_phase = None;
        self.sealed_in_phase = 0;
        let next = self.secrets.next_packet_keys();
        self.next = Some((next.local, next.remote));
    }

    /// Drops the previous phase's key once its time is up.
    pub fn expire_prev(&mut self, now: Instant) {
        if self
            .prev_open
            .as_ref()
            .is_some_and(|(_, until)| *until <= now)
        {
            self.prev_open = None;
        }
    }
}
