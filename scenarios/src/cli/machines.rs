//! `check` and `explore` for machine recipes a binary registered (`custom::Machined<W>`): the
//! model checker's side of one recipe for both engines, from the command line.
//!
//! A machine recipe's workload type is known only where it was registered, so its registration
//! carries, monomorphised for it, what `check` and `explore` do with a model: the plain search
//! (`run_check`), one budget of the standard set (`budgets::one_budget`), and the Explorer. The
//! command line looks a recipe name up here when it is none of the five built in
//! ([`crate::RecipeKind::Machine`]). `check --export` writes a scenario of the machine recipe
//! itself (its paths are the same in both engines: nothing to map). Not offered: the sharded
//! job's `--items` and `--cycles`.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::process::ExitCode;
use std::sync::{Arc, RwLock};

use zkh_model::check::RecipeModel;

use super::budgets::{one_budget, Row, Settings};
use super::CheckArgs;
use crate::custom::MachineRecipe;
use crate::Recipe;

/// What the command line does with a registered machine recipe's model.
pub(crate) trait MachineModel: Send + Sync + 'static {
    /// Its name.
    fn name(&self) -> &'static str;
    /// Its variants, the correct one first.
    fn variants(&self) -> &'static [&'static str];
    /// `zkharness check` with one search option: [`super::check::run_check`].
    fn check(&self, recipe: &Recipe, args: &CheckArgs) -> ExitCode;
    /// One budget of `zkharness check`'s standard set.
    fn one_budget(&self, recipe: &Recipe, settings: &Settings) -> Row;
    /// `zkharness explore`.
    fn explore(&self, recipe: &Recipe, port: u16) -> ExitCode;
}

/// A registered machine recipe's model side (see the module docs); made by
/// [`MachineRecipe`]'s simulator form, `custom::Machined`, and registered with it.
#[derive(Clone)]
pub struct MachineEntry(pub(crate) Arc<dyn MachineModel>);

impl MachineEntry {
    /// The entry of workload `W`.
    pub(crate) fn of<W: MachineRecipe>() -> MachineEntry {
        MachineEntry(Arc::new(Entry::<W>(PhantomData)))
    }
}

struct Entry<W>(PhantomData<fn() -> W>);

impl<W: MachineRecipe> Entry<W> {
    fn model(recipe: &Recipe) -> RecipeModel<W> {
        RecipeModel::new(
            W::of_variant(&recipe.variant),
            recipe.clients,
            recipe.budget,
            recipe.acting,
        )
    }
}

impl<W: MachineRecipe> MachineModel for Entry<W> {
    fn name(&self) -> &'static str {
        W::NAME
    }

    fn variants(&self) -> &'static [&'static str] {
        W::VARIANTS
    }

    fn check(&self, recipe: &Recipe, args: &CheckArgs) -> ExitCode {
        super::check::run_check(Self::model(recipe), recipe, args)
    }

    fn one_budget(&self, recipe: &Recipe, settings: &Settings) -> Row {
        one_budget(Self::model(recipe), recipe, settings)
    }

    fn explore(&self, recipe: &Recipe, port: u16) -> ExitCode {
        super::explore(Self::model(recipe), port)
    }
}

static MACHINES: RwLock<BTreeMap<&'static str, MachineEntry>> = RwLock::new(BTreeMap::new());

/// Adds `entry` (its name was registered for the simulator first, which refuses a name taken).
pub(crate) fn register(entry: MachineEntry) {
    let mut machines = MACHINES
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    machines.entry(entry.0.name()).or_insert(entry);
}

/// The machine recipe called `name`, if one was registered.
pub(crate) fn registered(name: &str) -> Option<Arc<dyn MachineModel>> {
    crate::scenario::ensure_crates_own();
    let machines = MACHINES
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    machines.get(name).map(|entry| Arc::clone(&entry.0))
}

/// The registered machine recipes' names, in order.
pub(crate) fn names() -> Vec<&'static str> {
    crate::scenario::ensure_crates_own();
    let machines = MACHINES
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    machines.keys().copied().collect()
}
