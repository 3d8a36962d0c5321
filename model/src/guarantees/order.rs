//! The guarantees ZooKeeper's published order makes checkable by one pass each: leaders and
//! epochs, zxids of writes, a session's view, sequential suffixes.
//!
//! Everything is counted within one *piece* of the run: a data-loss fault empties every server
//! and ZooKeeper starts again from zxid 0 and epoch 0, so orders before and after it are not
//! compared.

use std::collections::BTreeMap;

use zkh_recipes::path::parent_of;
use zkh_recipes::types::sequence_suffix;
use zkh_recipes::{Request, Response};

use super::ops::Operation;
use super::reads::{Agreed, Committed};
use super::{
    FIFO_CLIENT_ORDER, LEADER_CHANGED_UNDER_A_WRITE, LINEARIZABLE_WRITES, ONE_LEADER_PER_EPOCH,
    ONE_TRANSACTION_PER_ZXID, SEQUENTIAL_SUFFIXES, SINGLE_SYSTEM_IMAGE,
};
use crate::history::{Entries, HistoryEvent};
use crate::history_text::request_text;
use crate::properties::{Class, Finding};
use crate::request::Reply;

/// The piece of the run each entry belongs to: how many data-loss faults came before it.
pub(super) fn pieces(history: &impl Entries) -> Vec<usize> {
    let mut piece = 0;
    history
        .each()
        .map(|entry| {
            if entry.event.is_data_loss() {
                piece += 1;
            }
            piece
        })
        .collect()
}

/// The epoch a server role names, if it leads: `leading epoch N`.
fn leading_epoch(role: &str) -> Option<u64> {
    role.strip_prefix("leading epoch ")?.parse().ok()
}

/// **One leader per epoch** (always).
pub(super) fn one_leader_per_epoch(history: &impl Entries) -> Finding {
    let piece = pieces(history);
    let mut leaders: BTreeMap<(usize, u64), (u32, usize)> = BTreeMap::new();
    let mut violation = None;
    for (index, entry) in history.each().enumerate() {
        let HistoryEvent::Server { server, role } = &entry.event else {
            continue;
        };
        let Some(epoch) = leading_epoch(role) else {
            continue;
        };
        match leaders.get(&(piece[index], epoch)) {
            Some((first, at)) if first != server => {
                violation = Some((
                    format!("servers {first} and {server} both led epoch {epoch}"),
                    vec![*at, index],
                ));
                break;
            }
            Some(_) => {}
            None => {
                leaders.insert((piece[index], epoch), (*server, index));
            }
        }
    }
    let epochs = leaders.len();
    finding(ONE_LEADER_PER_EPOCH, history, violation, || {
        format!("{epochs} epochs, each led by one server")
    })
}

/// **One transaction per zxid** (always): no two acknowledged writes carry one zxid.
pub(super) fn one_transaction_per_zxid(history: &impl Entries, ops: &[Operation]) -> Finding {
    let piece = pieces(history);
    let mut seen: BTreeMap<(usize, i64), &Operation> = BTreeMap::new();
    let mut violation = None;
    for op in ops {
        let (Some(zxid), Some((answered, ..))) = (op.applied_write(), &op.answered) else {
            continue;
        };
        if let Some(first) = seen.insert((piece[*answered], zxid), op) {
            violation = Some((
                format!(
                    "two writes acknowledged with zxid {zxid:#x}: client {}'s {} and client {}'s \
                     {}",
                    first.client,
                    request_text(first.request),
                    op.client,
                    request_text(op.request)
                ),
                vec![first.invoked, *answered],
            ));
            break;
        }
    }
    let writes = seen.len();
    finding(ONE_TRANSACTION_PER_ZXID, history, violation, || {
        format!("{writes} acknowledged writes, each with its own zxid")
    })
}

/// **Linearizable writes** (always): a write acknowledged before another was issued has the
/// smaller zxid.
pub(super) fn linearizable_writes(history: &impl Entries, ops: &[Operation]) -> Finding {
    let piece = pieces(history);
    let writes: Vec<&Operation> = ops
        .iter()
        .filter(|op| op.applied_write().is_some())
        .collect();
    let violation = before_in_real_time(&writes, &piece, |earlier, later| {
        let (earlier_zxid, later_zxid) = (zxid(earlier), zxid(later));
        (later_zxid <= earlier_zxid).then(|| {
            format!(
                "client {}'s {} was acknowledged with zxid {earlier_zxid:#x} before client {}'s {} \
                 was issued, which was acknowledged with zxid {later_zxid:#x}",
                earlier.client,
                request_text(earlier.request),
                later.client,
                request_text(later.request)
            )
        })
    });
    let count = writes.len();
    finding(LINEARIZABLE_WRITES, history, violation, || {
        format!("{count} acknowledged writes in an order that agrees with real time")
    })
}

/// **Single system image** (always): within a session, a reply never carries a zxid below one
/// the session was answered with before it issued the request; and, read from the stats where
/// replies carry no zxid, never shows a node older than the session had been shown
/// ([`super::views`]).
pub(super) fn single_system_image(history: &impl Entries, ops: &[Operation]) -> Finding {
    let piece = pieces(history);
    let mut sessions: BTreeMap<_, Vec<&Operation>> = BTreeMap::new();
    for op in ops.iter().filter(|op| op.answered.is_some()) {
        sessions.entry(op.session).or_default().push(op);
    }
    let answered_sessions: std::collections::BTreeSet<_> = (ops.iter())
        .filter(|op| op.reply().is_some())
        .map(|op| op.session)
        .collect();
    let mut violation = None;
    for (session, answered) in &sessions {
        violation = before_in_real_time(answered, &piece, |earlier, later| {
            let (earlier_zxid, later_zxid) = (zxid(earlier), zxid(later));
            (later_zxid < earlier_zxid).then(|| {
                format!(
                    "session {:#x} (client {}) was answered at zxid {earlier_zxid:#x} ({}), then \
                     at zxid {later_zxid:#x} ({}), an older view",
                    session.0,
                    later.client,
                    request_text(earlier.request),
                    request_text(later.request)
                )
            })
        });
        if violation.is_some() {
            break;
        }
    }
    if violation.is_none() {
        violation = super::views::older_node_view(ops, &piece);
    }
    let count = answered_sessions.len();
    finding(SINGLE_SYSTEM_IMAGE, history, violation, || {
        format!("{count} sessions, none answered with an older view than it had seen")
    })
}

/// **FIFO client order** (always): one session's requests take effect in the order it issued
/// them. In the order issued, a session's answered requests carry zxids that never go down, and
/// a write's is above every zxid answered to a request issued before it: a request pipelined
/// behind a write sees that write (ZooKeeper's CommitProcessor holds a session's reads until its
/// earlier writes have committed). Unlike the single system image, this holds between requests
/// in flight together, not only between one answered and one issued later.
pub(super) fn fifo_client_order(history: &impl Entries, ops: &[Operation]) -> Finding {
    let piece = pieces(history);
    let mut sessions: BTreeMap<_, Vec<&Operation>> = BTreeMap::new();
    for op in ops.iter().filter(|op| op.answered.is_some()) {
        sessions.entry(op.session).or_default().push(op);
    }
    let mut violation = None;
    'sessions: for (session, answered) in &sessions {
        // The earlier request with the highest zxid, per piece of the run.
        let mut highest: BTreeMap<usize, &Operation> = BTreeMap::new();
        for later in answered {
            let at = later.answered.as_ref().map_or(0, |(at, ..)| *at);
            if let Some(earlier) = highest.get(&piece[at]) {
                let (earlier_zxid, later_zxid) = (zxid(earlier), zxid(later));
                let behind = later_zxid < earlier_zxid
                    || (later_zxid == earlier_zxid && later.request.is_write());
                if behind {
                    let detail = format!(
                        "session {:#x} (client {}) issued {} and then {}, and they took effect \
                         at zxids {earlier_zxid:#x} and {later_zxid:#x}: out of order",
                        session.0,
                        later.client,
                        request_text(earlier.request),
                        request_text(later.request)
                    );
                    let earlier_at = earlier.answered.as_ref().map_or(0, |(at, ..)| *at);
                    violation =
                        Some((detail, vec![earlier.invoked, later.invoked, earlier_at, at]));
                    break 'sessions;
                }
            }
            let best = highest.entry(piece[at]).or_insert(later);
            if zxid(later) > zxid(best) {
                *best = later;
            }
        }
    }
    let count = sessions.len();
    finding(FIFO_CLIENT_ORDER, history, violation, || {
        format!("{count} sessions, each one's requests in effect in the order issued")
    })
}

/// The acknowledged sequential creates under one parent: (zxid, suffix, operation).
type Creates<'a> = Vec<(i64, i32, &'a Operation<'a>)>;

/// **Sequential suffixes unique** (always): under one parent, the suffixes of acknowledged
/// sequential creates are unique and grow with the zxid.
///
/// "One parent" is one life of the parent node: a parent deleted and made again starts its
/// counter at zero, as ZooKeeper's does (the container manager reaps a recipe's empty parent,
/// which the recipe then makes again). A parent's lives are told apart by the zxids at which it
/// was deleted: a client's acknowledged delete, or the leader's reaping in the servers' agreed
/// order (`agreed`, where there is one).
pub(super) fn sequential_suffixes(
    history: &impl Entries,
    ops: &[Operation],
    agreed: &Agreed<'_>,
) -> Finding {
    let piece = pieces(history);
    let mut deleted: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for op in ops {
        if let (Request::Delete { path, .. }, Some(zxid)) = (&op.request, op.applied_write()) {
            deleted.entry(path.as_str()).or_default().push(zxid);
        }
    }
    if let Ok(order) = agreed {
        for (zxid, txn) in order {
            if let Committed::DeleteContainer {
                path,
                deleted: true,
            } = txn
            {
                deleted.entry(path.as_str()).or_default().push(*zxid);
            }
        }
    }
    // The life of `parent` a child created at `zxid` was made in: the deletions before it.
    let life = |parent: &str, zxid: i64| {
        (deleted.get(parent)).map_or(0, |at| at.iter().filter(|d| **d < zxid).count())
    };
    let mut parents: BTreeMap<(usize, &str, usize), Creates> = BTreeMap::new();
    for op in ops {
        let Request::Create { mode, .. } = &op.request else {
            continue;
        };
        let Some((answered, Reply::Ok(Response::Created(created)), zxid)) = &op.answered else {
            continue;
        };
        let name = &created.path[parent_of(&created.path).len()..];
        if let (true, Some(suffix)) = (mode.is_sequential(), sequence_suffix(name)) {
            let parent = parent_of(&created.path);
            let key = (piece[*answered], parent, life(parent, *zxid));
            parents.entry(key).or_default().push((*zxid, suffix, op));
        }
    }
    let mut violation = None;
    for ((_, parent, _), creates) in &mut parents {
        creates.sort_by_key(|(zxid, ..)| *zxid);
        for pair in creates.windows(2) {
            let ((_, first, a), (_, second, b)) = (pair[0], pair[1]);
            if second <= first {
                violation = Some((
                    format!(
                        "under {parent}, suffix {second:010} was created after suffix \
                         {first:010} ({} then {})",
                        request_text(a.request),
                        request_text(b.request)
                    ),
                    vec![a.invoked, b.invoked],
                ));
                break;
            }
        }
        if violation.is_some() {
            break;
        }
    }
    let count: usize = parents.values().map(Vec::len).sum();
    finding(SEQUENTIAL_SUFFIXES, history, violation, || {
        format!("{count} sequential nodes, each parent's suffixes unique and growing")
    })
}

/// **A leader changed under a write** (sometimes): a server took the lead while a write was
/// issued and not yet answered.
pub(super) fn leader_changed_under_a_write(history: &impl Entries, ops: &[Operation]) -> Finding {
    let leads: Vec<usize> = (history.each().enumerate())
        .filter(|(_, e)| matches!(&e.event, HistoryEvent::Server { role, .. } if leading_epoch(role).is_some()))
        .map(|(index, _)| index)
        .collect();
    let happened = ops.iter().filter(|op| op.request.is_write()).any(|op| {
        let ended = op.answered.as_ref().map_or(usize::MAX, |(at, ..)| *at);
        leads.iter().any(|lead| op.invoked < *lead && *lead < ended)
    });
    Finding::new(
        LEADER_CHANGED_UNDER_A_WRITE,
        Class::Sometimes,
        (!happened).then(|| "no server took the lead with a write in flight".to_owned()),
        || "a server took the lead with a write in flight".to_owned(),
    )
}

/// The zxid an answered operation's reply carried.
fn zxid(op: &Operation) -> i64 {
    op.answered.as_ref().map_or(0, |(_, _, zxid)| *zxid)
}

/// Calls `judge(earlier, later)` for each answered `later` of `ops` (in the order issued)
/// against the answered `earlier` of the same piece with the highest zxid among those answered
/// before `later` was issued; returns the first violation it names, with its evidence.
fn before_in_real_time(
    ops: &[&Operation],
    piece: &[usize],
    mut judge: impl FnMut(&Operation, &Operation) -> Option<String>,
) -> Option<(String, Vec<usize>)> {
    let mut by_answer: Vec<&Operation> = ops.to_vec();
    by_answer.sort_by_key(|op| op.answered.as_ref().map_or(usize::MAX, |(at, ..)| *at));
    let mut next = 0;
    // The highest zxid answered so far in each piece, and its operation.
    let mut highest: BTreeMap<usize, &Operation> = BTreeMap::new();
    for later in ops {
        while let Some(earlier) = by_answer.get(next) {
            let Some((at, ..)) = &earlier.answered else {
                break;
            };
            if *at >= later.invoked {
                break;
            }
            let best = highest.entry(piece[*at]).or_insert(earlier);
            if zxid(earlier) > zxid(best) {
                *best = earlier;
            }
            next += 1;
        }
        let Some((answered, ..)) = &later.answered else {
            continue;
        };
        let Some(earlier) = highest.get(&piece[*answered]) else {
            continue;
        };
        if let Some(detail) = judge(earlier, later) {
            let earlier_at = earlier.answered.as_ref().map_or(0, |(at, ..)| *at);
            return Some((detail, vec![earlier_at, later.invoked, *answered]));
        }
    }
    None
}

/// A finding of an `always` guarantee: its violation with evidence, or its summary.
fn finding(
    property: &'static str,
    history: &impl Entries,
    violation: Option<(String, Vec<usize>)>,
    summary: impl FnOnce() -> String,
) -> Finding {
    match violation {
        Some((detail, evidence)) => Finding::new(property, Class::Always, Some(detail), summary)
            .with_evidence(history, evidence),
        None => Finding::new(property, Class::Always, None, summary),
    }
}
