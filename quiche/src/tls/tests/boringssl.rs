//! What only the BoringSSL backend does: sessions that survive their config (as a session file
//! survives its process), shared ticket keys, an application's own `SSL_CTX` and `SSL`, and a
//! CA directory in OpenSSL's hashed layout. Also rustls against BoringSSL, both ways.

use boring::ssl::{SslContextBuilder, SslMethod, SslVerifyMode};

use super::*;

const BORINGSSL: TlsBackend = TlsBackend::BoringSsl;

/// A session is bytes: a client of a brand-new config (as in another process) resumes it with
/// 0-RTT, and learns the server's remembered transport parameters from it.
#[test]
fn a_session_resumes_from_another_config_with_zero_rtt() {
    let (mut ccfg, mut scfg) = (client_cfg(BORINGSSL), server_cfg(BORINGSSL));
    ccfg.enable_early_data();
    scfg.enable_early_data();
    let session = first_connection(&mut ccfg, &mut scfg);
    // quiche's layout: a length, BoringSSL's session, a length, the server's parameters.
    let len = u64::from_be_bytes(session[..8].try_into().unwrap()) as usize;
    assert_eq!(&session[8 + len + 8..], SERVER_TP);

    let mut fresh = client_cfg(BORINGSSL);
    fresh.enable_early_data();
    let mut client = Endpoint::client(&mut fresh, Some("localhost"));
    client.hs.set_session(&session).unwrap();
    let mut server = Endpoint::server(&mut scfg);
    let Some(HandshakeEvent::Data { epoch, data }) = client.hs.next_event().unwrap() else {
        panic!("no ClientHello");
    };
    assert!(client.hs.zero_rtt_keys().is_some());
    assert_eq!(client.hs.peer_transport_params(), Some(SERVER_TP));
    server.hs.provide_data(epoch, &data).unwrap();
    run(&mut client, &mut server).unwrap();
    assert!(client.hs.is_resumed() && server.hs.is_resumed());
    assert!(client.hs.is_early_data_accepted() && server.hs.is_early_data_accepted());
    // Not single-use: BoringSSL clients may offer a ticket again (RFC 8446 §C.4 discourages,
    // quiche allows it), and the server, with stateless tickets, resumes it.
    let mut again = Endpoint::client(&mut fresh, Some("localhost"));
    again.hs.set_session(&session).unwrap();
    let mut server = Endpoint::server(&mut scfg);
    run(&mut again, &mut server).unwrap();
    assert!(again.hs.is_resumed());
}

/// Servers that share a ticket key resume each other's sessions; with another key, or the
/// random default, they do not.
#[test]
fn servers_sharing_a_ticket_key_resume_each_others_sessions() {
    let key = [0x5au8; 48];
    let mut ccfg = client_cfg(BORINGSSL);
    let mut first = server_cfg(BORINGSSL);
    first.set_ticket_key(&key).unwrap();
    let session = first_connection(&mut ccfg, &mut first);

    let mut second = server_cfg(BORINGSSL);
    second.set_ticket_key(&key).unwrap();
    assert!(resumes(&mut ccfg, &mut second, &session));
    let mut other = server_cfg(BORINGSSL);
    other.set_ticket_key(&[0xa5; 48]).unwrap();
    assert!(!resumes(&mut ccfg, &mut other, &session));
    assert!(!resumes(&mut ccfg, &mut server_cfg(BORINGSSL), &session));
    // BoringSSL's ticket keys are 48 bytes.
    assert_eq!(first.set_ticket_key(&key[..32]), Err(Error::TlsFail));
}

#[test]
fn set_session_refuses_what_is_not_a_boringssl_session() {
    let mut ccfg = client_cfg(BORINGSSL);
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut junk = 5u64.to_be_bytes().to_vec();
    junk.extend_from_slice(b"junk!");
    junk.extend_from_slice(&0u64.to_be_bytes());
    for bytes in [&b"not a session"[..], &junk, b""] {
        assert_eq!(client.hs.set_session(bytes), Err(Error::TlsFail));
    }
    // A rustls session handle is not one either.
    let (mut rc, mut rs) = (
        client_cfg(TlsBackend::Rustls),
        server_cfg(TlsBackend::Rustls),
    );
    let handle = first_connection(&mut rc, &mut rs);
    assert_eq!(client.hs.set_session(&handle), Err(Error::TlsFail));
    // Still a full handshake afterwards.
    let mut server = Endpoint::server(&mut server_cfg(BORINGSSL));
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_resumed());
}

/// BoringSSL refuses to build a QUIC ClientHello that offers no application protocol (its
/// `NO_APPLICATION_PROTOCOL`; RFC 9001 §8.1 makes ALPN QUIC's way to agree on one): the
/// client fails at its first flight with `TlsFail`, as quiche 0.30's does at its first send,
/// and logs why.
#[test]
fn a_client_without_alpn_fails_its_first_flight() {
    let mut ccfg = TlsConfig::with_backend(BORINGSSL).unwrap();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    assert!(matches!(client.hs.next_event(), Err(Error::TlsFail)));
    // The error sticks.
    assert!(matches!(client.hs.next_event(), Err(Error::TlsFail)));
    // With a protocol, the same config's next client gets its ClientHello out.
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    assert!(matches!(
        client.hs.next_event(),
        Ok(Some(HandshakeEvent::Data { .. }))
    ));
}

/// An application's own context (quiche's `Config::with_boring_ssl_ctx_builder`): its
/// verification settings stay, QUIC's needs are added.
#[test]
fn an_applications_context_builder_keeps_its_settings() {
    let mut builder = SslContextBuilder::new(SslMethod::tls()).unwrap();
    builder.set_verify(SslVerifyMode::PEER);
    builder.set_ca_file(cert_path("rootca.crt")).unwrap();
    let mut ccfg = TlsConfig::with_boring_ssl_ctx_builder(builder).unwrap();
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut scfg = server_cfg(BORINGSSL);
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert!(!client.hs.is_handshaking());

    // The same settings refuse a server certificate for another name.
    let mut client = Endpoint::client(&mut ccfg, Some("example.org"));
    let mut server = Endpoint::server(&mut scfg);
    assert!(matches!(
        run(&mut client, &mut server),
        Err(Failure::Client(Error::TlsAlert(_)))
    ));
}

/// An application's configured `SSL` (quiche's `quiche_conn_new_with_tls`, which curl uses):
/// its context decides verification and ALPN.
#[test]
fn an_applications_ssl_runs_the_handshake() {
    let mut builder = SslContextBuilder::new(SslMethod::tls()).unwrap();
    builder.set_verify(SslVerifyMode::PEER);
    builder.set_ca_file(cert_path("rootca.crt")).unwrap();
    builder.set_alpn_protos(b"\x02h3").unwrap();
    let ctx = builder.build();
    let mut ssl = boring::ssl::Ssl::new(&ctx).unwrap();
    ssl.set_hostname("localhost").unwrap();
    ssl.param_mut().set_host("localhost").unwrap();
    let hs = Handshake::with_ssl(ssl, false, CLIENT_TP.to_vec()).unwrap();
    let mut client = Endpoint::new(hs);
    let mut scfg = server_cfg(BORINGSSL);
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert_eq!(client.hs.alpn(), Some(&b"h3"[..]));
    assert_eq!(client.hs.peer_transport_params(), Some(SERVER_TP));
    assert_eq!(server.hs.server_name(), Some("localhost"));
    assert_all_keys_match(&mut client, &mut server);
    // The application can still reach its SSL.
    let ssl = client.hs.boringssl_mut().unwrap();
    assert_eq!(ssl.selected_alpn_protocol(), Some(&b"h3"[..]));
}

/// OpenSSL's CA directory layout: certificates found by subject hash (`<hash>.0`).
#[test]
fn ca_directory_in_hashed_layout() {
    let dir = std::env::temp_dir().join(format!("quiche-ca-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pem = std::fs::read(cert_path("rootca.crt")).unwrap();
    let root = boring::x509::X509::from_pem(&pem).unwrap();
    let hash = root.subject_name_hash();
    std::fs::write(dir.join(format!("{hash:08x}.0")), &pem).unwrap();

    let mut ccfg = TlsConfig::with_backend(BORINGSSL).unwrap();
    ccfg.verify_peer(true);
    ccfg.load_verify_locations_from_directory(dir.to_str().unwrap())
        .unwrap();
    ccfg.set_application_protos(&[b"h3"]).unwrap();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut server_cfg(BORINGSSL));
    let result = run(&mut client, &mut server);
    std::fs::remove_dir_all(&dir).unwrap();
    result.unwrap();
    assert!(!client.hs.is_handshaking());
}

/// A handshake and a 0-RTT resumption between a client on `client` and a server on `server`.
fn across_backends(client_backend: TlsBackend, server_backend: TlsBackend) {
    let mut ccfg = client_cfg(client_backend);
    let mut scfg = server_cfg(server_backend);
    ccfg.enable_early_data();
    scfg.enable_early_data();
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    let mut server = Endpoint::server(&mut scfg);
    run(&mut client, &mut server).unwrap();
    assert_eq!(client.hs.cipher_suite(), server.hs.cipher_suite());
    assert_all_keys_match(&mut client, &mut server);
    let session = client.hs.session().expect("a ticket").to_vec();

    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    client.hs.set_session(&session).unwrap();
    let mut server = Endpoint::server(&mut scfg);
    let Some(HandshakeEvent::Data { epoch, data }) = client.hs.next_event().unwrap() else {
        panic!("no ClientHello");
    };
    let client_0rtt = client.hs.zero_rtt_keys().expect("client 0-RTT keys");
    server.hs.provide_data(epoch, &data).unwrap();
    assert_keys_match(
        &client_0rtt,
        &server.hs.zero_rtt_keys().expect("server 0-RTT keys"),
    );
    run(&mut client, &mut server).unwrap();
    assert!(client.hs.is_resumed() && client.hs.is_early_data_accepted());
    assert_all_keys_match(&mut client, &mut server);
}

#[test]
fn rustls_client_against_boringssl_server() {
    across_backends(TlsBackend::Rustls, BORINGSSL);
}

#[test]
fn boringssl_client_against_rustls_server() {
    across_backends(BORINGSSL, TlsBackend::Rustls);
}
