//! ZooKeeper's own guarantees, judged over a run's history: is the ensemble under the recipes
//! behaving as ZooKeeper promises? A recipe's verdict is only as good as the ensemble under it,
//! so every simulated run is judged by these beside the recipe's properties.
//!
//! ZooKeeper publishes its order: a write's reply carries the zxid of its transaction, a read's
//! reply the zxid its server had applied. So each check here is a pass over the history in the
//! order things happened (the simulator records in real time), not a search for a
//! linearization:
//!
//! | guarantee | class | source | the check |
//! | --- | --- | --- | --- |
//! | [`ONE_LEADER_PER_EPOCH`] | always | Zab (Junqueira, Reed, Serafini, DSN 2011): one established leader per epoch | no two servers record "leading epoch N" for one N (counted apart after the ensemble's data is lost) |
//! | [`ONE_TRANSACTION_PER_ZXID`] | always | ZooKeeper internals: "every change has a unique zxid"; Zab's agreement | no two acknowledged writes carry one zxid, and no two servers' commit logs hold different transactions at one zxid |
//! | [`LINEARIZABLE_WRITES`] | always | Programmer's Guide, "ZooKeeper guarantees"; ZooKeeper paper (Hunt et al., ATC 2010) 2.3 | a write acknowledged before another was issued has the smaller zxid |
//! | [`FIFO_CLIENT_ORDER`] | always | Programmer's Guide, "ZooKeeper guarantees" (sequential consistency: updates from a client are applied in the order sent); ZooKeeper paper 2.3 (FIFO client order) | in the order a session issued them, its answered requests' zxids never go down, and two writes' go up |
//! | [`SINGLE_SYSTEM_IMAGE`] | always | Programmer's Guide, "Consistency Guarantees": a client sees the same view whatever server it connects to, never an older one | within a session, a reply never carries a zxid below one the session had already been answered with before it issued the request |
//! | [`ATOMICITY`] | always | Programmer's Guide, "ZooKeeper guarantees" (atomicity: updates either succeed or fail, no partial results) and the `multi` call | each server's tree at a multi's or a failed write's paths, recorded just before and after it applied it, changes as the agreed order's replay does there: a multi whole or not at all, a failed write not at all (`atomicity`) |
//! | [`DURABILITY`] | always | Programmer's Guide, "ZooKeeper guarantees" (reliability: once applied, a change persists); Zab (a committed transaction survives leader changes) | each acknowledged write is in the servers' agreed order at its zxid, and each server's final state is that order replayed to its last zxid |
//! | [`SEQUENTIALLY_CONSISTENT_READS`] | always | Programmer's Guide, "ZooKeeper guarantees" (sequential consistency); ZooKeeper paper 2.3 (reads served from the local replica) | each answered read equals the tree after the servers' agreed transactions up to its zxid (`reads`, from the commit logs) |
//! | [`SYNC_THEN_READ`] | always | Programmer's Guide, "ZooKeeper guarantees" and the `sync` call; ZooKeeper paper 2.3 (sync makes a server apply the pending writes before the read) | the sync's reply, and each read its session issues after it, carry a zxid at or past every write acknowledged before the sync was issued (`sync`) |
//! | [`SESSION_END_IS_FINAL`] | always | Programmer's Guide, "ZooKeeper Sessions" and "Ephemeral Nodes"; ZooKeeper paper 2.2 | after the close's zxid in the agreed order, no successful reply to the session carries a higher zxid, and no server's final state keeps one of its ephemerals (`sessions`) |
//! | [`SEQUENTIAL_SUFFIXES`] | always | Programmer's Guide, "Sequence Nodes": a counter unique to the parent | the suffixes created under one parent are unique, and grow with the zxid |
//! | [`WATCH_EVENTS_IN_ORDER`] | always | Programmer's Guide, "ZooKeeper Watches" (ordered with respect to replies and other events; the event before the new data) | no reply recorded in a session before an event of zxid `z` carries `z` or more, and one connection's events' zxids never go down (`watches`) |
//! | [`WATCH_FIRES_ONCE`] | always | Programmer's Guide, "ZooKeeper Watches" (a watch is a one-time trigger) | each watch event uses a watch its session set (a read with a watch, answered, pending or lost) and had not used; `NodeDeleted` uses the data and child watches of its path (`once`) |
//! | [`WATCH_FIRES_FOR_THE_FIRST_CHANGE`] | always | Programmer's Guide, "ZooKeeper Watches" (an event is sent when the data the watch was set on changes; a one-time trigger) | in the replay of the agreed order with each read applied at its zxid, every event with a zxid is one a watch of its session fires there, and every first change a watch fires reached the client if its connection answered at that zxid or above (`first`) |
//!
//! Each is judged on what a client saw, so it is sound on any history: an operation whose
//! outcome is unknown (ConnectionLoss) or failed in the client is left out, and real-time
//! order is taken only where the history shows it (one operation completed before the other
//! was issued). A stale read of another client's write is allowed (ZooKeeper's reads are
//! sequentially consistent, not linearizable) and never flagged.
//!
//! Paired with `sometimes` checks, so that a pass is not an empty one: [`SESSION_RESUMED`] (a
//! session reconnected and went on, the case single system image is about) and
//! [`LEADER_CHANGED_UNDER_A_WRITE`] (a server took the lead while a write was in flight).
//!
//! The servers' commit logs ([`CommitLogs`], recorded by the simulator beside the history, not
//! in it) give the order the ensemble agreed on; the checks that need them say "not judged"
//! where there are none (a history from elsewhere) or the data was lost.
//!

mod atomicity;
mod companions;
mod first;
mod once;
mod ops;
mod order;
mod reads;
mod replayed;
mod sessions;
mod sync;
mod views;
mod watches;

use crate::history::{Entries, HistoryEvent};
use crate::properties::{Class, Finding};

pub use atomicity::{recorded as recorded_around, view as paths_view, Around, PathsView};
pub use ops::{operations, Operation};
pub use reads::{container_reaped, CommitLogs, Committed, CONTAINER_REAPED};

/// No two servers lead one epoch.
pub const ONE_LEADER_PER_EPOCH: &str = "one leader per epoch";
/// No two acknowledged writes carry one zxid.
pub const ONE_TRANSACTION_PER_ZXID: &str = "one transaction per zxid";
/// A write acknowledged before another was issued has the smaller zxid.
pub const LINEARIZABLE_WRITES: &str = "linearizable writes";
/// One session's requests take effect in the order issued.
pub const FIFO_CLIENT_ORDER: &str = "FIFO client order";
/// A session never sees an older view than one it has seen.
pub const SINGLE_SYSTEM_IMAGE: &str = "single system image";
/// Once a session has ended, no server answers it and none keeps its ephemerals.
pub const SESSION_END_IS_FINAL: &str = "a session's end is final";
/// A multi applies whole or not at all, and a failed write leaves no trace (module
/// `atomicity`).
pub const ATOMICITY: &str = "atomicity";
/// Nothing acknowledged or applied is rolled back.
pub const DURABILITY: &str = "durability";
/// Each read equals the tree after the agreed transactions up to its zxid.
pub const SEQUENTIALLY_CONSISTENT_READS: &str = "sequentially consistent reads";
/// The sync's reply, and each read behind it, are at or past every write acknowledged before
/// the sync (module `sync`).
pub const SYNC_THEN_READ: &str = "a read after sync is up to date";
/// Sequential suffixes are unique under their parent and grow with the zxid.
pub const SEQUENTIAL_SUFFIXES: &str = "sequential suffixes unique";
/// A client sees a watch event before the data that fired it, and one connection's events in
/// zxid order.
pub const WATCH_EVENTS_IN_ORDER: &str = "watch events in order";
/// Each watch event uses a watch its session set and had not used (module `once`).
pub const WATCH_FIRES_ONCE: &str = "a watch fires once";
/// Each watch fires for the first change after the read that set it (module `first`).
pub const WATCH_FIRES_FOR_THE_FIRST_CHANGE: &str = "a watch fires for the first change";
/// Sometimes: a session reconnected and went on.
pub const SESSION_RESUMED: &str = "a session resumed on a new connection";
/// Sometimes: a server took the lead while a write was in flight.
pub const LEADER_CHANGED_UNDER_A_WRITE: &str = "a leader changed under a write";
/// Sometimes: a read lagged another session's acknowledged write.
pub const STALE_READ_SEEN: &str = "a stale read of another session's write";
/// Sometimes: a write that ended in ConnectionLoss turned out applied.
pub const LOST_REPLY_APPLIED: &str = "a write with a lost reply was applied";
/// Sometimes: a write that ended in ConnectionLoss turned out not applied.
pub const LOST_REPLY_NOT_APPLIED: &str = "a write with a lost reply was not applied";

/// Every guarantee judged, then its `sometimes` companions, in report order.
pub const GUARANTEES: [&str; 19] = [
    ONE_LEADER_PER_EPOCH,
    ONE_TRANSACTION_PER_ZXID,
    SESSION_END_IS_FINAL,
    ATOMICITY,
    DURABILITY,
    LINEARIZABLE_WRITES,
    SINGLE_SYSTEM_IMAGE,
    FIFO_CLIENT_ORDER,
    SEQUENTIALLY_CONSISTENT_READS,
    SYNC_THEN_READ,
    SEQUENTIAL_SUFFIXES,
    WATCH_EVENTS_IN_ORDER,
    WATCH_FIRES_ONCE,
    WATCH_FIRES_FOR_THE_FIRST_CHANGE,
    SESSION_RESUMED,
    LEADER_CHANGED_UNDER_A_WRITE,
    STALE_READ_SEEN,
    LOST_REPLY_APPLIED,
    LOST_REPLY_NOT_APPLIED,
];

/// Why a guarantee cannot be judged on a history that clients alone recorded (a real
/// ensemble's, through a client library that keeps each reply's header zxid to itself): no
/// commit logs, no server roles, only the zxids a create's or a `setData`'s stat gives back.
/// `None` for the guarantees that can: one transaction per zxid (the clients' part), linearizable
/// writes and FIFO client order (over creates and `setData`s), the single system image (from
/// those zxids and every reply's stats), sequential suffixes, and the companions that read
/// only the client's side.
pub fn unjudged_on_client_records(guarantee: &str) -> Option<&'static str> {
    match guarantee {
        ONE_LEADER_PER_EPOCH | LEADER_CHANGED_UNDER_A_WRITE => Some(
            "a server does not publish the epoch it leads (srvr's zxid is its data tree's last, \
             which a new leader keeps until its first write)",
        ),
        SESSION_END_IS_FINAL
        | ATOMICITY
        | DURABILITY
        | SEQUENTIALLY_CONSISTENT_READS
        | WATCH_FIRES_FOR_THE_FIRST_CHANGE
        | LOST_REPLY_APPLIED
        | LOST_REPLY_NOT_APPLIED => Some("needs the servers' commit logs"),
        WATCH_EVENTS_IN_ORDER => Some(
            "a 3.8 server sends no zxid with an event, and a read's reply zxid is not given to \
             the client",
        ),
        STALE_READ_SEEN | SYNC_THEN_READ => Some("a read's reply zxid is not given to the client"),
        _ => None,
    }
}

/// Whether `property` is one of ZooKeeper's guarantees (or their companions), not a recipe's.
pub fn is_guarantee(property: &str) -> bool {
    GUARANTEES.contains(&property)
}

/// Judges every guarantee on `history`, with the servers' commit logs `logs` where they were
/// recorded (empty where not: the guarantees that need them say they were not judged): one
/// finding each, in [`GUARANTEES`]' order.
pub fn judge(history: &impl Entries, logs: &CommitLogs) -> Vec<Finding> {
    let ops = operations(history);
    let agreed = reads::agree(history, logs);
    let clients_zxids = order::one_transaction_per_zxid(history, &ops);
    let [lost_applied, lost_not_applied] = companions::lost_replies(&ops, &agreed);
    let mut watches = first::Tracker::default();
    let [atomicity, durability, reads] =
        replayed::durability_and_reads(history, &ops, logs, &agreed, &mut watches);
    vec![
        order::one_leader_per_epoch(history),
        reads::servers_agree(&agreed, clients_zxids),
        // Before durability, which also sees a kept ephemeral (as a final tree unlike the
        // agreed order's) but cannot name the session.
        sessions::session_end_is_final(history, &ops, logs, &agreed),
        // Before durability too, which sees a multi applied in part only as a final tree unlike
        // the agreed order's.
        atomicity,
        durability,
        order::linearizable_writes(history, &ops),
        order::single_system_image(history, &ops),
        // After the single system image, which names the narrower case first (a reply older
        // than one answered before the request was sent).
        order::fifo_client_order(history, &ops),
        reads,
        sync::sync_then_read(history, &ops),
        order::sequential_suffixes(history, &ops, &agreed),
        watches::watch_events_in_order(history),
        once::watch_fires_once(history),
        first::watch_fires_for_the_first_change(history, &ops, watches),
        session_resumed(history),
        order::leader_changed_under_a_write(history, &ops),
        companions::stale_read_seen(&ops),
        lost_applied,
        lost_not_applied,
    ]
}

/// What a guarantee means, in one sentence (for reports; empty for an unknown name).
pub fn explanation(name: &str) -> &'static str {
    match name {
        ONE_LEADER_PER_EPOCH => "ZooKeeper (Zab): at most one server leads each epoch.",
        ONE_TRANSACTION_PER_ZXID => {
            "ZooKeeper: every change has its own zxid; no two acknowledged writes share one, \
             and no two servers apply different transactions as one."
        }
        LINEARIZABLE_WRITES => {
            "ZooKeeper: writes are linearizable; a write acknowledged before another was issued \
             comes first in the zxid order."
        }
        FIFO_CLIENT_ORDER => {
            "ZooKeeper: one client's requests take effect in the order it sent them; a request \
             sent behind a write sees that write."
        }
        SINGLE_SYSTEM_IMAGE => {
            "ZooKeeper: a session never sees an older view of the tree than one it has seen, \
             whatever server it reconnects to."
        }
        SESSION_END_IS_FINAL => {
            "ZooKeeper: once a session has expired or been closed, no server answers it, and \
             its ephemeral nodes are gone from every server that applied the end."
        }
        ATOMICITY => {
            "ZooKeeper: an update succeeds or fails, with no partial result; a multi applies \
             whole or not at all, and a failed write leaves no trace."
        }
        DURABILITY => {
            "ZooKeeper: a write once acknowledged, or applied by any server, is never rolled \
             back; every server's state is a prefix of the one agreed order."
        }
        SEQUENTIALLY_CONSISTENT_READS => {
            "ZooKeeper: reads are sequentially consistent; each read equals the tree after \
             every transaction up to the zxid its server had applied (a stale read is allowed)."
        }
        SYNC_THEN_READ => {
            "ZooKeeper: after sync, a client's reads are at or past every write acknowledged \
             before the sync was issued, whatever server it reads from."
        }
        SEQUENTIAL_SUFFIXES => {
            "ZooKeeper: a sequential node's suffix comes from a counter of its parent: unique, \
             and growing with the zxid."
        }
        WATCH_EVENTS_IN_ORDER => {
            "ZooKeeper: a client sees a watch event before any reply carrying the change that \
             fired it, and one connection's events come in zxid order."
        }
        WATCH_FIRES_ONCE => {
            "ZooKeeper: a watch is a one-time trigger; each event uses a watch its session set \
             and had not used, and the client must set it again to hear of the next change."
        }
        WATCH_FIRES_FOR_THE_FIRST_CHANGE => {
            "ZooKeeper: a watch fires with the first change after the read that set it; no \
             later change while that one goes by unannounced."
        }
        SESSION_RESUMED => "Sometimes: a session reconnected and went on within the session.",
        LEADER_CHANGED_UNDER_A_WRITE => {
            "Sometimes: a server took the lead while a write was in flight."
        }
        STALE_READ_SEEN => {
            "Sometimes: a read was answered at a zxid below another session's write acknowledged \
             before the read was sent (allowed: reads are not linearizable)."
        }
        LOST_REPLY_APPLIED => {
            "Sometimes: a write that ended in ConnectionLoss is in the servers' commits."
        }
        LOST_REPLY_NOT_APPLIED => {
            "Sometimes: a write that ended in ConnectionLoss is not in the servers' commits."
        }
        _ => "",
    }
}

/// The `sometimes` companion of single system image: a session reconnected and went on.
fn session_resumed(history: &impl Entries) -> Finding {
    let resumed = history.each().filter(|entry| {
        matches!(
            &entry.event,
            HistoryEvent::Session {
                event: zkh_recipes::SessionEvent::Reconnected { .. },
                ..
            }
        )
    });
    let count = resumed.count();
    Finding::new(
        SESSION_RESUMED,
        Class::Sometimes,
        (count == 0).then(|| "no session reconnected".to_owned()),
        || format!("{count} reconnections within a session"),
    )
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_atomicity;
#[cfg(test)]
mod tests_sync_first;
#[cfg(test)]
mod tests_views;
