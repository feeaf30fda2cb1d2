//! quiche's `Connection::set_*_in_handshake` (feature `boringssl-boring-crate`): a server's
//! BoringSSL certificate selection callback tunes the connection being handshaken, and the
//! connection runs with the new settings; outside a callback the setters fail.

use boring::ssl::{SslContextBuilder, SslFiletype, SslMethod};

use super::{cert_path, client_config};
use crate::cc::CongestionControl;
use crate::testing::Pipe;
use crate::{Config, CongestionControlAlgorithm, Connection, Error};

/// A server config on the application's own BoringSSL context, whose certificate selection
/// callback (which runs on the ClientHello, before the server's first flight) calls the
/// setters when `tune` is set.
fn server_config(tune: bool) -> Config {
    let mut builder = SslContextBuilder::new(SslMethod::tls()).unwrap();
    builder
        .set_certificate_chain_file(cert_path("cert.crt"))
        .unwrap();
    builder
        .set_private_key_file(cert_path("cert.key"), SslFiletype::PEM)
        .unwrap();
    if tune {
        builder.set_select_certificate_callback(|mut hello| {
            let ssl = hello.ssl_mut();
            let tuned =
                <Connection>::set_cc_algorithm_in_handshake(ssl, CongestionControlAlgorithm::Reno)
                    .and(<Connection>::set_initial_congestion_window_packets_in_handshake(ssl, 50))
                    .and(<Connection>::set_pacing_in_handshake(ssl, false))
                    .and(<Connection>::set_max_idle_timeout_in_handshake(ssl, 5_000))
                    .and(<Connection>::set_initial_max_streams_bidi_in_handshake(
                        ssl, 2,
                    ))
                    .and(<Connection>::set_discover_pmtu_in_handshake(ssl, false, 2));
            assert_eq!(tuned, Ok(()));
            Ok(())
        });
    }
    let mut c = Config::with_boring_ssl_ctx_builder(crate::PROTOCOL_VERSION, builder).unwrap();
    c.set_application_protos(&[b"hq-interop"]).unwrap();
    c.set_max_idle_timeout(30_000);
    c.set_initial_max_data(1 << 20);
    c.set_initial_max_stream_data_bidi_local(1 << 20);
    c.set_initial_max_stream_data_bidi_remote(1 << 20);
    c.set_initial_max_streams_bidi(100);
    c
}

#[test]
fn certificate_selection_tunes_the_connection() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config(true)).unwrap();
    pipe.handshake().unwrap();

    // Recovery: the controller, its initial window and the pacer are the callback's.
    let sender = pipe.server.sender();
    assert_eq!(sender.controller().name(), "reno");
    assert!(
        sender.cwnd() >= 50 * sender.max_datagram_size(),
        "cwnd {}",
        sender.cwnd()
    );
    assert!(!sender.pacer().enabled());
    assert!(!pipe.server.sender().pmtud().is_enabled());

    // Transport parameters: sent to the client as changed, and enforced by the server.
    let tp = pipe.client.peer_transport_params().unwrap();
    assert_eq!(tp.max_idle_timeout, 5_000);
    assert_eq!(tp.initial_max_streams_bidi, 2);
    assert_eq!(pipe.server.local_tp.max_idle_timeout, 5_000);
    assert_eq!(pipe.server.streams.local_max_streams(true), 2);
    assert_eq!(pipe.client.stream_send(0, b"a", false), Ok(1));
    assert_eq!(pipe.client.stream_send(4, b"b", false), Ok(1));
    assert_eq!(
        pipe.client.stream_send(8, b"c", false),
        Err(Error::StreamLimit)
    );

    // Outside a handshake callback the setters change nothing.
    let ssl: &mut boring::ssl::SslRef = pipe.server.as_mut();
    assert_eq!(
        <Connection>::set_pacing_in_handshake(ssl, true),
        Err(Error::TlsFail)
    );
    assert_eq!(
        <Connection>::set_initial_max_streams_bidi_in_handshake(ssl, 9),
        Err(Error::TlsFail)
    );
    assert!(!pipe.server.sender().pacer().enabled());
}

/// The same server without the callback keeps its config's settings.
#[test]
fn without_the_callback_the_config_decides() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config(false)).unwrap();
    pipe.handshake().unwrap();
    let sender = pipe.server.sender();
    assert_eq!(sender.controller().name(), "cubic");
    assert!(sender.cwnd() < 50 * sender.max_datagram_size());
    assert!(sender.pacer().enabled());
    assert!(pipe.server.sender().pmtud().is_enabled());
    let tp = pipe.client.peer_transport_params().unwrap();
    assert_eq!(tp.max_idle_timeout, 30_000);
    assert_eq!(tp.initial_max_streams_bidi, 100);
}

/// A session resumed on a server whose callback tunes again: both ends complete the
/// handshake.
#[test]
fn resumption_with_the_callback_completes() {
    let mut server = server_config(true);
    let mut client = client_config();
    client.enable_early_data();
    server.enable_early_data();
    let mut first = Pipe::new(&mut client, &mut server).unwrap();
    first.handshake().unwrap();
    first
        .run_until(std::time::Duration::from_secs(5), |p| {
            p.client.session().is_some()
        })
        .unwrap();
    let session = first.client.session().unwrap().to_vec();
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    pipe.client.set_session(&session).unwrap();
    pipe.handshake().unwrap();
    assert!(pipe.client.is_resumed() && pipe.server.is_resumed());
    assert!(pipe.client.is_established() && pipe.server.is_established());
}
