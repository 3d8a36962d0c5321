//! The harness's front end: which recipe a command names, and a counterexample of the model
//! checker exported as a scenario the simulator replays, so that one bug is reproduced by both
//! engines.
//!
//! # From a counterexample to a scenario
//!
//! The model has no time; the simulator has nothing but. The export keeps what pins a fault to
//! the recipe's behaviour and lets the simulator supply the timing:
//!
//! - a lost request or reply becomes a *triggered* fault on the same client's n-th operation of
//!   the same kind under the recipe's directory (the recipe issues the same operations in both
//!   engines);
//! - a session expiry (server side, or client side as `KillSession` does it), and a leader
//!   change, become *scripted* faults 3 s into the run and 2 s apart, once the recipe has
//!   settled, in the counterexample's order;
//! - the server's later expiry of an abandoned session needs no fault: the simulated server
//!   expires it on its own timeout.
//!
//! The replay runs the recipe's simulator workload with the check's resource (unfenced unless
//! the check was fenced: the model judges the recipe, not fencing) over a range of seeds, and reports the seeds whose run violates the
//! property the model named. Which client leads in the simulator depends on the seed, so a
//! fault aimed at "the leader" lands on it for some seeds and not others.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use zkh_model::check::{
    Acting, Action, ElectionWorkload, FaultBudget, JobWorkload, LatchWorkload, LockWorkload,
    MasterWorkload, RecipeModel, Workload,
};
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::fencing::Fencing;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;
use zkh_recipes::Request;
use zkh_sim::fault::{Fault, FaultPlan, OpKind, ScriptedFault, ServerRef, Trigger, TriggeredFault};

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
            "lock" => RecipeKind::Lock(variant(name, variant_name, "correct, herd, unprotected")?),
            "latch" => RecipeKind::Latch(variant(
                name,
                variant_name,
                "correct, trust-predecessor, no-owner-check",
            )?),
            "election" => {
                RecipeKind::Election(variant(name, variant_name, "correct, check-then-write")?)
            }
            "master" => RecipeKind::Master(variant(name, variant_name, "correct, no-watch")?),
            "job" => RecipeKind::Job(JobWorkload::new(variant(
                name,
                variant_name,
                "correct, one-item-per-idle, trust-owners, no-cycle-claim, uncovered-reshard",
            )?)),
            other => {
                return Err(format!(
                    "unknown recipe {other:?} (known: lock, latch, election, master, job)"
                ))
            }
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
        }
    };
}

/// A counterexample as a scenario for the simulator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// `lock`, `latch` or `election`.
    pub recipe: String,
    /// The variant's name.
    pub variant: String,
    /// Client processes.
    pub clients: u32,
    /// What the simulated resource does with tokens: fenced when the check was fenced, else
    /// unfenced (the model judged the recipe, not fencing).
    pub fencing: Fencing,
    /// The faults, pinned to the recipe's operations or scripted in order.
    pub faults: FaultPlan,
    /// The sharded job's items per cycle (the model's default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u32>,
    /// The property the model checker found violated.
    pub violation: String,
    /// The model's actions, for the record.
    pub model_path: Vec<String>,
}

fn op_kind(request: &Request) -> Option<(OpKind, &str)> {
    Some(match request {
        Request::Create { path, .. } => (OpKind::Create, path),
        Request::Delete { path, .. } => (OpKind::Delete, path),
        Request::SetData { path, .. } => (OpKind::SetData, path),
        Request::GetData { path, .. } => (OpKind::GetData, path),
        Request::GetChildren { path, .. } => (OpKind::GetChildren, path),
        Request::Exists { path, .. } => (OpKind::Exists, path),
        Request::Multi(_) | Request::Sync { .. } => return None,
    })
}

/// The scenario of a counterexample `path` of `recipe` that violated `violation`.
pub fn export(recipe: &Recipe, violation: &str, path: &[Action]) -> Scenario {
    any_model!(recipe, model => export_from(recipe, &model, violation, path))
}

fn export_from<W: Workload>(
    recipe: &Recipe,
    model: &RecipeModel<W>,
    violation: &str,
    path: &[Action],
) -> Scenario {
    use stateright::Model;
    let dir = format!("{}/", recipe.dir());
    let prefix_of = |path: &str| {
        if path.starts_with(&dir) {
            dir.clone()
        } else {
            path.to_owned()
        }
    };
    let mut state = model.init_states().remove(0);
    let mut seen: BTreeMap<(usize, String, String), u32> = BTreeMap::new();
    let mut faults = FaultPlan::default();
    let mut scripted_at_ms = 3000;
    let mut model_path = Vec::new();
    for action in path {
        model_path.push(model.describe(&state, action));
        let op = match action {
            Action::Serve(c) | Action::DropRequest(c) | Action::DropReply(c) => state
                .queues(*c)
                .outbox
                .front()
                .and_then(|(_, _, request)| op_kind(request))
                .map(|(kind, path)| (*c, kind, prefix_of(path))),
            _ => None,
        };
        let nth = op.as_ref().map(|(c, kind, prefix)| {
            let count = seen
                .entry((*c, format!("{kind:?}"), prefix.clone()))
                .or_insert(0);
            *count += 1;
            *count
        });
        let mut script = |fault: Fault| {
            faults.scripted.push(ScriptedFault {
                at_ms: scripted_at_ms,
                fault,
            });
            scripted_at_ms += 2000;
        };
        match action {
            Action::DropRequest(c) | Action::DropReply(c) => {
                if let (Some((_, kind, prefix)), Some(nth)) = (op, nth) {
                    let client = *c as u32;
                    let fault = match action {
                        Action::DropRequest(_) => Fault::DropRequest { client },
                        _ => Fault::DropReply { client },
                    };
                    faults.triggered.push(TriggeredFault {
                        when: Trigger {
                            client: Some(client),
                            op: kind,
                            path_prefix: prefix,
                            nth,
                        },
                        fault,
                    });
                }
            }
            Action::Expire(c) => script(Fault::ExpireSession { client: *c as u32 }),
            Action::ClientExpire(c) => script(Fault::ClientSideExpiry { client: *c as u32 }),
            Action::Crash(c) => script(Fault::CrashClient { client: *c as u32 }),
            Action::LeaderChange => {
                script(Fault::KillServer {
                    server: ServerRef::Leader,
                });
                script(Fault::RestartServer {
                    server: ServerRef::Down,
                });
            }
            _ => {}
        }
        state = model
            .next_state(&state, action.clone())
            .expect("a counterexample's actions are enabled");
    }
    Scenario {
        recipe: recipe.name.clone(),
        variant: recipe.variant.clone(),
        clients: recipe.clients as u32,
        fencing: match recipe.acting {
            Acting::Fenced => Fencing::Fenced,
            Acting::CaughtUp | Acting::Unfenced => Fencing::Unfenced,
        },
        faults,
        items: match &recipe.kind {
            RecipeKind::Job(job) => Some(job.items),
            _ => None,
        },
        violation: violation.to_owned(),
        model_path,
    }
}

pub mod known_bad;
#[cfg(madsim)]
pub mod replay;
