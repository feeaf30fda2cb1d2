//! Packet number encoding and decoding (RFC 9000 §17.1, Appendix A.2 and A.3).

use crate::error::{Error, Result};

/// The longest packet number encoding, in bytes.
pub const MAX_PKT_NUM_LEN: usize = 4;

/// Packet numbers are below 2^62 (RFC 9000 §12.3).
const MAX_PKT_NUM: u64 = (1 << 62) - 1;

/// How many bytes to encode packet number `pn` with, given the largest packet number the peer
/// has acknowledged in this space (`None` if none yet).
///
/// The encoding must represent more than twice the range of unacknowledged packet numbers
/// (RFC 9000 §17.1), so the bit count is one more than the bit length of that range.
pub fn encode_pkt_num_len(pn: u64, largest_acked: Option<u64>) -> usize {
    let num_unacked = match largest_acked {
        Some(acked) => pn.saturating_sub(acked),
        None => pn.saturating_add(1),
    };
    let min_bits = (u64::BITS - num_unacked.leading_zeros()) as usize + 1;
    min_bits.div_ceil(8).clamp(1, MAX_PKT_NUM_LEN)
}

/// Writes the `pn_len` least significant bytes of `pn` in network byte order.
pub fn encode_pkt_num(pn: u64, pn_len: usize, out: &mut octets::OctetsMut) -> Result<()> {
    // Truncation to the low bytes is the point of the encoding.
    match pn_len {
        1 => out.put_u8(pn as u8)?,
        2 => out.put_u16(pn as u16)?,
        3 => out.put_u24((pn & 0xff_ffff) as u32)?,
        4 => out.put_u32(pn as u32)?,
        _ => return Err(Error::InvalidState),
    };
    Ok(())
}

/// Reads a truncated packet number: `buf` holds its 1 to 4 bytes in network byte order.
pub fn read_pkt_num(buf: &[u8]) -> Result<u64> {
    if buf.is_empty() || buf.len() > MAX_PKT_NUM_LEN {
        return Err(Error::InvalidPacket);
    }
    Ok(buf.iter().fold(0, |pn, &b| (pn << 8) | u64::from(b)))
}

/// Recovers a full packet number from its `pn_len`-byte truncation, given the largest packet
/// number processed so far in the space (0 if none), as in RFC 9000 Appendix A.3.
///
/// `pn_len` outside 1..=4 is clamped: it comes from two header bits, so it is always valid.
pub fn decode_pkt_num(largest_pn: u64, truncated: u64, pn_len: usize) -> u64 {
    let pn_nbits = pn_len.clamp(1, MAX_PKT_NUM_LEN) * 8;
    let expected = largest_pn.saturating_add(1);
    let win = 1u64 << pn_nbits;
    let hwin = win / 2;
    let mask = win - 1;

    // The packet number is the one closest to `expected` whose low bits match: the candidate
    // may have to move one window up or down to land in (expected - hwin, expected + hwin].
    let candidate = (expected & !mask) | (truncated & mask);

    let below = expected.checked_sub(hwin).is_some_and(|lo| candidate <= lo);
    if below && candidate < (MAX_PKT_NUM + 1) - win {
        return candidate + win;
    }

    if candidate > expected.saturating_add(hwin) && candidate >= win {
        return candidate - win;
    }

    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_length_follows_rfc9000_appendix_a2() {
        // 29,519 outstanding packet numbers need 16 bits.
        assert_eq!(encode_pkt_num_len(0xac5c02, Some(0xabe8b3)), 2);
        // ... and 0xace8fe needs 18 bits, so the 24-bit encoding.
        assert_eq!(encode_pkt_num_len(0xace8fe, Some(0xabe8b3)), 3);

        assert_eq!(encode_pkt_num_len(0, None), 1);
        assert_eq!(encode_pkt_num_len(126, None), 1);
        // 128 unacked packets: 2^8 is not more than twice 128.
        assert_eq!(encode_pkt_num_len(127, None), 2);
        assert_eq!(encode_pkt_num_len(1000, Some(999)), 1);
        assert_eq!(encode_pkt_num_len(MAX_PKT_NUM, Some(0)), 4);
        assert_eq!(encode_pkt_num_len(MAX_PKT_NUM, None), 4);
        // A packet number at or below the largest acknowledged one still gets a valid length.
        assert_eq!(encode_pkt_num_len(5, Some(9)), 1);
    }

    #[test]
    fn decoding_follows_rfc9000_appendix_a3() {
        assert_eq!(decode_pkt_num(0xa82f30ea, 0x9b32, 2), 0xa82f9b32);
    }

    #[test]
    fn decoding_wraps_into_the_window() {
        // Just below a window boundary: the truncated value belongs to the next window.
        assert_eq!(decode_pkt_num(0xff, 0x01, 1), 0x101);
        // Just above: it belongs to the previous window.
        assert_eq!(decode_pkt_num(0x101, 0xff, 1), 0xff);
        // Nothing received yet.
        assert_eq!(decode_pkt_num(0, 0, 1), 0);
        assert_eq!(decode_pkt_num(0, 2, 4), 2);
        // No overflow at the top of the packet number space.
        assert_eq!(decode_pkt_num(MAX_PKT_NUM - 1, 0xff, 1), MAX_PKT_NUM);
        assert_eq!(decode_pkt_num(MAX_PKT_NUM - 10, 0xf0, 1), MAX_PKT_NUM - 15);
        // Moving up a window would leave the packet number space: stay below.
        assert_eq!(decode_pkt_num(MAX_PKT_NUM - 1, 0x05, 1), MAX_PKT_NUM - 250);
        assert_eq!(decode_pkt_num(u64::MAX, 0, 4), !0xffff_ffff);
    }

    #[test]
    fn encode_then_decode_round_trips() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        for _ in 0..100_000 {
            let largest_acked = next() % (1 << 40);
            // The receiver has seen anything from the largest acked packet up to just below
            // the new one; both extremes must decode.
            let pn = largest_acked + 1 + next() % (1 << (next() % 31));
            let len = encode_pkt_num_len(pn, Some(largest_acked));
            let mut buf = [0; 4];
            let mut out = octets::OctetsMut::with_slice(&mut buf);
            encode_pkt_num(pn, len, &mut out).unwrap();
            assert_eq!(out.off(), len);
            let truncated = read_pkt_num(&buf[..len]).unwrap();
            assert_eq!(
                decode_pkt_num(largest_acked, truncated, len),
                pn,
                "{pn} {len}"
            );
            assert_eq!(decode_pkt_num(pn - 1, truncated, len), pn, "{pn} {len}");
        }
    }

    #[test]
    fn invalid_lengths_are_errors() {
        let mut buf = [0; 8];
        let mut out = octets::OctetsMut::with_slice(&mut buf);
        assert_eq!(encode_pkt_num(1, 0, &mut out), Err(Error::InvalidState));
        assert_eq!(encode_pkt_num(1, 5, &mut out), Err(Error::InvalidState));
        assert_eq!(read_pkt_num(&[]), Err(Error::InvalidPacket));
        assert_eq!(read_pkt_num(&[0; 5]), Err(Error::InvalidPacket));
        assert_eq!(read_pkt_num(&[1, 2, 3]), Ok(0x010203));

        let mut short = [0; 1];
        let mut out = octets::OctetsMut::with_slice(&mut short);
        assert_eq!(encode_pkt_num(1, 2, &mut out), Err(Error::BufferTooShort));
    }
}
