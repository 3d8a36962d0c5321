//! Curator's *foreground* calls as a sans-IO component: `forPath(...)` without `inBackground`,
//! the calls `InterProcessMutex` makes on the application's thread, each under
//! `RetryLoop.callWithRetry`.
//!
//! # The algorithm
//!
//! `callWithRetry(proc)` waits for a connection (`internalBlockUntilConnectedOrTimedOut`: up
//! to the connection timeout, 1 s at a time, woken by any connection event), then runs `proc`
//! until it returns or throws something the retry policy does not retry. A retried exception
//! costs a sleep (`base × 2^n`) and the next attempt; once the policy gives up, the exception
//! is thrown. The releases differ in two places:
//!
//! - **When the wait for a connection happens.** 2.10.0 waits before every attempt; 5.x waits
//!   once, before the first: a retry after a lost connection is sent at once, and fails at
//!   once, while the client is still disconnected.
//! - **Nested calls.** A protected create that retries looks for the node its lost attempt may
//!   have made (`findProtectedNodeInForeground`), itself a `callWithRetry` inside the create's.
//!   In 2.10.0 each has its own retry loop. In 5.x the thread's loops are one
//!   (`ThreadLocalRetryLoop`): the search's retries count against the create's, an exhausted
//!   search ends the create too, and the search's success marks *the shared loop* complete. So
//!   when the create after a successful search throws a retryable exception, the loop sleeps
//!   and then stops, and `callWithRetry` returns `null` ([`Returned::Null`]) instead of a path.
//!
//! A protected create (`creatingParentContainersIfNeeded().withProtection()`) makes
//! `parent/_c_<id>-<name>`; a `NONODE` makes the missing parents (`ZKPaths.mkdirs`: `exists`,
//! then a container `create`, for each ancestor from the root) and the node once more. A
//! search finds a child with the protection prefix; in 5.x (`ProtectedMode.validateFoundNode`)
//! a node found after the session changed is deleted in the background (guaranteed) and not
//! reported.
//!
//! # From the upstream code to this file
//!
//! | upstream (at the tag) | 2.10.0 | 5.3.0 – 5.9.0 | here | test |
//! | --- | --- | --- | --- | --- |
//! | `RetryLoop.callWithRetry` (2.10.0 `curator-client/.../RetryLoop.java` l. 98–118; 5.4.0 l. 80–109) | waits for a connection before each attempt | waits once, before the loop | `Foreground::attempt`, `Foreground::start` | `five_sends_a_retry_at_once_where_two_waits_for_the_connection` |
//! | `internalBlockUntilConnectedOrTimedOut` (2.10.0 `CuratorZookeeperClient.java` l. 306–334; 5.4.0 l. 381–410) | 1 s waits up to the connection timeout, woken by a connection event | same | `Wait::Connection` | `a_call_waits_for_the_connection_up_to_its_timeout` |
//! | `RetryLoop.takeException` (2.10.0 l. 180–210; 5.4.0 `RetryLoopImpl.java` l. 66–99) | retryable codes sleep and retry until the policy gives up | same | `Foreground::take_exception` | `a_lost_reply_is_retried_then_thrown_when_the_policy_gives_up` |
//! | `ThreadLocalRetryLoop` (5.x only, 5.4.0 `connection/ThreadLocalRetryLoop.java`) | nested loops are separate | one loop per thread: the search's `markComplete` completes the create's loop | `Call::inner`, `Call::done` | `five_returns_null_when_the_create_after_a_search_loses_its_reply` |
//! | `CreateBuilderImpl.pathInForeground` (2.10.0 l. 799–866; 5.4.0 l. 1184–1283) | first attempt creates; later ones search first; `NONODE` → `mkdirs` and create again | same | `Step::Find`, `Step::Create` | `a_retried_create_finds_the_node_its_lost_reply_made`, `missing_parents_are_made_by_exists_then_create` |
//! | `findProtectedNodeInForeground` → `ProtectedMode.validateFoundNode` (5.x only, 5.4.0 l. 1285–1319, `ProtectedMode.java`) | a found node is adopted | a node of an older session is deleted (background, guaranteed) | `Foreground::found` | `a_node_of_the_old_session_is_adopted_by_2_and_deleted_by_5` |
//! | `DeleteBuilderImpl.pathInForeground`, guaranteed (2.10.0 l. 228–272; 5.4.0 l. 292–356) | a retryable failure hands the delete to `FailedDeleteManager` (a background guaranteed delete) and throws | same | `Foreground::finish` | `a_guaranteed_delete_that_gives_up_goes_on_in_the_background` |
//!
//! # Not modelled
//!
//! The retry policy's jitter (as in [`super`]); 2.10.0's `checkTimeouts` inside
//! `getZooKeeper()`, which the simulated client does when a request is made
//! (`local_expiry = "curator-2"`); the wait's time when it is woken by an event that leaves
//! the client disconnected (the wait goes on with its 1 s step).

use std::hash::{Hash, Hasher};

use super::framework::Framework;
use super::{RetryPolicy, CONNECTION_TIMEOUT_MS, NOT_CONNECTED_SLEEP_MS};
use crate::error::ZkError;
use crate::event::SessionEvent;
use crate::machine::{Command, Input};
use crate::path::{ancestors, join};
use crate::request::{Request, Response};
use crate::symmetry::{Renaming, Symmetric};
use crate::types::{CreateMode, Created, SessionId, Stat};

use super::framework::retryable;

/// What a foreground call does (its `proc`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Proc {
    /// One request, its reply returned as it is (`getChildren`, `getData`, `exists`).
    Plain(Request),
    /// `delete().guaranteed().forPath(path)`.
    GuaranteedDelete(String),
    /// `create().creatingParentContainersIfNeeded().withProtection().withMode(mode)
    /// .forPath(parent/name)`, with the protection prefix `_c_<id>-`.
    ProtectedCreate {
        /// The node's parent.
        parent: String,
        /// The protection prefix.
        prefix: String,
        /// The name after the prefix (`lock-`).
        name: String,
        /// Its mode.
        mode: CreateMode,
    },
}

/// What `callWithRetry` returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Returned {
    /// The proc's value: the reply, or a protected create's `Created` (an empty `Stat` when
    /// the node was found by a search).
    Value(Response),
    /// `null`: 5.x's shared loop was complete when a retryable exception came (see the
    /// module docs).
    Null,
}

/// Where in its proc a call is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    /// The request of a plain call or a delete.
    Request,
    /// A protected create's search (`getChildren` of the parent).
    Find,
    /// The create; `again` after `mkdirs`.
    Create { again: bool },
    /// `mkdirs`: `exists` of the first of these ancestors.
    MkdirExists(Vec<String>),
    /// `mkdirs`: the container `create` of the first of these ancestors.
    MkdirCreate(Vec<String>),
}

/// What a call waits for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Wait {
    /// The reply to this operation.
    Reply(u64),
    /// A connection (`internalBlockUntilConnectedOrTimedOut`): this 1 s step's timer, and the
    /// time waited so far; then the step to run (`inner`: the search's own loop's attempt).
    Connection {
        timer: u64,
        waited_ms: u64,
        inner: bool,
    },
    /// A retry's sleep; then the step to run.
    Sleep { timer: u64, inner: bool },
}

/// One retry loop's count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct RetryLoop {
    retries: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Call {
    proc: Proc,
    /// The call's (5.x: the thread's) loop.
    outer: RetryLoop,
    /// 2.10.0: the search's own loop, while a search runs.
    inner: Option<RetryLoop>,
    /// 5.x: the shared loop was marked complete (by a finished search).
    done: bool,
    /// The create's first attempt is still to come (`firstTime`).
    first: bool,
    /// The session the protected create started in (`ProtectedMode.checkSetSessionId`).
    session: Option<SessionId>,
    step: Step,
    wait: Wait,
}

/// The application thread's foreground call, if one runs (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Foreground {
    call: Option<Call>,
}

impl Foreground {
    /// Whether a call runs.
    pub fn is_busy(&self) -> bool {
        self.call.is_some()
    }

    /// `callWithRetry(proc)`.
    pub fn start<T, P>(&mut self, fw: &mut Framework<T>, proc: Proc, out: &mut Vec<Command<P>>)
    where
        T: Clone + Eq + Hash + std::fmt::Debug,
    {
        assert!(
            self.call.is_none(),
            "one foreground call at a time per thread"
        );
        let call = Call {
            proc,
            outer: RetryLoop::default(),
            inner: None,
            done: false,
            first: true,
            session: None,
            step: Step::Request,
            wait: Wait::Reply(0),
        };
        self.block_then(fw, call, false, out);
    }

    /// Feeds `input` (one the framework routed back, see [`Framework::route`]) to the call:
    /// `Some` with the call's outcome when it ends, or the input back when it is not the
    /// call's (`Err(input)`).
    pub fn on_input<T, R, P>(
        &mut self,
        fw: &mut Framework<T>,
        input: Input<R>,
        out: &mut Vec<Command<P>>,
    ) -> Result<Option<Result<Returned, ZkError>>, Input<R>>
    where
        T: Clone + Eq + Hash + std::fmt::Debug,
    {
        let Some(call) = self.call.take() else {
            return Err(input);
        };
        let wait = call.wait.clone();
        match (&wait, input) {
            (Wait::Reply(id), Input::Reply { id: got, result }) if *id == got => {
                Ok(self.on_reply(fw, call, result, out))
            }
            (
                &Wait::Connection {
                    timer,
                    waited_ms,
                    inner,
                },
                Input::Timer(id),
            ) if timer == id => {
                let waited_ms = waited_ms + NOT_CONNECTED_SLEEP_MS;
                if fw.is_connected() || waited_ms >= CONNECTION_TIMEOUT_MS {
                    self.run(fw, call, inner, out);
                    Ok(None)
                } else {
                    let timer = arm(fw, NOT_CONNECTED_SLEEP_MS, out);
                    self.call = Some(Call {
                        wait: Wait::Connection {
                            timer,
                            waited_ms,
                            inner,
                        },
                        ..call
                    });
                    Ok(None)
                }
            }
            (
                &Wait::Connection { inner, .. },
                input @ Input::Session(
                    SessionEvent::Connected { .. } | SessionEvent::Reconnected { .. },
                ),
            ) => {
                // The wait is woken (its timer still goes off, and nothing waits for it); the
                // event is the recipe's too.
                self.run(fw, call, inner, out);
                Err(input)
            }
            (&Wait::Sleep { timer, inner }, Input::Timer(id)) if timer == id => {
                if call.done && !inner {
                    // 5.x: the shared loop was complete; `shouldContinue` is false.
                    return Ok(Some(Ok(Returned::Null)));
                }
                if fw.release().is_curator_5() {
                    self.run(fw, call, inner, out);
                } else {
                    // 2.10.0 waits for a connection before every attempt.
                    self.block_then(fw, call, inner, out);
                }
                Ok(None)
            }
            (_, input) => {
                self.call = Some(call);
                Err(input)
            }
        }
    }

    /// `internalBlockUntilConnectedOrTimedOut`, then an attempt (`inner`: of the search).
    fn block_then<T, P>(
        &mut self,
        fw: &mut Framework<T>,
        call: Call,
        inner: bool,
        out: &mut Vec<Command<P>>,
    ) where
        T: Clone + Eq + Hash + std::fmt::Debug,
    {
        if fw.is_connected() {
            return self.run(fw, call, inner, out);
        }
        let timer = arm(fw, NOT_CONNECTED_SLEEP_MS, out);
        self.call = Some(Call {
            wait: Wait::Connection {
                timer,
                waited_ms: 0,
                inner,
            },
            ..call
        });
    }

    /// One attempt of the proc, or (`inner`) of the search inside it.
    fn run<T, P>(
        &mut self,
        fw: &mut Framework<T>,
        mut call: Call,
        inner: bool,
        out: &mut Vec<Command<P>>,
    ) where
        T: Clone + Eq + Hash + std::fmt::Debug,
    {
        let (step, request) = match &call.proc {
            Proc::Plain(request) => (Step::Request, request.clone()),
            Proc::GuaranteedDelete(path) => (Step::Request, delete(path)),
            Proc::ProtectedCreate { parent, .. } => {
                if fw.release().is_curator_5() && call.session.is_none() {
                    call.session = Some(fw.session_id());
                }
                if inner {
                    let find = Request::GetChildren {
                        path: parent.clone(),
                        watch: false,
                    };
                    (Step::Find, find)
                } else if std::mem::replace(&mut call.first, false) {
                    (Step::Create { again: false }, create(&call.proc))
                } else {
                    // findProtectedNodeInForeground: a `callWithRetry` of its own, which
                    // waits for a connection first; 2.10.0 gives it a loop of its own.
                    if !fw.release().is_curator_5() {
                        call.inner = Some(RetryLoop::default());
                    }
                    return self.block_then(fw, call, true, out);
                }
            }
        };
        call.step = step;
        self.send(fw, call, request, out);
    }

    fn send<T, P>(
        &mut self,
        fw: &mut Framework<T>,
        call: Call,
        request: Request,
        out: &mut Vec<Command<P>>,
    ) where
        T: Clone + Eq + Hash + std::fmt::Debug,
    {
        let id = fw.fresh_id();
        out.push(Command::Op { id, request });
        self.call = Some(Call {
            wait: Wait::Reply(id),
            ..call
        });
    }

    fn on_reply<T, P>(
        &mut self,
        fw: &mut Framework<T>,
        mut call: Call,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<P>>,
    ) -> Option<Result<Returned, ZkError>>
    where
        T: Clone + Eq + Hash + std::fmt::Debug,
    {
        let step = std::mem::replace(&mut call.step, Step::Request);
        match (step, result) {
            (Step::Find, Err(error)) if retryable(&error) => {
                self.take_exception(fw, call, error, true, out)
            }
            (Step::Find, Ok(Response::Children(children, _))) => {
                self.found(fw, call, children, out)
            }
            // `NoNodeException` is caught: nothing found.
            (Step::Find, Err(ZkError::NoNode)) => self.searched(fw, call, None, out),
            (_, Err(error)) if retryable(&error) => {
                self.take_exception(fw, call, error, false, out)
            }
            (Step::Create { again: false }, Err(ZkError::NoNode)) => {
                let Proc::ProtectedCreate { parent, .. } = &call.proc else {
                    unreachable!("only a create makes parents")
                };
                let dirs = ancestors(parent);
                call.step = Step::MkdirExists(dirs.clone());
                self.send(fw, call, exists(&dirs[0]), out);
                None
            }
            (Step::MkdirExists(dirs), Ok(Response::Exists(None))) => {
                let request = Request::Create {
                    path: dirs[0].clone(),
                    data: Vec::new(),
                    mode: CreateMode::Container,
                };
                call.step = Step::MkdirCreate(dirs);
                self.send(fw, call, request, out);
                None
            }
            (Step::MkdirExists(mut dirs), Ok(_))
            | (Step::MkdirCreate(mut dirs), Ok(_) | Err(ZkError::NodeExists)) => {
                dirs.remove(0);
                match dirs.first() {
                    Some(next) => {
                        let request = exists(next);
                        call.step = Step::MkdirExists(dirs);
                        self.send(fw, call, request, out);
                    }
                    None => {
                        call.step = Step::Create { again: true };
                        let request = create(&call.proc);
                        self.send(fw, call, request, out);
                    }
                }
                None
            }
            (_, result) => Some(self.finish(fw, &call, result, out)),
        }
    }

    /// The search's children: the node with our prefix, validated by 5.x.
    fn found<T, P>(
        &mut self,
        fw: &mut Framework<T>,
        mut call: Call,
        children: Vec<String>,
        out: &mut Vec<Command<P>>,
    ) -> Option<Result<Returned, ZkError>>
    where
        T: Clone + Eq + Hash + std::fmt::Debug,
    {
        let Proc::ProtectedCreate { parent, prefix, .. } = &call.proc else {
            unreachable!("only a protected create searches")
        };
        let mut node = (children.iter())
            .find(|c| c.starts_with(prefix.as_str()))
            .map(|c| join(parent, c));
        if fw.release().is_curator_5() && call.session != Some(fw.session_id()) {
            // ProtectedMode.validateFoundNode: the old session's node goes, in background.
            call.session = Some(fw.session_id());
            if let Some(old) = node.take() {
                fw.guaranteed_delete(&old, out);
            }
        }
        self.searched(fw, call, node, out)
    }

    /// The search returned `node`: its loop completes; the proc returns the node, or creates.
    fn searched<T, P>(
        &mut self,
        fw: &mut Framework<T>,
        mut call: Call,
        node: Option<String>,
        out: &mut Vec<Command<P>>,
    ) -> Option<Result<Returned, ZkError>>
    where
        T: Clone + Eq + Hash + std::fmt::Debug,
    {
        if fw.release().is_curator_5() {
            call.done = true;
        }
        call.inner = None;
        match node {
            Some(path) => Some(Ok(Returned::Value(Response::Created(Created {
                path,
                stat: Stat::default(),
            })))),
            None => {
                call.step = Step::Create { again: false };
                let request = create(&call.proc);
                self.send(fw, call, request, out);
                None
            }
        }
    }

    /// `RetryLoop.takeException` of the search's loop (`inner`) or the call's.
    fn take_exception<T, P>(
        &mut self,
        fw: &mut Framework<T>,
        mut call: Call,
        error: ZkError,
        inner: bool,
        out: &mut Vec<Command<P>>,
    ) -> Option<Result<Returned, ZkError>>
    where
        T: Clone + Eq + Hash + std::fmt::Debug,
    {
        let policy = RetryPolicy::STANDARD;
        let own = inner && call.inner.is_some();
        let count = if own {
            &mut call.inner.as_mut().expect("checked").retries
        } else {
            &mut call.outer.retries
        };
        match policy.sleep_before(*count) {
            Some(sleep_ms) => {
                *count += 1;
                let timer = arm(fw, sleep_ms, out);
                self.call = Some(Call {
                    wait: Wait::Sleep { timer, inner },
                    ..call
                });
                None
            }
            None if own => {
                // 2.10.0: the search throws; the create's loop takes the exception.
                call.inner = None;
                self.take_exception(fw, call, error, false, out)
            }
            None => Some(self.finish(fw, &call, Err(error), out)),
        }
    }

    /// The proc returned or threw for good.
    fn finish<T, P>(
        &mut self,
        fw: &mut Framework<T>,
        call: &Call,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<P>>,
    ) -> Result<Returned, ZkError>
    where
        T: Clone + Eq + Hash + std::fmt::Debug,
    {
        if let (Proc::GuaranteedDelete(path), Err(error)) = (&call.proc, &result) {
            if retryable(error) {
                // FailedDeleteManager: a guaranteed delete in the background.
                fw.guaranteed_delete(path, out);
            }
        }
        result.map(Returned::Value)
    }
}

fn arm<T, P>(fw: &mut Framework<T>, after_ms: u64, out: &mut Vec<Command<P>>) -> u64
where
    T: Clone + Eq + Hash + std::fmt::Debug,
{
    let timer = fw.fresh_id();
    out.push(Command::Timer {
        id: timer,
        after_ms,
    });
    timer
}

fn delete(path: &str) -> Request {
    Request::Delete {
        path: path.to_owned(),
        version: -1,
    }
}

fn exists(path: &str) -> Request {
    Request::Exists {
        path: path.to_owned(),
        watch: false,
    }
}

fn create(proc: &Proc) -> Request {
    let Proc::ProtectedCreate {
        parent,
        prefix,
        name,
        mode,
    } = proc
    else {
        unreachable!("only a create creates")
    };
    Request::Create {
        path: join(parent, &format!("{prefix}{name}")),
        data: Vec::new(),
        mode: *mode,
    }
}

impl Symmetric for Step {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Step::MkdirExists(dirs) | Step::MkdirCreate(dirs) => {
                crate::symmetry::hash_ordered(dirs.iter(), renaming, state)
            }
            Step::Create { again } => again.hash(state),
            Step::Request | Step::Find => {}
        }
    }
}

impl Symmetric for Proc {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Proc::Plain(request) => request.hash_renamed(renaming, state),
            Proc::GuaranteedDelete(path) => path.hash_renamed(renaming, state),
            Proc::ProtectedCreate {
                parent,
                prefix,
                name,
                mode,
            } => {
                (name, mode).hash(state);
                (parent, prefix).hash_renamed(renaming, state);
            }
        }
    }
}

impl Symmetric for Foreground {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        self.call.is_some().hash(state);
        if let Some(call) = &self.call {
            (call.outer, call.inner, call.done, call.first, &call.wait).hash(state);
            call.session.hash_renamed(renaming, state);
            (&call.proc, &call.step).hash_renamed(renaming, state);
        }
    }
}
