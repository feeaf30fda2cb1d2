//! The per-packet hot path must not touch the heap in steady state (sending data, receiving
//! data, processing ACKs).
//!
//! A counting global allocator records the allocations this thread makes while a flag is set.
//! Over the in-memory pipe, one side moves 10 MiB to the other on one stream on a virtual clock
//! with no loss (a download, then an upload). Flow control caps the data in flight at 1 MiB;
//! after a warm-up (the first 3 MiB: slow start reaches that cap after about 2 MiB, and the
//! buffers grow to it meanwhile; then the ACK frequency extension, which both sides offer,
//! asks for fewer, larger ACKs over a few round trips, and the pool of sent-packet records grows once
//! more to the batch one ACK hands back), every allocation made by the connections, the pipe
//! and the test's own driver loop is counted and divided by the packets both sides sent and
//! received in that time. The sender processes an ACK for every few packets, so the ACK path
//! is covered by the same run. Up to the last MiB the count must be zero; over the whole rest it
//! must stay under 0.01 per packet (reused buffers may still grow to a new high-water mark while
//! the windows drain).
//!
//! Set `HOT_PATH_ALLOC_TRACE=N` to print the backtraces of the first N counted allocations.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use quiche::testing::Pipe;
use quiche::{Config, Connection, Error};

struct Counting;

thread_local! {
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
    static TRACE_LEFT: Cell<u32> = const { Cell::new(0) };
}

fn note_allocation(size: usize) {
    // `try_with`: allocations can happen while thread-locals are being torn down.
    if !MEASURING.try_with(Cell::get).unwrap_or(false) {
        return;
    }
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    let _ = BYTES.try_with(|c| c.set(c.get() + size as u64));
    let trace = TRACE_LEFT.try_with(Cell::get).unwrap_or(0);
    if trace > 0 {
        // Capturing a backtrace allocates: stop measuring meanwhile so it is not counted (and
        // does not recurse).
        let _ = TRACE_LEFT.try_with(|c| c.set(trace - 1));
        let _ = MEASURING.try_with(|m| m.set(false));
        eprintln!(
            "allocation of {size} bytes:\n{}",
            std::backtrace::Backtrace::force_capture()
        );
        let _ = MEASURING.try_with(|m| m.set(true));
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only additions are updates of const-initialized thread-locals
// (and, when tracing is asked for, a backtrace taken with counting switched off).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        // SAFETY: forwards to `System` with the caller's layout, as the caller's contract allows.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        // SAFETY: forwards to `System` with the caller's layout, as the caller's contract allows.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation(new_size);
        // SAFETY: `ptr` was allocated by `System` (through this forwarder) with `layout`, as the
        // caller guarantees; arguments are passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this forwarder) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn start_counting() {
    ALLOCATIONS.with(|c| c.set(0));
    BYTES.with(|c| c.set(0));
    let trace = std::env::var("HOT_PATH_ALLOC_TRACE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    TRACE_LEFT.with(|c| c.set(trace));
    MEASURING.with(|m| m.set(true));
}

/// The allocations and bytes counted since `start_counting`.
fn counted() -> (u64, u64) {
    (ALLOCATIONS.with(Cell::get), BYTES.with(Cell::get))
}

/// Stops counting; returns the allocations and bytes counted since `start_counting`.
fn stop_counting() -> (u64, u64) {
    MEASURING.with(|m| m.set(false));
    counted()
}

const TOTAL: usize = 10 << 20;
const WARM_UP: usize = 3 << 20;
/// The end of the transfer, where the windows drain: the reused storage (pools of sent-packet
/// records, the ring of sent packets) may grow there to hold a whole window at once.
const TAIL: usize = 1 << 20;
const STREAM_WINDOW: u64 = 1 << 20;
/// The bound asserted: allocations per packet (sent and received, both sides) after warm-up.
const MAX_ALLOCATIONS_PER_PACKET: f64 = 0.01;

fn cert_path(name: &str) -> String {
    format!("{}/tests/certs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn config(server: bool, bbr: bool) -> Config {
    let mut c = Config::new(quiche::PROTOCOL_VERSION).unwrap();
    if bbr {
        // BBR's delivery-rate sampling runs per packet too.
        c.set_cc_algorithm_name("bbr").unwrap();
    }
    c.set_application_protos(&[b"hq-interop"]).unwrap();
    c.set_max_idle_timeout(30_000);
    // The ACK frequency extension's hot path (fewer, larger ACKs) is measured too.
    c.enable_ack_frequency(true);
    // Flow control caps what is in flight at one stream window, so that the windows stop
    // growing during the warm-up: afterwards the transfer is in its steady state. (Without the
    // cap, slow start on this lossless link grows the window through the whole transfer, and
    // the sent-packet ring and frame pools double a few more times.)
    c.set_initial_max_data(STREAM_WINDOW * 2);
    c.set_initial_max_stream_data_bidi_local(STREAM_WINDOW);
    c.set_initial_max_stream_data_bidi_remote(STREAM_WINDOW);
    c.set_initial_max_stream_data_uni(STREAM_WINDOW);
    c.set_max_stream_window(STREAM_WINDOW);
    c.set_max_connection_window(STREAM_WINDOW * 2);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
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

/// The byte at `offset` of the transferred data.
fn pattern(offset: usize) -> u8 {
    (offset % 251) as u8
}

/// (sender, receiver)
fn sides(pipe: &mut Pipe, download: bool) -> (&mut Connection, &mut Connection) {
    if download {
        (&mut pipe.server, &mut pipe.client)
    } else {
        (&mut pipe.client, &mut pipe.server)
    }
}

fn packets(pipe: &Pipe) -> u64 {
    let (c, s) = (pipe.client.stats(), pipe.server.stats());
    (c.sent + c.recv + s.sent + s.recv) as u64
}

struct Report {
    /// Allocations after the warm-up and before the tail.
    steady_allocations: u64,
    /// Packets sent and received after the warm-up and before the tail.
    steady_packets: u64,
    /// Allocations from the warm-up to the end.
    allocations: u64,
    /// Bytes those allocations asked for.
    bytes: u64,
    /// Packets sent and received from the warm-up to the end.
    packets: u64,
}

/// Moves `TOTAL` bytes on stream 0 from the server to the client (`download`) or the other
/// way, and counts the allocations after the warm-up.
fn transfer(download: bool, bbr: bool) -> Report {
    let mut pipe = Pipe::new(&mut config(false, bbr), &mut config(true, bbr)).unwrap();
    // The pipe's own buffers are not the library's allocations: at most the whole transfer and
    // an ACK for every other packet can be in flight.
    pipe.reserve_datagrams(TOTAL / 1000 * 3 / 2);
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.client.is_established())
        .unwrap();
    const STREAM: u64 = 0;
    if download {
        // The client opens the stream with a request; the server answers on it.
        pipe.client.stream_send(STREAM, b"GET /", true).unwrap();
        pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(STREAM))
            .unwrap();
        let mut req = [0u8; 16];
        let (n, fin) = pipe.server.stream_recv(STREAM, &mut req).unwrap();
        assert_eq!((&req[..n], fin), (&b"GET /"[..], true));
    }

    let source: Vec<u8> = (0..65536).map(pattern).collect();
    let mut buf = vec![0u8; 65536];
    let (mut written, mut read) = (0usize, 0usize);
    let mut measured_from: Option<u64> = None;
    let mut steady: Option<(u64, u64)> = None;
    let mut finished = false;
    let deadline = pipe.now + Duration::from_secs(120);
    while !finished {
        assert!(pipe.now < deadline, "transfer stalled at {read} bytes");
        let (sender, receiver) = sides(&mut pipe, download);
        while written < TOTAL {
            // Chunks aligned to the pattern's period would make the offset check trivial:
            // start each chunk where the data left off.
            let skew = written % 251;
            let len = (TOTAL - written).min(source.len() - 251);
            let chunk = &source[skew..skew + len];
            match sender.stream_send(STREAM, chunk, written + len == TOTAL) {
                Ok(n) => written += n,
                Err(Error::Done) => break,
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        // Before the first frame arrives the server does not know the stream yet.
        while receiver.stream_readable(STREAM) {
            match receiver.stream_recv(STREAM, &mut buf) {
                Ok((n, fin)) => {
                    for (i, &b) in buf[..n].iter().enumerate() {
                        assert_eq!(b, pattern(read + i), "byte {}", read + i);
                    }
                    read += n;
                    if fin {
                        // The stream is gone once its end was read.
                        finished = true;
                        break;
                    }
                }
                Err(Error::Done) => break,
                Err(e) => panic!("stream_recv: {e:?}"),
            }
        }
        if measured_from.is_none() && read >= WARM_UP {
            measured_from = Some(packets(&pipe));
            start_counting();
        }
        if steady.is_none() && read >= TOTAL - TAIL {
            steady = Some((counted().0, packets(&pipe) - measured_from.unwrap()));
        }
        if !finished {
            pipe.step().unwrap();
        }
    }
    let (allocations, bytes) = stop_counting();
    assert_eq!(read, TOTAL);
    let stats = if download {
        pipe.server.stats()
    } else {
        pipe.client.stats()
    };
    assert_eq!(stats.lost, 0, "the link loses nothing");
    let (steady_allocations, steady_packets) = steady.unwrap();
    Report {
        steady_allocations,
        steady_packets,
        allocations,
        bytes,
        packets: packets(&pipe) - measured_from.unwrap(),
    }
}

fn check(download: bool, bbr: bool) {
    let r = transfer(download, bbr);
    let per_packet = r.allocations as f64 / r.packets as f64;
    eprintln!(
        "{}: {} allocations ({} bytes) over {} packets after warm-up: {per_packet:.4} per packet",
        if download { "download" } else { "upload" },
        r.allocations,
        r.bytes,
        r.packets,
    );
    eprintln!(
        "  of which {} allocations over {} packets before the last MiB",
        r.steady_allocations, r.steady_packets
    );
    assert!(
        r.packets > 10_000,
        "too few packets measured: {}",
        r.packets
    );
    assert_eq!(r.steady_allocations, 0, "allocations in the steady state");
    assert!(
        per_packet <= MAX_ALLOCATIONS_PER_PACKET,
        "{per_packet:.4} allocations per packet (bound {MAX_ALLOCATIONS_PER_PACKET})"
    );
}

#[test]
fn counter_sees_allocations() {
    start_counting();
    let v = std::hint::black_box(vec![1u8; 100]);
    let (n, bytes) = stop_counting();
    assert_eq!(v.len(), 100);
    assert!(
        n >= 1 && bytes >= 100,
        "the counting allocator missed an allocation"
    );
}

#[test]
fn download_allocates_nothing_per_packet() {
    check(true, false);
}

#[test]
fn bbr_download_allocates_nothing_per_packet() {
    check(true, true);
}

#[test]
fn upload_allocates_nothing_per_packet() {
    check(false, false);
}
