//! One bulk flow on real sockets, written against quiche 0.30's public API and built either
//! against quiche 0.30.0 (feature `upstream`) or against this repository's crate (feature
//! `ours`): tools/cclab's `quiche-*` and `ours-*` peers are the same program, so the two
//! libraries' congestion controllers meet under the same application code (quiche's own example
//! programs take no congestion-control option).
//!
//! ```text
//! flowpeer server --listen ADDR --cert FILE --key FILE [--cc NAME] [--duration SECS]
//! flowpeer client --connect ADDR --log FILE [--duration SECS]
//! ```
//!
//! The client opens one stream and sends one line; the server answers with data until the
//! client closes the connection after `--duration` seconds (the server gives up 30 s after its
//! own `--duration`). The client appends `UNIX_MS BYTES` to `--log` every 100 ms (bytes received
//! so far on the stream), and both print `key=value` counters when they end. `--cc` takes
//! `cubic`, `reno` or `bbr` (quiche's `Bbr2Gcongestion`, which in ours is draft-06 BBR).
//! The sender honours each packet's `SendInfo::at` (pacing), sending a packet at most half a
//! millisecond early.

// A program on real sockets: it reads the clock (the repository's clippy.toml keeps the clock
// out of the library core, not out of programs like this one).
#![allow(clippy::disallowed_methods)]

#[cfg(all(feature = "ours", feature = "upstream"))]
compile_error!("choose one of the features `ours` and `upstream`");
#[cfg(not(any(feature = "ours", feature = "upstream")))]
compile_error!("choose one of the features `ours` and `upstream`");

#[cfg(feature = "ours")]
use quiche_ours as quiche;
#[cfg(all(feature = "upstream", not(feature = "ours")))]
use quiche_upstream as quiche;

use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ALPN: &[u8] = b"cclab-flow";
/// The largest UDP payload sent: a 1500-byte IPv4 path, as Linux TCP's 1448-byte segments fill.
const MAX_PAYLOAD: usize = 1452;
/// A packet whose release time is at most this far ahead goes out now.
const EARLY: Duration = Duration::from_micros(500);
/// How often the client logs its byte count.
const LOG_EVERY: Duration = Duration::from_millis(100);
/// Flow-control windows: far above a 20 Mbit/s path's BDP, so that only congestion control
/// limits the flow.
const WINDOW: u64 = 16 * 1024 * 1024;

type Result<T> = std::result::Result<T, String>;

struct Args {
    server: bool,
    addr: SocketAddr,
    cert: String,
    key: String,
    cc: String,
    duration: Duration,
    log: Option<String>,
}

fn parse_args() -> Result<Args> {
    let mut it = std::env::args().skip(1);
    let server = match it.next().as_deref() {
        Some("server") => true,
        Some("client") => false,
        _ => return Err("usage: flowpeer server|client ... (see the source's header)".into()),
    };
    let mut a = Args {
        server,
        addr: "0.0.0.0:0".parse().map_err(|e| format!("{e}"))?,
        cert: String::new(),
        key: String::new(),
        cc: "cubic".into(),
        duration: Duration::from_secs(60),
        log: None,
    };
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" | "--connect" => a.addr = v.parse().map_err(|e| format!("{v}: {e}"))?,
            "--cert" => a.cert = v,
            "--key" => a.key = v,
            "--cc" => a.cc = v,
            "--duration" => {
                let s: f64 = v.parse().map_err(|e| format!("{v}: {e}"))?;
                a.duration = Duration::from_secs_f64(s.clamp(0.1, 86_400.0));
            }
            "--log" => a.log = Some(v),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(a)
}

fn config(a: &Args) -> Result<quiche::Config> {
    let e = |e: quiche::Error| format!("config: {e:?}");
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(e)?;
    c.set_application_protos(&[ALPN]).map_err(e)?;
    if a.server {
        c.load_cert_chain_from_pem_file(&a.cert).map_err(e)?;
        c.load_priv_key_from_pem_file(&a.key).map_err(e)?;
    } else {
        c.verify_peer(false);
    }
    c.set_max_idle_timeout(10_000);
    c.set_max_recv_udp_payload_size(MAX_PAYLOAD);
    c.set_max_send_udp_payload_size(MAX_PAYLOAD);
    c.set_initial_max_data(WINDOW);
    c.set_initial_max_stream_data_bidi_local(WINDOW);
    c.set_initial_max_stream_data_bidi_remote(WINDOW);
    c.set_initial_max_streams_bidi(4);
    c.set_disable_active_migration(true);
    c.enable_pacing(true);
    let cc = match a.cc.as_str() {
        "cubic" => quiche::CongestionControlAlgorithm::CUBIC,
        "reno" => quiche::CongestionControlAlgorithm::Reno,
        "bbr" | "bbr2" => quiche::CongestionControlAlgorithm::Bbr2Gcongestion,
        other => return Err(format!("unknown --cc {other}")),
    };
    c.set_cc_algorithm(cc);
    Ok(c)
}

fn scid() -> Result<quiche::ConnectionId<'static>> {
    use ring::rand::SecureRandom;
    let mut id = [0u8; quiche::MAX_CONN_ID_LEN];
    ring::rand::SystemRandom::new()
        .fill(&mut id)
        .map_err(|_| "no randomness")?;
    Ok(quiche::ConnectionId::from_vec(id.to_vec()))
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// The socket, the connection and a packet held back until its release time.
struct Endpoint {
    sock: UdpSocket,
    local: SocketAddr,
    conn: Option<quiche::Connection>,
    held: Option<(Vec<u8>, SocketAddr, Instant)>,
    buf: Vec<u8>,
}

impl Endpoint {
    /// Waits for datagrams until `deadline` at most, feeds every one that arrived to the
    /// connection (accepting it first on a server); returns whether anything arrived.
    fn receive(&mut self, deadline: Instant, cfg: &mut quiche::Config) -> Result<bool> {
        let mut got = false;
        wait_readable(
            &self.sock,
            deadline.saturating_duration_since(Instant::now()),
        )?;
        loop {
            let (len, from) = match self.sock.recv_from(&mut self.buf) {
                Ok(r) => r,
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    break
                }
                Err(e) => return Err(format!("recv: {e}")),
            };
            got = true;
            if self.conn.is_none() {
                let hdr = quiche::Header::from_slice(&mut self.buf[..len], quiche::MAX_CONN_ID_LEN)
                    .map_err(|e| format!("header: {e:?}"))?;
                if hdr.ty != quiche::Type::Initial {
                    continue;
                }
                self.conn = Some(
                    quiche::accept(&scid()?, None, self.local, from, cfg)
                        .map_err(|e| format!("accept: {e:?}"))?,
                );
            }
            let info = quiche::RecvInfo {
                from,
                to: self.local,
            };
            if let Some(c) = self.conn.as_mut() {
                // A datagram the connection rejects is dropped, as on any server.
                let _ = c.recv(&mut self.buf[..len], info);
            }
        }
        Ok(got)
    }

    /// Sends every packet due within [`EARLY`]; the first one due later is held back.
    fn flush(&mut self) -> Result<()> {
        if let Some((pkt, to, at)) = self.held.take() {
            if at > Instant::now() + EARLY {
                self.held = Some((pkt, to, at));
                return Ok(());
            }
            self.send_to(&pkt, to)?;
        }
        let Some(conn) = self.conn.as_mut() else {
            return Ok(());
        };
        let mut out = [0u8; MAX_PAYLOAD];
        loop {
            let (len, info) = match conn.send(&mut out) {
                Ok(r) => r,
                Err(quiche::Error::Done) => return Ok(()),
                Err(e) => return Err(format!("send: {e:?}")),
            };
            if info.at > Instant::now() + EARLY {
                self.held = Some((out[..len].to_vec(), info.to, info.at));
                return Ok(());
            }
            send_to(&self.sock, &out[..len], info.to)?;
        }
    }

    fn send_to(&self, pkt: &[u8], to: SocketAddr) -> Result<()> {
        send_to(&self.sock, pkt, to)
    }

    /// The next moment something is due: the held packet, the connection's timer, `limit`.
    fn next_deadline(&self, limit: Instant) -> Instant {
        let mut d = limit;
        if let Some((_, _, at)) = &self.held {
            d = d.min(*at);
        }
        if let Some(t) = self.conn.as_ref().and_then(|c| c.timeout()) {
            d = d.min(Instant::now() + t);
        }
        d
    }

    fn on_timeout_if_due(&mut self, deadline: Instant) {
        if let Some(c) = self.conn.as_mut() {
            if c.timeout().is_some_and(|t| t.is_zero()) || Instant::now() >= deadline {
                c.on_timeout();
            }
        }
    }
}

/// Waits until `sock` is readable or `wait` has passed, to the microsecond: `ppoll` sleeps on a
/// high-resolution timer, where a socket's receive timeout (SO_RCVTIMEO) rounds up to the
/// kernel's tick (4 ms at 250 Hz) and would hold every paced packet back that long.
fn wait_readable(sock: &UdpSocket, wait: Duration) -> Result<()> {
    use std::os::fd::AsRawFd;
    let mut fd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: wait.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `fd` and `ts` are valid for the call's duration, the count is 1 and the signal
    // mask pointer may be null (no change to the mask).
    let r = unsafe { libc::ppoll(&mut fd, 1, &ts, std::ptr::null()) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("ppoll: {e}"));
        }
    }
    Ok(())
}

fn send_to(sock: &UdpSocket, pkt: &[u8], to: SocketAddr) -> Result<()> {
    match sock.send_to(pkt, to) {
        Ok(_) => Ok(()),
        // A full socket buffer drops the datagram, as a full queue would.
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(()),
        Err(e) => Err(format!("send_to: {e}")),
    }
}

fn counters(conn: &quiche::Connection) -> String {
    let s = conn.stats();
    let cwnd = conn.path_stats().next().map(|p| p.cwnd).unwrap_or(0);
    format!(
        "sent={} lost={} retrans={} sent_bytes={} lost_bytes={} cwnd={}",
        s.sent, s.lost, s.retrans, s.sent_bytes, s.lost_bytes, cwnd
    )
}

fn server(a: &Args) -> Result<()> {
    let mut cfg = config(a)?;
    let sock = UdpSocket::bind(a.addr).map_err(|e| format!("bind {}: {e}", a.addr))?;
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    let local = sock.local_addr().map_err(|e| e.to_string())?;
    println!("listening on {local} cc={}", a.cc);
    let mut ep = Endpoint {
        sock,
        local,
        conn: None,
        held: None,
        buf: vec![0u8; 65_536],
    };
    let give_up = Instant::now() + a.duration + Duration::from_secs(30);
    let data = vec![0u8; 64 * 1024];
    let mut streaming = None;
    loop {
        let deadline = ep.next_deadline(give_up.min(Instant::now() + Duration::from_millis(100)));
        ep.receive(deadline, &mut cfg)?;
        ep.on_timeout_if_due(deadline);
        if let Some(conn) = ep.conn.as_mut() {
            if conn.is_closed() {
                println!("closed {}", counters(conn));
                return Ok(());
            }
            let mut req = [0u8; 256];
            for id in conn.readable() {
                while let Ok((_, _)) = conn.stream_recv(id, &mut req) {}
                streaming = Some(id);
            }
            if let Some(id) = streaming {
                while matches!(conn.stream_send(id, &data, false), Ok(n) if n > 0) {}
            }
        }
        ep.flush()?;
        if Instant::now() >= give_up {
            return Err("no close from the client".into());
        }
    }
}

fn client(a: &Args) -> Result<()> {
    let mut cfg = config(a)?;
    let bind: SocketAddr = if a.addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .map_err(|e| format!("{e}"))?;
    let sock = UdpSocket::bind(bind).map_err(|e| format!("bind: {e}"))?;
    sock.connect(a.addr).map_err(|e| format!("connect: {e}"))?;
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    let local = sock.local_addr().map_err(|e| e.to_string())?;
    let conn = quiche::connect(Some("cclab"), &scid()?, local, a.addr, &mut cfg)
        .map_err(|e| format!("connect: {e:?}"))?;
    let mut ep = Endpoint {
        sock,
        local,
        conn: Some(conn),
        held: None,
        buf: vec![0u8; 65_536],
    };
    let mut log = match &a.log {
        Some(p) => Some(std::fs::File::create(p).map_err(|e| format!("{p}: {e}"))?),
        None => None,
    };
    let start = Instant::now();
    let end = start + a.duration;
    let mut next_log = start;
    let mut requested = false;
    let mut got: u64 = 0;
    let mut first_byte = None;
    let mut sink = vec![0u8; 65_536];
    let mut closing = false;
    loop {
        ep.flush()?;
        let deadline = ep.next_deadline(next_log.min(end));
        ep.receive(deadline, &mut cfg)?;
        ep.on_timeout_if_due(deadline);
        let conn = ep.conn.as_mut().ok_or("no connection")?;
        if conn.is_closed() {
            break;
        }
        if conn.is_established() && !requested {
            conn.stream_send(0, b"GET bulk\n", true)
                .map_err(|e| format!("request: {e:?}"))?;
            requested = true;
        }
        for id in conn.readable() {
            while let Ok((n, _)) = conn.stream_recv(id, &mut sink) {
                got += n as u64;
                first_byte.get_or_insert_with(Instant::now);
            }
        }
        let now = Instant::now();
        if now >= next_log {
            if let Some(f) = log.as_mut() {
                writeln!(f, "{} {got}", unix_ms()).map_err(|e| e.to_string())?;
            }
            next_log += LOG_EVERY;
        }
        if now >= end && !closing {
            println!("client {}", counters(conn));
            let _ = conn.close(true, 0, b"done");
            closing = true;
        }
        if closing && now >= end + Duration::from_secs(2) {
            break;
        }
    }
    let secs = first_byte.map_or(0.0, |t| (Instant::now().min(end) - t).as_secs_f64());
    println!(
        "bytes={got} secs={secs:.3} mbps={:.3}",
        got as f64 * 8.0 / secs.max(1e-9) / 1e6
    );
    Ok(())
}

fn main() {
    let r = parse_args().and_then(|a| if a.server { server(&a) } else { client(&a) });
    if let Err(e) = r {
        eprintln!("flowpeer: {e}");
        std::process::exit(1);
    }
}
