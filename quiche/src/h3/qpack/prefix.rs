//! The primitives of QPACK's wire format (RFC 9204 §4.1): prefixed integers (RFC 7541 §5.1)
//! and string literals, optionally Huffman-coded (RFC 7541 §5.2, Appendix B).
//!
//! Decoding works on a byte slice that may end in the middle of a representation (the encoder
//! and decoder streams arrive in pieces): [`Parse::Incomplete`] says "wait for more bytes",
//! distinct from malformed input.

use std::convert::Infallible;

/// Why a representation could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parse {
    /// The input ends before the representation does.
    Incomplete,
    /// The input is malformed: an integer above 2^62 or bad Huffman code.
    Invalid,
    /// A string is longer than the caller allows.
    TooLong,
}

/// The largest integer QPACK carries: lengths, indices and counts all fit in 62 bits.
const MAX_INT: u64 = (1 << 62) - 1;

/// Appends `value` as a prefixed integer whose first byte carries `flags` above the
/// `prefix`-bit field.
pub fn put_int(out: &mut Vec<u8>, flags: u8, prefix: u8, value: u64) {
    let max = ((1u16 << prefix) - 1) as u8;
    if value < u64::from(max) {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max);
    let mut rest = value - u64::from(max);
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Reads a prefixed integer at `*pos` (the flags in the first byte are the caller's) and moves
/// `*pos` past it.
pub fn get_int(buf: &[u8], pos: &mut usize, prefix: u8) -> Result<u64, Parse> {
    let mut at = *pos;
    let first = *buf.get(at).ok_or(Parse::Incomplete)?;
    at += 1;
    let max = ((1u16 << prefix) - 1) as u8;
    let mut value = u64::from(first & max);
    if value == u64::from(max) {
        let mut shift = 0u32;
        loop {
            let b = *buf.get(at).ok_or(Parse::Incomplete)?;
            at += 1;
            // 62 bits are reached within nine continuation bytes; more is malformed.
            if shift > 56 {
                return Err(Parse::Invalid);
            }
            value = value
                .checked_add(u64::from(b & 0x7f) << shift)
                .filter(|v| *v <= MAX_INT)
                .ok_or(Parse::Invalid)?;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
    }
    *pos = at;
    Ok(value)
}

/// An [`octets::OctetsWriter`] over a growing vector.
struct VecSink<'a>(&'a mut Vec<u8>);

impl octets::OctetsWriter for VecSink<'_> {
    type Error = Infallible;

    fn put_bytes(&mut self, v: &[u8]) -> Result<(), Infallible> {
        self.0.extend_from_slice(v);
        Ok(())
    }
}

/// Appends a string literal: the H flag (the bit just above the `prefix`-bit length), the
/// length and the bytes, Huffman-coded when that is shorter.
pub fn put_str(out: &mut Vec<u8>, flags: u8, prefix: u8, s: &[u8]) {
    let huffman_len = octets::huffman_encoding_len::<false>(s).unwrap_or(usize::MAX);
    if huffman_len < s.len() {
        put_int(out, flags | (1 << prefix), prefix, huffman_len as u64);
        let _ = octets::OctetsWriter::put_huffman_encoded::<false>(&mut VecSink(out), s);
    } else {
        put_int(out, flags, prefix, s.len() as u64);
        out.extend_from_slice(s);
    }
}

/// Appends a string literal without Huffman coding.
pub fn put_str_raw(out: &mut Vec<u8>, flags: u8, prefix: u8, s: &[u8]) {
    put_int(out, flags, prefix, s.len() as u64);
    out.extend_from_slice(s);
}

/// Reads a string literal whose H flag sits just above its `prefix`-bit length, at most
/// `max_len` bytes once decoded.
pub fn get_str(buf: &[u8], pos: &mut usize, prefix: u8, max_len: usize) -> Result<Vec<u8>, Parse> {
    let mut at = *pos;
    let huffman = buf.get(at).ok_or(Parse::Incomplete)? & (1 << prefix) != 0;
    let len = get_int(buf, &mut at, prefix)?;
    // A Huffman code takes at most 30 bits a symbol, so a string that decodes to `max_len`
    // bytes takes at most 4 * `max_len` bytes: a longer one is refused before it is buffered.
    let limit = if huffman {
        max_len.saturating_mul(4)
    } else {
        max_len
    };
    let len = usize::try_from(len)
        .ok()
        .filter(|l| *l <= limit)
        .ok_or(Parse::TooLong)?;
    let bytes = buf.get(at..at + len).ok_or(Parse::Incomplete)?;
    let value = if huffman {
        // At least 5 bits a symbol: `len` bytes decode to at most 8 * len / 5 symbols, so a
        // decoding error here is a bad code, never a length limit.
        octets::Octets::with_slice(bytes)
            .get_huffman_decoded_with_max_length(len * 8 / 5 + 1)
            .map_err(|_| Parse::Invalid)?
    } else {
        bytes.to_vec()
    };
    if value.len() > max_len {
        return Err(Parse::TooLong);
    }
    *pos = at + len;
    Ok(value)
}

/// The length of a string's literal without its length prefix, Huffman-coded if shorter.
pub fn str_len(s: &[u8]) -> usize {
    octets::huffman_encoding_len::<false>(s)
        .unwrap_or(usize::MAX)
        .min(s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(flags: u8, prefix: u8, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_int(&mut out, flags, prefix, v);
        out
    }

    /// RFC 7541 Appendix C.1: 10 and 1337 with a 5-bit prefix, 42 with an 8-bit one.
    #[test]
    fn integers_of_rfc7541_c1() {
        assert_eq!(int(0, 5, 10), [0x0a]);
        assert_eq!(int(0, 5, 1337), [0x1f, 0x9a, 0x0a]);
        assert_eq!(int(0, 8, 42), [0x2a]);
        let mut pos = 0;
        assert_eq!(get_int(&[0xff, 0x9a, 0x0a], &mut pos, 5), Ok(1337));
        assert_eq!(pos, 3);
    }

    #[test]
    fn integers_round_trip_and_fail_cleanly() {
        for prefix in 1..=8 {
            for v in [0, 1, 30, 31, 127, 128, 255, 256, 1 << 20, MAX_INT] {
                let buf = int(0, prefix, v);
                let mut pos = 0;
                assert_eq!(get_int(&buf, &mut pos, prefix), Ok(v), "{v} {prefix}");
                assert_eq!(pos, buf.len());
                for cut in 0..buf.len() {
                    let mut pos = 0;
                    assert_eq!(
                        get_int(&buf[..cut], &mut pos, prefix),
                        Err(Parse::Incomplete)
                    );
                    assert_eq!(pos, 0);
                }
            }
        }
        // 2^62 and endless continuation bytes are malformed.
        let mut pos = 0;
        assert_eq!(
            get_int(&int(0, 8, MAX_INT + 1), &mut pos, 8),
            Err(Parse::Invalid)
        );
        let mut long = vec![0xff];
        long.extend([0xff; 20]);
        assert_eq!(get_int(&long, &mut 0, 8), Err(Parse::Invalid));
    }

    #[test]
    fn strings_use_huffman_only_when_shorter() {
        let mut out = Vec::new();
        // RFC 7541 C.4.1: "www.example.com" Huffman-codes to 12 bytes.
        put_str(&mut out, 0, 7, b"www.example.com");
        assert_eq!(out[0], 0x80 | 12);
        assert_eq!(out.len(), 13);
        let mut pos = 0;
        assert_eq!(get_str(&out, &mut pos, 7, 100).unwrap(), b"www.example.com");
        out.clear();
        put_str(&mut out, 0x20, 3, &[0xff, 0xfe, 0x00]);
        assert_eq!(out[0], 0x20 | 3);
        let mut pos = 0;
        assert_eq!(get_str(&out, &mut pos, 3, 100).unwrap(), [0xff, 0xfe, 0x00]);
        assert_eq!(get_str(&out, &mut 0, 3, 2), Err(Parse::TooLong));
        assert_eq!(get_str(&out[..3], &mut 0, 3, 100), Err(Parse::Incomplete));
        // A Huffman string with an invalid padding (RFC 7541 §5.2: EOS in the code).
        assert_eq!(
            get_str(&[0x84, 0xff, 0xff, 0xff, 0xff], &mut 0, 7, 100),
            Err(Parse::Invalid)
        );
    }
}
