//! The model checker's side of every recipe, by name: what `check`, `explore` and `check
//! --export` do with a recipe's model, whichever recipe it is.
//!
//! A model's workload type is known only where its recipe was registered, so a registration
//! carries, monomorphised for it, what the command line does with a model: the plain search
//! (`run_check`), one budget of the standard set (`budgets::one_budget`), the Explorer, and the
//! export of a counterexample as a scenario. The five built-in recipes register here
//! (`crate::builtins`) as a binary's machine recipes do (`custom::Machined<W>`, registered with
//! its simulator side): the command line finds every recipe by name in one registry, and a
//! recipe's paths are the same in both engines (an export has nothing to map). Only the
//! sharded job has a shape (`--items`, `--cycles`).

use std::any::Any;
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, RwLock};

use zkh_model::check::{Action, RecipeModel, Workload};

use super::known_bad::{KnownBad, KNOWN_BAD};
use super::Recipe;
use crate::checker::budgets::{one_budget, Row, Settings};
use crate::checker::CheckArgs;
use crate::custom::MachineRecipe;
use crate::scenario::{ScenarioFile, WorkloadSpec};

/// What the command line does with a recipe's model: a built-in's, or a registered machine
/// recipe's.
pub(crate) trait MachineModel: Send + Sync + 'static {
    /// Its name.
    fn name(&self) -> &'static str;
    /// Its variants, the correct one first.
    fn variants(&self) -> &'static [&'static str];
    /// The shape the model is checked in by default (the sharded job's items and cycles), if
    /// it has one (`--items`, `--cycles`).
    fn shape(&self) -> Option<JobShape>;
    /// The shape its standard budgets check (`check --budgets standard`), where it has one.
    fn standard_shape(&self) -> Option<JobShape>;
    /// `zkharness check` with one search option: [`crate::checker::check::run_check`].
    fn check(&self, recipe: &Recipe, args: &CheckArgs) -> ExitCode;
    /// One budget of `zkharness check`'s standard set.
    fn one_budget(&self, recipe: &Recipe, settings: &Settings) -> Row;
    /// `zkharness explore`.
    fn explore(&self, recipe: &Recipe, port: u16) -> ExitCode;
    /// The counterexample `path` that violated `violation` as a scenario (see
    /// [`crate::export`]).
    fn export(
        &self,
        recipe: &Recipe,
        violation: &str,
        path: &[Action],
        command: &str,
    ) -> ScenarioFile;
    /// Gives an exported counterexample's `workload` the recipe's tables and what its resource
    /// accepts.
    fn scenario_tables(&self, recipe: &Recipe, workload: &mut WorkloadSpec);
    /// The model of `recipe`, typed, for a caller that knows its workload type
    /// ([`Recipe::model`]).
    fn model_any(&self, recipe: &Recipe) -> Box<dyn Any>;
    /// How a check catches each of its known-bad variants
    /// ([`known_bad`](crate::known_bad::known_bad)).
    fn known_bad(&self) -> &[KnownBad];
}

/// The sharded job's shape in the model: its items, and the cycles it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobShape {
    /// Items per cycle.
    pub items: u32,
    /// Cycles.
    pub cycles: u64,
}

/// A recipe's model side (see the module docs): a built-in's (`crate::builtins`), or made by
/// [`MachineRecipe`]'s simulator form, `custom::Machined`, and registered with it.
#[derive(Clone)]
pub struct MachineEntry(pub(crate) Arc<dyn MachineModel>);

impl MachineEntry {
    /// The entry of machine recipe `W`.
    pub(crate) fn of<W: MachineRecipe>() -> MachineEntry {
        MachineEntry(Arc::new(Entry::<W> {
            name: W::NAME,
            variants: W::VARIANTS,
            shape: None,
            standard_shape: None,
            workload: |recipe| W::of_variant(&recipe.variant),
            scenario: |_, workload| {
                // A machine recipe has no resource to fence: the default, which the file
                // leaves out.
                workload.fenced = true;
            },
            known_bad: W::known_bad(),
        }))
    }

    /// The entry of a recipe called `name` with `variants` (the correct one first), whose
    /// model's workload is `workload(recipe)`, checked by default in the first of `shapes` and
    /// under the standard budgets in the second; `scenario` gives an exported counterexample's
    /// workload its recipe's tables.
    pub(crate) fn built<W: Workload>(
        name: &'static str,
        variants: &'static [&'static str],
        shapes: Option<(JobShape, JobShape)>,
        workload: fn(&Recipe) -> W,
        scenario: fn(&Recipe, &mut WorkloadSpec),
    ) -> MachineEntry {
        MachineEntry(Arc::new(Entry {
            name,
            variants,
            shape: shapes.map(|(default, _)| default),
            standard_shape: shapes.map(|(_, standard)| standard),
            workload,
            scenario,
            known_bad: (KNOWN_BAD.iter())
                .filter(|entry| entry.recipe == name)
                .copied()
                .collect(),
        }))
    }
}

struct Entry<W> {
    name: &'static str,
    variants: &'static [&'static str],
    shape: Option<JobShape>,
    standard_shape: Option<JobShape>,
    workload: fn(&Recipe) -> W,
    scenario: fn(&Recipe, &mut WorkloadSpec),
    known_bad: Vec<KnownBad>,
}

impl<W: Workload> Entry<W> {
    fn model(&self, recipe: &Recipe) -> RecipeModel<W> {
        RecipeModel::new(
            (self.workload)(recipe),
            recipe.clients,
            recipe.budget,
            recipe.acting,
        )
    }
}

impl<W: Workload> MachineModel for Entry<W> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn variants(&self) -> &'static [&'static str] {
        self.variants
    }

    fn shape(&self) -> Option<JobShape> {
        self.shape
    }

    fn standard_shape(&self) -> Option<JobShape> {
        self.standard_shape
    }

    fn check(&self, recipe: &Recipe, args: &CheckArgs) -> ExitCode {
        crate::checker::check::run_check(self.model(recipe), recipe, args)
    }

    fn one_budget(&self, recipe: &Recipe, settings: &Settings) -> Row {
        one_budget(self.model(recipe), recipe, settings)
    }

    fn explore(&self, recipe: &Recipe, port: u16) -> ExitCode {
        crate::checker::explore(self.model(recipe), port)
    }

    fn export(
        &self,
        recipe: &Recipe,
        violation: &str,
        path: &[Action],
        command: &str,
    ) -> ScenarioFile {
        crate::export::export_from(recipe, &self.model(recipe), violation, path, command)
    }

    fn scenario_tables(&self, recipe: &Recipe, workload: &mut WorkloadSpec) {
        (self.scenario)(recipe, workload);
    }

    fn model_any(&self, recipe: &Recipe) -> Box<dyn Any> {
        Box::new(self.model(recipe))
    }

    fn known_bad(&self) -> &[KnownBad] {
        &self.known_bad
    }
}

static MACHINES: RwLock<BTreeMap<&'static str, MachineEntry>> = RwLock::new(BTreeMap::new());

/// Adds `entry` (a built-in's, or one whose name was registered for the simulator first, which
/// refuses a name taken).
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
