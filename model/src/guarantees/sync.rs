//! **A read after sync is up to date**: ZooKeeper's reads are served from the server a client
//! is connected to, which may lag the leader; a client that must see every write completed
//! before some moment calls `sync` and then reads (Programmer's Guide, "ZooKeeper guarantees",
//! and its description of the `sync` call: the server catches up with the leader before it
//! answers; ZooKeeper paper, Hunt et al., ATC 2010, 2.3: a sync makes the server apply the
//! writes pending before it, so that a read behind it is up to date).
//!
//! The check, per session: let `W` be the highest zxid of a write (any session's) acknowledged
//! before the session issued its `sync`. The sync's own reply, and every read the session issues
//! after the sync (a session's requests take effect in order, so a read sent behind the sync
//! waits for it), carry a zxid of `W` or more: the server had applied every such write.
//!
//! Sound on any history with reply zxids: a write "acknowledged before" is one whose reply was
//! recorded before the sync was issued, so it was committed before the leader saw the sync. Not
//! judged: replies without a zxid (a real client's reads), across a data-loss fault (zxids start
//! again).

use std::collections::BTreeMap;

use zkh_recipes::{Request, SessionId};

use super::ops::Operation;
use super::SYNC_THEN_READ as NAME;
use crate::history::Entries;
use crate::history_text::request_text;
use crate::properties::{Class, Finding};

/// The highest zxid acknowledged to a write so far, as the history goes: (place recorded,
/// highest zxid up to it, the operation that has it), in history order.
fn acknowledged(ops: &[Operation]) -> Vec<(usize, i64, usize)> {
    let mut writes: Vec<(usize, i64, usize)> = (ops.iter().enumerate())
        .filter_map(|(index, op)| {
            let zxid = op.applied_write()?;
            let (at, ..) = op.answered.as_ref()?;
            Some((*at, zxid, index))
        })
        .collect();
    writes.sort();
    let mut highest: Option<(i64, usize)> = None;
    for write in &mut writes {
        if highest.is_none_or(|(zxid, _)| write.1 > zxid) {
            highest = Some((write.1, write.2));
        }
        (write.1, write.2) = highest.expect("set above");
    }
    writes
}

/// Judges "a read after sync is up to date" on `history`.
pub(super) fn sync_then_read(history: &impl Entries, ops: &[Operation]) -> Finding {
    if history.each().any(|entry| entry.event.is_data_loss()) {
        return Finding::new(NAME, Class::Always, None, || {
            "not judged: the ensemble's data was lost, and zxids started again".to_owned()
        });
    }
    let acknowledged = acknowledged(ops);
    // The write a sync issued at `at` must see: the highest acknowledged before it.
    let floor = |at: usize| -> Option<(i64, usize)> {
        let before = acknowledged.partition_point(|(recorded, ..)| *recorded < at);
        before
            .checked_sub(1)
            .map(|i| (acknowledged[i].1, acknowledged[i].2))
    };
    // Each session's floor so far: the highest floor of a sync it issued, and that sync.
    let mut floors: BTreeMap<SessionId, (i64, usize, usize)> = BTreeMap::new();
    let (mut syncs, mut reads) = (0usize, 0usize);
    for (index, op) in ops.iter().enumerate() {
        let is_sync = matches!(op.request, Request::Sync { .. });
        if is_sync {
            if let Some((zxid, write)) = floor(op.invoked) {
                let session = floors.entry(op.session).or_insert((zxid, write, index));
                if zxid >= session.0 {
                    *session = (zxid, write, index);
                }
            }
        } else if op.request.is_write() {
            continue;
        }
        let (Some(&(needed, write, sync)), Some((at, _, zxid))) =
            (floors.get(&op.session), &op.answered)
        else {
            continue;
        };
        if is_sync {
            syncs += 1;
        } else {
            reads += 1;
        }
        if *zxid < needed {
            let (write, sync) = (&ops[write], &ops[sync]);
            let what = if is_sync {
                "the sync itself was answered".to_owned()
            } else {
                format!("then {} was answered", request_text(op.request))
            };
            let detail = format!(
                "client {} synced after client {}'s {} was acknowledged at zxid {needed:#x}; \
                 {what} at zxid {zxid:#x}, without it",
                op.client,
                write.client,
                request_text(write.request)
            );
            let written = write
                .answered
                .as_ref()
                .map_or(write.invoked, |(at, ..)| *at);
            let mut evidence = vec![written, sync.invoked, *at];
            evidence.sort();
            evidence.dedup();
            return Finding::new(NAME, Class::Always, Some(detail), String::new)
                .with_evidence(history, evidence);
        }
    }
    Finding::new(NAME, Class::Always, None, move || {
        format!(
            "{syncs} syncs answered and {reads} reads behind them, each at or past every write \
             acknowledged before its sync"
        )
    })
}
