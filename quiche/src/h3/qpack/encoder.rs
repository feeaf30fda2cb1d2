//! The QPACK encoder (RFC 9204 §2.1): encodes field sections against the static table and a
//! dynamic table it fills through the encoder stream, and reads the peer decoder's
//! acknowledgments from the decoder stream.
//!
//! Strategy: exact matches are referenced (static first); what is inserted is up to the
//! insertion policy (the `policy` module): lines likely to be referenced again before they are
//! evicted, and names alone when only the name repeats. Entries about to be evicted that are
//! still in use are refreshed with Duplicate. Secrets that could be guessed (short values of
//! `authorization` or `cookie`, `set-cookie`, credentials beyond a per-connection cap: the
//! `secrets` module) go out as never-indexed literals and are never inserted (§7.1). An entry is evicted only when no
//! unacknowledged section or instruction references it (§2.1.1), and unacknowledged entries
//! are referenced only on streams that may block (§2.1.2).

use std::collections::{HashMap, VecDeque};

use super::instructions as ins;
use super::log::ParsedLog;
use super::policy::{Policy, Room};
use super::prefix::{get_int, Parse};
use super::secrets::Secrets;
use super::static_table::{self, StaticMatch};
use super::table::{entry_size, DynamicTable, Entry};
use super::{encode_insert_count, Error, Result};

/// The dynamic table size this encoder uses unless told otherwise.
pub const DEFAULT_MAX_TABLE_CAPACITY: u64 = 4096;

/// An entry larger than a quarter of the table, referenced within this many field sections, is
/// not evicted to make room for a smaller one: it is too large to refresh with Duplicate, and
/// sending it again costs more than the smaller one saves (a long cookie line).
const HOT_SECTIONS: u32 = 32;

/// Field sections after which insertions the decoder has not acknowledged are taken as never
/// to be: a section that may not block then inserts nothing more (it could not reference it).
const STALL_SECTIONS: u32 = 16;

/// Names shorter than this are not inserted alone: a reference to them saves too little.
const MIN_NAME_ALONE: usize = 4;

/// What one field line cost, from [`Encoder::encode_with_costs`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCost {
    /// Bytes of its representation in the field section.
    pub section: usize,
    /// Bytes of the encoder instructions it caused (an insertion or a Duplicate).
    pub encoder_stream: usize,
}

/// An unacknowledged field section.
struct Section {
    required: u64,
    /// Absolute indices of the dynamic entries it references, one per reference.
    refs: Vec<u64>,
}

/// How one field line is written.
#[derive(Clone, Copy)]
enum Line<'a> {
    Static(u64),
    Dynamic(u64),
    StaticName {
        index: u64,
        value: &'a [u8],
        never: bool,
    },
    DynamicName {
        abs: u64,
        value: &'a [u8],
        never: bool,
    },
    Literal {
        name: &'a [u8],
        value: &'a [u8],
        never: bool,
    },
}

/// The encoding side of QPACK.
pub struct Encoder {
    table: DynamicTable,
    /// Our own limit on the table.
    limit: u64,
    /// The peer decoder's SETTINGS_QPACK_MAX_TABLE_CAPACITY (used to encode Required Insert
    /// Count, §4.5.1.1).
    peer_max_capacity: u64,
    max_blocked: u64,
    /// Encoder-stream bytes waiting to be written.
    out: Vec<u8>,
    /// The decoder's insert count as we know it (§2.1.4).
    known_received: u64,
    sections: HashMap<u64, VecDeque<Section>>,
    /// Entries referenced by Insert With Name Reference or Duplicate: (the inserted entry, the
    /// referenced one), released once the decoder has the inserted one.
    instruction_refs: VecDeque<(u64, u64)>,
    /// Decoder-stream bytes of an instruction not complete yet.
    partial: Vec<u8>,
    policy: Policy,
    /// Which lines are secrets, and the credential values inserted.
    secrets: Secrets,
    /// Field sections encoded so far (wrapping): the clock of `Entry::last_use`.
    sections_encoded: u32,
    /// `sections_encoded` when the decoder last acknowledged an insertion, or when none was
    /// waiting for it.
    last_progress: u32,
    /// Decoder-stream instructions parsed, kept for tracing when switched on.
    parsed: ParsedLog,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Encoder {
    /// Uses only the static table until [`Encoder::apply_peer_settings`] allows more.
    pub fn new() -> Encoder {
        Encoder {
            table: DynamicTable::new(),
            limit: DEFAULT_MAX_TABLE_CAPACITY,
            peer_max_capacity: 0,
            max_blocked: 0,
            out: Vec::new(),
            known_received: 0,
            sections: HashMap::new(),
            instruction_refs: VecDeque::new(),
            partial: Vec::new(),
            policy: Policy::new(0),
            secrets: Secrets::default(),
            sections_encoded: 0,
            last_progress: 0,
            parsed: ParsedLog::default(),
        }
    }

    /// Upper bound on the dynamic table this encoder will use, whatever the peer allows (0:
    /// static table only). Call before [`Encoder::apply_peer_settings`].
    pub fn set_max_table_capacity(&mut self, limit: u64) {
        self.limit = limit;
    }

    /// The peer decoder's SETTINGS_QPACK_MAX_TABLE_CAPACITY and SETTINGS_QPACK_BLOCKED_STREAMS
    /// (once, when its SETTINGS arrive). Queues Set Dynamic Table Capacity when the table is
    /// used.
    pub fn apply_peer_settings(&mut self, max_table_capacity: u64, blocked_streams: u64) {
        self.peer_max_capacity = max_table_capacity;
        self.max_blocked = blocked_streams;
        let capacity = max_table_capacity.min(self.limit);
        // Entries need at least 32 bytes each; a smaller table could hold nothing.
        if capacity >= 32 && self.table.capacity() == 0 {
            let size = usize::try_from(capacity).unwrap_or(usize::MAX);
            self.table.set_capacity(size);
            self.policy = Policy::new(size);
            ins::set_capacity(&mut self.out, capacity);
        }
    }

    /// Encoder-stream bytes waiting to be written to the encoder stream (without the stream
    /// type byte).
    pub fn encoder_stream_pending(&self) -> &[u8] {
        &self.out
    }

    /// The first `n` pending encoder-stream bytes were written to the stream.
    pub fn encoder_stream_consumed(&mut self, n: usize) {
        self.out.drain(..n.min(self.out.len()));
    }

    /// The encoder's dynamic table (for tests and statistics).
    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// How many inserts the decoder is known to have received (§2.1.4).
    pub fn known_received_count(&self) -> u64 {
        self.known_received
    }

    /// The decoder-stream instructions parsed, for tracing (off unless switched on).
    pub fn parsed_log(&mut self) -> &mut ParsedLog {
        &mut self.parsed
    }

    /// Streams with an unacknowledged section that references entries the decoder may not
    /// have yet.
    fn blocking_streams(&self) -> usize {
        self.sections
            .values()
            .filter(|s| s.iter().any(|sec| sec.required > self.known_received))
            .count()
    }

    /// Encodes one field section for `stream_id`, appending it to `out`; the encoder
    /// instructions it needs are queued for the encoder stream. Field names must already be
    /// lowercase (HTTP/3's job).
    pub fn encode<'a, I>(&mut self, stream_id: u64, fields: I, out: &mut Vec<u8>) -> Result<()>
    where
        I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
    {
        self.encode_section(stream_id, fields, out, None)
    }

    /// [`Encoder::encode`], also telling what each field line cost (replacing the contents
    /// of `costs`, one per line in order): for measuring which fields compress and which
    /// do not. The section prefix is on no line.
    pub fn encode_with_costs<'a, I>(
        &mut self,
        stream_id: u64,
        fields: I,
        out: &mut Vec<u8>,
        costs: &mut Vec<LineCost>,
    ) -> Result<()>
    where
        I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
    {
        costs.clear();
        self.encode_section(stream_id, fields, out, Some(costs))
    }

    fn encode_section<'a, I>(
        &mut self,
        stream_id: u64,
        fields: I,
        out: &mut Vec<u8>,
        mut costs: Option<&mut Vec<LineCost>>,
    ) -> Result<()>
    where
        I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
    {
        let already_blocking = self
            .sections
            .get(&stream_id)
            .is_some_and(|s| s.iter().any(|sec| sec.required > self.known_received));
        let may_block = already_blocking || (self.blocking_streams() as u64) < self.max_blocked;
        self.sections_encoded = self.sections_encoded.wrapping_add(1);
        if self.table.insert_count() == self.known_received {
            self.last_progress = self.sections_encoded;
        }
        let fields: Vec<(&[u8], &[u8])> = fields.into_iter().collect();
        let mut lines: Vec<Option<Line>> = vec![None; fields.len()];
        let mut stream_bytes = vec![0; if costs.is_some() { fields.len() } else { 0 }];
        let mut refs = Vec::new();
        // Lines whose entry would take an eighth of the table or more are decided first:
        // their insertion may need the oldest entries evicted, which it cannot once the
        // section's other lines reference them.
        let large = self.table.capacity() / 8;
        let first = fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.0.len() + f.1.len() >= large);
        let rest = fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.0.len() + f.1.len() < large);
        for (i, &(name, value)) in first.chain(rest) {
            let queued = self.out.len();
            let line = self.choose(name, value, may_block);
            if let Line::Dynamic(abs) | Line::DynamicName { abs, .. } = line {
                refs.push(abs);
                if let Some(e) = self.table.get_mut(abs) {
                    e.refs += 1;
                    e.last_use = self.sections_encoded;
                }
            }
            lines[i] = Some(line);
            if let Some(bytes) = stream_bytes.get_mut(i) {
                *bytes = self.out.len() - queued;
            }
        }
        let required = refs.iter().map(|a| a + 1).max().unwrap_or(0);
        // Every insert precedes the section: Base is the insert count, all indices relative.
        let base = self.table.insert_count();
        let encoded = encode_insert_count(required, self.peer_max_capacity);
        ins::section_prefix(out, encoded, required, if required > 0 { base } else { 0 });
        for (i, line) in lines.iter().flatten().enumerate() {
            let written = out.len();
            write_line(out, line, base);
            if let Some(costs) = costs.as_deref_mut() {
                costs.push(LineCost {
                    section: out.len() - written,
                    encoder_stream: stream_bytes[i],
                });
            }
        }
        if required > 0 {
            self.sections
                .entry(stream_id)
                .or_default()
                .push_back(Section { required, refs });
        }
        Ok(())
    }

    /// Decides how to write a field line, inserting it first when that pays.
    fn choose<'a>(&mut self, name: &'a [u8], value: &'a [u8], may_block: bool) -> Line<'a> {
        let static_match = static_table::find(name, value);
        if let Some(StaticMatch::Exact(index)) = static_match {
            return Line::Static(index);
        }
        let never = self.secrets.never_indexed(name, value);
        if !never && self.table.capacity() > 0 {
            if let Some(line) = self.choose_dynamic(name, value, static_match, may_block) {
                return line;
            }
        }
        if let Some(StaticMatch::Name(index)) = static_match {
            return Line::StaticName {
                index,
                value,
                never,
            };
        }
        if let (_, Some(abs)) = self.table.find(name, value) {
            if self.usable(abs, may_block) {
                return Line::DynamicName { abs, value, never };
            }
        }
        Line::Literal { name, value, never }
    }

    /// The dynamic table's part: an exact match (refreshed if draining), or an insertion of
    /// the line or of its name when the policy expects it to be referenced again.
    fn choose_dynamic<'a>(
        &mut self,
        name: &'a [u8],
        value: &'a [u8],
        static_match: Option<StaticMatch>,
        may_block: bool,
    ) -> Option<Line<'a>> {
        let sighting = self.policy.observe(name, value);
        let capacity = self.table.capacity();
        let room = Room {
            capacity,
            free: capacity - self.table.size(),
            referenced_now: may_block,
        };
        let (exact, name_abs) = self.table.find(name, value);
        if let Some(abs) = exact {
            if self.draining(abs) {
                if let Some(new) = self.duplicate(abs, may_block) {
                    if may_block {
                        return Some(Line::Dynamic(new));
                    }
                }
            }
            return self.usable(abs, may_block).then_some(Line::Dynamic(abs));
        }
        let size = entry_size(name, value);
        if size * 4 <= capacity * 3 && self.policy.insert_pair(&sighting, value, size, &room) {
            let new = self.insert(name, value, static_match, may_block)?;
            return may_block.then_some(Line::Dynamic(new));
        }
        if static_match.is_some() || name.len() < MIN_NAME_ALONE {
            return None;
        }
        // A name reference costs a byte more from 15 entries back (its index has a 4-bit
        // prefix, §4.5.4): an entry of the name alone is refreshed then, as when it drains.
        let far = |abs: u64| self.table.insert_count() - abs > 15;
        let abs = match name_abs {
            Some(abs) if !self.draining(abs) && !far(abs) => abs,
            // An entry of the name alone is refreshed; one with a value is replaced by the
            // name alone.
            Some(abs) if self.table.get(abs).is_some_and(|e| e.value.is_empty()) => {
                match self.duplicate(abs, may_block) {
                    Some(new) if may_block => new,
                    _ => abs,
                }
            }
            _ => {
                let size = entry_size(name, b"");
                if !self.policy.insert_name(&sighting, size, &room) {
                    return name_abs
                        .filter(|&abs| self.usable(abs, may_block))
                        .map(|abs| Line::DynamicName {
                            abs,
                            value,
                            never: false,
                        });
                }
                self.insert(name, b"", None, may_block).or(name_abs)?
            }
        };
        self.usable(abs, may_block).then_some(Line::DynamicName {
            abs,
            value,
            never: false,
        })
    }

    /// Whether a section may reference an entry: the decoder has it, or the section may block.
    fn usable(&self, abs: u64, may_block: bool) -> bool {
        abs < self.known_received || may_block
    }

    /// Whether an entry is among the oldest of a nearly full table, soon to be evicted.
    fn draining(&self, abs: u64) -> bool {
        let capacity = self.table.capacity();
        if self.table.size() * 4 < capacity * 3 {
            return false;
        }
        let mut before = 0;
        for a in self.table.oldest()..=abs {
            before += self.table.get(a).map_or(0, |e| e.size());
            if before * 4 > capacity {
                return false;
            }
        }
        true
    }

    /// Whether the decoder has acknowledged none of the outstanding insertions for
    /// [`STALL_SECTIONS`] sections, when this one may not block: a new entry would not be
    /// usable either.
    fn stalled(&self, may_block: bool) -> bool {
        !may_block
            && self.table.insert_count() > self.known_received
            && self.sections_encoded.wrapping_sub(self.last_progress) > STALL_SECTIONS
    }

    /// Whether an entry may be evicted: nothing unacknowledged references it. When the
    /// section may not block, an entry the decoder has not acknowledged yet was never usable:
    /// evicting it to insert another would only repeat that, so it stays.
    fn room_for(&self, size: usize, may_block: bool) -> bool {
        let known = self.known_received;
        self.table.can_insert(size, |abs, e| {
            e.refs == 0 && (may_block || abs < known) && !self.protected(e, size)
        })
    }

    /// Whether an entry stays rather than make room for one of `size` bytes: it is large (a
    /// quarter of the table or more, so Duplicate cannot keep it), larger than the newcomer,
    /// and in use.
    fn protected(&self, e: &Entry, size: usize) -> bool {
        let large = e.size() * 4 > self.table.capacity() && e.size() > size;
        large && self.sections_encoded.wrapping_sub(e.last_use) <= HOT_SECTIONS
    }

    /// Adds an entry to the table and accounts for it.
    fn add_entry(&mut self, name: Vec<u8>, value: Vec<u8>) {
        let size = entry_size(&name, &value);
        let abs = self.table.insert_count();
        self.table.insert(name, value);
        if let Some(e) = self.table.get_mut(abs) {
            e.last_use = self.sections_encoded;
        }
        self.policy.inserted(size);
    }

    /// Inserts a line (with a name reference when there is one); returns its index.
    fn insert(
        &mut self,
        name: &[u8],
        value: &[u8],
        static_match: Option<StaticMatch>,
        may_block: bool,
    ) -> Option<u64> {
        if self.stalled(may_block) || !self.room_for(entry_size(name, value), may_block) {
            return None;
        }
        let new = self.table.insert_count();
        match static_match {
            Some(StaticMatch::Name(index) | StaticMatch::Exact(index)) => {
                ins::insert_with_name_ref(&mut self.out, true, index, value, true);
            }
            None => match self.table.find(name, value).1 {
                // A dynamic name reference must not be evicted by this very insertion.
                Some(abs)
                    if self.table.can_insert(entry_size(name, value), |a, e| {
                        a != abs && e.refs == 0 && !self.protected(e, entry_size(name, value))
                    }) =>
                {
                    ins::insert_with_name_ref(&mut self.out, false, new - 1 - abs, value, true);
                    self.reference_in_instruction(new, abs);
                }
                _ => ins::insert_with_literal_name(&mut self.out, name, value, true),
            },
        }
        self.secrets.inserted(name, value);
        self.add_entry(name.to_vec(), value.to_vec());
        Some(new)
    }

    /// Re-inserts a draining entry with Duplicate; returns the new index.
    fn duplicate(&mut self, abs: u64, may_block: bool) -> Option<u64> {
        if self.stalled(may_block) {
            return None;
        }
        let (name, value) = {
            let e = self.table.get(abs)?;
            (e.name.clone(), e.value.clone())
        };
        let size = entry_size(&name, &value);
        let evictable = |a: u64, e: &Entry| a != abs && e.refs == 0 && !self.protected(e, size);
        if !self.table.can_insert(size, evictable) {
            return None;
        }
        let new = self.table.insert_count();
        ins::duplicate(&mut self.out, new - 1 - abs);
        self.reference_in_instruction(new, abs);
        self.add_entry(name, value);
        Some(new)
    }

    fn reference_in_instruction(&mut self, new: u64, referenced: u64) {
        if let Some(e) = self.table.get_mut(referenced) {
            e.refs += 1;
        }
        self.instruction_refs.push_back((new, referenced));
    }

    /// Bytes received on the peer's decoder stream, split anywhere.
    pub fn feed_decoder_stream(&mut self, buf: &[u8]) -> Result<()> {
        self.partial.extend_from_slice(buf);
        let mut pos = 0;
        let result = loop {
            let mut at = pos;
            let Some(&first) = self.partial.get(at) else {
                break Ok(());
            };
            let prefix = if first & 0x80 != 0 { 7 } else { 6 };
            let value = match get_int(&self.partial, &mut at, prefix) {
                Ok(v) => v,
                Err(Parse::Incomplete) => break Ok(()),
                Err(_) => break Err(Error::DecoderStreamError),
            };
            pos = at;
            let applied = if first & 0x80 != 0 {
                self.on_section_ack(value)
            } else if first & 0x40 != 0 {
                self.on_stream_cancellation(value);
                Ok(())
            } else {
                self.on_insert_count_increment(value)
            };
            if let Err(e) = applied {
                break Err(e);
            }
        };
        self.parsed.record(&self.partial[..pos]);
        self.partial.drain(..pos);
        result
    }

    fn release(&mut self, refs: &[u64]) {
        for &abs in refs {
            if let Some(e) = self.table.get_mut(abs) {
                e.refs = e.refs.saturating_sub(1);
            }
        }
    }

    /// The decoder processed the stream's oldest unacknowledged section (§4.4.1).
    fn on_section_ack(&mut self, stream_id: u64) -> Result<()> {
        let queue = self
            .sections
            .get_mut(&stream_id)
            .ok_or(Error::DecoderStreamError)?;
        let section = queue.pop_front().ok_or(Error::DecoderStreamError)?;
        if queue.is_empty() {
            self.sections.remove(&stream_id);
        }
        self.release(&section.refs);
        self.set_known_received(self.known_received.max(section.required));
        Ok(())
    }

    /// The stream's sections will never be acknowledged (§4.4.2).
    fn on_stream_cancellation(&mut self, stream_id: u64) {
        if let Some(queue) = self.sections.remove(&stream_id) {
            for section in queue {
                self.release(&section.refs);
            }
        }
    }

    /// §4.4.3: zero, or beyond what was inserted, is an error.
    fn on_insert_count_increment(&mut self, increment: u64) -> Result<()> {
        let known = self
            .known_received
            .checked_add(increment)
            .filter(|k| increment > 0 && *k <= self.table.insert_count())
            .ok_or(Error::DecoderStreamError)?;
        self.set_known_received(known);
        Ok(())
    }

    fn set_known_received(&mut self, known: u64) {
        if known > self.known_received {
            self.last_progress = self.sections_encoded;
        }
        self.known_received = known;
        while let Some(&(new, referenced)) = self.instruction_refs.front() {
            if new >= known {
                break;
            }
            self.instruction_refs.pop_front();
            self.release(&[referenced]);
        }
    }
}

/// Writes one field line representation (§4.5.2 - §4.5.6), dynamic indices relative to `base`.
fn write_line(out: &mut Vec<u8>, line: &Line, base: u64) {
    match *line {
        Line::Static(index) => ins::indexed(out, true, index),
        Line::Dynamic(abs) => ins::indexed(out, false, base - 1 - abs),
        Line::StaticName {
            index,
            value,
            never,
        } => ins::literal_with_name_ref(out, never, true, index, value, true),
        Line::DynamicName { abs, value, never } => {
            ins::literal_with_name_ref(out, never, false, base - 1 - abs, value, true)
        }
        Line::Literal { name, value, never } => {
            ins::literal_with_literal_name(out, never, name, value, true)
        }
    }
}
