//! `recv_body_buf`, `send_body_zc` and `send_additional_headers_with_priority`.

use bytes::BufMut;

use super::{body_of, get, hdrs, quiet_step, transport_config, H3Pipe};
use crate::connection::tests::stream_calls::{bytes_pair, exchange};
use crate::h3::{Config, Connection, Event, Priority};

#[test]
fn recv_body_buf_fills_a_bufmut() {
    let mut p = H3Pipe::new();
    let id = p
        .client
        .send_request(&mut p.pipe.client, &get("/"), true)
        .unwrap();
    p.server_events(2);
    let body = body_of(3000);
    let resp = hdrs(&[(":status", "200")]);
    p.server
        .send_response(&mut p.pipe.server, id, &resp, false)
        .unwrap();
    assert_eq!(
        p.server.send_body(&mut p.pipe.server, id, &body, true),
        Ok(3000)
    );
    let mut got = Vec::new();
    let mut finished = false;
    for _ in 0..200 {
        while let Ok((_, ev)) = p.client.poll(&mut p.pipe.client) {
            finished |= ev == Event::Finished;
        }
        // At most 1000 bytes per call into a growing Vec.
        while let Ok(n) = p
            .client
            .recv_body_buf(&mut p.pipe.client, id, (&mut got).limit(1000))
        {
            assert!(n <= 1000 && n > 0);
        }
        if finished {
            break;
        }
        quiet_step(&mut p.pipe);
    }
    assert!(finished);
    assert_eq!(got, body);
}

#[test]
fn additional_headers_with_priority_reorder_responses() {
    let mut p = H3Pipe::new();
    let a = p
        .client
        .send_request(&mut p.pipe.client, &get("/a"), true)
        .unwrap();
    let b = p
        .client
        .send_request(&mut p.pipe.client, &get("/b"), true)
        .unwrap();
    p.server_events(4);
    let interim = hdrs(&[(":status", "103")]);
    let fin = hdrs(&[(":status", "200")]);
    // After an interim response, the final one sets the priority: the later request becomes
    // the most urgent, the earlier one the least.
    for (id, urgency) in [(a, 7), (b, 0)] {
        p.server
            .send_additional_headers(&mut p.pipe.server, id, &interim, false, false)
            .unwrap();
        p.server
            .send_additional_headers_with_priority(
                &mut p.pipe.server,
                id,
                &fin,
                &Priority::new(urgency, false),
                false,
                false,
            )
            .unwrap();
    }
    let body = body_of(200_000);
    let mut sent = [0usize; 2];
    // Both bodies are offered together; the order on the wire is the transport's choice.
    for _ in 0..50 {
        for (i, id) in [a, b].into_iter().enumerate() {
            if sent[i] < body.len() {
                if let Ok(n) = p
                    .server
                    .send_body(&mut p.pipe.server, id, &body[sent[i]..], true)
                {
                    sent[i] += n;
                }
            }
        }
    }
    let bodies = p.read_bodies_in_order(&[a, b]);
    assert_eq!(
        bodies.first(),
        Some(&b),
        "the urgent response finished first: {bodies:?}"
    );
}

#[test]
fn send_body_zc_sends_the_buffer_and_keeps_the_rest() {
    let mut cc = transport_config(false);
    let mut sc = transport_config(true);
    // The client allows 1000 bytes on the stream at first.
    cc.set_initial_max_stream_data_bidi_local(1000);
    let (mut client, mut server, mut now) = bytes_pair(&mut cc, &mut sc);
    let config = Config::new().unwrap();
    let mut h3c = Connection::with_transport(&mut client, &config).unwrap();
    let mut h3s = Connection::with_transport(&mut server, &config).unwrap();
    exchange(&mut client, &mut server, now);
    let id = h3c.send_request(&mut client, &get("/zc"), true).unwrap();
    exchange(&mut client, &mut server, now);
    while h3s.poll(&mut server).is_ok() {}
    h3s.send_response(&mut server, id, &hdrs(&[(":status", "200")]), false)
        .unwrap();

    let body = bytes::Bytes::from(body_of(5000));
    let mut buf = body.clone();
    let first = h3s.send_body_zc(&mut server, id, &mut buf, true).unwrap();
    assert!(first < 1000, "only what the stream window takes: {first}");
    assert_eq!(buf.len(), 5000 - first, "the rest stays with the caller");
    assert_eq!(buf.as_ptr(), body[first..].as_ptr(), "split, not copied");

    let mut got = Vec::new();
    let mut out = [0u8; 4096];
    for _ in 0..200 {
        if !buf.is_empty() {
            if let Ok(n) = h3s.send_body_zc(&mut server, id, &mut buf, true) {
                if n == buf.len() {
                    buf.clear();
                }
            }
        }
        now += std::time::Duration::from_millis(1);
        exchange(&mut client, &mut server, now);
        while h3c.poll(&mut client).is_ok() {}
        while let Ok(n) = h3c.recv_body(&mut client, id, &mut out) {
            got.extend_from_slice(&out[..n]);
        }
        if got.len() == body.len() {
            break;
        }
    }
    assert_eq!(got, &body[..]);
}
