//! Leader election: Curator's `LeaderLatch`, as a state machine.
//!
//! # The algorithm (Curator 5.4.0, with the CURATOR-696 fix)
//!
//! 1. Create a protected ephemeral-sequential node `/<latch>/_c_<uuid>-latch-<seq>` whose data
//!    is the participant id (parents created as containers if missing).
//! 2. List the children and order the latch nodes by the digits after `latch-`.
//!    - Our node is not there: it was lost (session gone, parent reaped); create a new one.
//!    - Our node is first: read its `Stat`, and take leadership only if its `ephemeralOwner` is
//!      *this* session. A node found again after a session expiry may still belong to the dying
//!      old session (the CURATOR-696 fix): then create a new node instead.
//!    - Otherwise: `getData` with a watch on the node just before ours. If it is already gone
//!      (`NoNode`), list again; when its watch fires, list again. The parent gone (`NoNode` on
//!      the listing) means starting over.
//! 3. `Disconnected` (SUSPENDED) and `Expired` (LOST) clear leadership at once. A reconnection
//!    within the same session lists the children again; it does not recreate the node (5.4.0
//!    behaviour). A *new* session (Curator makes one after expiry) starts over with a node of its
//!    own: the old one belongs to the dying session and goes with it.
//!
//! The token of a leadership is the `czxid` of the leader's node.
//!
//! # Known-bad variants, kept as positive controls
//!
//! - [`LatchVariant::TrustPredecessor`]: takes leadership as soon as its predecessor's node is
//!   deleted, without listing again: wrong when the predecessor was a waiter that left while an
//!   earlier node still leads.
//! - [`LatchVariant::NoOwnerCheck`]: Curator 5.4.0 as released, behind CURATOR-696: after a
//!   client-side expiry and a new session, it finds its old node (still owned by the dying
//!   session) first in line and leads again, with no watch to tell it when the server deletes
//!   that node; another participant then leads too.
//! - [`LatchVariant::KeepOnSuspend`]: our control for the unfenced catalogue scenarios, the
//!   smallest change that fencing hides: `Disconnected` (SUSPENDED) leaves leadership as it is,
//!   and only `Expired` (LOST) ends it (what Curator's `SessionConnectionStateErrorPolicy`
//!   chooses). A leader cut off past its session leads on while the server hands leadership to
//!   another; a fenced resource refuses its writes, an unfenced one takes both.
//! - [`LatchVariant::RequeueWhenBehind`]: our control for the model checker's livelock verdict,
//!   the smallest change that never settles: a participant that is not first deletes its node
//!   and queues again, instead of watching its predecessor. It is never first while the leader
//!   leads, so it deletes and creates for ever. Nothing is ever unsafe, someone always leads,
//!   and each round is a new state (the zxid and the sequence suffix move on), so only a search
//!   that compares states modulo those numbers sees it come back.
//! - [`LatchVariant::Unprotected`]: our control for the simulator's end-of-run orphan check,
//!   the smallest change that leaves an orphan and harms nobody while the run lasts: after a
//!   create's reply is lost, it creates again instead of looking for the node the lost create
//!   made. That node stays, owned by the participant's live session, unknown to it; behind a
//!   leader that keeps leading, nothing else in the run notices.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::curator::Release;
use crate::error::ZkError;
use crate::event::{EventType, SessionEvent};
use crate::machine::{Command, Ids, Input, OpId, TimerId, RETRY_AFTER_MS};
use crate::path::{ancestors, join};
use crate::request::{Request, Response};
use crate::symmetry::{hash_ordered, Renaming, Symmetric};
use crate::types::{CreateMode, SessionId};

mod machine;
pub use machine::LatchMachine;

/// Which latch: the correct one, or a known-bad variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LatchVariant {
    /// Curator's `LeaderLatch` with the CURATOR-696 fix.
    Correct,
    /// Leads when its predecessor's node is deleted, without listing again.
    TrustPredecessor,
    /// No `ephemeralOwner` check: Curator 5.4.0 (CURATOR-696).
    NoOwnerCheck,
    /// Leadership survives `Disconnected`; only `Expired` ends it.
    KeepOnSuspend,
    /// Not first in line: delete the node and queue again, instead of watching the predecessor.
    RequeueWhenBehind,
    /// After a create's reply is lost, create again without looking for the lost create's node.
    Unprotected,
    /// A Curator release's `LeaderLatch`, ported from its tag ([`crate::curator::leader_latch`]).
    #[serde(untagged)]
    Curator(Release),
}

/// What the application asks of a latch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LatchRequest {
    /// Join the election.
    Start,
    /// Leave it (deleting the node).
    Close,
}

/// What a latch tells its host.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LatchReport {
    /// This participant leads; `token` is its node's `czxid`.
    Leader {
        /// The fencing token.
        token: i64,
    },
    /// This participant no longer leads.
    NotLeader,
    /// The latch gave up (an error it cannot retry).
    Failed(ZkError),
    /// The latch closed.
    Closed,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    CreateParents(Vec<String>),
    Create,
    FindOwn,
    List,
    CheckOwner,
    WatchPredecessor(String),
    Delete,
    /// The known-bad [`LatchVariant::RequeueWhenBehind`]: delete our node to queue again.
    Requeue,
}

/// The project's own latch (every variant but [`LatchVariant::Curator`]).
///
/// Its hash (plain and renamed) leaves out what is fixed when it is made: its directory, its uuid
/// and its participant id. In a model checker's state a client's machine always holds its own (a
/// renaming of the clients moves them with the client), so they tell no two states apart, and
/// hashing them on every step would only cost time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SafeLatch {
    variant: LatchVariant,
    dir: Arc<str>,
    uuid: Arc<str>,
    /// Nodes created so far: part of the protection id, fresh for every create as in Curator.
    creates: u32,
    prefix: Arc<str>,
    participant: Arc<str>,
    ids: Ids,
    started: bool,
    leader: bool,
    session: Option<SessionId>,
    node: Option<String>,
    step: Option<(OpId, Step)>,
    retry: Option<(TimerId, Step)>,
    watching: Option<String>,
    /// Closed while its create's outcome was unknown: the node it makes, once known, is
    /// deleted before the latch reports itself closed (Curator's create callback deletes the
    /// node of a closed latch).
    closing: bool,
    /// The known-bad shortcut of the election's `forgetful-close` control: closed while its
    /// create is in flight, report closed at once and drop the create's reply.
    forgets_creates_on_close: bool,
}

impl SafeLatch {
    /// A latch on `dir` for `participant`, with the host's `uuid` for protection.
    fn new(variant: LatchVariant, dir: &str, participant: &str, uuid: &str) -> SafeLatch {
        SafeLatch {
            variant,
            dir: dir.into(),
            uuid: uuid.into(),
            creates: 0,
            prefix: "".into(),
            participant: participant.into(),
            ids: Ids::default(),
            started: false,
            leader: false,
            session: None,
            node: None,
            step: None,
            retry: None,
            watching: None,
            closing: false,
            forgets_creates_on_close: false,
        }
    }

    /// This latch, closed while its create is in flight, forgetting the create: the known-bad
    /// shortcut of the election's `forgetful-close` control.
    fn forgetting_creates_on_close(self) -> SafeLatch {
        SafeLatch {
            forgets_creates_on_close: true,
            ..self
        }
    }

    /// True while this participant believes it leads.
    pub fn is_leader(&self) -> bool {
        self.leader
    }

    /// This participant's node, whether or not it leads, once it knows it.
    pub fn own_node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// The node this participant's leadership stands on, while it believes it leads: its own
    /// node, first in line, which its current session must own.
    pub fn claimed_node(&self) -> Option<&str> {
        self.node.as_deref().filter(|_| self.leader)
    }

    fn issue(&mut self, step: Step, out: &mut Vec<Command<LatchReport>>) {
        let id = self.ids.fresh();
        let request = match &step {
            Step::CreateParents(paths) => Request::Create {
                path: paths[0].clone(),
                data: Vec::new(),
                mode: CreateMode::Container,
            },
            Step::Create => Request::Create {
                path: join(&self.dir, &self.prefix),
                data: self.participant.as_bytes().to_vec(),
                mode: CreateMode::EphemeralSequential,
            },
            Step::FindOwn | Step::List => Request::GetChildren {
                path: self.dir.to_string(),
                watch: false,
            },
            Step::CheckOwner => Request::Exists {
                path: self.node.clone().expect("checking needs a node"),
                watch: false,
            },
            Step::WatchPredecessor(path) => Request::GetData {
                path: path.clone(),
                watch: true,
            },
            Step::Delete | Step::Requeue => Request::Delete {
                path: self.node.clone().expect("deleting needs a node"),
                version: -1,
            },
        };
        self.step = Some((id, step));
        self.retry = None;
        out.push(Command::Op { id, request });
    }

    fn retry_later(&mut self, step: Step, out: &mut Vec<Command<LatchReport>>) {
        let id = self.ids.fresh();
        self.step = None;
        self.retry = Some((id, step));
        out.push(Command::Timer {
            id,
            after_ms: RETRY_AFTER_MS,
        });
    }

    fn set_leader(&mut self, leader: Option<i64>, out: &mut Vec<Command<LatchReport>>) {
        match leader {
            Some(token) if !self.leader => {
                self.leader = true;
                out.push(Command::Report(LatchReport::Leader { token }));
            }
            None if self.leader => {
                self.leader = false;
                out.push(Command::Report(LatchReport::NotLeader));
            }
            _ => {}
        }
    }

    fn reset(&mut self, out: &mut Vec<Command<LatchReport>>) {
        self.set_leader(None, out);
        self.node = None;
        self.watching = None;
        self.new_create(out);
    }

    /// Starts a new protected create, with a protection id of its own (retries of this create,
    /// after a lost reply, keep it).
    /// A reply to the create (or the search for its node) of a latch closed while it was in
    /// flight: a node it made is deleted, then the latch is closed.
    fn on_reply_closing(
        &mut self,
        step: Step,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<LatchReport>>,
    ) {
        let found = match (&step, result) {
            (Step::Create, Ok(Response::Created(created))) => Some(created.path),
            (Step::FindOwn, Ok(Response::Children(children, _))) => children
                .iter()
                .find(|c| c.starts_with(&*self.prefix))
                .map(|own| join(&self.dir, own)),
            (Step::Create | Step::FindOwn, Err(ZkError::ConnectionLoss)) => {
                return self.retry_later(Step::FindOwn, out);
            }
            _ => None,
        };
        self.closing = false;
        match found {
            Some(node) => {
                self.node = Some(node);
                self.issue(Step::Delete, out);
            }
            None => out.push(Command::Report(LatchReport::Closed)),
        }
    }

    fn new_create(&mut self, out: &mut Vec<Command<LatchReport>>) {
        self.creates += 1;
        self.prefix = format!("_c_{}-{}-latch-", self.uuid, self.creates).into();
        self.issue(Step::Create, out);
    }

    fn on_reply(
        &mut self,
        step: Step,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<LatchReport>>,
    ) {
        if self.closing {
            return self.on_reply_closing(step, result, out);
        }
        if !self.started && step != Step::Delete {
            return;
        }
        match (step, result) {
            (_, Err(ZkError::SessionExpired)) => self.set_leader(None, out),
            (step, Err(ZkError::ConnectionLoss)) => {
                let again = if step == Step::Create && self.variant != LatchVariant::Unprotected {
                    Step::FindOwn
                } else {
                    step
                };
                self.retry_later(again, out);
            }
            (Step::CreateParents(mut paths), Ok(_) | Err(ZkError::NodeExists)) => {
                paths.remove(0);
                let next = if paths.is_empty() {
                    Step::Create
                } else {
                    Step::CreateParents(paths)
                };
                self.issue(next, out);
            }
            (Step::Create, Ok(Response::Created(created))) => {
                self.node = Some(created.path);
                self.issue(Step::List, out);
            }
            (Step::Create | Step::FindOwn | Step::List, Err(ZkError::NoNode)) => {
                self.set_leader(None, out);
                self.issue(Step::CreateParents(ancestors(&self.dir)), out);
            }
            (Step::FindOwn, Ok(Response::Children(children, _))) => {
                match children.iter().find(|c| c.starts_with(&*self.prefix)) {
                    Some(own) => {
                        self.node = Some(join(&self.dir, own));
                        self.issue(Step::List, out);
                    }
                    None => self.issue(Step::Create, out),
                }
            }
            (Step::List, Ok(Response::Children(children, _))) => {
                self.check_leadership(children, out)
            }
            (Step::CheckOwner, Ok(Response::Exists(Some(stat)))) => {
                let ours = Some(SessionId(stat.ephemeral_owner)) == self.session;
                if ours || self.variant == LatchVariant::NoOwnerCheck {
                    self.set_leader(Some(stat.czxid), out);
                } else {
                    // The node of a session that is gone: start over with this session.
                    self.reset(out);
                }
            }
            (Step::CheckOwner, Ok(Response::Exists(None))) => self.reset(out),
            (Step::WatchPredecessor(path), Ok(_)) => self.watching = Some(path),
            (Step::WatchPredecessor(_), Err(ZkError::NoNode)) => self.issue(Step::List, out),
            (Step::Requeue, Ok(_) | Err(ZkError::NoNode)) => self.reset(out),
            (Step::Delete, _) => {
                self.node = None;
                out.push(Command::Report(LatchReport::Closed));
            }
            (_, Err(error)) => {
                self.set_leader(None, out);
                out.push(Command::Report(LatchReport::Failed(error)));
            }
            (step, Ok(response)) => unreachable!("{step:?} answered {response:?}"),
        }
    }

    fn check_leadership(&mut self, children: Vec<String>, out: &mut Vec<Command<LatchReport>>) {
        let mut latches: Vec<&String> = children.iter().filter(|c| c.contains("latch-")).collect();
        latches.sort_by(|a, b| a.rsplit("latch-").next().cmp(&b.rsplit("latch-").next()));
        let own = self
            .node
            .as_deref()
            .map(|n| n.rsplit('/').next().expect("a path has a name"));
        match latches.iter().position(|c| Some(c.as_str()) == own) {
            None => self.reset(out),
            Some(0) => self.issue(Step::CheckOwner, out),
            Some(_) if self.variant == LatchVariant::RequeueWhenBehind => {
                self.set_leader(None, out);
                self.issue(Step::Requeue, out);
            }
            Some(position) => {
                self.set_leader(None, out);
                let predecessor = join(&self.dir, latches[position - 1]);
                self.issue(Step::WatchPredecessor(predecessor), out);
            }
        }
    }

    fn on_session(&mut self, event: SessionEvent, out: &mut Vec<Command<LatchReport>>) {
        match event {
            SessionEvent::Connected { session_id } | SessionEvent::Reconnected { session_id } => {
                let new_session = self.session.is_some_and(|old| old != session_id)
                    || (self.session.is_none() && self.node.is_some());
                self.session = Some(session_id);
                if new_session && self.started && self.variant != LatchVariant::NoOwnerCheck {
                    // The old node belongs to the dying session: start over in this one.
                    self.step = None;
                    self.retry = None;
                    return self.reset(out);
                }
                // RECONNECTED: look again (5.4.0 does not recreate the node here).
                if self.started && self.step.is_none() && self.retry.is_none() {
                    if self.node.is_some() {
                        self.issue(Step::List, out);
                    } else {
                        self.new_create(out);
                    }
                }
            }
            SessionEvent::Disconnected if self.variant == LatchVariant::KeepOnSuspend => {}
            SessionEvent::Disconnected => self.set_leader(None, out),
            SessionEvent::Expired => {
                self.session = None;
                self.set_leader(None, out);
                self.step = None;
                self.retry = None;
                self.watching = None;
            }
            SessionEvent::Closed => {
                self.set_leader(None, out);
                self.started = false;
            }
        }
    }
}

impl SafeLatch {
    fn handle(&mut self, input: Input<LatchRequest>, out: &mut Vec<Command<LatchReport>>) {
        self.ids.note(&input);
        match input {
            Input::Request(LatchRequest::Start) => {
                if !self.started {
                    self.started = true;
                    self.new_create(out);
                }
            }
            Input::Request(LatchRequest::Close) => {
                self.started = false;
                self.set_leader(None, out);
                self.watching = None;
                let creating =
                    |step: Option<&Step>| matches!(step, Some(Step::Create | Step::FindOwn));
                let in_flight = creating(self.step.as_ref().map(|(_, step)| step))
                    || creating(self.retry.as_ref().map(|(_, step)| step));
                if self.node.is_none() && in_flight && !self.forgets_creates_on_close {
                    // The create's outcome decides: a node it made is deleted first.
                    self.closing = true;
                    return;
                }
                self.retry = None;
                if self.node.is_some() {
                    self.issue(Step::Delete, out);
                } else {
                    self.step = None;
                    out.push(Command::Report(LatchReport::Closed));
                }
            }
            Input::Reply { id, result } => {
                if self
                    .step
                    .as_ref()
                    .is_some_and(|(expected, _)| *expected == id)
                {
                    let (_, step) = self.step.take().expect("checked above");
                    self.on_reply(step, result, out);
                }
            }
            Input::Watch(event) => {
                if !self.started || self.watching.as_deref() != Some(event.path.as_str()) {
                    return;
                }
                self.watching = None;
                let trusted = self.variant == LatchVariant::TrustPredecessor
                    && event.event_type == EventType::NodeDeleted;
                if trusted && self.step.is_none() {
                    // The known-bad shortcut: the predecessor is gone, so "we must be first".
                    self.issue(Step::CheckOwner, out);
                } else if self.step.is_none() {
                    self.issue(Step::List, out);
                }
            }
            Input::Session(event) => self.on_session(event, out),
            Input::Timer(id) => {
                if self
                    .retry
                    .as_ref()
                    .is_some_and(|(expected, _)| *expected == id)
                {
                    let (_, step) = self.retry.take().expect("checked above");
                    if self.started || self.closing || step == Step::Delete {
                        self.issue(step, out);
                    }
                }
            }
        }
    }
}

/// The latch as an async API over a running [`LatchMachine`].
pub struct Latch {
    handle: crate::driver::Handle<LatchMachine>,
}

impl Latch {
    /// Starts a latch on `dir` for `participant` over `client`; spawn the returned driver.
    pub fn start<C: crate::ZkClient + 'static>(
        client: std::sync::Arc<C>,
        clock: std::sync::Arc<dyn crate::driver::Clock>,
        variant: LatchVariant,
        dir: &str,
        participant: &str,
        uuid: &str,
    ) -> (
        Latch,
        impl std::future::Future<Output = LatchMachine> + Send,
    ) {
        let machine = LatchMachine::new(variant, dir, participant, uuid);
        let (handle, driver) = crate::driver::start(client, clock, machine);
        handle.send(LatchRequest::Start);
        (Latch { handle }, driver)
    }

    /// Waits until this participant leads; returns its token, or `None` if the latch stopped.
    pub async fn await_leadership(&self) -> Option<i64> {
        loop {
            match self.handle.next_report().await? {
                LatchReport::Leader { token } => return Some(token),
                LatchReport::Failed(_) | LatchReport::Closed => return None,
                LatchReport::NotLeader => {}
            }
        }
    }

    /// The next change of leadership (or failure), waiting for it.
    pub async fn next_report(&self) -> Option<LatchReport> {
        self.handle.next_report().await
    }

    /// Leaves the election and deletes the node.
    pub async fn close(&self) {
        let accept = |report: &LatchReport| matches!(report, LatchReport::Closed).then_some(());
        self.handle.ask(LatchRequest::Close, accept, |_| {}).await;
    }
}

impl Symmetric for Step {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Step::CreateParents(paths) => hash_ordered(paths.iter(), renaming, state),
            Step::WatchPredecessor(path) => path.hash_renamed(renaming, state),
            Step::Create
            | Step::FindOwn
            | Step::List
            | Step::CheckOwner
            | Step::Delete
            | Step::Requeue => {}
        }
    }
}

/// Everything but what is fixed when the machine is made (see [`SafeLatch`]).
impl Hash for SafeLatch {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let SafeLatch {
            variant,
            dir: _,
            uuid: _,
            creates,
            prefix,
            participant: _,
            ids,
            started,
            leader,
            session,
            node,
            step,
            retry,
            watching,
            closing,
            forgets_creates_on_close: _,
        } = self;
        (
            variant, creates, prefix, ids, started, leader, session, node, step, retry, watching,
        )
            .hash(state);
        // Hashed only when set, so that a latch that never closes mid-create hashes as before.
        if *closing {
            closing.hash(state);
        }
    }
}

/// The latch's identities: the names built from its uuid, its session, and the predecessor it
/// watches (the uuid and participant id themselves are fixed: see [`LatchMachine`]).
impl Symmetric for SafeLatch {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let SafeLatch {
            variant,
            dir: _,
            uuid: _,
            creates,
            prefix,
            participant: _,
            ids,
            started,
            leader,
            session,
            node,
            step,
            retry,
            watching,
            closing,
            forgets_creates_on_close: _,
        } = self;
        (variant, creates, ids, started, leader).hash(state);
        if *closing {
            closing.hash(state);
        }
        (prefix, session, node).hash_renamed(renaming, state);
        (step, retry, watching).hash_renamed(renaming, state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::types::{Created, Stat};

    fn op_of(out: &[Command<LatchReport>]) -> (OpId, Request) {
        out.iter()
            .find_map(|c| match c {
                Command::Op { id, request } => Some((*id, request.clone())),
                _ => None,
            })
            .expect("an operation was issued")
    }

    /// The CURATOR-696 path, fed by hand: leader in session 1, the client is told its session
    /// expired (KillSession), a new session 2 connects, the old node (owned by session 1, which
    /// the server has not expired yet) is still first in line.
    fn after_kill_session(variant: LatchVariant) -> Vec<Command<LatchReport>> {
        let mut latch = LatchMachine::new(variant, "/latch", "p", "u");
        let mut out = Vec::new();
        latch.handle(
            Input::Session(SessionEvent::Connected {
                session_id: SessionId(1),
            }),
            &mut out,
        );
        latch.handle(Input::Request(LatchRequest::Start), &mut out);
        let (id, _) = op_of(&out);
        let node = "/latch/_c_u-latch-0000000000".to_owned();
        let stat = Stat {
            czxid: 7,
            ephemeral_owner: 1,
            ..Stat::default()
        };
        let created = Response::Created(Created {
            path: node.clone(),
            stat,
        });
        out.clear();
        latch.handle(
            Input::Reply {
                id,
                result: Ok(created),
            },
            &mut out,
        );
        let (id, _) = op_of(&out);
        out.clear();
        let children = Response::Children(vec!["_c_u-latch-0000000000".into()], Stat::default());
        latch.handle(
            Input::Reply {
                id,
                result: Ok(children.clone()),
            },
            &mut out,
        );
        let (id, request) = op_of(&out);
        assert_eq!(
            request,
            Request::Exists {
                path: node.clone(),
                watch: false
            }
        );
        out.clear();
        latch.handle(
            Input::Reply {
                id,
                result: Ok(Response::Exists(Some(stat))),
            },
            &mut out,
        );
        assert_eq!(out, [Command::Report(LatchReport::Leader { token: 7 })]);
        out.clear();
        latch.handle(Input::Session(SessionEvent::Expired), &mut out);
        assert_eq!(out, [Command::Report(LatchReport::NotLeader)]);
        out.clear();
        latch.handle(
            Input::Session(SessionEvent::Connected {
                session_id: SessionId(2),
            }),
            &mut out,
        );
        let (id, request) = op_of(&out);
        if matches!(request, Request::Create { .. }) {
            return out; // the correct latch starts over in the new session
        }
        out.clear();
        latch.handle(
            Input::Reply {
                id,
                result: Ok(children),
            },
            &mut out,
        );
        let (id, _) = op_of(&out);
        out.clear();
        latch.handle(
            Input::Reply {
                id,
                result: Ok(Response::Exists(Some(stat))),
            },
            &mut out,
        );
        out
    }

    /// Closed while its create was in flight, the latch deletes the node the create made
    /// before it says it is closed, as Curator's create callback does for a closed latch;
    /// before, it said so at once and the node stayed, first in line, owned by a live session
    /// that did not know of it (found by the model checker's orphan invariant, in the job
    /// election's rounds).
    #[test]
    fn a_latch_closed_while_creating_deletes_the_node_its_create_made() {
        let mut latch = LatchMachine::new(LatchVariant::Correct, "/latch", "p", "u");
        let mut out = Vec::new();
        latch.handle(
            Input::Session(SessionEvent::Connected {
                session_id: SessionId(1),
            }),
            &mut out,
        );
        latch.handle(Input::Request(LatchRequest::Start), &mut out);
        let (id, _) = op_of(&out);
        out.clear();
        latch.handle(Input::Request(LatchRequest::Close), &mut out);
        assert_eq!(out, [], "not closed while its create is in flight");
        let node = "/latch/_c_u-1-latch-0000000000".to_owned();
        let created = Response::Created(Created {
            path: node.clone(),
            stat: Stat::default(),
        });
        latch.handle(
            Input::Reply {
                id,
                result: Ok(created),
            },
            &mut out,
        );
        let (id, request) = op_of(&out);
        assert_eq!(
            request,
            Request::Delete {
                path: node,
                version: crate::types::ANY_VERSION
            }
        );
        out.clear();
        latch.handle(
            Input::Reply {
                id,
                result: Ok(Response::Deleted),
            },
            &mut out,
        );
        assert_eq!(out, [Command::Report(LatchReport::Closed)]);
    }

    #[test]
    fn a_reply_to_an_operation_given_up_at_an_expiry_is_not_taken_for_the_next_one() {
        let mut latch = LatchMachine::new(LatchVariant::Correct, "/latch", "p", "u");
        let mut out = Vec::new();
        let connected = |session| {
            Input::Session(SessionEvent::Connected {
                session_id: SessionId(session),
            })
        };
        latch.handle(connected(1), &mut out);
        latch.handle(Input::Request(LatchRequest::Start), &mut out);
        let (lost, _) = op_of(&out);
        // The session expires with the create in flight; the latch starts over in session 2.
        latch.handle(Input::Session(SessionEvent::Expired), &mut out);
        out.clear();
        latch.handle(connected(2), &mut out);
        let (next, request) = op_of(&out);
        assert!(matches!(request, Request::Create { .. }), "{request:?}");
        assert_ne!(next, lost, "the first create's reply may still arrive");
        // It does: the old session's create failed. The latch ignores it and still waits.
        out.clear();
        latch.handle(
            Input::Reply {
                id: lost,
                result: Err(ZkError::SessionExpired),
            },
            &mut out,
        );
        assert!(out.is_empty(), "{out:?}");
        // The new create's reply is taken; the next operation may use the answered id again.
        let created = Response::Created(Created {
            path: "/latch/_c_u-2-latch-0000000001".into(),
            stat: Stat::default(),
        });
        latch.handle(
            Input::Reply {
                id: next,
                result: Ok(created),
            },
            &mut out,
        );
        let (list, request) = op_of(&out);
        assert!(
            matches!(request, Request::GetChildren { .. }),
            "{request:?}"
        );
        assert_eq!(
            list, lost,
            "both earlier ids were answered; the least is used again"
        );
    }

    #[test]
    fn a_new_session_starts_over_instead_of_leading_on_the_dead_sessions_node() {
        let out = after_kill_session(LatchVariant::Correct);
        assert!(!out
            .iter()
            .any(|c| matches!(c, Command::Report(LatchReport::Leader { .. }))));
        let (_, request) = op_of(&out);
        assert!(
            matches!(request, Request::Create { .. }),
            "it creates a node of its own session: {request:?}"
        );
    }

    #[test]
    fn no_owner_check_leads_on_the_dead_sessions_node() {
        let out = after_kill_session(LatchVariant::NoOwnerCheck);
        assert_eq!(
            out,
            [Command::Report(LatchReport::Leader { token: 7 })],
            "CURATOR-696"
        );
    }
}
