//! Faults of the simulated servers' own code, for tests only: each one breaks one of
//! ZooKeeper's guarantees on purpose, so that a test can show the guarantee checker
//! (`zkh_model::guarantees`) catches it. They are the checker's positive controls; none is
//! reachable from a scenario file.

use std::collections::BTreeSet;

use zkh_model::zookeeper::WatchSet;
use zkh_model::{Applied, Notification, Reply, ZkModel};
use zkh_recipes::{CreateMode, EventType, Request, SessionId};

/// Faults of the servers' own code, each breaking one of ZooKeeper's guarantees on purpose: the
/// positive controls of the guarantee checker (`zkh_model::guarantees`). No scenario file can
/// set one; tests do, through `WorkloadConfig::defects`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerDefects {
    /// Serve a client whose last seen zxid is ahead of this server's, where ZooKeeper refuses
    /// it until the server has caught up: the client can see an older view than it has seen,
    /// breaking the single system image.
    pub serve_clients_ahead: bool,
    /// Answer a write with its epoch's first zxid in the reply's header instead of its
    /// transaction's: two acknowledged writes carry one zxid, breaking one transaction per
    /// zxid.
    pub epoch_zxid_in_write_replies: bool,
    /// Label a read's reply with the newest zxid this server has heard of (logged, or
    /// committed and waiting to be applied) instead of the one it has applied: the answer
    /// comes from an older tree than its zxid says, breaking sequentially consistent reads.
    pub stamp_reads_with_heard_zxid: bool,
    /// A new leader drops what it logged after its last commit instead of committing it:
    /// a write the old leader committed, applied and acknowledged before its commits went out
    /// is lost with it, breaking durability.
    pub leader_drops_logged_proposals: bool,
    /// Answer a session's read at once even while a write it sent earlier is still to be
    /// applied here (the simulator's own behaviour until FIFO client order was judged): the
    /// read does not see the write, breaking FIFO client order.
    pub reads_pass_own_writes: bool,
    /// Expire a session without deleting its ephemeral nodes: they outlive the session that
    /// owned them, breaking "a session's end is final".
    pub keep_ephemerals_on_expiry: bool,
    /// Name a sequential node after its parent's current number of children instead of the
    /// parent's counter of creations: a suffix is used again once a child is deleted, breaking
    /// "sequential suffixes unique".
    pub sequence_from_child_count: bool,
    /// Hold a connection's watch events until the next reply on that connection has gone out:
    /// the client gets the data before the event that announces it, breaking "watch events in
    /// order".
    pub events_after_the_next_reply: bool,
    /// Keep a data or child watch after it fires (set it again at once) instead of dropping
    /// it: the next change fires it again though the client never set it again, breaking "a
    /// watch fires once".
    pub watches_kept_after_firing: bool,
    /// Let the first change a data or child watch sees go by unannounced (the watch kept, and
    /// fired by the next change instead): the client hears of a later change than the first,
    /// breaking "a watch fires for the first change".
    pub first_change_unannounced: bool,
    /// A follower answers a `sync` at once from its own state instead of asking the leader how
    /// far to catch up: a read behind the sync can miss a write acknowledged before it,
    /// breaking "a read after sync is up to date".
    pub sync_answered_locally: bool,
    /// An established leader commits a proposal on its own acknowledgement and keeps leading
    /// when its followers fall silent, instead of waiting for a quorum and stepping down: cut
    /// off from the rest, it goes on acknowledging writes at its old epoch's zxids while the
    /// others elect a new leader and acknowledge theirs at the new epoch's, breaking
    /// "linearizable writes".
    pub leader_commits_alone: bool,
    /// A leader that has not heard a quorum for `sync_limit` ticks starts the next epoch on its
    /// own and serves in it at once, instead of stepping down to look for a quorum: cut off
    /// from the rest, it leads an epoch no quorum took, while the others elect a leader of that
    /// same epoch, breaking "one leader per epoch".
    pub leads_next_epoch_alone: bool,
    /// Apply a failed `multi`'s operations before the one that failed (as one transaction, at
    /// the multi's zxid) and answer the failure all the same: the failed multi leaves part of
    /// itself in the tree, breaking "atomicity".
    pub multi_applied_in_part: bool,
}

/// The test-only defect [`ServerDefects::multi_applied_in_part`]: `request` applied to `model`
/// as the model would, except that a `multi` failing at its operation `k > 0` applies its
/// operations `1..k` (which succeeded in turn) and still answers the failure.
pub(super) fn apply_in_part(model: &mut ZkModel, session: SessionId, request: &Request) -> Applied {
    let Request::Multi(ops) = request else {
        return model.apply(session, request);
    };
    let mut trial = model.clone();
    let whole = trial.apply(session, request);
    match whole.reply {
        Reply::MultiFailed { index, .. } if index > 0 => {
            let part = model.apply(session, &Request::Multi(ops[..index].to_vec()));
            Applied {
                reply: whole.reply,
                zxid: part.zxid,
                notifications: part.notifications,
            }
        }
        _ => {
            *model = trial;
            whole
        }
    }
}

/// The test-only defect [`ServerDefects::sequence_from_child_count`]: a sequential create made
/// a plain one, its name suffixed with the parent's number of children (the model takes the
/// parent's counter of creations, as ZooKeeper does). Any other request is as it was.
pub(super) fn named_by_child_count(model: &ZkModel, request: Request) -> Request {
    let Request::Create { path, data, mode } = &request else {
        return request;
    };
    let plain = match mode {
        CreateMode::EphemeralSequential => CreateMode::Ephemeral,
        CreateMode::PersistentSequential => CreateMode::Persistent,
        _ => return request,
    };
    let parent = &path[..path.rfind('/').unwrap_or(0).max(1)];
    let Some(children) = model.tree().get(parent).map(|node| node.children.len()) else {
        return request;
    };
    Request::Create {
        path: format!("{path}{children:010}"),
        data: data.clone(),
        mode: plain,
    }
}

/// The test-only defect [`ServerDefects::watches_kept_after_firing`]: each watch that just fired
/// set again, as if the client had asked (no event fires: the node is as the watch last saw it).
///
/// [`ServerDefects::watches_kept_after_firing`]: ServerDefects::watches_kept_after_firing
pub(super) fn keep_watches(model: &mut ZkModel, fired: &[Notification]) {
    for notification in fired {
        let path = notification.event.path.clone();
        let mut again = WatchSet::default();
        match notification.event.event_type {
            EventType::NodeDataChanged => again.data.insert(path),
            EventType::NodeChildrenChanged => again.child.insert(path),
            _ => continue,
        };
        model.set_watches(notification.session, i64::MAX, &again);
    }
}

/// The test-only defect [`ServerDefects::first_change_unannounced`]: of the watches `fired`, a
/// data or child watch whose first change this is is set again and left out (noted in
/// `passed`); one that let its first change go by fires now. The events to send.
///
/// [`ServerDefects::first_change_unannounced`]: ServerDefects::first_change_unannounced
pub(super) fn pass_first_changes(
    model: &mut ZkModel,
    fired: Vec<Notification>,
    passed: &mut BTreeSet<(zkh_recipes::SessionId, String, EventType)>,
) -> Vec<Notification> {
    let mut sent = Vec::new();
    for notification in fired {
        let event = &notification.event;
        let key = (notification.session, event.path.clone(), event.event_type);
        let again = matches!(
            event.event_type,
            EventType::NodeDataChanged | EventType::NodeChildrenChanged
        );
        if !again || passed.remove(&key) {
            sent.push(notification);
        } else {
            keep_watches(model, std::slice::from_ref(&notification));
            passed.insert(key);
        }
    }
    sent
}
