//! The encoder's insertion policy: which field lines go into the dynamic table.
//!
//! An insertion pays only if the entry is referenced again before it is evicted, so the policy
//! predicts both from what the encoder has sent so far:
//!
//! - **Does the value repeat?** A (name, value) pair seen recently is inserted on its second
//!   sight. A pair seen for the first time is inserted only when its name's values have been
//!   repeating: per name, the share of recent lines whose pair had been seen before. Values
//!   unique by nature (debug tokens, request IDs, hashes, timestamps) never build that record
//!   and go out as literals; dates that repeat within a second do build it.
//! - **Would it survive until then?** The table is a FIFO: an entry is evicted once `capacity -
//!   size` bytes have been inserted after it. The bytes inserted between the last two sightings
//!   of a pair (or name) predict the bytes inserted before the next one: an entry that would
//!   have been evicted in that interval is not inserted.
//! - **Names alone.** A name outside the static table whose values do not repeat is inserted
//!   with an empty value, once it has been seen twice: later lines reference the name and send
//!   only the value.
//!
//! Memory is bounded and small: the history of pairs is a set-associative cache of
//! [`history_len`] slots (16 bytes each; a pair pushed out by others is forgotten) and the
//! record of names holds at most [`MAX_NAMES`]. The hash is fast and unkeyed; a collision only
//! makes the policy believe a line was seen before, which costs compression, never
//! correctness.

/// Names whose record is kept; lines with other names have no record.
pub const MAX_NAMES: usize = 128;

/// Slots of the name record: twice the names, so that probes stay short.
const NAME_SLOTS: usize = 2 * MAX_NAMES;

/// A name's record is halved once it counts this many lines, so that it follows changes.
const NAME_WINDOW: u16 = 32;

/// Lines of a name needed before its record is trusted for first-sight insertions.
const MIN_NAME_LINES: u16 = 2;

/// The share of a name's lines that must be repeats (in 1/256) before a value of that name is
/// inserted at its first sight.
const FIRST_SIGHT_SHARE: u32 = 96;

/// Lines of a name needed before its values are judged unique.
const MIN_UNIQUE_LINES: u16 = 8;

/// The share of repeats (in 1/256) below which a name's values are taken to be unique, and a
/// repeat a coincidence not worth an insertion.
const SECOND_SIGHT_SHARE: u32 = 32;

/// The share (in 1/256) needed at first sight when the line cannot reference its own
/// insertion.
const BLOCKED_SHARE: u32 = 128;

/// The shortest run of token characters taken for a token.
const TOKEN_RUN: usize = 8;

/// Switches between letters and digits that make a run a token.
const TOKEN_SWITCHES: usize = 2;

/// Pairs remembered for a table of `capacity` bytes (a power of two): enough to cover the
/// lines between two uses of an entry that survives in the table.
pub fn history_len(capacity: usize) -> usize {
    (capacity / 8).clamp(64, 2048).next_power_of_two()
}

/// The table as an insertion would find it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Room {
    /// The table's capacity.
    pub capacity: usize,
    /// Bytes free without evicting anything.
    pub free: usize,
    /// Whether this section may reference the new entry (it may block); if not, the line is
    /// also sent as a literal.
    pub referenced_now: bool,
}

/// What the policy knew about a line before it was sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sighting {
    /// Bytes inserted since the pair was last sent, if it was sent recently.
    pub pair_distance: Option<u64>,
    /// How many times the pair was sent before (0 if not recently).
    pub pair_sent: u32,
    /// Bytes inserted since a line with this name was last sent, if one was.
    pub name_distance: Option<u64>,
    /// Recent lines with this name (before this one).
    pub name_lines: u16,
    /// Of those, how many repeated a pair seen before them.
    pub name_repeats: u16,
}

/// One slot of the pair history.
#[derive(Clone, Copy, Debug, Default)]
struct PairSlot {
    /// The upper half of the pair's hash (the lower half chose the set; 0: empty).
    tag: u32,
    /// The insertion clock when it was last sent (wrapping).
    clock: u32,
    /// When it was last sent, in lines: the older of two slots is replaced.
    stamp: u32,
    /// How many times it was sent.
    sent: u32,
}

/// One slot of the name record.
#[derive(Clone, Copy, Debug, Default)]
struct NameRecord {
    /// The name's hash (0: empty).
    hash: u64,
    lines: u16,
    repeats: u16,
    /// The insertion clock when a line with the name was last sent (wrapping).
    last: u32,
}

/// The insertion policy's memory of what was sent.
#[derive(Default)]
pub struct Policy {
    /// Bytes inserted into the table so far (entry sizes), wrapping: the clock distances are
    /// measured in (a distance beyond 4 GB is never asked about: entries survive a table).
    clock: u32,
    /// Lines observed, wrapping.
    stamp: u32,
    /// Two-way set-associative: the pair with hash `h` lives in set `h & (sets - 1)`.
    pairs: Vec<[PairSlot; 2]>,
    /// Open addressing, linear probing; never more than [`MAX_NAMES`] used.
    names: Vec<NameRecord>,
    name_count: usize,
}

impl Policy {
    /// A policy for a table of `capacity` bytes (none for 0: it is never asked).
    pub fn new(capacity: usize) -> Policy {
        if capacity == 0 {
            return Policy::default();
        }
        Policy {
            pairs: vec![[PairSlot::default(); 2]; history_len(capacity) / 2],
            names: vec![NameRecord::default(); NAME_SLOTS],
            ..Policy::default()
        }
    }

    /// Records that a line is being sent and returns what was known of it before.
    pub fn observe(&mut self, name: &[u8], value: &[u8]) -> Sighting {
        if self.pairs.is_empty() {
            return Sighting::default();
        }
        // 0 marks an empty slot.
        let name_hash = hash_bytes(0, name) | 1;
        let pair_hash = hash_bytes(name_hash, value);
        let tag = (pair_hash >> 32) as u32 | 1;
        let clock = self.clock;
        self.stamp = self.stamp.wrapping_add(1);
        let mask = self.pairs.len() - 1;
        let set = &mut self.pairs[(pair_hash as usize) & mask];
        let (pair_distance, pair_sent) = match set.iter().position(|s| s.tag == tag) {
            Some(i) => {
                let d = clock.wrapping_sub(set[i].clock);
                let sent = set[i].sent;
                set[i].clock = clock;
                set[i].stamp = self.stamp;
                set[i].sent = sent.saturating_add(1);
                (Some(u64::from(d)), sent)
            }
            None => {
                let older = usize::from(set[1].stamp < set[0].stamp);
                set[older] = PairSlot {
                    tag,
                    clock,
                    stamp: self.stamp,
                    sent: 1,
                };
                (None, 0)
            }
        };
        let mut sighting = Sighting {
            pair_distance,
            pair_sent,
            ..Sighting::default()
        };
        if let Some(record) = self.name_record(name_hash) {
            if record.lines > 0 {
                sighting.name_distance = Some(u64::from(clock.wrapping_sub(record.last)));
            }
            sighting.name_lines = record.lines;
            sighting.name_repeats = record.repeats;
            if record.lines >= NAME_WINDOW {
                record.lines /= 2;
                record.repeats /= 2;
            }
            record.lines += 1;
            record.repeats += u16::from(pair_distance.is_some());
            record.last = clock;
        }
        sighting
    }

    /// The record of a name, made if there is room.
    fn name_record(&mut self, hash: u64) -> Option<&mut NameRecord> {
        let mask = self.names.len() - 1;
        let mut i = (hash as usize) & mask;
        loop {
            if self.names[i].hash == hash {
                return Some(&mut self.names[i]);
            }
            if self.names[i].hash == 0 {
                if self.name_count >= MAX_NAMES {
                    return None;
                }
                self.name_count += 1;
                self.names[i].hash = hash;
                return Some(&mut self.names[i]);
            }
            i = (i + 1) & mask;
        }
    }

    /// An entry of `size` bytes was inserted (or duplicated).
    pub fn inserted(&mut self, size: usize) {
        self.clock = self.clock.wrapping_add(size as u32);
    }

    /// Whether a line should be inserted with its value.
    pub fn insert_pair(&self, s: &Sighting, value: &[u8], size: usize, room: &Room) -> bool {
        // A large entry referenced at once is kept while in use (the encoder does not evict
        // it for smaller ones), whatever was inserted in between.
        let kept = room.referenced_now && size * 4 > room.capacity;
        let survives = |distance: u64| kept || distance + size as u64 <= room.capacity as u64;
        let trusted = s.name_lines >= MIN_NAME_LINES;
        let share =
            |min: u32| trusted && u32::from(s.name_repeats) * 256 >= u32::from(s.name_lines) * min;
        // When the section cannot reference the new entry (it may not block), it sends the
        // line as a literal too: the insertion pays only if the entry is used twice more,
        // which a value seen before promises, and at first sight only a name whose values
        // repeat at least half the time.
        let first_sight = if room.referenced_now {
            FIRST_SIGHT_SHARE
        } else {
            BLOCKED_SHARE
        };
        match s.pair_distance {
            // Among the values of a name that nearly never repeat, a repeat is a coincidence.
            Some(_) if s.name_lines >= MIN_UNIQUE_LINES && !share(SECOND_SIGHT_SHARE) => false,
            // A number or a date seen twice has had its burst (the same second, the same
            // size) unless its name's values repeat often enough to insert them at first
            // sight, or this one keeps coming back.
            Some(_) if s.pair_sent < 2 && !share(FIRST_SIGHT_SHARE) && repeats_by_chance(value) => {
                false
            }
            Some(distance) => survives(distance),
            // With no record of the name, an entry costs little while the table has room,
            // unless the value is of a kind that does not repeat (or the line is sent as a
            // literal too, and the entry would take much of a small table).
            None if !trusted => {
                size <= room.free
                    && (room.referenced_now || size * 8 <= room.capacity)
                    && !unique_by_nature(value)
            }
            None => share(first_sight) && s.name_distance.is_some_and(survives),
        }
    }

    /// Whether a name should be inserted alone (with an empty value) so that later lines
    /// reference it: it was sent before, recently enough for the entry to survive.
    pub fn insert_name(&self, s: &Sighting, size: usize, room: &Room) -> bool {
        s.name_distance
            .is_some_and(|d| d + size as u64 <= room.capacity as u64)
    }
}

/// Whether a value is of a kind that rarely repeats: a number, an HTTP date (RFC 9110
/// §5.6.7), or one that holds a token (a hash, an ID, a nonce: a run of at least
/// [`TOKEN_RUN`] letters, digits and `+/=_-` that switches between letters and digits at
/// least [`TOKEN_SWITCHES`] times, which words and version numbers do not).
pub fn unique_by_nature(value: &[u8]) -> bool {
    if repeats_by_chance(value) {
        return true;
    }
    let (mut run, mut switches, mut last_digit) = (0, 0, None);
    for &b in value {
        let token = b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-');
        if !token {
            (run, switches, last_digit) = (0, 0, None);
            continue;
        }
        run += 1;
        if b.is_ascii_alphanumeric() {
            let digit = b.is_ascii_digit();
            if last_digit.is_some_and(|d| d != digit) {
                switches += 1;
            }
            last_digit = Some(digit);
        }
        if run >= TOKEN_RUN && switches >= TOKEN_SWITCHES {
            return true;
        }
    }
    false
}

/// Whether a value unique by nature can still repeat by chance: a number or an HTTP date
/// (a token cannot).
pub fn repeats_by_chance(value: &[u8]) -> bool {
    let number = !value.is_empty() && value.iter().all(u8::is_ascii_digit);
    let date = value.len() == 29 && value.get(3) == Some(&b',') && value.ends_with(b" GMT");
    number || date
}

/// A fast 64-bit hash of `bytes`, eight at a time, continuing from `seed`.
pub fn hash_bytes(seed: u64, bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = seed ^ (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let word = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ word).wrapping_mul(K);
    }
    let mut last = [0u8; 8];
    let rest = chunks.remainder();
    last[..rest.len()].copy_from_slice(rest);
    h = (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(K);
    // Final avalanche (MurmurHash3's), so that the map's low and high bits both vary.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(capacity: usize, free: usize) -> Room {
        Room {
            capacity,
            free,
            referenced_now: true,
        }
    }

    #[test]
    fn pairs_are_inserted_on_their_second_sight_if_they_would_survive() {
        let mut p = Policy::new(4096);
        let first = p.observe(b"x-a", b"1");
        assert_eq!(first.pair_distance, None);
        assert!(
            !p.insert_pair(&first, b"1", 36, &room(4096, 0)),
            "first sight, no record"
        );
        p.inserted(1000);
        let second = p.observe(b"x-a", b"1");
        assert_eq!((second.pair_distance, second.pair_sent), (Some(1000), 1));
        assert!(
            !p.insert_pair(&second, b"1", 36, &room(4096, 0)),
            "a number's second sight"
        );
        let first = p.observe(b"x-b", b"v");
        assert!(!p.insert_pair(&first, b"v", 36, &room(4096, 0)));
        let second = p.observe(b"x-b", b"v");
        assert!(p.insert_pair(&second, b"v", 36, &room(4096, 0)));
        let third = p.observe(b"x-a", b"1");
        assert_eq!(third.pair_sent, 2);
        assert!(
            p.insert_pair(&third, b"1", 36, &room(4096, 0)),
            "it keeps coming back"
        );
        p.inserted(4080);
        let later = p.observe(b"x-b", b"v");
        assert!(
            !p.insert_pair(&later, b"v", 36, &room(4096, 0)),
            "would have been evicted"
        );
    }

    #[test]
    fn names_with_repeating_values_are_inserted_at_first_sight() {
        let mut p = Policy::new(4096);
        for v in [b"a", b"a", b"b", b"b", b"c", b"c"] {
            p.observe(b"date", v);
        }
        let s = p.observe(b"date", b"d");
        assert_eq!((s.name_lines, s.name_repeats), (6, 3));
        assert!(p.insert_pair(&s, b"x", 40, &room(4096, 0)));
        let mut p = Policy::new(4096);
        for i in 0..10u8 {
            p.observe(b"x-debug", &[i]);
        }
        let s = p.observe(b"x-debug", b"z");
        assert_eq!((s.name_lines, s.name_repeats), (10, 0));
        assert!(
            !p.insert_pair(&s, b"x", 40, &room(4096, 0)),
            "values never repeat"
        );
        assert!(p.insert_name(&s, 39, &room(4096, 0)), "but the name does");
    }

    #[test]
    fn memory_is_bounded() {
        let mut p = Policy::new(4096);
        for i in 0..10_000u32 {
            p.observe(&i.to_le_bytes(), &i.to_be_bytes());
        }
        assert_eq!(p.pairs.len() * 2, history_len(4096));
        assert_eq!(p.name_count, MAX_NAMES);
        assert_eq!(p.names.len(), NAME_SLOTS);
        // Beyond the record's room, a name has no record.
        assert_eq!(p.observe(b"new", b"1").name_lines, 0);
        assert_eq!(p.observe(b"new", b"1").name_lines, 0);
        // A pair sent every eight lines is rarely pushed out by the pairs sent once between
        // (only when two of them fall in its set).
        let mut p = Policy::new(4096);
        p.observe(b"keep", b"me");
        let mut forgotten = 0;
        for i in 1..=8000u32 {
            p.observe(b"n", &i.to_le_bytes());
            if i % 8 == 0 && p.observe(b"keep", b"me").pair_distance.is_none() {
                forgotten += 1;
            }
        }
        assert!(forgotten <= 10, "forgotten {forgotten} times in 1000");
        assert_eq!(Policy::new(0).observe(b"a", b"b"), Sighting::default());
    }

    #[test]
    fn values_unique_by_nature() {
        for v in [
            &b"1732483805"[..],
            b"Wed, 25 Nov 2026 09:14:03 GMT",
            b"\"3f2a9c1b0d4e5f60\"",
            b"f47ac10b-58cc-4372-a567-0e02b2c3d479",
            b"9ZjgQkjWMguFDkhGXMRLpes2mwPNMpzQ",
            b"script-src 'self' 'nonce-WLsuCS0x'",
            b"1.1 3f2a9c1b0d4e5f603f2a9c1b0d4e5f60.cloudfront.net (CloudFront)",
        ] {
            assert!(unique_by_nature(v), "{}", String::from_utf8_lossy(v));
        }
        for v in [
            &b""[..],
            b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0.0.0",
            b"max-age=31536000; includeSubDomains; preload",
            b"h3=\":443\"; ma=86400",
            b"text/html,application/xhtml+xml,application/xml;q=0.9",
            b"\"Google Chrome\";v=\"131\", \"Chromium\";v=\"131\"",
            b"_ga=GA1.1.123456789.1732400000",
            b"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
            b"text/html; charset=utf-8",
        ] {
            assert!(!unique_by_nature(v), "{}", String::from_utf8_lossy(v));
        }
    }

    #[test]
    fn the_hash_separates_names_from_values() {
        assert_ne!(hash_bytes(0, b"ab"), hash_bytes(0, b"ba"));
        assert_ne!(hash_bytes(0, b""), hash_bytes(0, b"\0"));
        assert_ne!(hash_bytes(0, b"12345678"), hash_bytes(0, b"123456789"));
        let mut p = Policy::new(4096);
        p.observe(b"ab", b"c");
        assert_eq!(p.observe(b"a", b"bc").pair_distance, None);
    }
}
