//! `multi`: several write operations applied atomically, all or none.
//!
//! When a `multi` fails, ZooKeeper reports a result per operation: those before the failing one
//! "rolled back" (code 0 in the error result), the failing one its own error, those after it
//! `RuntimeInconsistency` (-2). Nothing of it was applied. [`MultiError::per_op_codes`]
//! rebuilds that list from the index and the error, which is all a client needs to carry.

use serde::{Deserialize, Serialize};

use crate::error::ZkError;
use crate::types::{CreateMode, Stat};

/// One operation inside a `multi`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// Fails the whole `multi` unless `path` exists with `version` (or any version for -1).
    Check {
        /// The node.
        path: String,
        /// The expected version, or -1.
        version: i32,
    },
    /// Creates a node.
    Create {
        /// The path, or the prefix for sequential modes.
        path: String,
        /// The data.
        data: Vec<u8>,
        /// The mode.
        mode: CreateMode,
    },
    /// Deletes a node.
    Delete {
        /// The node.
        path: String,
        /// The expected version, or -1.
        version: i32,
    },
    /// Sets a node's data.
    SetData {
        /// The node.
        path: String,
        /// The new data.
        data: Vec<u8>,
        /// The expected version, or -1.
        version: i32,
    },
}

/// The result of one operation of a successful `multi`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpResult {
    /// The check passed.
    Check,
    /// The node was created at `path`.
    Create {
        /// The created path, with its sequence suffix.
        path: String,
        /// The created node's metadata, when the server returns it. A ZooKeeper 3.8 server
        /// answers a create inside a `multi` with the old-style create response, which has no
        /// `Stat` (ZOOKEEPER-4026; measured), so this is `None` there, from every backend, except for
        /// container creates, which have a response type of their own and do carry it.
        stat: Option<Stat>,
    },
    /// The node was deleted.
    Delete,
    /// The data was set.
    SetData {
        /// The node's new metadata.
        stat: Stat,
    },
}

/// A failed `multi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
pub enum MultiError {
    /// The request as a whole failed (e.g. `ConnectionLoss`, `SessionExpired`, `BadArguments`
    /// for an invalid path found before sending). For an indefinite error, the `multi` may or
    /// may not have been applied, but if it was, it was applied whole.
    #[error("multi failed: {0}")]
    Request(ZkError),
    /// The operation at `index` failed with `error`; nothing was applied.
    #[error("multi operation {index} failed: {error}")]
    Operation {
        /// The index of the first failing operation.
        index: usize,
        /// Its error.
        error: ZkError,
    },
}

impl MultiError {
    /// The error that decided the outcome.
    pub fn error(self) -> ZkError {
        match self {
            MultiError::Request(error) | MultiError::Operation { error, .. } => error,
        }
    }

    /// The per-operation codes ZooKeeper reports for a `multi` of `len` operations: 0 (rolled
    /// back) before the failing one, its code, then -2 (`RuntimeInconsistency`). Empty for a
    /// whole-request failure.
    pub fn per_op_codes(self, len: usize) -> Vec<i32> {
        match self {
            MultiError::Request(_) => Vec::new(),
            MultiError::Operation { index, error } => (0..len)
                .map(|i| match i.cmp(&index) {
                    std::cmp::Ordering::Less => 0,
                    std::cmp::Ordering::Equal => error.code(),
                    std::cmp::Ordering::Greater => ZkError::RuntimeInconsistency.code(),
                })
                .collect(),
        }
    }
}

impl From<ZkError> for MultiError {
    fn from(error: ZkError) -> Self {
        MultiError::Request(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_op_codes_match_the_measured_server() {
        // Measured: [create ok, delete of a missing node, create] gave
        // [rolled back, NoNode, RuntimeInconsistency].
        let error = MultiError::Operation {
            index: 1,
            error: ZkError::NoNode,
        };
        assert_eq!(error.per_op_codes(3), vec![0, -101, -2]);
        assert_eq!(
            MultiError::Request(ZkError::ConnectionLoss).per_op_codes(3),
            Vec::<i32>::new()
        );
    }
}
