//! Faults as data: one closed, serializable enum, and plans that schedule them.
//!
//! Each [`Fault`] variant says what it models in real life. A [`FaultPlan`] keeps three kinds of
//! scheduling apart:
//!
//! - **scripted** faults happen at a simulated time;
//! - **triggered** faults happen when a ZooKeeper-level event happens, e.g. "the reply to the
//!   first create under /latch";
//! - **random** faults are drawn from the run's seed at the given rates, during the fault phase.
//!
//! A run has a fault phase, then a heal (every partition restored, every paused client resumed,
//! every killed server restarted, every slow follower and delayed watch back to normal), then a
//! bounded liveness phase.

use std::collections::BTreeSet;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Which server a fault targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerRef {
    /// Server `myid`.
    Id(u32),
    /// Whichever server leads when the fault happens (killing it changes the epoch).
    Leader,
    /// The lowest-numbered server that follows when the fault happens.
    Follower,
    /// The lowest-numbered server that is down when the fault happens (to restart it).
    Down,
}

/// One side of a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeRef {
    /// A server.
    Server(ServerRef),
    /// A client process.
    Client(u32),
    /// Every server.
    AllServers,
}

/// A fault, and what it models in real life.
///
/// In a scenario file a fault is an inline table whose `kind` names the variant in kebab case:
/// `{ kind = "drop-reply", client = 1 }`, `{ kind = "kill-server", server = "leader" }`,
/// `{ kind = "partition", a = [{ client = 0 }], b = ["all-servers"], duration_ms = 5000 }`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fault {
    /// `ConnectionLoss`, the operation **not** applied: the client's connection breaks before its
    /// next request reaches the server.
    DropRequest {
        /// The client process.
        client: u32,
    },
    /// `ConnectionLoss`, the operation **applied**: the connection breaks just before the reply
    /// to the client's next request arrives.
    DropReply {
        /// The client process.
        client: u32,
    },
    /// The leader expires the session now: a partition longer than the timeout, or an admin
    /// kill. The client learns of it when it next reaches a server.
    ExpireSession {
        /// The client process whose session expires.
        client: u32,
    },
    /// What Curator's `KillSession` does: the client is told its session expired; the server
    /// keeps it, with its ephemeral nodes, until its own timeout.
    ClientSideExpiry {
        /// The client process.
        client: u32,
    },
    /// A network partition between two groups, symmetric or one-way (only `a → b` is cut), for a
    /// duration.
    Partition {
        /// One side.
        a: BTreeSet<NodeRef>,
        /// The other side.
        b: BTreeSet<NodeRef>,
        /// Cut only the direction from `a` to `b` (default: both).
        #[serde(default)]
        one_way: bool,
        /// How long it lasts (the heal ends it too).
        duration_ms: u64,
    },
    /// A server process crashes (its peers see the connection reset about 100 ms later).
    /// Killing the leader makes the others elect a new one, in a new epoch.
    KillServer {
        /// The server.
        server: ServerRef,
    },
    /// A crashed server starts again from its disk.
    RestartServer {
        /// The server.
        server: ServerRef,
    },
    /// A client process crashes: its server sees the connection reset; the session lives until
    /// the leader expires it.
    CrashClient {
        /// The client process.
        client: u32,
    },
    /// A stop-the-world GC pause of a client process: no pings, no callbacks; what arrives
    /// meanwhile is processed right after.
    PauseClient {
        /// The client process.
        client: u32,
        /// How long.
        duration_ms: u64,
    },
    /// A follower that applies committed transactions late, so reads on it are stale.
    SlowFollower {
        /// The server.
        server: ServerRef,
        /// The extra delay per transaction.
        delay_ms: u64,
        /// How long.
        duration_ms: u64,
    },
    /// A client's watch notifications reach the application late (a slow event thread).
    DelayWatch {
        /// The client process.
        client: u32,
        /// The delay.
        delay_ms: u64,
        /// How long.
        duration_ms: u64,
    },
    /// The ensemble restarts empty: a bad static scale-out, a wiped data directory. Clients
    /// whose last zxid is ahead of the servers' are refused until they make new sessions.
    DataLoss,
}

/// A fault at a simulated time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedFault {
    /// When, in simulated ms from the start of the run.
    pub at_ms: u64,
    /// What.
    pub fault: Fault,
}

/// The kind of operation a trigger watches for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    /// `create`.
    Create,
    /// `delete`.
    Delete,
    /// `setData`.
    SetData,
    /// `getData`.
    GetData,
    /// `getChildren`.
    GetChildren,
    /// `exists`.
    Exists,
    /// `multi`.
    Multi,
}

/// A ZooKeeper-level event that fires a fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// Only this client's operations, or any client's (when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<u32>,
    /// The operation kind.
    pub op: OpKind,
    /// Only operations on paths starting with this.
    pub path_prefix: String,
    /// Fire on the `nth` matching operation (1 = the first, the default).
    #[serde(default = "first")]
    pub nth: u32,
}

fn first() -> u32 {
    1
}

/// A fault fired by an event. `DropRequest` and `DropReply` act on the matching operation
/// itself; other faults happen right when it is issued.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggeredFault {
    /// When.
    pub when: Trigger,
    /// What.
    pub fault: Fault,
}

/// Random fault rates, per simulated second of the fault phase (a rate left out is 0).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RandomFaults {
    /// Dropped requests per second (spread over the clients).
    pub drop_request_per_s: f64,
    /// Dropped replies per second.
    pub drop_reply_per_s: f64,
    /// Server-side session expiries per second.
    pub expire_session_per_s: f64,
    /// Client-side expiries per second.
    pub client_side_expiry_per_s: f64,
    /// Leader kills (followed by a restart after `restart_after_ms`) per second.
    pub kill_leader_per_s: f64,
    /// Client pauses per second, each of `pause_ms`.
    pub pause_client_per_s: f64,
    /// Client-from-everything partitions per second, each of `partition_ms`.
    pub partition_client_per_s: f64,
    /// Length of a random pause.
    pub pause_ms: u64,
    /// Length of a random partition.
    pub partition_ms: u64,
    /// When a randomly killed server restarts.
    pub restart_after_ms: u64,
}

/// All the faults of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultPlan {
    /// At fixed times.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scripted: Vec<ScriptedFault>,
    /// On ZooKeeper-level events.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub triggered: Vec<TriggeredFault>,
    /// Drawn from the seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random: Option<RandomFaults>,
}

/// The granularity of random fault draws.
const RANDOM_STEP_MS: u64 = 100;

impl RandomFaults {
    /// Draws a schedule for a fault phase of `phase_ms` over `clients` client processes.
    pub fn draw(&self, rng: &mut ChaCha8Rng, phase_ms: u64, clients: u32) -> Vec<ScriptedFault> {
        let mut out = Vec::new();
        let step_s = RANDOM_STEP_MS as f64 / 1000.0;
        let mut at_ms = RANDOM_STEP_MS;
        while at_ms < phase_ms {
            let mut maybe = |rate: f64,
                             out: &mut Vec<ScriptedFault>,
                             make: &dyn Fn(u32) -> Vec<(u64, Fault)>| {
                if rate > 0.0 && clients > 0 && rng.random_bool((rate * step_s).min(1.0)) {
                    let client = rng.random_range(0..clients);
                    out.extend(
                        make(client)
                            .into_iter()
                            .map(|(delay, fault)| ScriptedFault {
                                at_ms: at_ms + delay,
                                fault,
                            }),
                    );
                }
            };
            maybe(self.drop_request_per_s, &mut out, &|client| {
                vec![(0, Fault::DropRequest { client })]
            });
            maybe(self.drop_reply_per_s, &mut out, &|client| {
                vec![(0, Fault::DropReply { client })]
            });
            maybe(self.expire_session_per_s, &mut out, &|client| {
                vec![(0, Fault::ExpireSession { client })]
            });
            maybe(self.client_side_expiry_per_s, &mut out, &|client| {
                vec![(0, Fault::ClientSideExpiry { client })]
            });
            let pause_ms = self.pause_ms;
            maybe(self.pause_client_per_s, &mut out, &|client| {
                vec![(
                    0,
                    Fault::PauseClient {
                        client,
                        duration_ms: pause_ms,
                    },
                )]
            });
            let partition_ms = self.partition_ms;
            maybe(self.partition_client_per_s, &mut out, &|client| {
                let a = BTreeSet::from([NodeRef::Client(client)]);
                let b = BTreeSet::from([NodeRef::AllServers]);
                vec![(
                    0,
                    Fault::Partition {
                        a,
                        b,
                        one_way: false,
                        duration_ms: partition_ms,
                    },
                )]
            });
            let restart_after = self.restart_after_ms;
            maybe(self.kill_leader_per_s, &mut out, &|_| {
                vec![
                    (
                        0,
                        Fault::KillServer {
                            server: ServerRef::Leader,
                        },
                    ),
                    (
                        restart_after,
                        Fault::RestartServer {
                            server: ServerRef::Down,
                        },
                    ),
                ]
            });
            at_ms += RANDOM_STEP_MS;
        }
        out.sort_by_key(|f| f.at_ms);
        out
    }
}
