//! The peer's transport parameters as the application sees them: `peer_transport_params()`,
//! and the unknown ones kept by `Config::enable_track_unknown_transport_parameters`.

use super::{client_config, server_config};
use crate::testing::Pipe;
use crate::transport_params::UnknownTransportParameter;
use crate::Config;

/// Parameters no specification defines (one of them reserved, RFC 9000 §18.1), as the client
/// appends them to its own: ID, value.
const EXTRA: [(u64, &[u8]); 3] = [
    (0x1f2e, b"first"),
    (31 * 7 + 27, b""),
    (0x3a3a_3a3a, b"a longer value"),
];

/// A handshake whose client sends `EXTRA` after its parameters; returns the server's view.
fn server_view(server: &mut Config) -> Option<crate::UnknownTransportParameters> {
    let mut pipe = Pipe::new(&mut client_config(), server).unwrap();
    // The ClientHello is built at the client's first send: its parameters can still change.
    let mut raw = pipe.client.local_tp.encode_to_vec(false).unwrap();
    for (id, value) in EXTRA {
        let mut b = [0u8; 16];
        let mut o = octets::OctetsMut::with_slice(&mut b);
        o.put_varint(id).unwrap();
        o.put_varint(value.len() as u64).unwrap();
        let n = o.off();
        raw.extend_from_slice(&b[..n]);
        raw.extend_from_slice(value);
    }
    pipe.client.tls.set_transport_params(raw).unwrap();
    pipe.handshake().unwrap();
    let tp = pipe.server.peer_transport_params().unwrap();
    // The known ones are read as before.
    assert_eq!(tp.initial_max_streams_bidi, 100);
    tp.unknown_params.clone()
}

#[test]
fn unknown_parameters_are_kept_only_when_asked_for() {
    assert_eq!(server_view(&mut server_config()), None);

    let mut server = server_config();
    server.enable_track_unknown_transport_parameters(1024);
    let kept = server_view(&mut server).unwrap();
    let seen: Vec<(u64, &[u8])> = kept
        .into_iter()
        .map(|p| (p.id, p.value.as_slice()))
        .collect();
    assert_eq!(seen, EXTRA);
    let costs: usize = EXTRA.iter().map(|(_, v)| v.len() + 8).sum();
    assert_eq!(kept.capacity, 1024 - costs);
    let reserved: Vec<bool> = kept.into_iter().map(|p| p.is_reserved()).collect();
    assert_eq!(reserved, [false, true, false]);
}

#[test]
fn unknown_parameters_beyond_the_budget_are_dropped() {
    // 5 + 8 and then 0 + 8 fit in 22; 14 + 8 no longer does.
    let mut server = server_config();
    server.enable_track_unknown_transport_parameters(22);
    let kept = server_view(&mut server).unwrap();
    assert_eq!(
        kept.parameters,
        vec![
            UnknownTransportParameter::from(UnknownTransportParameter {
                id: EXTRA[0].0,
                value: EXTRA[0].1,
            }),
            UnknownTransportParameter {
                id: EXTRA[1].0,
                value: Vec::new(),
            },
        ]
    );
    assert_eq!(kept.capacity, 1);
}

#[test]
fn a_connection_is_shared_between_threads_as_in_quiche() {
    fn send_and_sync<T: Send + Sync>(_: &T) {}
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    send_and_sync(&pipe.client);
    // Readers on other threads, the connection borrowed shared (quiche's `Connection: Sync`).
    let conn = &pipe.client;
    let (limit, streams) = std::thread::scope(|s| {
        let a = s.spawn(|| conn.peer_transport_params().map(|tp| tp.initial_max_data));
        let b = s.spawn(|| conn.peer_streams_left_bidi());
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(limit, Some(16 << 20));
    assert_eq!(streams, 100);
}
