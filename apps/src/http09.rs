//! HTTP/0.9 as the QUIC interop runner speaks it (ALPN `hq-interop`): the client sends
//! `GET /path\r\n` on a bidirectional stream it opens; the server answers with the file's bytes
//! and ends the stream. There are no headers and no status codes: a failure resets the stream.
//!
//! The server side ([`ServerStreams`]) reads requests, confines paths to the served directory
//! and streams files in chunks with back-pressure; URLs and request lines are parsed here too.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use quiche::{Connection, Error, Shutdown};

/// The ALPN protocol of HTTP/0.9 over QUIC in the interop runner.
pub const ALPN: &[u8] = b"hq-interop";

/// Application error code of a reset stream: the file does not exist (or is not served).
pub const ERR_NOT_FOUND: u64 = 404;
/// Application error code of a reset stream: the request could not be parsed.
pub const ERR_BAD_REQUEST: u64 = 400;
/// Application error code of a reset stream: the file could not be read.
pub const ERR_INTERNAL: u64 = 500;

/// A request line longer than this is refused: the server buffers a request until its end.
pub const MAX_REQUEST_LEN: usize = 4096;

/// The largest chunk of a file the server holds in memory per response.
const FILE_CHUNK: usize = 64 * 1024;

/// An `https://host[:port]/path` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// The host name or IP address (IPv6 without brackets).
    pub host: String,
    /// The port (443 when the URL has none).
    pub port: u16,
    /// The path and query, starting with '/'.
    pub path: String,
}

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlError(&'static str);

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for UrlError {}

impl Url {
    /// Parses an `https://` URL. The fragment, if any, is dropped.
    pub fn parse(s: &str) -> Result<Url, UrlError> {
        let rest = s
            .get(..8)
            .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
            .and_then(|_| s.get(8..))
            .ok_or(UrlError("not an https:// URL"))?;
        let rest = rest.split('#').next().unwrap_or("");
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        if authority.contains('@') {
            return Err(UrlError("user information in URLs is not supported"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or(UrlError("unclosed '[' in host"))?;
            match after {
                "" => (host, None),
                _ => (
                    host,
                    Some(after.strip_prefix(':').ok_or(UrlError("bad port"))?),
                ),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(UrlError("empty host"));
        }
        let port = match port {
            None => 443,
            Some(p) => p.parse::<u16>().map_err(|_| UrlError("bad port"))?,
        };
        Ok(Url {
            host: host.to_string(),
            port,
            path,
        })
    }

    /// `host:port`, with brackets around IPv6 addresses.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Whether both URLs name the same server (one connection serves both).
    pub fn same_origin(&self, other: &Url) -> bool {
        self.host.eq_ignore_ascii_case(&other.host) && self.port == other.port
    }

    /// The name a downloaded body is saved under: the last path segment, or `index.html`
    /// for a path ending in '/' (never a name that could leave the output directory).
    pub fn file_name(&self) -> &str {
        let path = self.path.split('?').next().unwrap_or("");
        match path.rsplit('/').next() {
            Some(name) if !name.is_empty() && name != "." && name != ".." => name,
            _ => "index.html",
        }
    }

    /// The HTTP/0.9 request for this URL.
    pub fn request(&self) -> Vec<u8> {
        format!("GET {}\r\n", self.path).into_bytes()
    }
}

/// The path of a complete request line (`GET /path`, with or without the line end), or `None`
/// if it is not one.
pub fn parse_request(line: &[u8]) -> Option<&str> {
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_ascii_whitespace();
    if words.next()? != "GET" {
        return None;
    }
    let path = words.next()?;
    // An HTTP/1.x version may follow; anything more is not a request line.
    match (words.next(), words.next()) {
        (None, _) | (Some(_), None) if path.starts_with('/') => Some(path),
        _ => None,
    }
}

/// The file under `root` (a canonical directory path) that `path` names, if it exists, is a
/// regular file and lies inside `root`. `.` and `..` segments are refused outright, and the
/// canonical path must stay under `root`, so neither `..` nor a symbolic link leaves it. A path
/// that names a directory serves the directory's `index.html`, as web servers do (quiche's
/// example HTTP/3 client asks for `/`).
pub fn resolve(root: &Path, path: &str) -> Option<PathBuf> {
    let path = path.split(['?', '#']).next()?;
    let mut full = root.to_path_buf();
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        if segment == "." || segment == ".." || segment.contains('\0') {
            return None;
        }
        full.push(segment);
    }
    if full.is_dir() {
        full.push("index.html");
    }
    let canonical = full.canonicalize().ok()?;
    (canonical.starts_with(root) && canonical.is_file()).then_some(canonical)
}

/// A file being sent on a stream, a chunk at a time (shared with HTTP/3, which frames the same
/// chunks as DATA).
pub(crate) struct FileBody {
    file: Option<File>,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    /// Bytes of the file not read yet (its size when opened).
    unread: u64,
    /// The file's size when it was opened.
    pub(crate) size: u64,
}

/// How writing a response went.
pub(crate) enum Progress {
    /// All of it was sent, with the end of the stream.
    Done,
    /// The stream or connection window is full: wait until the stream is writable.
    Blocked,
}

impl FileBody {
    pub(crate) fn open(path: &Path) -> std::io::Result<FileBody> {
        let file = File::open(path)?;
        let size = file.metadata()?.len();
        let chunk = usize::try_from(size).map_or(FILE_CHUNK, |s| s.min(FILE_CHUNK));
        Ok(FileBody {
            file: Some(file),
            buf: vec![0; chunk],
            pos: 0,
            len: 0,
            unread: size,
            size,
        })
    }

    /// Reads the next chunk once the previous one was sent.
    fn refill(&mut self) -> std::io::Result<()> {
        if self.pos < self.len || self.unread == 0 {
            return Ok(());
        }
        let n = match self.file.as_mut() {
            Some(f) => f.read(&mut self.buf)?,
            None => 0,
        };
        (self.pos, self.len) = (0, n);
        // A file that shrank while being served ends where reading ended.
        self.unread = if n == 0 {
            0
        } else {
            self.unread.saturating_sub(n as u64)
        };
        if self.unread == 0 {
            self.file = None;
        }
        Ok(())
    }

    /// The bytes to send next, and whether they end the body.
    pub(crate) fn pending(&mut self) -> std::io::Result<(&[u8], bool)> {
        self.refill()?;
        let fin = self.unread == 0;
        Ok((self.buf.get(self.pos..self.len).unwrap_or(&[]), fin))
    }

    /// `n` bytes of [`FileBody::pending`] were sent.
    pub(crate) fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
    }

    /// Sends as much as the stream accepts.
    fn write(&mut self, conn: &mut Connection, id: u64) -> Result<Progress, WriteError> {
        loop {
            let (chunk, fin) = self.pending().map_err(WriteError::Io)?;
            let len = chunk.len();
            match conn.stream_send(id, chunk, fin) {
                Ok(n) => {
                    self.consume(n);
                    if n < len {
                        return Ok(Progress::Blocked);
                    }
                    if fin {
                        return Ok(Progress::Done);
                    }
                }
                Err(Error::Done) => return Ok(Progress::Blocked),
                Err(e) => return Err(WriteError::Quic(e)),
            }
        }
    }
}

enum WriteError {
    Io(std::io::Error),
    Quic(Error),
}

/// The HTTP/0.9 state of one server connection: partial requests and responses in progress.
#[derive(Default)]
pub struct ServerStreams {
    /// Request bytes received so far, by stream.
    requests: HashMap<u64, Vec<u8>>,
    /// Streams whose request was answered while their receive side is still open.
    answered: HashSet<u64>,
    responses: HashMap<u64, FileBody>,
    /// Requests answered with a file (complete or not), for statistics.
    pub served: u64,
    /// Requests answered with a reset.
    pub refused: u64,
}

impl ServerStreams {
    /// Creates an empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Responses still being sent.
    pub fn responses_in_progress(&self) -> usize {
        self.responses.len()
    }

    /// Reads what arrived on readable streams; answers each complete request, serving files
    /// from `root` (canonical).
    pub fn on_readable(&mut self, conn: &mut Connection, root: &Path) {
        let mut buf = [0u8; 4096];
        for id in conn.readable() {
            loop {
                match conn.stream_recv(id, &mut buf) {
                    Ok((n, fin)) => self.on_data(conn, root, id, buf.get(..n).unwrap_or(&[]), fin),
                    Err(Error::Done) => break,
                    Err(e) => {
                        log::debug!("{} stream {id}: {e:?}", conn.trace_id());
                        self.forget(id);
                        break;
                    }
                }
            }
        }
    }

    /// Continues the responses of streams that accept data again.
    pub fn on_writable(&mut self, conn: &mut Connection) {
        if self.responses.is_empty() {
            return;
        }
        for id in conn.writable() {
            self.continue_response(conn, id);
        }
    }

    fn forget(&mut self, id: u64) {
        self.requests.remove(&id);
        self.answered.remove(&id);
        self.responses.remove(&id);
    }

    fn on_data(&mut self, conn: &mut Connection, root: &Path, id: u64, data: &[u8], fin: bool) {
        // Requests come on client-initiated bidirectional streams (id % 4 == 0); anything
        // else, and whatever follows a request, is read and dropped.
        if id % 4 != 0 || self.answered.contains(&id) || self.responses.contains_key(&id) {
            if fin {
                self.answered.remove(&id);
            }
            return;
        }
        let request = self.requests.entry(id).or_default();
        let room = MAX_REQUEST_LEN.saturating_sub(request.len());
        request.extend_from_slice(data.get(..room.min(data.len())).unwrap_or(&[]));
        let line_end = request.iter().position(|&b| b == b'\n');
        if line_end.is_none() && !fin {
            if request.len() >= MAX_REQUEST_LEN {
                self.requests.remove(&id);
                self.refuse(conn, id, ERR_BAD_REQUEST, true);
            }
            return;
        }
        let request = self.requests.remove(&id).unwrap_or_default();
        let line = request
            .get(..line_end.unwrap_or(request.len()))
            .unwrap_or(&[]);
        if !fin {
            self.answered.insert(id);
        }
        match parse_request(line) {
            Some(path) => self.respond(conn, root, id, path),
            None => self.refuse(conn, id, ERR_BAD_REQUEST, !fin),
        }
    }

    fn respond(&mut self, conn: &mut Connection, root: &Path, id: u64, path: &str) {
        let Some(file) = resolve(root, path) else {
            log::info!("{} stream {id}: GET {path}: not found", conn.trace_id());
            self.refuse(conn, id, ERR_NOT_FOUND, false);
            return;
        };
        match FileBody::open(&file) {
            Ok(body) => {
                log::debug!("{} stream {id}: GET {path}", conn.trace_id());
                self.served += 1;
                self.responses.insert(id, body);
                self.continue_response(conn, id);
            }
            Err(e) => {
                log::warn!("{} stream {id}: {}: {e}", conn.trace_id(), file.display());
                self.refuse(conn, id, ERR_INTERNAL, false);
            }
        }
    }

    fn continue_response(&mut self, conn: &mut Connection, id: u64) {
        let Some(body) = self.responses.get_mut(&id) else {
            return;
        };
        match body.write(conn, id) {
            Ok(Progress::Blocked) => {}
            Ok(Progress::Done) => {
                self.responses.remove(&id);
            }
            Err(WriteError::Io(e)) => {
                log::warn!("{} stream {id}: read error: {e}", conn.trace_id());
                self.responses.remove(&id);
                self.refuse(conn, id, ERR_INTERNAL, false);
            }
            Err(WriteError::Quic(e)) => {
                // STOP_SENDING from the client, or a stream the connection gave up on.
                log::debug!("{} stream {id}: {e:?}", conn.trace_id());
                if let Error::StreamStopped(code) = e {
                    let _ = conn.stream_shutdown(id, Shutdown::Write, code);
                }
                self.responses.remove(&id);
            }
        }
    }

    /// Resets the stream with `code`; `stop_reading` also asks the client to stop sending.
    fn refuse(&mut self, conn: &mut Connection, id: u64, code: u64, stop_reading: bool) {
        self.refused += 1;
        if let Err(e) = conn.stream_shutdown(id, Shutdown::Write, code) {
            log::debug!("{} stream {id}: reset: {e:?}", conn.trace_id());
        }
        if stop_reading {
            let _ = conn.stream_shutdown(id, Shutdown::Read, code);
            self.answered.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("https://localhost:4433/a/b.bin").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("localhost", 4433, "/a/b.bin")
        );
        assert_eq!(u.file_name(), "b.bin");
        assert_eq!(u.authority(), "localhost:4433");
        assert_eq!(u.request(), b"GET /a/b.bin\r\n");

        let u = Url::parse("HTTPS://[::1]:443?x=1#frag").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", 443, "/?x=1")
        );
        assert_eq!(u.authority(), "[::1]:443");
        assert_eq!(u.file_name(), "index.html");

        let u = Url::parse("https://example.org").unwrap();
        assert_eq!((u.port, u.path.as_str()), (443, "/"));
        assert!(u.same_origin(&Url::parse("https://EXAMPLE.org:443/x").unwrap()));
        assert!(!u.same_origin(&Url::parse("https://example.org:444/x").unwrap()));
        assert_eq!(
            Url::parse("https://h/dir/..").unwrap().file_name(),
            "index.html"
        );

        for bad in [
            "http://a/x",
            "https://",
            "https://:1/x",
            "https://a:99999/x",
            "https://a:/x",
            "https://[::1/x",
            "https://[::1]x/",
            "https://u@a/x",
            "ftp",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn request_lines() {
        assert_eq!(parse_request(b"GET /a"), Some("/a"));
        assert_eq!(parse_request(b"GET /a\r"), Some("/a"));
        assert_eq!(parse_request(b"GET /a HTTP/1.0"), Some("/a"));
        assert_eq!(parse_request(b"GET a"), None);
        assert_eq!(parse_request(b"POST /a"), None);
        assert_eq!(parse_request(b"GET"), None);
        assert_eq!(parse_request(b"GET /a b c"), None);
        assert_eq!(parse_request(b"\xff\xfe"), None);
    }

    #[test]
    fn paths_stay_inside_the_root() {
        let base = std::env::temp_dir().join(format!("quiche-apps-resolve-{}", std::process::id()));
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.txt"), b"a").unwrap();
        std::fs::write(root.join("sub/b.txt"), b"b").unwrap();
        std::fs::write(base.join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(base.join("secret"), root.join("link")).unwrap();
        let root = root.canonicalize().unwrap();

        assert_eq!(resolve(&root, "/a.txt"), Some(root.join("a.txt")));
        assert_eq!(
            resolve(&root, "/sub//b.txt?q=1"),
            Some(root.join("sub/b.txt"))
        );
        assert_eq!(resolve(&root, "/missing"), None);
        assert_eq!(resolve(&root, "/sub"), None, "no index.html in sub");
        assert_eq!(resolve(&root, "/"), None, "no index.html in the root yet");
        std::fs::write(root.join("index.html"), b"i").unwrap();
        assert_eq!(resolve(&root, "/"), Some(root.join("index.html")));
        assert_eq!(resolve(&root, "/sub/"), None);
        assert_eq!(resolve(&root, "/../secret"), None);
        assert_eq!(resolve(&root, "/sub/../a.txt"), None);
        assert_eq!(resolve(&root, "/./a.txt"), None);
        assert_eq!(
            resolve(&root, "/link"),
            None,
            "symbolic links out of the root"
        );
        assert_eq!(resolve(&root, "/a.txt\0"), None);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
