//! `zkharness shrink REPORT.json`: the fewest, shortest, earliest faults that still give the
//! report's violation.
//!
//! 1. The random faults the seed drew become scripted faults at the same times (drawn again
//!    from the seed's fault stream, so the run is the same), so that each can be dropped alone.
//! 2. Delta debugging (ddmin) over all the faults: drop halves, then quarters, and so on, keeping
//!    any smaller set under which the same seed still violates the same property.
//! 3. Each remaining fault with a duration is halved while the violation stays; each trigger is
//!    moved to an earlier matching operation while it stays.
//! 4. Each remaining fault is dropped once more, trying the next 8 seeds: a fault the bug does
//!    not need on another seed goes, and the scenario moves to that seed.
//!
//! The result is written as a scenario pinned to its seed (`seeds = [N]`), expecting the
//! violation, by default into `scenarios/regressions/`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::export::to_toml;
use crate::report::exit;
use crate::runner;
use crate::scenario::{Expect, Resolved};
use zkh_sim::fault::{Fault, FaultPlan, RandomFaults, ScriptedFault, TriggeredFault};
use zkh_sim::seed::{sub_rng, Subsystem};

use super::replay::load_report;
use super::{invocation, ShrinkArgs};

#[derive(Clone, Debug, PartialEq)]
enum Item {
    Scripted(ScriptedFault),
    Triggered(TriggeredFault),
}

/// The plan of `items`, with `random` laid over them.
fn plan_of(items: &[Item], random: Option<RandomFaults>) -> FaultPlan {
    let mut plan = FaultPlan {
        random,
        ..FaultPlan::default()
    };
    for item in items {
        match item {
            Item::Scripted(f) => plan.scripted.push(f.clone()),
            Item::Triggered(f) => plan.triggered.push(f.clone()),
        }
    }
    plan
}

fn describe(item: &Item) -> String {
    match item {
        Item::Scripted(f) => format!("at {} ms {:?}", f.at_ms, f.fault),
        Item::Triggered(f) => format!(
            "on {:?} #{} under {} {:?}",
            f.when.op, f.when.nth, f.when.path_prefix, f.fault
        ),
    }
}

struct Shrinker {
    base: Resolved,
    property: String,
    runs: u32,
    max_runs: u32,
}

impl Shrinker {
    /// Whether `items` on `seed` still violate the property; `None` once out of runs.
    fn fails(&mut self, items: &[Item], seed: u64) -> Option<bool> {
        if self.runs >= self.max_runs {
            return None;
        }
        self.runs += 1;
        let mut scenario = self.base.clone();
        scenario.faults = plan_of(items, scenario.faults.random.take());
        let result = runner::run(&scenario, seed);
        Some(result.outcome.property() == Some(self.property.as_str()))
    }

    /// ddmin: a smallest subset of `items` that still fails on `seed` (1-minimal when it
    /// finishes within the runs).
    fn ddmin(&mut self, mut items: Vec<Item>, seed: u64) -> Vec<Item> {
        if self.fails(&[], seed) == Some(true) {
            return Vec::new();
        }
        let mut chunks = 2;
        while items.len() >= 2 {
            let size = items.len().div_ceil(chunks);
            let mut reduced = false;
            for start in (0..items.len()).step_by(size) {
                let complement: Vec<Item> = items[..start]
                    .iter()
                    .chain(&items[(start + size).min(items.len())..])
                    .cloned()
                    .collect();
                match self.fails(&complement, seed) {
                    Some(true) => {
                        items = complement;
                        chunks = (chunks - 1).max(2);
                        reduced = true;
                        break;
                    }
                    Some(false) => {}
                    None => return items,
                }
            }
            if !reduced {
                if chunks >= items.len() {
                    break;
                }
                chunks = (chunks * 2).min(items.len());
            }
        }
        items
    }

    /// Halves durations and moves triggers earlier while the violation stays.
    fn simplify(&mut self, items: &mut [Item], seed: u64) -> usize {
        let mut changes = 0;
        for index in 0..items.len() {
            for _ in 0..16 {
                let mut candidate = items[index].clone();
                let smaller = match &mut candidate {
                    Item::Scripted(ScriptedFault { fault, .. })
                    | Item::Triggered(TriggeredFault { fault, .. }) => halve_duration(fault),
                };
                let earlier = match &mut candidate {
                    Item::Triggered(t) if !smaller && t.when.nth > 1 => {
                        t.when.nth -= 1;
                        true
                    }
                    _ => false,
                };
                if !smaller && !earlier {
                    break;
                }
                let mut trial = items.to_vec();
                trial[index] = candidate.clone();
                if self.fails(&trial, seed) != Some(true) {
                    break;
                }
                items[index] = candidate;
                changes += 1;
            }
        }
        changes
    }
}

/// Halves `fault`'s duration, if it has one of at least 200 ms.
fn halve_duration(fault: &mut Fault) -> bool {
    let duration = match fault {
        Fault::Partition { duration_ms, .. }
        | Fault::PauseClient { duration_ms, .. }
        | Fault::SlowFollower { duration_ms, .. }
        | Fault::DelayWatch { duration_ms, .. } => duration_ms,
        _ => return false,
    };
    if *duration < 200 {
        return false;
    }
    *duration /= 2;
    true
}

pub(super) fn shrink(args: ShrinkArgs) -> ExitCode {
    let (report, scenario_path, loaded) = match load_report(&args.report) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let Some(property) = report.outcome.property().map(str::to_owned) else {
        eprintln!(
            "zkharness: nothing to shrink: seed {} of {} ended {}, not in a violation",
            report.seed,
            report.scenario.name,
            report.outcome.headline()
        );
        return ExitCode::from(exit::BAD_INPUT);
    };
    let scenario = &loaded.resolved;
    let mut seed = report.seed;
    let plan = &scenario.faults;
    let mut items: Vec<Item> = plan.scripted.iter().cloned().map(Item::Scripted).collect();
    items.extend(plan.triggered.iter().cloned().map(Item::Triggered));
    let mut shrinker = Shrinker {
        base: Resolved {
            faults: FaultPlan::default(),
            ..scenario.clone()
        },
        property: property.clone(),
        runs: 0,
        max_runs: args.max_runs,
    };
    if let Some(random) = &plan.random {
        let mut rng = sub_rng(seed, Subsystem::Faults);
        let drawn = random.draw(&mut rng, scenario.fault_ms, scenario.clients);
        let mut with_drawn = items.clone();
        // A restart drawn after the fault phase never happened: the heal restarted the server.
        with_drawn.extend(
            drawn
                .into_iter()
                .filter(|f| f.at_ms < scenario.fault_ms)
                .map(Item::Scripted),
        );
        if shrinker.fails(&with_drawn, seed) == Some(true) {
            items = with_drawn;
        } else {
            // Not the same run without the random plan: keep it, and shrink the rest.
            shrinker.base.faults.random = Some(random.clone());
        }
    }
    let before = items.len();
    say!(
        "shrinking {} seed {}: {} {} faults{}",
        report.scenario.name,
        seed,
        property,
        before,
        if shrinker.base.faults.random.is_some() {
            " (the random plan kept)"
        } else {
            ""
        }
    );
    let mut kept = shrinker.ddmin(items.clone(), seed);
    let simplified = shrinker.simplify(&mut kept, seed);
    let mut index = 0;
    while index < kept.len() {
        let mut without = kept.clone();
        without.remove(index);
        let other = (seed + 1..=seed + 8).find(|s| shrinker.fails(&without, *s) == Some(true));
        match other {
            Some(other) => {
                say!("  seed {other} needs no {}", describe(&kept[index]));
                kept = without;
                seed = other;
            }
            None => index += 1,
        }
    }
    let removed: Vec<String> = items
        .iter()
        .filter(|i| !kept.contains(i))
        .map(describe)
        .collect();
    let gave_up = shrinker.runs >= shrinker.max_runs;
    let mut file = loaded.file.clone();
    file.description = format!(
        "shrunk from seed {} of {} ({}): {} of {} faults kept",
        report.seed,
        scenario_path.display(),
        property,
        kept.len(),
        before
    );
    file.faults = plan_of(&kept, shrinker.base.faults.random.clone());
    file.seeds = vec![seed];
    file.expect = Expect {
        outcome: None,
        violation: Some(property.clone()),
        within_seeds: None,
        reached: Vec::new(),
    };
    let out = args.out.unwrap_or_else(|| {
        PathBuf::from("scenarios/regressions")
            .join(format!("{}-seed{}.toml", report.scenario.name, seed))
    });
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Err(error) = std::fs::create_dir_all(parent) {
            eprintln!("zkharness: cannot create {}: {error}", parent.display());
            return ExitCode::from(exit::BAD_INPUT);
        }
    }
    if let Err(error) = std::fs::write(&out, to_toml(&file)) {
        eprintln!("zkharness: cannot write {}: {error}", out.display());
        return ExitCode::from(exit::BAD_INPUT);
    }
    say!("removed {} of {before} faults:", removed.len());
    for line in &removed {
        say!("  - {line}");
    }
    say!(
        "kept {} ({simplified} shortened or moved earlier):",
        kept.len()
    );
    for item in &kept {
        say!("  + {}", describe(item));
    }
    say!("{} runs; seed {seed}", shrinker.runs);
    say!("wrote {}", out.display());
    say!(
        "run it: {} run {} --seed {seed}",
        invocation(),
        out.display()
    );
    if gave_up {
        say!(
            "gave up after {} runs: the result may not be minimal",
            shrinker.max_runs
        );
        return ExitCode::from(exit::GAVE_UP);
    }
    ExitCode::SUCCESS
}
