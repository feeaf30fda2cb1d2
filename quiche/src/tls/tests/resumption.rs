//! Resumption and 0-RTT: sessions, early data accepted and rejected.

use super::*;

/// The server's transport parameters on the resumed connection: the same limits, another
/// connection ID. (A server that lowered a limit would refuse 0-RTT on BoringSSL, whose early
/// data context covers the limits.)
const NEW_SERVER_TP: &[u8] = b"\x04\x02\x43\xe8\x0f\x04\x05\x06\x07\x08";

fn resumption_with_zero_rtt(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
    ccfg.enable_early_data();
    scfg.enable_early_data();
    let session = first_connection(&mut ccfg, &mut scfg);

    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    client.hs.set_session(&session).unwrap();
    // The server's transport parameters change between the two connections.
    let mut server =
        Endpoint::new(Handshake::new_server(&mut scfg, NEW_SERVER_TP.to_vec()).unwrap());

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
    assert_eq!(client.hs.peer_transport_params(), Some(NEW_SERVER_TP));
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

fn resumption_without_early_data_has_no_zero_rtt_keys(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
    ccfg.enable_early_data();
    let session = first_connection(&mut ccfg, &mut scfg);
    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    client.hs.set_session(&session).unwrap();
    client.hs.next_event().unwrap().unwrap();
    // The ticket does not allow early data: the server did not enable it.
    assert!(client.hs.zero_rtt_keys().is_none());
}

fn server_rejects_early_data(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
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

fn set_session_errors(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
    let session = first_connection(&mut ccfg, &mut scfg);

    let mut server = Endpoint::server(&mut scfg);
    assert_eq!(server.hs.set_session(&session), Err(Error::InvalidState));

    let mut client = Endpoint::client(&mut ccfg, Some("localhost"));
    assert_eq!(client.hs.set_session(b"not a session"), Err(Error::TlsFail));
    client.hs.next_event().unwrap();
    assert_eq!(client.hs.set_session(&session), Err(Error::InvalidState));
}

on_each_backend!(
    resumption_with_zero_rtt,
    resumption_without_early_data_has_no_zero_rtt_keys,
    server_rejects_early_data,
    set_session_errors,
);
