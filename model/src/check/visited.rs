//! The set of states a depth-first search has seen, as 64-bit fingerprints.
//!
//! Open addressing with linear probing: a fingerprint's first slot is picked by a
//! multiplicative hash of it, scaled to the table's length, and a taken slot sends it to the
//! next one. Neighbouring slots share a cache line, so a probe that misses its first slot
//! usually costs no second miss. A table grows by a quarter when three quarters of its slots
//! are taken: its load stays between 60% and 75%, so a probe of a new fingerprint (every state
//! a search generates for the first time) ends after a few slots, and a state costs 10.7 to
//! 13.3 bytes.
//!
//! The set is [`SHARDS`] such tables, picked by a fingerprint's top bits, each growing on its
//! own: growing copies one table while the others stay, so it needs a sixty-fourth more memory
//! at a time, not twice the whole set (at a billion states, the difference between fitting in
//! this machine's 23 GiB and not). Each table starts small, so that a check of a few thousand
//! states does not fault in pages it hardly uses. A search of one thread owns the set and
//! takes no lock; the threads of a parallel search ([`parallel`](super::parallel)) share it,
//! each table behind its own lock ([`SharedSeen`]), so two threads wait for each other only
//! when they insert into the same table at the same moment.
//!
//! A fingerprint is a state's hash, so two states could share one and the second would be
//! taken for seen: the chance is about n² / 2⁶⁵ for n states (under one in a million for the
//! standard checks' 11 million, about 3% at a billion). stateright's own searches take the same
//! risk. Zero marks an empty slot, so a fingerprint of zero is stored as one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// How many tables a set has (a power of two): its fingerprints' top bits pick one.
pub(super) const SHARDS: usize = 64;

/// The slots a table starts with.
const FIRST_SLOTS: usize = 32;

/// Knuth's multiplicative constant (2⁶⁴ divided by the golden ratio): a fingerprint times it,
/// scaled to a table's length, picks its first slot.
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

/// Fingerprints seen, with their count.
#[derive(Debug)]
pub(super) struct Visited {
    tables: Vec<Mutex<Table>>,
    len: AtomicUsize,
}

/// One shard: each slot holds a fingerprint or zero (empty).
#[derive(Debug)]
struct Table {
    slots: Vec<u64>,
    taken: usize,
}

impl Visited {
    /// An empty set.
    pub(super) fn new() -> Visited {
        let table = || {
            Mutex::new(Table {
                slots: vec![0; FIRST_SLOTS],
                taken: 0,
            })
        };
        Visited {
            tables: (0..SHARDS).map(|_| table()).collect(),
            len: AtomicUsize::new(0),
        }
    }
}

impl Table {
    /// Adds `fingerprint` (not zero), growing first if it must; false if it was there.
    fn insert(&mut self, fingerprint: u64) -> bool {
        if (self.taken + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let new = place(&mut self.slots, fingerprint);
        self.taken += usize::from(new);
        new
    }
}

/// The lock of a table, which no thread can have left broken: a thread that panics ends the
/// whole search.
fn locked(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    table
        .lock()
        .expect("a search thread panicked while it inserted into the visited set")
}

impl Seen for Visited {
    /// How many fingerprints are in the set.
    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Asks the processor to fetch the cache line where `fingerprint`'s search will start,
    /// without waiting for it: a search hints every successor of a state before it inserts
    /// the first, so that their cache misses overlap (each is a random place in a set of
    /// hundreds of megabytes). Only a hint: a table that grows in between is not wrong, only
    /// slower.
    fn prefetch(&mut self, fingerprint: u64) {
        let fingerprint = fingerprint.max(1);
        let table = self.tables[shard(fingerprint)]
            .get_mut()
            .expect("one thread owns the set");
        prefetch(&table.slots[first_slot(fingerprint, table.slots.len())]);
    }

    /// Adds `fingerprint`; false if it was there already.
    fn insert(&mut self, fingerprint: u64) -> bool {
        let fingerprint = fingerprint.max(1);
        let table = self.tables[shard(fingerprint)]
            .get_mut()
            .expect("one thread owns the set");
        let new = table.insert(fingerprint);
        *self.len.get_mut() += usize::from(new);
        new
    }

    /// Never: the set grows as it must.
    fn full(&self) -> bool {
        false
    }
}

/// Asks the processor to fetch the cache line of `slot`, without waiting for it.
pub(super) fn prefetch<T>(slot: &T) {
    let slot: *const T = slot;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault; `slot` points into a
    // table in any case.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(slot.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = slot;
}

/// What a depth-first search asks of its set of fingerprints seen: the exact [`Visited`], or
/// the 32-bit [`Compacted`](super::compact::Compacted) one.
pub(super) trait Seen {
    /// Hints `fingerprint`'s first slot to the processor.
    fn prefetch(&mut self, fingerprint: u64);
    /// Adds `fingerprint`; false if it was there (or, compacted, taken to be).
    fn insert(&mut self, fingerprint: u64) -> bool;
    /// How many fingerprints the set holds.
    fn len(&self) -> usize;
    /// Whether the search must stop because the set can take no more.
    fn full(&self) -> bool;
}

impl SharedSeen for Visited {
    /// The hint of [`Seen::prefetch`], unless another thread holds the table's lock.
    fn prefetch_shared(&self, fingerprint: u64) {
        let fingerprint = fingerprint.max(1);
        if let Ok(table) = self.tables[shard(fingerprint)].try_lock() {
            prefetch(&table.slots[first_slot(fingerprint, table.slots.len())]);
        }
    }

    fn insert_shared(&self, fingerprint: u64, tally: &mut Tally) -> bool {
        let fingerprint = fingerprint.max(1);
        let new = locked(&self.tables[shard(fingerprint)]).insert(fingerprint);
        tally.added += usize::from(new);
        new
    }

    fn settle(&self, tally: &mut Tally) {
        self.len
            .fetch_add(std::mem::take(&mut tally.added), Ordering::Relaxed);
    }
}

impl Table {
    /// Grows the table by a quarter and places every fingerprint again.
    fn grow(&mut self) {
        let mut slots = vec![0; self.slots.len() + self.slots.len() / 4];
        for &fingerprint in self.slots.iter().filter(|&&f| f != 0) {
            place(&mut slots, fingerprint);
        }
        self.slots = slots;
    }
}

/// A visited set that the threads of a parallel search insert into at once, each keeping its
/// own tally of what it added, which it hands to the set now and then ([`SharedSeen::settle`]):
/// a count that every insert of every thread updated would bounce one cache line between them.
pub(super) trait SharedSeen: Seen + Sync {
    /// Hints `fingerprint`'s first slot to the processor, if it can without waiting.
    fn prefetch_shared(&self, fingerprint: u64);
    /// Adds `fingerprint`, noting in `tally` what that changed; false if it was there (or,
    /// compacted, taken to be). Of threads that insert one fingerprint at once, one is told
    /// it is new.
    fn insert_shared(&self, fingerprint: u64, tally: &mut Tally) -> bool;
    /// Adds `tally` to the set's counts ([`Seen::len`], [`Seen::full`]) and empties it.
    fn settle(&self, tally: &mut Tally);
}

/// What one thread's inserts added to a shared set since it last settled them.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Fingerprints added.
    pub added: usize,
    /// Taken slots the probes of those passed (compacted sets only).
    pub compared: u64,
}

/// The table that holds `fingerprint`: its top bits pick one.
fn shard(fingerprint: u64) -> usize {
    (fingerprint >> (64 - SHARDS.trailing_zeros())) as usize
}

/// The slot of a table of `len` slots where the search for `fingerprint` starts.
fn first_slot(fingerprint: u64, len: usize) -> usize {
    let spread = u128::from(fingerprint.wrapping_mul(SPREAD));
    ((spread * len as u128) >> 64) as usize
}

/// Puts `fingerprint` (not zero) in the first free slot from its own, unless it is there;
/// true if it was not.
fn place(slots: &mut [u64], fingerprint: u64) -> bool {
    let mut slot = first_slot(fingerprint, slots.len());
    loop {
        match slots[slot] {
            0 => {
                slots[slot] = fingerprint;
                return true;
            }
            taken if taken == fingerprint => return false,
            _ => slot = if slot + 1 == slots.len() { 0 } else { slot + 1 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Seen, SharedSeen, Tally, Visited, SHARDS};

    #[test]
    fn a_fingerprint_is_new_once_through_every_growth() {
        let mut visited = Visited::new();
        // Fingerprints that differ only in their low bits (one shard), in their top bits (every
        // shard), and zero, which is stored as one.
        let low: Vec<u64> = (0..20_000u64).map(|i| i << 3).collect();
        let high: Vec<u64> = (0..20_000u64)
            .map(|i| i.rotate_right(7) | 1 << 40)
            .collect();
        for &f in low.iter().chain(&high) {
            // A hint first, as the search gives one: it must not disturb the insert.
            visited.prefetch(f);
            assert!(visited.insert(f), "{f} is new");
        }
        assert_eq!(visited.len(), 40_000);
        for &f in low.iter().chain(&high) {
            assert!(!visited.insert(f), "{f} was seen");
        }
        assert!(!visited.insert(1), "zero is stored as one");
        assert!(visited.insert(u64::MAX));
        assert_eq!(visited.len(), 40_001);
        let tables: Vec<_> = visited.tables.iter().map(|t| super::locked(t)).collect();
        for table in &tables {
            assert!(table.slots.len() * 3 >= table.taken * 4, "at most 3/4 full");
        }
        let taken: usize = tables.iter().map(|table| table.taken).sum();
        assert_eq!(taken, visited.len());
        // Low bits alone fill one table; at most 75% full, at least 60% once grown.
        let full = tables.iter().max_by_key(|t| t.taken).expect("tables");
        assert!(
            full.taken * 100 >= full.slots.len() * 60,
            "{}",
            full.slots.len()
        );
        assert_eq!(tables.len(), SHARDS);
    }

    #[test]
    fn threads_that_insert_at_once_are_each_told_of_a_new_fingerprint_once() {
        let visited = Visited::new();
        // Two threads insert the same 50,000 fingerprints, in opposite orders, and settle
        // their tallies now and then, as the search's threads do.
        let fingerprints: Vec<u64> = (0..50_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9))
            .collect();
        let new_to = |reversed: bool| {
            let mut tally = Tally::default();
            let mut new = Vec::new();
            let order: Vec<u64> = match reversed {
                false => fingerprints.clone(),
                true => fingerprints.iter().rev().copied().collect(),
            };
            for (index, &f) in order.iter().enumerate() {
                if visited.insert_shared(f, &mut tally) {
                    new.push(f);
                }
                if index % 1000 == 0 {
                    visited.settle(&mut tally);
                }
            }
            visited.settle(&mut tally);
            new
        };
        let (first, second) = std::thread::scope(|scope| {
            let first = scope.spawn(|| new_to(false));
            let second = scope.spawn(|| new_to(true));
            (first.join().expect("first"), second.join().expect("second"))
        });
        let mut told: Vec<u64> = first.into_iter().chain(second).collect();
        told.sort_unstable();
        let mut expected = fingerprints.clone();
        expected.sort_unstable();
        assert_eq!(told, expected, "each fingerprint new to exactly one thread");
        assert_eq!(visited.len(), 50_000);
    }
}
