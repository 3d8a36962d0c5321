//! **Atomicity** (Programmer's Guide, "ZooKeeper guarantees": updates either succeed or fail,
//! with no partial results; the `multi` call: all of its operations succeed or none is
//! applied).
//!
//! A server's final tree shows that *something* was applied wrongly (durability compares it
//! with the agreed order's) but not *what*: by then later transactions have written over the
//! evidence. So the simulated servers record, for each `multi` and each write that failed, their
//! tree at the paths the write names (and those paths' parents) just before and just after they
//! applied it: an [`Around`]. The replay of the agreed order computes the same two views at the
//! same zxid. Where the server's view before matches the replay's and its view after does not,
//! that one transaction was applied differently: in part, or a failed one leaving a trace. Where
//! the views before already differ, an earlier transaction diverged and is not this one's fault
//! (durability and the reads judge that), so the record is not compared.
//!
//! A view holds each node without its list of children: the parent's child counts (`cversion`,
//! `pzxid`, its counter of creations) say whether a child came or went.
//!
//! Not judged: a history without commit logs (a real client's), a run whose data was lost, and
//! the records past the point where the replay could not apply the agreed order as the servers
//! did. ZooKeeper itself checks a digest of the whole tree after each transaction
//! (`ZOOKEEPER-3114`); recording the paths a write names is narrower and much cheaper, and is
//! enough to say which transaction broke the tree.

use std::collections::{BTreeMap, BTreeSet};

use zkh_recipes::{Op, Request, SessionId};

use super::ATOMICITY;
use crate::history_text::request_text;
use crate::properties::{Class, Finding};
use crate::request::Reply;
use crate::tree::Node;
use crate::zookeeper::ZkModel;

/// A tree at some paths: each path with its node (its children left out), or `None` where there
/// is none.
pub type PathsView = Vec<(String, Option<Node>)>;

/// A server's tree at a write's paths just before and just after it applied the write, as zxid
/// `zxid`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Around {
    /// The write's zxid.
    pub zxid: i64,
    /// Before it applied.
    pub before: PathsView,
    /// After it applied.
    pub after: PathsView,
}

/// Whether a server records an [`Around`] for a write that got `reply`: every `multi`, and
/// every write that failed.
pub fn recorded(request: &Request, reply: &Reply) -> bool {
    matches!(request, Request::Multi(_)) || !matches!(reply, Reply::Ok(_))
}

/// The paths a write names, and their parents, in order.
fn paths_of(request: &Request) -> BTreeSet<&str> {
    let named: Vec<&str> = match request {
        Request::Create { path, .. }
        | Request::Delete { path, .. }
        | Request::SetData { path, .. } => vec![path],
        Request::Multi(ops) => ops
            .iter()
            .map(|op| match op {
                Op::Check { path, .. }
                | Op::Create { path, .. }
                | Op::Delete { path, .. }
                | Op::SetData { path, .. } => path.as_str(),
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut paths = BTreeSet::new();
    // A malformed path (the server refused it) names nothing to look at.
    for path in named.into_iter().filter(|p| p.starts_with('/')) {
        paths.insert(path);
        if path != "/" {
            paths.insert(zkh_recipes::path::parent_of(path));
        }
    }
    paths
}

/// `model`'s tree at the paths `request` names and their parents.
pub fn view(model: &ZkModel, request: &Request) -> PathsView {
    let tree = model.tree();
    paths_of(request)
        .into_iter()
        .map(|path| (path.to_owned(), tree.get(path).map(Node::without_children)))
        .collect()
}

/// The servers' records, and what the replay found comparing them.
#[derive(Default)]
pub(super) struct Atomic<'l> {
    /// By zxid: each server's record of the transaction, with its id.
    records: BTreeMap<i64, Vec<(u32, &'l Around)>>,
    /// Records compared with the replay.
    compared: usize,
    /// The first transaction a server applied otherwise than the agreed order does, in words.
    violation: Option<String>,
}

impl<'l> Atomic<'l> {
    /// The records of every server (`around[i]` is server `i + 1`'s).
    pub(super) fn new(around: &'l [Vec<Around>]) -> Self {
        let mut records: BTreeMap<i64, Vec<(u32, &Around)>> = BTreeMap::new();
        for (server, list) in (1..).zip(around) {
            for record in list {
                records
                    .entry(record.zxid)
                    .or_default()
                    .push((server, record));
            }
        }
        Atomic {
            records,
            ..Atomic::default()
        }
    }

    /// Whether some server recorded the transaction at `zxid` (and none has been caught yet).
    pub(super) fn wants(&self, zxid: i64) -> bool {
        self.violation.is_none() && self.records.contains_key(&zxid)
    }

    /// Compares the servers' records at `zxid` with the replay's views of `session`'s
    /// `request`, which the agreed order answers `reply`.
    pub(super) fn compare(
        &mut self,
        zxid: i64,
        (session, request, reply): (SessionId, &Request, &Reply),
        before: &PathsView,
        after: &PathsView,
    ) {
        for (server, record) in self.records.get(&zxid).into_iter().flatten() {
            if record.before != *before {
                continue;
            }
            self.compared += 1;
            let Some(path) = differing(&record.after, after) else {
                continue;
            };
            let outcome = match reply {
                Reply::Ok(_) => "succeeded, so every part of it applies".to_owned(),
                Reply::MultiFailed { index, error } => format!(
                    "failed at its operation {} with {error:?}, so none of it applies",
                    index + 1
                ),
                Reply::Error(error) => format!("failed with {error:?}, so it leaves no trace"),
            };
            self.violation = Some(format!(
                "server {server} applied session {:#x}'s {} as zxid {zxid:#x} otherwise than \
                 the agreed order: it {outcome}, yet after it {path} is {} on the server and {} \
                 in the replay",
                session.0,
                request_text(request),
                node_text(&record.after, path),
                node_text(after, path),
            ));
            return;
        }
    }

    /// The finding: the first transaction applied in part, or how many were compared.
    pub(super) fn finding(self, stopped: Option<&str>) -> Finding {
        let (recorded, compared) = (
            self.records.values().map(Vec::len).sum::<usize>(),
            self.compared,
        );
        let stopped = stopped.map(str::to_owned);
        Finding::new(ATOMICITY, Class::Always, self.violation, move || {
            let mut summary = format!(
                "{compared} of {recorded} server records of a multi or a failed write applied \
                 whole or not at all, as the agreed order does"
            );
            if let Some(why) = stopped {
                summary.push_str(&format!(" (the rest not judged: {why})"));
            }
            summary
        })
    }
}

/// The deepest path whose node differs between two views of the same paths: a parent differs
/// only by its child counts, the child is what changed.
fn differing<'v>(ours: &'v PathsView, theirs: &PathsView) -> Option<&'v str> {
    (ours.iter().zip(theirs))
        .filter(|((_, a), (_, b))| a != b)
        .map(|((path, _), _)| path.as_str())
        .max_by_key(|path| path.matches('/').count() - usize::from(*path == "/"))
}

/// A node of a view in words: absent, or there with its data and versions.
fn node_text(view: &PathsView, path: &str) -> String {
    match view
        .iter()
        .find(|(p, _)| p == path)
        .and_then(|(_, n)| n.as_ref())
    {
        None => "absent".to_owned(),
        Some(node) => format!(
            "there (data {:?}, version {}, cversion {})",
            String::from_utf8_lossy(&node.data),
            node.version,
            node.cversion
        ),
    }
}
