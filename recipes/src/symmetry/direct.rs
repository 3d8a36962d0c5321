//! A direct-mapped cache: each 64-bit key has one slot, and a new key evicts the old one there.
//!
//! It starts at [`FIRST_SLOTS`] slots and doubles whenever more than half of them are taken,
//! up to the most it is given; from then on it only evicts. Doubling moves each entry to one
//! of two slots that only it can have (the slot is the key's bits 32 and up, modulo the number
//! of slots), so growing loses nothing. A small check keeps a small table: the master's
//! standard check makes 267 recordings, and a table of 65,536 from the start cost it a tenth of
//! its 4 ms, writing a MiB and faulting in its pages.

/// The slots a cache starts with.
pub const FIRST_SLOTS: usize = 1 << 10;

/// Values under 64-bit keys, at most `max_slots` of them (see the module docs).
#[derive(Debug)]
pub struct DirectMapped<T> {
    slots: Vec<Option<(u64, T)>>,
    taken: usize,
    max_slots: usize,
}

impl<T> DirectMapped<T> {
    /// An empty cache of at most `max_slots` slots (a power of two), which allocates nothing
    /// until its first insert.
    pub const fn new(max_slots: usize) -> DirectMapped<T> {
        assert!(max_slots.is_power_of_two(), "a power of two");
        DirectMapped {
            slots: Vec::new(),
            taken: 0,
            max_slots,
        }
    }

    /// The value kept under `key`, if it was not evicted.
    pub fn get(&self, key: u64) -> Option<&T> {
        if self.slots.is_empty() {
            return None;
        }
        match &self.slots[Self::slot(key, self.slots.len())] {
            Some((kept, value)) if *kept == key => Some(value),
            _ => None,
        }
    }

    /// Keeps `value` under `key`, in the place of whatever was in its slot.
    pub fn insert(&mut self, key: u64, value: T) {
        let full = self.slots.len() >= self.max_slots;
        if self.slots.is_empty() || (!full && self.taken * 2 >= self.slots.len()) {
            self.grow();
        }
        let slot = Self::slot(key, self.slots.len());
        if self.slots[slot].replace((key, value)).is_none() {
            self.taken += 1;
        }
    }

    /// How many slots the cache has now.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    fn slot(key: u64, slots: usize) -> usize {
        (key >> 32) as usize & (slots - 1)
    }

    /// Doubles the slots (or makes the first ones), moving each entry to its new slot.
    fn grow(&mut self) {
        let slots = (self.slots.len() * 2).clamp(FIRST_SLOTS.min(self.max_slots), self.max_slots);
        let mut grown: Vec<Option<(u64, T)>> = Vec::with_capacity(slots);
        grown.resize_with(slots, || None);
        for (key, value) in self.slots.drain(..).flatten() {
            grown[Self::slot(key, slots)] = Some((key, value));
        }
        self.slots = grown;
    }
}

#[cfg(test)]
mod tests {
    use super::{DirectMapped, FIRST_SLOTS};

    /// Keys whose slot bits count up: no two share a slot until the table is full.
    fn key(i: u64) -> u64 {
        i << 32 | 0xabc
    }

    #[test]
    fn it_grows_without_losing_entries_until_its_most_slots_then_evicts() {
        let mut cache = DirectMapped::new(4 * FIRST_SLOTS);
        assert_eq!(cache.get(key(0)), None);
        for i in 0..2 * FIRST_SLOTS as u64 {
            cache.insert(key(i), i);
        }
        assert_eq!(
            cache.slots(),
            4 * FIRST_SLOTS,
            "doubled while over half full"
        );
        for i in 0..2 * FIRST_SLOTS as u64 {
            assert_eq!(cache.get(key(i)), Some(&i), "kept through growing");
        }
        // Full size: a key evicts the one whose slot it shares, and only that one.
        let late = key(4 * FIRST_SLOTS as u64 + 5);
        cache.insert(late, 7);
        assert_eq!(cache.slots(), 4 * FIRST_SLOTS, "no more than its most");
        assert_eq!(cache.get(late), Some(&7));
        assert_eq!(cache.get(key(5)), None, "evicted");
        assert_eq!(cache.get(key(6)), Some(&6));
        // A key in a taken slot with other low bits is not the kept one.
        assert_eq!(cache.get(key(6) ^ 1), None);
    }
}
