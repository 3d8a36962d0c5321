//! The machines an instance runs inside itself (the job's election, and the failover lock of
//! each round), whose ids it tells apart, and the session events it passes to them.

use crate::election::{ElectionReport, ElectionRequest};
use crate::event::SessionEvent;
use crate::latch::{LatchReport, LatchRequest};
use crate::machine::{Command, Input, Machine};

use super::{
    IdOwner, JobMachine, JobReport, JobVariant, Lane, Task, CLAIM_IDS, CLAIM_ROUND_SHIFT, JOB_IDS,
    LISTENER,
};

impl JobMachine {
    pub(super) fn feed_election(
        &mut self,
        input: Input<ElectionRequest>,
        out: &mut Vec<Command<JobReport>>,
    ) {
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

    pub(super) fn feed_claim_lock(
        &mut self,
        input: Input<LatchRequest>,
        out: &mut Vec<Command<JobReport>>,
    ) {
        let Some(lock) = self.claim_lock.as_mut() else {
            return;
        };
        let mut commands = Vec::new();
        lock.handle(input, &mut commands);
        let offset = self.claim_offset();
        for command in commands {
            match command.nested(offset) {
                Ok(issued) => out.push(issued),
                Err(LatchReport::Leader { .. }) => {
                    self.enqueue(LISTENER, Task::ClaimNext);
                }
                Err(LatchReport::Closed | LatchReport::Failed(_)) => {
                    self.claim_lock = None;
                    // Items marked while the lock was held or being released are not left
                    // waiting; the known-bad variant leaves them for the next cycle.
                    if self.variant != JobVariant::OneItemPerIdle {
                        self.fail_over_after_queued_work();
                    }
                }
                Err(LatchReport::NotLeader) => {}
            }
        }
    }

    /// Where an id from a reply or a timer belongs.
    pub(super) fn owner_of(&self, id: u64) -> IdOwner {
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

    pub(super) fn on_session(&mut self, event: SessionEvent, out: &mut Vec<Command<JobReport>>) {
        self.feed_election(Input::Session(event), out);
        self.feed_claim_lock(Input::Session(event), out);
        match event {
            // Curator 2.x announces a new handle's new session as RECONNECTED, like a
            // reconnection within the session: Elastic-Job registers again on either.
            SessionEvent::Connected { session_id } | SessionEvent::Reconnected { session_id } => {
                let new_session = self.session != Some(session_id);
                self.session = Some(session_id);
                if new_session && self.started && self.variant != JobVariant::NoReregister {
                    // Elastic-Job's reconnection: register again, and look at the instances.
                    self.register();
                }
            }
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
