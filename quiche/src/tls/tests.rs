//! In-memory handshakes: CRYPTO bytes move between a client and a server by epoch, no packets.

use std::sync::{Arc, Mutex};

use rustls::pki_types::pem::PemObject;

use super::*;

const CLIENT_TP: &[u8] = b"client transport parameters \x00\x01\x02\xff";
const SERVER_TP: &[u8] = b"server transport parameters \x10\x20";

fn cert_path(name: &str) -> String {
    format!("{}/tests/certs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn server_cfg() -> TlsConfig {
    let mut cfg = TlsConfig::new();
    cfg.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
        .unwrap();
    cfg.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    cfg.set_application_protos(&[b"hq-interop", b"h3"]).unwrap();
    cfg
}

fn client_cfg() -> TlsConfig {
    let mut cfg = TlsConfig::new();
    cfg.verify_peer(true);
    cfg.load_verify_locations_from_file(&cert_path("rootca.crt"))
        .unwrap();
    cfg.set_application_protos(&[b"h3"]).unwrap();
    cfg
}

/// A writer whose bytes the test reads back.
#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

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
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// One side of an in-memory handshake and what it produced.
struct Endpoint {
    hs: Handshake,
    handshake_keys: Option<Keys>,
    one_rtt: Option<(Keys, NextSecrets)>,
    /// Epochs of the data events, in order.
    sent: Vec<Epoch>,
    /// Bytes sent per epoch.
    sent_bytes: [usize; 3],
}

impl Endpoint {
    fn new(hs: Handshake) -> Self {
        Endpoint {
            hs,
            handshake_keys: None,
            one_rtt: None,
            sent: Vec::new(),
            sent_bytes: [0; 3],
        }
    }

    fn client(cfg: &mut TlsConfig, name: Option<&str>) -> Self {
        Self::new(Handshake::new_client(cfg, name, CLIENT_TP.to_vec()).unwrap())
    }

    fn server(cfg: &mut TlsConfig) -> Self {
        Self::new(Handshake::new_server(cfg, SERVER_TP.to_vec()).unwrap())
    }
}

/// Which side failed, and how.
#[derive(Debug, PartialEq)]
enum Failure {
    Client(Error),
    Server(Error),
}

/// Moves everything `from` has to send into `to`; returns whether anything moved.
fn flush(from: &mut Endpoint, to: &mut Endpoint) -> std::result::Result<bool, (bool, Error)> {
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
fn run(client: &mut Endpoint, server: &mut Endpoint) -> std::result::Result<(), Failure> {
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
fn assert_keys_match(tx: &DirectionalKeys, rx: &DirectionalKeys) {
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

fn assert_keys_differ(a: &DirectionalKeys, b: &DirectionalKeys) {
    let mut payload = b"frames".to_vec();
    let tag = a.packet.encrypt_in_place(1, b"h", &mut payload).unwrap();
    payload.extend_from_slice(tag.as_ref());
    assert!(b.packet.decrypt_in_place(1, b"h", &mut payload).is_err());
}

/// Checks that the Handshake and 1-RTT keys of both sides work together, and key updates too.
fn assert_all_keys_match(client: &mut Endpoint, server: &mut Endpoint) {
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

#[test]
fn full_handshake_verified_against_test_ca() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    assert!(client.hs.is_handshaking() && server.hs.is_handshaking());
    assert_eq!(client.hs.read_epoch(), Epoch::Initial);

    run(&mut client, &mut server).unwrap();

    for hs in [&client.hs, &server.hs] {
        assert!(!hs.is_handshaking());
        assert_eq!(hs.alpn(), Some(&b"h3"[..]));
        assert!(!hs.is_resumed());
        assert_eq!(hs.read_epoch(), Epoch::Application);
        assert_eq!(hs.write_epoch(), Epoch::Application);
        assert_eq!(
            hs.cipher_suite(),
            Some(CipherSuite::TLS13_AES_128_GCM_SHA256)
        );
        assert!(hs.zero_rtt_keys().is_none());
        assert!(hs.alert().is_none());
    }
    assert!(!client.hs.is_server() && server.hs.is_server());
    // Transport parameters arrive byte-exact on both sides.
    assert_eq!(client.hs.peer_transport_params(), Some(SERVER_TP));
    assert_eq!(server.hs.peer_transport_params(), Some(CLIENT_TP));
    assert_eq!(client.hs.server_name(), Some("localhost"));
    assert_eq!(server.hs.server_name(), Some("localhost"));
    // The client saw the server's certificate; the server asked for none.
    let leaf = CertificateDer::from_pem_file(cert_path("cert.crt")).unwrap();
    assert_eq!(client.hs.peer_cert(), Some(leaf.as_ref()));
    assert_eq!(client.hs.peer_cert_chain().map(<[_]>::len), Some(1));
    assert!(server.hs.peer_cert().is_none());
    // ClientHello in Initial, Finished in Handshake; the server's ServerHello in Initial, the
    // rest of its flight in Handshake, its tickets after the handshake in 1-RTT.
    assert_eq!(client.sent, [Epoch::Initial, Epoch::Handshake]);
    assert_eq!(
        server.sent,
        [Epoch::Initial, Epoch::Handshake, Epoch::Application]
    );
    assert_all_keys_match(&mut client, &mut server);
    assert!(server.sent_bytes[Epoch::Handshake.index()] > 500);
    // No session handle on the server; the client got tickets.
    assert!(server.hs.session().is_none());
    assert!(client.hs.session().is_some());
}

#[test]
fn verify_peer_false_accepts_any_server_certificate() {
    let mut ccfg = TlsConfig::new();
    ccfg.verify_peer(false);
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut scfg = server_cfg();
    // Neither the CA nor the name would verify.
    let mut client = Endpoint::client(&mut ccfg, Some("example.org"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_handshaking() && !server.hs.is_handshaking());
    assert_eq!(server.hs.server_name(), Some("example.org"));
    assert_all_keys_match(&mut client, &mut server);
}

/// As in quiche, a client that never called `verify_peer` does not verify: a certificate from
/// an unknown CA for another name is accepted, and `verify_peer(true)` turns the check on.
#[test]
fn a_client_verifies_only_when_asked_as_in_quiche() {
    let mut ccfg = TlsConfig::new();
    ccfg.load_verify_locations_from_file(&cert_path("other-rootca.crt"))
        .unwrap();
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut scfg = server_cfg();
    let mut client = Endpoint::client(&mut ccfg, Some("example.org"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_handshaking());

    ccfg.verify_peer(true);
    let mut client = Endpoint::client(&mut ccfg, Some("example.org"));
    let mut server = Endpoint::server(&mut scfg);
    assert_eq!(
        run(&mut client, &mut server),
        Err(Failure::Client(Error::TlsAlert(48)))
    );
}

#[test]
fn unknown_ca_fails_with_alert() {
    let mut ccfg = TlsConfig::new();
    ccfg.verify_peer(true);
    ccfg.load_verify_locations_from_file(&cert_path("other-rootca.crt"))
        .unwrap();
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut scfg = server_cfg();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    // unknown_ca (48) → CRYPTO_ERROR 0x130.
    assert_eq!(
        run(&mut client, &mut server),
        Err(Failure::Client(Error::TlsAlert(48)))
    );
    assert_eq!(client.hs.alert(), Some(48));
    assert_eq!(Error::TlsAlert(48).to_wire(), 0x130);
    assert!(client.hs.is_handshaking());
    assert!(client.one_rtt.is_none());
    // The failure sticks.
    assert_eq!(
        client
            .hs
            .provide_data(Epoch::Handshake, b"\x14\x00\x00\x00"),
        Err(Error::TlsAlert(48))
    );
    assert_eq!(client.hs.next_event().err(), Some(Error::TlsAlert(48)));
}

#[test]
fn name_mismatch_fails_with_bad_certificate() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    let mut client = Endpoint::client(&mut ccfg, Some("example.org"));
    let mut server = Endpoint::server(&mut scfg);
    // bad_certificate (42).
    assert_eq!(
        run(&mut client, &mut server),
        Err(Failure::Client(Error::TlsAlert(42)))
    );
}

#[test]
fn ip_address_name_is_verified_but_not_sent() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    let mut client = Endpoint::client(&mut ccfg, Some("127.0.0.1"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_handshaking());
    assert_eq!(client.hs.server_name(), Some("127.0.0.1"));
    assert_eq!(server.hs.server_name(), None);

    // An address the certificate does not cover fails.
    let mut client = Endpoint::client(&mut ccfg, Some("10.0.0.1"));
    let mut server = Endpoint::server(&mut scfg);
    assert_eq!(
        run(&mut client, &mut server),
        Err(Failure::Client(Error::TlsAlert(42)))
    );
}

#[test]
fn no_server_name_checks_the_chain_only() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    let mut client = Endpoint::client(&mut ccfg, None);
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_handshaking());
    assert_eq!(client.hs.server_name(), None);
    assert_eq!(server.hs.server_name(), None);

    let mut ccfg = TlsConfig::new();
    ccfg.verify_peer(true);
    ccfg.load_verify_locations_from_file(&cert_path("other-rootca.crt"))
        .unwrap();
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut client = Endpoint::client(&mut ccfg, None);
    let mut server = Endpoint::server(&mut scfg);
    assert_eq!(
        run(&mut client, &mut server),
        Err(Failure::Client(Error::TlsAlert(48)))
    );
}

#[test]
fn alpn_mismatch_fails_with_no_application_protocol() {
    let mut ccfg = client_cfg();
    ccfg.set_application_protos(&[b"doq"]).unwrap();
    let mut scfg = server_cfg();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    assert_eq!(
        run(&mut client, &mut server),
        Err(Failure::Server(Error::TlsAlert(120)))
    );
    assert_eq!(server.hs.alert(), Some(120));
    // The client learns it from the server's CONNECTION_CLOSE: CRYPTO_ERROR 0x178 (RFC 9001 §8.1).
    assert_eq!(Error::TlsAlert(120).to_wire(), 0x178);
    assert!(server.sent.is_empty());
    assert!(client.hs.is_handshaking());
    assert_eq!(client.hs.read_epoch(), Epoch::Initial);
}

#[test]
fn client_without_alpn_is_refused_by_a_server_with_alpn() {
    let mut ccfg = client_cfg();
    ccfg.set_application_protos(&[]).unwrap();
    let mut scfg = server_cfg();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    assert_eq!(
        run(&mut client, &mut server),
        Err(Failure::Server(Error::TlsAlert(120)))
    );
}

/// Parses key log text into (label, client random, secret).
fn keylog_lines(text: &str) -> Vec<(String, String, String)> {
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

#[test]
fn key_log_lines_for_both_sides() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    ccfg.log_keys();
    scfg.log_keys();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    // The client's writer is attached after its ClientHello (and early secrets) were built.
    let Some(HandshakeEvent::Data { epoch, data }) = client.hs.next_event().unwrap() else {
        panic!("no ClientHello");
    };
    let (cbuf, sbuf) = (SharedBuf::default(), SharedBuf::default());
    client.hs.set_keylog(Box::new(cbuf.clone())).unwrap();
    server.hs.set_keylog(Box::new(sbuf.clone())).unwrap();
    server.hs.provide_data(epoch, &data).unwrap();
    run(&mut client, &mut server).unwrap();

    let clines = keylog_lines(&cbuf.text());
    let slines = keylog_lines(&sbuf.text());
    for lines in [&clines, &slines] {
        let labels: Vec<&str> = lines.iter().map(|l| l.0.as_str()).collect();
        for want in [
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
            "SERVER_HANDSHAKE_TRAFFIC_SECRET",
            "CLIENT_TRAFFIC_SECRET_0",
            "SERVER_TRAFFIC_SECRET_0",
        ] {
            assert_eq!(labels.iter().filter(|l| **l == want).count(), 1, "{want}");
        }
        for (_, random, secret) in lines.iter() {
            assert_eq!(random.len(), 64);
            assert!(random.bytes().all(|b| b.is_ascii_hexdigit()));
            // SHA-256 suite: 32-byte secrets.
            assert_eq!(secret.len(), 64);
        }
        // One connection, one client random.
        assert!(lines.iter().all(|l| l.1 == lines[0].1));
    }
    // Both sides log the same random and the same secrets.
    assert_eq!(clines[0].1, slines[0].1);
    for (label, _, secret) in &clines {
        if let Some(s) = slines.iter().find(|s| &s.0 == label) {
            assert_eq!(&s.2, secret, "{label}");
        }
    }
}

#[test]
fn key_log_of_lines_logged_before_set_keylog() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    ccfg.log_keys();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    let buf = SharedBuf::default();
    client.hs.set_keylog(Box::new(buf.clone())).unwrap();
    assert_eq!(keylog_lines(&buf.text()).len(), 5, "{}", buf.text());
    // Without log_keys in the config there is no key log.
    assert_eq!(
        server.hs.set_keylog(Box::new(SharedBuf::default())),
        Err(Error::InvalidState)
    );
}

#[test]
fn separate_connections_log_to_separate_writers() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    scfg.log_keys();
    let bufs = [SharedBuf::default(), SharedBuf::default()];
    let mut randoms = Vec::new();
    for buf in &bufs {
        let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
        let mut server = Endpoint::server(&mut scfg);
        server.hs.set_keylog(Box::new(buf.clone())).unwrap();
        run(&mut client, &mut server).unwrap();
        let lines = keylog_lines(&buf.text());
        assert_eq!(lines.len(), 5);
        assert!(lines.iter().all(|l| l.1 == lines[0].1));
        randoms.push(lines[0].1.clone());
    }
    assert_ne!(randoms[0], randoms[1]);
}

/// Completes a first connection and returns the client's session handle.
fn first_connection(ccfg: &mut TlsConfig, scfg: &mut TlsConfig) -> Vec<u8> {
    let mut client = Endpoint::client(ccfg, Some("localhost"));
    let mut server = Endpoint::server(scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_resumed());
    client.hs.session().expect("a ticket")
}

#[test]
fn resumption_with_zero_rtt() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    ccfg.enable_early_data();
    scfg.enable_early_data();
    let session = first_connection(&mut ccfg, &mut scfg);

    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    client.hs.set_session(&session).unwrap();
    // The server's transport parameters change between the two connections.
    let mut server =
        Endpoint::new(Handshake::new_server(&mut scfg, b"new params".to_vec()).unwrap());

    // The ClientHello offers early data: 0-RTT keys and the remembered parameters are ready.
    let Some(HandshakeEvent::Data { epoch, data }) = client.hs.next_event().unwrap() else {
        panic!("no ClientHello");
    };
    assert_eq!(epoch, Epoch::Initial);
    let client_0rtt = client.hs.zero_rtt_keys().expect("client 0-RTT keys");
    assert_eq!(client.hs.peer_transport_params(), Some(SERVER_TP));
    assert!(server.hs.zero_rtt_keys().is_none());
    server.hs.provide_data(epoch, &data).unwrap();
    let server_0rtt = server.hs.zero_rtt_keys().expect("server 0-RTT keys");
    assert_keys_match(&client_0rtt, &server_0rtt);
    assert!(server.hs.is_early_data_accepted());

    run(&mut client, &mut server).unwrap();
    for hs in [&client.hs, &server.hs] {
        assert!(!hs.is_handshaking());
        assert!(hs.is_resumed());
        assert!(hs.is_early_data_accepted());
        assert_eq!(hs.alpn(), Some(&b"h3"[..]));
    }
    assert_eq!(client.hs.peer_transport_params(), Some(&b"new params"[..]));
    assert_eq!(server.hs.peer_transport_params(), Some(CLIENT_TP));
    // No certificate in a resumed handshake: the server's Handshake flight is EncryptedExtensions
    // and Finished only (the full one carries a ~500-byte certificate and its signature).
    let hs_bytes = server.sent_bytes[Epoch::Handshake.index()];
    assert!(hs_bytes > 0 && hs_bytes < 150, "{hs_bytes}");
    assert_all_keys_match(&mut client, &mut server);
    // The resumed connection received fresh tickets of its own.
    let session2 = client.hs.session().unwrap();
    assert_ne!(session2, session);
}

#[test]
fn session_handle_is_single_use_per_ticket() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    let session = first_connection(&mut ccfg, &mut scfg);
    // rustls servers send two tickets: two resumptions, then the handle is used up.
    for _ in 0..2 {
        let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
        client.hs.set_session(&session).unwrap();
        let mut server = Endpoint::server(&mut scfg);
        run(&mut client, &mut server).unwrap();
        assert!(client.hs.is_resumed() && server.hs.is_resumed());
        // Early data is not enabled.
        assert!(!client.hs.is_early_data_accepted());
    }
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    assert_eq!(client.hs.set_session(&session), Err(Error::TlsFail));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_resumed());
}

#[test]
fn resumption_without_early_data_has_no_zero_rtt_keys() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    ccfg.enable_early_data();
    let session = first_connection(&mut ccfg, &mut scfg);
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    client.hs.set_session(&session).unwrap();
    client.hs.next_event().unwrap().unwrap();
    // The ticket does not allow early data: the server did not enable it.
    assert!(client.hs.zero_rtt_keys().is_none());
}

#[test]
fn server_rejects_early_data() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    ccfg.enable_early_data();
    scfg.enable_early_data();
    let session = first_connection(&mut ccfg, &mut scfg);

    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    client.hs.set_session(&session).unwrap();
    let mut server = Endpoint::server(&mut scfg);
    assert_eq!(client.hs.reject_early_data(), Err(Error::InvalidState));
    server.hs.reject_early_data().unwrap();
    let Some(HandshakeEvent::Data { epoch, data }) = client.hs.next_event().unwrap() else {
        panic!("no ClientHello");
    };
    // The client offers 0-RTT; the server answers without it.
    assert!(client.hs.zero_rtt_keys().is_some());
    server.hs.provide_data(epoch, &data).unwrap();
    run(&mut client, &mut server).unwrap();
    assert!(server.hs.zero_rtt_keys().is_none());
    assert!(!server.hs.is_early_data_accepted());
    assert!(!client.hs.is_early_data_accepted());
    assert!(client.hs.is_resumed() && server.hs.is_resumed());
    // Too late once the handshake is under way.
    assert_eq!(server.hs.reject_early_data(), Err(Error::InvalidState));
}

#[test]
fn set_session_errors() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    let session = first_connection(&mut ccfg, &mut scfg);

    let mut server = Endpoint::server(&mut scfg);
    assert_eq!(server.hs.set_session(&session), Err(Error::InvalidState));

    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    assert_eq!(client.hs.set_session(b"not a session"), Err(Error::TlsFail));
    client.hs.next_event().unwrap();
    assert_eq!(client.hs.set_session(&session), Err(Error::InvalidState));

    // A handle belongs to the config that made it.
    let mut other = client_cfg();
    let mut client = Endpoint::client(&mut other, Some("localhost"));
    assert_eq!(client.hs.set_session(&session), Err(Error::TlsFail));

    // A ticket for another server name is not offered.
    let mut client = Endpoint::client(&mut ccfg, Some("quic.tech"));
    client.hs.set_session(&session).unwrap();
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_resumed());
}

#[test]
fn resumption_survives_a_config_rebuild() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    let session = first_connection(&mut ccfg, &mut scfg);
    let before = ccfg.client_config().unwrap();
    assert!(Arc::ptr_eq(&before, &ccfg.client_config().unwrap()));
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let after = ccfg.client_config().unwrap();
    assert!(!Arc::ptr_eq(&before, &after));

    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    client.hs.set_session(&session).unwrap();
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(client.hs.is_resumed());
}

/// Resumes from `session` with a fresh client of `ccfg`; whether the server resumed.
fn resumes(ccfg: &mut TlsConfig, scfg: &mut TlsConfig, session: &[u8]) -> bool {
    let mut client = Endpoint::client(ccfg, Some("localhost"));
    client.hs.set_session(session).unwrap();
    let mut server = Endpoint::server(scfg);
    run(&mut client, &mut server).unwrap();
    server.hs.is_resumed()
}

#[test]
fn server_session_cache_size_bounds_what_resumes() {
    // Two sessions remembered: a handshake stores two (rustls issues two tickets), so the
    // newer connection's resume and the older one's were forgotten. (Checking the older first
    // would store two more and forget the newer ones too.)
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    scfg.set_server_session_cache_size(2);
    let old = first_connection(&mut ccfg, &mut scfg);
    let new = first_connection(&mut ccfg, &mut scfg);
    assert!(resumes(&mut ccfg, &mut scfg, &new));
    assert!(!resumes(&mut ccfg, &mut scfg, &old));
    // The default remembers both.
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    let old = first_connection(&mut ccfg, &mut scfg);
    let new = first_connection(&mut ccfg, &mut scfg);
    assert!(resumes(&mut ccfg, &mut scfg, &new));
    assert!(resumes(&mut ccfg, &mut scfg, &old));
    // None remembered: the server issues no tickets at all.
    scfg.set_server_session_cache_size(0);
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(client.hs.session().is_none());
}

#[test]
fn chacha20_only_client_negotiates_chacha20() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    ccfg.set_cipher_suites(&[CipherSuite::TLS13_CHACHA20_POLY1305_SHA256])
        .unwrap();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    for hs in [&client.hs, &server.hs] {
        assert_eq!(
            hs.cipher_suite(),
            Some(CipherSuite::TLS13_CHACHA20_POLY1305_SHA256)
        );
    }
    // ChaCha20-Poly1305 has no practical confidentiality limit (RFC 9001 §6.6), AES-GCM has 2^23.
    let keys = &client.one_rtt.as_ref().unwrap().0;
    assert!(keys.local.packet.confidentiality_limit() > 1 << 23);
    assert_all_keys_match(&mut client, &mut server);

    // A default client against a ChaCha20-only server.
    let mut ccfg = client_cfg();
    scfg.set_cipher_suites(&[CipherSuite::TLS13_CHACHA20_POLY1305_SHA256])
        .unwrap();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert_eq!(
        client.hs.cipher_suite(),
        Some(CipherSuite::TLS13_CHACHA20_POLY1305_SHA256)
    );

    // No common suite: handshake_failure (40).
    let mut scfg2 = server_cfg();
    scfg2
        .set_cipher_suites(&[CipherSuite::TLS13_AES_256_GCM_SHA384])
        .unwrap();
    ccfg.set_cipher_suites(&[CipherSuite::TLS13_CHACHA20_POLY1305_SHA256])
        .unwrap();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg2);
    assert_eq!(
        run(&mut client, &mut server),
        Err(Failure::Server(Error::TlsAlert(40)))
    );
}

#[test]
fn cipher_suite_setting_is_validated() {
    let mut cfg = TlsConfig::new();
    assert_eq!(cfg.set_cipher_suites(&[]), Err(Error::TlsFail));
    assert_eq!(
        cfg.set_cipher_suites(&[CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]),
        Err(Error::TlsFail)
    );
    cfg.set_cipher_suites(&[
        CipherSuite::TLS13_AES_256_GCM_SHA384,
        CipherSuite::TLS13_AES_256_GCM_SHA384,
    ])
    .unwrap();
}

#[test]
fn data_must_arrive_in_the_expected_epoch() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    assert_eq!(
        server.hs.provide_data(Epoch::Handshake, b"\x01"),
        Err(Error::ProtocolViolation)
    );
    assert_eq!(
        server.hs.provide_data(Epoch::Application, b"\x01"),
        Err(Error::ProtocolViolation)
    );
    // The ClientHello.
    let Some(HandshakeEvent::Data { data: ch, .. }) = client.hs.next_event().unwrap() else {
        panic!("no ClientHello");
    };
    server.hs.provide_data(Epoch::Initial, &ch).unwrap();
    assert_eq!(server.hs.read_epoch(), Epoch::Handshake);
    // The server's flight: ServerHello (Initial), keys, the rest (Handshake), keys.
    let mut flight = Vec::new();
    while let Some(event) = server.hs.next_event().unwrap() {
        if let HandshakeEvent::Data { epoch, data } = event {
            flight.push((epoch, data));
        }
    }
    assert_eq!(flight.len(), 2);
    // 1-RTT keys are out, but the server still reads Handshake until the client's Finished.
    assert_eq!(server.hs.write_epoch(), Epoch::Application);
    assert_eq!(server.hs.read_epoch(), Epoch::Handshake);
    // More Initial data after the ClientHello would extend a finished epoch.
    assert_eq!(
        server.hs.provide_data(Epoch::Initial, b"\x01"),
        Err(Error::ProtocolViolation)
    );
    // The Handshake-epoch part of the flight delivered in Initial is refused before TLS sees it.
    assert_eq!(
        client.hs.provide_data(Epoch::Handshake, &flight[1].1),
        Err(Error::ProtocolViolation)
    );
    client
        .hs
        .provide_data(Epoch::Initial, &flight[0].1)
        .unwrap();
    assert_eq!(client.hs.read_epoch(), Epoch::Handshake);
    assert_eq!(
        client.hs.provide_data(Epoch::Initial, &flight[1].1),
        Err(Error::ProtocolViolation)
    );
    client
        .hs
        .provide_data(Epoch::Handshake, &flight[1].1)
        .unwrap();
    assert_eq!(client.hs.read_epoch(), Epoch::Application);
    assert!(!client.hs.is_handshaking());
    // Empty data is accepted in the current epoch.
    client.hs.provide_data(Epoch::Application, &[]).unwrap();
}

#[test]
fn garbage_client_hello_fails_with_an_alert() {
    let mut scfg = server_cfg();
    let mut server = Endpoint::server(&mut scfg);
    // A ClientHello header announcing 5 bytes of body that do not parse.
    let err = server
        .hs
        .provide_data(Epoch::Initial, b"\x01\x00\x00\x05\x03\x03\x00\x00\x00")
        .unwrap_err();
    assert!(matches!(err, Error::TlsAlert(_)), "{err:?}");
    assert_eq!(server.hs.provide_data(Epoch::Initial, b"\x01"), Err(err));
    // A message type a client never sends first.
    let mut server = Endpoint::server(&mut scfg);
    let err = server
        .hs
        .provide_data(Epoch::Initial, b"\x14\x00\x00\x01\x00")
        .unwrap_err();
    // unexpected_message (10).
    assert_eq!(err, Error::TlsAlert(10));
}

#[test]
fn partial_messages_are_buffered() {
    let (mut ccfg, mut scfg) = (client_cfg(), server_cfg());
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    let Some(HandshakeEvent::Data { data: ch, .. }) = client.hs.next_event().unwrap() else {
        panic!("no ClientHello");
    };
    for byte in ch.chunks(1) {
        assert_eq!(server.hs.read_epoch(), Epoch::Initial);
        server.hs.provide_data(Epoch::Initial, byte).unwrap();
    }
    assert_eq!(server.hs.read_epoch(), Epoch::Handshake);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_handshaking() && !server.hs.is_handshaking());
}

#[test]
fn client_certificates_when_the_server_verifies_peers() {
    let mut ccfg = client_cfg();
    ccfg.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
        .unwrap();
    ccfg.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    let mut scfg = server_cfg();
    scfg.load_verify_locations_from_file(&cert_path("rootca.crt"))
        .unwrap();
    scfg.verify_peer(true);
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(server.hs.peer_cert().is_some());

    // A client without a certificate is still accepted (the certificate is optional).
    let mut ccfg = client_cfg();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(server.hs.peer_cert().is_none());
}

#[test]
fn configuration_errors() {
    let mut cfg = TlsConfig::new();
    assert_eq!(
        cfg.load_cert_chain_from_pem_file("/nonexistent/cert.crt"),
        Err(Error::TlsFail)
    );
    assert_eq!(
        cfg.load_priv_key_from_pem_file(&cert_path("cert.crt")),
        Err(Error::TlsFail)
    );
    assert_eq!(
        cfg.load_cert_chain_from_pem_file(&cert_path("cert.key")),
        Err(Error::TlsFail)
    );
    assert_eq!(
        cfg.load_verify_locations_from_file(&cert_path("README.md")),
        Err(Error::TlsFail)
    );
    assert_eq!(
        cfg.load_verify_locations_from_directory("/nonexistent"),
        Err(Error::TlsFail)
    );
    // A server needs a certificate and a key.
    assert_eq!(
        Handshake::new_server(&mut cfg, Vec::new()).err(),
        Some(Error::TlsFail)
    );
    cfg.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
        .unwrap();
    assert_eq!(
        Handshake::new_server(&mut cfg, Vec::new()).err(),
        Some(Error::TlsFail)
    );
    // A key that does not match the certificate.
    cfg.load_priv_key_from_pem_file(&cert_path("rootca.key"))
        .unwrap();
    assert_eq!(
        Handshake::new_server(&mut cfg, Vec::new()).err(),
        Some(Error::TlsFail)
    );
    cfg.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    Handshake::new_server(&mut cfg, Vec::new()).unwrap();
    // A server that verifies clients needs CAs.
    cfg.verify_peer(true);
    assert_eq!(
        Handshake::new_server(&mut cfg, Vec::new()).err(),
        Some(Error::TlsFail)
    );

    assert_eq!(
        Handshake::new_client(&mut cfg, Some("not a name!"), Vec::new()).err(),
        Some(Error::TlsFail)
    );
    assert_eq!(cfg.set_application_protos(&[b""]), Err(Error::TlsFail));
    assert_eq!(
        cfg.set_application_protos(&[&[b'x'; 256]]),
        Err(Error::TlsFail)
    );
    cfg.set_application_protos_wire_format(b"\x02h3\x0ahq-interop")
        .unwrap();
    assert_eq!(
        cfg.application_protos(),
        [b"h3".to_vec(), b"hq-interop".to_vec()]
    );
    assert_eq!(
        cfg.set_application_protos_wire_format(b"\x05h3"),
        Err(Error::TlsFail)
    );
    assert_eq!(
        cfg.set_application_protos_wire_format(b"\x00"),
        Err(Error::TlsFail)
    );
}

#[test]
fn ca_directory_is_loaded() {
    let mut ccfg = TlsConfig::new();
    ccfg.load_verify_locations_from_directory(&cert_path(""))
        .unwrap();
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut scfg = server_cfg();
    let mut client = Endpoint::client(&mut ccfg, Some("quic.tech"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_handshaking());
}

#[test]
fn handshake_and_config_can_move_between_threads() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<Handshake>();
    send::<HandshakeEvent>();
    send_sync::<TlsConfig>();
}
