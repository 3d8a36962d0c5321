//! The simulator's one host of a recipe, a user's or a built-in: one seed of one scenario. It
//! starts the ensemble, connects each client process in turn (awaiting the recipe's
//! [`SimRecipe::prepare`] after the first connects) and spawns the recipe's
//! [`SimRecipe::client`] on it, runs the fault phase, heals, runs the liveness phase, and judges
//! the recipe's properties, what the clients knew of their ephemeral nodes, and ZooKeeper's
//! guarantees on the history.

use std::sync::Arc;
use std::time::Duration;

use zkh_model::claims::claims_at_end;
use zkh_model::orphans::orphans_at_end;
use zkh_model::properties::{sometimes, wakeups, Class, Finding};
use zkh_model::History;
use zkh_sim::cluster::Cluster;
use zkh_sim::run::{try_run_seed_watched, SeedFailure};
use zkh_sim::seed::{sub_rng, Subsystem};
use zkh_sim::server::ServerDefects;
use zkh_sim::watchdog::watched;
use zkh_sim::workload::ensemble;

use super::ctx::{RunShared, Spawn};
use super::{ClientCtx, Moments, SimRecipe};
use crate::report::{FindingRecord, Herd, Outcome};
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
    /// Messages the network handed to a live mailbox (the benchmark's messages per second).
    messages_delivered: u64,
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
    let net = Arc::clone(cluster.net());
    let run = RunShared::new(seed, cluster.history_handle(), Arc::clone(&net));
    for id in 0..shape.clients {
        let client = Arc::new(
            (cluster.add_client(id, shape.session_timeout_ms, true).await)
                .expect("a client connects to a healthy ensemble"),
        );
        if id == 0 {
            R::prepare(&config, Arc::clone(&client)).await;
        }
        let node = cluster.client_node(id);
        // The watchdog counts the recipe's polls (`zkh_sim::watchdog`): a loop that yields but
        // waits for nothing ends the run as stuck.
        let spawn: Spawn = Arc::new(move |task| {
            let name = format!("client {id}'s process (a task it spawned)");
            drop(node.spawn(watched(name, task)))
        });
        let rng = sub_rng(seed, Subsystem::App(id));
        let ctx = ClientCtx::new(id, client, rng, run.clone(), spawn);
        let name = format!("client {id}'s process (its recipe's task)");
        cluster.spawn_on_client(id, watched(name, R::client(variant, &config, ctx)));
    }
    let started_us = net.now_us();
    run.started.announce(started_us);
    cluster.run_faults(&shape.faults, shape.fault_ms).await;
    cluster.heal();
    let healed_us = net.now_us();
    zkh_sim::clock::sleep(Duration::from_millis(shape.liveness_ms)).await;
    let moments = Moments {
        started_us,
        healed_us,
        ended_us: net.now_us(),
    };
    let history = cluster.history();
    let properties = R::properties(&config);
    let mut findings: Vec<Finding> = (properties.iter())
        .map(|property| property.judge(&history, &moments))
        .collect();
    findings.push(sometimes::reply_lost(&history));
    let logs = cluster.commit_logs();
    // What each live client knew of its own ephemeral nodes, judged against the servers' final
    // states (a crashed process's is left out), for a recipe whose clients say (`ctx.knows`).
    let declared = run.knowledge.lock().expect("the knowledge's lock").clone();
    if !declared.is_empty() {
        let known: Vec<_> = (declared.iter())
            .filter(|(id, _)| !cluster.client_crashed(*id))
            .map(|(id, knowledge)| (*id, knowledge.get()))
            .collect();
        findings.extend(claims_at_end(&history, &logs.finals, &known));
        findings.extend(orphans_at_end(&history, &logs.finals, &known));
    }
    if reaps_containers(&shape) {
        findings.push(zkh_model::guarantees::container_reaped(&logs));
    }
    let guarantees = crate::runner::guarantees(&history, &logs);
    Ran {
        history,
        findings,
        guarantees,
        faults_not_fired: cluster.planned_faults_not_fired().to_vec(),
        messages_delivered: net.link_order().delivered,
        explanations: (properties.iter())
            .map(|property| (property.name, property.explanation))
            .collect(),
    }
}

/// Whether `scenario` has the leader reap containers: a `reap-containers` fault, or a check
/// interval shorter than the run. Only then is "a container was reaped" reported.
fn reaps_containers(scenario: &Resolved) -> bool {
    let plan = &scenario.faults;
    let scripted = plan.scripted.iter().map(|s| &s.fault);
    let mut faults = scripted.chain(plan.triggered.iter().map(|t| &t.fault));
    let run_ms = scenario.fault_ms + scenario.liveness_ms;
    faults.any(|fault| *fault == zkh_sim::fault::Fault::ReapContainers)
        || scenario.container_check_interval_ms < run_ms
}

/// Runs `scenario`, a scenario of recipe `R` (a registered recipe or a built-in), for `seed`
/// with `variant` and `config`: the run's result, judging the properties the scenario names (by
/// default every `always` and `eventually` property of the recipe) and every `sometimes` one.
pub(crate) fn run_resolved<R: SimRecipe>(
    scenario: &Resolved,
    variant: &'static str,
    config: &R::Config,
    seed: u64,
) -> RunResult {
    let shape = scenario.clone();
    let owned = config.clone();
    let wall_limit = Some(crate::runner::wall_limit());
    let ran = try_run_seed_watched(seed, TIME_LIMIT_S, wall_limit, move |seed| {
        host::<R>(seed, variant, owned, shape)
    });
    let judged = |f: &Finding| scenario.properties.iter().any(|p| p == f.property);
    let ran = match ran {
        Ok(ran) => ran,
        Err(SeedFailure::Panicked(message)) => return RunResult::crashed(seed, message),
        Err(SeedFailure::Stuck(stuck)) => return RunResult::stuck(seed, stuck),
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
        messages_delivered: ran.messages_delivered,
        herd: R::queue_dir(config).map(|dir| Herd::of(&wakeups(&ran.history, dir))),
        companions: (R::properties(config).iter())
            .filter(|property| property.class == Class::Sometimes)
            .map(|property| property.name.to_owned())
            .collect(),
        history: ran.history,
    }
}

/// An outcome in words, its detail included (`VIOLATED ids unique: ID 2 was ...`).
pub(crate) fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass => "pass".to_owned(),
        Outcome::Violation { property, detail } => format!("VIOLATED {property}: {detail}"),
        Outcome::Liveness { property, detail } => format!("liveness {property}: {detail}"),
        Outcome::FaultsNotFired { faults } => format!("planned faults never fired: {faults:?}"),
        Outcome::Stuck {
            reason,
            at_ms,
            running,
            ..
        } => format!("stuck at {at_ms} ms: {reason}; running: {running}"),
        Outcome::Crash { message } => format!("the harness crashed: {message}"),
    }
}
