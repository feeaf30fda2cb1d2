//! `Config::grease` (quiche's transport config switch) decides whether HTTP/3 sends its
//! reserved setting, frame and stream.

use super::{transport_config, Config, Connection, H3Pipe};
use crate::testing::Pipe;

/// An HTTP/3 pipe whose server config has GREASE `on` or off.
fn pipe(on: bool) -> H3Pipe {
    let mut server = transport_config(true);
    server.grease(on);
    let mut pipe = Pipe::new(&mut transport_config(false), &mut server).unwrap();
    pipe.handshake().unwrap();
    let h3 = Config::new().unwrap();
    let client = Connection::with_transport(&mut pipe.client, &h3).unwrap();
    let server = Connection::with_transport(&mut pipe.server, &h3).unwrap();
    let mut p = H3Pipe {
        pipe,
        client,
        server,
    };
    // Let SETTINGS cross and be read.
    p.advance();
    let _ = p.client.poll(&mut p.pipe.client);
    let _ = p.server.poll(&mut p.pipe.server);
    p.advance();
    p
}

fn is_reserved(id: u64) -> bool {
    id >= 0x21 && (id - 0x21) % 0x1f == 0
}

#[test]
fn grease_on_sends_a_reserved_setting_and_stream() {
    let p = pipe(true);
    assert!(p.pipe.server.grease_enabled());
    let settings = p.client.peer_settings_raw().expect("SETTINGS arrived");
    assert!(
        settings.iter().any(|(id, _)| is_reserved(*id)),
        "{settings:?}"
    );
    // Control, QPACK encoder and decoder, and the reserved stream, of the client's 10.
    assert_eq!(p.pipe.server.peer_streams_left_uni(), 6);
    // The client still greases (its own config is on by default).
    let settings = p.server.peer_settings_raw().expect("SETTINGS arrived");
    assert!(settings.iter().any(|(id, _)| is_reserved(*id)));
}

#[test]
fn grease_off_sends_none() {
    let mut p = pipe(false);
    assert!(!p.pipe.server.grease_enabled());
    let settings = p.client.peer_settings_raw().expect("SETTINGS arrived");
    assert!(
        !settings.iter().any(|(id, _)| is_reserved(*id)),
        "{settings:?}"
    );
    assert_eq!(p.pipe.server.peer_streams_left_uni(), 7);
    // A request still works.
    let id = p
        .client
        .send_request(&mut p.pipe.client, &super::get("/"), true)
        .unwrap();
    let ev = p.server_events(1);
    assert!(
        matches!(&ev[0], (i, crate::h3::Event::Headers { .. }) if *i == id),
        "{ev:?}"
    );
}
