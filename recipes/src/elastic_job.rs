//! One Elastic-Job instance of a sharded job: registration, the job's leader election,
//! sharding, per-cycle execution, and failover of a crashed instance's items, as one state
//! machine. The node layout and the allocation are in [`sharding`](crate::sharding).
//!
//! # The algorithm (Elastic-Job 2.1.5, `ShardingService` and `FailoverService`)
//!
//! - **Start:** register the ephemeral `instances/<id>`, raise `leader/sharding/necessary`
//!   (the instances changed), list `instances` with a watch, and elect the job's leader
//!   ([`ElectionMachine`]).
//! - **Each cron cycle** (the host sends [`JobRequest::Trigger`] at the same time to every
//!   instance): if `necessary` is raised, the leader shards (deletes every
//!   `sharding/<item>/instance`, then in one transaction writes the average allocation and
//!   removes the flag) while the others poll every 100 ms until the flag is gone
//!   (`blockUntilShardingCompleted`). Each instance then reads which items it owns, claims each
//!   (item, cycle) and runs it. Then it looks for crashed items to take over. A trigger that
//!   comes while a cycle is still running misfires: one more cycle runs right after, for the
//!   newest trigger. (Elastic-Job also leaves out the items another instance has taken over,
//!   whose `sharding/<item>/failover` exists: the "take-off" items of a returning owner. With
//!   a claim per (item, cycle) that check is not needed, and it loses a run: a taker whose own
//!   cycle lags runs the item for that older cycle, which was claimed already, while the owner
//!   skips it in the newer one. Only [`JobVariant::NoCycleClaim`], which has no claims, keeps
//!   it.)
//! - **Sharding again in the middle of a cycle** (not in Elastic-Job): the leader shards when
//!   its own trigger finds `necessary` raised, which may be after other instances ran that
//!   cycle with the old sharding. An item the new sharding moves from one instance to another
//!   (not to the leader) may then pass both: its old owner reads the new sharding, its new one
//!   read the old. So the leader reads each item's old owner before it resets it and, once the
//!   new sharding is written, runs each such moved item for the cycle itself, unless it was
//!   claimed (the claim keeps it to one run). A cycle that reads an item's owner while the
//!   leader is resetting it (the node is missing) waits for the sharding and reads every
//!   owner again (see [`JobVariant::UncoveredReshard`]).
//! - **Crash listener** (`JobCrashedJobListener`, on every instance): when an instance leaves
//!   `instances`, mark each item it owned (or had taken over) in `leader/failover/items`, raise
//!   `necessary`, and fail over.
//! - **Owners are alive** (not in Elastic-Job): the listener sees an instance leave only if one
//!   of its listings showed it, and an instance can register and crash between two listings
//!   while the leader shards with it as an owner. So when a cycle reads an item that the
//!   sharding gives another instance, it asks whether that instance is still registered, and if
//!   not, marks the item, raises `necessary` and fails over (see
//!   [`JobVariant::TrustOwners`]).
//! - **Failover** (`failoverIfNecessary`): if items are marked, take the lock
//!   `leader/failover/latch` (a latch used as a lock, like the election), and under it take the
//!   first marked item: write the ephemeral `sharding/<item>/failover` with this instance's id,
//!   unmark the item, run it for the current cycle, delete the failover node. (Ours unmarks it
//!   once it ran: see the next point.) The correct
//!   recipe repeats until no item is marked, then releases the lock.
//! - **A crash after a cycle** (not in Elastic-Job): an instance that crashes after it ran a
//!   cycle cuts short the next one, which a survivor still in that cycle has not fired. Such
//!   a taker may run the item for its own cycle, or find it run already (by the crashed
//!   instance, by itself or by whoever ran it before the crashed instance came to own it),
//!   while the crashed instance owned it for the next cycle too. So once the item has run for
//!   its cycle, the taker reads whose the item is now: if a live instance owns it, that owner
//!   runs it from here on and the mark is done; if the owner is dead (or the leader is
//!   resetting it), the taker leaves the mark, and the item until its own next trigger, to an
//!   instance that has fired the next cycle. A mark may so outlive its need by a cycle.
//!   (Elastic-Job runs it for the taker's cycle, and with our claims that run was skipped:
//!   random walks showed the next cycle's run lost, with four instances and two crashes, and
//!   with three instances over three cycles when the claim was a live instance's.)
//! - **A cycle blocked on the sharding** (not in Elastic-Job): an instance whose cycle finds
//!   `necessary` raised after the leader ran that cycle waits for a sharding that the leader
//!   writes only at its next trigger, and that sharding may give this instance's items to
//!   instances that have run the cycle. So, before it waits, it runs (under claims) the items
//!   the standing sharding gives it; after the wait it runs what the new sharding gives it,
//!   and the claims keep each item to one run. (Running the standing items after the wait is
//!   too late: the leader may have claimed them for its newer cycle by then, and a claim
//!   holds only the newest cycle.) An instance that has not yet ended a cycle only waits: at
//!   its first cycle it waits for the sharding that takes it in.
//!
//! Execution is instantaneous here: a run is the [`JobReport::Executed`] report, which the host
//! records with its token (the zxid of the claim).
//!
//! # Known-bad variants, kept as positive controls
//!
//! - [`JobVariant::OneItemPerIdle`]: each idle instance takes over one crashed item per
//!   failover, then releases the lock; the other marked items wait until an instance next
//!   finishes a cycle, by which time their cycle has passed. This is the failover of
//!   Elastic-Job 2.1.5's `FailoverLeaderExecutionCallback`, which claims one item per call: with
//!   more crashed items than idle instances, items of the crash's cycle are lost.
//! - [`JobVariant::TrustOwners`]: Elastic-Job 2.1.5's trust in the sharding. A new instance
//!   registers, the leader lists the instances, and the new one crashes before the other
//!   instances' listeners list them again: the leader writes the sharding with a dead owner, no
//!   listing ever shows it leave, and nobody marks its items. They are not run in that cycle nor
//!   in any later one, until the instances change again. The model checker finds it with one
//!   crash (`zkharness check job --variant trust-owners --cycles 2 --faults crash=1`).
//! - [`JobVariant::NoCycleClaim`]: run owned and failed-over items without claiming the
//!   (item, cycle) first, as Elastic-Job 2.1.5 does: a failover runs again the items the
//!   crashed instance had already finished in this cycle, so an item runs twice.
//! - [`JobVariant::UncoveredReshard`]: Elastic-Job 2.1.5's sharding in the middle of a cycle.
//!   With three instances, two run their second cycle, one of them crashes, and the leader
//!   fires its second cycle last and shards again: its own item, not yet run in that cycle,
//!   goes to the instance that has run the cycle already, and nobody runs it. Random walks
//!   find it (`zkharness check job --variant uncovered-reshard --clients 3 --cycles 2 --faults
//!   crash=1 --max-depth 600 --walks 1000`); the exhaustive search cannot, with two instances
//!   the survivor owns every item after a crash.
//!
//! # Not modelled
//!
//! Misfire policies beyond "run once more", disabled items, the `running` nodes of
//! `monitorExecution` (execution is instantaneous), the job's configuration nodes, and
//! sharding strategies other than average allocation.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::election::{ElectionMachine, ElectionReport, ElectionRequest, ElectionVariant};
use crate::error::ZkError;
use crate::event::{EventType, SessionEvent};
use crate::latch::{LatchMachine, LatchReport, LatchRequest, LatchVariant};
use crate::machine::{Command, Input, Machine, OpId, TimerId, RETRY_AFTER_MS};
use crate::ops::Op;
use crate::request::{Request, Response};
use crate::sharding::{average_allocation, Claim, JobPaths};
use crate::types::{CreateMode, SessionId};

/// Which job recipe: the correct one, or a known-bad variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobVariant {
    /// Claim every (item, cycle) before running it; fail over every marked item.
    Correct,
    /// Fail over one item per idle instance per crash (Elastic-Job 2.1.5).
    OneItemPerIdle,
    /// Trust the sharding: skip another instance's item without asking whether that instance
    /// is still registered (Elastic-Job 2.1.5).
    TrustOwners,
    /// Run items without claiming the (item, cycle) (Elastic-Job 2.1.5).
    NoCycleClaim,
    /// Shard again in the middle of a cycle without running the items it moves to instances
    /// that may have read the old sharding already, and skip an item whose owner node is
    /// missing (Elastic-Job 2.1.5).
    UncoveredReshard,
}

/// What the application asks of a job instance.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum JobRequest {
    /// Register and elect (once, at start).
    Start,
    /// The cron trigger of cycle `cycle` (1, 2, ...) fired.
    Trigger {
        /// The cycle.
        cycle: u64,
    },
}

/// What a job instance tells its host.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum JobReport {
    /// This instance leads the job; `token` is the election instance node's `czxid`.
    Leader {
        /// The fencing token.
        token: i64,
    },
    /// This instance no longer leads the job.
    NotLeader,
    /// This instance ran `item` for `cycle`.
    Executed {
        /// The item.
        item: u32,
        /// The cycle.
        cycle: u64,
        /// The zxid of the claim (of the owning node for [`JobVariant::NoCycleClaim`]).
        token: i64,
        /// Whether it ran as a failover of a crashed instance's item.
        failover: bool,
    },
}

/// Why an item runs: it is ours by sharding, or we took it over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Via {
    Sharding,
    Failover,
}

/// One step of work: each issues at most one operation. Work runs one step at a time, in order;
/// a step's continuation goes to the front of the queue (depth first).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Task {
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

/// One sequence of work: a queue of tasks, run one at a time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Lane {
    queue: VecDeque<Task>,
    /// The task whose operation is in flight.
    step: Option<(OpId, Task)>,
    /// The front task waits for this timer (a retry, or a poll).
    waiting: Option<TimerId>,
}

/// The lane of registration, the crash listener and failover.
const LISTENER: usize = 0;
/// The lane of the cron's cycles.
const CYCLE: usize = 1;

/// Ids at or above this are the job's own operations and timers.
///
/// A lane has at most one operation in flight and one timer pending, and in one session its
/// replies come in order, so each lane's operation and timer have a fixed id per session:
/// `JOB_IDS + 4 * epoch + 2 * lane` (+ 1 for the timer), where the epoch counts the sessions
/// this instance has lost. A reply or timer of a lost session then matches nothing. Fixed ids
/// also mean that a poll which finds nothing new (`leader/sharding/necessary` is still raised)
/// returns the machine to the state it polled from, so a model checker sees a loop, not an
/// ever-growing counter.
const JOB_IDS: u64 = 1 << 62;
/// Ids in `[CLAIM_IDS, JOB_IDS)` belong to the failover lock of round `(id - CLAIM_IDS) >> 40`.
const CLAIM_IDS: u64 = 1 << 61;
const CLAIM_ROUND_SHIFT: u32 = 40;

/// One Elastic-Job instance as a state machine (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JobMachine {
    variant: JobVariant,
    paths: JobPaths,
    instance: String,
    uuid: String,
    items: u32,
    /// Sessions lost so far: the epoch of the lanes' ids.
    epoch: u64,
    election: ElectionMachine,
    leader: bool,
    session: Option<SessionId>,
    started: bool,
    /// The listeners' work and the cron's work, which run side by side as Elastic-Job's
    /// listener threads and job thread do (a cycle blocked on sharding does not hold up the
    /// crash listener).
    lanes: [Lane; 2],
    /// The lane whose reply or timer is being handled: continuations go there.
    lane: usize,
    /// The newest trigger's cycle.
    cycle: u64,
    /// A cycle is being run.
    in_cycle: bool,
    /// A trigger came during the running cycle.
    misfired: bool,
    /// The instances seen by the last listing.
    known_instances: Option<BTreeSet<String>>,
    /// The last cycle this instance ran, per item.
    executed: BTreeMap<u32, u64>,
    /// The failover lock, while it is wanted or held.
    claim_lock: Option<LatchMachine>,
    claim_round: u64,
    /// Marked items this instance ran for its current cycle, or found run, while their owner
    /// was dead, and left for an instance that has fired the next (emptied when a newer
    /// trigger comes: it takes them again then).
    deferred: BTreeSet<u32>,
    /// This cycle found the sharding necessary and ran the items the standing sharding gives
    /// this instance, before it waits for the new sharding.
    ran_standing: bool,
    /// This instance has run a cycle to its end: it may own items of a standing sharding.
    ended_a_cycle: bool,
}

impl JobMachine {
    /// Instance `instance` of the job rooted at `job` (e.g. `/orders-job`) with `items` items.
    /// `uuid` is unique to this instance (the protection of its latches).
    pub fn new(variant: JobVariant, job: &str, instance: &str, uuid: &str, items: u32) -> Self {
        JobMachine {
            variant,
            paths: JobPaths::new(job),
            instance: instance.to_owned(),
            uuid: uuid.to_owned(),
            items,
            epoch: 0,
            election: ElectionMachine::new(ElectionVariant::Correct, job, instance, uuid),
            leader: false,
            session: None,
            started: false,
            lanes: [Lane::default(), Lane::default()],
            lane: LISTENER,
            cycle: 0,
            in_cycle: false,
            misfired: false,
            known_instances: None,
            executed: BTreeMap::new(),
            claim_lock: None,
            claim_round: 0,
            deferred: BTreeSet::new(),
            ran_standing: false,
            ended_a_cycle: false,
        }
    }

    /// The job's items per cycle.
    pub fn items(&self) -> u32 {
        self.items
    }

    /// Whether the listeners' work is done: registration, the crash listener's scans and marks,
    /// and failover (nothing queued or in flight on their lane, no retry pending, the failover
    /// lock neither wanted nor held). The cron's lane may still be running or polling.
    pub fn listeners_idle(&self) -> bool {
        let lane = &self.lanes[LISTENER];
        lane.queue.is_empty()
            && lane.step.is_none()
            && lane.waiting.is_none()
            && self.claim_lock.is_none()
    }

    /// Whether a cron cycle is running on this instance (started and not yet ended, a cycle
    /// blocked on the sharding included).
    pub fn in_cycle(&self) -> bool {
        self.in_cycle
    }

    /// Whether this instance's cycle is blocked on the sharding: it polls
    /// `leader/sharding/necessary`, waiting for the leader's next sharding, which in
    /// Elastic-Job the leader writes only when its own trigger finds the flag raised.
    pub fn blocked_on_sharding(&self) -> bool {
        let lane = &self.lanes[CYCLE];
        self.in_cycle
            && lane.waiting.is_some()
            && matches!(lane.queue.front(), Some(Task::CheckNecessary(_)))
    }

    /// Whether this instance believes it leads the job.
    pub fn is_leader(&self) -> bool {
        self.leader
    }

    fn request(&self, task: &Task) -> Option<Request> {
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

    /// Runs each lane's queued tasks until it issues an operation or waits for a timer, and
    /// again while a lane's work queued more on another (the end of a cycle queues a failover
    /// check on the listeners' lane, which must not wait for the next input).
    fn pump(&mut self, out: &mut Vec<Command<JobReport>>) {
        let mut progressed = true;
        while progressed {
            progressed = false;
            for lane in [LISTENER, CYCLE] {
                self.lane = lane;
                while self.lanes[lane].step.is_none() && self.lanes[lane].waiting.is_none() {
                    let Some(task) = self.lanes[lane].queue.pop_front() else {
                        break;
                    };
                    progressed = true;
                    match self.request(&task) {
                        Some(request) => {
                            let id = self.lane_id(lane);
                            self.lanes[lane].step = Some((id, task));
                            out.push(Command::Op { id, request });
                        }
                        None if task == Task::EndCycle => self.end_cycle(),
                        None => self.feed_claim_lock(Input::Request(LatchRequest::Close), out),
                    }
                }
            }
        }
    }

    /// Notes, on the sharding queued to be written, that it moves `item` away from `old` (the
    /// owner's id that the old sharding held), to an instance other than this one.
    fn note_moved(&mut self, item: u32, old: &[u8]) {
        let me = self.instance.as_bytes();
        let write = self.lanes[CYCLE]
            .queue
            .iter_mut()
            .find_map(|task| match task {
                Task::WriteSharding(_, owners, moved) => Some((owners, moved)),
                _ => None,
            });
        let (owners, moved) = write.expect("a sharding is queued after its old owners' reads");
        let new = owners[item as usize].as_deref().map(str::as_bytes);
        if new != Some(old) && new != Some(me) {
            moved.push(item);
        }
    }

    /// Whether a cycle that finds the sharding necessary runs the standing sharding's items
    /// before it waits for the new one: not in the variants that run items without a claim
    /// (it would run them twice) or leave a resharding's moved items uncovered.
    fn runs_standing(&self) -> bool {
        match self.variant {
            JobVariant::Correct | JobVariant::OneItemPerIdle | JobVariant::TrustOwners => true,
            JobVariant::NoCycleClaim | JobVariant::UncoveredReshard => false,
        }
    }

    /// Whether this instance takes over the marked item named `name` now: not if it left it
    /// for a later cycle in its current one.
    fn takes_over(&self, name: &str) -> bool {
        let item = name.parse::<u32>().ok();
        item.is_none_or(|item| !self.deferred.contains(&item))
    }

    /// Puts `tasks` at the front of the queue, in order.
    fn then(&mut self, tasks: impl IntoIterator<Item = Task, IntoIter: DoubleEndedIterator>) {
        for task in tasks.into_iter().rev() {
            self.lanes[self.lane].queue.push_front(task);
        }
    }

    /// Queues a failover check after everything queued on the listener's lane now (moving an
    /// earlier one there): an earlier check would run before the marks that this work makes,
    /// find nothing, and leave them waiting.
    fn fail_over_after_queued_work(&mut self) {
        let queue = &mut self.lanes[LISTENER].queue;
        queue.retain(|task| *task != Task::FailoverIfNecessary);
        queue.push_back(Task::FailoverIfNecessary);
    }

    /// Puts `task` at the back of `lane`, unless it is queued there already.
    fn enqueue(&mut self, lane: usize, task: Task) {
        if !self.lanes[lane].queue.contains(&task) {
            self.lanes[lane].queue.push_back(task);
        }
    }

    /// The id of `lane`'s operation in this session (its timer's is one more; see [`JOB_IDS`]).
    fn lane_id(&self, lane: usize) -> u64 {
        JOB_IDS + 4 * self.epoch + 2 * lane as u64
    }

    /// Puts `task` back at the front, to run again after a pause.
    fn wait_and_retry(&mut self, task: Task, out: &mut Vec<Command<JobReport>>) {
        self.lanes[self.lane].queue.push_front(task);
        let id = self.lane_id(self.lane) + 1;
        self.lanes[self.lane].waiting = Some(id);
        out.push(Command::Timer {
            id,
            after_ms: RETRY_AFTER_MS,
        });
    }

    fn register(&mut self) {
        for task in [Task::Register, Task::SetNecessary, Task::WatchInstances] {
            self.enqueue(LISTENER, task);
        }
    }

    fn start_cycle(&mut self) {
        self.in_cycle = true;
        self.misfired = false;
        self.ran_standing = false;
        let cycle = self.cycle;
        self.lanes[CYCLE]
            .queue
            .push_back(Task::CheckNecessary(cycle));
    }

    fn end_cycle(&mut self) {
        self.in_cycle = false;
        self.ended_a_cycle = true;
        self.fail_over_after_queued_work();
        if self.misfired {
            self.start_cycle();
        }
    }

    fn execute(&mut self, item: u32, cycle: u64, token: i64, via: Via) -> JobReport {
        self.executed.insert(item, cycle);
        JobReport::Executed {
            item,
            cycle,
            token,
            failover: via == Via::Failover,
        }
    }

    /// The continuation after running (or skipping) `item` via `via`.
    ///
    /// A failover has then run the item for its own cycle, or found it run: the mark is done
    /// if a live instance owns the item now. If its owner is dead, the crashed instance may
    /// own it in a later cycle than this instance's, which this one cannot run.
    fn after_item(&mut self, item: u32, via: Via) {
        if via == Via::Failover {
            self.then([Task::ReadCurrentOwner(item)]);
        }
    }

    /// The continuation after a failover of `item`: unmark it (unless it is left for a later
    /// cycle), delete our failover node, and take the next marked item. The mark goes only
    /// now, once the item ran or is known to have run: unmarked while its claim was read, it
    /// could be missed by another instance's failover check between an unmark and a mark
    /// made again.
    fn end_failover(&mut self, item: u32, unmark: bool) {
        let next = match self.variant {
            JobVariant::OneItemPerIdle => Task::ReleaseClaimLock,
            JobVariant::Correct
            | JobVariant::NoCycleClaim
            | JobVariant::TrustOwners
            | JobVariant::UncoveredReshard => Task::ClaimNext,
        };
        let done = [Task::CompleteFailover(item), next];
        if unmark {
            self.then(std::iter::once(Task::Unmark(item)).chain(done));
        } else {
            self.then(done);
        }
    }

    /// The continuation for an `item` whose node is gone (the job was removed): a failover
    /// drops its mark.
    fn forget_item(&mut self, item: u32, via: Via) {
        if via == Via::Failover {
            self.end_failover(item, true);
        }
    }

    /// A failover found `item` run in its cycle, and its owner dead (or being replaced): the
    /// run the crash cut short is of a later cycle, which this instance has not fired. Leave
    /// the mark for an instance that has, and the item alone until this one's next trigger.
    fn leave_for_a_later_cycle(&mut self, item: u32) {
        self.deferred.insert(item);
        self.end_failover(item, false);
    }

    /// Runs `item` for `cycle`, claiming it first unless the variant skips the claim.
    fn run_item(&mut self, item: u32, cycle: u64, via: Via, token: i64) -> Option<JobReport> {
        if cycle == 0 {
            self.after_item(item, via);
            return None;
        }
        match self.variant {
            JobVariant::NoCycleClaim => {
                self.after_item(item, via);
                Some(self.execute(item, cycle, token, via))
            }
            JobVariant::Correct
            | JobVariant::OneItemPerIdle
            | JobVariant::TrustOwners
            | JobVariant::UncoveredReshard => {
                self.then([Task::ReadClaim { item, cycle, via }]);
                None
            }
        }
    }

    fn on_reply(
        &mut self,
        task: Task,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<JobReport>>,
    ) {
        let report = |out: &mut Vec<Command<JobReport>>, report| out.push(Command::Report(report));
        match (task, result) {
            (_, Err(ZkError::SessionExpired | ZkError::SessionMoved)) => {
                // The session event that follows resets the work; nothing to retry.
            }
            (task, Err(ZkError::ConnectionLoss | ZkError::OperationTimeout)) => {
                // A lost claim or registration is read back before it is tried again.
                let again = match task {
                    Task::Claim {
                        item, cycle, via, ..
                    } => Task::ReadClaim { item, cycle, via },
                    other => other,
                };
                self.wait_and_retry(again, out);
            }
            // Creating a node whose parent is missing: make the parent, then create again.
            (
                task @ (Task::Ensure(_)
                | Task::Register
                | Task::SetNecessary
                | Task::Mark(_)
                | Task::WatchInstances),
                Err(ZkError::NoNode),
            ) => {
                let parent = match &task {
                    Task::Ensure(path) => crate::path::parent_of(path).to_owned(),
                    Task::Register | Task::WatchInstances => self.paths.instances(),
                    Task::SetNecessary => {
                        crate::path::parent_of(&self.paths.necessary()).to_owned()
                    }
                    Task::Mark(_) => self.paths.failover_items(),
                    other => unreachable!("{other:?} creates nothing"),
                };
                self.then([Task::Ensure(parent), task]);
            }
            (Task::Ensure(_) | Task::SetNecessary | Task::Mark(_), Ok(_))
            | (Task::Ensure(_) | Task::SetNecessary | Task::Mark(_), Err(ZkError::NodeExists)) => {}
            (Task::Register, Ok(_)) => {}
            (Task::Register, Err(ZkError::NodeExists)) => self.then([Task::CheckRegistration]),
            (Task::CheckRegistration, Ok(Response::Data(_, stat))) => {
                if Some(SessionId(stat.ephemeral_owner)) != self.session {
                    self.then([Task::ClearRegistration, Task::Register]);
                }
            }
            (Task::CheckRegistration, Err(ZkError::NoNode)) => self.then([Task::Register]),
            (Task::ClearRegistration, Ok(_) | Err(ZkError::NoNode)) => {}
            (Task::WatchInstances, Ok(Response::Children(children, _))) => {
                let now: BTreeSet<String> = children.into_iter().collect();
                if let Some(known) = self.known_instances.replace(now.clone()) {
                    if known != now {
                        self.enqueue(LISTENER, Task::SetNecessary);
                    }
                    for crashed in known.difference(&now) {
                        for item in 0..self.items {
                            let crashed = crashed.clone();
                            self.lanes[LISTENER]
                                .queue
                                .push_back(Task::ScanOwner { crashed, item });
                        }
                    }
                    if known.difference(&now).next().is_some() {
                        self.fail_over_after_queued_work();
                    }
                }
            }
            (Task::ScanOwner { crashed, item }, Ok(Response::Data(data, _))) => {
                if data == crashed.as_bytes() {
                    self.then([Task::Mark(item)]);
                } else {
                    self.then([Task::ScanFailoverOwner { crashed, item }]);
                }
            }
            (Task::ScanOwner { crashed, item }, Err(ZkError::NoNode)) => {
                self.then([Task::ScanFailoverOwner { crashed, item }]);
            }
            (Task::ScanFailoverOwner { crashed, item }, Ok(Response::Data(data, _))) => {
                if data == crashed.as_bytes() {
                    self.then([Task::Mark(item)]);
                }
            }
            (Task::ScanFailoverOwner { .. }, Err(ZkError::NoNode)) => {}
            (Task::CheckNecessary(cycle), Ok(Response::Exists(None))) => {
                let reads = (0..self.items).map(|item| Task::ReadOwner(cycle, item));
                let reads: Vec<Task> = reads.chain([Task::EndCycle]).collect();
                self.then(reads);
            }
            (Task::CheckNecessary(cycle), Ok(Response::Exists(Some(_)))) => {
                if self.leader {
                    self.then([Task::ListInstances(cycle)]);
                } else if !self.ran_standing && self.ended_a_cycle && self.runs_standing() {
                    // The leader's new sharding may come only with its next cycle, and move
                    // this instance's items to instances that have run this one: run them now,
                    // by the standing sharding, then wait for the new one.
                    self.ran_standing = true;
                    let reads = (0..self.items).map(|item| Task::ReadStanding(cycle, item));
                    self.then(reads.chain([Task::CheckNecessary(cycle)]));
                } else {
                    self.wait_and_retry(Task::CheckNecessary(cycle), out);
                }
            }
            (Task::ListInstances(cycle), Ok(Response::Children(children, _))) => {
                if children.is_empty() {
                    self.wait_and_retry(Task::CheckNecessary(cycle), out);
                } else {
                    let owners = average_allocation(&children, self.items);
                    let mut tasks = vec![Task::Ensure(self.paths.sharding())];
                    tasks.extend((0..self.items).map(|item| Task::Ensure(self.paths.item(item))));
                    for (item, owner) in (0..self.items).zip(&owners) {
                        let covers = self.variant != JobVariant::UncoveredReshard;
                        if covers && owner.as_deref() != Some(self.instance.as_str()) {
                            tasks.push(Task::ReadOldOwner(item));
                        }
                        tasks.push(Task::ResetItem(item));
                    }
                    tasks.push(Task::WriteSharding(cycle, owners, Vec::new()));
                    tasks.push(Task::CheckNecessary(cycle));
                    self.then(tasks);
                }
            }
            (Task::ListInstances(cycle), Err(ZkError::NoNode)) => {
                self.wait_and_retry(Task::CheckNecessary(cycle), out);
            }
            (Task::ReadOldOwner(item), Ok(Response::Data(old, _))) => self.note_moved(item, &old),
            (Task::ReadOldOwner(_) | Task::ReadStanding(..), Err(ZkError::NoNode)) => {}
            (Task::ReadStanding(cycle, item), Ok(Response::Data(owner, stat))) => {
                if owner == self.instance.as_bytes() {
                    let done = self.run_item(item, cycle, Via::Sharding, stat.czxid);
                    assert!(done.is_none(), "a standing item runs only under a claim");
                }
            }
            (Task::ResetItem(_), Ok(_) | Err(ZkError::NoNode)) => {}
            // Written; or written already (this write, whose reply was lost), or by a concurrent
            // sharding, or the flag went: CheckNecessary (queued next) decides what to read.
            (
                Task::WriteSharding(cycle, _, moved),
                Ok(_) | Err(ZkError::NodeExists | ZkError::NoNode),
            ) => {
                // Whoever ran this cycle before the new sharding read the old one: an item it
                // moved may have passed both its old owner and its new one. Run each now, for
                // this cycle, unless someone claimed it (the claim keeps it to one run). With
                // the write's reply lost, this sharding may be ours: run them all the same.
                let via = Via::Sharding;
                self.then(
                    moved
                        .into_iter()
                        .map(|item| Task::ReadClaim { item, cycle, via }),
                );
            }
            (Task::ReadOwner(cycle, item), Ok(Response::Data(data, stat))) => {
                if data == self.instance.as_bytes() {
                    let token = stat.czxid;
                    if self.variant == JobVariant::NoCycleClaim {
                        self.then([Task::ReadTakeOff { cycle, item, token }]);
                    } else if let Some(done) = self.run_item(item, cycle, Via::Sharding, token) {
                        // No take-off check: the claim keeps the item to one run in this
                        // cycle, whoever claims it first. Skipping an item that another
                        // instance is failing over loses this cycle's run of it when the
                        // taker runs it for an older cycle (its own, which lags this one).
                        report(out, done);
                    }
                } else if self.variant != JobVariant::TrustOwners {
                    if let Ok(owner) = String::from_utf8(data) {
                        let via = Via::Sharding;
                        self.then([Task::CheckOwnerAlive { item, owner, via }]);
                    }
                }
            }
            (
                Task::CheckOwnerAlive {
                    via: Via::Sharding, ..
                },
                Ok(Response::Exists(Some(_))),
            ) => {}
            (
                Task::CheckOwnerAlive {
                    item,
                    via: Via::Sharding,
                    ..
                },
                Ok(Response::Exists(None)),
            ) => {
                // The owner is gone and no listener marked its item (it came and went between
                // two listings): mark it, shard again next cycle, and fail it over now.
                self.then([Task::Mark(item)]);
                self.enqueue(LISTENER, Task::SetNecessary);
                self.fail_over_after_queued_work();
            }
            (Task::ReadOwner(cycle, _), Err(ZkError::NoNode)) => {
                if self.variant != JobVariant::UncoveredReshard {
                    // The leader is sharding again (it deletes the owners while `necessary`
                    // is raised): wait for it and read every owner again. Items run already
                    // are claimed and are not run twice.
                    let queue = &mut self.lanes[CYCLE].queue;
                    queue.retain(|task| !matches!(task, Task::ReadOwner(..) | Task::EndCycle));
                    self.then([Task::CheckNecessary(cycle)]);
                }
            }
            (Task::ReadTakeOff { .. }, Ok(Response::Exists(Some(_)))) => {}
            (Task::ReadTakeOff { cycle, item, token }, Ok(Response::Exists(None))) => {
                if let Some(done) = self.run_item(item, cycle, Via::Sharding, token) {
                    report(out, done);
                }
            }
            (Task::ReadClaim { item, cycle, via }, Ok(Response::Data(data, stat))) => {
                let claim = Claim::decode(&data);
                if claim.cycle < cycle {
                    let version = stat.version;
                    self.then([Task::Claim {
                        item,
                        cycle,
                        via,
                        version,
                    }]);
                } else {
                    // Claimed already: by us (a lost reply) and not yet run, or by another.
                    self.after_item(item, via);
                    let ours = claim.cycle == cycle && claim.instance == self.instance;
                    if ours && self.executed.get(&item) != Some(&cycle) {
                        let done = self.execute(item, cycle, stat.mzxid, via);
                        report(out, done);
                    }
                }
            }
            // The item's node is gone (the job was removed): drop the mark.
            (Task::ReadClaim { item, via, .. }, Err(ZkError::NoNode)) => {
                self.forget_item(item, via)
            }
            (Task::ReadCurrentOwner(item), Ok(Response::Data(owner, _))) => {
                match String::from_utf8(owner) {
                    Ok(owner) => {
                        let via = Via::Failover;
                        self.then([Task::CheckOwnerAlive { item, owner, via }]);
                    }
                    Err(_) => self.leave_for_a_later_cycle(item),
                }
            }
            (Task::ReadCurrentOwner(item), Err(ZkError::NoNode)) => {
                self.leave_for_a_later_cycle(item);
            }
            (
                Task::CheckOwnerAlive {
                    item,
                    via: Via::Failover,
                    ..
                },
                Ok(Response::Exists(Some(_))),
            ) => {
                // A live owner runs it from here on.
                self.end_failover(item, true);
            }
            (
                Task::CheckOwnerAlive {
                    item,
                    via: Via::Failover,
                    ..
                },
                Ok(Response::Exists(None)),
            ) => self.leave_for_a_later_cycle(item),
            (
                Task::Claim {
                    item, cycle, via, ..
                },
                Ok(Response::SetData(stat)),
            ) => {
                self.after_item(item, via);
                let done = self.execute(item, cycle, stat.mzxid, via);
                report(out, done);
            }
            (
                Task::Claim {
                    item, cycle, via, ..
                },
                Err(ZkError::BadVersion),
            ) => {
                self.then([Task::ReadClaim { item, cycle, via }]);
            }
            (Task::Claim { item, via, .. }, Err(ZkError::NoNode)) => self.forget_item(item, via),
            (Task::FailoverIfNecessary, Ok(Response::Children(children, _))) => {
                let takes = children.iter().any(|name| self.takes_over(name));
                if takes && self.claim_lock.is_none() && self.session.is_some() {
                    self.claim_round += 1;
                    let uuid = format!("{}-failover-{}", self.uuid, self.claim_round);
                    let dir = self.paths.failover_latch();
                    let lock =
                        LatchMachine::new(LatchVariant::Correct, &dir, &self.instance, &uuid);
                    self.claim_lock = Some(lock);
                    let session_id = self.session.expect("checked above");
                    self.feed_claim_lock(
                        Input::Session(SessionEvent::Connected { session_id }),
                        out,
                    );
                    self.feed_claim_lock(Input::Request(LatchRequest::Start), out);
                }
            }
            (Task::FailoverIfNecessary, Err(ZkError::NoNode)) => {}
            (Task::ClaimNext, Ok(Response::Children(children, _))) => {
                let first = children
                    .iter()
                    .filter(|name| self.takes_over(name))
                    .filter_map(|name| name.parse::<u32>().ok())
                    .min();
                match first {
                    Some(item) => self.then([Task::TakeFailover(item)]),
                    None => self.then([Task::ReleaseClaimLock]),
                }
            }
            (Task::ClaimNext, Err(ZkError::NoNode)) => self.then([Task::ReleaseClaimLock]),
            (Task::TakeFailover(item), Ok(Response::Created(created))) => {
                let cycle = self.cycle;
                if let Some(done) = self.run_item(item, cycle, Via::Failover, created.stat.czxid) {
                    report(out, done);
                }
            }
            (Task::TakeFailover(item), Err(ZkError::NodeExists)) => {
                self.then([Task::CheckFailoverOwner(item)]);
            }
            // The item's node is gone (the job was removed): drop the mark.
            (Task::TakeFailover(item), Err(ZkError::NoNode)) => {
                self.then([Task::Unmark(item), Task::ClaimNext]);
            }
            (Task::CheckFailoverOwner(item), Ok(Response::Data(_, stat))) => {
                if Some(SessionId(stat.ephemeral_owner)) == self.session {
                    // Our own take-over, whose reply was lost.
                    let cycle = self.cycle;
                    if let Some(done) = self.run_item(item, cycle, Via::Failover, stat.czxid) {
                        report(out, done);
                    }
                } else {
                    // Another instance is running it.
                    self.then([Task::Unmark(item), Task::ClaimNext]);
                }
            }
            (Task::CheckFailoverOwner(item), Err(ZkError::NoNode)) => {
                self.then([Task::TakeFailover(item)]);
            }
            (Task::Unmark(_) | Task::CompleteFailover(_), Ok(_) | Err(ZkError::NoNode)) => {}
            (task, other) => unreachable!("elastic-job instance: {task:?} answered {other:?}"),
        }
    }

    fn feed_election(&mut self, input: Input<ElectionRequest>, out: &mut Vec<Command<JobReport>>) {
        let mut commands = Vec::new();
        self.election.handle(input, &mut commands);
        for command in commands {
            out.push(match command {
                Command::Op { id, request } => Command::Op { id, request },
                Command::Timer { id, after_ms } => Command::Timer { id, after_ms },
                Command::Report(ElectionReport::Leader { token }) => {
                    self.leader = true;
                    Command::Report(JobReport::Leader { token })
                }
                Command::Report(ElectionReport::NotLeader) => {
                    self.leader = false;
                    Command::Report(JobReport::NotLeader)
                }
                Command::Report(ElectionReport::Follower) => continue,
            });
        }
    }

    fn claim_offset(&self) -> u64 {
        CLAIM_IDS + (self.claim_round << CLAIM_ROUND_SHIFT)
    }

    fn feed_claim_lock(&mut self, input: Input<LatchRequest>, out: &mut Vec<Command<JobReport>>) {
        let Some(lock) = self.claim_lock.as_mut() else {
            return;
        };
        let mut commands = Vec::new();
        lock.handle(input, &mut commands);
        let offset = self.claim_offset();
        for command in commands {
            match command {
                Command::Op { id, request } => out.push(Command::Op {
                    id: id + offset,
                    request,
                }),
                Command::Timer { id, after_ms } => out.push(Command::Timer {
                    id: id + offset,
                    after_ms,
                }),
                Command::Report(LatchReport::Leader { .. }) => {
                    self.enqueue(LISTENER, Task::ClaimNext);
                }
                Command::Report(LatchReport::Closed | LatchReport::Failed(_)) => {
                    self.claim_lock = None;
                    // Items marked while the lock was held or being released are not left
                    // waiting; the known-bad variant leaves them for the next cycle.
                    if self.variant != JobVariant::OneItemPerIdle {
                        self.fail_over_after_queued_work();
                    }
                }
                Command::Report(LatchReport::NotLeader) => {}
            }
        }
    }

    /// Where an id from a reply or a timer belongs.
    fn owner_of(&self, id: u64) -> IdOwner {
        if id >= JOB_IDS {
            IdOwner::Job
        } else if id >= CLAIM_IDS {
            if (id - CLAIM_IDS) >> CLAIM_ROUND_SHIFT == self.claim_round {
                IdOwner::ClaimLock(id - self.claim_offset())
            } else {
                IdOwner::Stale
            }
        } else {
            IdOwner::Election
        }
    }

    fn on_session(&mut self, event: SessionEvent, out: &mut Vec<Command<JobReport>>) {
        self.feed_election(Input::Session(event), out);
        self.feed_claim_lock(Input::Session(event), out);
        match event {
            SessionEvent::Connected { session_id } => {
                let new_session = self.session != Some(session_id);
                self.session = Some(session_id);
                if new_session && self.started {
                    // Elastic-Job's reconnection: register again, and look at the instances.
                    self.register();
                }
            }
            SessionEvent::Reconnected { session_id } => self.session = Some(session_id),
            SessionEvent::Disconnected => {}
            SessionEvent::Expired | SessionEvent::Closed => {
                self.session = None;
                self.epoch += 1;
                self.lanes = [Lane::default(), Lane::default()];
                self.in_cycle = false;
                self.misfired = false;
                self.claim_lock = None;
                self.deferred.clear();
                self.ran_standing = false;
                self.started &= event == SessionEvent::Expired;
            }
        }
    }
}

/// A job instance is not symmetric: the average allocation orders instances by id, so two
/// instances renamed own each other's items only if the items are renamed too. A model checker
/// checks the job without symmetry reduction; only the identity may hash it.
impl crate::symmetry::Symmetric for JobMachine {
    fn hash_renamed<H: std::hash::Hasher>(
        &self,
        renaming: &crate::symmetry::Renaming<'_>,
        state: &mut H,
    ) {
        assert!(
            renaming.index() == 0 && !renaming.is_recording(),
            "a job instance cannot be renamed: check the job without symmetry reduction"
        );
        std::hash::Hash::hash(self, state);
    }
}

enum IdOwner {
    Job,
    ClaimLock(u64),
    Election,
    Stale,
}

impl Machine for JobMachine {
    type Request = JobRequest;
    type Report = JobReport;

    fn handle(&mut self, input: Input<JobRequest>, out: &mut Vec<Command<JobReport>>) {
        match input {
            Input::Request(JobRequest::Start) => {
                if !self.started {
                    self.started = true;
                    self.register();
                    self.feed_election(Input::Request(ElectionRequest::Elect), out);
                }
            }
            Input::Request(JobRequest::Trigger { cycle }) => {
                if cycle > self.cycle {
                    self.deferred.clear();
                }
                self.cycle = self.cycle.max(cycle);
                if !self.started || self.session.is_none() {
                    // Elastic-Job pauses the scheduler while the registry is unavailable.
                } else if self.in_cycle {
                    self.misfired = true;
                } else {
                    self.start_cycle();
                }
            }
            Input::Reply { id, result } => match self.owner_of(id) {
                IdOwner::Job => {
                    let lane = (0..self.lanes.len()).find(|lane| {
                        let step = self.lanes[*lane].step.as_ref();
                        step.is_some_and(|(expected, _)| *expected == id)
                    });
                    if let Some(lane) = lane {
                        let (_, task) = self.lanes[lane].step.take().expect("found above");
                        self.lane = lane;
                        self.on_reply(task, result, out);
                    }
                }
                IdOwner::ClaimLock(id) => self.feed_claim_lock(Input::Reply { id, result }, out),
                IdOwner::Election => self.feed_election(Input::Reply { id, result }, out),
                IdOwner::Stale => {}
            },
            Input::Timer(id) => match self.owner_of(id) {
                IdOwner::Job => {
                    for lane in &mut self.lanes {
                        if lane.waiting == Some(id) {
                            lane.waiting = None;
                        }
                    }
                }
                IdOwner::ClaimLock(id) => self.feed_claim_lock(Input::Timer(id), out),
                IdOwner::Election => self.feed_election(Input::Timer(id), out),
                IdOwner::Stale => {}
            },
            Input::Watch(event) => {
                if event.path.starts_with(&self.paths.election()) {
                    self.feed_election(Input::Watch(event), out);
                } else if event.path.starts_with(&self.paths.failover_latch()) {
                    self.feed_claim_lock(Input::Watch(event), out);
                } else if event.path == self.paths.instances()
                    && event.event_type == EventType::NodeChildrenChanged
                {
                    self.enqueue(LISTENER, Task::WatchInstances);
                }
            }
            Input::Session(event) => self.on_session(event, out),
        }
        self.pump(out);
    }
}

/// A job instance as an async API over a running [`JobMachine`].
pub struct JobInstance {
    handle: crate::driver::Handle<JobMachine>,
}

impl JobInstance {
    /// Starts instance `instance` of `job` over `client`; spawn the returned driver.
    pub fn start<C: crate::ZkClient + 'static>(
        client: std::sync::Arc<C>,
        clock: std::sync::Arc<dyn crate::driver::Clock>,
        machine: JobMachine,
    ) -> (
        JobInstance,
        impl std::future::Future<Output = JobMachine> + Send,
    ) {
        let (handle, driver) = crate::driver::start(client, clock, machine);
        handle.send(JobRequest::Start);
        (JobInstance { handle }, driver)
    }

    /// Fires the cron trigger of `cycle`. False if the driver has stopped.
    pub fn trigger(&self, cycle: u64) -> bool {
        self.handle.send(JobRequest::Trigger { cycle })
    }

    /// The next report, waiting for it; `None` once the driver has stopped.
    pub async fn next_report(&self) -> Option<JobReport> {
        self.handle.next_report().await
    }

    /// A report if one is waiting.
    pub fn try_report(&self) -> Option<JobReport> {
        self.handle.try_report()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(out: &[Command<JobReport>]) -> Vec<(OpId, Request)> {
        out.iter()
            .filter_map(|command| match command {
                Command::Op { id, request } => Some((*id, request.clone())),
                _ => None,
            })
            .collect()
    }

    fn job_op(out: &[Command<JobReport>]) -> (OpId, Request) {
        ops(out)
            .into_iter()
            .find(|(id, _)| *id >= JOB_IDS)
            .expect("a job operation")
    }

    fn started() -> (JobMachine, Vec<Command<JobReport>>) {
        let mut machine = JobMachine::new(JobVariant::Correct, "/job", "a", "u", 2);
        let mut out = Vec::new();
        let session_id = SessionId(7);
        machine.handle(
            Input::Session(SessionEvent::Connected { session_id }),
            &mut out,
        );
        out.clear();
        machine.handle(Input::Request(JobRequest::Start), &mut out);
        (machine, out)
    }

    #[test]
    fn start_registers_the_instance_node_and_elects() {
        let (_, out) = started();
        let (_, request) = job_op(&out);
        assert_eq!(
            request,
            Request::Create {
                path: "/job/instances/a".into(),
                data: Vec::new(),
                mode: CreateMode::Ephemeral,
            }
        );
        assert!(
            ops(&out).iter().any(|(id, _)| *id < CLAIM_IDS),
            "the election starts too"
        );
    }

    #[test]
    fn connection_loss_retries_the_same_operation_after_a_pause() {
        let (mut machine, out) = started();
        let (id, request) = job_op(&out);
        let mut out = Vec::new();
        let lost = Err(ZkError::ConnectionLoss);
        machine.handle(Input::Reply { id, result: lost }, &mut out);
        let timer = out.iter().find_map(|command| match command {
            Command::Timer { id, after_ms } if *id >= JOB_IDS => Some((*id, *after_ms)),
            _ => None,
        });
        let (timer, after_ms) = timer.expect("a retry timer");
        assert_eq!(after_ms, RETRY_AFTER_MS);
        assert!(
            ops(&out).iter().all(|(id, _)| *id < JOB_IDS),
            "nothing until the timer"
        );
        out.clear();
        machine.handle(Input::Timer(timer), &mut out);
        assert_eq!(job_op(&out).1, request, "the same create again");
    }

    #[test]
    fn a_retry_returns_the_instance_to_the_state_it_retried_from() {
        // Fixed ids per lane and session: a retry (or a poll that finds nothing new) is a loop
        // in a model checker's state graph, not a new state.
        let (mut machine, out) = started();
        let before = machine.clone();
        let (id, request) = job_op(&out);
        let mut out = Vec::new();
        let lost = Err(ZkError::ConnectionLoss);
        machine.handle(Input::Reply { id, result: lost }, &mut out);
        let timer = out.iter().find_map(|command| match command {
            Command::Timer { id, .. } if *id >= JOB_IDS => Some(*id),
            _ => None,
        });
        out.clear();
        machine.handle(Input::Timer(timer.expect("a retry timer")), &mut out);
        assert_eq!(
            job_op(&out),
            (id, request),
            "the same operation, the same id"
        );
        assert_eq!(machine, before, "back where it started");
    }

    #[test]
    fn a_reply_from_a_lost_session_matches_nothing_in_the_next() {
        let (mut machine, out) = started();
        let (old_id, _) = job_op(&out);
        let mut out = Vec::new();
        machine.handle(Input::Session(SessionEvent::Expired), &mut out);
        let session_id = SessionId(8);
        machine.handle(
            Input::Session(SessionEvent::Connected { session_id }),
            &mut out,
        );
        let (new_id, request) = job_op(&out);
        assert_ne!(new_id, old_id, "a new session, new ids");
        let registering = machine.clone();
        out.clear();
        let stale = Err(ZkError::SessionExpired);
        machine.handle(
            Input::Reply {
                id: old_id,
                result: stale,
            },
            &mut out,
        );
        assert!(
            out.is_empty(),
            "the old session's reply is dropped: {out:?}"
        );
        assert_eq!(machine, registering, "and changes nothing");
        assert!(matches!(request, Request::Create { .. }));
    }

    #[test]
    fn a_registration_left_by_an_older_session_is_replaced() {
        let (mut machine, out) = started();
        let (id, _) = job_op(&out);
        let mut out = Vec::new();
        let exists = Err(ZkError::NodeExists);
        machine.handle(Input::Reply { id, result: exists }, &mut out);
        let (id, request) = job_op(&out);
        assert!(matches!(request, Request::GetData { .. }));
        let stale = crate::types::Stat {
            ephemeral_owner: 3,
            ..Default::default()
        };
        out.clear();
        let data = Ok(Response::Data(Vec::new(), stale));
        machine.handle(Input::Reply { id, result: data }, &mut out);
        assert_eq!(
            job_op(&out).1,
            Request::Delete {
                path: "/job/instances/a".into(),
                version: -1
            }
        );
    }

    #[test]
    fn expiry_drops_the_work_and_a_new_session_registers_again() {
        let (mut machine, _) = started();
        let mut out = Vec::new();
        machine.handle(Input::Session(SessionEvent::Expired), &mut out);
        out.clear();
        machine.handle(Input::Request(JobRequest::Trigger { cycle: 1 }), &mut out);
        assert!(
            ops(&out).iter().all(|(id, _)| *id < JOB_IDS),
            "no cycle runs without a session"
        );
        let session_id = SessionId(8);
        machine.handle(
            Input::Session(SessionEvent::Connected { session_id }),
            &mut out,
        );
        assert_eq!(
            job_op(&out).1,
            Request::Create {
                path: "/job/instances/a".into(),
                data: Vec::new(),
                mode: CreateMode::Ephemeral,
            }
        );
    }

    #[test]
    fn a_claim_that_lost_the_race_reads_again_and_skips_the_item() {
        let claim = Task::Claim {
            item: 0,
            cycle: 4,
            via: Via::Sharding,
            version: 2,
        };
        let (mut machine, mut out) = running(CYCLE, 4, claim);
        let (id, request) = job_op(&out);
        assert!(matches!(request, Request::SetData { version: 2, .. }));
        out.clear();
        machine.handle(
            Input::Reply {
                id,
                result: Err(ZkError::BadVersion),
            },
            &mut out,
        );
        let (id, request) = job_op(&out);
        assert_eq!(
            request,
            Request::GetData {
                path: "/job/sharding/0".into(),
                watch: false
            }
        );
        out.clear();
        let theirs = Claim {
            cycle: 4,
            instance: "b".into(),
        };
        let data = Ok(Response::Data(theirs.encode(), Default::default()));
        machine.handle(Input::Reply { id, result: data }, &mut out);
        assert!(
            !out.iter()
                .any(|c| matches!(c, Command::Report(JobReport::Executed { .. }))),
            "b claimed cycle 4 of item 0: a does not run it"
        );
    }

    /// Leader `a` at cycle 2, `necessary` raised, instances `a` and `b`, two items: the new
    /// sharding gives item 0 to `a` and item 1 to `b`, whose old owner was `a`. Answers each
    /// operation as a server that holds every node would, and returns what follows the write.
    fn shard_again_mid_cycle(variant: JobVariant) -> (JobMachine, Vec<Command<JobReport>>) {
        let mut machine = JobMachine::new(variant, "/job", "a", "u", 2);
        machine.session = Some(SessionId(7));
        machine.started = true;
        machine.leader = true;
        machine.cycle = 2;
        machine.in_cycle = true;
        let necessary = Ok(Response::Exists(Some(Default::default())));
        let mut out = Vec::new();
        machine.lanes[CYCLE]
            .queue
            .push_back(Task::CheckNecessary(2));
        machine.pump(&mut out);
        let mut reply = necessary;
        let mut asked = Vec::new();
        loop {
            let (id, request) = job_op(&out);
            out.clear();
            machine.handle(Input::Reply { id, result: reply }, &mut out);
            let (_, next) = job_op(&out);
            reply = match next {
                Request::GetChildren { .. } => Ok(Response::Children(
                    vec!["a".into(), "b".into()],
                    Default::default(),
                )),
                Request::Create { .. } => Err(ZkError::NodeExists),
                Request::GetData { ref path, .. } if path.ends_with("/instance") => {
                    Ok(Response::Data(b"a".to_vec(), Default::default()))
                }
                Request::Delete { .. } => Ok(Response::Deleted),
                Request::Multi(_) => Ok(Response::Multi(Vec::new())),
                _ => return (machine, out),
            };
            asked.push(request);
            assert!(asked.len() < 20, "the sharding ends: {asked:?}");
        }
    }

    #[test]
    fn a_sharding_in_the_middle_of_a_cycle_runs_the_items_it_moves_to_another_instance() {
        let (mut machine, out) = shard_again_mid_cycle(JobVariant::Correct);
        let (id, request) = job_op(&out);
        assert_eq!(
            request,
            Request::GetData {
                path: "/job/sharding/1".into(),
                watch: false
            },
            "item 1 moved from a to b, which may have run this cycle: a reads its claim"
        );
        let mut out = Vec::new();
        let unclaimed = Claim {
            cycle: 1,
            instance: "a".into(),
        };
        let data = Ok(Response::Data(unclaimed.encode(), Default::default()));
        machine.handle(Input::Reply { id, result: data }, &mut out);
        let (id, request) = job_op(&out);
        assert!(matches!(request, Request::SetData { ref path, .. } if path == "/job/sharding/1"));
        out.clear();
        let claimed = Ok(Response::SetData(Default::default()));
        machine.handle(
            Input::Reply {
                id,
                result: claimed,
            },
            &mut out,
        );
        assert!(out.iter().any(|c| matches!(
            c,
            Command::Report(JobReport::Executed {
                item: 1,
                cycle: 2,
                ..
            })
        )));
    }

    #[test]
    fn the_uncovered_variant_leaves_a_moved_item_to_its_new_owner() {
        let (_, out) = shard_again_mid_cycle(JobVariant::UncoveredReshard);
        assert_eq!(
            job_op(&out).1,
            Request::Exists {
                path: "/job/leader/sharding/necessary".into(),
                watch: false
            }
        );
    }

    /// A machine in cycle `cycle` that is about to ask whether the sharding is necessary, and
    /// has run a cycle before unless this is its first.
    fn about_to_check_necessary(cycle: u64) -> (JobMachine, Vec<Command<JobReport>>) {
        let mut machine = JobMachine::new(JobVariant::Correct, "/job", "a", "u", 2);
        machine.session = Some(SessionId(7));
        machine.started = true;
        machine.cycle = cycle;
        machine.in_cycle = true;
        machine.ended_a_cycle = cycle > 1;
        machine.lanes[CYCLE]
            .queue
            .push_back(Task::CheckNecessary(cycle));
        let mut out = Vec::new();
        machine.pump(&mut out);
        (machine, out)
    }

    /// Feeds `result` as the reply to the job operation in `out`; returns what follows.
    fn reply(
        machine: &mut JobMachine,
        out: &[Command<JobReport>],
        result: Result<Response, ZkError>,
    ) -> Vec<Command<JobReport>> {
        let (id, _) = job_op(out);
        let mut next = Vec::new();
        machine.handle(Input::Reply { id, result }, &mut next);
        next
    }

    /// Instance `a` of a one-item job, in a session, at `cycle`, after it started `task` on
    /// `lane`.
    fn running(lane: usize, cycle: u64, task: Task) -> (JobMachine, Vec<Command<JobReport>>) {
        let mut machine = JobMachine::new(JobVariant::Correct, "/job", "a", "u", 1);
        machine.session = Some(SessionId(7));
        machine.started = true;
        machine.cycle = cycle;
        machine.lanes[lane].queue.push_back(task);
        let mut out = Vec::new();
        machine.pump(&mut out);
        (machine, out)
    }

    /// A failover's read of item 0's claim, for cycle 1.
    fn failover_of_item_0() -> Task {
        Task::ReadClaim {
            item: 0,
            cycle: 1,
            via: Via::Failover,
        }
    }

    fn data(bytes: &[u8]) -> Result<Response, ZkError> {
        Ok(Response::Data(bytes.to_vec(), Default::default()))
    }

    /// Answers the read of item 0's claim in `out` with `claim`; the machine claims the item
    /// and, once the claim is written, runs it for `cycle`. Returns what follows the run.
    fn claims_and_runs(
        machine: &mut JobMachine,
        out: &[Command<JobReport>],
        claim: &[u8],
        cycle: u64,
        failover: bool,
    ) -> Vec<Command<JobReport>> {
        let out = reply(machine, out, data(claim));
        assert!(matches!(job_op(&out).1, Request::SetData { .. }), "a claim");
        let written = Ok(Response::SetData(Default::default()));
        let out = reply(machine, &out, written);
        let ran = out.iter().any(|command| {
            *command
                == Command::Report(JobReport::Executed {
                    item: 0,
                    cycle,
                    token: 0,
                    failover,
                })
        });
        assert!(ran, "item 0 runs for cycle {cycle}: {out:?}");
        out
    }

    #[test]
    fn a_cycle_blocked_on_the_sharding_first_runs_the_items_the_standing_one_gives_it() {
        // The leader may shard again only with its next cycle, after the others ran this one,
        // and give our item to one of them: we run it now, by the standing sharding.
        let (mut machine, out) = about_to_check_necessary(2);
        let raised = Ok(Response::Exists(Some(Default::default())));
        let out = reply(&mut machine, &out, raised.clone());
        let owner = |item: u32| Request::GetData {
            path: format!("/job/sharding/{item}/instance"),
            watch: false,
        };
        assert_eq!(job_op(&out).1, owner(0));
        assert!(!machine.blocked_on_sharding(), "it reads before it waits");
        let out = reply(&mut machine, &out, data(b"a"));
        assert!(
            matches!(job_op(&out).1, Request::GetData { ref path, .. } if path == "/job/sharding/0")
        );
        let out = claims_and_runs(&mut machine, &out, b"1 b", 2, false);
        assert_eq!(job_op(&out).1, owner(1));
        let out = reply(&mut machine, &out, data(b"b"));
        assert!(
            matches!(job_op(&out).1, Request::Exists { .. }),
            "then it asks again"
        );
        let out = reply(&mut machine, &out, raised);
        assert!(ops(&out).is_empty(), "and waits: {out:?}");
        assert!(machine.blocked_on_sharding());
    }

    #[test]
    fn a_first_cycle_blocked_on_the_sharding_only_waits() {
        let (mut machine, out) = about_to_check_necessary(1);
        let raised = Ok(Response::Exists(Some(Default::default())));
        let out = reply(&mut machine, &out, raised);
        assert!(ops(&out).is_empty(), "it waits: {out:?}");
        assert!(machine.blocked_on_sharding());
    }

    #[test]
    fn a_cycle_that_finds_an_owner_missing_waits_for_the_sharding_and_reads_again() {
        let mut machine = JobMachine::new(JobVariant::Correct, "/job", "a", "u", 2);
        machine.session = Some(SessionId(7));
        machine.started = true;
        machine.cycle = 3;
        machine.in_cycle = true;
        let mut out = Vec::new();
        machine.lanes[CYCLE].queue.extend([
            Task::ReadOwner(3, 0),
            Task::ReadOwner(3, 1),
            Task::EndCycle,
        ]);
        machine.pump(&mut out);
        let (id, _) = job_op(&out);
        out.clear();
        let missing = Err(ZkError::NoNode);
        machine.handle(
            Input::Reply {
                id,
                result: missing,
            },
            &mut out,
        );
        assert_eq!(
            job_op(&out).1,
            Request::Exists {
                path: "/job/leader/sharding/necessary".into(),
                watch: false
            }
        );
        assert_eq!(
            machine.lanes[CYCLE].queue,
            VecDeque::new(),
            "the reads start over"
        );
        assert!(machine.in_cycle());
    }

    /// A failover of item 0 by `a` at cycle 1 finds the item claimed for cycle 1 by
    /// `claimer`, and the sharding naming `b` its owner; returns `a` and what it does once it
    /// has asked whether `b` is registered (`alive`).
    fn failover_finds_claimed_by(
        claimer: &str,
        alive: bool,
    ) -> (JobMachine, Vec<Command<JobReport>>) {
        let (mut machine, out) = running(LISTENER, 1, failover_of_item_0());
        let claim = Claim {
            cycle: 1,
            instance: claimer.into(),
        };
        let out = reply(&mut machine, &out, data(&claim.encode()));
        let owner = Request::GetData {
            path: "/job/sharding/0/instance".into(),
            watch: false,
        };
        assert_eq!(job_op(&out).1, owner);
        let out = reply(&mut machine, &out, data(b"b"));
        let alive_check = Request::Exists {
            path: "/job/instances/b".into(),
            watch: false,
        };
        assert_eq!(job_op(&out).1, alive_check);
        let out = reply(
            &mut machine,
            &out,
            Ok(Response::Exists(alive.then(Default::default))),
        );
        (machine, out)
    }

    #[test]
    fn a_failover_that_runs_the_item_leaves_the_mark_while_its_owner_is_dead() {
        // `a`, in cycle 1, runs item 0 for cycle 1 (claimed for cycle 0); the dead `b` still
        // owns it, for a cycle 2 that `a` has not fired: the mark stays for it.
        let (mut machine, out) = running(LISTENER, 1, failover_of_item_0());
        let out = claims_and_runs(&mut machine, &out, b"0 b", 1, true);
        let owner = Request::GetData {
            path: "/job/sharding/0/instance".into(),
            watch: false,
        };
        assert_eq!(job_op(&out).1, owner, "then whose it is");
        let out = reply(&mut machine, &out, data(b"b"));
        let out = reply(&mut machine, &out, Ok(Response::Exists(None)));
        assert_eq!(
            job_op(&out).1,
            Request::Delete {
                path: "/job/sharding/0/failover".into(),
                version: -1
            },
            "the mark stays"
        );
        assert!(!machine.takes_over("0"));
    }

    #[test]
    fn a_failover_that_finds_its_cycle_run_and_the_owner_dead_leaves_the_item_for_the_next() {
        // `b` owns item 0 and crashed after it ran cycle 1, or `c` ran cycle 1 (it owned the
        // item then, or ran it as moved) and `b` came to own it and crashed before cycle 2.
        // Either way the run the crash cut short is of cycle 2, which `a` has not fired.
        for claimer in ["b", "c"] {
            let (mut machine, out) = failover_finds_claimed_by(claimer, false);
            assert_eq!(
                job_op(&out).1,
                Request::Delete {
                    path: "/job/sharding/0/failover".into(),
                    version: -1
                },
                "the mark stays, for an instance that has fired cycle 2"
            );
            assert!(!machine.takes_over("0"), "not by a in cycle 1");
            let mut out = Vec::new();
            machine.handle(Input::Request(JobRequest::Trigger { cycle: 2 }), &mut out);
            assert!(machine.takes_over("0"), "by a in cycle 2");
        }
    }

    #[test]
    fn a_failover_that_finds_the_item_run_and_owned_by_a_live_instance_is_done() {
        let (machine, out) = failover_finds_claimed_by("c", true);
        assert_eq!(
            job_op(&out).1,
            Request::Delete {
                path: "/job/leader/failover/items/0".into(),
                version: -1
            },
            "unmarked"
        );
        assert!(machine.takes_over("0"));
    }
}
