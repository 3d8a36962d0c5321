//! **A watch fires once**: a watch is a one-time trigger (Programmer's Guide, "ZooKeeper
//! Watches": "one time trigger: one watch event will be sent to the client when the data for
//! which the watch was set changes"; a client must set it again to hear of the next change).
//!
//! A session sets a data watch with `getData` or `exists` (an `exists` of a missing node
//! watches for its creation) and a child watch with `getChildren`. The check, per client and
//! session: every watch event uses up one read that set a watch of its kind on its path, before
//! it, and not used up yet:
//!
//! - `NodeDataChanged` and `NodeCreated` use a data watch on the path;
//! - `NodeChildrenChanged` uses a child watch on the path;
//! - `NodeDeleted` uses a data watch, else a child watch.
//!
//! Reads, not watches, are counted, so that the check holds on both sides: a server keeps one
//! entry per path and connection and sends one event however many reads set it (the
//! simulator's), while a client library with one-shot watchers per call (the `zookeeper-client`
//! crate) hands that one event to the application once per read that set one.
//!
//! A watch counts as set from the moment the read is issued, not answered: a history records
//! an event when it arrives and a reply when it is taken (the simulator), or events just before
//! the reply of the request in flight (a real client's recorder), so an event may be recorded
//! before the reply of the read that set its watch. An event uses the watch an answered read
//! set, else the one the earliest unanswered read set (a session's reads are taken in order);
//! a later unanswered read may set it again after it fired, so it stays pending. A read whose
//! outcome is unknown (ConnectionLoss) may have set its watch, and counts; a read that failed (`NoNode` of a
//! `getData`) set none. Events that a reconnection fires (ZooKeeper's `setWatches`) use a watch
//! like any other. A session's end drops its watches, and a new session starts with none; an
//! event a client gets after its session ended and before a new one is not judged (the ended
//! session's, sent before the end and handed on late: measured on a real client woken from a
//! stop, which took an event after it had reported the expiry).
//! Judged on real histories too: it reads no zxid.
//!
//! Not judged: that the event is for the *first* change after the watch was set (that needs
//! the zxid at which the server registered it); a watch set and never fired.

use std::collections::{BTreeMap, BTreeSet};

use zkh_recipes::{EventType, Request, SessionEvent};

use super::WATCH_FIRES_ONCE;
use crate::history::{Entries, HistoryEvent, OpOutcome};
use crate::properties::{Class, Finding};
use crate::request::Reply;

/// A data or a child watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// Set by `getData` or `exists`.
    Data,
    /// Set by `getChildren`.
    Child,
}

impl Kind {
    /// The kinds of watch an event of `event_type` uses: `NodeDeleted` a data watch, else a
    /// child watch (a server fires it once per session for both).
    pub(super) fn used_by(event_type: EventType) -> &'static [Kind] {
        match event_type {
            EventType::NodeDataChanged | EventType::NodeCreated => &[Kind::Data],
            EventType::NodeChildrenChanged => &[Kind::Child],
            EventType::NodeDeleted => &[Kind::Data, Kind::Child],
        }
    }
}

/// One client's watches in its current session: per (path, kind), how many answered reads set
/// one, and the reads still unanswered.
#[derive(Default)]
struct Client {
    set: BTreeMap<(String, Kind), usize>,
    /// Reads issued with a watch and not yet answered: xid -> (path, kind).
    pending: BTreeMap<u64, (String, Kind)>,
    /// Pending reads whose watch an event used up before their reply was recorded.
    used: BTreeSet<u64>,
}

impl Client {
    /// Uses up one read that set (path, kind), if there is one: an answered one, else the
    /// earliest unanswered one (a session's reads are taken in order; a later one may set the
    /// watch after it fired, and stays pending). Whether there was one.
    fn use_up(&mut self, key: &(String, Kind)) -> bool {
        if let Some(count) = self.set.get_mut(key) {
            *count -= 1;
            if *count == 0 {
                self.set.remove(key);
            }
            return true;
        }
        let earliest = (self.pending.iter())
            .find(|(xid, k)| *k == key && !self.used.contains(xid))
            .map(|(xid, _)| *xid);
        earliest.is_some_and(|xid| self.used.insert(xid))
    }
}

/// The watch `request` sets, if it sets one.
pub(super) fn watch_of(request: &Request) -> Option<(String, Kind)> {
    match request {
        Request::GetData { path, watch: true } | Request::Exists { path, watch: true } => {
            Some((path.clone(), Kind::Data))
        }
        Request::GetChildren { path, watch: true } => Some((path.clone(), Kind::Child)),
        _ => None,
    }
}

/// Judges "a watch fires once" on `history`.
pub(super) fn watch_fires_once(history: &impl Entries) -> Finding {
    let mut clients: BTreeMap<u32, Client> = BTreeMap::new();
    let mut sessions: BTreeMap<u32, zkh_recipes::SessionId> = BTreeMap::new();
    // Clients whose session ended and that have no new one yet: an event they get then was
    // sent to the ended session before it ended, and is not judged.
    let mut ended_sessions: BTreeSet<u32> = BTreeSet::new();
    let mut judged = 0usize;
    let mut violation = None;
    for (index, entry) in history.each().enumerate() {
        match &entry.event {
            event if event.is_data_loss() => clients.clear(),
            HistoryEvent::Session { client, event } => {
                let ended = match event {
                    SessionEvent::Expired | SessionEvent::Closed => {
                        ended_sessions.insert(*client);
                        true
                    }
                    // A client's first session is recorded after its first request on a real
                    // client (its events are taken after each reply): nothing to drop then.
                    SessionEvent::Connected { session_id }
                    | SessionEvent::Reconnected { session_id } => {
                        ended_sessions.remove(client);
                        let before = sessions.insert(*client, *session_id);
                        before.is_some_and(|before| before != *session_id)
                    }
                    SessionEvent::Disconnected => false,
                };
                if ended {
                    clients.remove(client);
                }
            }
            HistoryEvent::Invoke {
                client,
                xid,
                request,
                ..
            } => {
                if let Some(key) = watch_of(request) {
                    clients
                        .entry(*client)
                        .or_default()
                        .pending
                        .insert(*xid, key);
                }
            }
            HistoryEvent::Complete {
                client,
                xid,
                outcome,
            } => {
                let state = clients.entry(*client).or_default();
                let Some(key) = state.pending.remove(xid) else {
                    continue;
                };
                let set = matches!(
                    outcome,
                    OpOutcome::Unknown
                        | OpOutcome::Reply {
                            reply: Reply::Ok(_),
                            ..
                        }
                );
                if !state.used.remove(xid) && set {
                    *state.set.entry(key).or_default() += 1;
                }
            }
            HistoryEvent::Watch { client: id, event } if !ended_sessions.contains(id) => {
                judged += 1;
                let state = clients.entry(*id).or_default();
                let path = event.path.clone();
                // `NodeDeleted` uses one of the two (a library with a watcher per call hands
                // one event to each read).
                let kinds = Kind::used_by(event.event_type);
                if !(kinds.iter()).any(|kind| state.use_up(&(path.clone(), *kind))) {
                    violation = Some((
                        format!(
                            "client {id} got {:?} {path} with no watch of its session left to \
                             fire: a watch fired twice, or one nobody set",
                            event.event_type
                        ),
                        vec![index],
                    ));
                    break;
                }
            }
            _ => {}
        }
    }
    match violation {
        Some((detail, evidence)) => {
            Finding::new(WATCH_FIRES_ONCE, Class::Always, Some(detail), String::new)
                .with_evidence(history, evidence)
        }
        None => Finding::new(WATCH_FIRES_ONCE, Class::Always, None, move || {
            format!("{judged} watch events, each using a read of its session that set a watch")
        }),
    }
}
