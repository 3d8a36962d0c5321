//! Judging each distinct history once.
//!
//! The checker judges a state's properties whenever a step adds to its history. Most of those
//! histories have been judged before: the forgetting of settled history (see the module docs
//! of [`check`](super)) makes states reached by different roads share one history, and a step
//! that adds an entry another interleaving added first gives a history already seen. On the
//! lock's standard check 70,000 judgings see 20,500 distinct histories; on the two-client
//! election, 60,000 see 2,600.
//!
//! So a workload whose judges read nothing of a state but its history
//! ([`Workload::JUDGED_BY_HISTORY`]) has its verdicts kept, per thread, under a key made of:
//!
//! - the workload's type (its judges are its type's);
//! - the shared log's length and chained hash, and each client's log's, in the clients' order
//!   (a [`SharedLog`](super::SharedLog)'s hash covers its entries in order, their times
//!   included);
//! - the `sometimes` verdicts the state inherited from its parent (a `sometimes` property that
//!   happened there has happened here, and is not judged again).
//!
//! The keep is direct-mapped: each key has one slot, and a new key evicts the old. A kept
//! verdict is trusted on its 64-bit key alone, as a search trusts a state's fingerprint.
//!
//! Not kept: the verdicts of a workload whose judges read more than the history (the sharded
//! job's "no shard lost" reads how many cycles ran and whether an instance registered again).

use std::cell::RefCell;

/// How many verdicts a thread keeps (16 bytes each).
const KEPT_SLOTS: usize = 1 << 16;

thread_local! {
    /// The verdicts kept, each in the slot its key picks, with its key.
    static KEPT: RefCell<Vec<Option<(u64, u8)>>> = const { RefCell::new(Vec::new()) };
}

/// The verdicts kept under `key`, or `judge()`'s, kept there from now on.
pub(super) fn remembered(key: u64, judge: impl FnOnce() -> u8) -> u8 {
    let slot = (key >> 32) as usize % KEPT_SLOTS;
    let found = KEPT.with_borrow(|kept| match kept.get(slot) {
        Some(Some((kept_key, verdicts))) if *kept_key == key => Some(*verdicts),
        _ => None,
    });
    if let Some(verdicts) = found {
        return verdicts;
    }
    let verdicts = judge();
    KEPT.with_borrow_mut(|kept| {
        if kept.is_empty() {
            kept.resize(KEPT_SLOTS, None);
        }
        kept[slot] = Some((key, verdicts));
    });
    verdicts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_judged_once_and_a_different_key_again() {
        let mut judged = 0;
        let mut judge = |verdicts: u8| {
            judged += 1;
            verdicts
        };
        assert_eq!(remembered(0xdead_beef_0000_0001, || judge(3)), 3);
        assert_eq!(remembered(0xdead_beef_0000_0001, || judge(5)), 3);
        // The same slot (the key's upper half), another key: judged, and kept in its place.
        assert_eq!(remembered(0xdead_beef_0000_0002, || judge(6)), 6);
        assert_eq!(remembered(0xdead_beef_0000_0001, || judge(7)), 7);
        assert_eq!(judged, 3);
    }
}
