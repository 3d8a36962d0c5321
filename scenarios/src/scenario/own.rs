//! Recipes of a user's own, registered beside the five built in: the registry a scenario's
//! `recipe = "..."` is looked up in.
//!
//! A user's binary (`custom_main!`) registers its recipes before the command line runs; from
//! then on every command that reads a scenario file (`run`, `sweep`, `replay`, `shrink`) finds
//! them by name as it finds the built-ins. A registered recipe is a [`Registration`]: its name,
//! its variants, the crate and version that registered it (which a run report records and a
//! replay compares), and how to read its `[workload.config]` table into a workload the runner
//! can run ([`OwnWorkload`]). The typed side of it, generic over the user's
//! [`SimRecipe`](crate::custom::SimRecipe), is `custom::registration`.
//!
//! The registry is process-wide, filled once before any scenario is read, and read-only after;
//! its order is the names' (a `BTreeMap`), so what it lists never depends on the order of
//! registration.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Once, RwLock};

use serde::{Serialize, Serializer};
use zkh_model::properties::Class;

use super::resolve::Problem;
use super::RecipeName;

/// A recipe of the user's own, as the registry keeps it.
pub trait Registration: Send + Sync + 'static {
    /// What a scenario writes as `recipe = "..."`.
    fn name(&self) -> &'static str;
    /// Its variants, the correct one first.
    fn variants(&self) -> &'static [&'static str];
    /// The crate and version that registered it, `name version`.
    fn package(&self) -> &str;
    /// The workload of `variant` (already checked to be one of [`variants`](Self::variants))
    /// with `config`, the scenario's `[workload.config]` table (absent: the recipe's default);
    /// a refused knob is a problem at `workload.config.<knob>`.
    fn workload(
        &self,
        variant: &'static str,
        config: Option<&toml::Table>,
    ) -> Result<Arc<dyn OwnWorkload>, Problem>;
}

/// One property of a recipe of the user's own: its name, class and what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropertyInfo {
    /// Its name, as findings and `expect.violation` give it.
    pub name: &'static str,
    /// `always`, `eventually` or `sometimes`.
    pub class: Class,
    /// What it means, for reports.
    pub explanation: &'static str,
}

/// A user's recipe with its variant and configuration: what the runner runs.
pub trait OwnWorkload: Send + Sync + 'static {
    /// The recipe's properties under this configuration.
    fn properties(&self) -> Vec<PropertyInfo>;

    /// Runs `scenario` (whose recipe is this workload) for `seed` on the simulated ensemble.
    #[cfg(madsim)]
    fn run(&self, scenario: &super::Resolved, seed: u64) -> crate::runner::RunResult;
}

/// A registered recipe with its variant, in a resolved scenario.
#[derive(Clone)]
pub struct OwnRecipe {
    /// The registration.
    pub registration: Arc<dyn Registration>,
    /// The workload it made of the scenario's variant and configuration.
    pub workload: Arc<dyn OwnWorkload>,
}

impl fmt::Debug for OwnRecipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "OwnRecipe({} of {})",
            self.registration.name(),
            self.registration.package()
        )
    }
}

/// The recipe of a resolved scenario: one of the five built in, or one of the user's own.
#[derive(Clone, Debug)]
pub enum ScenarioRecipe {
    /// A built-in recipe.
    BuiltIn(RecipeName),
    /// A recipe a user's binary registered.
    Own(OwnRecipe),
}

impl ScenarioRecipe {
    /// The name as a scenario writes it.
    pub fn as_str(&self) -> &'static str {
        match self {
            ScenarioRecipe::BuiltIn(recipe) => recipe.as_str(),
            ScenarioRecipe::Own(own) => own.registration.name(),
        }
    }

    /// The crate and version that registered a recipe of the user's own (none for a built-in).
    pub fn package(&self) -> Option<String> {
        match self {
            ScenarioRecipe::BuiltIn(_) => None,
            ScenarioRecipe::Own(own) => Some(own.registration.package().to_owned()),
        }
    }

    /// The built-in recipe, if this is one.
    pub fn built_in(&self) -> Option<RecipeName> {
        match self {
            ScenarioRecipe::BuiltIn(recipe) => Some(*recipe),
            ScenarioRecipe::Own(_) => None,
        }
    }
}

impl PartialEq for ScenarioRecipe {
    /// Two recipes are the same when they have the same name (the registry holds one recipe
    /// per name; the variant and configuration are compared by [`Resolved`](super::Resolved)).
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for ScenarioRecipe {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

static REGISTRY: RwLock<BTreeMap<&'static str, Arc<dyn Registration>>> =
    RwLock::new(BTreeMap::new());

/// The recipes this crate registers through the same API as a user's (`lock-model`), added
/// the first time the registry is read or written, in every process that reads a scenario.
static CRATES_OWN: Once = Once::new();

/// Adds this crate's own registrations, once.
pub(crate) fn ensure_crates_own() {
    CRATES_OWN.call_once(crate::custom::register_crates_own);
}

/// Adds `registration` as it is (this crate's own, whose names are known to be free).
pub(crate) fn insert(registration: Arc<dyn Registration>) {
    let mut registry = REGISTRY
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    registry.insert(registration.name(), registration);
}

/// Registers `registration` (its name checked by `custom::registration_problem`). The same
/// name registered again by the same crate and version is kept as it was (a test may register
/// before each run); by another crate, or version, it is refused with the reason.
pub(crate) fn register(registration: Arc<dyn Registration>) -> Result<(), String> {
    ensure_crates_own();
    let name = registration.name();
    let mut registry = REGISTRY
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(there) = registry.get(name) {
        if there.package() == registration.package() {
            return Ok(());
        }
        return Err(format!(
            "recipe \"{name}\" cannot be registered by {}: {} registered a recipe of that name",
            registration.package(),
            there.package()
        ));
    }
    registry.insert(name, registration);
    Ok(())
}

/// The registered recipe called `name`, if there is one.
pub fn registered(name: &str) -> Option<Arc<dyn Registration>> {
    ensure_crates_own();
    let registry = REGISTRY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    registry.get(name).cloned()
}

/// The names of the registered recipes, in order.
pub fn registered_names() -> Vec<&'static str> {
    ensure_crates_own();
    let registry = REGISTRY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    registry.keys().copied().collect()
}

/// The built-in recipes' names.
pub(crate) fn built_in_names() -> Vec<&'static str> {
    RecipeName::ALL
        .iter()
        .map(|recipe| recipe.as_str())
        .collect()
}

/// Why `name` names no recipe: the built-ins and the registered recipes, listed.
pub(crate) fn unknown_recipe(name: &str) -> String {
    format!(
        "unknown recipe \"{name}\" (built in: {}; registered: {}); a recipe of your own runs \
         from its own binary (docs/your-recipe.md)",
        built_in_names().join(", "),
        registered_names().join(", ")
    )
}
