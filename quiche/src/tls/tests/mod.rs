//! In-memory handshakes: CRYPTO bytes move between a client and a server by epoch, no packets.
//!
//! The suites are written once, as functions of the backend, and run on every backend of the
//! build (`on_each_backend!`): `tls::tests::handshake::rustls::...`,
//! `tls::tests::handshake::boringssl::...`. What only one backend does has its own file.

use std::io::Write;
use std::sync::{Arc, Mutex};

use super::{DirectionalKeys, Handshake, HandshakeEvent, Keys, NextSecrets, TlsBackend, TlsConfig};
use crate::error::Error;
use crate::packet::Epoch;

#[cfg(feature = "boringssl-boring-crate")]
mod boringssl;
mod config;
mod epochs;
mod handshake;
mod keylog;
mod resumption;
mod rustls;

/// Generates one `#[test]` per backend for each suite function named (a function taking the
/// backend), in a module named after the backend.
macro_rules! on_each_backend {
    ($($suite:ident),* $(,)?) => {
        mod rustls {
            $(
                #[test]
                fn $suite() {
                    super::$suite(crate::tls::TlsBackend::Rustls);
                }
            )*
        }
        #[cfg(feature = "boringssl-boring-crate")]
        mod boringssl {
            $(
                #[test]
                fn $suite() {
                    super::$suite(crate::tls::TlsBackend::BoringSsl);
                }
            )*
        }
    };
}
pub(super) use on_each_backend;

pub(super) const CLIENT_TP: &[u8] = b"client transport parameters \x00\x01\x02\xff";
/// Well formed as far as TLS cares (a server's early data context is made of them): an
/// initial_max_data of 1000 and an initial_source_connection_id.
pub(super) const SERVER_TP: &[u8] = b"\x04\x02\x43\xe8\x0f\x04\x01\x02\x03\x04";

pub(super) fn cert_path(name: &str) -> String {
    format!("{}/tests/certs/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A server with the test certificate, offering `hq-interop` and `h3`.
pub(super) fn server_cfg(backend: TlsBackend) -> TlsConfig {
    let mut cfg = TlsConfig::with_backend(backend).unwrap();
    cfg.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
        .unwrap();
    cfg.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    cfg.set_application_protos(&[b"hq-interop", b"h3"]).unwrap();
    cfg
}

/// A client that verifies servers against the test CA and offers `h3`.
pub(super) fn client_cfg(backend: TlsBackend) -> TlsConfig {
    let mut cfg = TlsConfig::with_backend(backend).unwrap();
    cfg.verify_peer(true);
    cfg.load_verify_locations_from_file(&cert_path("rootca.crt"))
        .unwrap();
    cfg.set_application_protos(&[b"h3"]).unwrap();
    cfg
}

/// A writer whose bytes the test reads back.
#[derive(Clone, Default)]
pub(super) struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl SharedBuf {
    pub(super) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// One side of an in-memory handshake and what it produced.
pub(super) struct Endpoint {
    pub(super) hs: Handshake,
    pub(super) handshake_keys: Option<Keys>,
    pub(super) one_rtt: Option<(Keys, NextSecrets)>,
    /// Epochs of the data events, in order.
    pub(super) sent: Vec<Epoch>,
    /// Bytes sent per epoch.
    pub(super) sent_bytes: [usize; 3],
}

impl Endpoint {
    pub(super) fn new(hs: Handshake) -> Self {
        Endpoint {
            hs,
            handshake_keys: None,
            one_rtt: None,
            sent: Vec::new(),
            sent_bytes: [0; 3],
        }
    }

    pub(super) fn client(cfg: &mut TlsConfig, name: Option<&str>) -> Self {
        Self::new(Handshake::new_client(cfg, name, CLIENT_TP.to_vec()).unwrap())
    }

    pub(super) fn server(cfg: &mut TlsConfig) -> Self {
        Self::new(Handshake::new_server(cfg, SERVER_TP.to_vec()).unwrap())
    }
}

/// Which side failed, and how.
#[derive(Debug, PartialEq)]
pub(super) enum Failure {
    Client(Error),
    Server(Error),
}

/// Moves everything `from` has to send into `to`; returns whether anything moved.
pub(super) fn flush(
    from: &mut Endpoint,
    to: &mut Endpoint,
) -> std::result::Result<bool, (bool, Error)> {
    let mut progress = false;
    while let Some(event) = from.hs.next_event().map_err(|e| (true, e))? {
        progress = true;
        match event {
            HandshakeEvent::Data { epoch, data } => {
                assert!(!data.is_empty());
                from.sent.push(epoch);
                from.sent_bytes[epoch.index()] += data.len();
                to.hs.provide_data(epoch, &data).map_err(|e| (false, e))?;
            }
            HandshakeEvent::HandshakeKeys(keys) => {
                assert!(from.handshake_keys.is_none(), "handshake keys twice");
                from.handshake_keys = Some(keys);
            }
            HandshakeEvent::OneRttKeys { keys, next } => {
                assert!(from.one_rtt.is_none(), "1-RTT keys twice");
                from.one_rtt = Some((keys, next));
            }
        }
    }
    Ok(progress)
}

/// Runs the handshake to quiescence.
pub(super) fn run(
    client: &mut Endpoint,
    server: &mut Endpoint,
) -> std::result::Result<(), Failure> {
    for _ in 0..10 {
        let c = flush(client, server).map_err(|(sender, e)| {
            if sender {
                Failure::Client(e)
            } else {
                Failure::Server(e)
            }
        })?;
        let s = flush(server, client).map_err(|(sender, e)| {
            if sender {
                Failure::Server(e)
            } else {
                Failure::Client(e)
            }
        })?;
        if !c && !s {
            return Ok(());
        }
    }
    panic!("handshake does not settle");
}

/// Encrypts with `tx` and decrypts with `rx`, payload and header protection.
pub(super) fn assert_keys_match(tx: &DirectionalKeys, rx: &DirectionalKeys) {
    let header = [0x40, 0x01, 0x02, 0x03];
    let mut payload = b"some QUIC frames".to_vec();
    let tag = tx
        .packet
        .encrypt_in_place(42, &header, &mut payload)
        .unwrap();
    assert_ne!(&payload[..], b"some QUIC frames");
    payload.extend_from_slice(tag.as_ref());
    let mut copy = payload.clone();
    assert!(rx.packet.decrypt_in_place(43, &header, &mut copy).is_err());
    let plain = rx
        .packet
        .decrypt_in_place(42, &header, &mut payload)
        .unwrap();
    assert_eq!(plain, b"some QUIC frames");

    let sample = [0x5a; 16];
    let (mut first, mut pn) = (0x43u8, [1u8, 2, 3, 4]);
    tx.header
        .encrypt_in_place(&sample, &mut first, &mut pn)
        .unwrap();
    assert_ne!((first, pn), (0x43, [1, 2, 3, 4]));
    rx.header
        .decrypt_in_place(&sample, &mut first, &mut pn)
        .unwrap();
    assert_eq!((first, pn), (0x43, [1, 2, 3, 4]));
}

pub(super) fn assert_keys_differ(a: &DirectionalKeys, b: &DirectionalKeys) {
    let mut payload = b"frames".to_vec();
    let tag = a.packet.encrypt_in_place(1, b"h", &mut payload).unwrap();
    payload.extend_from_slice(tag.as_ref());
    assert!(b.packet.decrypt_in_place(1, b"h", &mut payload).is_err());
}

/// Checks that the Handshake and 1-RTT keys of both sides work together, and key updates too.
pub(super) fn assert_all_keys_match(client: &mut Endpoint, server: &mut Endpoint) {
    let ch = client.handshake_keys.as_ref().unwrap();
    let sh = server.handshake_keys.as_ref().unwrap();
    assert_keys_match(&ch.local, &sh.remote);
    assert_keys_match(&sh.local, &ch.remote);
    assert_keys_differ(&ch.local, &ch.remote);

    let (c1, cnext) = client.one_rtt.as_mut().unwrap();
    let (s1, snext) = server.one_rtt.as_mut().unwrap();
    assert_keys_match(&c1.local, &s1.remote);
    assert_keys_match(&s1.local, &c1.remote);
    assert_keys_differ(&c1.local, &ch.local);

    // Key phase 1 (RFC 9001 §6): both sides derive the same next keys.
    let cupd = cnext.next_packet_keys();
    let supd = snext.next_packet_keys();
    let mut payload = b"after key update".to_vec();
    let tag = cupd
        .local
        .encrypt_in_place(7, b"hdr", &mut payload)
        .unwrap();
    payload.extend_from_slice(tag.as_ref());
    let mut copy = payload.clone();
    assert!(s1
        .remote
        .packet
        .decrypt_in_place(7, b"hdr", &mut copy)
        .is_err());
    assert_eq!(
        supd.remote
            .decrypt_in_place(7, b"hdr", &mut payload)
            .unwrap(),
        b"after key update"
    );
}

/// Parses key log text into (label, client random, secret).
pub(super) fn keylog_lines(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .map(|line| {
            let mut parts = line.split(' ');
            let fields = (
                parts.next().unwrap().to_owned(),
                parts.next().unwrap().to_owned(),
                parts.next().unwrap().to_owned(),
            );
            assert!(parts.next().is_none(), "extra field in {line:?}");
            fields
        })
        .collect()
}

/// Completes a first connection and returns the client's session handle.
pub(super) fn first_connection(ccfg: &mut TlsConfig, scfg: &mut TlsConfig) -> Vec<u8> {
    let mut client = Endpoint::client(ccfg, Some("localhost"));
    let mut server = Endpoint::server(scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_resumed());
    client.hs.session().expect("a ticket").to_vec()
}

/// Resumes from `session` with a fresh client of `ccfg`; whether the server resumed.
pub(super) fn resumes(ccfg: &mut TlsConfig, scfg: &mut TlsConfig, session: &[u8]) -> bool {
    let mut client = Endpoint::client(ccfg, Some("localhost"));
    client.hs.set_session(session).unwrap();
    let mut server = Endpoint::server(scfg);
    run(&mut client, &mut server).unwrap();
    server.hs.is_resumed()
}
