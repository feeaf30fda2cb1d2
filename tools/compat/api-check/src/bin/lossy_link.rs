//! Loss recovery at near-zero RTT, the same program on quiche 0.30.0 (feature `upstream`) and on
//! ours (feature `ours`): a client downloads SIZE bytes from a server in this one thread
//! through an in-memory link with no delay, which drops datagrams at random (seeded) in the
//! data direction, or both, with CUBIC on both ends. Issue 31, item 5.
//!
//! Both libraries read the clock themselves (quiche's API takes no time), so this runs on real
//! time: when neither side has anything to send or receive, the thread sleeps until the
//! earlier of the two connections' timers. What a run costs is then split into the time spent
//! inside the libraries' calls (`work_s`) and the time spent waiting for a timer (`wait_s`): a
//! slow run that waits is a recovery or ACK timing problem, one that works is a CPU problem.
//!
//! Usage: `quiche-lossy-link CERT_DIR [--size BYTES] [--loss P] [--both] [--seeds 1,2,3]`.
//! One line per seed: `seed=S secs=.. work_s=.. wait_s=.. waits=.. client_sent=..
//! server_sent=.. server_lost=.. server_retrans=.. dropped=.. retrans_per_loss=..`.

// A benchmark program: it reads the clock and sleeps (the repository's clippy.toml keeps the
// clock out of the library core, not out of programs like this one).
#![allow(clippy::disallowed_methods)]

#[cfg(feature = "ours")]
use quiche_ours as quiche;
#[cfg(all(feature = "upstream", not(feature = "ours")))]
use quiche_upstream as quiche;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const MAX_DATAGRAM: usize = 1350;
/// No run may take longer: a stall is a failure, not a figure.
const RUN_LIMIT: Duration = Duration::from_secs(60);
const ALPN: &[u8] = b"hq-interop";

/// A small seeded generator (xorshift64*): the same drops for both libraries at one seed, as
/// long as both send the same datagrams (they do not, so a seed fixes the loss process, not
/// which packets are lost).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number in [0, 1).
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One direction of the link: datagrams in flight (none are delayed) and the drop process.
struct Direction {
    queue: VecDeque<Vec<u8>>,
    loss: f64,
    rng: Rng,
    dropped: u64,
}

impl Direction {
    fn new(loss: f64, seed: u64) -> Direction {
        Direction {
            queue: VecDeque::new(),
            loss,
            rng: Rng::new(seed),
            dropped: 0,
        }
    }

    fn push(&mut self, datagram: &[u8]) {
        if self.loss > 0.0 && self.rng.next_f64() < self.loss {
            self.dropped += 1;
        } else {
            self.queue.push_back(datagram.to_vec());
        }
    }
}

struct Options {
    certs: String,
    size: usize,
    loss: f64,
    both: bool,
    seeds: Vec<u64>,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let certs = args
        .next()
        .ok_or("usage: quiche-lossy-link CERT_DIR [options]")?;
    let mut o = Options {
        certs,
        size: 20_000_000,
        loss: 0.05,
        both: false,
        seeds: vec![1, 2, 3, 4, 5],
    };
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--size" => o.size = value()?.parse().map_err(|e| format!("--size: {e}"))?,
            "--loss" => o.loss = value()?.parse().map_err(|e| format!("--loss: {e}"))?,
            "--both" => o.both = true,
            "--seeds" => {
                o.seeds = value()?
                    .split(',')
                    .map(|s| s.parse().map_err(|e| format!("--seeds: {e}")))
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if !(0.0..1.0).contains(&o.loss) {
        return Err("--loss must be in [0, 1)".into());
    }
    Ok(o)
}

fn config(o: &Options, server: bool) -> Result<quiche::Config, String> {
    let e = |what: &str, err: quiche::Error| format!("{what}: {err:?}");
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|x| e("config", x))?;
    if server {
        c.load_cert_chain_from_pem_file(&format!("{}/cert.crt", o.certs))
            .map_err(|x| e("cert", x))?;
        c.load_priv_key_from_pem_file(&format!("{}/cert.key", o.certs))
            .map_err(|x| e("key", x))?;
    } else {
        c.verify_peer(false);
    }
    c.set_application_protos(&[ALPN])
        .map_err(|x| e("alpn", x))?;
    c.set_cc_algorithm(quiche::CongestionControlAlgorithm::CUBIC);
    // Windows larger than the transfer: flow control never limits it, only recovery does.
    let window = o.size as u64 + 1_000_000;
    c.set_initial_max_data(window);
    c.set_initial_max_stream_data_bidi_local(window);
    c.set_initial_max_stream_data_bidi_remote(window);
    c.set_initial_max_streams_bidi(10);
    c.set_max_idle_timeout(30_000);
    c.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    c.set_max_send_udp_payload_size(MAX_DATAGRAM);
    c.set_disable_active_migration(true);
    Ok(c)
}

/// What one run measured.
struct Outcome {
    secs: f64,
    work: Duration,
    wait: Duration,
    waits: u64,
    client_sent: usize,
    server_sent: usize,
    server_lost: usize,
    server_retrans: usize,
    dropped: u64,
}

/// Sends everything `conn` has now into `link`.
fn flush(
    conn: &mut quiche::Connection,
    link: &mut Direction,
    buf: &mut [u8],
) -> Result<(), String> {
    loop {
        match conn.send(buf) {
            Ok((n, _)) => link.push(&buf[..n]),
            Err(quiche::Error::Done) => return Ok(()),
            Err(e) => return Err(format!("send: {e:?}")),
        }
    }
}

/// Hands every datagram in `link` to `conn`.
fn deliver(
    conn: &mut quiche::Connection,
    link: &mut Direction,
    from: SocketAddr,
    to: SocketAddr,
) -> bool {
    let delivered = !link.queue.is_empty();
    while let Some(mut d) = link.queue.pop_front() {
        // A datagram the receiver refuses (e.g. after the close) is dropped, as on a socket.
        let _ = conn.recv(&mut d, quiche::RecvInfo { from, to });
    }
    delivered
}

fn run(o: &Options, seed: u64) -> Result<Outcome, String> {
    let client_addr: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let server_addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let mut ccfg = config(o, false)?;
    let mut scfg = config(o, true)?;
    let scid_c = [0xc1; 16];
    let scid_s = [0x5e; 16];
    let started = Instant::now();
    let mut work = Duration::ZERO;
    let mut t = Instant::now();
    let mut client = quiche::connect(
        Some("quic.tech"),
        &quiche::ConnectionId::from_ref(&scid_c),
        client_addr,
        server_addr,
        &mut ccfg,
    )
    .map_err(|e| format!("connect: {e:?}"))?;
    let mut server: Option<quiche::Connection> = None;
    // Data direction server -> client; ACKs and the request the other way.
    let mut down = Direction::new(o.loss, seed);
    let mut up = Direction::new(if o.both { o.loss } else { 0.0 }, seed ^ 0xABCD);
    let mut buf = vec![0; 65535];
    let payload = vec![0x5a; 64 * 1024];
    let (mut sent, mut received, mut requested, mut request_sent) = (0usize, 0usize, false, false);
    let (mut wait, mut waits) = (Duration::ZERO, 0u64);
    loop {
        if started.elapsed() > RUN_LIMIT {
            return Err(format!(
                "seed {seed}: not done after {RUN_LIMIT:?} ({received} bytes)"
            ));
        }
        flush(&mut client, &mut up, &mut buf)?;
        if server.is_none() {
            if let Some(first) = up.queue.pop_front() {
                let mut first = first;
                server = Some(
                    quiche::accept(
                        &quiche::ConnectionId::from_ref(&scid_s),
                        None,
                        server_addr,
                        client_addr,
                        &mut scfg,
                    )
                    .map_err(|e| format!("accept: {e:?}"))?,
                );
                let s = server.as_mut().unwrap();
                let info = quiche::RecvInfo {
                    from: client_addr,
                    to: server_addr,
                };
                let _ = s.recv(&mut first, info);
            }
        }
        let Some(s) = server.as_mut() else {
            // The client's first flight was lost (--both): it probes again on its timer.
            let now = Instant::now();
            work += now - t;
            std::thread::sleep(client.timeout().unwrap_or(Duration::from_millis(1)));
            t = Instant::now();
            wait += t - now;
            waits += 1;
            client.on_timeout();
            continue;
        };
        let mut progress = deliver(s, &mut up, client_addr, server_addr);
        if s.is_established() && requested {
            while sent < o.size {
                let n = (o.size - sent).min(payload.len());
                match s.stream_send(0, &payload[..n], sent + n == o.size) {
                    Ok(0) | Err(quiche::Error::Done) => break,
                    Ok(w) => sent += w,
                    Err(e) => return Err(format!("stream_send: {e:?}")),
                }
            }
        }
        if s.stream_readable(0) {
            let mut req = [0; 64];
            while s.stream_recv(0, &mut req).is_ok() {}
            requested = true;
        }
        flush(s, &mut down, &mut buf)?;
        progress |= deliver(&mut client, &mut down, server_addr, client_addr);
        if client.is_established() && !request_sent {
            client
                .stream_send(0, b"GET /\r\n", true)
                .map_err(|e| format!("request: {e:?}"))?;
            request_sent = true;
        }
        let mut fin = false;
        while let Ok((n, f)) = client.stream_recv(0, &mut buf) {
            received += n;
            fin |= f;
        }
        if fin {
            let now = Instant::now();
            work += now - t;
            let ss = s.stats();
            let cs = client.stats();
            return Ok(Outcome {
                secs: started.elapsed().as_secs_f64(),
                work,
                wait,
                waits,
                client_sent: cs.sent,
                server_sent: ss.sent,
                server_lost: ss.lost,
                server_retrans: ss.retrans,
                dropped: down.dropped + up.dropped,
            });
        }
        if progress || !up.queue.is_empty() || !down.queue.is_empty() {
            continue;
        }
        // Nothing moves until a timer fires: sleep until the earlier one.
        let timeout = [client.timeout(), s.timeout()].into_iter().flatten().min();
        let now = Instant::now();
        work += now - t;
        if std::env::var_os("LOSSY_LINK_TRACE").is_some() {
            eprintln!(
                "wait at {:.4}: client timer {:?} server timer {:?} (sent {sent}, received {received})",
                started.elapsed().as_secs_f64(),
                client.timeout(),
                s.timeout()
            );
        }
        if let Some(d) = timeout {
            std::thread::sleep(d);
            waits += 1;
        }
        t = Instant::now();
        wait += t - now;
        client.on_timeout();
        s.on_timeout();
        if client.is_closed() || s.is_closed() {
            return Err(format!(
                "seed {seed}: a connection closed before the end ({received} bytes)"
            ));
        }
    }
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("quiche-lossy-link: {e}");
            std::process::exit(2);
        }
    };
    for &seed in &o.seeds {
        match run(&o, seed) {
            Ok(r) => println!(
                "seed={seed} secs={:.4} work_s={:.4} wait_s={:.4} waits={} client_sent={} \
                 server_sent={} server_lost={} server_retrans={} dropped={} retrans_per_loss={:.3}",
                r.secs,
                r.work.as_secs_f64(),
                r.wait.as_secs_f64(),
                r.waits,
                r.client_sent,
                r.server_sent,
                r.server_lost,
                r.server_retrans,
                r.dropped,
                if r.server_lost == 0 {
                    0.0
                } else {
                    r.server_retrans as f64 / r.server_lost as f64
                },
            ),
            Err(e) => {
                eprintln!("quiche-lossy-link: {e}");
                std::process::exit(1);
            }
        }
    }
}
