//! A session's end is final: once the ensemble has closed a session (it expired, or its
//! client closed it), no server answers that session's requests, and none of its ephemeral
//! nodes is left on any server (Programmer's Guide, "ZooKeeper Sessions": an expired session's
//! handle is invalid and its ephemeral nodes are removed; "Ephemeral Nodes": they exist as long
//! as the session that created them is active; ZooKeeper paper, Hunt et al., ATC 2010, 2.2).
//!
//! The close is a transaction of its own, so the servers' agreed order (their commit logs merged
//! by zxid) gives the zxid `c` at which each session ended. Then:
//!
//! - **no reply after the end**: a successful reply to the session carrying a zxid above `c`
//!   was given by a server that had applied the close (a read's zxid is its server's applied
//!   zxid; a write's is its own, after the close). A read answered below `c` by a lagging
//!   follower is fine: that server had not applied the close yet.
//! - **its ephemerals go with it**: a server whose final state is at or past `c` holds no node
//!   whose ephemeral owner is the session. (The model's own tree deletes them all in the close's
//!   one transaction, and "durability" compares each server's final tree with the agreed order
//!   replayed; this check names the session and the node where a server kept one.)
//!
//! Not judged where the agreed order is not (no commit logs, the ensemble's data lost, servers
//! disagreeing on a zxid): the same reasons as the other log checks. Not modelled: a client's
//! own view that its session ended (the client's side is the recipes' concern, judged by their
//! ownership properties).

use std::collections::BTreeMap;

use zkh_recipes::SessionId;

use super::ops::Operation;
use super::reads::{order_or_unjudged, Agreed, CommitLogs, Committed};
use super::SESSION_END_IS_FINAL;
use crate::history::Entries;
use crate::history_text::request_text;
use crate::properties::{Class, Finding};
use crate::request::Reply;

/// Judges that a session's end is final, against the servers' agreed order.
pub(super) fn session_end_is_final(
    history: &impl Entries,
    ops: &[Operation],
    logs: &CommitLogs,
    agreed: &Agreed<'_>,
) -> Finding {
    let order = match order_or_unjudged(agreed, SESSION_END_IS_FINAL) {
        Ok(order) => order,
        Err(unjudged) => return unjudged,
    };
    let mut ended: BTreeMap<SessionId, i64> = BTreeMap::new();
    for (zxid, txn) in order {
        if let Committed::CloseSession(session) = txn {
            ended.entry(*session).or_insert(*zxid);
        }
    }
    for op in ops {
        let (Some(end), Some((at, Reply::Ok(_), zxid))) = (ended.get(&op.session), &op.answered)
        else {
            continue;
        };
        if zxid > end {
            let detail = format!(
                "client {}'s {} under session {:#x} was answered ok at zxid {zxid:#x}, after the \
                 session ended at zxid {end:#x}",
                op.client,
                request_text(op.request),
                op.session.0
            );
            return Finding::new(
                SESSION_END_IS_FINAL,
                Class::Always,
                Some(detail),
                String::new,
            )
            .with_evidence(history, vec![op.invoked, *at]);
        }
    }
    for (server, model) in &logs.finals {
        let last = model.last_zxid();
        for (path, node) in model.tree().nodes() {
            let Some(owner) = node.ephemeral_owner else {
                continue;
            };
            if let Some(end) = ended.get(&owner).filter(|end| **end <= last) {
                let detail = format!(
                    "server {server} ended at zxid {last:#x} still holding {path}, an ephemeral \
                     node of session {:#x}, which ended at zxid {end:#x}",
                    owner.0
                );
                return Finding::new(
                    SESSION_END_IS_FINAL,
                    Class::Always,
                    Some(detail),
                    String::new,
                );
            }
        }
    }
    let summary = || {
        format!(
            "{} sessions ended; no reply after an end, and no server kept an ephemeral of one",
            ended.len()
        )
    };
    Finding::new(SESSION_END_IS_FINAL, Class::Always, None, summary)
}
