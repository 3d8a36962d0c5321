//! Running a user's recipe from `cargo test`: a builder in the style of madsim's, turmoil's
//! and stateright's test helpers.
//!
//! ```ignore
//! #[test]
//! fn allocator_keeps_ids_unique() {
//!     custom::sim::<IdAllocator>("correct")
//!         .scenario("scenarios/lost-replies.toml")
//!         .seeds(0..200)
//!         .run()
//!         .assert_pass();
//! }
//! ```
//!
//! What it does, so that a failure is easy to act on:
//! - the seeds a scenario file pins (`seeds = [...]`: regressions) run first, then the range;
//!   `ZKH_SEED=N` runs seed N alone;
//! - the first seed of each scenario runs twice, and the two trace hashes must agree (a recipe
//!   that reads the wall clock or iterates a `HashMap` fails here, not weeks later);
//! - each failing seed writes its run report (outcome, findings, guarantees, history) under
//!   `target/zkh/<recipe>/<scenario>-seed<N>.json`, its timeline beside it, and the panic
//!   message gives the command that reruns that seed alone;
//! - [`SimRuns::assert_pass`] also fails a pass whose `sometimes` properties never happened on
//!   any seed of a scenario (an empty pass).

use std::marker::PhantomData;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use super::host::outcome_text;
use super::{CustomScenario, SimRecipe};
use crate::report::Outcome;
use crate::runner::{self, RunResult};
use crate::scenario::Loaded;

/// A test of recipe `R`'s variant over scenarios and seeds (see the module docs).
pub struct SimTest<R: SimRecipe> {
    variant: &'static str,
    scenarios: Vec<PathBuf>,
    seeds: Range<u64>,
    plan: Option<zkh_sim::fault::FaultPlan>,
    recipe: PhantomData<R>,
}

/// Starts a test of `R`'s `variant` (one of [`SimRecipe::VARIANTS`]).
///
/// # Panics
/// If `R` has no such variant (the message lists them), or cannot be registered
/// ([`super::registration_problem`]).
pub fn sim<R: SimRecipe>(variant: &str) -> SimTest<R> {
    if let Some(problem) = super::registration_problem::<R>() {
        panic!("{problem}");
    }
    let variant = R::VARIANTS
        .iter()
        .find(|v| **v == variant)
        .unwrap_or_else(|| {
            panic!(
                "{} has no variant \"{variant}\" (known: {})",
                R::NAME,
                R::VARIANTS.join(", ")
            )
        });
    SimTest {
        variant,
        scenarios: Vec::new(),
        seeds: 0..100,
        plan: None,
        recipe: PhantomData,
    }
}

impl<R: SimRecipe> SimTest<R> {
    /// Adds the scenario file at `path` (relative paths are the test crate's: cargo runs tests
    /// in its folder).
    pub fn scenario(mut self, path: impl AsRef<Path>) -> Self {
        self.scenarios.push(path.as_ref().to_owned());
        self
    }

    /// Runs every scenario under `plan` (a [`FaultPlan`](zkh_sim::fault::FaultPlan) built in
    /// Rust: `FaultPlan::new().at_ms(..).when(..)`) in place of the faults its file gives. The
    /// plan is checked as a file's faults are, and each scenario is written with it, as a file,
    /// under `target/zkh/<recipe>/`, which the reports name (so that they replay).
    pub fn faults(mut self, plan: zkh_sim::fault::FaultPlan) -> Self {
        self.plan = Some(plan);
        self
    }

    /// The seeds to run (default `0..100`), after the ones each file pins.
    pub fn seeds(mut self, seeds: Range<u64>) -> Self {
        self.seeds = seeds;
        self
    }

    /// The scenario at `path` as this test runs it: with the test's fault plan, written beside
    /// its reports, if it has one.
    fn with_plan(&self, path: &Path) -> PathBuf {
        let Some(plan) = &self.plan else {
            return path.to_owned();
        };
        let loaded = CustomScenario::<R>::load(path)
            .unwrap_or_else(|error| panic!("{error}"))
            .loaded;
        let mut file = loaded.file;
        file.faults = plan.clone();
        let dir = super::target_dir().join("zkh").join(R::NAME);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", dir.display()));
        let stem = path
            .file_stem()
            .map_or("scenario".into(), |s| s.to_string_lossy());
        // Named by its text and written whole before it is renamed into place: tests of one
        // binary run on several threads, and two of them planning the same scenario differently
        // (or alike) must never read each other's file or a half-written one.
        let text = crate::export::to_toml(&file);
        let hash = zkh_reports::types::fnv1a(text.as_bytes());
        let written = dir.join(format!("{stem}-planned-{hash:016x}.toml"));
        let partial = dir.join(format!(
            "{stem}-planned-{hash:016x}.{:?}.partial",
            std::thread::current().id()
        ));
        std::fs::write(&partial, text)
            .and_then(|()| std::fs::rename(&partial, &written))
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", written.display()));
        written
    }

    /// Runs every scenario at every seed.
    ///
    /// # Panics
    /// If a scenario file is wrong (the message names the file, line, column and field), or
    /// names another variant than this test's, or a seed of it does not replay exactly.
    pub fn run(self) -> SimRuns {
        let only = std::env::var("ZKH_SEED").ok().map(|seed| {
            seed.trim()
                .parse::<u64>()
                .expect("ZKH_SEED is a seed number")
        });
        let mut scenarios = Vec::new();
        for path in &self.scenarios {
            let path = &self.with_plan(path);
            let scenario =
                CustomScenario::<R>::load(path).unwrap_or_else(|error| panic!("{error}"));
            if let Some(named) = scenario.variant.filter(|named| *named != self.variant) {
                panic!(
                    "{}: the file names variant \"{named}\", and this test runs \"{}\"",
                    scenario.file, self.variant
                );
            }
            let loaded = (scenario.loaded.with_variant(self.variant))
                .unwrap_or_else(|error| panic!("{}: {error}", scenario.file));
            let pinned = scenario.seeds();
            let seeds: Vec<u64> = match only {
                Some(seed) => vec![seed],
                None => (pinned.iter().copied())
                    .chain(self.seeds.clone().filter(|s| !pinned.contains(s)))
                    .collect(),
            };
            let mut runs = Vec::new();
            for (place, seed) in seeds.into_iter().enumerate() {
                let run = runner::run(&loaded.resolved, seed);
                if place == 0 {
                    let again = runner::run(&loaded.resolved, seed);
                    assert_eq!(
                        run.trace, again.trace,
                        "{} seed {seed} does not replay exactly (trace {:016x}, then {:016x}): \
                         the recipe uses something besides simulated time and ClientCtx::rng",
                        scenario.file, run.trace, again.trace
                    );
                }
                runs.push(run);
            }
            scenarios.push(Ran {
                file: scenario.file.clone(),
                path: path.clone(),
                loaded: AssertUnwindSafe(loaded),
                runs,
            });
        }
        SimRuns {
            recipe: R::NAME,
            variant: self.variant,
            scenarios,
        }
    }
}

/// One scenario's runs.
#[derive(Debug)]
struct Ran {
    file: String,
    path: PathBuf,
    /// Read only once the runs are done, so a panic of an assertion leaves nothing half-made
    /// (and a user's `catch_unwind(|| runs.assert_pass())` compiles).
    loaded: AssertUnwindSafe<Loaded>,
    runs: Vec<RunResult>,
}

/// What a [`SimTest`] found: every seed of every scenario.
#[derive(Debug)]
pub struct SimRuns {
    recipe: &'static str,
    variant: &'static str,
    scenarios: Vec<Ran>,
}

impl SimRuns {
    /// Every run, with its scenario's name.
    pub fn runs(&self) -> impl Iterator<Item = (&str, &RunResult)> {
        (self.scenarios.iter()).flat_map(|s| {
            let name = s.loaded.resolved.name.as_str();
            s.runs.iter().map(move |run| (name, run))
        })
    }

    /// Requires every seed to pass, and every `sometimes` companion of the recipe to have
    /// happened on some seed of each scenario (as `zkharness sweep` requires of a recipe of
    /// your own, unless the file's `expect.reached` names the ones it must reach).
    ///
    /// # Panics
    /// With the first failing seed's outcome, where its report was written, and the command
    /// that reruns it alone.
    pub fn assert_pass(&self) {
        for scenario in &self.scenarios {
            if let Some(run) = scenario.runs.iter().find(|r| r.outcome != Outcome::Pass) {
                let written = self.write(scenario, run);
                panic!(
                    "{} ({} {}) seed {}: {}\n  report: {}\n  rerun it alone: {}",
                    scenario.file,
                    self.recipe,
                    self.variant,
                    run.seed,
                    outcome_text(&run.outcome),
                    written.display(),
                    rerun(run.seed)
                );
            }
            let reached = &scenario.loaded.resolved.reached;
            let required: Vec<&str> = match reached.is_empty() {
                true => sometimes_names(&scenario.runs),
                false => reached.iter().map(String::as_str).collect(),
            };
            let never: Vec<&str> = (required.into_iter())
                .filter(|name| {
                    !scenario
                        .runs
                        .iter()
                        .any(|run| run.findings.iter().any(|f| f.property == *name && f.holds))
                })
                .collect();
            assert!(
                never.is_empty(),
                "{}: an empty pass: on no seed did {never:?} happen, so the seeds did not test \
                 what the properties are about",
                scenario.file
            );
        }
    }

    /// Requires some seed of each scenario to violate `property` (a positive control).
    ///
    /// # Panics
    /// If a scenario's seeds all passed it, or a seed crashed the harness.
    pub fn assert_caught(&self, property: &str) {
        for scenario in &self.scenarios {
            if let Some(run) =
                (scenario.runs.iter()).find(|r| matches!(r.outcome, Outcome::Crash { .. }))
            {
                panic!(
                    "{} seed {}: {}",
                    scenario.file,
                    run.seed,
                    outcome_text(&run.outcome)
                );
            }
            let caught = scenario
                .runs
                .iter()
                .any(|run| run.outcome.property() == Some(property));
            assert!(
                caught,
                "{} ({} {}): no seed of {} violated \"{property}\"",
                scenario.file,
                self.recipe,
                self.variant,
                scenario.runs.len()
            );
        }
    }

    /// Writes `run`'s report under `target/zkh/<recipe>/` and returns its path.
    /// Writes `run`'s report and timeline under `target/zkh/<recipe>/`, as `zkharness run
    /// --out` does (so that the user's own binary replays, shrinks and renders it).
    fn write(&self, scenario: &Ran, run: &RunResult) -> PathBuf {
        let dir = super::target_dir().join("zkh").join(self.recipe);
        let report = runner::report(&scenario.path, &scenario.loaded, run, rerun(run.seed));
        runner::write_report(&dir, &report)
            .unwrap_or_else(|error| PathBuf::from(format!("(not written: {error})")))
    }
}

/// The names of the recipe's own `sometimes` companions (not the host's generic ones, such as
/// a lost reply), as the runs name them.
fn sometimes_names(runs: &[RunResult]) -> Vec<&str> {
    let mut names: Vec<&str> = (runs.iter())
        .flat_map(|run| run.companions.iter())
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The command that reruns `seed` of the test running now.
fn rerun(seed: u64) -> String {
    format!(
        "ZKH_SEED={seed} RUSTFLAGS=\"--cfg madsim\" {}",
        super::test_command(&super::current_test())
    )
}
