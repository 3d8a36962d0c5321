//! The set of states a depth-first search has seen, as 64-bit fingerprints.
//!
//! An open-addressing table of `u64`s with linear probing: a fingerprint's slot is picked by a
//! multiplicative hash of it, and a taken slot sends it to the next one. Neighbouring slots
//! share a cache line, so a probe that misses its first slot usually costs no second miss.
//! The table doubles when three quarters of its slots are taken, so that a probe of a new
//! fingerprint (every state a search generates for the first time) ends after a few slots; it
//! holds 10.7 to 21 bytes per state, depending on where it is between two doublings. It starts
//! small (a search starts it at 2,048 slots), so that a check of a few thousand states does not
//! fault in a MiB of pages it hardly uses. One thread owns it: no locks, no shards.
//!
//! A fingerprint is a state's hash, so two states could share one and the second would be
//! taken for seen: the chance is about n² / 2⁶⁵ for n states (under one in a million for the
//! standard checks' 11 million, about 3% at a billion). stateright's own searches take the same
//! risk. Zero marks an empty slot, so a fingerprint of zero is stored as one.

/// Fingerprints seen, with their count.
#[derive(Debug)]
pub(super) struct Visited {
    /// Each slot holds a fingerprint or zero (empty); the length is a power of two.
    slots: Vec<u64>,
    /// How many slots are taken.
    len: usize,
}

/// Knuth's multiplicative constant (2⁶⁴ divided by the golden ratio): a fingerprint's top bits
/// after the multiplication pick its slot.
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

impl Visited {
    /// An empty set with room for about `expected` fingerprints before it first grows.
    pub(super) fn with_capacity(expected: usize) -> Visited {
        let slots = (expected.max(16) * 4 / 3).next_power_of_two();
        Visited {
            slots: vec![0; slots],
            len: 0,
        }
    }

    /// How many fingerprints are in the set.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Adds `fingerprint`; false if it was there already.
    pub(super) fn insert(&mut self, fingerprint: u64) -> bool {
        let fingerprint = fingerprint.max(1);
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        if Self::place(&mut self.slots, fingerprint) {
            self.len += 1;
            true
        } else {
            false
        }
    }

    /// Puts `fingerprint` (not zero) in the first free slot from its own, unless it is there.
    fn place(slots: &mut [u64], fingerprint: u64) -> bool {
        let mask = slots.len() - 1;
        let shift = 64 - slots.len().trailing_zeros();
        let mut slot = (fingerprint.wrapping_mul(SPREAD) >> shift) as usize;
        loop {
            match slots[slot] {
                0 => {
                    slots[slot] = fingerprint;
                    return true;
                }
                taken if taken == fingerprint => return false,
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// Doubles the table and places every fingerprint again.
    fn grow(&mut self) {
        let mut slots = vec![0; self.slots.len() * 2];
        for &fingerprint in self.slots.iter().filter(|&&f| f != 0) {
            Self::place(&mut slots, fingerprint);
        }
        self.slots = slots;
    }
}

#[cfg(test)]
mod tests {
    use super::Visited;

    #[test]
    fn a_fingerprint_is_new_once_through_every_growth() {
        let mut visited = Visited::with_capacity(0);
        // Fingerprints that differ only in their low bits, and zero, which is stored as one.
        let fingerprints: Vec<u64> = (0..10_000u64).map(|i| i << 3).collect();
        for &f in &fingerprints {
            assert!(visited.insert(f), "{f} is new");
        }
        assert_eq!(visited.len(), 10_000);
        for &f in &fingerprints {
            assert!(!visited.insert(f), "{f} was seen");
        }
        assert!(!visited.insert(1), "zero is stored as one");
        assert!(visited.insert(u64::MAX));
        assert_eq!(visited.len(), 10_001);
        assert!(
            visited.slots.len() * 3 >= visited.len() * 4,
            "at most 3/4 full"
        );
    }
}
