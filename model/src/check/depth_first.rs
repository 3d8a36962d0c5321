//! The depth-first search over every state: our own loop over the model's stateright API
//! (`init_states`, `actions`, `next_state`), visiting the states stateright's depth-first
//! checker visits, in its order, with less work per state.
//!
//! # The search
//!
//! A stack of states to expand, each with the action that made it and its depth. The search
//! pops the top one, checks the invariants there, and pushes each successor that no state
//! before it had the fingerprint of (the state's hash; with symmetry reduction, its class
//! hash, so that one state of each class is explored). Successors are marked seen as they are
//! pushed, not as they are popped, and the last one pushed is expanded first: this is
//! stateright's order, so the two searches count the same states, reach the same depth, and
//! meet the same first violation (`model/tests/depth_first.rs` holds them to it).
//!
//! What stateright's loop does per state that this one does not, single-threaded:
//!
//! - a copy of the path so far (a vector of action indices) with every state pushed; here the
//!   path is one vector, cut back to a popped state's depth and extended by its action, which
//!   is correct because a depth-first stack pops a state only after everything pushed above it;
//! - an insert into a sharded concurrent hash set behind a lock, where this search has its own
//!   table of fingerprints ([`Visited`](super::visited::Visited), or with hash compaction
//!   [`Compacted`](super::compact::Compacted));
//! - an atomic counter per state, a look-up of the property's name per state, and building a
//!   second state to hash (its symmetry representative).
//!
//! A state deeper than [`Limits::max_depth`] is counted and marked seen but neither checked nor
//! expanded, as stateright does at its target depth; the verdict says the search gave up there,
//! and the first few paths to such states are examined for a livelock (`lasso.rs`); once one is
//! found, the search goes on for [`LIVELOCK_GRACE_STATES`] more states, since an invariant's
//! violation is reported before a livelock.
//! [`Limits::max_states`] is checked at every state popped (stateright checks it every 1,500).
//! With [`Limits::preemptions`], each state carries a tag (who ran last, preemptions used), a
//! step past the bound is not taken, and a state is seen once per tag (see `preemption.rs`).
//!
//! Not here, because no check needs it: stateright's `eventually` bookkeeping (a check's
//! liveness properties are invariants judged at quiescent states, see the module docs of
//! [`check`](super)), `sometimes` properties (noted by the invariants' check instead), visitors,
//! and more than one thread (which `parallel.rs` runs this same loop on, for
//! [`Limits::threads`] above one). Nor sleep sets:
//! two clients' steps often commute (the README measures 86% of such pairs along random walks),
//! but with a visited set, sleep sets must be kept per state and states revisited with a
//! smaller one explored again, and what they save is states generated again, not states.

use std::hash::{Hash, Hasher};

use stateright::Model;

use super::lasso::{DeepSeen, LIVELOCK_GRACE_STATES};
use super::preemption::Schedule;
use super::run::Searched;
use super::visited::Seen;
use super::{Action, Limits, Progress, RecipeModel, State, Workload};
use crate::shared::fixed_hasher;

/// How many states a search pops between two reports to its observer (a fraction of a second
/// at this machine's 400,000 to 900,000 states a second).
pub const PROGRESS_STATES: usize = 1 << 16;

/// The first state popped where an invariant failed, and the path to it.
pub(super) type Failed<W> = Option<(Vec<Action>, State<W>)>;

/// A state to expand: the state, the action that made it (none for an initial state), its
/// depth in steps, and its tag in a search bounded by preemptions.
pub(super) type Pending<W> = (State<W>, Option<Action>, usize, Schedule);

/// Searches `model` depth first within `limits`, until the first state where its invariants
/// fail ([`RecipeModel::invariants_hold_noting_reached`]), the end, or `visited` full, telling
/// `observer` how far it has come every [`PROGRESS_STATES`] states: how far it went, and where
/// it failed. `model` hashes its states as their classes when it reduces by symmetry
/// ([`RecipeModel::symmetric`]). `visited` starts empty.
pub(super) fn depth_first<W: Workload, S: Seen>(
    model: &RecipeModel<W>,
    limits: Limits,
    visited: &mut S,
    mut observer: Option<&mut (dyn FnMut(&Progress) + '_)>,
) -> (Searched, Failed<W>) {
    let mut pending: Vec<Pending<W>> = Vec::new();
    let mut states = 0;
    for state in model.init_states() {
        states += 1;
        if visited.insert(key(limits, Schedule::default(), fingerprint(&state))) {
            pending.push((state, None, 0, Schedule::default()));
        }
    }
    let mut path: Vec<Action> = Vec::new();
    let mut actions: Vec<Action> = Vec::new();
    // A popped state's successors, with their keys in the visited set, hinted to it before
    // any is inserted (see [`Seen::prefetch`]), then inserted in order.
    let mut successors: Successors<W> = Vec::new();
    let mut deepest = 0;
    let mut popped = 0usize;
    let mut violation = None;
    let mut visited_full = false;
    let mut deep = DeepSeen::default();
    let mut cut_off = 0u64;
    // Where a livelock was found: the search goes on this far for an invariant's violation.
    let mut stop_at: Option<usize> = None;
    while let Some((state, action, steps, schedule)) = pending.pop() {
        if limits.max_states.is_some_and(|max| states >= max) {
            break;
        }
        if stop_at.is_some_and(|stop| states >= stop) {
            break;
        }
        if visited.full() {
            visited_full = true;
            break;
        }
        deepest = deepest.max(steps);
        path.truncate(steps.saturating_sub(1));
        path.extend(action);
        popped += 1;
        if popped % PROGRESS_STATES == 0 {
            if let Some(observer) = observer.as_mut() {
                observer(&Progress {
                    states,
                    unique_states: visited.len(),
                    max_depth: deepest,
                });
            }
        }
        if steps > limits.max_depth {
            cut_off += 1;
            if DeepSeen::sampled(cut_off) && deep.examine(model, &path) {
                // An invariant's violation comes first: look a little further for one.
                stop_at.get_or_insert(states + LIVELOCK_GRACE_STATES);
            }
            continue;
        }
        if !model.invariants_hold_noting_reached(&state) {
            violation = Some((path, state));
            break;
        }
        let expanding = (model, limits, &state, schedule);
        states += expand(expanding, &mut actions, &mut successors, |key| {
            visited.prefetch(key)
        });
        for (next, action, key, schedule) in successors.drain(..) {
            if visited.insert(key) {
                pending.push((next, Some(action), steps + 1, schedule));
            }
        }
    }
    let searched = Searched {
        states,
        unique_states: visited.len(),
        deepest,
        visited_full,
        by_thread: Vec::new(),
        deep,
    };
    (searched, violation)
}

/// A state's successors, each with its action, key and tag.
pub(super) type Successors<W> = Vec<(State<W>, Action, u64, Schedule)>;

/// Puts in `successors` the successors of `state` (tagged `schedule`) in `model`, within the
/// preemption bound of `limits`, each with the action that makes it, its key in the visited set
/// and its tag, hinting each key to `prefetch` before any is inserted (see [`Seen::prefetch`]);
/// returns how many it made. `actions` is room to list the actions in.
pub(super) fn expand<W: Workload>(
    (model, limits, state, schedule): (&RecipeModel<W>, Limits, &State<W>, Schedule),
    actions: &mut Vec<Action>,
    successors: &mut Successors<W>,
    mut prefetch: impl FnMut(u64),
) -> usize {
    let before = successors.len();
    model.actions(state, actions);
    for action in actions.drain(..) {
        let schedule = match limits.preemptions {
            None => schedule,
            Some(bound) => match schedule.after(state, &action, bound) {
                Some(after) => after,
                None => continue,
            },
        };
        let Some(next) = model.next_state(state, action.clone()) else {
            continue;
        };
        let key = key(limits, schedule, fingerprint(&next));
        prefetch(key);
        successors.push((next, action, key, schedule));
    }
    successors.len() - before
}

/// The key of a state in the visited set: its fingerprint, with its tag in a search bounded
/// by preemptions (a state is seen once per tag there, see `preemption.rs`).
pub(super) fn key(limits: Limits, schedule: Schedule, fingerprint: u64) -> u64 {
    match limits.preemptions {
        Some(_) => schedule.key(fingerprint),
        None => fingerprint,
    }
}

/// A state's fingerprint: its hash (its class hash, if it hashes as its class), mixed by a
/// fixed-seed hasher.
pub(super) fn fingerprint<W: Workload>(state: &State<W>) -> u64 {
    let mut hasher = fixed_hasher();
    state.hash(&mut hasher);
    hasher.finish()
}
