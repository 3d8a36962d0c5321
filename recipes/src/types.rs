//! Node metadata and creation modes.

use serde::{Deserialize, Serialize};

use crate::error::ZkError;

/// A session id, as the server assigns it. 0 means "no session" (e.g. the `ephemeralOwner` of a
/// persistent node).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct SessionId(pub i64);

/// The version argument of `delete`, `setData` and `check` that matches any version.
pub const ANY_VERSION: i32 = -1;

/// How a node is created.
///
/// Ephemeral nodes are deleted when their session ends, and cannot have children. Sequential
/// nodes get the parent's counter appended, as 10 zero-padded digits. Container nodes are
/// deleted by the server some time after their last child goes (every 60 s by default), so a
/// recipe that creates its parents as containers must survive its parent disappearing.
///
/// TTL modes are not modelled: ZooKeeper 3.8 disables them unless `extendedTypesEnabled` is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CreateMode {
    /// A plain node that outlives its session.
    Persistent,
    /// A persistent node with the parent's counter appended to its name.
    PersistentSequential,
    /// A node deleted when its session ends.
    Ephemeral,
    /// An ephemeral node with the parent's counter appended to its name.
    EphemeralSequential,
    /// A persistent node that the server deletes once it has had children and has none left.
    Container,
}

impl CreateMode {
    /// True for the two sequential modes.
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
        )
    }

    /// True for the two ephemeral modes.
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    /// True for container nodes.
    pub fn is_container(self) -> bool {
        self == CreateMode::Container
    }

    /// ZooKeeper's wire flag for this mode.
    pub fn flag(self) -> i32 {
        match self {
            CreateMode::Persistent => 0,
            CreateMode::Ephemeral => 1,
            CreateMode::PersistentSequential => 2,
            CreateMode::EphemeralSequential => 3,
            CreateMode::Container => 4,
        }
    }

    /// The mode of a wire flag. TTL flags (5, 6) are [`ZkError::Unimplemented`], as on a 3.8
    /// server without extended types; anything else is [`ZkError::BadArguments`].
    pub fn from_flag(flag: i32) -> Result<CreateMode, ZkError> {
        match flag {
            0 => Ok(CreateMode::Persistent),
            1 => Ok(CreateMode::Ephemeral),
            2 => Ok(CreateMode::PersistentSequential),
            3 => Ok(CreateMode::EphemeralSequential),
            4 => Ok(CreateMode::Container),
            5 | 6 => Err(ZkError::Unimplemented),
            _ => Err(ZkError::BadArguments),
        }
    }
}

/// A node's metadata, with every field ZooKeeper returns.
///
/// `version` counts `setData` calls and restarts at 0 when a node is created again, so it is no
/// fencing token; `czxid` is unique per creation and increases, so it is one.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Stat {
    /// The zxid of the transaction that created the node.
    pub czxid: i64,
    /// The zxid of the transaction that last set its data (the creation, if never set).
    pub mzxid: i64,
    /// The zxid of the transaction that last added or removed a child.
    pub pzxid: i64,
    /// Creation time, ms since the epoch (server clock; 0 in the pure model, which has no time).
    pub ctime: i64,
    /// Last data modification time, ms since the epoch (0 in the pure model).
    pub mtime: i64,
    /// The number of `setData` calls since creation.
    pub version: i32,
    /// The number of child creations and deletions since creation.
    pub cversion: i32,
    /// The number of ACL changes since creation.
    pub aversion: i32,
    /// The owning session of an ephemeral node; 0 for persistent and container nodes.
    pub ephemeral_owner: i64,
    /// The length of the node's data in bytes.
    pub data_length: i32,
    /// The number of children.
    pub num_children: i32,
}

impl Stat {
    /// A copy with the two time fields zeroed, for comparisons that must ignore clocks.
    pub fn without_times(mut self) -> Stat {
        self.ctime = 0;
        self.mtime = 0;
        self
    }
}

/// The reply to a successful create: the path the server gave the node (with its sequence
/// suffix, for sequential modes) and the node's `Stat`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Created {
    /// The created node's full path.
    pub path: String,
    /// The created node's metadata.
    pub stat: Stat,
}

/// The 10-digit sequence suffix of a sequential node's name, if the name ends with one.
pub fn sequence_suffix(name: &str) -> Option<i32> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip() {
        for mode in [
            CreateMode::Persistent,
            CreateMode::PersistentSequential,
            CreateMode::Ephemeral,
            CreateMode::EphemeralSequential,
            CreateMode::Container,
        ] {
            assert_eq!(CreateMode::from_flag(mode.flag()), Ok(mode));
        }
        assert_eq!(CreateMode::from_flag(5), Err(ZkError::Unimplemented));
        assert_eq!(CreateMode::from_flag(7), Err(ZkError::BadArguments));
        assert_eq!(CreateMode::from_flag(-1), Err(ZkError::BadArguments));
    }

    #[test]
    fn sequence_suffixes() {
        assert_eq!(sequence_suffix("_c_x-lock-0000000042"), Some(42));
        assert_eq!(sequence_suffix("lock-00000x0042"), None);
        assert_eq!(sequence_suffix("short"), None);
    }
}
