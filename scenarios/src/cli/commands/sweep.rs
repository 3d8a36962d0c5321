//! `zkharness sweep`: many seeds of many scenarios on every core.
//!
//! Every (scenario, seed) pair is one job; worker threads take jobs in order and each seed runs
//! on its own thread and runtime, so the results depend on the seeds alone, never on the number
//! of workers. The main thread judges each result as it arrives (a pass scenario must pass; a
//! positive control must be caught on one of its seeds), prints a failure with the command that
//! reproduces it, writes its report and timeline, and drops the history: memory stays flat
//! however many seeds run. At the end it writes the summary as JSON, JUnit XML and Markdown. Wall time is read only for the speed figures, outside every run.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::report::{
    commit, exit, fnv1a, Herd, Outcome, ScenarioSummary, SweepFailure, SweepSummary, SWEEP_FORMAT,
};
use crate::runner::{self, RunResult};
use crate::scenario::{self, Loaded};
use indicatif::{ProgressBar, ProgressStyle};

use super::run::report;
use super::{invocation, repro, SweepArgs};

use crate::runner::write_report;

/// The scenario files named by `paths`: files as given, folders' `*.toml` files in name order.
pub(super) fn scenario_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path)
                .map_err(|error| format!("cannot read the folder {}: {error}", path.display()))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.is_file())
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(format!(
                    "{} holds no scenario (*.toml) files",
                    path.display()
                ));
            }
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

/// The command that reruns `seed` of `loaded`, read from `path` (with the sweep's `--variant`).
fn rerun(loaded: &Loaded, path: &Path, seed: u64) -> String {
    match &loaded.variant_given {
        Some(variant) => format!("{} --variant {variant}", repro(path, seed)),
        None => repro(path, seed),
    }
}

/// What the main thread keeps of each scenario while the sweep runs.
struct Tally {
    path: PathBuf,
    loaded: Loaded,
    seeds_run: u64,
    run_seconds: f64,
    failures: Vec<SweepFailure>,
    caught_at: Vec<u64>,
    traces: Vec<(u64, u64)>,
    herd: Option<Herd>,
    worst: Option<u8>,
    /// The recipe's own `sometimes` companions, and whether each happened on a seed so far.
    sometimes: BTreeMap<String, bool>,
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

pub(super) fn sweep(args: SweepArgs) -> ExitCode {
    if args.without_guarantees {
        crate::runner::skip_guarantees_for_the_benchmark();
    }
    let files = match scenario_files(&args.scenarios) {
        Ok(files) => files,
        Err(message) => {
            eprintln!("zkharness: {message}");
            return ExitCode::from(exit::BAD_INPUT);
        }
    };
    let mut tallies = Vec::new();
    let mut bad = false;
    for path in files {
        let loaded = scenario::load(&path).map_err(|error| error.to_string());
        let loaded = match (loaded, &args.variant) {
            (Ok(loaded), Some(variant)) => (loaded.with_variant(variant))
                .map_err(|message| format!("{}: {message}", path.display())),
            (loaded, _) => loaded,
        };
        match loaded {
            Ok(loaded) => tallies.push(Tally {
                path,
                sometimes: BTreeMap::new(),
                loaded,
                seeds_run: 0,
                run_seconds: 0.0,
                failures: Vec::new(),
                caught_at: Vec::new(),
                traces: Vec::new(),
                herd: None,
                worst: None,
            }),
            Err(error) => {
                eprintln!("zkharness: {error}");
                bad = true;
            }
        }
    }
    if bad {
        return ExitCode::from(exit::BAD_INPUT);
    }
    let jobs_count = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    // (scenario, seed), scenario by scenario: a shard takes the seeds of its residue, and
    // whole the controls and pinned scenarios of its residue.
    let mut work: Vec<(usize, u64)> = Vec::new();
    for (index, tally) in tallies.iter().enumerate() {
        let scenario = &tally.loaded.resolved;
        let whole = scenario.is_control() || !scenario.seeds.is_empty();
        for seed in scenario.sweep_seeds(args.seeds.clone()) {
            let slice = if whole { index as u64 } else { seed };
            if args.shard.is_none_or(|(i, n)| slice % n == i) {
                work.push((index, seed));
            }
        }
    }
    eprintln!(
        "sweep: {} scenarios, seeds {}..{}{}, {} jobs on {} threads, commit {}",
        tallies.len(),
        args.seeds.start,
        args.seeds.end,
        args.shard
            .map_or(String::new(), |(i, n)| format!(", shard {i}/{n}")),
        work.len(),
        jobs_count,
        commit()
    );
    let scenarios: Arc<Vec<_>> =
        Arc::new(tallies.iter().map(|t| t.loaded.resolved.clone()).collect());
    let work = Arc::new(work);
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<(usize, RunResult, f64)>();
    let started = Instant::now();
    let workers: Vec<_> = (0..jobs_count)
        .map(|_| {
            let (scenarios, work, next, stop, tx) = (
                Arc::clone(&scenarios),
                Arc::clone(&work),
                Arc::clone(&next),
                Arc::clone(&stop),
                tx.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(&(index, seed)) = work.get(next.fetch_add(1, Ordering::Relaxed))
                    else {
                        return;
                    };
                    let began = Instant::now();
                    let mut result = runner::run(&scenarios[index], seed);
                    // Only a report needs the history: a failure's, or a control's. The rest is
                    // freed here, on the thread that made it, not sent to be freed by another.
                    let scenario = &scenarios[index];
                    if !scenario.is_control() && result.as_expected(scenario) {
                        result.history = zkh_model::History::new();
                    }
                    if tx
                        .send((index, result, began.elapsed().as_secs_f64()))
                        .is_err()
                    {
                        return;
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(work.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} seeds, {per_sec}, eta {eta} {msg}")
                .expect("a valid template"),
        );
        Some(bar)
    } else {
        None
    };
    let log = |line: String| match &bar {
        Some(bar) => bar.println(line),
        None => eprintln!("{line}"),
    };
    let mut last_log = Instant::now();
    let mut done = 0usize;
    let mut failures = 0usize;
    let mut write_error = None;
    for (index, result, seconds) in rx {
        done += 1;
        let tally = &mut tallies[index];
        tally.seeds_run += 1;
        tally.run_seconds += seconds;
        tally.traces.push((result.seed, result.trace));
        for companion in &result.companions {
            let happened = (result.findings.iter())
                .any(|f| f.property == *companion && f.class == "sometimes" && f.holds);
            *tally.sometimes.entry(companion.clone()).or_default() |= happened;
        }
        if let Some(herd) = &result.herd {
            tally.herd = Some(tally.herd.take().unwrap_or_default().merge(herd));
        }
        let scenario = &tally.loaded.resolved;
        let as_expected = result.as_expected(scenario);
        let keep_report = if scenario.is_control() {
            if as_expected {
                tally.caught_at.push(result.seed);
            }
            as_expected && tally.caught_at.len() == 1
        } else {
            !as_expected
        };
        let mut report_path = None;
        if keep_report {
            match write_report(&args.out, &report(&tally.path, &tally.loaded, &result)) {
                Ok(path) => report_path = Some(path.display().to_string()),
                Err(message) => write_error = Some(message),
            }
        }
        if !scenario.is_control() && !as_expected {
            failures += 1;
            raise(&mut tally.worst, result.outcome.exit_code());
            let property = match &result.outcome {
                Outcome::FaultsNotFired { .. } => "faults not fired".to_owned(),
                Outcome::Stuck { .. } => "stuck".to_owned(),
                Outcome::Crash { .. } => "crash".to_owned(),
                other => other.property().unwrap_or("pass").to_owned(),
            };
            log(format!(
                "FAIL {} seed {}: {}\n  reproduce: {}{}",
                scenario.name,
                result.seed,
                result.outcome.headline(),
                rerun(&tally.loaded, &tally.path, result.seed),
                report_path
                    .as_deref()
                    .map_or(String::new(), |p| format!("\n  report: {p}")),
            ));
            tally.failures.push(SweepFailure {
                seed: result.seed,
                property,
                trace: format!("{:016x}", result.trace),
                repro: rerun(&tally.loaded, &tally.path, result.seed),
                report: report_path,
            });
            if args.fail_fast {
                stop.store(true, Ordering::Relaxed);
            }
        }
        match &bar {
            Some(bar) => {
                bar.inc(1);
                if failures > 0 {
                    bar.set_message(format!("{failures} failing"));
                }
            }
            None if last_log.elapsed() >= Duration::from_secs(5) => {
                last_log = Instant::now();
                eprintln!(
                    "sweep: {done}/{} seeds, {failures} failing, {:.0} seeds/s",
                    work.len(),
                    done as f64 / started.elapsed().as_secs_f64()
                );
            }
            None => {}
        }
    }
    for worker in workers {
        worker
            .join()
            .expect("a sweep worker panicked outside a run");
    }
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let wall_s = started.elapsed().as_secs_f64();
    finish(&args, tallies, jobs_count, wall_s, write_error)
}

fn finish(
    args: &SweepArgs,
    tallies: Vec<Tally>,
    jobs: usize,
    wall_s: f64,
    write_error: Option<String>,
) -> ExitCode {
    let mut worst: Option<u8> = None;
    let mut never_reached = 0usize;
    let mut summaries = Vec::new();
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
        if let Some(code) = tally.worst {
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
        summaries.push(ScenarioSummary {
            scenario: scenario.name.clone(),
            path: tally.path.display().to_string(),
            expected: scenario.expected(),
            seeds_run: tally.seeds_run,
            failures: tally.failures,
            caught_at: tally.caught_at,
            ok,
            seeds_per_sec,
            combined_trace: format!("{:016x}", fnv1a(&combined)),
            herd: tally.herd,
            sometimes_never,
        });
    }
    let seeds_run: u64 = summaries.iter().map(|s| s.seeds_run).sum();
    let summary = SweepSummary {
        format: SWEEP_FORMAT.to_owned(),
        commit: crate::report::commit().to_owned(),
        seeds: format!("{}..{}", args.seeds.start, args.seeds.end),
        shard: args.shard.map(|(i, n)| format!("{i}/{n}")),
        jobs,
        ok: summaries.iter().all(|s| s.ok),
        scenarios: summaries,
        seeds_run,
        wall_s,
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
        (&args.json, &text),
        (&args.junit, &junit),
        (&args.markdown, &markdown),
    ] {
        if let Some(file) = file {
            written.push(write(file, text));
        }
    }
    say!(
        "{} seeds of {} scenarios in {:.1} s ({:.0} seeds/s on {jobs} threads): {}",
        seeds_run,
        summary.scenarios.len(),
        wall_s,
        seeds_run as f64 / wall_s.max(1e-9),
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
