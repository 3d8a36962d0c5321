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
    /// The leader runs its container manager now, whatever its interval: every container that
    /// has had children and has none is deleted (a recipe's parent between two users).
    ReapContainers,
}

/// ZooKeeper's default `znode.container.checkIntervalMs`, a minute: how often the leader's
/// container manager runs unless a scenario says otherwise ([`Fault::ReapContainers`] runs it
/// at once).
pub const CONTAINER_CHECK_INTERVAL_MS: u64 = 60_000;

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
    /// Swarm testing: each seed first draws which of the kinds above are on (each with even
    /// odds) and scales each rate, and the pause's and partition's lengths, by a factor from
    /// 1/4 to 2, so a sweep mixes kinds, rates and lengths that fixed rates never combine.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub swarm: bool,
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
    /// This seed's rates under swarm testing: each kind on or off, each rate and length scaled
    /// (see [`RandomFaults::swarm`]); the rates as given without it.
    pub fn for_this_seed(&self, rng: &mut ChaCha8Rng) -> RandomFaults {
        if !self.swarm {
            return self.clone();
        }
        let mut scaled = |rate: f64| {
            let on = rng.random_bool(0.5);
            let factor = rng.random_range(0.25..=2.0);
            if on {
                rate * factor
            } else {
                0.0
            }
        };
        let drop_request_per_s = scaled(self.drop_request_per_s);
        let drop_reply_per_s = scaled(self.drop_reply_per_s);
        let expire_session_per_s = scaled(self.expire_session_per_s);
        let client_side_expiry_per_s = scaled(self.client_side_expiry_per_s);
        let kill_leader_per_s = scaled(self.kill_leader_per_s);
        let pause_client_per_s = scaled(self.pause_client_per_s);
        let partition_client_per_s = scaled(self.partition_client_per_s);
        let mut length = |ms: u64| (ms as f64 * rng.random_range(0.25..=2.0)).round() as u64;
        RandomFaults {
            drop_request_per_s,
            drop_reply_per_s,
            expire_session_per_s,
            client_side_expiry_per_s,
            kill_leader_per_s,
            pause_client_per_s,
            partition_client_per_s,
            pause_ms: length(self.pause_ms),
            partition_ms: length(self.partition_ms),
            restart_after_ms: self.restart_after_ms,
            swarm: false,
        }
    }

    /// Draws a schedule for a fault phase of `phase_ms` over `clients` client processes (under
    /// swarm testing, from this seed's rates: [`RandomFaults::for_this_seed`]).
    pub fn draw(&self, rng: &mut ChaCha8Rng, phase_ms: u64, clients: u32) -> Vec<ScriptedFault> {
        if self.swarm {
            return self.for_this_seed(rng).draw(rng, phase_ms, clients);
        }
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

#[cfg(test)]
mod swarm_tests {
    use super::*;
    use rand::SeedableRng;

    fn harsh(swarm: bool) -> RandomFaults {
        RandomFaults {
            drop_request_per_s: 0.5,
            drop_reply_per_s: 0.5,
            expire_session_per_s: 0.05,
            client_side_expiry_per_s: 0.05,
            kill_leader_per_s: 0.05,
            pause_client_per_s: 0.2,
            partition_client_per_s: 0.1,
            pause_ms: 6000,
            partition_ms: 5000,
            restart_after_ms: 2000,
            swarm,
        }
    }

    fn rates(plan: &RandomFaults) -> [f64; 7] {
        [
            plan.drop_request_per_s,
            plan.drop_reply_per_s,
            plan.expire_session_per_s,
            plan.client_side_expiry_per_s,
            plan.kill_leader_per_s,
            plan.pause_client_per_s,
            plan.partition_client_per_s,
        ]
    }

    #[test]
    fn without_swarm_the_rates_are_the_rates_given() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        assert_eq!(harsh(false).for_this_seed(&mut rng), harsh(false));
    }

    #[test]
    fn swarm_turns_each_kind_off_on_some_seeds_and_scales_it_on_others() {
        let given = rates(&harsh(true));
        let mut off = [0; 7];
        let mut on = [0; 7];
        let mut mixes = std::collections::BTreeSet::new();
        let mut pauses = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let drawn = harsh(true).for_this_seed(&mut ChaCha8Rng::seed_from_u64(seed));
            let again = harsh(true).for_this_seed(&mut ChaCha8Rng::seed_from_u64(seed));
            assert_eq!(drawn, again, "seed {seed}: the same seed, the same rates");
            assert!(!drawn.swarm);
            let mut mix = Vec::new();
            for (kind, (rate, base)) in rates(&drawn).iter().zip(given).enumerate() {
                if *rate == 0.0 {
                    off[kind] += 1;
                } else {
                    assert!(
                        (base / 4.0..=base * 2.0).contains(rate),
                        "kind {kind}: {rate}"
                    );
                    on[kind] += 1;
                }
                mix.push(*rate > 0.0);
            }
            mixes.insert(mix);
            assert!(
                (1500..=12000).contains(&drawn.pause_ms),
                "{}",
                drawn.pause_ms
            );
            pauses.insert(drawn.pause_ms);
        }
        for kind in 0..7 {
            assert!(
                off[kind] > 50 && on[kind] > 50,
                "kind {kind}: off {off:?} on {on:?}"
            );
        }
        assert!(
            mixes.len() > 60,
            "only {} mixes of kinds in 200 seeds",
            mixes.len()
        );
        assert!(
            pauses.len() > 100,
            "the pause length varies: {}",
            pauses.len()
        );
    }

    #[test]
    fn a_kind_swarm_turned_off_is_never_drawn() {
        let mut turned_off = 0;
        for seed in 0..50 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let rates = harsh(true).for_this_seed(&mut rng.clone());
            let drawn = harsh(true).draw(&mut rng, 20_000, 3);
            let pauses = drawn
                .iter()
                .filter(|f| matches!(f.fault, Fault::PauseClient { .. }))
                .count();
            if rates.pause_client_per_s == 0.0 {
                assert_eq!(pauses, 0, "seed {seed}: pauses drawn while off");
                turned_off += 1;
            }
        }
        assert!(
            turned_off > 10,
            "pauses were off on only {turned_off} of 50 seeds"
        );
    }
}
