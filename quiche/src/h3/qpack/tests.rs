//! Encoder and decoder together: RFC 9204 Appendix B byte for byte, round trips at every table
//! size and blocking limit with acknowledgments on time, late or never, encoder-stream bytes
//! split and reordered, eviction under pressure, every error path, bounded decoder memory, and
//! the compression the strategy achieves.

use super::instructions as ins;
use super::*;
use crate::testing::Rng;

/// A header list as the tests build it.
type List = Vec<(Vec<u8>, Vec<u8>)>;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn line(name: &str, value: &str) -> FieldLine {
    FieldLine {
        name: name.as_bytes().to_vec(),
        value: value.as_bytes().to_vec(),
        never_indexed: false,
    }
}

fn fields(d: Decoded) -> Vec<FieldLine> {
    match d {
        Decoded::Fields(f) => f,
        Decoded::Blocked => panic!("blocked"),
    }
}

// ------------------------------------------------------------------------------------------
// RFC 9204 Appendix B.

const B1_SECTION: &str = "0000 510b 2f69 6e64 6578 2e68 746d 6c";
const B2_ENCODER: &str =
    "3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d c10c 2f73 616d 706c 652f 7061 7468";
const B2_SECTION: &str = "0381 10 11";
const B3_ENCODER: &str = "4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565";
const B4_ENCODER: &str = "02";
const B4_SECTION: &str = "0500 80 c1 81";
const B5_ENCODER: &str = "810d 6375 7374 6f6d 2d76 616c 7565 32";

/// Our decoder reads the examples' bytes into the examples' field lines and tables.
#[test]
fn appendix_b_decodes() {
    let mut d = Decoder::new(220, 1, u64::MAX);
    // B.1: a literal with a static name reference, no dynamic table.
    assert_eq!(
        fields(d.decode(0, &hex(B1_SECTION)).unwrap()),
        [line(":path", "/index.html")]
    );
    assert!(
        d.decoder_stream_pending().is_empty(),
        "nothing to acknowledge"
    );

    // B.2: capacity, two inserts, then a section with post-base references.
    d.feed_encoder_stream(&hex(B2_ENCODER)).unwrap();
    assert_eq!((d.table().capacity(), d.table().size()), (220, 106));
    let got = fields(d.decode(4, &hex(B2_SECTION)).unwrap());
    assert_eq!(
        got,
        [
            line(":authority", "www.example.com"),
            line(":path", "/sample/path")
        ]
    );
    // Our decoder announces inserts at once (Insert Count Increment 2), then acknowledges the
    // section as the example's does (84).
    assert_eq!(d.decoder_stream_pending(), hex("02 84"));
    d.decoder_stream_consumed(2);

    // B.3: a speculative insert, acknowledged with Insert Count Increment (01).
    d.feed_encoder_stream(&hex(B3_ENCODER)).unwrap();
    assert_eq!(d.table().size(), 160);
    assert_eq!(d.decoder_stream_pending(), hex("01"));
    d.decoder_stream_consumed(1);

    // B.4: the section arrives before the Duplicate it needs, so it blocks; the stream is
    // cancelled (48); then the delayed Duplicate arrives.
    assert_eq!(d.decode(8, &hex(B4_SECTION)).unwrap(), Decoded::Blocked);
    d.cancel_stream(8);
    assert_eq!(d.decoder_stream_pending(), hex("48"));
    d.decoder_stream_consumed(1);
    d.feed_encoder_stream(&hex(B4_ENCODER)).unwrap();
    assert_eq!(d.take_unblocked(), None, "the cancelled section is gone");
    assert_eq!(d.table().size(), 217);

    // B.5: an insert with a dynamic name reference evicts the oldest entry.
    d.feed_encoder_stream(&hex(B5_ENCODER)).unwrap();
    assert_eq!(
        (
            d.table().oldest(),
            d.table().insert_count(),
            d.table().size()
        ),
        (1, 5, 215)
    );
    let e = d.table().get(4).unwrap();
    assert_eq!(
        (&e.name[..], &e.value[..]),
        (&b"custom-key"[..], &b"custom-value2"[..])
    );
}

/// The same B.4 section decodes once its Duplicate arrives, if not cancelled.
#[test]
fn appendix_b4_section_is_released_by_the_duplicate() {
    let mut d = Decoder::new(220, 1, u64::MAX);
    d.feed_encoder_stream(&hex(B2_ENCODER)).unwrap();
    d.feed_encoder_stream(&hex(B3_ENCODER)).unwrap();
    assert_eq!(d.decode(8, &hex(B4_SECTION)).unwrap(), Decoded::Blocked);
    d.feed_encoder_stream(&hex(B4_ENCODER)).unwrap();
    let (id, got) = d.take_unblocked().unwrap();
    assert_eq!(id, 8);
    assert_eq!(
        got.unwrap(),
        [
            line(":authority", "www.example.com"),
            line(":path", "/"),
            line("custom-key", "custom-value")
        ]
    );
}

/// Our writers produce the examples' bytes for the same operations.
#[test]
fn appendix_b_encodes() {
    let mut out = Vec::new();
    ins::section_prefix(&mut out, 0, 0, 0);
    ins::literal_with_name_ref(&mut out, false, true, 1, b"/index.html", false);
    assert_eq!(out, hex(B1_SECTION));

    out.clear();
    ins::set_capacity(&mut out, 220);
    ins::insert_with_name_ref(&mut out, true, 0, b"www.example.com", false);
    ins::insert_with_name_ref(&mut out, true, 1, b"/sample/path", false);
    assert_eq!(out, hex(B2_ENCODER));
    out.clear();
    ins::section_prefix(&mut out, encode_insert_count(2, 220), 2, 0);
    ins::indexed_post_base(&mut out, 0);
    ins::indexed_post_base(&mut out, 1);
    assert_eq!(out, hex(B2_SECTION));
    out.clear();
    ins::section_ack(&mut out, 4);
    assert_eq!(out, hex("84"));

    out.clear();
    ins::insert_with_literal_name(&mut out, b"custom-key", b"custom-value", false);
    assert_eq!(out, hex(B3_ENCODER));
    out.clear();
    ins::insert_count_increment(&mut out, 1);
    assert_eq!(out, hex("01"));

    out.clear();
    ins::duplicate(&mut out, 2);
    assert_eq!(out, hex(B4_ENCODER));
    out.clear();
    ins::section_prefix(&mut out, encode_insert_count(4, 220), 4, 4);
    ins::indexed(&mut out, false, 0);
    ins::indexed(&mut out, true, 1);
    ins::indexed(&mut out, false, 1);
    assert_eq!(out, hex(B4_SECTION));
    out.clear();
    ins::stream_cancellation(&mut out, 8);
    assert_eq!(out, hex("48"));

    out.clear();
    ins::insert_with_name_ref(&mut out, false, 1, b"custom-value2", false);
    assert_eq!(out, hex(B5_ENCODER));
}

#[test]
fn required_insert_count_wraps_as_specified() {
    // MaxEntries = 3: the encoding wraps every 6 inserts.
    for total in 0..40u64 {
        for ric in total.saturating_sub(3) + 1..=total + 3 {
            if ric == 0 {
                continue;
            }
            let enc = encode_insert_count(ric, 100);
            assert_eq!(
                decode_insert_count(enc, 100, total),
                Some(ric),
                "{ric} {total}"
            );
        }
    }
    assert_eq!(
        decode_insert_count(7, 100, 10),
        None,
        "beyond 2 * MaxEntries"
    );
    assert_eq!(decode_insert_count(1, 0, 0), None, "no dynamic table");
    assert_eq!(decode_insert_count(0, 0, 0), Some(0));
}

// ------------------------------------------------------------------------------------------
// Round trips.

/// A pair of peers with the encoder's and decoder's streams between them.
struct Peers {
    enc: Encoder,
    dec: Decoder,
    /// Encoder-stream bytes not delivered yet.
    to_decoder: Vec<u8>,
}

impl Peers {
    fn new(capacity: u64, blocked: u64) -> Peers {
        let mut enc = Encoder::new();
        enc.set_max_table_capacity(capacity);
        enc.apply_peer_settings(capacity, blocked);
        Peers {
            enc,
            dec: Decoder::new(capacity, blocked, u64::MAX),
            to_decoder: Vec::new(),
        }
    }

    fn encode(&mut self, stream: u64, list: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        let iter = list.iter().map(|(n, v)| (&n[..], &v[..]));
        self.enc.encode(stream, iter, &mut out).unwrap();
        let pending = self.enc.encoder_stream_pending().to_vec();
        self.enc.encoder_stream_consumed(pending.len());
        self.to_decoder.extend(pending);
        out
    }

    /// Delivers up to `n` bytes of encoder stream.
    fn deliver_encoder(&mut self, n: usize) {
        let n = n.min(self.to_decoder.len());
        let chunk: Vec<u8> = self.to_decoder.drain(..n).collect();
        self.dec.feed_encoder_stream(&chunk).unwrap();
    }

    /// Moves the decoder's acknowledgments to the encoder.
    fn acknowledge(&mut self) {
        let acks = self.dec.decoder_stream_pending().to_vec();
        self.dec.decoder_stream_consumed(acks.len());
        self.enc.feed_decoder_stream(&acks).unwrap();
    }
}

fn vocabulary(rng: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    const NAMES: [&str; 14] = [
        ":method",
        ":path",
        ":authority",
        "user-agent",
        "cookie",
        "accept",
        "x-custom",
        "content-type",
        "authorization",
        "x-trace",
        "accept-language",
        "referer",
        "etag",
        "x-big",
    ];
    let name = NAMES[rng.below_usize(NAMES.len())];
    let value = match name {
        ":method" => ["GET", "POST", "PATCH"][rng.below_usize(3)].to_string(),
        "x-big" => "v".repeat(200 + rng.below_usize(3000)),
        "x-trace" | ":path" | "etag" => format!("/{:x}", rng.next()),
        _ => format!("value-{}", rng.below(6)),
    };
    (name.as_bytes().to_vec(), value.into_bytes())
}

fn random_list(rng: &mut Rng) -> Vec<(Vec<u8>, Vec<u8>)> {
    let n = 1 + rng.below_usize(12);
    (0..n).map(|_| vocabulary(rng)).collect()
}

fn as_lines(list: &[(Vec<u8>, Vec<u8>)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    list.to_vec()
}

fn decoded_pairs(lines: Vec<FieldLine>) -> Vec<(Vec<u8>, Vec<u8>)> {
    lines.into_iter().map(|l| (l.name, l.value)).collect()
}

#[derive(Clone, Copy, Debug)]
enum Acks {
    Immediate,
    Late,
    Never,
}

/// Encodes `sections` lists, delivering encoder-stream bytes in random pieces, sometimes
/// after the sections that need them; checks every list decodes back.
fn round_trip(capacity: u64, blocked: u64, acks: Acks, seed: u64) {
    let mut rng = Rng(seed);
    let mut p = Peers::new(capacity, blocked);
    let mut waiting: Vec<(u64, List)> = Vec::new();
    for i in 0..200u64 {
        let stream = i * 4;
        let list = random_list(&mut rng);
        let section = p.encode(stream, &list);
        // Deliver a random part of the encoder stream before the section.
        let part = rng.below_usize(p.to_decoder.len() + 1);
        p.deliver_encoder(part);
        match p.dec.decode(stream, &section).unwrap() {
            Decoded::Fields(lines) => assert_eq!(decoded_pairs(lines), as_lines(&list)),
            Decoded::Blocked => waiting.push((stream, list)),
        }
        if rng.percent(30) || waiting.len() as u64 >= blocked {
            let all = p.to_decoder.len();
            p.deliver_encoder(all);
        }
        while let Some((id, result)) = p.dec.take_unblocked() {
            let idx = waiting
                .iter()
                .position(|(s, _)| *s == id)
                .expect("was blocked");
            let (_, list) = waiting.remove(idx);
            assert_eq!(decoded_pairs(result.unwrap()), list);
        }
        match acks {
            Acks::Immediate => p.acknowledge(),
            Acks::Late if i % 17 == 16 => p.acknowledge(),
            _ => {}
        }
        assert!(
            p.dec.memory_usage()
                <= capacity as usize + 64 * 1024 * blocked as usize + 8 * capacity as usize + 32
        );
    }
    let all = p.to_decoder.len();
    p.deliver_encoder(all);
    while let Some((id, result)) = p.dec.take_unblocked() {
        let idx = waiting.iter().position(|(s, _)| *s == id).unwrap();
        assert_eq!(decoded_pairs(result.unwrap()), waiting.remove(idx).1);
    }
    assert!(
        waiting.is_empty(),
        "{} sections still blocked",
        waiting.len()
    );
}

#[test]
fn round_trips_at_every_table_size_blocking_limit_and_ack_timing() {
    for capacity in [0, 256, 4096, 65536] {
        for blocked in [0, 100] {
            for acks in [Acks::Immediate, Acks::Late, Acks::Never] {
                for seed in 1..=3 {
                    round_trip(capacity, blocked, acks, capacity ^ (blocked << 20) ^ seed);
                }
            }
        }
    }
}

/// Sections first, then the encoder stream one byte at a time: each section comes out once
/// the last insert it needs has arrived, not before.
#[test]
fn encoder_stream_split_at_every_byte_releases_blocked_sections() {
    let mut p = Peers::new(4096, 100);
    let lists: Vec<Vec<(Vec<u8>, Vec<u8>)>> = (0..5)
        .map(|i| {
            vec![
                (
                    b":authority".to_vec(),
                    format!("host{i}.example").into_bytes(),
                ),
                (b"user-agent".to_vec(), b"agent/1.0".to_vec()),
                (
                    b"cookie".to_vec(),
                    format!("session-id-of-some-length-{i}").into_bytes(),
                ),
            ]
        })
        .collect();
    let sections: Vec<Vec<u8>> = lists
        .iter()
        .enumerate()
        .map(|(i, l)| p.encode(i as u64 * 4, l))
        .collect();
    for (i, s) in sections.iter().enumerate() {
        assert_eq!(p.dec.decode(i as u64 * 4, s).unwrap(), Decoded::Blocked);
    }
    let mut released = Vec::new();
    while !p.to_decoder.is_empty() {
        p.deliver_encoder(1);
        while let Some((id, r)) = p.dec.take_unblocked() {
            released.push(id);
            assert_eq!(decoded_pairs(r.unwrap()), lists[(id / 4) as usize]);
        }
    }
    assert_eq!(released, [0, 4, 8, 12, 16]);
}

/// A small table, many distinct lines, acknowledgments late: entries referenced by
/// unacknowledged sections are never evicted (the decoder would fail), and the table keeps
/// being used.
#[test]
fn eviction_under_pressure_keeps_every_section_decodable() {
    let mut p = Peers::new(256, 100);
    let mut rng = Rng(99);
    let mut pending: Vec<(u64, Vec<u8>, List)> = Vec::new();
    for i in 0..300u64 {
        let list: Vec<(Vec<u8>, Vec<u8>)> = (0..4)
            .map(|_| {
                (
                    b"cookie".to_vec(),
                    format!("crumb-{:04}-xxxxxxxxxxxxxxx", rng.below(40)).into_bytes(),
                )
            })
            .collect();
        let section = p.encode(i * 4, &list);
        pending.push((i * 4, section, list));
        if i % 5 == 4 {
            let all = p.to_decoder.len();
            p.deliver_encoder(all);
            for (id, section, list) in pending.drain(..) {
                assert_eq!(
                    decoded_pairs(fields(p.dec.decode(id, &section).unwrap())),
                    list
                );
            }
            p.acknowledge();
        }
        assert!(p.enc.table().size() <= 256);
    }
    assert!(
        p.enc.table().insert_count() > 20,
        "the table was used: {}",
        p.enc.table().insert_count()
    );
}

/// Without the peer's permission to block, no section references an unacknowledged entry:
/// every section decodes at once even when the encoder stream is held back.
#[test]
fn no_blocking_allowed_means_no_section_blocks() {
    let mut p = Peers::new(4096, 0);
    let mut rng = Rng(5);
    for i in 0..100u64 {
        let list = random_list(&mut rng);
        let section = p.encode(i * 4, &list);
        assert_eq!(
            decoded_pairs(fields(p.dec.decode(i * 4, &section).unwrap())),
            list
        );
        if i % 10 == 9 {
            let all = p.to_decoder.len();
            p.deliver_encoder(all);
            p.acknowledge();
        }
    }
}

/// A zero capacity from the peer: static table only, no encoder-stream bytes at all.
#[test]
fn zero_capacity_uses_no_dynamic_table() {
    let mut p = Peers::new(0, 100);
    let mut rng = Rng(8);
    for i in 0..50 {
        let list = random_list(&mut rng);
        let section = p.encode(i * 4, &list);
        assert_eq!(section[0], 0, "Required Insert Count 0");
        assert_eq!(
            decoded_pairs(fields(p.dec.decode(i * 4, &section).unwrap())),
            list
        );
    }
    assert!(p.to_decoder.is_empty());
}

/// Secrets go out as never-indexed literals and are not inserted.
#[test]
fn secrets_are_never_indexed() {
    let mut p = Peers::new(4096, 100);
    let list = vec![
        (
            b"authorization".to_vec(),
            b"Bearer secret-token-abcdef".to_vec(),
        ),
        (b"cookie".to_vec(), b"sid=12345".to_vec()),
        (
            b"cookie".to_vec(),
            b"long-analytics-id=0123456789abcdef".to_vec(),
        ),
    ];
    for i in 0..3 {
        let section = p.encode(i * 4, &list);
        let all = p.to_decoder.len();
        p.deliver_encoder(all);
        let lines = fields(p.dec.decode(i * 4, &section).unwrap());
        assert!(lines[0].never_indexed && lines[1].never_indexed && !lines[2].never_indexed);
        p.acknowledge();
    }
    let t = p.enc.table();
    for abs in t.oldest()..t.insert_count() {
        let e = t.get(abs).unwrap();
        assert!(
            e.name != b"authorization" && e.value != b"sid=12345",
            "{e:?}"
        );
    }
}

// ------------------------------------------------------------------------------------------
// Errors.

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

// ------------------------------------------------------------------------------------------
// Compression.

/// A browser's requests to a news site and the responses: what the strategy is for.
fn browser_corpus() -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    let mut rng = Rng(2026);
    let mut lists = Vec::new();
    for i in 0..100 {
        let (path, accept) = match i % 4 {
            0 => (
                format!("/article/{}/story.html", rng.below(1000)),
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            ),
            1 => (
                format!("/static/js/app.{:08x}.js", rng.next() as u32),
                "*/*",
            ),
            2 => (
                format!("/img/{:06}.webp", rng.below(1_000_000)),
                "image/avif,image/webp,image/apng,image/*,*/*;q=0.8",
            ),
            _ => (
                format!("/api/v2/feed?page={}", rng.below(50)),
                "application/json",
            ),
        };
        let req = [
            (":method", "GET".to_string()),
            (":scheme", "https".to_string()),
            (":authority", "www.news.example".to_string()),
            (":path", path),
            ("user-agent", ua.to_string()),
            ("accept", accept.to_string()),
            ("accept-encoding", "gzip, deflate, br, zstd".to_string()),
            ("accept-language", "en-US,en;q=0.9,fr;q=0.8".to_string()),
            ("referer", "https://www.news.example/".to_string()),
            ("cookie", "_ga=GA1.2.1234567890.1700000000".to_string()),
            (
                "cookie",
                "session=4f9d2a7c1e8b6d3f0a5c9e2b7d4f1a8c".to_string(),
            ),
            ("cookie", "consent=yes".to_string()),
            ("sec-fetch-site", "same-origin".to_string()),
        ];
        lists.push(
            req.iter()
                .map(|(n, v)| (n.as_bytes().to_vec(), v.clone().into_bytes()))
                .collect(),
        );
        let resp = [
            (":status", "200".to_string()),
            (
                "content-type",
                [
                    "text/html; charset=utf-8",
                    "application/javascript",
                    "image/webp",
                    "application/json",
                ][i % 4]
                    .to_string(),
            ),
            ("content-length", format!("{}", 1000 + rng.below(90_000))),
            ("cache-control", "public, max-age=300".to_string()),
            ("server", "news-frontend".to_string()),
            (
                "date",
                format!("Tue, 24 Nov 2026 21:{:02}:{:02} GMT", i / 60, i % 60),
            ),
            ("etag", format!("\"{:016x}\"", rng.next())),
            ("vary", "accept-encoding".to_string()),
            (
                "strict-transport-security",
                "max-age=63072000; includeSubDomains".to_string(),
            ),
        ];
        lists.push(
            resp.iter()
                .map(|(n, v)| (n.as_bytes().to_vec(), v.clone().into_bytes()))
                .collect(),
        );
    }
    lists
}

/// Total bytes (field sections and encoder stream) for the corpus with a table of `capacity`,
/// acknowledgments flowing back after each section.
fn corpus_bytes(capacity: u64) -> usize {
    let mut p = Peers::new(capacity, 100);
    let mut total = 0;
    for (i, list) in browser_corpus().iter().enumerate() {
        let section = p.encode(i as u64 * 4, list);
        total += section.len() + p.to_decoder.len();
        let all = p.to_decoder.len();
        p.deliver_encoder(all);
        assert_eq!(
            decoded_pairs(fields(p.dec.decode(i as u64 * 4, &section).unwrap())),
            *list
        );
        p.acknowledge();
    }
    total
}

#[test]
fn the_dynamic_table_shrinks_a_browsing_session_to_a_third() {
    let static_only = corpus_bytes(0);
    let dynamic = corpus_bytes(4096);
    assert!(
        dynamic * 100 <= static_only * 35,
        "{dynamic} bytes with a 4096-byte table against {static_only} static-only ({:.1} %)",
        dynamic as f64 * 100.0 / static_only as f64
    );
}
