//! `zkharness run SCENARIO --seed N [--out DIR]`: one seed of a scenario, its findings, and a
//! last line a script can read: `result: <outcome> seed=N trace=<hex>`.

use std::path::Path;
use std::process::ExitCode;

use crate::report::{exit, FindingRecord, RunReport};
use crate::runner::{self, RunResult};
use crate::scenario::{self, Loaded, Resolved};

use super::{repro, RunArgs};

/// Loads a scenario, or prints why it cannot be and gives the bad-input code.
pub(super) fn load_or_report(path: &Path) -> Result<Loaded, ExitCode> {
    scenario::load(path).map_err(|error| {
        eprintln!("zkharness: {error}");
        ExitCode::from(exit::BAD_INPUT)
    })
}

/// One line of the scenario's options.
pub(super) fn describe(scenario: &Resolved) -> String {
    let plan = &scenario.faults;
    format!(
        "{} {}, {} servers, {} clients, session {} ms, {}; faults: {} scripted, {} triggered, {}; \
         phases: faults {} ms, liveness {} ms{}",
        scenario.recipe.as_str(),
        scenario.variant,
        scenario.servers,
        scenario.clients,
        scenario.session_timeout_ms,
        match scenario.recipe.package() {
            // A recipe of the user's own: its crate, and its knobs as the file gives them.
            Some(package) => format!(
                "registered by {package}, config {}",
                scenario.config.as_ref().map_or_else(
                    || "default".to_owned(),
                    |table| toml::to_string(table)
                        .unwrap_or_default()
                        .trim()
                        .replace('\n', ", ")
                )
            ),
            None if scenario.fenced => "fenced".to_owned(),
            None => "unfenced".to_owned(),
        },
        plan.scripted.len(),
        plan.triggered.len(),
        match &plan.random {
            Some(random) if random.swarm => "random (swarm: kinds and rates drawn per seed)",
            Some(_) => "random",
            None => "no random",
        },
        scenario.fault_ms,
        scenario.liveness_ms,
        match scenario.recipe.registration.phases().leader_within_ms {
            Some(_) => format!(", leader within {} ms", scenario.leader_within_ms),
            None => String::new(),
        },
    )
}

/// One line per finding: its verdict, name, class and detail.
fn print_findings(findings: &[FindingRecord]) {
    for finding in findings {
        let mark = match (finding.class.as_str(), finding.holds) {
            ("sometimes", true) => "happened",
            ("sometimes", false) => "not seen",
            (_, true) => "holds",
            (_, false) => "VIOLATED",
        };
        say!(
            "  {mark:<9} {} ({}): {}",
            finding.property,
            finding.class,
            finding.detail
        );
    }
}

/// The report of `result`, a run of the scenario `loaded` read from `path`, with the command
/// that reproduces it.
pub(super) fn report(path: &Path, loaded: &Loaded, result: &RunResult) -> RunReport {
    let repro = match &loaded.variant_given {
        Some(variant) => format!("{} --variant {variant}", repro(path, result.seed)),
        None => repro(path, result.seed),
    };
    runner::report(path, loaded, result, repro)
}

pub(super) fn run(args: RunArgs) -> ExitCode {
    let mut loaded = match load_or_report(&args.scenario) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if let Some(variant) = &args.variant {
        loaded = match loaded.with_variant(variant) {
            Ok(loaded) => loaded,
            Err(message) => {
                eprintln!("zkharness: {}: {message}", args.scenario.display());
                return ExitCode::from(exit::BAD_INPUT);
            }
        };
    }
    let scenario = &loaded.resolved;
    say!("seed: {}", args.seed);
    say!("scenario: {} ({})", scenario.name, args.scenario.display());
    say!("options: {}", describe(scenario));
    say!("expect: {}", scenario.expected());
    let result = runner::run(scenario, args.seed);
    print_findings(&result.findings);
    if !result.guarantees.is_empty() {
        say!("ZooKeeper guarantees (the ensemble under the recipe):");
        print_findings(&result.guarantees);
    }
    for fault in &result.faults_not_fired {
        say!("  NOT FIRED {fault}");
    }
    match &result.outcome {
        crate::report::Outcome::Crash { message } => say!("the harness crashed: {message}"),
        crate::report::Outcome::Stuck {
            reason,
            at_ms,
            running,
            last_events,
        } => {
            say!("STUCK at {at_ms} ms of simulated time: {reason}");
            say!("  running: {running}");
            if !last_events.is_empty() {
                say!("  the last events before it:");
            }
            for event in last_events {
                say!("    {event}");
            }
        }
        _ => {}
    }
    if let Some(dir) = &args.out {
        match runner::write_report(dir, &report(&args.scenario, &loaded, &result)) {
            Ok(file) => {
                say!("report: {}", file.display());
                say!("timeline: {}", file.with_extension("html").display());
            }
            Err(message) => {
                eprintln!("zkharness: {message}");
                return ExitCode::from(exit::BAD_INPUT);
            }
        }
    }
    if !result.as_expected(scenario) {
        say!("not as the scenario expects ({})", scenario.expected());
    }
    say!(
        "result: {} seed={} trace={:016x}",
        result.outcome.headline(),
        result.seed,
        result.trace
    );
    ExitCode::from(result.outcome.exit_code())
}
