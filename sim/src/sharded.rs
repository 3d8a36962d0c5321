//! The Elastic-Job workload: a sharded job with `items` items per cron cycle across the client
//! processes, each an Elastic-Job instance ([`JobMachine`]), judged by "no shard executed
//! twice" and "no shard lost".
//!
//! Every instance's cron fires cycle `k` at `k * cycle_interval_ms` after the moment every
//! instance had started, all at the same simulated time, as a cron expression does on
//! synchronised clocks. (`zkharness` runs the job through its one host, as
//! `zkh_scenarios`' built-in `ShardedJob`, with the same tasks in the same order: the same seed
//! gives the same trace here and there.)
//! Each run of an item is recorded as a `HistoryEvent::Execution` with its claim's zxid; each
//! leadership change as a `Role`.
//!
//! Which cycles "no shard lost" judges: by default those whose trigger comes at least
//! `settle_ms` after the heal (a session that the faults doomed has expired by then, and the
//! leader has sharded again), up to the last cycle that had half an interval to run. A scenario
//! whose only fault is a crash, which the heal does not undo, can judge from an earlier cycle
//! ([`ShardedConfig::judged_from_ms`]): the failover must then save the crash's own cycle.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use zkh_model::properties::{self, sometimes};
use zkh_model::{History, HistoryEvent};
use zkh_recipes::elastic_job::{JobInstance, JobMachine, JobReport, JobVariant};

use crate::clock::SimClock;
use crate::cluster::{Cluster, ClusterConfig, CONTAINER_CHECK_INTERVAL_MS};
use crate::fault::FaultPlan;
use crate::local_expiry::LocalExpiry;
use crate::moment::Moment;
use crate::net::Net;
use crate::server::ServerDefects;
use crate::workload::{ensemble, known_at_end, record, WorkloadOutcome};

/// The job's root path.
pub const JOB: &str = crate::paths::JOB_DIR;

/// The shape of one sharded-job run.
#[derive(Clone, Debug)]
pub struct ShardedConfig {
    /// Servers in the ensemble: 1, 3 or 5.
    pub servers: u32,
    /// Instances (client processes).
    pub clients: u32,
    /// Their session timeout.
    pub session_timeout_ms: u64,
    /// Items per cycle.
    pub items: u32,
    /// The cron period.
    pub cycle_interval_ms: u64,
    /// The fault phase's length.
    pub fault_phase_ms: u64,
    /// The liveness phase's length, after the heal.
    pub liveness_ms: u64,
    /// "Leader elected": a leader must appear within this long after the heal.
    pub leader_within_ms: u64,
    /// How long after the heal the judged cycles start (when `judged_from_ms` is `None`).
    pub settle_ms: u64,
    /// Judge cycles from this time after the instances started, instead of from the heal.
    pub judged_from_ms: Option<u64>,
    /// Whether the instances end a session they cannot reconnect on their own.
    pub local_expiry: LocalExpiry,
    /// How often the leader deletes empty containers (`znode.container.checkIntervalMs`).
    pub container_check_interval_ms: u64,
}

impl Default for ShardedConfig {
    fn default() -> Self {
        ShardedConfig {
            servers: 3,
            clients: 3,
            session_timeout_ms: 4000,
            items: 8,
            cycle_interval_ms: 10_000,
            fault_phase_ms: 20_000,
            liveness_ms: 40_000,
            leader_within_ms: 20_000,
            settle_ms: 10_000,
            judged_from_ms: None,
            local_expiry: LocalExpiry::Never,
            container_check_interval_ms: CONTAINER_CHECK_INTERVAL_MS,
        }
    }
}

/// Records `client`'s reports until its driver stops.
pub async fn record_reports(
    client: u32,
    job: Arc<JobInstance>,
    history: Arc<Mutex<History>>,
    net: Arc<Net>,
) {
    while let Some(report) = job.next_report().await {
        let event = match report {
            JobReport::Leader { token } => HistoryEvent::Role {
                client,
                role: "leader".into(),
                token: Some(token),
            },
            JobReport::NotLeader => HistoryEvent::Role {
                client,
                role: "none".into(),
                token: None,
            },
            JobReport::Executed {
                item,
                cycle,
                token,
                failover,
            } => HistoryEvent::Execution {
                client,
                job: JOB.into(),
                item,
                cycle,
                token,
                failover,
            },
        };
        record(&history, &net, event);
    }
}

/// Fires the cron triggers of `job`: cycle `k` at `origin_us + k * interval`.
pub async fn cron(job: Arc<JobInstance>, net: Arc<Net>, origin_us: u64, interval_ms: u64) {
    // Bounded: far more cycles than a run has time for.
    for cycle in 1..100_000u64 {
        let at_us = origin_us + cycle * interval_ms * 1000;
        let wait_us = at_us.saturating_sub(net.now_us());
        madsim::time::sleep(Duration::from_micros(wait_us)).await;
        if !job.trigger(cycle) {
            return;
        }
    }
}

/// Fires the cron triggers of `job` ([`cron`]) from the run's origin, once `origin` is
/// announced (the moment every instance had started).
pub async fn cron_from_origin(
    job: Arc<JobInstance>,
    net: Arc<Net>,
    origin: Moment,
    interval_ms: u64,
) {
    let origin_us = origin.wait_us().await;
    cron(job, net, origin_us, interval_ms).await;
}

/// Runs the sharded job with `variant` for `seed` under `plan`.
pub async fn sharded_job(
    seed: u64,
    variant: JobVariant,
    config: ShardedConfig,
    plan: FaultPlan,
) -> WorkloadOutcome {
    let ensemble = ensemble(
        config.servers,
        ServerDefects::default(),
        config.local_expiry,
    );
    let ensemble = ClusterConfig {
        container_check_interval_ms: config.container_check_interval_ms,
        ..ensemble
    };
    let mut cluster = Cluster::start(seed, ensemble).await;
    cluster.arm_triggers(&plan.triggered);
    let mut knowledge = Vec::new();
    // Each instance's cron starts with it and counts from the moment every instance started,
    // as `zkharness` runs the job (its host tells every client that moment).
    let origin = Moment::new();
    for id in 0..config.clients {
        let client = Arc::new(
            cluster
                .add_client(id, config.session_timeout_ms, true)
                .await
                .expect("a client connects"),
        );
        let instance = format!("client{id}");
        let uuid = format!("{instance}-{seed:x}");
        let machine = JobMachine::new(variant, JOB, &instance, &uuid, config.items);
        let (job, driver) = JobInstance::start(client, Arc::new(SimClock), machine);
        cluster.spawn_on_client(id, driver);
        knowledge.push((id, job.knowledge()));
        let job = Arc::new(job);
        let (history, net) = (cluster.history_handle(), Arc::clone(cluster.net()));
        cluster.spawn_on_client(id, record_reports(id, Arc::clone(&job), history, net));
        let net = Arc::clone(cluster.net());
        let cron = cron_from_origin(job, net, origin.clone(), config.cycle_interval_ms);
        cluster.spawn_on_client(id, cron);
    }
    let origin_us = cluster.net().now_us();
    origin.announce(origin_us);
    cluster.run_faults(&plan, config.fault_phase_ms).await;
    cluster.heal();
    let healed_us = cluster.net().now_us();
    madsim::time::sleep(Duration::from_millis(config.liveness_ms)).await;
    let end_us = cluster.net().now_us();
    let history = cluster.history();

    let interval_us = config.cycle_interval_ms * 1000;
    let judged_from_us = match config.judged_from_ms {
        Some(ms) => origin_us + ms * 1000,
        None => healed_us + config.settle_ms * 1000,
    };
    let cycles =
        properties::judged_cycles(judged_from_us - origin_us, end_us - origin_us, interval_us);
    let findings = vec![
        properties::no_shard_executed_twice(&history, JOB),
        properties::no_shard_lost_since(&history, JOB, config.items, cycles, judged_from_us),
        properties::runs_when_scheduled(&history, JOB, |cycle| origin_us + cycle * interval_us),
        properties::leader_elected(
            &history,
            &["leader"],
            healed_us,
            config.leader_within_ms * 1000,
        ),
        sometimes::item_failed_over(&history, JOB),
        sometimes::role_changed_hands_after_a_loss(&history, &["leader"]),
        sometimes::reply_lost(&history),
    ];
    let faults_not_fired = cluster.planned_faults_not_fired().to_vec();
    WorkloadOutcome {
        history,
        findings,
        faults_not_fired,
        commit_logs: cluster.commit_logs(),
        // Its registrations (what each instance stands on); the job's machine names no other
        // node it knows, so the orphan check passes it by, as in the model checker.
        known: known_at_end(&cluster, &knowledge),
    }
}
