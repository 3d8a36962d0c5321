//! [`Symmetric`] for the standard collections and for ZooKeeper's values: which of their parts
//! hold identities, and which are hashed plainly.

use std::hash::{Hash, Hasher};

use crate::error::ZkError;
use crate::event::{EventType, SessionEvent, WatchedEvent};
use crate::ops::{Op, OpResult};
use crate::request::{Request, Response};
use crate::types::{CreateMode, Created, SessionId, Stat};

use super::{hash_ordered, hash_unordered, Renaming, Symmetric};

/// Sorted by key, which a renaming may reorder: hashed as a set of entries.
impl<K: Symmetric, V: Symmetric> Symmetric for std::collections::BTreeMap<K, V> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        hash_unordered(self.iter(), renaming, state);
    }
}

/// Sorted, which a renaming may reorder: hashed as a set.
impl<T: Symmetric> Symmetric for std::collections::BTreeSet<T> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        hash_unordered(self.iter(), renaming, state);
    }
}

/// Implements [`Symmetric`] for types with no identity in them: they hash as themselves.
#[macro_export]
macro_rules! symmetric_as_hash {
    ($($type:ty),* $(,)?) => {
        $(impl $crate::symmetry::Symmetric for $type {
            fn hash_renamed<H: ::std::hash::Hasher>(
                &self,
                _: &$crate::symmetry::Renaming<'_>,
                state: &mut H,
            ) {
                ::std::hash::Hash::hash(self, state);
            }
        })*
    };
}

crate::symmetric_as_hash!(bool, i32, i64, u8, u64, usize, CreateMode, EventType, ZkError);

impl Symmetric for str {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        renaming.hash_text(self.as_bytes(), state);
    }
}

impl Symmetric for String {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        renaming.hash_text(self.as_bytes(), state);
    }
}

impl Symmetric for std::sync::Arc<str> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        renaming.hash_text(self.as_bytes(), state);
    }
}

/// Node data and other bytes: text, as far as identity tokens go.
impl Symmetric for [u8] {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        renaming.hash_text(self, state);
    }
}

impl Symmetric for SessionId {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        renaming.hash_session(*self, state);
    }
}

impl<T: Symmetric> Symmetric for Option<T> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        match self {
            None => state.write_u8(0),
            Some(value) => {
                state.write_u8(1);
                value.hash_renamed(renaming, state);
            }
        }
    }
}

impl<A: Symmetric, B: Symmetric> Symmetric for (A, B) {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        self.0.hash_renamed(renaming, state);
        self.1.hash_renamed(renaming, state);
    }
}

impl<A: Symmetric, B: Symmetric, C: Symmetric> Symmetric for (A, B, C) {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        self.0.hash_renamed(renaming, state);
        self.1.hash_renamed(renaming, state);
        self.2.hash_renamed(renaming, state);
    }
}

impl<T: Symmetric + ?Sized> Symmetric for &T {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        (**self).hash_renamed(renaming, state);
    }
}

impl Symmetric for Stat {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let Stat {
            czxid,
            mzxid,
            pzxid,
            ctime,
            mtime,
            version,
            cversion,
            aversion,
            ephemeral_owner,
            data_length,
            num_children,
        } = *self;
        (czxid, mzxid, pzxid, ctime, mtime).hash(state);
        (version, cversion, aversion, data_length, num_children).hash(state);
        SessionId(ephemeral_owner).hash_renamed(renaming, state);
    }
}

impl Symmetric for Created {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        self.path.hash_renamed(renaming, state);
        self.stat.hash_renamed(renaming, state);
    }
}

impl Symmetric for WatchedEvent {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let WatchedEvent {
            event_type,
            path,
            zxid,
        } = self;
        event_type.hash(state);
        path.hash_renamed(renaming, state);
        zxid.hash(state);
    }
}

impl Symmetric for SessionEvent {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            SessionEvent::Connected { session_id } | SessionEvent::Reconnected { session_id } => {
                session_id.hash_renamed(renaming, state);
            }
            SessionEvent::Disconnected | SessionEvent::Expired | SessionEvent::Closed => {}
        }
    }
}

/// Hashes an operation on `path`: its data, if it carries any, and the rest (`tail`), which
/// holds no identity (a mode, a version, a watch flag).
fn hash_write<H: Hasher>(
    path: &str,
    data: Option<&[u8]>,
    tail: impl Hash,
    renaming: &Renaming<'_>,
    state: &mut H,
) {
    path.hash_renamed(renaming, state);
    if let Some(data) = data {
        data.hash_renamed(renaming, state);
    }
    tail.hash(state);
}

impl Symmetric for Op {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Op::Check { path, version } | Op::Delete { path, version } => {
                hash_write(path, None, version, renaming, state);
            }
            Op::Create { path, data, mode } => hash_write(path, Some(data), mode, renaming, state),
            Op::SetData {
                path,
                data,
                version,
            } => hash_write(path, Some(data), version, renaming, state),
        }
    }
}

impl Symmetric for OpResult {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            OpResult::Check | OpResult::Delete => {}
            OpResult::Create { path, stat } => {
                path.hash_renamed(renaming, state);
                stat.hash_renamed(renaming, state);
            }
            OpResult::SetData { stat } => stat.hash_renamed(renaming, state),
        }
    }
}

impl Symmetric for Request {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Request::Create { path, data, mode } => {
                hash_write(path, Some(data), mode, renaming, state);
            }
            Request::Delete { path, version } => hash_write(path, None, version, renaming, state),
            Request::Exists { path, watch }
            | Request::GetData { path, watch }
            | Request::GetChildren { path, watch } => {
                hash_write(path, None, watch, renaming, state);
            }
            Request::SetData {
                path,
                data,
                version,
            } => hash_write(path, Some(data), version, renaming, state),
            Request::Multi(ops) => hash_ordered(ops.iter(), renaming, state),
            Request::Sync { path } => path.hash_renamed(renaming, state),
        }
    }
}

impl Symmetric for Response {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Response::Created(created) => created.hash_renamed(renaming, state),
            Response::Deleted | Response::Synced => {}
            Response::Exists(stat) => stat.hash_renamed(renaming, state),
            Response::Data(data, stat) => {
                data.as_slice().hash_renamed(renaming, state);
                stat.hash_renamed(renaming, state);
            }
            // Sorted by name: a renaming may reorder them.
            Response::Children(names, stat) => {
                hash_unordered(names.iter(), renaming, state);
                stat.hash_renamed(renaming, state);
            }
            Response::SetData(stat) => stat.hash_renamed(renaming, state),
            Response::Multi(results) => hash_ordered(results.iter(), renaming, state),
        }
    }
}

impl<T: Symmetric, E: Symmetric> Symmetric for Result<T, E> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        match self {
            Ok(value) => {
                state.write_u8(0);
                value.hash_renamed(renaming, state);
            }
            Err(error) => {
                state.write_u8(1);
                error.hash_renamed(renaming, state);
            }
        }
    }
}
