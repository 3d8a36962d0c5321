//! The standard crash failover with the `LeaderLatch` recipe: the simulated half of the
//! benchmark's comparison with a real ensemble (`zkharness bench` beside `zkharness
//! bench-real`, which runs the same recipe code on a real three-server ZooKeeper).
//!
//! A 3-server ensemble; five client processes, each running the correct latch
//! (`zkh_recipes::latch`) with a 4 s session, joining in order; a sixth lists the latch
//! directory until all five have their nodes. Then the leader's process crashes (its session
//! ends by expiring on the servers, as a SIGKILLed process's does), and the run ends when
//! another participant reports that it leads, or after [`FAILOVER_BOUND_MS`].
//!
//! Not here: faults other than the crash (the determinism and liveness tests lay random
//! faults over [`crate::standard`]'s scenario instead).

use std::sync::Arc;
use std::time::Duration;

use zkh_recipes::latch::{Latch, LatchReport, LatchVariant};
use zkh_recipes::ZkClient;

use crate::clock::{now, SimClock};
use crate::cluster::{Cluster, ClusterConfig};
use crate::fault::Fault;

/// The participants' session timeout.
pub const SESSION_TIMEOUT_MS: u64 = 4000;
/// Participants.
pub const PARTICIPANTS: u32 = 5;
/// The longest the failover may take before the run gives up on it.
pub const FAILOVER_BOUND_MS: u64 = 60_000;
/// The latch's directory.
const DIR: &str = "/bench-latch";

/// What one run gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// From the leader's crash to another participant leading, in simulated ms, if within the
    /// bound.
    pub failover_ms: Option<u64>,
    /// Simulated time of the whole run.
    pub simulated_ms: u64,
    /// The history's stable hash.
    pub history_hash: u64,
}

/// Runs the failover for `seed`.
pub async fn run(seed: u64) -> Outcome {
    let start = now();
    let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for id in 0..PARTICIPANTS {
        let client = cluster
            .add_client(id, SESSION_TIMEOUT_MS, false)
            .await
            .expect("a participant connects at start");
        let name = format!("p{id}");
        let (latch, driver) = Latch::start(
            Arc::new(client),
            Arc::new(SimClock),
            LatchVariant::Correct,
            DIR,
            &name,
            &name,
        );
        cluster.spawn_on_client(id, driver);
        let tx = tx.clone();
        cluster.spawn_on_client(id, async move {
            while let Some(report) = latch.next_report().await {
                if let LatchReport::Leader { .. } = report {
                    let _ = tx.send(id);
                }
            }
        });
    }
    drop(tx);
    let observer = cluster
        .add_client(PARTICIPANTS, SESSION_TIMEOUT_MS, false)
        .await
        .expect("the observer connects at start");
    let deadline = now() + Duration::from_millis(FAILOVER_BOUND_MS);
    while now() < deadline {
        match observer.get_children(DIR, false).await {
            Ok((children, _)) if children.len() >= PARTICIPANTS as usize => break,
            _ => madsim::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let leader = rx.recv().await.expect("a participant leads");
    let crashed = now();
    cluster.inject(&Fault::CrashClient { client: leader }).await;
    let next = async {
        while let Some(id) = rx.recv().await {
            if id != leader {
                return Some(now());
            }
        }
        None
    };
    let bound = madsim::time::sleep(Duration::from_millis(FAILOVER_BOUND_MS));
    let led_at = tokio::select! {
        // Polled in order: the default random order would be entropy from outside the seed.
        biased;
        at = next => at,
        () = bound => None,
    };
    let history = cluster.history();
    Outcome {
        failover_ms: led_at.map(|at| at.duration_since(crashed).as_millis() as u64),
        simulated_ms: start.elapsed().as_millis() as u64,
        history_hash: history.stable_hash(),
    }
}
