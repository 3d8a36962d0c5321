//! Replies of the model, watch notifications, and what applying a request did.
//!
//! The requests themselves ([`Request`], [`Response`]) are `zkh_recipes::request`'s: the same
//! vocabulary the recipes issue and the wire protocol carries.

use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};
pub use zkh_recipes::request::{Request, Response};
use zkh_recipes::symmetry::{Renaming, Symmetric};
use zkh_recipes::{Created, MultiError, OpResult, SessionId, Stat, WatchedEvent, ZkError};

/// The reply to a request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reply {
    /// The request succeeded.
    Ok(Response),
    /// The request failed with this error (for a `Multi`: failed as a whole, before any
    /// operation was judged, e.g. `BadArguments`).
    Error(ZkError),
    /// The `Multi` operation at `index` failed with `error`; nothing was applied.
    MultiFailed {
        /// The first failing operation.
        index: usize,
        /// Its error.
        error: ZkError,
    },
}

/// A watch notification addressed to one session.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Notification {
    /// The session whose watch fired.
    pub session: SessionId,
    /// The event.
    pub event: WatchedEvent,
}

/// What applying a request did.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Applied {
    /// The reply to the requesting session.
    pub reply: Reply,
    /// The zxid of the transaction, for requests that became one (failed writes too: the server
    /// logs an error transaction for them).
    pub zxid: Option<i64>,
    /// The watches that fired, in the order the server sends them.
    pub notifications: Vec<Notification>,
}

fn wrong_kind(response: Response) -> ! {
    panic!("a server answered a request with the wrong response kind: {response:?}")
}

/// Typed views of a reply, for `ZkClient` implementations. Each panics if the reply is of
/// another request's kind: a server that does that has broken its invariant.
impl Reply {
    /// The response, or the error of a single request.
    ///
    /// # Panics
    /// On `MultiFailed`, which only a `Multi` gets.
    pub fn into_response(self) -> Result<Response, ZkError> {
        match self {
            Reply::Ok(response) => Ok(response),
            Reply::Error(error) => Err(error),
            Reply::MultiFailed { error, .. } => {
                panic!("a single request failed as a multi: {error}")
            }
        }
    }

    /// The reply to a `Create`.
    pub fn into_created(self) -> Result<Created, ZkError> {
        match self.into_response()? {
            Response::Created(created) => Ok(created),
            other => wrong_kind(other),
        }
    }

    /// The reply to a `Delete`.
    pub fn into_deleted(self) -> Result<(), ZkError> {
        match self.into_response()? {
            Response::Deleted => Ok(()),
            other => wrong_kind(other),
        }
    }

    /// The reply to an `Exists`.
    pub fn into_exists(self) -> Result<Option<Stat>, ZkError> {
        match self.into_response()? {
            Response::Exists(stat) => Ok(stat),
            other => wrong_kind(other),
        }
    }

    /// The reply to a `GetData`.
    pub fn into_data(self) -> Result<(Vec<u8>, Stat), ZkError> {
        match self.into_response()? {
            Response::Data(data, stat) => Ok((data, stat)),
            other => wrong_kind(other),
        }
    }

    /// The reply to a `GetChildren`.
    pub fn into_children(self) -> Result<(Vec<String>, Stat), ZkError> {
        match self.into_response()? {
            Response::Children(children, stat) => Ok((children, stat)),
            other => wrong_kind(other),
        }
    }

    /// The reply to a `SetData`.
    pub fn into_set_data(self) -> Result<Stat, ZkError> {
        match self.into_response()? {
            Response::SetData(stat) => Ok(stat),
            other => wrong_kind(other),
        }
    }

    /// The reply to a `Sync`.
    pub fn into_synced(self) -> Result<(), ZkError> {
        match self.into_response()? {
            Response::Synced => Ok(()),
            other => wrong_kind(other),
        }
    }

    /// The reply as a machine gets it (see [`zkh_recipes::request::execute`]): a `Multi` that
    /// failed fails with the error of the operation that decided it.
    pub fn into_machine_result(self) -> Result<Response, ZkError> {
        match self {
            Reply::MultiFailed { error, .. } => Err(error),
            other => other.into_response(),
        }
    }

    /// The reply to a `Multi`.
    pub fn into_multi(self) -> Result<Vec<OpResult>, MultiError> {
        match self {
            Reply::Ok(Response::Multi(results)) => Ok(results),
            Reply::Ok(other) => wrong_kind(other),
            Reply::Error(error) => Err(MultiError::Request(error)),
            Reply::MultiFailed { index, error } => Err(MultiError::Operation { index, error }),
        }
    }
}

impl Symmetric for Reply {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Reply::Ok(response) => response.hash_renamed(renaming, state),
            Reply::Error(error) => error.hash(state),
            Reply::MultiFailed { index, error } => (index, error).hash(state),
        }
    }
}
