//! What the heap tests share: a global allocator that counts the live heap bytes, and a
//! rustls client and server settled after one handshake over the in-memory pipe. Included by
//! each test with `#[path = "support/live_heap.rs"] mod live_heap;` (the test crate's root
//! allows `unsafe_code` for the allocator).

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

/// Live heap bytes now.
pub fn live() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

pub fn cert_path(name: &str) -> String {
    format!("{}/tests/certs/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// On rustls in every build: the counting allocator sees Rust's heap only, where rustls keeps
/// its caches (BoringSSL keeps its own, bounded, in C's, and resumes from stateless tickets).
pub fn config(server: bool) -> Config {
    let mut c = Config::with_tls_backend(quiche::PROTOCOL_VERSION, quiche::tls::TlsBackend::Rustls)
        .unwrap();
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
/// tickets and HANDSHAKE_DONE included).
pub fn settled_pipe(client: &mut Config, server: &mut Config) -> Pipe {
    let mut pipe = Pipe::new(client, server).unwrap();
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.client.is_established()
            && p.client.path_stats().bytes_in_flight == 0
            && p.server.path_stats().bytes_in_flight == 0
            && p.client.session().is_some()
    })
    .unwrap();
    pipe
}
