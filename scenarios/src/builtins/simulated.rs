//! The simulator's side of the five built-in recipes: one [`Registration`] each in the scenario
//! registry, as a user's recipe is registered.
//!
//! A built-in reads its application's table (`[workload.stock]`, `[workload.leader_job]` or
//! `[workload.sharded]`), which the resolver checks and fills in beside the ensemble's knobs; its
//! workload is its variant, typed, and runs the recipe's workload of the simulator crate
//! (`zkh_sim::workload`, `zkh_sim::sharded`) for a seed, then judges the run as every workload's
//! run is judged (`runner::judge`).

use std::sync::Arc;

use zkh_model::properties::Class;
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;
use zkh_sim::local_expiry::LocalExpiry;

use super::{typed, variants, ELECTION, JOB, LATCH, LOCK, MASTER};
use crate::scenario::{OwnWorkload, PhaseDefaults, Problem, PropertyInfo, Registration};

/// The five built-in recipes' registrations.
pub(crate) fn registrations() -> [Arc<dyn Registration>; 5] {
    super::NAMES.map(|name| Arc::new(BuiltIn { name }) as Arc<dyn Registration>)
}

/// A built-in recipe, by name.
struct BuiltIn {
    name: &'static str,
}

impl Registration for BuiltIn {
    fn name(&self) -> &'static str {
        self.name
    }

    fn variants(&self) -> &'static [&'static str] {
        variants(self.name)
    }

    fn package(&self) -> &str {
        concat!(env!("CARGO_PKG_NAME"), " ", env!("CARGO_PKG_VERSION"))
    }

    fn workload(&self, config: Option<&toml::Table>) -> Result<Arc<dyn OwnWorkload>, Problem> {
        debug_assert!(config.is_none(), "the resolver refuses a built-in's config");
        Ok(Arc::new(Workload { name: self.name }))
    }

    fn tables(&self) -> &'static [&'static str] {
        match self.name {
            LOCK => &["stock"],
            JOB => &["sharded"],
            _ => &["leader_job"],
        }
    }

    /// Curator ends a session it has been `SUSPENDED` from for a session timeout (its
    /// `ConnectionStateManager`, since Curator 3.0, on by default): the lock and the latch
    /// follow Curator 5. Elastic-Job 2.1.5 (the election, the job) is built on Curator 2.10,
    /// which instead makes a new handle on the first operation past its timeouts
    /// ([`LocalExpiry::Curator2`]); the classic master runs on the Java client alone.
    fn local_expiry(&self) -> LocalExpiry {
        match self.name {
            LOCK | LATCH => LocalExpiry::Curator,
            ELECTION | JOB => LocalExpiry::Curator2,
            _ => LocalExpiry::Never,
        }
    }

    fn phases(&self) -> PhaseDefaults {
        match self.name {
            JOB => PhaseDefaults {
                liveness_ms: 40_000,
                leader_within_ms: Some(20_000),
            },
            _ => PhaseDefaults {
                liveness_ms: 15_000,
                leader_within_ms: Some(10_000),
            },
        }
    }
}

/// A built-in recipe's workload: its properties, and its run of the scenario's variant (its
/// knobs are the resolved scenario's).
struct Workload {
    name: &'static str,
}

impl Workload {
    /// The properties it judges (`always` and `eventually`), in the order its findings list
    /// them.
    fn judged(&self) -> &'static [&'static str] {
        match self.name {
            LOCK => &[
                "mutual exclusion",
                "no oversell",
                "herd free",
                "leader elected",
                "claims are owned",
                "no orphaned ephemerals",
            ],
            LATCH | ELECTION => &[
                "single acting master",
                "herd free",
                "leader elected",
                "claims are owned",
                "no orphaned ephemerals",
            ],
            MASTER => &[
                "single acting master",
                "leader elected",
                "claims are owned",
                "no orphaned ephemerals",
            ],
            JOB => &[
                "no shard executed twice",
                "no shard lost",
                "runs when scheduled",
                "leader elected",
                "claims are owned",
            ],
            other => unreachable!("{other} is not a built-in recipe"),
        }
    }
}

impl OwnWorkload for Workload {
    fn properties(&self) -> Vec<PropertyInfo> {
        let eventually = ["leader elected", "no shard lost"];
        (self.judged().iter())
            .map(|&name| PropertyInfo {
                name,
                class: match eventually.contains(&name) {
                    true => Class::Eventually,
                    false => Class::Always,
                },
                explanation: zkh_model::properties::explanation(name),
            })
            .collect()
    }

    #[cfg(madsim)]
    fn run(&self, scenario: &crate::scenario::Resolved, seed: u64) -> crate::runner::RunResult {
        super::run::run(Typed::of(self.name, &scenario.variant), scenario, seed)
    }
}

/// A built-in recipe with its variant, typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Typed {
    /// The lock.
    Lock(LockVariant),
    /// The latch.
    Latch(LatchVariant),
    /// The job election.
    Election(ElectionVariant),
    /// The book's master election.
    Master(MasterVariant),
    /// The sharded job.
    Job(JobVariant),
}

impl Typed {
    /// Built-in recipe `name` with `variant`, one of its variants.
    #[cfg_attr(not(madsim), allow(dead_code))]
    fn of(name: &str, variant: &str) -> Typed {
        match name {
            LOCK => Typed::Lock(typed(variant)),
            LATCH => Typed::Latch(typed(variant)),
            ELECTION => Typed::Election(typed(variant)),
            MASTER => Typed::Master(typed(variant)),
            JOB => Typed::Job(typed(variant)),
            other => unreachable!("{other} is not a built-in recipe"),
        }
    }
}
