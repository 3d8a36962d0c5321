//! How a client library ends a session it cannot reconnect: a setting of the simulated
//! client, and of a scenario (`[workload] local_expiry`). Build-independent, so that the
//! scenario reader of the normal build can name it.

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
}

impl LocalExpiry {
    /// Every policy, by the name a scenario file gives it.
    pub const ALL: [LocalExpiry; 3] = [
        LocalExpiry::Never,
        LocalExpiry::Curator,
        LocalExpiry::ZookeeperClientCrate,
    ];
}
