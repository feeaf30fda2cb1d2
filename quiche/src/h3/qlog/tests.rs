//! An HTTP/3 exchange over the in-memory pipe with qlog on: the `http:*` and `qpack:*` events
//! each side writes, read back from the JSON-SEQ output; and with qlog off (or failed), that
//! the HTTP/3 layer keeps nothing for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::h3::frame::{self, put_frame, put_varint};
use crate::h3::{self, qpack, Config, Event, Header, NameValue};
use crate::testing::Pipe;

/// A writer the test reads while the connection owns it; it fails every write once `fail` is
/// set.
#[derive(Clone, Default)]
struct SharedBuf {
    data: Arc<Mutex<Vec<u8>>>,
    fail: Arc<AtomicBool>,
}

impl std::io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.fail.load(Ordering::Relaxed) {
            return Err(std::io::Error::other("disk full"));
        }
        self.data.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl SharedBuf {
    fn len(&self) -> usize {
        self.data.lock().unwrap().len()
    }

    /// The events of the trace (the header record left out).
    fn events(&self) -> Vec<Value> {
        let bytes = self.data.lock().unwrap().clone();
        let mut records: Vec<Value> = bytes
            .split(|&b| b == 0x1e)
            .filter(|r| !r.iter().all(u8::is_ascii_whitespace))
            .map(|r| serde_json::from_slice(r).expect("every record is JSON"))
            .collect();
        assert_eq!(records[0]["qlog_version"], "0.3");
        records.remove(0);
        records
    }
}

fn cert(name: &str) -> String {
    format!("{}/tests/certs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn transport_config(server: bool) -> crate::Config {
    let mut c = crate::Config::new(crate::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(h3::APPLICATION_PROTOCOL).unwrap();
    c.set_max_idle_timeout(30_000);
    c.set_initial_max_data(10 << 20);
    c.set_initial_max_stream_data_bidi_local(1 << 20);
    c.set_initial_max_stream_data_bidi_remote(1 << 20);
    c.set_initial_max_stream_data_uni(1 << 20);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(10);
    if server {
        c.load_cert_chain_from_pem_file(&cert("cert.crt")).unwrap();
        c.load_priv_key_from_pem_file(&cert("cert.key")).unwrap();
    } else {
        c.verify_peer(false);
    }
    c
}

struct H3Pair {
    pipe: Pipe,
    client: h3::Connection,
    server: h3::Connection,
}

/// A handshaken pair running HTTP/3, with traces when `logs` are given (client, server).
fn pair(logs: Option<(&SharedBuf, &SharedBuf)>) -> H3Pair {
    let mut pipe = Pipe::new(&mut transport_config(false), &mut transport_config(true)).unwrap();
    if let Some((c, s)) = logs {
        let now = pipe.now;
        let (title, desc) = ("h3".to_string(), "test".to_string());
        pipe.client
            .set_qlog_at(Box::new(c.clone()), title.clone(), desc.clone(), now);
        pipe.server
            .set_qlog_at(Box::new(s.clone()), title, desc, now);
    }
    pipe.handshake().unwrap();
    let mut server_config = Config::new().unwrap();
    server_config.set_max_field_section_size(10_000);
    let client = h3::Connection::with_transport(&mut pipe.client, &Config::new().unwrap()).unwrap();
    let server = h3::Connection::with_transport(&mut pipe.server, &server_config).unwrap();
    H3Pair {
        pipe,
        client,
        server,
    }
}

fn request(path: &str) -> Vec<Header> {
    [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "quic.tech"),
        (":path", path),
        ("user-agent", "qlog-test"),
    ]
    .iter()
    .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes()))
    .collect()
}

const BODY: usize = 5000;

/// One step of the pipe, unless the next event is over half a second away (the idle timer):
/// whether something happened.
fn quiet_step(pipe: &mut Pipe) -> bool {
    pipe.flush().unwrap();
    pipe.deliver();
    match pipe.next_event() {
        Some(t) if t <= pipe.now + Duration::from_millis(500) => pipe.step().unwrap(),
        _ => false,
    }
}

/// Two requests with bodies in response, a PRIORITY_UPDATE and a GOAWAY; returns the body
/// bytes the client read per request.
fn exchange(p: &mut H3Pair) -> [usize; 2] {
    // SETTINGS cross first, so that the client's encoder may use the dynamic table.
    for _ in 0..10 {
        quiet_step(&mut p.pipe);
        let _ = p.client.poll(&mut p.pipe.client);
        let _ = p.server.poll(&mut p.pipe.server);
    }
    let ids = [
        p.client
            .send_request(&mut p.pipe.client, &request("/one"), true)
            .unwrap(),
        p.client
            .send_request(&mut p.pipe.client, &request("/two"), true)
            .unwrap(),
    ];
    assert_eq!(ids, [0, 4]);
    let body = vec![0x5a; BODY];
    let mut sent = [None::<usize>; 2];
    let mut got = [0usize; 2];
    let mut finished = [false; 2];
    let mut buf = [0u8; 1500];
    let mut updated = false;
    let deadline = p.pipe.now + Duration::from_secs(10);
    while !(finished[0] && finished[1] && updated) {
        assert!(p.pipe.now < deadline, "exchange did not finish");
        while let Ok((id, ev)) = p.server.poll(&mut p.pipe.server) {
            match ev {
                Event::Headers { .. } => {
                    let resp = [
                        Header::new(b":status", b"200"),
                        Header::new(b"content-length", BODY.to_string().as_bytes()),
                    ];
                    p.server
                        .send_response(&mut p.pipe.server, id, &resp, false)
                        .unwrap();
                    sent[(id / 4) as usize] = Some(0);
                }
                Event::PriorityUpdate => updated = true,
                _ => {}
            }
        }
        for (i, s) in sent.iter_mut().enumerate() {
            if let Some(n) = s.filter(|n| *n < BODY) {
                let id = ids[i];
                if let Ok(w) = p.server.send_body(&mut p.pipe.server, id, &body[n..], true) {
                    *s = Some(n + w);
                }
            }
        }
        while let Ok((id, ev)) = p.client.poll(&mut p.pipe.client) {
            let i = (id / 4) as usize;
            match ev {
                Event::Data => {
                    while let Ok(n) = p.client.recv_body(&mut p.pipe.client, id, &mut buf) {
                        got[i] += n;
                    }
                }
                Event::Finished => {
                    finished[i] = true;
                    if i == 0 {
                        let urgent = h3::Priority::new(5, true);
                        p.client
                            .send_priority_update_for_request(&mut p.pipe.client, 4, &urgent)
                            .unwrap();
                        p.server.send_goaway(&mut p.pipe.server, 8).unwrap();
                    }
                }
                _ => {}
            }
        }
        quiet_step(&mut p.pipe);
    }
    // Let the last acknowledgments and the GOAWAY arrive.
    for _ in 0..10 {
        let _ = p.client.poll(&mut p.pipe.client);
        let _ = p.server.poll(&mut p.pipe.server);
        if !quiet_step(&mut p.pipe) {
            break;
        }
    }
    got
}

fn named<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["name"] == name).collect()
}

/// The `data` of every event `name` whose data has `key` == `value`.
fn with<'a>(events: &'a [Value], name: &str, key: &str, value: Value) -> Vec<&'a Value> {
    named(events, name)
        .into_iter()
        .map(|e| &e["data"])
        .filter(|d| d[key] == value)
        .collect()
}

fn frames<'a>(events: &'a [Value], name: &str, stream: u64, ty: &str) -> Vec<&'a Value> {
    with(events, name, "stream_id", stream.into())
        .into_iter()
        .filter(|d| d["frame"]["frame_type"] == ty)
        .collect()
}

fn header_list(frame: &Value) -> Vec<(String, String)> {
    frame["frame"]["headers"]
        .as_array()
        .expect("a header list")
        .iter()
        .map(|h| {
            let s = |k: &str| h[k].as_str().unwrap().to_string();
            (s("name"), s("value"))
        })
        .collect()
}

fn expected_headers(path: &str) -> Vec<(String, String)> {
    request(path)
        .iter()
        .map(|h| {
            let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            (s(h.name()), s(h.value()))
        })
        .collect()
}

/// Checks that events are in time order and that the `qlog` crate reads every one back (tools
/// built on it read our traces).
fn check_events(events: &[Value]) {
    for e in events {
        let name = e["name"].as_str().unwrap();
        if name.starts_with("http:") || name.starts_with("qpack:") {
            let back: ::qlog::events::Event = serde_json::from_value(e.clone())
                .unwrap_or_else(|err| panic!("qlog cannot read {e}: {err}"));
            assert_eq!(serde_json::to_value(&back).unwrap(), *e);
        }
    }
    let times: Vec<f64> = events.iter().map(|e| e["time"].as_f64().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "event times go back: {times:?}"
    );
}

/// The `(owner, stream_id, stream_type)` of every `http:stream_type_set`.
fn stream_types(events: &[Value]) -> Vec<(String, u64, String)> {
    named(events, "http:stream_type_set")
        .into_iter()
        .map(|e| {
            let d = &e["data"];
            (
                d["owner"].as_str().unwrap().to_string(),
                d["stream_id"].as_u64().unwrap(),
                d["stream_type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn h3_exchange_is_traced() {
    let (client_log, server_log) = (SharedBuf::default(), SharedBuf::default());
    let mut p = pair(Some((&client_log, &server_log)));
    assert_eq!(exchange(&mut p), [BODY, BODY]);
    let client = client_log.events();
    let server = server_log.events();
    check_events(&client);
    check_events(&server);
    // HTTP/3 events sit between transport ones, not all at the end.
    let first_http = client
        .iter()
        .position(|e| e["name"].as_str().unwrap().starts_with("http:"))
        .unwrap();
    assert!(client[first_http..]
        .iter()
        .any(|e| e["name"] == "transport:packet_sent"));

    // Settings: ours as sent, the peer's as received.
    let local = with(&client, "http:parameters_set", "owner", "local".into());
    assert_eq!(local.len(), 1);
    assert_eq!(local[0]["max_table_capacity"], 4096);
    assert_eq!(local[0]["blocked_streams_count"], 16);
    assert_eq!(local[0]["waits_for_settings"], false);
    assert_eq!(
        local[0]["max_field_section_size"],
        crate::h3::SETTINGS_MAX_FIELD_SECTION_SIZE_DEFAULT
    );
    let remote = with(&client, "http:parameters_set", "owner", "remote".into());
    assert_eq!(remote.len(), 1);
    assert_eq!(remote[0]["max_field_section_size"], 10_000);
    assert_eq!(remote[0]["max_table_capacity"], 4096);
    let server_local = with(&server, "http:parameters_set", "owner", "local".into());
    assert_eq!(server_local[0]["max_field_section_size"], 10_000);

    // Stream types: ours (client uni streams 2, 6, 10, the reserved 14 and the requests) and
    // the server's uni streams (3, 7, 11; its reserved stream 15 is logged too once read).
    let types = stream_types(&client);
    for t in [
        ("local", 2, "control"),
        ("local", 6, "qpack_encode"),
        ("local", 10, "qpack_decode"),
        ("local", 14, "reserved"),
        ("local", 0, "request"),
        ("local", 4, "request"),
        ("remote", 3, "control"),
        ("remote", 7, "qpack_encode"),
        ("remote", 11, "qpack_decode"),
        ("remote", 15, "reserved"),
    ] {
        let t = (t.0.to_string(), t.1, t.2.to_string());
        assert_eq!(
            types.iter().filter(|x| **x == t).count(),
            1,
            "{t:?} in {types:?}"
        );
    }
    let types = stream_types(&server);
    for id in [0, 4] {
        assert!(types.contains(&("remote".to_string(), id, "request".to_string())));
    }
    assert!(types.contains(&("remote".to_string(), 2, "control".to_string())));

    // Control streams: SETTINGS and the reserved frame, created and parsed.
    let settings = frames(&client, "http:frame_created", 2, "settings");
    assert_eq!(settings.len(), 1);
    let list = settings[0]["frame"]["settings"].as_array().unwrap();
    assert!(list
        .iter()
        .any(|s| s["name"] == "max_table_capacity" && s["value"] == 4096));
    assert!(list
        .iter()
        .any(|s| s["name"].as_str().unwrap().starts_with("reserved_") && s["value"] == 0x2a));
    let id_of = |name: &str| match name {
        "max_table_capacity" => 0x1,
        "blocked_streams_count" => 0x7,
        "max_field_section_size" => 0x6,
        n => u64::from_str_radix(n.trim_start_matches("reserved_0x"), 16).unwrap(),
    };
    let payload_len: usize = list
        .iter()
        .map(|s| {
            let id = id_of(s["name"].as_str().unwrap());
            octets::varint_len(id) + octets::varint_len(s["value"].as_u64().unwrap())
        })
        .sum();
    assert_eq!(settings[0]["length"], payload_len as u64);
    let parsed = frames(&server, "http:frame_parsed", 2, "settings");
    assert_eq!(parsed.len(), 1);
    assert_eq!(parsed[0]["frame"], settings[0]["frame"]);
    assert_eq!(
        frames(&client, "http:frame_created", 2, "reserved").len(),
        1
    );
    let reserved = frames(&server, "http:frame_parsed", 2, "reserved");
    assert_eq!(reserved.len(), 1);
    assert_eq!(reserved[0]["frame"]["length"], 6);

    // Requests: HEADERS with the field lines on both sides.
    for (id, path) in [(0, "/one"), (4, "/two")] {
        let created = frames(&client, "http:frame_created", id, "headers");
        assert_eq!(created.len(), 1, "stream {id}");
        assert_eq!(header_list(created[0]), expected_headers(path));
        assert!(created[0]["length"].as_u64().unwrap() > 0);
        let parsed = frames(&server, "http:frame_parsed", id, "headers");
        assert_eq!(parsed.len(), 1);
        assert_eq!(header_list(parsed[0]), expected_headers(path));
    }
    // Responses: HEADERS, then DATA frames adding up to the body, on both sides.
    for id in [0, 4] {
        let resp = frames(&client, "http:frame_parsed", id, "headers");
        assert_eq!(
            header_list(resp[0]),
            [
                (":status".into(), "200".into()),
                ("content-length".into(), BODY.to_string())
            ]
        );
        for (trace, name) in [
            (&server, "http:frame_created"),
            (&client, "http:frame_parsed"),
        ] {
            let data = frames(trace, name, id, "data");
            assert!(!data.is_empty());
            let total: u64 = data.iter().map(|d| d["length"].as_u64().unwrap()).sum();
            assert_eq!(total, BODY as u64, "{name} on {id}");
            for d in data {
                assert_eq!(d["frame"]["raw"]["payload_length"], d["length"]);
            }
        }
    }
    // PRIORITY_UPDATE (client to server) and GOAWAY (server to client).
    for (trace, name) in [
        (&client, "http:frame_created"),
        (&server, "http:frame_parsed"),
    ] {
        let pu = frames(trace, name, 2, "priority_update");
        assert_eq!(pu.len(), 1, "{name}");
        assert_eq!(pu[0]["frame"]["prioritized_element_id"], 4);
        assert_eq!(pu[0]["frame"]["target_stream_type"], "request");
        assert_eq!(pu[0]["frame"]["priority_field_value"], "u=5, i");
    }
    for (trace, name) in [
        (&server, "http:frame_created"),
        (&client, "http:frame_parsed"),
    ] {
        let goaway = frames(trace, name, 3, "goaway");
        assert_eq!(goaway.len(), 1, "{name}");
        assert_eq!(goaway[0]["frame"]["id"], 8);
    }

    check_qpack(&client, &server);
}

/// The instruction of a `qpack:instruction_*` event, by its qlog 0.16 type name.
fn instructions<'a>(events: &'a [Value], name: &str, ty: &str) -> Vec<&'a Value> {
    named(events, name)
        .into_iter()
        .filter_map(|e| e["data"]["instruction"].get(ty))
        .collect()
}

fn check_qpack(client: &[Value], server: &[Value]) {
    // The client's encoder sets the table up and inserts the repeating lines; the server's
    // decoder reads exactly that.
    let set = "SetDynamicTableCapacityInstruction";
    let created = instructions(client, "qpack:instruction_created", set);
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["capacity"], 4096);
    assert_eq!(
        created[0]["instruction_type"],
        "set_dynamic_table_capacity_instruction"
    );
    assert_eq!(
        instructions(server, "qpack:instruction_parsed", set),
        created
    );
    let insert = "InsertWithNameReferenceInstruction";
    let inserted = instructions(client, "qpack:instruction_created", insert);
    let authority = inserted
        .iter()
        .find(|i| i["value"] == "quic.tech")
        .expect(":authority is inserted");
    assert_eq!(authority["table_type"], "static");
    assert_eq!(authority["name_index"], 0);
    assert_eq!(
        instructions(server, "qpack:instruction_parsed", insert),
        inserted
    );
    let with_raw = named(client, "qpack:instruction_created");
    assert!(with_raw
        .iter()
        .all(|e| e["data"]["raw"]["length"].as_u64().unwrap() > 0));

    // The server's decoder acknowledges the inserts and the sections that used them.
    let ici = "InsertCountIncrementInstruction";
    let increments = instructions(server, "qpack:instruction_created", ici);
    let total: u64 = increments
        .iter()
        .map(|i| i["increment"].as_u64().unwrap())
        .sum();
    assert_eq!(total as usize, inserted.len());
    assert_eq!(
        instructions(client, "qpack:instruction_parsed", ici),
        increments
    );
    let acks = "HeaderAcknowledgementInstruction";
    let acked = instructions(client, "qpack:instruction_parsed", acks);
    assert!(!acked.is_empty());
    assert!(acked
        .iter()
        .all(|a| a["stream_id"] == "0" || a["stream_id"] == "4"));

    // Table state: the client's encoder table and the server's copy of it end alike.
    let last = |events: &[Value], owner: &str, field: &str| {
        with(events, "qpack:state_updated", "owner", owner.into())
            .into_iter()
            .rev()
            .find_map(|d| d.get(field).and_then(Value::as_u64))
    };
    assert_eq!(last(client, "local", "dynamic_table_capacity"), Some(4096));
    assert_eq!(last(server, "remote", "dynamic_table_capacity"), Some(4096));
    let inserts = Some(inserted.len() as u64);
    assert_eq!(last(client, "local", "current_insert_count"), inserts);
    assert_eq!(last(server, "remote", "current_insert_count"), inserts);
    assert_eq!(last(client, "local", "known_received_count"), inserts);
    let size = last(client, "local", "dynamic_table_size");
    assert!(size.is_some_and(|s| s > 0));
    assert_eq!(last(server, "remote", "dynamic_table_size"), size);
}

/// Whether the HTTP/3 layer keeps anything for qlog: QPACK's parsed-instruction logs.
fn keeps_qpack_log(h3: &mut h3::Connection) -> bool {
    let encoder = h3.qpack_encoder.parsed_log();
    let kept = encoder.is_enabled() || !encoder.is_empty();
    let decoder = h3.qpack_decoder.parsed_log();
    kept || decoder.is_enabled() || !decoder.is_empty()
}

#[test]
fn without_qlog_the_h3_layer_keeps_nothing() {
    let mut p = pair(None);
    assert_eq!(exchange(&mut p), [BODY, BODY]);
    assert!(p.pipe.client.app_qlog().is_none() && p.pipe.server.app_qlog().is_none());
    assert!(!keeps_qpack_log(&mut p.client));
    assert!(!keeps_qpack_log(&mut p.server));
}

#[test]
fn a_failed_trace_stops_the_h3_layer_logging() {
    let (client_log, server_log) = (SharedBuf::default(), SharedBuf::default());
    let mut p = pair(Some((&client_log, &server_log)));
    // Once HTTP/3 runs with a trace, QPACK keeps what it parses for it.
    quiet_step(&mut p.pipe);
    let _ = p.client.poll(&mut p.pipe.client);
    assert!(keeps_qpack_log(&mut p.client));
    client_log.fail.store(true, Ordering::Relaxed);
    let written = client_log.len();
    assert_eq!(exchange(&mut p), [BODY, BODY]);
    assert_eq!(client_log.len(), written);
    assert!(p.pipe.client.app_qlog().is_none());
    assert!(!keeps_qpack_log(&mut p.client));
    // The other side's trace goes on.
    assert!(p.pipe.server.app_qlog().is_some());
    assert!(keeps_qpack_log(&mut p.server));
    assert!(!named(&server_log.events(), "http:frame_parsed").is_empty());
}

#[test]
fn blocked_sections_and_unknown_frames_and_streams_are_traced() {
    // A raw client: its request references QPACK inserts the server gets only later, after a
    // reserved frame; it also opens a uni stream of an unknown type.
    let server_log = SharedBuf::default();
    let mut pipe = Pipe::new(&mut transport_config(false), &mut transport_config(true)).unwrap();
    let now = pipe.now;
    pipe.server
        .set_qlog_at(Box::new(server_log.clone()), "h3".into(), "raw".into(), now);
    pipe.handshake().unwrap();
    let mut server =
        h3::Connection::with_transport(&mut pipe.server, &Config::new().unwrap()).unwrap();
    let mut encoder = qpack::Encoder::new();
    encoder.apply_peer_settings(4096, 16);
    let req = request("/blocked");
    let mut section = Vec::new();
    let fields = req.iter().map(|h| (h.name(), h.value()));
    encoder.encode(0, fields, &mut section).unwrap();
    assert!(section[0] != 0, "the section references the dynamic table");
    let mut bytes = Vec::new();
    put_frame(&mut bytes, 0x21, b"abc");
    put_frame(&mut bytes, frame::HEADERS, &section);
    pipe.client.stream_send(0, &bytes, true).unwrap();
    let mut unknown = Vec::new();
    put_varint(&mut unknown, 0x54);
    unknown.extend_from_slice(b"whatever");
    pipe.client.stream_send(14, &unknown, false).unwrap();
    let run = |pipe: &mut Pipe, server: &mut h3::Connection| {
        for _ in 0..10 {
            while server.poll(&mut pipe.server).is_ok() {}
            quiet_step(pipe);
        }
    };
    run(&mut pipe, &mut server);
    let instructions = encoder.encoder_stream_pending().to_vec();
    let mut encoder_stream = vec![0x02];
    encoder_stream.extend_from_slice(&instructions);
    pipe.client.stream_send(6, &encoder_stream, false).unwrap();
    run(&mut pipe, &mut server);

    let events = server_log.events();
    check_events(&events);
    let position = |name: &str, pred: &dyn Fn(&Value) -> bool| {
        events
            .iter()
            .position(|e| e["name"] == name && pred(&e["data"]))
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let on_0 = |state: &'static str| move |d: &Value| d["stream_id"] == 0 && d["state"] == state;
    let blocked = position("qpack:stream_state_updated", &on_0("blocked"));
    let unblocked = position("qpack:stream_state_updated", &on_0("unblocked"));
    let headers = position("http:frame_parsed", &|d| {
        d["stream_id"] == 0 && d["frame"]["frame_type"] == "headers"
    });
    let reserved = position("http:frame_parsed", &|d| {
        d["stream_id"] == 0 && d["frame"]["frame_type"] == "reserved"
    });
    assert!(reserved < blocked && blocked < unblocked && unblocked < headers);
    assert_eq!(events[reserved]["data"]["frame"]["length"], 3);
    assert_eq!(
        header_list(&events[headers]["data"]),
        expected_headers("/blocked")
    );
    // The encoder stream's instructions, each parsed once, before the section they unblock.
    let parsed: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["name"] == "qpack:instruction_parsed")
        .map(|(i, _)| i)
        .collect();
    let described = qpack::log::describe(qpack::log::Stream::Encoder, &instructions).count();
    assert_eq!(parsed.len(), described);
    assert!(parsed.iter().all(|&i| i < unblocked));
    let acked = instructions_named(&events, "HeaderAcknowledgementInstruction");
    assert_eq!(acked.len(), 1);
    assert_eq!(acked[0]["stream_id"], "0");

    let types = stream_types(&events);
    assert!(types.contains(&("remote".to_string(), 14, "unknown".to_string())));
    let unknown = with(&events, "http:stream_type_set", "stream_id", 14.into());
    assert_eq!(unknown[0]["stream_type_value"], 0x54);
}

fn instructions_named<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    instructions(events, "qpack:instruction_created", ty)
}
