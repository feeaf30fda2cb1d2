//! quiche 0.30's zero-copy path and buffer-factory generics: a connection pair built with
//! `connect_with_buffer_factory` / `accept_with_buf_factory` (and a client of
//! `connect_with_dcid_and_buffer_factory`) on a factory of this program's
//! own whose buffers split (`BufSplit`, which `stream_send_zc` and `h3::Connection::
//! send_body_zc` require and quiche's `DefaultBuf` does not have), driven in memory; then
//! `stream_send_zc` and `stream_recv_buf`, `set_qlog_with_level` and `qlog_streamer`, and over
//! HTTP/3 `send_additional_headers_with_priority`, `send_body_zc` and `recv_body_buf`.
//! Printed values are those both stacks must agree on.

use crate::{quiche, Paths, Report};
use std::net::SocketAddr;

/// A buffer that owns its bytes and splits by copying the tail: enough for the calls to be
/// exercised, not meant to be fast.
#[derive(Clone, Debug, Default)]
pub struct SplitBuf(Vec<u8>);

impl AsRef<[u8]> for SplitBuf {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl quiche::BufSplit for SplitBuf {
    fn split_at(&mut self, at: usize) -> Self {
        SplitBuf(self.0.split_off(at))
    }
}

/// The factory of [`SplitBuf`]s.
#[derive(Clone, Debug, Default)]
pub struct SplitFactory;

impl quiche::BufFactory for SplitFactory {
    type Buf = SplitBuf;
    type DgramBuf = Vec<u8>;

    fn buf_from_slice(buf: &[u8]) -> SplitBuf {
        SplitBuf(buf.to_vec())
    }

    fn dgram_buf_from_slice(buf: &[u8]) -> Vec<u8> {
        buf.to_vec()
    }
}

type Conn = quiche::Connection<SplitFactory>;

const CLIENT: &str = "127.0.0.1:41000";
const SERVER: &str = "127.0.0.1:4434";

/// Moves every datagram each side has to the other, `rounds` times.
fn exchange(client: &mut Conn, server: &mut Conn, rounds: usize) {
    let (c, s): (SocketAddr, SocketAddr) = (CLIENT.parse().unwrap(), SERVER.parse().unwrap());
    let mut buf = vec![0; 65535];
    for _ in 0..rounds {
        while let Ok((n, _)) = client.send(&mut buf) {
            let _ = server.recv(&mut buf[..n], quiche::RecvInfo { from: c, to: s });
        }
        while let Ok((n, _)) = server.send(&mut buf) {
            let _ = client.recv(&mut buf[..n], quiche::RecvInfo { from: s, to: c });
        }
    }
}

/// Runs the checks on a connection pair of its own.
pub fn run(paths: &Paths, r: &mut Report) {
    let alpn = quiche::h3::APPLICATION_PROTOCOL;
    let v = quiche::PROTOCOL_VERSION;
    let mut server_config = crate::transport::config(paths, v, true, alpn, r);
    let mut client_config = crate::transport::config(paths, v, false, alpn, r);
    let (c, s): (SocketAddr, SocketAddr) = (CLIENT.parse().unwrap(), SERVER.parse().unwrap());
    let client_cid = quiche::ConnectionId::from_ref(&[0xc7; 16]);
    let server_cid = quiche::ConnectionId::from_ref(&[0x5c; 16]);
    let client = quiche::connect_with_buffer_factory::<SplitFactory>(
        Some("quic.tech"),
        &client_cid,
        c,
        s,
        &mut client_config,
    );
    let server = quiche::accept_with_buf_factory::<SplitFactory>(
        &server_cid,
        None,
        s,
        c,
        &mut server_config,
    );
    r.line("zc.connect_with_buffer_factory", client.is_ok());
    r.line("zc.accept_with_buf_factory", server.is_ok());
    custom_dcid(&mut client_config, (c, s), r);
    let (Ok(mut client), Ok(mut server)) = (client, server) else {
        return;
    };
    let qlog = std::fs::File::create(paths.out.join("zc-client.sqlog")).expect("qlog file");
    client.set_qlog_with_level(
        Box::new(qlog),
        "api-check".to_string(),
        "zero-copy".to_string(),
        quiche::QlogLevel::Extra,
    );
    r.line("zc.qlog_streamer.is_some", client.qlog_streamer().is_some());
    exchange(&mut client, &mut server, 10);
    r.line(
        "zc.established",
        client.is_established() && server.is_established(),
    );
    transport(&mut client, &mut server, r);
    h3(&mut client, &mut server, r);
}

/// `connect_with_dcid_and_buffer_factory` (quiche's feature `custom-client-dcid`): the
/// client's first Initial goes to the destination connection ID it was given.
fn custom_dcid(config: &mut quiche::Config, (c, s): (SocketAddr, SocketAddr), r: &mut Report) {
    let scid = quiche::ConnectionId::from_ref(&[0xc8; 16]);
    let dcid = quiche::ConnectionId::from_ref(&[0xdc; 12]);
    let name = "zc.connect_with_dcid_and_buffer_factory";
    let client = quiche::connect_with_dcid_and_buffer_factory::<SplitFactory>(
        Some("quic.tech"),
        &scid,
        &dcid,
        c,
        s,
        config,
    );
    let mut client = match client {
        Ok(client) => client,
        Err(e) => return r.line(name, format!("{e:?}")),
    };
    r.line(name, "Ok");
    r.line(
        &format!("{name}: destination_id"),
        client.destination_id() == dcid,
    );
    let mut buf = vec![0; 1500];
    let first = client.send(&mut buf).map(|(n, _)| n);
    let on_wire = first.map(|n| {
        quiche::Header::from_slice(&mut buf[..n], quiche::MAX_CONN_ID_LEN)
            .map(|hdr| (hdr.ty, hdr.dcid == dcid, hdr.scid == scid))
    });
    r.line(
        &format!("{name}: first datagram (type, dcid, scid as given)"),
        format!("{on_wire:?}"),
    );
}

/// `stream_send_zc` on stream 4 and `stream_recv_buf` into a `Vec<u8>`.
fn transport(client: &mut Conn, server: &mut Conn, r: &mut Report) {
    let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    let buf = <SplitFactory as quiche::BufFactory>::buf_from_slice(&data);
    match client.stream_send_zc(4, buf, true) {
        Ok((n, rest)) => r.line(
            "zc.client.stream_send_zc(4, 3000, fin)",
            format!("Ok({n}, rest={:?})", rest.map(|b| b.0.len())),
        ),
        Err(e) => r.line("zc.client.stream_send_zc(4, 3000, fin)", format!("{e:?}")),
    }
    exchange(client, server, 5);
    let mut out: Vec<u8> = Vec::new();
    r.line(
        "zc.server.stream_recv_buf(4)",
        format!("{:?}", server.stream_recv_buf(4, &mut out)),
    );
    r.line("zc.server.stream_recv_buf data intact", out == data);
    r.line(
        "zc.server.stream_recv_buf(4) again",
        format!("{:?}", server.stream_recv_buf(4, &mut out)),
    );
}

/// A request whose body goes with `send_body_zc` and whose trailers go with
/// `send_additional_headers_with_priority`; the server reads the body with `recv_body_buf`.
fn h3(client: &mut Conn, server: &mut Conn, r: &mut Report) {
    let h3_config = quiche::h3::Config::new().expect("h3::Config::new");
    let ch3 = quiche::h3::Connection::with_transport(client, &h3_config);
    let sh3 = quiche::h3::Connection::with_transport(server, &h3_config);
    let (Ok(mut ch3), Ok(mut sh3)) = (ch3, sh3) else {
        r.line("zc.h3.with_transport", false);
        return;
    };
    exchange(client, server, 3);
    let req = [
        quiche::h3::Header::new(b":method", b"POST"),
        quiche::h3::Header::new(b":scheme", b"https"),
        quiche::h3::Header::new(b":authority", b"quic.tech"),
        quiche::h3::Header::new(b":path", b"/zc"),
    ];
    let stream = ch3.send_request(client, &req, false);
    r.line("zc.h3.send_request", format!("{stream:?}"));
    let Ok(stream) = stream else {
        return;
    };
    let body: Vec<u8> = (0..2000u32).map(|i| (i % 13) as u8).collect();
    let mut zc = <SplitFactory as quiche::BufFactory>::buf_from_slice(&body);
    r.line(
        "zc.h3.send_body_zc",
        format!("{:?}", ch3.send_body_zc(client, stream, &mut zc, false)),
    );
    let trailers = [quiche::h3::Header::new(b"x-trailer", b"1")];
    let priority = quiche::h3::Priority::new(2, true);
    r.line(
        "zc.h3.send_additional_headers_with_priority(trailers, fin)",
        format!(
            "{:?}",
            ch3.send_additional_headers_with_priority(
                client, stream, &trailers, &priority, true, true
            )
        ),
    );
    exchange(client, server, 5);
    let (mut headers, mut got, mut finished) = (0, Vec::new(), false);
    for _ in 0..20 {
        match sh3.poll(server) {
            Ok((_, quiche::h3::Event::Headers { .. })) => headers += 1,
            Ok((id, quiche::h3::Event::Data)) => {
                let _ = sh3.recv_body_buf(server, id, &mut got);
            }
            Ok((_, quiche::h3::Event::Finished)) => finished = true,
            Ok(_) => (),
            Err(_) => break,
        }
    }
    r.line("zc.h3.server header sections", headers);
    r.line("zc.h3.server recv_body_buf intact", got == body);
    r.line("zc.h3.server finished", finished);
}
