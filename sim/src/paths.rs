//! Where the simulator's workloads keep their recipes' nodes (in both builds, so that a
//! counterexample exported in a normal build aims its triggers at the simulator's paths).

/// The lock directory of the stock workload.
pub const LOCK_DIR: &str = "/locks/stock";
/// The latch directory of the leader's job under the latch.
pub const LATCH_DIR: &str = "/election/job";
/// The Elastic-Job job of the election workload, and the sharded job's root.
pub const JOB_DIR: &str = "/orders-job";
/// The job election's latch.
pub const JOB_LATCH_DIR: &str = "/orders-job/leader/election/latch";
/// The parent of the book's master node, created before the participants start.
pub const APP_DIR: &str = "/app";
/// The book's master node (the model checker's path too).
pub const MASTER_PATH: &str = "/app/master";
