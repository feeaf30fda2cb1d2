//! Every error path, with the RFC 9204 §6 error it must end in, and decoder memory bounded
//! under hostile input.

use super::appendix_b::B2_ENCODER;
use super::*;

#[test]
fn malformed_field_sections_fail_decompression() {
    let mut d = Decoder::new(220, 1, u64::MAX);
    d.feed_encoder_stream(&hex(B2_ENCODER)).unwrap();
    let cases: [(&str, &str); 9] = [
        ("ff 00", "Required Insert Count beyond 2 * MaxEntries"),
        ("03 81 12", "post-base index at Required Insert Count"),
        ("03 00 82", "relative index below the oldest entry"),
        ("00 00 ff 64", "static index 163"),
        ("02 82 80", "negative Base"),
        ("00", "truncated prefix"),
        ("00 00 5f", "truncated literal"),
        ("00 00 51 84 ff ff ff ff", "bad Huffman code"),
        ("00 00 ff ff ff ff ff ff ff ff ff ff ff", "integer overflow"),
    ];
    for (bytes, what) in cases {
        assert_eq!(
            d.decode(0, &hex(bytes)),
            Err(Error::DecompressionFailed),
            "{what}"
        );
    }
    // Blocking beyond the limit of 1.
    assert_eq!(d.decode(0, &hex("05 00 80")), Ok(Decoded::Blocked));
    assert_eq!(
        d.decode(4, &hex("05 00 80")),
        Err(Error::DecompressionFailed)
    );
}

#[test]
fn field_sections_over_the_size_limit_are_refused() {
    let mut enc = Encoder::new();
    let mut section = Vec::new();
    let big = [b'a'; 100];
    enc.encode(
        0,
        [(&b"x-a"[..], &big[..]), (&b"x-b"[..], &big[..])],
        &mut section,
    )
    .unwrap();
    assert!(Decoder::new(0, 0, 300).decode(0, &section).is_ok());
    assert_eq!(
        Decoder::new(0, 0, 200).decode(0, &section),
        Err(Error::HeaderListTooLarge)
    );
    assert_eq!(
        Decoder::new(0, 0, 100).decode(0, &section),
        Err(Error::HeaderListTooLarge)
    );
}

#[test]
fn malformed_encoder_streams_fail() {
    let cases: [(&str, &str); 8] = [
        ("3fbe01", "capacity 221 above the 220 advertised"),
        ("3fbd01 ff24 01 61", "static name index 99"),
        (
            "3fbd01 80 01 61",
            "dynamic name reference into an empty table",
        ),
        ("3fbd01 00", "Duplicate in an empty table"),
        (
            "3fbd01 4a 6375 7374 6f6d 2d6b 6579 7f ff 01",
            "entry larger than the capacity",
        ),
        ("3f ff ff ff ff ff ff ff ff ff ff", "integer overflow"),
        (
            "3fbd01 5f ff ff ff 0f",
            "a name longer than any entry, refused before it arrives",
        ),
        ("3fbd01 c0 84 ff ff ff ff", "bad Huffman code"),
    ];
    for (bytes, what) in cases {
        let mut d = Decoder::new(220, 1, u64::MAX);
        assert_eq!(
            d.feed_encoder_stream(&hex(bytes)),
            Err(Error::EncoderStreamError),
            "{what}"
        );
        assert!(d.memory_usage() < 300, "{what}: {}", d.memory_usage());
    }
}

#[test]
fn malformed_decoder_streams_fail() {
    let mut p = Peers::new(4096, 100);
    let list = vec![(b"user-agent".to_vec(), b"x".to_vec())];
    p.encode(0, &list);
    let cases: [(&str, &str); 4] = [
        (
            "84",
            "Section Acknowledgment for a stream with nothing outstanding",
        ),
        ("00", "Insert Count Increment of 0"),
        ("02", "Insert Count Increment beyond the inserts"),
        ("3f ff ff ff ff ff ff ff ff ff ff", "integer overflow"),
    ];
    for (bytes, what) in cases {
        let mut enc = Encoder::new();
        enc.apply_peer_settings(4096, 100);
        let mut out = Vec::new();
        enc.encode(0, [(&b"user-agent"[..], &b"x"[..])], &mut out)
            .unwrap();
        assert_eq!(
            enc.feed_decoder_stream(&hex(bytes)),
            Err(Error::DecoderStreamError),
            "{what}"
        );
    }
    // The valid ones: acknowledgment of stream 0, cancellation of an unknown stream.
    p.enc.feed_decoder_stream(&hex("80 48")).unwrap();
    assert_eq!(Error::DecompressionFailed.to_wire(), 0x200);
    assert_eq!(Error::EncoderStreamError.to_wire(), 0x201);
    assert_eq!(Error::DecoderStreamError.to_wire(), 0x202);
}

/// Random encoder-stream bytes and random sections: errors, never a panic, and memory within
/// the bound whatever the input.
#[test]
fn decoder_memory_stays_bounded_under_adversarial_input() {
    let mut rng = Rng(4242);
    for round in 0..300 {
        let capacity = [0u64, 64, 4096][round % 3];
        let mut d = Decoder::new(capacity, 4, 8192);
        for _ in 0..50 {
            let len = rng.below_usize(64);
            let mut bytes = rng.bytes(len);
            if rng.percent(50) {
                // Mostly valid-looking inserts with literal names of random lengths.
                bytes.insert(0, 0x40 | (rng.below(0x1f) as u8));
            }
            if rng.percent(50) {
                if d.feed_encoder_stream(&bytes).is_err() {
                    break;
                }
            } else {
                let _ = d.decode(rng.below(100) * 4, &bytes);
                while d.take_unblocked().is_some() {}
            }
            let bound = capacity as usize + 4 * 8192 + 8 * capacity as usize + 32;
            assert!(d.memory_usage() <= bound, "{} > {bound}", d.memory_usage());
        }
    }
}
