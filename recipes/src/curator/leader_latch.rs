//! Curator's `LeaderLatch` as each release ships it, ported from
//! `curator-recipes/src/main/java/org/apache/curator/framework/recipes/leader/LeaderLatch.java`
//! at the tags `apache-curator-2.10.0`, `-5.3.0`, `-5.4.0`, `-5.7.1` and `-5.9.0`, on the
//! shared [`Framework`](super::framework).
//!
//! # The algorithm (every release)
//!
//! `start()` waits for a connection (`AfterConnectionEstablished`), adds a connection-state
//! listener and calls `reset()`: leadership off, the old node deleted (guaranteed, in
//! background), and a protected ephemeral-sequential `latchPath/_c_<uuid>-latch-` created in
//! background with its parents as containers. Its callback keeps the node's path and lists the
//! children (`getChildren`), whose callback runs `checkLeadership`: the children sorted by what
//! follows `latch-`; our node missing → `reset()`; first → leader; else a `getData` with a
//! watcher on the node just before ours, whose `NodeDeleted` lists again. Every one of these
//! calls is a background operation: the framework retries it on a lost connection or an
//! expired session, in the new session, before its callback runs. Callbacks and watchers run
//! on the event thread; the listener runs on a thread of its own, between any two of them.
//!
//! # Where the releases differ, line by line
//!
//! | upstream `LeaderLatch.java` at the tag | 2.10.0 | 5.3.0 | 5.4.0 | 5.7.1 | 5.9.0 | our branch | test |
//! | --- | --- | --- | --- | --- | --- | --- | --- |
//! | `handleStateChange`, RECONNECTED (2.10.0 l. 605–616; 5.3.0 l. 664–680; 5.4.0 l. 699–715; 5.7.1 l. 624–636; 5.9.0 l. 632–643) | `reset()` | `reset()` (the error policy's SUSPENDED test is true by default) | `getChildren()` | `getChildren()` | `getChildren()`, unconditionally | `CuratorLatch::on_state` | `reconnected_resets_in_2_and_5_3_and_lists_from_5_4` |
//! | `handleStateChange`, SUSPENDED and LOST (2.10.0 l. 620–625; 5.4.0 l. 717–730) | leadership off | leadership off (default policy) | same | same | same | `CuratorLatch::on_state` | `suspended_and_lost_end_leadership_in_every_release` |
//! | `checkLeadership`, first in line (2.10.0 l. 534–537; 5.4.0 l. 626–630; 5.7.1 l. 556–573) | leader | leader | leader | `getData` of our node: leader only if its `ephemeralOwner` is this session, else `reset()` (CURATOR-696) | as 5.7.1 | `CuratorLatch::check_leadership` | `first_in_line_leads_at_once_until_5_7_checks_the_owner` |
//! | `checkLeadership`, behind (2.10.0 l. 539–583; 5.4.0 l. 631–669) | watch the predecessor | same | leadership off first, then watch | same as 5.4.0 | same | `CuratorLatch::check_leadership` | `behind_turns_leadership_off_from_5_4` |
//! | predecessor's `getData` callback, `NONODE` (2.10.0 l. 573–577; 5.3.0 l. 627–631; 5.4.0 l. 660–664) | `reset()` | `reset()` | `getChildren()` (CURATOR-644) | `getChildren()` | `getChildren()` | `CuratorLatch::on_callback` | `a_vanished_predecessor_resets_until_5_4_lists_again` |
//! | `getChildren` callback, `NONODE` (5.9.0 l. 610–619) | nothing | nothing | nothing | nothing | `reset()` (CURATOR-724) | `CuratorLatch::on_callback` | `a_missing_latch_path_stalls_until_5_9_resets` |
//! | `reset`'s create callback (2.10.0 l. 494–517; 5.4.0 l. 556–584) | keep the node, delete it if closed, else list | same | same | same | same | `CuratorLatch::on_callback` | `a_create_answered_after_close_deletes_its_node` |
//! | `close` (2.10.0 l. 196–228; 5.4.0 l. 212–261) | node deleted (guaranteed), listener removed, leadership off | and its watchers removed | same | same | same | `CuratorLatch::close` | `close_deletes_the_node_and_ends_leadership` |
//! | the predecessor watcher (2.10.0 l. 543–560; 5.4.0 l. 635–653) | `NodeDeleted` while started → `getChildren()` | same | same | same | same | `CuratorLatch::on_watch` | `each_watcher_set_on_the_predecessor_lists_again` |
//!
//! 5.7.1 and 5.9.0 differ in one more place that our faults do not reach: 5.9.0 tests no error
//! policy on RECONNECTED, which matters only under `SessionConnectionStateErrorPolicy`.
//!
//! # What the application sees
//!
//! A Curator latch hands out no fencing token. The application here does what a Curator user
//! would: while the latch leads, it reads the node `getOurPath()` names (`exists`, a
//! background operation of its own; again whenever that node changed under the leadership, as
//! it can in every release when two creates race) and acts as leader with the node's `czxid`
//! as its token ([`LatchReport::Leader`], once more with each new token), if the latch still
//! leads on that node when the reply comes; on `notLeader` it stops
//! ([`LatchReport::NotLeader`]). That read is the application's, not the
//! release's: it is the one request here that `LeaderLatch.java` does not make.
//!
//! # Not modelled
//!
//! Listeners given an executor of their own, `await()`, `CloseMode.NOTIFY_LEADER`'s order,
//! the error policy (see [`super`]). The start task's cancellation is a flag: a `start()`
//! waiting for a connection that is closed never resets.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::framework::{ConnectionState, Framework, Upcall};
use super::Release;
use crate::error::ZkError;
use crate::event::{EventType, SessionEvent, WatchedEvent};
use crate::latch::{LatchReport, LatchRequest};
use crate::machine::{Command, Input};
use crate::path::{join, name_of};
use crate::request::{Request, Response};
use crate::symmetry::{Renaming, Symmetric};
use crate::types::{CreateMode, SessionId};

/// The latch's name for its nodes (`LOCK_NAME`).
const LOCK_NAME: &str = "latch-";

/// The latch's own state (`State`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum State {
    Latent,
    Started,
    Closed,
}

crate::symmetric_as_hash!(State);

/// Which callback a background operation's result goes to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    /// `reset()`'s create.
    Reset,
    /// `getChildren()`.
    Children,
    /// The `getData` that watches the predecessor at this path.
    Predecessor(String),
    /// 5.7.1 and later: the `getData` of our node, first in line (`localOurPath`).
    Owner(String),
    /// The application's read of its node for its fencing token, on `isLeader`.
    Token(String),
}

impl Symmetric for Call {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Call::Predecessor(path) | Call::Owner(path) | Call::Token(path) => {
                path.hash_renamed(renaming, state)
            }
            Call::Reset | Call::Children => {}
        }
    }
}

/// `LeaderLatch` of one release (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CuratorLatch {
    release: Release,
    framework: Framework<Call>,
    dir: Arc<str>,
    uuid: Arc<str>,
    participant: Arc<str>,
    /// Creates made: each `create()` builder draws a new protection id.
    creates: u32,
    state: State,
    /// `start()` was called and waits for a connection (`AfterConnectionEstablished`).
    starting: bool,
    /// The connection-state listener is registered.
    listening: bool,
    has_leadership: bool,
    /// The application's token while it acts as leader: its node's czxid.
    token: Option<i64>,
    /// The node the application last read (or is reading) its token from, while the latch
    /// leads, and whether that read is in flight.
    read_for: Option<String>,
    reading: bool,
    our_path: Option<String>,
    /// The predecessor watchers set and not yet fired, by path: ZooKeeper runs each watcher
    /// object once, so two `getData` calls on one path run the `getChildren` twice.
    watchers: BTreeMap<String, u64>,
}

impl CuratorLatch {
    /// `new LeaderLatch(client, dir, participant)` of `release`, with the host's `uuid` for
    /// protection.
    pub fn new(release: Release, dir: &str, participant: &str, uuid: &str) -> CuratorLatch {
        CuratorLatch {
            release,
            framework: Framework::new(release),
            dir: dir.into(),
            uuid: uuid.into(),
            participant: participant.into(),
            creates: 0,
            state: State::Latent,
            starting: false,
            listening: false,
            has_leadership: false,
            token: None,
            read_for: None,
            reading: false,
            our_path: None,
            watchers: BTreeMap::new(),
        }
    }

    /// The release it ports.
    pub fn release(&self) -> Release {
        self.release
    }

    /// True while this participant believes it leads (`hasLeadership()`).
    pub fn is_leader(&self) -> bool {
        self.state == State::Started && self.has_leadership
    }

    /// Its node (`getOurPath()`).
    pub fn own_node(&self) -> Option<&str> {
        self.our_path.as_deref()
    }

    /// The node its leadership stands on, while it leads.
    pub fn claimed_node(&self) -> Option<&str> {
        self.our_path
            .as_deref()
            .filter(|_| self.is_leader() && self.token.is_some())
    }

    /// Its framework (for tests).
    #[cfg(test)]
    pub(crate) fn framework(&self) -> &Framework<Call> {
        &self.framework
    }

    /// Whether nothing of the latch's is pending in its framework.
    pub fn is_settled(&self) -> bool {
        self.framework.is_settled()
    }

    fn set_leadership(&mut self, leader: bool, out: &mut Vec<Command<LatchReport>>) {
        let was = std::mem::replace(&mut self.has_leadership, leader);
        if was && !leader {
            // notLeader: the application stops acting.
            self.read_for = None;
            if self.token.take().is_some() {
                out.push(Command::Report(LatchReport::NotLeader));
            }
        }
    }

    /// The application, while the latch leads, reads the czxid of the node `getOurPath()`
    /// names, once per node (on `isLeader`, and again if the latch's node changed under its
    /// leadership, as `getOurPath()` shows it at the application's next act).
    fn refresh_token(&mut self, out: &mut Vec<Command<LatchReport>>) {
        if !self.is_leader() || self.reading || self.our_path == self.read_for {
            return;
        }
        let Some(ours) = self.our_path.clone() else {
            return;
        };
        self.read_for = Some(ours.clone());
        self.reading = true;
        let request = Request::Exists {
            path: ours.clone(),
            watch: false,
        };
        self.framework.background(Call::Token(ours), request, out);
    }

    /// The application's read of its node: it acts as leader with the node's czxid if the
    /// latch still leads on that node.
    fn on_token(
        &mut self,
        path: String,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<LatchReport>>,
    ) {
        self.reading = false;
        let still = self.is_leader() && self.our_path.as_deref() == Some(path.as_str());
        if let (true, Ok(Response::Exists(Some(stat)))) = (still, result) {
            if self.token != Some(stat.czxid) {
                self.token = Some(stat.czxid);
                out.push(Command::Report(LatchReport::Leader { token: stat.czxid }));
            }
        }
    }

    /// `setNode`: the old node, if any, is deleted (guaranteed, in background).
    fn set_node(&mut self, path: Option<String>, out: &mut Vec<Command<LatchReport>>) {
        if let Some(old) = std::mem::replace(&mut self.our_path, path) {
            self.framework.guaranteed_delete(&old, out);
        }
    }

    /// `reset()`.
    fn reset(&mut self, out: &mut Vec<Command<LatchReport>>) {
        self.set_leadership(false, out);
        self.set_node(None, out);
        self.creates += 1;
        let protection = format!("{}-{}", self.uuid, self.creates);
        let data = self.participant.as_bytes().to_vec();
        let mode = CreateMode::EphemeralSequential;
        let dir = Arc::clone(&self.dir);
        (self.framework).protected_create(
            Call::Reset,
            &dir,
            &protection,
            LOCK_NAME,
            data,
            mode,
            out,
        );
    }

    /// `getChildren()`.
    fn get_children(&mut self, out: &mut Vec<Command<LatchReport>>) {
        let request = Request::GetChildren {
            path: self.dir.to_string(),
            watch: false,
        };
        self.framework.background(Call::Children, request, out);
    }

    /// `checkLeadership(children)`.
    fn check_leadership(&mut self, children: Vec<String>, out: &mut Vec<Command<LatchReport>>) {
        let mut sorted = children;
        sorted.sort_by(|a, b| fix_for_sorting(a).cmp(fix_for_sorting(b)));
        let local_our_path = self.our_path.clone();
        let index = (local_our_path.as_deref())
            .and_then(|ours| sorted.iter().position(|c| c == name_of(ours)));
        match index {
            None => self.reset(out),
            Some(0) if self.release >= Release::V5_7_1 => {
                let ours = local_our_path.expect("found in the children");
                let request = Request::GetData {
                    path: ours.clone(),
                    watch: false,
                };
                self.framework.background(Call::Owner(ours), request, out);
            }
            Some(0) => self.set_leadership(true, out),
            Some(index) => {
                if self.release >= Release::V5_4_0 {
                    self.set_leadership(false, out);
                }
                let watch_path = join(&self.dir, &sorted[index - 1]);
                let request = Request::GetData {
                    path: watch_path.clone(),
                    watch: true,
                };
                self.framework
                    .background(Call::Predecessor(watch_path), request, out);
            }
        }
    }

    /// A background callback.
    fn on_callback(
        &mut self,
        call: Call,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<LatchReport>>,
    ) {
        match (call, result) {
            (Call::Reset, Ok(Response::Created(created))) => {
                self.set_node(Some(created.path), out);
                if self.state == State::Closed {
                    self.set_node(None, out);
                } else {
                    self.get_children(out);
                }
            }
            // "getChildren() failed": logged, nothing else.
            (Call::Reset, _) => {}
            (Call::Children, Ok(Response::Children(children, _))) => {
                self.check_leadership(children, out)
            }
            (Call::Children, Err(ZkError::NoNode)) if self.release >= Release::V5_9_0 => {
                self.reset(out)
            }
            (Call::Children, _) => {}
            (Call::Predecessor(path), Ok(_)) => *self.watchers.entry(path).or_default() += 1,
            (Call::Predecessor(_), Err(ZkError::NoNode)) => {
                if self.release >= Release::V5_4_0 {
                    self.get_children(out);
                } else {
                    self.reset(out);
                }
            }
            (Call::Predecessor(_), _) => {}
            (Call::Token(path), result) => self.on_token(path, result, out),
            (Call::Owner(ours), result) => {
                let owner = match result {
                    Ok(Response::Data(_, stat)) => stat.ephemeral_owner,
                    _ => -1,
                };
                if SessionId(owner) != self.framework.session_id() {
                    self.reset(out);
                } else {
                    let _last_path_is_leader = ours;
                    self.set_leadership(true, out);
                }
            }
        }
    }

    /// The predecessor watchers on the event's path run, each once.
    fn on_watch(&mut self, event: WatchedEvent, out: &mut Vec<Command<LatchReport>>) {
        let fired = self.watchers.remove(&event.path).unwrap_or(0);
        for _ in 0..fired {
            if self.state == State::Started && event.event_type == EventType::NodeDeleted {
                self.get_children(out);
            }
        }
    }

    /// `handleStateChange`, on the listener's thread.
    fn on_state(&mut self, state: ConnectionState, out: &mut Vec<Command<LatchReport>>) {
        if !self.listening {
            return;
        }
        match state {
            ConnectionState::Reconnected if self.release >= Release::V5_4_0 => {
                self.get_children(out)
            }
            ConnectionState::Reconnected => self.reset(out),
            ConnectionState::Suspended | ConnectionState::Lost => self.set_leadership(false, out),
            ConnectionState::Connected => {}
        }
    }

    /// `internalStart()`, once connected.
    fn internal_start(&mut self, out: &mut Vec<Command<LatchReport>>) {
        self.starting = false;
        if self.state == State::Started {
            self.listening = true;
            self.reset(out);
        }
    }

    /// `close()`.
    fn close(&mut self, out: &mut Vec<Command<LatchReport>>) {
        if self.state != State::Started {
            out.push(Command::Report(LatchReport::Closed));
            return;
        }
        self.state = State::Closed;
        self.starting = false;
        self.set_node(None, out);
        self.watchers.clear();
        self.listening = false;
        self.set_leadership(false, out);
        out.push(Command::Report(LatchReport::Closed));
    }

    /// Handles one input (see [`crate::machine::Machine::handle`]).
    pub fn handle(&mut self, input: Input<LatchRequest>, out: &mut Vec<Command<LatchReport>>) {
        if let Input::Session(SessionEvent::Expired | SessionEvent::Closed) = input {
            // The session's watches are gone with it.
            self.watchers.clear();
        }
        let mut upcalls = Vec::new();
        let request = self.framework.handle(input, out, &mut upcalls);
        match request {
            Some(LatchRequest::Start) if self.state == State::Latent => {
                self.state = State::Started;
                self.starting = true;
            }
            Some(LatchRequest::Start) => {}
            Some(LatchRequest::Close) => self.close(out),
            None => {}
        }
        for upcall in upcalls {
            match upcall {
                Upcall::Callback { tag, result } => self.on_callback(tag, result, out),
                Upcall::Watch(event) => self.on_watch(event, out),
                Upcall::State(state) => self.on_state(state, out),
            }
        }
        if self.starting && self.framework.is_connected() {
            self.internal_start(out);
        }
        self.refresh_token(out);
    }
}

/// `StandardLockInternalsDriver.standardFixForSorting`: what follows the last `latch-`.
fn fix_for_sorting(name: &str) -> &str {
    match name.rfind(LOCK_NAME) {
        Some(index) => &name[index + LOCK_NAME.len()..],
        None => name,
    }
}

/// Everything but what is fixed when the latch is made.
impl Hash for CuratorLatch {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.release, &self.framework, self.creates, self.state).hash(state);
        (
            self.starting,
            self.listening,
            self.has_leadership,
            self.token,
        )
            .hash(state);
        (&self.our_path, &self.watchers, &self.read_for, self.reading).hash(state);
    }
}

impl Symmetric for CuratorLatch {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        (self.release, self.creates, self.state).hash(state);
        (
            self.starting,
            self.listening,
            self.has_leadership,
            self.token,
        )
            .hash(state);
        self.reading.hash(state);
        self.framework.hash_renamed(renaming, state);
        (&self.our_path, &self.watchers, &self.read_for).hash_renamed(renaming, state);
    }
}
