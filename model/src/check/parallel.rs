//! The depth-first search on several threads, for machines with the cores to spare
//! ([`Limits::threads`]).
//!
//! # How the work is shared
//!
//! Every thread runs the search of `depth_first.rs` on a stack of its own, and all of them
//! insert into one visited set ([`SharedSeen`]): a state is expanded by the thread that first
//! inserts it, whichever that is. What is shared besides is a pool of jobs, each a state still
//! to expand with the path that reached it. A thread with nothing to do takes a job from the
//! pool, or waits for one. A busy thread looks, every [`SHARE_EVERY`] states it pops, whether
//! any thread waits, and if one does it moves the older half of its stack to the pool: the
//! states nearest the root it started from, whose subtrees are likely the largest. (This is
//! work sharing, as in SPIN's and TLC's multi-core searches, rather than stealing from another
//! thread's stack, which would need a lock on every stack.) The search ends when every thread
//! waits and the pool is empty, or when one thread meets a violation, the visited set is full,
//! or [`Limits::max_states`] is passed, and then every thread stops at its next state.
//!
//! A job carries its whole path, so the path to a violation is known wherever it is found: a
//! state on a thread's stack at depth d is a child of the state at depth d - 1 on the path the
//! thread is on, so its path is that path's first d - 1 steps and its own action.
//!
//! # What stays the same, and what does not
//!
//! A search that finishes explores every reachable state within the limits once, whichever
//! thread reaches it, so it counts the same states and distinct states as one thread, and gives
//! the same verdict. Two things depend on the order, on one thread too: the deepest path
//! reported, which is the deepest at which a state was first met (another order meets some
//! states first by other paths), and, with hash compaction, which state's probe passes a slot
//! with its low half, so the count of states missed may differ by as much as its expectation.
//! The counts are the same with symmetry reduction too: which client's news the partial-order
//! reduction delivers first is chosen by the clients' places in the state's canonical
//! renaming, the same in every state of a class, so a class gets the same reduced successors
//! whichever of its states is met first. (Chosen by the least index, it did not: two threads gave the three-client election
//! 11,037,271 states where one gave 11,037,283, and reversing the order of the actions on one
//! thread took the lock from 112,101 to 110,965; `tests/symmetry.rs` now requires every
//! renaming of a state to have the same successors up to renaming, and fails on that choice.)
//! Which thread finds a violation first, and on which path, depends on
//! the timing of the threads: the check shortens it afterwards as it does one thread's
//! (run.rs), so the counterexample is the same when it is short enough to shorten. Where the
//! search gives up, at [`Limits::max_depth`], [`Limits::max_states`] or a full table, its
//! counts depend on the timing too. One thread (the default) is deterministic in all of it.
//!
//! The counts of states generated and distinct are kept per thread and added to the shared
//! ones every [`SHARE_EVERY`] states, so [`Limits::max_states`] is passed by up to that many
//! per thread before the search stops.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use stateright::Model;

use super::depth_first::{expand, fingerprint, key, Failed, Pending, Successors};
use super::lasso::{DeepSeen, LIVELOCK_GRACE_STATES};
use super::preemption::Schedule;
use super::run::Searched;
use super::visited::{SharedSeen, Tally};
use super::{Action, Limits, Progress, RecipeModel, Workload};

/// How many states a thread pops between two looks at whether another thread waits for work
/// (and between two additions of its counts to the shared ones).
pub const SHARE_EVERY: usize = 256;

/// How often the observer hears how far the threads have come.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// A state still to expand, and the path to it from an initial state (its own action last).
struct Job<W: Workload> {
    path_to_parent: Vec<Action>,
    pending: Pending<W>,
}

/// What the threads share.
struct Pool<'a, W: Workload, S> {
    model: &'a RecipeModel<W>,
    limits: Limits,
    visited: &'a S,
    threads: usize,
    work: Mutex<Work<W>>,
    /// Wakes the threads that wait for work.
    wake: Condvar,
    /// How many threads wait for work (kept by [`Work::waiting`], read without the lock).
    hungry: AtomicUsize,
    /// Set when the search must end early: at a violation or a limit.
    stop: AtomicBool,
    states: AtomicUsize,
    deepest: AtomicUsize,
    visited_full: AtomicBool,
    failed: Mutex<Failed<W>>,
    /// What the paths past the depth limit showed (`lasso.rs`; which paths, depends on the
    /// threads' timing).
    deep: Mutex<DeepSeen>,
    /// Paths cut off at the depth limit so far.
    cut_off: AtomicU64,
    /// Where a livelock was found: the search stops at this many states (`usize::MAX` until).
    stop_at: AtomicUsize,
    /// How many threads have ended.
    ended: AtomicUsize,
    /// The states each thread generated, added when it ends.
    by_thread: Vec<AtomicUsize>,
}

/// The pool of jobs, behind its lock.
struct Work<W: Workload> {
    jobs: Vec<Job<W>>,
    waiting: usize,
    done: bool,
}

/// Searches `model` depth first within `limits` on [`Limits::threads`] threads sharing
/// `visited` (empty), until the first violation, the end, or `visited` full, telling `observer`
/// how far they have come every quarter of a second; as [`depth_first`](super::depth_first)
/// does on one thread (see the module docs for what differs).
pub(super) fn parallel_depth_first<W: Workload, S: SharedSeen>(
    model: &RecipeModel<W>,
    limits: Limits,
    visited: &S,
    mut observer: Option<&mut (dyn FnMut(&Progress) + '_)>,
) -> (Searched, Failed<W>) {
    let threads = limits.threads.max(1);
    let mut jobs = Vec::new();
    let mut states = 0;
    let mut tally = Tally::default();
    for state in model.init_states() {
        states += 1;
        let key = key(limits, Schedule::default(), fingerprint(&state));
        if visited.insert_shared(key, &mut tally) {
            let pending = (state, None, 0, Schedule::default());
            jobs.push(Job {
                path_to_parent: Vec::new(),
                pending,
            });
        }
    }
    visited.settle(&mut tally);
    let pool = Pool {
        model,
        limits,
        visited,
        threads,
        work: Mutex::new(Work {
            jobs,
            waiting: 0,
            done: false,
        }),
        wake: Condvar::new(),
        hungry: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        states: AtomicUsize::new(states),
        deepest: AtomicUsize::new(0),
        visited_full: AtomicBool::new(false),
        failed: Mutex::new(None),
        deep: Mutex::new(DeepSeen::default()),
        cut_off: AtomicU64::new(0),
        stop_at: AtomicUsize::new(usize::MAX),
        ended: AtomicUsize::new(0),
        by_thread: (0..threads).map(|_| AtomicUsize::new(0)).collect(),
    };
    std::thread::scope(|scope| {
        let main = std::thread::current();
        for thread in 0..threads {
            let (pool, main) = (&pool, main.clone());
            scope.spawn(move || {
                let _ended = Ended { pool, main };
                let generated = pool.search();
                pool.by_thread[thread].store(generated, Ordering::Relaxed);
            });
        }
        while pool.ended.load(Ordering::Acquire) < threads {
            std::thread::park_timeout(PROGRESS_INTERVAL);
            if let Some(observer) = observer.as_mut() {
                observer(&pool.progress());
            }
        }
    });
    let searched = Searched {
        states: pool.states.load(Ordering::Relaxed),
        unique_states: visited.len(),
        deepest: pool.deepest.load(Ordering::Relaxed),
        visited_full: pool.visited_full.load(Ordering::Relaxed),
        by_thread: (pool.by_thread.iter())
            .map(|generated| generated.load(Ordering::Relaxed))
            .collect(),
        deep: DeepSeen::default(),
    };
    let failed = pool.failed.into_inner().expect("no thread panicked");
    let deep = pool.deep.into_inner().expect("no thread panicked");
    (Searched { deep, ..searched }, failed)
}

/// Tells the main thread that a search thread ended when dropped, even by a panic (which then
/// stops the others), so that it stops waiting and the panic reaches the caller.
struct Ended<'p, 'a, W: Workload, S: SharedSeen> {
    pool: &'p Pool<'a, W, S>,
    main: std::thread::Thread,
}

impl<W: Workload, S: SharedSeen> Drop for Ended<'_, '_, W, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.pool.halt();
        }
        self.pool.ended.fetch_add(1, Ordering::Release);
        self.main.unpark();
    }
}

impl<W: Workload, S: SharedSeen> Pool<'_, W, S> {
    /// One thread's search: jobs from the pool, each searched depth first on its own stack,
    /// until there are no more. Returns how many states it generated.
    fn search(&self) -> usize {
        let (model, limits, visited) = (self.model, self.limits, self.visited);
        let mut stack: Vec<Pending<W>> = Vec::new();
        let mut path: Vec<Action> = Vec::new();
        let mut actions: Vec<Action> = Vec::new();
        let mut successors: Successors<W> = Vec::new();
        let mut tally = Tally::default();
        let mut states = 0;
        let mut generated = 0;
        let mut deepest = 0;
        let mut popped = 0usize;
        while let Some(job) = self.take() {
            path.clear();
            path.extend(job.path_to_parent);
            stack.push(job.pending);
            while let Some((state, action, steps, schedule)) = stack.pop() {
                popped += 1;
                if popped % SHARE_EVERY == 0 {
                    generated += states;
                    self.states
                        .fetch_add(std::mem::take(&mut states), Ordering::Relaxed);
                    visited.settle(&mut tally);
                    if self.hungry.load(Ordering::Relaxed) > 0 {
                        self.share(&mut stack, &path);
                    }
                }
                if self.stop.load(Ordering::Relaxed) {
                    break;
                }
                let generated = self.states.load(Ordering::Relaxed);
                if limits.max_states.is_some_and(|max| generated >= max)
                    || generated >= self.stop_at.load(Ordering::Relaxed)
                {
                    self.halt();
                    break;
                }
                if visited.full() {
                    self.visited_full.store(true, Ordering::Relaxed);
                    self.halt();
                    break;
                }
                if steps > deepest {
                    deepest = steps;
                    self.deepest.fetch_max(steps, Ordering::Relaxed);
                }
                path.truncate(steps.saturating_sub(1));
                path.extend(action);
                if steps > limits.max_depth {
                    // Counted without the lock: most paths cut off are not examined.
                    let nth = self.cut_off.fetch_add(1, Ordering::Relaxed) + 1;
                    if !DeepSeen::sampled(nth) {
                        continue;
                    }
                    let mut deep = self.deep.lock().expect("no thread panicked");
                    if deep.examine(model, &path) {
                        // An invariant's violation comes first: look a little further for one.
                        let stop = self.states.load(Ordering::Relaxed) + LIVELOCK_GRACE_STATES;
                        self.stop_at.store(stop, Ordering::Relaxed);
                    }
                    continue;
                }
                if !model.invariants_hold_noting_reached(&state) {
                    let mut failed = self.failed.lock().expect("no thread panicked");
                    failed.get_or_insert((path.clone(), state));
                    drop(failed);
                    self.halt();
                    break;
                }
                let expanding = (model, limits, &state, schedule);
                states += expand(expanding, &mut actions, &mut successors, |key| {
                    visited.prefetch_shared(key)
                });
                for (next, action, key, schedule) in successors.drain(..) {
                    if visited.insert_shared(key, &mut tally) {
                        stack.push((next, Some(action), steps + 1, schedule));
                    }
                }
            }
            stack.clear();
        }
        self.states.fetch_add(states, Ordering::Relaxed);
        visited.settle(&mut tally);
        generated + states
    }

    /// The next job, waiting for one while other threads work; none when the search is over.
    fn take(&self) -> Option<Job<W>> {
        let mut work = self.lock();
        loop {
            if work.done {
                return None;
            }
            if let Some(job) = work.jobs.pop() {
                return Some(job);
            }
            work.waiting += 1;
            if work.waiting == self.threads {
                // Every thread waits and no job is left: every state was expanded.
                work.done = true;
                self.wake.notify_all();
                return None;
            }
            self.hungry.store(work.waiting, Ordering::Relaxed);
            work = self.wake.wait(work).expect("no thread panicked");
            work.waiting -= 1;
            self.hungry.store(work.waiting, Ordering::Relaxed);
        }
    }

    /// Moves the older half of `stack` to the pool, each state with its path. `path` is the
    /// path to the last state expanded: a state on the stack at depth d is a child of the
    /// state at depth d - 1 on it (that state or one of its ancestors).
    fn share(&self, stack: &mut Vec<Pending<W>>, path: &[Action]) {
        let given = stack.len() / 2;
        if given == 0 {
            return;
        }
        let jobs = stack.drain(..given).map(|pending| Job {
            path_to_parent: path[..pending.2.saturating_sub(1)].to_vec(),
            pending,
        });
        self.lock().jobs.extend(jobs);
        self.wake.notify_all();
    }

    /// Ends the search early: every thread stops at its next state, and none waits.
    fn halt(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.end_all();
    }

    /// Wakes every waiting thread to find the search over.
    fn end_all(&self) {
        let mut work = match self.work.lock() {
            Ok(work) => work,
            Err(poisoned) => poisoned.into_inner(),
        };
        work.done = true;
        self.wake.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, Work<W>> {
        self.work
            .lock()
            .expect("no thread panicked while it held the pool")
    }

    fn progress(&self) -> Progress {
        Progress {
            states: self.states.load(Ordering::Relaxed),
            unique_states: self.visited.len(),
            max_depth: self.deepest.load(Ordering::Relaxed),
        }
    }
}
