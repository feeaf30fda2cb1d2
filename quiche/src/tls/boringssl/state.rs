//! What BoringSSL's callbacks tell one connection, turned into [`HandshakeEvent`]s.
//!
//! BoringSSL hands out traffic secrets per encryption level and direction
//! (`set_read_secret`/`set_write_secret`), and the CRYPTO bytes per level. The connection takes
//! packet keys of both directions at once; they are derived here (on *ring*) as soon as both
//! secrets of a level are known. A server's 1-RTT read secret comes only with the client's
//! Finished, but its write secret with its first flight, when it may already send (0.5-RTT);
//! the key log hook reports both 1-RTT secrets at the moment BoringSSL derives them, so the
//! server's 1-RTT keys go out with its first flight, as with rustls. (Without the hook, as on
//! an application's own `SSL` whose context lacks it, they go out with the client's Finished.)

use std::collections::VecDeque;
use std::sync::Arc;

use crate::cc::CongestionControlAlgorithm;
use crate::crypto::{self, Algorithm};
use crate::packet::Epoch;
use crate::tls::keylog::ConnKeyLog;
use crate::tls::secrets::{keys_from_secrets, one_rtt_from_secrets};
use crate::tls::{DirectionalKeys, HandshakeEvent};

/// A key log callback as BoringSSL calls it (an application's own, which ours passes lines on
/// to).
pub(crate) type KeylogCallback =
    unsafe extern "C" fn(ssl: *const boring_sys::SSL, line: *const std::ffi::c_char);

/// The secrets of one encryption level, as they arrive.
#[derive(Default)]
struct LevelSecrets {
    local: Option<Vec<u8>>,
    remote: Option<Vec<u8>>,
    /// Keys were handed out.
    done: bool,
}

impl LevelSecrets {
    fn set(&mut self, local: bool, secret: &[u8]) {
        let slot = if local {
            &mut self.local
        } else {
            &mut self.remote
        };
        if slot.is_none() {
            *slot = Some(secret.to_vec());
        }
    }

    /// Both secrets, the first time both are known.
    fn take_ready(&mut self) -> Option<(&[u8], &[u8])> {
        if self.done {
            return None;
        }
        let (Some(local), Some(remote)) = (&self.local, &self.remote) else {
            return None;
        };
        self.done = true;
        Some((local, remote))
    }
}

/// What BoringSSL's callbacks changed through quiche's `set_*_in_handshake` (see
/// `in_handshake`); `None` (or `false`) for what they left alone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HandshakeOverrides {
    /// `set_cc_algorithm_in_handshake`.
    pub cc_algorithm: Option<CongestionControlAlgorithm>,
    /// `set_initial_congestion_window_packets_in_handshake`.
    pub initial_congestion_window_packets: Option<usize>,
    /// `set_enable_relaxed_loss_threshold_in_handshake`.
    pub relaxed_loss_threshold: Option<bool>,
    /// `set_enable_cubic_idle_restart_fix_in_handshake`.
    pub cubic_idle_restart_fix: Option<bool>,
    /// `set_hystart_in_handshake`.
    pub hystart: Option<bool>,
    /// `set_pacing_in_handshake`.
    pub pacing: Option<bool>,
    /// `set_max_pacing_rate_in_handshake` (the inner `None` removes the cap).
    pub max_pacing_rate: Option<Option<u64>>,
    /// `set_max_send_udp_payload_size_in_handshake`.
    pub max_send_udp_payload_size: Option<usize>,
    /// `set_send_capacity_factor_in_handshake`.
    pub send_capacity_factor: Option<f64>,
    /// `set_discover_pmtu_in_handshake`: on or off, and the probes per size.
    pub discover_pmtu: Option<(bool, u8)>,
    /// `set_max_idle_timeout_in_handshake`, in milliseconds (already in TLS's parameters).
    pub max_idle_timeout: Option<u64>,
    /// `set_initial_max_streams_bidi_in_handshake` (already in TLS's parameters).
    pub initial_max_streams_bidi: Option<u64>,
}

impl HandshakeOverrides {
    /// Whether any setter was called.
    pub fn is_empty(&self) -> bool {
        *self == HandshakeOverrides::default()
    }
}

/// The per-connection state BoringSSL's callbacks reach through the `SSL`'s ex_data.
pub(crate) struct QuicState {
    pub(crate) is_server: bool,
    pub(crate) events: VecDeque<HandshakeEvent>,
    /// The epoch of the last write secret: where the next bytes go.
    pub(crate) write_epoch: Epoch,
    /// The epoch of the last read secret (0-RTT aside): where CRYPTO data is expected.
    pub(crate) read_epoch: Epoch,
    /// The QUIC version whose labels derive the packet keys.
    pub(crate) key_version: u32,
    /// The negotiated cipher suite's algorithm, from the first secret of a level.
    pub(crate) alg: Option<Algorithm>,
    handshake: LevelSecrets,
    one_rtt: LevelSecrets,
    /// The 0-RTT secret: written by a client that offers early data, read by a server that
    /// accepted it.
    pub(crate) early: Option<(Algorithm, Vec<u8>)>,
    /// The alert BoringSSL raised, if any.
    pub(crate) alert: Option<u8>,
    /// The first failure inside a callback (keys that cannot be derived).
    pub(crate) error: Option<crate::error::Error>,
    /// The application's key log, when the config enabled key logging.
    pub(crate) keylog: Option<ConnKeyLog>,
    /// The application's own key log callback, called after ours.
    pub(crate) app_keylog: Option<KeylogCallback>,
    /// The ALPN protocols a server chooses from, most preferred first.
    pub(crate) alpn: Arc<Vec<Vec<u8>>>,
    /// The newest session, in quiche's encoding (see `session`); clients only.
    pub(crate) session: Option<Vec<u8>>,
    /// A call of ours into TLS is running, so callbacks belong to this connection's handshake
    /// (see `in_handshake`).
    pub(crate) in_tls_call: bool,
    /// What callbacks changed through quiche's `set_*_in_handshake` (see `in_handshake`).
    pub(crate) overrides: HandshakeOverrides,
    /// Our encoded transport parameters as TLS has them.
    pub(crate) local_params: Vec<u8>,
}

/// The epoch of a BoringSSL encryption level (0-RTT data has no CRYPTO stream of its own).
pub(crate) fn epoch_of(level: u32) -> Option<Epoch> {
    match level {
        0 => Some(Epoch::Initial),
        2 => Some(Epoch::Handshake),
        3 => Some(Epoch::Application),
        _ => None,
    }
}

/// BoringSSL's level of 0-RTT data.
pub(crate) const LEVEL_EARLY_DATA: u32 = 1;

impl QuicState {
    pub(crate) fn new(is_server: bool, alpn: Arc<Vec<Vec<u8>>>) -> Self {
        QuicState {
            is_server,
            events: VecDeque::new(),
            write_epoch: Epoch::Initial,
            read_epoch: Epoch::Initial,
            key_version: crate::packet::QUIC_V1,
            alg: None,
            handshake: LevelSecrets::default(),
            one_rtt: LevelSecrets::default(),
            early: None,
            alert: None,
            error: None,
            keylog: None,
            app_keylog: None,
            alpn,
            session: None,
            in_tls_call: false,
            overrides: Default::default(),
            local_params: Vec::new(),
        }
    }

    /// Whether Handshake keys were handed out.
    pub(crate) fn have_handshake_keys(&self) -> bool {
        self.handshake.done
    }

    /// A secret from `set_read_secret` (`local` false) or `set_write_secret` (`local` true).
    pub(crate) fn on_secret(&mut self, level: u32, local: bool, alg: Algorithm, secret: &[u8]) {
        if level == LEVEL_EARLY_DATA {
            self.early = Some((alg, secret.to_vec()));
            return;
        }
        let Some(epoch) = epoch_of(level) else {
            return;
        };
        if local {
            self.write_epoch = epoch;
        } else {
            self.read_epoch = epoch;
        }
        self.alg = Some(alg);
        match epoch {
            Epoch::Handshake => self.handshake.set(local, secret),
            Epoch::Application => self.one_rtt.set(local, secret),
            // Initial keys come from the connection ID, not from TLS.
            Epoch::Initial => return,
        }
        self.emit_keys();
    }

    /// A line of BoringSSL's key log: passed to the application's key log, and the 1-RTT
    /// traffic secrets taken from it (see the module's comment).
    pub(crate) fn on_keylog_line(&mut self, line: &str) {
        if let Some(keylog) = &self.keylog {
            let mut own = String::with_capacity(line.len() + 1);
            own.push_str(line);
            own.push('\n');
            keylog.log_line(own);
        }
        let mut fields = line.split(' ');
        let (Some(label), Some(_random), Some(hex)) = (fields.next(), fields.next(), fields.next())
        else {
            return;
        };
        let client = match label {
            "CLIENT_TRAFFIC_SECRET_0" => true,
            "SERVER_TRAFFIC_SECRET_0" => false,
            _ => return,
        };
        let mut secret = [0; crypto::MAX_SECRET_LEN];
        let Some(len) = decode_hex(hex, &mut secret) else {
            return;
        };
        // Our own direction: the client's secret is the client's write secret.
        let local = client != self.is_server;
        self.one_rtt.set(local, &secret[..len]);
        if self.alg.is_some() {
            self.emit_keys();
        }
    }

    /// Hands out the keys of every level whose two secrets are known.
    fn emit_keys(&mut self) {
        let Some(alg) = self.alg else {
            return;
        };
        let labels = crypto::labels(self.key_version);
        if let Some((local, remote)) = self.handshake.take_ready() {
            match keys_from_secrets(alg, labels, local, remote) {
                Ok(keys) => self.events.push_back(HandshakeEvent::HandshakeKeys(keys)),
                Err(e) => self.error = Some(e),
            }
        }
        // 1-RTT keys only after the Handshake ones: the connection installs them in order.
        if !self.handshake.done {
            return;
        }
        if let Some((local, remote)) = self.one_rtt.take_ready() {
            match one_rtt_from_secrets(alg, labels, local, remote) {
                Ok((keys, next)) => self
                    .events
                    .push_back(HandshakeEvent::OneRttKeys { keys, next }),
                Err(e) => self.error = Some(e),
            }
        }
    }

    /// Handshake bytes to send at `level`, after those sent before at it.
    pub(crate) fn on_handshake_data(&mut self, level: u32, data: &[u8]) {
        let Some(epoch) = epoch_of(level) else {
            return;
        };
        match self.events.back_mut() {
            Some(HandshakeEvent::Data { epoch: e, data: d }) if *e == epoch => {
                d.extend_from_slice(data)
            }
            _ => self.events.push_back(HandshakeEvent::Data {
                epoch,
                data: data.to_vec(),
            }),
        }
    }

    /// The 0-RTT keys, from the early traffic secret.
    pub(crate) fn zero_rtt_keys(&self) -> Option<DirectionalKeys> {
        let (alg, secret) = self.early.as_ref()?;
        crypto::derive_keys_with(crypto::labels(self.key_version), *alg, secret).ok()
    }
}

/// Decodes lowercase or uppercase hex into `out`; the length, or `None` if it does not fit or
/// is not hex.
fn decode_hex(hex: &str, out: &mut [u8]) -> Option<usize> {
    let bytes = hex.as_bytes();
    if bytes.len() % 2 != 0 || bytes.len() / 2 > out.len() {
        return None;
    }
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(bytes.len() / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_decoding() {
        let mut out = [0; 4];
        assert_eq!(decode_hex("00aBff10", &mut out), Some(4));
        assert_eq!(out, [0, 0xab, 0xff, 0x10]);
        assert_eq!(decode_hex("abc", &mut out), None);
        assert_eq!(decode_hex("0011223344", &mut out), None);
        assert_eq!(decode_hex("zz", &mut out), None);
    }

    #[test]
    fn keys_wait_for_both_secrets_and_handshake_keys_come_first() {
        let mut state = QuicState::new(true, Arc::default());
        let s = [7u8; 32];
        // A server's 1-RTT write secret before anything else: nothing yet.
        state.on_secret(3, true, Algorithm::Aes128Gcm, &s);
        assert!(state.events.is_empty());
        state.on_secret(2, true, Algorithm::Aes128Gcm, &s);
        assert!(state.events.is_empty());
        assert_eq!(state.write_epoch, Epoch::Handshake);
        state.on_secret(2, false, Algorithm::Aes128Gcm, &s);
        assert!(matches!(
            state.events.pop_front(),
            Some(HandshakeEvent::HandshakeKeys(_))
        ));
        assert_eq!(state.read_epoch, Epoch::Handshake);
        // The client's 1-RTT secret from the key log: keys, but still reading Handshake.
        let line = format!(
            "CLIENT_TRAFFIC_SECRET_0 {} {}",
            "00".repeat(32),
            "07".repeat(32)
        );
        state.on_keylog_line(&line);
        assert!(matches!(
            state.events.pop_front(),
            Some(HandshakeEvent::OneRttKeys { .. })
        ));
        assert_eq!(state.read_epoch, Epoch::Handshake);
        // The read secret that follows the client's Finished hands out nothing new.
        state.on_secret(3, false, Algorithm::Aes128Gcm, &s);
        assert!(state.events.is_empty());
        assert_eq!(state.read_epoch, Epoch::Application);
    }
}
