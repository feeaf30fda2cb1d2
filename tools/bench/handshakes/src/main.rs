//! Handshakes per second on one thread, and the heap an idle established connection holds:
//! our library next to quinn-proto, both driven in memory (no sockets), client and server in
//! this one process.
//!
//! ```text
//! bench-handshakes [all|rate|heap] [--impl ours|quinn|both] [-n N] [-k K] [--warmup W] [--certs DIR]
//! ```
//!
//! - `rate`: N complete handshakes one after the other (after W unmeasured ones), each until
//!   both sides are established and nothing is left to send, so the client has processed
//!   HANDSHAKE_DONE; then both connections are freed. Prints one `rate ...` line.
//! - `heap`: K connection pairs handshaken and kept idle; live heap bytes (a counting global
//!   allocator) before, after, after freeing the clients, after freeing the servers. Prints
//!   one `heap ...` line.
//! - `all` (the default): both, for each implementation, and the ratio of the rates.
//!
//! Both sides use the test certificate of quiche/tests/certs (ECDSA P-256), TLS 1.3 with
//! TLS_AES_128_GCM_SHA256 and X25519 (ours: unless `--curves` says otherwise, or the build has
//! the `boringssl` feature, whose default offers X25519MLKEM768 first), the client verifies the
//! server's certificate against the test CA and its name, and no session is resumed. Built with
//! the `boringssl` feature, "ours" runs on our BoringSSL backend. See tools/bench/README.md.

// A benchmark, not the library: wall-clock time is what it measures, so the workspace ban on
// `Instant::now` (time is a parameter there) does not apply.
#![allow(clippy::disallowed_methods)]

mod alloc;
mod common;
mod ours;
mod quinn;

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use std::process::ExitCode;
use std::time::Instant;

use crate::common::Traffic;
use crate::ours::Ours;
use crate::quinn::Quinn;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

#[derive(Clone, Copy, PartialEq)]
enum Impl {
    Ours,
    Quinn,
}

impl Impl {
    /// The TLS library of the handshake: ours on the backend this program was built with.
    fn tls(self) -> &'static str {
        match self {
            Impl::Ours if cfg!(feature = "boringssl") => "boringssl",
            Impl::Ours | Impl::Quinn => "rustls",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Impl::Ours => "ours",
            Impl::Quinn => "quinn",
        }
    }
}

/// The benchmark's command line.
#[derive(Parser)]
#[command(
    name = "bench-handshakes",
    version,
    about = "Handshakes per second on one thread, and the heap an idle established connection \
             holds: ours next to quinn-proto, in memory"
)]
struct Args {
    /// What to measure: `rate`, `heap`, or `all` (both, and the ratio of the rates)
    #[arg(value_enum, default_value = "all")]
    mode: Mode,
    /// Which implementation(s) to measure
    #[arg(long = "impl", value_enum, default_value = "both")]
    which: Which,
    /// Measured handshakes per `rate` run
    #[arg(short = 'n', default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    n: u64,
    /// Connection pairs kept idle in a `heap` run
    #[arg(short = 'k', default_value_t = 1000, value_parser = parse_positive)]
    k: usize,
    /// Unmeasured handshakes before a `rate` run
    #[arg(long, default_value_t = 100)]
    warmup: u64,
    /// Key exchange groups for our library, both sides (`Config::set_curves_list`, e.g.
    /// `X25519`); the TLS backend's default without it (BoringSSL's offers X25519MLKEM768
    /// first, rustls with ring X25519)
    #[arg(long, value_name = "LIST")]
    curves: Option<String>,
    /// Directory with the test certificate (cert.crt, cert.key, rootca.crt)
    #[arg(long, value_name = "DIR", default_value_os_t = default_certs())]
    certs: PathBuf,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Mode {
    All,
    Rate,
    Heap,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Which {
    Ours,
    Quinn,
    Both,
}

impl Which {
    fn impls(self) -> &'static [Impl] {
        match self {
            Which::Ours => &[Impl::Ours],
            Which::Quinn => &[Impl::Quinn],
            Which::Both => &[Impl::Ours, Impl::Quinn],
        }
    }
}

fn parse_positive(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(0) => Err("must be positive".into()),
        Ok(k) => Ok(k),
        Err(e) => Err(e.to_string()),
    }
}

fn default_certs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../quiche/tests/certs")
}

/// The result of a `rate` run.
struct Rate {
    per_sec: f64,
}

fn rate(which: Impl, a: &Args) -> Result<Rate, String> {
    let mut t = Traffic::default();
    let (secs, allocs, retained) = match which {
        Impl::Ours => {
            let mut ours = Ours::new(&a.certs, a.curves.as_deref())?;
            let mut warm = Traffic::default();
            for _ in 0..a.warmup {
                drop(ours.handshake(Instant::now(), &mut warm)?);
            }
            measure(a.n, || {
                drop(ours.handshake(Instant::now(), &mut t)?);
                Ok(())
            })?
        }
        Impl::Quinn => {
            let mut q = Quinn::new(&a.certs)?;
            let mut eps = q.endpoints();
            let mut warm = Traffic::default();
            for _ in 0..a.warmup {
                let pair = q.handshake(&mut eps, Instant::now(), &mut warm)?;
                Quinn::release(&mut eps, pair);
            }
            measure(a.n, || {
                let pair = q.handshake(&mut eps, Instant::now(), &mut t)?;
                Quinn::release(&mut eps, pair);
                Ok(())
            })?
        }
    };
    let n = a.n as f64;
    let per_sec = n / secs;
    println!(
        "rate impl={} tls={} handshakes={} secs={:.3} per_sec={:.1} us_per_handshake={:.1} \
         allocs_per_handshake={:.1} retained_bytes_per_handshake={:.0} \
         c2s_datagrams={:.2} c2s_bytes={:.0} s2c_datagrams={:.2} s2c_bytes={:.0} timer_jumps={}",
        which.name(),
        which.tls(),
        a.n,
        secs,
        per_sec,
        secs * 1e6 / n,
        allocs as f64 / n,
        retained as f64 / n,
        t.c2s.datagrams as f64 / n,
        t.c2s.bytes as f64 / n,
        t.s2c.datagrams as f64 / n,
        t.s2c.bytes as f64 / n,
        t.timer_jumps,
    );
    Ok(Rate { per_sec })
}

/// Runs `f` `n` times; returns the seconds taken, the allocations made, and the heap bytes
/// still held afterwards: a pair frees what it allocated, so this is what caches kept (the
/// servers' TLS session caches, our clients' ticket registry).
fn measure(n: u64, mut f: impl FnMut() -> Result<(), String>) -> Result<(f64, u64, i64), String> {
    let allocs0 = alloc::allocations();
    let live0 = alloc::live_bytes();
    let start = Instant::now();
    for _ in 0..n {
        f()?;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((
        secs,
        alloc::allocations() - allocs0,
        alloc::live_bytes() - live0,
    ))
}

fn per(bytes: i64, n: usize) -> f64 {
    bytes as f64 / n as f64
}

fn heap(which: Impl, a: &Args) -> Result<(), String> {
    let k = a.k;
    let warmup = a.warmup.min(20);
    let (live, conn_size) = match which {
        Impl::Ours => {
            let mut ours = Ours::new(&a.certs, a.curves.as_deref())?;
            let mut t = Traffic::default();
            // The configs build their rustls configs on first use: not per connection.
            for _ in 0..warmup {
                drop(ours.handshake(Instant::now(), &mut t)?);
            }
            let mut clients = Vec::with_capacity(k);
            let mut servers = Vec::with_capacity(k);
            let live0 = alloc::live_bytes();
            for _ in 0..k {
                let pair = ours.handshake(Instant::now(), &mut t)?;
                clients.push(pair.client);
                servers.push(pair.server);
            }
            let live1 = alloc::live_bytes();
            // `clear` frees the connections but keeps the vectors, allocated before `live0`.
            clients.clear();
            let live2 = alloc::live_bytes();
            servers.clear();
            let live3 = alloc::live_bytes();
            (
                [live0, live1, live2, live3],
                std::mem::size_of::<quiche::Connection>(),
            )
        }
        Impl::Quinn => {
            let mut q = Quinn::new(&a.certs)?;
            let mut t = Traffic::default();
            {
                let mut eps = q.endpoints();
                for _ in 0..warmup {
                    let pair = q.handshake(&mut eps, Instant::now(), &mut t)?;
                    Quinn::release(&mut eps, pair);
                }
            }
            let mut clients = Vec::with_capacity(k);
            let mut servers = Vec::with_capacity(k);
            let live0 = alloc::live_bytes();
            // Created inside the measured span: each side's figure includes its endpoint (its
            // routing tables grow with the connections; its fixed part is spread over K).
            let mut eps = q.endpoints();
            for _ in 0..k {
                let pair = q.handshake(&mut eps, Instant::now(), &mut t)?;
                // Boxed, as quinn keeps each connection's state behind an `Arc`.
                clients.push(Box::new(pair.client));
                servers.push(Box::new(pair.server));
            }
            let live1 = alloc::live_bytes();
            let quinn::Endpoints { client, server } = eps;
            clients.clear();
            drop(client);
            let live2 = alloc::live_bytes();
            servers.clear();
            drop(server);
            let live3 = alloc::live_bytes();
            (
                [live0, live1, live2, live3],
                std::mem::size_of::<quinn_proto::Connection>(),
            )
        }
    };
    let [live0, live1, live2, live3] = live;
    println!(
        "heap impl={} conns={} per_conn={:.0} client_per_conn={:.0} server_per_conn={:.0} \
         residual_per_pair={:.0} conn_struct={}",
        which.name(),
        k,
        per(live1 - live0, 2 * k),
        per(live1 - live2, k),
        per(live2 - live3, k),
        per(live3 - live0, k),
        conn_size,
    );
    Ok(())
}

fn run() -> Result<(), String> {
    let a = Args::parse();
    if !a.certs.join("cert.crt").exists() {
        return Err(format!(
            "no cert.crt in {} (--certs DIR)",
            a.certs.display()
        ));
    }
    let mut rates = Vec::new();
    if a.mode != Mode::Heap {
        for &which in a.which.impls() {
            rates.push((which, rate(which, &a)?));
        }
    }
    if let [(Impl::Ours, ours), (Impl::Quinn, quinn)] = rates.as_slice() {
        println!("ratio ours/quinn={:.2}", ours.per_sec / quinn.per_sec);
    }
    if a.mode != Mode::Rate {
        for &which in a.which.impls() {
            heap(which, &a)?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-handshakes: {e}");
            ExitCode::FAILURE
        }
    }
}
