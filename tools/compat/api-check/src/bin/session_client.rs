//! A client on quiche 0.30's public API that keeps its TLS session in a file across processes,
//! the way quiche applications do: `Connection::session()` after a run, `set_session()` before
//! the next one, with 0-RTT. Built against quiche 0.30.0 (feature `upstream`),
//! tools/compat/sessions.sh uses it to check that sessions written by quiche 0.30 resume on our
//! library and the other way round (our `quiche-client --session-file` on the other end).
//!
//! Usage: `quiche-session-client ADDR PATH SESSION_FILE [--early-data]`: one HTTP/0.9
//! (`hq-interop`) request `GET PATH` to the server at ADDR (certificates not verified). A
//! session in SESSION_FILE (if the file exists and is not empty) is resumed; the session the
//! server gives is written back to it. Prints `bytes: N`, `resumed: BOOL`,
//! `early_data_request: BOOL` (the request went out as 0-RTT data), `early_data_reason: N`
//! (quiche's: 2 = 0-RTT accepted) and `session_saved: BOOL`; exits 0 if the response ended.

// A program on real sockets: it reads the clock to bound its run.
#![allow(clippy::disallowed_methods)]

#[cfg(feature = "ours")]
use quiche_ours as quiche;
#[cfg(all(feature = "upstream", not(feature = "ours")))]
use quiche_upstream as quiche;

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

/// The longest the whole run may take.
const RUN_LIMIT: Duration = Duration::from_secs(10);
/// After the response, how long to wait for the server's session ticket if none came yet.
const TICKET_WAIT: Duration = Duration::from_secs(1);
const MAX_DATAGRAM: usize = 1350;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let early_data = args.iter().any(|a| a == "--early-data");
    let positional: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let [addr, path, session_file] = positional[..] else {
        eprintln!("usage: quiche-session-client ADDR PATH SESSION_FILE [--early-data]");
        std::process::exit(2);
    };
    let peer: SocketAddr = addr
        .parse()
        .unwrap_or_else(|e| fail(&format!("{addr}: {e}")));
    match run(peer, path, Path::new(session_file), early_data) {
        Ok(()) => {}
        Err(e) => fail(&e),
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("quiche-session-client: {msg}");
    std::process::exit(1);
}

fn config(early_data: bool) -> Result<quiche::Config, String> {
    let err = |e: quiche::Error| format!("config: {e:?}");
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(err)?;
    config.verify_peer(false);
    config
        .set_application_protos(&[b"hq-interop"])
        .map_err(err)?;
    config.set_max_idle_timeout(5_000);
    config.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    config.set_max_send_udp_payload_size(MAX_DATAGRAM);
    config.set_initial_max_data(10_000_000);
    config.set_initial_max_stream_data_bidi_local(1_000_000);
    config.set_initial_max_stream_data_bidi_remote(1_000_000);
    config.set_initial_max_streams_bidi(16);
    config.set_initial_max_streams_uni(16);
    if early_data {
        config.enable_early_data();
    }
    Ok(config)
}

/// A connection ID from the clock and the process ID: unique enough for a test client.
fn scid() -> quiche::ConnectionId<'static> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos ^ (u64::from(std::process::id()) << 32) | 1;
    let mut v = Vec::with_capacity(16);
    while v.len() < 16 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(16);
    quiche::ConnectionId::from_vec(v)
}

fn run(peer: SocketAddr, path: &str, session_file: &Path, early_data: bool) -> Result<(), String> {
    let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let local = sock.local_addr().map_err(|e| e.to_string())?;
    let mut config = config(early_data)?;
    let mut conn = quiche::connect(None, &scid(), local, peer, &mut config)
        .map_err(|e| format!("connect: {e:?}"))?;
    match std::fs::read(session_file) {
        Ok(bytes) if !bytes.is_empty() => conn
            .set_session(&bytes)
            .map_err(|e| format!("set_session: {e:?}"))?,
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", session_file.display())),
    }

    let start = Instant::now();
    let (mut out, mut buf) = ([0u8; MAX_DATAGRAM], [0u8; 65536]);
    let mut request_sent = false;
    let mut early_data_request = false;
    let mut bytes = 0usize;
    let mut done_at: Option<Instant> = None;
    let mut closing = false;
    loop {
        if !request_sent && (conn.is_established() || conn.is_in_early_data()) {
            early_data_request = !conn.is_established();
            let request = format!("GET {path}\r\n");
            conn.stream_send(0, request.as_bytes(), true)
                .map_err(|e| format!("stream_send: {e:?}"))?;
            request_sent = true;
        }
        loop {
            match conn.send(&mut out) {
                Ok((n, info)) => {
                    sock.send_to(&out[..n], info.to)
                        .map_err(|e| format!("send_to: {e}"))?;
                }
                Err(quiche::Error::Done) => break,
                Err(e) => return Err(format!("send: {e:?}")),
            }
        }
        if conn.is_closed() {
            break;
        }
        if let Some(at) = done_at {
            if !closing && (conn.session().is_some() || at.elapsed() >= TICKET_WAIT) {
                conn.close(true, 0, b"done").ok();
                closing = true;
                continue;
            }
        }
        if start.elapsed() >= RUN_LIMIT {
            return Err(format!("no complete response within {RUN_LIMIT:?}"));
        }
        let wait = conn
            .timeout()
            .unwrap_or(Duration::from_millis(100))
            .clamp(Duration::from_millis(1), Duration::from_millis(100));
        sock.set_read_timeout(Some(wait))
            .map_err(|e| e.to_string())?;
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let info = quiche::RecvInfo { from, to: local };
                if let Err(e) = conn.recv(&mut buf[..n], info) {
                    eprintln!("recv: {e:?}");
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                conn.on_timeout();
            }
            Err(e) => return Err(format!("recv_from: {e}")),
        }
        while let Ok((n, fin)) = conn.stream_recv(0, &mut buf) {
            bytes += n;
            if fin {
                done_at = Some(Instant::now());
            }
        }
    }

    println!("bytes: {bytes}");
    println!("resumed: {}", conn.is_resumed());
    println!("early_data_request: {early_data_request}");
    println!("early_data_reason: {}", conn.early_data_reason());
    let saved = match conn.session() {
        Some(session) => {
            std::fs::write(session_file, session)
                .map_err(|e| format!("{}: {e}", session_file.display()))?;
            true
        }
        None => false,
    };
    println!("session_saved: {saved}");
    if done_at.is_none() {
        return Err(format!(
            "the connection closed before the response ended: {:?}",
            conn.peer_error()
        ));
    }
    Ok(())
}
