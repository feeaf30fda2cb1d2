//! The QPACK dynamic table (RFC 9204 §3.2): entries in insertion order, addressed by absolute
//! index, evicted oldest first to respect the capacity. The encoder and the decoder each keep
//! one; the encoder also counts, per entry, the unacknowledged references that forbid evicting
//! it (§2.1.1).

use std::collections::VecDeque;

/// What an entry costs beyond its name and value (RFC 9204 §3.2.1).
pub const ENTRY_OVERHEAD: usize = 32;

/// The size of an entry with this name and value (RFC 9204 §3.2.1).
pub fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + ENTRY_OVERHEAD
}

/// One entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The field name.
    pub name: Vec<u8>,
    /// The field value.
    pub value: Vec<u8>,
    /// Unacknowledged references (encoder side only): field sections and encoder instructions
    /// that the decoder may not have processed yet.
    pub refs: u32,
    /// When the entry was last inserted or referenced, in the encoder's count of field
    /// sections (encoder side only; wrapping).
    pub last_use: u32,
}

impl Entry {
    /// The entry's size (RFC 9204 §3.2.1).
    pub fn size(&self) -> usize {
        entry_size(&self.name, &self.value)
    }
}

/// A dynamic table.
#[derive(Debug, Default)]
pub struct DynamicTable {
    entries: VecDeque<Entry>,
    /// The absolute index of the oldest entry: how many were evicted.
    dropped: u64,
    size: usize,
    capacity: usize,
}

impl DynamicTable {
    /// An empty table of capacity 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many entries were ever inserted (the absolute index the next one gets).
    pub fn insert_count(&self) -> u64 {
        self.dropped + self.entries.len() as u64
    }

    /// The absolute index of the oldest entry still in the table.
    pub fn oldest(&self) -> u64 {
        self.dropped
    }

    /// The sum of the entries' sizes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The current capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The entry of absolute index `abs`, if it is in the table.
    pub fn get(&self, abs: u64) -> Option<&Entry> {
        let i = abs.checked_sub(self.dropped)?;
        self.entries.get(usize::try_from(i).ok()?)
    }

    /// The entry of absolute index `abs`, mutably.
    pub fn get_mut(&mut self, abs: u64) -> Option<&mut Entry> {
        let i = abs.checked_sub(self.dropped)?;
        self.entries.get_mut(usize::try_from(i).ok()?)
    }

    /// Sets the capacity, evicting the oldest entries that no longer fit.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.evict_to(capacity);
    }

    /// Evicts the oldest entries until the table's size is at most `target`.
    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            let Some(e) = self.entries.pop_front() else {
                break;
            };
            self.size -= e.size();
            self.dropped += 1;
        }
    }

    /// Whether an entry of `size` fits once entries that `evictable` allows are evicted:
    /// the oldest ones, in order, stopping at the first that may not go.
    pub fn can_insert(&self, size: usize, evictable: impl Fn(u64, &Entry) -> bool) -> bool {
        if size > self.capacity {
            return false;
        }
        let mut free = self.capacity - self.size;
        for (i, e) in self.entries.iter().enumerate() {
            if free >= size {
                return true;
            }
            if !evictable(self.dropped + i as u64, e) {
                return false;
            }
            free += e.size();
        }
        free >= size
    }

    /// Inserts an entry, evicting the oldest ones as needed. Returns false, inserting nothing,
    /// if the entry is larger than the capacity.
    pub fn insert(&mut self, name: Vec<u8>, value: Vec<u8>) -> bool {
        let size = entry_size(&name, &value);
        if size > self.capacity {
            return false;
        }
        self.evict_to(self.capacity - size);
        self.size += size;
        self.entries.push_back(Entry {
            name,
            value,
            refs: 0,
            last_use: 0,
        });
        true
    }

    /// The newest entry matching name and value, and the newest matching the name only.
    pub fn find(&self, name: &[u8], value: &[u8]) -> (Option<u64>, Option<u64>) {
        let mut name_match = None;
        for (i, e) in self.entries.iter().enumerate().rev() {
            if e.name == name {
                let abs = self.dropped + i as u64;
                if e.value == value {
                    return (Some(abs), name_match.or(Some(abs)));
                }
                name_match.get_or_insert(abs);
            }
        }
        (None, name_match)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insertion_eviction_and_absolute_indices() {
        let mut t = DynamicTable::new();
        assert!(!t.insert(b"a".to_vec(), b"b".to_vec()), "capacity 0");
        t.set_capacity(100);
        assert!(t.insert(b"aa".to_vec(), b"bb".to_vec())); // 36
        assert!(t.insert(b"cc".to_vec(), b"dd".to_vec())); // 72
        assert_eq!((t.insert_count(), t.size()), (2, 72));
        assert!(t.can_insert(64, |_, _| true));
        assert!(!t.can_insert(64, |abs, _| abs != 0));
        assert!(t.insert(b"ee".to_vec(), b"ff".to_vec())); // evicts entry 0
        assert_eq!((t.oldest(), t.insert_count(), t.size()), (1, 3, 72));
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(2).unwrap().name, b"ee");
        assert_eq!(t.find(b"cc", b"dd"), (Some(1), Some(1)));
        assert_eq!(t.find(b"cc", b"zz"), (None, Some(1)));
        assert!(!t.insert(vec![0; 70], vec![]), "larger than the capacity");
        t.set_capacity(40);
        assert_eq!((t.oldest(), t.size()), (2, 36));
        t.set_capacity(0);
        assert_eq!((t.oldest(), t.insert_count(), t.size()), (3, 3, 0));
    }
}
