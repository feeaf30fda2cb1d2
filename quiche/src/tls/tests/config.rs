//! Configuration errors, and what may move between threads.

use super::*;

fn configuration_errors(backend: TlsBackend) {
    let mut cfg = TlsConfig::with_backend(backend).unwrap();
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
    // A key that does not match the certificate fails when it is loaded (BoringSSL) or when
    // a server is made with it (rustls).
    cfg.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
        .unwrap();
    let mismatch = cfg
        .load_priv_key_from_pem_file(&cert_path("rootca.key"))
        .and_then(|()| Handshake::new_server(&mut cfg, Vec::new()).map(drop));
    assert_eq!(mismatch, Err(Error::TlsFail));
    cfg.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    Handshake::new_server(&mut cfg, Vec::new()).unwrap();

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
fn handshake_and_config_can_move_between_threads() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<Handshake>();
    send::<HandshakeEvent>();
    send_sync::<TlsConfig>();
}

on_each_backend!(configuration_errors,);
