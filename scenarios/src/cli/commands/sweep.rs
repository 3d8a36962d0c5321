//! `zkharness sweep`: many seeds of many scenarios on every core.
//!
//! Every (scenario, seed) pair is one job; worker threads take jobs in order and each seed runs
//! on its own thread and runtime, so the results depend on the seeds alone, never on the number
//! of workers. The main thread judges each result as it arrives (a pass scenario must pass; a
//! positive control must be caught on one of its seeds), prints a failure with the command that
//! reproduces it, writes its report and timeline, and drops the history: memory stays flat
//! however many seeds run. At the end `summary::finish` judges each scenario and writes the
//! summary as JSON, JUnit XML and Markdown. Wall time is read only for the speed figures,
//! outside every run.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::report::{commit, exit, Outcome, SweepFailure};
use crate::runner::{self, RunResult};
use crate::scenario::{self, Loaded};
use indicatif::{ProgressBar, ProgressStyle};

use super::run::report;
use super::summary::{finish, Destination, Tally};
use super::{repro, SweepArgs};

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
            Ok(loaded) => tallies.push(Tally::new(path, loaded)),
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
                exit: Some(result.outcome.exit_code()),
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
    let destination = Destination {
        commit: commit().to_owned(),
        seeds: args.seeds.clone(),
        shard: args.shard,
        variant: args.variant.clone(),
        out: args.out,
        copies: args.copies,
    };
    finish(&destination, tallies, jobs_count, wall_s, write_error)
}
