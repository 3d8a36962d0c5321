//! One seed of a built-in recipe's scenario (simulated build): its workload in the simulator
//! crate, configured from the resolved scenario, then judged as every run is
//! (`runner::judge`).

use zkh_recipes::fencing::Fencing;
use zkh_sim::paths::LOCK_DIR;
use zkh_sim::run::try_run_seed;
use zkh_sim::server::ServerDefects;
use zkh_sim::sharded::{sharded_job, ShardedConfig};
use zkh_sim::workload::{self, LeaderRecipe, WorkloadConfig, WorkloadOutcome};

use super::simulated::Typed;
use crate::runner::{judge, RunResult, TIME_LIMIT_S};
use crate::scenario::Resolved;

/// Runs `scenario`, of built-in `recipe`, for `seed`.
pub(crate) fn run(recipe: Typed, scenario: &Resolved, seed: u64) -> RunResult {
    let owned = scenario.clone();
    match try_run_seed(seed, TIME_LIMIT_S, move |seed| {
        workload(owned, recipe, seed)
    }) {
        // A lock's report counts the waiters each release woke.
        Ok(outcome) => judge(
            scenario,
            seed,
            outcome,
            matches!(recipe, Typed::Lock(_)).then_some(LOCK_DIR),
        ),
        Err(message) => RunResult::crashed(seed, message),
    }
}

fn fencing(scenario: &Resolved) -> Fencing {
    if scenario.fenced {
        Fencing::Fenced
    } else {
        Fencing::Unfenced
    }
}

async fn workload(scenario: Resolved, recipe: Typed, seed: u64) -> WorkloadOutcome {
    let plan = scenario.faults.clone();
    let config = WorkloadConfig {
        servers: scenario.servers,
        clients: scenario.clients,
        session_timeout_ms: scenario.session_timeout_ms,
        fencing: fencing(&scenario),
        fault_phase_ms: scenario.fault_ms,
        liveness_ms: scenario.liveness_ms,
        leader_within_ms: scenario.leader_within_ms,
        critical_ms: scenario.critical_ms,
        initial_stock: scenario.initial_units,
        job_interval_ms: scenario.job_interval_ms,
        reconcile_interval_ms: scenario.reconcile_interval_ms,
        defects: ServerDefects::default(),
        local_expiry: scenario.local_expiry,
        container_check_interval_ms: scenario.container_check_interval_ms,
    };
    let leader = |recipe| workload::leader_job(seed, recipe, config.clone(), plan.clone());
    match recipe {
        Typed::Lock(variant) => workload::stock(seed, variant, config.clone(), plan.clone()).await,
        Typed::Latch(variant) => leader(LeaderRecipe::Latch(variant)).await,
        Typed::Election(variant) => leader(LeaderRecipe::Election(variant)).await,
        Typed::Master(variant) => leader(LeaderRecipe::Master(variant)).await,
        Typed::Job(variant) => {
            let sharded = ShardedConfig {
                servers: scenario.servers,
                clients: scenario.clients,
                session_timeout_ms: scenario.session_timeout_ms,
                items: scenario.items,
                cycle_interval_ms: scenario.cycle_interval_ms,
                fault_phase_ms: scenario.fault_ms,
                liveness_ms: scenario.liveness_ms,
                leader_within_ms: scenario.leader_within_ms,
                settle_ms: scenario.settle_ms,
                judged_from_ms: scenario.judged_from_ms,
                local_expiry: scenario.local_expiry,
                container_check_interval_ms: scenario.container_check_interval_ms,
            };
            sharded_job(seed, variant, sharded, plan.clone()).await
        }
    }
}
