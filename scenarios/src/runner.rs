//! Running a scenario for one seed on the simulated ensemble (simulated build only).
//!
//! Each seed runs on a fresh OS thread with its own madsim runtime seeded with the seed (std's
//! hasher is seeded per thread; a fresh thread gives every seed the same start), with a limit of
//! 600 simulated seconds. A panic inside the run, or the limit, is the harness's crash, reported
//! as [`Outcome::Crash`] and never as a finding about the recipe. A run that makes no progress in
//! simulated time (the simulator's watchdog, `zkh_sim::watchdog`), or takes more than
//! [`WALL_LIMIT_S`] seconds of wall time (`ZKH_WALL_LIMIT_S` says otherwise), is
//! [`Outcome::Stuck`], with what was running and the last events.
//!
//! The outcome: the first violated `always` property among those the scenario judges, else the
//! first violated `eventually` one, else [`Outcome::FaultsNotFired`] if a planned fault did not
//! happen, else a pass.

use zkh_model::guarantees::CommitLogs;
use zkh_model::properties::{Class, Finding};
use zkh_model::History;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use zkh_reports::timeline;

use crate::report::{
    commit, fnv1a, FindingRecord, Herd, Outcome, RunReport, ScenarioRef, RUN_FORMAT,
};
use crate::scenario::{Loaded, Resolved};

/// The simulated time a run may take before the harness calls it a crash.
pub const TIME_LIMIT_S: u64 = 600;

/// The wall time a seed may take before it is stuck, unless `ZKH_WALL_LIMIT_S` says (a seed of
/// the catalogue takes milliseconds).
pub const WALL_LIMIT_S: u64 = 300;

/// The wall-time limit of one seed: `ZKH_WALL_LIMIT_S`, or [`WALL_LIMIT_S`].
pub fn wall_limit() -> std::time::Duration {
    let given = std::env::var("ZKH_WALL_LIMIT_S").ok();
    let seconds = given.and_then(|text| text.parse::<u64>().ok());
    std::time::Duration::from_secs(seconds.filter(|s| *s > 0).unwrap_or(WALL_LIMIT_S))
}

/// What one seed of a scenario gave.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The seed.
    pub seed: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// Every finding of the judged properties, and every `sometimes` check.
    pub findings: Vec<FindingRecord>,
    /// ZooKeeper's own guarantees judged on the history, and their `sometimes` checks
    /// (`zkh_model::guarantees`): the ensemble under the recipe, judged apart from it.
    pub guarantees: Vec<FindingRecord>,
    /// Planned faults that did not fire.
    pub faults_not_fired: Vec<String>,
    /// The history (empty after a crash).
    pub history: History,
    /// The history's stable hash.
    pub trace: u64,
    /// Simulated time of the run.
    pub simulated_ms: u64,
    /// Messages the simulated network delivered in the run, between servers and between clients
    /// and servers (0 after a crash): the benchmark's measure of the simulator's work.
    pub messages_delivered: u64,
    /// For a lock, waiters woken per release.
    pub herd: Option<Herd>,
    /// The names of the recipe's own `sometimes` companions among `findings` (not the host's
    /// generic ones, such as a lost reply): a sweep in which none of them ever happened passed
    /// emptily.
    pub companions: Vec<String>,
}

impl RunResult {
    /// Whether the run ended as the scenario expects: a pass, or, for a positive control, the
    /// violation of its property, whether or not another violation heads the outcome (a control
    /// whose bug also breaks something else was still caught).
    pub fn as_expected(&self, scenario: &Resolved) -> bool {
        match &scenario.expect_violation {
            None => self.outcome == Outcome::Pass,
            Some(property) => {
                self.outcome.property() == Some(property.as_str())
                    || (self.findings.iter()).any(|f| f.property == *property && !f.holds)
            }
        }
    }
}

impl RunResult {
    /// A run that made no progress (see the module docs): no finding, no history.
    pub(crate) fn stuck(seed: u64, stuck: zkh_sim::watchdog::Stuck) -> RunResult {
        RunResult {
            outcome: Outcome::Stuck {
                reason: stuck.reason,
                at_ms: stuck.at_ms,
                running: stuck.running,
                last_events: stuck.last_events,
            },
            simulated_ms: stuck.at_ms,
            ..RunResult::crashed(seed, String::new())
        }
    }

    /// A run the harness crashed in (a panic, or the time limit): no finding, no history.
    pub(crate) fn crashed(seed: u64, message: String) -> RunResult {
        RunResult {
            seed,
            outcome: Outcome::Crash { message },
            findings: Vec::new(),
            guarantees: Vec::new(),
            faults_not_fired: Vec::new(),
            history: History::new(),
            trace: 0,
            simulated_ms: 0,
            messages_delivered: 0,
            herd: None,
            companions: Vec::new(),
        }
    }
}

/// Runs `scenario` for `seed`: its registered recipe's workload (a built-in's, or one of the
/// user's own through the generic host, `custom`).
pub fn run(scenario: &Resolved, seed: u64) -> RunResult {
    scenario.recipe.workload.run(scenario, seed)
}

/// How a run ended: a broken guarantee of the ensemble first (the recipe's verdicts stand on
/// it), then the first violated `always` property among `findings` that `judged` keeps, then the
/// first `eventually` one, then planned faults that never fired, else a pass.
pub(crate) fn verdict(
    guarantees: &[Finding],
    findings: &[Finding],
    judged: impl Fn(&Finding) -> bool,
    faults_not_fired: &[String],
) -> Outcome {
    let broken =
        |class: Class| (findings.iter()).find(|f| f.class == class && !f.holds && judged(f));
    let guarantee = (guarantees.iter()).find(|f| f.class == Class::Always && !f.holds);
    if let Some(f) = guarantee {
        Outcome::Violation {
            property: f.property.to_owned(),
            detail: format!("ZooKeeper's guarantee broken by the ensemble: {}", f.detail),
        }
    } else if let Some(f) = broken(Class::Always) {
        Outcome::Violation {
            property: f.property.to_owned(),
            detail: f.detail.clone(),
        }
    } else if let Some(f) = broken(Class::Eventually) {
        Outcome::Liveness {
            property: f.property.to_owned(),
            detail: f.detail.clone(),
        }
    } else if !faults_not_fired.is_empty() {
        Outcome::FaultsNotFired {
            faults: faults_not_fired.to_vec(),
        }
    } else {
        Outcome::Pass
    }
}

/// Whether runs judge ZooKeeper's guarantees: always, but for the benchmark of the checker's own
/// cost (`sweep --without-guarantees`, docs/performance.md).
static GUARANTEES_JUDGED: AtomicBool = AtomicBool::new(true);

/// Stops judging ZooKeeper's guarantees in this process (the benchmark of their cost only: a
/// run that does not judge them cannot tell a fault of the simulated ensemble).
pub fn skip_guarantees_for_the_benchmark() {
    GUARANTEES_JUDGED.store(false, Ordering::Relaxed);
    #[cfg(madsim)]
    zkh_sim::server::skip_recording_for_the_benchmark();
}

/// ZooKeeper's guarantees judged on a run's `history` with the servers' `logs` (none in the
/// benchmark that skips them).
pub(crate) fn guarantees(history: &History, logs: &CommitLogs) -> Vec<Finding> {
    if GUARANTEES_JUDGED.load(Ordering::Relaxed) {
        zkh_model::guarantees::judge(history, logs)
    } else {
        Vec::new()
    }
}

/// The report of `result`, a run of the scenario `loaded` read from `path`; `repro` is the
/// command that reproduces it.
pub fn report(path: &Path, loaded: &Loaded, result: &RunResult, repro: String) -> RunReport {
    RunReport {
        format: RUN_FORMAT.to_owned(),
        scenario: ScenarioRef {
            // Absolute, so that `replay` finds the scenario from any directory.
            path: std::fs::canonicalize(path)
                .unwrap_or_else(|_| path.to_owned())
                .display()
                .to_string(),
            name: loaded.resolved.name.clone(),
            text_hash: format!("{:016x}", fnv1a(loaded.text.as_bytes())),
        },
        seed: result.seed,
        commit: commit().to_owned(),
        recipe_package: loaded.resolved.recipe.package(),
        options: serde_json::to_value(&loaded.resolved).expect("options serialise"),
        outcome: result.outcome.clone(),
        expected: result.as_expected(&loaded.resolved),
        findings: result.findings.clone(),
        guarantees: result.guarantees.clone(),
        faults_not_fired: result.faults_not_fired.clone(),
        trace: format!("{:016x}", result.trace),
        simulated_ms: result.simulated_ms,
        repro,
        herd: result.herd.clone(),
        history: result.history.clone(),
    }
}

/// Writes `report` into `dir` as `<scenario>-seed<N>.json`, and its timeline beside it as
/// `<scenario>-seed<N>.html`; returns the JSON's path.
pub fn write_report(dir: &Path, report: &RunReport) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir)
        .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    let file = dir.join(format!("{}-seed{}.json", report.scenario.name, report.seed));
    let text = serde_json::to_string_pretty(report).expect("a report serialises");
    std::fs::write(&file, text + "\n")
        .map_err(|error| format!("cannot write {}: {error}", file.display()))?;
    let html = file.with_extension("html");
    std::fs::write(&html, timeline::html(&timeline::Page::of_run(report)))
        .map_err(|error| format!("cannot write {}: {error}", html.display()))?;
    Ok(file)
}
