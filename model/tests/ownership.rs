//! The model's own invariant "claims are owned" (`RecipeModel::owns_its_claims`): at every
//! settled moment, what a client believes is its own exists and is owned by its current
//! session. Its control of our own design, the job's `no-reregister` (a new session after an
//! expiry does not register the instance again), breaks nothing else: no run is lost or
//! doubled, since the others fail its items over and shard without it.
#![cfg(not(madsim))]

use zkh_model::check::{
    check_within, walk, Acting, FaultBudget, JobWorkload, Limits, RecipeModel, WalkLimits,
    OWNERSHIP,
};
use zkh_recipes::elastic_job::JobVariant;

fn job(variant: JobVariant, faults: &str) -> RecipeModel<JobWorkload> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    RecipeModel::new(JobWorkload::new(variant), 2, budget, Acting::CaughtUp)
}

#[test]
fn an_instance_that_does_not_register_again_is_caught_by_the_ownership_invariant() {
    let verdict = check_within(
        &job(JobVariant::NoReregister, "expire=1"),
        Limits::default(),
    );
    let violation = verdict.violation.expect("a violation");
    assert_eq!(violation.property, OWNERSHIP);
    assert_eq!(violation.path.len(), 43, "shortened to the shortest");
}

#[test]
fn the_correct_job_owns_its_registration_at_every_settled_moment() {
    // Exhaustively without faults and with a crash; by walks under an expiry or a client-side
    // expiry, whose spaces the search cannot finish.
    for faults in ["none", "crash=1"] {
        let verdict = check_within(&job(JobVariant::Correct, faults), Limits::default());
        assert!(
            verdict.complete && verdict.violation.is_none(),
            "{faults}: {verdict:?}"
        );
    }
    for faults in ["expire=1", "client-expire=1"] {
        let limits = WalkLimits {
            walks: 2_000,
            seed: 7,
            max_depth: 300,
        };
        let verdict = walk(&job(JobVariant::Correct, faults), limits);
        assert_eq!(verdict.violation, None, "{faults}");
        if faults == "expire=1" {
            // And the control under the same walks.
            let control = walk(&job(JobVariant::NoReregister, faults), limits);
            let found = control.violation.expect("the control, by walks");
            assert_eq!(found.property, OWNERSHIP);
        }
    }
}
