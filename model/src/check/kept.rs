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
//! is trusted on its 64-bit key alone, as a search trusts a state's fingerprint. The logs'
//! keep is small: a kept log holds its entries, and 1,024 of them save nearly as many
//! instructions on the lock and the two-client election as 65,536 did (within 1%), in 4 to
//! 8 MiB less.
//!
//! Not kept: the sharded job's, whose "no shard lost" reads how many cycles ran and whether
//! an instance registered again.

use std::any::TypeId;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::thread::LocalKey;

use zkh_recipes::symmetry::DirectMapped;

use super::{SharedLog, State, Workload};
use crate::history::HistoryEntry;

/// How many verdicts a thread keeps (24 bytes each).
const VERDICT_SLOTS: usize = 1 << 16;

/// How many forgotten shared logs a thread keeps (each with its entries).
const FORGOTTEN_SLOTS: usize = 1 << 10;

/// Results, each in the slot its key picks, with its key (it starts small and grows while
/// more than half full, up to its most slots).
type Keep<T> = DirectMapped<T>;

thread_local! {
    static VERDICTS: RefCell<Keep<u8>> = const { RefCell::new(Keep::new(VERDICT_SLOTS)) };
    static FORGOTTEN: RefCell<Keep<SharedLog<HistoryEntry>>> =
        const { RefCell::new(Keep::new(FORGOTTEN_SLOTS)) };
}

/// The result kept in `keep` under `key`, or `make()`'s, kept there from now on.
fn kept_in<T: Clone + 'static>(
    keep: &'static LocalKey<RefCell<Keep<T>>>,
    key: u64,
    make: impl FnOnce() -> T,
) -> T {
    if let Some(result) = keep.with_borrow(|keep| keep.get(key).cloned()) {
        return result;
    }
    let result = make();
    keep.with_borrow_mut(|keep| keep.insert(key, result.clone()));
    result
}

/// A hasher for the key of a result of workload `W`'s work, its type hashed first (its
/// judges, and what it forgets, are its type's).
fn key_of<W: Workload>() -> impl Hasher {
    let mut hasher = crate::shared::fixed_hasher();
    TypeId::of::<W>().hash(&mut hasher);
    hasher
}

/// The verdicts kept for `state`'s history and the `sometimes` verdicts `inherited`, or
/// `judge()`'s.
pub(super) fn judged<W: Workload>(
    state: &State<W>,
    inherited: u8,
    judge: impl FnOnce() -> u8,
) -> u8 {
    let mut key = key_of::<W>();
    key.write_u8(inherited);
    let logs = std::iter::once(&state.shared).chain(state.seats.iter().map(|seat| &seat.log));
    for log in logs {
        key.write_usize(log.len());
        log.hash(&mut key);
    }
    kept_in(&VERDICTS, key.finish(), judge)
}

/// The shared log kept for `state`'s shared history and verdicts, or `forget()`'s.
pub(super) fn forgotten<W: Workload>(
    state: &State<W>,
    forget: impl FnOnce() -> SharedLog<HistoryEntry>,
) -> SharedLog<HistoryEntry> {
    let mut key = key_of::<W>();
    key.write_u8(state.verdicts);
    key.write_usize(state.shared.len());
    state.shared.hash(&mut key);
    kept_in(&FORGOTTEN, key.finish(), forget)
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use stateright::{Expectation, Model};
    use zkh_recipes::election::ElectionVariant;
    use zkh_recipes::latch::LatchVariant;
    use zkh_recipes::lock::LockVariant;
    use zkh_recipes::master::MasterVariant;

    use super::super::{
        judged_bits, Acting, ElectionWorkload, FaultBudget, LatchWorkload, LockWorkload,
        MasterWorkload, RecipeModel,
    };
    use super::*;

    #[test]
    fn a_key_is_judged_once_and_a_different_key_again() {
        let mut judged_count = 0;
        let mut judge = |verdicts: u8| {
            judged_count += 1;
            verdicts
        };
        assert_eq!(kept_in(&VERDICTS, 0xdead_beef_0000_0001, || judge(3)), 3);
        assert_eq!(kept_in(&VERDICTS, 0xdead_beef_0000_0001, || judge(5)), 3);
        // The same slot (the key's upper half), another key: judged, and kept in its place.
        assert_eq!(kept_in(&VERDICTS, 0xdead_beef_0000_0002, || judge(6)), 6);
        assert_eq!(kept_in(&VERDICTS, 0xdead_beef_0000_0001, || judge(7)), 7);
        assert_eq!(judged_count, 3);
    }

    /// Whether `state`'s verdicts are the findings on `unforgotten`, the same step from the
    /// same parent without forgetting (the verdicts are judged before the step forgets, which
    /// may drop what a `sometimes` property that has happened read): an `always` or
    /// `eventually` verdict is its finding, a `sometimes` verdict its finding or the parent's.
    fn verdicts_are_findings<W: Workload>(
        parent: &State<W>,
        state: &State<W>,
        unforgotten: &State<W>,
        at: &str,
    ) {
        let findings = unforgotten.findings();
        for (index, (judge, finding)) in W::judges().iter().zip(&findings).enumerate() {
            let bit = 1u8 << index;
            let inherited =
                judge.expectation == Expectation::Sometimes && parent.verdicts & bit != 0;
            assert_eq!(
                state.verdicts & bit != 0,
                inherited || finding.holds,
                "{at}: the verdict of {:?} ({})",
                judge.name,
                finding.detail
            );
        }
    }

    /// Walks seeded random paths of `workload` (three clients, every kind of fault), keeping
    /// the whole history and forgetting, with applications acting when caught up and when not,
    /// and requires at every step that what the keeps gave is what the work gives afresh: the
    /// verdicts, and the shared history after forgetting. The walks share their first steps,
    /// so most of what they get is kept. Returns how many entries were forgotten.
    fn kept_results_are_results_afresh<W: Workload>(name: &str, workload: W) -> usize {
        assert!(W::READS_HISTORY_ALONE, "{name}: its results are kept");
        let mut forgotten = 0;
        for acting in [Acting::CaughtUp, Acting::Unfenced] {
            for forget_settled in [false, true] {
                let model = RecipeModel {
                    workload: workload.clone(),
                    clients: 3,
                    budget: FaultBudget::parse(
                        "drop-request=1,drop-reply=1,expire=1,client-expire=1,leader-change=1,\
                         crash=1",
                    )
                    .expect("a budget"),
                    acting,
                    forget_settled,
                    symmetric: false,
                    one_invariant: false,
                    reached: Default::default(),
                    canonical_news: None,
                    partial_order: true,
                    reads_first: false,
                    claims_judged: true,
                };
                let whole = RecipeModel {
                    forget_settled: false,
                    ..model.clone()
                };
                for seed in 0..150 {
                    let mut rng = ChaCha8Rng::seed_from_u64(seed);
                    let mut state = model.init_states().remove(0);
                    let mut path = Vec::new();
                    let mut actions = Vec::new();
                    for _ in 0..150 {
                        actions.clear();
                        model.actions(&state, &mut actions);
                        // One step in 12 is a fault, where one is enabled.
                        let (faults, moves): (Vec<_>, Vec<_>) =
                            actions.drain(..).partition(|action| action.is_fault());
                        let fault = !faults.is_empty() && rng.random_ratio(1, 12);
                        let mut choices = if moves.is_empty() || fault {
                            faults
                        } else {
                            moves
                        };
                        if choices.is_empty() {
                            break;
                        }
                        let action = choices.swap_remove(rng.random_range(0..choices.len()));
                        path.push(action.clone());
                        let Some(next) = model.next_state(&state, action.clone()) else {
                            continue;
                        };
                        let unforgotten = whole.next_state(&state, action).expect("one step");
                        let at = format!(
                            "{name}, acting {acting:?}, forgetting {forget_settled}, seed \
                             {seed}, after {path:?}"
                        );
                        verdicts_are_findings(&state, &next, &unforgotten, &at);
                        let grew = unforgotten.shared.len() != state.shared.len();
                        let always = judged_bits::<W>(Expectation::Always);
                        let holds = unforgotten.verdicts & always == always;
                        let afresh = if forget_settled && grew && holds {
                            RecipeModel::forgotten_shared(&model.workload, &unforgotten)
                                .unwrap_or_else(|| unforgotten.shared.clone())
                        } else {
                            unforgotten.shared.clone()
                        };
                        forgotten += unforgotten.shared.len() - afresh.len();
                        assert_eq!(next.shared, afresh, "{at}: the shared history");
                        state = next;
                    }
                }
            }
        }
        forgotten
    }

    #[test]
    fn the_lock_keeps_what_it_would_find_afresh() {
        for variant in [
            LockVariant::Correct,
            LockVariant::Herd,
            LockVariant::Unprotected,
            LockVariant::UnguaranteedDelete,
        ] {
            let name = format!("lock {variant:?}");
            assert!(kept_results_are_results_afresh(&name, LockWorkload { variant }) > 0);
        }
    }

    #[test]
    fn the_latch_keeps_what_it_would_find_afresh() {
        for variant in [
            LatchVariant::Correct,
            LatchVariant::TrustPredecessor,
            LatchVariant::NoOwnerCheck,
            LatchVariant::KeepOnSuspend,
        ] {
            let name = format!("latch {variant:?}");
            assert!(kept_results_are_results_afresh(&name, LatchWorkload { variant }) > 0);
        }
    }

    #[test]
    fn the_elections_keep_what_they_would_find_afresh() {
        for variant in [ElectionVariant::Correct, ElectionVariant::CheckThenWrite] {
            let name = format!("election {variant:?}");
            assert!(kept_results_are_results_afresh(&name, ElectionWorkload { variant }) > 0);
        }
        for variant in [MasterVariant::Correct, MasterVariant::NoWatch] {
            let name = format!("master {variant:?}");
            assert!(kept_results_are_results_afresh(&name, MasterWorkload { variant }) > 0);
        }
    }
}
