//! Hash compaction: a visited set of 32 bits a state, for spaces whose exact set does not fit.
//!
//! # The table
//!
//! One table of 2^b 32-bit slots, allocated once at the start (its pages are faulted in as
//! they are first touched). A fingerprint's top b bits pick its first slot, and its low 32 bits
//! are what the slot keeps; a taken slot sends it to the next one (linear probing). Zero marks
//! an empty slot, so a low half of zero is kept as one. Nothing grows: the search gives up when
//! [`MAX_LOAD_PERCENT`] of the slots are taken, where probes start to get long.
//!
//! # What it costs in certainty
//!
//! The exact set ([`Visited`](super::visited::Visited)) keeps whole fingerprints at 10.7 to
//! 13.3 bytes a state; this keeps 4 bytes in a slot, so a table filled to the 90% where the
//! search stops costs 4.4 bytes a state (a table sized for the space costs what it leaves
//! empty, too). The price: a slot is compared on its low 32 bits alone, so a new
//! state whose probe passes a slot with the same low bits is taken for seen and not explored
//! (its successors usually are, from other states). Each taken slot a new state's probe
//! passes does that with a chance of 2⁻³² (fingerprints are uniform), so the table counts the
//! taken slots the probes of new states passed, and their number over 2³² is the expected
//! number of states missed ([`Compaction::expected_missed`](super::Compaction::expected_missed)):
//! about one at three billion states. A state seen before risks nothing (a slot of another
//! state with its low bits makes it seen, which it is), so its look-up is not counted; nor is
//! a missed state's own, which is as rare as what is counted. (The exact set is not certain
//! either: two states can share a 64-bit fingerprint, about n² / 2⁶⁵ for n states.)
//! This is Wolper and Leroy's hash compaction, as SPIN offers it; SPIN's bitstate hashing,
//! with one bit a state, misses far more for the same memory.
//!
//! # Shared by threads
//!
//! The threads of a parallel search ([`parallel`](super::parallel)) insert into one table
//! without a lock: a thread claims an empty slot by a compare-and-swap from zero, and one that
//! loses the race reads what the winner wrote there and goes on probing from it. Slots are
//! only ever filled, never emptied or moved, so a probe never misses a value written before it
//! began. Each thread counts what it added and compared on its own and adds that to the
//! table's counts now and then ([`SharedSeen::settle`]).

use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::visited::{Seen, SharedSeen, Tally};

/// The share of slots taken at which a search with this table gives up (linear probing's
/// probes of a new state average about 50 slots at 90%).
pub const MAX_LOAD_PERCENT: usize = 90;

/// The sizes of table a check may ask for, in MiB (1 MiB to 64 GiB).
pub const COMPACT_MIB: RangeInclusive<u32> = 1..=65_536;

/// The visited set as one table of 32-bit slots (see the module docs).
#[derive(Debug)]
pub(super) struct Compacted {
    slots: Vec<AtomicU32>,
    /// A fingerprint shifted right by this many bits is its first slot.
    shift: u32,
    len: AtomicUsize,
    /// Taken slots passed by the probes that ended in an insert.
    compared: AtomicU64,
}

impl Compacted {
    /// A table of the largest power of two of slots that fits in `mib` MiB (at least one
    /// MiB).
    pub(super) fn new(mib: u32) -> Compacted {
        let slots = ((mib.max(1) as usize) << 20) / std::mem::size_of::<u32>();
        let slots = 1usize << slots.ilog2();
        let table = zeroed_atomics(slots);
        huge_pages(&table);
        Compacted {
            slots: table,
            shift: 64 - slots.trailing_zeros(),
            len: AtomicUsize::new(0),
            compared: AtomicU64::new(0),
        }
    }

    /// How many slots the table has.
    pub(super) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// How many taken slots the probes of new states passed so far.
    pub(super) fn compared(&self) -> u64 {
        self.compared.load(Ordering::Relaxed)
    }

    fn first_slot(&self, fingerprint: u64) -> usize {
        // `shift` is 64 only for a table of one slot, which `new` never makes.
        (fingerprint >> self.shift) as usize
    }

    /// Probes for `fingerprint`'s low half from its first slot, filling the first empty slot
    /// with `fill` (which says whether it did, or what another thread put there first); the
    /// number of taken slots passed if it filled one, none if a slot held the low half.
    ///
    /// # Panics
    ///
    /// If every slot is taken: the search gives up long before ([`Compacted::full`]).
    fn probe(
        &self,
        fingerprint: u64,
        fill: impl Fn(&AtomicU32, u32) -> Result<(), u32>,
    ) -> Option<u64> {
        let kept = (fingerprint as u32).max(1);
        let mut slot = self.first_slot(fingerprint);
        for passed in 0..self.slots.len() as u64 {
            let mut held = self.slots[slot].load(Ordering::Relaxed);
            if held == 0 {
                match fill(&self.slots[slot], kept) {
                    Ok(()) => return Some(passed),
                    Err(filled) => held = filled,
                }
            }
            if held == kept {
                return None;
            }
            slot = (slot + 1) & (self.slots.len() - 1);
        }
        panic!("a compacted visited set was filled to its last slot: the search must stop first");
    }
}

/// `len` atomic words of zero, allocated zeroed (as `vec![0; len]` is): the kernel hands out
/// zeroed pages as they are first touched, where making each atomic would write the whole
/// table at the start.
fn zeroed_atomics(len: usize) -> Vec<AtomicU32> {
    let zeroed = std::mem::ManuallyDrop::new(vec![0u32; len]);
    let (pointer, len, capacity) = (zeroed.as_ptr(), zeroed.len(), zeroed.capacity());
    // SAFETY: `AtomicU32` has the size, alignment and bit validity of `u32`, so the allocation
    // of `len` zeroed `u32`s (given up by `zeroed`, which is never dropped) is one of `len`
    // zeroed `AtomicU32`s, with the same layout to free it by.
    unsafe { Vec::from_raw_parts(pointer.cast_mut().cast::<AtomicU32>(), len, capacity) }
}

impl Seen for Compacted {
    /// How many fingerprints are in the set.
    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether [`MAX_LOAD_PERCENT`] of the slots are taken: a search gives up here.
    fn full(&self) -> bool {
        self.len() * 100 >= self.slots.len() * MAX_LOAD_PERCENT
    }

    /// Asks the processor to fetch `fingerprint`'s first slot, without waiting for it (see
    /// [`Visited::prefetch`](super::visited::Visited::prefetch)).
    fn prefetch(&mut self, fingerprint: u64) {
        self.prefetch_shared(fingerprint);
    }

    /// Adds `fingerprint`; false if a slot on its probe holds its low 32 bits already.
    fn insert(&mut self, fingerprint: u64) -> bool {
        // One thread: a plain store fills the slot.
        let fill = |slot: &AtomicU32, kept| {
            slot.store(kept, Ordering::Relaxed);
            Ok(())
        };
        let Some(passed) = self.probe(fingerprint, fill) else {
            return false;
        };
        *self.len.get_mut() += 1;
        *self.compared.get_mut() += passed;
        true
    }
}

impl SharedSeen for Compacted {
    fn prefetch_shared(&self, fingerprint: u64) {
        super::visited::prefetch(&self.slots[self.first_slot(fingerprint)]);
    }

    /// [`Seen::insert`], claiming the empty slot by a compare-and-swap (see the module docs).
    fn insert_shared(&self, fingerprint: u64, tally: &mut Tally) -> bool {
        let fill = |slot: &AtomicU32, kept| {
            (slot.compare_exchange(0, kept, Ordering::Relaxed, Ordering::Relaxed)).map(|_| ())
        };
        let Some(passed) = self.probe(fingerprint, fill) else {
            return false;
        };
        tally.added += 1;
        tally.compared += passed;
        true
    }

    fn settle(&self, tally: &mut Tally) {
        let Tally { added, compared } = std::mem::take(tally);
        self.len.fetch_add(added, Ordering::Relaxed);
        self.compared.fetch_add(compared, Ordering::Relaxed);
    }
}

/// Asks Linux to back `table` with 2 MiB pages where it can, since a look-up lands on a random
/// slot and 4 KiB pages make nearly every one miss the processor's page cache (the TLB). On
/// this machine it measured no faster (a 16 GiB table ran at about 295,000 states a second
/// over its first 22 million states either way: zeroing the pages on first touch dominates);
/// it is kept because it costs nothing.
fn huge_pages(table: &[AtomicU32]) {
    #[cfg(target_os = "linux")]
    // SAFETY: advice only: it changes how the kernel backs the pages of a live allocation we
    // own, never their contents; a refusal (an error code) is ignored.
    unsafe {
        libc::madvise(
            table.as_ptr() as *mut libc::c_void,
            std::mem::size_of_val(table),
            libc::MADV_HUGEPAGE,
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = table;
}

/// The expected number of new states taken for seen, when their probes passed `compared`
/// taken slots of other states: each is a 2⁻³² chance.
pub(super) fn expected_missed(compared: u64) -> f64 {
    compared as f64 / 2f64.powi(32)
}

#[cfg(test)]
mod tests {
    use super::{expected_missed, Compacted, Seen, MAX_LOAD_PERCENT};

    /// A well-spread fingerprint for `i` (splitmix64's finalizer).
    fn spread(i: u64) -> u64 {
        let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn a_table_is_the_largest_power_of_two_of_slots_that_fits() {
        assert_eq!(Compacted::new(1).slots(), 1 << 18);
        assert_eq!(Compacted::new(3).slots(), 1 << 19);
        assert_eq!(Compacted::new(0).slots(), 1 << 18, "at least one MiB");
    }

    #[test]
    fn a_fingerprint_is_new_once_until_the_table_is_full() {
        let mut table = Compacted::new(1);
        let slots = table.slots();
        let mut added = 0;
        while !table.full() {
            let f = spread(added as u64);
            table.prefetch(f);
            assert!(table.insert(f), "{f:#x} is new");
            added += 1;
        }
        assert_eq!(added, (slots * MAX_LOAD_PERCENT).div_ceil(100));
        assert_eq!(table.len(), added);
        for i in 0..added as u64 {
            assert!(!table.insert(spread(i)), "{i} was seen");
        }
        assert_eq!(table.len(), added);
        // A new state's probe passes 4.5 taken slots on average while the table fills to 90%
        // (linear probing's ½(1 + 1/(1 - load)²) slots, the last one free); looking up what is
        // there adds none.
        let passed = table.compared() as f64 / added as f64;
        assert!((3.0..6.0).contains(&passed), "{passed}");
        assert!(expected_missed(table.compared()) < 1e-2);
    }

    #[test]
    fn only_the_first_slot_and_the_low_half_tell_fingerprints_apart() {
        let mut table = Compacted::new(1);
        let bits = table.slots().trailing_zeros();
        let f = 0x1234_5678_9abc_def0u64;
        assert!(table.insert(f));
        // The middle bits are not kept: this is the miss the comparisons count.
        let middle = 1u64 << 40;
        assert!(
            64 - bits > 40,
            "bit 40 is above the low half and below the slot bits"
        );
        assert!(!table.insert(f ^ middle), "taken for seen");
        // Another low half, or another first slot, is another state.
        assert!(table.insert(f ^ 1));
        assert!(table.insert(f ^ 1 << 63));
        // A low half of zero is kept as one.
        assert!(table.insert(0));
        assert!(!table.insert(1), "zero is kept as one");
        assert_eq!(table.len(), 4);
    }

    #[test]
    fn the_expected_misses_are_the_comparisons_over_two_to_the_32() {
        assert_eq!(expected_missed(0), 0.0);
        assert_eq!(expected_missed(1 << 32), 1.0);
        assert_eq!(expected_missed(3 << 31), 1.5);
    }
}
