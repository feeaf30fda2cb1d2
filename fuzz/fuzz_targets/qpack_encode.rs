//! QPACK encoder against our decoder: header lists, table size and blocked-streams limit come
//! from the input, and so does the schedule: when encoder-stream bytes reach the decoder (in
//! pieces), when each field section is delivered, and when the decoder's acknowledgments go
//! back to the encoder. Every list must decode back equal, the decoder must never be asked to
//! block more streams than it allows, and in the end every section must have been decoded.
#![no_main]

use std::collections::{HashMap, VecDeque};

use libfuzzer_sys::fuzz_target;
use quiche::h3::qpack::{Decoded, Decoder, Encoder};

const CAPACITIES: [u64; 8] = [0, 32, 64, 100, 256, 1024, 4096, 65536];

/// Names the input picks by index, so that lists share names as real ones do; a few are in the
/// static table, some are not.
const NAMES: [&str; 16] = [
    ":method",
    ":path",
    ":authority",
    ":scheme",
    ":status",
    "cookie",
    "user-agent",
    "accept",
    "content-type",
    "content-length",
    "authorization",
    "set-cookie",
    "x-request-id",
    "x-custom",
    "etag",
    "date",
];

/// Values the input picks by index, some from the static table.
const VALUES: [&str; 8] = [
    "GET",
    "/",
    "200",
    "https",
    "text/html; charset=utf-8",
    "gzip, deflate, br",
    "",
    "a-rather-long-value-that-is-worth-indexing-0123456789",
];

/// Reads the fuzz input as a sequence of bytes, yielding zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a.to_vec()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

type List = Vec<(Vec<u8>, Vec<u8>)>;

fn header_list(inp: &mut Input) -> List {
    let count = usize::from(inp.byte() % 12) + 1;
    (0..count)
        .map(|_| {
            let sel = inp.byte();
            let name = if sel < 0xe0 {
                NAMES[usize::from(sel) % NAMES.len()].as_bytes().to_vec()
            } else {
                // A literal name: lowercase letters, digits and '-' (HTTP/3 lowercases names).
                let len = usize::from(sel & 0x1f) + 1;
                inp.bytes(len)
                    .iter()
                    .map(|&c| b"abcdefghijklmnopqrstuvwxyz0123456789-"[usize::from(c) % 37])
                    .collect::<Vec<u8>>()
            };
            let name = if name.is_empty() { b"x".to_vec() } else { name };
            let vsel = inp.byte();
            let value = if vsel < 0x80 {
                VALUES[usize::from(vsel) % VALUES.len()].as_bytes().to_vec()
            } else if vsel < 0xf0 {
                let len = usize::from(vsel & 0x7f);
                inp.bytes(len)
            } else {
                // A long value: repeated input bytes, past small tables' capacity.
                let unit = inp.bytes(8);
                unit.repeat(usize::from(vsel & 0x0f) * 16 + 1)
            };
            (name, value)
        })
        .collect()
}

struct Peer {
    dec: Decoder,
    expected: HashMap<u64, List>,
    blocked: usize,
    max_blocked: u64,
}

impl Peer {
    fn check(&mut self, stream_id: u64, fields: Vec<quiche::h3::qpack::FieldLine>) {
        let want = self
            .expected
            .remove(&stream_id)
            .unwrap_or_else(|| panic!("stream {stream_id} decoded twice or never sent"));
        let got: List = fields.into_iter().map(|f| (f.name, f.value)).collect();
        assert_eq!(got, want, "stream {stream_id} decodes differently");
    }

    fn deliver_section(&mut self, stream_id: u64, section: &[u8]) {
        match self.dec.decode(stream_id, section) {
            Ok(Decoded::Fields(fields)) => self.check(stream_id, fields),
            Ok(Decoded::Blocked) => {
                self.blocked += 1;
                assert!(
                    self.blocked as u64 <= self.max_blocked,
                    "the encoder blocked {} streams, the limit is {}",
                    self.blocked,
                    self.max_blocked
                );
            }
            Err(e) => panic!("stream {stream_id}: our section fails to decode: {e:?}"),
        }
        self.drain();
    }

    fn drain(&mut self) {
        while let Some((id, result)) = self.dec.take_unblocked() {
            self.blocked -= 1;
            let fields = result.unwrap_or_else(|e| panic!("stream {id}: unblocked with {e:?}"));
            self.check(id, fields);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    let a = inp.byte();
    let b = inp.byte();
    let peer_capacity = CAPACITIES[usize::from(a & 7)];
    let our_limit = match (a >> 3) & 3 {
        0 | 1 => peer_capacity,
        2 => 0,
        _ => CAPACITIES[usize::from((a >> 5) & 7)],
    };
    let max_blocked = if b & 0x80 != 0 { 100 } else { u64::from(b & 3) };

    let mut enc = Encoder::new();
    enc.set_max_table_capacity(our_limit);
    enc.apply_peer_settings(peer_capacity, max_blocked);
    let mut peer = Peer {
        dec: Decoder::new(peer_capacity, max_blocked, u64::MAX),
        expected: HashMap::new(),
        blocked: 0,
        max_blocked,
    };
    // Sections written but not yet delivered, oldest first.
    let mut in_flight: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut next_stream = 0u64;

    let mut ops = 0;
    while !inp.is_empty() && ops < 200 {
        ops += 1;
        let op = inp.byte();
        match op & 3 {
            0 => {
                let list = header_list(&mut inp);
                let mut section = Vec::new();
                enc.encode(
                    next_stream,
                    list.iter().map(|(n, v)| (n.as_slice(), v.as_slice())),
                    &mut section,
                )
                .unwrap_or_else(|e| panic!("encode failed: {e:?} for {list:?}"));
                peer.expected.insert(next_stream, list);
                in_flight.push_back((next_stream, section));
                next_stream += 4;
            }
            1 => {
                // Deliver one in-flight section, chosen by the input (not always the oldest).
                if !in_flight.is_empty() {
                    let i = usize::from(op >> 2) % in_flight.len();
                    let (id, section) = in_flight.remove(i).expect("index in range");
                    peer.deliver_section(id, &section);
                }
            }
            2 => {
                // Deliver a prefix of the pending encoder-stream bytes (all of it for 0xff).
                let len = inp.byte();
                let pending = enc.encoder_stream_pending();
                let n = if len == 0xff {
                    pending.len()
                } else {
                    pending.len().min(usize::from(len))
                };
                let chunk = pending[..n].to_vec();
                enc.encoder_stream_consumed(n);
                peer.dec
                    .feed_encoder_stream(&chunk)
                    .unwrap_or_else(|e| panic!("our encoder stream rejected: {e:?}"));
                peer.drain();
            }
            _ => {
                // Deliver a prefix of the decoder's acknowledgments to the encoder.
                let len = inp.byte();
                let pending = peer.dec.decoder_stream_pending();
                let n = if len == 0xff {
                    pending.len()
                } else {
                    pending.len().min(usize::from(len))
                };
                let chunk = pending[..n].to_vec();
                peer.dec.decoder_stream_consumed(n);
                enc.feed_decoder_stream(&chunk)
                    .unwrap_or_else(|e| panic!("our decoder stream rejected: {e:?}"));
            }
        }
    }

    // The end: everything still in flight arrives, encoder stream first.
    let rest = enc.encoder_stream_pending().to_vec();
    enc.encoder_stream_consumed(rest.len());
    peer.dec
        .feed_encoder_stream(&rest)
        .unwrap_or_else(|e| panic!("our encoder stream rejected: {e:?}"));
    peer.drain();
    while let Some((id, section)) = in_flight.pop_front() {
        peer.deliver_section(id, &section);
    }
    peer.drain();
    assert_eq!(
        peer.blocked, 0,
        "sections still blocked with the whole encoder stream in"
    );
    assert!(
        peer.expected.is_empty(),
        "streams never decoded: {:?}",
        peer.expected.keys().collect::<Vec<_>>()
    );
    let acks = peer.dec.decoder_stream_pending().to_vec();
    enc.feed_decoder_stream(&acks)
        .unwrap_or_else(|e| panic!("our decoder stream rejected: {e:?}"));
});
