//! QPACK field compression for HTTP/3 (RFC 9204), with a dynamic table.
//!
//! Depends on nothing above it: no `Connection`, no HTTP/3 types. The [`Encoder`] turns field
//! lists into encoded field sections and encoder-stream instructions; the [`Decoder`] turns
//! them back and produces decoder-stream instructions. The caller moves the stream bytes
//! (without the unidirectional stream type byte, which HTTP/3 writes).
//!
//! - [`prefix`]: prefixed integers and string literals (Huffman through `octets`);
//! - [`static_table`]: RFC 9204 Appendix A;
//! - [`table`]: the dynamic table;
//! - [`instructions`]: writers of every instruction and field line representation;
//! - [`encoder`] and [`decoder`]: the two ends, with their instruction streams; the encoder's
//!   insertion policy (what is worth a table entry) is in `policy`, and which lines are
//!   secrets, never indexed, in `secrets`;
//! - [`log`]: descriptions of the instructions, for tracing (qlog).

pub mod decoder;
pub mod encoder;
pub mod instructions;
pub mod log;
mod policy;
pub mod prefix;
mod secrets;
pub mod static_table;
pub mod table;

#[cfg(test)]
mod tests;

pub use decoder::{Decoded, Decoder};
pub use encoder::{Encoder, LineCost};

use std::fmt;

/// QPACK errors; [`Error::to_wire`] gives the RFC 9204 §6 codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// QPACK_DECOMPRESSION_FAILED (0x200): a field section cannot be decoded.
    DecompressionFailed,
    /// QPACK_ENCODER_STREAM_ERROR (0x201): the peer's encoder stream is malformed.
    EncoderStreamError,
    /// QPACK_DECODER_STREAM_ERROR (0x202): the peer's decoder stream is malformed.
    DecoderStreamError,
    /// The decoded field section exceeds the decoder's max field section size; HTTP/3 answers
    /// it per stream (its wire code is QPACK_DECOMPRESSION_FAILED's).
    HeaderListTooLarge,
}

impl Error {
    /// The error code of RFC 9204 §6.
    pub fn to_wire(self) -> u64 {
        match self {
            Error::DecompressionFailed | Error::HeaderListTooLarge => 0x200,
            Error::EncoderStreamError => 0x201,
            Error::DecoderStreamError => 0x202,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Error {}

/// A QPACK result.
pub type Result<T> = std::result::Result<T, Error>;

/// One decoded field line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldLine {
    /// The field name.
    pub name: Vec<u8>,
    /// The field value.
    pub value: Vec<u8>,
    /// The N bit: the encoder asked that this line never be put in a dynamic table by
    /// intermediaries (RFC 9204 §4.5.4, §7.1).
    pub never_indexed: bool,
}

/// The largest dynamic table entry count a capacity allows (RFC 9204 §4.5.1.1).
fn max_entries(max_table_capacity: u64) -> u64 {
    max_table_capacity / 32
}

/// Required Insert Count as sent in a field section prefix (RFC 9204 §4.5.1.1).
fn encode_insert_count(ric: u64, max_table_capacity: u64) -> u64 {
    // The encoder references the dynamic table only when the capacity allows entries.
    match ric.checked_rem(2 * max_entries(max_table_capacity)) {
        Some(wrapped) if ric > 0 => wrapped + 1,
        _ => 0,
    }
}

/// Required Insert Count from its encoding, given the decoder's total inserts (RFC 9204
/// §4.5.1.1); `None` for values no conformant encoder produces.
fn decode_insert_count(encoded: u64, max_table_capacity: u64, total_inserts: u64) -> Option<u64> {
    if encoded == 0 {
        return Some(0);
    }
    let full_range = 2 * max_entries(max_table_capacity);
    if encoded > full_range {
        return None;
    }
    let max_value = total_inserts + max_entries(max_table_capacity);
    let max_wrapped = (max_value / full_range) * full_range;
    let mut ric = max_wrapped + encoded - 1;
    if ric > max_value {
        if ric <= full_range {
            return None;
        }
        ric -= full_range;
    }
    (ric != 0).then_some(ric)
}
