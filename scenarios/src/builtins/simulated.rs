//! The simulator's side of the five built-in recipes: one [`Registration`] each in the scenario
//! registry, as a user's recipe is registered.
//!
//! A built-in reads its application's table (`[workload.stock]`, `[workload.leader_job]` or
//! `[workload.sharded]`), which the resolver checks and fills in beside the ensemble's knobs
//! (`hosted::Knobs`); it runs as its [`SimRecipe`](crate::custom::SimRecipe) (`hosted`) under
//! the one host a user's recipe runs under, judged as every run is.

use std::sync::Arc;

use zkh_model::properties::Class;
use zkh_sim::local_expiry::LocalExpiry;

use super::{variants, ELECTION, JOB, LATCH, LOCK, MASTER};
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
    /// ([`LocalExpiry::Curator2`]); the classic master runs on the Java client alone. A
    /// Curator release profile runs on its release's client: `curator-2.10.0` on Curator 2's.
    fn local_expiry(&self, variant: &str) -> LocalExpiry {
        match zkh_recipes::curator::Release::named(variant) {
            Some(zkh_recipes::curator::Release::V2_10_0) => return LocalExpiry::Curator2,
            Some(_) => return LocalExpiry::Curator,
            None => {}
        }
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
        use super::hosted::StockUnderLock;
        use super::hosted::{ElectedJob, JobElection, Knobs, Latch, Master, ShardedJob};
        use crate::custom::host::run_resolved;
        let variant = (variants(self.name).iter())
            .find(|variant| **variant == scenario.variant)
            .unwrap_or_else(|| panic!("{} has no variant {:?}", self.name, scenario.variant));
        let knobs = &Knobs::of(scenario);
        match self.name {
            LOCK => run_resolved::<StockUnderLock>(scenario, variant, knobs, seed),
            LATCH => run_resolved::<ElectedJob<Latch>>(scenario, variant, knobs, seed),
            ELECTION => run_resolved::<ElectedJob<JobElection>>(scenario, variant, knobs, seed),
            MASTER => run_resolved::<ElectedJob<Master>>(scenario, variant, knobs, seed),
            JOB => run_resolved::<ShardedJob>(scenario, variant, knobs, seed),
            other => unreachable!("{other} is not a built-in recipe"),
        }
    }
}
