//! CRYPTO data by epoch: what TLS accepts when, malformed and fragmented messages.

use super::*;

fn data_must_arrive_in_the_expected_epoch(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
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

fn garbage_client_hello_fails_with_an_alert(backend: TlsBackend) {
    let mut scfg = server_cfg(backend);
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

fn partial_messages_are_buffered(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
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

on_each_backend!(
    data_must_arrive_in_the_expected_epoch,
    garbage_client_hello_fails_with_an_alert,
    partial_messages_are_buffered,
);
