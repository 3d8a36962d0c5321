//! The steps of an instance's work ([`Task`]), and the one operation each issues.

use crate::ops::Op;
use crate::request::Request;
use crate::sharding::Claim;
use crate::types::CreateMode;

use super::JobMachine;

/// Why an item runs: it is ours by sharding, or we took it over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Via {
    Sharding,
    Failover,
}

/// One step of work: each issues at most one operation. Work runs one step at a time, in order;
/// a step's continuation goes to the front of the queue (depth first).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Task {
    /// Create a persistent node if it is missing (its own parents first).
    Ensure(String),
    Register,
    /// `instances/<id>` exists: is it this session's?
    CheckRegistration,
    /// It belongs to an older session: delete it, then register.
    ClearRegistration,
    SetNecessary,
    WatchInstances,
    /// Did `crashed` own `item`? (its sharding owner, then its failover owner)
    ScanOwner {
        crashed: String,
        item: u32,
    },
    ScanFailoverOwner {
        crashed: String,
        item: u32,
    },
    Mark(u32),
    CheckNecessary(u64),
    ListInstances(u64),
    /// Whose was `item` before this sharding? (asked only of items it gives another instance)
    ReadOldOwner(u32),
    /// Is `item` ours by the sharding that stands while the leader is to write a new one? (if
    /// so, run it for the cycle before waiting for the new one)
    ReadStanding(u64, u32),
    ResetItem(u32),
    /// Write the owners for the cycle, and the items the new sharding moved from one instance
    /// to another (filled in by [`Task::ReadOldOwner`]), which this leader then runs itself.
    WriteSharding(u64, Vec<Option<String>>, Vec<u32>),
    ReadOwner(u64, u32),
    /// After a sharding's write found an owner there already: has `item` an owner? (asked of
    /// each item in turn until one has none, which raises `necessary` again)
    CheckOwned(u32),
    /// Is `owner`, which the sharding names for `item`, still registered? Asked by a cycle of
    /// an item it does not own (`via` sharding), and by a failover once the item has run for
    /// its cycle (`via` failover).
    CheckOwnerAlive {
        item: u32,
        owner: String,
        via: Via,
    },
    ReadTakeOff {
        cycle: u64,
        item: u32,
        token: i64,
    },
    ReadClaim {
        item: u32,
        cycle: u64,
        via: Via,
    },
    Claim {
        item: u32,
        cycle: u64,
        via: Via,
        version: i32,
    },
    /// No operation: the cycle's items are done.
    EndCycle,
    FailoverIfNecessary,
    ClaimNext,
    TakeFailover(u32),
    CheckFailoverOwner(u32),
    Unmark(u32),
    /// A failover ran `item` for its cycle, or found it run: whose is it now? (the mark is
    /// done once a live instance owns it)
    ReadCurrentOwner(u32),
    CompleteFailover(u32),
    /// No operation: release the failover lock.
    ReleaseClaimLock,
}

impl JobMachine {
    pub(super) fn request(&self, task: &Task) -> Option<Request> {
        let persistent = |path: String, data: Vec<u8>| Request::Create {
            path,
            data,
            mode: CreateMode::Persistent,
        };
        let read = |path: String| Request::GetData { path, watch: false };
        let delete = |path: String| Request::Delete { path, version: -1 };
        let me = self.instance.as_bytes().to_vec();
        Some(match task {
            Task::Ensure(path) => persistent(path.clone(), Vec::new()),
            Task::Register => Request::Create {
                path: self.paths.instance(&self.instance),
                data: Vec::new(),
                mode: CreateMode::Ephemeral,
            },
            Task::CheckRegistration => read(self.paths.instance(&self.instance)),
            Task::ClearRegistration => delete(self.paths.instance(&self.instance)),
            Task::SetNecessary => persistent(self.paths.necessary(), Vec::new()),
            Task::WatchInstances => Request::GetChildren {
                path: self.paths.instances(),
                watch: true,
            },
            Task::ScanOwner { item, .. } => read(self.paths.owner(*item)),
            Task::ScanFailoverOwner { item, .. } => read(self.paths.failover_owner(*item)),
            Task::Mark(item) => persistent(self.paths.failover_item(*item), Vec::new()),
            Task::CheckNecessary(_) => Request::Exists {
                path: self.paths.necessary(),
                watch: false,
            },
            Task::ListInstances(_) => Request::GetChildren {
                path: self.paths.instances(),
                watch: false,
            },
            Task::ReadOldOwner(item) | Task::ReadStanding(_, item) => read(self.paths.owner(*item)),
            Task::ResetItem(item) => delete(self.paths.owner(*item)),
            Task::WriteSharding(_, owners, _) => {
                let mut ops: Vec<Op> = owners
                    .iter()
                    .enumerate()
                    .filter_map(|(item, owner)| {
                        Some(Op::Create {
                            path: self.paths.owner(item as u32),
                            data: owner.as_ref()?.as_bytes().to_vec(),
                            mode: CreateMode::Persistent,
                        })
                    })
                    .collect();
                ops.push(Op::Delete {
                    path: self.paths.necessary(),
                    version: -1,
                });
                Request::Multi(ops)
            }
            Task::ReadOwner(_, item) => read(self.paths.owner(*item)),
            Task::CheckOwned(item) => Request::Exists {
                path: self.paths.owner(*item),
                watch: false,
            },
            Task::CheckOwnerAlive { owner, .. } => Request::Exists {
                path: self.paths.instance(owner),
                watch: false,
            },
            Task::ReadTakeOff { item, .. } => Request::Exists {
                path: self.paths.failover_owner(*item),
                watch: false,
            },
            Task::ReadClaim { item, .. } => read(self.paths.item(*item)),
            Task::Claim {
                item,
                cycle,
                version,
                ..
            } => Request::SetData {
                path: self.paths.item(*item),
                data: Claim {
                    cycle: *cycle,
                    instance: self.instance.clone(),
                }
                .encode(),
                version: *version,
            },
            Task::FailoverIfNecessary | Task::ClaimNext => Request::GetChildren {
                path: self.paths.failover_items(),
                watch: false,
            },
            Task::TakeFailover(item) => Request::Create {
                path: self.paths.failover_owner(*item),
                data: me,
                mode: CreateMode::Ephemeral,
            },
            Task::CheckFailoverOwner(item) => read(self.paths.failover_owner(*item)),
            Task::Unmark(item) => delete(self.paths.failover_item(*item)),
            Task::ReadCurrentOwner(item) => read(self.paths.owner(*item)),
            Task::CompleteFailover(item) => delete(self.paths.failover_owner(*item)),
            Task::EndCycle | Task::ReleaseClaimLock => return None,
        })
    }
}
