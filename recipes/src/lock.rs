//! A distributed lock: Curator's `InterProcessMutex`, as a state machine.
//!
//! # The algorithm
//!
//! 1. Create an ephemeral-sequential node `/<lock>/_c_<uuid>-lock-<seq>`. The `_c_<uuid>-`
//!    prefix is Curator's *protection*: if the create ends in `ConnectionLoss`, the create may
//!    have been applied, so the client lists the children and looks for its UUID before it
//!    creates again. Like Curator, which draws a new UUID for every protected create, each
//!    acquire attempt has its own id (the host's UUID and the attempt number), so a node left by
//!    an earlier attempt or an expired session is never taken for this attempt's. The parent is
//!    created as a container if missing.
//! 2. List the children and order the lock nodes by sequence number. The first holds the lock.
//! 3. Otherwise watch only the node just before this one (`getData` with a watch): when it goes,
//!    exactly one waiter wakes (no herd). If it is already gone (`NoNode`), list again.
//! 4. On any watch event, list again: the predecessor may have gone without the lock being free.
//! 5. Release is reentrant: only the last release deletes the node, and that delete is retried
//!    until it is known done ("guaranteed delete").
//!
//! An acquire may have a timeout; when it passes, the waiter deletes its node and gives up.
//! When it passes while the create's outcome is unknown (its reply was lost and the protected
//! node not yet found again), the acquire ends only once that is known: the node is found and
//! deleted, or known never made. Curator does the same in effect: its timeout bounds only the
//! wait after the create returned, its create retries on its own, and a protected create that
//! fails for good has its node found and deleted in the background
//! (`FindAndDeleteProtectedNodeInBackground`). Giving up at once instead left the node of a
//! live session behind, first in line, and no one held the lock again (issue 37, seed 1274 of
//! the harsh-random lock scenario; `scenarios/regressions/lock-harsh-random-seed1285.toml`).
//! `Disconnected` (Curator's SUSPENDED) while holding means the lock is lost: the session may
//! expire any moment and another client may then hold it. The token is the `czxid` of the lock
//! node: it increases with each new holder, so a fenced resource can refuse an older one.
//!
//! # Known-bad variants, kept as positive controls
//!
//! - [`LockVariant::Herd`]: every waiter watches the parent's children, so one release wakes all
//!   of them (the herd effect the seed documents warn against).
//! - [`LockVariant::Unprotected`]: a sequential create with no way to find its own node after a
//!   lost reply: the retry creates a second node, and the first, an orphan of a live session,
//!   blocks everyone behind it (the reason Curator added protection, CURATOR-45 and the
//!   "protected" create mode).
//! - [`LockVariant::UnguaranteedDelete`]: our control for fault-budget coverage
//!   (`zkharness check lock --budgets all`), the smallest change that the default budget cannot
//!   show: a release whose delete ends in `ConnectionLoss` takes the node for deleted. Right when
//!   the reply was lost after the delete was applied (the default budget's `drop-reply`), wrong
//!   when the request was lost before it (`drop-request`): the node of a live session stays
//!   first in line and no one holds the lock again (why Curator guarantees the delete).
//!
//! Not modelled: read/write locks, revocation.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::curator::Release;
use crate::error::ZkError;
use crate::event::SessionEvent;
use crate::machine::{Command, Ids, Input, Machine, OpId, TimerId, RETRY_AFTER_MS};
use crate::path::{ancestors, join};
use crate::request::{Request, Response};
use crate::symmetry::{hash_ordered, Renaming, Symmetric};
use crate::types::{sequence_suffix, CreateMode};

/// Which lock: the correct one, or a known-bad variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LockVariant {
    /// Curator's `InterProcessMutex`.
    Correct,
    /// Every waiter watches the parent's children: the herd effect.
    Herd,
    /// No protection: a create that lost its reply leaves an orphan node behind.
    Unprotected,
    /// A delete that ends in `ConnectionLoss` is taken as done.
    UnguaranteedDelete,
    /// A Curator release's `InterProcessMutex`, ported from its tag
    /// ([`crate::curator::interprocess_mutex`]).
    #[serde(untagged)]
    Curator(Release),
}

/// What the application asks of a lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LockRequest {
    /// Acquire (again, if held: the lock is reentrant), giving up after `timeout_ms`.
    Acquire {
        /// How long to wait at most; `None` waits until acquired or failed.
        timeout_ms: Option<u64>,
    },
    /// Release once.
    Release,
}

/// What a lock tells its host.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LockReport {
    /// The lock is held; `token` is the lock node's `czxid`.
    Acquired {
        /// The fencing token.
        token: i64,
        /// How many acquires are now held.
        holds: u32,
    },
    /// The acquire timed out; the waiter's node was deleted.
    TimedOut,
    /// The acquire failed.
    Failed(ZkError),
    /// The lock was lost while held (connection suspended or session expired).
    Lost,
    /// A release was done; `holds` remain.
    Released {
        /// Acquires still held.
        holds: u32,
    },
    /// A release was asked while the lock was not held.
    NotHeld,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    /// Creating the missing ancestors, shallowest first; then the lock node.
    CreateParents(Vec<String>),
    /// Creating the lock node.
    Create,
    /// Looking for our node after a create whose reply was lost.
    FindOwn,
    /// Listing the lock nodes.
    List,
    /// Setting the watch on the predecessor.
    WatchPredecessor,
    /// Reading our node's Stat for its token (after finding it again).
    Token,
    /// Deleting our node (release, timeout, cleanup).
    Delete,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    Acquiring,
    Held,
    /// Deleting the node after a release, a timeout or a loss; `report` says what to tell.
    Deleting {
        after: AfterDelete,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum AfterDelete {
    Released,
    TimedOut,
    Nothing,
    /// An acquire came while a lost lock's node was being cleaned up.
    Acquire(Option<u64>),
}

/// The project's own lock (every variant but [`LockVariant::Curator`]) as a state machine.
///
/// Its hash (plain and renamed) leaves out what is fixed when it is made: its directory and its
/// uuid. In a model checker's state a client's machine always holds its own (a renaming of the
/// clients moves them with the client), so they tell no two states apart, and hashing them on every
/// step would only cost time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SafeLock {
    variant: LockVariant,
    dir: Arc<str>,
    uuid: Arc<str>,
    /// Acquire attempts so far: part of the protection id.
    attempts: u32,
    prefix: Arc<str>,
    ids: Ids,
    phase: Phase,
    step: Option<(OpId, Step)>,
    retry: Option<(TimerId, Step)>,
    /// A watch is set and nothing else is pending: the next watch event means "look again".
    waiting: bool,
    timeout: Option<TimerId>,
    /// The timeout passed while the create's outcome was unknown: end the acquire once our
    /// node is known (delete it) or known never made.
    timed_out: bool,
    holds: u32,
    node: Option<String>,
    token: Option<i64>,
}

impl SafeLock {
    /// A lock on the directory `dir`, with the host's `uuid` for protection.
    pub fn new(variant: LockVariant, dir: &str, uuid: &str) -> SafeLock {
        assert!(
            !matches!(variant, LockVariant::Curator(_)),
            "a Curator release's lock is a CuratorMutex"
        );
        SafeLock {
            variant,
            dir: dir.into(),
            uuid: uuid.into(),
            attempts: 0,
            prefix: "".into(),
            ids: Ids::default(),
            phase: Phase::Idle,
            step: None,
            retry: None,
            waiting: false,
            timeout: None,
            timed_out: false,
            holds: 0,
            node: None,
            token: None,
        }
    }

    /// The variant.
    pub fn variant(&self) -> LockVariant {
        self.variant
    }

    /// True while the lock is held.
    pub fn is_held(&self) -> bool {
        self.phase == Phase::Held
    }

    /// This client's node, holding or waiting, once it knows it.
    pub fn own_node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// The node the lock is held by, while this client believes it holds it: its own node,
    /// first in line, which its current session must own.
    pub fn claimed_node(&self) -> Option<&str> {
        self.node.as_deref().filter(|_| self.is_held())
    }

    fn issue(&mut self, step: Step, out: &mut Vec<Command<LockReport>>) {
        if self.timed_out && self.phase == Phase::Acquiring {
            // The timeout passed while the create's outcome was unknown; now it is known: no
            // node of ours (about to create one) or our node (about to list).
            if matches!(step, Step::Create) || matches!(step, Step::List) && self.node.is_some() {
                self.step = None;
                self.waiting = false;
                return self.start_delete(AfterDelete::TimedOut, out);
            }
        }
        let id = self.ids.fresh();
        let request = match &step {
            Step::CreateParents(paths) => Request::Create {
                path: paths[0].clone(),
                data: Vec::new(),
                mode: CreateMode::Container,
            },
            Step::Create => Request::Create {
                path: join(&self.dir, &self.prefix),
                data: Vec::new(),
                mode: CreateMode::EphemeralSequential,
            },
            Step::FindOwn => Request::GetChildren {
                path: self.dir.to_string(),
                watch: false,
            },
            Step::List => Request::GetChildren {
                path: self.dir.to_string(),
                watch: self.variant == LockVariant::Herd,
            },
            Step::WatchPredecessor | Step::Token => unreachable!("issued by on_children"),
            Step::Delete => Request::Delete {
                path: self.node.clone().expect("deleting needs a node"),
                version: -1,
            },
        };
        self.step = Some((id, step));
        out.push(Command::Op { id, request });
    }

    fn retry_later(&mut self, step: Step, out: &mut Vec<Command<LockReport>>) {
        let id = self.ids.fresh();
        self.step = None;
        self.retry = Some((id, step));
        out.push(Command::Timer {
            id,
            after_ms: RETRY_AFTER_MS,
        });
    }

    fn finish_acquire(&mut self, report: LockReport, out: &mut Vec<Command<LockReport>>) {
        self.waiting = false;
        self.timeout = None;
        self.step = None;
        self.retry = None;
        out.push(Command::Report(report));
    }

    fn start_delete(&mut self, after: AfterDelete, out: &mut Vec<Command<LockReport>>) {
        self.timeout = None;
        self.retry = None;
        match self.node {
            Some(_) => {
                self.phase = Phase::Deleting { after };
                self.issue(Step::Delete, out);
            }
            None => self.deleted(after, out),
        }
    }

    fn deleted(&mut self, after: AfterDelete, out: &mut Vec<Command<LockReport>>) {
        self.timed_out = false;
        self.node = None;
        self.token = None;
        self.step = None;
        self.phase = Phase::Idle;
        match after {
            AfterDelete::Released => out.push(Command::Report(LockReport::Released { holds: 0 })),
            AfterDelete::TimedOut => out.push(Command::Report(LockReport::TimedOut)),
            AfterDelete::Nothing => {}
            AfterDelete::Acquire(timeout_ms) => {
                self.on_request(LockRequest::Acquire { timeout_ms }, out)
            }
        }
    }

    fn on_request(&mut self, request: LockRequest, out: &mut Vec<Command<LockReport>>) {
        match (request, self.phase) {
            (LockRequest::Acquire { .. }, Phase::Held) => {
                self.holds += 1;
                let token = self.token.expect("a held lock has a token");
                out.push(Command::Report(LockReport::Acquired {
                    token,
                    holds: self.holds,
                }));
            }
            (LockRequest::Acquire { timeout_ms }, Phase::Idle) => {
                self.phase = Phase::Acquiring;
                self.attempts += 1;
                self.prefix = match self.variant {
                    LockVariant::Unprotected => "lock-".into(),
                    LockVariant::Correct
                    | LockVariant::Herd
                    | LockVariant::UnguaranteedDelete
                    | LockVariant::Curator(_) => {
                        format!("_c_{}-{}-lock-", self.uuid, self.attempts).into()
                    }
                };
                if let Some(after_ms) = timeout_ms {
                    let id = self.ids.fresh();
                    self.timeout = Some(id);
                    out.push(Command::Timer { id, after_ms });
                }
                self.issue(Step::Create, out);
            }
            (
                LockRequest::Acquire { timeout_ms },
                Phase::Deleting {
                    after: AfterDelete::Nothing,
                },
            ) => {
                self.phase = Phase::Deleting {
                    after: AfterDelete::Acquire(timeout_ms),
                };
            }
            (LockRequest::Acquire { .. }, _) => {
                out.push(Command::Report(LockReport::Failed(ZkError::BadArguments)))
            }
            (LockRequest::Release, Phase::Held) if self.holds > 1 => {
                self.holds -= 1;
                out.push(Command::Report(LockReport::Released { holds: self.holds }));
            }
            (LockRequest::Release, Phase::Held) => {
                self.holds = 0;
                self.start_delete(AfterDelete::Released, out);
            }
            (LockRequest::Release, _) => out.push(Command::Report(LockReport::NotHeld)),
        }
    }

    fn on_reply(
        &mut self,
        step: Step,
        result: Result<Response, ZkError>,
        out: &mut Vec<Command<LockReport>>,
    ) {
        if let Err(ZkError::SessionExpired) = result {
            return self.on_expired(out);
        }
        match step {
            Step::CreateParents(mut paths) => match result {
                Ok(_) | Err(ZkError::NodeExists) => {
                    paths.remove(0);
                    if paths.is_empty() {
                        self.issue(Step::Create, out);
                    } else {
                        self.issue(Step::CreateParents(paths), out);
                    }
                }
                Err(ZkError::ConnectionLoss) => self.retry_later(Step::CreateParents(paths), out),
                Err(error) => self.fail(error, out),
            },
            Step::Create => match result {
                Ok(Response::Created(created)) => {
                    self.node = Some(created.path);
                    self.token = Some(created.stat.czxid);
                    self.issue(Step::List, out);
                }
                Err(ZkError::NoNode) => self.issue(Step::CreateParents(ancestors(&self.dir)), out),
                Err(ZkError::ConnectionLoss) => match self.variant {
                    LockVariant::Unprotected => self.retry_later(Step::Create, out),
                    LockVariant::Correct
                    | LockVariant::Herd
                    | LockVariant::UnguaranteedDelete
                    | LockVariant::Curator(_) => self.retry_later(Step::FindOwn, out),
                },
                Err(error) => self.fail(error, out),
                Ok(other) => unreachable!("a create answered {other:?}"),
            },
            Step::FindOwn => match result {
                Ok(Response::Children(children, _)) => {
                    match children.iter().find(|c| c.starts_with(&*self.prefix)) {
                        Some(own) => {
                            self.node = Some(join(&self.dir, own));
                            self.token = None;
                            self.issue(Step::List, out);
                        }
                        None => self.issue(Step::Create, out),
                    }
                }
                Err(ZkError::NoNode) => self.issue(Step::CreateParents(ancestors(&self.dir)), out),
                Err(ZkError::ConnectionLoss) => self.retry_later(Step::FindOwn, out),
                Err(error) => self.fail(error, out),
                Ok(other) => unreachable!("getChildren answered {other:?}"),
            },
            Step::List => match result {
                Ok(Response::Children(children, _)) => self.on_children(children, out),
                Err(ZkError::NoNode) => self.issue(Step::CreateParents(ancestors(&self.dir)), out),
                Err(ZkError::ConnectionLoss) => self.retry_later(Step::List, out),
                Err(error) => self.fail(error, out),
                Ok(other) => unreachable!("getChildren answered {other:?}"),
            },
            Step::Token => match result {
                Ok(Response::Exists(Some(stat))) => {
                    self.token = Some(stat.czxid);
                    self.phase = Phase::Held;
                    self.holds = 1;
                    self.finish_acquire(
                        LockReport::Acquired {
                            token: stat.czxid,
                            holds: 1,
                        },
                        out,
                    );
                }
                Ok(_) => {
                    self.node = None;
                    self.issue(Step::Create, out);
                }
                Err(ZkError::ConnectionLoss) => self.retry_later(Step::List, out),
                Err(error) => self.fail(error, out),
            },
            Step::WatchPredecessor => match result {
                Ok(_) => self.waiting = true,
                Err(ZkError::NoNode) => self.issue(Step::List, out),
                Err(ZkError::ConnectionLoss) => self.retry_later(Step::List, out),
                Err(error) => self.fail(error, out),
            },
            Step::Delete => match result {
                Ok(_) | Err(ZkError::NoNode) => {
                    let Phase::Deleting { after } = self.phase else {
                        unreachable!("deleting outside Deleting")
                    };
                    self.deleted(after, out);
                }
                Err(ZkError::ConnectionLoss) if self.variant != LockVariant::UnguaranteedDelete => {
                    self.retry_later(Step::Delete, out)
                }
                Err(_) => {
                    let Phase::Deleting { after } = self.phase else {
                        unreachable!("deleting outside Deleting")
                    };
                    self.deleted(after, out);
                }
            },
        }
    }

    fn on_children(&mut self, children: Vec<String>, out: &mut Vec<Command<LockReport>>) {
        let mut locks: Vec<&String> = children
            .iter()
            .filter(|c| c.contains("lock-") && sequence_suffix(c).is_some())
            .collect();
        locks.sort_by_key(|c| sequence_suffix(c));
        let own = self
            .node
            .as_deref()
            .map(|n| n.rsplit('/').next().expect("a path has a name"));
        let Some(position) = locks.iter().position(|c| Some(c.as_str()) == own) else {
            // Our node is gone (its session ended, or the parent was reaped): start over.
            self.node = None;
            self.token = None;
            return self.issue(Step::Create, out);
        };
        if position == 0 {
            match self.token {
                Some(token) => {
                    self.phase = Phase::Held;
                    self.holds = 1;
                    self.finish_acquire(LockReport::Acquired { token, holds: 1 }, out);
                }
                // Found again after a lost reply: the token comes from the node's Stat.
                None => {
                    let id = self.ids.fresh();
                    let path = self.node.clone().expect("checked above");
                    self.step = Some((id, Step::Token));
                    out.push(Command::Op {
                        id,
                        request: Request::Exists { path, watch: false },
                    });
                }
            }
            return;
        }
        match self.variant {
            // The child watch was set by the listing itself.
            LockVariant::Herd => self.waiting = true,
            LockVariant::Correct
            | LockVariant::Unprotected
            | LockVariant::UnguaranteedDelete
            | LockVariant::Curator(_) => {
                let predecessor = join(&self.dir, locks[position - 1]);
                let id = self.ids.fresh();
                self.step = Some((id, Step::WatchPredecessor));
                out.push(Command::Op {
                    id,
                    request: Request::GetData {
                        path: predecessor,
                        watch: true,
                    },
                });
            }
        }
    }

    fn fail(&mut self, error: ZkError, out: &mut Vec<Command<LockReport>>) {
        match self.phase {
            Phase::Acquiring => {
                self.phase = Phase::Idle;
                self.finish_acquire(LockReport::Failed(error), out);
                if self.node.is_some() {
                    self.start_delete(AfterDelete::Nothing, out);
                }
            }
            Phase::Deleting { after } => self.deleted(after, out),
            Phase::Idle | Phase::Held => self.step = None,
        }
    }

    fn on_expired(&mut self, out: &mut Vec<Command<LockReport>>) {
        let report = match self.phase {
            Phase::Held => Some(LockReport::Lost),
            Phase::Acquiring => Some(LockReport::Failed(ZkError::SessionExpired)),
            Phase::Deleting {
                after: AfterDelete::Released,
            } => Some(LockReport::Released { holds: 0 }),
            Phase::Deleting {
                after: AfterDelete::TimedOut,
            } => Some(LockReport::TimedOut),
            Phase::Deleting {
                after: AfterDelete::Nothing | AfterDelete::Acquire(_),
            }
            | Phase::Idle => None,
        };
        let acquire = match self.phase {
            Phase::Deleting {
                after: AfterDelete::Acquire(timeout_ms),
            } => Some(timeout_ms),
            _ => None,
        };
        // The session's ephemeral node is gone with it.
        self.phase = Phase::Idle;
        self.step = None;
        self.retry = None;
        self.timeout = None;
        self.timed_out = false;
        self.waiting = false;
        self.holds = 0;
        self.node = None;
        self.token = None;
        if let Some(report) = report {
            out.push(Command::Report(report));
        }
        if let Some(timeout_ms) = acquire {
            self.on_request(LockRequest::Acquire { timeout_ms }, out);
        }
    }
}

impl Machine for SafeLock {
    type Request = LockRequest;
    type Report = LockReport;

    /// Its node, holding or waiting.
    fn known_ephemerals(&self) -> Option<Vec<String>> {
        Some(self.own_node().map(str::to_owned).into_iter().collect())
    }

    fn handle(&mut self, input: Input<LockRequest>, out: &mut Vec<Command<LockReport>>) {
        self.ids.note(&input);
        match input {
            Input::Request(request) => self.on_request(request, out),
            Input::Reply { id, result } => {
                if let Some((expected, _)) = &self.step {
                    if *expected == id {
                        let (_, step) = self.step.take().expect("checked above");
                        self.on_reply(step, result, out);
                    }
                }
            }
            Input::Watch(_) => {
                // Curator looks again on any event of its watch: the predecessor's deletion,
                // or (herd) any change among the children.
                if self.phase == Phase::Acquiring && self.waiting {
                    self.waiting = false;
                    self.issue(Step::List, out);
                }
            }
            Input::Session(SessionEvent::Disconnected) => {
                if self.phase == Phase::Held {
                    // SUSPENDED: the session may expire any moment; treat the lock as lost and
                    // delete the node once the connection is back (if the session survives).
                    self.holds = 0;
                    out.push(Command::Report(LockReport::Lost));
                    self.phase = Phase::Deleting {
                        after: AfterDelete::Nothing,
                    };
                    self.step = None;
                    self.retry_later(Step::Delete, out);
                }
            }
            Input::Session(SessionEvent::Expired | SessionEvent::Closed) => self.on_expired(out),
            Input::Session(SessionEvent::Connected { .. } | SessionEvent::Reconnected { .. }) => {}
            Input::Timer(id) => {
                if self.timeout == Some(id) && self.phase == Phase::Acquiring {
                    self.timeout = None;
                    if self.node.is_none() {
                        // A create may be in flight, or have been applied with its reply lost:
                        // go on until that is known (see the module docs).
                        self.timed_out = true;
                    } else {
                        self.step = None;
                        self.waiting = false;
                        self.start_delete(AfterDelete::TimedOut, out);
                    }
                } else if let Some((expected, _)) = &self.retry {
                    if *expected == id {
                        let (_, step) = self.retry.take().expect("checked above");
                        self.issue(step, out);
                    }
                }
            }
        }
    }
}

/// Why an acquire or a release did not succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// The acquire's timeout passed first.
    #[error("timed out waiting for the lock")]
    TimedOut,
    /// ZooKeeper failed the acquire.
    #[error("acquire failed: {0}")]
    Failed(ZkError),
    /// A release of a lock that is not held.
    #[error("the lock is not held")]
    NotHeld,
    /// The driver stopped (its client closed).
    #[error("the lock's driver stopped")]
    Stopped,
}

/// The lock as an async API over a running [`LockMachine`].
///
/// # Example
///
/// ```no_run
/// # async fn example(client: std::sync::Arc<impl zkh_recipes::ZkClient + 'static>,
/// #                  clock: std::sync::Arc<dyn zkh_recipes::driver::Clock>) {
/// use zkh_recipes::lock::{Lock, LockVariant};
/// let (lock, driver) = Lock::start(client, clock, LockVariant::Correct, "/locks/stock", "8f0c5e1a");
/// # let _ = driver;
/// let token = lock.acquire(Some(5_000)).await.expect("the lock within 5 s");
/// // ... the critical section, presenting `token` to the resource ...
/// lock.release().await.expect("release");
/// # let _ = token;
/// # }
/// ```
pub struct Lock {
    handle: crate::driver::Handle<LockMachine>,
}

impl Lock {
    /// Starts a lock on `dir` over `client`; spawn the returned driver future.
    pub fn start<C: crate::ZkClient + 'static>(
        client: std::sync::Arc<C>,
        clock: std::sync::Arc<dyn crate::driver::Clock>,
        variant: LockVariant,
        dir: &str,
        uuid: &str,
    ) -> (Lock, impl std::future::Future<Output = LockMachine> + Send) {
        let (handle, driver) =
            crate::driver::start(client, clock, LockMachine::new(variant, dir, uuid));
        (Lock { handle }, driver)
    }

    /// Acquires the lock (again, if held), waiting at most `timeout_ms`; returns the token.
    /// A `Lost` report received meanwhile (from an earlier hold) is passed over.
    pub async fn acquire(&self, timeout_ms: Option<u64>) -> Result<i64, LockError> {
        let accept = |report: &LockReport| match report {
            LockReport::Acquired { token, .. } => Some(Ok(*token)),
            LockReport::TimedOut => Some(Err(LockError::TimedOut)),
            LockReport::Failed(error) => Some(Err(LockError::Failed(*error))),
            _ => None,
        };
        self.handle
            .ask(LockRequest::Acquire { timeout_ms }, accept, |_| {})
            .await
            .unwrap_or(Err(LockError::Stopped))
    }

    /// Releases once; the last release deletes the lock node.
    pub async fn release(&self) -> Result<(), LockError> {
        let accept = |report: &LockReport| match report {
            LockReport::Released { .. } => Some(Ok(())),
            LockReport::NotHeld => Some(Err(LockError::NotHeld)),
            _ => None,
        };
        self.handle
            .ask(LockRequest::Release, accept, |_| {})
            .await
            .unwrap_or(Err(LockError::Stopped))
    }

    /// A report that came without being asked for (e.g. [`LockReport::Lost`]), if any.
    pub fn try_report(&self) -> Option<LockReport> {
        self.handle.try_report()
    }

    /// What the lock's machine knows of its own node ([`crate::driver::Handle::knowledge`]).
    pub fn knowledge(&self) -> crate::driver::Knowledge {
        self.handle.knowledge()
    }
}

impl Symmetric for Step {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        if let Step::CreateParents(paths) = self {
            hash_ordered(paths.iter(), renaming, state);
        }
    }
}

/// Hashes `timed_out` only when set: a timeout the model checker never arms then leaves every
/// state's hash, and so the symmetry reduction's choice of representatives and its state
/// counts, as they were before the flag existed.
fn hash_if_set<H: Hasher>(timed_out: bool, state: &mut H) {
    if timed_out {
        true.hash(state);
    }
}

/// Everything but what is fixed when the machine is made (see [`SafeLock`]).
impl Hash for SafeLock {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let SafeLock {
            variant,
            dir: _,
            uuid: _,
            attempts,
            prefix,
            ids,
            phase,
            step,
            retry,
            waiting,
            timeout,
            timed_out,
            holds,
            node,
            token,
        } = self;
        (
            variant, attempts, prefix, ids, phase, step, retry, waiting, timeout,
        )
            .hash(state);
        hash_if_set(*timed_out, state);
        (holds, node, token).hash(state);
    }
}

/// The lock's identities: the names built from its uuid (the uuid itself is fixed: see
/// [`SafeLock`]).
impl Symmetric for SafeLock {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let SafeLock {
            variant,
            dir: _,
            uuid: _,
            attempts,
            prefix,
            ids,
            phase,
            step,
            retry,
            waiting,
            timeout,
            timed_out,
            holds,
            node,
            token,
        } = self;
        (variant, attempts, ids, phase, waiting, timeout).hash(state);
        hash_if_set(*timed_out, state);
        (holds, token).hash(state);
        prefix.hash_renamed(renaming, state);
        (step, retry, node).hash_renamed(renaming, state);
    }
}

#[path = "lock_machine.rs"]
mod machine;
pub use machine::LockMachine;

#[cfg(test)]
#[path = "lock_timeout_tests.rs"]
mod timeout_tests;
