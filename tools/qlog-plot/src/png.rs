//! A minimal PNG encoder (ISO/IEC 15948, RFC 2083) for 8-bit RGB images: per-row filters, a zlib
//! stream (RFC 1950) whose deflate data (RFC 1951) is either stored or compressed with the fixed
//! Huffman code and a small LZ77 matcher, and CRC-32 / Adler-32 computed here.

/// How the image data is deflated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Stored blocks: no compression, the simplest valid stream.
    Stored,
    /// One block with the fixed Huffman code and LZ77 matches (RFC 1951 §3.2.6).
    Fixed,
}

/// The 8-byte PNG signature.
pub const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// Encodes `rgb` (`width * height * 3` bytes, rows top to bottom) as a PNG file.
///
/// # Panics
/// If `rgb` does not hold exactly `width * height * 3` bytes.
pub fn encode_rgb(width: u32, height: u32, rgb: &[u8], compression: Compression) -> Vec<u8> {
    let stride = width as usize * 3;
    assert_eq!(rgb.len(), stride * height as usize, "pixel buffer size");

    let filtered = filter_rows(rgb, stride);
    let zlib = zlib_compress(&filtered, compression);

    let mut out = Vec::with_capacity(zlib.len() + 64);
    out.extend_from_slice(&SIGNATURE);
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 2 (truecolour), deflate, adaptive filtering, no interlace.
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    write_chunk(&mut out, b"IHDR", &ihdr);
    write_chunk(&mut out, b"IDAT", &zlib);
    write_chunk(&mut out, b"IEND", &[]);
    out
}

fn write_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    // The CRC covers the chunk type and data, not the length.
    let crc = crc32_update(crc32_update(!0, kind), data);
    out.extend_from_slice(&(!crc).to_be_bytes());
}

/// CRC-32 (the PNG/zlib polynomial 0xEDB88320, reflected) of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    !crc32_update(!0, data)
}

fn crc32_update(mut crc: u32, data: &[u8]) -> u32 {
    let table = crc_table();
    for &b in data {
        crc = table[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc
}

fn crc_table() -> &'static [u32; 256] {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (n, slot) in t.iter_mut().enumerate() {
            let mut c = n as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *slot = c;
        }
        t
    })
}

/// Adler-32 (RFC 1950 §8) of `data`.
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    // 5552 is the largest run for which `b` cannot overflow before the reduction.
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// Prefixes each row with the filter that makes it smallest by the usual heuristic: the least
/// sum of absolute values of the filtered bytes read as signed (PNG spec §12.8).
fn filter_rows(rgb: &[u8], stride: usize) -> Vec<u8> {
    const BPP: usize = 3;
    let rows = rgb.len().checked_div(stride).unwrap_or(0);
    let mut out = Vec::with_capacity(rgb.len() + rows);
    let zero = vec![0u8; stride];
    let mut candidate = vec![0u8; stride];
    let mut best = vec![0u8; stride];
    for r in 0..rows {
        let row = &rgb[r * stride..(r + 1) * stride];
        let prev = if r == 0 {
            &zero[..]
        } else {
            &rgb[(r - 1) * stride..r * stride]
        };
        let mut best_kind = 0u8;
        let mut best_cost = u64::MAX;
        for kind in 0..5u8 {
            for i in 0..stride {
                let a = if i >= BPP { row[i - BPP] } else { 0 };
                let b = prev[i];
                let c = if i >= BPP { prev[i - BPP] } else { 0 };
                let predictor = match kind {
                    0 => 0,
                    1 => a,
                    2 => b,
                    3 => ((a as u16 + b as u16) / 2) as u8,
                    _ => paeth(a, b, c),
                };
                candidate[i] = row[i].wrapping_sub(predictor);
            }
            let cost: u64 = candidate
                .iter()
                .map(|&v| (v as i8).unsigned_abs() as u64)
                .sum();
            if cost < best_cost {
                best_cost = cost;
                best_kind = kind;
                best.copy_from_slice(&candidate);
            }
        }
        out.push(best_kind);
        out.extend_from_slice(&best);
    }
    out
}

/// The Paeth predictor (PNG spec §9.4).
pub fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = a as i16 + b as i16 - c as i16;
    let pa = (p - a as i16).abs();
    let pb = (p - b as i16).abs();
    let pc = (p - c as i16).abs();
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// A zlib stream: header, deflate data, Adler-32 of the uncompressed data.
fn zlib_compress(data: &[u8], compression: Compression) -> Vec<u8> {
    // CMF 0x78: deflate with a 32 KiB window. FLG 0x01 makes CMF*256+FLG a multiple of 31
    // (RFC 1950 §2.2), with no dictionary and the "fastest" level hint.
    let mut out = vec![0x78, 0x01];
    match compression {
        Compression::Stored => deflate_stored(data, &mut out),
        Compression::Fixed => deflate_fixed(data, &mut out),
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

fn deflate_stored(data: &[u8], out: &mut Vec<u8>) {
    let mut chunks = data.chunks(65535).peekable();
    if chunks.peek().is_none() {
        // An empty stream still needs one final block.
        out.extend_from_slice(&[1, 0, 0, 0xFF, 0xFF]);
        return;
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        // BFINAL in bit 0, BTYPE 00; the rest of the byte is padding to the byte boundary.
        out.push(u8::from(last));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
}

/// Writes bits least significant first, as deflate packs them (RFC 1951 §3.1.1).
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    bits: u32,
}

impl BitWriter<'_> {
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= (value as u64) << self.bits;
        self.bits += count;
        while self.bits >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.bits -= 8;
        }
    }

    /// Huffman codes are defined most significant bit first, so they go in reversed.
    fn put_code(&mut self, code: u32, len: u32) {
        self.put(code.reverse_bits() >> (32 - len), len);
    }

    fn finish(mut self) {
        if self.bits > 0 {
            self.out.push(self.acc as u8);
        }
        self.acc = 0;
        self.bits = 0;
    }
}

/// Base lengths of length codes 257..=285 (RFC 1951 §3.2.5).
pub const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
/// Extra bits of length codes 257..=285.
pub const LENGTH_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
/// Base distances of distance codes 0..=29.
pub const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
/// Extra bits of distance codes 0..=29.
pub const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// The fixed literal/length code of `symbol` (RFC 1951 §3.2.6): (code, bit length).
fn fixed_litlen(symbol: u16) -> (u32, u32) {
    let s = symbol as u32;
    match symbol {
        0..=143 => (0x30 + s, 8),
        144..=255 => (0x190 + s - 144, 9),
        256..=279 => (s - 256, 7),
        _ => (0xC0 + s - 280, 8),
    }
}

fn put_literal(w: &mut BitWriter, byte: u8) {
    let (code, len) = fixed_litlen(byte as u16);
    w.put_code(code, len);
}

fn put_match(w: &mut BitWriter, length: usize, distance: usize) {
    // The last base not above the value is its code; the remainder goes in the extra bits.
    let li = LENGTH_BASE
        .iter()
        .rposition(|&b| b as usize <= length)
        .unwrap_or(0);
    let (code, len) = fixed_litlen(257 + li as u16);
    w.put_code(code, len);
    w.put(
        (length - LENGTH_BASE[li] as usize) as u32,
        LENGTH_EXTRA[li] as u32,
    );
    let di = DIST_BASE
        .iter()
        .rposition(|&b| b as usize <= distance)
        .unwrap_or(0);
    w.put_code(di as u32, 5);
    w.put(
        (distance - DIST_BASE[di] as usize) as u32,
        DIST_EXTRA[di] as u32,
    );
}

const WINDOW: usize = 32 * 1024;
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 258;
const HASH_BITS: u32 = 15;
/// How many earlier positions with the same hash are tried: plots are mostly long runs, so a
/// short chain finds the matches that matter.
const MAX_CHAIN: usize = 48;

fn hash3(d: &[u8], i: usize) -> usize {
    let v = (d[i] as u32) | (d[i + 1] as u32) << 8 | (d[i + 2] as u32) << 16;
    (v.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}

/// One final block with the fixed Huffman code; LZ77 by hash chains, greedy matching.
fn deflate_fixed(data: &[u8], out: &mut Vec<u8>) {
    let mut w = BitWriter {
        out,
        acc: 0,
        bits: 0,
    };
    // BFINAL = 1, BTYPE = 01 (fixed Huffman).
    w.put(1, 1);
    w.put(1, 2);

    let mut head = vec![usize::MAX; 1 << HASH_BITS];
    let mut prev = vec![usize::MAX; WINDOW];
    let insert = |head: &mut [usize], prev: &mut [usize], i: usize| {
        if i + MIN_MATCH <= data.len() {
            let h = hash3(data, i);
            prev[i % WINDOW] = head[h];
            head[h] = i;
        }
    };

    let mut i = 0;
    while i < data.len() {
        let mut best_len = 0;
        let mut best_dist = 0;
        if i + MIN_MATCH <= data.len() {
            let max_len = MAX_MATCH.min(data.len() - i);
            let mut candidate = head[hash3(data, i)];
            let mut chain = 0;
            while candidate != usize::MAX && chain < MAX_CHAIN {
                let dist = i - candidate;
                if dist > WINDOW - 1 || dist == 0 {
                    break;
                }
                let len = data[candidate..]
                    .iter()
                    .zip(&data[i..i + max_len])
                    .take_while(|(a, b)| a == b)
                    .count();
                if len > best_len {
                    best_len = len;
                    best_dist = dist;
                    if len == max_len {
                        break;
                    }
                }
                let next = prev[candidate % WINDOW];
                // Chains only go back in time; anything else is a slot reused by the ring.
                if next == usize::MAX || next >= candidate {
                    break;
                }
                candidate = next;
                chain += 1;
            }
        }
        if best_len >= MIN_MATCH {
            put_match(&mut w, best_len, best_dist);
            for k in i..i + best_len {
                insert(&mut head, &mut prev, k);
            }
            i += best_len;
        } else {
            put_literal(&mut w, data[i]);
            insert(&mut head, &mut prev, i);
            i += 1;
        }
    }
    // End of block.
    let (code, len) = fixed_litlen(256);
    w.put_code(code, len);
    w.finish();
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Reads bits least significant first.
    struct BitReader<'a> {
        data: &'a [u8],
        pos: usize,
        bit: u32,
    }

    impl BitReader<'_> {
        fn bit(&mut self) -> u32 {
            let byte = *self.data.get(self.pos).expect("deflate data ended early");
            let b = (byte >> self.bit) & 1;
            self.bit += 1;
            if self.bit == 8 {
                self.bit = 0;
                self.pos += 1;
            }
            b as u32
        }
        fn bits(&mut self, n: u32) -> u32 {
            (0..n).fold(0, |acc, i| acc | self.bit() << i)
        }
        /// A Huffman code, most significant bit first.
        fn code_bit(&mut self, code: u32) -> u32 {
            code << 1 | self.bit()
        }
        fn align(&mut self) {
            if self.bit != 0 {
                self.bit = 0;
                self.pos += 1;
            }
        }
    }

    fn fixed_symbol(r: &mut BitReader) -> u16 {
        let mut code = 0;
        for _ in 0..7 {
            code = r.code_bit(code);
        }
        if code <= 0x17 {
            return 256 + code as u16;
        }
        code = r.code_bit(code);
        if (0x30..=0xBF).contains(&code) {
            return (code - 0x30) as u16;
        }
        if (0xC0..=0xC7).contains(&code) {
            return 280 + (code - 0xC0) as u16;
        }
        code = r.code_bit(code);
        assert!((0x190..=0x1FF).contains(&code), "bad fixed code {code:#x}");
        144 + (code - 0x190) as u16
    }

    /// Inflates a zlib stream made of stored and fixed-Huffman blocks (all this encoder
    /// writes), checking the header and the Adler-32.
    pub(crate) fn inflate_zlib(z: &[u8]) -> Vec<u8> {
        assert!(z.len() >= 6, "zlib stream too short");
        assert_eq!(z[0] & 0x0F, 8, "deflate method");
        assert_eq!(((z[0] as u16) << 8 | z[1] as u16) % 31, 0, "FCHECK");
        let mut r = BitReader {
            data: &z[2..z.len() - 4],
            pos: 0,
            bit: 0,
        };
        let mut out: Vec<u8> = Vec::new();
        loop {
            let last = r.bit() == 1;
            match r.bits(2) {
                0 => {
                    r.align();
                    let d = r.data;
                    let len = u16::from_le_bytes([d[r.pos], d[r.pos + 1]]);
                    let nlen = u16::from_le_bytes([d[r.pos + 2], d[r.pos + 3]]);
                    assert_eq!(len, !nlen, "stored LEN/NLEN");
                    r.pos += 4;
                    out.extend_from_slice(&d[r.pos..r.pos + len as usize]);
                    r.pos += len as usize;
                }
                1 => loop {
                    let sym = fixed_symbol(&mut r);
                    match sym {
                        0..=255 => out.push(sym as u8),
                        256 => break,
                        _ => {
                            let li = (sym - 257) as usize;
                            let len =
                                LENGTH_BASE[li] as usize + r.bits(LENGTH_EXTRA[li] as u32) as usize;
                            let mut dcode = 0;
                            for _ in 0..5 {
                                dcode = r.code_bit(dcode);
                            }
                            let di = dcode as usize;
                            let dist =
                                DIST_BASE[di] as usize + r.bits(DIST_EXTRA[di] as u32) as usize;
                            assert!(dist <= out.len(), "distance beyond the start");
                            let start = out.len() - dist;
                            for k in 0..len {
                                out.push(out[start + k]);
                            }
                        }
                    }
                },
                t => panic!("block type {t} not written by this encoder"),
            }
            if last {
                break;
            }
        }
        let adler = u32::from_be_bytes(z[z.len() - 4..].try_into().unwrap());
        assert_eq!(adler, adler32(&out), "Adler-32");
        out
    }

    /// A decoded PNG: its header fields and the raw (still filtered) image data.
    pub(crate) struct Decoded {
        pub width: u32,
        pub height: u32,
        pub raw: Vec<u8>,
    }

    /// Splits a PNG into chunks, verifying each CRC, the chunk order and the IHDR fields this
    /// encoder promises, and inflates the IDAT data.
    pub(crate) fn decode_png(png: &[u8]) -> Decoded {
        assert_eq!(&png[..8], &SIGNATURE, "signature");
        let mut pos = 8;
        let mut kinds = Vec::new();
        let mut ihdr = Vec::new();
        let mut idat = Vec::new();
        while pos < png.len() {
            let len = u32::from_be_bytes(png[pos..pos + 4].try_into().unwrap()) as usize;
            let kind: [u8; 4] = png[pos + 4..pos + 8].try_into().unwrap();
            let data = &png[pos + 8..pos + 8 + len];
            let crc = u32::from_be_bytes(png[pos + 8 + len..pos + 12 + len].try_into().unwrap());
            let mut covered = kind.to_vec();
            covered.extend_from_slice(data);
            assert_eq!(
                crc,
                crc32(&covered),
                "CRC of {}",
                String::from_utf8_lossy(&kind)
            );
            match &kind {
                b"IHDR" => ihdr = data.to_vec(),
                b"IDAT" => idat.extend_from_slice(data),
                _ => {}
            }
            kinds.push(kind);
            pos += 12 + len;
        }
        assert_eq!(pos, png.len(), "trailing bytes");
        assert_eq!(kinds.first(), Some(b"IHDR"));
        assert_eq!(kinds.last(), Some(b"IEND"));
        assert_eq!(ihdr.len(), 13);
        assert_eq!(&ihdr[8..], &[8, 2, 0, 0, 0], "8-bit RGB, no interlace");
        Decoded {
            width: u32::from_be_bytes(ihdr[0..4].try_into().unwrap()),
            height: u32::from_be_bytes(ihdr[4..8].try_into().unwrap()),
            raw: inflate_zlib(&idat),
        }
    }

    /// Reverses the per-row filters.
    pub(crate) fn unfilter(raw: &[u8], width: u32, height: u32) -> Vec<u8> {
        let stride = width as usize * 3;
        let mut out = vec![0u8; stride * height as usize];
        for r in 0..height as usize {
            let kind = raw[r * (stride + 1)];
            let src = &raw[r * (stride + 1) + 1..(r + 1) * (stride + 1)];
            for i in 0..stride {
                let a = if i >= 3 { out[r * stride + i - 3] } else { 0 };
                let b = if r > 0 { out[(r - 1) * stride + i] } else { 0 };
                let c = if r > 0 && i >= 3 {
                    out[(r - 1) * stride + i - 3]
                } else {
                    0
                };
                let p = match kind {
                    0 => 0,
                    1 => a,
                    2 => b,
                    3 => ((a as u16 + b as u16) / 2) as u8,
                    4 => paeth(a, b, c),
                    k => panic!("filter type {k}"),
                };
                out[r * stride + i] = src[i].wrapping_add(p);
            }
        }
        out
    }

    #[test]
    fn crc32_and_adler32_known_values() {
        // The check values of the two algorithms for "123456789".
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(adler32(b""), 1);
        // Long input exercises the deferred modulo.
        let big = vec![0xFFu8; 100_000];
        let (mut a, mut b) = (1u64, 0u64);
        for &x in &big {
            a = (a + x as u64) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!(adler32(&big), (b << 16 | a) as u32);
    }

    fn test_image(w: u32, h: u32) -> Vec<u8> {
        let mut rgb = vec![255u8; (w * h * 3) as usize];
        let mut seed = 0x1234_5678_9abc_def0u64;
        for (i, px) in rgb.chunks_mut(3).enumerate() {
            let (x, y) = (i as u32 % w, i as u32 / w);
            if (x + y) % 17 == 0 {
                px.copy_from_slice(&[200, 30, 40]);
            } else if y > h / 2 {
                // Noise that LZ77 cannot compress, to exercise literals.
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                px.copy_from_slice(&seed.to_le_bytes()[..3]);
            }
        }
        rgb
    }

    #[test]
    fn png_round_trips_with_both_compressions() {
        for (w, h) in [(1, 1), (7, 3), (300, 200)] {
            let rgb = test_image(w, h);
            for c in [Compression::Stored, Compression::Fixed] {
                let png = encode_rgb(w, h, &rgb, c);
                let d = decode_png(&png);
                assert_eq!((d.width, d.height), (w, h));
                assert_eq!(d.raw.len(), (w * h * 3 + h) as usize);
                assert_eq!(unfilter(&d.raw, w, h), rgb, "{w}x{h} {c:?}");
            }
        }
    }

    #[test]
    fn stored_blocks_split_at_64k() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let z = zlib_compress(&data, Compression::Stored);
        // Four blocks of at most 65535 bytes, 5 header bytes each, plus zlib framing.
        assert_eq!(z.len(), 2 + 4 * 5 + data.len() + 4);
        assert_eq!(inflate_zlib(&z), data);
        assert_eq!(inflate_zlib(&zlib_compress(&[], Compression::Stored)), b"");
        assert_eq!(inflate_zlib(&zlib_compress(&[], Compression::Fixed)), b"");
    }

    #[test]
    fn fixed_huffman_compresses_runs_and_uses_every_length() {
        // Runs of every length 3..=258 and distances from 1 up to the window edge.
        let mut data = Vec::new();
        for len in 1..300usize {
            data.extend(std::iter::repeat_n((len % 200) as u8, len));
            data.push(255);
        }
        let far: Vec<u8> = (0..40_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        data.extend_from_slice(&far);
        data.extend_from_slice(&far[..20_000]);
        let z = zlib_compress(&data, Compression::Fixed);
        assert_eq!(inflate_zlib(&z), data);
        assert!(
            z.len() < data.len() * 3 / 4,
            "{} of {}",
            z.len(),
            data.len()
        );
        // A white image shrinks to almost nothing.
        let white = vec![255u8; 1000 * 500 * 3];
        let png = encode_rgb(1000, 500, &white, Compression::Fixed);
        assert!(png.len() < 20_000, "{}", png.len());
    }
}
