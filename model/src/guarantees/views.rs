//! The single system image judged by the stats a session reads, not by its replies' zxids.
//!
//! A real client library may keep the zxid of a reply's header to itself (the `zookeeper-client`
//! crate does), but every create, `setData`, `exists`, `getData` and `getChildren` reply carries
//! the node's `Stat`: the zxid that created the node (`czxid`), that last set its data
//! (`mzxid`), and that last changed its children (`pzxid`). Each only grows while the node
//! lives, and a node created again gets a higher `czxid`. So a session that was shown a node at
//! `(czxid, mzxid, pzxid)` and later, by a request issued after that reply, is shown the same
//! node with a lower `mzxid` or `pzxid`, or an older incarnation (a lower `czxid`), was served
//! from an older view of the tree than one it had seen: what the single system image forbids
//! (Programmer's Guide, "Consistency Guarantees").
//!
//! Not judged here: a node the session saw deleted and then sees again (the delete's reply has
//! no stat, so which incarnation it removed is unknown), and a read that finds no node (it may
//! have been deleted since). Compared within one piece of the run (data loss starts zxids
//! again).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use zkh_recipes::{Response, SessionId, Stat};

use super::ops::Operation;
use crate::history_text::request_text;
use crate::request::Reply;

/// The path and stat a successful reply shows, if it shows one.
fn shown<'h>(op: &Operation<'h>, reply: &'h Reply) -> Option<(&'h str, Stat)> {
    let path = |request: &'h zkh_recipes::Request| match request {
        zkh_recipes::Request::Exists { path, .. }
        | zkh_recipes::Request::GetData { path, .. }
        | zkh_recipes::Request::GetChildren { path, .. }
        | zkh_recipes::Request::SetData { path, .. } => Some(path.as_str()),
        _ => None,
    };
    match reply {
        Reply::Ok(Response::Created(created)) => Some((created.path.as_str(), created.stat)),
        Reply::Ok(
            Response::Exists(Some(stat))
            | Response::Data(_, stat)
            | Response::Children(_, stat)
            | Response::SetData(stat),
        ) => Some((path(op.request)?, *stat)),
        _ => None,
    }
}

/// The view of one node a session has been shown: (czxid, mzxid, pzxid).
type View = (i64, i64, i64);

/// How `later` is older than `seen`, if it is.
fn older(seen: View, later: View) -> Option<&'static str> {
    if later.0 < seen.0 {
        Some("an older incarnation of the node (a lower czxid)")
    } else if later.0 == seen.0 && later.1 < seen.1 {
        Some("older data (a lower mzxid)")
    } else if later.0 == seen.0 && later.2 < seen.2 {
        Some("older children (a lower pzxid)")
    } else {
        None
    }
}

/// The first read of a session, in the order issued, that showed a node older than a reply the
/// session had taken before issuing it: its description and evidence.
pub(super) fn older_node_view<'h>(
    ops: &[Operation<'h>],
    piece: &[usize],
) -> Option<(String, Vec<usize>)> {
    let mut sessions: BTreeMap<SessionId, Vec<&Operation<'h>>> = BTreeMap::new();
    for op in ops.iter().filter(|op| op.reply().is_some()) {
        sessions.entry(op.session).or_default().push(op);
    }
    for (session, issued) in &sessions {
        let mut by_answer = issued.clone();
        by_answer.sort_by_key(|op| op.reply().map_or(usize::MAX, |(at, _)| at));
        let mut next = 0;
        // Per (piece, path): the newest view the session had been shown, and where.
        let mut seen: BTreeMap<(usize, &str), (View, usize, &Operation)> = BTreeMap::new();
        for later in issued {
            while let Some(earlier) = by_answer.get(next) {
                let Some((at, reply)) = earlier.reply() else {
                    break;
                };
                if at >= later.invoked {
                    break;
                }
                if let Some((path, stat)) = shown(earlier, reply) {
                    let view = (stat.czxid, stat.mzxid, stat.pzxid);
                    let entry = seen.entry((piece[at], path)).or_insert((view, at, earlier));
                    let newest = match view.0.cmp(&entry.0 .0) {
                        Ordering::Greater => view,
                        Ordering::Equal => (view.0, view.1.max(entry.0 .1), view.2.max(entry.0 .2)),
                        Ordering::Less => entry.0,
                    };
                    if newest != entry.0 {
                        *entry = (newest, at, earlier);
                    }
                }
                next += 1;
            }
            let (at, reply) = later.reply().expect("only answered operations are listed");
            let Some((path, stat)) = shown(later, reply) else {
                continue;
            };
            let view = (stat.czxid, stat.mzxid, stat.pzxid);
            let Some((before, before_at, earlier)) = seen.get(&(piece[at], path)) else {
                continue;
            };
            if let Some(how) = older(*before, view) {
                let detail = format!(
                    "session {:#x} (client {}) had been shown {path} at (czxid {:#x}, mzxid \
                     {:#x}, pzxid {:#x}), last raised by {}, then {how}, (czxid {:#x}, mzxid {:#x}, pzxid {:#x}), by \
                     {} issued after it: an older view",
                    session.0,
                    later.client,
                    before.0,
                    before.1,
                    before.2,
                    request_text(earlier.request),
                    view.0,
                    view.1,
                    view.2,
                    request_text(later.request),
                );
                return Some((detail, vec![*before_at, later.invoked, at]));
            }
        }
    }
    None
}
