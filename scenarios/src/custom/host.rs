//! The simulator's generic host of a user's recipe: one seed of one scenario, as the built-in
//! workloads run theirs. It starts the ensemble, connects each client process and spawns the
//! recipe's [`SimRecipe::client`] on it, runs the fault phase, heals, runs the liveness phase,
//! and judges the recipe's properties and ZooKeeper's guarantees on the history.

use std::sync::Arc;
use std::time::Duration;

use zkh_model::properties::{sometimes, Class, Finding};
use zkh_model::History;
use zkh_sim::cluster::Cluster;
use zkh_sim::run::try_run_seed;
use zkh_sim::seed::{sub_rng, Subsystem};
use zkh_sim::server::ServerDefects;
use zkh_sim::workload::ensemble;

use super::{ClientCtx, SimRecipe};
use crate::report::{FindingRecord, Outcome};
use crate::runner::{verdict, RunResult, TIME_LIMIT_S};
use crate::scenario::Resolved;

/// What a run hands back from its simulated world.
struct Ran {
    history: History,
    findings: Vec<Finding>,
    guarantees: Vec<Finding>,
    faults_not_fired: Vec<String>,
    /// Each property's name and explanation, for the report's records.
    explanations: Vec<(&'static str, &'static str)>,
}

/// The recipe's run of `seed` under the scenario's faults.
async fn host<R: SimRecipe>(
    seed: u64,
    variant: &'static str,
    config: R::Config,
    shape: Resolved,
) -> Ran {
    let cluster_config = zkh_sim::cluster::ClusterConfig {
        container_check_interval_ms: shape.container_check_interval_ms,
        ..ensemble(shape.servers, ServerDefects::default(), shape.local_expiry)
    };
    let mut cluster = Cluster::start(seed, cluster_config).await;
    cluster.arm_triggers(&shape.faults.triggered);
    for id in 0..shape.clients {
        let client = cluster
            .add_client(id, shape.session_timeout_ms, true)
            .await
            .expect("a client connects to a healthy ensemble");
        let ctx = ClientCtx::new(
            id,
            Arc::new(client),
            sub_rng(seed, Subsystem::App(id)),
            cluster.history_handle(),
            Arc::clone(cluster.net()),
        );
        cluster.spawn_on_client(id, R::client(variant, &config, ctx));
    }
    cluster.run_faults(&shape.faults, shape.fault_ms).await;
    cluster.heal();
    zkh_sim::clock::sleep(Duration::from_millis(shape.liveness_ms)).await;
    let history = cluster.history();
    let properties = R::properties(&config);
    let mut findings: Vec<Finding> = (properties.iter())
        .map(|property| property.judge(&history))
        .collect();
    findings.push(sometimes::reply_lost(&history));
    let guarantees = crate::runner::guarantees(&history, &cluster.commit_logs());
    Ran {
        history,
        findings,
        guarantees,
        faults_not_fired: cluster.planned_faults_not_fired().to_vec(),
        explanations: (properties.iter())
            .map(|property| (property.name, property.explanation))
            .collect(),
    }
}

/// Runs `scenario`, a scenario of recipe `R` read by `zkharness`'s own reader (a registered
/// recipe), for `seed` with `variant` and `config`: the run's result as the built-in runner gives
/// it, judging the properties the scenario names (by default every `always` and `eventually`
/// property of the recipe) and every `sometimes` one.
pub(crate) fn run_resolved<R: SimRecipe>(
    scenario: &Resolved,
    variant: &'static str,
    config: &R::Config,
    seed: u64,
) -> RunResult {
    let shape = scenario.clone();
    let owned = config.clone();
    let ran = try_run_seed(seed, TIME_LIMIT_S, move |seed| {
        host::<R>(seed, variant, owned, shape)
    });
    let judged = |f: &Finding| scenario.properties.iter().any(|p| p == f.property);
    let ran = match ran {
        Ok(ran) => ran,
        Err(message) => return RunResult::crashed(seed, message),
    };
    let outcome = verdict(
        &ran.guarantees,
        &ran.findings,
        judged,
        &ran.faults_not_fired,
    );
    let explained = |finding: &Finding| {
        let mut record = FindingRecord::from(finding);
        let own = ran
            .explanations
            .iter()
            .find(|(name, _)| *name == finding.property);
        if let Some((_, explanation)) = own {
            record.explanation = (*explanation).to_owned();
        }
        record
    };
    let findings = (ran.findings.iter())
        .filter(|f| f.class == Class::Sometimes || judged(f))
        .map(explained)
        .collect();
    RunResult {
        seed,
        outcome,
        findings,
        guarantees: ran.guarantees.iter().map(FindingRecord::from).collect(),
        faults_not_fired: ran.faults_not_fired,
        simulated_ms: ran.history.entries().last().map_or(0, |e| e.at_us / 1000),
        trace: ran.history.stable_hash(),
        history: ran.history,
        herd: None,
    }
}

/// An outcome in words, its detail included (`VIOLATED ids unique: ID 2 was ...`).
pub(crate) fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass => "pass".to_owned(),
        Outcome::Violation { property, detail } => format!("VIOLATED {property}: {detail}"),
        Outcome::Liveness { property, detail } => format!("liveness {property}: {detail}"),
        Outcome::FaultsNotFired { faults } => format!("planned faults never fired: {faults:?}"),
        Outcome::Crash { message } => format!("the harness crashed: {message}"),
    }
}
