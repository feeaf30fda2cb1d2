//! A counting global allocator: live heap bytes and the number of allocations, process-wide.
//!
//! The program is single-threaded, so the counters are exact; relaxed atomics keep them correct
//! anyway should a library start a thread. The cost (two uncontended atomic adds per call) is
//! paid by both implementations alike.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// Forwards to `System` and counts.
pub struct Counting;

fn grow(by: usize) {
    LIVE_BYTES.fetch_add(by as i64, Ordering::Relaxed);
}

fn shrink(by: usize) {
    LIVE_BYTES.fetch_sub(by as i64, Ordering::Relaxed);
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only additions are atomic counter updates, which do not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwards to `System` with the caller's layout, as the caller's contract allows.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            grow(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwards to `System` with the caller's layout, as the caller's contract allows.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            grow(layout.size());
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by `System` (through this forwarder) with `layout`, as the
        // caller guarantees; arguments are passed on unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // A reallocation is one more trip to the allocator, as a fresh allocation is.
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            shrink(layout.size());
            grow(new_size);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrink(layout.size());
        // SAFETY: `ptr` was allocated by `System` (through this forwarder) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Heap bytes allocated and not yet freed (requested sizes, not the allocator's rounding).
pub fn live_bytes() -> i64 {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// Allocations (and reallocations) so far.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}
