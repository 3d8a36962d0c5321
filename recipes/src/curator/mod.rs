//! Apache Curator as each named release ships it: the client framework its recipes run on, and
//! the recipes ported from the release's tag, branch by branch.
//!
//! A *profile* is one release of one recipe (`curator-5.4.0`'s `LeaderLatch`). Its code is
//! read from the tag `apache-curator-X.Y.Z` of the apache/curator repository; where two
//! releases' code is the same for a path our faults reach, the profiles share our code and say
//! so. When the harness finds a violation in a profile, that is a finding about the release
//! (docs/findings.md), never a defect to repair here.
//!
//! The recipes: `LeaderLatch` ([`leader_latch`], background operations and callbacks) and
//! `InterProcessMutex` ([`interprocess_mutex`], foreground calls on the application's thread,
//! [`foreground`]); each module's doc has its table from the tag's file and line to our branch.
//!
//! # What the framework is (`framework.rs`)
//!
//! A Curator recipe does not talk to ZooKeeper directly. It runs *background operations*
//! (`inBackground(callback)`): the framework sends the request, and when the reply's code is
//! one its retry policy retries (`ConnectionLoss`, `OperationTimeout`, `SessionMoved`,
//! `SessionExpired`), it sleeps and sends it again, in the *new* session if the old one
//! expired, until the policy gives up; only then, or on any other code, does the recipe's
//! callback run. It derives *connection states* from the ZooKeeper client's events (SUSPENDED,
//! LOST, RECONNECTED) and hands them to listeners on a thread of its own, so a listener runs
//! between any two callbacks. A *protected* create puts a unique prefix in the node's name and,
//! when a retry follows a lost reply, first looks for the node the lost attempt made. A
//! *guaranteed* delete is retried until the server answers.
//!
//! The releases differ in the framework on these paths:
//!
//! | upstream file (at the tag) | 2.10.0 | 5.3.0 – 5.9.0 |
//! | --- | --- | --- |
//! | `ProtectedMode.validateFoundNode` (`imps/ProtectedMode.java`) | absent: a node found after a new session is adopted | a node found after the session changed is deleted (guaranteed) and the create made again |
//! | `CuratorFrameworkImpl.validateConnection`, `SyncConnected` | RECONNECTED | `checkInstanceIndex` first: a new handle (a new session) posts LOST, then RECONNECTED |
//! | `CuratorFrameworkImpl.validateConnection`, `Disconnected` | SUSPENDED, and a background `sync` whose retries, exhausted, post LOST (`doSyncForSuspendedConnection`) | SUSPENDED (`StandardInternalConnectionHandler.suspendConnection`) |
//! | `CuratorFrameworkImpl.performBackgroundOperation`, not connected | sleeps 1 s and tries again, until the connection timeout has passed | the same, and a reconnection wakes every sleeping operation at once (`unSleepBackgroundOperations`) |
//!
//! Line-level rows are in [`framework`]'s table.
//!
//! # Not modelled
//!
//! - The retry policy's random jitter: `ExponentialBackoffRetry(1000, 3)` (the policy Curator's
//!   documentation and Elastic-Job use) sleeps `base × 2^n` here, the middle of its range.
//! - Time inside the framework: an operation's elapsed time is the sum of the sleeps it made
//!   (the model checker has no clock), not the time its replies took.
//! - The foreground retry loop inside a protected create's search for its node
//!   (`findProtectedNodeInForeground`) and inside `creatingParentContainersIfNeeded`'s
//!   `mkdirs`: their failures count against the background operation's own retries.
//! - Curator 2.x's handle reset from `getZooKeeper()` while disconnected is the simulated
//!   client's (`local_expiry = "curator-2"`): it happens when a request is made, and this
//!   framework makes none while it believes it is not connected.
//! - Error policies other than the default `StandardConnectionStateErrorPolicy` (SUSPENDED is
//!   an error state), `READ_ONLY`, namespaces, ACLs, compression, the circuit breaker.

pub mod foreground;
#[cfg(test)]
mod foreground_tests;
pub mod framework;
pub mod interprocess_mutex;
#[cfg(test)]
mod interprocess_mutex_tests;
pub mod leader_latch;
#[cfg(test)]
mod leader_latch_tests;
#[cfg(test)]
mod mutex_bench;

use serde::{Deserialize, Serialize};

/// A Curator release the harness has a profile of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Release {
    /// 2.10.0 (the release Elastic-Job 2.1.5 ships).
    #[serde(rename = "curator-2.10.0")]
    V2_10_0,
    /// 5.3.0.
    #[serde(rename = "curator-5.3.0")]
    V5_3_0,
    /// 5.4.0 (the release Debian packages, beside ZooKeeper 3.8).
    #[serde(rename = "curator-5.4.0")]
    V5_4_0,
    /// 5.7.1.
    #[serde(rename = "curator-5.7.1")]
    V5_7_1,
    /// 5.9.0.
    #[serde(rename = "curator-5.9.0")]
    V5_9_0,
}

impl Release {
    /// Every release with a profile, oldest first.
    pub const ALL: [Release; 5] = [
        Release::V2_10_0,
        Release::V5_3_0,
        Release::V5_4_0,
        Release::V5_7_1,
        Release::V5_9_0,
    ];

    /// The profile's name, as a scenario's `variant` gives it: `curator-5.4.0`.
    pub fn name(self) -> &'static str {
        match self {
            Release::V2_10_0 => "curator-2.10.0",
            Release::V5_3_0 => "curator-5.3.0",
            Release::V5_4_0 => "curator-5.4.0",
            Release::V5_7_1 => "curator-5.7.1",
            Release::V5_9_0 => "curator-5.9.0",
        }
    }

    /// The git tag its code is read from.
    pub fn tag(self) -> String {
        format!("apache-{}", self.name())
    }

    /// The release a profile name names, if any.
    pub fn named(name: &str) -> Option<Release> {
        Release::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Whether this release's framework is Curator 5's (every row of the framework table
    /// that differs between 2.10.0 and 5.x).
    pub fn is_curator_5(self) -> bool {
        self != Release::V2_10_0
    }
}

/// Curator's `ExponentialBackoffRetry(base_sleep_ms, max_retries)`, without its jitter: the
/// `n`-th retry (from 0) sleeps `base_sleep_ms × 2^n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    /// The sleep before the first retry.
    pub base_sleep_ms: u64,
    /// Retries allowed after the first attempt.
    pub max_retries: u32,
}

impl RetryPolicy {
    /// `ExponentialBackoffRetry(1000, 3)`.
    pub const STANDARD: RetryPolicy = RetryPolicy {
        base_sleep_ms: 1000,
        max_retries: 3,
    };

    /// The sleep before retry `count` (from 0), or `None` when the policy gives up.
    pub fn sleep_before(self, count: u32) -> Option<u64> {
        (count < self.max_retries).then(|| self.base_sleep_ms << count.min(20))
    }
}

/// `CuratorFrameworkFactory`'s default connection timeout, which bounds how long a background
/// operation waits for a connection before it counts a `ConnectionLoss`.
pub const CONNECTION_TIMEOUT_MS: u64 = 15_000;

/// How long a background operation sleeps while not connected before it looks again
/// (`CuratorFrameworkImpl.sleepAndQueueOperationSeconds`, 1 s).
pub const NOT_CONNECTED_SLEEP_MS: u64 = 1_000;
