//! HTTP/3 over the in-memory pipe: requests and responses with bodies, trailers, interim
//! responses, many streams, GOAWAY, priorities, QPACK blocking, and the error code each
//! protocol violation gets.

use super::frame::{self, put_frame, put_varint};
use super::*;
use crate::testing::Pipe;

mod buf_calls;
mod grease;
mod validation;

/// One step of the pipe, unless the next event is over half a second away (an idle timer):
/// whether something happened.
fn quiet_step(pipe: &mut Pipe) -> bool {
    pipe.flush().unwrap();
    pipe.deliver();
    match pipe.next_event() {
        Some(t) if t <= pipe.now + std::time::Duration::from_millis(500) => pipe.step().unwrap(),
        _ => false,
    }
}

fn cert(name: &str) -> String {
    format!("{}/tests/certs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn transport_config(server: bool) -> crate::Config {
    let mut c = crate::Config::new(crate::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(APPLICATION_PROTOCOL).unwrap();
    c.set_max_idle_timeout(30_000);
    c.set_initial_max_data(10 << 20);
    c.set_initial_max_stream_data_bidi_local(1 << 20);
    c.set_initial_max_stream_data_bidi_remote(1 << 20);
    c.set_initial_max_stream_data_uni(1 << 20);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(10);
    c.enable_dgram(true, 100, 100);
    if server {
        c.load_cert_chain_from_pem_file(&cert("cert.crt")).unwrap();
        c.load_priv_key_from_pem_file(&cert("cert.key")).unwrap();
    } else {
        c.verify_peer(false);
    }
    c
}

/// Two HTTP/3 endpoints on a pipe.
struct H3Pipe {
    pipe: Pipe,
    client: Connection,
    server: Connection,
}

impl H3Pipe {
    fn new() -> H3Pipe {
        Self::with_configs(&Config::new().unwrap(), &Config::new().unwrap())
    }

    fn with_configs(client: &Config, server: &Config) -> H3Pipe {
        let mut pipe =
            Pipe::new(&mut transport_config(false), &mut transport_config(true)).unwrap();
        pipe.handshake().unwrap();
        let client = Connection::with_transport(&mut pipe.client, client).unwrap();
        let server = Connection::with_transport(&mut pipe.server, server).unwrap();
        let mut p = H3Pipe {
            pipe,
            client,
            server,
        };
        // Let SETTINGS cross and be read, so that QPACK knows the peer's table.
        p.advance();
        assert_eq!(p.client.poll(&mut p.pipe.client), Err(Error::Done));
        assert_eq!(p.server.poll(&mut p.pipe.server), Err(Error::Done));
        p.advance();
        p
    }

    /// Moves the pipe forward a few steps.
    fn advance(&mut self) {
        for _ in 0..20 {
            if !quiet_step(&mut self.pipe) {
                break;
            }
        }
    }

    /// One side's events until `n` are collected or the pipe goes quiet.
    fn events(&mut self, server: bool, n: usize) -> Vec<(u64, Event)> {
        let mut events = Vec::new();
        for _ in 0..200 {
            let (h3, conn) = if server {
                (&mut self.server, &mut self.pipe.server)
            } else {
                (&mut self.client, &mut self.pipe.client)
            };
            while let Ok(ev) = h3.poll(conn) {
                events.push(ev);
            }
            if events.len() >= n || !quiet_step(&mut self.pipe) {
                break;
            }
        }
        events
    }

    fn server_events(&mut self, n: usize) -> Vec<(u64, Event)> {
        self.events(true, n)
    }

    fn client_events(&mut self, n: usize) -> Vec<(u64, Event)> {
        self.events(false, n)
    }

    /// The order in which the client's responses on `ids` finished (their bodies read as
    /// they come).
    fn read_bodies_in_order(&mut self, ids: &[u64]) -> Vec<u64> {
        let mut order = Vec::new();
        let mut buf = [0u8; 1000];
        for _ in 0..10_000 {
            while let Ok((sid, ev)) = self.client.poll(&mut self.pipe.client) {
                if ev == Event::Finished {
                    order.push(sid);
                }
            }
            for &id in ids {
                while self
                    .client
                    .recv_body(&mut self.pipe.client, id, &mut buf)
                    .is_ok()
                {}
            }
            if ids.iter().all(|id| order.contains(id)) {
                return order;
            }
            if !quiet_step(&mut self.pipe) {
                break;
            }
        }
        panic!("not all finished: {order:?}");
    }

    /// The client's response bodies of `ids`, read as their events come, until all finished.
    fn read_bodies(&mut self, ids: &[u64]) -> std::collections::HashMap<u64, Vec<u8>> {
        let mut bodies: std::collections::HashMap<u64, Vec<u8>> = Default::default();
        let mut finished = std::collections::HashSet::new();
        let mut buf = [0u8; 1000];
        for _ in 0..10_000 {
            while let Ok((sid, ev)) = self.client.poll(&mut self.pipe.client) {
                match ev {
                    Event::Finished => {
                        finished.insert(sid);
                    }
                    Event::Data => {
                        while let Ok(n) =
                            self.client.recv_body(&mut self.pipe.client, sid, &mut buf)
                        {
                            bodies.entry(sid).or_default().extend_from_slice(&buf[..n]);
                        }
                    }
                    _ => {}
                }
            }
            if ids.iter().all(|id| finished.contains(id)) {
                return bodies;
            }
            if !quiet_step(&mut self.pipe) {
                break;
            }
        }
        panic!("not all finished: {finished:?}");
    }
}

fn hdrs(list: &[(&str, &str)]) -> Vec<Header> {
    list.iter()
        .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
        .collect()
}

fn get(path: &str) -> Vec<Header> {
    hdrs(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "quic.tech"),
        (":path", path),
        ("user-agent", "quiche-test"),
    ])
}

fn body_of(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn get_with_response_body() {
    let mut p = H3Pipe::new();
    let id = p
        .client
        .send_request(&mut p.pipe.client, &get("/index.html"), true)
        .unwrap();
    assert_eq!(id, 0);
    let ev = p.server_events(2);
    assert!(
        matches!(&ev[0], (0, Event::Headers { list, more_frames: false }) if list == &get("/index.html")),
        "{ev:?}"
    );
    assert_eq!(ev[1], (0, Event::Finished));
    let body = body_of(100_000);
    let resp = hdrs(&[(":status", "200"), ("content-length", "100000")]);
    p.server
        .send_response(&mut p.pipe.server, id, &resp, false)
        .unwrap();
    let mut sent = 0;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut finished = false;
    for _ in 0..10_000 {
        if sent < body.len() {
            match p
                .server
                .send_body(&mut p.pipe.server, id, &body[sent..], true)
            {
                Ok(n) => sent += n,
                Err(Error::Done) => {}
                Err(e) => panic!("{e:?}"),
            }
        }
        while let Ok((sid, ev)) = p.client.poll(&mut p.pipe.client) {
            assert_eq!(sid, id);
            match ev {
                Event::Headers { list, more_frames } => {
                    assert_eq!(list, resp);
                    assert!(more_frames);
                }
                Event::Data => {}
                Event::Finished => finished = true,
                other => panic!("{other:?}"),
            }
        }
        while let Ok(n) = p.client.recv_body(&mut p.pipe.client, id, &mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        if finished {
            break;
        }
        quiet_step(&mut p.pipe);
    }
    assert!(finished);
    assert_eq!(got, body);
    // The QPACK streams carried instructions both ways (dynamic table on by default).
    assert!(p.server.stats().qpack_encoder_stream_recv_bytes > 0);
}

#[test]
fn post_with_body_and_trailers_then_interim_and_final_response() {
    let mut p = H3Pipe::new();
    let req = hdrs(&[
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "a.example"),
        (":path", "/up"),
        ("content-length", "5000"),
    ]);
    let id = p
        .client
        .send_request(&mut p.pipe.client, &req, false)
        .unwrap();
    let body = body_of(5000);
    assert_eq!(
        p.client.send_body(&mut p.pipe.client, id, &body, false),
        Ok(5000)
    );
    let trailers = hdrs(&[("x-checksum", "abc")]);
    p.client
        .send_additional_headers(&mut p.pipe.client, id, &trailers, true, true)
        .unwrap();

    let mut got = Vec::new();
    let mut headers = Vec::new();
    let mut buf = [0u8; 700];
    let mut finished = false;
    for _ in 0..500 {
        while let Ok((_, ev)) = p.server.poll(&mut p.pipe.server) {
            match ev {
                Event::Headers { list, .. } => headers.push(list),
                Event::Finished => finished = true,
                Event::Data => {}
                other => panic!("{other:?}"),
            }
            while let Ok(n) = p.server.recv_body(&mut p.pipe.server, id, &mut buf) {
                got.extend_from_slice(&buf[..n]);
            }
        }
        while let Ok(n) = p.server.recv_body(&mut p.pipe.server, id, &mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        if finished {
            break;
        }
        quiet_step(&mut p.pipe);
    }
    assert!(finished);
    assert_eq!(got, body);
    assert_eq!(headers, [req, trailers]);

    // 103 Early Hints, then the final response.
    let early = hdrs(&[(":status", "103"), ("link", "</style.css>; rel=preload")]);
    p.server
        .send_additional_headers(&mut p.pipe.server, id, &early, false, false)
        .unwrap();
    let fin = hdrs(&[(":status", "204")]);
    p.server
        .send_response(&mut p.pipe.server, id, &fin, true)
        .unwrap();
    let ev = p.client_events(3);
    assert!(
        matches!(&ev[0], (0, Event::Headers { list, .. }) if list == &early),
        "{ev:?}"
    );
    assert!(
        matches!(&ev[1], (0, Event::Headers { list, more_frames: false }) if list == &fin),
        "{ev:?}"
    );
    assert_eq!(ev[2], (0, Event::Finished));
}

#[test]
fn many_concurrent_requests() {
    let mut p = H3Pipe::new();
    let mut ids = Vec::new();
    for i in 0..50 {
        ids.push(
            p.client
                .send_request(&mut p.pipe.client, &get(&format!("/f{i}")), true)
                .unwrap(),
        );
    }
    let ev = p.server_events(100);
    let heads: Vec<u64> = ev
        .iter()
        .filter(|(_, e)| matches!(e, Event::Headers { .. }))
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(heads.len(), 50, "{ev:?}");
    for &id in &ids {
        let body = format!("body of {id}").into_bytes();
        let resp = hdrs(&[
            (":status", "200"),
            ("content-length", &body.len().to_string()),
        ]);
        p.server
            .send_response(&mut p.pipe.server, id, &resp, false)
            .unwrap();
        assert_eq!(
            p.server.send_body(&mut p.pipe.server, id, &body, true),
            Ok(body.len())
        );
    }
    let bodies = p.read_bodies(&ids);
    for &id in &ids {
        assert_eq!(bodies[&id], format!("body of {id}").into_bytes());
    }
}

#[test]
fn goaway_drains_and_rejects_later_requests() {
    let mut p = H3Pipe::new();
    let first = p
        .client
        .send_request(&mut p.pipe.client, &get("/a"), true)
        .unwrap();
    p.server_events(2);
    p.server.send_goaway(&mut p.pipe.server, 4).unwrap();
    assert_eq!(
        p.server.send_goaway(&mut p.pipe.server, 8),
        Err(Error::IdError),
        "may not grow"
    );
    let ev = p.client_events(1);
    assert_eq!(ev, [(4, Event::GoAway)]);
    assert_eq!(
        p.client.send_request(&mut p.pipe.client, &get("/b"), true),
        Err(Error::FrameUnexpected)
    );
    // The request before the GOAWAY is still answered.
    p.server
        .send_response(
            &mut p.pipe.server,
            first,
            &hdrs(&[(":status", "200")]),
            true,
        )
        .unwrap();
    let ev = p.client_events(2);
    assert_eq!(ev[1], (first, Event::Finished));
}

#[test]
fn priorities_from_headers_and_priority_update() {
    let mut p = H3Pipe::new();
    let mut req = get("/p");
    req.push(Header::new(b"priority", b"u=1, i"));
    let id = p
        .client
        .send_request(&mut p.pipe.client, &req, true)
        .unwrap();
    p.server_events(2);
    p.client
        .send_priority_update_for_request(&mut p.pipe.client, id, &Priority::new(5, false))
        .unwrap();
    let ev = p.server_events(1);
    assert_eq!(ev, [(id, Event::PriorityUpdate)]);
    assert_eq!(p.server.take_last_priority_update(id), Ok(b"u=5".to_vec()));
    assert_eq!(p.server.take_last_priority_update(id), Err(Error::Done));
    // The response is scheduled at the request's urgency.
    p.server
        .send_response(&mut p.pipe.server, id, &hdrs(&[(":status", "200")]), true)
        .unwrap();
    assert_eq!(
        Priority::try_from(&b"u=1, i"[..]),
        Ok(Priority::new(1, true))
    );
}

#[test]
fn settings_datagrams_and_extended_connect_are_announced() {
    let mut server_cfg = Config::new().unwrap();
    server_cfg.enable_extended_connect(true);
    server_cfg
        .set_additional_settings(vec![(0x4242, 7)])
        .unwrap();
    assert_eq!(
        server_cfg.set_additional_settings(vec![(0x1, 7)]),
        Err(Error::SettingsError)
    );
    let mut p = H3Pipe::with_configs(&Config::new().unwrap(), &server_cfg);
    p.client_events(0);
    let settings = p
        .client
        .peer_settings_raw()
        .expect("SETTINGS arrived")
        .to_vec();
    assert!(settings.contains(&(0x4242, 7)), "{settings:?}");
    assert!(
        settings
            .iter()
            .any(|(id, _)| *id >= 0x21 && (id - 0x21) % 0x1f == 0),
        "a reserved setting"
    );
    assert!(p.client.extended_connect_enabled_by_peer());
    assert!(p.client.dgram_enabled_by_peer(&p.pipe.client));
    // Extended CONNECT is accepted by the server that enabled it.
    let req = hdrs(&[
        (":method", "CONNECT"),
        (":protocol", "websocket"),
        (":scheme", "https"),
        (":authority", "a"),
        (":path", "/chat"),
    ]);
    let id = p
        .client
        .send_request(&mut p.pipe.client, &req, false)
        .unwrap();
    let ev = p.server_events(1);
    assert!(
        matches!(&ev[0], (i, Event::Headers { .. }) if *i == id),
        "{ev:?}"
    );
}

#[test]
fn blocked_qpack_section_is_released_when_the_encoder_stream_arrives() {
    // A raw client: its request arrives before the QPACK instructions it needs.
    let mut pipe = Pipe::new(&mut transport_config(false), &mut transport_config(true)).unwrap();
    pipe.handshake().unwrap();
    let mut server = Connection::with_transport(&mut pipe.server, &Config::new().unwrap()).unwrap();
    let mut encoder = qpack::Encoder::new();
    encoder.apply_peer_settings(
        DEFAULT_QPACK_MAX_TABLE_CAPACITY,
        DEFAULT_QPACK_BLOCKED_STREAMS,
    );
    let request = get("/blocked");
    let mut section = Vec::new();
    encoder
        .encode(
            0,
            request.iter().map(|h| (h.name(), h.value())),
            &mut section,
        )
        .unwrap();
    assert!(section[0] != 0, "the section references the dynamic table");
    pipe.client
        .stream_send(0, &frame_bytes(frame::HEADERS, &section), true)
        .unwrap();
    for _ in 0..10 {
        assert_eq!(server.poll(&mut pipe.server), Err(Error::Done), "blocked");
        quiet_step(&mut pipe);
    }
    let mut instructions = vec![0x02];
    instructions.extend_from_slice(encoder.encoder_stream_pending());
    pipe.client.stream_send(6, &instructions, false).unwrap();
    let mut events = Vec::new();
    for _ in 0..20 {
        while let Ok(ev) = server.poll(&mut pipe.server) {
            events.push(ev);
        }
        quiet_step(&mut pipe);
    }
    assert!(
        matches!(&events[0], (0, Event::Headers { list, .. }) if list == &request),
        "{events:?}"
    );
    assert_eq!(events[1], (0, Event::Finished));
    // The server's decoder acknowledged the section on its decoder stream.
    let mut buf = [0u8; 64];
    let mut acks = Vec::new();
    while let Ok((n, _)) = pipe.client.stream_recv(11, &mut buf) {
        acks.extend_from_slice(&buf[..n]);
    }
    assert_eq!(acks.first(), Some(&0x03), "decoder stream type");
    assert!(
        acks[1..].contains(&0x80),
        "Section Acknowledgment of stream 0: {acks:?}"
    );
}

// ------------------------------------------------------------------------------------------
// Protocol violations: what the peer's misbehaviour costs.

/// Runs the server until the connection closes; the code the client sees.
fn close_code(p: &mut H3Pipe) -> u64 {
    for _ in 0..200 {
        let _ = p.server.poll(&mut p.pipe.server);
        let _ = p.client.poll(&mut p.pipe.client);
        if let Some(e) = p.pipe.client.peer_error() {
            return e.error_code;
        }
        if !quiet_step(&mut p.pipe) {
            break;
        }
    }
    panic!("the server did not close the connection");
}

/// Writes raw bytes on a client stream.
fn raw(p: &mut H3Pipe, id: u64, bytes: &[u8], fin: bool) {
    assert_eq!(p.pipe.client.stream_send(id, bytes, fin), Ok(bytes.len()));
}

fn frame_bytes(ty: u64, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    put_frame(&mut v, ty, payload);
    v
}

#[test]
fn data_before_headers_is_frame_unexpected() {
    let mut p = H3Pipe::new();
    raw(&mut p, 0, &frame_bytes(frame::DATA, b"hello"), true);
    assert_eq!(close_code(&mut p), wire::FRAME_UNEXPECTED);
}

#[test]
fn a_second_control_stream_is_a_stream_creation_error() {
    let mut p = H3Pipe::new();
    // The client's streams are 2 (control), 6, 10 (QPACK) and 14 (reserved); 18 is a second
    // control stream.
    let mut b = vec![0x00];
    put_frame(&mut b, frame::SETTINGS, &[]);
    raw(&mut p, 18, &b, false);
    assert_eq!(close_code(&mut p), wire::STREAM_CREATION_ERROR);
}

/// A server whose client speaks raw bytes: `control` is written on the client's stream 2.
fn raw_control_close_code(control: &[u8]) -> u64 {
    let mut pipe = Pipe::new(&mut transport_config(false), &mut transport_config(true)).unwrap();
    pipe.handshake().unwrap();
    let mut server = Connection::with_transport(&mut pipe.server, &Config::new().unwrap()).unwrap();
    pipe.client.stream_send(2, control, false).unwrap();
    for _ in 0..200 {
        let _ = server.poll(&mut pipe.server);
        if let Some(e) = pipe.client.peer_error() {
            return e.error_code;
        }
        if !quiet_step(&mut pipe) {
            break;
        }
    }
    panic!("no close");
}

#[test]
fn control_stream_rules() {
    let control = |frames: &[Vec<u8>]| {
        let mut b = vec![0x00];
        for f in frames {
            b.extend_from_slice(f);
        }
        b
    };
    let settings = frame_bytes(frame::SETTINGS, &[]);
    // A first frame other than SETTINGS.
    let goaway = frame_bytes(frame::GOAWAY, &[0]);
    assert_eq!(
        raw_control_close_code(&control(&[goaway])),
        wire::MISSING_SETTINGS
    );
    // A second SETTINGS.
    assert_eq!(
        raw_control_close_code(&control(&[settings.clone(), settings.clone()])),
        wire::FRAME_UNEXPECTED
    );
    // DATA and HTTP/2's reserved types on the control stream.
    let data = frame_bytes(frame::DATA, &[1]);
    assert_eq!(
        raw_control_close_code(&control(&[settings.clone(), data])),
        wire::FRAME_UNEXPECTED
    );
    let h2 = frame_bytes(0x6, &[]);
    assert_eq!(
        raw_control_close_code(&control(&[settings.clone(), h2])),
        wire::FRAME_UNEXPECTED
    );
    // An HTTP/2 setting, a repeated setting.
    let h2_setting = frame_bytes(frame::SETTINGS, &frame::settings_payload(&[(0x2, 1)]));
    assert_eq!(
        raw_control_close_code(&control(&[h2_setting])),
        wire::SETTINGS_ERROR
    );
    let dup = frame_bytes(
        frame::SETTINGS,
        &frame::settings_payload(&[(0x1, 1), (0x1, 2)]),
    );
    assert_eq!(
        raw_control_close_code(&control(&[dup])),
        wire::SETTINGS_ERROR
    );
    // A malformed GOAWAY; a client's MAX_PUSH_ID is fine, PUSH_PROMISE is not.
    let bad_goaway = frame_bytes(frame::GOAWAY, &[0x40]);
    assert_eq!(
        raw_control_close_code(&control(&[settings.clone(), bad_goaway])),
        wire::FRAME_ERROR
    );
    let push_promise = frame_bytes(frame::PUSH_PROMISE, &[0]);
    assert_eq!(
        raw_control_close_code(&control(&[settings, push_promise])),
        wire::FRAME_UNEXPECTED
    );

    // The control stream closed.
    let mut p = H3Pipe::new();
    p.pipe.client.stream_send(2, &[], true).unwrap();
    assert_eq!(close_code(&mut p), wire::CLOSED_CRITICAL_STREAM);
}

#[test]
fn a_push_stream_to_a_server_and_a_push_promise_to_a_client() {
    let mut p = H3Pipe::new();
    raw(&mut p, 18, &[0x01, 0x00], false);
    assert_eq!(close_code(&mut p), wire::STREAM_CREATION_ERROR);

    // A client that never sent MAX_PUSH_ID receives PUSH_PROMISE: H3_ID_ERROR.
    let mut p = H3Pipe::new();
    let id = p
        .client
        .send_request(&mut p.pipe.client, &get("/"), true)
        .unwrap();
    p.server_events(2);
    let mut promise = Vec::new();
    put_varint(&mut promise, 0);
    promise.extend_from_slice(&[0x00, 0x00]);
    p.pipe
        .server
        .stream_send(id, &frame_bytes(frame::PUSH_PROMISE, &promise), false)
        .unwrap();
    let mut code = None;
    for _ in 0..100 {
        let _ = p.client.poll(&mut p.pipe.client);
        if let Some(e) = p.pipe.server.peer_error() {
            code = Some(e.error_code);
            break;
        }
        quiet_step(&mut p.pipe);
    }
    assert_eq!(code, Some(wire::ID_ERROR));
}

/// Runs until the server reset stream `id`; the code the client sees on it.
fn reset_code(p: &mut H3Pipe, id: u64) -> u64 {
    let mut buf = [0u8; 100];
    for _ in 0..200 {
        let _ = p.server.poll(&mut p.pipe.server);
        if let Err(crate::Error::StreamReset(code)) = p.pipe.client.stream_recv(id, &mut buf) {
            return code;
        }
        if let Ok((_, Event::Reset(code))) = p.client.poll(&mut p.pipe.client) {
            return code;
        }
        if !quiet_step(&mut p.pipe) {
            break;
        }
    }
    panic!("stream {id} was not reset");
}

#[test]
fn malformed_requests_reset_their_stream_with_message_error() {
    let cases: [&[(&str, &str)]; 5] = [
        &[(":method", "GET"), (":scheme", "https"), (":path", "/")],
        &[
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "a"),
            (":path", "/"),
            ("Upper", "x"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "a"),
            (":path", "/"),
            ("connection", "close"),
        ],
        &[
            (":method", "GET"),
            ("x", "1"),
            (":scheme", "https"),
            (":authority", "a"),
            (":path", "/"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "a"),
            (":path", "/"),
            (":status", "200"),
        ],
    ];
    for case in cases {
        let mut p = H3Pipe::new();
        let id = p
            .client
            .send_request(&mut p.pipe.client, &hdrs(case), true)
            .unwrap();
        assert_eq!(reset_code(&mut p, id), wire::MESSAGE_ERROR, "{case:?}");
        assert!(p.pipe.client.peer_error().is_none(), "a stream error only");
    }
}

#[test]
fn content_length_must_match_the_body() {
    let mut p = H3Pipe::new();
    let req = hdrs(&[
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "a"),
        (":path", "/"),
        ("content-length", "10"),
    ]);
    let id = p
        .client
        .send_request(&mut p.pipe.client, &req, false)
        .unwrap();
    p.client
        .send_body(&mut p.pipe.client, id, b"12345", true)
        .unwrap();
    let mut buf = [0u8; 100];
    let mut code = None;
    for _ in 0..200 {
        while let Ok((sid, ev)) = p.server.poll(&mut p.pipe.server) {
            if ev == Event::Data {
                while p
                    .server
                    .recv_body(&mut p.pipe.server, sid, &mut buf)
                    .is_ok()
                {}
            }
        }
        if let Err(crate::Error::StreamReset(c)) = p.pipe.client.stream_recv(id, &mut buf) {
            code = Some(c);
            break;
        }
        quiet_step(&mut p.pipe);
    }
    assert_eq!(code, Some(wire::MESSAGE_ERROR));
}

#[test]
fn a_stream_ending_before_its_headers_is_request_incomplete() {
    let mut p = H3Pipe::new();
    raw(&mut p, 0, &[], true);
    assert_eq!(reset_code(&mut p, 0), wire::REQUEST_INCOMPLETE);
}

#[test]
fn oversized_header_sections_are_refused() {
    let mut server = Config::new().unwrap();
    server.set_max_field_section_size(200);
    let mut p = H3Pipe::with_configs(&Config::new().unwrap(), &server);
    let mut req = get("/");
    req.push(Header::new(b"x-big", &[b'a'; 300]));
    let id = p
        .client
        .send_request(&mut p.pipe.client, &req, true)
        .unwrap();
    assert_eq!(reset_code(&mut p, id), wire::EXCESSIVE_LOAD);
}

#[test]
fn header_sections_are_bounded_by_quiches_default() {
    // Under the default (SETTINGS_MAX_FIELD_SECTION_SIZE_DEFAULT, 32 KiB) a section passes.
    let mut p = H3Pipe::new();
    let mut req = get("/");
    req.push(Header::new(b"x-big", &[b'~'; 30_000]));
    let id = p
        .client
        .send_request(&mut p.pipe.client, &req, true)
        .unwrap();
    let ev = p.server_events(1);
    assert!(
        matches!(&ev[0], (s, Event::Headers { list, .. }) if *s == id && list == &req),
        "{ev:?}"
    );
    // Above it, the stream is reset.
    let mut big = get("/");
    big.push(Header::new(b"x-big", &[b'~'; 40_000]));
    let id = p
        .client
        .send_request(&mut p.pipe.client, &big, true)
        .unwrap();
    assert_eq!(reset_code(&mut p, id), wire::EXCESSIVE_LOAD);
}

#[test]
fn reserved_frames_and_streams_are_ignored() {
    let mut p = H3Pipe::new();
    // A reserved frame on a request stream before HEADERS, and a reserved stream type.
    let mut b = frame_bytes(frame::grease_id(3), b"ignored");
    let mut section = Vec::new();
    // A static-table-only section: no QPACK instructions needed.
    qpack::Encoder::new()
        .encode(
            0,
            get("/x").iter().map(|h| (h.name(), h.value())),
            &mut section,
        )
        .unwrap();
    b.extend(frame_bytes(frame::HEADERS, &section));
    raw(&mut p, 0, &b, true);
    let mut s = Vec::new();
    put_varint(&mut s, frame::grease_id(9));
    s.extend_from_slice(b"whatever");
    raw(&mut p, 18, &s, true);
    let ev = p.server_events(2);
    assert!(
        matches!(&ev[0], (0, Event::Headers { list, .. }) if list == &get("/x")),
        "{ev:?}"
    );
    assert!(p.pipe.client.peer_error().is_none());
}
