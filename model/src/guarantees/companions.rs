//! The `sometimes` companions of the guarantees: cases the guarantees are about, which a run
//! must show for a pass to say something about them.
//!
//! - [`STALE_READ_SEEN`]: a read answered at a zxid below that of another session's write
//!   acknowledged before the read was sent. Allowed (reads are sequentially consistent, not
//!   linearizable); its absence would mean the runs never served a lagging read.
//! - [`LOST_REPLY_APPLIED`] and [`LOST_REPLY_NOT_APPLIED`]: a write that ended in
//!   ConnectionLoss turned out applied (its session's same write is in the servers' agreed
//!   order, at a zxid no answered write holds), or not: the two cases a recipe must tell apart.

use std::collections::{BTreeMap, BTreeSet};

use zkh_recipes::SessionId;

use super::ops::Operation;
use super::reads::{Agreed, Committed};
use super::{LOST_REPLY_APPLIED, LOST_REPLY_NOT_APPLIED, STALE_READ_SEEN};
use crate::history_text::request_text;
use crate::properties::{Class, Finding};

/// [`STALE_READ_SEEN`].
pub(super) fn stale_read_seen(ops: &[Operation]) -> Finding {
    let mut writes: Vec<(usize, i64, SessionId)> = (ops.iter())
        .filter_map(|op| {
            let zxid = op.applied_write()?;
            let at = op.answered.as_ref().map(|(at, ..)| *at)?;
            Some((at, zxid, op.session))
        })
        .collect();
    writes.sort_unstable();
    // Each session's highest acknowledged write zxid so far (a few sessions: a map is enough).
    let mut highest: BTreeMap<SessionId, i64> = BTreeMap::new();
    let mut next = 0;
    let mut found = None;
    for op in ops.iter().filter(|op| !op.request.is_write()) {
        let Some((_, _, read_zxid)) = &op.answered else {
            continue;
        };
        while let Some(&(_, zxid, session)) = writes.get(next).filter(|w| w.0 < op.invoked) {
            next += 1;
            let top = highest.entry(session).or_insert(zxid);
            *top = (*top).max(zxid);
        }
        let newer =
            (highest.iter()).find(|(session, zxid)| **session != op.session && *zxid > read_zxid);
        if let Some((_, zxid)) = newer {
            found = Some(format!(
                "client {} read {} at zxid {read_zxid:#x}, after another session's write at \
                 {zxid:#x} was acknowledged",
                op.client,
                request_text(op.request)
            ));
            break;
        }
    }
    let missing = found
        .is_none()
        .then(|| "no read lagged another session's write".to_owned());
    Finding::new(STALE_READ_SEEN, Class::Sometimes, missing, || {
        found.unwrap_or_default()
    })
}

/// [`LOST_REPLY_APPLIED`] and [`LOST_REPLY_NOT_APPLIED`], in that order.
pub(super) fn lost_replies(ops: &[Operation], agreed: &Agreed<'_>) -> [Finding; 2] {
    let order = agreed.as_ref().ok();
    let lost: Vec<&Operation> = ops
        .iter()
        .filter(|op| op.unknown && op.request.is_write())
        .collect();
    let (mut applied, mut not_applied) = (0, 0);
    if let Some(order) = &order {
        let acknowledged: BTreeSet<i64> = ops.iter().filter_map(Operation::applied_write).collect();
        let mut claimed = BTreeSet::new();
        for op in &lost {
            let found = order.iter().find(|(zxid, txn)| {
                !acknowledged.contains(zxid)
                    && !claimed.contains(*zxid)
                    && matches!(txn, Committed::Write { session, request }
                        if *session == op.session && *request == *op.request)
            });
            match found {
                Some((zxid, _)) => {
                    claimed.insert(*zxid);
                    applied += 1;
                }
                None => not_applied += 1,
            }
        }
    }
    let why = |count: usize, what: &str| match (&order, count) {
        (None, _) => Some("not judged: no agreed order of commits".to_owned()),
        (Some(_), 0) => Some(format!("no write that ended in ConnectionLoss was {what}")),
        (Some(_), _) => None,
    };
    [
        Finding::new(
            LOST_REPLY_APPLIED,
            Class::Sometimes,
            why(applied, "applied"),
            || {
                format!(
                    "{applied} of {} writes that ended in ConnectionLoss were applied",
                    lost.len()
                )
            },
        ),
        Finding::new(
            LOST_REPLY_NOT_APPLIED,
            Class::Sometimes,
            why(not_applied, "left unapplied"),
            || {
                format!(
                    "{not_applied} of {} writes that ended in ConnectionLoss were not applied",
                    lost.len()
                )
            },
        ),
    ]
}
