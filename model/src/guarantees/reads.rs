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

use super::first::Tracker;
use super::ops::Operation;
use super::{DURABILITY, ONE_TRANSACTION_PER_ZXID, SEQUENTIALLY_CONSISTENT_READS};
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

/// The logs merged by zxid, or the first zxid two servers applied differently.
fn agreed(logs: &CommitLogs) -> Result<BTreeMap<i64, &Committed>, String> {
    let mut merged: BTreeMap<i64, (usize, &Committed)> = BTreeMap::new();
    for (server, log) in logs.applied.iter().enumerate() {
        for (zxid, txn) in log {
            match merged.get(zxid) {
                Some((other, theirs)) if *theirs != txn => {
                    return Err(format!(
                        "servers {other} and {server} applied different transactions as zxid \
                         {zxid:#x}: {} and {}",
                        committed_text(theirs),
                        committed_text(txn)
                    ))
                }
                Some(_) => {}
                None => {
                    merged.insert(*zxid, (server, txn));
                }
            }
        }
    }
    Ok(merged
        .into_iter()
        .map(|(zxid, (_, txn))| (zxid, txn))
        .collect())
}

/// A reply in words (`ok children [a, b]`, `error NoNode`).
fn reply_text(reply: &Reply) -> String {
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
struct Replay<'b, 'a> {
    model: ZkModel,
    order: &'b BTreeMap<i64, &'a Committed>,
    /// The zxid of the last transaction applied.
    done: i64,
    /// The watches the transactions fired (set by the reads answered again in the replay), with
    /// the zxid that fired each, not yet taken.
    fired: Vec<(i64, Notification)>,
}

impl<'b, 'a> Replay<'b, 'a> {
    /// A fresh tree, to replay `order` into.
    fn new(order: &'b BTreeMap<i64, &'a Committed>) -> Self {
        Replay {
            model: ZkModel::new(),
            order,
            done: i64::MIN,
            fired: Vec::new(),
        }
    }

    /// Applies every transaction up to `zxid` (called with zxids that never go down); an error
    /// names one the replay could not apply as the servers did.
    fn up_to(&mut self, zxid: i64) -> Result<(), String> {
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
                    let applied = self.model.apply(*session, request);
                    if applied.zxid.is_none() {
                        self.model.apply_noop();
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

/// **Durability** (always): a write that was acknowledged is in the agreed order, as that
/// session's write at the zxid its reply carried; and every server's state at the end of the
/// run (its disk, running or not) is the agreed order replayed up to its last zxid: nothing a
/// server applied, and so nothing a client was answered, was rolled back (Programmer's Guide,
/// "ZooKeeper guarantees": reliability; Zab: a committed transaction survives leader changes).
pub(super) fn durability(
    history: &impl Entries,
    ops: &[Operation],
    logs: &CommitLogs,
    agreed: &Agreed<'_>,
) -> Finding {
    let order = match order_or_unjudged(agreed, DURABILITY) {
        Ok(order) => order,
        Err(unjudged) => return unjudged,
    };
    let acknowledged: Vec<&Operation> = ops
        .iter()
        .filter(|op| op.applied_write().is_some())
        .collect();
    for op in &acknowledged {
        let zxid = op.applied_write().expect("filtered on it");
        let kept = matches!(order.get(&zxid), Some(Committed::Write { session, request })
            if *session == op.session && *request == op.request);
        if !kept {
            let at = op.answered.as_ref().map_or(op.invoked, |(at, ..)| *at);
            let detail = format!(
                "client {}'s {} was acknowledged at zxid {zxid:#x}, and no server applied it \
                 there",
                op.client,
                request_text(&op.request)
            );
            return Finding::new(DURABILITY, Class::Always, Some(detail), String::new)
                .with_evidence(history, vec![op.invoked, at]);
        }
    }
    let mut finals: Vec<&(u32, ZkModel)> = logs.finals.iter().collect();
    finals.sort_by_key(|(server, model)| (model.last_zxid(), *server));
    let transactions = order.len();
    let mut replay = Replay::new(order);
    for (server, model) in &finals {
        let zxid = model.last_zxid();
        let diverged = match replay.up_to(zxid) {
            Err(detail) => Some(detail),
            Ok(()) => first_difference(model, &replay.model).map(|path| {
                format!(
                    "server {server} ended at zxid {zxid:#x} with {path} not as the agreed \
                     order of every server's commits has it: a transaction some server applied \
                     was rolled back"
                )
            }),
        };
        if let Some(detail) = diverged {
            return Finding::new(DURABILITY, Class::Always, Some(detail), String::new);
        }
    }
    let summary = || {
        format!(
            "{} acknowledged writes in the agreed order of {transactions} transactions, and {} \
             servers' final states its prefixes",
            acknowledged.len(),
            finals.len()
        )
    };
    Finding::new(DURABILITY, Class::Always, None, summary)
}

/// The deepest path whose node differs between the two trees (or is in one only): a parent
/// differs only by its children's counts, the child is what changed.
fn first_difference(ours: &ZkModel, agreed: &ZkModel) -> Option<String> {
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

/// **Sequentially consistent reads** (always): see the module docs. The same replay tells
/// `watches` where each watch the reads set fires first (module `first`); it is left unjudged
/// where the replay stopped.
pub(super) fn sequentially_consistent_reads(
    history: &impl Entries,
    ops: &[Operation],
    agreed: &Agreed<'_>,
    watches: &mut Tracker,
) -> Finding {
    let order = match order_or_unjudged(agreed, SEQUENTIALLY_CONSISTENT_READS) {
        Ok(order) => order,
        Err(unjudged) => {
            watches.unjudged(unjudged.detail.clone());
            return unjudged;
        }
    };
    let transactions = order.len();
    let mut reads: Vec<(usize, &Operation)> = (ops.iter().enumerate())
        .filter(|(_, op)| !op.request.is_write() && !matches!(op.request, Request::Sync { .. }))
        .filter(|(_, op)| op.answered.is_some())
        .collect();
    reads.sort_by_key(|(_, op)| op.answered.as_ref().map(|(at, _, zxid)| (*zxid, *at)));
    let mut replay = Replay::new(order);
    let mut violation = None;
    for &(index, op) in &reads {
        let Some((at, reply, zxid)) = &op.answered else {
            continue;
        };
        if let Err(detail) = replay.up_to(*zxid) {
            violation = Some((detail, vec![*at]));
            break;
        }
        watches.fired(replay.fired.drain(..));
        let expected = replay.model.apply(op.session, &op.request).reply;
        watches.read(index, op, replay.model.watches());
        if expected != *reply {
            let (got, want) = match (reply_text(reply), reply_text(&expected)) {
                // The words leave the stat out; where only it differs, show it.
                (got, want) if got == want => (format!("{reply:?}"), format!("{expected:?}")),
                words => words,
            };
            let detail = format!(
                "client {} read {} at zxid {zxid:#x} and was answered {got}; the tree after the \
                 agreed transactions up to that zxid answers {want}",
                op.client,
                request_text(&op.request)
            );
            violation = Some((detail, vec![op.invoked, *at]));
            break;
        }
    }
    // The watches the last reads set fire after them: the replay goes on to the end (durability
    // judges a replay that cannot).
    let last = order.keys().next_back().copied().unwrap_or(i64::MIN);
    match violation.is_none().then(|| replay.up_to(last)) {
        Some(Ok(())) => watches.fired(replay.fired.drain(..)),
        _ => watches.unjudged("not judged: the replay of the agreed order stopped".to_owned()),
    }
    let summary = || {
        format!(
            "{} answered reads, each as the agreed order of {transactions} transactions had \
             the tree at its zxid",
            reads.len()
        )
    };
    match violation {
        Some((detail, evidence)) => Finding::new(
            SEQUENTIALLY_CONSISTENT_READS,
            Class::Always,
            Some(detail),
            summary,
        )
        .with_evidence(history, evidence),
        None => Finding::new(SEQUENTIALLY_CONSISTENT_READS, Class::Always, None, summary),
    }
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
