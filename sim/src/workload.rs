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
//!
//! Each client's part is its own function ([`sell_under_lock`], [`start_election`] and
//! [`lead`]): `zkharness` runs the built-in recipes through its one host (`zkh_scenarios`'
//! `builtins::hosted`), which calls these same functions in the same order, so that a seed gives
//! the same trace here, in the simulator's own tests, and there.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use zkh_model::guarantees::CommitLogs;
use zkh_model::properties::{self, sometimes, Finding};
use zkh_model::{History, HistoryEvent};
use zkh_recipes::driver::{self, Knowledge, Known};
use zkh_recipes::election::{ElectionMachine, ElectionReport, ElectionRequest, ElectionVariant};
use zkh_recipes::fencing::{FencedResource, Fencing};
use zkh_recipes::latch::{LatchMachine, LatchReport, LatchRequest, LatchVariant};
use zkh_recipes::lock::{Lock, LockError, LockVariant};
use zkh_recipes::machine::Machine;
use zkh_recipes::master::MasterVariant;

use crate::clock::SimClock;
use crate::cluster::{Cluster, ClusterConfig, CONTAINER_CHECK_INTERVAL_MS};
use crate::fault::FaultPlan;
use crate::local_expiry::LocalExpiry;
use crate::master;
use crate::net::Net;
use crate::reconcile::Reconcile;
use crate::server::ServerDefects;

pub use crate::paths::{JOB_DIR, JOB_LATCH_DIR, LATCH_DIR, LOCK_DIR, RESOURCE};

/// The shape of one workload run.
#[derive(Clone, Debug)]
pub struct WorkloadConfig {
    /// Servers in the ensemble: 1, 3 or 5.
    pub servers: u32,
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
    /// "Leader elected": a holder or leader must appear within this long after the heal.
    pub leader_within_ms: u64,
    /// Time spent inside the critical section, between reserving and selling.
    pub critical_ms: u64,
    /// The stock's units at the start (the lock's workload).
    pub initial_stock: i64,
    /// The leader's job period.
    pub job_interval_ms: u64,
    /// The election's reconcile interval ([`crate::reconcile`]; 0: none).
    pub reconcile_interval_ms: u64,
    /// Faults of the servers' own code, for the guarantee checker's tests only (none by
    /// default; no scenario file sets one).
    pub defects: ServerDefects,
    /// Whether the clients end a session they cannot reconnect on their own.
    pub local_expiry: LocalExpiry,
    /// How often the leader deletes empty containers (`znode.container.checkIntervalMs`).
    pub container_check_interval_ms: u64,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            servers: 3,
            clients: 3,
            session_timeout_ms: 4000,
            fencing: Fencing::Fenced,
            fault_phase_ms: 20_000,
            liveness_ms: 15_000,
            leader_within_ms: 10_000,
            critical_ms: 50,
            initial_stock: INITIAL_STOCK,
            job_interval_ms: 500,
            reconcile_interval_ms: zkh_recipes::election::RECONCILE_INTERVAL_MS,
            defects: ServerDefects::default(),
            local_expiry: LocalExpiry::Never,
            container_check_interval_ms: CONTAINER_CHECK_INTERVAL_MS,
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
    /// The planned faults that did not happen ([`Cluster::planned_faults_not_fired`]).
    pub faults_not_fired: Vec<String>,
    /// What each server applied ([`Cluster::commit_logs`]), for ZooKeeper's guarantees.
    pub commit_logs: CommitLogs,
    /// What each live client's recipe knew of its own ephemeral nodes when the run ended, for
    /// the orphan check (`zkh_model::orphans`); crashed clients are left out, and a host that
    /// does not say leaves it empty.
    pub known: Vec<(u32, Known)>,
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

/// The stock the lock's workload sells from: its units, behind a fenced resource.
pub struct Stock {
    /// Units left.
    pub units: i64,
    /// What the resource admits.
    pub fence: FencedResource,
}

impl Stock {
    /// A stock of `units` whose resource has seen no token.
    pub fn new(units: i64) -> Self {
        Stock {
            units,
            fence: FencedResource::new(),
        }
    }
}

/// The default initial stock: more than the clients can sell in a run, so they keep
/// contending.
pub const INITIAL_STOCK: i64 = 100_000;

/// Appends `event` to the run's history at the simulated time now.
pub fn record(history: &Arc<Mutex<History>>, net: &Net, event: HistoryEvent) {
    crate::log::record(history, net.now_us(), event);
}

/// Runs the stock-deduction workload with the lock `variant` for `seed` under `plan`.
pub async fn stock(
    seed: u64,
    variant: LockVariant,
    config: WorkloadConfig,
    plan: FaultPlan,
) -> WorkloadOutcome {
    let mut cluster = Cluster::start(
        seed,
        ClusterConfig {
            container_check_interval_ms: config.container_check_interval_ms,
            ..ensemble(config.servers, config.defects, config.local_expiry)
        },
    )
    .await;
    cluster.arm_triggers(&plan.triggered);
    let stock = Arc::new(Mutex::new(Stock::new(config.initial_stock)));
    let mut knowledge = Vec::new();
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
        knowledge.push((id, lock.knowledge()));
        let (history, net, stock) = (
            cluster.history_handle(),
            Arc::clone(cluster.net()),
            Arc::clone(&stock),
        );
        let sell = sell_under_lock(
            id,
            lock,
            history,
            net,
            stock,
            config.fencing,
            config.critical_ms,
        );
        cluster.spawn_on_client(id, sell);
    }
    cluster.run_faults(&plan, config.fault_phase_ms).await;
    cluster.heal();
    let healed_us = cluster.net().now_us();
    madsim::time::sleep(Duration::from_millis(config.liveness_ms)).await;
    let history = cluster.history();
    let findings = vec![
        properties::mutual_exclusion(&history, RESOURCE),
        properties::no_oversell(&history, RESOURCE, config.initial_stock),
        properties::herd_free(&history, LOCK_DIR),
        properties::leader_elected(
            &history,
            &["holder"],
            healed_us,
            config.leader_within_ms * 1000,
        ),
        sometimes::role_changed_hands_after_a_loss(&history, &["holder"]),
        sometimes::reply_lost(&history),
        sometimes::stale_write_refused(&history, RESOURCE),
        sometimes::waiter_woken(&history, LOCK_DIR),
    ];
    let faults_not_fired = cluster.planned_faults_not_fired().to_vec();
    WorkloadOutcome {
        history,
        findings,
        faults_not_fired,
        commit_logs: cluster.commit_logs(),
        known: known_at_end(&cluster, &knowledge),
    }
}

/// A lock workload's client process: in a loop, acquire `lock`, read the stock, reserve, spend
/// `critical_ms` inside the critical section, sell (`stock := read - 1`), release; every write
/// to the stock carries the lock's token, which its resource admits according to `fencing`.
pub async fn sell_under_lock(
    id: u32,
    lock: Lock,
    history: Arc<Mutex<History>>,
    net: Arc<Net>,
    stock: Arc<Mutex<Stock>>,
    fencing: Fencing,
    critical_ms: u64,
) {
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
                    .admit(fencing, token);
                let reserve = HistoryEvent::SideEffect {
                    client: id,
                    resource: RESOURCE.into(),
                    token: Some(token),
                    accepted: admitted,
                    detail: format!("reserve read={read}"),
                };
                record(&history, &net, reserve);
                madsim::time::sleep(Duration::from_millis(critical_ms)).await;
                let admitted = {
                    let mut stock = stock.lock().expect("stock mutex");
                    let admitted = stock.fence.admit(fencing, token);
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
}

/// What each live client of `knowledge`'s knew of its own ephemeral nodes at this moment
/// (crashed clients left out).
pub(crate) fn known_at_end(cluster: &Cluster, knowledge: &[(u32, Knowledge)]) -> Vec<(u32, Known)> {
    (knowledge.iter())
        .filter(|(id, _)| !cluster.client_crashed(*id))
        .map(|(id, knowledge)| (*id, knowledge.get()))
        .collect()
}

/// The ensemble of `servers` servers with `defects` (none but in tests), otherwise as
/// configured by default.
pub fn ensemble(servers: u32, defects: ServerDefects, local_expiry: LocalExpiry) -> ClusterConfig {
    ClusterConfig {
        servers,
        defects,
        local_expiry,
        ..ClusterConfig::default()
    }
}

/// A leadership change, whatever recipe reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leadership {
    /// Gained, with its token.
    Gained(i64),
    /// Lost.
    Lost,
    /// Nothing to act on.
    Other,
}

/// The next leadership change of a running election, `None` once it has stopped for good.
pub type NextLeadership = Box<
    dyn FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<Leadership>> + Send>>
        + Send,
>;

/// A running recipe's reports, as leadership changes.
fn leadership<M: Machine>(
    handle: driver::Handle<M>,
    map: fn(M::Report) -> Leadership,
) -> NextLeadership
where
    M::Report: Sync,
{
    let handle = Arc::new(handle);
    Box::new(move || {
        let handle = Arc::clone(&handle);
        Box::pin(async move { handle.next_report().await.map(map) })
    })
}

/// What came due before the next report.
enum Due {
    /// The leader's next run of its job.
    Job,
    /// The next reconciliation.
    Reconcile,
}

/// What the elected leader runs: a job every `interval_ms`, writing to a resource that admits
/// its tokens according to `fencing`.
#[derive(Clone, Copy, Debug)]
pub struct ScheduledJob {
    /// How the resource treats tokens.
    pub fencing: Fencing,
    /// The job's period.
    pub interval_ms: u64,
}

/// One client's running election, as the leader's loop takes it ([`start_election`]).
pub struct Elected {
    /// Its leadership changes.
    pub next: NextLeadership,
    /// Elastic-Job's reconcile service, for the job election's instances.
    pub reconcile: Option<Reconcile>,
    /// What its recipe knows of its own ephemeral nodes, for the orphan and claim checks.
    pub knowledge: Knowledge,
    /// The recipe's own task (its driver, or the master's supervisor), to spawn on the
    /// client's node before the leader's loop.
    pub task: Task,
}

/// Starts `recipe`'s election for client `id` of the run of `seed` on `client` (the book's
/// master needs its parent node made first: [`master::create_parent`]); the job election's
/// instances reconcile every `reconcile_interval_ms` (0: never).
pub fn start_election(
    id: u32,
    seed: u64,
    client: Arc<crate::SimClient>,
    recipe: LeaderRecipe,
    reconcile_interval_ms: u64,
) -> Elected {
    let participant = format!("client{id}");
    let uuid = format!("{participant}-{seed:x}");
    let clock: Arc<dyn zkh_recipes::driver::Clock> = Arc::new(SimClock);
    // Elastic-Job's reconcile service, run by the election's instances (crate::reconcile).
    let mut reconcile = None;
    let (next, knowledge, task) = match recipe {
        LeaderRecipe::Latch(variant) => {
            let machine = LatchMachine::new(variant, LATCH_DIR, &participant, &uuid);
            driven(
                client,
                clock,
                machine,
                LatchRequest::Start,
                |report| match report {
                    LatchReport::Leader { token } => Leadership::Gained(token),
                    LatchReport::NotLeader | LatchReport::Failed(_) | LatchReport::Closed => {
                        Leadership::Lost
                    }
                },
            )
        }
        LeaderRecipe::Election(variant) => {
            let machine = ElectionMachine::new(variant, JOB_DIR, &participant, &uuid);
            let instance = format!("{JOB_DIR}/leader/election/instance");
            reconcile = (reconcile_interval_ms > 0)
                .then(|| Reconcile::new(Arc::clone(&client), instance, reconcile_interval_ms));
            driven(
                client,
                clock,
                machine,
                ElectionRequest::Elect,
                |report| match report {
                    ElectionReport::Leader { token } => Leadership::Gained(token),
                    ElectionReport::NotLeader => Leadership::Lost,
                    ElectionReport::Follower => Leadership::Other,
                },
            )
        }
        LeaderRecipe::Master(variant) => {
            let knowledge = Knowledge::default();
            let (next, supervisor) =
                master::supervise(client, clock, variant, participant, knowledge.clone());
            (next, knowledge, Box::pin(supervisor) as Task)
        }
    };
    Elected {
        next,
        reconcile,
        knowledge,
        task,
    }
}

/// A recipe's task, spawned on its client's node.
pub type Task = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Starts `machine` under the recipes' driver with `first` sent: its reports as leadership
/// changes (`map`), what it knows of its own nodes, and its driver's task.
fn driven<M: Machine + Send + 'static>(
    client: Arc<crate::SimClient>,
    clock: Arc<dyn zkh_recipes::driver::Clock>,
    machine: M,
    first: M::Request,
    map: fn(M::Report) -> Leadership,
) -> (NextLeadership, Knowledge, Task)
where
    M::Report: Sync,
{
    let (handle, driver) = driver::start(client, clock, machine);
    handle.send(first);
    let knowledge = handle.knowledge();
    let task: Task = Box::pin(async move {
        driver.await;
    });
    (leadership(handle, map), knowledge, task)
}

/// The leader's loop: run the job when leadership is gained and every `job.interval_ms` while
/// it lasts, writing to the resource with the leadership's token; and, with the election's
/// reconcile service, reconcile when that is due, leader or not.
pub async fn lead(
    id: u32,
    Elected {
        mut next,
        mut reconcile,
        ..
    }: Elected,
    history: Arc<Mutex<History>>,
    net: Arc<Net>,
    resource: Arc<Mutex<FencedResource>>,
    job: ScheduledJob,
) {
    let mut token = None;
    let run_job = |t: i64| {
        let accepted = resource
            .lock()
            .expect("resource mutex")
            .admit(job.fencing, t);
        let detail = format!("job at {} us", net.now_us());
        let effect = HistoryEvent::SideEffect {
            client: id,
            resource: RESOURCE.into(),
            token: Some(t),
            accepted,
            detail,
        };
        record(&history, &net, effect);
    };
    for _ in 0..100_000 {
        let waiting = async {
            match token {
                Some(_) => {
                    let job_in = Duration::from_millis(job.interval_ms);
                    (crate::clock::timeout(job_in, next()).await).map_err(|()| Due::Job)
                }
                None => Ok(next().await),
            }
        };
        let report = match reconcile.as_mut() {
            None => waiting.await,
            Some(service) => tokio::select! {
                // In order: the seed is the only entropy.
                biased;
                report = waiting => report,
                () = service.due() => Err(Due::Reconcile),
            },
        };
        match report {
            Ok(Some(Leadership::Gained(t))) => {
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
                run_job(t);
            }
            Ok(Some(Leadership::Lost)) => {
                if token.take().is_some() {
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
            }
            Ok(Some(Leadership::Other)) => {}
            Ok(None) => return,
            Err(Due::Job) => run_job(token.expect("a job's timeout only while leading")),
            Err(Due::Reconcile) => {
                let service = reconcile
                    .as_mut()
                    .expect("due only with a reconcile service");
                service.run().await;
            }
        }
    }
}

/// The recipe that elects the job's leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaderRecipe {
    /// Curator's `LeaderLatch`.
    Latch(LatchVariant),
    /// Elastic-Job's per-job election.
    Election(ElectionVariant),
    /// The ZooKeeper book's `runForMaster`, its participants restarted after their sessions
    /// expire (see [`crate::master`]).
    Master(MasterVariant),
}

fn recipe_is_master(recipe: LeaderRecipe) -> bool {
    matches!(recipe, LeaderRecipe::Master(_))
}

/// Runs the scheduled-job workload with the latch `variant` for `seed` under `plan`.
pub async fn job(
    seed: u64,
    variant: LatchVariant,
    config: WorkloadConfig,
    plan: FaultPlan,
) -> WorkloadOutcome {
    leader_job(seed, LeaderRecipe::Latch(variant), config, plan).await
}

/// Runs the scheduled-job workload, its leader elected by `recipe`, for `seed` under `plan`.
pub async fn leader_job(
    seed: u64,
    recipe: LeaderRecipe,
    config: WorkloadConfig,
    plan: FaultPlan,
) -> WorkloadOutcome {
    let mut cluster = Cluster::start(
        seed,
        ClusterConfig {
            container_check_interval_ms: config.container_check_interval_ms,
            ..ensemble(config.servers, config.defects, config.local_expiry)
        },
    )
    .await;
    cluster.arm_triggers(&plan.triggered);
    let resource = Arc::new(Mutex::new(FencedResource::new()));
    // Where waiters queue. (Every Elastic-Job instance watches the leader's instance node, by
    // design: that broadcast is how they all learn to elect again, not a herd on a lock. Every
    // backup of the book's master watches the master's node, by design too: no queue.)
    let dir = match recipe {
        LeaderRecipe::Latch(_) => Some(LATCH_DIR),
        LeaderRecipe::Election(_) => Some(JOB_LATCH_DIR),
        LeaderRecipe::Master(_) => None,
    };
    let mut knowledge = Vec::new();
    for id in 0..config.clients {
        let client = Arc::new(
            cluster
                .add_client(id, config.session_timeout_ms, true)
                .await
                .expect("a client connects"),
        );
        if recipe_is_master(recipe) && id == 0 {
            // Before any participant runs: the deployment's parent node.
            master::create_parent(&client).await;
        }
        let mut elected = start_election(id, seed, client, recipe, config.reconcile_interval_ms);
        let task = std::mem::replace(&mut elected.task, Box::pin(async {}));
        cluster.spawn_on_client(id, task);
        knowledge.push((id, elected.knowledge.clone()));
        let (history, net, resource) = (
            cluster.history_handle(),
            Arc::clone(cluster.net()),
            Arc::clone(&resource),
        );
        let job = ScheduledJob {
            fencing: config.fencing,
            interval_ms: config.job_interval_ms,
        };
        cluster.spawn_on_client(id, lead(id, elected, history, net, resource, job));
    }
    cluster.run_faults(&plan, config.fault_phase_ms).await;
    cluster.heal();
    let healed_us = cluster.net().now_us();
    madsim::time::sleep(Duration::from_millis(config.liveness_ms)).await;
    let history = cluster.history();
    let mut findings = vec![
        properties::single_acting_master(&history, RESOURCE),
        properties::leader_elected(
            &history,
            &["leader"],
            healed_us,
            config.leader_within_ms * 1000,
        ),
        sometimes::role_changed_hands_after_a_loss(&history, &["leader"]),
        sometimes::stale_write_refused(&history, RESOURCE),
    ];
    if let Some(dir) = dir {
        findings.insert(1, properties::herd_free(&history, dir));
        findings.push(sometimes::waiter_woken(&history, dir));
    }
    let faults_not_fired = cluster.planned_faults_not_fired().to_vec();
    WorkloadOutcome {
        history,
        findings,
        faults_not_fired,
        commit_logs: cluster.commit_logs(),
        known: known_at_end(&cluster, &knowledge),
    }
}
