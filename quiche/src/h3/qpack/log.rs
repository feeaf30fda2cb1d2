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

#[cfg(test)]
mod tests {
    use super::super::instructions as ins;
    use super::*;

    #[test]
    fn describes_what_the_writers_wrote() {
        let mut enc = Vec::new();
        ins::set_capacity(&mut enc, 220);
        // Huffman-coded (shorter that way) and raw strings, a long index (prefix overflow).
        ins::insert_with_name_ref(&mut enc, true, 0, b"www.example.com", true);
        ins::insert_with_name_ref(&mut enc, false, 100, b"\xff\x00", true);
        ins::insert_with_literal_name(&mut enc, b"custom-key", b"custom-value", false);
        ins::duplicate(&mut enc, 2);
        let got: Vec<_> = describe(Stream::Encoder, &enc).collect();
        let lens: usize = got.iter().map(|(_, n)| n).sum();
        assert_eq!(lens, enc.len());
        let lit = |huffman, wire_len, value: &[u8]| Literal {
            huffman,
            wire_len,
            value: value.to_vec(),
        };
        let want = [
            Instruction::SetDynamicTableCapacity { capacity: 220 },
            Instruction::InsertWithNameReference {
                is_static: true,
                name_index: 0,
                // RFC 9204 Appendix B.2: 15 characters in 12 Huffman-coded bytes.
                value: lit(true, 12, b"www.example.com"),
            },
            Instruction::InsertWithNameReference {
                is_static: false,
                name_index: 100,
                value: lit(false, 2, b"\xff\x00"),
            },
            Instruction::InsertWithLiteralName {
                name: lit(false, 10, b"custom-key"),
                value: lit(false, 12, b"custom-value"),
            },
            Instruction::Duplicate { index: 2 },
        ];
        assert_eq!(got.into_iter().map(|(i, _)| i).collect::<Vec<_>>(), want);
        // 220 overflows the 5-bit prefix by 189, which takes two continuation bytes.
        assert_eq!(describe(Stream::Encoder, &enc).next().unwrap().1, 3);

        let mut dec = Vec::new();
        ins::section_ack(&mut dec, 4);
        ins::stream_cancellation(&mut dec, 8);
        ins::insert_count_increment(&mut dec, 300);
        let got: Vec<_> = describe(Stream::Decoder, &dec).map(|(i, _)| i).collect();
        assert_eq!(
            got,
            [
                Instruction::SectionAcknowledgment { stream_id: 4 },
                Instruction::StreamCancellation { stream_id: 8 },
                Instruction::InsertCountIncrement { increment: 300 },
            ]
        );
        // An instruction cut short ends the description, without a panic.
        assert_eq!(describe(Stream::Decoder, &dec[..dec.len() - 1]).count(), 2);
        assert_eq!(describe(Stream::Encoder, &enc[..3]).count(), 1);
    }

    #[test]
    fn parsed_log_keeps_bytes_only_while_on() {
        let mut log = ParsedLog::default();
        log.record(b"\x01");
        assert!(log.is_empty() && !log.is_enabled());
        log.set_enabled(true);
        log.record(b"\x01\x02");
        assert_eq!(log.take(), b"\x01\x02");
        log.record(b"\x03");
        log.set_enabled(false);
        assert!(log.is_empty());
    }
}
