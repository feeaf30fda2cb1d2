//! Writers of every QPACK representation (RFC 9204 §4.3 - §4.5), one function each, so that
//! the encoder, the decoder and the tests (RFC 9204 Appendix B, byte for byte) share them.
//! `huffman` lets a string be Huffman-coded when that is shorter.

use super::prefix::{put_int, put_str, put_str_raw};

fn string(out: &mut Vec<u8>, flags: u8, prefix: u8, s: &[u8], huffman: bool) {
    if huffman {
        put_str(out, flags, prefix, s);
    } else {
        put_str_raw(out, flags, prefix, s);
    }
}

/// Set Dynamic Table Capacity (§4.3.1).
pub fn set_capacity(out: &mut Vec<u8>, capacity: u64) {
    put_int(out, 0x20, 5, capacity);
}

/// Insert with Name Reference (§4.3.2): a static index, or a dynamic one relative to the
/// insert count.
pub fn insert_with_name_ref(
    out: &mut Vec<u8>,
    is_static: bool,
    index: u64,
    value: &[u8],
    huffman: bool,
) {
    put_int(out, if is_static { 0xc0 } else { 0x80 }, 6, index);
    string(out, 0x00, 7, value, huffman);
}

/// Insert with Literal Name (§4.3.3).
pub fn insert_with_literal_name(out: &mut Vec<u8>, name: &[u8], value: &[u8], huffman: bool) {
    string(out, 0x40, 5, name, huffman);
    string(out, 0x00, 7, value, huffman);
}

/// Duplicate (§4.3.4), relative to the insert count.
pub fn duplicate(out: &mut Vec<u8>, index: u64) {
    put_int(out, 0x00, 5, index);
}

/// Section Acknowledgment (§4.4.1).
pub fn section_ack(out: &mut Vec<u8>, stream_id: u64) {
    put_int(out, 0x80, 7, stream_id);
}

/// Stream Cancellation (§4.4.2).
pub fn stream_cancellation(out: &mut Vec<u8>, stream_id: u64) {
    put_int(out, 0x40, 6, stream_id);
}

/// Insert Count Increment (§4.4.3).
pub fn insert_count_increment(out: &mut Vec<u8>, increment: u64) {
    put_int(out, 0x00, 6, increment);
}

/// The field section prefix (§4.5.1): encoded Required Insert Count, then Base as a signed
/// difference from it.
pub fn section_prefix(out: &mut Vec<u8>, encoded_insert_count: u64, required: u64, base: u64) {
    put_int(out, 0x00, 8, encoded_insert_count);
    if base >= required {
        put_int(out, 0x00, 7, base - required);
    } else {
        put_int(out, 0x80, 7, required - base - 1);
    }
}

/// Indexed Field Line (§4.5.2): static, or dynamic relative to Base.
pub fn indexed(out: &mut Vec<u8>, is_static: bool, index: u64) {
    put_int(out, if is_static { 0xc0 } else { 0x80 }, 6, index);
}

/// Indexed Field Line with Post-Base Index (§4.5.3).
pub fn indexed_post_base(out: &mut Vec<u8>, index: u64) {
    put_int(out, 0x10, 4, index);
}

/// Literal Field Line with Name Reference (§4.5.4); `never` is the N bit.
pub fn literal_with_name_ref(
    out: &mut Vec<u8>,
    never: bool,
    is_static: bool,
    index: u64,
    value: &[u8],
    huffman: bool,
) {
    let flags = 0x40 | if never { 0x20 } else { 0 } | if is_static { 0x10 } else { 0 };
    put_int(out, flags, 4, index);
    string(out, 0x00, 7, value, huffman);
}

/// Literal Field Line with Post-Base Name Reference (§4.5.5).
pub fn literal_with_post_base_name_ref(
    out: &mut Vec<u8>,
    never: bool,
    index: u64,
    value: &[u8],
    huffman: bool,
) {
    put_int(out, if never { 0x08 } else { 0 }, 3, index);
    string(out, 0x00, 7, value, huffman);
}

/// Literal Field Line with Literal Name (§4.5.6).
pub fn literal_with_literal_name(
    out: &mut Vec<u8>,
    never: bool,
    name: &[u8],
    value: &[u8],
    huffman: bool,
) {
    string(out, 0x20 | if never { 0x10 } else { 0 }, 3, name, huffman);
    string(out, 0x00, 7, value, huffman);
}
