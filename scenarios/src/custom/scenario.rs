//! A scenario file of a user's recipe: the same format as the built-ins' (see
//! `scenario`), its workload naming the user's recipe, with the recipe's knobs in
//! `[workload.config]`.
//!
//! ```toml
//! description = "two allocators, lost replies"
//!
//! [workload]
//! recipe = "id-allocator"   # the recipe's SimRecipe::NAME
//! variant = "correct"
//! servers = 3
//! clients = 2
//! session_timeout_ms = 4000
//!
//! [workload.config]         # the recipe's SimRecipe::Config
//! ids_per_client = 50
//!
//! [phases]
//! fault_ms = 20000
//! liveness_ms = 15000
//!
//! [faults.random]
//! drop_reply_per_s = 1.0
//!
//! [expect]                  # a positive control
//! violation = "ids unique"
//! within_seeds = 20
//! ```

use std::marker::PhantomData;
use std::path::Path;

use serde::Deserialize;
use zkh_sim::fault::FaultPlan;

use super::SimRecipe;
use crate::scenario::{
    check, check_ensemble, check_faults, check_phases, deserialize_checked, read, Expect, Phases,
    ScenarioError,
};

fn three() -> u32 {
    3
}
fn four_seconds() -> u64 {
    4000
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(bound = "C: serde::de::DeserializeOwned + Default")]
struct FileOf<C> {
    #[serde(default)]
    description: String,
    workload: WorkloadOf<C>,
    #[serde(default)]
    phases: Phases,
    #[serde(default)]
    faults: FaultPlan,
    #[serde(default)]
    expect: Expect,
    #[serde(default)]
    seeds: Vec<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(bound = "C: serde::de::DeserializeOwned + Default")]
struct WorkloadOf<C> {
    recipe: String,
    #[serde(default)]
    variant: Option<String>,
    #[serde(default = "three")]
    servers: u32,
    #[serde(default = "three")]
    clients: u32,
    #[serde(default = "four_seconds")]
    session_timeout_ms: u64,
    #[serde(default)]
    config: C,
}

/// A user recipe's scenario, read and checked: what the host runs.
pub struct CustomScenario<R: SimRecipe> {
    /// Its name (the file's stem).
    pub name: String,
    /// The file as the user named it.
    pub file: String,
    /// What it shows.
    pub description: String,
    /// The variant the file names, if it names one (a test runs its own, and a file that names
    /// another is an error there).
    pub variant: Option<&'static str>,
    /// Servers: 1, 3 or 5.
    pub servers: u32,
    /// Client processes, 1 to 16.
    pub clients: u32,
    /// Their session timeout.
    pub session_timeout_ms: u64,
    /// The recipe's knobs.
    pub config: R::Config,
    /// The fault phase.
    pub fault_ms: u64,
    /// The liveness phase after the heal.
    pub liveness_ms: u64,
    /// The faults.
    pub faults: FaultPlan,
    /// The property a positive control expects violated, if this is one.
    pub expect_violation: Option<String>,
    /// The seeds within which a control must be caught.
    pub within_seeds: u64,
    /// Seeds the file pins (regressions), run before any other.
    pub seeds: Vec<u64>,
    recipe: PhantomData<R>,
}

impl<R: SimRecipe> CustomScenario<R> {
    /// Reads and checks the scenario at `path` for recipe `R`.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let (shown, name, text) = read(path)?;
        Self::parse(&shown, &name, &text)
    }

    /// Parses and checks `text`, named `name`; errors name `shown` as the file.
    pub fn parse(shown: &str, name: &str, text: &str) -> Result<Self, ScenarioError> {
        let (file, (variant, fault_ms, liveness_ms)) =
            deserialize_checked(shown, text, |file: &FileOf<R::Config>| {
                let w = &file.workload;
                check(
                    w.recipe == R::NAME,
                    "workload.recipe",
                    format!(
                        "this test runs the recipe \"{}\", and the file names \"{}\"",
                        R::NAME,
                        w.recipe
                    ),
                )?;
                let variant = match &w.variant {
                    None => None,
                    Some(named) => {
                        Some(*R::VARIANTS.iter().find(|v| *v == named).ok_or_else(|| {
                            (
                                "workload.variant".to_owned(),
                                format!(
                                    "{} has no variant \"{named}\" (known: {})",
                                    R::NAME,
                                    R::VARIANTS.join(", ")
                                ),
                            )
                        })?)
                    }
                };
                check_ensemble(w.servers, w.clients, w.session_timeout_ms)?;
                R::check_config(&w.config).map_err(|refused| {
                    (
                        format!("workload.config.{}", refused.field),
                        refused.message,
                    )
                })?;
                let fault_ms = file.phases.fault_ms.unwrap_or(20_000);
                let liveness_ms = file.phases.liveness_ms.unwrap_or(15_000);
                check_phases(fault_ms, liveness_ms)?;
                check_faults(&file.faults, w.clients, w.servers, fault_ms)?;
                if let Some(property) = &file.expect.violation {
                    let names: Vec<&str> = (R::properties(&w.config).iter())
                        .map(|p| p.name)
                        .chain(zkh_model::guarantees::GUARANTEES)
                        .collect();
                    check(
                        names.contains(&property.as_str()),
                        "expect.violation",
                        format!(
                            "{} has no property \"{property}\" (known: {})",
                            R::NAME,
                            names.join(", ")
                        ),
                    )?;
                }
                Ok((variant, fault_ms, liveness_ms))
            })?;
        Ok(CustomScenario {
            name: name.to_owned(),
            file: shown.to_owned(),
            description: file.description,
            variant,
            servers: file.workload.servers,
            clients: file.workload.clients,
            session_timeout_ms: file.workload.session_timeout_ms,
            config: file.workload.config,
            fault_ms,
            liveness_ms,
            faults: file.faults,
            expect_violation: file.expect.violation,
            within_seeds: file.expect.within_seeds.unwrap_or(10),
            seeds: file.seeds,
            recipe: PhantomData,
        })
    }
}
