//! What a run and a sweep report, as data: the types `zkharness run --out` and `zkharness sweep
//! --json` write, `zkharness replay`, `shrink` and `report` read back, and this crate renders.
//! One definition, in both builds. `schema/` holds their JSON Schemas.
//!
//! A run report holds everything needed to reproduce and judge the run again: the scenario's
//! path and a hash of its text (a replay refuses a file that changed), the seed, the commit, the
//! resolved options, the outcome, every finding, the planned faults that did not fire, the whole
//! history and its trace hash, and the command that reproduces it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use zkh_model::properties::{Class, Finding};
use zkh_model::History;

pub use crate::herd::Herd;

/// The format tag of a run report.
pub const RUN_FORMAT: &str = "zkharness-run/1";
/// The format tag of a sweep summary.
pub const SWEEP_FORMAT: &str = "zkharness-sweep/1";

/// The exit codes of every command, one table.
pub mod exit {
    /// Everything ended as expected.
    pub const PASS: u8 = 0;
    /// An `always` property was violated (a safety violation).
    pub const SAFETY: u8 = 1;
    /// An `eventually` property was violated (a liveness failure).
    pub const LIVENESS: u8 = 2;
    /// A search or a shrink gave up at a limit before it could say.
    pub const GAVE_UP: u8 = 3;
    /// A scenario did not end as its file expects for another reason: a positive control not
    /// caught, a planned fault that never fired, a replay that diverged.
    pub const UNEXPECTED: u8 = 4;
    /// A run made no progress in simulated time (the watchdog: a recipe that loops without
    /// waiting), or outlived its wall-time limit.
    pub const STUCK: u8 = 5;
    /// Bad input: arguments, a scenario file, a report.
    pub const BAD_INPUT: u8 = 64;
    /// The harness itself crashed (a panic inside a run).
    pub const CRASH: u8 = 70;
    /// The table as `--help` and the README print it.
    pub const TABLE: &str = "Exit codes: 0 pass (everything as expected), 1 safety violation, \
        2 liveness failure, 3 gave up at a limit, 4 not as expected (a positive control not \
        caught, a planned fault that never fired, a replay that diverged), 5 stuck (a run that \
        made no progress in simulated time), 64 bad input, \
        70 the harness crashed.";
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Outcome {
    /// Every judged property held, and every planned fault fired.
    Pass,
    /// An `always` property was violated.
    Violation {
        /// The property.
        property: String,
        /// The first violation, in words.
        detail: String,
    },
    /// An `eventually` property was violated.
    Liveness {
        /// The property.
        property: String,
        /// Why, in words.
        detail: String,
    },
    /// Every judged property held, but planned faults did not happen: the scenario did not
    /// test what it was written for.
    FaultsNotFired {
        /// The faults, and why each did not fire.
        faults: Vec<String>,
    },
    /// The run made no progress in simulated time: a recipe that loops without waiting for a
    /// timer (the watchdog ended it), or a run that outlived its wall-time limit.
    Stuck {
        /// What made no progress, in words.
        reason: String,
        /// The simulated time it was stuck at, in milliseconds.
        at_ms: u64,
        /// What was running.
        running: String,
        /// The last events of the history before it, oldest first.
        last_events: Vec<String>,
    },
    /// The run panicked: a bug of the harness, not a finding about the recipe.
    Crash {
        /// The panic's message.
        message: String,
    },
}

impl Outcome {
    /// The property violated, if any.
    pub fn property(&self) -> Option<&str> {
        match self {
            Outcome::Violation { property, .. } | Outcome::Liveness { property, .. } => {
                Some(property)
            }
            _ => None,
        }
    }

    /// The exit code of a run that ended so.
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Pass => exit::PASS,
            Outcome::Violation { .. } => exit::SAFETY,
            Outcome::Liveness { .. } => exit::LIVENESS,
            Outcome::FaultsNotFired { .. } => exit::UNEXPECTED,
            Outcome::Stuck { .. } => exit::STUCK,
            Outcome::Crash { .. } => exit::CRASH,
        }
    }

    /// The words after `result:`.
    pub fn headline(&self) -> String {
        match self {
            Outcome::Pass => "pass".to_owned(),
            Outcome::Violation { property, .. } => format!("violation {property}"),
            Outcome::Liveness { property, detail } => format!("liveness {property}: {detail}"),
            Outcome::FaultsNotFired { faults } => {
                format!(
                    "faults-not-fired ({} planned faults did not fire)",
                    faults.len()
                )
            }
            Outcome::Stuck { at_ms, running, .. } => {
                format!("stuck at {at_ms} ms: {running}")
            }
            Outcome::Crash { .. } => "crash".to_owned(),
        }
    }
}

/// One property's verdict, for a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingRecord {
    /// The property's name.
    pub property: String,
    /// `always`, `eventually` or `sometimes`.
    pub class: String,
    /// Whether it held (for `sometimes`: whether it happened).
    pub holds: bool,
    /// The violation, or a summary.
    pub detail: String,
    /// What the property means.
    pub explanation: String,
    /// For a violation, the places in the history of the entries that show it, oldest first;
    /// the last is where it happens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<usize>,
    /// For a violation, the simulated time it happened at (for an `eventually` property, the
    /// deadline that passed), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_us: Option<u64>,
}

impl From<&Finding> for FindingRecord {
    fn from(finding: &Finding) -> Self {
        FindingRecord {
            property: finding.property.to_owned(),
            class: match finding.class {
                Class::Always => "always",
                Class::Eventually => "eventually",
                Class::Sometimes => "sometimes",
            }
            .to_owned(),
            holds: finding.holds,
            detail: finding.detail.clone(),
            explanation: match zkh_model::properties::explanation(finding.property) {
                "" => zkh_model::guarantees::explanation(finding.property),
                recipe => recipe,
            }
            .to_owned(),
            evidence: finding.evidence.clone(),
            at_us: finding.at_us,
        }
    }
}

/// The scenario a report is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioRef {
    /// The file, as given on the command line.
    pub path: String,
    /// Its name (the file's stem).
    pub name: String,
    /// A hash of its text (FNV-1a, hex): a replay refuses a file that changed.
    pub text_hash: String,
}

/// The report of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// [`RUN_FORMAT`].
    pub format: String,
    /// The scenario.
    pub scenario: ScenarioRef,
    /// The seed.
    pub seed: u64,
    /// The commit of the harness that ran it.
    pub commit: String,
    /// For a recipe of the user's own, the crate and version that registered it (`name
    /// version`): a replay refuses a binary whose recipe is another. Absent for a built-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe_package: Option<String>,
    /// Every option, resolved.
    pub options: serde_json::Value,
    /// How it ended.
    pub outcome: Outcome,
    /// Whether that is what the scenario expects.
    pub expected: bool,
    /// Every finding.
    pub findings: Vec<FindingRecord>,
    /// ZooKeeper's own guarantees judged on the history (the ensemble, apart from the
    /// recipe), and their `sometimes` checks. Absent from reports written before they were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guarantees: Vec<FindingRecord>,
    /// Planned faults that did not fire.
    pub faults_not_fired: Vec<String>,
    /// The history's stable hash, hex.
    pub trace: String,
    /// Simulated time of the whole run.
    pub simulated_ms: u64,
    /// The command that reproduces the run.
    pub repro: String,
    /// For a lock, waiters woken per release (the herd effect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub herd: Option<Herd>,
    /// The whole history.
    pub history: History,
}

/// One seed of a sweep that did not end as its scenario expects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepFailure {
    /// The seed.
    pub seed: u64,
    /// The property violated, or the outcome's kind.
    pub property: String,
    /// The run's trace hash.
    pub trace: String,
    /// The command that reproduces it.
    pub repro: String,
    /// Where its report was written, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// The exit code its outcome has alone (`zkharness merge` ranks a merged sweep's exit code
    /// from these); absent in summaries written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<u8>,
}

/// One seed's trace hash, as a shard's summary keeps it for `zkharness merge`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedTrace {
    /// The seed.
    pub seed: u64,
    /// Its run's trace hash (hex).
    pub trace: String,
}

/// One scenario of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    /// The scenario's name.
    pub scenario: String,
    /// Its file.
    pub path: String,
    /// `pass`, or `violation <property>` for a positive control.
    pub expected: String,
    /// Seeds run.
    pub seeds_run: u64,
    /// Seeds that did not end as expected (for a control: none if it was caught).
    pub failures: Vec<SweepFailure>,
    /// For a positive control, the seeds that caught it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caught_at: Vec<u64>,
    /// Whether the scenario ended as its file expects.
    pub ok: bool,
    /// Seeds per second of wall time (all threads).
    pub seeds_per_sec: f64,
    /// The scenario's combined trace hash over its seeds, in seed order (hex).
    pub combined_trace: String,
    /// For a lock, waiters woken per release over every seed (the herd effect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub herd: Option<Herd>,
    /// The recipe's own `sometimes` companions that happened on none of the seeds run: where
    /// none of them happened, a scenario expecting a pass passed emptily and is not ok.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sometimes_never: Vec<String>,
    /// The recipe's own `sometimes` companions, each with whether it happened on a seed run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sometimes: BTreeMap<String, bool>,
    /// Only in a shard's summary (`sweep --shard`): each seed's trace hash, in seed order, so
    /// that `zkharness merge` computes the combined trace of every shard's seeds together.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traces: Vec<SeedTrace>,
}

/// A whole sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSummary {
    /// [`SWEEP_FORMAT`].
    pub format: String,
    /// The commit of the harness.
    pub commit: String,
    /// The seeds asked for, `A..B`.
    pub seeds: String,
    /// The shard run, `i/n`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The variant every scenario ran with in place of its file's (`sweep --variant`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Worker threads.
    pub jobs: usize,
    /// Each scenario.
    pub scenarios: Vec<ScenarioSummary>,
    /// Seeds run in all.
    pub seeds_run: u64,
    /// Wall time.
    pub wall_s: f64,
    /// Whether every scenario ended as expected.
    pub ok: bool,
    /// The sweep's combined trace hash (hex): FNV-1a over the scenarios' combined traces, in
    /// the order of `scenarios`. Two sweeps of the same files and seeds on the same commit have
    /// the same one however their seeds were spread over threads, shards and machines.
    #[serde(default)]
    pub combined_trace: String,
}

/// FNV-1a over `bytes`: the scenario text's hash, and the sweeps' combined trace.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
