//! `quiche-load`: opens N concurrent QUIC connections to a server from one process (one UDP
//! socket per open connection, reused by the next connection once it closes; one mio event
//! loop), each making K HTTP/0.9 (`hq-interop`) requests
//! one after the other, and reports handshakes per second, request latency percentiles and
//! failures as one `key=value` line on stdout.
//!
//! By default every connection stays open until all N have made their requests, so that N
//! are open at once (`--no-hold` closes each as soon as it is done); at that moment the
//! server's resident memory is read when `--server-pid` names it, to report memory per
//! connection.

// A load generator measures wall-clock time.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use ring::rand::SecureRandom;

/// The command line.
#[derive(Parser, Debug)]
#[command(name = "quiche-load", version, about, max_term_width = 100)]
struct Args {
    /// The server's UDP address, e.g. 127.0.0.1:4433
    #[arg(long, value_name = "ADDR")]
    server: SocketAddr,
    /// Connections to open (N)
    #[arg(long, short = 'n', value_name = "N", default_value_t = 100)]
    connections: usize,
    /// Requests per connection, one after the other (K)
    #[arg(long, short = 'k', value_name = "K", default_value_t = 1)]
    requests: usize,
    /// The path requested (HTTP/0.9 `GET PATH`)
    #[arg(long, value_name = "PATH", default_value = "/index.html")]
    path: String,
    /// Handshakes in progress at once; more connections wait until one completes
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_pending: usize,
    /// Close each connection as soon as its requests are done, instead of holding all open
    /// until every connection is done
    #[arg(long = "no-hold", action = clap::ArgAction::SetFalse)]
    hold: bool,
    /// Idle timeout of the connections in milliseconds (give the server at least as much
    /// with its --idle-timeout when holding many connections)
    #[arg(long, value_name = "MS", default_value_t = 300_000)]
    idle_timeout: u64,
    /// Give up after this many seconds (connections not done by then count as failed)
    #[arg(long, value_name = "S", default_value_t = 600)]
    timeout: u64,
    /// The server's process ID: its resident memory is read before the first connection and
    /// when the most connections are open, and reported per connection
    #[arg(long, value_name = "PID")]
    server_pid: Option<u32>,
    /// No progress bar
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// A UDP socket of the load and the connection using it, if any. A closed connection's
/// socket serves the next one (as a client's ephemeral ports are reused), which spares five
/// system calls per connection (socket, bind, getsockname, epoll_ctl, close) and keeps the
/// addresses, so the server's SO_REUSEPORT workers see the same spread of 4-tuples.
struct Socket {
    sock: UdpSocket,
    local: SocketAddr,
    conn: Option<usize>,
}

/// One connection of the load.
struct Conn {
    /// Its socket in `Load::sockets`.
    slot: usize,
    conn: quiche::Connection,
    started: Instant,
    established: bool,
    /// The request in progress: its stream and when it was sent.
    current: Option<(u64, Instant)>,
    next_stream: u64,
    done_requests: usize,
    /// All K requests answered.
    finished: bool,
    /// The timer queued for it, to find it in the timer set.
    deadline: Option<Instant>,
}

/// Everything measured.
#[derive(Default)]
struct Stats {
    opened: usize,
    established: usize,
    pending: usize,
    finished: usize,
    failed_conns: usize,
    failed_requests: usize,
    live: usize,
    peak_live: usize,
    handshake_ms: Vec<f64>,
    request_ms: Vec<f64>,
    first_open: Option<Instant>,
    last_established: Option<Instant>,
    /// When the last response was complete.
    last_response: Option<Instant>,
    /// Response bytes received, over all connections.
    response_bytes: u64,
    dropped_sends: u64,
}

/// The resident set size of process `pid` in KiB, from /proc.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The value below which a fraction `q` of the sorted samples lie.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * q) as usize).min(sorted.len() - 1);
    sorted[i]
}

fn client_config(args: &Args) -> Result<quiche::Config, String> {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|e| format!("{e:?}"))?;
    c.set_application_protos(&[b"hq-interop"])
        .map_err(|e| format!("{e:?}"))?;
    c.verify_peer(false);
    c.set_max_idle_timeout(args.idle_timeout);
    c.set_initial_max_data(1 << 20);
    c.set_initial_max_stream_data_bidi_local(1 << 20);
    c.set_initial_max_stream_data_bidi_remote(1 << 20);
    c.set_initial_max_stream_data_uni(1 << 20);
    c.set_initial_max_streams_bidi(16);
    c.set_initial_max_streams_uni(16);
    c.set_max_recv_udp_payload_size(1350);
    c.set_max_send_udp_payload_size(1350);
    Ok(c)
}

/// The event loop and its connections.
struct Load {
    args: Args,
    config: quiche::Config,
    poll: Poll,
    conns: Vec<Option<Conn>>,
    sockets: Vec<Socket>,
    /// Sockets whose connection closed, ready for the next one.
    free_sockets: Vec<usize>,
    timers: BTreeSet<(Instant, usize)>,
    stats: Stats,
    buf: Vec<u8>,
    out: Vec<u8>,
    request: Vec<u8>,
    bind: SocketAddr,
}

impl Load {
    fn new(args: Args) -> Result<Load, String> {
        let config = client_config(&args)?;
        let ip = args.server.ip();
        let bind_ip = if ip.is_loopback() {
            ip
        } else if ip.is_ipv4() {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        } else {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        };
        let request = format!("GET {}\r\n", args.path).into_bytes();
        let mut conns = Vec::new();
        conns.resize_with(args.connections, || None);
        Ok(Load {
            config,
            poll: Poll::new().map_err(|e| e.to_string())?,
            conns,
            sockets: Vec::new(),
            free_sockets: Vec::new(),
            timers: BTreeSet::new(),
            stats: Stats::default(),
            buf: vec![0; 65535],
            out: vec![0; 1500],
            request,
            bind: SocketAddr::new(bind_ip, 0),
            args,
        })
    }

    /// A socket no open connection uses: a free one, or a new one.
    fn socket(&mut self) -> io::Result<usize> {
        if let Some(slot) = self.free_sockets.pop() {
            return Ok(slot);
        }
        let mut sock = UdpSocket::bind(self.bind)?;
        let local = sock.local_addr()?;
        let slot = self.sockets.len();
        self.poll
            .registry()
            .register(&mut sock, Token(slot), Interest::READABLE)?;
        self.sockets.push(Socket {
            sock,
            local,
            conn: None,
        });
        Ok(slot)
    }

    /// Opens connection `idx` on a socket of its own and sends its first flight.
    fn open(&mut self, idx: usize) -> io::Result<()> {
        let slot = self.socket()?;
        let local = self.sockets[slot].local;
        let mut scid = [0u8; quiche::MAX_CONN_ID_LEN];
        ring::rand::SystemRandom::new()
            .fill(&mut scid)
            .map_err(|_| io::Error::other("no randomness"))?;
        let conn = quiche::connect(
            Some("localhost"),
            &quiche::ConnectionId::from_ref(&scid[..16]),
            local,
            self.args.server,
            &mut self.config,
        )
        .map_err(|e| io::Error::other(format!("connect: {e:?}")))?;
        self.sockets[slot].conn = Some(idx);
        let now = Instant::now();
        self.stats.first_open.get_or_insert(now);
        self.stats.opened += 1;
        self.stats.pending += 1;
        self.stats.live += 1;
        self.conns[idx] = Some(Conn {
            slot,
            conn,
            started: now,
            established: false,
            current: None,
            next_stream: 0,
            done_requests: 0,
            finished: false,
            deadline: None,
        });
        self.process(idx);
        Ok(())
    }

    /// Reads every datagram waiting on socket `slot`, for the connection using it (those
    /// arriving between two connections are dropped).
    fn read(&mut self, slot: usize) {
        let Some(s) = self.sockets.get(slot) else {
            return;
        };
        let idx = s.conn;
        loop {
            match s.sock.recv_from(&mut self.buf) {
                Ok((len, from)) => {
                    let Some(c) = idx.and_then(|i| self.conns[i].as_mut()) else {
                        continue;
                    };
                    let info = quiche::RecvInfo { from, to: s.local };
                    // A datagram the connection rejects is dropped; its state says the rest.
                    let _ = c.conn.recv(&mut self.buf[..len], info);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        if let Some(idx) = idx {
            self.process(idx);
        }
    }

    /// Advances connection `idx` after something happened to it: requests, responses, sends,
    /// its timer, and its end.
    fn process(&mut self, idx: usize) {
        let Some(c) = self.conns[idx].as_mut() else {
            return;
        };
        let now = Instant::now();
        let (stats, hold, k) = (&mut self.stats, self.args.hold, self.args.requests);
        if !c.established && c.conn.is_established() {
            c.established = true;
            stats.established += 1;
            stats.pending -= 1;
            stats.handshake_ms.push(ms(now - c.started));
            stats.last_established = Some(now);
        }
        // The response to the request in progress.
        if let Some((stream, sent)) = c.current {
            loop {
                match c.conn.stream_recv(stream, &mut self.buf) {
                    Ok((len, true)) => {
                        stats.response_bytes += len as u64;
                        stats.last_response = Some(now);
                        stats.request_ms.push(ms(now - sent));
                        c.done_requests += 1;
                        c.current = None;
                        break;
                    }
                    Ok((len, false)) => stats.response_bytes += len as u64,
                    Err(quiche::Error::Done) => break,
                    Err(_) => {
                        // Reset (e.g. 404) or broken: a failed request; go on with the next.
                        stats.failed_requests += 1;
                        c.done_requests += 1;
                        c.current = None;
                        break;
                    }
                }
            }
        }
        if c.established && c.current.is_none() && c.done_requests < k {
            let stream = c.next_stream;
            if c.conn.stream_send(stream, &self.request, true).is_ok() {
                c.current = Some((stream, now));
                c.next_stream += 4;
            }
        }
        if c.established && !c.finished && c.done_requests >= k {
            c.finished = true;
            stats.finished += 1;
            if !hold {
                let _ = c.conn.close(true, 0, b"done");
            }
        }
        while let Ok((len, info)) = c.conn.send(&mut self.out) {
            // A full socket buffer loses the datagram, which recovery then repairs.
            if self.sockets[c.slot]
                .sock
                .send_to(&self.out[..len], info.to)
                .is_err()
            {
                stats.dropped_sends += 1;
            }
        }
        if let Some(d) = c.deadline.take() {
            self.timers.remove(&(d, idx));
        }
        if c.conn.is_closed() {
            if !c.established {
                stats.pending -= 1;
            }
            if !c.finished {
                stats.failed_conns += 1;
            }
            stats.live -= 1;
            self.sockets[c.slot].conn = None;
            self.free_sockets.push(c.slot);
            self.conns[idx] = None;
            return;
        }
        if let Some(t) = c.conn.timeout() {
            let d = now + t;
            c.deadline = Some(d);
            self.timers.insert((d, idx));
        }
        stats.peak_live = stats.peak_live.max(stats.live);
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(&(d, idx)) = self.timers.first() {
            if d > now {
                break;
            }
            self.timers.pop_first();
            if let Some(c) = self.conns[idx].as_mut() {
                c.deadline = None;
                c.conn.on_timeout();
            }
            self.process(idx);
        }
    }

    /// Closes every connection (the end of the run) and sends the closes.
    fn close_all(&mut self) {
        for idx in 0..self.conns.len() {
            if let Some(c) = self.conns[idx].as_mut() {
                let _ = c.conn.close(true, 0, b"done");
            }
            self.process(idx);
        }
    }

    fn run(&mut self) -> Option<(u64, u64)> {
        let n = self.args.connections;
        let bar = if self.args.quiet {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::with_draw_target(Some(n as u64), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} established {msg}",
            ) {
                b.set_style(style);
            }
            b
        };
        let rss_before = self.args.server_pid.and_then(rss_kib);
        let mut rss_peak = None;
        let deadline = Instant::now() + Duration::from_secs(self.args.timeout);
        let mut events = Events::with_capacity(1024);
        let mut next_open = 0;
        let mut last_draw = Instant::now();
        loop {
            while next_open < n && self.stats.pending < self.args.max_pending {
                if let Err(e) = self.open(next_open) {
                    eprintln!("connection {next_open}: {e}");
                    self.stats.failed_conns += 1;
                }
                next_open += 1;
            }
            let all_done = next_open == n && self.stats.finished + self.stats.failed_conns >= n;
            if all_done {
                // Every connection is done: the most are open now.
                if let Some(pid) = self.args.server_pid {
                    rss_peak = rss_kib(pid);
                }
                // The CONNECTION_CLOSE frames are sent; the closing period (RFC 9000 §10.2)
                // only matters to a process that goes on using these addresses.
                self.close_all();
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                eprintln!("timed out with {} connections open", self.stats.live);
                break;
            }
            let wait = self
                .timers
                .first()
                .map(|&(d, _)| d.saturating_duration_since(now))
                .unwrap_or(Duration::from_millis(100))
                .min(Duration::from_millis(100));
            if self.poll.poll(&mut events, Some(wait)).is_err() {
                break;
            }
            for ev in events.iter() {
                self.read(ev.token().0);
            }
            self.fire_timers();
            if last_draw.elapsed() > Duration::from_millis(200) {
                last_draw = Instant::now();
                bar.set_position(self.stats.established as u64);
                bar.set_message(format!(
                    "live {} done {} failed {}",
                    self.stats.live, self.stats.finished, self.stats.failed_conns
                ));
            }
        }
        bar.finish_and_clear();
        // Whatever did not finish by the deadline failed.
        let unfinished = n.saturating_sub(self.stats.finished + self.stats.failed_conns);
        self.stats.failed_conns += unfinished;
        rss_before.zip(rss_peak)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> ExitCode {
    let args = Args::parse();
    let (n, k) = (args.connections, args.requests);
    let mut load = match Load::new(args) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("quiche-load: {e}");
            return ExitCode::from(2);
        }
    };
    let start = Instant::now();
    let rss = load.run();
    let elapsed = start.elapsed();
    let s = &mut load.stats;
    s.handshake_ms.sort_by(f64::total_cmp);
    s.request_ms.sort_by(f64::total_cmp);
    let ramp = match (s.first_open, s.last_established) {
        (Some(a), Some(b)) => (b - a).as_secs_f64(),
        _ => 0.0,
    };
    let hs_per_s = if ramp > 0.0 {
        s.established as f64 / ramp
    } else {
        0.0
    };
    // Aggregate throughput: every response byte over the time from the first connection
    // opened to the last response completed.
    let transfer = match (s.first_open, s.last_response) {
        (Some(a), Some(b)) => (b - a).as_secs_f64(),
        _ => 0.0,
    };
    let goodput_mbit = if transfer > 0.0 {
        s.response_bytes as f64 * 8.0 / transfer / 1e6
    } else {
        0.0
    };
    let mut line = format!(
        "connections={n} requests_per_connection={k} established={} finished={} \
         failed_connections={} failed_requests={} peak_concurrent={} handshakes_per_s={:.1} \
         handshake_p50_ms={:.2} handshake_p99_ms={:.2} requests={} request_p50_ms={:.2} \
         request_p90_ms={:.2} request_p99_ms={:.2} response_bytes={} goodput_mbit_s={:.1} \
         dropped_sends={} elapsed_s={:.2}",
        s.established,
        s.finished,
        s.failed_conns,
        s.failed_requests,
        s.peak_live,
        hs_per_s,
        percentile(&s.handshake_ms, 0.5),
        percentile(&s.handshake_ms, 0.99),
        s.request_ms.len(),
        percentile(&s.request_ms, 0.5),
        percentile(&s.request_ms, 0.9),
        percentile(&s.request_ms, 0.99),
        s.response_bytes,
        goodput_mbit,
        s.dropped_sends,
        elapsed.as_secs_f64(),
    );
    if let Some((before, peak)) = rss {
        let per = (peak.saturating_sub(before) * 1024) as f64 / s.peak_live.max(1) as f64;
        line.push_str(&format!(
            " server_rss_before_kib={before} server_rss_peak_kib={peak} \
             server_rss_per_connection_bytes={per:.0}"
        ));
    }
    println!("{line}");
    if s.failed_conns == 0 && s.failed_requests == 0 && s.finished == n {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
