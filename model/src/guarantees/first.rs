//! **A watch fires for the first change**: a server registers a watch as it answers the read
//! that sets it, and fires it with the first transaction it applies after that which changes
//! what the watch is on (Programmer's Guide, "ZooKeeper Watches": a watch event is sent "when
//! the data for which the watch was set changes"; with the one-time trigger, the event is for
//! that first change, and a client that wants the next one sets the watch again).
//!
//! Judged in the replay of the servers' agreed order that sequentially consistent reads runs
//! (module `reads`): each answered read is applied again at the zxid its reply carried, so the
//! replay's own watch tables fire each watch a read set at the first transaction after that
//! zxid which triggers it, as the server that answered did. Then, per client:
//!
//! - **no event for another change**: each event that carries a zxid is one the replay fired at
//!   that zxid for a watch of the client's session: not a later change while the first went by
//!   unannounced, nor a change no watch of the session was waiting for;
//! - **no first change left unannounced**: when the replay fires a watch that a read answered
//!   on a connection set, at zxid `t`, and that connection later answered the client at `t` or
//!   above, the event came on that connection (its server applied `t` while it held the watch,
//!   and sends the event before anything it answers after).
//!
//! Not judged: events a reconnection fires (ZooKeeper's `setWatches`: they carry no zxid); an
//! event that a read of unknown outcome (ConnectionLoss) or never answered may explain (the
//! replay cannot set its watch); histories without the servers' commit logs (a real client's),
//! and runs whose replay stopped (sequentially consistent reads or durability says why).

use std::collections::{BTreeMap, BTreeSet};

use zkh_recipes::{EventType, SessionEvent, SessionId};

use super::once::{watch_of, Kind};
use super::ops::Operation;
use super::WATCH_FIRES_FOR_THE_FIRST_CHANGE as NAME;
use crate::history::{Entries, HistoryEvent};
use crate::history_text::request_text;
use crate::properties::{Class, Finding};
use crate::request::Notification;
use crate::watches::Watches;

/// A watch the replay fired: at which zxid, for which session, what, and the read (its index
/// among the operations) that set it.
struct Fired {
    zxid: i64,
    session: SessionId,
    event_type: EventType,
    path: String,
    read: usize,
}

/// What the replay of the agreed order tells of the watches the reads set.
#[derive(Default)]
pub(super) struct Tracker {
    /// Watches set in the replay and not fired yet: the read that set each.
    set: BTreeMap<(SessionId, String, Kind), usize>,
    /// Every watch the replay fired, in zxid order.
    fired: Vec<Fired>,
    /// Why it cannot judge, where the replay did not run to the end.
    unjudged: Option<String>,
}

impl Tracker {
    /// The replay did not run, or stopped: the check is not judged, for `why`.
    pub(super) fn unjudged(&mut self, why: String) {
        self.unjudged.get_or_insert(why);
    }

    /// The read `op` (the `index`th operation) was answered again in the replay, whose watch
    /// tables are now `watches`: a watch it set is noted, unless its session held one already.
    pub(super) fn read(&mut self, index: usize, op: &Operation, watches: &Watches) {
        let Some((path, kind)) = watch_of(op.request) else {
            return;
        };
        let holds = match kind {
            Kind::Data => watches.watches_data(op.session, &path),
            Kind::Child => watches.watches_children(op.session, &path),
        };
        if holds {
            self.set.entry((op.session, path, kind)).or_insert(index);
        }
    }

    /// The replay's transactions fired `fired`, each with its zxid.
    pub(super) fn fired(&mut self, fired: impl Iterator<Item = (i64, Notification)>) {
        for (zxid, Notification { session, event }) in fired {
            let reads = (Kind::used_by(event.event_type).iter())
                .filter_map(|kind| self.set.remove(&(session, event.path.clone(), *kind)));
            if let Some(read) = reads.min() {
                self.fired.push(Fired {
                    zxid,
                    session,
                    event_type: event.event_type,
                    path: event.path,
                    read,
                });
            }
        }
    }
}

/// An event a client got: where, on which of its connections, in which session.
struct Received<'h> {
    index: usize,
    client: u32,
    connection: u32,
    session: SessionId,
    event_type: EventType,
    path: &'h str,
    zxid: i64,
}

/// What the history says of each client's connections.
#[derive(Default)]
struct Connections<'h> {
    /// The connection each entry's client was on when it was recorded, by its place (a
    /// reply's connection).
    of_reply: Vec<u32>,
    /// The events that carry a zxid, in the order recorded.
    received: Vec<Received<'h>>,
}

/// Numbers each client's connections (a new one after every session event) and collects the
/// events that carry a zxid, in the session they came to (none while a session has ended).
fn connections<'h>(history: &'h impl Entries) -> Connections<'h> {
    let mut numbers: BTreeMap<u32, u32> = BTreeMap::new();
    let mut sessions: BTreeMap<u32, Option<SessionId>> = BTreeMap::new();
    let mut out = Connections::default();
    for (index, entry) in history.each().enumerate() {
        let connection =
            |numbers: &BTreeMap<u32, u32>, client: &u32| numbers.get(client).copied().unwrap_or(0);
        out.of_reply.push(match &entry.event {
            HistoryEvent::Complete { client, .. } => connection(&numbers, client),
            _ => 0,
        });
        match &entry.event {
            HistoryEvent::Session { client, event } => {
                *numbers.entry(*client).or_default() += 1;
                let session = match event {
                    SessionEvent::Connected { session_id }
                    | SessionEvent::Reconnected { session_id } => Some(*session_id),
                    SessionEvent::Expired | SessionEvent::Closed => None,
                    SessionEvent::Disconnected => continue,
                };
                sessions.insert(*client, session);
            }
            HistoryEvent::Invoke {
                client, session, ..
            } => {
                sessions.entry(*client).or_insert(Some(*session));
            }
            HistoryEvent::Watch { client, event } if event.zxid >= 0 => {
                if let Some(Some(session)) = sessions.get(client) {
                    out.received.push(Received {
                        index,
                        client: *client,
                        connection: connection(&numbers, client),
                        session: *session,
                        event_type: event.event_type,
                        path: &event.path,
                        zxid: event.zxid,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// Judges "a watch fires for the first change" on `history`, from what the replay of the agreed
/// order told `tracker`.
pub(super) fn watch_fires_for_the_first_change(
    history: &impl Entries,
    ops: &[Operation],
    tracker: Tracker,
) -> Finding {
    if let Some(why) = tracker.unjudged {
        return Finding::new(NAME, Class::Always, None, move || why);
    }
    let seen = connections(history);
    let violation = missed_first_change(ops, &tracker.fired, &seen)
        .or_else(|| event_for_another_change(ops, &tracker.fired, &seen));
    match violation {
        Some((detail, evidence)) => Finding::new(NAME, Class::Always, Some(detail), String::new)
            .with_evidence(history, evidence),
        None => {
            let (fired, received) = (tracker.fired.len(), seen.received.len());
            Finding::new(NAME, Class::Always, None, move || {
                format!(
                    "{received} events with a zxid, each the first change after its watch was \
                     set; {fired} watches fired in the agreed order"
                )
            })
        }
    }
}

/// A reply on a connection: where it was recorded, its zxid, and the highest zxid on the
/// connection up to it.
type Answered = (usize, i64, i64);

/// A watch the agreed order fires at `t` whose connection answered at `t` or above without the
/// event: the detail and the evidence, if there is one.
fn missed_first_change(
    ops: &[Operation],
    fired: &[Fired],
    seen: &Connections<'_>,
) -> Option<(String, Vec<usize>)> {
    let got: BTreeSet<(u32, u32, i64, &str, EventType)> = (seen.received.iter())
        .map(|r| (r.client, r.connection, r.zxid, r.path, r.event_type))
        .collect();
    // Each (client, connection)'s replies with a zxid, in the order recorded, each with the
    // highest zxid up to it (so that the first reply at or past a zxid is a binary search).
    let mut replies: BTreeMap<(u32, u32), Vec<Answered>> = BTreeMap::new();
    for op in ops {
        if let Some((at, _, zxid)) = &op.answered {
            let connection = seen.of_reply[*at];
            (replies.entry((op.client, connection)).or_default()).push((*at, *zxid, *zxid));
        }
    }
    for list in replies.values_mut() {
        list.sort_unstable();
        let mut highest = i64::MIN;
        for reply in list.iter_mut() {
            highest = highest.max(reply.1);
            reply.2 = highest;
        }
    }
    for f in fired {
        let read = &ops[f.read];
        let (read_at, _, read_zxid) = read.answered.as_ref().expect("replayed reads answered");
        let connection = seen.of_reply[*read_at];
        let Some(list) = replies.get(&(read.client, connection)) else {
            continue;
        };
        let Some((at, zxid, _)) = list.get(list.partition_point(|r| r.2 < f.zxid)) else {
            continue;
        };
        let key = (
            read.client,
            connection,
            f.zxid,
            f.path.as_str(),
            f.event_type,
        );
        if !got.contains(&key) {
            let detail = format!(
                "client {}'s {} (answered at zxid {read_zxid:#x}) set a watch that the first \
                 change after it, zxid {:#x}, fires ({:?} {}); the same connection answered it \
                 at zxid {zxid:#x} and that event never came: a first change went by \
                 unannounced",
                read.client,
                request_text(read.request),
                f.zxid,
                f.event_type,
                f.path
            );
            return Some((detail, vec![read.invoked, *read_at, *at]));
        }
    }
    None
}

/// An event with a zxid that the agreed order does not fire there for a watch of its session,
/// and that no read of unknown outcome may explain: the detail and the evidence, if there is one.
fn event_for_another_change(
    ops: &[Operation],
    fired: &[Fired],
    seen: &Connections<'_>,
) -> Option<(String, Vec<usize>)> {
    let expected: BTreeSet<(SessionId, i64, &str, EventType)> = (fired.iter())
        .map(|f| (f.session, f.zxid, f.path.as_str(), f.event_type))
        .collect();
    for r in &seen.received {
        if expected.contains(&(r.session, r.zxid, r.path, r.event_type)) {
            continue;
        }
        // A read whose outcome the client does not know may have set a watch the replay lacks.
        let unknown_read = ops.iter().any(|op| {
            op.client == r.client
                && op.session == r.session
                && op.invoked < r.index
                && op.answered.is_none()
                && (watch_of(op.request)).is_some_and(|(path, kind)| {
                    path == r.path && Kind::used_by(r.event_type).contains(&kind)
                })
        });
        if unknown_read {
            continue;
        }
        let first =
            (fired.iter()).rfind(|f| f.session == r.session && f.path == r.path && f.zxid < r.zxid);
        let why = match first {
            Some(f) => format!(
                "its watch was fired by zxid {:#x}, the first change after {} set it",
                f.zxid,
                request_text(ops[f.read].request)
            ),
            None => "no watch of its session was waiting for that change".to_owned(),
        };
        let detail = format!(
            "client {} got {:?} {} of zxid {:#x}, which the agreed order fires for no watch of \
             its session: {why}",
            r.client, r.event_type, r.path, r.zxid
        );
        let mut evidence: Vec<usize> = first.map(|f| ops[f.read].invoked).into_iter().collect();
        evidence.push(r.index);
        return Some((detail, evidence));
    }
    None
}
