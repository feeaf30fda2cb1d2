//! The encoded file: a sequence of blocks, each an 8-byte big-endian stream ID, a 4-byte
//! big-endian length and that many bytes.
//!
//! Stream ID 0 carries encoder-stream bytes; any other ID carries one complete encoded field
//! section (header list k of the QIF file goes on stream k, counting from 1).

use std::fmt;

/// The stream ID whose blocks carry encoder-stream bytes.
pub const ENCODER_STREAM: u64 = 0;

/// Bytes of framing before each block's payload (stream ID and length).
pub const BLOCK_HEADER_LEN: usize = 12;

/// One block of an encoded file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// 0 for encoder-stream bytes, otherwise the stream of a field section.
    pub stream_id: u64,
    /// The payload.
    pub data: Vec<u8>,
}

/// Why an encoded file could not be split into blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockError {
    /// The file ends inside a block header: offset of that header.
    TruncatedHeader {
        /// Offset of the block header.
        offset: usize,
    },
    /// The file ends inside a block's payload.
    TruncatedPayload {
        /// Offset of the block header.
        offset: usize,
        /// The length the header announced.
        len: u32,
        /// Bytes actually left.
        available: usize,
    },
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::TruncatedHeader { offset } => {
                write!(
                    f,
                    "offset {offset}: file ends inside a 12-byte block header"
                )
            }
            BlockError::TruncatedPayload {
                offset,
                len,
                available,
            } => write!(
                f,
                "offset {offset}: block announces {len} bytes but only {available} remain"
            ),
        }
    }
}

impl std::error::Error for BlockError {}

/// Appends one block to `out`.
///
/// # Panics
///
/// If `data` is 4 GiB or longer (the length field has 32 bits).
pub fn write_block(out: &mut Vec<u8>, stream_id: u64, data: &[u8]) {
    let len = u32::try_from(data.len()).expect("a block is shorter than 4 GiB");
    out.extend_from_slice(&stream_id.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(data);
}

/// Splits an encoded file into its blocks, in file order.
pub fn parse(mut file: &[u8]) -> Result<Vec<Block>, BlockError> {
    let total = file.len();
    let mut blocks = Vec::new();
    while !file.is_empty() {
        let offset = total - file.len();
        if file.len() < BLOCK_HEADER_LEN {
            return Err(BlockError::TruncatedHeader { offset });
        }
        let (id, rest) = file.split_at(8);
        let (len, rest) = rest.split_at(4);
        let stream_id = u64::from_be_bytes(id.try_into().expect("8 bytes"));
        let len = u32::from_be_bytes(len.try_into().expect("4 bytes"));
        let n = usize::try_from(len).expect("u32 fits in usize");
        if rest.len() < n {
            return Err(BlockError::TruncatedPayload {
                offset,
                len,
                available: rest.len(),
            });
        }
        let (data, rest) = rest.split_at(n);
        blocks.push(Block {
            stream_id,
            data: data.to_vec(),
        });
        file = rest;
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_big_endian_id_then_length() {
        let mut out = Vec::new();
        write_block(&mut out, 0x0102_0304_0506_0708, b"xyz");
        write_block(&mut out, 0, b"");
        assert_eq!(
            out,
            [
                1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 3, b'x', b'y', b'z', //
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ]
        );
        assert_eq!(
            parse(&out).unwrap(),
            vec![
                Block {
                    stream_id: 0x0102_0304_0506_0708,
                    data: b"xyz".to_vec()
                },
                Block {
                    stream_id: 0,
                    data: vec![]
                },
            ]
        );
    }

    #[test]
    fn empty_file_has_no_blocks() {
        assert_eq!(parse(&[]).unwrap(), vec![]);
    }

    #[test]
    fn truncation_is_reported_at_the_block() {
        let mut out = Vec::new();
        write_block(&mut out, 1, b"abcd");
        write_block(&mut out, 2, b"efgh");
        for cut in 1..out.len() {
            let r = parse(&out[..cut]);
            if cut == 16 {
                assert_eq!(r.unwrap().len(), 1);
                continue;
            }
            let err = r.unwrap_err();
            let expected_offset = if cut < 16 { 0 } else { 16 };
            match err {
                BlockError::TruncatedHeader { offset } => {
                    assert_eq!(offset, expected_offset);
                    assert!(cut - offset < 12);
                }
                BlockError::TruncatedPayload {
                    offset,
                    len,
                    available,
                } => {
                    assert_eq!(offset, expected_offset);
                    assert_eq!(len, 4);
                    assert_eq!(available, cut - offset - 12);
                }
            }
        }
    }

    #[test]
    fn large_stream_ids_round_trip() {
        let mut out = Vec::new();
        write_block(&mut out, u64::MAX, &[0xff; 300]);
        let b = parse(&out).unwrap();
        assert_eq!(b[0].stream_id, u64::MAX);
        assert_eq!(b[0].data.len(), 300);
    }
}
