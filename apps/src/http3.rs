//! The server's HTTP/3 side (ALPN `h3`, RFC 9114, through `quiche::h3`): GET and HEAD of files
//! under the served directory with `content-length` and a `content-type` from the extension,
//! 404 for what is not there, and POST/PUT uploads whose body is read, hashed and answered with
//! its size and SHA-256. Responses stream from the file with back-pressure, as over HTTP/0.9.

use std::collections::HashMap;
use std::path::Path;

use quiche::h3::{self, NameValue};
use quiche::Connection;

use crate::http09::{resolve, FileBody};

/// The ALPN protocol of HTTP/3.
pub const ALPN: &[u8] = b"h3";

/// Request bodies larger than this are refused (413) instead of hashed to the end.
pub const MAX_UPLOAD: u64 = 4 << 30;

/// The largest piece of a request body read at once.
const READ_CHUNK: usize = 64 * 1024;

/// The `content-type` of a file, from its extension.
pub fn content_type(path: &str) -> &'static str {
    let path = path.split(['?', '#']).next().unwrap_or("");
    let ext = path
        .rsplit('/')
        .next()
        .and_then(|name| name.rsplit_once('.'))
        .map(|(_, ext)| ext.to_ascii_lowercase());
    match ext.as_deref() {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("css") => "text/css",
        Some("js" | "mjs") => "text/javascript",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("webp") => "image/webp",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("wasm") => "application/wasm",
        Some("pdf") => "application/pdf",
        _ => "application/octet-stream",
    }
}

/// What is left to send of a response.
enum Body {
    File(FileBody),
    Bytes { data: Vec<u8>, pos: usize },
    Empty,
}

/// A response in progress: headers not sent yet (the stream had no room), then the body.
struct Response {
    headers: Option<Vec<h3::Header>>,
    body: Body,
}

/// An upload being received.
struct Upload {
    hash: ring::digest::Context,
    size: u64,
    too_large: bool,
}

/// The HTTP/3 state of one server connection.
#[derive(Default)]
pub struct H3Server {
    h3: Option<h3::Connection>,
    responses: HashMap<u64, Response>,
    uploads: HashMap<u64, Upload>,
    /// Requests answered with a 2xx response.
    pub served: u64,
    /// Requests answered with an error status.
    pub refused: u64,
}

fn header(name: &str, value: &str) -> h3::Header {
    h3::Header::new(name.as_bytes(), value.as_bytes())
}

fn status_headers(status: u16, content_type: &str, length: u64) -> Vec<h3::Header> {
    vec![
        header(":status", &status.to_string()),
        header("server", "quiche-rs"),
        header("content-type", content_type),
        header("content-length", &length.to_string()),
    ]
}

impl H3Server {
    /// Creates the state; the HTTP/3 connection itself starts with the first readable event.
    pub fn new() -> Self {
        Self::default()
    }

    /// Responses still being sent.
    pub fn responses_in_progress(&self) -> usize {
        self.responses.len()
    }

    /// Handles what arrived: requests, request bodies, resets.
    pub fn on_readable(&mut self, conn: &mut Connection, root: &Path) {
        if self.h3.is_none() {
            let config = match h3::Config::new() {
                Ok(c) => c,
                Err(e) => {
                    log::warn!("{}: h3 config: {e:?}", conn.trace_id());
                    return;
                }
            };
            match h3::Connection::with_transport(conn, &config) {
                Ok(h3) => self.h3 = Some(h3),
                Err(e) => {
                    log::warn!("{}: h3: {e:?}", conn.trace_id());
                    let _ = conn.close(true, e.to_wire(), b"h3 setup");
                    return;
                }
            }
        }
        let Some(mut h3) = self.h3.take() else {
            return;
        };
        loop {
            match h3.poll(conn) {
                Ok((id, h3::Event::Headers { list, .. })) => {
                    self.on_request(conn, &mut h3, root, id, &list)
                }
                Ok((id, h3::Event::Data)) => self.on_body(conn, &mut h3, id),
                Ok((id, h3::Event::Finished)) => self.on_request_end(conn, &mut h3, id),
                Ok((id, h3::Event::Reset(code))) => {
                    log::debug!(
                        "{} stream {id}: reset by the client ({code})",
                        conn.trace_id()
                    );
                    self.responses.remove(&id);
                    self.uploads.remove(&id);
                }
                Ok((_, h3::Event::PriorityUpdate)) | Ok((_, h3::Event::GoAway)) => {}
                Err(h3::Error::Done) => break,
                Err(e) => {
                    log::debug!("{}: h3 poll: {e:?}", conn.trace_id());
                    break;
                }
            }
        }
        self.h3 = Some(h3);
    }

    /// Continues the responses of streams that accept data again.
    pub fn on_writable(&mut self, conn: &mut Connection) {
        if self.responses.is_empty() {
            return;
        }
        let Some(mut h3) = self.h3.take() else {
            return;
        };
        for id in conn.writable() {
            self.continue_response(conn, &mut h3, id);
        }
        self.h3 = Some(h3);
    }

    fn on_request(
        &mut self,
        conn: &mut Connection,
        h3: &mut h3::Connection,
        root: &Path,
        id: u64,
        list: &[h3::Header],
    ) {
        let find = |name: &[u8]| {
            list.iter()
                .find(|h| h.name() == name)
                .map(|h| String::from_utf8_lossy(h.value()).into_owned())
        };
        let method = find(b":method").unwrap_or_default();
        let path = find(b":path").unwrap_or_default();
        log::debug!("{} stream {id}: {method} {path}", conn.trace_id());
        match method.as_str() {
            "GET" | "HEAD" => {
                let head = method == "HEAD";
                match resolve(root, &path).map(|f| FileBody::open(&f)) {
                    Some(Ok(file)) => {
                        self.served += 1;
                        let headers = status_headers(200, content_type(&path), file.size);
                        let body = if head { Body::Empty } else { Body::File(file) };
                        self.respond(conn, h3, id, headers, body);
                    }
                    Some(Err(e)) => {
                        log::warn!("{} stream {id}: {path}: {e}", conn.trace_id());
                        self.error(conn, h3, id, 500, head);
                    }
                    None => self.error(conn, h3, id, 404, head),
                }
            }
            "POST" | "PUT" => {
                self.uploads.insert(
                    id,
                    Upload {
                        hash: ring::digest::Context::new(&ring::digest::SHA256),
                        size: 0,
                        too_large: false,
                    },
                );
            }
            _ => self.error(conn, h3, id, 405, false),
        }
    }

    fn on_body(&mut self, conn: &mut Connection, h3: &mut h3::Connection, id: u64) {
        let mut buf = [0u8; READ_CHUNK];
        loop {
            match h3.recv_body(conn, id, &mut buf) {
                Ok(n) => {
                    if let Some(up) = self.uploads.get_mut(&id) {
                        up.size += n as u64;
                        up.too_large |= up.size > MAX_UPLOAD;
                        if !up.too_large {
                            up.hash.update(buf.get(..n).unwrap_or(&[]));
                        }
                    }
                }
                Err(h3::Error::Done) => break,
                Err(e) => {
                    log::debug!("{} stream {id}: recv_body: {e:?}", conn.trace_id());
                    self.uploads.remove(&id);
                    break;
                }
            }
        }
    }

    fn on_request_end(&mut self, conn: &mut Connection, h3: &mut h3::Connection, id: u64) {
        let Some(up) = self.uploads.remove(&id) else {
            return;
        };
        if up.too_large {
            self.error(conn, h3, id, 413, false);
            return;
        }
        let digest = up.hash.finish();
        let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        let text = format!("{} {hex}\n", up.size).into_bytes();
        log::debug!(
            "{} stream {id}: upload of {} bytes",
            conn.trace_id(),
            up.size
        );
        self.served += 1;
        let headers = status_headers(200, "text/plain; charset=utf-8", text.len() as u64);
        let body = Body::Bytes { data: text, pos: 0 };
        self.respond(conn, h3, id, headers, body);
    }

    fn error(
        &mut self,
        conn: &mut Connection,
        h3: &mut h3::Connection,
        id: u64,
        status: u16,
        head: bool,
    ) {
        self.refused += 1;
        self.uploads.remove(&id);
        let text = match status {
            404 => "not found\n",
            405 => "method not allowed\n",
            413 => "content too large\n",
            _ => "internal error\n",
        };
        let headers = status_headers(status, "text/plain; charset=utf-8", text.len() as u64);
        let body = if head {
            Body::Empty
        } else {
            Body::Bytes {
                data: text.as_bytes().to_vec(),
                pos: 0,
            }
        };
        self.respond(conn, h3, id, headers, body);
    }

    fn respond(
        &mut self,
        conn: &mut Connection,
        h3: &mut h3::Connection,
        id: u64,
        headers: Vec<h3::Header>,
        body: Body,
    ) {
        self.responses.insert(
            id,
            Response {
                headers: Some(headers),
                body,
            },
        );
        self.continue_response(conn, h3, id);
    }

    /// Sends what the stream takes of a response; forgets it once complete or failed.
    fn continue_response(&mut self, conn: &mut Connection, h3: &mut h3::Connection, id: u64) {
        let Some(resp) = self.responses.get_mut(&id) else {
            return;
        };
        match send_response(conn, h3, id, resp) {
            Ok(true) => {
                self.responses.remove(&id);
            }
            Ok(false) => {}
            Err(e) => {
                log::debug!("{} stream {id}: {e}", conn.trace_id());
                self.responses.remove(&id);
            }
        }
    }
}

/// Sends headers, then body, as far as the stream allows. Ok(true) once all went out.
fn send_response(
    conn: &mut Connection,
    h3: &mut h3::Connection,
    id: u64,
    resp: &mut Response,
) -> Result<bool, String> {
    if let Some(headers) = &resp.headers {
        let fin = matches!(resp.body, Body::Empty);
        match h3.send_response(conn, id, headers, fin) {
            Ok(()) => resp.headers = None,
            Err(h3::Error::StreamBlocked | h3::Error::Done) => return Ok(false),
            Err(e) => return Err(format!("send_response: {e:?}")),
        }
        if fin {
            return Ok(true);
        }
    }
    loop {
        let (chunk, fin) = match &mut resp.body {
            Body::Empty => return Ok(true),
            Body::Bytes { data, pos } => (data.get(*pos..).unwrap_or(&[]), true),
            Body::File(file) => file.pending().map_err(|e| format!("read: {e}"))?,
        };
        let len = chunk.len();
        let sent = match h3.send_body(conn, id, chunk, fin) {
            Ok(n) => n,
            Err(h3::Error::Done) => return Ok(false),
            Err(e) => return Err(format!("send_body: {e:?}")),
        };
        match &mut resp.body {
            Body::Bytes { pos, .. } => *pos += sent,
            Body::File(file) => file.consume(sent),
            Body::Empty => {}
        }
        if sent < len {
            return Ok(false);
        }
        if fin {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_follow_the_extension() {
        assert_eq!(content_type("/index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("/a/b.JS?x=1.png"), "text/javascript");
        assert_eq!(content_type("/a/b.JS"), "text/javascript");
        assert_eq!(content_type("/img/x.png"), "image/png");
        assert_eq!(content_type("/noext"), "application/octet-stream");
        assert_eq!(content_type("/dir.d/file"), "application/octet-stream");
    }
}
