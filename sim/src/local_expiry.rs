//! How a client library ends a session it cannot reconnect: a setting of the simulated
//! client, and of a scenario (`[workload] local_expiry`). Build-independent, so that the
//! scenario reader of the normal build can name it.

use std::time::Duration;

/// Curator's default connection timeout (`CuratorFrameworkFactory`'s 15 s), which Elastic-Job
/// 2.1.5 keeps unless its `ZookeeperConfiguration` sets one.
pub const CURATOR_CONNECTION_TIMEOUT_MS: u64 = 15_000;

/// When a client library gives up on its session without a server's word.
///
/// Measured on a real ensemble (`zkharness guarantees-real --fault data-loss`, docs/guarantees.md):
/// after the ensemble restarted empty, its servers refused the `zookeeper-client` crate's
/// clients (their last zxid was ahead), and each client reported its session expired 1.4
/// session timeouts after it last heard from a server. Curator does the same after one session
/// timeout in `SUSPENDED` (its `ConnectionStateManager` injects the expiration); the Java client
/// alone never does, and stays refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalExpiry {
    /// Never: the session ends only when a server answers that it expired (the Java client).
    #[default]
    Never,
    /// One session timeout after the connection was lost (Curator's `ConnectionStateManager`).
    Curator,
    /// 7/5 of the session timeout after it last heard from a server (the `zookeeper-client`
    /// crate, which `RealClient` uses).
    ZookeeperClientCrate,
    /// Curator 2.x (`ConnectionState.checkTimeouts`, read in 2.10.0, which Elastic-Job 2.1.5 is
    /// built on): no expiry is ever announced. Instead, the first operation the application
    /// makes while not connected, more than max(session timeout, connection timeout) after the
    /// connection was lost (or last reset), closes the handle and makes a new one: a new session,
    /// which offers the servers no last zxid, announced to the application as a reconnection
    /// (`RECONNECTED`), not as `LOST`. The operation itself fails with `ConnectionLoss`.
    #[serde(rename = "curator-2")]
    Curator2,
}

impl LocalExpiry {
    /// Every policy, by the name a scenario file gives it.
    pub const ALL: [LocalExpiry; 4] = [
        LocalExpiry::Never,
        LocalExpiry::Curator,
        LocalExpiry::ZookeeperClientCrate,
        LocalExpiry::Curator2,
    ];

    /// Whether an operation made `disconnected` after the connection was lost (or last reset)
    /// makes a new handle first ([`LocalExpiry::Curator2`]): after more than max(session
    /// timeout, [`CURATOR_CONNECTION_TIMEOUT_MS`]).
    pub fn resets_handle_after(self, disconnected: Duration, session_timeout_ms: u64) -> bool {
        let limit_ms = session_timeout_ms.max(CURATOR_CONNECTION_TIMEOUT_MS);
        self == LocalExpiry::Curator2 && disconnected > Duration::from_millis(limit_ms)
    }
}
