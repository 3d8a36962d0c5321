//! A counterexample of the model checker as a scenario file, so that one bug is reproduced by
//! both engines.
//!
//! The model has no time; the simulator has nothing but. The export keeps what pins a fault to
//! the recipe's behaviour and lets the simulator supply the timing:
//!
//! - a lost request or reply becomes a *triggered* fault on the same client's n-th operation of
//!   the same kind under the recipe's directory (the recipe issues the same operations at the
//!   same paths in both engines);
//! - a session expiry (server side, or client side as `KillSession` does it), a crash and a
//!   leader change become *scripted* faults 3 s into the run and 2 s apart, once the recipe has
//!   settled, in the counterexample's order;
//! - the server's later expiry of an abandoned session needs no fault: the simulated server
//!   expires it on its own timeout.
//!
//! The scenario runs the recipe's simulator workload with the check's resource (for a built-in,
//! unfenced unless the check was fenced: the model judges the recipe, not fencing), with the
//! tables its registration gives it (`registry::machines`), and expects the property the
//! model named to be violated within 10 seeds. Which client leads in the simulator depends on
//! the seed, so a fault aimed at "the leader" lands on it for some seeds and not others.

use std::collections::BTreeMap;

use zkh_model::check::{Action, RecipeModel, Workload};
use zkh_recipes::Request;
use zkh_sim::fault::{Fault, FaultPlan, OpKind, ScriptedFault, ServerRef, Trigger, TriggeredFault};

use crate::scenario::{Expect, Origin, Phases, ScenarioFile, WorkloadSpec};
use crate::Recipe;

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

/// The scenario of a counterexample `path` of `recipe` that violated `violation`, found by
/// `command`.
pub fn export(recipe: &Recipe, violation: &str, path: &[Action], command: &str) -> ScenarioFile {
    recipe.checker().export(recipe, violation, path, command)
}

/// [`export`] with the checked `model` at hand (whose workload type only its recipe's
/// registration knows), before the registration gives the workload its tables and resource.
pub(crate) fn export_from<W: Workload>(
    recipe: &Recipe,
    model: &RecipeModel<W>,
    violation: &str,
    path: &[Action],
    command: &str,
) -> ScenarioFile {
    use stateright::Model;
    // A trigger names the recipe's directory (what is below it, sequence numbers, differs from
    // run to run): the same path in both engines.
    let dir = format!("{}/", model.workload.dir());
    let prefix_of = |path: &str| match path.strip_prefix(&dir) {
        Some(_) => dir.clone(),
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
    let mut scenario = ScenarioFile {
        description,
        workload: WorkloadSpec {
            recipe: recipe.name.clone(),
            variant: recipe.variant.clone(),
            servers: 3,
            clients: recipe.clients as u32,
            session_timeout_ms: 4000,
            // The recipe's registration sets what its resource accepts (`MachineModel::export`).
            fenced: true,
            local_expiry: None,
            container_check_interval_ms: zkh_sim::fault::CONTAINER_CHECK_INTERVAL_MS,
            stock: None,
            // Its tables, the registration's too.
            leader_job: None,
            sharded: None,
            config: None,
        },
        phases: Phases::default(),
        faults,
        properties: Vec::new(),
        expect: Expect {
            outcome: None,
            violation: (!model_only).then(|| violation.to_owned()),
            within_seeds: (!model_only).then_some(10),
            reached: Vec::new(),
        },
        seeds: Vec::new(),
        origin: Some(Origin {
            command: command.to_owned(),
            model_path,
            not_exported,
        }),
    };
    recipe
        .checker()
        .scenario_tables(recipe, &mut scenario.workload);
    scenario
}

/// Whether the simulator judges `property` for `recipe`: a built-in's properties are the
/// model's; a machine recipe's are those its registration gives the simulator.
fn judged_by_the_simulator(recipe: &Recipe, property: &str) -> bool {
    if crate::builtins::NAMES.contains(&recipe.name.as_str()) {
        return true;
    }
    let Some(registration) = crate::scenario::registered(&recipe.name) else {
        return false;
    };
    let workload = registration.workload(None).ok();
    workload.is_some_and(|w| w.properties().iter().any(|p| p.name == property))
}

/// `scenario` as the text of a scenario file, written as the catalogue's files are: each fault
/// (and trigger) of `[[faults.scripted]]` and `[[faults.triggered]]` on one line, as an inline
/// table (`fault = { kind = "drop-reply", client = 1 }`), not a table of its own.
pub fn to_toml(scenario: &ScenarioFile) -> String {
    let mut table = toml::Table::try_from(scenario).expect("a scenario serialises to TOML");
    let faults = table.remove("faults");
    let text = toml::to_string(&table).expect("a scenario serialises to TOML");
    let Some(toml::Value::Table(faults)) = faults else {
        return text;
    };
    // The faults go where the file's order has them: before `[expect]` and `[origin]`.
    let at = (text.match_indices('\n'))
        .map(|(at, _)| at + 1)
        .find(|at| text[*at..].starts_with("[expect") || text[*at..].starts_with("[origin"))
        .unwrap_or(text.len());
    format!("{}{}{}", &text[..at], faults_toml(&faults), &text[at..])
}

/// The `[faults]` sections: scalars under `[faults]`, tables as they are, arrays of tables one
/// entry a `[[faults.NAME]]` with its table-valued keys inline.
fn faults_toml(faults: &toml::Table) -> String {
    let mut scalars = toml::Table::new();
    let mut out = String::new();
    for (key, value) in faults {
        match value {
            toml::Value::Table(inner) if !inner.is_empty() => {
                out += &format!("[faults.{key}]\n");
                out += &toml::to_string(inner).expect("a table serialises");
                out += "\n";
            }
            toml::Value::Table(_) => {}
            toml::Value::Array(entries) if entries.iter().all(toml::Value::is_table) => {
                for entry in entries.iter().filter_map(toml::Value::as_table) {
                    out += &format!("[[faults.{key}]]\n");
                    for (name, value) in entry {
                        out += &format!("{name} = {value}\n");
                    }
                    out += "\n";
                }
            }
            other => {
                scalars.insert(key.clone(), other.clone());
            }
        }
    }
    if scalars.is_empty() {
        return out;
    }
    let head = toml::to_string(&scalars).expect("scalars serialise");
    format!("[faults]\n{head}\n{out}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fault on one line, and the text reads back as the same scenario: a catalogue file
    /// with scripted, triggered and random faults, and one whose faults are all scripted.
    #[test]
    fn a_scenario_written_back_has_its_faults_inline_and_reads_back_the_same() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for name in [
            "catalog/control-lock-unprotected.toml",
            "regressions/lock-harsh-random-seed1285.toml",
            "catalog/job-harsh-random.toml",
        ] {
            let loaded = crate::scenario::load(&root.join(name)).expect("a catalogue file");
            let text = to_toml(&loaded.file);
            let (again, _) = crate::scenario::parse(name, "again", &text)
                .unwrap_or_else(|error| panic!("{name}: {error}\n{text}"));
            assert_eq!(again, loaded.file, "{name}:\n{text}");
            assert!(
                !text.contains(".fault]"),
                "{name}: a fault table of its own:\n{text}"
            );
            let plan = &loaded.file.faults;
            let entries = plan.scripted.len() + plan.triggered.len();
            assert_eq!(
                text.matches("fault = {").count(),
                entries,
                "{name}:\n{text}"
            );
        }
    }
}
