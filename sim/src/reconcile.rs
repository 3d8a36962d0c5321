//! Elastic-Job 2.1.5's reconcile service (`ReconcileService`), as far as the job election's
//! recovery depends on it: the one thing an idle Elastic-Job instance does with ZooKeeper on a
//! timer.
//!
//! Every instance runs it once a minute. Once `reconcileIntervalMinutes` (10 by default) have
//! passed since the last reconciliation (or since the instance started), it reconciles: it asks
//! whether the job has a leader (`LeaderService.isLeaderUntilBlock`, an `exists` of
//! `leader/election/instance` read from the servers, not from the cache). Under Curator 2.10
//! that operation is what makes a client that cannot reconnect give up its handle and start a
//! new session ([`LocalExpiry::Curator2`](crate::local_expiry::LocalExpiry::Curator2)): after the
//! ensemble restarted empty, it ends an idle election's wait, up to 10 minutes after the loss.
//!
//! Not modelled: what reconciliation does next (it may ask the leader to shard again when the
//! sharding names offline instances); the sharded job's own workload does not run it.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use zkh_recipes::ZkClient;

use crate::client::SimClient;
use crate::clock::{sleep, SleepOnce};

pub use zkh_recipes::election::RECONCILE_INTERVAL_MS;

/// One instance's reconcile service: when its next reconciliation is due, and what it asks.
pub struct Reconcile {
    client: Arc<SimClient>,
    instance_path: String,
    interval: Duration,
    /// Goes off when the next reconciliation is due; one timer per reconciliation, set when the
    /// instance's loop first waits for it.
    alarm: Pin<Box<SleepOnce>>,
}

impl Reconcile {
    /// The service of an instance starting now, on `client`, for the job whose leader's node is
    /// `instance_path`, reconciling every `interval_ms` (more than 0). Its checks each minute
    /// find nothing to do until the interval has passed, so only the reconciliations are kept:
    /// the interval after the start, and each interval after the last (not rounded up to a
    /// whole minute).
    pub fn new(client: Arc<SimClient>, instance_path: String, interval_ms: u64) -> Self {
        let interval = Duration::from_millis(interval_ms);
        Reconcile {
            client,
            instance_path,
            interval,
            alarm: Box::pin(sleep(interval)),
        }
    }

    /// Ready when the next reconciliation is due. Poll it from one task only.
    pub fn due(&mut self) -> &mut Pin<Box<SleepOnce>> {
        &mut self.alarm
    }

    /// Reconciles: asks the servers whether the job has a leader.
    pub async fn run(&mut self) {
        self.alarm = Box::pin(sleep(self.interval));
        // Whatever it answers, the operation has been made.
        let _ = self.client.exists(&self.instance_path, false).await;
    }
}
