//! Descriptions of encoder- and decoder-stream instructions, for whoever traces QPACK (the
//! HTTP/3 layer turns them into qlog events). QPACK itself logs nothing and depends on no
//! logger: it hands out the bytes of the instructions it wrote or read, and [`describe`]
//! reads them back into [`Instruction`]s.
//!
//! The instructions an endpoint creates are exactly the bytes of
//! `Encoder::encoder_stream_pending` / `Decoder::decoder_stream_pending`, which only ever hold
//! whole instructions. The ones it parses arrive split anywhere, so the encoder and decoder keep
//! the bytes of each instruction they finished parsing, but only while a [`ParsedLog`] is
//! switched on: off, it costs one flag test per `feed_*` call.

use super::prefix::{get_int, get_str, Parse};

/// Which QPACK stream the bytes travel on (RFC 9204 §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// The encoder stream: capacity changes and insertions (§4.3).
    Encoder,
    /// The decoder stream: acknowledgments, cancellations, insert count increments (§4.4).
    Decoder,
}

/// A string literal as it was on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Literal {
    /// The H bit: Huffman-coded.
    pub huffman: bool,
    /// Its length on the wire (after Huffman coding when `huffman`).
    pub wire_len: u64,
    /// The decoded string.
    pub value: Vec<u8>,
}

/// One instruction (RFC 9204 §4.3, §4.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Instruction {
    /// Set Dynamic Table Capacity (§4.3.1).
    SetDynamicTableCapacity {
        /// The new capacity.
        capacity: u64,
    },
    /// Insert with Name Reference (§4.3.2).
    InsertWithNameReference {
        /// A static-table name, else a dynamic one relative to the insert count.
        is_static: bool,
        /// The index of the name.
        name_index: u64,
        /// The value.
        value: Literal,
    },
    /// Insert with Literal Name (§4.3.3).
    InsertWithLiteralName {
        /// The name.
        name: Literal,
        /// The value.
        value: Literal,
    },
    /// Duplicate (§4.3.4).
    Duplicate {
        /// The duplicated entry, relative to the insert count.
        index: u64,
    },
    /// Section Acknowledgment (§4.4.1).
    SectionAcknowledgment {
        /// The stream whose field section was decoded.
        stream_id: u64,
    },
    /// Stream Cancellation (§4.4.2).
    StreamCancellation {
        /// The abandoned stream.
        stream_id: u64,
    },
    /// Insert Count Increment (§4.4.3).
    InsertCountIncrement {
        /// How many more inserts the decoder has.
        increment: u64,
    },
}

/// The instructions in `bytes`, whole instructions of `stream`, each with its length on the
/// wire. Reading stops at the first byte that does not start a whole, valid instruction.
pub fn describe(stream: Stream, bytes: &[u8]) -> impl Iterator<Item = (Instruction, usize)> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        let start = pos;
        let instruction = match stream {
            Stream::Encoder => encoder_instruction(bytes, &mut pos),
            Stream::Decoder => decoder_instruction(bytes, &mut pos),
        };
        instruction.ok().map(|i| (i, pos - start))
    })
}

fn literal(buf: &[u8], pos: &mut usize, prefix: u8) -> Result<Literal, Parse> {
    let first = *buf.get(*pos).ok_or(Parse::Incomplete)?;
    let mut at = *pos;
    let wire_len = get_int(buf, &mut at, prefix)?;
    let value = get_str(buf, pos, prefix, usize::MAX)?;
    Ok(Literal {
        huffman: first & (1 << prefix) != 0,
        wire_len,
        value,
    })
}

fn encoder_instruction(buf: &[u8], pos: &mut usize) -> Result<Instruction, Parse> {
    let first = *buf.get(*pos).ok_or(Parse::Incomplete)?;
    Ok(if first & 0x80 != 0 {
        let is_static = first & 0x40 != 0;
        let name_index = get_int(buf, pos, 6)?;
        Instruction::InsertWithNameReference {
            is_static,
            name_index,
            value: literal(buf, pos, 7)?,
        }
    } else if first & 0x40 != 0 {
        let name = literal(buf, pos, 5)?;
        Instruction::InsertWithLiteralName {
            name,
            value: literal(buf, pos, 7)?,
        }
    } else if first & 0x20 != 0 {
        Instruction::SetDynamicTableCapacity {
            capacity: get_int(buf, pos, 5)?,
        }
    } else {
        Instruction::Duplicate {
            index: get_int(buf, pos, 5)?,
        }
    })
}

fn decoder_instruction(buf: &[u8], pos: &mut usize) -> Result<Instruction, Parse> {
    let first = *buf.get(*pos).ok_or(Parse::Incomplete)?;
    Ok(if first & 0x80 != 0 {
        Instruction::SectionAcknowledgment {
            stream_id: get_int(buf, pos, 7)?,
        }
    } else if first & 0x40 != 0 {
        Instruction::StreamCancellation {
            stream_id: get_int(buf, pos, 6)?,
        }
    } else {
        Instruction::InsertCountIncrement {
            increment: get_int(buf, pos, 6)?,
        }
    })
}

/// The bytes of the instructions an encoder or decoder parsed from its peer, kept only while
/// switched on (for tracing).
#[derive(Debug, Default)]
pub struct ParsedLog {
    on: bool,
    bytes: Vec<u8>,
}

impl ParsedLog {
    /// Starts or stops keeping parsed instructions; stopping drops what was kept.
    pub fn set_enabled(&mut self, on: bool) {
        self.on = on;
        if !on {
            self.bytes = Vec::new();
        }
    }

    /// Whether parsed instructions are kept.
    pub fn is_enabled(&self) -> bool {
        self.on
    }

    /// Keeps the bytes of whole instructions just parsed.
    pub(super) fn record(&mut self, parsed: &[u8]) {
        if self.on {
            self.bytes.extend_from_slice(parsed);
        }
    }

    /// The instructions parsed since the last call, as bytes for [`describe`]; the log is
    /// emptied.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes)
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}
