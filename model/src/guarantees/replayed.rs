//! The guarantees judged against one replay of the servers' agreed order (module `reads`
//! merges it): durability, sequentially consistent reads and atomicity, and on the way the
//! watches the reads set (module `first`). One replay serves them all: the reads are answered
//! again at their zxids, in zxid order, each server's final state is compared when the replay
//! reaches its last zxid, and each server's record around a multi or a failed write when the
//! replay applies it.

use zkh_recipes::Request;

use super::atomicity::Atomic;
use super::first::Tracker;
use super::ops::Operation;
use super::reads::{first_difference, order_or_unjudged, reply_text, Agreed, Replay};
use super::reads::{CommitLogs, Committed};
use super::{ATOMICITY, DURABILITY, SEQUENTIALLY_CONSISTENT_READS};
use crate::history::Entries;
use crate::history_text::request_text;
use crate::properties::{Class, Finding};
use crate::zookeeper::ZkModel;

/// The servers' final states, compared with the replay in the order of their last zxids.
struct Finals<'m> {
    /// By (last zxid, server).
    list: Vec<&'m (u32, ZkModel)>,
    /// The next one to compare.
    next: usize,
    /// The first that differs (or where the replay could not go), in words.
    diverged: Option<String>,
}

impl Finals<'_> {
    /// Compares every final state whose last zxid is `limit` or below, taking the replay there.
    fn up_to(&mut self, replay: &mut Replay<'_, '_>, limit: i64) {
        while let Some((server, model)) = self.list.get(self.next).copied() {
            let zxid = model.last_zxid();
            if zxid > limit || self.diverged.is_some() {
                return;
            }
            self.next += 1;
            self.diverged = match replay.up_to(zxid) {
                Err(detail) => Some(detail),
                Ok(()) => first_difference(model, &replay.model).map(|path| {
                    format!(
                        "server {server} ended at zxid {zxid:#x} with {path} not as the agreed \
                         order of every server's commits has it: a transaction some server \
                         applied was rolled back"
                    )
                }),
            };
        }
    }
}

/// **Durability**, its first half: each acknowledged write is in the agreed order, as that
/// session's write at the zxid its reply carried. How many, or the finding that one is not.
fn acknowledged_kept(
    history: &impl Entries,
    ops: &[Operation],
    order: &std::collections::BTreeMap<i64, &Committed>,
) -> Result<usize, Finding> {
    let mut count = 0;
    for op in ops {
        let Some(zxid) = op.applied_write() else {
            continue;
        };
        count += 1;
        let kept = matches!(order.get(&zxid), Some(Committed::Write { session, request })
            if *session == op.session && *request == *op.request);
        if !kept {
            let at = op.answered.as_ref().map_or(op.invoked, |(at, ..)| *at);
            let detail = format!(
                "client {}'s {} was acknowledged at zxid {zxid:#x}, and no server applied it \
                 there",
                op.client,
                request_text(op.request)
            );
            return Err(
                Finding::new(DURABILITY, Class::Always, Some(detail), String::new)
                    .with_evidence(history, vec![op.invoked, at]),
            );
        }
    }
    Ok(count)
}

/// **Durability** (always): a write that was acknowledged is in the agreed order, as that
/// session's write at the zxid its reply carried; and every server's state at the end of the run
/// (its disk, running or not) is the agreed order replayed up to its last zxid: nothing a server
/// applied, and so nothing a client was answered, was rolled back (Programmer's Guide,
/// "ZooKeeper guarantees": reliability; Zab: a committed transaction survives leader changes).
///
/// **Sequentially consistent reads** (always): see module `reads`. The same replay tells
/// `watches` where each watch the reads set fires first (module `first`); it is left unjudged
/// where the replay stopped.
///
/// **Atomicity** (always): see module `atomicity`; the servers' records are compared as the
/// replay passes their zxids. Returns the three findings: atomicity, durability, the reads.
pub(super) fn durability_and_reads(
    history: &impl Entries,
    ops: &[Operation],
    logs: &CommitLogs,
    agreed: &Agreed<'_>,
    watches: &mut Tracker,
) -> [Finding; 3] {
    let order = match order_or_unjudged(agreed, DURABILITY) {
        Ok(order) => order,
        Err(unjudged) => {
            watches.unjudged(unjudged.detail.clone());
            let same = |name| {
                let detail = unjudged.detail.clone();
                Finding::new(name, Class::Always, None, move || detail)
            };
            return [
                same(ATOMICITY),
                same(SEQUENTIALLY_CONSISTENT_READS),
                unjudged,
            ];
        }
    };
    let transactions = order.len();
    let acknowledged = acknowledged_kept(history, ops, order);
    let mut finals = Finals {
        list: logs.finals.iter().collect(),
        next: 0,
        diverged: None,
    };
    finals
        .list
        .sort_by_key(|(server, model)| (model.last_zxid(), *server));
    if acknowledged.is_err() {
        // Durability is decided already: no final state need be compared.
        finals.next = finals.list.len();
    }
    let mut reads: Vec<(usize, &Operation)> = (ops.iter().enumerate())
        .filter(|(_, op)| !op.request.is_write() && !matches!(op.request, Request::Sync { .. }))
        .filter(|(_, op)| op.answered.is_some())
        .collect();
    reads.sort_by_key(|(_, op)| op.answered.as_ref().map(|(at, _, zxid)| (*zxid, *at)));
    let mut replay = Replay::new(order, Atomic::new(&logs.around));
    let mut violation = None;
    for &(index, op) in &reads {
        let Some((at, reply, zxid)) = &op.answered else {
            continue;
        };
        finals.up_to(&mut replay, *zxid);
        if let Err(detail) = replay.up_to(*zxid) {
            if finals.next < finals.list.len() {
                finals.diverged.get_or_insert_with(|| detail.clone());
            }
            violation = Some((detail, vec![*at]));
            break;
        }
        watches.fired(replay.fired.drain(..));
        let expected = replay.model.apply(op.session, op.request).reply;
        watches.read(index, op, replay.model.watches());
        if expected != **reply {
            let (got, want) = match (reply_text(reply), reply_text(&expected)) {
                // The words leave the stat out; where only it differs, show it.
                (got, want) if got == want => (format!("{reply:?}"), format!("{expected:?}")),
                words => words,
            };
            let detail = format!(
                "client {} read {} at zxid {zxid:#x} and was answered {got}; the tree after the \
                 agreed transactions up to that zxid answers {want}",
                op.client,
                request_text(op.request)
            );
            violation = Some((detail, vec![op.invoked, *at]));
            break;
        }
    }
    finals.up_to(&mut replay, i64::MAX);
    // The watches the last reads set fire after them: the replay goes on to the end (durability
    // judges a replay that cannot).
    let last = order.keys().next_back().copied().unwrap_or(i64::MIN);
    // Atomicity compares the servers' records all the way, past a read that failed.
    match (violation.is_none(), replay.up_to(last)) {
        (true, Ok(())) => watches.fired(replay.fired.drain(..)),
        _ => watches.unjudged("not judged: the replay of the agreed order stopped".to_owned()),
    }
    let atomicity = std::mem::take(&mut replay.atomic).finding(replay.stopped.as_deref());
    let durability = match (acknowledged, finals.diverged) {
        (Err(finding), _) => finding,
        (Ok(_), Some(detail)) => Finding::new(DURABILITY, Class::Always, Some(detail), String::new),
        (Ok(count), None) => {
            let servers = finals.list.len();
            Finding::new(DURABILITY, Class::Always, None, move || {
                format!(
                    "{count} acknowledged writes in the agreed order of {transactions} \
                     transactions, and {servers} servers' final states its prefixes"
                )
            })
        }
    };
    let summary = || {
        format!(
            "{} answered reads, each as the agreed order of {transactions} transactions had \
             the tree at its zxid",
            reads.len()
        )
    };
    let reads = match violation {
        Some((detail, evidence)) => Finding::new(
            SEQUENTIALLY_CONSISTENT_READS,
            Class::Always,
            Some(detail),
            summary,
        )
        .with_evidence(history, evidence),
        None => Finding::new(SEQUENTIALLY_CONSISTENT_READS, Class::Always, None, summary),
    };
    [atomicity, durability, reads]
}
