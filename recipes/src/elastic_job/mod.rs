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
//! - **Two shardings at once** (not in Elastic-Job): a leader deposed in the middle of its
//!   sharding goes on with it (Elastic-Job checks leadership once, before it starts), and the
//!   new leader shards too. The later one's resets may delete the owners the earlier one
//!   wrote, and its write then fails whole: on the flag, which the earlier write deleted
//!   (`NoNode`), or on an owner the earlier write made after this one's reset of that item
//!   (`NodeExists`). On `NoNode` it raises `necessary` again, so that the next sharding writes
//!   owners; on `NodeExists` (which its own write, its reply lost and retried, also gives) it
//!   asks whether each item has an owner, and raises the flag at the first that has none.
//!   Without that, every instance found an item without an owner and no sharding pending,
//!   forever (issue 37: ten seeds of 100,000 of the harsh-random job scenario;
//!   `scenarios/regressions/job-harsh-random-two-shardings.toml` and
//!   `job-harsh-random-owners-reset-by-a-later-sharding.toml`).
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
//! # Where the code is
//!
//! - this file: the instance's state ([`JobMachine`]), how it takes inputs, and its async API
//!   ([`JobInstance`]);
//! - `tasks.rs`: the steps of its work, and the operation each issues;
//! - `lanes.rs`: how the two lanes run, cycles start and end, and items run;
//! - `replies.rs`: what each reply leads to;
//! - `nested.rs`: the election and the failover lock that run inside an instance;
//! - `tests.rs`: unit tests, driven by hand through the instance's inputs.
//!
//! # Not modelled
//!
//! Misfire policies beyond "run once more", disabled items, the `running` nodes of
//! `monitorExecution` (execution is instantaneous), the job's configuration nodes, and
//! sharding strategies other than average allocation. Pausing the job on `SUSPENDED` and its
//! reconcile service. A step that meets `ConnectionLoss` is retried every
//! [`RETRY_AFTER_MS`](crate::machine::RETRY_AFTER_MS) until it is answered, where Curator's
//! `RetryLoop` under Elastic-Job (3 tries, 1 to 3 s apart) gives up and Elastic-Job drops the
//! step; so a step cut off by a long outage is done here once the outage ends.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::election::{ElectionMachine, ElectionRequest, ElectionVariant};
use crate::event::EventType;
use crate::latch::LatchMachine;
use crate::machine::{Command, Input, Machine, OpId, TimerId};
use crate::sharding::JobPaths;
use crate::types::SessionId;

mod lanes;
mod nested;
mod replies;
mod tasks;

use tasks::{Task, Via};

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
    /// Our own control for the model checker's ownership invariant: a new session after an
    /// expiry does not register the instance again. It runs on, believing it is registered;
    /// the others fail its items over and shard without it, so no run is lost or doubled.
    NoReregister,
    /// Our own control for the schedule oracle ("runs when scheduled"): a cycle that ends
    /// starts the next one at once, as if its trigger had misfired, one cycle ahead of the
    /// cron. The claims keep each (item, cycle) to one run, so nothing is doubled or lost;
    /// only the moment is wrong.
    RunAhead,
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
    /// The [`RunAhead`](JobVariant::RunAhead) control started a cycle its cron has not fired.
    ahead: QuietFlag,
}

/// A flag that hashes as nothing while it is down, so that one variant's own state leaves the
/// fingerprints of every other variant's states as they were.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct QuietFlag(pub(crate) bool);

impl std::hash::Hash for QuietFlag {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        if self.0 {
            true.hash(state);
        }
    }
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
            ahead: QuietFlag(false),
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

    /// The registration this instance believes it holds: `instances/<id>`, once started.
    pub fn registration(&self) -> Option<String> {
        self.started.then(|| self.paths.instance(&self.instance))
    }

    /// Whether this instance believes it leads the job.
    pub fn is_leader(&self) -> bool {
        self.leader
    }

    /// The newest cycle of any run this instance made, its own items' or a failover's (0
    /// before the first).
    pub fn newest_cycle_run(&self) -> u64 {
        self.executed.values().copied().max().unwrap_or(0)
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

    /// Its registration under `instances/`, once started.
    fn claimed_ephemerals(&self) -> Option<Vec<String>> {
        Some(self.registration().into_iter().collect())
    }

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
                if cycle >= self.cycle {
                    self.ahead = QuietFlag(false);
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

    /// What the instance's machine stands on ([`crate::driver::Handle::knowledge`]).
    pub fn knowledge(&self) -> crate::driver::Knowledge {
        self.handle.knowledge()
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
mod tests;
