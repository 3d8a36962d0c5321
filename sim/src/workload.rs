//! The workloads the seed documents describe, run on the simulated ensemble and judged by the
//! named properties of `zkh_model::properties`.
//!
//! - **Stock deduction under the lock** (the `InterProcessMutex` article): each client loops:
//!   acquire, read the stock at the resource, reserve, spend `critical_ms` (the window a GC
//!   pause can fall into), sell (`stock := read - 1`), release. Every write to the resource
//!   carries the lock's token; the resource admits it according to the [`Fencing`] setting.
//! - **A scheduled job under the latch** (the `LeaderLatch` article): the leader runs a job
//!   every `job_interval_ms`, writing to the resource with its leadership's token.
//!
//! A run has a fault phase (the plan), a heal, and a bounded liveness phase; then the
//! properties are judged on the history.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use zkh_model::properties::{self, sometimes, Finding};
use zkh_model::{History, HistoryEvent};
use zkh_recipes::fencing::{FencedResource, Fencing};
use zkh_recipes::latch::{Latch, LatchReport, LatchVariant};
use zkh_recipes::lock::{Lock, LockError, LockVariant};

use crate::clock::SimClock;
use crate::cluster::{Cluster, ClusterConfig};
use crate::fault::FaultPlan;
use crate::net::Net;

/// The lock directory of the stock workload.
pub const LOCK_DIR: &str = "/locks/stock";
/// The latch directory of the job workload.
pub const LATCH_DIR: &str = "/election/job";
/// The resource both workloads write to.
pub const RESOURCE: &str = "stock";

/// The shape of one workload run.
#[derive(Clone, Debug)]
pub struct WorkloadConfig {
    /// Client processes.
    pub clients: u32,
    /// Their session timeout.
    pub session_timeout_ms: u64,
    /// How the resource treats tokens.
    pub fencing: Fencing,
    /// The fault phase's length.
    pub fault_phase_ms: u64,
    /// The liveness phase's length, after the heal.
    pub liveness_ms: u64,
    /// Time spent inside the critical section, between reserving and selling.
    pub critical_ms: u64,
    /// The leader's job period.
    pub job_interval_ms: u64,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            clients: 3,
            session_timeout_ms: 4000,
            fencing: Fencing::Fenced,
            fault_phase_ms: 20_000,
            liveness_ms: 15_000,
            critical_ms: 50,
            job_interval_ms: 500,
        }
    }
}

/// What a workload run gave.
#[derive(Clone, Debug)]
pub struct WorkloadOutcome {
    /// The whole history.
    pub history: History,
    /// Every property and `sometimes` check, judged on it.
    pub findings: Vec<Finding>,
}

impl WorkloadOutcome {
    /// The first violated `always` or `eventually` property, if any.
    pub fn violation(&self) -> Option<&Finding> {
        self.findings
            .iter()
            .find(|f| f.class != properties::Class::Sometimes && !f.holds)
    }

    /// The finding of `property`.
    pub fn finding(&self, property: &str) -> &Finding {
        self.findings
            .iter()
            .find(|f| f.property == property)
            .unwrap_or_else(|| panic!("no finding {property:?}"))
    }
}

struct Stock {
    units: i64,
    fence: FencedResource,
}

/// The initial stock: more than the clients can sell in a run, so they keep contending.
const INITIAL_STOCK: i64 = 100_000;

fn record(history: &Arc<Mutex<History>>, net: &Net, event: HistoryEvent) {
    history
        .lock()
        .expect("history mutex")
        .push(net.now_us(), event);
}

/// Runs the stock-deduction workload with the lock `variant` for `seed` under `plan`.
pub async fn stock(
    seed: u64,
    variant: LockVariant,
    config: WorkloadConfig,
    plan: FaultPlan,
) -> WorkloadOutcome {
    let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
    let stock = Arc::new(Mutex::new(Stock {
        units: INITIAL_STOCK,
        fence: FencedResource::new(),
    }));
    for id in 0..config.clients {
        let client = Arc::new(
            cluster
                .add_client(id, config.session_timeout_ms, true)
                .await
                .expect("a client connects"),
        );
        let (lock, driver) = Lock::start(
            client,
            Arc::new(SimClock),
            variant,
            LOCK_DIR,
            &format!("client{id}-{seed:x}"),
        );
        cluster.spawn_on_client(id, driver);
        let (history, net, stock, config) = (
            cluster.history_handle(),
            Arc::clone(cluster.net()),
            Arc::clone(&stock),
            config.clone(),
        );
        cluster.spawn_on_client(id, async move {
            // Bounded: far more iterations than a run has time for.
            for _ in 0..100_000 {
                match lock.acquire(Some(10_000)).await {
                    Ok(token) => {
                        record(
                            &history,
                            &net,
                            HistoryEvent::Role {
                                client: id,
                                role: "holder".into(),
                                token: Some(token),
                            },
                        );
                        let read = stock.lock().expect("stock mutex").units;
                        let admitted = stock
                            .lock()
                            .expect("stock mutex")
                            .fence
                            .admit(config.fencing, token);
                        let reserve = HistoryEvent::SideEffect {
                            client: id,
                            resource: RESOURCE.into(),
                            token: Some(token),
                            accepted: admitted,
                            detail: format!("reserve read={read}"),
                        };
                        record(&history, &net, reserve);
                        madsim::time::sleep(Duration::from_millis(config.critical_ms)).await;
                        let admitted = {
                            let mut stock = stock.lock().expect("stock mutex");
                            let admitted = stock.fence.admit(config.fencing, token);
                            if admitted {
                                stock.units = read - 1;
                            }
                            admitted
                        };
                        let sell = HistoryEvent::SideEffect {
                            client: id,
                            resource: RESOURCE.into(),
                            token: Some(token),
                            accepted: admitted,
                            detail: format!("sell read={read}"),
                        };
                        record(&history, &net, sell);
                        let _ = lock.release().await;
                        record(
                            &history,
                            &net,
                            HistoryEvent::Role {
                                client: id,
                                role: "none".into(),
                                token: None,
                            },
                        );
                    }
                    Err(LockError::Stopped) => return,
                    Err(_) => madsim::time::sleep(Duration::from_millis(100)).await,
                }
                madsim::time::sleep(Duration::from_millis(10)).await;
            }
        });
    }
    cluster.run_faults(&plan, config.fault_phase_ms).await;
    cluster.heal();
    let healed_us = cluster.net().now_us();
    madsim::time::sleep(Duration::from_millis(config.liveness_ms)).await;
    let history = cluster.history();
    let findings = vec![
        properties::mutual_exclusion(&history, RESOURCE),
        properties::no_oversell(&history, RESOURCE, INITIAL_STOCK),
        properties::herd_free(&history, LOCK_DIR),
        properties::leader_elected(
            &history,
            &["holder"],
            healed_us,
            config.liveness_ms * 1000 * 2 / 3,
        ),
        sometimes::role_changed_hands_after_a_loss(&history, &["holder"]),
        sometimes::reply_lost(&history),
        sometimes::stale_write_refused(&history, RESOURCE),
        sometimes::waiter_woken(&history, LOCK_DIR),
    ];
    WorkloadOutcome { history, findings }
}

/// Runs the scheduled-job workload with the latch `variant` for `seed` under `plan`.
pub async fn job(
    seed: u64,
    variant: LatchVariant,
    config: WorkloadConfig,
    plan: FaultPlan,
) -> WorkloadOutcome {
    let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
    let resource = Arc::new(Mutex::new(FencedResource::new()));
    for id in 0..config.clients {
        let client = Arc::new(
            cluster
                .add_client(id, config.session_timeout_ms, true)
                .await
                .expect("a client connects"),
        );
        let participant = format!("client{id}");
        let (latch, driver) = Latch::start(
            client,
            Arc::new(SimClock),
            variant,
            LATCH_DIR,
            &participant,
            &format!("{participant}-{seed:x}"),
        );
        cluster.spawn_on_client(id, driver);
        let (history, net, resource, config) = (
            cluster.history_handle(),
            Arc::clone(cluster.net()),
            Arc::clone(&resource),
            config.clone(),
        );
        cluster.spawn_on_client(id, async move {
            let mut token = None;
            for _ in 0..100_000 {
                let report = match token {
                    // Leading: run the job every interval, and watch for the loss of leadership.
                    Some(_) => {
                        madsim::time::timeout(
                            Duration::from_millis(config.job_interval_ms),
                            latch.next_report(),
                        )
                        .await
                    }
                    None => Ok(latch.next_report().await),
                };
                match report {
                    Ok(Some(LatchReport::Leader { token: t })) => {
                        token = Some(t);
                        record(
                            &history,
                            &net,
                            HistoryEvent::Role {
                                client: id,
                                role: "leader".into(),
                                token,
                            },
                        );
                    }
                    Ok(Some(LatchReport::NotLeader)) => {
                        token = None;
                        record(
                            &history,
                            &net,
                            HistoryEvent::Role {
                                client: id,
                                role: "none".into(),
                                token: None,
                            },
                        );
                    }
                    Ok(Some(LatchReport::Failed(_) | LatchReport::Closed) | None) => return,
                    Err(_) => {
                        let t = token.expect("a timeout only while leading");
                        let accepted = resource
                            .lock()
                            .expect("resource mutex")
                            .admit(config.fencing, t);
                        let detail = format!("job at {} us", net.now_us());
                        let effect = HistoryEvent::SideEffect {
                            client: id,
                            resource: RESOURCE.into(),
                            token: Some(t),
                            accepted,
                            detail,
                        };
                        record(&history, &net, effect);
                    }
                }
            }
        });
    }
    cluster.run_faults(&plan, config.fault_phase_ms).await;
    cluster.heal();
    let healed_us = cluster.net().now_us();
    madsim::time::sleep(Duration::from_millis(config.liveness_ms)).await;
    let history = cluster.history();
    let findings = vec![
        properties::single_acting_master(&history, RESOURCE),
        properties::herd_free(&history, LATCH_DIR),
        properties::leader_elected(
            &history,
            &["leader"],
            healed_us,
            config.liveness_ms * 1000 * 2 / 3,
        ),
        sometimes::role_changed_hands_after_a_loss(&history, &["leader"]),
        sometimes::stale_write_refused(&history, RESOURCE),
        sometimes::waiter_woken(&history, LATCH_DIR),
    ];
    WorkloadOutcome { history, findings }
}
