//! A scenario file of a user's recipe, for the `cargo test` builder ([`sim`](super::sim)): read
//! by the same reader as every scenario (`scenario::parse`), the recipe registered first, so
//! that a file means the same from a test as from the user's own `zkharness`. The workload
//! names the user's recipe, with the recipe's knobs in `[workload.config]`:
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
//! pause_ms = 50
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

use super::SimRecipe;
use crate::scenario::{check, deserialize_checked, parse, read, Loaded, ScenarioError};

/// A user recipe's scenario, read and checked: what the `cargo test` builder runs.
pub struct CustomScenario<R: SimRecipe> {
    /// The file, read and resolved.
    pub loaded: Loaded,
    /// The file as the user named it.
    pub file: String,
    /// The variant the file names, if it names one (a test runs its own, and a file that names
    /// another is an error there).
    pub variant: Option<&'static str>,
    recipe: PhantomData<fn() -> R>,
}

/// Registers `R` for the tests of this process under the package `cargo test` runs (its name
/// and version, as the package's own binary registers it, so that the binary replays a report a
/// test wrote), else under the crate its type is defined in.
pub(crate) fn register_for_tests<R: SimRecipe>() {
    let from_cargo = |key: &str| std::env::var(key).ok().filter(|value| !value.is_empty());
    let (package, version) = match (
        from_cargo("CARGO_PKG_NAME"),
        from_cargo("CARGO_PKG_VERSION"),
    ) {
        (Some(package), Some(version)) => (package, version),
        _ => {
            let type_name = std::any::type_name::<R>();
            let crate_name = type_name.split("::").next().unwrap_or("tests");
            (crate_name.to_owned(), "(cargo test)".to_owned())
        }
    };
    if let Err(problem) = super::register::<R>(&package, &version) {
        panic!("{problem}");
    }
}

impl<R: SimRecipe> CustomScenario<R> {
    /// Reads and checks the scenario at `path` for recipe `R`.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let (shown, name, text) = read(path)?;
        Self::parse(&shown, &name, &text)
    }

    /// Parses and checks `text`, named `name`; errors name `shown` as the file. The file must
    /// name recipe `R`.
    pub fn parse(shown: &str, name: &str, text: &str) -> Result<Self, ScenarioError> {
        register_for_tests::<R>();
        let (file, resolved) = parse(shown, name, text)?;
        // Read again as a plain table: whether the file names a variant, and where its recipe is.
        let (_, named) = deserialize_checked(shown, text, |table: &toml::Table| {
            check(
                file.workload.recipe == R::NAME,
                "workload.recipe",
                format!(
                    "this test runs the recipe \"{}\", and the file names \"{}\"",
                    R::NAME,
                    file.workload.recipe
                ),
            )?;
            let variant = (table.get("workload"))
                .and_then(|workload| workload.get("variant"))
                .and_then(|variant| variant.as_str());
            Ok(variant.map(str::to_owned))
        })?;
        let variant = named.and_then(|named| R::VARIANTS.iter().find(|v| **v == named).copied());
        Ok(CustomScenario {
            loaded: Loaded {
                text: text.to_owned(),
                file,
                resolved,
                variant_given: None,
            },
            file: shown.to_owned(),
            variant,
            recipe: PhantomData,
        })
    }

    /// Its name (the file's stem).
    pub fn name(&self) -> &str {
        &self.loaded.resolved.name
    }

    /// Seeds the file pins (regressions), run before any other.
    pub fn seeds(&self) -> &[u64] {
        &self.loaded.resolved.seeds
    }
}
