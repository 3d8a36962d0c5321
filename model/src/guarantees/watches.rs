//! **Watch events in order**: a client sees a watch event before any reply that carries the
//! change which fired it, and one connection's events come in zxid order (Programmer's Guide,
//! "ZooKeeper Watches": watches are ordered with respect to other events, other watches and
//! replies; "a client will see a watch event for a znode it is watching before seeing the new
//! data that corresponds to that znode"; the order of watch events follows the order of the
//! updates as the service sees them).
//!
//! A server fires a watch when it applies the change, and sends the event on the connection
//! before anything it answers later; so any reply it gives after applying zxid `z` carries
//! `z` or more, and comes behind the event. The check, per client:
//!
//! - **event before data**: no reply recorded in the session before an event of zxid `z`
//!   carries a zxid of `z` or more;
//! - **events in zxid order**: within one connection, each event's zxid is at least the one
//!   before it.
//!
//! Sound on the simulator's histories: an event is recorded when it arrives, and a reply when
//! the caller takes it, at or after its arrival; so a reply recorded before an event arrived
//! before it. Events that a reconnection fires (`setWatches`) carry no zxid, as ZooKeeper's do,
//! and are not judged; a new connection starts the order again, a new session both checks, a
//! data-loss fault (zxids start again) everything. Not judged: that a watch fires once and for
//! the first change only (it needs each registration's outcome, which the next part of this
//! checker is to record).

use std::collections::BTreeMap;

use zkh_recipes::SessionEvent;

use super::WATCH_EVENTS_IN_ORDER;
use crate::history::{Entries, HistoryEvent, OpOutcome};
use crate::properties::{Class, Finding};

/// What the check keeps of one client.
#[derive(Default)]
struct Seen {
    /// The client's session, as its session events name it.
    session: Option<zkh_recipes::SessionId>,
    /// The highest zxid a reply carried in this session, and where it was recorded.
    reply: Option<(i64, usize)>,
    /// The zxid of the last event on this connection, and where it was recorded.
    event: Option<(i64, usize)>,
}

/// Judges watch events in order on `history`.
pub(super) fn watch_events_in_order(history: &impl Entries) -> Finding {
    let mut seen: BTreeMap<u32, Seen> = BTreeMap::new();
    let mut judged = 0usize;
    let mut violation = None;
    for (index, entry) in history.each().enumerate() {
        match &entry.event {
            event if event.is_data_loss() => seen.clear(),
            HistoryEvent::Session { client, event } => {
                let client = seen.entry(*client).or_default();
                client.event = None;
                let before = client.session;
                client.session = crate::claims::session_after(event, before);
                // A reconnection within the session keeps its replies' order; a new session
                // starts afresh, however it is announced (Curator 2.x's reset reports one as a
                // reconnection).
                let same = matches!(event, SessionEvent::Disconnected)
                    || matches!(event, SessionEvent::Reconnected { session_id } if before == Some(*session_id));
                if !same {
                    client.reply = None;
                }
            }
            HistoryEvent::Complete {
                client,
                outcome: OpOutcome::Reply { zxid, .. },
                ..
            } => {
                let client = seen.entry(*client).or_default();
                if client.reply.is_none_or(|(highest, _)| *zxid > highest) {
                    client.reply = Some((*zxid, index));
                }
            }
            HistoryEvent::Watch { client: id, event } if event.zxid >= 0 => {
                judged += 1;
                let client = seen.entry(*id).or_default();
                let z = event.zxid;
                if let Some((reply, at)) = client.reply.filter(|(reply, _)| *reply >= z) {
                    violation = Some((
                        format!(
                            "client {id} was answered at zxid {reply:#x} before it saw the event \
                             {:?} {} of zxid {z:#x}: the data came before the event that \
                             announces it",
                            event.event_type, event.path
                        ),
                        vec![at, index],
                    ));
                    break;
                }
                if let Some((before, at)) = client.event.filter(|(before, _)| *before > z) {
                    violation = Some((
                        format!(
                            "client {id} saw an event of zxid {before:#x}, then on the same \
                             connection {:?} {} of zxid {z:#x}: events out of zxid order",
                            event.event_type, event.path
                        ),
                        vec![at, index],
                    ));
                    break;
                }
                client.event = Some((z, index));
            }
            _ => {}
        }
    }
    match violation {
        Some((detail, evidence)) => Finding::new(
            WATCH_EVENTS_IN_ORDER,
            Class::Always,
            Some(detail),
            String::new,
        )
        .with_evidence(history, evidence),
        None => Finding::new(WATCH_EVENTS_IN_ORDER, Class::Always, None, move || {
            format!("{judged} watch events, each before the data it announces and in zxid order")
        }),
    }
}
