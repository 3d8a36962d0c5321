//! One bug, both engines: the model checker's counterexamples of `no-owner-check` (CURATOR-696)
//! and of the sharded job's `no-cycle-claim`, exported as scenarios and replayed on the
//! simulated ensemble, show the same violations; the correct recipes under the same scenarios
//! do not.
#![cfg(madsim)]

use zkh_model::check::{
    check, find_violation, walk, Acting, FaultBudget, JobWorkload, LatchWorkload, WalkLimits,
};
use zkh_scenarios::export::to_toml;
use zkh_scenarios::runner;
use zkh_scenarios::scenario::{self, ScenarioFile};
use zkh_scenarios::{export, Recipe};

/// The seeds of 0..6 on which `file`, through its text as `check --export` writes it, violates
/// the property it expects.
fn reproducing_seeds(file: &ScenarioFile) -> Vec<u64> {
    let text = to_toml(file);
    let (_, resolved) = scenario::parse("exported.toml", "exported", &text)
        .unwrap_or_else(|error| panic!("an exported scenario parses: {error}\n{text}"));
    let property = resolved
        .expect_violation
        .clone()
        .expect("an export expects a violation");
    (0..6)
        .filter(|seed| runner::run(&resolved, *seed).outcome.property() == Some(property.as_str()))
        .collect()
}

#[test]
fn the_no_owner_check_counterexample_replays_in_the_simulator() {
    let budget = FaultBudget::parse("client-expire=1").expect("a budget");
    let recipe =
        Recipe::new("latch", "no-owner-check", 3, budget, Acting::CaughtUp).expect("a recipe");
    // The false claim comes first ("claims are owned", which the simulator does not judge):
    // leave it unjudged to export the recipe property it goes on to break.
    let model = zkh_model::check::RecipeModel {
        claims_judged: false,
        ..recipe.model::<LatchWorkload>().expect("the latch")
    };
    let violation = find_violation(&model).expect("the model checker finds CURATOR-696");
    assert_eq!(violation.property, "single acting master");
    let scenario = export(&recipe, violation.property, &violation.path, "test");
    assert_eq!(
        scenario.faults.scripted.len(),
        1,
        "one client-side expiry: {:?}",
        scenario.faults
    );

    // Which client leads in the simulator depends on the seed: the fault aimed at the model's
    // leader lands on the simulator's leader for some seeds.
    reproduced_by_the_variant_only(scenario);
}

/// Replays `scenario` with seeds 0 to 5: some seed violates the property the model named, and
/// no seed does with the correct variant under the same faults.
fn reproduced_by_the_variant_only(scenario: ScenarioFile) {
    let seeds = reproducing_seeds(&scenario);
    let name = format!(
        "{} {}",
        scenario.workload.recipe.as_str(),
        scenario.workload.variant
    );
    println!("{name}: reproduced in the simulator with seeds {seeds:?} of 0..6");
    assert!(
        !seeds.is_empty(),
        "{name}: the simulator reproduces the violation"
    );

    let mut correct = scenario;
    correct.workload.variant = "correct".into();
    let seeds = reproducing_seeds(&correct);
    assert!(
        seeds.is_empty(),
        "the correct {} holds under the same faults: {seeds:?}",
        correct.workload.recipe.as_str()
    );
}

/// The sharded job's no-cycle-claim counterexample (an instance runs its item, its session
/// expires, the survivor runs the item again in the same cycle), replayed: the simulator runs
/// an item twice too, and the correct job under the same faults does not.
#[test]
fn the_no_cycle_claim_counterexample_replays_in_the_simulator() {
    let budget = FaultBudget::parse("expire=1").expect("a budget");
    let recipe =
        Recipe::new("job", "no-cycle-claim", 2, budget, Acting::CaughtUp).expect("a recipe");
    let model = recipe.model::<JobWorkload>().expect("the job");
    let violation = check(&model)
        .violation
        .expect("the model checker runs an item twice");
    assert_eq!(violation.property, "no shard executed twice");
    let scenario = export(&recipe, violation.property, &violation.path, "test");
    assert_eq!(
        scenario.faults.scripted.len(),
        1,
        "one expiry: {:?}",
        scenario.faults
    );
    reproduced_by_the_variant_only(scenario);
}

/// The same bug found by random walks where no exhaustive check reaches: three instances under
/// the standard budget (one lost reply, one expiry). The walk's shrunk path, exported, replays
/// in the simulator with three instances.
#[test]
fn a_random_walk_s_no_cycle_claim_with_three_instances_replays_in_the_simulator() {
    let budget = FaultBudget::parse("drop-reply=1,expire=1").expect("a budget");
    let recipe =
        Recipe::new("job", "no-cycle-claim", 3, budget, Acting::CaughtUp).expect("a recipe");
    let model = recipe.model::<JobWorkload>().expect("the job");
    let limits = WalkLimits {
        walks: 1_000,
        seed: 0,
        max_depth: 300,
    };
    let violation = walk(&model, limits)
        .violation
        .expect("random walks run an item twice");
    assert_eq!(violation.property, "no shard executed twice");
    let scenario = export(&recipe, violation.property, &violation.path, "test");
    reproduced_by_the_variant_only(scenario);
}
