//! Curator's client framework as a sans-IO component: background operations with their retry
//! loop, protected creates, guaranteed deletes, and connection states, shared by every Curator
//! profile so that two profiles differ only where their releases do.
//!
//! A recipe's machine owns one [`Framework`]. It hands the framework every input first
//! ([`Framework::handle`]); the framework answers with the commands to run and with *upcalls*,
//! in the order Curator's threads would run them:
//!
//! - [`Upcall::Callback`]: a background operation is done (its `BackgroundCallback`), on the
//!   ZooKeeper client's event thread, in reply order;
//! - [`Upcall::Watch`]: a watcher, on the same thread;
//! - [`Upcall::State`]: a connection-state listener, on the `ConnectionStateManager`'s own
//!   thread. Each state change is queued and handed over on a zero-delay timer, so that the
//!   model checker explores a listener running before, between or after any callbacks, and the
//!   simulator runs it after the events of its instant.
//!
//! Several operations can be in flight at once (a recipe's callback can start one while
//! another is pending), each with its own retry count.
//!
//! # From the upstream code to this file (2.10.0 and 5.4.0; 5.3.0, 5.7.1 and 5.9.0 as 5.4.0
//! on these paths: the later tags reformat and refactor `CuratorFrameworkImpl` but keep them)
//!
//! | upstream (`curator-framework/.../imps/` unless named) | here | test |
//! | --- | --- | --- |
//! | `CuratorFrameworkImpl.processBackgroundOperation`: a retryable code goes to `checkBackgroundRetry`, any other to the callback (2.10.0 l. 502–531, 5.4.0 l. 662–692) | `Framework::on_reply`, `Stage::Attempt` | `a_lost_reply_is_retried_and_only_its_outcome_is_called_back` |
//! | `RetryPolicy.allowRetry(Throwable)` / `RetryLoop.shouldRetry`: `CONNECTIONLOSS`, `OPERATIONTIMEOUT`, `SESSIONMOVED`, `SESSIONEXPIRED` (5.4.0 `RetryPolicy.java` l. 47–58, 2.10.0 `RetryLoop.java` l. 150–156) | [`retryable`] | `an_expired_session_is_retried_in_the_new_one` |
//! | `checkBackgroundRetry`: retries exhausted → error callback, then the callback with the code, then `validateConnection(codeToState(code))` (2.10.0 l. 705–756, 5.4.0 l. 862–931) | `Framework::give_up` | `exhausted_retries_call_back_the_error_and_suspend` |
//! | `performBackgroundOperation`: not connected → sleep 1 s and requeue until the connection timeout, then a `CONNECTIONLOSS` through `checkBackgroundRetry` (2.10.0 l. 825–872, 5.4.0 l. 1002–1040) | `Framework::perform` | `an_operation_waits_for_the_connection_then_counts_a_loss` |
//! | `validateConnection(SyncConnected)` → `unSleepBackgroundOperations` (5.x only, 5.4.0 l. 781–785, 1053–1066) | `Framework::on_connected` | `a_reconnection_wakes_sleeping_operations_in_5_only` |
//! | `validateConnection` → `checkInstanceIndex`: a new handle posts LOST (5.x only, 5.4.0 l. 796–802) | `Framework::on_connected` | `a_new_session_is_lost_then_reconnected_in_5` |
//! | `suspendConnection` → `doSyncForSuspendedConnection`: a `sync` whose retries run out posts LOST (2.10.0 l. 665–703) | `Kind::SuspendSync` | `curator_2_posts_lost_when_its_sync_gives_up` |
//! | `ConnectionStateManager.addStateChange`: a repeated state is not posted; the first connected state is CONNECTED (5.4.0 `state/ConnectionStateManager.java` l. 192–216) | `Framework::post` | `connection_states_follow_the_client_events` |
//! | `CreateBuilderImpl.pathInBackground`: a retried protected create first looks for its node (`findProtectedNodeInForeground`) and reports it found (2.10.0 l. 627–700, 5.4.0 l. 1098–1160) | `Stage::Find` | `a_protected_create_finds_the_node_its_lost_reply_made` |
//! | `ProtectedMode.validateFoundNode`: a node found after the session changed is deleted and not reported (5.x only, 5.4.0 `ProtectedMode.java`) | `Stage::Find` | `a_node_of_the_old_session_is_adopted_by_2_and_deleted_by_5` |
//! | `pathInBackground`'s error callback: retries exhausted → `FindAndDeleteProtectedNodeInBackground`, retried for ever (5.4.0 l. 1102–1112, `FindAndDeleteProtectedNodeInBackground.java`) | `Kind::FindAndDelete` | `a_protected_create_that_gives_up_deletes_its_node_later` |
//! | `CreateBuilderImpl` callback: `NONODE` with `creatingParentContainersIfNeeded` → `backgroundCreateParentsThenNode` (5.4.0 l. 649–652, 766–810) | `Stage::Parents` | `missing_parents_are_made_as_containers_then_the_node` |
//! | `DeleteBuilderImpl.forPath`, guaranteed: retries exhausted → `FailedDeleteManager.addFailedOperation`, a new background delete (5.4.0 l. 249–262) | `Kind::GuaranteedDelete` | `a_guaranteed_delete_is_retried_until_the_server_answers` |

use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};

use super::{Release, RetryPolicy, CONNECTION_TIMEOUT_MS, NOT_CONNECTED_SLEEP_MS};
use crate::error::ZkError;
use crate::event::{SessionEvent, WatchedEvent};
use crate::machine::{Command, Ids, Input};
use crate::path::{ancestors, join, parent_of};
use crate::request::{Request, Response};
use crate::symmetry::{Renaming, Symmetric};
use crate::types::{CreateMode, Created, SessionId, Stat};

/// Curator's connection states, as a listener receives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConnectionState {
    /// The first connection.
    Connected,
    /// The connection broke; the session may live on.
    Suspended,
    /// Connected again (in the same session, or in a new one).
    Reconnected,
    /// The session is gone (or, in 2.10.0, the framework gave up on it).
    Lost,
}

crate::symmetric_as_hash!(ConnectionState);

/// What the framework hands its recipe, in the order it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upcall<T> {
    /// A background operation's callback with its final result.
    Callback {
        /// What the recipe called the operation.
        tag: T,
        /// Its result: a protected create found after a lost reply is `Created` with an
        /// empty `Stat`, as Curator's event has none.
        result: Result<Response, ZkError>,
    },
    /// A watch fired (every watcher the recipe set on that path runs).
    Watch(WatchedEvent),
    /// A connection-state listener runs.
    State(ConnectionState),
}

/// Whether Curator's retry policy retries a reply with `error` (`RetryPolicy.allowRetry`).
pub fn retryable(error: &ZkError) -> bool {
    matches!(
        error,
        ZkError::ConnectionLoss
            | ZkError::OperationTimeout
            | ZkError::SessionMoved
            | ZkError::SessionExpired
    )
}

/// Which background operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Kind {
    /// `inBackground(callback)` of any request.
    Plain,
    /// `create().creatingParentContainersIfNeeded().withProtection()...inBackground()`.
    Protected {
        /// The protection prefix of the node's name, `_c_<id>-`.
        prefix: String,
        /// No attempt made yet (`firstTime`).
        first: bool,
        /// The session of the first attempt (`ProtectedMode.checkSetSessionId`).
        session: Option<SessionId>,
    },
    /// `delete().guaranteed().inBackground()`: made again when its retries run out.
    GuaranteedDelete,
    /// `FindAndDeleteProtectedNodeInBackground`: made again when its retries run out.
    FindAndDelete {
        /// The protection prefix to look for.
        prefix: String,
    },
    /// Curator 2.10.0's `doSyncForSuspendedConnection`: a `sync` whose failure posts LOST;
    /// `retried` once the handle changed under it (its second try).
    SuspendSync {
        /// The handle (session count) it was started in, or `None` on its second try.
        handle: Option<u32>,
    },
}

/// What an operation's id in [`Framework`]'s table waits for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Stage {
    /// The request itself.
    Attempt,
    /// A retried protected create's search for its node (`getChildren` of the parent).
    Find,
    /// `creatingParentContainersIfNeeded`: the next of these containers, shallowest first.
    Parents(Vec<String>),
    /// A sleep before the next attempt: a retry's backoff, or (`forced`) a wait for the
    /// connection, which a 5.x reconnection cuts short.
    Sleep {
        /// A wait for the connection.
        forced: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Operation<T> {
    tag: Option<T>,
    request: Request,
    kind: Kind,
    retries: u32,
    elapsed_ms: u64,
    stage: Stage,
}

/// Curator's framework for one client (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Framework<T> {
    release: Release,
    policy: RetryPolicy,
    ids: Ids,
    connected: bool,
    session: Option<SessionId>,
    /// Sessions this client has had: the handle's instance index.
    handles: u32,
    state: Option<ConnectionState>,
    /// By the id of the reply or timer each waits for.
    pending: BTreeMap<u64, Operation<T>>,
    /// State changes not yet handed to the listeners, and the timer that hands the next.
    notices: VecDeque<ConnectionState>,
    notice_timer: Option<u64>,
}

impl<T: Clone + Eq + Hash + std::fmt::Debug> Framework<T> {
    /// The framework of `release`, not connected yet.
    pub fn new(release: Release) -> Framework<T> {
        Framework {
            release,
            policy: RetryPolicy::STANDARD,
            ids: Ids::default(),
            connected: false,
            session: None,
            handles: 0,
            state: None,
            pending: BTreeMap::new(),
            notices: VecDeque::new(),
            notice_timer: None,
        }
    }

    /// The release whose framework this is.
    pub fn release(&self) -> Release {
        self.release
    }

    /// The current session (`getZooKeeper().getSessionId()`), 0 if none.
    pub fn session_id(&self) -> SessionId {
        self.session.unwrap_or(SessionId(0))
    }

    /// Whether the client is connected (`CuratorZookeeperClient.isConnected`).
    pub fn is_connected(&self) -> bool {
        self.connected
    }

    /// Whether nothing is pending: no operation in flight or asleep, no state change waiting
    /// for the listeners.
    pub fn is_settled(&self) -> bool {
        self.pending.is_empty() && self.notices.is_empty()
    }

    /// The paths of the guaranteed deletes not yet answered.
    pub fn deleting(&self) -> impl Iterator<Item = &str> {
        self.pending
            .values()
            .filter_map(|op| match (&op.kind, &op.request) {
                (Kind::GuaranteedDelete, Request::Delete { path, .. }) => Some(path.as_str()),
                _ => None,
            })
    }

    /// `inBackground(callback)` of `request`, called back with `tag`.
    pub fn background<P>(&mut self, tag: T, request: Request, out: &mut Vec<Command<P>>) {
        self.start(Some(tag), request, Kind::Plain, out);
    }

    /// A protected create in background with its parents made as containers if needed:
    /// `parent/_c_<protection>-<name>`, called back with `tag`.
    #[allow(clippy::too_many_arguments)]
    pub fn protected_create<P>(
        &mut self,
        tag: T,
        parent: &str,
        protection: &str,
        name: &str,
        data: Vec<u8>,
        mode: CreateMode,
        out: &mut Vec<Command<P>>,
    ) {
        let prefix = format!("_c_{protection}-");
        let request = Request::Create {
            path: join(parent, &format!("{prefix}{name}")),
            data,
            mode,
        };
        let kind = Kind::Protected {
            prefix,
            first: true,
            session: None,
        };
        self.start(Some(tag), request, kind, out);
    }

    /// `delete().guaranteed().inBackground().forPath(path)`, with no callback.
    pub fn guaranteed_delete<P>(&mut self, path: &str, out: &mut Vec<Command<P>>) {
        let request = Request::Delete {
            path: path.to_owned(),
            version: -1,
        };
        self.start(None, request, Kind::GuaranteedDelete, out);
    }

    fn start<P>(
        &mut self,
        tag: Option<T>,
        request: Request,
        kind: Kind,
        out: &mut Vec<Command<P>>,
    ) {
        let op = Operation {
            tag,
            request,
            kind,
            retries: 0,
            elapsed_ms: 0,
            stage: Stage::Attempt,
        };
        self.perform(op, out, &mut Vec::new());
    }

    /// `performBackgroundOperation`: sends the operation if connected, or sleeps for the
    /// connection until the connection timeout has passed.
    fn perform<P>(
        &mut self,
        mut op: Operation<T>,
        out: &mut Vec<Command<P>>,
        up: &mut Vec<Upcall<T>>,
    ) {
        if !self.connected {
            if op.elapsed_ms < CONNECTION_TIMEOUT_MS {
                op.elapsed_ms += NOT_CONNECTED_SLEEP_MS;
                return self.sleep(op, NOT_CONNECTED_SLEEP_MS, true, out);
            }
            return self.check_retry(op, ZkError::ConnectionLoss, out, up);
        }
        let session = self.session;
        let request = match &mut op.kind {
            Kind::Protected {
                first, session: at, ..
            } => {
                at.get_or_insert(session.unwrap_or(SessionId(0)));
                if std::mem::replace(first, false) {
                    op.request.clone()
                } else {
                    op.stage = Stage::Find;
                    Request::GetChildren {
                        path: parent_of(create_path(&op.request)).to_owned(),
                        watch: false,
                    }
                }
            }
            _ => op.request.clone(),
        };
        if op.stage != Stage::Find {
            op.stage = Stage::Attempt;
        }
        self.send(op, request, out);
    }

    fn send<P>(&mut self, op: Operation<T>, request: Request, out: &mut Vec<Command<P>>) {
        let id = self.ids.fresh();
        self.pending.insert(id, op);
        out.push(Command::Op { id, request });
    }

    fn sleep<P>(
        &mut self,
        mut op: Operation<T>,
        after_ms: u64,
        forced: bool,
        out: &mut Vec<Command<P>>,
    ) {
        op.stage = Stage::Sleep { forced };
        let id = self.ids.fresh();
        self.pending.insert(id, op);
        out.push(Command::Timer { id, after_ms });
    }

    /// `checkBackgroundRetry`: sleeps and tries again if the policy allows, else gives up.
    fn check_retry<P>(
        &mut self,
        mut op: Operation<T>,
        error: ZkError,
        out: &mut Vec<Command<P>>,
        up: &mut Vec<Upcall<T>>,
    ) {
        match self.policy.sleep_before(op.retries) {
            Some(sleep_ms) => {
                op.retries += 1;
                op.elapsed_ms += sleep_ms;
                self.sleep(op, sleep_ms, false, out);
            }
            None => self.give_up(op, error, out, up),
        }
    }

    /// Retries exhausted: the error callback, the callback, then `validateConnection`.
    fn give_up<P>(
        &mut self,
        op: Operation<T>,
        error: ZkError,
        out: &mut Vec<Command<P>>,
        up: &mut Vec<Upcall<T>>,
    ) {
        match &op.kind {
            Kind::Protected { prefix, .. } => {
                let parent = parent_of(create_path(&op.request)).to_owned();
                let find = Request::GetChildren {
                    path: parent,
                    watch: false,
                };
                let kind = Kind::FindAndDelete {
                    prefix: prefix.clone(),
                };
                self.start(None, find, kind, out);
            }
            Kind::GuaranteedDelete | Kind::FindAndDelete { .. } => {
                // Made again from the start (FailedDeleteManager, `operationAndData.reset()`).
                let again = Operation {
                    retries: 0,
                    elapsed_ms: 0,
                    stage: Stage::Attempt,
                    ..op.clone()
                };
                self.perform(again, out, up);
            }
            Kind::SuspendSync { handle } => match handle {
                Some(started) if *started != self.handles => {
                    let again = Request::Sync { path: "/".into() };
                    self.start(None, again, Kind::SuspendSync { handle: None }, out);
                }
                _ => self.post(ConnectionState::Lost, out),
            },
            Kind::Plain => {}
        }
        if let Some(tag) = op.tag {
            up.push(Upcall::Callback {
                tag,
                result: Err(error),
            });
        }
        match error {
            ZkError::ConnectionLoss | ZkError::OperationTimeout => self.suspend(out),
            ZkError::SessionExpired => self.post(ConnectionState::Lost, out),
            _ => {}
        }
    }

    /// Feeds `input` to the framework: commands go to `out`, upcalls to `up` in the order
    /// they run. An application request is returned for the recipe to handle.
    pub fn handle<R, P>(
        &mut self,
        input: Input<R>,
        out: &mut Vec<Command<P>>,
        up: &mut Vec<Upcall<T>>,
    ) -> Option<R> {
        match self.route(input, out, up)? {
            Input::Request(request) => Some(request),
            Input::Watch(event) => {
                up.push(Upcall::Watch(event));
                None
            }
            Input::Reply { .. } | Input::Timer(_) | Input::Session(_) => None,
        }
    }

    /// Feeds `input` to the framework as [`Framework::handle`] does, and returns what is not
    /// the framework's alone for a recipe's own thread: the application's request, a reply or
    /// timer of an id the recipe drew itself ([`Framework::fresh_id`]: a foreground call), a
    /// watch, and a session event (which the framework has taken note of first).
    pub fn route<R, P>(
        &mut self,
        input: Input<R>,
        out: &mut Vec<Command<P>>,
        up: &mut Vec<Upcall<T>>,
    ) -> Option<Input<R>> {
        self.ids.note(&input);
        match input {
            Input::Reply { id, result } => match self.pending.remove(&id) {
                Some(op) => self.on_reply(op, result, out, up),
                None => return Some(Input::Reply { id, result }),
            },
            Input::Session(event) => {
                self.on_session(event, out);
                return Some(Input::Session(event));
            }
            Input::Timer(id) if self.notice_timer == Some(id) => {
                self.notice_timer = None;
                if let Some(state) = self.notices.pop_front() {
                    up.push(Upcall::State(state));
                }
                self.arm_notices(out);
            }
            Input::Timer(id) => match self.pending.remove(&id) {
                Some(op) => self.perform(op, out, up),
                None => return Some(Input::Timer(id)),
            },
            other @ (Input::Request(_) | Input::Watch(_)) => return Some(other),
        }
        None
    }

    /// An id for an operation or timer of the recipe's own (a foreground call), from the
    /// framework's allocator so that the two never collide.
    pub fn fresh_id(&mut self) -> u64 {
        self.ids.fresh()
    }

    fn on_reply<P>(
        &mut self,
        mut op: Operation<T>,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<P>>,
        up: &mut Vec<Upcall<T>>,
    ) {
        match (std::mem::replace(&mut op.stage, Stage::Attempt), result) {
            (_, Err(error)) if retryable(&error) => self.check_retry(op, error, out, up),
            (Stage::Find, Ok(Response::Children(children, _))) => self.found(op, children, out, up),
            (Stage::Find, _) => self.perform_now(op, out, up),
            (Stage::Parents(mut rest), _) => {
                // Made, already there, or refused: `mkdirs` goes on, then the node again.
                rest.remove(0);
                if rest.is_empty() {
                    self.perform(op, out, up);
                } else {
                    self.make_parent(op, rest, out);
                }
            }
            (Stage::Attempt, Err(ZkError::NoNode)) if matches!(op.kind, Kind::Protected { .. }) => {
                let parent = parent_of(create_path(&op.request)).to_owned();
                self.make_parent(op, ancestors(&parent), out);
            }
            (Stage::Attempt, Ok(Response::Children(children, _)))
                if matches!(op.kind, Kind::FindAndDelete { .. }) =>
            {
                let Kind::FindAndDelete { prefix } = &op.kind else {
                    unreachable!("matched above")
                };
                let parent = request_path(&op.request).to_owned();
                if let Some(node) = children.iter().find(|c| c.starts_with(prefix.as_str())) {
                    self.guaranteed_delete(&join(&parent, node), out);
                }
            }
            (Stage::Attempt, result) => {
                if let Some(tag) = op.tag {
                    up.push(Upcall::Callback { tag, result });
                }
            }
            (Stage::Sleep { .. }, _) => unreachable!("a sleeping operation has no reply"),
        }
    }

    /// A protected create found its node's siblings: reports the node it made, or creates.
    fn found<P>(
        &mut self,
        mut op: Operation<T>,
        children: Vec<String>,
        out: &mut Vec<Command<P>>,
        up: &mut Vec<Upcall<T>>,
    ) {
        let Kind::Protected {
            prefix, session, ..
        } = &mut op.kind
        else {
            unreachable!("only a protected create searches")
        };
        let parent = parent_of(create_path(&op.request)).to_owned();
        let mut node = children
            .iter()
            .find(|c| c.starts_with(prefix.as_str()))
            .map(|c| join(&parent, c));
        if self.release.is_curator_5() && *session != self.session {
            // ProtectedMode.validateFoundNode: the old session's node is deleted.
            *session = self.session;
            if let Some(old) = node.take() {
                self.guaranteed_delete(&old, out);
            }
        }
        match node {
            Some(path) => {
                if let Some(tag) = op.tag {
                    let created = Created {
                        path,
                        stat: Stat::default(),
                    };
                    up.push(Upcall::Callback {
                        tag,
                        result: Ok(Response::Created(created)),
                    });
                }
            }
            None => self.perform_now(op, out, up),
        }
    }

    /// The create itself, now (after a search that found nothing).
    fn perform_now<P>(
        &mut self,
        op: Operation<T>,
        out: &mut Vec<Command<P>>,
        up: &mut Vec<Upcall<T>>,
    ) {
        if !self.connected {
            return self.perform(op, out, up);
        }
        let request = op.request.clone();
        self.send(op, request, out);
    }

    fn make_parent<P>(
        &mut self,
        mut op: Operation<T>,
        rest: Vec<String>,
        out: &mut Vec<Command<P>>,
    ) {
        let request = Request::Create {
            path: rest[0].clone(),
            data: Vec::new(),
            mode: CreateMode::Container,
        };
        op.stage = Stage::Parents(rest);
        self.send(op, request, out);
    }

    fn on_session<P>(&mut self, event: SessionEvent, out: &mut Vec<Command<P>>) {
        match event {
            SessionEvent::Connected { session_id } => {
                let first = self.handles == 0;
                self.handles += 1;
                self.session = Some(session_id);
                if first {
                    self.connected = true;
                    self.post(ConnectionState::Connected, out);
                    return;
                }
                if self.release.is_curator_5() {
                    // checkInstanceIndex: a new handle.
                    self.post(ConnectionState::Lost, out);
                }
                self.on_connected(out);
            }
            SessionEvent::Reconnected { session_id } => {
                self.session = Some(session_id);
                self.on_connected(out);
            }
            SessionEvent::Disconnected => {
                self.connected = false;
                self.suspend(out);
            }
            SessionEvent::Expired => {
                self.connected = false;
                self.post(ConnectionState::Lost, out);
            }
            SessionEvent::Closed => self.connected = false,
        }
    }

    /// `validateConnection(SyncConnected)`.
    fn on_connected<P>(&mut self, out: &mut Vec<Command<P>>) {
        self.connected = true;
        self.post(ConnectionState::Reconnected, out);
        if !self.release.is_curator_5() {
            return;
        }
        // unSleepBackgroundOperations: every operation waiting for the connection, now.
        let forced: Vec<u64> = (self.pending.iter())
            .filter(|(_, op)| op.stage == Stage::Sleep { forced: true })
            .map(|(id, _)| *id)
            .collect();
        for id in forced {
            let op = self.pending.remove(&id).expect("listed above");
            // Its timer still goes off; nothing waits for it any more.
            self.perform(op, out, &mut Vec::new());
        }
    }

    /// `suspendConnection`: SUSPENDED, unless already SUSPENDED or LOST.
    fn suspend<P>(&mut self, out: &mut Vec<Command<P>>) {
        if matches!(
            self.state,
            Some(ConnectionState::Suspended | ConnectionState::Lost)
        ) {
            return;
        }
        self.post(ConnectionState::Suspended, out);
        if !self.release.is_curator_5() {
            let sync = Request::Sync { path: "/".into() };
            let kind = Kind::SuspendSync {
                handle: Some(self.handles),
            };
            self.start(None, sync, kind, out);
        }
    }

    /// `ConnectionStateManager.addStateChange`.
    fn post<P>(&mut self, state: ConnectionState, out: &mut Vec<Command<P>>) {
        if self.state == Some(state) {
            return;
        }
        self.state = Some(state);
        self.notices.push_back(state);
        self.arm_notices(out);
    }

    fn arm_notices<P>(&mut self, out: &mut Vec<Command<P>>) {
        if self.notice_timer.is_none() && !self.notices.is_empty() {
            let id = self.ids.fresh();
            self.notice_timer = Some(id);
            out.push(Command::Timer { id, after_ms: 0 });
        }
    }
}

/// The path a create request names.
fn create_path(request: &Request) -> &str {
    match request {
        Request::Create { path, .. } => path,
        other => unreachable!("a protected operation is a create, not {other:?}"),
    }
}

/// The path of a single-path request.
fn request_path(request: &Request) -> &str {
    match request {
        Request::Create { path, .. }
        | Request::Delete { path, .. }
        | Request::Exists { path, .. }
        | Request::GetData { path, .. }
        | Request::GetChildren { path, .. }
        | Request::SetData { path, .. }
        | Request::Sync { path } => path,
        Request::Multi(_) => "/",
    }
}

impl<T: Hash> Hash for Framework<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let Framework {
            release: _,
            policy: _,
            ids,
            connected,
            session,
            handles,
            state: connection,
            pending,
            notices,
            notice_timer,
        } = self;
        (ids, connected, session, handles, connection).hash(state);
        (pending, notices, notice_timer).hash(state);
    }
}

impl Symmetric for Stage {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Stage::Parents(paths) => crate::symmetry::hash_ordered(paths.iter(), renaming, state),
            Stage::Sleep { forced } => forced.hash(state),
            Stage::Attempt | Stage::Find => {}
        }
    }
}

impl Symmetric for Kind {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Kind::Protected {
                prefix,
                first,
                session,
            } => {
                first.hash(state);
                (prefix, session).hash_renamed(renaming, state);
            }
            Kind::FindAndDelete { prefix } => prefix.hash_renamed(renaming, state),
            Kind::SuspendSync { handle } => handle.hash(state),
            Kind::Plain | Kind::GuaranteedDelete => {}
        }
    }
}

impl<T: Symmetric> Symmetric for Operation<T> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        (self.retries, self.elapsed_ms).hash(state);
        (&self.tag, &self.request, &self.kind).hash_renamed(renaming, state);
        self.stage.hash_renamed(renaming, state);
    }
}

impl<T: Symmetric> Symmetric for Framework<T> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        (&self.ids, self.connected, self.handles, self.state).hash(state);
        (&self.notices, self.notice_timer).hash(state);
        self.session.hash_renamed(renaming, state);
        self.pending.len().hash(state);
        for (id, op) in &self.pending {
            id.hash(state);
            op.hash_renamed(renaming, state);
        }
    }
}

/// The id of an operation or timer a framework waits for (for tests).
#[cfg(test)]
pub(crate) fn waiting_ids<T>(framework: &Framework<T>) -> Vec<u64> {
    framework.pending.keys().copied().collect()
}

/// The connection state a framework last posted (for tests).
#[cfg(test)]
pub(crate) fn connection_state<T>(framework: &Framework<T>) -> Option<ConnectionState> {
    framework.state
}
