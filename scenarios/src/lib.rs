//! The harness's front end: scenario files and their runner, the reports, which recipe a
//! model-checking command names, and a counterexample of the model checker exported as a
//! scenario the simulator runs, so that one bug is reproduced by both engines.
//!
//! - [`scenario`]: the TOML scenario format, parsed with errors that name file, line, column and
//!   field;
//! - `runner` (simulated build): one seed of a scenario on the simulated ensemble;
//! - [`report`]: run reports and sweep summaries, and the exit codes;
//! - [`mod@export`]: a model checker's counterexample as a scenario;
//! - [`registry`]: every recipe by name, both engines' sides, and the known-bad table;
//! - [`checker`]: the model checker's commands over a registered recipe's model;
//! - [`builtins`]: the five built-in recipes, registered in both engines' registries as a
//!   user's recipes are ([`custom`]): every command finds a recipe by name, and nothing else
//!   names them.

/// `println!`, except that a reader that went away (`zkharness check ... | head`) ends the
/// program quietly, with the shell's code for a broken pipe (141), as other Unix tools do,
/// instead of a panic.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::say(format_args!($($arg)*))
    };
}

pub mod builtins;
pub mod checker;
pub mod cli;
pub mod custom;
pub mod export;
pub use registry::known_bad;
pub mod logging;
mod output;
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
pub mod registry;
#[cfg(madsim)]
pub mod runner;
pub mod scenario;

pub use export::export;
pub use registry::{budget_text, JobShape, Recipe};
