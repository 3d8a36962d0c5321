//! `zkharness replay REPORT.json`: runs the report's scenario and seed again and compares the
//! histories event by event: `identical`, or the first event where the runs diverge.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::report::{exit, fnv1a, RunReport, RUN_FORMAT};
use crate::runner;
use crate::scenario::Loaded;
use zkh_model::HistoryEntry;

use super::run::load_or_report;
use super::ReplayArgs;

/// Reads a run report and the scenario it names, which must not have changed since, and whose
/// recipe must be the one the report's run had (a recipe of the user's own: registered by the
/// same crate and version).
pub(super) fn load_report(path: &Path) -> Result<(RunReport, PathBuf, Loaded), ExitCode> {
    let bad = |message: String| {
        eprintln!("zkharness: {message}");
        ExitCode::from(exit::BAD_INPUT)
    };
    let text = std::fs::read_to_string(path)
        .map_err(|error| bad(format!("{}: cannot read the file: {error}", path.display())))?;
    let report: RunReport = serde_json::from_str(&text).map_err(|error| {
        bad(format!(
            "{}:{}:{}: not a run report: {error}",
            path.display(),
            error.line(),
            error.column()
        ))
    })?;
    if report.format != RUN_FORMAT {
        return Err(bad(format!(
            "{}: a report of format {:?}; this zkharness reads {RUN_FORMAT:?}",
            path.display(),
            report.format
        )));
    }
    let scenario_path = PathBuf::from(&report.scenario.path);
    let mut loaded = load_or_report(&scenario_path)?;
    // A run given another variant than the file's (`run --variant`) is replayed with it.
    if let Some(variant) = report.options["variant"].as_str() {
        if variant != loaded.resolved.variant {
            loaded = loaded
                .with_variant(variant)
                .map_err(|message| bad(format!("{}: {message}", scenario_path.display())))?;
        }
    }
    let hash = format!("{:016x}", fnv1a(loaded.text.as_bytes()));
    if hash != report.scenario.text_hash {
        eprintln!(
            "zkharness: the scenario {} changed since the report was written (its text hash \
             was {}, is {hash}): the report no longer says what this file does",
            scenario_path.display(),
            report.scenario.text_hash
        );
        return Err(ExitCode::from(exit::UNEXPECTED));
    }
    let here = loaded.resolved.recipe.package();
    if here != report.recipe_package {
        let named = |package: &Option<String>| match package {
            Some(package) => format!("registered by {package}"),
            None => "built in".to_owned(),
        };
        eprintln!(
            "zkharness: the report's recipe \"{}\" was {}, and this binary's is {}: it would not \
             run the recipe the report is about (replay with the binary that wrote it)",
            loaded.resolved.recipe.as_str(),
            named(&report.recipe_package),
            named(&here)
        );
        return Err(ExitCode::from(exit::UNEXPECTED));
    }
    Ok((report, scenario_path, loaded))
}

fn show(entry: Option<&HistoryEntry>) -> String {
    match entry {
        Some(entry) => format!("at {} us: {:?}", entry.at_us, entry.event),
        None => "the end of the history".to_owned(),
    }
}

pub(super) fn replay(args: ReplayArgs) -> ExitCode {
    let (report, scenario_path, loaded) = match load_report(&args.report) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    say!("seed: {}", report.seed);
    say!(
        "scenario: {} ({})",
        report.scenario.name,
        scenario_path.display()
    );
    let result = runner::run(&loaded.resolved, report.seed);
    let expected = report.history.entries();
    let got = result.history.entries();
    let diverged = (0..expected.len().max(got.len())).find(|&i| expected.get(i) != got.get(i));
    match diverged {
        None => {
            say!(
                "identical: {} events, trace={:016x}, result: {}",
                got.len(),
                result.trace,
                result.outcome.headline()
            );
            ExitCode::SUCCESS
        }
        Some(index) => {
            say!("diverged at event {index}");
            say!("  expected {}", show(expected.get(index)));
            say!("  got      {}", show(got.get(index)));
            say!(
                "the report's trace {}, this run's {:016x} (result: {})",
                report.trace,
                result.trace,
                result.outcome.headline()
            );
            ExitCode::from(exit::UNEXPECTED)
        }
    }
}
