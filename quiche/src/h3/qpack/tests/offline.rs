//! The QPACK offline interop's files: their encoders begin with insertions, into a table of the
//! size both sides were given, without Set Dynamic Table Capacity (older than RFC 9204 §3.2.3).
//! A decoder told so reads them; by default, as on a connection, it refuses them.

use super::appendix_b::B2_ENCODER;
use super::*;

/// Encodes `lists` and returns the encoder stream without its opening Set Dynamic Table
/// Capacity, and the sections; with `acks`, every section is acknowledged at once (so the
/// stream must reach a decoder section by section).
fn older_style(capacity: u64, lists: &[List], acks: bool) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut enc = Encoder::new();
    enc.set_max_table_capacity(capacity);
    enc.apply_peer_settings(capacity, 100);
    let opening = enc.encoder_stream_pending().len();
    assert!(opening > 0, "Set Dynamic Table Capacity is queued first");
    enc.encoder_stream_consumed(opening);
    let mut stream = Vec::new();
    let mut sections = Vec::new();
    let mut dec = Decoder::new(capacity, 100, u64::MAX);
    dec.assume_initial_capacity(capacity).unwrap();
    for (i, list) in lists.iter().enumerate() {
        let mut section = Vec::new();
        let iter = list.iter().map(|(n, v)| (&n[..], &v[..]));
        enc.encode(i as u64 * 4, iter, &mut section).unwrap();
        let ins = enc.encoder_stream_pending().to_vec();
        enc.encoder_stream_consumed(ins.len());
        stream.extend(&ins);
        sections.push(section.clone());
        if !acks {
            continue;
        }
        dec.feed_encoder_stream(&ins).unwrap();
        dec.decode(i as u64 * 4, &section).unwrap();
        let acks = dec.decoder_stream_pending().to_vec();
        dec.decoder_stream_consumed(acks.len());
        enc.feed_decoder_stream(&acks).unwrap();
    }
    (stream, sections)
}

fn lists() -> Vec<List> {
    let mut rng = Rng(9204);
    (0..50).map(|_| random_list(&mut rng)).collect()
}

#[test]
fn insertions_first_decode_when_the_table_starts_at_the_size_given() {
    let lists = lists();
    let (stream, sections) = older_style(4096, &lists, false);
    assert!(
        stream[0] & 0xe0 != 0x20,
        "no Set Dynamic Table Capacity first"
    );
    // Delivered in one piece after all the sections: every section blocks, then decodes.
    let mut d = Decoder::new(4096, 100, u64::MAX);
    d.assume_initial_capacity(4096).unwrap();
    let mut blocked = 0;
    for (i, s) in sections.iter().enumerate() {
        match d.decode(i as u64 * 4, s).unwrap() {
            Decoded::Fields(f) => assert_eq!(decoded_pairs(f), lists[i]),
            Decoded::Blocked => blocked += 1,
        }
    }
    assert!(blocked > 0);
    d.feed_encoder_stream(&stream).unwrap();
    let mut released = 0;
    while let Some((id, r)) = d.take_unblocked() {
        assert_eq!(decoded_pairs(r.unwrap()), lists[(id / 4) as usize]);
        released += 1;
    }
    assert_eq!(released, blocked);

    // Acknowledged at once, the stream goes to the decoder section by section.
    let (stream, sections) = older_style(256, &lists, true);
    let mut d = Decoder::new(256, 100, u64::MAX);
    d.assume_initial_capacity(256).unwrap();
    let mut pos = 0;
    for (i, s) in sections.iter().enumerate() {
        // Each section's instructions are exactly those not yet delivered that it needs:
        // feeding byte by byte until it decodes checks that nothing else is required.
        loop {
            match d.decode(i as u64 * 4 + 1000, s) {
                Ok(Decoded::Fields(f)) => {
                    assert_eq!(decoded_pairs(f), lists[i]);
                    break;
                }
                Ok(Decoded::Blocked) => {
                    d.cancel_stream(i as u64 * 4 + 1000);
                    d.feed_encoder_stream(&stream[pos..pos + 1]).unwrap();
                    pos += 1;
                }
                Err(e) => panic!("section {i}: {e}"),
            }
        }
    }
    d.feed_encoder_stream(&stream[pos..]).unwrap();
}

#[test]
fn by_default_the_table_starts_at_capacity_zero() {
    let (stream, _) = older_style(4096, &lists(), false);
    let mut d = Decoder::new(4096, 100, u64::MAX);
    assert_eq!(
        d.feed_encoder_stream(&stream),
        Err(Error::EncoderStreamError),
        "an insertion before Set Dynamic Table Capacity (RFC 9204 §3.2.3)"
    );
}

/// Appendix B.2's encoder stream without its Set Dynamic Table Capacity, and with it: both
/// styles decode under the offline convention.
#[test]
fn both_styles_decode_under_the_offline_convention() {
    let with = hex(B2_ENCODER);
    let without = &with[3..]; // 3fbd01 sets the capacity to 220
    for stream in [&with[..], without] {
        let mut d = Decoder::new(220, 1, u64::MAX);
        d.assume_initial_capacity(220).unwrap();
        d.feed_encoder_stream(stream).unwrap();
        assert_eq!(
            fields(d.decode(0, &hex("0381 10 11")).unwrap()),
            [
                line(":authority", "www.example.com"),
                line(":path", "/sample/path")
            ]
        );
    }
}

#[test]
fn the_assumed_capacity_is_bounded_and_comes_first() {
    let mut d = Decoder::new(220, 1, u64::MAX);
    assert_eq!(
        d.assume_initial_capacity(221),
        Err(Error::EncoderStreamError),
        "above what we advertise"
    );
    d.assume_initial_capacity(100).unwrap();
    assert_eq!(d.table().capacity(), 100);
    d.feed_encoder_stream(&hex(B2_ENCODER)[3..]).unwrap();
    assert_eq!(
        d.assume_initial_capacity(220),
        Err(Error::EncoderStreamError),
        "after insertions"
    );
}
