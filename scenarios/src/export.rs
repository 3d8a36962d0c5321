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

/// The simulator's directory for the model's recipe directory of `recipe`: a built-in's
/// differ; a machine recipe's are the same in both engines (its workload's own, made by each
/// client in the simulator too), so there is nothing to map.
fn sim_dir(recipe: &Recipe) -> Option<&'static str> {
    match recipe.kind {
        RecipeKind::Lock(_) => Some(paths::LOCK_DIR),
        RecipeKind::Latch(_) => Some(paths::LATCH_DIR),
        RecipeKind::Election(_) | RecipeKind::Job(_) => Some(paths::JOB_DIR),
        RecipeKind::Master(_) => Some(paths::APP_DIR),
        RecipeKind::Machine(_) => None,
    }
}

/// The scenario of a counterexample `path` of `recipe` that violated `violation`, found by
/// `command`.
pub fn export(recipe: &Recipe, violation: &str, path: &[Action], command: &str) -> ScenarioFile {
    any_model!(recipe, model => export_from(recipe, &model, violation, path, command))
}

/// [`export`] with the checked `model` at hand: a built-in recipe's or a registered machine
/// recipe's (whose workload type only its registration knows).
pub(crate) fn export_from<W: Workload>(
    recipe: &Recipe,
    model: &RecipeModel<W>,
    violation: &str,
    path: &[Action],
    command: &str,
) -> ScenarioFile {
    use stateright::Model;
    // A trigger names the recipe's directory (what is below it, sequence numbers, differs from
    // run to run), at the simulator's path for it.
    let model_dir = format!("{}/", model.workload.dir());
    let sim_dir = sim_dir(recipe).map_or_else(|| model_dir.clone(), |dir| format!("{dir}/"));
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
        RecipeKind::Lock(_) => RecipeName::Lock.as_str(),
        RecipeKind::Latch(_) => RecipeName::Latch.as_str(),
        RecipeKind::Election(_) => RecipeName::Election.as_str(),
        RecipeKind::Master(_) => RecipeName::Master.as_str(),
        RecipeKind::Job(_) => RecipeName::Job.as_str(),
        RecipeKind::Machine(name) => name,
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
    .contains(&violation)
        || !judged_by_the_simulator(recipe, violation);
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
                zkh_model::check::PROGRESS => "the application that never acts",
                _ => "what the property is about",
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
            recipe: recipe_name.to_owned(),
            variant: recipe.variant.clone(),
            servers: 3,
            clients: recipe.clients as u32,
            session_timeout_ms: 4000,
            // The model judged the recipe, not fencing (a machine recipe has no resource to
            // fence: the default, which the file leaves out).
            fenced: recipe.acting == Acting::Fenced
                || matches!(recipe.kind, RecipeKind::Machine(_)),
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

/// Whether the simulator judges `property` for `recipe`: a built-in's properties are the
/// model's; a machine recipe's are those its registration gives the simulator.
fn judged_by_the_simulator(recipe: &Recipe, property: &str) -> bool {
    let RecipeKind::Machine(name) = recipe.kind else {
        return true;
    };
    let Some(registration) = crate::scenario::registered(name) else {
        return false;
    };
    let variant = (registration.variants().iter()).find(|v| **v == recipe.variant);
    let workload = variant.and_then(|variant| registration.workload(variant, None).ok());
    workload.is_some_and(|w| w.properties().iter().any(|p| p.name == property))
}

/// `scenario` as the text of a scenario file.
pub fn to_toml(scenario: &ScenarioFile) -> String {
    toml::to_string(scenario).expect("a scenario serialises to TOML")
}
