//! The run history: an append-only log, in simulated time, of everything observable.
//!
//! The simulator appends operations and their outcomes, watch deliveries, session and connection
//! events, injected faults, server role changes, and what recipes report (role changes, side
//! effects on shared resources). Properties and reports read the same log, so its types live
//! here, in `model`, which both engines share.
//!
//! An operation that ended in `ConnectionLoss` is recorded with [`OpOutcome::Unknown`]: it may or
//! may not have been applied, and a checker must allow both.
//!
//! [`History::stable_hash`] is a 64-bit FNV-1a hash over every entry, field by field. Two runs
//! of one seed must give the same hash; the determinism tests compare it.

use serde::{Deserialize, Serialize};
use zkh_recipes::{SessionEvent, SessionId, WatchedEvent, ZkError};

use crate::request::{Reply, Request};
use std::hash::{Hash, Hasher};
use zkh_recipes::symmetry::{Renaming, Symmetric};

/// How an operation ended, as its client saw it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpOutcome {
    /// The server's reply, and the zxid the client saw with it.
    Reply {
        /// The reply.
        reply: Reply,
        /// The zxid in the reply header.
        zxid: i64,
    },
    /// `ConnectionLoss`: the operation may or may not have been applied.
    Unknown,
    /// Failed in the client before it reached a server (e.g. `SessionExpired` known locally).
    Failed(ZkError),
}

impl OpOutcome {
    /// The zxid recorded with a reply whose header's zxid the client did not learn (a real
    /// client's library keeps it; the stats of a create or a `setData` give it back, nothing
    /// else does). The guarantees leave such a reply out of every zxid comparison.
    pub const UNKNOWN_ZXID: i64 = -1;
}

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HistoryEvent {
    /// A client issued a request.
    Invoke {
        /// The client process.
        client: u32,
        /// Its session at the time.
        session: SessionId,
        /// The request id, unique per client.
        xid: u64,
        /// The request.
        request: Request,
    },
    /// The request `xid` of `client` ended.
    Complete {
        /// The client process.
        client: u32,
        /// The request id.
        xid: u64,
        /// How it ended.
        outcome: OpOutcome,
    },
    /// A watch event was delivered to a client. The history keeps the zxid of the transaction
    /// that fired it where the engine knows it (the simulator does), although the application
    /// gets none from a 3.8 server.
    Watch {
        /// The client process.
        client: u32,
        /// The event.
        event: WatchedEvent,
    },
    /// A client's connection or session changed.
    Session {
        /// The client process.
        client: u32,
        /// The event.
        event: SessionEvent,
    },
    /// A fault was injected or healed; `description` is the fault's canonical text.
    Fault {
        /// What happened.
        description: String,
    },
    /// A server changed role (e.g. "leading epoch 2", "following 3", "looking").
    Server {
        /// The server (1-based, as in `myid`).
        server: u32,
        /// The new role.
        role: String,
    },
    /// A recipe reported a role change (e.g. "leader", "holds lock"), with its fencing token.
    Role {
        /// The client process.
        client: u32,
        /// The role, or "none".
        role: String,
        /// The token of the role (the czxid of the node that grants it), if any.
        token: Option<i64>,
    },
    /// A side effect on a shared resource, and whether the resource accepted it.
    SideEffect {
        /// The client process.
        client: u32,
        /// The resource.
        resource: String,
        /// The fencing token presented, if any.
        token: Option<i64>,
        /// Whether the resource accepted it.
        accepted: bool,
        /// What was done.
        detail: String,
    },
    /// A job instance ran one item of a sharded job for one cron cycle.
    Execution {
        /// The client process (the instance).
        client: u32,
        /// The job's root path.
        job: String,
        /// The item.
        item: u32,
        /// The cycle.
        cycle: u64,
        /// The token of the run (the zxid of its claim).
        token: i64,
        /// Whether it ran as a failover of a crashed instance's item.
        failover: bool,
    },
}

impl HistoryEvent {
    /// The fault that empties every server (zxids, sessions and tokens start again after it).
    pub fn is_data_loss(&self) -> bool {
        matches!(self, HistoryEvent::Fault { description } if description == "DataLoss")
    }
}

/// One entry: an event at a simulated time.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Simulated microseconds since the run started.
    pub at_us: u64,
    /// The event.
    pub event: HistoryEvent,
}

/// The append-only history of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct History {
    entries: Vec<HistoryEntry>,
}

/// What a property reads: a run's entries, oldest first. A [`History`] is one; a model checker
/// state lends a view of its own, so that judging a state copies no event.
pub trait Entries {
    /// The entries, oldest first.
    fn each(&self) -> impl Iterator<Item = &HistoryEntry>;
}

impl Entries for History {
    fn each(&self) -> impl Iterator<Item = &HistoryEntry> {
        self.entries.iter()
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

impl History {
    /// An empty history.
    pub fn new() -> History {
        History::default()
    }

    /// Appends `event` at `at_us`.
    ///
    /// # Panics
    /// If `at_us` is earlier than the last entry: simulated time does not go back.
    pub fn push(&mut self, at_us: u64, event: HistoryEvent) {
        if let Some(last) = self.entries.last() {
            assert!(
                at_us >= last.at_us,
                "history time went back: {at_us} after {}",
                last.at_us
            );
        }
        self.entries.push(HistoryEntry { at_us, event });
    }

    /// Every entry, oldest first.
    pub fn entries(&self) -> &[HistoryEntry] {
        &self.entries
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A 64-bit FNV-1a hash of every entry, field by field, in order: stable across runs,
    /// processes and machines for the same code and toolchain. The fields are fed through the
    /// types' own `Hash` (so every field counts), with every integer written little-endian and
    /// `usize` and `isize` as 64 bits, so that no machine's byte order or word size shows.
    /// (It hashed each entry's `Debug` text before; formatting every event was most of what a
    /// sweep's reports cost, see docs/performance.md.)
    pub fn stable_hash(&self) -> u64 {
        let mut hasher = StableHasher(FNV_OFFSET);
        self.entries
            .iter()
            .for_each(|entry| entry.hash(&mut hasher));
        hasher.0
    }
}

/// FNV-1a over the bytes a value's `Hash` writes, with integers in a fixed byte order and width
/// (see [`History::stable_hash`]).
struct StableHasher(u64);

impl Hasher for StableHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.write(&[n]);
    }

    fn write_u16(&mut self, n: u16) {
        self.write(&n.to_le_bytes());
    }

    fn write_u32(&mut self, n: u32) {
        self.write(&n.to_le_bytes());
    }

    fn write_u64(&mut self, n: u64) {
        self.write(&n.to_le_bytes());
    }

    fn write_u128(&mut self, n: u128) {
        self.write(&n.to_le_bytes());
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_i8(&mut self, n: i8) {
        self.write(&n.to_le_bytes());
    }

    fn write_i16(&mut self, n: i16) {
        self.write(&n.to_le_bytes());
    }

    fn write_i32(&mut self, n: i32) {
        self.write(&n.to_le_bytes());
    }

    fn write_i64(&mut self, n: i64) {
        self.write(&n.to_le_bytes());
    }

    fn write_i128(&mut self, n: i128) {
        self.write(&n.to_le_bytes());
    }

    fn write_isize(&mut self, n: isize) {
        self.write_i64(n as i64);
    }
}

impl Symmetric for OpOutcome {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            OpOutcome::Reply { reply, zxid } => {
                reply.hash_renamed(renaming, state);
                zxid.hash(state);
            }
            OpOutcome::Unknown => {}
            OpOutcome::Failed(error) => error.hash(state),
        }
    }
}

/// An event's identities: its client, the sessions and paths in it, and identity tokens in
/// its text (a fault's description names its client as a token).
impl Symmetric for HistoryEvent {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        let client = |client: &u32, state: &mut H| renaming.hash_client(*client, state);
        match self {
            HistoryEvent::Invoke {
                client: c,
                session,
                xid,
                request,
            } => {
                client(c, state);
                session.hash_renamed(renaming, state);
                xid.hash(state);
                request.hash_renamed(renaming, state);
            }
            HistoryEvent::Complete {
                client: c,
                xid,
                outcome,
            } => {
                client(c, state);
                xid.hash(state);
                outcome.hash_renamed(renaming, state);
            }
            HistoryEvent::Watch { client: c, event } => {
                client(c, state);
                event.hash_renamed(renaming, state);
            }
            HistoryEvent::Session { client: c, event } => {
                client(c, state);
                event.hash_renamed(renaming, state);
            }
            HistoryEvent::Fault { description } => description.hash_renamed(renaming, state),
            HistoryEvent::Server { server, role } => {
                server.hash(state);
                role.hash_renamed(renaming, state);
            }
            HistoryEvent::Role {
                client: c,
                role,
                token,
            } => {
                client(c, state);
                role.hash_renamed(renaming, state);
                token.hash(state);
            }
            HistoryEvent::SideEffect {
                client: c,
                resource,
                token,
                accepted,
                detail,
            } => {
                client(c, state);
                (resource, detail).hash_renamed(renaming, state);
                (token, accepted).hash(state);
            }
            HistoryEvent::Execution {
                client: c,
                job,
                item,
                cycle,
                token,
                failover,
            } => {
                client(c, state);
                job.hash_renamed(renaming, state);
                (item, cycle, token, failover).hash(state);
            }
        }
    }
}

impl Symmetric for HistoryEntry {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        self.at_us.hash(state);
        self.event.hash_renamed(renaming, state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_covers_every_entry_and_their_order() {
        let fault = |d: &str| HistoryEvent::Fault {
            description: d.to_owned(),
        };
        let mut a = History::new();
        a.push(1, fault("x"));
        a.push(2, fault("y"));
        let mut b = History::new();
        b.push(1, fault("x"));
        b.push(2, fault("y"));
        assert_eq!(a.stable_hash(), b.stable_hash());
        let mut c = History::new();
        c.push(1, fault("y"));
        c.push(2, fault("x"));
        assert_ne!(a.stable_hash(), c.stable_hash());
        let mut d = History::new();
        d.push(1, fault("x"));
        d.push(3, fault("y"));
        assert_ne!(a.stable_hash(), d.stable_hash(), "time is part of the hash");
        assert_eq!(History::new().stable_hash(), FNV_OFFSET);
        let mut e = History::new();
        e.push(1, fault("x"));
        e.push(2, fault("x"));
        assert_ne!(a.stable_hash(), e.stable_hash(), "every field counts");
    }

    /// The hash is part of every report and sweep summary: a change to it must be deliberate.
    #[test]
    fn the_hash_of_a_fixed_history_is_pinned() {
        let mut h = History::new();
        h.push(
            7,
            HistoryEvent::Role {
                client: 1,
                role: "leader".to_owned(),
                token: Some(42),
            },
        );
        h.push(
            9,
            HistoryEvent::Fault {
                description: "heal".to_owned(),
            },
        );
        assert_eq!(format!("{:016x}", h.stable_hash()), "fe288ef3372aa67e");
    }
}
