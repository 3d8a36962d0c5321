//! The recipe registry a scenario's `recipe = "..."` is looked up in: the five built in and a
//! user's own, registered the same way.
//!
//! A registered recipe is a [`Registration`]: its name, its variants, the crate and version
//! that registered it (which a run report records and a replay compares), the `[workload.*]`
//! tables a scenario may give it, its phases' defaults, and how to make of a scenario's variant
//! and configuration a workload the runner can run ([`OwnWorkload`]). The five built-in recipes
//! are registrations of this crate (`crate::builtins`), added the first time the registry is
//! read; a user's binary (`custom_main!`) registers its recipes (the typed side, generic over
//! the user's [`SimRecipe`](crate::custom::SimRecipe), is `custom::registration`) before the
//! command line runs. From then on every command that reads a scenario file (`run`, `sweep`,
//! `replay`, `shrink`) finds every recipe by name.
//!
//! The registry is process-wide, filled before any scenario is read, and read-only after; its
//! order is the names' (a `BTreeMap`), so what it lists never depends on the order of
//! registration.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Once, RwLock};
use zkh_sim::local_expiry::LocalExpiry;

use serde::{Serialize, Serializer};
use zkh_model::properties::Class;

use crate::scenario::Problem;

/// A recipe, as the registry keeps it.
pub trait Registration: Send + Sync + 'static {
    /// What a scenario writes as `recipe = "..."`.
    fn name(&self) -> &'static str;
    /// Its variants, the correct one first.
    fn variants(&self) -> &'static [&'static str];
    /// The crate and version that registered it, `name version`.
    fn package(&self) -> &str;
    /// The workload of `config`, the scenario's `[workload.config]` table (absent: the recipe's
    /// default); a refused knob is a problem at `workload.config.<knob>`. The workload runs the
    /// variant the resolved scenario names when it runs (`OwnWorkload::run`, simulated build).
    fn workload(&self, config: Option<&toml::Table>) -> Result<Arc<dyn OwnWorkload>, Problem>;
    /// The `[workload.*]` tables a scenario may give the recipe (any other is refused): a
    /// user's recipe reads `config`, which the registry deserializes into its configuration;
    /// a built-in reads its application's table (`stock`, `leader_job` or `sharded`), whose
    /// values the resolved scenario carries.
    fn tables(&self) -> &'static [&'static str] {
        &["config"]
    }
    /// How the recipe's client library ends a session it cannot reconnect, where the scenario
    /// does not say (`[workload] local_expiry`): by default only on a server's word, as the Java
    /// client does. `variant` is the scenario's (a release profile names its client library).
    fn local_expiry(&self, _variant: &str) -> LocalExpiry {
        LocalExpiry::Never
    }
    /// The defaults of the run's phases for this recipe.
    fn phases(&self) -> PhaseDefaults {
        PhaseDefaults {
            liveness_ms: 15_000,
            leader_within_ms: None,
        }
    }
}

/// A recipe's defaults for a scenario's `[phases]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseDefaults {
    /// The liveness phase after the heal.
    pub liveness_ms: u64,
    /// The bound of "leader elected" after the heal, for a recipe that judges it (only such a
    /// recipe's scenario may set `phases.leader_within_ms`); none for one that does not.
    pub leader_within_ms: Option<u64>,
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

/// A recipe with its variant and configuration: what the runner runs.
pub trait OwnWorkload: Send + Sync + 'static {
    /// The recipe's properties under this configuration.
    fn properties(&self) -> Vec<PropertyInfo>;

    /// Runs `scenario` (whose recipe is this workload, and whose `variant` is one of the
    /// recipe's) for `seed` on the simulated ensemble.
    #[cfg(madsim)]
    fn run(&self, scenario: &crate::scenario::Resolved, seed: u64) -> crate::runner::RunResult;
}

/// The recipe of a resolved scenario, with its variant and configuration: a registered recipe
/// (one of the five built in, or a user's own).
#[derive(Clone)]
pub struct ScenarioRecipe {
    /// The registration.
    pub registration: Arc<dyn Registration>,
    /// The workload it made of the scenario's variant and configuration.
    pub workload: Arc<dyn OwnWorkload>,
}

impl fmt::Debug for ScenarioRecipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ScenarioRecipe({} of {})",
            self.registration.name(),
            self.registration.package()
        )
    }
}

impl ScenarioRecipe {
    /// The name as a scenario writes it.
    pub fn as_str(&self) -> &'static str {
        self.registration.name()
    }

    /// The crate and version that registered a recipe of the user's own; none for a built-in,
    /// which is this binary's own (a report's commit names it).
    pub fn package(&self) -> Option<String> {
        let built_in = crate::builtins::NAMES.contains(&self.as_str());
        (!built_in).then(|| self.registration.package().to_owned())
    }
}

impl PartialEq for ScenarioRecipe {
    /// Two recipes are the same when they have the same name (the registry holds one recipe
    /// per name; the variant and configuration are compared by [`Resolved`](crate::scenario::Resolved)).
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

/// The recipes this crate registers (the five built in, and `lock-model`), added the first time
/// the registry is read or written, in every process that reads a scenario.
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

/// The names of the registered recipes but the five built in, in order.
pub fn registered_names() -> Vec<&'static str> {
    ensure_crates_own();
    let registry = REGISTRY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let built_in = |name: &&str| crate::builtins::NAMES.contains(name);
    registry.keys().copied().filter(|n| !built_in(n)).collect()
}

/// Why `name` names no recipe: the built-ins and the registered recipes, listed.
pub(crate) fn unknown_recipe(name: &str) -> String {
    format!(
        "unknown recipe \"{name}\" (built in: {}; registered: {}); a recipe of your own runs \
         from its own binary (docs/your-recipe.md)",
        crate::builtins::NAMES.join(", "),
        registered_names().join(", ")
    )
}
