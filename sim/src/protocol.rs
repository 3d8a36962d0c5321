//! The messages of the simulated ensemble: client ↔ server and server ↔ server.
//!
//! Messages are Rust values moved through the simulated network; nothing is serialized.
//! The server ↔ server part is a small ZAB: votes to elect the server with the highest
//! (zxid, id), a snapshot from the new leader, proposals acknowledged by a quorum, commits in
//! zxid order, and heartbeats both ways (a follower's heartbeat carries the sessions its clients
//! touched, so the leader, which owns session expiry, hears of them).

use std::collections::BTreeMap;

use zkh_model::{Reply, Request, WatchSet, ZkModel};
use zkh_recipes::{SessionId, WatchedEvent};

/// A node of the simulated network.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Addr {
    /// Server `myid` (1-based).
    Server(u32),
    /// Client process (0-based).
    Client(u32),
}

/// Where a transaction came from: the server that will reply, and to whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The server the client is connected to.
    pub server: u32,
    /// The client process.
    pub client: u32,
    /// The client's request id.
    pub xid: u64,
    /// The client connection the request came on, which the reply must take.
    pub conn: u64,
}

/// What a transaction does to the replicated state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnKind {
    /// Create a session with this timeout.
    OpenSession {
        /// The negotiated timeout.
        timeout_ms: u64,
    },
    /// Close (or expire) a session.
    CloseSession {
        /// The session.
        session: SessionId,
        /// True when the server expired it, false when its client asked.
        expired: bool,
    },
    /// A client's write request.
    Write {
        /// The session.
        session: SessionId,
        /// The request.
        request: Request,
    },
    /// The leader's container manager deletes an empty container (ZooKeeper's
    /// `deleteContainer`; an error transaction if the node has a child again, or is gone).
    DeleteContainer {
        /// The container.
        path: String,
    },
}

/// A proposed or committed transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Txn {
    /// The change.
    pub kind: TxnKind,
    /// Who to reply to, if a client asked for it.
    pub origin: Option<Origin>,
}

/// The replicated state a new leader sends to its followers.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The committed data tree and sessions.
    pub model: ZkModel,
    /// Every live session's timeout.
    pub session_timeouts: BTreeMap<SessionId, u64>,
}

/// One message.
#[derive(Clone, Debug)]
pub enum Message {
    // ---- client → server
    /// Open a new session (`session: None`) or resume one.
    Connect {
        /// The session to resume.
        session: Option<SessionId>,
        /// The last zxid the client saw: a server behind it refuses the client.
        last_zxid: i64,
        /// The requested timeout.
        timeout_ms: u64,
    },
    /// A request.
    Request {
        /// The request id.
        xid: u64,
        /// The session.
        session: SessionId,
        /// The request.
        request: Request,
    },
    /// A heartbeat of an idle client.
    Ping {
        /// The session.
        session: SessionId,
    },
    /// Re-register watches after a reconnection.
    SetWatches {
        /// The session.
        session: SessionId,
        /// The last zxid the client saw.
        last_zxid: i64,
        /// The watches to re-register.
        watches: WatchSet,
    },
    /// Close the session.
    Close {
        /// The request id.
        xid: u64,
        /// The session.
        session: SessionId,
    },

    // ---- server → client
    /// The connection is up.
    Connected {
        /// The session, new or resumed.
        session: SessionId,
        /// The negotiated timeout.
        timeout_ms: u64,
    },
    /// The server will not serve this client (it is behind the client, or has no leader).
    Refused,
    /// The session the client tried to resume has expired.
    Expired,
    /// The reply to request `xid`.
    Reply {
        /// The request id.
        xid: u64,
        /// The server's last applied zxid.
        zxid: i64,
        /// The reply.
        reply: Reply,
    },
    /// A watch fired.
    Notify(WatchedEvent),
    /// The answer to a ping.
    Pong,
    /// The server drops the connection (it lost its leader, or the session was expired).
    Disconnect,

    // ---- server ↔ server
    /// An election vote: "I have logged up to `zxid`, in `epoch`".
    Vote {
        /// The sender's accepted epoch.
        epoch: u32,
        /// The sender's last logged zxid (committed, or proposed to it and acknowledged).
        zxid: i64,
    },
    /// "I follow (or am) `leader` in `epoch`": the answer to a vote from a looking server.
    CurrentLeader {
        /// The leader.
        leader: u32,
        /// Its epoch.
        epoch: u32,
    },
    /// A looking server asks an established leader to take it on.
    Join,
    /// The leader of `epoch` sends its committed state.
    NewLeader {
        /// The new epoch.
        epoch: u32,
        /// The committed state.
        snapshot: Box<Snapshot>,
    },
    /// The answer to `NewLeader`: the sender took the snapshot and follows the leader of
    /// `epoch`. `fresh` when it had not accepted that epoch before (ZooKeeper's ACKEPOCH): a
    /// leader is established, and serves, once a quorum counting itself took its epoch fresh.
    Following {
        /// The epoch.
        epoch: u32,
        /// Whether the sender accepted `epoch` with this snapshot.
        fresh: bool,
    },
    /// A follower forwards a client's write to the leader.
    Forward {
        /// The transaction to propose.
        txn: Txn,
    },
    /// A follower forwards a client's `sync` to the leader.
    SyncRequest {
        /// Who to answer.
        origin: Origin,
    },
    /// The leader's answer to a sync: every commit up to `zxid` was sent before this.
    SyncDone {
        /// Who to answer.
        origin: Origin,
        /// The leader's last committed zxid when it answered.
        zxid: i64,
    },
    /// The leader proposes `txn` as `zxid`.
    Propose {
        /// The epoch.
        epoch: u32,
        /// The zxid.
        zxid: i64,
        /// The transaction.
        txn: Txn,
    },
    /// A follower logged proposal `zxid`.
    Ack {
        /// The epoch.
        epoch: u32,
        /// The zxid.
        zxid: i64,
    },
    /// The leader commits `zxid`.
    Commit {
        /// The epoch.
        epoch: u32,
        /// The zxid.
        zxid: i64,
    },
    /// A follower asks the leader whether a session a client wants to resume is still alive
    /// (ZooKeeper's REVALIDATE): the leader touches it if so, before the client is answered.
    Revalidate {
        /// The client's connection, to answer.
        origin: Origin,
        /// The session.
        session: SessionId,
    },
    /// The leader's answer to `Revalidate`.
    Revalidated {
        /// The client's connection, to answer.
        origin: Origin,
        /// The session.
        session: SessionId,
        /// Whether the leader knows the session and is not expiring it.
        valid: bool,
    },
    /// Leader ↔ follower heartbeat; a follower's carries the sessions its clients touched.
    Heartbeat {
        /// The epoch.
        epoch: u32,
        /// Sessions touched since the last heartbeat.
        touched: Vec<SessionId>,
    },
    /// The connection to the sender broke (the process died): what TCP's reset tells a peer.
    PeerDown,
}
