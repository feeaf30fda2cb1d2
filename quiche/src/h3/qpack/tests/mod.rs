//! Encoder and decoder together. The suites, one file each:
//!
//! - `appendix_b`: RFC 9204 Appendix B byte for byte, and Required Insert Count wrapping;
//! - `round_trips`: every table size and blocking limit with acknowledgments on time, late or
//!   never, encoder-stream bytes split and reordered, eviction under pressure, secrets;
//! - `errors`: every error path, and bounded decoder memory under hostile input;
//! - `compression`: what the insertion policy achieves, and that it never costs more than
//!   the static table alone on values that do not repeat;
//! - `offline`: files of the offline interop, whose encoders start with insertions.

use super::*;
use crate::testing::Rng;

mod appendix_b;
mod compression;
mod errors;
mod offline;
mod round_trips;

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
// Round trips between our encoder and decoder.

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
