//! A [`SimRecipe`] registered in the scenario registry (`registry::simulated`): the typed side of a
//! recipe of the user's own that `zkharness`'s commands run beside the built-ins.
//!
//! [`register`] checks the recipe ([`registration_problem`](super::registration_problem)) and
//! adds it under its name with the crate and version that registered it. A scenario naming it is
//! then read as any other: its `[workload.config]` table is deserialized into the recipe's
//! `Config` (a mistake is reported at `workload.config.<knob>`, with its line and column) and
//! checked by [`SimRecipe::check_config`]; the runner runs it through the generic host.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::scenario::{register as add, OwnWorkload, Problem, PropertyInfo, Registration};

use super::SimRecipe;

/// Registers recipe `R` of crate `package` at `version`, so that every command that reads a
/// scenario file finds it by `R::NAME`. Refused (with the reason) when its name is a built-in's
/// or not one a scenario can write, when it has no variant or repeats one, or when another crate
/// or version registered that name.
pub fn register<R: SimRecipe>(package: &str, version: &str) -> Result<(), String> {
    if let Some(problem) = super::registration_problem::<R>() {
        return Err(problem);
    }
    add(entry::<R>(package, version))?;
    if let Some(machine) = R::machine_entry() {
        crate::registry::machines::register(machine);
    }
    Ok(())
}

/// The registration of recipe `R` of crate `package` at `version`.
pub(crate) fn entry<R: SimRecipe>(package: &str, version: &str) -> Arc<dyn Registration> {
    Arc::new(Entry::<R> {
        package: format!("{package} {version}"),
        recipe: PhantomData,
    })
}

/// Registers this crate's own recipes in the registries a user's go in: the five built in
/// (`crate::builtins`, both engines' sides) and `lock-model`, the built-in lock's model-checker
/// workload on the simulated ensemble (`custom::Machined`), a recipe written once for both
/// engines. Called once, by the registry itself.
pub(crate) fn register_crates_own() {
    for model in crate::builtins::models() {
        crate::registry::machines::register(model);
    }
    for registration in crate::builtins::simulated::registrations() {
        crate::scenario::insert(registration);
    }
    type LockModel = super::Machined<zkh_model::check::LockWorkload>;
    crate::scenario::insert(entry::<LockModel>(
        env!("CARGO_PKG_NAME"),
        env!("CARGO_PKG_VERSION"),
    ));
    if let Some(machine) = <LockModel as SimRecipe>::machine_entry() {
        crate::registry::machines::register(machine);
    }
}

struct Entry<R> {
    package: String,
    recipe: PhantomData<fn() -> R>,
}

impl<R: SimRecipe> Registration for Entry<R> {
    fn name(&self) -> &'static str {
        R::NAME
    }

    fn variants(&self) -> &'static [&'static str] {
        R::VARIANTS
    }

    fn package(&self) -> &str {
        &self.package
    }

    fn workload(&self, config: Option<&toml::Table>) -> Result<Arc<dyn OwnWorkload>, Problem> {
        let config: R::Config = match config {
            None => R::Config::default(),
            Some(table) => {
                let value = toml::Value::Table(table.clone());
                serde_path_to_error::deserialize(value).map_err(|error| {
                    let inner = error.path().to_string();
                    let path = match inner.as_str() {
                        "" | "." | "?" => "workload.config".to_owned(),
                        knob => format!("workload.config.{knob}"),
                    };
                    let message = crate::scenario::explain(Some(&path), &error.inner().to_string());
                    (path, message)
                })?
            }
        };
        R::check_config(&config).map_err(|refused| {
            (
                format!("workload.config.{}", refused.field),
                refused.message,
            )
        })?;
        Ok(Arc::new(Typed::<R> { config }))
    }
}

/// A registered recipe's configuration (its variant is the resolved scenario's, so that a
/// scenario whose variant is changed runs the new one).
pub(crate) struct Typed<R: SimRecipe> {
    pub(crate) config: R::Config,
}

impl<R: SimRecipe> OwnWorkload for Typed<R> {
    fn properties(&self) -> Vec<PropertyInfo> {
        (R::properties(&self.config).iter())
            .map(|property| PropertyInfo {
                name: property.name,
                class: property.class,
                explanation: property.explanation,
            })
            .collect()
    }

    #[cfg(madsim)]
    fn run(&self, scenario: &crate::scenario::Resolved, seed: u64) -> crate::runner::RunResult {
        let variant = (R::VARIANTS.iter())
            .find(|variant| **variant == scenario.variant)
            .unwrap_or_else(|| panic!("{} has no variant {:?}", R::NAME, scenario.variant));
        super::host::run_resolved::<R>(scenario, variant, &self.config, seed)
    }
}
