//! The five built-in recipes, registered as a user's recipes are: by name, in the registries
//! every command looks recipes up in, with nothing wired in elsewhere.
//!
//! - Their model-checker side (`models`) is one entry each in the model registry
//!   (`registry::machines`), as a binary's machine recipes are: the model's workload of a variant
//!   (`zkh_model::check`), the default shape (the sharded job's items and cycles), and the
//!   tables an exported counterexample's scenario needs (the leader's job, the sharded job).
//!
//! - Their simulator side (`simulated`) is one registration each in the scenario registry
//!   (`scenario::Registration`), as a user's recipes are: its variants, the application table
//!   it reads, its phases' defaults, its properties, and its run (`run`, simulated build).
//!
//! Their variants are listed once, here, the correct one first; a variant's name is its enum's
//! serde name in `zkh_recipes`.

#[cfg(madsim)]
mod hosted;
pub(crate) mod simulated;

use serde::de::DeserializeOwned;
use zkh_model::check::{
    Acting, ElectionWorkload, JobWorkload, LatchWorkload, LockWorkload, MasterWorkload, JOB_CYCLES,
    JOB_ITEMS,
};

use crate::registry::machines::{JobShape, MachineEntry};
use crate::scenario::{LeaderJobApp, ShardedApp, WorkloadSpec};
use crate::Recipe;

/// Curator's `InterProcessMutex`, around a stock deduction.
pub const LOCK: &str = "lock";
/// Curator's `LeaderLatch`, electing the leader of a scheduled job.
pub const LATCH: &str = "latch";
/// Elastic-Job's per-job election, electing the leader of a scheduled job.
pub const ELECTION: &str = "election";
/// The ZooKeeper book's `runForMaster`, electing the leader of a scheduled job.
pub const MASTER: &str = "master";
/// Elastic-Job's sharded job: sharding, claims and failover.
pub const JOB: &str = "job";

/// The built-in recipes' names, in the order the catalogue lists them.
pub const NAMES: [&str; 5] = [LOCK, LATCH, ELECTION, MASTER, JOB];

/// Each built-in recipe's variants, the correct one first.
pub const fn variants(name: &str) -> &'static [&'static str] {
    match name.as_bytes() {
        b"lock" => &[
            "correct",
            "herd",
            "unprotected",
            "unguaranteed-delete",
            "curator-2.10.0",
            "curator-5.3.0",
            "curator-5.4.0",
            "curator-5.7.1",
            "curator-5.9.0",
        ],
        b"latch" => &[
            "correct",
            "trust-predecessor",
            "no-owner-check",
            "keep-on-suspend",
            "requeue-when-behind",
            "unprotected",
            "curator-2.10.0",
            "curator-5.3.0",
            "curator-5.4.0",
            "curator-5.7.1",
            "curator-5.9.0",
        ],
        b"election" => &["correct", "check-then-write", "forgetful-close"],
        b"master" => &["correct", "no-watch"],
        b"job" => &[
            "correct",
            "one-item-per-idle",
            "trust-owners",
            "no-cycle-claim",
            "uncovered-reshard",
            "no-reregister",
            "run-ahead",
        ],
        _ => &[],
    }
}

/// Variant `name` of a built-in recipe, typed (one of its [`variants`], already checked).
pub(crate) fn typed<T: DeserializeOwned>(name: &str) -> T {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .unwrap_or_else(|_| panic!("variant {name:?} was checked against the recipe's variants"))
}

/// The sharded job's cycles under the standard budgets (`check job --budgets standard`), unless
/// `--cycles` says: two, so that a fault in one cycle is judged in the next.
const STANDARD_JOB_CYCLES: u64 = 2;

/// The model-checker side of the five built-in recipes.
pub(crate) fn models() -> [MachineEntry; 5] {
    let leader = |recipe: &Recipe, workload: &mut WorkloadSpec| {
        unfenced_unless_checked(recipe, workload);
        workload.leader_job = Some(LeaderJobApp::default());
    };
    [
        MachineEntry::built(
            LOCK,
            variants(LOCK),
            None,
            |recipe| LockWorkload {
                variant: typed(&recipe.variant),
            },
            unfenced_unless_checked,
        ),
        MachineEntry::built(
            LATCH,
            variants(LATCH),
            None,
            |recipe| LatchWorkload {
                variant: typed(&recipe.variant),
            },
            leader,
        ),
        MachineEntry::built(
            ELECTION,
            variants(ELECTION),
            None,
            |recipe| ElectionWorkload {
                variant: typed(&recipe.variant),
            },
            leader,
        ),
        MachineEntry::built(
            MASTER,
            variants(MASTER),
            None,
            |recipe| MasterWorkload {
                variant: typed(&recipe.variant),
            },
            leader,
        ),
        MachineEntry::built(
            JOB,
            variants(JOB),
            Some((
                JobShape {
                    items: JOB_ITEMS,
                    cycles: JOB_CYCLES,
                },
                JobShape {
                    items: JOB_ITEMS,
                    cycles: STANDARD_JOB_CYCLES,
                },
            )),
            |recipe| {
                let shape = recipe.shape.expect("the sharded job has a shape");
                JobWorkload {
                    items: shape.items,
                    cycles: shape.cycles,
                    ..JobWorkload::new(typed(&recipe.variant))
                }
            },
            |recipe, workload| {
                unfenced_unless_checked(recipe, workload);
                let shape = recipe.shape.expect("the sharded job has a shape");
                // Cycle 1 runs at 2 s, before the first scripted fault (3 s) and the next
                // cycle (4 s): a fault lands in the cycle the model's counterexample is about.
                workload.sharded = Some(ShardedApp {
                    items: Some(shape.items),
                    cycle_interval_ms: Some(2000),
                    ..ShardedApp::default()
                });
            },
        ),
    ]
}

/// An exported counterexample runs the check's resource: unfenced unless the check was fenced
/// (the model judges the recipe, not fencing).
fn unfenced_unless_checked(recipe: &Recipe, workload: &mut WorkloadSpec) {
    workload.fenced = recipe.acting == Acting::Fenced;
}
