//! The standard failover scenario: the anchor for simulated speed and the determinism tests.
//!
//! A 3-server ensemble and 5 client processes with 4 s sessions. Each client creates an
//! ephemeral-sequential node under `/latch` and watches its predecessor (the herd-free pattern
//! every lock and latch recipe uses). Client 0, first in line, crashes. The run ends 5 s after
//! client 1 sees that it is first. On a real three-server ensemble the same failover (with the
//! LeaderLatch recipe) takes about 6 s of wall time (`zkharness bench`, docs/performance.md).
//!
//! Random faults from a [`FaultPlan`] can be laid over it for the determinism tests.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::now;
use zkh_model::{History, HistoryEvent};
use zkh_recipes::types::sequence_suffix;
use zkh_recipes::{CreateMode, ZkClient, ZkError};

use crate::client::SimClient;
use crate::cluster::{Cluster, ClusterConfig};
use crate::fault::{Fault, FaultPlan, RandomFaults};

/// The session timeout of the standard scenario.
pub const SESSION_TIMEOUT_MS: u64 = 4000;
/// Client processes.
pub const CLIENTS: u32 = 5;
/// How long the run goes on after the failover.
pub const AFTER_FAILOVER_MS: u64 = 5000;
/// The longest the failover may take before the run gives up on it.
pub const FAILOVER_BOUND_MS: u64 = 60_000;
/// From the waiters' start to client 0's crash.
const BEFORE_CRASH_MS: u64 = 1000;

/// Random faults the ensemble must recover from: lost requests and replies, short pauses and
/// partitions, leader crashes with restarts.
pub fn sweep_plan() -> FaultPlan {
    FaultPlan {
        random: Some(RandomFaults {
            drop_request_per_s: 0.5,
            drop_reply_per_s: 0.5,
            kill_leader_per_s: 0.05,
            pause_client_per_s: 0.1,
            partition_client_per_s: 0.1,
            pause_ms: 1000,
            partition_ms: 2000,
            restart_after_ms: 2000,
            ..RandomFaults::default()
        }),
        ..FaultPlan::default()
    }
}

/// [`sweep_plan`] with session expiries, server- and client-side, and longer pauses and
/// partitions, which cost sessions.
pub fn harsh_plan() -> FaultPlan {
    FaultPlan {
        random: Some(RandomFaults {
            expire_session_per_s: 0.05,
            client_side_expiry_per_s: 0.05,
            pause_ms: 3000,
            partition_ms: 5000,
            ..sweep_plan()
                .random
                .expect("the sweep plan has random faults")
        }),
        ..FaultPlan::default()
    }
}

/// The harsh plan with pauses longer than the session timeout (6 s, 0.2 a second), so that a
/// stale holder wakes up inside its critical section and a fenced resource has something to
/// refuse: the recipes' random-fault sweep (`sim/tests/recipes.rs`, the catalogue's
/// `*-harsh-random.toml`).
pub fn recipe_plan() -> FaultPlan {
    let mut plan = harsh_plan();
    let random = plan
        .random
        .as_mut()
        .expect("the harsh plan has random faults");
    random.pause_ms = 6000;
    random.pause_client_per_s = 0.2;
    plan
}

/// What one run of the standard scenario gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The history's stable hash.
    pub history_hash: u64,
    /// History entries.
    pub history_len: usize,
    /// How the failover went.
    pub failover: Failover,
    /// Simulated time of the whole run.
    pub simulated_ms: u64,
    /// The network's audit of its links' order over the run.
    pub links: crate::net::LinkOrder,
}

impl Outcome {
    /// From client 0's crash to another client seeing it is first, if that happened.
    pub fn failover_ms(&self) -> Option<u64> {
        match self.failover {
            Failover::Done { after_ms, .. } => Some(after_ms),
            Failover::NoWaiterLeft { .. } | Failover::NotWithinBound => None,
        }
    }
}

/// How the failover went: done, impossible because no waiter was left to take over (their
/// sessions ended, which the faults may do: not the pattern's fault), or not within the bound
/// with waiters still waiting (the liveness failure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failover {
    /// A waiter saw it was first, `after_ms` after the crash.
    Done {
        /// From the crash to the first report, simulated milliseconds.
        after_ms: u64,
        /// The indefinite errors (lost connections) that waiter retried on its way.
        retries: u32,
    },
    /// Every waiter ended before any saw it was first: client by client, why.
    NoWaiterLeft {
        /// Each waiting client and why it stopped, by client id.
        ended: Vec<(u32, WaiterEnd)>,
    },
    /// [`FAILOVER_BOUND_MS`] passed and no waiter saw it was first, although some were still
    /// waiting.
    NotWithinBound,
}

/// Why a waiter stopped without becoming first. None of these is the harness giving up: a
/// waiter retries indefinite errors until the run's bound, and stops only when its session can
/// no longer take over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaiterEnd {
    /// Its node could not be created (the create's error).
    NotCreated(ZkError),
    /// Its session ended (expired or closed): its ephemeral node is gone with it.
    SessionEnded,
    /// Its node is no longer among the children: its session ended on the servers.
    NodeGone,
}

/// How long a retry waits after an indefinite error (a lost connection).
const RETRY_PAUSE_MS: u64 = 100;

/// Waits until this client's node is the first under `/latch`, watching only its predecessor.
/// Retries indefinite errors (ConnectionLoss, which a client that is not connected returns at
/// once) every [`RETRY_PAUSE_MS`] until `deadline`. Returns `Ok` with the retries it made when
/// it is first,
/// `Err(Some(why))` when its session can no longer take over, and `Err(None)` at `deadline`.
async fn wait_until_first(
    client: &SimClient,
    own: &str,
    history: &Arc<Mutex<History>>,
    net_now: impl Fn() -> u64,
    deadline: madsim::time::Instant,
) -> Result<u32, Option<WaiterEnd>> {
    let own_name = own
        .rsplit('/')
        .next()
        .expect("a path has a last segment")
        .to_owned();
    let mut retries = 0;
    let mut retry = || {
        retries += 1;
        madsim::time::sleep(Duration::from_millis(RETRY_PAUSE_MS))
    };
    while now() < deadline {
        let children = match client.get_children("/latch", false).await {
            Ok((children, _)) => children,
            Err(error) if error.is_terminal() => return Err(Some(WaiterEnd::SessionEnded)),
            Err(_) => {
                retry().await;
                continue;
            }
        };
        let mut sorted: Vec<&String> = children.iter().collect();
        sorted.sort_by_key(|name| sequence_suffix(name));
        let Some(position) = sorted.iter().position(|name| **name == own_name) else {
            return Err(Some(WaiterEnd::NodeGone));
        };
        if position == 0 {
            let role = HistoryEvent::Role {
                client: client.id(),
                role: "first".into(),
                token: None,
            };
            crate::log::record(history, net_now(), role);
            return Ok(retries);
        }
        let predecessor = format!("/latch/{}", sorted[position - 1]);
        match client.exists(&predecessor, true).await {
            Ok(None) => continue,
            // Any event, a watch or a session change, is a reason to look again.
            Ok(Some(_)) => {
                if client.next_event().await.is_none() {
                    return Err(Some(WaiterEnd::SessionEnded));
                }
            }
            Err(error) if error.is_terminal() => return Err(Some(WaiterEnd::SessionEnded)),
            Err(_) => retry().await,
        }
    }
    Err(None)
}

/// How many times the set-up's creates retry a lost connection. They run before any random
/// fault, so only a triggered fault can make one retry at all.
const CREATE_RETRIES: u32 = 200;

async fn create_with_retry(
    client: &SimClient,
    path: &str,
    mode: CreateMode,
) -> Result<String, ZkError> {
    for _ in 0..CREATE_RETRIES {
        match client.create(path, b"", mode).await {
            Ok(created) => return Ok(created.path),
            Err(ZkError::NodeExists) => return Ok(path.to_owned()),
            Err(ZkError::ConnectionLoss) => {
                madsim::time::sleep(Duration::from_millis(RETRY_PAUSE_MS)).await
            }
            Err(error) => return Err(error),
        }
    }
    Err(ZkError::ConnectionLoss)
}

/// Runs the standard scenario for `seed` with `plan` laid over it.
pub async fn run(seed: u64, plan: FaultPlan) -> Outcome {
    run_with_history(seed, plan).await.0
}

/// [`run`], also returning the whole history.
pub async fn run_with_history(seed: u64, plan: FaultPlan) -> (Outcome, History) {
    let start = now();
    let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
    cluster.arm_triggers(&plan.triggered);
    let mut clients = Vec::new();
    for id in 0..CLIENTS {
        clients.push(
            cluster
                .add_client(id, SESSION_TIMEOUT_MS, false)
                .await
                .expect("a client connects at start"),
        );
    }
    create_with_retry(&clients[0], "/latch", CreateMode::Persistent)
        .await
        .expect("create /latch");
    // Every waiter reports how it ended; the failover is the first report of a waiter that is
    // first. The set-up's failures count as waiters that ended.
    let (report_tx, mut report_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut ended = Vec::new();
    let mut waiting = 0;
    // The waiters' deadline: the failover bound, counted from the crash.
    let deadline = now() + Duration::from_millis(BEFORE_CRASH_MS + FAILOVER_BOUND_MS);
    for (id, client) in clients.iter().enumerate() {
        let id = id as u32;
        // Each node is created before the next client's, so client 0 is first in line.
        let own =
            match create_with_retry(client, "/latch/n-", CreateMode::EphemeralSequential).await {
                Ok(own) => own,
                Err(error) => {
                    if id != 0 {
                        ended.push((id, WaiterEnd::NotCreated(error)));
                    }
                    continue;
                }
            };
        if id == 0 {
            continue;
        }
        waiting += 1;
        let (client, history, net) = (
            client.clone(),
            cluster.history_handle(),
            Arc::clone(cluster.net()),
        );
        let report_tx = report_tx.clone();
        cluster.spawn_on_client(id, async move {
            let end = wait_until_first(&client, &own, &history, || net.now_us(), deadline).await;
            let _ = report_tx.send((id, now(), end));
        });
    }
    drop(report_tx);
    madsim::time::sleep(Duration::from_millis(BEFORE_CRASH_MS)).await;
    let crashed_at = now();
    cluster.inject(&Fault::CrashClient { client: 0 }).await;
    let fault_phase = cluster.run_faults(&plan, FAILOVER_BOUND_MS);
    let first_or_none_left = async move {
        while waiting > 0 {
            match report_rx.recv().await {
                Some((_, at, Ok(retries))) => return Ok((at, retries)),
                Some((id, _, Err(Some(why)))) => {
                    ended.push((id, why));
                    waiting -= 1;
                }
                // At the deadline, the fault phase ends too.
                Some((_, _, Err(None))) | None => std::future::pending::<()>().await,
            }
        }
        ended.sort_unstable_by_key(|(id, _)| *id);
        Err(ended)
    };
    let failover = tokio::select! {
        // Branches are polled in order: the default random order would be entropy from outside
        // the seed.
        biased;
        first = first_or_none_left => match first {
            Ok((at, retries)) => Failover::Done {
                after_ms: at.duration_since(crashed_at).as_millis() as u64,
                retries,
            },
            Err(ended) => Failover::NoWaiterLeft { ended },
        },
        () = fault_phase => Failover::NotWithinBound,
    };
    cluster.heal();
    madsim::time::sleep(Duration::from_millis(AFTER_FAILOVER_MS)).await;
    let history = cluster.history();
    let outcome = Outcome {
        history_hash: history.stable_hash(),
        history_len: history.len(),
        failover,
        simulated_ms: start.elapsed().as_millis() as u64,
        links: cluster.net().link_order(),
    };
    (outcome, history)
}
