//! Full handshakes: certificate verification, server names, ALPN, client certificates.

use ::rustls::pki_types::pem::PemObject;
use ::rustls::pki_types::CertificateDer;

use super::*;
use crate::tls::CipherSuite;

fn full_handshake_verified_against_test_ca(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
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
    assert_eq!(client.hs.peer_cert_chain().map(|c| c.len()), Some(1));
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

fn verify_peer_false_accepts_any_server_certificate(backend: TlsBackend) {
    let mut ccfg = TlsConfig::with_backend(backend).unwrap();
    ccfg.verify_peer(false);
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut scfg = server_cfg(backend);
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
fn a_client_verifies_only_when_asked_as_in_quiche(backend: TlsBackend) {
    let mut ccfg = TlsConfig::with_backend(backend).unwrap();
    ccfg.load_verify_locations_from_file(&cert_path("other-rootca.crt"))
        .unwrap();
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut scfg = server_cfg(backend);
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

fn unknown_ca_fails_with_alert(backend: TlsBackend) {
    let mut ccfg = TlsConfig::with_backend(backend).unwrap();
    ccfg.verify_peer(true);
    ccfg.load_verify_locations_from_file(&cert_path("other-rootca.crt"))
        .unwrap();
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut scfg = server_cfg(backend);
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

fn name_mismatch_fails_with_bad_certificate(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
    let mut client = Endpoint::client(&mut ccfg, Some("example.org"));
    let mut server = Endpoint::server(&mut scfg);
    // bad_certificate (42).
    assert_eq!(
        run(&mut client, &mut server),
        Err(Failure::Client(Error::TlsAlert(42)))
    );
}

fn ip_address_name_is_verified_but_not_sent(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
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

fn no_server_name_checks_the_chain_only(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
    let mut client = Endpoint::client(&mut ccfg, None);
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_handshaking());
    assert_eq!(client.hs.server_name(), None);
    assert_eq!(server.hs.server_name(), None);

    let mut ccfg = TlsConfig::with_backend(backend).unwrap();
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

fn alpn_mismatch_fails_with_no_application_protocol(backend: TlsBackend) {
    let mut ccfg = client_cfg(backend);
    ccfg.set_application_protos(&[b"doq"]).unwrap();
    let mut scfg = server_cfg(backend);
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

fn client_without_alpn_is_refused_by_a_server_with_alpn(backend: TlsBackend) {
    let mut ccfg = client_cfg(backend);
    ccfg.set_application_protos(&[]).unwrap();
    let mut scfg = server_cfg(backend);
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    // QUIC requires ALPN (RFC 9001 §8.1): a rustls server refuses such a client with
    // no_application_protocol, a BoringSSL client does not even send its ClientHello.
    let refused = match backend {
        TlsBackend::Rustls => Failure::Server(Error::TlsAlert(120)),
        #[cfg(feature = "boringssl-boring-crate")]
        TlsBackend::BoringSsl => Failure::Client(Error::TlsFail),
    };
    assert_eq!(run(&mut client, &mut server), Err(refused));
}

fn client_certificates_when_the_server_verifies_peers(backend: TlsBackend) {
    let mut ccfg = client_cfg(backend);
    ccfg.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
        .unwrap();
    ccfg.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    let mut scfg = server_cfg(backend);
    scfg.load_verify_locations_from_file(&cert_path("rootca.crt"))
        .unwrap();
    scfg.verify_peer(true);
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(server.hs.peer_cert().is_some());

    // A client without a certificate is still accepted (the certificate is optional).
    let mut ccfg = client_cfg(backend);
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(server.hs.peer_cert().is_none());
}

fn ca_directory_is_loaded(backend: TlsBackend) {
    let mut ccfg = TlsConfig::with_backend(backend).unwrap();
    ccfg.load_verify_locations_from_directory(&cert_path(""))
        .unwrap();
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut scfg = server_cfg(backend);
    let mut client = Endpoint::client(&mut ccfg, Some("quic.tech"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_handshaking());
}

/// OpenSSL-style group lists: a client and a server without a common group fail with
/// handshake_failure; one in common is enough.
fn curves_list_restricts_key_exchange(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
    scfg.set_curves_list("X25519").unwrap();
    ccfg.set_curves_list("P-384").unwrap();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    assert_eq!(
        run(&mut client, &mut server),
        Err(Failure::Server(Error::TlsAlert(40)))
    );
    ccfg.set_curves_list("P-384:X25519").unwrap();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_handshaking());
    for bad in ["", "X25519:nope", "P-521x"] {
        assert_eq!(ccfg.set_curves_list(bad), Err(Error::TlsFail), "{bad}");
    }
}

on_each_backend!(
    full_handshake_verified_against_test_ca,
    verify_peer_false_accepts_any_server_certificate,
    a_client_verifies_only_when_asked_as_in_quiche,
    unknown_ca_fails_with_alert,
    name_mismatch_fails_with_bad_certificate,
    ip_address_name_is_verified_but_not_sent,
    no_server_name_checks_the_chain_only,
    alpn_mismatch_fails_with_no_application_protocol,
    client_without_alpn_is_refused_by_a_server_with_alpn,
    client_certificates_when_the_server_verifies_peers,
    ca_directory_is_loaded,
    curves_list_restricts_key_exchange,
);
