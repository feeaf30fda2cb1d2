//! What a completed handshake leaves on the heap once both of its connections are freed, and
//! that it stops growing: the heap a server (and a client) keeps across handshakes is made of
//! bounded caches only.
//!
//! Two pairs of `Config`s (client and server, as an application shares them between its
//! connections) complete handshakes over the in-memory pipe, one after the other; each pair of
//! connections is dropped once the client has the server's session tickets. A counting global
//! allocator gives the live heap bytes after each checkpoint. What they hold across handshakes:
//!
//! - the server's TLS session cache (rustls's `ServerSessionMemoryCache`, capped at 4,096
//!   entries; the server issues two tickets per handshake, each one entry: full after 2,048
//!   handshakes);
//! - the client's ticket registry (`SessionRegistry`: the tickets of the last 256 connections,
//!   for `Connection::session`; the oldest are dropped).
//!
//! So the retained bytes grow until about 2,048 handshakes and then stay put. The test
//! asserts that between the last two checkpoints (both past that point) the live heap moved by
//! at most [`TOLERANCE`] bytes in all (a leak of even 5 bytes per handshake fails it), and
//! that freeing the two configs returns all of it; it prints the curve and the share of each
//! cache. `RETAINED_HANDSHAKES=N` sets the last checkpoint (default 3,000; e.g.
//! 20,000 with `cargo test --release`).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use quiche::testing::Pipe;
use quiche::Config;

static LIVE: AtomicI64 = AtomicI64::new(0);

struct Counting;

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only addition is an atomic counter update, which does not
// allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwards to `System` with the caller's layout, as the caller's contract allows.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwards to `System` with the caller's layout, as the caller's contract allows.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by `System` (through this forwarder) with `layout`, as the
        // caller guarantees; arguments are passed on unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` (through this forwarder) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// How far the live heap may move between the last two checkpoints, in bytes, in all.
const TOLERANCE: i64 = 4096;

fn cert_path(name: &str) -> String {
    format!("{}/tests/certs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn config(server: bool) -> Config {
    let mut c = Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(&[b"hq-interop"]).unwrap();
    c.set_max_idle_timeout(30_000);
    c.set_initial_max_data(1 << 20);
    c.set_initial_max_stream_data_bidi_local(1 << 20);
    c.set_initial_max_stream_data_bidi_remote(1 << 20);
    c.set_initial_max_streams_bidi(100);
    if server {
        c.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
            .unwrap();
        c.load_priv_key_from_pem_file(&cert_path("cert.key"))
            .unwrap();
    } else {
        c.verify_peer(false);
    }
    c
}

/// One handshake, run until the client has processed everything the server sent (its
/// tickets and HANDSHAKE_DONE included), then both connections are freed.
fn handshake(client: &mut Config, server: &mut Config) {
    let mut pipe = Pipe::new(client, server).unwrap();
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.client.is_established()
            && p.client.path_stats().bytes_in_flight == 0
            && p.server.path_stats().bytes_in_flight == 0
            && p.client.session().is_some()
    })
    .unwrap();
}

#[test]
fn retained_heap_stops_growing_once_the_caches_are_full() {
    let last: usize = std::env::var("RETAINED_HANDSHAKES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000)
        .max(3_000);
    // Past 2,048 handshakes (the server's cache full) and 256 (the client's registry full).
    let full = 2_100;
    let checkpoints = [0, 100, 256, 1_000, 2_000, full, last];
    let mut client = config(false);
    let mut server = config(true);
    // The first handshake initialises what lives as long as the process (rustls's and ring's
    // statics, the process tag of session handles): the baseline is taken after it.
    handshake(&mut client, &mut server);
    let base = LIVE.load(Ordering::Relaxed);
    let mut done = 0;
    let mut at = Vec::new();
    for &k in &checkpoints {
        while done < k {
            handshake(&mut client, &mut server);
            done += 1;
        }
        let retained = LIVE.load(Ordering::Relaxed) - base;
        println!(
            "handshakes={k} retained_bytes={retained} per_handshake={:.0}",
            retained as f64 / k.max(1) as f64
        );
        at.push(retained);
    }
    let (at_full, at_last) = (at[at.len() - 2], at[at.len() - 1]);
    // The caches did fill: something is retained (a cache that kept nothing would make the
    // check below vacuous).
    assert!(at_full > 100_000, "{at_full} bytes retained at {full}");
    assert!(
        (at_last - at_full).abs() <= TOLERANCE,
        "{at_full} bytes retained after {full} handshakes, {at_last} after {last}"
    );
    // Who holds it: the configs. Freeing them returns all of it (and their own certificates,
    // keys and TLS configs, counted in the baseline: hence "at most" nothing left).
    drop(client);
    drop(server);
    let left = LIVE.load(Ordering::Relaxed) - base;
    println!("after freeing both configs: {left} bytes");
    assert!(
        left <= 0,
        "{left} bytes retained once both configs are freed"
    );
}
