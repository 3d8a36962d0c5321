//! The checker keeps the verdicts of each history it judged and gives them to the next state
//! with the same history, unjudged (where the workload's judges read only the history). These
//! tests walk each such recipe, correct and known-bad, along seeded random paths under every
//! kind of fault, and require at every step that a state's verdicts are what its properties
//! find when judged afresh: an `always` or `eventually` verdict is its finding, a `sometimes`
//! verdict its finding or its parent's verdict. The walks start from one state and share their
//! first steps, so most of their verdicts are kept ones.
//!
//! The walks keep the whole history, and forget settled history as every check does. A state's
//! verdicts are judged before the step's forgetting (which may then drop what a `sometimes`
//! property that has happened read), so where it forgets, the findings are judged on the state
//! the same step makes from the same parent without forgetting.
#![cfg(not(madsim))]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stateright::{Expectation, Model};
use zkh_model::check::{
    Acting, ElectionWorkload, FaultBudget, LatchWorkload, LockWorkload, MasterWorkload,
    RecipeModel, State, Workload,
};
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;

/// Every kind of fault, once.
const EVERY_FAULT: &str =
    "drop-request=1,drop-reply=1,expire=1,client-expire=1,leader-change=1,crash=1";
const WALKS: u64 = 150;
const MAX_STEPS: usize = 150;
/// One step in this many is a fault, where one is enabled.
const FAULT_ODDS: u32 = 12;

/// Whether `state`'s verdicts are the findings on `judged`, its history before forgetting
/// (its parent's `sometimes` verdicts held).
fn verdicts_are_findings<W: Workload>(
    parent: &State<W>,
    state: &State<W>,
    judged: &State<W>,
    at: &str,
) {
    let findings = judged.findings();
    for (index, (judge, finding)) in W::judges().iter().zip(&findings).enumerate() {
        let bit = 1u8 << index;
        let inherited = judge.expectation == Expectation::Sometimes && parent.verdicts & bit != 0;
        assert_eq!(
            state.verdicts & bit != 0,
            inherited || finding.holds,
            "{at}: the verdict of {:?} ({})",
            judge.name,
            finding.detail
        );
    }
}

/// Walks `WALKS` seeded random paths of `workload` with three clients, keeping its whole
/// history and forgetting; returns how many steps were taken.
fn kept_verdicts_are_judged<W: Workload>(name: &str, workload: W) -> usize {
    assert!(W::READS_HISTORY_ALONE, "{name}: its verdicts are kept");
    let mut steps = 0;
    for (acting, forget_settled) in [Acting::CaughtUp, Acting::Unfenced]
        .into_iter()
        .flat_map(|acting| [(acting, false), (acting, true)])
    {
        let model = RecipeModel {
            workload: workload.clone(),
            clients: 3,
            budget: FaultBudget::parse(EVERY_FAULT).expect("a budget"),
            acting,
            forget_settled,
            symmetric: false,
            one_invariant: false,
        };
        let whole = RecipeModel {
            forget_settled: false,
            ..model.clone()
        };
        for seed in 0..WALKS {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut state = model.init_states().remove(0);
            let mut path = Vec::new();
            let mut actions = Vec::new();
            for _ in 0..MAX_STEPS {
                actions.clear();
                model.actions(&state, &mut actions);
                let (faults, moves): (Vec<_>, Vec<_>) =
                    actions.drain(..).partition(|action| action.is_fault());
                let mut choices =
                    if moves.is_empty() || !faults.is_empty() && rng.random_ratio(1, FAULT_ODDS) {
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
                let judged = whole.next_state(&state, action).expect("the same step");
                let at = format!(
                    "{name}, acting {acting:?}, forgetting {forget_settled}, seed {seed}, \
                     after {path:?}"
                );
                verdicts_are_findings(&state, &next, &judged, &at);
                state = next;
                steps += 1;
            }
        }
    }
    steps
}

#[test]
fn the_lock_keeps_the_verdicts_it_judged() {
    for variant in [
        LockVariant::Correct,
        LockVariant::Herd,
        LockVariant::Unprotected,
    ] {
        let name = format!("lock {variant:?}");
        assert!(kept_verdicts_are_judged(&name, LockWorkload { variant }) > 0);
    }
}

#[test]
fn the_latch_keeps_the_verdicts_it_judged() {
    for variant in [
        LatchVariant::Correct,
        LatchVariant::TrustPredecessor,
        LatchVariant::NoOwnerCheck,
    ] {
        let name = format!("latch {variant:?}");
        assert!(kept_verdicts_are_judged(&name, LatchWorkload { variant }) > 0);
    }
}

#[test]
fn the_job_election_keeps_the_verdicts_it_judged() {
    for variant in [ElectionVariant::Correct, ElectionVariant::CheckThenWrite] {
        let name = format!("election {variant:?}");
        assert!(kept_verdicts_are_judged(&name, ElectionWorkload { variant }) > 0);
    }
}

#[test]
fn the_master_keeps_the_verdicts_it_judged() {
    for variant in [MasterVariant::Correct, MasterVariant::NoWatch] {
        let name = format!("master {variant:?}");
        assert!(kept_verdicts_are_judged(&name, MasterWorkload { variant }) > 0);
    }
}
