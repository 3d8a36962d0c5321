//! Scenario files: a workload, a fault plan, phases, the properties to judge and the outcome
//! expected, in TOML. The same format is what `zkharness check --export` writes, so a
//! counterexample of the model checker is a scenario like any other.
//!
//! ```toml
//! description = "the lock holder's session expires on the server"
//!
//! [workload]
//! recipe = "lock"            # lock, latch, election, master or job
//! variant = "correct"        # or a known-bad variant (a positive control)
//! servers = 3                # 1, 3 or 5
//! clients = 3
//! session_timeout_ms = 4000
//! fenced = true              # the resource refuses tokens older than one it has seen
//!
//! [workload.stock]           # the lock's application (latch, election, master: [workload.leader_job];
//! initial_units = 100000     #   job: [workload.sharded])
//! critical_ms = 50
//!
//! [phases]
//! fault_ms = 20000           # the fault phase, then the heal
//! liveness_ms = 15000        # the liveness phase after the heal
//! leader_within_ms = 10000   # "leader elected": a holder or leader within this of the heal
//!
//! [[faults.scripted]]        # at a simulated time
//! at_ms = 3000
//! fault = { kind = "expire-session", client = 0 }
//!
//! [[faults.triggered]]       # when a ZooKeeper-level event happens
//! when = { client = 1, op = "create", path_prefix = "/locks/stock/", nth = 1 }
//! fault = { kind = "drop-reply", client = 1 }
//!
//! [faults.random]            # rates per simulated second of the fault phase, from the seed
//! drop_reply_per_s = 0.5
//!
//! [expect]                   # absent: every property holds on every seed
//! violation = "mutual exclusion"
//! within_seeds = 20          # a sweep runs a control's first 20 seeds; one must catch it
//! ```
//!
//! `seeds = [7698]` at the top pins the seeds a sweep runs (a regression found at that seed).
//!
//! Unknown fields are errors. [`load`] reports the first problem of a file as one
//! [`ScenarioError`] naming the file, line, column and field, and what was expected; nothing in
//! the parsing panics on any input.
//!
//! [`Resolved`] is a scenario with every default filled in and every name checked: what the
//! runner executes and what a report records.

mod parse;
mod resolve;

use serde::{Deserialize, Serialize};
use zkh_sim::fault::FaultPlan;

pub(crate) use crate::registry::simulated::{ensure_crates_own, insert, register};
pub use crate::registry::simulated::{
    registered, registered_names, OwnWorkload, PhaseDefaults, PropertyInfo, Registration,
    ScenarioRecipe,
};
pub(crate) use parse::explain;
#[cfg(madsim)]
pub(crate) use parse::{deserialize_checked, read};
pub use parse::{load, parse, Loaded, ScenarioError};
#[cfg(madsim)]
pub(crate) use resolve::check;
pub use resolve::Problem;
pub use resolve::Resolved;

/// A scenario file as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// What the scenario shows, in one line.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The recipe, the ensemble and the application.
    pub workload: WorkloadSpec,
    /// The phases' lengths (defaults per recipe).
    #[serde(default)]
    pub phases: Phases,
    /// The faults: scripted, triggered and random.
    #[serde(default)]
    pub faults: FaultPlan,
    /// The properties to judge (default: every property of the recipe).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<String>,
    /// The outcome expected (default: every property holds).
    #[serde(default)]
    pub expect: Expect,
    /// The seeds a sweep runs this scenario at, in place of the sweep's range (a regression
    /// pinned to the seed that found it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeds: Vec<u64>,
    /// Where a scenario exported by the model checker came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

fn correct() -> String {
    "correct".to_owned()
}
fn three() -> u32 {
    3
}
fn four_seconds() -> u64 {
    4000
}
fn yes() -> bool {
    true
}

fn is_yes(value: &bool) -> bool {
    *value
}

fn a_minute() -> u64 {
    zkh_sim::fault::CONTAINER_CHECK_INTERVAL_MS
}
pub(crate) fn is_a_minute(ms: &u64) -> bool {
    *ms == a_minute()
}

/// The workload: which recipe, how many servers and clients, and what the application does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// The recipe, by its registered name: one built in (`lock`, `latch`, `election`, `master`,
    /// `job`), or one a user's binary registered.
    pub recipe: String,
    /// Its variant: `correct`, or a known-bad one.
    #[serde(default = "correct")]
    pub variant: String,
    /// Servers in the ensemble: 1, 3 or 5.
    #[serde(default = "three")]
    pub servers: u32,
    /// Client processes, 1 to 16.
    #[serde(default = "three")]
    pub clients: u32,
    /// The clients' session timeout.
    #[serde(default = "four_seconds")]
    pub session_timeout_ms: u64,
    /// Whether the resource refuses tokens older than one it has seen (fencing). Written back
    /// only when off (a user's recipe, which has no such resource, never shows it).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub fenced: bool,
    /// Whether a client that cannot reconnect ends its session on its own: `never` (the Java
    /// client: only a server's answer ends it), `curator` (one session timeout after the
    /// connection was lost), or `zookeeper-client-crate` (7/5 of the timeout after it last
    /// heard from a server). Absent: the recipe's client library's (`curator` for the lock and
    /// the latch, `never` for the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_expiry: Option<zkh_sim::local_expiry::LocalExpiry>,
    /// How often the servers' leader deletes empty containers, a recipe's parent among them
    /// (ZooKeeper's `znode.container.checkIntervalMs`, a minute by default).
    #[serde(default = "a_minute", skip_serializing_if = "is_a_minute")]
    pub container_check_interval_ms: u64,
    /// The lock's application: stock deduction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock: Option<StockApp>,
    /// The elections' application: a job the leader runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_job: Option<LeaderJobApp>,
    /// The sharded job's application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharded: Option<ShardedApp>,
    /// A registered recipe's own knobs (its `SimRecipe::Config`), as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<toml::Table>,
}

/// Stock deduction under the lock: read, reserve, `critical_ms` inside, sell one unit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StockApp {
    /// The stock at the start (default 100,000: more than a run sells).
    pub initial_units: Option<i64>,
    /// Time inside the critical section, between reserving and selling (default 50).
    pub critical_ms: Option<u64>,
}

/// A scheduled job under an elected leader.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaderJobApp {
    /// The leader runs the job this often (default 500).
    pub interval_ms: Option<u64>,
    /// The election only: Elastic-Job's reconcile service asks the servers whether the job has
    /// a leader this long after the instances start and after each time it asked
    /// (`reconcileIntervalMinutes`, so whole minutes; default 600,000, Elastic-Job's 10
    /// minutes, longer than any run; 0 turns it off, as Elastic-Job's 0 does).
    pub reconcile_interval_ms: Option<u64>,
}

/// Elastic-Job's sharded job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardedApp {
    /// Items per cycle, 1 to 64 (default 8).
    pub items: Option<u32>,
    /// The cron period (default 10,000).
    pub cycle_interval_ms: Option<u64>,
    /// "No shard lost" judges the cycles from this long after the heal (default 10,000)...
    pub settle_ms: Option<u64>,
    /// ...or, when given, from this long after the instances started (a scenario whose only
    /// fault is a crash: the failover must save the crash's own cycle).
    pub judged_from_ms: Option<u64>,
}

/// The phases of a run: faults, heal, liveness.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phases {
    /// The fault phase (default 20,000).
    pub fault_ms: Option<u64>,
    /// The liveness phase after the heal (default 15,000; the job 40,000).
    pub liveness_ms: Option<u64>,
    /// "Leader elected": a holder or leader within this long after the heal (default 10,000;
    /// the job 20,000). At most the liveness phase.
    pub leader_within_ms: Option<u64>,
}

/// The outcome a scenario expects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// `pass` (the default) when every judged property holds on every seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Pass>,
    /// A positive control: this property is violated...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<String>,
    /// ...on at least one of the first this many seeds of a sweep (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_seeds: Option<u64>,
    /// `sometimes` companions of the recipe a sweep must see happen on at least one seed, for
    /// a pass not to be an empty one (a sweep reports the companions that never happened either
    /// way, in `sometimes_never`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reached: Vec<String>,
}

/// The one word `expect.outcome` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pass {
    /// Every property holds.
    Pass,
}

/// Where an exported scenario came from: the model checker's check and its path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// The `zkharness check` command that found it.
    pub command: String,
    /// The model's steps, in words.
    pub model_path: Vec<String>,
    /// Why a model step has no fault in the simulator, if one has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_exported: Vec<String>,
}
