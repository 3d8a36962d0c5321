//! Elastic-Job's per-job leader election (`LeaderService.electLeader`), as a state machine.
//!
//! # The algorithm (Elastic-Job 2.1.5)
//!
//! Every job elects its own leader, which shards the job and drives failover:
//!
//! 1. `executeInLeader("leader/election/latch", callback)`: a Curator `LeaderLatch` on
//!    `/<job>/leader/election/latch` used as a lock: start it, wait for leadership, run the
//!    callback, close the latch (deleting its node).
//! 2. The callback: if `/<job>/leader/election/instance` does not exist, write it as an
//!    ephemeral node whose data is this instance's id (`fillEphemeralJobNode`, which deletes any
//!    node already there and creates it again).
//! 3. This instance leads while that node exists and holds its id. When the node is removed
//!    (its session ended), every instance elects again.
//!
//! The token of a leadership is the `czxid` of the instance node. A disconnection or an expiry
//! ends this instance's leadership for its host.
//!
//! # Known-bad variant, kept as a positive control
//!
//! [`ElectionVariant::CheckThenWrite`]: the check and the write without the latch, the race the
//! seed document warns about: two instances both see no leader, both write (the second deleting
//! the first's node), and both believe they lead.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::ZkError;
use crate::event::{EventType, SessionEvent};
use crate::latch::{LatchMachine, LatchReport, LatchRequest, LatchVariant};
use crate::machine::{Command, Ids, Input, Machine, OpId};
use crate::request::{Request, Response};
use crate::symmetry::{Renaming, Symmetric};
use crate::types::CreateMode;

/// Elastic-Job's default `reconcileIntervalMinutes` (10), in milliseconds: how long its
/// reconcile service waits, after the instance starts and after each reconciliation, before it
/// asks the servers whether the job has a leader. The host runs that service (the simulator's
/// `zkh_sim::reconcile`); the machine has no part in it.
pub const RECONCILE_INTERVAL_MS: u64 = 10 * 60_000;

/// Which election: the correct one, or the known-bad variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ElectionVariant {
    /// Check and write under the election latch.
    Correct,
    /// Check, then write, with no lock.
    CheckThenWrite,
    /// Our own control for the model checker's orphan invariant: each round's latch, closed
    /// while its create is in flight, forgets the create (the defect our LeaderLatch port once
    /// had), so the node it makes stays, owned by a live session that does not know of it.
    ForgetfulClose,
}

/// What the application asks of the election.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ElectionRequest {
    /// Elect (at start; the machine elects again by itself when the leader goes).
    Elect,
}

/// What the election tells its host.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ElectionReport {
    /// This instance leads the job; `token` is the instance node's `czxid`.
    Leader {
        /// The fencing token.
        token: i64,
    },
    /// This instance no longer leads.
    NotLeader,
    /// Another instance leads.
    Follower,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Step {
    /// Creating the instance node's missing ancestors, shallowest first.
    Parents(usize),
    /// `exists(instance)` inside the callback.
    Check,
    /// Deleting a stale instance node before writing ours (`fillEphemeralJobNode`).
    Clear,
    /// Creating the instance node.
    Write,
    /// `getData(instance, watch)`: who leads, and a watch for its removal.
    Observe,
}

/// Ids at or above this belong to a round's latch (shifted by the round number).
const LATCH_ID_SHIFT: u32 = 40;

/// Elastic-Job's `LeaderService` election as a state machine.
///
/// Its hash (plain and renamed) leaves out what is fixed when it is made: its job, its instance and
/// its uuid. In a model checker's state a client's machine always holds its own (a renaming of the
/// clients moves them with the client), so they tell no two states apart, and hashing them on every
/// step would only cost time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElectionMachine {
    variant: ElectionVariant,
    job: Arc<str>,
    instance: Arc<str>,
    uuid: Arc<str>,
    ids: Ids,
    round: u64,
    latch: Option<LatchMachine>,
    step: Option<(OpId, Step)>,
    leader: bool,
    electing: bool,
    /// A step to retry when its timer fires.
    retry: Option<(crate::machine::TimerId, Step)>,
    /// The current session, handed to each round's latch (which checks node ownership).
    session: Option<crate::types::SessionId>,
    /// A round is due once the last round's latch has deleted its node.
    elect_when_closed: bool,
    /// The round's latch is deleting its node.
    latch_closing: bool,
}

impl ElectionMachine {
    /// The election of job `job` (its root path, e.g. `/orders-job`) for `instance`.
    pub fn new(variant: ElectionVariant, job: &str, instance: &str, uuid: &str) -> ElectionMachine {
        ElectionMachine {
            variant,
            job: job.into(),
            instance: instance.into(),
            uuid: uuid.into(),
            ids: Ids::default(),
            round: 0,
            latch: None,
            step: None,
            leader: false,
            electing: false,
            retry: None,
            session: None,
            elect_when_closed: false,
            latch_closing: false,
        }
    }

    fn instance_path(&self) -> String {
        format!("{}/leader/election/instance", self.job)
    }

    /// The ephemeral nodes this instance knows are its own: the instance node while it leads,
    /// and its round's latch node.
    pub fn known_nodes(&self) -> Vec<String> {
        let latch = self.latch.as_ref().and_then(LatchMachine::own_node);
        (self.claimed_node().into_iter())
            .chain(latch.map(str::to_owned))
            .collect()
    }

    /// The instance node, while this instance believes it leads: its current session must own
    /// it (a node of the same id written by an earlier session is not a leadership).
    pub fn claimed_node(&self) -> Option<String> {
        self.leader.then(|| self.instance_path())
    }

    /// The instance node's ancestors, shallowest first: `/job`, `/job/leader`, ...
    fn ancestors(&self) -> Vec<String> {
        crate::path::ancestors(crate::path::parent_of(&self.instance_path()))
    }

    fn latch_offset(&self) -> u64 {
        self.round << LATCH_ID_SHIFT
    }

    fn issue(&mut self, step: Step, out: &mut Vec<Command<ElectionReport>>) {
        let id = self.ids.fresh();
        let path = self.instance_path();
        let request = match step {
            Step::Parents(depth) => {
                let parent = self.ancestors()[depth].clone();
                Request::Create {
                    path: parent,
                    data: Vec::new(),
                    mode: CreateMode::Persistent,
                }
            }
            Step::Check => Request::Exists { path, watch: false },
            Step::Clear => Request::Delete { path, version: -1 },
            Step::Write => Request::Create {
                path,
                data: self.instance.as_bytes().to_vec(),
                mode: CreateMode::Ephemeral,
            },
            Step::Observe => Request::GetData { path, watch: true },
        };
        self.step = Some((id, step));
        out.push(Command::Op { id, request });
    }

    fn elect(&mut self, out: &mut Vec<Command<ElectionReport>>) {
        self.electing = true;
        match self.variant {
            ElectionVariant::CheckThenWrite => self.issue(Step::Check, out),
            ElectionVariant::Correct | ElectionVariant::ForgetfulClose => {
                if self.latch.is_some() {
                    // The last round's latch is still deleting its node (a guaranteed delete
                    // that met ConnectionLoss). Starting over now would orphan that node: first
                    // in line, owned by our live session, with nobody left to delete it.
                    self.elect_when_closed = true;
                    return;
                }
                self.round += 1;
                let dir = format!("{}/leader/election/latch", self.job);
                let uuid = format!("{}-{}", self.uuid, self.round);
                let latch = LatchMachine::new(LatchVariant::Correct, &dir, &self.instance, &uuid);
                self.latch = Some(if self.variant == ElectionVariant::ForgetfulClose {
                    latch.forgetting_creates_on_close()
                } else {
                    latch
                });
                if let Some(session_id) = self.session {
                    self.feed_latch(Input::Session(SessionEvent::Connected { session_id }), out);
                }
                self.feed_latch(Input::Request(LatchRequest::Start), out);
            }
        }
    }

    fn feed_latch(&mut self, input: Input<LatchRequest>, out: &mut Vec<Command<ElectionReport>>) {
        let Some(latch) = self.latch.as_mut() else {
            return;
        };
        let mut commands = Vec::new();
        latch.handle(input, &mut commands);
        let offset = self.latch_offset();
        let mut closed = false;
        for command in commands {
            match command.nested(offset) {
                Ok(issued) => out.push(issued),
                Err(LatchReport::Leader { .. }) => self.issue(Step::Check, out),
                Err(LatchReport::Closed | LatchReport::Failed(_)) => closed = true,
                Err(LatchReport::NotLeader) => {}
            }
        }
        if closed {
            self.latch = None;
            self.latch_closing = false;
            if std::mem::take(&mut self.elect_when_closed) {
                self.elect(out);
            }
        }
    }

    fn set_leader(&mut self, leader: Option<i64>, out: &mut Vec<Command<ElectionReport>>) {
        match leader {
            Some(token) => {
                self.leader = true;
                out.push(Command::Report(ElectionReport::Leader { token }));
            }
            None if self.leader => {
                self.leader = false;
                out.push(Command::Report(ElectionReport::NotLeader));
            }
            None => out.push(Command::Report(ElectionReport::Follower)),
        }
    }

    /// The session ended: whatever step was in flight or waiting to be retried is dropped. The
    /// callback ran under the round's latch, whose node went with the session, so going on
    /// would write the instance node outside the latch (a model-checker trace found exactly
    /// that: a retry timer set before an expiry fired in the next session, and the stale
    /// callback deleted the new leader's node again and again). A round whose latch is still
    /// running goes on: the latch starts over in the next session and runs the callback again
    /// when it leads; otherwise the next connection looks for a leader and elects.
    fn abandon_callback(&mut self) {
        self.step = None;
        self.retry = None;
        if self.latch.is_none() || self.latch_closing {
            self.electing = false;
        }
    }

    /// The callback is done (or not needed): release the latch and watch the leader.
    fn finish_round(&mut self, out: &mut Vec<Command<ElectionReport>>) {
        self.electing = false;
        self.latch_closing = true;
        self.feed_latch(Input::Request(LatchRequest::Close), out);
        self.issue(Step::Observe, out);
    }

    fn on_reply(
        &mut self,
        step: Step,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<ElectionReport>>,
    ) {
        match (step, result) {
            (_, Err(ZkError::SessionExpired)) => {
                self.set_leader(None, out);
                self.electing = false;
            }
            (Step::Check, Ok(Response::Exists(Some(_)))) => self.finish_round(out),
            (Step::Check, Ok(Response::Exists(None))) => self.issue(Step::Write, out),
            (Step::Clear, _) => self.issue(Step::Write, out),
            (Step::Write, Ok(Response::Created(_))) => self.finish_round(out),
            // creatingParentsIfNeeded: make the ancestors, then write again.
            (Step::Write, Err(ZkError::NoNode)) => self.issue(Step::Parents(0), out),
            (Step::Parents(depth), Ok(_) | Err(ZkError::NodeExists)) => {
                let next = if depth + 1 < self.ancestors().len() {
                    Step::Parents(depth + 1)
                } else {
                    Step::Write
                };
                self.issue(next, out);
            }
            // fillEphemeralJobNode: delete what is there, then create again.
            (Step::Write, Err(ZkError::NodeExists)) => self.issue(Step::Clear, out),
            (Step::Observe, Ok(Response::Data(data, stat))) => {
                let mine = data == self.instance.as_bytes();
                if mine != self.leader || !mine {
                    self.set_leader(mine.then_some(stat.czxid), out);
                }
            }
            // No leader any more: elect again (unless a round is already running).
            (Step::Observe, Err(ZkError::NoNode)) => {
                if self.leader {
                    self.set_leader(None, out);
                }
                if !self.electing {
                    self.elect(out);
                }
            }
            (step, Err(ZkError::ConnectionLoss)) => {
                // Every step here is safe to repeat; a lost write is checked first.
                let again = if step == Step::Write {
                    Step::Check
                } else {
                    step
                };
                let id = self.ids.fresh();
                self.retry = Some((id, again));
                out.push(Command::Timer {
                    id,
                    after_ms: crate::machine::RETRY_AFTER_MS,
                });
            }
            (step, other) => unreachable!("job election: {step:?} answered {other:?}"),
        }
    }
}

impl Machine for ElectionMachine {
    type Request = ElectionRequest;
    type Report = ElectionReport;

    /// Its instance node while it leads, and its round's latch node.
    fn known_ephemerals(&self) -> Option<Vec<String>> {
        Some(self.known_nodes())
    }

    fn handle(&mut self, input: Input<ElectionRequest>, out: &mut Vec<Command<ElectionReport>>) {
        if let Input::Reply { id, .. } | Input::Timer(id) = input {
            if id < 1 << LATCH_ID_SHIFT {
                // A round's latch takes note of its own.
                self.ids.answered(id);
            }
        }
        match input {
            Input::Request(ElectionRequest::Elect) => {
                if !self.electing {
                    self.elect(out);
                }
            }
            Input::Reply { id, result } if id >= 1 << LATCH_ID_SHIFT => {
                if id >> LATCH_ID_SHIFT == self.round {
                    let id = id - self.latch_offset();
                    self.feed_latch(Input::Reply { id, result }, out);
                }
            }
            Input::Reply { id, result } => {
                if self.step.is_some_and(|(expected, _)| expected == id) {
                    let (_, step) = self.step.take().expect("checked above");
                    self.on_reply(step, result, out);
                }
            }
            Input::Timer(id) if id >= 1 << LATCH_ID_SHIFT => {
                if id >> LATCH_ID_SHIFT == self.round {
                    let id = id - self.latch_offset();
                    self.feed_latch(Input::Timer(id), out);
                }
            }
            Input::Timer(id) => {
                if self.retry.is_some_and(|(expected, _)| expected == id) {
                    let (_, step) = self.retry.take().expect("checked above");
                    if self.step.is_none() {
                        self.issue(step, out);
                    }
                }
            }
            Input::Watch(event) => {
                if event.path == self.instance_path() && event.event_type == EventType::NodeDeleted
                {
                    self.set_leader(None, out);
                    if !self.electing {
                        self.elect(out);
                    }
                } else {
                    self.feed_latch(Input::Watch(event), out);
                }
            }
            Input::Session(event) => {
                match event {
                    SessionEvent::Connected { session_id }
                    | SessionEvent::Reconnected { session_id } => {
                        self.session = Some(session_id);
                    }
                    SessionEvent::Expired | SessionEvent::Closed => {
                        self.session = None;
                        self.abandon_callback();
                    }
                    SessionEvent::Disconnected => {}
                }
                if matches!(event, SessionEvent::Disconnected | SessionEvent::Expired) {
                    self.set_leader(None, out);
                }
                let reconnected = matches!(
                    event,
                    SessionEvent::Connected { .. } | SessionEvent::Reconnected { .. }
                );
                self.feed_latch(Input::Session(event), out);
                if self.latch_closing
                    && matches!(event, SessionEvent::Expired | SessionEvent::Closed)
                {
                    // The closing latch's node went with the session.
                    self.latch = None;
                    self.latch_closing = false;
                }
                if reconnected && std::mem::take(&mut self.elect_when_closed) {
                    self.elect(out);
                } else if reconnected && !self.electing && self.step.is_none() {
                    // Look again: who leads now, and is our watch still there?
                    self.issue(Step::Observe, out);
                }
            }
        }
    }
}

/// The job election as an async API over a running [`ElectionMachine`].
pub struct Election {
    handle: crate::driver::Handle<ElectionMachine>,
}

impl Election {
    /// Starts the election of `job` for `instance` over `client`; spawn the returned driver.
    pub fn start<C: crate::ZkClient + 'static>(
        client: std::sync::Arc<C>,
        clock: std::sync::Arc<dyn crate::driver::Clock>,
        variant: ElectionVariant,
        job: &str,
        instance: &str,
        uuid: &str,
    ) -> (
        Election,
        impl std::future::Future<Output = ElectionMachine> + Send,
    ) {
        let (handle, driver) = crate::driver::start(
            client,
            clock,
            ElectionMachine::new(variant, job, instance, uuid),
        );
        handle.send(ElectionRequest::Elect);
        (Election { handle }, driver)
    }

    /// The next change of leadership, waiting for it.
    pub async fn next_report(&self) -> Option<ElectionReport> {
        self.handle.next_report().await
    }
}

crate::symmetric_as_hash!(Step);

/// Everything but what is fixed when the machine is made (see [`ElectionMachine`]).
impl Hash for ElectionMachine {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let ElectionMachine {
            variant,
            job: _,
            instance: _,
            uuid: _,
            ids,
            round,
            latch,
            step,
            leader,
            electing,
            retry,
            session,
            elect_when_closed,
            latch_closing,
        } = self;
        (
            variant,
            ids,
            round,
            latch,
            step,
            leader,
            electing,
            retry,
            session,
            elect_when_closed,
            latch_closing,
        )
            .hash(state);
    }
}

/// The election's identities: its session and its round's latch (its instance id and uuid are
/// fixed: see [`ElectionMachine`]).
impl Symmetric for ElectionMachine {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let ElectionMachine {
            variant,
            job: _,
            instance: _,
            uuid: _,
            ids,
            round,
            latch,
            step,
            retry,
            leader,
            electing,
            session,
            elect_when_closed,
            latch_closing,
        } = self;
        (variant, ids, round, step, retry, leader, electing).hash(state);
        (elect_when_closed, latch_closing).hash(state);
        (latch, session).hash_renamed(renaming, state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Created, SessionId, Stat};

    const INSTANCE: &str = "/job/leader/election/instance";

    /// A one-client server in session 1, by hand: the latch's node (`latch`, once created) is
    /// alone in line; the instance node is missing; its write meets `ConnectionLoss`.
    fn answer(request: &Request, latch: &mut String) -> Result<Response, ZkError> {
        let stat = Stat {
            czxid: 9,
            ephemeral_owner: 1,
            ..Stat::default()
        };
        match request {
            Request::GetData { path, .. } if path == INSTANCE => Err(ZkError::NoNode),
            Request::Exists { path, .. } if path == INSTANCE => Ok(Response::Exists(None)),
            Request::Create { path, .. } if path == INSTANCE => Err(ZkError::ConnectionLoss),
            Request::Create { path, .. } => {
                *latch = format!("{path}0000000000");
                Ok(Response::Created(Created {
                    path: latch.clone(),
                    stat,
                }))
            }
            Request::GetChildren { .. } => {
                let name = crate::path::name_of(latch).to_owned();
                Ok(Response::Children(vec![name], Stat::default()))
            }
            Request::Exists { .. } => Ok(Response::Exists(Some(stat))),
            other => panic!("unexpected request {other:?}"),
        }
    }

    /// Answers every operation in `out` (and those they lead to); returns the requests made
    /// and the timers set.
    fn run(
        machine: &mut ElectionMachine,
        out: Vec<Command<ElectionReport>>,
    ) -> (Vec<Request>, Vec<u64>) {
        let (mut requests, mut timers, mut latch) = (Vec::new(), Vec::new(), String::new());
        let mut queue = std::collections::VecDeque::from(out);
        while let Some(command) = queue.pop_front() {
            assert!(requests.len() < 50, "no end: {requests:#?}");
            match command {
                Command::Op { id, request } => {
                    let result = answer(&request, &mut latch);
                    requests.push(request);
                    let mut more = Vec::new();
                    machine.handle(Input::Reply { id, result }, &mut more);
                    queue.extend(more);
                }
                Command::Timer { id, .. } => timers.push(id),
                Command::Report(_) => {}
            }
        }
        (requests, timers)
    }

    /// A step of the callback on the instance node (the check, the clear, the write).
    fn goes_on_with_the_callback(request: &Request) -> bool {
        matches!(request,
            Request::Create { path, .. } | Request::Delete { path, .. } | Request::Exists { path, .. }
                if path == INSTANCE)
    }

    #[test]
    fn a_retry_set_before_an_expiry_does_not_write_outside_the_latch() {
        let mut machine = ElectionMachine::new(ElectionVariant::Correct, "/job", "i0", "u");
        let mut out = Vec::new();
        let connected = |id| SessionEvent::Connected {
            session_id: SessionId(id),
        };
        machine.handle(Input::Session(connected(1)), &mut out);
        machine.handle(Input::Request(ElectionRequest::Elect), &mut out);
        let (requests, timers) = run(&mut machine, out);
        assert!(
            requests
                .iter()
                .any(|r| matches!(r, Request::Create { path, .. } if path == INSTANCE)),
            "the latch led and the callback wrote the instance node: {requests:?}"
        );
        let [retry] = timers[..] else {
            panic!("one retry after ConnectionLoss: {timers:?}")
        };

        // The session expires before the retry fires; a new session connects; then the retry
        // timer fires.
        let mut out = Vec::new();
        machine.handle(Input::Session(SessionEvent::Expired), &mut out);
        machine.handle(Input::Session(connected(2)), &mut out);
        out.clear();
        machine.handle(Input::Timer(retry), &mut out);
        let stale = out.iter().any(
            |c| matches!(c, Command::Op { request, .. } if goes_on_with_the_callback(request)),
        );
        assert!(
            !stale,
            "the old session's callback went on in the new one, outside the latch: {out:?}"
        );
    }
}
