//! QPACK offline interop (RFC 9204): header lists in QIF text form are encoded into a file of
//! blocks (encoder-stream bytes and field sections) with our `quiche::h3::qpack` encoder, and
//! such files, from us or another implementation, are decoded back to QIF.
//!
//! - [`qif`]: the QIF text format (reading, writing, comparing header lists).
//! - [`blocks`]: the encoded file format (stream ID, length, bytes).
//! - [`codec`]: encoding and decoding with our QPACK library.
//! - [`bench`](mod@bench): the compression and timing benchmark.
#![forbid(unsafe_code)]

pub mod bench;
pub mod blocks;
pub mod codec;
pub mod qif;
