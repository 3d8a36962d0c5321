//! The harness's front end: scenario files and their runner, the reports, which recipe a
//! model-checking command names, and a counterexample of the model checker exported as a
//! scenario the simulator runs, so that one bug is reproduced by both engines.
//!
//! - [`scenario`]: the TOML scenario format, parsed with errors that name file, line, column and
//!   field;
//! - `runner` (simulated build): one seed of a scenario on the simulated ensemble;
//! - [`report`]: run reports and sweep summaries, and the exit codes;
//! - [`mod@export`]: a model checker's counterexample as a scenario;
//! - [`builtins`]: the five built-in recipes, registered in both engines' registries as a
//!   user's recipes are ([`custom`]): every command finds a recipe by name, and nothing else
//!   names them.

use std::sync::Arc;

use zkh_model::check::{Acting, FaultBudget, RecipeModel, Workload};

pub use cli::machines::JobShape;

/// A recipe, its variant and the shape of a check, as a command names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recipe {
    /// Its name: a built-in's (`lock`, `latch`, `election`, `master`, `job`) or a registered
    /// machine recipe's.
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
    /// The model's shape, for a recipe that has one (the sharded job's items and cycles).
    pub shape: Option<JobShape>,
}

impl Recipe {
    /// The recipe `name` with `variant_name`, checked with `clients` clients within `budget`:
    /// any recipe in the model registry (the five built in, and the machine recipes a binary
    /// registered).
    pub fn new(
        name: &str,
        variant_name: &str,
        clients: usize,
        budget: FaultBudget,
        acting: Acting,
    ) -> Result<Recipe, String> {
        let Some(model) = cli::machines::registered(name) else {
            return Err(format!(
                "unknown recipe {name:?} (known: {})",
                cli::machines::names().join(", ")
            ));
        };
        if !model.variants().contains(&variant_name) {
            return Err(format!(
                "{name} has no variant {variant_name:?} (known: {})",
                model.variants().join(", ")
            ));
        }
        Ok(Recipe {
            name: name.to_owned(),
            variant: variant_name.to_owned(),
            clients,
            faults: budget_text(&budget),
            budget,
            acting,
            shape: model.shape(),
        })
    }

    /// The name `--acting` gives this recipe's acting: `caught-up`, `fenced` or `unfenced`.
    pub fn acting_name(&self) -> String {
        let name = serde_json::to_value(self.acting).expect("an acting serializes");
        name.as_str()
            .expect("an acting serializes to its name")
            .to_owned()
    }

    /// The recipe's model, for a caller that knows its workload type `W` (a test): `None` when
    /// the recipe's model is of another type.
    pub fn model<W: Workload>(&self) -> Option<RecipeModel<W>> {
        let model = self.checker().model_any(self);
        model.downcast::<RecipeModel<W>>().ok().map(|model| *model)
    }

    /// What the command line does with the recipe's model (found by name: a recipe is made
    /// only of a registered name).
    pub(crate) fn checker(&self) -> Arc<dyn cli::machines::MachineModel> {
        cli::machines::registered(&self.name).expect("a recipe is made of a registered name")
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

pub mod builtins;
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
