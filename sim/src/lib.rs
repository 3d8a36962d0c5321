//! The simulated ZooKeeper ensemble, on madsim.
//!
//! Everything here runs in simulated time, on madsim's deterministic scheduler, with one `u64`
//! seed as the only entropy: the same seed gives a byte-identical run, and the
//! [history](zkh_model::History) it records has the same [stable hash](zkh_model::History::stable_hash).
//!
//! - `server`: a server process replicating the pure model (`zkh_model::ZkModel`): elections,
//!   proposals committed on a quorum, local reads, `sync`, session expiry in tick buckets.
//! - `client`: `SimClient`, a `ZkClient` with the real client's connection behaviour: pings,
//!   `Disconnected` after two thirds of the timeout, reconnection, expiry learnt on reconnect,
//!   watch re-registration.
//! - `fault`: `Fault`, the closed vocabulary of faults, each saying what it models, and
//!   `FaultPlan`: scripted, triggered and random faults.
//! - `cluster`: `Cluster`, which starts an ensemble and client processes, injects faults and
//!   heals them; `run::run_seed` runs a scenario for one seed on a fresh thread.
//!
//! - `watchdog`: a run that makes no progress in simulated time ends as stuck, naming what ran.
//! - `log`: every history event is also a `tracing` event; `SimTime` stamps log lines with
//!   the simulated clock.
//! - `workload`, `master` and `sharded`: the recipes' workloads (stock under the lock, a
//!   leader's job under the latch, the job election or the book's master election, an
//!   Elastic-Job sharded job), judged by the named properties.
//!
//! This crate exists only in the simulated build (`RUSTFLAGS="--cfg madsim"`); in the normal
//! build it holds only the build-independent parts (`fault`, `seed`).

#[cfg(madsim)]
pub mod client;
#[cfg(madsim)]
pub mod clock;
#[cfg(madsim)]
pub mod cluster;
pub mod fault;
#[cfg(madsim)]
pub mod latch_failover;
pub mod local_expiry;
#[cfg(madsim)]
pub mod log;
#[cfg(madsim)]
pub mod master;
pub mod moment;
#[cfg(madsim)]
pub mod net;
pub mod paths;
pub mod plan;
#[cfg(madsim)]
pub mod probe;
#[cfg(madsim)]
pub mod protocol;
#[cfg(madsim)]
pub mod reconcile;
#[cfg(madsim)]
pub mod run;
pub mod seed;
#[cfg(madsim)]
pub use fault::OpKind;
#[cfg(madsim)]
pub mod server;
#[cfg(madsim)]
pub mod sharded;
#[cfg(madsim)]
pub mod standard;
#[cfg(madsim)]
pub mod watchdog;
#[cfg(madsim)]
pub mod workload;

#[cfg(madsim)]
pub use client::SimClient;
#[cfg(madsim)]
pub use cluster::{Cluster, ClusterConfig};
pub use fault::{
    Fault, FaultPlan, NodeRef, RandomFaults, ScriptedFault, ServerRef, Trigger, TriggeredFault,
};
