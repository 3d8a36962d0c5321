//! The depth-first search gives stateright the `always` and `eventually` properties as one
//! (`RecipeModel::one_invariant`) and names the failing one itself. That is sound only if the
//! one invariant fails exactly where one of them, given apart, fails, and names the first of
//! those. These tests walk correct and known-bad recipes along seeded random paths, and
//! follow a counterexample where random paths do not reach one, and compare the two at every
//! state; each known-bad recipe must break an invariant on the way, so that the comparison
//! covers failing states too.
#![cfg(not(madsim))]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stateright::{Expectation, Model};
use zkh_model::check::{
    find_violation, Acting, FaultBudget, JobWorkload, LatchWorkload, LockWorkload, RecipeModel,
    Workload,
};
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;

const WALKS: u64 = 400;
const MAX_STEPS: usize = 150;

fn model<W: Workload>(workload: W, faults: &str) -> RecipeModel<W> {
    RecipeModel {
        workload,
        clients: 3,
        budget: FaultBudget::parse(faults).expect("a budget"),
        acting: Acting::CaughtUp,
        forget_settled: true,
        symmetric: false,
        one_invariant: false,
        reached: Default::default(),
        canonical_news: None,
        partial_order: true,
        reads_first: false,
        claims_judged: true,
    }
}

/// Walks `model` and compares the invariants as one with the invariants apart at every state;
/// returns how many states broke one.
fn one_invariant_agrees_with_the_invariants_apart<W: Workload>(
    name: &str,
    model: &RecipeModel<W>,
) -> usize {
    let apart = model.properties();
    let mut broken = 0;
    for seed in 0..WALKS {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut state = model.init_states().remove(0);
        let mut actions = Vec::new();
        for step in 0..MAX_STEPS {
            let first_failing = apart
                .iter()
                .find(|p| p.expectation != Expectation::Sometimes && !(p.condition)(model, &state))
                .map(|p| p.name);
            assert_eq!(
                model.invariants_hold(&state),
                first_failing.is_none(),
                "{name}, seed {seed}, step {step}: the one invariant and {first_failing:?}"
            );
            if let Some(property) = first_failing {
                assert_eq!(model.first_broken_invariant(&state), property, "{name}");
                broken += 1;
                break;
            }
            actions.clear();
            model.actions(&state, &mut actions);
            let enabled: Vec<_> = actions
                .drain(..)
                .filter_map(|action| model.next_state(&state, action))
                .collect();
            if enabled.is_empty() {
                break;
            }
            state = enabled[rng.random_range(0..enabled.len())].clone();
        }
    }
    broken
}

/// Follows `model`'s shortest counterexample (found with the invariants apart), comparing the
/// two at every state; true if its last state breaks the one invariant, naming the property
/// the counterexample is of.
fn counterexample_breaks_the_one_invariant<W: Workload>(
    name: &str,
    model: &RecipeModel<W>,
) -> bool {
    let violation = find_violation(model).expect("a known-bad variant fails");
    let mut state = model.init_states().remove(0);
    for action in &violation.path {
        assert!(
            model.invariants_hold(&state),
            "{name}: broken before the end"
        );
        state = model
            .next_state(&state, action.clone())
            .expect("the counterexample's actions are enabled");
    }
    assert_eq!(
        model.first_broken_invariant(&state),
        violation.property,
        "{name}"
    );
    !model.invariants_hold(&state)
}

#[test]
fn the_one_invariant_fails_where_one_of_them_fails_and_names_it() {
    let standard = "drop-reply=1,expire=1";
    let correct_lock = model(
        LockWorkload {
            variant: LockVariant::Correct,
        },
        standard,
    );
    assert_eq!(
        one_invariant_agrees_with_the_invariants_apart("lock", &correct_lock),
        0,
        "the correct lock breaks no invariant"
    );
    let herd = model(
        LockWorkload {
            variant: LockVariant::Herd,
        },
        standard,
    );
    assert!(one_invariant_agrees_with_the_invariants_apart("herd", &herd) > 0);
    let unprotected = model(
        LockWorkload {
            variant: LockVariant::Unprotected,
        },
        "drop-reply=1",
    );
    assert!(one_invariant_agrees_with_the_invariants_apart("unprotected", &unprotected) > 0);
    let latch = model(
        LatchWorkload {
            variant: LatchVariant::NoOwnerCheck,
        },
        "client-expire=1",
    );
    assert!(counterexample_breaks_the_one_invariant(
        "no-owner-check",
        &latch
    ));
    let job = JobWorkload {
        cycles: 2,
        ..JobWorkload::new(JobVariant::TrustOwners)
    };
    let job = RecipeModel {
        clients: 2,
        ..model(job, "crash=1")
    };
    assert!(one_invariant_agrees_with_the_invariants_apart("trust-owners", &job) > 0);
}
