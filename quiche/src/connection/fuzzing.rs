//! Hooks for fuzzing the connection state machine (feature `fuzzing`, and tests): a client and
//! server put straight into the established state without TLS, sealing an arbitrary payload as
//! the next 1-RTT packet of this endpoint, and checking internal invariants after every step.
//! Hidden from the documented API on purpose: they bypass the handshake and the send path's
//! own frame selection.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Instant;

use octets::OctetsMut;
use ring::hkdf::Prk;

use super::sent_frames::SentFrames;
use super::spaces::OneRttKeys;
use super::Connection;
use crate::config::Config;
use crate::crypto::{self, Algorithm, Labels};
use crate::error::{Error, Result};
use crate::packet::{encrypt_pkt, ConnectionId, Epoch, Header};
use crate::recovery::SentPacket;
use crate::tls::{NextSecrets, OwnSecrets};

/// The connection IDs of the pair [`Connection::fuzz_established_pair`] builds: the client's,
/// the server's, and the client's first Destination Connection ID.
const FUZZ_CLIENT_SCID: [u8; 16] = [0xc1; 16];
const FUZZ_SERVER_SCID: [u8; 16] = [0x5e; 16];
const FUZZ_ODCID: [u8; 16] = [0x0d; 16];
/// The 1-RTT traffic secrets of the pair: fixed, so that every run seals the same bytes.
const FUZZ_CLIENT_SECRET: [u8; 32] = [0x11; 32];
const FUZZ_SERVER_SECRET: [u8; 32] = [0x22; 32];
/// The pair's AEAD (TLS_AES_128_GCM_SHA256's).
const FUZZ_ALG: Algorithm = Algorithm::Aes128Gcm;

/// The raw 1-RTT key material of one direction of the pair, from its traffic secret: the
/// packet key and IV of phases 0 and 1, the header protection key, and the secret of phase 2.
struct DirectionMaterial {
    key0: [u8; 16],
    iv0: [u8; 12],
    hp: [u8; 16],
    key1: [u8; 16],
    iv1: [u8; 12],
    secret2: [u8; 32],
}

impl DirectionMaterial {
    fn derive(labels: &Labels, secret0: &[u8; 32]) -> Result<Self> {
        let expand = |secret: &[u8], label: &[u8], out: &mut [u8]| {
            crypto::hkdf_expand_label(&Prk::new_less_safe(FUZZ_ALG.hkdf(), secret), label, out)
        };
        let mut m = DirectionMaterial {
            key0: [0; 16],
            iv0: [0; 12],
            hp: [0; 16],
            key1: [0; 16],
            iv1: [0; 12],
            secret2: [0; 32],
        };
        let mut secret1 = [0u8; 32];
        expand(secret0, labels.key, &mut m.key0)?;
        expand(secret0, labels.iv, &mut m.iv0)?;
        expand(secret0, labels.hp, &mut m.hp)?;
        crypto::next_secret_with(labels, FUZZ_ALG, secret0, &mut secret1)?;
        expand(&secret1, labels.key, &mut m.key1)?;
        expand(&secret1, labels.iv, &mut m.iv1)?;
        crypto::next_secret_with(labels, FUZZ_ALG, &secret1, &mut m.secret2)?;
        Ok(m)
    }
}

/// The key material of both directions for one version's labels, derived once per process:
/// HKDF would otherwise cost a fuzz run more than the rest of setting the pair up.
struct PairMaterial {
    labels: &'static Labels,
    client: DirectionMaterial,
    server: DirectionMaterial,
}

impl PairMaterial {
    fn get(version: u32) -> Result<&'static PairMaterial> {
        static V1: OnceLock<Result<PairMaterial>> = OnceLock::new();
        static V2: OnceLock<Result<PairMaterial>> = OnceLock::new();
        let cell = if version == crate::packet::QUIC_V2 {
            &V2
        } else {
            &V1
        };
        let material = cell.get_or_init(|| {
            let labels = crypto::labels(version);
            Ok(PairMaterial {
                labels,
                client: DirectionMaterial::derive(labels, &FUZZ_CLIENT_SECRET)?,
                server: DirectionMaterial::derive(labels, &FUZZ_SERVER_SECRET)?,
            })
        });
        material.as_ref().map_err(|e| *e)
    }

    /// The 1-RTT keys of the client (or the server), as the handshake would have installed
    /// them: phase 0 current, phase 1 derived ahead, the secrets at phase 2.
    fn keys(&self, is_server: bool) -> Result<OneRttKeys> {
        let (local, remote) = if is_server {
            (&self.server, &self.client)
        } else {
            (&self.client, &self.server)
        };
        let packet = |key: &[u8], iv: &[u8]| -> Result<Box<dyn crate::tls::PacketKey>> {
            Ok(Box::new(crypto::PacketKey::new(FUZZ_ALG, key, iv)?))
        };
        let hp = |key: &[u8]| -> Result<Box<dyn crate::tls::HeaderProtectionKey>> {
            Ok(Box::new(crypto::HeaderProtectionKey::new(FUZZ_ALG, key)?))
        };
        Ok(OneRttKeys {
            hp_open: hp(&remote.hp)?,
            hp_seal: hp(&local.hp)?,
            open: packet(&remote.key0, &remote.iv0)?,
            seal: packet(&local.key0, &local.iv0)?,
            key_phase: false,
            secrets: NextSecrets::Own(OwnSecrets::new(
                FUZZ_ALG,
                self.labels,
                &local.secret2,
                &remote.secret2,
            )),
            next: Some((
                packet(&local.key1, &local.iv1)?,
                packet(&remote.key1, &remote.iv1)?,
            )),
            prev_open: None,
            first_sent_in_phase: None,
            first_recv_in_phase: None,
            sealed_in_phase: 0,
        })
    }
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// A client and a server in the state a completed handshake leaves them in, without TLS:
    /// both have each other's transport parameters (from the configs) and 1-RTT keys from
    /// fixed secrets; the server has validated the client's address and confirmed the
    /// handshake, and will send HANDSHAKE_DONE, which confirms it for the client. Connection
    /// IDs are fixed. CRYPTO data received afterwards fails as TLS would fail an unexpected
    /// message. Fails as `connect`/`accept` would with these configs.
    #[doc(hidden)]
    pub fn fuzz_established_pair(
        client_config: &mut Config,
        server_config: &mut Config,
        client_addr: SocketAddr,
        server_addr: SocketAddr,
        now: Instant,
    ) -> Result<(Connection, Connection)> {
        let odcid = ConnectionId::from_ref(&FUZZ_ODCID);
        let tls =
            crate::tls::Handshake::new_client(&mut client_config.tls, Some("localhost"), vec![])?;
        let mut client = Connection::new(
            false,
            tls,
            &ConnectionId::from_ref(&FUZZ_CLIENT_SCID),
            Some(&odcid),
            client_addr,
            server_addr,
            client_config,
        )?;
        let mut server = crate::connection::accept(
            &ConnectionId::from_ref(&FUZZ_SERVER_SCID),
            None,
            server_addr,
            client_addr,
            server_config,
        )?;
        client.last_now = Some(now);
        server.last_now = Some(now);
        // What the first Initials teach each side: the peer's connection ID and, for the
        // server, the original DCID its transport parameters echo.
        server.on_first_client_initial(&FUZZ_ODCID, &FUZZ_CLIENT_SCID, client.version)?;
        client.learn_peer_cid(&FUZZ_SERVER_SCID);
        let client_params = client
            .tls
            .fuzz_take_local_params()
            .ok_or(Error::InvalidState)?;
        let server_params = server
            .tls
            .fuzz_take_local_params()
            .ok_or(Error::InvalidState)?;
        let alpn = server_config
            .tls
            .application_protos()
            .first()
            .cloned()
            .unwrap_or_default();
        let material = PairMaterial::get(client.version)?;
        client.fuzz_establish(server_params, alpn.clone(), material, now)?;
        server.fuzz_establish(client_params, alpn, material, now)?;
        Ok((client, server))
    }

    /// Completes the handshake of one side of [`Connection::fuzz_established_pair`].
    fn fuzz_establish(
        &mut self,
        peer_params: Vec<u8>,
        alpn: Vec<u8>,
        material: &PairMaterial,
        now: Instant,
    ) -> Result<()> {
        self.tls.fuzz_establish(peer_params, alpn);
        self.one_rtt = Some(material.keys(self.is_server)?);
        // No Initial or Handshake packet will ever be exchanged.
        self.discard_epoch(Epoch::Initial, now);
        self.discard_epoch(Epoch::Handshake, now);
        if self.is_server {
            // The client's Handshake packets would have validated its address (RFC 9000 §8.1).
            self.paths.active_mut().set_validated();
            self.recovery
                .set_amplification_limited(false, now, &self.paths.active().sender);
        }
        self.drive_handshake()?;
        if !self.handshake_complete {
            return Err(Error::InvalidState);
        }
        Ok(())
    }

    /// Seals `payload` (raw frame bytes, valid or not) in the next 1-RTT packet, as the send
    /// path would, and records it with recovery so that the peer's acknowledgement of it is
    /// legitimate. `Err(Error::Done)` when there are no 1-RTT keys yet.
    #[doc(hidden)]
    pub fn fuzz_seal_1rtt(&mut self, payload: &[u8], now: Instant) -> Result<Vec<u8>> {
        let pn = self.spaces[Epoch::Application.index()].next_pn;
        let pn_len = 4;
        let keys = self.one_rtt.as_ref().ok_or(Error::Done)?;
        let mut hdr = Header::new_short(ConnectionId::from_ref(&self.dcid), keys.key_phase);
        hdr.pkt_num = pn;
        hdr.pkt_num_len = pn_len;
        let mut buf = vec![0u8; payload.len() + 128];
        let pn_offset = hdr.to_bytes(&mut OctetsMut::with_slice(&mut buf))?;
        let hdr_len = pn_offset + pn_len;
        buf[hdr_len..hdr_len + payload.len()].copy_from_slice(payload);
        let len = encrypt_pkt(
            &mut buf,
            pn,
            pn_offset,
            pn_len,
            payload.len(),
            &*keys.hp_seal,
            &*keys.seal,
        )?;
        buf.truncate(len);
        self.spaces[Epoch::Application.index()].next_pn += 1;
        let record = SentPacket::new(pn, now, len, false, false, SentFrames::default());
        self.recovery.on_packet_sent(
            record,
            Epoch::Application,
            now,
            &mut self.paths.active_mut().sender,
        )?;
        Ok(buf)
    }

    /// Panics when an internal invariant does not hold: bytes in flight equal the sum of the
    /// in-flight packets' sizes, the peer never got more connection credit than we granted,
    /// streams stay within the limits we advertised, and buffered state stays bounded.
    #[doc(hidden)]
    pub fn debug_check_invariants(&self) {
        self.recovery.debug_check_invariants();
        assert!(
            self.flow.rx_data() <= self.flow.rx_max_data(),
            "received {} stream bytes beyond the connection credit {}",
            self.flow.rx_data(),
            self.flow.rx_max_data()
        );
        self.streams.debug_check_invariants();
        assert!(self.undecryptable.len() <= super::recv::MAX_UNDECRYPTABLE);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::connection::tests::streams::encode;
    use crate::connection::tests::{client_config, server_config};
    use crate::frame::Frame;
    use crate::testing::Pipe;
    use crate::RecvInfo;

    fn established() -> Pipe {
        Pipe::fuzz_established(&mut client_config(), &mut server_config()).unwrap()
    }

    #[test]
    fn the_fuzzing_pair_starts_established_and_carries_data_both_ways() {
        let mut pipe = established();
        assert!(pipe.client.is_established() && pipe.server.is_established());
        assert!(pipe.server.handshake_confirmed && !pipe.client.handshake_confirmed);
        assert_eq!(pipe.client.application_proto(), b"hq-interop");
        assert_eq!(pipe.server.application_proto(), b"hq-interop");
        assert_eq!(pipe.client.stream_send(0, b"ping", true).unwrap(), 4);
        pipe.run_until(Duration::from_secs(5), |p| {
            p.server.readable().next() == Some(0)
        })
        .unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(pipe.server.stream_recv(0, &mut buf).unwrap(), (4, true));
        assert_eq!(&buf[..4], b"ping");
        pipe.server.stream_send(0, b"pong", true).unwrap();
        // The server's HANDSHAKE_DONE confirms the handshake for the client.
        pipe.run_until(Duration::from_secs(5), |p| {
            p.client.handshake_confirmed && p.client.readable().next() == Some(0)
        })
        .unwrap();
        assert_eq!(pipe.client.stream_recv(0, &mut buf).unwrap(), (4, true));
        assert_eq!(&buf[..4], b"pong");
    }

    /// One stream exchange: the client sends on `id`, the server answers on it.
    fn exchange(pipe: &mut Pipe, id: u64) {
        let mut buf = [0u8; 64];
        pipe.client.stream_send(id, &[7; 8], false).unwrap();
        pipe.run_until(Duration::from_secs(5), |p| {
            p.server.readable().any(|s| s == id)
        })
        .unwrap();
        assert_eq!(pipe.server.stream_recv(id, &mut buf).unwrap(), (8, false));
        pipe.server.stream_send(id, &[9; 8], false).unwrap();
        pipe.run_until(Duration::from_secs(5), |p| {
            p.client.readable().any(|s| s == id)
        })
        .unwrap();
        assert_eq!(pipe.client.stream_recv(id, &mut buf).unwrap(), (8, false));
    }

    #[test]
    fn the_fuzzing_pair_goes_through_key_updates() {
        let mut pipe = established();
        for round in 0..4u64 {
            // Two exchanges: the second is sent in the phase the peer's update moved to, so
            // that a packet of the current phase gets acknowledged (RFC 9001 §6.5).
            exchange(&mut pipe, 8 * round);
            exchange(&mut pipe, 8 * round + 4);
            // Each side updates in turn.
            pipe.run_until(Duration::from_secs(5), |p| {
                let updater = if round % 2 == 0 {
                    &mut p.client
                } else {
                    &mut p.server
                };
                updater.initiate_key_update().is_ok()
            })
            .unwrap();
        }
        exchange(&mut pipe, 32);
        assert_eq!(pipe.client.stats().local_key_updates, 2);
        assert_eq!(pipe.server.stats().local_key_updates, 2);
        assert!(pipe.client.local_error().is_none() && pipe.server.local_error().is_none());
    }

    #[test]
    fn sealed_packets_are_the_same_on_every_run_and_authenticate() {
        let payload = encode(&[Frame::Stream {
            stream_id: 4,
            offset: 0,
            data: b"hello",
            fin: false,
        }]);
        let mut a = established();
        let mut b = established();
        let now = a.now;
        let pkt_a = a.client.fuzz_seal_1rtt(&payload, now).unwrap();
        let pkt_b = b.client.fuzz_seal_1rtt(&payload, b.now).unwrap();
        assert_eq!(pkt_a, pkt_b);
        let mut pkt = pkt_a;
        let info = RecvInfo {
            from: a.client_addr,
            to: a.server_addr,
        };
        assert_eq!(a.server.recv_at(&mut pkt, info, now).unwrap(), pkt_b.len());
        assert_eq!(a.server.readable().next(), Some(4));
    }

    #[test]
    fn crypto_data_after_a_handshake_without_tls_closes_with_a_crypto_error() {
        let mut pipe = established();
        let payload = encode(&[Frame::Crypto {
            offset: 0,
            data: &[4, 0, 0, 1, 0],
        }]);
        let now = pipe.now;
        let mut pkt = pipe.client.fuzz_seal_1rtt(&payload, now).unwrap();
        let info = RecvInfo {
            from: pipe.client_addr,
            to: pipe.server_addr,
        };
        assert!(pipe.server.recv_at(&mut pkt, info, now).is_err());
        let err = pipe.server.local_error().expect("closed");
        assert!(!err.is_app);
        assert_eq!(err.error_code, 0x100 + 10);
    }
}
