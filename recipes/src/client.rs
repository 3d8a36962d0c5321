//! The async ZooKeeper client trait that every recipe is written against.
//!
//! Three implementations exist: the in-memory client over the pure model (`zkh-model`, for
//! unit tests), the simulated client on madsim (`zkh-sim`), and `real::RealClient`
//! over a real ZooKeeper server (normal build only). A recipe cannot tell them apart.
//!
//! # Guarantees every implementation gives
//!
//! - **FIFO per client.** Operations issued by one client are applied in the order they were
//!   issued, and their replies come back in that order.
//! - **A watch event before the data that reflects it.** If a reply shows the effect of a
//!   change that fires one of this client's watches, the watch event is already in the event
//!   stream when that reply is returned: [`ZkClient::try_next_event`] will yield it.
//! - **Events in zxid order.** Watch events of one client arrive in the order of the
//!   transactions that fired them.
//! - **Replies and events in arrival order.** An event that arrived after a reply is not
//!   handed out before that reply has been returned (or its future dropped), as the Java
//!   client's one event thread runs reply callbacks and watchers in the order the server sent
//!   them. The simulated client gives this exactly; `RealClient` gives what `zookeeper-client`
//!   gives (it completes a watcher before any later reply, but does not hold a watcher back
//!   behind an earlier reply nobody has taken).
//! - **Validation before sending.** An invalid path fails with [`ZkError::BadArguments`] and
//!   nothing is sent. An invalid version is sent, and the server answers `BadVersion`.
//!
//! # Error handling on ConnectionLoss
//!
//! `ConnectionLoss` is *indefinite* ([`ZkError::is_definite`] is false): the operation may have
//! been applied. A create that got it may have created the node; a recipe must find out
//! (Curator's protection: a unique prefix in the node's name) before it creates again.
//!
//! # Cancellation safety
//!
//! Dropping an operation's future does not cancel the request: it may still be applied.

use std::future::Future;

use crate::error::ZkError;
use crate::event::ClientEvent;
use crate::ops::{MultiError, Op, OpResult};
use crate::types::{CreateMode, Created, SessionId, Stat};

/// An async ZooKeeper client bound to one session at a time.
///
/// Methods take paths as text and validate them like ZooKeeper does (see [`crate::path`]).
/// Versions are ZooKeeper's: `-1` ([`crate::ANY_VERSION`]) matches any version.
pub trait ZkClient: Send + Sync {
    /// The current session's id. It changes when a client that re-creates sessions after
    /// expiry gets a new one.
    fn session_id(&self) -> SessionId;

    /// Creates a node and returns the path the server gave it (with its sequence suffix for
    /// sequential modes) and its `Stat`.
    ///
    /// # Notable errors
    /// `NodeExists`; `NoNode` when the parent is missing; `NoChildrenForEphemerals` when the
    /// parent is ephemeral; `BadArguments` for an invalid path or for `/`.
    fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> impl Future<Output = Result<Created, ZkError>> + Send;

    /// Deletes a node if its version is `version` (or any, for -1).
    ///
    /// # Notable errors
    /// `NoNode`, `BadVersion`, `NotEmpty`; `BadArguments` for an invalid path or for `/`.
    fn delete(&self, path: &str, version: i32) -> impl Future<Output = Result<(), ZkError>> + Send;

    /// The node's `Stat`, or `None` if it does not exist. With `watch`, sets a data watch; on a
    /// missing node the watch fires `NodeCreated` when the node appears.
    fn exists(
        &self,
        path: &str,
        watch: bool,
    ) -> impl Future<Output = Result<Option<Stat>, ZkError>> + Send;

    /// The node's data and `Stat`. With `watch`, sets a data watch (only if the node exists).
    ///
    /// # Notable errors
    /// `NoNode`.
    fn get_data(
        &self,
        path: &str,
        watch: bool,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat), ZkError>> + Send;

    /// The node's children (names, not paths, in the server's order; sort them yourself) and
    /// `Stat`. With `watch`, sets a child watch (only if the node exists).
    ///
    /// # Notable errors
    /// `NoNode`.
    fn get_children(
        &self,
        path: &str,
        watch: bool,
    ) -> impl Future<Output = Result<(Vec<String>, Stat), ZkError>> + Send;

    /// Sets the node's data if its version is `version` (or any, for -1), and returns the new
    /// `Stat`.
    ///
    /// # Notable errors
    /// `NoNode`, `BadVersion`.
    fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: i32,
    ) -> impl Future<Output = Result<Stat, ZkError>> + Send;

    /// Applies `ops` atomically: all of them, or none.
    fn multi(&self, ops: &[Op]) -> impl Future<Output = Result<Vec<OpResult>, MultiError>> + Send;

    /// Makes the connected server catch up with the leader before the reply, so that reads
    /// issued after it see every write committed before it.
    fn sync(&self, path: &str) -> impl Future<Output = Result<(), ZkError>> + Send;

    /// The next watch or session event, waiting for one. `None` once the client is closed and
    /// every event before the close has been taken.
    fn next_event(&self) -> impl Future<Output = Option<ClientEvent>> + Send;

    /// The next event if one is already queued.
    fn try_next_event(&self) -> Option<ClientEvent>;
}
