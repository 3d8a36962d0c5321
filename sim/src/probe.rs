//! The guarantee probe ([`zkh_model::probe`]) on the simulated ensemble, with the fault a real
//! ensemble takes in `zkharness guarantees-real`, on the same phases: the simulated half of
//! the differential of the two ensembles (`zkharness differential`).
//!
//! The simulated client records its own history (the header zxid of every reply, watch events
//! with the zxid that fired them), and the servers their commit logs, so every guarantee is
//! judged here; the real side judges what a client-recorded history allows. A killed server
//! is `KillServer` (a crash: its peers see the connection reset), its restart `RestartServer`
//! (from its disk), as the real side's SIGKILL and start again; a client cut off is a
//! partition of client 0 from every server, ended by the heal.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zkh_model::guarantees::{self, CommitLogs};
use zkh_model::history::History;
use zkh_model::probe::{
    self, Phases, ProbeFault, Profile, SelfRecorded, CLIENTS, PAUSE_MS, SESSION_TIMEOUT_MS,
};
use zkh_model::properties::Finding;
use zkh_recipes::ZkError;

use crate::client::LocalExpiry;
use crate::clock::SimClock;
use crate::cluster::{Cluster, ClusterConfig};
use crate::fault::{Fault, NodeRef, ServerRef};

/// Tries to make the probe's nodes before the clients start.
const PREPARE_TRIES: u32 = 20;

/// One judged simulated run.
pub struct SimProbeRun {
    /// The run's history.
    pub history: History,
    /// The servers' commit logs.
    pub logs: CommitLogs,
    /// Every guarantee's finding.
    pub findings: Vec<Finding>,
    /// Counts and times, for the side-by-side.
    pub profile: Profile,
}

/// Runs the probe for `seed` with `fault` over `phases` (inside a madsim runtime: see
/// [`crate::run::run_seed`]).
///
/// # Panics
/// If no client can connect, or the probe's nodes cannot be made, at the start of a run with
/// no fault yet: the simulated ensemble is broken.
pub async fn run(seed: u64, fault: ProbeFault, phases: Phases) -> SimProbeRun {
    // The clients give up on a session as the real side's client library does.
    let config = ClusterConfig {
        local_expiry: LocalExpiry::ZookeeperClientCrate,
        ..ClusterConfig::default()
    };
    let mut cluster = Cluster::start(seed, config).await;
    let mut clients = Vec::new();
    for id in 0..CLIENTS {
        let client = (cluster.add_client(id, SESSION_TIMEOUT_MS, false).await)
            .expect("a probe client connects at start");
        clients.push(client);
    }
    let mut prepared = Err(ZkError::ConnectionLoss);
    for _ in 0..PREPARE_TRIES {
        prepared = probe::prepare(&clients[0]).await;
        if prepared.is_ok() {
            break;
        }
        madsim::time::sleep(Duration::from_millis(100)).await;
    }
    prepared.expect("the probe's nodes are made with no fault");
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (clients.iter().enumerate())
        .map(|(id, client)| {
            let (client, stop) = (client.clone(), Arc::clone(&stop));
            cluster.spawn_on_client(id as u32, async move {
                let id = id as u32;
                probe::run(&client, &SimClock, &SelfRecorded, id, seed, PAUSE_MS, &stop).await
            })
        })
        .collect();
    let sleep = |ms| madsim::time::sleep(Duration::from_millis(ms));
    sleep(phases.warmup_ms).await;
    let server = match fault {
        ProbeFault::KillLeader => Some(ServerRef::Leader),
        ProbeFault::KillFollower => Some(ServerRef::Follower),
        ProbeFault::DataLoss
        | ProbeFault::CutOffClient
        | ProbeFault::PauseClient
        | ProbeFault::None => None,
    };
    if let Some(server) = server {
        cluster.inject(&Fault::KillServer { server }).await;
    }
    if fault == ProbeFault::DataLoss {
        cluster.inject(&Fault::DataLoss).await;
    }
    if fault == ProbeFault::PauseClient {
        let pause = Fault::PauseClient {
            client: 0,
            duration_ms: phases.fault_ms,
        };
        cluster.inject(&pause).await;
    }
    if fault == ProbeFault::CutOffClient {
        let cut = Fault::Partition {
            a: BTreeSet::from([NodeRef::Client(0)]),
            b: BTreeSet::from([NodeRef::AllServers]),
            one_way: false,
            // Ended by the heal below.
            duration_ms: phases.fault_ms + 60_000,
        };
        cluster.inject(&cut).await;
    }
    sleep(phases.fault_ms).await;
    // The pause ends now (its undo is due), as the real run's SIGCONT.
    cluster.end_due_faults();
    if fault == ProbeFault::CutOffClient {
        cluster.heal();
    }
    if server.is_some() {
        let restart = Fault::RestartServer {
            server: ServerRef::Down,
        };
        cluster.inject(&restart).await;
    }
    sleep(phases.settle_ms).await;
    stop.store(true, Ordering::SeqCst);
    for task in tasks {
        // A probe client blocked on a request past the end is left: its request is in flight.
        let _ = madsim::time::timeout(Duration::from_secs(10), task).await;
    }
    let history = cluster.history();
    let logs = cluster.commit_logs();
    let findings = guarantees::judge(&history, &logs);
    let profile = Profile::of(&history);
    SimProbeRun {
        history,
        logs,
        findings,
        profile,
    }
}
