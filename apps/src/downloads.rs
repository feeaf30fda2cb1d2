//! The client's HTTP/0.9 requests on one connection: one bidirectional stream per URL (IDs
//! 0, 4, 8 ...), as many at once as the server's stream limit allows, more as streams end;
//! bodies go to files or nowhere.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use quiche::{Connection, Error, Shutdown};

use crate::http09::Url;

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
    /// Whether some request was sent before the handshake completed (0-RTT).
    pub sent_early: bool,
}

impl<'a> Downloads<'a> {
    /// Requests for `urls`; bodies are written to `dump_dir` if given.
    pub fn new(urls: &'a [Url], dump_dir: Option<&'a Path>) -> Self {
        Downloads {
            urls,
            dump_dir,
            next: 0,
            next_stream: 0,
            active: HashMap::new(),
            bytes: 0,
            completed: 0,
            failed: Vec::new(),
            sent_early: false,
        }
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
                },
            );
        }
    }

    /// Reads the bodies that arrived into `buf`-sized pieces.
    pub fn read(&mut self, conn: &mut Connection, buf: &mut [u8]) {
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
