//! The standard failover scenario: the anchor for simulated speed and the determinism tests.
//!
//! A 3-server ensemble and 5 client processes with 4 s sessions. Each client creates an
//! ephemeral-sequential node under `/latch` and watches its predecessor (the herd-free pattern
//! every lock and latch recipe uses). Client 0, first in line, crashes. The run ends 5 s after
//! client 1 sees that it is first. For real, this takes 8.0 to 10.4 s of wall time
//! (`zk-facts.md`, "Real-world cost of one scenario").
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
    /// From client 0's crash to client 1 seeing it is first, if it did within the bound.
    pub failover_ms: Option<u64>,
    /// Simulated time of the whole run.
    pub simulated_ms: u64,
}

/// How many times a waiter retries after an indefinite error before it gives up.
const RETRIES: u32 = 200;

/// Waits until this client's node is the first under `/latch`, watching only its predecessor.
/// Returns false if the session is gone or the retries ran out.
async fn wait_until_first(
    client: &SimClient,
    own: &str,
    history: &Arc<Mutex<History>>,
    net_now: impl Fn() -> u64,
) -> bool {
    let own_name = own
        .rsplit('/')
        .next()
        .expect("a path has a last segment")
        .to_owned();
    for _ in 0..RETRIES {
        let children = match client.get_children("/latch", false).await {
            Ok((children, _)) => children,
            Err(error) if error.is_terminal() => return false,
            Err(_) => {
                madsim::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let mut sorted: Vec<&String> = children.iter().collect();
        sorted.sort_by_key(|name| sequence_suffix(name));
        let Some(position) = sorted.iter().position(|name| **name == own_name) else {
            return false;
        };
        if position == 0 {
            let role = HistoryEvent::Role {
                client: client.id(),
                role: "first".into(),
                token: None,
            };
            crate::log::record(history, net_now(), role);
            return true;
        }
        let predecessor = format!("/latch/{}", sorted[position - 1]);
        match client.exists(&predecessor, true).await {
            Ok(None) => continue,
            // Any event, a watch or a session change, is a reason to look again.
            Ok(Some(_)) => {
                if client.next_event().await.is_none() {
                    return false;
                }
            }
            Err(error) if error.is_terminal() => return false,
            Err(_) => madsim::time::sleep(Duration::from_millis(100)).await,
        }
    }
    false
}

async fn create_with_retry(
    client: &SimClient,
    path: &str,
    mode: CreateMode,
) -> Result<String, ZkError> {
    for _ in 0..RETRIES {
        match client.create(path, b"", mode).await {
            Ok(created) => return Ok(created.path),
            Err(ZkError::NodeExists) => return Ok(path.to_owned()),
            Err(ZkError::ConnectionLoss) => madsim::time::sleep(Duration::from_millis(100)).await,
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
    // Every waiter reports when it becomes first; the failover is the first report.
    let (first_tx, mut first_rx) = tokio::sync::mpsc::unbounded_channel();
    for (id, client) in clients.iter().enumerate() {
        // Each node is created before the next client's, so client 0 is first in line.
        let own = create_with_retry(client, "/latch/n-", CreateMode::EphemeralSequential).await;
        let Ok(own) = own else { continue };
        if id == 0 {
            continue;
        }
        let (client, history, net) = (
            client.clone(),
            cluster.history_handle(),
            Arc::clone(cluster.net()),
        );
        let first_tx = first_tx.clone();
        cluster.spawn_on_client(id as u32, async move {
            if wait_until_first(&client, &own, &history, || net.now_us()).await {
                let _ = first_tx.send(now());
            }
        });
    }
    drop(first_tx);
    madsim::time::sleep(Duration::from_millis(1000)).await;
    let crashed_at = now();
    cluster.inject(&Fault::CrashClient { client: 0 }).await;
    let fault_phase = cluster.run_faults(&plan, FAILOVER_BOUND_MS);
    let failover = tokio::select! {
        // Branches are polled in order: the default random order would be entropy from outside
        // the seed.
        biased;
        first = first_rx.recv() => first,
        () = fault_phase => None,
    };
    let failover_ms = failover.map(|at| at.duration_since(crashed_at).as_millis() as u64);
    cluster.heal();
    madsim::time::sleep(Duration::from_millis(AFTER_FAILOVER_MS)).await;
    let history = cluster.history();
    let outcome = Outcome {
        history_hash: history.stable_hash(),
        history_len: history.len(),
        failover_ms,
        simulated_ms: start.elapsed().as_millis() as u64,
    };
    (outcome, history)
}
