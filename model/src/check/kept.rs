//! Work done once per distinct input: results kept per thread, each under a 64-bit key.
//!
//! The checker reaches most histories many times: forgetting settled history (see the module
//! docs of [`check`](super)) makes states reached by different roads share one history, and a
//! step that adds an entry another interleaving added first gives a history already seen. On
//! the lock's standard check, 70,000 judgings see 20,500 distinct histories; on the two-client
//! election, 60,000 see 2,600. So where the workload's judges and its forgetting read nothing
//! of a state but its history and verdicts ([`Workload::READS_HISTORY_ALONE`]), two results
//! are kept:
//!
//! - **verdicts** ([`judged`]), under the workload's type, the shared log's and each client's
//!   log's length and chained hash, in the clients' order (a
//!   [`SharedLog`](super::SharedLog)'s hash covers its entries in order, their times included),
//!   and the `sometimes` verdicts the state inherited from its parent (one that happened there
//!   has happened here, and is not judged again);
//! - **the shared log after forgetting** ([`forgotten`]), under the workload's type, the
//!   shared log's length and chained hash, and the state's verdicts (a `sometimes` property
//!   that has happened needs nothing kept). Equal inputs then share one log, whose links
//!   already carry their renamed hashes.
//!
//! Each keep is direct-mapped: a key has one slot, and a new key evicts the old. A kept result
//! is trusted on its 64-bit key alone, as a search trusts a state's fingerprint.
//!
//! Not kept: the sharded job's, whose "no shard lost" reads how many cycles ran and whether
//! an instance registered again.

use std::cell::RefCell;
use std::thread::LocalKey;

use super::SharedLog;
use crate::history::HistoryEntry;

/// How many results each keep holds per thread.
const KEPT_SLOTS: usize = 1 << 16;

/// Results, each in the slot its key picks, with its key.
pub(super) struct Keep<T>(Vec<Option<(u64, T)>>);

impl<T: Clone> Keep<T> {
    const fn new() -> Keep<T> {
        Keep(Vec::new())
    }
}

thread_local! {
    static VERDICTS: RefCell<Keep<u8>> = const { RefCell::new(Keep::new()) };
    static FORGOTTEN: RefCell<Keep<SharedLog<HistoryEntry>>> = const { RefCell::new(Keep::new()) };
}

/// The result kept in `keep` under `key`, or `make()`'s, kept there from now on.
fn kept<T: Clone + 'static>(
    keep: &'static LocalKey<RefCell<Keep<T>>>,
    key: u64,
    make: impl FnOnce() -> T,
) -> T {
    let slot = (key >> 32) as usize % KEPT_SLOTS;
    let found = keep.with_borrow(|keep| match keep.0.get(slot) {
        Some(Some((kept_key, result))) if *kept_key == key => Some(result.clone()),
        _ => None,
    });
    if let Some(result) = found {
        return result;
    }
    let result = make();
    keep.with_borrow_mut(|keep| {
        if keep.0.is_empty() {
            keep.0.resize_with(KEPT_SLOTS, || None);
        }
        keep.0[slot] = Some((key, result.clone()));
    });
    result
}

/// The verdicts kept under `key`, or `judge()`'s.
pub(super) fn judged(key: u64, judge: impl FnOnce() -> u8) -> u8 {
    kept(&VERDICTS, key, judge)
}

/// The shared log kept under `key`, or `forget()`'s.
pub(super) fn forgotten(
    key: u64,
    forget: impl FnOnce() -> SharedLog<HistoryEntry>,
) -> SharedLog<HistoryEntry> {
    kept(&FORGOTTEN, key, forget)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_judged_once_and_a_different_key_again() {
        let mut judged_count = 0;
        let mut judge = |verdicts: u8| {
            judged_count += 1;
            verdicts
        };
        assert_eq!(judged(0xdead_beef_0000_0001, || judge(3)), 3);
        assert_eq!(judged(0xdead_beef_0000_0001, || judge(5)), 3);
        // The same slot (the key's upper half), another key: judged, and kept in its place.
        assert_eq!(judged(0xdead_beef_0000_0002, || judge(6)), 6);
        assert_eq!(judged(0xdead_beef_0000_0001, || judge(7)), 7);
        assert_eq!(judged_count, 3);
    }
}
