//! The recipe registry: every recipe a command can name, the five built in and a user's own,
//! registered the same way, with both engines' sides of each.
//!
//! - [`simulated`]: the simulator's side, what a scenario's `recipe = "..."` is looked up in
//!   (a [`Registration`](simulated::Registration): the recipe's variants, its `[workload.*]`
//!   tables, its phases' defaults, and the workload the runner runs);
//! - `machines`: the model checker's side, a recipe's state machines by name, with what the
//!   model checker's commands do with them (`crate::checker`);
//! - [`known_bad`]: how each known-bad variant is caught, the table the commands print beside a
//!   pass of a known-bad variant;
//! - [`Recipe`]: a recipe, its variant and the shape of a check, as a command names them,
//!   resolved against the registry.
//!
//! The registry stands below the command line (`crate::cli`), which only looks recipes up in
//! it; nothing here imports the command line. Registration happens in the recipe's own layer
//! (`crate::builtins` for the five built in, `crate::custom::register` for a user's), before any
//! command reads a scenario or names a recipe.

use std::sync::Arc;

use zkh_model::check::{Acting, FaultBudget, RecipeModel, Workload};

pub use machines::JobShape;

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
        let Some(model) = machines::registered(name) else {
            if simulated::registered(name).is_some() {
                return Err(format!(
                    "{name} is a recipe of the simulator only (written as async code against \
                     ZkClient, a SimRecipe): `run` and `sweep` run it; `check` and `explore` \
                     take a recipe written once as a machine for both engines (a \
                     MachineRecipe, registered with custom::register::<Machined<W>>: \
                     docs/your-recipe.md), and this binary's are: {}",
                    machines::names().join(", ")
                ));
            }
            return Err(format!(
                "unknown recipe {name:?} (known: {})",
                machines::names().join(", ")
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
    pub(crate) fn checker(&self) -> Arc<dyn machines::MachineModel> {
        machines::registered(&self.name).expect("a recipe is made of a registered name")
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

pub mod known_bad;
pub(crate) mod machines;
pub mod simulated;
