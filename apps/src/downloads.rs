//! The client's requests on one connection: one bidirectional stream per URL, as many at once
//! as the server's stream limit allows, more as streams end; bodies go to files or nowhere.
//! Over HTTP/0.9 (`hq-interop`) a request is `GET /path`; over HTTP/3 (`h3`) it is a HEADERS
//! frame through `quiche::h3`, with any method, extra headers and an uploaded body.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use quiche::h3::{self, NameValue};
use quiche::{Connection, Error, Shutdown};

use crate::http09::{FileBody, Url};

/// Application error code with which the client stops a stream it cannot store.
const ERR_CLIENT_WRITE: u64 = 0x101;

/// One request in progress.
struct Download {
    /// Index into the URL list.
    url: usize,
    /// The part of the request the stream did not accept yet.
    unsent: Vec<u8>,
    /// The output file, created with the first body bytes (or the end of an empty body).
    out: Option<BufWriter<File>>,
    bytes: u64,
    /// HTTP/3: the request body still to send.
    upload: Option<FileBody>,
    /// HTTP/3: the response status, once its headers arrived.
    status: Option<u16>,
    /// HTTP/3: whether the final response's content-length was added to the expected total.
    length_known: bool,
}

/// How requests are made: HTTP/0.9, or HTTP/3 with these details.
pub enum Protocol {
    /// `GET /path` lines (ALPN `hq-interop`).
    Http09,
    /// HTTP/3 (ALPN `h3`); boxed, as the HTTP/3 state is large.
    Http3(Box<H3Request>),
}

/// The HTTP/3 request sent for every URL.
pub struct H3Request {
    /// The method (GET, HEAD, POST, PUT ...).
    pub method: String,
    /// Extra header fields (lowercase names).
    pub headers: Vec<(String, String)>,
    /// A file whose bytes are the request body of every request.
    pub body: Option<std::path::PathBuf>,
    conn: Option<h3::Connection>,
}

impl H3Request {
    /// A request with `method`, extra `headers` and an optional body file.
    pub fn new(
        method: String,
        headers: Vec<(String, String)>,
        body: Option<std::path::PathBuf>,
    ) -> Self {
        H3Request {
            method,
            headers,
            body,
            conn: None,
        }
    }
}

/// The header list of a request for `url`.
fn request_headers(method: &str, extra: &[(String, String)], url: &Url) -> Vec<h3::Header> {
    {
        let mut list = vec![
            h3::Header::new(b":method", method.as_bytes()),
            h3::Header::new(b":scheme", b"https"),
            h3::Header::new(b":authority", url.authority().as_bytes()),
            h3::Header::new(b":path", url.path.as_bytes()),
            h3::Header::new(b"user-agent", b"quiche-rs"),
        ];
        for (name, value) in extra {
            list.push(h3::Header::new(name.as_bytes(), value.as_bytes()));
        }
        list
    }
}

/// How a request ended, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The server reset the stream with this application error code.
    Reset(u64),
    /// The body could not be written locally.
    Write(String),
    /// The connection ended first.
    ConnectionEnded,
    /// The stream could not be used.
    Stream(String),
    /// The HTTP/3 response had this status (not 2xx).
    Status(u16),
}

/// The requests of one connection.
pub struct Downloads<'a> {
    urls: &'a [Url],
    dump_dir: Option<&'a Path>,
    /// The next URL to request.
    next: usize,
    next_stream: u64,
    active: HashMap<u64, Download>,
    /// Body bytes received.
    pub bytes: u64,
    /// Requests whose whole body arrived.
    pub completed: usize,
    /// Failed requests, with their URL index.
    pub failed: Vec<(usize, Failure)>,
    protocol: Protocol,
    /// Whether some request was sent before the handshake completed (0-RTT).
    pub sent_early: bool,
    /// The sum of the content-lengths announced so far, and how many responses announced one.
    announced: (u64, usize),
}

impl<'a> Downloads<'a> {
    /// Requests for `urls` made with `protocol`; bodies are written to `dump_dir` if given.
    pub fn new(urls: &'a [Url], dump_dir: Option<&'a Path>, protocol: Protocol) -> Self {
        Downloads {
            protocol,
            urls,
            dump_dir,
            next: 0,
            next_stream: 0,
            active: HashMap::new(),
            bytes: 0,
            completed: 0,
            failed: Vec::new(),
            sent_early: false,
            announced: (0, 0),
        }
    }

    /// The body bytes to expect in all, once every response announced its content-length
    /// (HTTP/3 downloads only: HTTP/0.9 has no headers, HEAD no body, and uploads count
    /// bytes in both directions). For the progress bar's ETA.
    pub fn expected_bytes(&self) -> Option<u64> {
        let Protocol::Http3(req) = &self.protocol else {
            return None;
        };
        let (sum, count) = self.announced;
        (count == self.urls.len() && req.body.is_none() && req.method != "HEAD").then_some(sum)
    }

    /// Whether every request has ended, one way or the other.
    pub fn done(&self) -> bool {
        self.next >= self.urls.len() && self.active.is_empty()
    }

    /// The URL of request `idx`.
    pub fn url(&self, idx: usize) -> Option<&Url> {
        self.urls.get(idx)
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.active.len()
    }

    /// Opens streams for the next URLs while the server's stream limit allows, and sends what
    /// earlier requests could not.
    pub fn send_requests(&mut self, conn: &mut Connection) {
        if matches!(self.protocol, Protocol::Http3(_)) {
            self.send_h3_requests(conn);
            return;
        }
        for (&id, d) in self.active.iter_mut() {
            if !d.unsent.is_empty() {
                if let Ok(n) = conn.stream_send(id, &d.unsent, true) {
                    d.unsent.drain(..n.min(d.unsent.len()));
                }
            }
        }
        while self.next < self.urls.len() && conn.peer_streams_left_bidi() > 0 {
            let (url, id) = (self.next, self.next_stream);
            self.next += 1;
            self.next_stream += 4;
            let mut request = self.urls[url].request();
            match conn.stream_send(id, &request, true) {
                Ok(n) => {
                    request.drain(..n.min(request.len()));
                }
                Err(Error::Done) => {}
                Err(e) => {
                    self.failed.push((url, Failure::Stream(format!("{e:?}"))));
                    continue;
                }
            }
            self.sent_early |= conn.is_in_early_data();
            log::debug!("stream {id}: GET {}", self.urls[url].path);
            self.active.insert(
                id,
                Download {
                    url,
                    unsent: request,
                    out: None,
                    bytes: 0,
                    upload: None,
                    status: None,
                    length_known: false,
                },
            );
        }
    }

    /// Reads the bodies that arrived into `buf`-sized pieces.
    pub fn read(&mut self, conn: &mut Connection, buf: &mut [u8]) {
        if matches!(self.protocol, Protocol::Http3(_)) {
            self.read_h3(conn, buf);
            return;
        }
        for id in conn.readable() {
            loop {
                let result = conn.stream_recv(id, buf);
                let ended = match result {
                    Ok((n, fin)) => self.on_body(conn, id, buf.get(..n).unwrap_or(&[]), fin),
                    Err(Error::Done) => break,
                    Err(Error::StreamReset(code)) => self.fail(id, Failure::Reset(code)),
                    Err(e) => self.fail(id, Failure::Stream(format!("{e:?}"))),
                };
                if ended {
                    break;
                }
            }
        }
    }

    /// Takes body bytes; returns whether the stream ended.
    fn on_body(&mut self, conn: &mut Connection, id: u64, data: &[u8], fin: bool) -> bool {
        let Some(d) = self.active.get_mut(&id) else {
            return fin;
        };
        d.bytes += data.len() as u64;
        self.bytes += data.len() as u64;
        if let Err(e) = write_body(d, self.dump_dir, &self.urls[d.url], data, fin) {
            let _ = conn.stream_shutdown(id, Shutdown::Read, ERR_CLIENT_WRITE);
            return self.fail(id, Failure::Write(e.to_string()));
        }
        if fin {
            if let Some(d) = self.active.remove(&id) {
                log::debug!("stream {id}: {} bytes", d.bytes);
            }
            self.completed += 1;
        }
        fin
    }

    /// Ends a request as failed (removing what it wrote); always true (the stream ended).
    fn fail(&mut self, id: u64, why: Failure) -> bool {
        if let Some(d) = self.active.remove(&id) {
            if d.out.is_some() {
                if let Some(path) = self.output_path(d.url) {
                    let _ = std::fs::remove_file(path);
                }
            }
            self.failed.push((d.url, why));
        }
        true
    }

    fn output_path(&self, url: usize) -> Option<PathBuf> {
        Some(self.dump_dir?.join(self.urls.get(url)?.file_name()))
    }

    /// Marks every request not completed as failed: the connection ended.
    pub fn abandon(&mut self) {
        let ids: Vec<u64> = self.active.keys().copied().collect();
        for id in ids {
            self.fail(id, Failure::ConnectionEnded);
        }
        while self.next < self.urls.len() {
            self.failed.push((self.next, Failure::ConnectionEnded));
            self.next += 1;
        }
    }
}

/// The HTTP/3 side of [`Downloads`].
impl Downloads<'_> {
    /// Starts the HTTP/3 connection when needed, sends the next requests while the server's
    /// stream limit allows, and continues request bodies.
    fn send_h3_requests(&mut self, conn: &mut Connection) {
        let Protocol::Http3(req) = &mut self.protocol else {
            return;
        };
        if req.conn.is_none() {
            let made = h3::Config::new().and_then(|c| h3::Connection::with_transport(conn, &c));
            match made {
                Ok(h3) => req.conn = Some(h3),
                Err(e) => {
                    log::warn!("{}: h3: {e:?}", conn.trace_id());
                    let _ = conn.close(true, e.to_wire(), b"h3 setup");
                    return;
                }
            }
        }
        let H3Request {
            method,
            headers: extra,
            body: upload_file,
            conn: h3_conn,
        } = &mut **req;
        let Some(h3) = h3_conn.as_mut() else {
            return;
        };
        // Bodies first: they free the streams that later requests wait for.
        for (&id, d) in self.active.iter_mut() {
            if let Some(body) = d.upload.as_mut() {
                match send_upload(conn, h3, id, body) {
                    Ok((sent, done)) => {
                        self.bytes += sent;
                        if done {
                            d.upload = None;
                        }
                    }
                    Err(e) => {
                        log::debug!("stream {id}: upload: {e}");
                        d.upload = None;
                    }
                }
            }
        }
        while self.next < self.urls.len() && conn.peer_streams_left_bidi() > 0 {
            let url = self.next;
            let upload = match upload_file.as_deref().map(FileBody::open).transpose() {
                Ok(upload) => upload,
                Err(e) => {
                    self.next += 1;
                    self.failed
                        .push((url, Failure::Stream(format!("--body: {e}"))));
                    continue;
                }
            };
            let headers = request_headers(method, extra, &self.urls[url]);
            let id = match h3.send_request(conn, &headers, upload.is_none()) {
                Ok(id) => id,
                // No room for the headers yet, or no stream credit: try again later.
                Err(h3::Error::StreamBlocked | h3::Error::Done) => break,
                Err(h3::Error::TransportError(Error::StreamLimit)) => break,
                Err(e) => {
                    self.next += 1;
                    self.failed.push((url, Failure::Stream(format!("{e:?}"))));
                    continue;
                }
            };
            self.next += 1;
            self.sent_early |= conn.is_in_early_data();
            log::debug!("stream {id}: {method} {}", self.urls[url].path);
            let mut d = Download {
                url,
                unsent: Vec::new(),
                out: None,
                bytes: 0,
                upload,
                status: None,
                length_known: false,
            };
            if let Some(body) = d.upload.as_mut() {
                if let Ok((sent, done)) = send_upload(conn, h3, id, body) {
                    self.bytes += sent;
                    if done {
                        d.upload = None;
                    }
                }
            }
            self.active.insert(id, d);
        }
    }

    /// Handles the HTTP/3 events: response headers, bodies, ends and resets.
    fn read_h3(&mut self, conn: &mut Connection, buf: &mut [u8]) {
        let Protocol::Http3(req) = &mut self.protocol else {
            return;
        };
        let Some(mut h3) = req.conn.take() else {
            return;
        };
        loop {
            match h3.poll(conn) {
                Ok((id, h3::Event::Headers { list, .. })) => self.on_h3_headers(id, &list),
                Ok((id, h3::Event::Data)) => loop {
                    match h3.recv_body(conn, id, buf) {
                        Ok(n) => {
                            if self.on_body(conn, id, buf.get(..n).unwrap_or(&[]), false) {
                                break;
                            }
                        }
                        Err(h3::Error::Done) => break,
                        Err(e) => {
                            self.fail(id, Failure::Stream(format!("{e:?}")));
                            break;
                        }
                    }
                },
                Ok((id, h3::Event::Finished)) => self.on_h3_finished(conn, id),
                Ok((id, h3::Event::Reset(code))) => {
                    self.fail(id, Failure::Reset(code));
                }
                Ok((_, h3::Event::PriorityUpdate)) | Ok((_, h3::Event::GoAway)) => {}
                Err(h3::Error::Done) => break,
                Err(e) => {
                    log::debug!("{}: h3 poll: {e:?}", conn.trace_id());
                    break;
                }
            }
        }
        if let Protocol::Http3(req) = &mut self.protocol {
            req.conn = Some(h3);
        }
    }

    fn on_h3_headers(&mut self, id: u64, list: &[h3::Header]) {
        let Some(d) = self.active.get_mut(&id) else {
            return;
        };
        let field = |name: &[u8]| {
            list.iter()
                .find(|h| h.name() == name)
                .and_then(|h| std::str::from_utf8(h.value()).ok())
        };
        let status = field(b":status").and_then(|v| v.parse::<u16>().ok());
        // Interim (1xx) responses come before the final one.
        if status.is_some_and(|s| s >= 200) || d.status.is_none() {
            d.status = status;
        }
        if status.is_some_and(|s| (200..300).contains(&s)) && !d.length_known {
            if let Some(len) = field(b"content-length").and_then(|v| v.parse::<u64>().ok()) {
                d.length_known = true;
                self.announced.0 = self.announced.0.saturating_add(len);
                self.announced.1 += 1;
            }
        }
    }

    fn on_h3_finished(&mut self, conn: &mut Connection, id: u64) {
        let status = self.active.get(&id).and_then(|d| d.status);
        match status {
            Some(200..=299) => {
                self.on_body(conn, id, &[], true);
            }
            Some(s) => {
                self.fail(id, Failure::Status(s));
            }
            None => {
                self.fail(id, Failure::Stream("no response headers".into()));
            }
        }
    }
}

/// Sends as much of an upload as the stream takes: (bytes sent, whether it is complete).
fn send_upload(
    conn: &mut Connection,
    h3: &mut h3::Connection,
    id: u64,
    body: &mut FileBody,
) -> Result<(u64, bool), String> {
    let mut total = 0;
    loop {
        let (chunk, fin) = body.pending().map_err(|e| e.to_string())?;
        let len = chunk.len();
        let sent = match h3.send_body(conn, id, chunk, fin) {
            Ok(n) => n,
            Err(h3::Error::Done) => return Ok((total, false)),
            Err(e) => return Err(format!("{e:?}")),
        };
        body.consume(sent);
        total += sent as u64;
        if sent < len {
            return Ok((total, false));
        }
        if fin {
            return Ok((total, true));
        }
    }
}

fn write_body(
    d: &mut Download,
    dump_dir: Option<&Path>,
    url: &Url,
    data: &[u8],
    fin: bool,
) -> std::io::Result<()> {
    let Some(dir) = dump_dir else {
        return Ok(());
    };
    if d.out.is_none() {
        d.out = Some(BufWriter::with_capacity(
            256 * 1024,
            File::create(dir.join(url.file_name()))?,
        ));
    }
    if let Some(out) = d.out.as_mut() {
        out.write_all(data)?;
        if fin {
            out.flush()?;
        }
    }
    Ok(())
}
