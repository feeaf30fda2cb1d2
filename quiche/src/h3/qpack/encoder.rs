//! The QPACK encoder (RFC 9204 §2.1): encodes field sections against the static table and a
//! dynamic table it fills through the encoder stream, and reads the peer decoder's
//! acknowledgments from the decoder stream.
//!
//! Strategy: exact matches are referenced (static first); field lines that repeat (names known
//! to repeat on every request, like `:authority`, `user-agent`, `accept*` and cookie crumbs,
//! and any other line seen before) are inserted; entries about to be evicted are refreshed
//! with Duplicate; secrets (`authorization`, `set-cookie`, short cookies) go out as
//! never-indexed literals and are never inserted (§7.1). An entry is evicted only when no
//! unacknowledged section or instruction references it (§2.1.1), and unacknowledged entries
//! are referenced only on streams that may block (§2.1.2).

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};

use super::instructions as ins;
use super::log::ParsedLog;
use super::prefix::{get_int, Parse};
use super::static_table::{self, StaticMatch};
use super::table::{entry_size, DynamicTable};
use super::{encode_insert_count, Error, Result};

/// The dynamic table size this encoder uses unless told otherwise.
pub const DEFAULT_MAX_TABLE_CAPACITY: u64 = 4096;

/// Field lines remembered to recognise repeats: inserting a line pays off from its second use.
const SEEN_MEMORY: usize = 512;

/// A name of at least this length, in no table yet, is inserted with its first value so that
/// later lines can reference it, whatever their values.
const MIN_NAME_TO_INDEX: usize = 8;

/// Cookie values shorter than this are guessable, so not indexed (RFC 9204 §7.1.3).
const MIN_INDEXED_COOKIE: usize = 20;

/// Names whose values repeat from request to request: indexed at first sight.
const REPEATING: &[&[u8]] = &[
    b":authority",
    b"user-agent",
    b"cookie",
    b"accept",
    b"accept-encoding",
    b"accept-language",
    b"content-type",
    b"origin",
    b"referer",
    b"cache-control",
    b"server",
    b"vary",
    b"alt-svc",
    b"strict-transport-security",
    b"access-control-allow-origin",
    b"sec-ch-ua",
    b"sec-ch-ua-mobile",
    b"sec-ch-ua-platform",
    b"sec-fetch-site",
    b"sec-fetch-mode",
    b"sec-fetch-dest",
    b"upgrade-insecure-requests",
    b"x-content-type-options",
];

/// Names whose values rarely repeat: never inserted (a literal with a name reference is as
/// short as an insertion, and the entry would only push useful ones out).
const UNIQUE: &[&[u8]] = &[
    b":path",
    b"content-length",
    b"etag",
    b"last-modified",
    b"if-modified-since",
    b"if-none-match",
    b"age",
    b"expires",
    b"content-range",
    b"range",
];

/// An unacknowledged field section.
struct Section {
    required: u64,
    /// Absolute indices of the dynamic entries it references, one per reference.
    refs: Vec<u64>,
}

/// How one field line is written.
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
    seen: HashSet<u64>,
    seen_order: VecDeque<u64>,
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
            seen: HashSet::new(),
            seen_order: VecDeque::new(),
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
            self.table
                .set_capacity(usize::try_from(capacity).unwrap_or(usize::MAX));
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
        let already_blocking = self
            .sections
            .get(&stream_id)
            .is_some_and(|s| s.iter().any(|sec| sec.required > self.known_received));
        let may_block = already_blocking || (self.blocking_streams() as u64) < self.max_blocked;
        let mut lines = Vec::new();
        let mut refs = Vec::new();
        for (name, value) in fields {
            let line = self.choose(name, value, may_block);
            if let Line::Dynamic(abs) | Line::DynamicName { abs, .. } = line {
                refs.push(abs);
                if let Some(e) = self.table.get_mut(abs) {
                    e.refs += 1;
                }
            }
            lines.push(line);
        }
        let required = refs.iter().map(|a| a + 1).max().unwrap_or(0);
        // Every insert precedes the section: Base is the insert count, all indices relative.
        let base = self.table.insert_count();
        let encoded = encode_insert_count(required, self.peer_max_capacity);
        ins::section_prefix(out, encoded, required, if required > 0 { base } else { 0 });
        for line in &lines {
            write_line(out, line, base);
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
        let never = is_sensitive(name, value);
        let usable = |abs: u64, enc: &Encoder| abs < enc.known_received || may_block;
        if !never && self.table.capacity() > 0 {
            let (exact, _) = self.table.find(name, value);
            if let Some(abs) = exact {
                if self.draining(abs) {
                    if let Some(new) = self.duplicate(abs) {
                        if may_block {
                            return Line::Dynamic(new);
                        }
                    }
                }
                if usable(abs, self) {
                    return Line::Dynamic(abs);
                }
            } else if self.worth_inserting(name, value, static_match.is_some()) {
                if let Some(new) = self.insert(name, value, static_match, may_block) {
                    if may_block {
                        return Line::Dynamic(new);
                    }
                }
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
            if usable(abs, self) {
                return Line::DynamicName { abs, value, never };
            }
        }
        Line::Literal { name, value, never }
    }

    /// Whether a line should go into the table: not too large, and likely to repeat, or the
    /// first of a long name no table has (later lines then reference the name).
    fn worth_inserting(&mut self, name: &[u8], value: &[u8], static_name: bool) -> bool {
        if entry_size(name, value) * 4 > self.table.capacity() * 3 {
            return false;
        }
        if !static_name
            && name.len() >= MIN_NAME_TO_INDEX
            && self.table.find(name, value).1.is_none()
        {
            return true;
        }
        if UNIQUE.contains(&name) {
            return false;
        }
        if REPEATING.contains(&name) {
            return true;
        }
        let mut h = DefaultHasher::new();
        (name, value).hash(&mut h);
        let key = h.finish();
        if self.seen.contains(&key) {
            return true;
        }
        if self.seen_order.len() >= SEEN_MEMORY {
            if let Some(old) = self.seen_order.pop_front() {
                self.seen.remove(&old);
            }
        }
        self.seen.insert(key);
        self.seen_order.push_back(key);
        false
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
        }
        before * 4 <= capacity
    }

    /// Whether an entry may be evicted: nothing unacknowledged references it. When the
    /// section may not block, an entry the decoder has not acknowledged yet was never usable:
    /// evicting it to insert another would only repeat that, so it stays.
    fn room_for(&self, size: usize, may_block: bool) -> bool {
        let known = self.known_received;
        self.table
            .can_insert(size, |abs, e| e.refs == 0 && (may_block || abs < known))
    }

    /// Inserts a line (with a name reference when there is one); returns its index.
    fn insert(
        &mut self,
        name: &[u8],
        value: &[u8],
        static_match: Option<StaticMatch>,
        may_block: bool,
    ) -> Option<u64> {
        if !self.room_for(entry_size(name, value), may_block) {
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
                    if self
                        .table
                        .can_insert(entry_size(name, value), |a, e| a != abs && e.refs == 0) =>
                {
                    ins::insert_with_name_ref(&mut self.out, false, new - 1 - abs, value, true);
                    self.reference_in_instruction(new, abs);
                }
                _ => ins::insert_with_literal_name(&mut self.out, name, value, true),
            },
        }
        self.table.insert(name.to_vec(), value.to_vec());
        Some(new)
    }

    /// Re-inserts a draining entry with Duplicate; returns the new index.
    fn duplicate(&mut self, abs: u64) -> Option<u64> {
        let (name, value) = {
            let e = self.table.get(abs)?;
            (e.name.clone(), e.value.clone())
        };
        let size = entry_size(&name, &value);
        if !self.table.can_insert(size, |a, e| a != abs && e.refs == 0) {
            return None;
        }
        let new = self.table.insert_count();
        ins::duplicate(&mut self.out, new - 1 - abs);
        self.reference_in_instruction(new, abs);
        self.table.insert(name, value);
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

/// Whether a field line is a secret that compression could leak (RFC 9204 §7.1).
fn is_sensitive(name: &[u8], value: &[u8]) -> bool {
    match name {
        b"authorization" | b"proxy-authorization" | b"set-cookie" => true,
        b"cookie" => value.len() < MIN_INDEXED_COOKIE,
        _ => false,
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
