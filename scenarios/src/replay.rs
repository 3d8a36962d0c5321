//! Replaying an exported [`Scenario`] on the simulated ensemble (simulated build only).

use std::ops::Range;

use zkh_model::check::{JOB_DIR, JOB_ITEMS};
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_sim::run::run_seed;
use zkh_sim::sharded::{sharded_job, ShardedConfig};
use zkh_sim::workload::{self, LeaderRecipe, WorkloadConfig, WorkloadOutcome};

use crate::Scenario;

fn parse<T: for<'de> serde::Deserialize<'de>>(name: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .map_err(|_| format!("the scenario names an unknown variant {name:?}"))
}

/// Runs `scenario` for `seed`: its recipe's workload, its resource, its faults.
pub fn replay(scenario: &Scenario, seed: u64) -> Result<WorkloadOutcome, String> {
    let config = WorkloadConfig {
        clients: scenario.clients,
        fencing: scenario.fencing,
        ..WorkloadConfig::default()
    };
    let plan = scenario.faults.clone();
    match scenario.recipe.as_str() {
        "lock" => {
            let variant: LockVariant = parse(&scenario.variant)?;
            Ok(run_seed(seed, 600, move |s| {
                workload::stock(s, variant, config, plan)
            }))
        }
        "latch" => {
            let variant: LatchVariant = parse(&scenario.variant)?;
            Ok(run_seed(seed, 600, move |s| {
                workload::job(s, variant, config, plan)
            }))
        }
        "election" => {
            let recipe = LeaderRecipe::Election(parse::<ElectionVariant>(&scenario.variant)?);
            Ok(run_seed(seed, 600, move |s| {
                workload::leader_job(s, recipe, config, plan)
            }))
        }
        "job" => {
            let variant: JobVariant = parse(&scenario.variant)?;
            let config = ShardedConfig {
                clients: scenario.clients,
                items: scenario.items.unwrap_or(JOB_ITEMS),
                // Cycle 1 runs at 2 s, before the first scripted fault (3 s) and the next
                // cycle (4 s): a fault lands in the cycle the model's counterexample is about.
                cycle_interval_ms: 2_000,
                ..ShardedConfig::default()
            };
            let mut plan = plan;
            // The simulator's job lives at its own root.
            for triggered in &mut plan.triggered {
                let prefix = &mut triggered.when.path_prefix;
                if let Some(rest) = prefix.strip_prefix(JOB_DIR) {
                    *prefix = format!("{}{rest}", zkh_sim::sharded::JOB);
                }
            }
            Ok(run_seed(seed, 600, move |s| {
                sharded_job(s, variant, config, plan)
            }))
        }
        "master" => Err(
            "the simulator runs no master election: a master scenario is checked by the model only"
                .to_owned(),
        ),
        other => Err(format!("the scenario names an unknown recipe {other:?}")),
    }
}

/// The seeds of `seeds` whose replay violates the property the model checker found violated.
pub fn reproducing_seeds(scenario: &Scenario, seeds: Range<u64>) -> Result<Vec<u64>, String> {
    let mut found = Vec::new();
    for seed in seeds {
        let outcome = replay(scenario, seed)?;
        let finding = outcome
            .findings
            .iter()
            .find(|f| f.property == scenario.violation)
            .ok_or_else(|| {
                format!(
                    "the simulator does not judge {:?} for {}",
                    scenario.violation, scenario.recipe
                )
            })?;
        if !finding.holds {
            found.push(seed);
        }
    }
    Ok(found)
}
