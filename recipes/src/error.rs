//! The errors a ZooKeeper operation can end with, and what a caller may conclude from each.
//!
//! Two questions matter to a recipe after a failed operation:
//!
//! - **Did the operation happen?** [`ZkError::is_definite`] is true when it certainly did not:
//!   the server judged it and refused it (`NoNode`, `NodeExists`, `BadVersion`, ...). It is false
//!   for `ConnectionLoss` and the timeouts: the request may have been applied and only its reply
//!   lost. A recipe that created a sequential node and got `ConnectionLoss` must look for its own
//!   node before it creates another one (Curator's "protection").
//! - **Is the session gone?** [`ZkError::is_terminal`] is true for `SessionExpired`, `AuthFailed`
//!   and `ClientClosed`: every ephemeral node of the session is, or soon will be, deleted, and
//!   every lock or leadership tied to it is lost. Nothing more can be done with this session.
//!
//! The numeric codes are ZooKeeper's own (`KeeperException.Code`); [`ZkError::code`] returns
//! them, and [`ZkError::from_code`] reads them back.

use serde::{Deserialize, Serialize};

/// A failed ZooKeeper operation. The variants carry ZooKeeper's names and codes.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    thiserror::Error,
)]
#[non_exhaustive]
pub enum ZkError {
    /// `SYSTEMERROR` (-1): an unspecified server-side failure.
    #[error("system error")]
    SystemError,
    /// `RUNTIMEINCONSISTENCY` (-2): in a failed `multi`, the result of each operation after the
    /// one that failed.
    #[error("runtime inconsistency")]
    RuntimeInconsistency,
    /// `DATAINCONSISTENCY` (-3).
    #[error("data inconsistency")]
    DataInconsistency,
    /// `CONNECTIONLOSS` (-4): the connection broke before the reply came. **Indefinite**: the
    /// operation may have been applied.
    #[error("connection loss (the operation may or may not have been applied)")]
    ConnectionLoss,
    /// `MARSHALLINGERROR` (-5).
    #[error("marshalling error")]
    MarshallingError,
    /// `UNIMPLEMENTED` (-6): the server does not support this operation (e.g. TTL nodes when
    /// extended types are disabled).
    #[error("unimplemented operation")]
    Unimplemented,
    /// `OPERATIONTIMEOUT` (-7): the client gave up waiting. Indefinite.
    #[error("operation timeout (the operation may or may not have been applied)")]
    OperationTimeout,
    /// `BADARGUMENTS` (-8): an invalid path, mode or argument, rejected before it reached the tree.
    #[error("bad arguments")]
    BadArguments,
    /// `UNKNOWNSESSION` (-12).
    #[error("unknown session")]
    UnknownSession,
    /// `NEWCONFIGNOQUORUM` (-13).
    #[error("new config has no quorum")]
    NewConfigNoQuorum,
    /// `RECONFIGINPROGRESS` (-14).
    #[error("reconfiguration in progress")]
    ReconfigInProgress,
    /// `NONODE` (-101): the node (or, for a create, its parent) does not exist.
    #[error("no node")]
    NoNode,
    /// `NOAUTH` (-102).
    #[error("not authorised")]
    NoAuth,
    /// `BADVERSION` (-103): the expected version did not match.
    #[error("bad version")]
    BadVersion,
    /// `NOCHILDRENFOREPHEMERALS` (-108): ephemeral nodes cannot have children.
    #[error("ephemeral nodes cannot have children")]
    NoChildrenForEphemerals,
    /// `NODEEXISTS` (-110).
    #[error("node exists")]
    NodeExists,
    /// `NOTEMPTY` (-111): a node with children cannot be deleted.
    #[error("node not empty")]
    NotEmpty,
    /// `SESSIONEXPIRED` (-112): the session is gone, with its ephemeral nodes and watches.
    #[error("session expired")]
    SessionExpired,
    /// `INVALIDACL` (-114).
    #[error("invalid ACL")]
    InvalidAcl,
    /// `AUTHFAILED` (-115).
    #[error("authentication failed")]
    AuthFailed,
    /// `SESSIONMOVED` (-118): the session moved to another server while this request was in
    /// flight.
    #[error("session moved")]
    SessionMoved,
    /// `NOTREADONLY` (-119): a write sent to a read-only server.
    #[error("not read-only")]
    NotReadOnly,
    /// `NOWATCHER` (-121).
    #[error("no watcher")]
    NoWatcher,
    /// `REQUESTTIMEOUT` (-122): the server gave up on the request. Indefinite.
    #[error("request timeout (the operation may or may not have been applied)")]
    RequestTimeout,
    /// `QUOTAEXCEEDED` (-125).
    #[error("quota exceeded")]
    QuotaExceeded,
    /// `THROTTLEDOP` (-127).
    #[error("throttled")]
    Throttled,
    /// The client was closed by its owner; nothing was sent. Not a server code.
    #[error("client closed")]
    ClientClosed,
}

impl ZkError {
    /// True when the operation **certainly did not happen**.
    ///
    /// False for `ConnectionLoss`, `OperationTimeout` and `RequestTimeout`, whose request may have
    /// been applied, and for `SessionExpired`: a request sent just before the expiry may have
    /// been applied while its reply was lost (its ephemeral effects are being deleted anyway).
    pub fn is_definite(self) -> bool {
        !matches!(
            self,
            ZkError::ConnectionLoss
                | ZkError::OperationTimeout
                | ZkError::RequestTimeout
                | ZkError::SessionExpired
        )
    }

    /// True when the session is gone for good: every ephemeral node, lock and leadership tied to
    /// it is lost, and this client can do nothing more with it.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ZkError::SessionExpired | ZkError::AuthFailed | ZkError::ClientClosed
        )
    }

    /// ZooKeeper's numeric code. `ClientClosed`, which is not a server code, maps to -1000.
    pub fn code(self) -> i32 {
        match self {
            ZkError::SystemError => -1,
            ZkError::RuntimeInconsistency => -2,
            ZkError::DataInconsistency => -3,
            ZkError::ConnectionLoss => -4,
            ZkError::MarshallingError => -5,
            ZkError::Unimplemented => -6,
            ZkError::OperationTimeout => -7,
            ZkError::BadArguments => -8,
            ZkError::UnknownSession => -12,
            ZkError::NewConfigNoQuorum => -13,
            ZkError::ReconfigInProgress => -14,
            ZkError::NoNode => -101,
            ZkError::NoAuth => -102,
            ZkError::BadVersion => -103,
            ZkError::NoChildrenForEphemerals => -108,
            ZkError::NodeExists => -110,
            ZkError::NotEmpty => -111,
            ZkError::SessionExpired => -112,
            ZkError::InvalidAcl => -114,
            ZkError::AuthFailed => -115,
            ZkError::SessionMoved => -118,
            ZkError::NotReadOnly => -119,
            ZkError::NoWatcher => -121,
            ZkError::RequestTimeout => -122,
            ZkError::QuotaExceeded => -125,
            ZkError::Throttled => -127,
            ZkError::ClientClosed => -1000,
        }
    }

    /// Every variant, in code order. Used by tests and by scenario-file parsing.
    pub const ALL: [ZkError; 27] = [
        ZkError::SystemError,
        ZkError::RuntimeInconsistency,
        ZkError::DataInconsistency,
        ZkError::ConnectionLoss,
        ZkError::MarshallingError,
        ZkError::Unimplemented,
        ZkError::OperationTimeout,
        ZkError::BadArguments,
        ZkError::UnknownSession,
        ZkError::NewConfigNoQuorum,
        ZkError::ReconfigInProgress,
        ZkError::NoNode,
        ZkError::NoAuth,
        ZkError::BadVersion,
        ZkError::NoChildrenForEphemerals,
        ZkError::NodeExists,
        ZkError::NotEmpty,
        ZkError::SessionExpired,
        ZkError::InvalidAcl,
        ZkError::AuthFailed,
        ZkError::SessionMoved,
        ZkError::NotReadOnly,
        ZkError::NoWatcher,
        ZkError::RequestTimeout,
        ZkError::QuotaExceeded,
        ZkError::Throttled,
        ZkError::ClientClosed,
    ];

    /// The error with ZooKeeper's numeric `code`, if there is one.
    pub fn from_code(code: i32) -> Option<ZkError> {
        ZkError::ALL.into_iter().find(|e| e.code() == code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        for error in ZkError::ALL {
            assert_eq!(ZkError::from_code(error.code()), Some(error));
        }
        assert_eq!(ZkError::from_code(0), None);
    }

    #[test]
    fn indefinite_and_terminal_errors() {
        assert!(!ZkError::ConnectionLoss.is_definite());
        assert!(!ZkError::ConnectionLoss.is_terminal());
        assert!(ZkError::NodeExists.is_definite());
        assert!(ZkError::SessionExpired.is_terminal());
        assert!(!ZkError::SessionExpired.is_definite());
        assert!(ZkError::ClientClosed.is_terminal() && ZkError::ClientClosed.is_definite());
        let indefinite: Vec<_> = ZkError::ALL
            .into_iter()
            .filter(|e| !e.is_definite())
            .collect();
        assert_eq!(indefinite.len(), 4);
    }
}
