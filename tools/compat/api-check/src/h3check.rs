//! The HTTP/3 checks: a POST with a body and trailers, answered with a body and trailers, the
//! `poll` events on both sides, then a GOAWAY.

use crate::loopback::{pump, settle, CidGen, Client, Server};
use crate::transport::config;
use crate::{quiche, Paths, Report};
use quiche::h3::NameValue;

fn show(list: &[quiche::h3::Header]) -> String {
    let pairs: Vec<String> = list
        .iter()
        .map(|h| {
            format!(
                "{}={}",
                String::from_utf8_lossy(h.name()),
                String::from_utf8_lossy(h.value())
            )
        })
        .collect();
    pairs.join(" ")
}

/// One side's view of a request stream: the events `poll` gave (runs of Data collapsed into
/// one, since how a body is split into events depends on packetization) and the body read.
#[derive(Default)]
struct Side {
    events: Vec<String>,
    body: Vec<u8>,
    finished: bool,
}

impl Side {
    fn poll(&mut self, h3: &mut quiche::h3::Connection, conn: &mut quiche::Connection) {
        loop {
            match h3.poll(conn) {
                Ok((id, quiche::h3::Event::Headers { list, more_frames })) => {
                    self.events.push(format!(
                        "{id}:Headers[{}] more_frames={more_frames}",
                        show(&list)
                    ));
                }
                Ok((id, quiche::h3::Event::Data)) => {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = h3.recv_body(conn, id, &mut buf) {
                        self.body.extend_from_slice(&buf[..n]);
                    }
                    let e = format!("{id}:Data");
                    if self.events.last() != Some(&e) {
                        self.events.push(e);
                    }
                }
                Ok((id, quiche::h3::Event::Finished)) => {
                    self.events.push(format!("{id}:Finished"));
                    self.finished = true;
                }
                Ok((id, quiche::h3::Event::Reset(code))) => {
                    self.events.push(format!("{id}:Reset({code})"))
                }
                Ok((id, quiche::h3::Event::PriorityUpdate)) => {
                    self.events.push(format!("{id}:PriorityUpdate"))
                }
                Ok((id, quiche::h3::Event::GoAway)) => self.events.push(format!("{id}:GoAway")),
                Err(quiche::h3::Error::Done) => return,
                Err(e) => {
                    self.events.push(format!("error:{e:?}"));
                    return;
                }
            }
        }
    }
}

fn body(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| b'a' + ((i as u8).wrapping_add(seed) % 26))
        .collect()
}

/// Sends the rest of `data` on `id` (`fin` with the last byte); true when all is sent.
fn send_all(
    h3: &mut quiche::h3::Connection,
    conn: &mut quiche::Connection,
    id: u64,
    data: &[u8],
    off: &mut usize,
    fin: bool,
) -> bool {
    while *off < data.len() {
        match h3.send_body(conn, id, &data[*off..], fin) {
            Ok(n) => *off += n,
            Err(_) => return false,
        }
    }
    true
}

/// The request and response exchange.
pub fn run(paths: &Paths, r: &mut Report) {
    let mut server = Server::new(config(
        paths,
        quiche::PROTOCOL_VERSION,
        true,
        quiche::h3::APPLICATION_PROTOCOL,
        r,
    ));
    let mut client_config = config(
        paths,
        quiche::PROTOCOL_VERSION,
        false,
        quiche::h3::APPLICATION_PROTOCOL,
        r,
    );
    let mut cids = CidGen::new(0x4833);
    let mut client = Client::connect(server.local, &mut client_config, &mut cids);
    let ok = pump(&mut client, &mut server, |c, s| {
        c.conn.is_established() && s.only().is_some_and(|sc| sc.conn.is_established())
    });
    r.line("h3.handshake.established", ok);
    if !ok {
        return;
    }
    let mut h3_config = quiche::h3::Config::new().expect("h3::Config::new");
    h3_config.set_max_field_section_size(16 * 1024);
    h3_config.set_qpack_max_table_capacity(0);
    h3_config.set_qpack_blocked_streams(0);
    let mut ch3 = quiche::h3::Connection::with_transport(&mut client.conn, &h3_config)
        .expect("client with_transport");
    {
        let sc = server.only().expect("server connection");
        sc.h3 = Some(
            quiche::h3::Connection::with_transport(&mut sc.conn, &h3_config)
                .expect("server with_transport"),
        );
    }

    let req = [
        quiche::h3::Header::new(b":method", b"POST"),
        quiche::h3::Header::new(b":scheme", b"https"),
        quiche::h3::Header::new(b":authority", b"quic.tech"),
        quiche::h3::Header::new(b":path", b"/upload"),
        quiche::h3::Header::new(b"user-agent", b"api-check"),
    ];
    let req_body = body(20_000, 3);
    let resp_body = body(50_000, 7);
    let sid = ch3.send_request(&mut client.conn, &req, false);
    r.line("h3.client.send_request", format!("{sid:?}"));
    let Ok(sid) = sid else { return };
    let (mut req_off, mut req_trailers, mut resp_started, mut resp_off, mut resp_trailers) =
        (0, false, false, 0, false);
    let mut srv = Side::default();
    let mut cli = Side::default();
    let done = pump(&mut client, &mut server, |c, s| {
        if send_all(&mut ch3, &mut c.conn, sid, &req_body, &mut req_off, false) && !req_trailers {
            let t = [quiche::h3::Header::new(b"x-request-trailer", b"t1")];
            req_trailers = ch3
                .send_additional_headers(&mut c.conn, sid, &t, true, true)
                .is_ok();
        }
        let Some(sc) = s.only() else { return false };
        let h3 = sc.h3.as_mut().expect("server h3");
        srv.poll(h3, &mut sc.conn);
        if srv.finished && !resp_started {
            let resp = [
                quiche::h3::Header::new(b":status", b"200"),
                quiche::h3::Header::new(b"content-type", b"application/octet-stream"),
                quiche::h3::Header::new(b"x-received", srv.body.len().to_string().as_bytes()),
            ];
            resp_started = h3.send_response(&mut sc.conn, sid, &resp, false).is_ok();
        }
        if resp_started
            && send_all(h3, &mut sc.conn, sid, &resp_body, &mut resp_off, false)
            && !resp_trailers
        {
            let t = [quiche::h3::Header::new(b"x-response-trailer", b"t2")];
            resp_trailers = h3
                .send_additional_headers(&mut sc.conn, sid, &t, true, true)
                .is_ok();
        }
        cli.poll(&mut ch3, &mut c.conn);
        cli.finished
    });
    r.line("h3.exchange.done", done);
    for (i, e) in srv.events.iter().enumerate() {
        r.line(&format!("h3.server.event[{i}]"), e);
    }
    r.line("h3.server.request_body_matches", srv.body == req_body);
    for (i, e) in cli.events.iter().enumerate() {
        r.line(&format!("h3.client.event[{i}]"), e);
    }
    r.line("h3.client.response_body_matches", cli.body == resp_body);
    r.line(
        "h3.client.poll(after finished)",
        format!("{:?}", ch3.poll(&mut client.conn).err()),
    );

    // A second request that the server cancels (RESET_STREAM with H3_REQUEST_CANCELLED): the
    // client's poll reports Reset with the code.
    let req2 = [
        quiche::h3::Header::new(b":method", b"GET"),
        quiche::h3::Header::new(b":scheme", b"https"),
        quiche::h3::Header::new(b":authority", b"quic.tech"),
        quiche::h3::Header::new(b":path", b"/cancel-me"),
    ];
    let sid2 = ch3.send_request(&mut client.conn, &req2, true);
    r.line("h3.client.send_request(2)", format!("{sid2:?}"));
    if let Ok(sid2) = sid2 {
        let (mut srv2, mut cli2, mut cancelled) = (Side::default(), Side::default(), false);
        pump(&mut client, &mut server, |c, s| {
            let Some(sc) = s.only() else { return false };
            let h3 = sc.h3.as_mut().expect("server h3");
            srv2.poll(h3, &mut sc.conn);
            if !cancelled && srv2.finished {
                cancelled = sc
                    .conn
                    .stream_shutdown(sid2, quiche::Shutdown::Write, 0x10c)
                    .is_ok();
            }
            cli2.poll(&mut ch3, &mut c.conn);
            !cli2.events.is_empty()
        });
        r.line("h3.server.events(2)", srv2.events.join(" "));
        r.line("h3.server.cancelled(2)", cancelled);
        r.line("h3.client.events(2)", cli2.events.join(" "));
    }

    // GOAWAY from the server: the client's poll reports it with the stream ID.
    {
        let sc = server.only().expect("server connection");
        let h3 = sc.h3.as_mut().expect("server h3");
        r.line(
            "h3.server.send_goaway(8)",
            format!("{:?}", h3.send_goaway(&mut sc.conn, 8)),
        );
    }
    let mut goaway = Side::default();
    pump(&mut client, &mut server, |c, _| {
        goaway.poll(&mut ch3, &mut c.conn);
        !goaway.events.is_empty()
    });
    r.line("h3.client.after_goaway", goaway.events.join(" "));
    r.line(
        "h3.client.send_request(after goaway)",
        format!("{:?}", ch3.send_request(&mut client.conn, &req, true).err()),
    );
    settle(&mut client, &mut server, 5);
    let _ = client.conn.close(true, 0x100, b"");
    pump(&mut client, &mut server, |c, s| {
        c.conn.is_closed() && s.only().is_none_or(|sc| sc.conn.is_closed())
    });
    let sc = server.only().expect("server connection");
    r.line(
        "h3.server.peer_error.error_code",
        format!(
            "{:?}",
            sc.conn.peer_error().map(|e| (e.is_app, e.error_code))
        ),
    );
}
