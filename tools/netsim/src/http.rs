//! The HTTP/3 applications of the HTTP-layer experiments: a client that issues GET and POST
//! requests with `quiche::h3` and a server that answers `GET /<n>` with `n` body bytes and
//! reads POST bodies, each on one QUIC connection of a [`crate::net::Net`].

use std::collections::HashMap;

use quiche::h3::{self, Event, Header, NameValue};
use quiche::{Config, Connection};

use crate::scenario::{Scenario, Windows};

/// The bytes every body is made of (their value does not matter).
static CHUNK: [u8; 64 * 1024] = [0x5a; 64 * 1024];

/// A QUIC configuration for HTTP/3 (ALPN h3) with `windows` as this endpoint's receive windows
/// and the scenario's congestion control.
pub fn config(s: &Scenario, windows: Windows, server: bool) -> Result<Config, String> {
    let e = |what: &str, e: quiche::Error| format!("{what}: {e:?}");
    let mut c = Config::new(quiche::PROTOCOL_VERSION).map_err(|x| e("config", x))?;
    c.set_application_protos(h3::APPLICATION_PROTOCOL)
        .map_err(|x| e("alpn", x))?;
    // Only a stuck run ends on the idle timeout.
    c.set_max_idle_timeout(120_000);
    c.set_initial_max_data(windows.max_data);
    c.set_initial_max_stream_data_bidi_local(windows.max_stream_data);
    c.set_initial_max_stream_data_bidi_remote(windows.max_stream_data);
    c.set_initial_max_stream_data_uni(windows.max_stream_data);
    // A page's 81 requests may all be open at once, as with quiche-server's 100.
    c.set_initial_max_streams_bidi(128);
    c.set_initial_max_streams_uni(16);
    if let Some(w) = windows.max_window {
        c.set_max_connection_window(w);
    }
    if let Some(w) = windows.max_stream_window {
        c.set_max_stream_window(w);
    }
    c.set_cc_algorithm(s.cc.algorithm);
    c.enable_hystart(s.cc.hystart);
    c.set_hystart_variant(s.cc.hystart_variant);
    c.set_bbr_options(s.cc.bbr);
    c.enable_pacing(s.cc.pacing);
    c.set_initial_congestion_window_packets(s.cc.initial_window_packets);
    if let Some(on) = s.ack_frequency {
        c.enable_ack_frequency(on);
    }
    if server {
        let cert = |name: &str| {
            format!(
                "{}/../../quiche/tests/certs/{name}",
                env!("CARGO_MANIFEST_DIR")
            )
        };
        c.load_cert_chain_from_pem_file(&cert("cert.crt"))
            .map_err(|x| e("certificate", x))?;
        c.load_priv_key_from_pem_file(&cert("cert.key"))
            .map_err(|x| e("private key", x))?;
    } else {
        c.verify_peer(false);
    }
    Ok(c)
}

fn h3_err(what: &str, e: h3::Error) -> String {
    format!("{what}: {e:?}")
}

/// Starts HTTP/3 on `conn` once its handshake is done.
fn ensure_h3(slot: &mut Option<h3::Connection>, conn: &mut Connection) -> Result<bool, String> {
    if slot.is_none() && conn.is_established() {
        let config = h3::Config::new().map_err(|e| h3_err("h3 config", e))?;
        *slot =
            Some(h3::Connection::with_transport(conn, &config).map_err(|e| h3_err("h3 start", e))?);
    }
    Ok(slot.is_some())
}

/// Writes up to `left` body bytes on `stream`, ending it with the last; returns what is left.
fn write_body(
    h3: &mut h3::Connection,
    conn: &mut Connection,
    stream: u64,
    mut left: u64,
) -> Result<u64, String> {
    while left > 0 {
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(CHUNK.len());
        match h3.send_body(conn, stream, &CHUNK[..n], n as u64 == left) {
            Ok(k) => {
                left -= k as u64;
                if k < n {
                    break;
                }
            }
            Err(h3::Error::Done) | Err(h3::Error::StreamBlocked) => break,
            Err(e) => return Err(h3_err("send_body", e)),
        }
    }
    Ok(left)
}

/// Reads every body byte `stream` has now; returns how many.
fn read_body(
    h3: &mut h3::Connection,
    conn: &mut Connection,
    stream: u64,
    buf: &mut [u8],
) -> Result<u64, String> {
    let mut total = 0;
    loop {
        match h3.recv_body(conn, stream, buf) {
            Ok(n) => total += n as u64,
            Err(h3::Error::Done) => return Ok(total),
            Err(e) => return Err(h3_err("recv_body", e)),
        }
    }
}

fn header<'a>(list: &'a [Header], name: &[u8]) -> Option<&'a [u8]> {
    list.iter().find(|h| h.name() == name).map(|h| h.value())
}

/// The server: answers `GET /<n>` with `n` body bytes and reads POST bodies, answering each
/// with an empty 200 once it is complete.
#[derive(Default)]
pub struct Server {
    h3: Option<h3::Connection>,
    /// Responses still being written: stream and body bytes left.
    responses: Vec<(u64, u64)>,
    /// Request bodies being read: stream and bytes read so far.
    uploads: HashMap<u64, u64>,
    /// Bodies read completely, in the order they finished.
    pub finished_uploads: Vec<u64>,
    buf: Vec<u8>,
}

impl Server {
    /// Handles what arrived and writes what the connection accepts.
    pub fn poll(&mut self, conn: &mut Connection) -> Result<(), String> {
        if !ensure_h3(&mut self.h3, conn)? {
            return Ok(());
        }
        if self.buf.is_empty() {
            self.buf = vec![0; 64 * 1024];
        }
        let Some(h3) = self.h3.as_mut() else {
            return Ok(());
        };
        loop {
            let (stream, event) = match h3.poll(conn) {
                Ok(v) => v,
                Err(h3::Error::Done) => break,
                Err(e) => return Err(h3_err("server poll", e)),
            };
            match event {
                Event::Headers { list, .. } => match header(&list, b":method") {
                    Some(b"POST") => {
                        self.uploads.insert(stream, 0);
                    }
                    Some(b"GET") => {
                        let size = header(&list, b":path")
                            .and_then(|p| std::str::from_utf8(p.strip_prefix(b"/")?).ok())
                            .and_then(|p| p.parse::<u64>().ok())
                            .ok_or_else(|| format!("stream {stream}: a path of /<bytes>"))?;
                        let len = size.to_string();
                        let headers = [(":status", "200"), ("content-length", len.as_str())];
                        h3.send_response(conn, stream, &headers, size == 0)
                            .map_err(|e| h3_err("send_response", e))?;
                        self.responses.push((stream, size));
                    }
                    _ => return Err(format!("stream {stream}: unexpected request {list:?}")),
                },
                Event::Data => {
                    let n = read_body(h3, conn, stream, &mut self.buf)?;
                    if let Some(read) = self.uploads.get_mut(&stream) {
                        *read += n;
                    }
                }
                Event::Finished => {
                    if let Some(read) = self.uploads.remove(&stream) {
                        self.finished_uploads.push(read);
                        h3.send_response(conn, stream, &[(":status", "200")], true)
                            .map_err(|e| h3_err("send_response", e))?;
                    }
                }
                Event::Reset(code) => return Err(format!("stream {stream} reset ({code})")),
                Event::PriorityUpdate | Event::GoAway => {}
            }
        }
        for (stream, left) in &mut self.responses {
            *left = write_body(h3, conn, *stream, *left)?;
        }
        self.responses.retain(|&(_, left)| left > 0);
        Ok(())
    }
}

/// A response the client waits for.
struct Pending {
    tag: usize,
    expected: u64,
    received: u64,
}

/// The client: GET requests for a number of bytes and POST uploads, each identified by the
/// caller's tag.
#[derive(Default)]
pub struct Client {
    h3: Option<h3::Connection>,
    pending: HashMap<u64, Pending>,
    /// An upload's stream, tag and body bytes not yet written.
    upload: Option<(u64, usize, u64)>,
    buf: Vec<u8>,
}

impl Client {
    /// Whether HTTP/3 runs (the handshake is done and the control streams are open).
    pub fn ready(&self) -> bool {
        self.h3.is_some()
    }

    /// Requests outstanding.
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    /// Sends `GET /<size>`, whose response is reported under `tag`. The client must be
    /// [`Client::ready`].
    pub fn get(&mut self, conn: &mut Connection, tag: usize, size: u64) -> Result<(), String> {
        let h3 = self.h3.as_mut().ok_or("GET before the handshake")?;
        let path = format!("/{size}");
        let headers = [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "netsim"),
            (":path", path.as_str()),
        ];
        let stream = h3
            .send_request(conn, &headers, true)
            .map_err(|e| h3_err("send_request", e))?;
        self.pending.insert(
            stream,
            Pending {
                tag,
                expected: size,
                received: 0,
            },
        );
        Ok(())
    }

    /// Starts a POST of `size` body bytes, whose (empty) response is reported under `tag`.
    pub fn post(&mut self, conn: &mut Connection, tag: usize, size: u64) -> Result<(), String> {
        let h3 = self.h3.as_mut().ok_or("POST before the handshake")?;
        let len = size.to_string();
        let headers = [
            (":method", "POST"),
            (":scheme", "https"),
            (":authority", "netsim"),
            (":path", "/upload"),
            ("content-length", len.as_str()),
        ];
        let stream = h3
            .send_request(conn, &headers, size == 0)
            .map_err(|e| h3_err("send_request", e))?;
        self.pending.insert(
            stream,
            Pending {
                tag,
                expected: 0,
                received: 0,
            },
        );
        self.upload = Some((stream, tag, size));
        Ok(())
    }

    /// Handles what arrived, writes what the connection accepts and appends the tags of the
    /// responses that completed to `done`.
    pub fn poll(&mut self, conn: &mut Connection, done: &mut Vec<usize>) -> Result<(), String> {
        if !ensure_h3(&mut self.h3, conn)? {
            return Ok(());
        }
        if self.buf.is_empty() {
            self.buf = vec![0; 64 * 1024];
        }
        let Some(h3) = self.h3.as_mut() else {
            return Ok(());
        };
        if let Some((stream, _, left)) = &mut self.upload {
            *left = write_body(h3, conn, *stream, *left)?;
        }
        loop {
            let (stream, event) = match h3.poll(conn) {
                Ok(v) => v,
                Err(h3::Error::Done) => break,
                Err(e) => return Err(h3_err("client poll", e)),
            };
            match event {
                Event::Headers { list, .. } => {
                    if header(&list, b":status") != Some(b"200") {
                        return Err(format!("stream {stream}: response {list:?}"));
                    }
                }
                Event::Data => {
                    let n = read_body(h3, conn, stream, &mut self.buf)?;
                    if let Some(p) = self.pending.get_mut(&stream) {
                        p.received += n;
                    }
                }
                Event::Finished => {
                    let Some(p) = self.pending.remove(&stream) else {
                        continue;
                    };
                    if p.received != p.expected {
                        return Err(format!(
                            "stream {stream}: {} body bytes instead of {}",
                            p.received, p.expected
                        ));
                    }
                    done.push(p.tag);
                }
                Event::Reset(code) => return Err(format!("stream {stream} reset ({code})")),
                Event::PriorityUpdate | Event::GoAway => {}
            }
        }
        // A body whose last bytes were written above may free the upload slot.
        if self.upload.is_some_and(|(_, _, left)| left == 0) {
            self.upload = None;
        }
        Ok(())
    }
}
