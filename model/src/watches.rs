//! The server's watch tables and ZooKeeper's trigger rules.
//!
//! A watch belongs to a session and a path and is one-shot. There are two tables, as in
//! ZooKeeper's `WatchManager`: *data* watches (set by `getData` and by `exists`, also on a missing
//! node) and *child* watches (set by `getChildren`). A table holds at most one watch per
//! (path, session): a session that watches a path twice gets one notification.
//!
//! | transaction | fires |
//! | ----------- | ----- |
//! | create `p`  | data watches on `p` (`NodeCreated`); child watches on `parent(p)` (`NodeChildrenChanged`) |
//! | delete `p`  | data watches on `p` and then child watches on `p` (`NodeDeleted`, once per session); child watches on `parent(p)` (`NodeChildrenChanged`) |
//! | setData `p` | data watches on `p` (`NodeDataChanged`) |
//!
//! Firing removes the watch. Closing a session removes all its watches.

use std::collections::{BTreeMap, BTreeSet};

use zkh_recipes::{EventType, SessionId, WatchedEvent};

use crate::request::Notification;
use std::hash::Hasher;
use zkh_recipes::symmetry::{Renaming, Symmetric};

/// The data and child watch tables.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Watches {
    data: BTreeMap<String, BTreeSet<SessionId>>,
    child: BTreeMap<String, BTreeSet<SessionId>>,
}

fn take(table: &mut BTreeMap<String, BTreeSet<SessionId>>, path: &str) -> BTreeSet<SessionId> {
    table.remove(path).unwrap_or_default()
}

fn notify(
    out: &mut Vec<Notification>,
    sessions: &BTreeSet<SessionId>,
    event_type: EventType,
    path: &str,
    zxid: i64,
) {
    for session in sessions {
        out.push(Notification {
            session: *session,
            event: WatchedEvent {
                event_type,
                path: path.to_owned(),
                zxid,
            },
        });
    }
}

impl Watches {
    /// Sets a data watch (`getData`, `exists`).
    pub fn watch_data(&mut self, session: SessionId, path: &str) {
        self.data
            .entry(path.to_owned())
            .or_default()
            .insert(session);
    }

    /// Sets a child watch (`getChildren`).
    pub fn watch_children(&mut self, session: SessionId, path: &str) {
        self.child
            .entry(path.to_owned())
            .or_default()
            .insert(session);
    }

    /// Fires the watches a create of `path` under `parent` triggers.
    pub fn on_create(&mut self, path: &str, parent: &str, zxid: i64, out: &mut Vec<Notification>) {
        notify(
            out,
            &take(&mut self.data, path),
            EventType::NodeCreated,
            path,
            zxid,
        );
        notify(
            out,
            &take(&mut self.child, parent),
            EventType::NodeChildrenChanged,
            parent,
            zxid,
        );
    }

    /// Fires the watches a delete of `path` under `parent` triggers.
    pub fn on_delete(&mut self, path: &str, parent: &str, zxid: i64, out: &mut Vec<Notification>) {
        let data = take(&mut self.data, path);
        notify(out, &data, EventType::NodeDeleted, path, zxid);
        let child: BTreeSet<SessionId> = take(&mut self.child, path)
            .difference(&data)
            .copied()
            .collect();
        notify(out, &child, EventType::NodeDeleted, path, zxid);
        notify(
            out,
            &take(&mut self.child, parent),
            EventType::NodeChildrenChanged,
            parent,
            zxid,
        );
    }

    /// Fires the watches a setData of `path` triggers.
    pub fn on_set_data(&mut self, path: &str, zxid: i64, out: &mut Vec<Notification>) {
        notify(
            out,
            &take(&mut self.data, path),
            EventType::NodeDataChanged,
            path,
            zxid,
        );
    }

    /// Whether `session` has a data watch on `path`.
    pub fn watches_data(&self, session: SessionId, path: &str) -> bool {
        self.data.get(path).is_some_and(|s| s.contains(&session))
    }

    /// Whether `session` has a child watch on `path`.
    pub fn watches_children(&self, session: SessionId, path: &str) -> bool {
        self.child.get(path).is_some_and(|s| s.contains(&session))
    }

    /// Whether any data watch is set on one of `data_paths`, or child watch on one of
    /// `child_paths`.
    pub fn any(&self, data_paths: &[&str], child_paths: &[&str]) -> bool {
        data_paths.iter().any(|p| self.data.contains_key(*p))
            || child_paths.iter().any(|p| self.child.contains_key(*p))
    }

    /// Whether `session` has any watch.
    pub fn of_session(&self, session: SessionId) -> bool {
        let of = |table: &BTreeMap<String, BTreeSet<SessionId>>| {
            table.values().any(|sessions| sessions.contains(&session))
        };
        of(&self.data) || of(&self.child)
    }

    /// Removes every watch of `session`.
    pub fn forget_session(&mut self, session: SessionId) {
        for table in [&mut self.data, &mut self.child] {
            table.retain(|_, sessions| {
                sessions.remove(&session);
                !sessions.is_empty()
            });
        }
    }

    /// The number of (path, session) watches set, data and child together.
    pub fn len(&self) -> usize {
        self.data
            .values()
            .chain(self.child.values())
            .map(BTreeSet::len)
            .sum()
    }

    /// True when no watch is set.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Both tables as sets: a renaming reorders paths and sessions.
impl Symmetric for Watches {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        self.data.hash_renamed(renaming, state);
        self.child.hash_renamed(renaming, state);
    }
}
