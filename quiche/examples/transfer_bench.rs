//! Measures the library's per-packet cost: a server sends N MiB to a client on one stream
//! through an in-memory link, both in this thread, on a virtual clock. No sockets, no kernel:
//! the wall-clock time is the library's own work (AEAD included) plus this loop's copies.
//!
//! ```text
//! cargo run --release --example transfer_bench -- 1024      # MiB to move (default 256)
//! cargo run --release --example transfer_bench -- 1024 1    # write at most 1 MiB ahead
//! ```
//!
//! By default the server writes whatever `stream_send` accepts (up to the peer's 16 MiB
//! window), as the apps do; the data then leaves the CPU caches before it is sent, and copying
//! it into packets costs more than copying it in. The second argument bounds what the server
//! keeps buffered (`stream_send_buffered`), which keeps the data cache-hot.
//!
//! The virtual clock advances by a fixed step per round; datagrams arrive one link delay after
//! the time the sender released them (its pacer's `SendInfo::at`). Prints wall-clock µs per
//! packet and MB/s.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use quiche::{Config, Connection, ConnectionId, Error, RecvInfo};

/// How far the virtual clock moves per round.
const STEP: Duration = Duration::from_micros(50);
/// One-way delay of the virtual link.
const DELAY: Duration = Duration::from_micros(500);
const STREAM: u64 = 0;

fn config(server: bool) -> Config {
    let cert = |name: &str| format!("{}/tests/certs/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut c = Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(&[b"bench"]).unwrap();
    c.set_max_idle_timeout(30_000);
    c.set_initial_max_data(32 << 20);
    c.set_initial_max_stream_data_bidi_local(16 << 20);
    c.set_initial_max_stream_data_bidi_remote(16 << 20);
    c.set_initial_max_streams_bidi(10);
    if server {
        c.load_cert_chain_from_pem_file(&cert("cert.crt")).unwrap();
        c.load_priv_key_from_pem_file(&cert("cert.key")).unwrap();
    } else {
        c.verify_peer(false);
    }
    c
}

/// One direction of the link: datagrams with their arrival times, and spare buffers.
#[derive(Default)]
struct Link {
    /// Arrival time, buffer (always 1500 bytes long) and datagram length.
    queue: VecDeque<(Instant, Vec<u8>, usize)>,
    spare: Vec<Vec<u8>>,
    /// The release time of the last datagram the sender paced: it is asked for more then.
    paced_until: Option<Instant>,
}

impl Link {
    /// Lets `conn` send everything it may send at `now`.
    fn flush(&mut self, conn: &mut Connection, now: Instant) {
        if self.paced_until.is_some_and(|t| t > now) {
            return;
        }
        loop {
            let mut buf = self.spare.pop().unwrap_or_else(|| vec![0; 1500]);
            let (len, info) = match conn.send_at(&mut buf, now) {
                Ok(v) => v,
                Err(Error::Done) => {
                    self.spare.push(buf);
                    break;
                }
                Err(e) => panic!("send: {e:?}"),
            };
            let leave = info.at.max(now);
            // Arrival times stay in order: the sender's release times do not go back.
            self.queue.push_back((leave + DELAY, buf, len));
            if leave > now {
                self.paced_until = Some(leave);
                break;
            }
        }
    }

    /// Delivers to `conn` every datagram that has arrived by `now`.
    fn deliver(&mut self, conn: &mut Connection, info: RecvInfo, now: Instant) {
        while self.queue.front().is_some_and(|(t, _, _)| *t <= now) {
            let Some((_, mut buf, len)) = self.queue.pop_front() else {
                break;
            };
            // A datagram the receiver rejects is its own business (it drops it or closes).
            let _ = conn.recv_at(&mut buf[..len], info, now);
            self.spare.push(buf);
        }
    }
}

/// Nanoseconds this thread has spent on a CPU (Linux `schedstat`), if the kernel tells: unlike
/// the wall clock it leaves out the time other processes had the CPU.
fn cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

fn main() {
    let mib: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(256);
    let total = mib << 20;
    let ahead: u64 = std::env::args()
        .nth(2)
        .and_then(|a| a.parse::<u64>().ok())
        .map_or(u64::MAX, |m| m << 20);

    let client_addr: SocketAddr = "127.0.0.1:4321".parse().unwrap();
    let server_addr: SocketAddr = "127.0.0.1:443".parse().unwrap();
    let mut client = quiche::connect(
        Some("localhost"),
        &ConnectionId::from_ref(&[1; 16]),
        client_addr,
        server_addr,
        &mut config(false),
    )
    .unwrap();
    let mut server = quiche::accept(
        &ConnectionId::from_ref(&[2; 16]),
        None,
        server_addr,
        client_addr,
        &mut config(true),
    )
    .unwrap();
    let to_server = RecvInfo {
        from: client_addr,
        to: server_addr,
    };
    let to_client = RecvInfo {
        from: server_addr,
        to: client_addr,
    };
    let (mut up, mut down) = (Link::default(), Link::default());
    let epoch = quiche::testing::virtual_epoch();
    let mut now = epoch;

    let mut round = |client: &mut Connection, server: &mut Connection, now: Instant| {
        up.flush(client, now);
        down.flush(server, now);
        up.deliver(server, to_server, now);
        down.deliver(client, to_client, now);
        for conn in [&mut *client, &mut *server] {
            if conn.timeout_instant().is_some_and(|t| t <= now) {
                conn.on_timeout_at(now);
            }
        }
    };

    // Handshake and request, not measured.
    while !(client.is_established() && server.is_established()) {
        now += STEP;
        round(&mut client, &mut server, now);
    }
    client.stream_send(STREAM, b"GET /", true).unwrap();
    let mut req = [0u8; 64];
    while !server.stream_readable(STREAM) {
        now += STEP;
        round(&mut client, &mut server, now);
    }
    server.stream_recv(STREAM, &mut req).unwrap();

    let source = vec![0x5a; 1 << 16];
    let mut sink = vec![0; 1 << 16];
    let (mut written, mut read, mut done) = (0, 0, false);
    let before = (client.stats(), server.stats());
    // Examples are outside the library: the wall clock is what is being measured.
    #[allow(clippy::disallowed_methods)]
    let start = Instant::now();
    let cpu_start = cpu_ns();
    while !done {
        while written < total && server.stream_send_buffered() < ahead {
            let len = (total - written).min(source.len());
            match server.stream_send(STREAM, &source[..len], written + len == total) {
                Ok(n) => written += n,
                Err(Error::Done) => break,
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        now += STEP;
        round(&mut client, &mut server, now);
        while client.stream_readable(STREAM) {
            match client.stream_recv(STREAM, &mut sink) {
                Ok((n, fin)) => {
                    read += n;
                    if fin {
                        done = true;
                        break;
                    }
                }
                Err(Error::Done) => break,
                Err(e) => panic!("stream_recv: {e:?}"),
            }
        }
    }
    let elapsed = start.elapsed();
    let cpu = cpu_ns()
        .zip(cpu_start)
        .map(|(end, start)| end.saturating_sub(start));
    assert_eq!(read, total);

    let (c, s) = (client.stats(), server.stats());
    let data_packets = (s.sent - before.1.sent) as f64;
    let all_packets = (c.sent + c.recv + s.sent + s.recv
        - before.0.sent
        - before.0.recv
        - before.1.sent
        - before.1.recv) as f64;
    let us = elapsed.as_secs_f64() * 1e6;
    println!(
        "{mib} MiB in {:.3} s wall ({:.3} s virtual): {:.0} MB/s, {:.3} µs per server packet \
         ({} packets), {:.3} µs per packet sent or received by either side ({}); lost {}",
        elapsed.as_secs_f64(),
        (now - epoch).as_secs_f64(),
        total as f64 / elapsed.as_secs_f64() / 1e6,
        us / data_packets,
        data_packets,
        us / all_packets,
        all_packets,
        s.lost,
    );
    if let Some(cpu) = cpu {
        let cpu_us = cpu as f64 / 1e3;
        println!(
            "on-CPU {:.3} s: {:.3} µs per server packet, {:.0} MB/s per CPU second",
            cpu_us / 1e6,
            cpu_us / data_packets,
            total as f64 / cpu_us,
        );
    }
}
