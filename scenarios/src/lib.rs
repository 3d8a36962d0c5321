//! The harness's front end: scenario files and their runner, the reports, which recipe a
//! model-checking command names, and a counterexample of the model checker exported as a
//! scenario the simulator runs, so that one bug is reproduced by both engines.
//!
//! - [`scenario`]: the TOML scenario format, parsed with errors that name file, line, column and
//!   field;
//! - `runner` (simulated build): one seed of a scenario on the simulated ensemble;
//! - [`report`]: run reports and sweep summaries, and the exit codes;
//! - [`mod@export`]: a model checker's counterexample as a scenario.
//!

use serde::Deserialize;
use zkh_model::check::{
    Acting, ElectionWorkload, FaultBudget, JobWorkload, LatchWorkload, LockWorkload,
    MasterWorkload, RecipeModel, Workload,
};
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;

/// A recipe, its variant and the shape of a check, as a command names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recipe {
    /// `lock`, `latch`, `election`, `master` or `job`.
    pub name: String,
    /// The variant's name.
    pub variant: String,
    /// Client processes.
    pub clients: usize,
    /// The fault budget as given.
    pub faults: String,
    /// The fault budget.
    pub budget: FaultBudget,
    /// When applications act, and what the resource accepts.
    pub acting: Acting,
    /// The recipe's model.
    pub kind: RecipeKind,
}

/// A recipe's model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecipeKind {
    /// Curator's lock.
    Lock(LockVariant),
    /// Curator's latch.
    Latch(LatchVariant),
    /// Elastic-Job's per-job election.
    Election(ElectionVariant),
    /// The book's master election.
    Master(MasterVariant),
    /// Elastic-Job's sharded job: sharding, claims and failover (its variant, items and
    /// cycles).
    Job(JobWorkload),
    /// A machine recipe a binary registered (`custom::Machined`), by name: checked through its
    /// registration (`cli::machines`), not through [`any_model!`].
    Machine(&'static str),
}

fn variant<T: for<'de> Deserialize<'de>>(
    recipe: &str,
    name: &str,
    known: &str,
) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .map_err(|_| format!("{recipe} has no variant {name:?} (known: {known})"))
}

impl Recipe {
    /// The recipe `name` with `variant_name`, checked with `clients` clients within `budget`.
    pub fn new(
        name: &str,
        variant_name: &str,
        clients: usize,
        budget: FaultBudget,
        acting: Acting,
    ) -> Result<Recipe, String> {
        let kind = match name {
            "lock" => RecipeKind::Lock(variant(
                name,
                variant_name,
                "correct, herd, unprotected, unguaranteed-delete",
            )?),
            "latch" => RecipeKind::Latch(variant(
                name,
                variant_name,
                "correct, trust-predecessor, no-owner-check, keep-on-suspend, requeue-when-behind, unprotected",
            )?),
            "election" => {
                RecipeKind::Election(variant(name, variant_name, "correct, check-then-write, forgetful-close")?)
            }
            "master" => RecipeKind::Master(variant(name, variant_name, "correct, no-watch")?),
            "job" => RecipeKind::Job(JobWorkload::new(variant(
                name,
                variant_name,
                "correct, one-item-per-idle, trust-owners, no-cycle-claim, uncovered-reshard, no-reregister, run-ahead",
            )?)),
            other => match crate::cli::machines::registered(other) {
                Some(machine) => {
                    if !machine.variants().contains(&variant_name) {
                        return Err(format!(
                            "{other} has no variant {variant_name:?} (known: {})",
                            machine.variants().join(", ")
                        ));
                    }
                    RecipeKind::Machine(machine.name())
                }
                None => {
                    let machines = crate::cli::machines::names();
                    return Err(format!(
                        "unknown recipe {other:?} (known: lock, latch, election, master, job{}{})",
                        if machines.is_empty() { "" } else { ", " },
                        machines.join(", ")
                    ));
                }
            },
        };
        Ok(Recipe {
            name: name.to_owned(),
            variant: variant_name.to_owned(),
            clients,
            faults: budget_text(&budget),
            budget,
            acting,
            kind,
        })
    }

    /// The name `--acting` gives this recipe's acting: `caught-up`, `fenced` or `unfenced`.
    pub fn acting_name(&self) -> String {
        let name = serde_json::to_value(self.acting).expect("an acting serializes");
        name.as_str()
            .expect("an acting serializes to its name")
            .to_owned()
    }

    fn model<W: Workload>(&self, workload: W) -> RecipeModel<W> {
        RecipeModel::new(workload, self.clients, self.budget, self.acting)
    }

    /// The lock model, if this is the lock.
    pub fn lock_model(&self) -> Option<RecipeModel<LockWorkload>> {
        match self.kind {
            RecipeKind::Lock(variant) => Some(self.model(LockWorkload { variant })),
            _ => None,
        }
    }

    /// The latch model, if this is the latch.
    pub fn latch_model(&self) -> Option<RecipeModel<LatchWorkload>> {
        match self.kind {
            RecipeKind::Latch(variant) => Some(self.model(LatchWorkload { variant })),
            _ => None,
        }
    }

    /// The master election model, if this is the master election.
    pub fn master_model(&self) -> Option<RecipeModel<MasterWorkload>> {
        match self.kind {
            RecipeKind::Master(variant) => Some(self.model(MasterWorkload { variant })),
            _ => None,
        }
    }

    /// The job election model, if this is the election.
    pub fn election_model(&self) -> Option<RecipeModel<ElectionWorkload>> {
        match self.kind {
            RecipeKind::Election(variant) => Some(self.model(ElectionWorkload { variant })),
            _ => None,
        }
    }

    /// The sharded job model, if this is the job.
    pub fn job_model(&self) -> Option<RecipeModel<JobWorkload>> {
        match &self.kind {
            RecipeKind::Job(job) => Some(self.model(job.clone())),
            _ => None,
        }
    }

    /// The recipe's directory.
    pub fn dir(&self) -> &'static str {
        match self.kind {
            RecipeKind::Lock(_) => zkh_model::check::LOCK_DIR,
            RecipeKind::Latch(_) => zkh_model::check::LATCH_DIR,
            RecipeKind::Election(_) | RecipeKind::Job(_) => zkh_model::check::JOB_DIR,
            RecipeKind::Master(_) => "/app",
            RecipeKind::Machine(name) => {
                unreachable!("{name}: a machine recipe's directory is its workload's; nothing asks")
            }
        }
    }
}

/// The budget in the command line's syntax.
pub fn budget_text(budget: &FaultBudget) -> String {
    let parts: Vec<String> = [
        ("drop-request", budget.drop_request),
        ("drop-reply", budget.drop_reply),
        ("expire", budget.expire),
        ("client-expire", budget.client_expire),
        ("leader-change", budget.leader_change),
        ("crash", budget.crash),
    ]
    .iter()
    .filter(|(_, count)| *count > 0)
    .map(|(name, count)| format!("{name}={count}"))
    .collect();
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(",")
    }
}

/// Runs `$body` with `$model` bound to the recipe's model, whichever workload it is.
#[macro_export]
macro_rules! any_model {
    ($recipe:expr, $model:ident => $body:expr) => {
        match (&$recipe).kind {
            $crate::RecipeKind::Lock(_) => {
                let $model = (&$recipe).lock_model().expect("the lock");
                $body
            }
            $crate::RecipeKind::Latch(_) => {
                let $model = (&$recipe).latch_model().expect("the latch");
                $body
            }
            $crate::RecipeKind::Election(_) => {
                let $model = (&$recipe).election_model().expect("the election");
                $body
            }
            $crate::RecipeKind::Master(_) => {
                let $model = (&$recipe).master_model().expect("the master election");
                $body
            }
            $crate::RecipeKind::Job(_) => {
                let $model = (&$recipe).job_model().expect("the sharded job");
                $body
            }
            $crate::RecipeKind::Machine(name) => {
                unreachable!("{name}: a machine recipe is checked through its registration")
            }
        }
    };
}

pub mod cli;
pub mod custom;
pub mod export;
pub mod known_bad;
pub mod logging;
#[cfg(not(madsim))]
pub mod real;
/// The report types (defined once, in `zkh-reports`) and the commit this binary was built from.
pub mod report {
    pub use zkh_reports::types::*;

    /// The commit this binary was built from (`unknown` outside a git checkout).
    pub fn commit() -> &'static str {
        env!("ZKH_COMMIT")
    }
}
#[cfg(madsim)]
pub mod runner;
pub mod scenario;

pub use export::export;
