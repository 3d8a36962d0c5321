//! The catalogue's part of `zkharness bench`: seeds per second of every correct scenario on
//! one thread, and, for every positive control (a known-bad variant), the time and the seeds a
//! sweep needs to reach its first violation, from five starting seeds.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use crate::runner;
use crate::scenario::{load, Resolved};
use serde::Serialize;

use super::sweep::scenario_files;

/// Starting seeds of the five sweeps that time a control's first violation.
const STARTS: [u64; 5] = [0, 10_000, 20_000, 30_000, 40_000];

/// One correct scenario's speed: seeds, and the simulator's work in them (messages the
/// network delivered, history events recorded), per second of one thread's wall time.
#[derive(Serialize)]
pub(super) struct Speed {
    pub scenario: String,
    pub recipe: String,
    pub seeds: u64,
    pub seeds_per_sec: f64,
    pub messages_per_sec: f64,
    pub history_events_per_sec: f64,
    /// Per seed, on average.
    pub messages_per_seed: f64,
    pub history_events_per_seed: f64,
}

/// One control's time to its bug: medians over [`STARTS`].
#[derive(Serialize)]
pub(super) struct ToBug {
    pub scenario: String,
    pub property: String,
    pub time_to_bug_s: f64,
    pub seeds_to_bug: u64,
}

/// Runs the catalogue in `folder`: `seeds` seeds of each correct scenario, and each control
/// until its violation (at most `within_seeds` × 10 seeds from each start).
pub(super) fn measure(folder: &PathBuf, seeds: u64) -> Result<(Vec<Speed>, Vec<ToBug>), String> {
    let mut speeds = Vec::new();
    let mut to_bug = Vec::new();
    for file in scenario_files(std::slice::from_ref(folder))? {
        let scenario = load(&file).map_err(|e| e.to_string())?.resolved;
        match &scenario.expect_violation {
            None => speeds.push(speed(&scenario, seeds)),
            Some(property) => to_bug.push(first_bug(&scenario, property)?),
        }
        eprint!(".");
    }
    eprintln!();
    Ok((speeds, to_bug))
}

fn speed(scenario: &Resolved, seeds: u64) -> Speed {
    let began = Instant::now();
    let (mut messages, mut events) = (0u64, 0u64);
    for seed in 0..seeds {
        let result = runner::run(scenario, seed);
        messages += result.messages_delivered;
        events += result.history.len() as u64;
    }
    let seconds = began.elapsed().as_secs_f64().max(1e-9);
    let per_seed = |total: u64| total as f64 / seeds.max(1) as f64;
    Speed {
        scenario: scenario.name.clone(),
        recipe: scenario.recipe.as_str().to_owned(),
        seeds,
        seeds_per_sec: seeds as f64 / seconds,
        messages_per_sec: messages as f64 / seconds,
        history_events_per_sec: events as f64 / seconds,
        messages_per_seed: per_seed(messages),
        history_events_per_seed: per_seed(events),
    }
}

/// One recipe's speed over all its correct scenarios: totals over their seconds.
#[derive(Serialize)]
pub(super) struct RecipeSpeed {
    pub recipe: String,
    pub seeds: u64,
    pub seeds_per_sec: f64,
    pub messages_per_sec: f64,
    pub history_events_per_sec: f64,
}

/// The speeds of `scenarios` added up per recipe, in recipe name order.
pub(super) fn by_recipe(scenarios: &[Speed]) -> Vec<RecipeSpeed> {
    // Per recipe: seeds, seconds, messages, events.
    let mut totals: BTreeMap<&str, (u64, f64, f64, f64)> = BTreeMap::new();
    for speed in scenarios {
        let seconds = speed.seeds as f64 / speed.seeds_per_sec.max(1e-9);
        let total = totals.entry(&speed.recipe).or_default();
        total.0 += speed.seeds;
        total.1 += seconds;
        total.2 += speed.messages_per_sec * seconds;
        total.3 += speed.history_events_per_sec * seconds;
    }
    (totals.into_iter())
        .map(|(recipe, (seeds, seconds, messages, events))| {
            let seconds = seconds.max(1e-9);
            RecipeSpeed {
                recipe: recipe.to_owned(),
                seeds,
                seeds_per_sec: seeds as f64 / seconds,
                messages_per_sec: messages / seconds,
                history_events_per_sec: events / seconds,
            }
        })
        .collect()
}

fn first_bug(scenario: &Resolved, property: &str) -> Result<ToBug, String> {
    let bound = scenario.within_seeds.max(1) * 10;
    let mut times = Vec::new();
    let mut counts = Vec::new();
    for start in STARTS {
        let began = Instant::now();
        let found = (start..start + bound)
            .position(|seed| runner::run(scenario, seed).outcome.property() == Some(property))
            .ok_or_else(|| {
                format!(
                    "{}: no {property} in seeds {start}..{} (ten times its within_seeds)",
                    scenario.name,
                    start + bound
                )
            })?;
        times.push(began.elapsed().as_secs_f64());
        counts.push(found as u64 + 1);
    }
    times.sort_by(f64::total_cmp);
    counts.sort_unstable();
    Ok(ToBug {
        scenario: scenario.name.clone(),
        property: property.to_owned(),
        time_to_bug_s: times[times.len() / 2],
        seeds_to_bug: counts[counts.len() / 2],
    })
}
