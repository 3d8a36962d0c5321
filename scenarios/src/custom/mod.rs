//! Your own recipe under the simulated ensemble: the extension point for a recipe that is not
//! one of the five built in.
//!
//! A recipe written as plain async code against [`ZkClient`](zkh_recipes::ZkClient) implements
//! [`SimRecipe`]: its name (what scenario files give as `recipe = "..."`), its variants (the
//! first one correct, the rest positive controls that must be caught), its configuration (read
//! from the scenario's `[workload.config]` table, with the file, line, column and field of any
//! mistake), what one client process does ([`SimRecipe::client`]), and the properties judged on
//! every run's history ([`Property`]: `always`, `eventually` or `sometimes`, each with a name,
//! an explanation and evidence). The simulated build runs it under a scenario's faults, seed by
//! seed, from `cargo test` (`sim`, in `custom::test`, simulated build only), and judges ZooKeeper's own guarantees
//! on each run beside the recipe's properties.
//!
//! # Determinism
//!
//! A seed must replay exactly, so a recipe's client uses only what its [`ClientCtx`] gives:
//! simulated time ([`ClientCtx::sleep_ms`], [`ClientCtx::now_ms`]), the seed's own random stream
//! ([`ClientCtx::rng`]), and the client. No wall clock, no thread spawned outside the
//! simulation, no `HashMap` iterated into what the recipe does (std's hasher is seeded per
//! process), no global state shared between runs. The same seed then gives the same history and
//! the same trace hash, which `cargo test` checks for you on the first seed of every run.
//!
//! The API compiles in the normal build too, so that editors and `cargo check` see a recipe as
//! the simulated build does; only the simulated build runs it (`RUSTFLAGS="--cfg madsim"`).
//!
//! # Your own zkharness
//!
//! [`custom_main!`](crate::custom_main) makes a binary that is the whole `zkharness` with the
//! user's recipes registered ([`register`]) beside the built-ins: every command that reads a
//! scenario (`run`, `sweep`, `replay`, `shrink`) finds them by name, and every report names the
//! crate and version that registered the recipe.
//!
//! # One recipe, both engines
//!
//! A recipe written as a sans-IO machine with its application, the model checker's `Workload`,
//! is checked by the model checker ([`model`](fn@model)) and, as [`Machined<W>`] (a
//! [`MachineRecipe`]), runs on the simulated ensemble like any `SimRecipe`.
//!
//! # The built-ins
//!
//! The five built-in recipes are `SimRecipe`s too (`crate::builtins`), run by the same host as
//! a user's, and registered in the same registries: a scenario's `recipe = "..."` and the model
//! checker's command line find them by the same lookup as a user's, with the same error listing
//! the names when none matches. Their knobs are their own application tables
//! (`[workload.stock]`, `[workload.leader_job]`, `[workload.sharded]`) rather than
//! `[workload.config]`.
//!
//! # Not yet
//!
//! An async recipe does not run in the model checker (it has no machine to explore). The
//! built-ins' model-checker workloads are the model's own (`zkh_model::check`), registered by
//! name, not [`MachineRecipe`]s. The guide is `docs/your-recipe.md`.

mod ctx;
mod events;
#[cfg(madsim)]
pub(crate) mod host;
mod machined;
pub mod model;
mod property;
mod registration;
#[cfg(madsim)]
mod scenario;
#[cfg(madsim)]
pub mod test;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;

pub use crate::known_bad::KnownBad;
pub use ctx::{Client, ClientCtx};
pub use events::Waited;
pub use machined::{MachineRecipe, Machined, NoKnobs};
pub use model::{model, ModelCheck, ModelVerdict};
pub use property::{Moments, Property, Violation};
pub use registration::register;
pub(crate) use registration::register_crates_own;
#[cfg(madsim)]
pub use scenario::CustomScenario;
#[cfg(madsim)]
pub use test::{sim, SimRuns, SimTest};

/// Writes the `main` of a user's own `zkharness`: the whole command line (`run`, `sweep`,
/// `replay`, `shrink`, `report`, `check`, `explore`, ...), with recipes `$recipe, ...` registered
/// beside the five built in, each under the calling crate's name and version (which every run
/// report of it records, and `replay` compares). A recipe that cannot be registered (see
/// [`register`]) ends the program with exit 64 before anything runs. The simulated commands need
/// the simulated build (`RUSTFLAGS="--cfg madsim"`); the normal build says so.
#[macro_export]
macro_rules! custom_main {
    ($($recipe:ty),+ $(,)?) => {
        fn main() -> ::std::process::ExitCode {
            $(
                if let Err(problem) = $crate::custom::register::<$recipe>(
                    env!("CARGO_PKG_NAME"),
                    env!("CARGO_PKG_VERSION"),
                ) {
                    eprintln!("zkharness: {problem}");
                    return ::std::process::ExitCode::from($crate::report::exit::BAD_INPUT);
                }
            )+
            $crate::cli::main()
        }
    };
}

/// What one client process of a recipe runs: a future the host spawns on the client's node.
pub type ClientRun = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A user's recipe, as the simulator runs it (see the module docs).
pub trait SimRecipe: Send + Sync + 'static {
    /// The name a scenario file gives as `recipe = "..."`.
    const NAME: &'static str;
    /// The variants: the first is the correct recipe, the others positive controls.
    const VARIANTS: &'static [&'static str];
    /// The recipe's knobs, read from the scenario's `[workload.config]` table (absent: the
    /// default). Give it `#[serde(deny_unknown_fields)]` so that a misspelt knob is an error.
    type Config: DeserializeOwned + Default + Clone + Send + Sync + 'static;

    /// What client process `ctx.id()` runs, for `variant`: it may run for ever (the host stops
    /// it when the run ends) or return. A crash of the client's process stops it too.
    fn client(variant: &'static str, config: &Self::Config, ctx: ClientCtx) -> ClientRun;

    /// The properties judged on each run's history.
    fn properties(config: &Self::Config) -> Vec<Property>;

    /// What the deployment makes before any client process starts (the parent nodes its
    /// recipe takes to exist), with the first client's connection: the host awaits it after
    /// that client connects and before it spawns the first [`client`](Self::client). None by
    /// default.
    fn prepare(config: &Self::Config, client: Arc<Client>) -> ClientRun {
        let _ = (config, client);
        Box::pin(async {})
    }

    /// Where the recipe's clients queue for their turn (a lock's directory), if they do: a run's
    /// report then counts the waiters each change there woke (the herd). None by default.
    fn queue_dir(config: &Self::Config) -> Option<&'static str> {
        let _ = config;
        None
    }

    /// Refuses a configuration the recipe cannot run (a knob out of its range), before any
    /// run: the scenario's error names the file, the line and column of `[workload.config]`'s
    /// field, and the message. The default accepts every configuration that deserializes.
    fn check_config(config: &Self::Config) -> Result<(), ConfigError> {
        let _ = config;
        Ok(())
    }

    /// The model checker's side of a recipe written once for both engines ([`Machined`]):
    /// what `check` and `explore` run for it. Not for implementing by hand: a plain async
    /// recipe has none.
    #[doc(hidden)]
    fn machine_entry() -> Option<crate::registry::machines::MachineEntry> {
        None
    }
}

/// Why recipe `R` cannot be registered, if it cannot: its name is a built-in recipe's (a
/// scenario naming it would be ambiguous) or not a lowercase kebab-case word, or its variants are
/// none or repeat one. The binary (`custom_main!`) refuses it with exit 64 and the test builder
/// (`sim`) panics with it, before anything runs.
pub fn registration_problem<R: SimRecipe>() -> Option<String> {
    let name = R::NAME;
    let built_in = crate::builtins::NAMES.contains(&name);
    let kebab = |word: &str| {
        !word.is_empty()
            && !word.starts_with('-')
            && !word.ends_with('-')
            && word
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if built_in {
        return Some(format!(
            "recipe \"{name}\" cannot be registered: the name is a built-in recipe's (built in: \
             {}); give it a name of its own",
            crate::builtins::NAMES.join(", ")
        ));
    }
    if !kebab(name) {
        return Some(format!(
            "recipe \"{name}\" cannot be registered: a name is lowercase letters, digits and \
             inner hyphens (as a scenario's recipe = \"...\" writes it)"
        ));
    }
    if R::VARIANTS.is_empty() {
        return Some(format!(
            "recipe \"{name}\" cannot be registered: it has no variant (the first is the \
             correct recipe)"
        ));
    }
    let repeated = (R::VARIANTS.iter().enumerate())
        .find(|(index, variant)| R::VARIANTS[..*index].contains(variant));
    if let Some((_, variant)) = repeated {
        return Some(format!(
            "recipe \"{name}\" cannot be registered: variant \"{variant}\" is listed twice"
        ));
    }
    None
}

/// A configuration a recipe refuses: which knob of `[workload.config]`, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The knob's name within `[workload.config]` (for example `pause_ms`).
    pub field: String,
    /// What was expected and what was found.
    pub message: String,
}

impl ConfigError {
    /// Knob `field` refused, with `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// The test running now, by name (cargo's harness names each test's thread after it); empty
/// outside a test.
pub(crate) fn current_test() -> String {
    (std::thread::current().name())
        .filter(|name| *name != "main")
        .map(str::to_owned)
        .unwrap_or_default()
}

/// The `cargo test` command that runs `test` alone.
pub(crate) fn test_command(test: &str) -> String {
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "YOUR_CRATE".to_owned());
    // `--include-ignored`: the test may be `#[ignore]`d (a long one), and `--exact` runs it alone
    // either way.
    format!("cargo test -p {package} -- --exact {test} --include-ignored")
}

/// The build's `target` folder: `CARGO_TARGET_DIR`, or the one this test binary is in
/// (`target/<profile>/deps/<binary>`).
pub(crate) fn target_dir() -> std::path::PathBuf {
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        return std::path::PathBuf::from(dir);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_owned()))
        .unwrap_or_else(|| std::path::PathBuf::from("target"))
}
