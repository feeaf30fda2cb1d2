//! quiche 0.30's BoringSSL-only API (feature `boringssl`: quiche 0.30.0, whose default backend
//! it is, or ours built with `boringssl-boring-crate`): a server on the application's own
//! `SslContextBuilder` whose certificate selection callback tunes the connection through
//! `set_*_in_handshake`, a shared ticket key, a CA directory, the curves list, the `SslRef`
//! behind a connection, the peer's certificates, and a session resumed on a second
//! connection. Every line starts with `boringssl.`.

use std::sync::{Arc, Mutex};

use boring::ssl::{SslContextBuilder, SslFiletype, SslMethod, SslRef};

use crate::loopback::{pump, CidGen, Client, Server};
use crate::{quiche, Paths, Report};

const ALPN: &[&[u8]] = &[b"hq-interop"];

/// The transport settings both sides share.
fn settings(config: &mut quiche::Config) {
    config
        .set_application_protos(ALPN)
        .expect("set_application_protos");
    config.set_max_idle_timeout(5000);
    config.set_max_recv_udp_payload_size(1350);
    config.set_max_send_udp_payload_size(1350);
    config.set_initial_max_data(1_000_000);
    config.set_initial_max_stream_data_bidi_local(100_000);
    config.set_initial_max_stream_data_bidi_remote(100_000);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(100);
    config.enable_early_data();
}

/// What the certificate selection callback saw: one line per setter it called.
type CallbackLog = Arc<Mutex<Vec<String>>>;

fn server_config(paths: &Paths, log: &CallbackLog, r: &mut Report) -> quiche::Config {
    let mut builder = SslContextBuilder::new(SslMethod::tls()).expect("SslContextBuilder");
    builder
        .set_certificate_chain_file(paths.cert("cert.crt"))
        .expect("certificate chain");
    builder
        .set_private_key_file(paths.cert("cert.key"), SslFiletype::PEM)
        .expect("private key");
    let seen = Arc::clone(log);
    builder.set_select_certificate_callback(move |mut hello| {
        let ssl = hello.ssl_mut();
        let mut seen = seen.lock().expect("callback log");
        seen.push(format!(
            "set_initial_max_streams_bidi_in_handshake(7): {:?}",
            <quiche::Connection>::set_initial_max_streams_bidi_in_handshake(ssl, 7)
        ));
        seen.push(format!(
            "set_max_idle_timeout_in_handshake(4000): {:?}",
            <quiche::Connection>::set_max_idle_timeout_in_handshake(ssl, 4000)
        ));
        seen.push(format!(
            "set_cc_algorithm_in_handshake(Reno): {:?}",
            <quiche::Connection>::set_cc_algorithm_in_handshake(
                ssl,
                quiche::CongestionControlAlgorithm::Reno
            )
        ));
        seen.push(format!(
            "set_cc_algorithm_name_in_handshake(no-such-cc): {:?}",
            <quiche::Connection>::set_cc_algorithm_name_in_handshake(ssl, "no-such-cc")
        ));
        seen.push(format!(
            "set_pacing_in_handshake(true): {:?}",
            <quiche::Connection>::set_pacing_in_handshake(ssl, true)
        ));
        Ok(())
    });
    let mut config = quiche::Config::with_boring_ssl_ctx_builder(quiche::PROTOCOL_VERSION, builder)
        .expect("with_boring_ssl_ctx_builder");
    settings(&mut config);
    r.line(
        "boringssl.server.set_ticket_key(48 bytes)",
        format!("{:?}", config.set_ticket_key(&[0x42; 48])),
    );
    config
}

/// A directory in OpenSSL's hashed layout holding the test CA: `<subject hash>.0`.
fn ca_directory(paths: &Paths) -> String {
    let pem = std::fs::read(paths.cert("rootca.crt")).expect("read rootca.crt");
    let ca = boring::x509::X509::from_pem(&pem).expect("rootca.crt");
    let dir = paths.out.join("ca-dir");
    std::fs::create_dir_all(&dir).expect("create the CA directory");
    let name = format!("{:08x}.0", ca.subject_name_hash());
    std::fs::write(dir.join(name), pem).expect("write the CA");
    dir.to_string_lossy().into_owned()
}

fn client_config(paths: &Paths, r: &mut Report) -> quiche::Config {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("Config::new");
    settings(&mut config);
    r.line(
        "boringssl.client.load_verify_locations_from_directory",
        format!(
            "{:?}",
            config.load_verify_locations_from_directory(&ca_directory(paths))
        ),
    );
    config.verify_peer(true);
    r.line(
        "boringssl.client.set_curves_list(X25519:P-256)",
        format!("{:?}", config.set_curves_list("X25519:P-256")),
    );
    r.line(
        "boringssl.client.set_curves_list(no-such-curve)",
        format!("{:?}", config.set_curves_list("no-such-curve")),
    );
    config
}

/// The whole BoringSSL part.
pub fn run(paths: &Paths, r: &mut Report) {
    let log = CallbackLog::default();
    let mut server = Server::new(server_config(paths, &log, r));
    let mut config = client_config(paths, r);
    let mut cids = CidGen::new(0xb055);
    let mut client = Client::connect(server.local, &mut config, &mut cids);
    let established = pump(&mut client, &mut server, |c, s| {
        c.conn.is_established() && s.only().is_some_and(|sc| sc.conn.is_established())
    });
    r.line("boringssl.handshake.established", established);
    for line in log.lock().expect("callback log").iter() {
        r.line("boringssl.server.callback", line);
    }
    if !established {
        return;
    }
    peer(paths, &mut client, &mut server, r);
    let got_session = pump(&mut client, &mut server, |c, _| c.conn.session().is_some());
    r.line("boringssl.client.session.is_some", got_session);
    let session = client.conn.session().map(<[u8]>::to_vec);
    close(&mut client, &mut server);
    if let Some(session) = session {
        resume(&mut server, &mut config, &mut cids, &session, &log, r);
    }
}

/// What each side knows of the other, and the `SslRef` behind the connections.
fn peer(paths: &Paths, client: &mut Client, server: &mut Server, r: &mut Report) {
    let cert = client.conn.peer_cert().map(<[u8]>::to_vec);
    let leaf = std::fs::read(paths.cert("cert.crt")).expect("read cert.crt");
    let leaf = boring::x509::X509::from_pem(&leaf).and_then(|c| c.to_der());
    r.line("boringssl.client.peer_cert.is_some", cert.is_some());
    r.line(
        "boringssl.client.peer_cert is cert.crt's leaf",
        cert.as_deref() == leaf.ok().as_deref(),
    );
    r.line(
        "boringssl.client.peer_cert_chain.len",
        format!("{:?}", client.conn.peer_cert_chain().map(|c| c.len())),
    );
    r.line(
        "boringssl.client.server_name",
        format!("{:?}", client.conn.server_name()),
    );
    r.line(
        "boringssl.client.peer_streams_left_bidi (set in the callback)",
        client.conn.peer_streams_left_bidi(),
    );
    let ssl: &mut SslRef = client.conn.as_mut();
    r.line("boringssl.client.as_mut.version_str", ssl.version_str());
    r.line(
        "boringssl.client.as_mut.selected_alpn_protocol",
        format!(
            "{:?}",
            ssl.selected_alpn_protocol().map(String::from_utf8_lossy)
        ),
    );
    r.line(
        "boringssl.client.set_hystart_in_handshake (outside a callback)",
        format!(
            "{:?}",
            <quiche::Connection>::set_hystart_in_handshake(ssl, false)
        ),
    );
    let sc = server.only().expect("server connection");
    r.line(
        "boringssl.server.server_name",
        format!("{:?}", sc.conn.server_name()),
    );
    r.line(
        "boringssl.server.peer_cert (client sent none)",
        format!("{:?}", sc.conn.peer_cert()),
    );
    let ssl: &mut SslRef = sc.conn.as_mut();
    r.line(
        "boringssl.server.as_mut.servername",
        format!("{:?}", ssl.servername(boring::ssl::NameType::HOST_NAME)),
    );
}

/// Closes the client's connection and waits until the server's is gone too.
fn close(client: &mut Client, server: &mut Server) {
    let _ = client.conn.close(false, 0, b"");
    pump(client, server, |c, s| {
        c.conn.is_closed() && s.only().is_none_or(|sc| sc.conn.is_closed())
    });
    server.reap();
}

/// A second client resumes the session: no certificate this time.
fn resume(
    server: &mut Server,
    config: &mut quiche::Config,
    cids: &mut CidGen,
    session: &[u8],
    log: &CallbackLog,
    r: &mut Report,
) {
    log.lock().expect("callback log").clear();
    let mut set = None;
    let mut client = Client::connect_with(server.local, config, cids, |conn| {
        set = Some(conn.set_session(session));
    });
    r.line("boringssl.resume.client.set_session", format!("{set:?}"));
    let established = pump(&mut client, server, |c, s| {
        c.conn.is_established() && s.only().is_some_and(|sc| sc.conn.is_established())
    });
    r.line("boringssl.resume.established", established);
    r.line(
        "boringssl.resume.client.is_resumed",
        client.conn.is_resumed(),
    );
    r.line(
        "boringssl.resume.server.is_resumed",
        server.only().is_some_and(|sc| sc.conn.is_resumed()),
    );
    r.line(
        "boringssl.resume.callback ran",
        !log.lock().expect("callback log").is_empty(),
    );
    close(&mut client, server);
}
