//! The ZooKeeper book's master election (`runForMaster`, [`MasterMachine`]) as the scheduled
//! job's leader election on the simulator.
//!
//! Every participant runs the book's election on `/app/master`: create the ephemeral node with
//! its id; on `NodeExists` become a backup watching the node; on `ConnectionLoss` read the node
//! to learn whether the create was applied; on `SessionExpired` stop. The leader's job then
//! writes to the resource with the node's `czxid` as its fencing token, as with the other
//! elections (`workload::leader_job`).
//!
//! # How the host differs from the book
//!
//! The book's process exits when its session expires and leaves the restart to whoever runs it.
//! Here the host plays that supervisor: once its election reports `Stopped` it drops it, waits
//! [`RESTART_AFTER_MS`], and starts a fresh election on the same client process (whose client
//! has by then made a new session). Without it, a run under random expiries would end with
//! every participant stopped, which says nothing about the election. A crashed process is not
//! restarted: a crash is the fault under which a backup that set no watch
//! ([`MasterVariant::NoWatch`]) leaves the job without a master for good.
//!
//! Not modelled: the book's task assignment and workers; only the election and the master's
//! side effects are.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use zkh_recipes::driver::{self, Clock, Knowledge};
use zkh_recipes::master::{MasterMachine, MasterReport, MasterRequest, MasterVariant};
use zkh_recipes::{CreateMode, ZkClient, ZkError};

use crate::client::SimClient;
use crate::workload::{Leadership, NextLeadership};

pub use crate::paths::{APP_DIR, MASTER_PATH};
/// How long the supervisor waits before it restarts a participant whose session expired.
pub const RESTART_AFTER_MS: u64 = 1000;

/// Creates [`APP_DIR`], retrying a lost connection at most 200 times.
///
/// # Panics
/// If the node cannot be created (the ensemble answers with an error other than a lost
/// connection, or never answers): the workload cannot start.
pub async fn create_parent(client: &SimClient) {
    for _ in 0..200 {
        match client.create(APP_DIR, b"", CreateMode::Persistent).await {
            Ok(_) | Err(ZkError::NodeExists) => return,
            Err(ZkError::ConnectionLoss) => madsim::time::sleep(Duration::from_millis(100)).await,
            Err(other) => panic!("creating {APP_DIR} failed: {other:?}"),
        }
    }
    panic!("creating {APP_DIR}: the connection was lost 200 times");
}

/// Runs the election for `participant` on `client` under a supervisor that restarts it after
/// an expiry. Returns the leadership changes, for the leader's loop, and the supervisor's task,
/// which the host spawns on the client's node. Each machine it starts publishes what it knows of
/// its own node into `knowledge`.
pub fn supervise(
    client: Arc<SimClient>,
    clock: Arc<dyn Clock>,
    variant: MasterVariant,
    participant: String,
    knowledge: Knowledge,
) -> (NextLeadership, impl std::future::Future<Output = ()> + Send) {
    let (tx, rx) = unbounded_channel();
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let next: NextLeadership = Box::new(move || {
        let rx = Arc::clone(&rx);
        Box::pin(async move { rx.lock().await.recv().await })
    });
    (
        next,
        run(client, clock, variant, participant, tx, knowledge),
    )
}

async fn run(
    client: Arc<SimClient>,
    clock: Arc<dyn Clock>,
    variant: MasterVariant,
    participant: String,
    leadership: UnboundedSender<Leadership>,
    knowledge: Knowledge,
) {
    // Bounded: a restart costs at least a second, far fewer than a run has.
    for _ in 0..10_000 {
        let machine = MasterMachine::with_variant(variant, MASTER_PATH, &participant);
        let (handle, driver) = driver::start_observed(
            Arc::clone(&client),
            Arc::clone(&clock),
            machine,
            knowledge.clone(),
        );
        let driver = madsim::task::spawn(driver);
        handle.send(MasterRequest::Run);
        while let Some(report) = handle.next_report().await {
            let stopped = report == MasterReport::Stopped;
            let change = match report {
                MasterReport::Master { token } => Leadership::Gained(token),
                MasterReport::Backup | MasterReport::Stopped => Leadership::Lost,
            };
            if leadership.send(change).is_err() || stopped {
                break;
            }
        }
        // The old driver must be gone before a new one takes the client's events.
        drop(handle);
        let _ = driver.await;
        madsim::time::sleep(Duration::from_millis(RESTART_AFTER_MS)).await;
    }
}
