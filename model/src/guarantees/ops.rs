//! A history's operations: each request a client issued, paired with how it ended.
//!
//! A reply recorded without its header's zxid ([`OpOutcome::UNKNOWN_ZXID`]: a real client
//! whose library keeps the header to itself) is kept apart, in
//! [`Operation::answered_without_zxid`], so that no check that compares zxids reads a made-up
//! one; the checks that need only the reply (its stats) read it there.

use std::collections::BTreeMap;

use zkh_recipes::{Request, SessionId};

use crate::history::{Entries, HistoryEvent, OpOutcome};
use crate::request::Reply;

/// One request and its end, as its client saw them (borrowed from the history).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<'h> {
    /// The client process.
    pub client: u32,
    /// The session it was issued under.
    pub session: SessionId,
    /// The request.
    pub request: &'h Request,
    /// Its place in the history when issued.
    pub invoked: usize,
    /// Its place in the history when it ended, and the reply with its zxid, if a reply came
    /// (none for an operation whose outcome is unknown, that failed in the client, or that
    /// never ended).
    pub answered: Option<(usize, &'h Reply, i64)>,
    /// It ended in `ConnectionLoss`: whether it was applied is unknown to the client.
    pub unknown: bool,
    /// Its place in the history when it ended, and the reply, for a reply recorded without
    /// the zxid of its header (then `answered` is `None`).
    pub answered_without_zxid: Option<(usize, &'h Reply)>,
}

impl<'h> Operation<'h> {
    /// The zxid of its transaction: a write the server acknowledged as applied.
    pub fn applied_write(&self) -> Option<i64> {
        match &self.answered {
            Some((_, Reply::Ok(_), zxid)) if self.request.is_write() => Some(*zxid),
            _ => None,
        }
    }

    /// Its reply and where it ended, with or without the header's zxid.
    pub fn reply(&self) -> Option<(usize, &'h Reply)> {
        match (&self.answered, &self.answered_without_zxid) {
            (Some((at, reply, _)), _) | (None, Some((at, reply))) => Some((*at, reply)),
            (None, None) => None,
        }
    }
}

/// The operations of `history`, in the order they were issued.
pub fn operations<'h>(history: &'h impl Entries) -> Vec<Operation<'h>> {
    let mut ops = Vec::new();
    let mut open: BTreeMap<(u32, u64), usize> = BTreeMap::new();
    for (index, entry) in history.each().enumerate() {
        match &entry.event {
            HistoryEvent::Invoke {
                client,
                session,
                xid,
                request,
            } => {
                open.insert((*client, *xid), ops.len());
                ops.push(Operation {
                    client: *client,
                    session: *session,
                    request,
                    invoked: index,
                    answered: None,
                    unknown: false,
                    answered_without_zxid: None,
                });
            }
            HistoryEvent::Complete {
                client,
                xid,
                outcome,
            } => {
                let Some(op) = open.remove(&(*client, *xid)) else {
                    continue;
                };
                match outcome {
                    OpOutcome::Reply { reply, zxid } if *zxid == OpOutcome::UNKNOWN_ZXID => {
                        ops[op].answered_without_zxid = Some((index, reply));
                    }
                    OpOutcome::Reply { reply, zxid } => {
                        ops[op].answered = Some((index, reply, *zxid));
                    }
                    OpOutcome::Unknown => ops[op].unknown = true,
                    OpOutcome::Failed(_) => {}
                }
            }
            _ => {}
        }
    }
    ops
}
