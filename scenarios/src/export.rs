//! A counterexample of the model checker as a scenario file, so that one bug is reproduced by
//! both engines.
//!
//! The model has no time; the simulator has nothing but. The export keeps what pins a fault to
//! the recipe's behaviour and lets the simulator supply the timing:
//!
//! - a lost request or reply becomes a *triggered* fault on the same client's n-th operation of
//!   the same kind under the recipe's directory, at the simulator's path for that directory (the
//!   recipe issues the same operations in both engines);
//! - a session expiry (server side, or client side as `KillSession` does it), a crash and a
//!   leader change become *scripted* faults 3 s into the run and 2 s apart, once the recipe has
//!   settled, in the counterexample's order;
//! - the server's later expiry of an abandoned session needs no fault: the simulated server
//!   expires it on its own timeout.
//!
//! The scenario runs the recipe's simulator workload with the check's resource (unfenced unless
//! the check was fenced: the model judges the recipe, not fencing) and expects the property the
//! model named to be violated within 10 seeds. Which client leads in the simulator depends on
//! the seed, so a fault aimed at "the leader" lands on it for some seeds and not others.

use std::collections::BTreeMap;

use zkh_model::check::{Acting, Action, RecipeModel, Workload};
use zkh_recipes::Request;
use zkh_sim::fault::{Fault, FaultPlan, OpKind, ScriptedFault, ServerRef, Trigger, TriggeredFault};
use zkh_sim::paths;

use crate::scenario::{
    Expect, LeaderJobApp, Origin, Phases, RecipeName, ScenarioFile, ShardedApp, WorkloadSpec,
};
use crate::{Recipe, RecipeKind};

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

/// The simulator's directory for the model's recipe directory of `recipe`.
fn sim_dir(recipe: &Recipe) -> &'static str {
    match recipe.kind {
        RecipeKind::Lock(_) => paths::LOCK_DIR,
        RecipeKind::Latch(_) => paths::LATCH_DIR,
        RecipeKind::Election(_) | RecipeKind::Job(_) => paths::JOB_DIR,
        RecipeKind::Master(_) => paths::APP_DIR,
        RecipeKind::Machine(name) => {
            unreachable!("{name}: `check --export` refuses a machine recipe")
        }
    }
}

/// The scenario of a counterexample `path` of `recipe` that violated `violation`, found by
/// `command`.
pub fn export(recipe: &Recipe, violation: &str, path: &[Action], command: &str) -> ScenarioFile {
    any_model!(recipe, model => export_from(recipe, &model, violation, path, command))
}

fn export_from<W: Workload>(
    recipe: &Recipe,
    model: &RecipeModel<W>,
    violation: &str,
    path: &[Action],
    command: &str,
) -> ScenarioFile {
    use stateright::Model;
    let model_dir = format!("{}/", recipe.dir());
    let sim_dir = format!("{}/", sim_dir(recipe));
    let prefix_of = |path: &str| match path.strip_prefix(&model_dir) {
        Some(_) => sim_dir.clone(),
        None => path.to_owned(),
    };
    let mut state = model.init_states().remove(0);
    let mut seen: BTreeMap<(usize, String, String), u32> = BTreeMap::new();
    let mut faults = FaultPlan::default();
    let mut not_exported = Vec::new();
    let mut scripted_at_ms = 3000;
    let mut model_path = Vec::new();
    for action in path {
        let step = model.describe(&state, action);
        model_path.push(step.clone());
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
            Action::DropRequest(c) | Action::DropReply(c) => match (op, nth) {
                (Some((_, kind, prefix)), Some(nth)) => {
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
                _ => not_exported.push(format!(
                    "{step}: a multi or sync, which no trigger of the simulator names"
                )),
            },
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
    let recipe_name = match recipe.kind {
        RecipeKind::Lock(_) => RecipeName::Lock,
        RecipeKind::Latch(_) => RecipeName::Latch,
        RecipeKind::Election(_) => RecipeName::Election,
        RecipeKind::Master(_) => RecipeName::Master,
        RecipeKind::Job(_) => RecipeName::Job,
        RecipeKind::Machine(name) => {
            unreachable!("{name}: `check --export` refuses a machine recipe")
        }
    };
    let is_leader = matches!(
        recipe.kind,
        RecipeKind::Latch(_) | RecipeKind::Election(_) | RecipeKind::Master(_)
    );
    // The model checker's own properties (a livelock, a claim not owned, an application that
    // cannot act) are not the simulator's: it runs the path's faults and judges the recipe's
    // properties, which such a path may keep. So the file expects a pass, and says what to look
    // for in its timeline.
    let model_only = [
        zkh_model::check::LIVELOCK,
        zkh_model::check::OWNERSHIP,
        zkh_model::check::ORPHANS,
        zkh_model::check::PROGRESS,
    ]
    .contains(&violation);
    let description = if model_only {
        format!(
            "{} {}: the model checker's counterexample of \"{violation}\" (the simulator judges \
             no such property: it expects a pass; look in the timeline for {})",
            recipe.name,
            recipe.variant,
            match violation {
                zkh_model::check::LIVELOCK => "requests that never stop",
                zkh_model::check::OWNERSHIP => "the client's node after the fault",
                zkh_model::check::ORPHANS => "a node its client no longer knows of",
                _ => "the application that never acts",
            }
        )
    } else {
        format!(
            "{} {}: the model checker's counterexample of \"{violation}\"",
            recipe.name, recipe.variant
        )
    };
    ScenarioFile {
        description,
        workload: WorkloadSpec {
            recipe: recipe_name.as_str().to_owned(),
            variant: recipe.variant.clone(),
            servers: 3,
            clients: recipe.clients as u32,
            session_timeout_ms: 4000,
            // The model judged the recipe, not fencing.
            fenced: recipe.acting == Acting::Fenced,
            local_expiry: Default::default(),
            container_check_interval_ms: zkh_sim::fault::CONTAINER_CHECK_INTERVAL_MS,
            stock: None,
            leader_job: is_leader.then(LeaderJobApp::default),
            sharded: match &recipe.kind {
                // Cycle 1 runs at 2 s, before the first scripted fault (3 s) and the next
                // cycle (4 s): a fault lands in the cycle the model's counterexample is about.
                RecipeKind::Job(job) => Some(ShardedApp {
                    items: Some(job.items),
                    cycle_interval_ms: Some(2000),
                    ..ShardedApp::default()
                }),
                _ => None,
            },
            config: None,
        },
        phases: Phases::default(),
        faults,
        properties: Vec::new(),
        expect: Expect {
            outcome: None,
            violation: (!model_only).then(|| violation.to_owned()),
            within_seeds: (!model_only).then_some(10),
        },
        seeds: Vec::new(),
        origin: Some(Origin {
            command: command.to_owned(),
            model_path,
            not_exported,
        }),
    }
}

/// `scenario` as the text of a scenario file.
pub fn to_toml(scenario: &ScenarioFile) -> String {
    toml::to_string(scenario).expect("a scenario serialises to TOML")
}
