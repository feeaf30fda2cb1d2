//! The QPACK decoder (RFC 9204 §2.2): applies the peer's encoder stream to its dynamic table,
//! decodes field sections (holding those whose Required Insert Count is not reached yet) and
//! writes decoder-stream instructions: Section Acknowledgment, Stream Cancellation and Insert
//! Count Increment (§4.4).
//!
//! Memory is bounded by what we advertise: the table by its capacity, a partial encoder
//! instruction by the capacity (a longer literal is refused as soon as its length is read),
//! and blocked sections by the blocked-stream limit times the section size limit.

use std::collections::VecDeque;

use super::instructions as ins;
use super::log::ParsedLog;
use super::prefix::{get_int, get_str, Parse};
use super::table::{DynamicTable, ENTRY_OVERHEAD};
use super::{decode_insert_count, static_table, Error, FieldLine, Result};

/// A blocked section larger than this is refused even without a field section size limit.
const MAX_BLOCKED_SECTION: usize = 256 * 1024;

/// Result of decoding one field section.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    /// The field lines, in order.
    Fields(Vec<FieldLine>),
    /// Required Insert Count not reached yet: the decoder kept a copy of the section and
    /// returns it decoded from [`Decoder::take_unblocked`] once the encoder stream catches up.
    Blocked,
}

/// One encoder instruction (RFC 9204 §4.3).
enum Instruction {
    SetCapacity(u64),
    InsertNameRef {
        is_static: bool,
        index: u64,
        value: Vec<u8>,
    },
    InsertLiteral {
        name: Vec<u8>,
        value: Vec<u8>,
    },
    Duplicate(u64),
}

/// A blocked field section.
struct Blocked {
    stream_id: u64,
    required: u64,
    section: Vec<u8>,
}

/// The decoding side of QPACK.
pub struct Decoder {
    table: DynamicTable,
    max_table_capacity: u64,
    max_blocked_streams: u64,
    max_field_section_size: u64,
    /// Encoder-stream bytes of an instruction not complete yet.
    partial: Vec<u8>,
    /// Decoder-stream bytes waiting to be written.
    out: Vec<u8>,
    /// The insert count the encoder knows we reached (its Known Received Count).
    acknowledged: u64,
    blocked: Vec<Blocked>,
    blocked_bytes: usize,
    unblocked: VecDeque<(u64, Result<Vec<FieldLine>>)>,
    /// Encoder-stream instructions parsed, kept for tracing when switched on.
    parsed: ParsedLog,
}

impl Decoder {
    /// `max_table_capacity` and `max_blocked_streams` are what we advertise
    /// (SETTINGS_QPACK_MAX_TABLE_CAPACITY / _BLOCKED_STREAMS); `max_field_section_size` bounds
    /// a decoded section (RFC 9114 §4.2.2 size: name + value + 32 per line; `u64::MAX` for no
    /// limit).
    pub fn new(
        max_table_capacity: u64,
        max_blocked_streams: u64,
        max_field_section_size: u64,
    ) -> Decoder {
        Decoder {
            table: DynamicTable::new(),
            max_table_capacity,
            max_blocked_streams,
            max_field_section_size,
            partial: Vec::new(),
            out: Vec::new(),
            acknowledged: 0,
            blocked: Vec::new(),
            blocked_bytes: 0,
            unblocked: VecDeque::new(),
            parsed: ParsedLog::default(),
        }
    }

    /// For QPACK offline interop only, never on a connection: the peer's encoder is taken to
    /// have started with a table of `capacity` bytes (at most what we advertise) without
    /// sending Set Dynamic Table Capacity.
    ///
    /// On a connection the table starts at capacity 0 until the encoder sets it (RFC 9204
    /// §3.2.3), and that is what [`Decoder::new`] does. The files of the offline interop
    /// predate that rule: their encoders begin with insertions, into a table of the size both
    /// sides were given. Call this before feeding any encoder-stream bytes.
    pub fn assume_initial_capacity(&mut self, capacity: u64) -> Result<()> {
        if capacity > self.max_table_capacity || self.table.insert_count() > 0 {
            return Err(Error::EncoderStreamError);
        }
        self.table.set_capacity(capacity as usize);
        Ok(())
    }

    /// The longest string an entry can hold: anything longer cannot be inserted.
    fn max_string(&self) -> usize {
        usize::try_from(self.max_table_capacity).unwrap_or(usize::MAX)
    }

    /// Bytes received on the peer's encoder stream, split anywhere. Sections this unblocks
    /// become available from [`Decoder::take_unblocked`].
    pub fn feed_encoder_stream(&mut self, buf: &[u8]) -> Result<()> {
        let inserts_before = self.table.insert_count();
        self.partial.extend_from_slice(buf);
        let mut pos = 0;
        let result = loop {
            let mut at = pos;
            match self.parse_instruction(&mut at) {
                Ok(instruction) => {
                    pos = at;
                    if let Err(e) = self.apply(instruction) {
                        break Err(e);
                    }
                }
                Err(Parse::Incomplete) => break Ok(()),
                // A literal longer than the table can hold is refused as soon as its length
                // is known (§4.3.2), so that it is never buffered.
                Err(Parse::Invalid | Parse::TooLong) => break Err(Error::EncoderStreamError),
            }
        };
        self.parsed.record(&self.partial[..pos]);
        self.partial.drain(..pos);
        result?;
        if self.table.insert_count() > inserts_before {
            self.release_blocked();
            let increment = self.table.insert_count() - self.acknowledged;
            if increment > 0 {
                ins::insert_count_increment(&mut self.out, increment);
                self.acknowledged = self.table.insert_count();
            }
        }
        Ok(())
    }

    fn parse_instruction(&self, pos: &mut usize) -> std::result::Result<Instruction, Parse> {
        let buf = &self.partial;
        let first = *buf.get(*pos).ok_or(Parse::Incomplete)?;
        let max = self.max_string();
        Ok(if first & 0x80 != 0 {
            let is_static = first & 0x40 != 0;
            let index = get_int(buf, pos, 6)?;
            let value = get_str(buf, pos, 7, max)?;
            Instruction::InsertNameRef {
                is_static,
                index,
                value,
            }
        } else if first & 0x40 != 0 {
            let name = get_str(buf, pos, 5, max)?;
            let value = get_str(buf, pos, 7, max)?;
            Instruction::InsertLiteral { name, value }
        } else if first & 0x20 != 0 {
            Instruction::SetCapacity(get_int(buf, pos, 5)?)
        } else {
            Instruction::Duplicate(get_int(buf, pos, 5)?)
        })
    }

    /// The entry `relative` places back from the newest (encoder-stream addressing, §3.2.5).
    fn relative_entry(&self, relative: u64) -> Result<(Vec<u8>, Vec<u8>)> {
        let abs = self
            .table
            .insert_count()
            .checked_sub(relative + 1)
            .ok_or(Error::EncoderStreamError)?;
        let e = self.table.get(abs).ok_or(Error::EncoderStreamError)?;
        Ok((e.name.clone(), e.value.clone()))
    }

    fn apply(&mut self, instruction: Instruction) -> Result<()> {
        let (name, value) = match instruction {
            Instruction::SetCapacity(capacity) => {
                if capacity > self.max_table_capacity {
                    return Err(Error::EncoderStreamError);
                }
                self.table.set_capacity(capacity as usize);
                return Ok(());
            }
            Instruction::InsertNameRef {
                is_static: true,
                index,
                value,
            } => {
                let (name, _) = static_table::get(index).ok_or(Error::EncoderStreamError)?;
                (name.to_vec(), value)
            }
            Instruction::InsertNameRef { index, value, .. } => {
                (self.relative_entry(index)?.0, value)
            }
            Instruction::InsertLiteral { name, value } => (name, value),
            Instruction::Duplicate(index) => self.relative_entry(index)?,
        };
        if !self.table.insert(name, value) {
            // An entry larger than the capacity (§4.3.2, §4.3.3).
            return Err(Error::EncoderStreamError);
        }
        Ok(())
    }

    /// Decodes the blocked sections whose inserts have all arrived, in arrival order.
    fn release_blocked(&mut self) {
        let inserts = self.table.insert_count();
        let mut i = 0;
        while i < self.blocked.len() {
            if self.blocked[i].required > inserts {
                i += 1;
                continue;
            }
            let b = self.blocked.remove(i);
            self.blocked_bytes -= b.section.len();
            let result = self
                .decode_now(b.stream_id, &b.section)
                .and_then(|d| match d {
                    Decoded::Fields(lines) => Ok(lines),
                    Decoded::Blocked => Err(Error::DecompressionFailed),
                });
            self.unblocked.push_back((b.stream_id, result));
        }
    }

    /// Decodes the complete field section (a HEADERS frame payload) received on `stream_id`.
    pub fn decode(&mut self, stream_id: u64, section: &[u8]) -> Result<Decoded> {
        self.decode_now(stream_id, section)
    }

    fn decode_now(&mut self, stream_id: u64, section: &[u8]) -> Result<Decoded> {
        let (required, base, mut pos) = self.parse_prefix(section)?;
        if required > self.table.insert_count() {
            return self.block(stream_id, required, section);
        }
        let lines = self.decode_lines(section, &mut pos, required, base)?;
        if required > 0 {
            // Section Acknowledgment (§4.4.1).
            ins::section_ack(&mut self.out, stream_id);
            self.acknowledged = self.acknowledged.max(required);
        }
        Ok(Decoded::Fields(lines))
    }

    fn block(&mut self, stream_id: u64, required: u64, section: &[u8]) -> Result<Decoded> {
        // One section per blocked stream is all HTTP/3 ever has pending (a stream's later
        // sections wait behind its first), so the count of sections is the bound (§2.1.2).
        if self.blocked.len() as u64 >= self.max_blocked_streams {
            return Err(Error::DecompressionFailed);
        }
        let limit = usize::try_from(self.max_field_section_size)
            .unwrap_or(usize::MAX)
            .min(MAX_BLOCKED_SECTION);
        if section.len() > limit {
            return Err(Error::HeaderListTooLarge);
        }
        self.blocked_bytes += section.len();
        self.blocked.push(Blocked {
            stream_id,
            required,
            section: section.to_vec(),
        });
        Ok(Decoded::Blocked)
    }

    /// Required Insert Count, Base and where the field lines start (§4.5.1).
    fn parse_prefix(&self, section: &[u8]) -> Result<(u64, u64, usize)> {
        let bad = |_| Error::DecompressionFailed;
        let mut pos = 0;
        let encoded = get_int(section, &mut pos, 8).map_err(bad)?;
        let required =
            decode_insert_count(encoded, self.max_table_capacity, self.table.insert_count())
                .ok_or(Error::DecompressionFailed)?;
        let negative = section.get(pos).ok_or(Error::DecompressionFailed)? & 0x80 != 0;
        let delta = get_int(section, &mut pos, 7).map_err(bad)?;
        let base = if negative {
            // Base = RIC - Delta - 1 must not be negative (§4.5.1.2).
            required
                .checked_sub(delta)
                .and_then(|b| b.checked_sub(1))
                .ok_or(Error::DecompressionFailed)?
        } else {
            required
                .checked_add(delta)
                .ok_or(Error::DecompressionFailed)?
        };
        Ok((required, base, pos))
    }

    /// A dynamic entry referenced by a field line: it must be below Required Insert Count and
    /// still in the table (§2.2.3).
    fn dynamic(&self, abs: Option<u64>, required: u64) -> Result<(&[u8], &[u8])> {
        let abs = abs
            .filter(|a| *a < required)
            .ok_or(Error::DecompressionFailed)?;
        let e = self.table.get(abs).ok_or(Error::DecompressionFailed)?;
        Ok((&e.name, &e.value))
    }

    fn decode_lines(
        &self,
        s: &[u8],
        pos: &mut usize,
        required: u64,
        base: u64,
    ) -> Result<Vec<FieldLine>> {
        let bad = |_| Error::DecompressionFailed;
        let mut lines = Vec::new();
        let mut size: u64 = 0;
        while *pos < s.len() {
            let first = s[*pos];
            let room = self
                .max_field_section_size
                .saturating_sub(size)
                .min(usize::MAX as u64) as usize;
            let (name, value, never_indexed): (Vec<u8>, Vec<u8>, bool) = if first & 0x80 != 0 {
                // Indexed field line (§4.5.2).
                let index = get_int(s, pos, 6).map_err(bad)?;
                let (n, v) = if first & 0x40 != 0 {
                    static_table::get(index).ok_or(Error::DecompressionFailed)?
                } else {
                    self.dynamic(base.checked_sub(index + 1), required)?
                };
                (n.to_vec(), v.to_vec(), false)
            } else if first & 0x40 != 0 {
                // Literal with name reference (§4.5.4).
                let index = get_int(s, pos, 4).map_err(bad)?;
                let name = if first & 0x10 != 0 {
                    static_table::get(index)
                        .ok_or(Error::DecompressionFailed)?
                        .0
                } else {
                    self.dynamic(base.checked_sub(index + 1), required)?.0
                }
                .to_vec();
                let value = get_str(s, pos, 7, room).map_err(too_large)?;
                (name, value, first & 0x20 != 0)
            } else if first & 0x20 != 0 {
                // Literal with literal name (§4.5.6).
                let name = get_str(s, pos, 3, room).map_err(too_large)?;
                let value = get_str(s, pos, 7, room).map_err(too_large)?;
                (name, value, first & 0x10 != 0)
            } else if first & 0x10 != 0 {
                // Indexed with post-base index (§4.5.3).
                let index = get_int(s, pos, 4).map_err(bad)?;
                let (n, v) = self.dynamic(base.checked_add(index), required)?;
                (n.to_vec(), v.to_vec(), false)
            } else {
                // Literal with post-base name reference (§4.5.5).
                let index = get_int(s, pos, 3).map_err(bad)?;
                let name = self.dynamic(base.checked_add(index), required)?.0.to_vec();
                let value = get_str(s, pos, 7, room).map_err(too_large)?;
                (name, value, first & 0x08 != 0)
            };
            size = size.saturating_add((name.len() + value.len() + ENTRY_OVERHEAD) as u64);
            if size > self.max_field_section_size {
                return Err(Error::HeaderListTooLarge);
            }
            lines.push(FieldLine {
                name,
                value,
                never_indexed,
            });
        }
        Ok(lines)
    }

    /// A section that was Blocked and is now decoded (or failed), in the order they became
    /// decodable.
    pub fn take_unblocked(&mut self) -> Option<(u64, Result<Vec<FieldLine>>)> {
        self.unblocked.pop_front()
    }

    /// The stream was reset or abandoned: drops its blocked sections and tells the encoder
    /// with a Stream Cancellation (§4.4.2), so that it releases the references the stream's
    /// sections hold.
    pub fn cancel_stream(&mut self, stream_id: u64) {
        let before = self.blocked_bytes;
        self.blocked.retain(|b| b.stream_id != stream_id);
        self.blocked_bytes = self.blocked.iter().map(|b| b.section.len()).sum();
        debug_assert!(self.blocked_bytes <= before);
        self.unblocked.retain(|(id, _)| *id != stream_id);
        // With no dynamic table there is nothing to cancel (§4.4.2 allows omitting it).
        if self.max_table_capacity > 0 {
            ins::stream_cancellation(&mut self.out, stream_id);
        }
    }

    /// Decoder-stream bytes (Section Acknowledgment, Stream Cancellation, Insert Count
    /// Increment) waiting to be written (without the stream type byte).
    pub fn decoder_stream_pending(&self) -> &[u8] {
        &self.out
    }

    /// The first `n` pending decoder-stream bytes were written to the stream.
    pub fn decoder_stream_consumed(&mut self, n: usize) {
        self.out.drain(..n.min(self.out.len()));
    }

    /// Bytes the decoder holds for the peer: dynamic table entries (their RFC size, at most
    /// the capacity) + blocked sections (each at most the field section size limit, on at most
    /// the blocked-stream limit of streams) + a partial encoder-stream instruction (two
    /// strings of at most 4 times the capacity each, Huffman-coded, and their prefixes).
    pub fn memory_usage(&self) -> usize {
        self.table.size() + self.blocked_bytes + self.partial.len()
    }

    /// The decoder's dynamic table (for tests and statistics).
    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// The encoder-stream instructions parsed, for tracing (off unless switched on).
    pub fn parsed_log(&mut self) -> &mut ParsedLog {
        &mut self.parsed
    }
}

/// A string over the section's remaining size allowance means the list is too large; other
/// string errors are malformed input.
fn too_large(p: Parse) -> Error {
    match p {
        Parse::TooLong => Error::HeaderListTooLarge,
        Parse::Invalid | Parse::Incomplete => Error::DecompressionFailed,
    }
}
