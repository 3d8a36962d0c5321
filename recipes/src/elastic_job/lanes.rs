//! How an instance runs its two lanes of work (the listeners' and the cron's): queueing,
//! retries and polls, cycles, and what happens to an item once it is run or skipped.

use crate::latch::LatchRequest;
use crate::machine::{Command, Input, RETRY_AFTER_MS};

use super::{JobMachine, JobReport, JobVariant, Task, Via, CYCLE, JOB_IDS, LISTENER};

impl JobMachine {
    /// Runs each lane's queued tasks until it issues an operation or waits for a timer, and
    /// again while a lane's work queued more on another (the end of a cycle queues a failover
    /// check on the listeners' lane, which must not wait for the next input).
    pub(super) fn pump(&mut self, out: &mut Vec<Command<JobReport>>) {
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
    pub(super) fn note_moved(&mut self, item: u32, old: &[u8]) {
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
    pub(super) fn runs_standing(&self) -> bool {
        match self.variant {
            JobVariant::Correct
            | JobVariant::OneItemPerIdle
            | JobVariant::TrustOwners
            | JobVariant::NoReregister
            | JobVariant::RunAhead => true,
            JobVariant::NoCycleClaim | JobVariant::UncoveredReshard => false,
        }
    }

    /// Whether this instance takes over the marked item named `name` now: not if it left it
    /// for a later cycle in its current one.
    pub(super) fn takes_over(&self, name: &str) -> bool {
        let item = name.parse::<u32>().ok();
        item.is_none_or(|item| !self.deferred.contains(&item))
    }

    /// Puts `tasks` at the front of the queue, in order.
    pub(super) fn then(
        &mut self,
        tasks: impl IntoIterator<Item = Task, IntoIter: DoubleEndedIterator>,
    ) {
        for task in tasks.into_iter().rev() {
            self.lanes[self.lane].queue.push_front(task);
        }
    }

    /// Queues a failover check after everything queued on the listener's lane now (moving an
    /// earlier one there): an earlier check would run before the marks that this work makes,
    /// find nothing, and leave them waiting.
    pub(super) fn fail_over_after_queued_work(&mut self) {
        let queue = &mut self.lanes[LISTENER].queue;
        queue.retain(|task| *task != Task::FailoverIfNecessary);
        queue.push_back(Task::FailoverIfNecessary);
    }

    /// Puts `task` at the back of `lane`, unless it is queued there already.
    pub(super) fn enqueue(&mut self, lane: usize, task: Task) {
        if !self.lanes[lane].queue.contains(&task) {
            self.lanes[lane].queue.push_back(task);
        }
    }

    /// The id of `lane`'s operation in this session (its timer's is one more; see [`JOB_IDS`]).
    fn lane_id(&self, lane: usize) -> u64 {
        JOB_IDS + 4 * self.epoch + 2 * lane as u64
    }

    /// Puts `task` back at the front, to run again after a pause.
    pub(super) fn wait_and_retry(&mut self, task: Task, out: &mut Vec<Command<JobReport>>) {
        self.lanes[self.lane].queue.push_front(task);
        let id = self.lane_id(self.lane) + 1;
        self.lanes[self.lane].waiting = Some(id);
        out.push(Command::Timer {
            id,
            after_ms: RETRY_AFTER_MS,
        });
    }

    pub(super) fn register(&mut self) {
        for task in [Task::Register, Task::SetNecessary, Task::WatchInstances] {
            self.enqueue(LISTENER, task);
        }
    }

    pub(super) fn start_cycle(&mut self) {
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
        } else if self.variant == JobVariant::RunAhead && !self.ahead.0 {
            // The control's defect: the next cycle, before its trigger.
            self.ahead = super::QuietFlag(true);
            self.cycle += 1;
            self.start_cycle();
        }
    }

    pub(super) fn execute(&mut self, item: u32, cycle: u64, token: i64, via: Via) -> JobReport {
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
    pub(super) fn after_item(&mut self, item: u32, via: Via) {
        if via == Via::Failover {
            self.then([Task::ReadCurrentOwner(item)]);
        }
    }

    /// The continuation after a failover of `item`: unmark it (unless it is left for a later
    /// cycle), delete our failover node, and take the next marked item. The mark goes only
    /// now, once the item ran or is known to have run: unmarked while its claim was read, it
    /// could be missed by another instance's failover check between an unmark and a mark
    /// made again.
    pub(super) fn end_failover(&mut self, item: u32, unmark: bool) {
        let next = match self.variant {
            JobVariant::OneItemPerIdle => Task::ReleaseClaimLock,
            JobVariant::Correct
            | JobVariant::NoCycleClaim
            | JobVariant::TrustOwners
            | JobVariant::UncoveredReshard
            | JobVariant::NoReregister
            | JobVariant::RunAhead => Task::ClaimNext,
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
    pub(super) fn forget_item(&mut self, item: u32, via: Via) {
        if via == Via::Failover {
            self.end_failover(item, true);
        }
    }

    /// A failover found `item` run in its cycle, and its owner dead (or being replaced): the
    /// run the crash cut short is of a later cycle, which this instance has not fired. Leave
    /// the mark for an instance that has, and the item alone until this one's next trigger.
    pub(super) fn leave_for_a_later_cycle(&mut self, item: u32) {
        self.deferred.insert(item);
        self.end_failover(item, false);
    }

    /// Runs `item` for `cycle`, claiming it first unless the variant skips the claim.
    pub(super) fn run_item(
        &mut self,
        item: u32,
        cycle: u64,
        via: Via,
        token: i64,
    ) -> Option<JobReport> {
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
            | JobVariant::UncoveredReshard
            | JobVariant::NoReregister
            | JobVariant::RunAhead => {
                self.then([Task::ReadClaim { item, cycle, via }]);
                None
            }
        }
    }
}
