//! Pure ZooKeeper semantics, with no time, no I/O and no madsim.
//!
//! - [`ZkModel`]: the deterministic state machine a ZooKeeper server is, `apply(session,
//!   request) -> (reply, watch notifications)`, with the data tree in ordered maps, zxids, every
//!   `Stat` field, sequence numbering, ephemeral ownership, containers, one-shot watches and
//!   atomic `multi`. It is `Clone + Eq + Hash`, so the model checker can store and hash it, and
//!   the simulator replicates it on every simulated server.
//! - [`MemoryEnsemble`] and [`MemoryClient`]: a [`ZkClient`](zkh_recipes::ZkClient) over one
//!   model, for recipes' unit tests.
//!
//! Every behaviour here is checked against a real ZooKeeper 3.8 server by the differential test
//! (`model/tests/differential.rs`); `model/tests/semantics.rs` pins the facts it rests on, one
//! test a fact.

pub mod check;
pub mod claims;
pub mod guarantees;
pub mod history;
pub mod history_text;
pub mod memory;
pub mod orphans;
pub mod probe;
pub mod properties;
pub mod request;
pub mod shared;
pub mod tree;
pub mod watches;
pub mod zookeeper;

pub use history::{History, HistoryEntry, HistoryEvent, OpOutcome};
pub use memory::{InjectedFault, MemoryClient, MemoryEnsemble};
pub use request::{Applied, Notification, Reply, Request, Response};
pub use zookeeper::{WatchSet, ZkModel};

/// The README's Rust examples, compiled and run as doc tests so that they stay true (in the
/// normal build: one of them talks to a real server).
#[doc = include_str!("../../README.md")]
#[cfg(all(doctest, not(madsim)))]
pub struct ReadmeDoctests;
