//! RFC 9114 §4 - §8 (and RFC 9204 §6, RFC 9218 §7, RFC 9220) violations, one by one: a raw
//! peer writes bytes on its transport streams and the test asserts the exact outcome the other
//! end's `h3::Connection` gives them — a stream reset (RESET_STREAM / STOP_SENDING seen by the
//! peer's transport) or a connection close (the code in the peer's `peer_error`, equal to the
//! endpoint's `local_error`, both application closes).
//!
//! | rule | required outcome | test |
//! |---|---|---|
//! | §4.1 DATA before HEADERS (request) | conn H3_FRAME_UNEXPECTED | `tests::data_before_headers_is_frame_unexpected`, `frame_sequence_on_request_streams` |
//! | §4.1 HEADERS or DATA after trailers | conn H3_FRAME_UNEXPECTED | `frame_sequence_on_request_streams`, `frame_sequence_on_response_streams` |
//! | §4.1 DATA before the response / after an interim response only | conn H3_FRAME_UNEXPECTED | `frame_sequence_on_response_streams` |
//! | §4.1 a second request / a response after the final one | stream H3_MESSAGE_ERROR | `a_second_message_on_a_stream_is_malformed` |
//! | §4.1 unknown and reserved frames on request streams | ignored | `tests::reserved_frames_and_streams_are_ignored` |
//! | §4.1 stream ends before a complete request | stream H3_REQUEST_INCOMPLETE | `tests::a_stream_ending_before_its_headers_is_request_incomplete`, `incomplete_messages` |
//! | §4.1 response stream ends before a final response (invalid message sequence) | stream H3_MESSAGE_ERROR | `incomplete_messages` |
//! | §4.1.1 request on a stream at or above our GOAWAY | stream H3_REQUEST_REJECTED | `requests_beyond_our_goaway_are_rejected` |
//! | §4.1.2 content-length ≠ sum of DATA (short or long), also with trailers | stream H3_MESSAGE_ERROR | `tests::content_length_must_match_the_body`, `content_length_rules` |
//! | §4.1.2 no-content responses (HEAD, 204, 304) may announce a length | accepted | `content_length_rules` |
//! | §4.2, §10.3 uppercase / invalid characters in names or values (field-content: no control character but inner SP/HTAB) | stream H3_MESSAGE_ERROR | `malformed_requests`, `malformed_responses` |
//! | §4.2 connection-specific fields, TE other than "trailers" | stream H3_MESSAGE_ERROR | `malformed_requests`, `malformed_responses` |
//! | §4.2.2 field section over our SETTINGS_MAX_FIELD_SECTION_SIZE (frame or decoded size) | stream H3_EXCESSIVE_LOAD | `tests::oversized_header_sections_are_refused`, `decoded_field_section_over_the_limit` |
//! | §4.3 pseudo-headers: undefined, of the other side, in trailers, after fields, repeated | stream H3_MESSAGE_ERROR | `malformed_requests`, `malformed_responses`, `a_second_message_on_a_stream_is_malformed` |
//! | §4.3.1 :method, :scheme, :path missing; :path empty; :authority/Host missing, empty or different; userinfo in an http(s) :authority | stream H3_MESSAGE_ERROR | `malformed_requests` |
//! | §4.3.2 :status missing or invalid; 101 (§4.5) | stream H3_MESSAGE_ERROR | `malformed_responses` |
//! | §4.4 CONNECT with :scheme or :path, or without :authority | stream H3_MESSAGE_ERROR | `malformed_requests` |
//! | §4.4 a frame other than DATA (or unknown) on a CONNECT tunnel, at either end | conn H3_FRAME_UNEXPECTED | `connect_tunnels_carry_only_data` |
//! | RFC 9220 :protocol not enabled, with a method other than CONNECT, without :scheme/:path | stream H3_MESSAGE_ERROR | `malformed_requests`, `extended_connect_requests` |
//! | §6.1 server-initiated bidirectional stream | conn H3_STREAM_CREATION_ERROR | `a_server_initiated_bidi_stream_is_a_stream_creation_error` |
//! | §6.2 unknown stream type: ignored, STOP_SENDING, reset tolerated, no state kept (it is never a connection error, so the transport's stream limit is the only limit) | no error | `unknown_uni_streams_are_tolerated` |
//! | §10.5 no per-request state outlives the transport stream | bounded state | `finished_requests_leave_no_state` |
//! | §6.2.1 second control stream | conn H3_STREAM_CREATION_ERROR | `tests::a_second_control_stream_is_a_stream_creation_error` |
//! | RFC 9204 §4.2 second QPACK encoder / decoder stream | conn H3_STREAM_CREATION_ERROR | `second_qpack_streams` |
//! | §6.2.1, RFC 9204 §4.2 control / encoder / decoder stream closed or reset | conn H3_CLOSED_CRITICAL_STREAM | `tests::control_stream_rules`, `critical_streams_closed_or_reset` |
//! | §6.2.2 push stream to a server | conn H3_STREAM_CREATION_ERROR | `tests::a_push_stream_to_a_server_and_a_push_promise_to_a_client` |
//! | §4.6 push stream to a client that sent no MAX_PUSH_ID | conn H3_ID_ERROR | `push_rules_at_the_client` |
//! | §6.2.1 first control frame not SETTINGS (incl. reserved types) | conn H3_MISSING_SETTINGS | `tests::control_stream_rules`, `control_stream_frame_rules` |
//! | §7.2.4 second SETTINGS | conn H3_FRAME_UNEXPECTED | `tests::control_stream_rules` |
//! | §7.2.1, §7.2.2, §7.2.5 DATA, HEADERS, PUSH_PROMISE on a control stream | conn H3_FRAME_UNEXPECTED | `tests::control_stream_rules`, `control_stream_frame_rules`, `push_rules_at_the_client` |
//! | §7.2.3 - §7.2.7, RFC 9218 §7 control frames on a request / response stream | conn H3_FRAME_UNEXPECTED | `control_frames_on_request_streams`, `control_frames_on_response_streams` |
//! | §7.2.8 HTTP/2 frame types 0x02, 0x06, 0x08, 0x09 (control, request, response streams) | conn H3_FRAME_UNEXPECTED | `control_stream_frame_rules`, `control_frames_on_request_streams`, `control_frames_on_response_streams` |
//! | §7.2.4.1 HTTP/2 settings 0x00, 0x02 - 0x05 | conn H3_SETTINGS_ERROR | `control_stream_frame_rules` |
//! | §7.2.4 repeated setting | conn H3_SETTINGS_ERROR | `tests::control_stream_rules` |
//! | RFC 9220 §3, RFC 9297 §2.1.1 boolean setting other than 0 / 1 | conn H3_SETTINGS_ERROR | `control_stream_frame_rules` |
//! | §7.1 frame payload with bytes missing or left over | conn H3_FRAME_ERROR | `frame_payload_lengths` |
//! | §7.1 frame cut by the clean end of its stream | conn H3_FRAME_ERROR | `frames_cut_by_the_end_of_the_stream` |
//! | §5.2, §7.2.6 GOAWAY identifier grows (either side) | conn H3_ID_ERROR | `goaway_rules` |
//! | §7.2.6 server's GOAWAY not a client-initiated bidi stream ID | conn H3_ID_ERROR | `goaway_rules` |
//! | §7.2.5 PUSH_PROMISE to a client that sent no MAX_PUSH_ID | conn H3_ID_ERROR | `tests::a_push_stream_to_a_server_and_a_push_promise_to_a_client` |
//! | §7.2.5 PUSH_PROMISE to a server (request stream) | conn H3_FRAME_UNEXPECTED | `control_frames_on_request_streams` |
//! | §7.2.7 MAX_PUSH_ID to a client | conn H3_FRAME_UNEXPECTED | `push_rules_at_the_client` |
//! | §7.2.7 MAX_PUSH_ID reduced | conn H3_ID_ERROR | `push_rules_at_the_server` |
//! | §7.2.3 CANCEL_PUSH beyond the allowed / never promised push ID (client and server) | conn H3_ID_ERROR | `push_rules_at_the_client`, `push_rules_at_the_server` |
//! | RFC 9218 §7.2 PRIORITY_UPDATE to a client | conn H3_FRAME_UNEXPECTED | `push_rules_at_the_client` |
//! | RFC 9218 §7.2 PRIORITY_UPDATE for a non-request stream / unpromised push | conn H3_ID_ERROR | `push_rules_at_the_server` |
//! | §10.5 limits: SETTINGS over 64 entries, control frame over 16 KiB, PRIORITY_UPDATE over its limit or for over 1024 streams at once | conn H3_EXCESSIVE_LOAD | `control_stream_frame_rules` |
//! | RFC 9204 §3.1, §2.2.3, §4.5.1.1 invalid static / dynamic reference, impossible Required Insert Count | conn QPACK_DECOMPRESSION_FAILED | `qpack_field_section_errors` |
//! | RFC 9204 §2.1.2 more blocked streams than allowed (a reset blocked stream frees its place) | conn QPACK_DECOMPRESSION_FAILED | `qpack_field_section_errors` |
//! | RFC 9204 §3.2.3, §4.3 capacity over the limit, bad static / relative index, entry too large | conn QPACK_ENCODER_STREAM_ERROR | `qpack_encoder_stream_errors` |
//! | RFC 9204 §4.4 Insert Count Increment 0 or beyond, Section Acknowledgment of nothing | conn QPACK_DECODER_STREAM_ERROR | `qpack_decoder_stream_errors` |

use super::super::frame::{self, put_varint};
use super::super::qpack::instructions as ins;
use super::super::*;
use super::{frame_bytes, get, hdrs, quiet_step, transport_config};
use crate::testing::Pipe;
use crate::Shutdown;

/// An HTTP/3 endpoint whose peer writes raw bytes on its QUIC streams.
struct Raw {
    pipe: Pipe,
    h3: Connection,
    /// Whether the HTTP/3 endpoint is the server (the raw peer then is the client).
    server: bool,
}

impl Raw {
    fn new(server: bool, config: &Config) -> Raw {
        let mut pipe =
            Pipe::new(&mut transport_config(false), &mut transport_config(true)).unwrap();
        pipe.handshake().unwrap();
        let conn = if server {
            &mut pipe.server
        } else {
            &mut pipe.client
        };
        let h3 = Connection::with_transport(conn, config).unwrap();
        Raw { pipe, h3, server }
    }

    /// An HTTP/3 server and a raw client that opened its control stream (empty SETTINGS) and
    /// its QPACK streams.
    fn server() -> Raw {
        Self::server_with(&Config::new().unwrap())
    }

    fn server_with(config: &Config) -> Raw {
        let mut r = Raw::new(true, config);
        r.open_peer_streams();
        r
    }

    /// An HTTP/3 client and a raw server (control and QPACK streams open); the client sent
    /// a GET on stream 0, which the server's transport has seen.
    fn client() -> Raw {
        Self::client_request(true)
    }

    /// As [`Raw::client`], the request's stream left open or not: a stream the client
    /// still sends on shows its resets to the server.
    fn client_request(fin: bool) -> Raw {
        let mut r = Raw::new(false, &Config::new().unwrap());
        r.open_peer_streams();
        let id =
            r.h3.send_request(&mut r.pipe.client, &get("/"), fin)
                .unwrap();
        assert_eq!(id, 0);
        r.run();
        r
    }

    /// The raw peer's n-th unidirectional stream (0: control, 1: QPACK encoder, 2: decoder).
    fn peer_uni(&self, n: u64) -> u64 {
        (if self.server { 2 } else { 3 }) + 4 * n
    }

    fn open_peer_streams(&mut self) {
        let mut control = vec![0x00];
        control.extend(frame_bytes(frame::SETTINGS, &[]));
        self.send(self.peer_uni(0), &control, false);
        self.send(self.peer_uni(1), &[0x02], false);
        self.send(self.peer_uni(2), &[0x03], false);
    }

    /// The raw peer's transport.
    fn peer(&mut self) -> &mut crate::Connection {
        if self.server {
            &mut self.pipe.client
        } else {
            &mut self.pipe.server
        }
    }

    fn local(&mut self) -> &mut crate::Connection {
        if self.server {
            &mut self.pipe.server
        } else {
            &mut self.pipe.client
        }
    }

    /// The raw peer writes `bytes` on stream `id`.
    fn send(&mut self, id: u64, bytes: &[u8], fin: bool) {
        assert_eq!(self.peer().stream_send(id, bytes, fin), Ok(bytes.len()));
    }

    /// Writes frames on the peer's control stream.
    fn control(&mut self, frames: &[u8]) {
        self.send(self.peer_uni(0), frames, false);
    }

    /// Polls the endpoint (reading bodies as they come) and moves the pipe until it is quiet.
    fn run(&mut self) -> Vec<(u64, Event)> {
        let mut events = Vec::new();
        let mut buf = [0u8; 1000];
        for _ in 0..100 {
            let conn = if self.server {
                &mut self.pipe.server
            } else {
                &mut self.pipe.client
            };
            while let Ok((id, ev)) = self.h3.poll(conn) {
                if ev == Event::Data {
                    while self.h3.recv_body(conn, id, &mut buf).is_ok() {}
                }
                events.push((id, ev));
            }
            if !quiet_step(&mut self.pipe) {
                break;
            }
        }
        events
    }

    /// The code the endpoint closed the connection with (`None` if it did not): the one the
    /// peer received, checked against the endpoint's own record.
    fn close_code(&mut self) -> Option<u64> {
        self.run();
        let seen = self.peer().peer_error().cloned()?;
        let sent = self
            .local()
            .local_error()
            .cloned()
            .expect("closed by the endpoint");
        assert!(seen.is_app && sent.is_app, "{seen:?} {sent:?}");
        assert_eq!(seen.error_code, sent.error_code);
        Some(seen.error_code)
    }

    /// How the endpoint ended stream `id`, as the peer's transport sees it: the RESET_STREAM
    /// and STOP_SENDING codes. The connection must still be open.
    fn stream_error(&mut self, id: u64) -> (Option<u64>, Option<u64>) {
        self.run();
        assert_eq!(self.peer().peer_error(), None, "a stream error only");
        // STOP_SENDING first: reading the stream to its end may let the transport free it.
        let stopped = match self.peer().stream_capacity(id) {
            Err(crate::Error::StreamStopped(code)) => Some(code),
            _ => None,
        };
        let mut buf = [0u8; 1000];
        let mut reset = None;
        for _ in 0..100 {
            match self.peer().stream_recv(id, &mut buf) {
                Err(crate::Error::StreamReset(code)) => {
                    reset = Some(code);
                    break;
                }
                Ok((n, false)) if n > 0 => {}
                _ => break,
            }
        }
        (reset, stopped)
    }

    /// Asserts the endpoint ended stream `id` with `code` (a reset, a STOP_SENDING or both,
    /// none with another code).
    fn assert_stream_error(&mut self, id: u64, code: u64, what: &str) {
        let (reset, stopped) = self.stream_error(id);
        assert!(
            (reset == Some(code) || stopped == Some(code))
                && reset.is_none_or(|c| c == code)
                && stopped.is_none_or(|c| c == code),
            "{what}: reset {reset:?}, stop {stopped:?}, want {code:#x}"
        );
    }
}

/// A HEADERS frame with `list` encoded without the dynamic table.
fn headers(list: &[(&str, &str)]) -> Vec<u8> {
    let mut section = Vec::new();
    qpack::Encoder::new()
        .encode(
            0,
            list.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
            &mut section,
        )
        .unwrap();
    frame_bytes(frame::HEADERS, &section)
}

fn request() -> Vec<u8> {
    headers(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "a.example"),
        (":path", "/"),
    ])
}

fn concat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn varint(v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    put_varint(&mut b, v);
    b
}

/// The server's close code for `bytes` written on request stream 0 (with FIN if `fin`).
fn request_close(bytes: &[u8], fin: bool) -> Option<u64> {
    let mut r = Raw::server();
    r.send(0, bytes, fin);
    r.close_code()
}

/// The client's close code for `bytes` written by the server on the response stream 0.
fn response_close(bytes: &[u8], fin: bool) -> Option<u64> {
    let mut r = Raw::client();
    r.send(0, bytes, fin);
    r.close_code()
}

/// The server's close code for frames written on the client's control stream after SETTINGS.
fn control_close(frames: &[u8]) -> Option<u64> {
    let mut r = Raw::server();
    r.control(frames);
    r.close_code()
}

/// The client's close code for frames written on the server's control stream after SETTINGS.
fn client_control_close(frames: &[u8]) -> Option<u64> {
    let mut r = Raw::client();
    r.control(frames);
    r.close_code()
}

// ------------------------------------------------------------------------------------------
// §4.1: frame sequences.

#[test]
fn frame_sequence_on_request_streams() {
    let trailers = headers(&[("x-checksum", "1")]);
    let data = frame_bytes(frame::DATA, b"body");
    let req = request();
    for (what, bytes) in [
        (
            "HEADERS after trailers",
            concat(&[&req, &trailers, &trailers]),
        ),
        (
            "DATA after trailers",
            concat(&[&req, &data, &trailers, &data]),
        ),
        (
            "DATA after empty trailers",
            concat(&[&req, &trailers, &data]),
        ),
    ] {
        assert_eq!(
            request_close(&bytes, false),
            Some(wire::FRAME_UNEXPECTED),
            "{what}"
        );
    }
}

#[test]
fn frame_sequence_on_response_streams() {
    let ok = headers(&[(":status", "200")]);
    let early = headers(&[(":status", "103")]);
    let trailers = headers(&[("x-checksum", "1")]);
    let data = frame_bytes(frame::DATA, b"body");
    for (what, bytes) in [
        ("DATA before the response", data.clone()),
        ("DATA after an interim response", concat(&[&early, &data])),
        (
            "HEADERS after trailers",
            concat(&[&ok, &trailers, &trailers]),
        ),
        (
            "DATA after trailers",
            concat(&[&ok, &data, &trailers, &data]),
        ),
    ] {
        assert_eq!(
            response_close(&bytes, false),
            Some(wire::FRAME_UNEXPECTED),
            "{what}"
        );
    }
    // Interim, final, body and trailers are a valid sequence.
    let mut r = Raw::client();
    r.send(0, &concat(&[&early, &ok, &data, &trailers]), true);
    let ev = r.run();
    assert_eq!(ev.last(), Some(&(0, Event::Finished)), "{ev:?}");
    assert_eq!(r.pipe.server.peer_error(), None);
}

#[test]
fn a_second_message_on_a_stream_is_malformed() {
    // A second request is a "trailer section" with pseudo-headers.
    let mut r = Raw::server();
    r.send(0, &concat(&[&request(), &request()]), true);
    r.assert_stream_error(0, wire::MESSAGE_ERROR, "second request");
    // A second final response.
    let ok = headers(&[(":status", "200")]);
    let mut r = Raw::client();
    r.send(0, &concat(&[&ok, &ok]), false);
    r.assert_stream_error(0, wire::MESSAGE_ERROR, "second response");
}

#[test]
fn incomplete_messages() {
    // Only reserved frames, then the end: no request.
    let mut r = Raw::server();
    r.send(0, &frame_bytes(frame::grease_id(5), b"x"), true);
    r.assert_stream_error(0, wire::REQUEST_INCOMPLETE, "no HEADERS");
    // A response stream that ends after an interim response only, or with nothing (the
    // request stream stays open, so that the client's reset shows).
    let mut r = Raw::client_request(false);
    r.send(0, &headers(&[(":status", "103")]), true);
    r.assert_stream_error(0, wire::MESSAGE_ERROR, "interim only");
    let mut r = Raw::client_request(false);
    r.send(0, &[], true);
    r.assert_stream_error(0, wire::MESSAGE_ERROR, "empty response stream");
}

#[test]
fn requests_beyond_our_goaway_are_rejected() {
    let mut r = Raw::server();
    r.send(0, &request(), true);
    let ev = r.run();
    assert!(matches!(ev[0], (0, Event::Headers { .. })), "{ev:?}");
    r.h3.send_goaway(&mut r.pipe.server, 4).unwrap();
    r.run();
    r.send(4, &request(), true);
    r.assert_stream_error(4, wire::REQUEST_REJECTED, "beyond GOAWAY");
    let ev = r.run();
    assert!(ev.iter().all(|(id, _)| *id != 4), "not processed: {ev:?}");
}

// ------------------------------------------------------------------------------------------
// §4.1.2, §4.2, §4.3: malformed messages.

const REQ: [(&str, &str); 4] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "a.example"),
    (":path", "/"),
];

fn req_with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut l = REQ.to_vec();
    l.extend_from_slice(extra);
    l
}

fn req_without(name: &str) -> Vec<(&'static str, &'static str)> {
    REQ.iter().copied().filter(|(n, _)| *n != name).collect()
}

/// Whether the server accepts the request `list` (a Headers event), or resets it with
/// H3_MESSAGE_ERROR (false); anything else fails the test.
fn server_accepts(config: &Config, list: &[(&str, &str)]) -> bool {
    let mut r = Raw::server_with(config);
    r.send(0, &headers(list), true);
    let ev = r.run();
    if ev.iter().any(|e| matches!(e, (0, Event::Headers { .. }))) {
        assert_eq!(r.pipe.client.peer_error(), None);
        return true;
    }
    r.assert_stream_error(0, wire::MESSAGE_ERROR, &format!("{list:?}"));
    false
}

#[test]
fn malformed_requests() {
    let config = Config::new().unwrap();
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("uppercase name", req_with(&[("Accept", "*/*")])),
        ("space in a name", req_with(&[("x y", "1")])),
        ("colon inside a name", req_with(&[("x:y", "1")])),
        ("NUL in a value", req_with(&[("x", "a\0b")])),
        ("CR in a value", req_with(&[("x", "a\rb")])),
        ("LF in a value", req_with(&[("x", "a\nb")])),
        ("leading space in a value", req_with(&[("x", " a")])),
        ("trailing tab in a value", req_with(&[("x", "a\t")])),
        ("DEL in a value", req_with(&[("x", "a\x7fb")])),
        ("control character in a value", req_with(&[("x", "a\x1bb")])),
        ("connection", req_with(&[("connection", "close")])),
        ("keep-alive", req_with(&[("keep-alive", "timeout=5")])),
        ("proxy-connection", req_with(&[("proxy-connection", "x")])),
        (
            "transfer-encoding",
            req_with(&[("transfer-encoding", "chunked")]),
        ),
        ("upgrade", req_with(&[("upgrade", "websocket")])),
        ("te other than trailers", req_with(&[("te", "gzip")])),
        ("undefined pseudo-header", req_with(&[(":foo", "bar")])),
        ("response pseudo-header", req_with(&[(":status", "200")])),
        ("repeated :method", req_with(&[(":method", "GET")])),
        (
            "pseudo-header after a field",
            vec![
                (":method", "GET"),
                (":scheme", "https"),
                ("x", "1"),
                (":authority", "a"),
                (":path", "/"),
            ],
        ),
        ("no :method", req_without(":method")),
        ("no :scheme", req_without(":scheme")),
        ("no :path", req_without(":path")),
        ("no :authority nor host", req_without(":authority")),
        (
            "empty :path",
            vec![
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "a"),
                (":path", ""),
            ],
        ),
        (
            "empty :authority",
            vec![
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", ""),
                (":path", "/"),
            ],
        ),
        (
            "empty :authority with a host",
            vec![
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", ""),
                (":path", "/"),
                ("host", "a.example"),
            ],
        ),
        (
            "empty host",
            [req_without(":authority"), vec![("host", "")]].concat(),
        ),
        (
            "host and :authority differ",
            req_with(&[("host", "b.example")]),
        ),
        (
            "userinfo in an https :authority",
            vec![
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "user@a.example"),
                (":path", "/"),
            ],
        ),
        (
            "CONNECT with :scheme and :path",
            vec![
                (":method", "CONNECT"),
                (":authority", "a:443"),
                (":path", "/"),
            ],
        ),
        ("CONNECT without :authority", vec![(":method", "CONNECT")]),
        (
            "CONNECT with an empty :authority",
            vec![(":method", "CONNECT"), (":authority", "")],
        ),
        (
            ":protocol without extended CONNECT",
            vec![
                (":method", "CONNECT"),
                (":protocol", "websocket"),
                (":scheme", "https"),
                (":authority", "a"),
                (":path", "/chat"),
            ],
        ),
    ];
    for (what, list) in &cases {
        assert!(!server_accepts(&config, list), "{what} was accepted");
    }
    for (what, list) in [
        ("te: trailers", req_with(&[("te", "trailers")])),
        ("tab and space inside a value", req_with(&[("x", "a \tb")])),
        ("obs-text in a value", req_with(&[("x", "caf\u{e9}")])),
        ("empty value", req_with(&[("x", "")])),
        (
            "host only",
            [req_without(":authority"), vec![("host", "a")]].concat(),
        ),
        (
            "host equal to :authority",
            req_with(&[("host", "a.example")]),
        ),
        (
            "CONNECT",
            vec![(":method", "CONNECT"), (":authority", "a:443")],
        ),
        (
            "OPTIONS *",
            vec![
                (":method", "OPTIONS"),
                (":scheme", "https"),
                (":authority", "a"),
                (":path", "*"),
            ],
        ),
    ] {
        assert!(server_accepts(&config, &list), "{what} was refused");
    }
}

#[test]
fn extended_connect_requests() {
    let mut config = Config::new().unwrap();
    config.enable_extended_connect(true);
    let ws = [
        (":method", "CONNECT"),
        (":protocol", "websocket"),
        (":scheme", "https"),
        (":authority", "a"),
        (":path", "/chat"),
    ];
    assert!(server_accepts(&config, &ws));
    let without = |name: &str| -> Vec<(&str, &str)> {
        ws.iter().copied().filter(|(n, _)| *n != name).collect()
    };
    for (what, list) in [
        ("no :path", without(":path")),
        ("no :scheme", without(":scheme")),
        ("no :authority", without(":authority")),
        (
            ":protocol with GET",
            vec![
                (":method", "GET"),
                (":protocol", "websocket"),
                (":scheme", "https"),
                (":authority", "a"),
                (":path", "/chat"),
            ],
        ),
    ] {
        assert!(!server_accepts(&config, &list), "{what} was accepted");
    }
}

#[test]
fn malformed_responses() {
    let data = frame_bytes(frame::DATA, b"body");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("no :status", headers(&[("server", "x")])),
        ("two-digit :status", headers(&[(":status", "20")])),
        ("non-numeric :status", headers(&[(":status", "2xx")])),
        ("101", headers(&[(":status", "101")])),
        (
            "repeated :status",
            headers(&[(":status", "200"), (":status", "200")]),
        ),
        (
            "request pseudo-header",
            headers(&[(":status", "200"), (":path", "/")]),
        ),
        (
            "uppercase name",
            headers(&[(":status", "200"), ("Server", "x")]),
        ),
        (
            "connection-specific",
            headers(&[(":status", "200"), ("transfer-encoding", "chunked")]),
        ),
        (
            "pseudo-header in trailers",
            concat(&[
                &headers(&[(":status", "200")]),
                &headers(&[(":status", "200"), ("x", "1")]),
            ]),
        ),
        (
            "body longer than content-length",
            concat(&[
                &headers(&[(":status", "200"), ("content-length", "2")]),
                &data,
            ]),
        ),
    ];
    for (what, bytes) in cases {
        let mut r = Raw::client();
        r.send(0, &bytes, false);
        r.assert_stream_error(0, wire::MESSAGE_ERROR, what);
    }
}

#[test]
fn content_length_rules() {
    let data = frame_bytes(frame::DATA, b"12345");
    let post = |len: &'static str| {
        headers(&[
            (":method", "POST"),
            (":scheme", "https"),
            (":authority", "a"),
            (":path", "/"),
            ("content-length", len),
        ])
    };
    let trailers = headers(&[("x-checksum", "1")]);
    for (what, bytes) in [
        ("longer body", concat(&[&post("3"), &data])),
        (
            "shorter body, then trailers",
            concat(&[&post("9"), &data, &trailers]),
        ),
        ("no body", post("1")),
        ("two different lengths", {
            headers(&[
                (":method", "POST"),
                (":scheme", "https"),
                (":authority", "a"),
                (":path", "/"),
                ("content-length", "5"),
                ("content-length", "6"),
            ])
        }),
        ("non-numeric length", concat(&[&post("5a"), &data])),
    ] {
        let mut r = Raw::server();
        r.send(0, &bytes, true);
        r.assert_stream_error(0, wire::MESSAGE_ERROR, what);
    }
    // Matching length with trailers is fine.
    let mut r = Raw::server();
    r.send(0, &concat(&[&post("5"), &data, &trailers]), true);
    let ev = r.run();
    assert_eq!(ev.last(), Some(&(0, Event::Finished)), "{ev:?}");

    // A response to HEAD, a 204 and a 304 announce a length without content.
    for (method, status) in [("HEAD", "200"), ("GET", "204"), ("GET", "304")] {
        let mut r = Raw::new(false, &Config::new().unwrap());
        r.open_peer_streams();
        let req = hdrs(&[
            (":method", method),
            (":scheme", "https"),
            (":authority", "a"),
            (":path", "/"),
        ]);
        r.h3.send_request(&mut r.pipe.client, &req, true).unwrap();
        r.run();
        r.send(
            0,
            &headers(&[(":status", status), ("content-length", "100")]),
            true,
        );
        let ev = r.run();
        assert_eq!(
            ev.last(),
            Some(&(0, Event::Finished)),
            "{method} {status}: {ev:?}"
        );
    }
}

#[test]
fn decoded_field_section_over_the_limit() {
    // A small HEADERS frame (static references) that decodes to more than the limit.
    let mut config = Config::new().unwrap();
    config.set_max_field_section_size(300);
    let mut r = Raw::server_with(&config);
    let mut list = REQ.to_vec();
    list.extend(std::iter::repeat_n(("accept", "*/*"), 10));
    let bytes = headers(&list);
    assert!(bytes.len() < 300);
    r.send(0, &bytes, true);
    r.assert_stream_error(0, wire::EXCESSIVE_LOAD, "decoded size");
}

// ------------------------------------------------------------------------------------------
// §6: streams.

#[test]
fn a_server_initiated_bidi_stream_is_a_stream_creation_error() {
    let mut r = Raw::client();
    r.send(1, &headers(&[(":status", "200")]), false);
    assert_eq!(r.close_code(), Some(wire::STREAM_CREATION_ERROR));
}

#[test]
fn second_qpack_streams() {
    for ty in [0x02, 0x03] {
        let mut r = Raw::server();
        r.send(r.peer_uni(3), &[ty], false);
        assert_eq!(r.close_code(), Some(wire::STREAM_CREATION_ERROR), "{ty}");
    }
}

#[test]
fn critical_streams_closed_or_reset() {
    for n in 0..3 {
        let mut r = Raw::server();
        r.send(r.peer_uni(n), &[], true);
        assert_eq!(
            r.close_code(),
            Some(wire::CLOSED_CRITICAL_STREAM),
            "stream {n} closed"
        );
        let mut r = Raw::server();
        r.run();
        let id = r.peer_uni(n);
        r.peer()
            .stream_shutdown(id, Shutdown::Write, wire::NO_ERROR)
            .unwrap();
        assert_eq!(
            r.close_code(),
            Some(wire::CLOSED_CRITICAL_STREAM),
            "stream {n} reset"
        );
    }
    // At the client too.
    let mut r = Raw::client();
    r.send(r.peer_uni(0), &[], true);
    assert_eq!(r.close_code(), Some(wire::CLOSED_CRITICAL_STREAM));
}

#[test]
fn unknown_uni_streams_are_tolerated() {
    let mut r = Raw::server();
    // An unknown type left open: read no further and asked to stop with
    // H3_STREAM_CREATION_ERROR (§6.2); the peer's answering reset is no error.
    let open = r.peer_uni(3);
    r.send(
        open,
        &concat(&[&varint(frame::grease_id(4)), b"abc"]),
        false,
    );
    let mut stopped = None;
    for _ in 0..50 {
        let _ = r.h3.poll(&mut r.pipe.server);
        // Seen before the peer's transport frees the stream (once its reset is acknowledged).
        if let Err(crate::Error::StreamStopped(code)) = r.pipe.client.stream_capacity(open) {
            stopped = Some(code);
            break;
        }
        quiet_step(&mut r.pipe);
    }
    assert_eq!(stopped, Some(wire::STREAM_CREATION_ERROR));
    // Reset before its type arrived, and reset after a reserved type (§6.2: tolerated).
    let before = r.peer_uni(4);
    r.pipe.client.stream_send(before, &[], false).unwrap();
    r.pipe
        .client
        .stream_shutdown(before, Shutdown::Write, wire::NO_ERROR)
        .unwrap();
    let after = r.peer_uni(5);
    r.send(after, &varint(frame::grease_id(8)), false);
    r.pipe
        .client
        .stream_shutdown(after, Shutdown::Write, frame::grease_id(2))
        .unwrap();
    // A stream type cut by its stream's end.
    let cut = r.peer_uni(6);
    r.send(cut, &[0x40], true);
    let ev = r.run();
    assert_eq!(r.pipe.client.peer_error(), None, "{ev:?}");
    // Many of them, one after another: still no error, and no state kept for the ended ones.
    for i in 0..60 {
        let id = r.peer_uni(7 + i);
        r.send(id, &concat(&[&varint(frame::grease_id(i)), b"pad"]), true);
        r.run();
    }
    assert_eq!(r.pipe.client.peer_error(), None);
    assert!(r.h3.tracked_streams() < 10, "{}", r.h3.tracked_streams());
    // The connection still works.
    r.send(0, &request(), true);
    let ev = r.run();
    assert!(matches!(ev[0], (0, Event::Headers { .. })), "{ev:?}");
}

#[test]
fn push_rules_at_the_client() {
    // A push stream, with no MAX_PUSH_ID sent.
    let mut r = Raw::client();
    r.send(r.peer_uni(3), &[0x01, 0x00], false);
    assert_eq!(r.close_code(), Some(wire::ID_ERROR), "push stream");
    let mut promise = varint(0);
    promise.extend_from_slice(&[0x00, 0x00]);
    for (what, frames, code) in [
        (
            "PUSH_PROMISE on the control stream",
            frame_bytes(frame::PUSH_PROMISE, &promise),
            wire::FRAME_UNEXPECTED,
        ),
        (
            "MAX_PUSH_ID from a server",
            frame_bytes(frame::MAX_PUSH_ID, &[0x05]),
            wire::FRAME_UNEXPECTED,
        ),
        (
            "CANCEL_PUSH beyond the (unset) maximum",
            frame_bytes(frame::CANCEL_PUSH, &[0x00]),
            wire::ID_ERROR,
        ),
        (
            "PRIORITY_UPDATE to a client",
            frame_bytes(frame::PRIORITY_UPDATE_REQUEST, b"\x00u=1"),
            wire::FRAME_UNEXPECTED,
        ),
    ] {
        assert_eq!(client_control_close(&frames), Some(code), "{what}");
    }
}

#[test]
fn push_rules_at_the_server() {
    let max_push = |v| frame_bytes(frame::MAX_PUSH_ID, &varint(v));
    // MAX_PUSH_ID may grow, not shrink.
    let mut r = Raw::server();
    r.control(&concat(&[&max_push(5), &max_push(8), &max_push(8)]));
    assert_eq!(r.close_code(), None);
    assert_eq!(
        control_close(&concat(&[&max_push(5), &max_push(4)])),
        Some(wire::ID_ERROR),
        "MAX_PUSH_ID reduced"
    );
    // We never promise a push: any push ID a client cancels or prioritizes is unknown.
    for (what, frames) in [
        (
            "CANCEL_PUSH without MAX_PUSH_ID",
            frame_bytes(frame::CANCEL_PUSH, &[0x00]),
        ),
        (
            "CANCEL_PUSH of a push never promised",
            concat(&[&max_push(5), &frame_bytes(frame::CANCEL_PUSH, &[0x01])]),
        ),
        (
            "PRIORITY_UPDATE of a push never promised",
            concat(&[
                &max_push(5),
                &frame_bytes(frame::PRIORITY_UPDATE_PUSH, b"\x00u=1"),
            ]),
        ),
        (
            "PRIORITY_UPDATE of a uni stream",
            frame_bytes(frame::PRIORITY_UPDATE_REQUEST, b"\x02u=1"),
        ),
        (
            "PRIORITY_UPDATE of a server-initiated stream",
            frame_bytes(frame::PRIORITY_UPDATE_REQUEST, b"\x01u=1"),
        ),
    ] {
        assert_eq!(control_close(&frames), Some(wire::ID_ERROR), "{what}");
    }
}

// ------------------------------------------------------------------------------------------
// §7: frames.

#[test]
fn control_stream_frame_rules() {
    let settings = |pairs: &[(u64, u64)]| {
        let mut c = vec![0x00];
        c.extend(frame_bytes(
            frame::SETTINGS,
            &frame::settings_payload(pairs),
        ));
        c
    };
    // The first frame decides: anything but SETTINGS, even a reserved type.
    for first in [
        frame_bytes(frame::grease_id(1), b"x"),
        frame_bytes(frame::DATA, b"x"),
        frame_bytes(frame::MAX_PUSH_ID, &[0]),
    ] {
        let mut r = Raw::new(true, &Config::new().unwrap());
        r.send(2, &concat(&[&[0x00], &first]), false);
        assert_eq!(r.close_code(), Some(wire::MISSING_SETTINGS), "{first:?}");
    }
    for ty in [frame::HEADERS, 0x2, 0x6, 0x8, 0x9] {
        assert_eq!(
            control_close(&frame_bytes(ty, &[0x00])),
            Some(wire::FRAME_UNEXPECTED),
            "type {ty:#x}"
        );
    }
    type Case = (&'static str, Vec<(u64, u64)>, u64);
    let bad_settings: [Case; 8] = [
        ("0x00", vec![(0x0, 1)], wire::SETTINGS_ERROR),
        ("0x02", vec![(0x2, 1)], wire::SETTINGS_ERROR),
        ("0x03", vec![(0x3, 1)], wire::SETTINGS_ERROR),
        ("0x04", vec![(0x4, 1)], wire::SETTINGS_ERROR),
        ("0x05", vec![(0x5, 1)], wire::SETTINGS_ERROR),
        (
            "ENABLE_CONNECT_PROTOCOL = 2",
            vec![(frame::SETTINGS_ENABLE_CONNECT_PROTOCOL, 2)],
            wire::SETTINGS_ERROR,
        ),
        (
            "H3_DATAGRAM = 2",
            vec![(frame::SETTINGS_H3_DATAGRAM, 2)],
            wire::SETTINGS_ERROR,
        ),
        (
            "65 settings",
            (0..65).map(|i| (frame::grease_id(i), i)).collect(),
            wire::EXCESSIVE_LOAD,
        ),
    ];
    for (what, pairs, code) in bad_settings {
        let mut r = Raw::new(true, &Config::new().unwrap());
        r.send(2, &settings(&pairs), false);
        assert_eq!(r.close_code(), Some(code), "{what}");
    }
    // Frames we keep whole are bounded.
    let mut big = Vec::new();
    frame::put_frame_header(&mut big, frame::GOAWAY, 1 << 20);
    assert_eq!(control_close(&big), Some(wire::EXCESSIVE_LOAD), "GOAWAY");
    let long_priority = concat(&[b"\x00u=1, ", &[b'a'; 400]]);
    assert_eq!(
        control_close(&frame_bytes(frame::PRIORITY_UPDATE_REQUEST, &long_priority)),
        Some(wire::EXCESSIVE_LOAD),
        "PRIORITY_UPDATE"
    );
    // PRIORITY_UPDATE for more streams than a client can have: the values would pile up.
    let mut flood = Vec::new();
    for i in 0..1025u64 {
        let mut p = varint(i * 4);
        p.extend_from_slice(b"u=2");
        flood.extend(frame_bytes(frame::PRIORITY_UPDATE_REQUEST, &p));
    }
    assert_eq!(control_close(&flood), Some(wire::EXCESSIVE_LOAD), "flood");
    // Unknown frames, even large ones, are skipped.
    let mut r = Raw::server();
    r.control(&frame_bytes(frame::grease_id(3), &[7u8; 20_000]));
    assert_eq!(r.close_code(), None);
}

#[test]
fn control_frames_on_request_streams() {
    let mut promise = varint(0);
    promise.extend_from_slice(&[0x00, 0x00]);
    let frames: [(u64, Vec<u8>); 11] = [
        (frame::SETTINGS, vec![]),
        (frame::GOAWAY, vec![0x00]),
        (frame::MAX_PUSH_ID, vec![0x00]),
        (frame::CANCEL_PUSH, vec![0x00]),
        (frame::PUSH_PROMISE, promise),
        (frame::PRIORITY_UPDATE_REQUEST, b"\x00u=1".to_vec()),
        (frame::PRIORITY_UPDATE_PUSH, b"\x00u=1".to_vec()),
        (0x2, vec![0x00]),
        (0x6, vec![0x00]),
        (0x8, vec![0x00]),
        (0x9, vec![0x00]),
    ];
    for (ty, payload) in frames {
        let f = frame_bytes(ty, &payload);
        assert_eq!(
            request_close(&f, false),
            Some(wire::FRAME_UNEXPECTED),
            "{ty:#x} first"
        );
        assert_eq!(
            request_close(&concat(&[&request(), &f]), false),
            Some(wire::FRAME_UNEXPECTED),
            "{ty:#x} after HEADERS"
        );
    }
}

#[test]
fn control_frames_on_response_streams() {
    let ok = headers(&[(":status", "200")]);
    for (ty, payload) in [
        (frame::SETTINGS, vec![]),
        (frame::GOAWAY, vec![0x00]),
        (frame::MAX_PUSH_ID, vec![0x00]),
        (frame::CANCEL_PUSH, vec![0x00]),
        (frame::PRIORITY_UPDATE_REQUEST, b"\x00u=1".to_vec()),
        (0x2, vec![0x00]),
        (0x6, vec![0x00]),
        (0x8, vec![0x00]),
        (0x9, vec![0x00]),
    ] {
        let f = frame_bytes(ty, &payload);
        assert_eq!(
            response_close(&concat(&[&ok, &f]), false),
            Some(wire::FRAME_UNEXPECTED),
            "{ty:#x}"
        );
    }
}

#[test]
fn frame_payload_lengths() {
    let cases: [(&str, Vec<u8>); 9] = [
        (
            "SETTINGS identifier without value",
            frame_bytes(frame::SETTINGS, &[0x01]),
        ),
        (
            "SETTINGS value cut",
            frame_bytes(frame::SETTINGS, &[0x01, 0x40]),
        ),
        ("GOAWAY empty", frame_bytes(frame::GOAWAY, &[])),
        (
            "GOAWAY extra byte",
            frame_bytes(frame::GOAWAY, &[0x00, 0x00]),
        ),
        (
            "MAX_PUSH_ID extra byte",
            frame_bytes(frame::MAX_PUSH_ID, &[0x00, 0x00]),
        ),
        (
            "MAX_PUSH_ID cut",
            frame_bytes(frame::MAX_PUSH_ID, &[0x80, 0x00]),
        ),
        ("CANCEL_PUSH empty", frame_bytes(frame::CANCEL_PUSH, &[])),
        (
            "PRIORITY_UPDATE empty",
            frame_bytes(frame::PRIORITY_UPDATE_REQUEST, &[]),
        ),
        (
            "PRIORITY_UPDATE element cut",
            frame_bytes(frame::PRIORITY_UPDATE_REQUEST, &[0x40]),
        ),
    ];
    for (what, f) in cases {
        let code = if what.starts_with("SETTINGS") {
            let mut r = Raw::new(true, &Config::new().unwrap());
            r.send(2, &concat(&[&[0x00], &f]), false);
            r.close_code()
        } else {
            control_close(&f)
        };
        assert_eq!(code, Some(wire::FRAME_ERROR), "{what}");
    }
}

#[test]
fn frames_cut_by_the_end_of_the_stream() {
    let mut cut_headers = Vec::new();
    frame::put_frame_header(&mut cut_headers, frame::HEADERS, 10);
    cut_headers.extend_from_slice(&[0, 0, 0]);
    let mut cut_data = request();
    frame::put_frame_header(&mut cut_data, frame::DATA, 10);
    cut_data.extend_from_slice(b"abc");
    let mut cut_unknown = Vec::new();
    frame::put_frame_header(&mut cut_unknown, frame::grease_id(2), 10);
    cut_unknown.push(1);
    for (what, bytes) in [
        ("type only", vec![0x01]),
        ("two-byte type cut", vec![0x40]),
        ("length cut", vec![0x01, 0x40]),
        ("HEADERS payload", cut_headers),
        ("DATA payload", cut_data.clone()),
        ("unknown frame payload", cut_unknown),
        ("frame header after HEADERS", concat(&[&request(), &[0x00]])),
    ] {
        assert_eq!(
            request_close(&bytes, true),
            Some(wire::FRAME_ERROR),
            "{what}"
        );
    }
    // At the client as well.
    let mut resp = headers(&[(":status", "200")]);
    frame::put_frame_header(&mut resp, frame::DATA, 10);
    resp.extend_from_slice(b"abc");
    assert_eq!(response_close(&resp, true), Some(wire::FRAME_ERROR));
}

#[test]
fn goaway_rules() {
    let goaway = |v| frame_bytes(frame::GOAWAY, &varint(v));
    // A server's GOAWAY names a client-initiated bidirectional stream.
    for id in [1, 2, 3, 6] {
        assert_eq!(
            client_control_close(&goaway(id)),
            Some(wire::ID_ERROR),
            "GOAWAY {id}"
        );
    }
    // It may shrink or stay, never grow.
    let mut r = Raw::client();
    r.control(&concat(&[&goaway(8), &goaway(4), &goaway(4)]));
    let ev = r.run();
    assert_eq!(
        ev,
        [(8, Event::GoAway), (4, Event::GoAway), (4, Event::GoAway)]
    );
    assert_eq!(r.close_code(), None);
    assert_eq!(
        client_control_close(&concat(&[&goaway(4), &goaway(8)])),
        Some(wire::ID_ERROR)
    );
    // A client's GOAWAY carries a push ID: any value, but it may not grow either.
    let mut r = Raw::server();
    r.control(&concat(&[&goaway(7), &goaway(3)]));
    assert_eq!(r.close_code(), None);
    assert_eq!(
        control_close(&concat(&[&goaway(3), &goaway(7)])),
        Some(wire::ID_ERROR)
    );
}

// ------------------------------------------------------------------------------------------
// RFC 9204 §6: QPACK errors.

#[test]
fn qpack_field_section_errors() {
    let section = |build: &dyn Fn(&mut Vec<u8>)| {
        let mut s = Vec::new();
        build(&mut s);
        frame_bytes(frame::HEADERS, &s)
    };
    let cases: [(&str, Vec<u8>); 5] = [
        (
            "static index 99",
            section(&|s| {
                ins::section_prefix(s, 0, 0, 0);
                ins::indexed(s, true, 99);
            }),
        ),
        (
            "dynamic reference with Required Insert Count 0",
            section(&|s| {
                ins::section_prefix(s, 0, 0, 0);
                ins::indexed(s, false, 0);
            }),
        ),
        (
            "impossible encoded Required Insert Count",
            section(&|s| {
                ins::section_prefix(s, 1000, 0, 0);
            }),
        ),
        (
            "truncated field line",
            section(&|s| {
                ins::section_prefix(s, 0, 0, 0);
                s.push(0x5f);
            }),
        ),
        ("empty section", section(&|_| {})),
    ];
    for (what, f) in cases {
        assert_eq!(
            request_close(&f, true),
            Some(wire::QPACK_DECOMPRESSION_FAILED),
            "{what}"
        );
    }
    // More blocked streams than we allow: sections that need an insert never sent.
    let mut config = Config::new().unwrap();
    config.set_qpack_blocked_streams(1);
    let mut r = Raw::server_with(&config);
    let blocked = section(&|s| {
        // Required Insert Count 1 (encoded 2 for a 4096-byte table), Base 1.
        ins::section_prefix(s, 2, 1, 1);
        ins::indexed(s, false, 0);
    });
    r.send(0, &blocked, true);
    assert_eq!(r.run(), []);
    assert_eq!(
        r.pipe.client.peer_error(),
        None,
        "one blocked stream is allowed"
    );
    r.send(4, &blocked, true);
    assert_eq!(r.close_code(), Some(wire::QPACK_DECOMPRESSION_FAILED));

    // A blocked stream that the client resets frees its place.
    let mut r = Raw::server_with(&config);
    r.send(0, &blocked, false);
    assert_eq!(r.run(), []);
    r.pipe
        .client
        .stream_shutdown(0, Shutdown::Write, wire::REQUEST_CANCELLED)
        .unwrap();
    assert_eq!(r.run(), [(0, Event::Reset(wire::REQUEST_CANCELLED))]);
    r.send(4, &blocked, true);
    assert_eq!(r.run(), []);
    assert_eq!(
        r.pipe.client.peer_error(),
        None,
        "the reset stream is not counted"
    );
}

#[test]
fn qpack_encoder_stream_errors() {
    let cases: [(&str, Vec<u8>); 5] = {
        let mut over = Vec::new();
        ins::set_capacity(&mut over, DEFAULT_QPACK_MAX_TABLE_CAPACITY + 1);
        let mut bad_static = Vec::new();
        ins::insert_with_name_ref(&mut bad_static, true, 99, b"v", false);
        let mut bad_relative = Vec::new();
        ins::insert_with_name_ref(&mut bad_relative, false, 0, b"v", false);
        let mut bad_duplicate = Vec::new();
        ins::duplicate(&mut bad_duplicate, 0);
        let mut too_large = Vec::new();
        ins::set_capacity(&mut too_large, 64);
        ins::insert_with_literal_name(&mut too_large, b"name", &[b'v'; 100], false);
        [
            ("capacity over the limit", over),
            ("static index 99", bad_static),
            ("relative index in an empty table", bad_relative),
            ("duplicate in an empty table", bad_duplicate),
            ("entry larger than the capacity", too_large),
        ]
    };
    for (what, bytes) in cases {
        let mut r = Raw::server();
        r.send(r.peer_uni(1), &bytes, false);
        assert_eq!(
            r.close_code(),
            Some(wire::QPACK_ENCODER_STREAM_ERROR),
            "{what}"
        );
    }
}

#[test]
fn qpack_decoder_stream_errors() {
    let mut zero = Vec::new();
    ins::insert_count_increment(&mut zero, 0);
    let mut beyond = Vec::new();
    ins::insert_count_increment(&mut beyond, 3);
    let mut ack = Vec::new();
    ins::section_ack(&mut ack, 0);
    for (what, bytes) in [
        ("Insert Count Increment of 0", zero),
        ("Insert Count Increment beyond the inserts", beyond),
        ("Section Acknowledgment with nothing outstanding", ack),
    ] {
        let mut r = Raw::server();
        r.send(r.peer_uni(2), &bytes, false);
        assert_eq!(
            r.close_code(),
            Some(wire::QPACK_DECODER_STREAM_ERROR),
            "{what}"
        );
    }
}

#[test]
fn finished_requests_leave_no_state() {
    // Request after request: the state of those whose streams the transport freed goes.
    let mut p = super::H3Pipe::new();
    for i in 0..40 {
        let id = p
            .client
            .send_request(&mut p.pipe.client, &get(&format!("/{i}")), true)
            .unwrap();
        let ev = p.server_events(2);
        assert_eq!(ev.last(), Some(&(id, Event::Finished)), "{ev:?}");
        p.server
            .send_response(&mut p.pipe.server, id, &hdrs(&[(":status", "204")]), true)
            .unwrap();
        let ev = p.client_events(2);
        assert_eq!(ev.last(), Some(&(id, Event::Finished)), "{ev:?}");
    }
    p.advance();
    let _ = p.server.poll(&mut p.pipe.server);
    let _ = p.client.poll(&mut p.pipe.client);
    // The three critical streams of the peer, and at most a few requests not yet freed.
    assert!(
        p.server.tracked_streams() < 8,
        "{}",
        p.server.tracked_streams()
    );
    assert!(
        p.client.tracked_streams() < 8,
        "{}",
        p.client.tracked_streams()
    );
}

#[test]
fn connect_tunnels_carry_only_data() {
    let data = frame_bytes(frame::DATA, b"tunnelled");
    let trailers = headers(&[("x", "1")]);
    // At the proxy: after the CONNECT request, DATA only.
    let connect = headers(&[(":method", "CONNECT"), (":authority", "a:443")]);
    let mut r = Raw::server();
    r.send(0, &concat(&[&connect, &data]), false);
    let ev = r.run();
    assert!(matches!(ev[0], (0, Event::Headers { .. })), "{ev:?}");
    r.send(0, &trailers, false);
    assert_eq!(r.close_code(), Some(wire::FRAME_UNEXPECTED));
    // At the client: after the 2xx response to CONNECT.
    let mut r = Raw::new(false, &Config::new().unwrap());
    r.open_peer_streams();
    let req = hdrs(&[(":method", "CONNECT"), (":authority", "a:443")]);
    r.h3.send_request(&mut r.pipe.client, &req, false).unwrap();
    r.run();
    r.send(0, &concat(&[&headers(&[(":status", "200")]), &data]), false);
    let ev = r.run();
    assert!(matches!(ev[0], (0, Event::Headers { .. })), "{ev:?}");
    r.send(0, &trailers, false);
    assert_eq!(r.close_code(), Some(wire::FRAME_UNEXPECTED));
    // A GET's response may have trailers.
    let mut r = Raw::client();
    r.send(
        0,
        &concat(&[&headers(&[(":status", "200")]), &data, &trailers]),
        true,
    );
    let ev = r.run();
    assert_eq!(ev.last(), Some(&(0, Event::Finished)), "{ev:?}");
}

#[test]
fn a_request_reset_before_it_was_read_is_reported() {
    // The server rejects a request the client has not polled for yet: the client hears of it.
    let mut r = Raw::client_request(false);
    r.pipe
        .server
        .stream_shutdown(0, Shutdown::Write, wire::REQUEST_REJECTED)
        .unwrap();
    let ev = r.run();
    assert_eq!(ev, [(0, Event::Reset(wire::REQUEST_REJECTED))]);
    assert_eq!(r.pipe.server.peer_error(), None);
}
