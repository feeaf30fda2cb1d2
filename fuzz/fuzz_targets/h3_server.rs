//! HTTP/3 server fuzzing: on a pair established without TLS (`Pipe::fuzz_established`, the
//! same 1-RTT path as after a real handshake at a fraction of its cost), a client writes
//! arbitrary bytes on arbitrary streams (request streams, its control and QPACK streams, others)
//! and the server's `h3::Connection` polls and reads bodies. Whatever arrives may end in a stream
//! reset or a connection close, never in a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quiche::h3;
use quiche::testing::Pipe;

fn cert(name: &str) -> String {
    format!(
        "{}/../quiche/tests/certs/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn config(server: bool) -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(h3::APPLICATION_PROTOCOL).unwrap();
    c.set_initial_max_data(1 << 20);
    c.set_initial_max_stream_data_bidi_local(1 << 16);
    c.set_initial_max_stream_data_bidi_remote(1 << 16);
    c.set_initial_max_stream_data_uni(1 << 16);
    c.set_initial_max_streams_bidi(16);
    c.set_initial_max_streams_uni(16);
    if server {
        c.load_cert_chain_from_pem_file(&cert("cert.crt")).unwrap();
        c.load_priv_key_from_pem_file(&cert("cert.key")).unwrap();
    } else {
        c.verify_peer(false);
    }
    c
}

thread_local! {
    /// The configs of both sides, built once per process (certificate loading and TLS configs
    /// would cost more than a run).
    static CONFIGS: std::cell::RefCell<(quiche::Config, quiche::Config)> =
        std::cell::RefCell::new((config(false), config(true)));
}

/// Client stream IDs the input chooses from: requests and unidirectional streams.
const STREAMS: [u64; 10] = [0, 4, 8, 12, 2, 6, 10, 14, 18, 22];

fuzz_target!(|data: &[u8]| {
    let mut pipe = CONFIGS
        .with_borrow_mut(|(client, server)| Pipe::fuzz_established(client, server))
        .expect("the fuzzing configs make a pair");
    let mut h3_config = h3::Config::new().unwrap();
    h3_config.set_max_field_section_size(4096);
    let Ok(mut server) = h3::Connection::with_transport(&mut pipe.server, &h3_config) else {
        return;
    };
    let mut body = [0u8; 512];
    let mut rest = data;
    // Each chunk: a selector byte (stream and FIN), a length byte, that many bytes.
    while let [sel, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (chunk, after) = tail.split_at(n);
        rest = after;
        let id = STREAMS[usize::from(*sel & 0x7f) % STREAMS.len()];
        let _ = pipe.client.stream_send(id, chunk, sel & 0x80 != 0);
        for _ in 0..4 {
            // Only what happens soon: an idle timer 30 s away would end the connection.
            let soon = pipe
                .next_event()
                .is_some_and(|t| t <= pipe.now + std::time::Duration::from_secs(1));
            if !soon || pipe.step().is_err() {
                break;
            }
            while let Ok((stream, ev)) = server.poll(&mut pipe.server) {
                if ev == h3::Event::Data {
                    while server
                        .recv_body(&mut pipe.server, stream, &mut body)
                        .is_ok()
                    {}
                }
            }
        }
        if let Some(e) = pipe.server.local_error() {
            // The HTTP/3 layer closes with a code of its own: H3_GENERAL_PROTOCOL_ERROR is what
            // an unexpected transport error (a misuse of the stream API) becomes.
            assert!(
                !(e.is_app && e.error_code == h3::wire::GENERAL_PROTOCOL_ERROR),
                "h3 closed on a transport error"
            );
            return;
        }
        if pipe.server.is_closed() {
            return;
        }
    }
});
