//! What a completed handshake leaves on the heap once both of its connections are freed, and
//! that it stops growing: the heap a server (and a client) keeps across handshakes is made of
//! bounded caches only. On rustls (see `config`).
//!
//! A client and a server `Config` (shared by all their connections, as an application shares
//! them) complete handshakes over the in-memory pipe, one after the other; each pair of
//! connections is dropped once the client has the server's session tickets. A counting global
//! allocator gives the live heap bytes at checkpoints. What is held across handshakes:
//!
//! - the server's TLS session cache (rustls's `ServerSessionMemoryCache`, of
//!   `Config::set_session_cache_size` entries, 4,096 by default; rustls issues two tickets per
//!   handshake, one entry each, so it is full after half as many handshakes). Its hash table
//!   doubles once more after it is full, when the slots freed by forgotten sessions run out
//!   (about 20,000 handshakes with the default size), and never again: the entries stay under
//!   half of the larger table;
//! - the client's ticket registry (`SessionRegistry`: the tickets of the last 256 connections,
//!   for `Connection::session`; the oldest are dropped).
//!
//! The test runs with a server cache of 16 entries so that all of this happens within a few
//! hundred handshakes (when the table doubles depends on the hash seed: with 256 entries it
//! was sometimes after 1,000 handshakes; with 16, always before, and it adds only 1.5 KB),
//! and asserts that the second half of the run (1,000 handshakes by
//! default) moved the live heap by at most [`TOLERANCE`] bytes in all (a leak of 5 bytes per
//! handshake fails it), and that freeing the two configs returns all of it. It prints the
//! curve. `RETAINED_HANDSHAKES=N` sets the number of handshakes (default 2,000) and
//! `RETAINED_SESSION_CACHE=N` the cache size, e.g. `RETAINED_SESSION_CACHE=4096
//! RETAINED_HANDSHAKES=60000 cargo test --release -p quiche --test retained_heap -- --nocapture`
//! for the default cache.
#![allow(unsafe_code)]

use live_heap::{config, live, settled_pipe};
use quiche::Config;

#[path = "support/live_heap.rs"]
mod live_heap;

/// How far the live heap may move between the last two checkpoints, in bytes, in all.
const TOLERANCE: i64 = 4096;

/// One handshake, run until the client has processed everything the server sent (its
/// tickets and HANDSHAKE_DONE included), then both connections are freed.
fn handshake(client: &mut Config, server: &mut Config) {
    drop(settled_pipe(client, server));
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn retained_heap_stops_growing_once_the_caches_are_full() {
    let last = env_usize("RETAINED_HANDSHAKES").unwrap_or(2_000).max(600);
    let cache = env_usize("RETAINED_SESSION_CACHE").unwrap_or(16);
    // By half-way both caches are full and the server cache's table has reached its final
    // size: the second half must retain nothing more.
    let half = last / 2;
    let mut checkpoints: Vec<usize> = [0, 100, 256, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000]
        .into_iter()
        .filter(|&k| k < half)
        .collect();
    checkpoints.extend([half, last]);
    let mut at = Vec::with_capacity(checkpoints.len());
    let mut client = config(false);
    let mut server = config(true);
    server.set_session_cache_size(cache);
    // The first handshake initialises what lives as long as the process (rustls's and ring's
    // statics, the process tag of session handles): the baseline is taken after it.
    handshake(&mut client, &mut server);
    let base = live();
    let mut done = 0;
    for &k in &checkpoints {
        while done < k {
            handshake(&mut client, &mut server);
            done += 1;
        }
        let retained = live() - base;
        println!(
            "session_cache={cache} handshakes={k} retained_bytes={retained} per_handshake={:.0}",
            retained as f64 / k.max(1) as f64
        );
        at.push(retained);
    }
    let (at_half, at_last) = (at[at.len() - 2], at[at.len() - 1]);
    // The caches did fill: something is retained (a cache that kept nothing would make the
    // check below vacuous).
    assert!(at_half > 100_000, "{at_half} bytes retained at {half}");
    assert!(
        (at_last - at_half).abs() <= TOLERANCE,
        "{at_half} bytes retained after {half} handshakes, {at_last} after {last}"
    );
    // Who holds it: the configs. Freeing them returns all of it (and their own certificates,
    // keys and TLS configs, counted in the baseline: hence "at most" nothing left).
    drop(client);
    drop(server);
    let left = live() - base;
    println!("after freeing both configs: {left} bytes");
    assert!(
        left <= 0,
        "{left} bytes retained once both configs are freed"
    );
}
