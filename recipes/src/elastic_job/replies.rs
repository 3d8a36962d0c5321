//! What an instance does with each reply: the continuation of every [`Task`].

use std::collections::BTreeSet;

use crate::error::ZkError;
use crate::event::SessionEvent;
use crate::latch::{LatchMachine, LatchRequest, LatchVariant};
use crate::machine::{Command, Input};
use crate::request::Response;
use crate::sharding::{average_allocation, Claim};
use crate::types::SessionId;

use super::{JobMachine, JobReport, JobVariant, Task, Via, CYCLE, LISTENER};

impl JobMachine {
    pub(super) fn on_reply(
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
                result @ (Ok(_) | Err(ZkError::NodeExists | ZkError::NoNode)),
            ) => {
                // Whoever ran this cycle before the new sharding read the old one: an item it
                // moved may have passed both its old owner and its new one. Run each now, for
                // this cycle, unless someone claimed it (the claim keeps it to one run). With
                // the write's reply lost, this sharding may be ours: run them all the same.
                let via = Via::Sharding;
                let claims = moved
                    .into_iter()
                    .map(|item| Task::ReadClaim { item, cycle, via });
                match result {
                    // Nothing of the write applied and the flag is gone: another sharding went
                    // through while this one reset the owners, which deleted some of its
                    // owners. Raise the flag again, so that the leader shards once more (see
                    // the module docs, "two shardings at once").
                    Err(ZkError::NoNode) => {
                        self.then([Task::SetNecessary].into_iter().chain(claims))
                    }
                    // Nothing of the write applied, for an owner was there: this write's own,
                    // its reply lost, or another sharding's, which this one's resets may have
                    // come after, deleting some of its owners (the flag, which that write
                    // deleted, gone with them). Is every item owned?
                    Err(_) if self.items > 0 => {
                        self.then([Task::CheckOwned(0)].into_iter().chain(claims))
                    }
                    _ => self.then(claims),
                }
            }
            (Task::CheckOwned(item), Ok(Response::Exists(Some(_)))) => {
                if item + 1 < self.items {
                    self.then([Task::CheckOwned(item + 1)]);
                }
            }
            (Task::CheckOwned(_), Ok(Response::Exists(None))) => self.then([Task::SetNecessary]),
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
}
