//! The requests a client sends and the responses it gets, as values.
//!
//! Recipes written as state machines emit [`Request`]s and receive [`Response`]s; the one async
//! driver turns them into [`ZkClient`] calls with [`execute`]; the pure model applies the same
//! values; the simulator carries them over its network.

use serde::{Deserialize, Serialize};

use crate::client::ZkClient;
use crate::error::ZkError;
use crate::ops::{MultiError, Op, OpResult};
use crate::types::{CreateMode, Created, Stat};

/// One client request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Request {
    /// `create(path, data, mode)`.
    Create {
        /// The path, or the prefix of a sequential node.
        path: String,
        /// The node's data.
        data: Vec<u8>,
        /// The mode.
        mode: CreateMode,
    },
    /// `delete(path, version)`.
    Delete {
        /// The node.
        path: String,
        /// The expected version, or -1.
        version: i32,
    },
    /// `exists(path, watch)`.
    Exists {
        /// The node.
        path: String,
        /// Set a data watch.
        watch: bool,
    },
    /// `getData(path, watch)`.
    GetData {
        /// The node.
        path: String,
        /// Set a data watch.
        watch: bool,
    },
    /// `getChildren(path, watch)`.
    GetChildren {
        /// The node.
        path: String,
        /// Set a child watch.
        watch: bool,
    },
    /// `setData(path, data, version)`.
    SetData {
        /// The node.
        path: String,
        /// The new data.
        data: Vec<u8>,
        /// The expected version, or -1.
        version: i32,
    },
    /// `multi(ops)`.
    Multi(Vec<Op>),
    /// `sync(path)`.
    Sync {
        /// The path (ZooKeeper ignores it beyond validation).
        path: String,
    },
}

impl Request {
    /// True for requests that become a transaction (and take a zxid) when sent to the server.
    pub fn is_write(&self) -> bool {
        match self {
            Request::Create { .. } | Request::Delete { .. } | Request::SetData { .. } => true,
            Request::Multi(ops) => !ops.is_empty(),
            Request::Exists { .. }
            | Request::GetData { .. }
            | Request::GetChildren { .. }
            | Request::Sync { .. } => false,
        }
    }
}

/// A successful reply.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Response {
    /// To `Create`.
    Created(Created),
    /// To `Delete`.
    Deleted,
    /// To `Exists`: the `Stat`, or `None` if the node is missing.
    Exists(Option<Stat>),
    /// To `GetData`.
    Data(Vec<u8>, Stat),
    /// To `GetChildren`: names, sorted.
    Children(Vec<String>, Stat),
    /// To `SetData`.
    SetData(Stat),
    /// To a successful `Multi`.
    Multi(Vec<OpResult>),
    /// To `Sync`.
    Synced,
}

/// Runs `request` on `client` and returns its response. A failed `multi` gives the error of the
/// operation that failed.
pub async fn execute<C: ZkClient + ?Sized>(
    client: &C,
    request: &Request,
) -> Result<Response, ZkError> {
    Ok(match request {
        Request::Create { path, data, mode } => {
            Response::Created(client.create(path, data, *mode).await?)
        }
        Request::Delete { path, version } => {
            client.delete(path, *version).await?;
            Response::Deleted
        }
        Request::Exists { path, watch } => Response::Exists(client.exists(path, *watch).await?),
        Request::GetData { path, watch } => {
            let (data, stat) = client.get_data(path, *watch).await?;
            Response::Data(data, stat)
        }
        Request::GetChildren { path, watch } => {
            let (children, stat) = client.get_children(path, *watch).await?;
            Response::Children(children, stat)
        }
        Request::SetData {
            path,
            data,
            version,
        } => Response::SetData(client.set_data(path, data, *version).await?),
        Request::Multi(ops) => Response::Multi(client.multi(ops).await.map_err(MultiError::error)?),
        Request::Sync { path } => {
            client.sync(path).await?;
            Response::Synced
        }
    })
}
