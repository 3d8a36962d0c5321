//! The pure ZooKeeper state machine: `apply(session, request) -> (reply, watch events)`.
//!
//! It is what a ZooKeeper server computes, with no time, no I/O and no randomness. Sessions are
//! opened and closed explicitly (the simulator decides *when* a session expires; the model only
//! does what the close transaction does). The same requests applied in the same order give the
//! same state, replies and notifications, which is what lets the simulator replicate it and the
//! model checker hash it.
//!
//! # Transactions and zxids
//!
//! Every write request becomes a transaction with the next zxid, **including failed ones**: the
//! server logs an error transaction for a create that met `NodeExists`, so the next success's
//! zxid is two ahead (measured). Opening and closing a session are transactions too. Reads and
//! `sync` take no zxid. Arguments that the client library rejects before sending (an invalid
//! path, `create /`) take none either: the request never reaches the server.
//!
//! The zxid is `(epoch << 32) | counter`. A standalone server, like a fresh model, is in epoch 0;
//! [`ZkModel::begin_epoch`] is for the simulated ensemble's leader changes.
//!
//! # Checks, in ZooKeeper's order
//!
//! - create: the parent exists (`NoNode`), the node does not (`NodeExists`), the parent is not
//!   ephemeral (`NoChildrenForEphemerals`).
//! - delete: not a system node (`BadArguments`), exists (`NoNode`), version (`BadVersion`), no
//!   children (`NotEmpty`).
//! - setData and check: exists (`NoNode`), version (`BadVersion`).
//!
//! # Multi
//!
//! A `multi` is one transaction: its operations are checked and applied in order against the
//! state the earlier ones left, all under one zxid (so sequential creates take consecutive
//! numbers). If one fails, the state is restored, no watch fires, and the reply names the
//! failing index; the error transaction still takes the zxid.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use zkh_recipes::path::{parent_of, validate_create_path, validate_delete_path, validate_path};
use zkh_recipes::{CreateMode, Created, EventType, Op, OpResult, SessionId, ZkError};

use crate::request::{Applied, Notification, Reply, Request, Response};
use crate::shared::Shared;
use crate::tree::{DataTree, Node, SYSTEM_PATHS};
use crate::watches::Watches;
use std::hash::{Hash, Hasher};
use zkh_recipes::symmetry::{Renaming, Symmetric};

/// The first session id handed out: a standalone server with id 1 starts near `1 << 56`.
const FIRST_SESSION_ID: i64 = 1 << 56;

/// The watches a client holds, by class, as it re-registers them on reconnection.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WatchSet {
    /// Data watches on existing nodes (`getData`, `exists`).
    pub data: BTreeSet<String>,
    /// `exists` watches on missing nodes.
    pub exist: BTreeSet<String>,
    /// Child watches (`getChildren`).
    pub child: BTreeSet<String>,
}

/// One live session.
///
/// Its hash is empty: its ephemerals are the tree's nodes it owns, so two servers with the
/// same tree and the same open sessions have the same ephemerals for each, and the session
/// table hashes as its ids alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Session {
    /// The paths of the ephemeral nodes it owns.
    pub ephemerals: BTreeSet<String>,
}

/// The state of a ZooKeeper server: data tree, sessions, watches, last zxid.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZkModel {
    // Each part shared between copies until one changes it: a model checker copies the server
    // for every step that reaches it, and most steps change one part or none.
    tree: Shared<DataTree>,
    watches: Shared<Watches>,
    sessions: Shared<BTreeMap<SessionId, Session>>,
    last_zxid: i64,
    next_session_id: i64,
}

impl Default for ZkModel {
    fn default() -> Self {
        ZkModel::new()
    }
}

impl ZkModel {
    /// A fresh server: `/` and the system nodes, no session, zxid 0.
    pub fn new() -> ZkModel {
        ZkModel {
            tree: Shared::new(DataTree::default()),
            watches: Shared::new(Watches::default()),
            sessions: Shared::new(BTreeMap::new()),
            last_zxid: 0,
            next_session_id: FIRST_SESSION_ID,
        }
    }

    /// A server of an ensemble restarted empty after the data of `lost` (its servers' models)
    /// was wiped: no node, no session, zxid 0, and session ids that continue after every one
    /// `lost` issued. ZooKeeper draws a server's first session id from its clock when it starts
    /// (`SessionTrackerImpl.initializeNextSessionId`), so an ensemble restarted empty does not
    /// hand out again an id a client may still hold.
    pub fn restarted_empty<'m>(lost: impl IntoIterator<Item = &'m ZkModel>) -> ZkModel {
        let next_session_id = (lost.into_iter())
            .map(|model| model.next_session_id)
            .fold(FIRST_SESSION_ID, i64::max);
        ZkModel {
            next_session_id,
            ..ZkModel::new()
        }
    }

    /// The data tree.
    pub fn tree(&self) -> &DataTree {
        &self.tree
    }

    /// The watch tables.
    pub fn watches(&self) -> &Watches {
        &self.watches
    }

    /// The live sessions.
    pub fn sessions(&self) -> &BTreeMap<SessionId, Session> {
        &self.sessions
    }

    /// The zxid of the last transaction.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// Starts epoch `epoch`: the next zxid is `(epoch << 32) | 1`.
    ///
    /// # Panics
    /// If that would not move the zxid forward.
    pub fn begin_epoch(&mut self, epoch: u32) {
        let base = i64::from(epoch) << 32;
        assert!(
            base > self.last_zxid,
            "epoch {epoch} does not move zxid {:#x} forward",
            self.last_zxid
        );
        self.last_zxid = base;
    }

    fn next_zxid(&mut self) -> i64 {
        self.last_zxid += 1;
        self.last_zxid
    }

    /// A transaction that changes nothing but still takes its zxid, as ZooKeeper logs an error
    /// transaction: e.g. closing a session that was closed meanwhile. Returns the zxid.
    pub fn apply_noop(&mut self) -> i64 {
        self.next_zxid()
    }

    /// Opens a session (a transaction) and returns its id.
    pub fn open_session(&mut self) -> SessionId {
        self.next_zxid();
        let id = SessionId(self.next_session_id);
        self.next_session_id += 1;
        self.sessions.to_mut().insert(id, Session::default());
        id
    }

    /// Closes (or expires) `session`: one transaction that deletes its ephemeral nodes and fires
    /// the watches of the other sessions. Its own watches are dropped. Returns the notifications,
    /// or `None` if the session was not live.
    pub fn close_session(&mut self, session: SessionId) -> Option<Vec<Notification>> {
        if !self.sessions.contains_key(&session) {
            return None;
        }
        let closed = self
            .sessions
            .to_mut()
            .remove(&session)
            .expect("the session is live");
        let zxid = self.next_zxid();
        self.forget_watches(session);
        let mut notifications = Vec::new();
        for path in &closed.ephemerals {
            self.tree.to_mut().delete(path, zxid);
            self.on_delete(path, zxid, &mut notifications);
        }
        Some(notifications)
    }

    /// A faulty close, for the guarantee checker's control only: `session` ends (its watches
    /// forgotten, a zxid taken) but its ephemeral nodes stay, owned by a session that is gone.
    /// ZooKeeper deletes them in the close's transaction ([`ZkModel::close_session`]).
    pub fn close_session_keeping_ephemerals(&mut self, session: SessionId) -> bool {
        if self.sessions.to_mut().remove(&session).is_none() {
            return false;
        }
        self.next_zxid();
        self.forget_watches(session);
        true
    }

    /// Deletes every container that has had children and has none left, each in its own
    /// transaction, as the server's container manager does on its timer.
    pub fn reap_containers(&mut self) -> Vec<Notification> {
        let mut notifications = Vec::new();
        for path in self.tree.empty_containers() {
            notifications.extend(self.delete_container(&path).unwrap_or_default());
        }
        notifications
    }

    /// One transaction of the container manager (ZooKeeper's `deleteContainer` request): deletes
    /// `path` if it is still a container with no children, and returns the watch events it
    /// fired. `None`, and no zxid taken, if it is not (a child came meanwhile, or it is gone):
    /// the server logs an error transaction instead ([`ZkModel::apply_noop`]).
    pub fn delete_container(&mut self, path: &str) -> Option<Vec<Notification>> {
        let node = self.tree.get(path)?;
        if !node.container || !node.children.is_empty() {
            return None;
        }
        let mut notifications = Vec::new();
        let zxid = self.next_zxid();
        self.tree.to_mut().delete(path, zxid);
        self.on_delete(path, zxid, &mut notifications);
        Some(notifications)
    }

    /// Re-registers the watches of a session that reconnected to this server, as ZooKeeper's
    /// `setWatches` does with the client's last seen zxid: a watch whose condition changed after
    /// `last_zxid` fires at once, the others are registered.
    ///
    /// - data watch: node gone, `NodeDeleted`; `mzxid > last_zxid`, `NodeDataChanged`;
    /// - exist watch: node there, `NodeCreated`;
    /// - child watch: node gone, `NodeDeleted`; `pzxid > last_zxid`, `NodeChildrenChanged`.
    pub fn set_watches(
        &mut self,
        session: SessionId,
        last_zxid: i64,
        watches: &WatchSet,
    ) -> Vec<Notification> {
        // The changes happened while the client was away, not in one transaction: the events
        // carry no zxid.
        let mut fired = Vec::new();
        let zxid = zkh_recipes::WatchedEvent::NO_ZXID;
        let mut fire = |event_type, path: &str| {
            fired.push(Notification {
                session,
                event: zkh_recipes::WatchedEvent {
                    event_type,
                    path: path.to_owned(),
                    zxid,
                },
            });
        };
        for path in &watches.data {
            match self.tree.get(path) {
                None => fire(EventType::NodeDeleted, path),
                Some(node) if node.mzxid > last_zxid => fire(EventType::NodeDataChanged, path),
                Some(_) => self.watches.to_mut().watch_data(session, path),
            }
        }
        for path in &watches.exist {
            match self.tree.get(path) {
                Some(_) => fire(EventType::NodeCreated, path),
                None => self.watches.to_mut().watch_data(session, path),
            }
        }
        for path in &watches.child {
            match self.tree.get(path) {
                None => fire(EventType::NodeDeleted, path),
                Some(node) if node.pzxid > last_zxid => fire(EventType::NodeChildrenChanged, path),
                Some(_) => self.watches.to_mut().watch_children(session, path),
            }
        }
        fired
    }

    /// Drops every watch: what a server's replica keeps when it adopts a leader's snapshot, since
    /// watches live on the server a client is connected to, not in the replicated state.
    pub fn clear_watches(&mut self) {
        self.watches = Shared::new(Watches::default());
    }

    /// Drops the watches of one session on this server (its client moved to another server).
    pub fn forget_watches(&mut self, session: SessionId) {
        if self.watches.of_session(session) {
            self.watches.to_mut().forget_session(session);
        }
    }

    /// Sets a data watch, if `session` has none on `path` yet.
    fn watch_data(&mut self, session: SessionId, path: &str) {
        if !self.watches.watches_data(session, path) {
            self.watches.to_mut().watch_data(session, path);
        }
    }

    /// Sets a child watch, if `session` has none on `path` yet.
    fn watch_children(&mut self, session: SessionId, path: &str) {
        if !self.watches.watches_children(session, path) {
            self.watches.to_mut().watch_children(session, path);
        }
    }

    /// Fires the watches a create of `path` triggers (the watch tables change only if any).
    fn on_create(&mut self, path: &str, zxid: i64, out: &mut Vec<Notification>) {
        let parent = parent_of(path);
        if self.watches.any(&[path], &[parent]) {
            self.watches.to_mut().on_create(path, parent, zxid, out);
        }
    }

    /// Fires the watches a delete of `path` triggers.
    fn on_delete(&mut self, path: &str, zxid: i64, out: &mut Vec<Notification>) {
        let parent = parent_of(path);
        if self.watches.any(&[path], &[path, parent]) {
            self.watches.to_mut().on_delete(path, parent, zxid, out);
        }
    }

    /// Fires the watches a setData of `path` triggers.
    fn on_set_data(&mut self, path: &str, zxid: i64, out: &mut Vec<Notification>) {
        if self.watches.any(&[path], &[]) {
            self.watches.to_mut().on_set_data(path, zxid, out);
        }
    }

    /// Applies one request from `session`.
    pub fn apply(&mut self, session: SessionId, request: &Request) -> Applied {
        let mut notifications = Vec::new();
        if let Err(error) = check_arguments(request) {
            return Applied {
                reply: Reply::Error(error),
                zxid: None,
                notifications,
            };
        }
        if !self.sessions.contains_key(&session) {
            return Applied {
                reply: Reply::Error(ZkError::SessionExpired),
                zxid: None,
                notifications,
            };
        }
        if !request.is_write() {
            let reply = match self.read(session, request) {
                Ok(response) => Reply::Ok(response),
                Err(error) => Reply::Error(error),
            };
            return Applied {
                reply,
                zxid: None,
                notifications,
            };
        }
        let zxid = self.next_zxid();
        let reply = match request {
            Request::Multi(ops) => self.multi(session, ops, zxid, &mut notifications),
            _ => {
                let op = single_write_op(request);
                match self.write(session, &op, zxid, &mut notifications) {
                    Ok(result) => Reply::Ok(single_write_response(result)),
                    Err(error) => Reply::Error(error),
                }
            }
        };
        Applied {
            reply,
            zxid: Some(zxid),
            notifications,
        }
    }

    fn read(&mut self, session: SessionId, request: &Request) -> Result<Response, ZkError> {
        match request {
            Request::Exists { path, watch } => {
                if *watch {
                    self.watch_data(session, path);
                }
                Ok(Response::Exists(self.tree.get(path).map(Node::stat)))
            }
            Request::GetData { path, watch } => {
                let node = self.tree.get(path).ok_or(ZkError::NoNode)?;
                let reply = Response::Data(node.data.clone(), node.stat());
                if *watch {
                    self.watch_data(session, path);
                }
                Ok(reply)
            }
            Request::GetChildren { path, watch } => {
                let node = self.tree.get(path).ok_or(ZkError::NoNode)?;
                let reply =
                    Response::Children(node.children.iter().cloned().collect(), node.stat());
                if *watch {
                    self.watch_children(session, path);
                }
                Ok(reply)
            }
            Request::Sync { .. } => Ok(Response::Synced),
            _ => unreachable!("read() is only called for reads, got {request:?}"),
        }
    }

    fn multi(
        &mut self,
        session: SessionId,
        ops: &[Op],
        zxid: i64,
        notifications: &mut Vec<Notification>,
    ) -> Reply {
        let before = (
            self.tree.clone(),
            self.watches.clone(),
            self.sessions.clone(),
        );
        let mut fired = Vec::new();
        let mut results = Vec::with_capacity(ops.len());
        for (index, op) in ops.iter().enumerate() {
            match self.write(session, op, zxid, &mut fired) {
                Ok(result) => results.push(result),
                Err(error) => {
                    (self.tree, self.watches, self.sessions) = before;
                    return Reply::MultiFailed { index, error };
                }
            }
        }
        notifications.extend(fired);
        for (op, result) in ops.iter().zip(&mut results) {
            // A 3.8 server answers a create inside a multi without its Stat (ZOOKEEPER-4026),
            // except a container create, which has a response type of its own (measured).
            if let (Op::Create { mode, .. }, OpResult::Create { stat, .. }) = (op, result) {
                if !mode.is_container() {
                    *stat = None;
                }
            }
        }
        Reply::Ok(Response::Multi(results))
    }

    /// Checks and applies one write operation at `zxid`.
    fn write(
        &mut self,
        session: SessionId,
        op: &Op,
        zxid: i64,
        out: &mut Vec<Notification>,
    ) -> Result<OpResult, ZkError> {
        match op {
            Op::Create { path, data, mode } => self.create(session, path, data, *mode, zxid, out),
            Op::Delete { path, version } => {
                if SYSTEM_PATHS.contains(&path.as_str()) {
                    return Err(ZkError::BadArguments);
                }
                let node = self.tree.get(path).ok_or(ZkError::NoNode)?;
                check_version(node, *version)?;
                if !node.children.is_empty() {
                    return Err(ZkError::NotEmpty);
                }
                let removed = self.tree.to_mut().delete(path, zxid);
                if let Some(owner) = removed.ephemeral_owner {
                    self.sessions
                        .to_mut()
                        .get_mut(&owner)
                        .map(|s| s.ephemerals.remove(path.as_str()));
                }
                self.on_delete(path, zxid, out);
                Ok(OpResult::Delete)
            }
            Op::SetData {
                path,
                data,
                version,
            } => {
                check_version(self.tree.get(path).ok_or(ZkError::NoNode)?, *version)?;
                let stat = self.tree.to_mut().set_data(path, data.clone(), zxid);
                self.on_set_data(path, zxid, out);
                Ok(OpResult::SetData { stat })
            }
            Op::Check { path, version } => {
                check_version(self.tree.get(path).ok_or(ZkError::NoNode)?, *version)?;
                Ok(OpResult::Check)
            }
        }
    }

    fn create(
        &mut self,
        session: SessionId,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        zxid: i64,
        out: &mut Vec<Notification>,
    ) -> Result<OpResult, ZkError> {
        let parent_path = parent_of(path);
        let parent = self.tree.get(parent_path).ok_or(ZkError::NoNode)?;
        let path = if mode.is_sequential() {
            format!("{path}{:010}", parent.creations)
        } else {
            path.to_owned()
        };
        if self.tree.get(&path).is_some() {
            return Err(ZkError::NodeExists);
        }
        if parent.ephemeral_owner.is_some() {
            return Err(ZkError::NoChildrenForEphemerals);
        }
        let owner = mode.is_ephemeral().then_some(session);
        self.tree
            .to_mut()
            .create(&path, data.to_vec(), zxid, owner, mode.is_container());
        if owner.is_some() {
            self.sessions
                .to_mut()
                .get_mut(&session)
                .expect("the session was checked to be live")
                .ephemerals
                .insert(path.clone());
        }
        self.on_create(&path, zxid, out);
        let stat = self.tree.get(&path).expect("just created").stat();
        Ok(OpResult::Create {
            path,
            stat: Some(stat),
        })
    }
}

fn check_version(node: &Node, version: i32) -> Result<(), ZkError> {
    if version != -1 && version != node.version {
        return Err(ZkError::BadVersion);
    }
    Ok(())
}

/// The checks a client library makes before sending: path syntax, `create /`, `delete /`.
fn check_arguments(request: &Request) -> Result<(), ZkError> {
    match request {
        Request::Create { path, mode, .. } => validate_create_path(path, mode.is_sequential()),
        Request::Delete { path, .. } => validate_delete_path(path),
        Request::Exists { path, .. }
        | Request::GetData { path, .. }
        | Request::GetChildren { path, .. }
        | Request::SetData { path, .. }
        | Request::Sync { path } => validate_path(path),
        Request::Multi(ops) => ops.iter().try_for_each(|op| match op {
            Op::Create { path, mode, .. } => validate_create_path(path, mode.is_sequential()),
            Op::Delete { path, .. } => validate_delete_path(path),
            Op::Check { path, .. } | Op::SetData { path, .. } => validate_path(path),
        }),
    }
}

fn single_write_op(request: &Request) -> Op {
    match request {
        Request::Create { path, data, mode } => Op::Create {
            path: path.clone(),
            data: data.clone(),
            mode: *mode,
        },
        Request::Delete { path, version } => Op::Delete {
            path: path.clone(),
            version: *version,
        },
        Request::SetData {
            path,
            data,
            version,
        } => Op::SetData {
            path: path.clone(),
            data: data.clone(),
            version: *version,
        },
        _ => unreachable!("single_write_op is only called for single writes, got {request:?}"),
    }
}

fn single_write_response(result: OpResult) -> Response {
    match result {
        OpResult::Create { path, stat } => Response::Created(Created {
            path,
            stat: stat.expect("a single create returns its Stat"),
        }),
        OpResult::Delete => Response::Deleted,
        OpResult::SetData { stat } => Response::SetData(stat),
        OpResult::Check => unreachable!("a single write is never a check"),
    }
}

impl Symmetric for Session {
    fn hash_renamed<H: Hasher>(&self, _: &Renaming<'_>, _: &mut H) {}
}

impl Hash for Session {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

/// The server's identities: in its tree, its watch tables, its sessions. Each part's renamed
/// hashes are cached with it.
impl Symmetric for ZkModel {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let ZkModel {
            tree,
            watches,
            sessions,
            last_zxid,
            next_session_id,
        } = self;
        tree.hash_renamed(renaming, state);
        watches.hash_renamed(renaming, state);
        sessions.hash_renamed(renaming, state);
        (last_zxid, next_session_id).hash(state);
    }

    const CACHES_PARTS: bool = true;
}
