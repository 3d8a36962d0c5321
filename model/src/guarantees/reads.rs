//! The guarantees that need the servers' own record: what each server applied, in order
//! (its *commit log*), beside what the clients saw.
//!
//! - **One transaction per zxid**, on the servers' side: no two servers applied different
//!   transactions as one zxid (Zab's agreement; the clients' side, two acknowledged writes
//!   with one zxid, is judged in `order`).
//! - **Sequentially consistent reads**: each read a server answered equals the tree after
//!   every transaction up to the zxid its reply carried, the zxid the server had applied
//!   (Programmer's Guide, "ZooKeeper guarantees": sequential consistency; ZooKeeper paper,
//!   Hunt et al., ATC 2010, 2.3: reads are served from the server's local replica). The
//!   commit logs of every server merged by zxid are the one order the ensemble agreed on; a
//!   fresh tree replays it, and every read is answered again against the replay at its zxid. A
//!   stale read is fine (its zxid is old, and so is the replay it is held against); a read whose
//!   answer no prefix of the agreed order gives, or one labelled with a zxid its server had not
//!   applied, is not.
//!
//! Not judged where the ensemble's data was lost (a data-loss fault empties every server, and
//! zxids start again from 0: the logs of the two pieces cannot be merged by zxid), nor where no
//! commit log was recorded (a history from elsewhere). The replay runs the model's own
//! transaction code, so it checks that the servers served and agreed, not the tree's semantics
//! (the model's own tests do that).

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included};

use zkh_recipes::{Request, SessionId};

use super::atomicity::{view, Around, Atomic};
use super::ONE_TRANSACTION_PER_ZXID;
use crate::history::Entries;
use crate::history_text::{request_text, result_text};
use crate::properties::{Class, Finding};
use crate::request::{Notification, Reply};
use crate::zookeeper::ZkModel;

/// One transaction as a server applied it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Committed {
    /// A session opened, with the id the server gave it.
    OpenSession(SessionId),
    /// A session closed or expired (a no-op when it was already gone).
    CloseSession(SessionId),
    /// A client's write (an error transaction when its session had closed meanwhile).
    Write {
        /// The session that asked.
        session: SessionId,
        /// The request.
        request: Request,
    },
    /// The leader's container manager's `deleteContainer` of `path`: `deleted` when it took
    /// the node away, an error transaction when the node had a child again, or was gone.
    DeleteContainer {
        /// The container.
        path: String,
        /// Whether the server deleted it (the replay applies it all the same).
        deleted: bool,
    },
}

/// What the servers did, beside what the clients saw: each server's commit log, and each
/// server's state when the run ended.
#[derive(Clone, Debug, Default)]
pub struct CommitLogs {
    /// What each server applied, in the order it applied it: (zxid, transaction), one list per
    /// server. A server that joined from a snapshot has a gap; the merge by zxid fills it.
    pub applied: Vec<Vec<(i64, Committed)>>,
    /// Each server's committed state when the run ended (its disk, running or not), by id.
    pub finals: Vec<(u32, ZkModel)>,
    /// What each server's tree held around each `multi` and each failed write it applied, one
    /// list per server in the order of `applied` (module `atomicity`).
    pub around: Vec<Vec<Around>>,
}

impl CommitLogs {
    /// None recorded: the checks that need them say "not judged".
    pub fn new() -> Self {
        CommitLogs::default()
    }
}

/// Why the logs cannot judge `history`, if they cannot: none recorded, or the data was lost.
fn not_judged(history: &impl Entries, logs: &CommitLogs) -> Option<&'static str> {
    let lost = history.each().any(|entry| entry.event.is_data_loss());
    if lost {
        Some("not judged: the ensemble's data was lost, and zxids started again")
    } else if logs.applied.iter().all(Vec::is_empty) {
        Some("not judged: no server's commit log was recorded")
    } else {
        None
    }
}

/// The logs merged by zxid, or the lowest zxid two servers applied differently.
fn agreed(logs: &CommitLogs) -> Result<BTreeMap<i64, &Committed>, String> {
    let mut all: Vec<(i64, usize, &Committed)> = (logs.applied.iter().enumerate())
        .flat_map(|(server, log)| log.iter().map(move |(zxid, txn)| (*zxid, server, txn)))
        .collect();
    all.sort_by_key(|(zxid, server, _)| (*zxid, *server));
    let mut merged: Vec<(i64, &Committed)> = Vec::with_capacity(all.len());
    let mut first_of_zxid: Option<(i64, usize, &Committed)> = None;
    for (zxid, server, txn) in all {
        match first_of_zxid {
            Some((at, other, theirs)) if at == zxid => {
                if theirs != txn {
                    return Err(format!(
                        "servers {other} and {server} applied different transactions as zxid \
                         {zxid:#x}: {} and {}",
                        committed_text(theirs),
                        committed_text(txn)
                    ));
                }
            }
            _ => {
                merged.push((zxid, txn));
                first_of_zxid = Some((zxid, server, txn));
            }
        }
    }
    Ok(merged.into_iter().collect())
}

/// A reply in words (`ok children [a, b]`, `error NoNode`).
pub(super) fn reply_text(reply: &Reply) -> String {
    match reply {
        Reply::Ok(response) => result_text(&Ok(response.clone())),
        Reply::Error(error) => result_text(&Err(*error)),
        other => format!("{other:?}"),
    }
}

/// Why the logs give no agreed order: they cannot judge the history (none recorded, the data
/// lost), or two servers disagree on a zxid (the detail).
pub(super) enum Unjudged {
    /// Why not, in words.
    Why(&'static str),
    /// Two servers applied different transactions as one zxid.
    Disagree(String),
}

/// The servers' agreed order, merged once per history for every check that reads it.
pub(super) type Agreed<'a> = Result<BTreeMap<i64, &'a Committed>, Unjudged>;

/// The servers' agreed order of `history`'s run, where the logs can give one.
pub(super) fn agree<'a>(history: &impl Entries, logs: &'a CommitLogs) -> Agreed<'a> {
    if let Some(why) = not_judged(history, logs) {
        return Err(Unjudged::Why(why));
    }
    agreed(logs).map_err(Unjudged::Disagree)
}

/// The agreed order, or a passing finding of `property` saying why it was not judged.
pub(super) fn order_or_unjudged<'b, 'a>(
    agreed: &'b Agreed<'a>,
    property: &'static str,
) -> Result<&'b BTreeMap<i64, &'a Committed>, Finding> {
    match agreed {
        Ok(order) => Ok(order),
        Err(unjudged) => {
            let why = match unjudged {
                Unjudged::Why(why) => why,
                // "one transaction per zxid" reports it; no order to judge against.
                Unjudged::Disagree(_) => "not judged: the servers disagree on a zxid",
            };
            Err(Finding::new(property, Class::Always, None, || {
                (*why).to_owned()
            }))
        }
    }
}

/// A transaction in words.
fn committed_text(txn: &Committed) -> String {
    match txn {
        Committed::OpenSession(session) => format!("open session {:#x}", session.0),
        Committed::CloseSession(session) => format!("close session {:#x}", session.0),
        Committed::Write { session, request } => {
            format!("{} by session {:#x}", request_text(request), session.0)
        }
        Committed::DeleteContainer { path, .. } => format!("delete container {path}"),
    }
}

/// One transaction per zxid on the servers' side: `clients` (the clients' side, from `order`)
/// unless it holds and the servers' logs disagree.
pub(super) fn servers_agree(agreed: &Agreed<'_>, clients: Finding) -> Finding {
    match agreed {
        Err(Unjudged::Disagree(detail)) if clients.holds => Finding::new(
            ONE_TRANSACTION_PER_ZXID,
            Class::Always,
            Some(detail.clone()),
            String::new,
        ),
        _ => clients,
    }
}

/// Replays the agreed order into a fresh tree, one transaction at a time, checking that each
/// takes the zxid the servers gave it.
pub(super) struct Replay<'b, 'a> {
    pub(super) model: ZkModel,
    order: &'b BTreeMap<i64, &'a Committed>,
    /// The zxid of the last transaction applied.
    done: i64,
    /// The watches the transactions fired (set by the reads answered again in the replay), with
    /// the zxid that fired each, not yet taken.
    pub(super) fired: Vec<(i64, Notification)>,
    /// The servers' records around their multis and failed writes, compared on the way.
    pub(super) atomic: Atomic<'a>,
    /// Why the replay stopped, if it did: it goes no further.
    pub(super) stopped: Option<String>,
}

impl<'b, 'a> Replay<'b, 'a> {
    /// A fresh tree, to replay `order` into.
    pub(super) fn new(order: &'b BTreeMap<i64, &'a Committed>, atomic: Atomic<'a>) -> Self {
        Replay {
            model: ZkModel::new(),
            order,
            done: i64::MIN,
            fired: Vec::new(),
            atomic,
            stopped: None,
        }
    }

    /// Applies every transaction up to `zxid` (called with zxids that never go down); an error
    /// names one the replay could not apply as the servers did, and the replay stops there.
    pub(super) fn up_to(&mut self, zxid: i64) -> Result<(), String> {
        if let Some(why) = &self.stopped {
            return Err(why.clone());
        }
        let result = self.apply_up_to(zxid);
        if let Err(why) = &result {
            self.stopped = Some(why.clone());
        }
        result
    }

    fn apply_up_to(&mut self, zxid: i64) -> Result<(), String> {
        if zxid <= self.done {
            return Ok(());
        }
        let order = self.order;
        for (&at, txn) in order.range((Excluded(self.done), Included(zxid))) {
            self.done = at;
            let epoch = (at >> 32) as u32;
            if epoch > (self.model.last_zxid() >> 32) as u32 {
                self.model.begin_epoch(epoch);
            }
            match txn {
                Committed::OpenSession(session) => {
                    let opened = self.model.open_session();
                    if opened != *session {
                        return Err(format!(
                            "zxid {at:#x} opened session {:#x} on the servers and {:#x} in the \
                             agreed order",
                            session.0, opened.0
                        ));
                    }
                }
                Committed::CloseSession(session) => match self.model.close_session(*session) {
                    Some(fired) => self.fired.extend(fired.into_iter().map(|n| (at, n))),
                    None => {
                        self.model.apply_noop();
                    }
                },
                Committed::Write { session, request } => {
                    let before = self.atomic.wants(at).then(|| view(&self.model, request));
                    let applied = self.model.apply(*session, request);
                    if applied.zxid.is_none() {
                        self.model.apply_noop();
                    }
                    if let Some(before) = before {
                        let after = view(&self.model, request);
                        let write = (*session, request, &applied.reply);
                        self.atomic.compare(at, write, &before, &after);
                    }
                    (self.fired).extend(applied.notifications.into_iter().map(|n| (at, n)));
                }
                Committed::DeleteContainer { path, .. } => {
                    match self.model.delete_container(path) {
                        Some(fired) => self.fired.extend(fired.into_iter().map(|n| (at, n))),
                        None => {
                            self.model.apply_noop();
                        }
                    }
                }
            }
            if self.model.last_zxid() != at {
                return Err(format!(
                    "the agreed order skips a zxid before {at:#x} (the replay reached {:#x})",
                    self.model.last_zxid()
                ));
            }
        }
        Ok(())
    }
}

/// The deepest path whose node differs between the two trees (or is in one only): a parent
/// differs only by its children's counts, the child is what changed.
pub(super) fn first_difference(ours: &ZkModel, agreed: &ZkModel) -> Option<String> {
    let (a, b) = (ours.tree(), agreed.tree());
    if a == b {
        return None;
    }
    let differs = |path: &&str| a.get(path) != b.get(path);
    (a.nodes().map(|(path, _)| path))
        .chain(b.nodes().map(|(path, _)| path))
        .filter(differs)
        .max_by_key(|path| {
            (
                path.split('/').filter(|s| !s.is_empty()).count(),
                std::cmp::Reverse(*path),
            )
        })
        .map(str::to_owned)
        .or_else(|| Some("the tree".to_owned()))
}

/// The `sometimes` check [`CONTAINER_REAPED`] of a recipe's run: some server's container manager
/// took a container away (a recipe's parent, between two of its users), so a pass says the
/// recipe survived it.
pub fn container_reaped(logs: &CommitLogs) -> Finding {
    let reaped = (logs.applied.iter().flatten()).find_map(|(_, txn)| match txn {
        Committed::DeleteContainer {
            path,
            deleted: true,
        } => Some(path),
        _ => None,
    });
    let detail = reaped.map(|path| format!("the leader deleted the empty container {path}"));
    let missing = detail
        .is_none()
        .then(|| "no container was reaped".to_owned());
    Finding::new(CONTAINER_REAPED, Class::Sometimes, missing, || {
        detail.unwrap_or_default()
    })
}

/// A recipe's run saw the container manager delete a container.
pub const CONTAINER_REAPED: &str = "a container was reaped";
