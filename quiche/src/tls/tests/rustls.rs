//! What only the rustls backend does: session handles (single-use per ticket, kept across
//! config rebuilds), the server's session cache, cipher suite selection.

use super::*;
use crate::tls::{CipherSuite, Inner};

const RUSTLS: TlsBackend = TlsBackend::Rustls;

#[test]
fn session_handle_is_single_use_per_ticket() {
    let (mut ccfg, mut scfg) = (client_cfg(RUSTLS), server_cfg(RUSTLS));
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
fn resumption_survives_a_config_rebuild() {
    let (mut ccfg, mut scfg) = (client_cfg(RUSTLS), server_cfg(RUSTLS));
    let session = first_connection(&mut ccfg, &mut scfg);
    let before = ccfg.rustls_mut().unwrap().client_config().unwrap();
    assert!(Arc::ptr_eq(
        &before,
        &ccfg.rustls_mut().unwrap().client_config().unwrap()
    ));
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let after = ccfg.rustls_mut().unwrap().client_config().unwrap();
    assert!(!Arc::ptr_eq(&before, &after));

    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    client.hs.set_session(&session).unwrap();
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(client.hs.is_resumed());
}

#[test]
fn server_session_cache_size_bounds_what_resumes() {
    // Two sessions remembered: a handshake stores two (rustls issues two tickets), so the
    // newer connection's resume and the older one's were forgotten. (Checking the older first
    // would store two more and forget the newer ones too.)
    let (mut ccfg, mut scfg) = (client_cfg(RUSTLS), server_cfg(RUSTLS));
    scfg.set_server_session_cache_size(2);
    let old = first_connection(&mut ccfg, &mut scfg);
    let new = first_connection(&mut ccfg, &mut scfg);
    assert!(resumes(&mut ccfg, &mut scfg, &new));
    assert!(!resumes(&mut ccfg, &mut scfg, &old));
    // The default remembers both.
    let (mut ccfg, mut scfg) = (client_cfg(RUSTLS), server_cfg(RUSTLS));
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
    let (mut ccfg, mut scfg) = (client_cfg(RUSTLS), server_cfg(RUSTLS));
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
    let mut ccfg = client_cfg(RUSTLS);
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
    let mut scfg2 = server_cfg(RUSTLS);
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
    let mut cfg = TlsConfig::with_backend(RUSTLS).unwrap();
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

/// rustls checks a server's certificate, key and client CAs when the server is made (BoringSSL
/// finds out at the handshake, as in quiche).
#[test]
fn a_server_needs_a_certificate_a_key_and_client_cas() {
    let mut cfg = TlsConfig::with_backend(RUSTLS).unwrap();
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
    cfg.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    Handshake::new_server(&mut cfg, Vec::new()).unwrap();
    // A server that verifies clients needs CAs.
    cfg.verify_peer(true);
    assert_eq!(
        Handshake::new_server(&mut cfg, Vec::new()).err(),
        Some(Error::TlsFail)
    );
}

/// A rustls session handle belongs to the config that made it, and its tickets are offered
/// only to the server name they came from.
#[test]
fn session_handles_are_bound_to_their_config_and_server_name() {
    let (mut ccfg, mut scfg) = (client_cfg(RUSTLS), server_cfg(RUSTLS));
    let session = first_connection(&mut ccfg, &mut scfg);
    let mut other = client_cfg(RUSTLS);
    let mut client = Endpoint::client(&mut other, Some("localhost"));
    assert_eq!(client.hs.set_session(&session), Err(Error::TlsFail));

    let mut client = Endpoint::client(&mut ccfg, Some("quic.tech"));
    client.hs.set_session(&session).unwrap();
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_resumed());
}

/// A server frees rustls's state once its handshake completed (about 4 KB per connection), and
/// still reports what the API asks after it; TLS bytes after that are refused as rustls would.
#[test]
fn a_completed_server_handshake_keeps_only_what_the_api_reports() {
    let mut ccfg = client_cfg(RUSTLS);
    ccfg.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
        .unwrap();
    ccfg.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    let mut scfg = server_cfg(RUSTLS);
    scfg.load_verify_locations_from_file(&cert_path("rootca.crt"))
        .unwrap();
    scfg.verify_peer(true);
    let session = first_connection(&mut ccfg, &mut scfg);
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    client.hs.set_session(&session).unwrap();
    let mut server = Endpoint::server(&mut scfg);
    let settled = |e: &Endpoint| match &e.hs.inner {
        Inner::Rustls(h) => h.is_settled(),
        #[allow(unreachable_patterns)]
        _ => unreachable!("a rustls endpoint"),
    };
    assert!(!settled(&server));
    run(&mut client, &mut server).unwrap();
    // The client stays: tickets may still come.
    assert!(settled(&server) && !settled(&client));
    assert!(!server.hs.is_handshaking());
    assert!(server.hs.is_resumed());
    assert_eq!(server.hs.alpn(), client.hs.alpn());
    assert!(server.hs.alpn().is_some());
    assert_eq!(server.hs.server_name(), Some("localhost"));
    assert_eq!(server.hs.cipher_suite(), client.hs.cipher_suite());
    assert_eq!(server.hs.peer_transport_params(), Some(CLIENT_TP));
    assert!(!server.hs.is_early_data_accepted());
    assert_eq!(server.hs.alert(), None);
    // The client's certificate, remembered in the session on resumption, as after a full
    // handshake.
    assert!(server.hs.peer_cert().is_some());
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(settled(&server));
    let chain = server.hs.peer_cert_chain().expect("the client's chain");
    assert_eq!(Some(chain[0]), server.hs.peer_cert());
    // A QUIC client sends no TLS message after its Finished (RFC 9001 §4.1.3).
    assert_eq!(
        server.hs.provide_data(Epoch::Application, &[4, 0, 0, 0]),
        Err(Error::TlsAlert(10))
    );
}
