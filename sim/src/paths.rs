//! Where the simulator's workloads keep their recipes' nodes: the model checker's own paths
//! (`zkh_model::check`), so that a recipe's nodes are the same in both engines and a
//! counterexample exported as a scenario aims its triggers at the paths the model named, with
//! nothing to map. Available in both builds.

pub use zkh_model::check::{
    ELECTION_LATCH_DIR as JOB_LATCH_DIR, JOB_DIR, LATCH_DIR, LOCK_DIR, MASTER_PATH,
};

/// The parent of the book's master node, created before the participants start.
pub const APP_DIR: &str = "/app";

/// The resource the lock's holders and the elected leaders write to (not a node: the world
/// outside ZooKeeper the recipes guard).
pub const RESOURCE: &str = "stock";
