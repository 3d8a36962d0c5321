//! Curator's `InterProcessMutex` as each release ships it, ported from
//! `curator-recipes/src/main/java/org/apache/curator/framework/recipes/locks/`
//! (`InterProcessMutex.java`, `LockInternals.java`, `StandardLockInternalsDriver.java`) at the
//! tags `apache-curator-2.10.0`, `-5.3.0`, `-5.4.0`, `-5.7.1` and `-5.9.0`.
//!
//! # The algorithm (every release)
//!
//! Everything runs on the application's thread, in *foreground* calls
//! ([`super::foreground`]), each retried by Curator's retry loop. `acquire(time)` re-enters
//! at once if this thread holds the lock (a count); otherwise `attemptLock`: a protected
//! ephemeral-sequential `lockPath/_c_<uuid>-lock-` with its parents as containers
//! (`createsTheLock`), then `internalLockLoop`: list the children sorted by what follows
//! `lock-`; ours missing → `NoNodeException`; first → the lock is ours; else a `getData` with
//! the lock's one watcher on the node just before ours and, inside the same monitor, `wait`
//! (for the time left, if the acquire has a timeout) until the watcher's `notifyAll`, then list
//! again. Any exception in that loop deletes our node (guaranteed) and is thrown on; a
//! `NoNodeException` reaching `attemptLock` costs a retry-policy sleep and the whole attempt
//! again, with a new node. When the time is up after a `getData`, our node is deleted and the
//! acquire returns false. `release()` counts down; the last one deletes the node (guaranteed).
//!
//! The watcher runs on any event ZooKeeper delivers to it: the predecessor's change, and every
//! connection event (`Disconnected`, `SyncConnected`, `Expired`), which ZooKeeper hands to
//! every watcher registered. A notify while the thread is outside the monitor (listing, or
//! deleting) wakes no one.
//!
//! # Where the releases differ, line by line
//!
//! | upstream at the tag | 2.10.0 | 5.3.0, 5.4.0 | 5.7.1, 5.9.0 | our branch | test |
//! | --- | --- | --- | --- | --- | --- |
//! | `InterProcessMutex.internalLock`, re-entry (2.10.0 l. 215–241; 5.4.0 l. 220–246; 5.7.1 l. 197–216) | count up | same | same | `CuratorMutex::on_request` | `a_held_lock_is_entered_again_and_released_by_count` |
//! | `LockInternals.attemptLock`, `NoNodeException` (2.10.0 l. 201–241; 5.4.0 l. 209–249; 5.7.1 l. 171–207) | sleep as the policy says, then create again; thrown once it gives up | same | same | `CuratorMutex::retry_after_no_node` | `a_vanished_node_is_made_again_after_a_sleep` |
//! | `getSortedChildren`, `NONODE` of the lock's path (2.10.0 l. 149–168; 5.4.0 l. 150–174) | thrown (reaches `attemptLock`'s retry) | an empty list, so `validateOurIndex` throws `NoNodeException` | as 5.4.0 | `CuratorMutex::on_children` | `a_missing_lock_path_is_a_vanished_node_in_every_release` |
//! | `internalLockLoop`, first in line (2.10.0 l. 263–290; 5.4.0 l. 282–291) | ours | same | same | `CuratorMutex::on_children` | `first_in_line_holds_and_reads_its_token` |
//! | `internalLockLoop`, behind: `getData` with the watcher, then `wait` (2.10.0 l. 291–318; 5.4.0 l. 292–323; 5.7.1 l. 237–259) | watch the predecessor; its `NONODE` lists again | same | same | `CuratorMutex::on_predecessor` | `behind_watches_the_predecessor_and_lists_when_it_goes` |
//! | the time is up after the `getData` (2.10.0 l. 296–301; 5.4.0 l. 302–310; 5.7.1 l. 245–250, 267–269) | delete our node, return false | same | same | `CuratorMutex::on_predecessor` | `a_timed_acquire_gives_up_only_after_a_watch` |
//! | an exception in the loop (2.10.0 l. 320–332; 5.4.0 l. 327–339; 5.7.1 l. 262–279) | delete our node; the delete's exception, if any, is thrown instead | same | the delete's exception is suppressed: the loop's own is thrown (CURATOR-41) | `CuratorMutex::on_deleted` | `a_failed_cleanup_ends_the_acquire_until_5_7_retries_it` |
//! | `releaseLock` (2.10.0 l. 120–124; 5.4.0 l. 120–125) | delete (guaranteed) | the lock's watchers removed first, then delete | same | `CuratorMutex::release_lock` | `a_stale_watcher_wakes_a_later_wait_only_in_2` |
//! | the watcher (2.10.0 l. 64–71, 347–350; 5.4.0 l. 64–71) | `notifyAll` | `postSafeNotify` (`notifyAll` on another thread) | same | `CuratorMutex::notify` | `a_connection_event_wakes_a_waiter` |
//!
//! The foreground calls differ too (when they wait for a connection, and 5.x's shared retry
//! loop): see [`super::foreground`]'s table.
//!
//! # What the application sees
//!
//! `InterProcessMutex` hands out no fencing token and tells no one when the lock may be lost.
//! The application here is the catalogue's: once `acquire` returns true it reads the czxid of
//! its lock node (`exists`, a foreground call: the one request here `InterProcessMutex` does
//! not make), and acts with it as its token ([`LockReport::Acquired`]); if that node is gone
//! or the read fails, it releases and reports [`LockReport::Failed`]. It adds no
//! connection-state listener, as the catalogue's application does not: a lock held across an
//! expiry is still held for it, and only the token's fencing protects the resource. A
//! `release()` that throws is reported as released (the mutex's `finally` forgets the lock).
//!
//! # Not modelled
//!
//! Revocation, lock node data, `maxLeases` other than 1 (the semaphore), several threads of one
//! process sharing a mutex, the wake-up order of a notify that races a failed `getData` (it is
//! lost here).

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::foreground::{Foreground, Proc, Returned};
use super::framework::Framework;
use super::{Release, RetryPolicy};
use crate::error::ZkError;
use crate::event::SessionEvent;
use crate::lock::{LockReport, LockRequest};
use crate::machine::{Command, Input};
use crate::path::{join, name_of};
use crate::request::{Request, Response};
use crate::symmetry::{Renaming, Symmetric};
use crate::types::CreateMode;

/// `InterProcessMutex.LOCK_NAME`.
const LOCK_NAME: &str = "lock-";

/// The framework's callbacks: the mutex starts no background operation with one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoCallback {}

crate::symmetric_as_hash!(NoCallback);

/// What the application thread is doing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Thread {
    Idle,
    /// `createsTheLock`.
    Create,
    /// `getSortedChildren`; `null_path`: 5.x's create returned `null` (see [`super::foreground`]).
    Children {
        null_path: bool,
    },
    /// The predecessor's `getData` with the watcher, inside the monitor.
    Predecessor(String),
    /// `wait()` inside the monitor.
    Waiting,
    /// `deleteOurPath` in the loop's cleanup; then `after`.
    Cleanup(After),
    /// `attemptLock`'s retry-policy sleep after a `NoNodeException`.
    Backoff(u64),
    /// The application's read of its node's czxid.
    Token,
    /// `releaseLock`'s delete; then report `failed` (the application's release after a failed
    /// token read) or `Released`.
    Releasing {
        failed: Option<ZkError>,
    },
}

/// What the loop's cleanup delete leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum After {
    /// The time was up: the acquire returns false.
    TimedOut,
    /// The loop threw this.
    Threw(ZkError),
}

/// `attemptLock`'s locals while an acquire runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Attempt {
    /// `retryCount` of its `NoNodeException` retries.
    retries: u32,
    /// The deadline's timer, if the acquire has a timeout.
    deadline: Option<u64>,
    /// The deadline has passed.
    passed: bool,
}

/// `InterProcessMutex` of one release (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CuratorMutex {
    framework: Framework<NoCallback>,
    foreground: Foreground,
    dir: Arc<str>,
    uuid: Arc<str>,
    /// Protected creates made: each `create()` builder draws a new protection id.
    creates: u32,
    thread: Thread,
    attempt: Option<Attempt>,
    /// `ourPath` while acquiring, `lockData.lockPath` while held or releasing.
    our_path: Option<String>,
    holds: u32,
    token: Option<i64>,
    /// The paths the lock's watcher is registered on.
    watchers: BTreeSet<String>,
    /// A notify came while the thread was in the monitor, before it waits.
    notified: bool,
}

impl CuratorMutex {
    /// `new InterProcessMutex(client, dir)` of `release`, with the host's `uuid` for protection.
    pub fn new(release: Release, dir: &str, uuid: &str) -> CuratorMutex {
        CuratorMutex {
            framework: Framework::new(release),
            foreground: Foreground::default(),
            dir: dir.into(),
            uuid: uuid.into(),
            creates: 0,
            thread: Thread::Idle,
            attempt: None,
            our_path: None,
            holds: 0,
            token: None,
            watchers: BTreeSet::new(),
            notified: false,
        }
    }

    /// The release it ports.
    pub fn release(&self) -> Release {
        self.framework.release()
    }

    /// True while the application holds the lock with a token.
    pub fn is_held(&self) -> bool {
        self.holds > 0 && self.token.is_some()
    }

    /// Its node, acquiring, holding or releasing.
    pub fn own_node(&self) -> Option<&str> {
        self.our_path.as_deref()
    }

    /// The node the lock is held by, while the application holds it.
    pub fn claimed_node(&self) -> Option<&str> {
        self.our_path.as_deref().filter(|_| self.is_held())
    }

    /// Its nodes: its own, and those its background deletes are still removing.
    pub fn known_nodes(&self) -> Vec<String> {
        let mut nodes: Vec<String> = self.our_path.iter().cloned().collect();
        nodes.extend(self.framework.deleting().map(str::to_owned));
        nodes
    }

    /// Whether nothing is pending: no call in flight or asleep, nothing in the framework.
    pub fn is_settled(&self) -> bool {
        self.framework.is_settled()
            && !self.foreground.is_busy()
            && !matches!(self.thread, Thread::Backoff(_))
    }

    fn call(&mut self, proc: Proc, thread: Thread, out: &mut Vec<Command<LockReport>>) {
        self.thread = thread;
        self.foreground.start(&mut self.framework, proc, out);
    }

    fn on_request(&mut self, request: LockRequest, out: &mut Vec<Command<LockReport>>) {
        match request {
            LockRequest::Acquire { .. } if self.is_held() => {
                self.holds += 1;
                let token = self.token.expect("a held lock has a token");
                out.push(Command::Report(LockReport::Acquired {
                    token,
                    holds: self.holds,
                }));
            }
            LockRequest::Acquire { .. } if self.thread != Thread::Idle => {
                out.push(Command::Report(LockReport::Failed(ZkError::BadArguments)))
            }
            LockRequest::Acquire { timeout_ms } => {
                let deadline = timeout_ms.map(|after_ms| {
                    let id = self.framework.fresh_id();
                    out.push(Command::Timer { id, after_ms });
                    id
                });
                self.attempt = Some(Attempt {
                    retries: 0,
                    deadline,
                    passed: false,
                });
                self.creates_the_lock(out);
            }
            LockRequest::Release if !self.is_held() => {
                out.push(Command::Report(LockReport::NotHeld))
            }
            LockRequest::Release if self.holds > 1 => {
                self.holds -= 1;
                out.push(Command::Report(LockReport::Released { holds: self.holds }));
            }
            LockRequest::Release => self.release_lock(None, out),
        }
    }

    /// `StandardLockInternalsDriver.createsTheLock`.
    fn creates_the_lock(&mut self, out: &mut Vec<Command<LockReport>>) {
        self.creates += 1;
        let proc = Proc::ProtectedCreate {
            parent: self.dir.to_string(),
            prefix: format!("_c_{}-{}-", self.uuid, self.creates),
            name: LOCK_NAME.into(),
            mode: CreateMode::EphemeralSequential,
        };
        self.call(proc, Thread::Create, out);
    }

    /// `getSortedChildren()`.
    fn list(&mut self, null_path: bool, out: &mut Vec<Command<LockReport>>) {
        let request = Request::GetChildren {
            path: self.dir.to_string(),
            watch: false,
        };
        self.call(Proc::Plain(request), Thread::Children { null_path }, out);
    }

    fn on_outcome(
        &mut self,
        outcome: Result<Returned, ZkError>,
        out: &mut Vec<Command<LockReport>>,
    ) {
        match (std::mem::replace(&mut self.thread, Thread::Idle), outcome) {
            (Thread::Create, Ok(Returned::Value(Response::Created(created)))) => {
                self.our_path = Some(created.path);
                self.list(false, out);
            }
            // `ourPath` is null: the loop lists, then `substring` throws, and the cleanup's
            // `delete().forPath(null)` throws `IllegalArgumentException`.
            (Thread::Create, Ok(_)) => self.list(true, out),
            (Thread::Create, Err(ZkError::NoNode)) => self.retry_after_no_node(out),
            (Thread::Create, Err(error)) => self.fail(error, out),
            (Thread::Children { null_path: true }, _) => self.fail(ZkError::BadArguments, out),
            (Thread::Children { .. }, result) => self.on_children(result, out),
            (Thread::Predecessor(path), result) => self.on_predecessor(path, result, out),
            (Thread::Cleanup(after), result) => self.on_deleted(after, result, out),
            (Thread::Token, result) => self.on_token(result, out),
            (Thread::Releasing { failed }, _) => {
                self.our_path = None;
                self.token = None;
                self.holds = 0;
                let report = match failed {
                    Some(error) => LockReport::Failed(error),
                    None => LockReport::Released { holds: 0 },
                };
                out.push(Command::Report(report));
            }
            (thread @ (Thread::Idle | Thread::Waiting | Thread::Backoff(_)), outcome) => {
                unreachable!("a call's outcome {outcome:?} while {thread:?}")
            }
        }
    }

    /// `internalLockLoop`'s listing and `getsTheLock`.
    fn on_children(
        &mut self,
        result: Result<Returned, ZkError>,
        out: &mut Vec<Command<LockReport>>,
    ) {
        let children = match result {
            Ok(Returned::Value(Response::Children(children, _))) => children,
            // 2.10.0 throws the `NONODE`; 5.x lists nothing and `validateOurIndex` throws it.
            Err(ZkError::NoNode) => Vec::new(),
            Err(error) => return self.cleanup(After::Threw(error), out),
            Ok(other) => unreachable!("getChildren returned {other:?}"),
        };
        let mut sorted = children;
        sorted.sort_by(|a, b| fix_for_sorting(a).cmp(fix_for_sorting(b)));
        let ours = self.our_path.as_deref().map(name_of);
        match sorted.iter().position(|c| Some(c.as_str()) == ours) {
            None => self.cleanup(After::Threw(ZkError::NoNode), out),
            Some(0) => {
                // `attemptLock` returns our path; the application reads its token.
                self.attempt = None;
                let path = self.our_path.clone().expect("found in the children");
                let request = Request::Exists { path, watch: false };
                self.call(Proc::Plain(request), Thread::Token, out);
            }
            Some(index) => {
                let previous = join(&self.dir, &sorted[index - 1]);
                self.notified = false;
                let request = Request::GetData {
                    path: previous.clone(),
                    watch: true,
                };
                self.call(Proc::Plain(request), Thread::Predecessor(previous), out);
            }
        }
    }

    /// The predecessor's `getData` returned: wait, give up if the time is up, or list again.
    fn on_predecessor(
        &mut self,
        path: String,
        result: Result<Returned, ZkError>,
        out: &mut Vec<Command<LockReport>>,
    ) {
        match result {
            Ok(_) => {
                self.watchers.insert(path);
                let attempt = self.attempt.as_ref().expect("an acquire runs");
                if attempt.deadline.is_some() && attempt.passed {
                    return self.cleanup(After::TimedOut, out);
                }
                if std::mem::take(&mut self.notified) {
                    self.list(false, out);
                } else {
                    self.thread = Thread::Waiting;
                }
            }
            // "it has been deleted (i.e. lock released). Try to acquire again"
            Err(ZkError::NoNode) => self.list(false, out),
            Err(error) => self.cleanup(After::Threw(error), out),
        }
    }

    /// `deleteOurPath` in the loop's cleanup.
    fn cleanup(&mut self, after: After, out: &mut Vec<Command<LockReport>>) {
        let path = self.our_path.clone().expect("the loop runs on our node");
        self.call(Proc::GuaranteedDelete(path), Thread::Cleanup(after), out);
    }

    /// The cleanup's delete returned (`NONODE` is ignored).
    fn on_deleted(
        &mut self,
        after: After,
        result: Result<Returned, ZkError>,
        out: &mut Vec<Command<LockReport>>,
    ) {
        self.our_path = None;
        let thrown = match (result, after) {
            (Ok(_) | Err(ZkError::NoNode), After::TimedOut) => {
                self.attempt = None;
                return out.push(Command::Report(LockReport::TimedOut));
            }
            (Ok(_) | Err(ZkError::NoNode), After::Threw(error)) => error,
            // 5.7.1 keeps the loop's exception; earlier releases throw the delete's.
            (Err(_), After::Threw(error)) if self.release() >= Release::V5_7_1 => error,
            (Err(delete_error), _) => delete_error,
        };
        if thrown == ZkError::NoNode {
            self.retry_after_no_node(out);
        } else {
            self.fail(thrown, out);
        }
    }

    /// `attemptLock`'s `catch (NoNodeException)`: sleep as the policy allows, then again.
    fn retry_after_no_node(&mut self, out: &mut Vec<Command<LockReport>>) {
        let attempt = self.attempt.as_mut().expect("an acquire runs");
        match RetryPolicy::STANDARD.sleep_before(attempt.retries) {
            Some(after_ms) => {
                attempt.retries += 1;
                let id = self.framework.fresh_id();
                out.push(Command::Timer { id, after_ms });
                self.thread = Thread::Backoff(id);
            }
            None => self.fail(ZkError::NoNode, out),
        }
    }

    /// The acquire throws.
    fn fail(&mut self, error: ZkError, out: &mut Vec<Command<LockReport>>) {
        self.attempt = None;
        self.our_path = None;
        self.thread = Thread::Idle;
        out.push(Command::Report(LockReport::Failed(error)));
    }

    /// The application's token read returned.
    fn on_token(&mut self, result: Result<Returned, ZkError>, out: &mut Vec<Command<LockReport>>) {
        self.holds = 1;
        match result {
            Ok(Returned::Value(Response::Exists(Some(stat)))) => {
                self.token = Some(stat.czxid);
                out.push(Command::Report(LockReport::Acquired {
                    token: stat.czxid,
                    holds: 1,
                }));
            }
            Ok(_) => self.release_lock(Some(ZkError::NoNode), out),
            Err(error) => self.release_lock(Some(error), out),
        }
    }

    /// `releaseLock`: 5.x removes the lock's watchers first; the node is deleted (guaranteed).
    fn release_lock(&mut self, failed: Option<ZkError>, out: &mut Vec<Command<LockReport>>) {
        if self.release().is_curator_5() {
            self.watchers.clear();
        }
        self.token = None;
        self.holds = 0;
        let path = self.our_path.clone().expect("a held lock has its node");
        self.call(
            Proc::GuaranteedDelete(path),
            Thread::Releasing { failed },
            out,
        );
    }

    /// The watcher's `notifyAll`: wakes a waiting thread, or one about to wait.
    fn notify(&mut self, out: &mut Vec<Command<LockReport>>) {
        match self.thread {
            Thread::Waiting => self.list(false, out),
            Thread::Predecessor(_) => self.notified = true,
            _ => {}
        }
    }

    /// Handles one input (see [`crate::machine::Machine::handle`]).
    pub fn handle(&mut self, input: Input<LockRequest>, out: &mut Vec<Command<LockReport>>) {
        let mut upcalls = Vec::new();
        let Some(input) = self.framework.route(input, out, &mut upcalls) else {
            return;
        };
        let input = match self.foreground.on_input(&mut self.framework, input, out) {
            Ok(Some(outcome)) => return self.on_outcome(outcome, out),
            Ok(None) => return,
            Err(input) => input,
        };
        match input {
            Input::Request(request) => self.on_request(request, out),
            Input::Watch(event) => {
                if self.watchers.remove(&event.path) {
                    self.notify(out);
                }
            }
            Input::Session(event) => {
                // A connection event reaches every watcher registered.
                if !self.watchers.is_empty() {
                    self.notify(out);
                }
                if let SessionEvent::Expired
                | SessionEvent::Closed
                | SessionEvent::Connected { .. } = event
                {
                    // The old handle's watchers are gone with it.
                    self.watchers.clear();
                }
            }
            Input::Timer(id) => self.on_timer(id, out),
            // A reply no call waits for any more.
            Input::Reply { .. } => {}
        }
    }

    fn on_timer(&mut self, id: u64, out: &mut Vec<Command<LockReport>>) {
        if self.thread == Thread::Backoff(id) {
            return self.creates_the_lock(out);
        }
        let Some(attempt) = self.attempt.as_mut() else {
            return;
        };
        if attempt.deadline == Some(id) {
            attempt.passed = true;
            if self.thread == Thread::Waiting {
                // `wait(millisToWait)` returns.
                self.list(false, out);
            }
        }
    }
}

/// `StandardLockInternalsDriver.standardFixForSorting`: what follows the last `lock-`.
fn fix_for_sorting(name: &str) -> &str {
    match name.rfind(LOCK_NAME) {
        Some(index) => &name[index + LOCK_NAME.len()..],
        None => name,
    }
}

/// Everything but what is fixed when the mutex is made.
impl Hash for CuratorMutex {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (&self.framework, &self.foreground, self.creates).hash(state);
        (&self.thread, &self.attempt, &self.our_path, self.holds).hash(state);
        (self.token, &self.watchers, self.notified).hash(state);
    }
}

impl Symmetric for Thread {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Thread::Predecessor(path) => path.hash_renamed(renaming, state),
            Thread::Children { null_path } => null_path.hash(state),
            Thread::Cleanup(after) => after.hash(state),
            Thread::Backoff(id) => id.hash(state),
            Thread::Releasing { failed } => failed.hash(state),
            Thread::Idle | Thread::Create | Thread::Waiting | Thread::Token => {}
        }
    }
}

impl Symmetric for CuratorMutex {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        (self.creates, &self.attempt, self.holds).hash(state);
        (self.token, self.notified).hash(state);
        self.framework.hash_renamed(renaming, state);
        self.foreground.hash_renamed(renaming, state);
        self.thread.hash_renamed(renaming, state);
        self.our_path.hash_renamed(renaming, state);
        crate::symmetry::hash_ordered(self.watchers.iter(), renaming, state);
    }
}
