//! Requests per second over one HTTP/3 connection: many small GET requests with a bounded
//! number in flight, through our `quiche::h3` client API over a UDP socket (mio, as the apps).
//! The same client drives any HTTP/3 server, so running it against two servers compares the
//! servers.
//!
//! ```text
//! bench-rps URL [-n N] [-c C] [--warmup W] [--expect-len L] [--ca FILE | --no-verify]
//!           [--server-name NAME] [--timeout S]
//! ```
//!
//! One connection; GET URL N + W times, at most C requests in flight (and never more than the
//! server's stream limit allows). The first W responses warm the connection up (congestion
//! window, allocations on both sides) and are not counted. Every response must have status
//! 200 and a body of exactly L bytes (`--expect-len`; without it, its `content-length`); the
//! first one that does not, a stream reset, or the connection ending first is an error (exit
//! status 1). Prints one line:
//!
//! ```text
//! rps url=URL requests=N warmup=W concurrency=C secs=S per_sec=R p50_us=.. p90_us=.. p99_us=..
//!     max_us=.. bytes=B handshake_ms=H datagrams_sent=.. datagrams_received=.. wakeups=..
//! ```
//!
//! (on one line) where secs runs from sending the first counted request to the end of the
//! last response, the latencies (µs) from a request being handed to the connection to the end
//! of its response, and the last three count the whole run (warm-up and handshake included):
//! how many requests shared a datagram and how often the client waited for the server. See
//! tools/bench/README.md.

// A benchmark: wall-clock time is what it measures, so the workspace ban on `Instant::now`
// (time is a parameter in the library) does not apply.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use quiche::h3::{self, NameValue};

/// The test certificate's name (quiche/tests/certs), for SNI and verification.
const DEFAULT_SERVER_NAME: &str = "quic.tech";
/// Largest UDP payload sent; the apps' default.
const MAX_DATAGRAM: usize = 1350;
/// H3_NO_ERROR: the code the connection is closed with at the end.
const H3_NO_ERROR: u64 = 0x100;

struct Args {
    url: String,
    addr: SocketAddr,
    authority: String,
    path: String,
    requests: u64,
    concurrency: usize,
    warmup: u64,
    expect_len: Option<u64>,
    ca: Option<String>,
    server_name: String,
    timeout: Duration,
}

/// The command line, as given; [`parse_args`] checks it and splits the URL.
#[derive(Parser)]
#[command(
    name = "bench-rps",
    version,
    about = "Requests per second over one HTTP/3 connection: GET URL N + W times, at most C in \
             flight, every response checked"
)]
struct Cli {
    /// https://IP:PORT/PATH of the resource to request
    url: String,
    /// Counted requests
    #[arg(short = 'n', default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    requests: u64,
    /// Requests in flight at most
    #[arg(short = 'c', default_value_t = 100, value_parser = positive_usize)]
    concurrency: usize,
    /// Uncounted requests first, to warm the connection up
    #[arg(long, default_value_t = 1_000)]
    warmup: u64,
    /// Body length every response must have (default: its content-length)
    #[arg(long, value_name = "L")]
    expect_len: Option<u64>,
    /// CA certificate to verify the server with
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "no_verify",
        conflicts_with = "no_verify"
    )]
    ca: Option<String>,
    /// Do not verify the server's certificate
    #[arg(long)]
    no_verify: bool,
    /// Name for SNI and verification
    #[arg(long, value_name = "NAME", default_value = DEFAULT_SERVER_NAME)]
    server_name: String,
    /// Give up after this many seconds
    #[arg(long, value_name = "S", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
}

fn positive_usize(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(0) => Err("must be positive".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// The command line checked: the URL must be `https://IP:PORT[/PATH]`.
fn parse_args(cli: Cli) -> Result<Args, String> {
    let url = cli.url;
    let Some(rest) = url.strip_prefix("https://") else {
        return Err(format!("{url}: the URL must start with https://"));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = authority
        .parse::<SocketAddr>()
        .map_err(|e| format!("{url}: the host must be IP:PORT ({e})"))?;
    Ok(Args {
        url: url.clone(),
        addr,
        authority: authority.to_string(),
        path: path.to_string(),
        requests: cli.requests,
        concurrency: cli.concurrency,
        warmup: cli.warmup,
        expect_len: cli.expect_len,
        ca: cli.ca,
        server_name: cli.server_name,
        timeout: Duration::from_secs(cli.timeout),
    })
}

fn config(a: &Args) -> Result<quiche::Config, String> {
    let e = |what: &str, e: quiche::Error| format!("config: {what}: {e:?}");
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|x| e("new", x))?;
    c.set_application_protos(h3::APPLICATION_PROTOCOL)
        .map_err(|x| e("ALPN", x))?;
    match &a.ca {
        Some(ca) => {
            c.load_verify_locations_from_file(ca)
                .map_err(|x| e("CA", x))?;
            c.verify_peer(true);
        }
        None => c.verify_peer(false),
    }
    // The apps' defaults (apps/src/setup.rs): the responses are small, none of these limits
    // is reached.
    c.set_initial_max_data(10_000_000);
    c.set_initial_max_stream_data_bidi_local(1_000_000);
    c.set_initial_max_stream_data_bidi_remote(1_000_000);
    c.set_initial_max_stream_data_uni(1_000_000);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
    c.set_max_idle_timeout(30_000);
    c.set_max_recv_udp_payload_size(65527);
    c.set_max_send_udp_payload_size(MAX_DATAGRAM);
    c.set_disable_active_migration(true);
    Ok(c)
}

/// One request in flight.
struct Request {
    /// Its position in the sequence (the first `warmup` are not counted).
    index: u64,
    sent: Instant,
    status: Option<u16>,
    content_length: Option<u64>,
    bytes: u64,
}

/// What the run measured.
#[derive(Default)]
struct Tally {
    issued: u64,
    completed: u64,
    /// Latencies of the counted requests, µs.
    latencies: Vec<u64>,
    bytes: u64,
    first_counted_sent: Option<Instant>,
    last_done: Option<Instant>,
}

/// The UDP side: the socket and a datagram the kernel had no room for yet.
struct Wire {
    socket: UdpSocket,
    local: SocketAddr,
    out: Vec<u8>,
    /// Length and destination of the datagram in `out` still to send.
    pending: Option<(usize, SocketAddr)>,
    /// Datagrams sent and received, and event-loop wake-ups: how the exchange went.
    sent: u64,
    received: u64,
    wakeups: u64,
}

impl Wire {
    /// Sends what the connection has; false if the socket is full (wait for writable).
    fn flush(&mut self, conn: &mut quiche::Connection) -> Result<bool, String> {
        loop {
            let (len, to) = match self.pending.take() {
                Some(p) => p,
                None => match conn.send(&mut self.out) {
                    Ok((n, info)) => (n, info.to),
                    Err(quiche::Error::Done) => return Ok(true),
                    Err(e) => return Err(format!("send: {e:?}")),
                },
            };
            match self.socket.send_to(&self.out[..len], to) {
                Ok(_) => self.sent += 1,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.pending = Some((len, to));
                    return Ok(false);
                }
                Err(e) => return Err(format!("send_to: {e}")),
            }
        }
    }

    /// Hands every queued datagram to the connection.
    fn receive(&mut self, conn: &mut quiche::Connection, buf: &mut [u8]) -> Result<(), String> {
        loop {
            match self.socket.recv_from(buf) {
                Ok((n, from)) => {
                    let info = quiche::RecvInfo {
                        from,
                        to: self.local,
                    };
                    // A datagram the connection refuses (undecryptable, ...) is dropped, as
                    // any endpoint does; the connection's own errors show in is_closed().
                    let _ = conn.recv(&mut buf[..n], info);
                    self.received += 1;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(format!("recv_from: {e}")),
            }
        }
    }
}

/// The client's HTTP/3 side: issues requests and checks responses.
struct Client<'a> {
    a: &'a Args,
    headers: Vec<h3::Header>,
    total: u64,
    in_flight: HashMap<u64, Request>,
    tally: Tally,
    body: Vec<u8>,
}

impl Client<'_> {
    fn done(&self) -> bool {
        self.tally.completed == self.total
    }

    /// Sends requests while fewer than C are in flight and the server allows new streams.
    fn issue(
        &mut self,
        conn: &mut quiche::Connection,
        h3c: &mut h3::Connection,
        now: Instant,
    ) -> Result<(), String> {
        while self.tally.issued < self.total && self.in_flight.len() < self.a.concurrency {
            let id = match h3c.send_request(conn, &self.headers, true) {
                Ok(id) => id,
                Err(h3::Error::StreamBlocked | h3::Error::Done) => break,
                Err(h3::Error::TransportError(quiche::Error::StreamLimit)) => break,
                Err(e) => return Err(format!("send_request: {e:?}")),
            };
            let index = self.tally.issued;
            self.tally.issued += 1;
            if index == self.a.warmup {
                self.tally.first_counted_sent = Some(now);
            }
            self.in_flight.insert(
                id,
                Request {
                    index,
                    sent: now,
                    status: None,
                    content_length: None,
                    bytes: 0,
                },
            );
        }
        Ok(())
    }

    /// Handles every HTTP/3 event there is.
    fn poll(
        &mut self,
        conn: &mut quiche::Connection,
        h3c: &mut h3::Connection,
        now: Instant,
    ) -> Result<(), String> {
        loop {
            match h3c.poll(conn) {
                Ok((id, h3::Event::Headers { list, .. })) => {
                    let req = self.request(id)?;
                    let field = |name: &[u8]| {
                        list.iter()
                            .find(|h| h.name() == name)
                            .and_then(|h| std::str::from_utf8(h.value()).ok())
                            .map(str::to_string)
                    };
                    let status = field(b":status").and_then(|s| s.parse::<u16>().ok());
                    // Interim (1xx) responses precede the final one.
                    if status.is_some_and(|s| s >= 200) || req.status.is_none() {
                        req.status = status;
                        req.content_length = field(b"content-length").and_then(|v| v.parse().ok());
                    }
                }
                Ok((id, h3::Event::Data)) => loop {
                    match h3c.recv_body(conn, id, &mut self.body) {
                        Ok(n) => self.request(id)?.bytes += n as u64,
                        Err(h3::Error::Done) => break,
                        Err(e) => return Err(format!("stream {id}: recv_body: {e:?}")),
                    }
                },
                Ok((id, h3::Event::Finished)) => self.finish(id, now)?,
                Ok((id, h3::Event::Reset(code))) => {
                    return Err(format!("stream {id}: reset by the server (code {code:#x})"))
                }
                Ok((id, h3::Event::GoAway)) => {
                    if !self.done() {
                        return Err(format!("GOAWAY ({id}) before the last response"));
                    }
                }
                Ok((_, h3::Event::PriorityUpdate)) => {}
                Err(h3::Error::Done) => return Ok(()),
                Err(e) => return Err(format!("h3 poll: {e:?}")),
            }
        }
    }

    fn request(&mut self, id: u64) -> Result<&mut Request, String> {
        self.in_flight
            .get_mut(&id)
            .ok_or_else(|| format!("stream {id}: an event for no request in flight"))
    }

    /// A response ended: checks its status and length, records its latency.
    fn finish(&mut self, id: u64, now: Instant) -> Result<(), String> {
        let req = self
            .in_flight
            .remove(&id)
            .ok_or_else(|| format!("stream {id}: Finished for no request in flight"))?;
        if req.status != Some(200) {
            return Err(format!(
                "request {} (stream {id}): status {:?}, 200 expected",
                req.index, req.status
            ));
        }
        let want = self.a.expect_len.or(req.content_length);
        if want != Some(req.bytes) {
            return Err(format!(
                "request {} (stream {id}): {} body bytes, {want:?} expected",
                req.index, req.bytes
            ));
        }
        self.tally.completed += 1;
        if req.index >= self.a.warmup {
            self.tally.bytes += req.bytes;
            let us = now.saturating_duration_since(req.sent).as_micros();
            self.tally
                .latencies
                .push(u64::try_from(us).unwrap_or(u64::MAX));
            self.tally.last_done = Some(now);
        }
        Ok(())
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    // Nearest rank.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn run(a: &Args) -> Result<String, String> {
    let mut cfg = config(a)?;
    let bind: SocketAddr = if a.addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .map_err(|e| format!("{e}"))?;
    let socket = UdpSocket::bind(bind).map_err(|e| format!("bind: {e}"))?;
    let local = socket
        .local_addr()
        .map_err(|e| format!("local_addr: {e}"))?;
    let mut wire = Wire {
        socket,
        local,
        out: vec![0; MAX_DATAGRAM],
        pending: None,
        sent: 0,
        received: 0,
        wakeups: 0,
    };
    let mut poll = Poll::new().map_err(|e| format!("poll: {e}"))?;
    poll.registry()
        .register(&mut wire.socket, Token(0), Interest::READABLE)
        .map_err(|e| format!("register: {e}"))?;
    let mut events = Events::with_capacity(64);

    // A connection ID that differs from run to run (the std hasher's random keys); it needs
    // no secrecy here.
    let mut scid = [0u8; 16];
    for (i, chunk) in scid.chunks_mut(8).enumerate() {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    let scid = quiche::ConnectionId::from_ref(&scid);
    let start = Instant::now();
    let deadline = start + a.timeout;
    let mut conn = quiche::connect(Some(&a.server_name), &scid, local, a.addr, &mut cfg)
        .map_err(|e| format!("connect: {e:?}"))?;
    let mut handshake = None;
    let mut h3c: Option<h3::Connection> = None;
    let mut client = Client {
        a,
        headers: vec![
            h3::Header::new(b":method", b"GET"),
            h3::Header::new(b":scheme", b"https"),
            h3::Header::new(b":authority", a.authority.as_bytes()),
            h3::Header::new(b":path", a.path.as_bytes()),
            h3::Header::new(b"user-agent", b"bench-rps"),
        ],
        total: a.warmup + a.requests,
        in_flight: HashMap::with_capacity(a.concurrency),
        tally: Tally {
            latencies: Vec::with_capacity(usize::try_from(a.requests).unwrap_or(0)),
            ..Tally::default()
        },
        body: vec![0; 64 * 1024],
    };
    let mut buf = vec![0u8; 65535];
    let mut writable_wanted = false;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(format!(
                "timeout after {:?}: {} of {} responses",
                a.timeout, client.tally.completed, client.total
            ));
        }
        let flushed = wire.flush(&mut conn)?;
        if flushed == writable_wanted {
            // Ask for writable events only while a datagram waits for room.
            let interest = if flushed {
                Interest::READABLE
            } else {
                Interest::READABLE | Interest::WRITABLE
            };
            poll.registry()
                .reregister(&mut wire.socket, Token(0), interest)
                .map_err(|e| format!("reregister: {e}"))?;
            writable_wanted = !flushed;
        }
        if conn.is_closed() {
            if client.done() {
                break;
            }
            return Err(format!(
                "the connection ended after {} of {} responses (local error {:?}, peer error {:?})",
                client.tally.completed,
                client.total,
                conn.local_error(),
                conn.peer_error()
            ));
        }
        let timer = conn.timeout();
        let before_poll = Instant::now();
        let wait = timer
            .unwrap_or(a.timeout)
            .min(deadline.saturating_duration_since(now));
        poll.poll(&mut events, Some(wait))
            .map_err(|e| format!("poll: {e}"))?;
        wire.wakeups += 1;
        wire.receive(&mut conn, &mut buf)?;
        let now = Instant::now();
        if timer.is_some_and(|t| now >= before_poll + t) {
            conn.on_timeout();
        }
        if conn.is_established() && h3c.is_none() {
            handshake = Some(now - start);
            let h3cfg = h3::Config::new().map_err(|e| format!("h3 config: {e:?}"))?;
            h3c = Some(
                h3::Connection::with_transport(&mut conn, &h3cfg)
                    .map_err(|e| format!("h3: {e:?}"))?,
            );
        }
        let Some(h) = h3c.as_mut() else {
            continue;
        };
        if conn.is_closed() || conn.is_draining() {
            continue;
        }
        client.poll(&mut conn, h, now)?;
        if client.done() {
            // Everything arrived: close (the loop sends CONNECTION_CLOSE, then ends).
            let _ = conn.close(true, H3_NO_ERROR, b"done");
            wire.flush(&mut conn)?;
            break;
        }
        client.issue(&mut conn, h, now)?;
    }

    let t = &mut client.tally;
    let secs = match (t.first_counted_sent, t.last_done) {
        (Some(s), Some(e)) => e.saturating_duration_since(s).as_secs_f64(),
        _ => 0.0,
    };
    t.latencies.sort_unstable();
    let counted = t.latencies.len() as f64;
    Ok(format!(
        "rps url={} requests={} warmup={} concurrency={} secs={secs:.3} per_sec={:.1} \
         p50_us={} p90_us={} p99_us={} max_us={} bytes={} handshake_ms={:.3} \
         datagrams_sent={} datagrams_received={} wakeups={}",
        a.url,
        t.latencies.len(),
        a.warmup,
        a.concurrency,
        if secs > 0.0 { counted / secs } else { 0.0 },
        percentile(&t.latencies, 50.0),
        percentile(&t.latencies, 90.0),
        percentile(&t.latencies, 99.0),
        t.latencies.last().copied().unwrap_or(0),
        t.bytes,
        handshake.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
        wire.sent,
        wire.received,
        wire.wakeups,
    ))
}

fn main() -> ExitCode {
    let a = match parse_args(Cli::parse()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench-rps: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench-rps: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&[7], 90.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
    }
}
