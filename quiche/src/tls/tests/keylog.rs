//! Key log lines (NSS format) of both sides.

use super::*;

fn key_log_lines_for_both_sides(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
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

fn key_log_of_lines_logged_before_set_keylog(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
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

fn separate_connections_log_to_separate_writers(backend: TlsBackend) {
    let (mut ccfg, mut scfg) = (client_cfg(backend), server_cfg(backend));
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

on_each_backend!(
    key_log_lines_for_both_sides,
    key_log_of_lines_logged_before_set_keylog,
    separate_connections_log_to_separate_writers,
);
