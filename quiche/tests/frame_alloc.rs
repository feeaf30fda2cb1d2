//! Decoding frames must not touch the heap: it runs for every received packet.
//!
//! A counting global allocator records allocations made by this thread while a flag is set;
//! the test decodes a payload holding every frame type and expects the count to stay zero.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use quiche::frame::{self, AckRanges, EcnCounts, Frame};
use quiche::ranges::RangeSet;
use quiche::Type;

struct Counting;

thread_local! {
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with`: allocations can happen while thread-locals are being torn down.
    let measuring = MEASURING.try_with(Cell::get).unwrap_or(false);
    if measuring {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only addition is bumping a const-initialized thread-local counter,
// which does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: forwards to `System` with the caller's layout, as the caller's contract allows.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: forwards to `System` with the caller's layout, as the caller's contract allows.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
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

/// Runs `f` and returns its result with the number of heap allocations it made on this thread.
fn count_allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    ALLOCATIONS.with(|c| c.set(0));
    MEASURING.with(|m| m.set(true));
    let out = f();
    MEASURING.with(|m| m.set(false));
    (out, ALLOCATIONS.with(Cell::get))
}

fn encode_all(frames: &[Frame]) -> Vec<u8> {
    let len: usize = frames.iter().map(Frame::wire_len).sum();
    let mut buf = vec![0; len];
    let mut b = octets::OctetsMut::with_slice(&mut buf);
    for f in frames {
        f.to_bytes(&mut b).expect("encode");
    }
    assert_eq!(b.off(), len);
    buf
}

#[test]
fn counter_sees_allocations() {
    let (v, n) = count_allocations(|| vec![1u8; 100]);
    assert_eq!(v.len(), 100);
    assert!(n >= 1, "the counting allocator missed an allocation");
}

#[test]
fn decoding_every_frame_type_allocates_nothing() {
    let mut acked = RangeSet::new(1000);
    for i in 0..400u64 {
        acked.insert(i * 10..i * 10 + 3);
    }
    let data = vec![0x5a; 1000];
    let cid = [0xc1; 20];
    let frames = [
        Frame::Ping,
        Frame::ACK {
            ack_delay: 100,
            ranges: AckRanges::Set(&acked),
            ecn_counts: Some(EcnCounts {
                ect0: 1,
                ect1: 2,
                ecn_ce: 3,
            }),
        },
        Frame::ACK {
            ack_delay: 7,
            ranges: AckRanges::Set(&acked),
            ecn_counts: None,
        },
        Frame::ResetStream {
            stream_id: 4,
            error_code: 1,
            final_size: 1000,
        },
        Frame::StopSending {
            stream_id: 4,
            error_code: 2,
        },
        Frame::Crypto {
            offset: 0,
            data: &data[..300],
        },
        Frame::NewToken { token: &data[..40] },
        Frame::Stream {
            stream_id: 8,
            offset: 1 << 20,
            data: &data,
            fin: true,
        },
        Frame::MaxData { max: 1 << 30 },
        Frame::MaxStreamData {
            stream_id: 8,
            max: 1 << 24,
        },
        Frame::MaxStreamsBidi { max: 100 },
        Frame::MaxStreamsUni { max: 100 },
        Frame::DataBlocked { limit: 1 << 30 },
        Frame::StreamDataBlocked {
            stream_id: 8,
            limit: 1 << 24,
        },
        Frame::StreamsBlockedBidi { limit: 100 },
        Frame::StreamsBlockedUni { limit: 100 },
        Frame::NewConnectionId {
            seq_num: 3,
            retire_prior_to: 1,
            conn_id: &cid,
            reset_token: [9; 16],
        },
        Frame::RetireConnectionId { seq_num: 1 },
        Frame::PathChallenge { data: [1; 8] },
        Frame::PathResponse { data: [2; 8] },
        Frame::HandshakeDone,
        Frame::Datagram { data: &data[..500] },
        Frame::ApplicationClose {
            error_code: 5,
            reason: b"bye",
        },
        Frame::ConnectionClose {
            error_code: 0xa,
            frame_type: 0x08,
            reason: b"protocol violation",
        },
        Frame::Padding { len: 64 },
    ];
    let payload = encode_all(&frames);

    let (summary, allocations) = count_allocations(|| {
        let mut count = 0usize;
        let mut bytes = 0usize;
        let mut acked_ranges = 0usize;
        for f in frame::parse_all(&payload, Type::Short) {
            let f = f.expect("decode");
            count += 1;
            match f {
                Frame::ACK { ranges, .. } => {
                    // Recovery walks the ranges in one pass, largest first.
                    for r in ranges.iter() {
                        acked_ranges += 1;
                        bytes += (r.end - r.start) as usize;
                    }
                }
                Frame::Stream { data, .. }
                | Frame::Crypto { data, .. }
                | Frame::Datagram { data } => bytes += data.len(),
                _ => (),
            }
        }
        (count, bytes, acked_ranges)
    });

    assert_eq!(allocations, 0, "decoding allocated {allocations} times");
    assert_eq!(summary.0, frames.len());
    assert_eq!(summary.1, 2 * 400 * 3 + 300 + 1000 + 500);
    assert_eq!(summary.2, 800);

    // The decoded frames are the ones encoded (checked outside the measured region).
    let decoded: Vec<_> = frame::parse_all(&payload, Type::Short)
        .collect::<Result<_, _>>()
        .expect("decode");
    assert_eq!(decoded, frames);
}
