//! A sweep's verdicts and summary, shared by `zkharness sweep` and `zkharness merge`.
//!
//! A sweep keeps a tally per scenario while its seeds run (seeds run, failures, the seeds that
//! caught a control, each seed's trace hash, which `sometimes` companions happened); at the end
//! each scenario is judged from its tally alone (a pass scenario must have no failure and reach
//! the companions it requires; a positive control must be caught on one of its seeds) and the
//! summary is written. Everything judged is a function of the set of seeds run, never of their
//! order or of how many threads, shards or machines ran them: the per-seed traces are sorted
//! by seed before they are combined. So `merge` rebuilds the same tallies from the shards'
//! summaries and gets the summary, the verdicts and the exit code an unsharded sweep gets.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::report::{exit, fnv1a, Herd, ScenarioSummary, SweepFailure, SweepSummary, SWEEP_FORMAT};
use crate::scenario::Loaded;
use zkh_reports::types::SeedTrace;

use super::{invocation, SummaryCopies};

/// Where and as what a summary is written: the sweep's arguments, or the merge's.
pub(super) struct Destination {
    /// The commit the seeds ran on.
    pub(super) commit: String,
    /// The seeds asked for.
    pub(super) seeds: Range<u64>,
    /// The shard run, if any: its summary keeps each seed's trace.
    pub(super) shard: Option<(u64, u64)>,
    /// The variant given in place of the files' (`--variant`).
    pub(super) variant: Option<String>,
    /// The reports' folder (`summary.json`, `junit.xml`, `summary.md`).
    pub(super) out: PathBuf,
    /// Extra copies: `--json`, `--junit`, `--markdown`.
    pub(super) copies: SummaryCopies,
}

/// What the main thread keeps of each scenario while the sweep runs.
pub(super) struct Tally {
    pub(super) path: PathBuf,
    pub(super) loaded: Loaded,
    pub(super) seeds_run: u64,
    pub(super) run_seconds: f64,
    pub(super) failures: Vec<SweepFailure>,
    pub(super) caught_at: Vec<u64>,
    pub(super) traces: Vec<(u64, u64)>,
    pub(super) herd: Option<Herd>,
    /// The recipe's own `sometimes` companions, and whether each happened on a seed so far.
    pub(super) sometimes: BTreeMap<String, bool>,
}

impl Tally {
    /// Nothing run yet of `loaded`, read from `path`.
    pub(super) fn new(path: PathBuf, loaded: Loaded) -> Tally {
        Tally {
            path,
            loaded,
            seeds_run: 0,
            run_seconds: 0.0,
            failures: Vec::new(),
            caught_at: Vec::new(),
            traces: Vec::new(),
            herd: None,
            sometimes: BTreeMap::new(),
        }
    }
}

/// Which exit code wins when several failures happened: a crash, then safety, then liveness,
/// then anything else unexpected.
fn rank(code: u8) -> u8 {
    match code {
        exit::CRASH => 4,
        exit::SAFETY => 3,
        exit::LIVENESS => 2,
        _ => 1,
    }
}

/// Makes `worst` the graver of itself and `code`.
fn raise(worst: &mut Option<u8>, code: u8) {
    if worst.is_none_or(|w| rank(code) > rank(w)) {
        *worst = Some(code);
    }
}

/// Judges each scenario of a sweep (or of merged shards) from its tally, prints the table and
/// writes the summary as JSON, JUnit XML and Markdown: the exit code a sweep of `tallies`
/// has.
pub(super) fn finish(
    args: &Destination,
    tallies: Vec<Tally>,
    jobs: usize,
    wall_s: f64,
    write_error: Option<String>,
) -> ExitCode {
    let mut worst: Option<u8> = None;
    let mut never_reached = 0usize;
    let mut summaries = Vec::new();
    // The scenarios' combined traces, in list order: the sweep's own combined trace.
    let mut sweep_combined = Vec::with_capacity(tallies.len() * 8);
    say!(
        "{:<44} {:<34} {:>6} {:>8} {:>9}",
        "scenario",
        "expected",
        "seeds",
        "failing",
        "seeds/s"
    );
    for mut tally in tallies {
        let scenario = &tally.loaded.resolved;
        tally.traces.sort_unstable();
        let mut combined = Vec::with_capacity(tally.traces.len() * 8);
        for (_, trace) in &tally.traces {
            combined.extend_from_slice(&trace.to_le_bytes());
        }
        let combined = fnv1a(&combined);
        sweep_combined.extend_from_slice(&combined.to_le_bytes());
        tally.caught_at.sort_unstable();
        tally.failures.sort_by_key(|f| f.seed);
        let sometimes_never: Vec<String> = (tally.sometimes.iter())
            .filter(|(_, happened)| !**happened)
            .map(|(name, _)| name.clone())
            .collect();
        // The companions the file requires (`expect.reached`) that never happened: the pass
        // did not reach what its properties judge.
        // By default a recipe of the user's own must reach every companion, as its own tests'
        // `assert_pass` requires; a built-in's catalogue scenario each aim at one fault, and
        // require only what the file names.
        let own_recipe = scenario.recipe.package().is_some();
        let required: Vec<&String> = match (scenario.reached.is_empty(), own_recipe) {
            _ if scenario.is_control() => Vec::new(),
            (false, _) => scenario.reached.iter().collect(),
            (true, true) => tally.sometimes.keys().collect(),
            (true, false) => Vec::new(),
        };
        let unreached: Vec<&String> = (required.into_iter())
            .filter(|name| !tally.sometimes.get(*name).copied().unwrap_or(false))
            .collect();
        let ok = if scenario.is_control() {
            tally.seeds_run == 0 || !tally.caught_at.is_empty()
        } else {
            tally.failures.is_empty() && (tally.seeds_run == 0 || unreached.is_empty())
        };
        if tally.seeds_run > 0 && !unreached.is_empty() {
            let known: Vec<&str> = tally.sometimes.keys().map(String::as_str).collect();
            say!(
                "NOT REACHED: {} ({}) expects {} to happen, and none of its {} seeds showed it \
                 (the recipe's companions: {}): an empty pass",
                scenario.name,
                tally.path.display(),
                unreached
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                tally.seeds_run,
                known.join(", ")
            );
            raise(&mut worst, exit::UNEXPECTED);
        }
        if !scenario.is_control() && !sometimes_never.is_empty() {
            never_reached += 1;
        }
        if scenario.is_control() && !ok {
            say!(
                "CONTROL NOT CAUGHT: {} ({}) expects {} within {} seeds, and none of its {} seeds showed it",
                scenario.name,
                tally.path.display(),
                scenario.expected(),
                scenario.within_seeds,
                tally.seeds_run
            );
            raise(&mut worst, exit::UNEXPECTED);
        }
        for code in tally.failures.iter().filter_map(|f| f.exit) {
            raise(&mut worst, code);
        }
        let seeds_per_sec = tally.seeds_run as f64 / tally.run_seconds.max(1e-9);
        let failing = if scenario.is_control() {
            match tally.caught_at.first() {
                Some(seed) => format!("caught@{seed}"),
                None if tally.seeds_run == 0 => "-".to_owned(),
                None => "MISSED".to_owned(),
            }
        } else {
            tally.failures.len().to_string()
        };
        say!(
            "{:<44} {:<34} {:>6} {:>8} {:>9.0}",
            scenario.name,
            scenario.expected(),
            tally.seeds_run,
            failing,
            seeds_per_sec
        );
        let traces = match args.shard {
            Some(_) => (tally.traces.iter())
                .map(|&(seed, trace)| SeedTrace {
                    seed,
                    trace: format!("{trace:016x}"),
                })
                .collect(),
            None => Vec::new(),
        };
        summaries.push(ScenarioSummary {
            scenario: scenario.name.clone(),
            path: tally.path.display().to_string(),
            expected: scenario.expected(),
            seeds_run: tally.seeds_run,
            failures: tally.failures,
            caught_at: tally.caught_at,
            ok,
            seeds_per_sec,
            combined_trace: format!("{combined:016x}"),
            herd: tally.herd,
            sometimes_never,
            sometimes: tally.sometimes,
            traces,
        });
    }
    let seeds_run: u64 = summaries.iter().map(|s| s.seeds_run).sum();
    let summary = SweepSummary {
        format: SWEEP_FORMAT.to_owned(),
        commit: args.commit.clone(),
        seeds: format!("{}..{}", args.seeds.start, args.seeds.end),
        shard: args.shard.map(|(i, n)| format!("{i}/{n}")),
        variant: args.variant.clone(),
        jobs,
        ok: summaries.iter().all(|s| s.ok),
        scenarios: summaries,
        seeds_run,
        wall_s,
        combined_trace: format!("{:016x}", fnv1a(&sweep_combined)),
    };
    let text = serde_json::to_string_pretty(&summary).expect("a summary serialises") + "\n";
    let junit = zkh_reports::junit::junit(&summary);
    let markdown = zkh_reports::markdown::markdown(&summary);
    let mut written = vec![
        write(&args.out.join("summary.json"), &text),
        write(&args.out.join("junit.xml"), &junit),
        write(&args.out.join("summary.md"), &markdown),
    ];
    let herds: Vec<(&str, &Herd)> = (summary.scenarios.iter())
        .filter_map(|s| s.herd.as_ref().map(|herd| (s.scenario.as_str(), herd)))
        .filter(|(_, herd)| herd.releases > 0)
        .collect();
    if !herds.is_empty() {
        written.push(write(
            &args.out.join("herd.svg"),
            &zkh_reports::herd::chart(&herds),
        ));
    }
    for (file, text) in [
        (&args.copies.json, &text),
        (&args.copies.junit, &junit),
        (&args.copies.markdown, &markdown),
    ] {
        if let Some(file) = file {
            written.push(write(file, text));
        }
    }
    say!(
        "{} seeds of {} scenarios in {:.1} s ({:.0} seeds/s on {jobs} threads), combined trace {}: {}",
        seeds_run,
        summary.scenarios.len(),
        wall_s,
        seeds_run as f64 / wall_s.max(1e-9),
        summary.combined_trace,
        if summary.ok {
            "every scenario as expected"
        } else {
            "NOT as expected"
        }
    );
    if never_reached > 0 {
        say!(
            "sometimes companions never reached in {never_reached} scenarios expecting a pass \
             (each one's `sometimes_never` in summary.json; `expect.reached` in a scenario file \
             makes one required)"
        );
    }
    say!("reports and summary: {}", args.out.display());
    if !summary.ok {
        say!(
            "replay a report: {0} replay REPORT.json; shrink it: {0} shrink REPORT.json",
            invocation()
        );
    }
    for outcome in written.into_iter().chain(write_error.map(Err)) {
        if let Err(message) = outcome {
            eprintln!("zkharness: {message}");
            return ExitCode::from(exit::BAD_INPUT);
        }
    }
    ExitCode::from(worst.unwrap_or(exit::PASS))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|error| format!("cannot create {}: {error}", parent.display()))?;
    }
    std::fs::write(path, text).map_err(|error| format!("cannot write {}: {error}", path.display()))
}
