//! RFC 9204 Appendix B, byte for byte: our decoder reads the examples, our writers produce
//! them; and Required Insert Count wraps as §4.5.1.1 says.

use super::super::instructions as ins;
use super::*;

const B1_SECTION: &str = "0000 510b 2f69 6e64 6578 2e68 746d 6c";
pub(super) const B2_ENCODER: &str =
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
