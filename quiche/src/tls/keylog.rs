//! NSS key log output (`SSLKEYLOGFILE` format) for one connection.
//!
//! Each connection that logs keys has its own [`ConnKeyLog`], which the backend feeds (rustls
//! through its `KeyLog` hook, given a per-connection object; BoringSSL through its key log
//! callback, which finds the connection's object from the `SSL`), so lines never have to be
//! routed between connections by client random: the object simply owns that connection's
//! writer.

use std::fmt;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::Mutex;

/// How many lines are kept while no writer is attached. A TLS 1.3 handshake logs at most six
/// secrets (early, two handshake, two traffic, exporter), so this bound is never reached by a
/// well-behaved connection; it only caps memory if the application never attaches a writer.
const MAX_BUFFERED_LINES: usize = 16;

/// Where the lines of one connection go.
enum Sink {
    /// No writer yet: the client's first secrets are derived as soon as its ClientHello is
    /// built, which can happen before the application calls `set_keylog`.
    Buffered(Vec<String>),
    /// The application's writer.
    Writer(Box<dyn Write + Send>),
}

/// The key log of one connection.
pub(crate) struct ConnKeyLog {
    sink: Mutex<Sink>,
}

impl ConnKeyLog {
    /// A key log that buffers until [`ConnKeyLog::set_writer`] is called.
    pub(crate) fn new() -> Self {
        ConnKeyLog {
            sink: Mutex::new(Sink::Buffered(Vec::new())),
        }
    }

    /// Attaches the writer, flushing the lines logged so far into it.
    pub(crate) fn set_writer(&self, mut writer: Box<dyn Write + Send>) {
        let mut sink = match self.sink.lock() {
            Ok(sink) => sink,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Sink::Buffered(lines) = &*sink {
            for line in lines {
                write_line(&mut writer, line);
            }
        }
        *sink = Sink::Writer(writer);
    }
}

/// Writes one whole line and flushes it, so that a buffered writer shared by several connections
/// (e.g. the same key log file opened in append mode) never holds half a line.
fn write_line(writer: &mut Box<dyn Write + Send>, line: &str) {
    if let Err(e) = writer
        .write_all(line.as_bytes())
        .and_then(|()| writer.flush())
    {
        log::warn!("cannot write key log line: {e}");
    }
}

/// Formats an NSS key log line: `LABEL <client random hex> <secret hex>\n`.
pub(crate) fn format_line(label: &str, client_random: &[u8], secret: &[u8]) -> String {
    let mut line =
        String::with_capacity(label.len() + 2 * (client_random.len() + secret.len()) + 3);
    line.push_str(label);
    line.push(' ');
    push_hex(&mut line, client_random);
    line.push(' ');
    push_hex(&mut line, secret);
    line.push('\n');
    line
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        // Writing into a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
}

impl ConnKeyLog {
    /// Logs one secret.
    pub(crate) fn log_secret(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        self.log_line(format_line(label, client_random, secret));
    }

    /// Logs one whole line, ending in a newline.
    pub(crate) fn log_line(&self, line: String) {
        let mut sink = match self.sink.lock() {
            Ok(sink) => sink,
            Err(poisoned) => poisoned.into_inner(),
        };
        match &mut *sink {
            Sink::Buffered(lines) => {
                if lines.len() < MAX_BUFFERED_LINES {
                    lines.push(line);
                }
            }
            Sink::Writer(writer) => write_line(writer, &line),
        }
    }
}

impl fmt::Debug for ConnKeyLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ConnKeyLog")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A writer whose bytes the test can read back.
    #[derive(Clone, Default)]
    struct SharedBuf(Arc<Mutex<Vec<u8>>>);

    impl Write for SharedBuf {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn line_format_is_nss() {
        let line = format_line(
            "CLIENT_TRAFFIC_SECRET_0",
            &[0x00, 0xab],
            &[0x01, 0xff, 0x10],
        );
        assert_eq!(line, "CLIENT_TRAFFIC_SECRET_0 00ab 01ff10\n");
    }

    #[test]
    fn lines_before_writer_are_buffered_then_flushed_in_order() {
        let log = ConnKeyLog::new();
        log.log_secret("A", &[1], &[2]);
        log.log_secret("B", &[3], &[4]);
        let buf = SharedBuf::default();
        log.set_writer(Box::new(buf.clone()));
        log.log_secret("C", &[5], &[6]);
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text, "A 01 02\nB 03 04\nC 05 06\n");
    }

    #[test]
    fn buffer_is_bounded() {
        let log = ConnKeyLog::new();
        for _ in 0..100 {
            log.log_secret("X", &[1], &[2]);
        }
        let buf = SharedBuf::default();
        log.set_writer(Box::new(buf.clone()));
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), MAX_BUFFERED_LINES);
    }
}
