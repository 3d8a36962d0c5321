//! One bug, both engines: the model checker's counterexample of `no-owner-check` (CURATOR-696),
//! exported as a scenario and replayed on the simulated ensemble, shows the same violation; the
//! correct latch under the same scenario does not.
#![cfg(madsim)]

use zkh_model::check::{find_violation, Acting, FaultBudget};
use zkh_scenarios::replay::reproducing_seeds;
use zkh_scenarios::{export, Recipe, Scenario};

#[test]
fn the_no_owner_check_counterexample_replays_in_the_simulator() {
    let budget = FaultBudget::parse("client-expire=1").expect("a budget");
    let recipe =
        Recipe::new("latch", "no-owner-check", 3, budget, Acting::CaughtUp).expect("a recipe");
    let model = recipe.latch_model().expect("the latch");
    let violation = find_violation(&model).expect("the model checker finds CURATOR-696");
    assert_eq!(violation.property, "single acting master");
    let scenario = export(&recipe, violation.property, &violation.path);
    assert_eq!(
        scenario.faults.scripted.len(),
        1,
        "one client-side expiry: {:?}",
        scenario.faults
    );
    // Through the file format, as `zkharness check --export` writes it.
    let text = serde_json::to_string_pretty(&scenario).expect("serialise");
    let scenario: Scenario = serde_json::from_str(&text).expect("parse");

    // Which client leads in the simulator depends on the seed: the fault aimed at the model's
    // leader lands on the simulator's leader for some seeds.
    let seeds = reproducing_seeds(&scenario, 0..6).expect("a replayable scenario");
    println!("no-owner-check: reproduced in the simulator with seeds {seeds:?} of 0..6");
    assert!(!seeds.is_empty(), "the simulator reproduces the violation");

    let correct = Scenario {
        variant: "correct".into(),
        ..scenario
    };
    let seeds = reproducing_seeds(&correct, 0..6).expect("a replayable scenario");
    assert!(
        seeds.is_empty(),
        "the correct latch holds under the same faults: {seeds:?}"
    );
}
