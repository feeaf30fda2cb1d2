//! QPACK decoder on arbitrary input: encoder-stream chunks and field sections on a few streams,
//! interleaved, with stream cancellations and unblocking. Nothing may panic, the decoder never
//! holds more blocked sections than it advertised, decoded sections respect the size limit,
//! and `memory_usage()` stays within the table capacity plus the blocked sections it holds.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use quiche::h3::qpack::{Decoded, Decoder, Error, FieldLine};

const CAPACITIES: [u64; 8] = [0, 32, 64, 100, 256, 1024, 4096, 65536];
const SECTION_LIMITS: [u64; 4] = [u64::MAX, u64::MAX, 200, 4000];

/// RFC 9114 §4.2.2 size of a decoded section.
fn section_size(fields: &[FieldLine]) -> u64 {
    fields
        .iter()
        .map(|f| f.name.len() as u64 + f.value.len() as u64 + 32)
        .sum()
}

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else {
        return;
    };
    let capacity = CAPACITIES[usize::from(a & 7)];
    let limit = SECTION_LIMITS[usize::from((a >> 3) & 3)];
    let max_blocked = u64::from(b & 7);
    let mut dec = Decoder::new(capacity, max_blocked, limit);

    // Sections the decoder holds: stream -> section length.
    let mut blocked: HashMap<u64, usize> = HashMap::new();
    let check_section = |fields: &[FieldLine]| {
        assert!(
            section_size(fields) <= limit,
            "decoded section of {} bytes past the {limit} limit",
            section_size(fields)
        );
    };

    let mut input = rest;
    while let [op, len, tail @ ..] = input {
        let n = usize::from(*len).min(tail.len());
        let (chunk, tail) = tail.split_at(n);
        input = tail;
        let stream_id = u64::from((op >> 2) & 7) * 4;
        match op & 3 {
            0 => match dec.feed_encoder_stream(chunk) {
                Ok(()) => {}
                Err(e) => {
                    assert_eq!(e, Error::EncoderStreamError);
                    return; // a connection error: the connection is closed
                }
            },
            1 => {
                if blocked.contains_key(&stream_id) {
                    // HTTP/3 sends one section at a time per stream: this one is still held.
                    continue;
                }
                match dec.decode(stream_id, chunk) {
                    Ok(Decoded::Fields(fields)) => check_section(&fields),
                    Ok(Decoded::Blocked) => {
                        blocked.insert(stream_id, chunk.len());
                    }
                    Err(Error::HeaderListTooLarge) => {}
                    Err(e) => {
                        assert_eq!(e, Error::DecompressionFailed);
                        return;
                    }
                }
            }
            2 => {
                dec.cancel_stream(stream_id);
                blocked.remove(&stream_id);
            }
            _ => {
                let pending = dec.decoder_stream_pending().len();
                dec.decoder_stream_consumed(pending.min(n));
            }
        }
        while let Some((id, result)) = dec.take_unblocked() {
            assert!(
                blocked.remove(&id).is_some(),
                "stream {id} came out of take_unblocked but was not blocked"
            );
            match result {
                Ok(fields) => check_section(&fields),
                Err(Error::HeaderListTooLarge) => {}
                Err(e) => {
                    assert_eq!(e, Error::DecompressionFailed);
                    return;
                }
            }
        }
        assert!(
            blocked.len() as u64 <= max_blocked,
            "{} blocked sections with a limit of {max_blocked}",
            blocked.len()
        );
        // The table holds at most `capacity` bytes of entries; blocked sections are copies of
        // input; a partial encoder-stream instruction is at most one insertion, whose strings
        // (Huffman-coded at up to 30 bits a byte) fit the table.
        let held: usize = blocked.values().map(|&l| l + 64).sum();
        let cap = usize::try_from(capacity).unwrap_or(usize::MAX);
        let bound = cap + held + 4 * cap + 64;
        assert!(
            dec.memory_usage() <= bound,
            "memory_usage {} past the bound {bound} (capacity {capacity}, {} blocked)",
            dec.memory_usage(),
            blocked.len()
        );
    }
});
