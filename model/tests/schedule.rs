//! The model's own invariant "runs when scheduled" (`RecipeModel::runs_when_scheduled`): no
//! job instance runs a cycle that no instance's cron has fired. Its control of our own design,
//! the job's `run-ahead` (a cycle that ends starts the next at once, before its trigger),
//! breaks nothing else: the claims keep every (item, cycle) to one run, and every run happens.
#![cfg(not(madsim))]

use stateright::Model;
use zkh_model::check::{
    check_within, walk, Acting, FaultBudget, JobWorkload, Limits, RecipeModel, WalkLimits, SCHEDULE,
};
use zkh_recipes::elastic_job::JobVariant;

fn job(variant: JobVariant, faults: &str, cycles: u64) -> RecipeModel<JobWorkload> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    let workload = JobWorkload {
        cycles,
        ..JobWorkload::new(variant)
    };
    RecipeModel::new(workload, 2, budget, Acting::CaughtUp)
}

#[test]
fn an_instance_that_runs_ahead_of_its_cron_is_caught_by_the_schedule_invariant() {
    let verdict = check_within(&job(JobVariant::RunAhead, "crash=1", 1), Limits::default());
    let violation = verdict.violation.expect("a violation");
    assert_eq!(violation.property, SCHEDULE);
    assert_eq!(violation.path.len(), 63, "shortened to the shortest");
    // Its last state: an instance ran cycle 2 with only cycle 1 fired.
    let model = job(JobVariant::RunAhead, "crash=1", 1);
    let mut last = model.init_states().remove(0);
    for action in &violation.path {
        last = model
            .next_state(&last, action.clone())
            .expect("the path replays");
    }
    assert_eq!(
        model
            .unscheduled_run(&last)
            .map(|(_, ran, fired)| (ran, fired)),
        Some((2, 1))
    );
}

#[test]
fn the_correct_job_runs_only_cycles_that_fired() {
    // Exhaustively over one cycle with a crash; by walks over two cycles under a crash and an
    // expiry, which the search cannot finish.
    let verdict = check_within(&job(JobVariant::Correct, "crash=1", 1), Limits::default());
    assert!(
        verdict.complete && verdict.violation.is_none(),
        "{verdict:?}"
    );
    let limits = WalkLimits {
        walks: 1_000,
        seed: 11,
        max_depth: 300,
    };
    for faults in ["crash=1", "expire=1"] {
        let verdict = walk(&job(JobVariant::Correct, faults, 2), limits);
        assert_eq!(verdict.violation, None, "{faults}");
        let control = walk(&job(JobVariant::RunAhead, faults, 2), limits);
        let found = control.violation.expect("the control, by walks");
        assert_eq!(found.property, SCHEDULE, "{faults}");
    }
}
