//! What a client is told without asking: watch notifications and session events.
//!
//! A watch is **one-shot**: set by `exists`, `getData` (data watches) or `getChildren` (child
//! watch), it fires once and is gone. ZooKeeper fires:
//!
//! | change            | data watch on the node | child watch on the node | child watch on the parent |
//! | ----------------- | ---------------------- | ----------------------- | ------------------------- |
//! | create            | `NodeCreated`          | -                       | `NodeChildrenChanged`     |
//! | delete            | `NodeDeleted`          | `NodeDeleted`           | `NodeChildrenChanged`     |
//! | setData           | `NodeDataChanged`      | -                       | -                         |
//!
//! A session gets one notification per (transaction, path, type), however many of its watches
//! that notification satisfies: a node watched by both `getData` and `getChildren` gives one
//! `NodeDeleted`.
//!
//! Session events follow the connection: [`SessionEvent::Disconnected`] is Curator's
//! SUSPENDED (the session may still be alive on the server; a lock or leadership must be
//! treated as lost), [`SessionEvent::Expired`] is LOST (it certainly is gone).

use serde::{Deserialize, Serialize};

use crate::types::SessionId;

/// The kind of change a watch reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EventType {
    /// An `exists` watch saw the node created.
    NodeCreated,
    /// The watched node was deleted.
    NodeDeleted,
    /// The watched node's data was set.
    NodeDataChanged,
    /// A child of the watched node was created or deleted.
    NodeChildrenChanged,
}

/// A watch notification.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WatchedEvent {
    /// What changed.
    pub event_type: EventType,
    /// The watched path.
    pub path: String,
    /// The zxid of the transaction that fired it, where known. A ZooKeeper 3.8 server sends
    /// [`WatchedEvent::NO_ZXID`] in every notification header (measured), so a client never
    /// learns it, and every `ZkClient` delivers `NO_ZXID` to match. The pure model's
    /// server-side notifications carry the real zxid, for the run history.
    pub zxid: i64,
}

impl WatchedEvent {
    /// The zxid a ZooKeeper 3.8 notification carries: none.
    pub const NO_ZXID: i64 = -1;
}

/// A change in the client's connection or session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SessionEvent {
    /// The client connected with a new session (the first one, or a new one after expiry).
    Connected {
        /// The new session.
        session_id: SessionId,
    },
    /// The connection broke; the session may still live on the server (Curator's SUSPENDED).
    /// In-flight requests failed with `ConnectionLoss`.
    Disconnected,
    /// The client reconnected within the same session and re-registered its watches.
    Reconnected {
        /// The surviving session.
        session_id: SessionId,
    },
    /// The session expired: its ephemerals and watches are gone (Curator's LOST).
    Expired,
    /// The client was closed by its owner.
    Closed,
}

/// One item of a client's event stream.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ClientEvent {
    /// A watch fired.
    Watch(WatchedEvent),
    /// The connection or the session changed.
    Session(SessionEvent),
}
