//! Running a check, in two steps (the first on one thread by default, deterministic in every
//! count and path; on [`Limits::threads`] sharing the visited set otherwise, see `parallel.rs`):
//!
//! 1. **Depth first over every state.** Breadth first would visit the same states, but it
//!    holds its whole frontier (each a full state) and a parent per state, while depth first
//!    holds one path's siblings and a fingerprint per state: on the lock's standard check that
//!    is 40 MiB against 500 MiB, and 2.5 times the speed (see the README's speed table). A
//!    space with no end (`check-then-write` under a lost reply and an expiry has paths of every
//!    length) would take a depth-first search down one endless branch, holding a longer path at
//!    every step, so the search stops at [`Limits::max_depth`] and says so: the standard checks
//!    are 30 to 94 steps deep. It explores states equal up to a renaming of the clients once
//!    ([`Limits::symmetry`], on by default; see [`representative`](super::representative)),
//!    and checks the `always` and `eventually` properties as one; at a failure it names the
//!    first of them that fails ([`RecipeModel::one_invariant`]). It checks no `sometimes`
//!    property: the invariants' check notes which ones each state reached
//!    ([`RecipeModel::reached`]). The path it keeps is the first failing one it met. The
//!    search is our own loop over the model's stateright API (`depth_first.rs`), which visits
//!    the states stateright's depth-first checker visits, in the same order, with less work
//!    per state: 8 to 25% more states a second. stateright's can still be chosen
//!    ([`Searcher::Stateright`]), to hold ours to it and to measure the two side by side.
//! 2. **The shortest counterexample**, when the search found a violation: breadth first until
//!    that property fails, then breadth first again for a shorter path until there is none,
//!    because the path stateright's breadth-first search keeps is not always the shortest one.
//!    A violation deeper than the first [`SHORTEN_STATES`] states breadth first (the sharded
//!    job's, past 100 steps) is shrunk instead, as a random walk's is ([`shrink`]): runs of
//!    steps are taken out of the depth-first path while what is left still fails. The result
//!    is marked as not the shortest: nothing proves that no shorter path fails.
//!
//! Checks used to begin with a breadth-first probe of 20,000 states, so that a shallow
//! violation in a space with no end would be found before any deep branch. Measured over
//! every known-bad variant and the correct lock and latch, under each fault kind alone and the
//! standard budget, acting caught up and unfenced (112 checks), the depth-first search found
//! every violation the probe did, with the same shortest length and no slower; meanwhile the
//! probe took a fifth of the lock's standard check and a third of the latch's. So there is none.

use std::collections::BTreeSet;

use stateright::{Checker, CheckerBuilder, Expectation, HasDiscoveries, Model};

use zkh_recipes::symmetry::MAX_SYMMETRIC_CLIENTS;

use super::compact::{expected_missed, Compacted};
use super::depth_first::depth_first;
use super::lasso::{DeepLoops, DeepSeen, LIVELOCK};
use super::parallel::parallel_depth_first;
use super::visited::Visited;
use super::{
    judged_bits, representative, shrink, Action, Reached, RecipeModel, Workload, INVARIANTS,
};

/// How many states a breadth-first search may generate to shorten a depth-first
/// counterexample (a breadth-first state costs up to a KiB: this bounds it near 2 GiB).
pub const SHORTEN_STATES: usize = 2_000_000;

/// Where a check gives up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// About this many generated states (none: no limit).
    pub max_states: Option<usize>,
    /// Paths of this many steps (a space with no end has paths of every length).
    pub max_depth: usize,
    /// Whether the depth-first search explores states equal up to a renaming of the clients
    /// once (symmetry reduction, for up to [`MAX_SYMMETRIC_CLIENTS`] clients; see
    /// [`zkh_recipes::symmetry`]). The breadth-first searches never do: stateright's cannot.
    pub symmetry: bool,
    /// Explore only the schedules with at most this many preemptions (see `preemption.rs`):
    /// a bounded search, for spaces too large to search whole. Our depth-first search only,
    /// and without symmetry reduction. None: every schedule.
    pub preemptions: Option<u8>,
    /// Keep the visited set by hash compaction, 32 bits a state, in one table of this many
    /// MiB (see `compact.rs`): for spaces whose exact set does not fit in memory. Our
    /// depth-first search only. None: the exact set.
    pub compact_mib: Option<u32>,
    /// How many threads our depth-first search runs on (see `parallel.rs`): one, the default,
    /// is deterministic in every count and path; more give the same verdict and, when the
    /// search finishes without symmetry reduction, the same counts (not always the same
    /// deepest path), sooner on a machine with the cores.
    pub threads: usize,
}

impl Limits {
    /// The deepest path a check explores by default: three times the deepest standard check
    /// (the two-client job election's, 94 steps).
    pub const DEFAULT_MAX_DEPTH: usize = 300;
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_states: None,
            max_depth: Limits::DEFAULT_MAX_DEPTH,
            symmetry: true,
            preemptions: None,
            compact_mib: None,
            threads: 1,
        }
    }
}

/// A property that failed, and a path to its failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The property's name.
    pub property: &'static str,
    /// The actions from the initial state.
    pub path: Vec<Action>,
    /// Whether no shorter path fails the property (false only when a depth-first path was
    /// too long to shorten within [`SHORTEN_STATES`]; it is then shrunk instead, see
    /// [`shrink`]).
    pub shortest: bool,
    /// The length of the path the depth-first search found, before it was shortened or
    /// shrunk.
    pub found_steps: usize,
    /// For a [`LIVELOCK`](super::LIVELOCK): where the loop starts (`path[loop_start..]` leads
    /// back to the abstract state it left, see `lasso.rs`).
    pub loop_start: Option<usize>,
}

/// Why a check stopped before exploring every state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GaveUp {
    /// At [`Limits::max_states`].
    States(usize),
    /// Some path reached [`Limits::max_depth`] steps.
    Depth(usize),
    /// The hash-compacted visited set of [`Limits::compact_mib`] MiB was full.
    VisitedFull(u32),
}

/// The outcome of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// States generated (with repeats), until the end or the first violation.
    pub states: usize,
    /// Distinct states (up to a renaming of clients, with `symmetry`).
    pub unique_states: usize,
    /// Whether the search reduced by symmetry.
    pub symmetry: bool,
    /// The deepest path explored.
    pub max_depth: usize,
    /// The first `always` or `eventually` property that failed, if any.
    pub violation: Option<Violation>,
    /// Whether every state was explored (or a violation found); false when the search gave up
    /// at a limit.
    pub complete: bool,
    /// The limit the search gave up at, if it did and found no violation.
    pub gave_up: Option<GaveUp>,
    /// `sometimes` properties that no state reached (a pass with any of these is an empty one;
    /// empty after a violation, where the search stopped early).
    pub unreached: Vec<&'static str>,
    /// With hash compaction ([`Limits::compact_mib`]), how its table was used.
    pub compaction: Option<Compaction>,
    /// Where the search gave up at [`Limits::max_depth`] (our search only): whether the paths it
    /// cut off there came back to an abstract state they had been in (see `lasso.rs`).
    pub deep_loops: Option<DeepLoops>,
    /// Of the states generated, how many each thread generated, in our search on more than
    /// one thread ([`Limits::threads`]); empty otherwise. How the work fell depends on the
    /// threads' timing; the initial states are generated before the threads start, so the sum
    /// is `states` less those.
    pub states_by_thread: Vec<usize>,
}

/// How a search's hash-compacted visited set was used (see `compact.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compaction {
    /// The table's slots, 4 bytes each.
    pub slots: usize,
    /// Taken slots the probes of new states passed: over 2³², the expected number of states
    /// missed.
    pub compared: u64,
}

impl Compaction {
    /// The expected number of new states the search took for seen.
    pub fn expected_missed(&self) -> f64 {
        expected_missed(self.compared)
    }
}

/// How far a search has come, for a progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// States generated so far.
    pub states: usize,
    /// Distinct states so far.
    pub unique_states: usize,
    /// The deepest path so far, in steps.
    pub max_depth: usize,
}

/// Something that watches a check's progress while the depth-first search runs: ours calls it
/// every [`PROGRESS_STATES`](super::PROGRESS_STATES) states it pops (so not at all in a check
/// smaller than that), or every quarter of a second on more than one thread, stateright's
/// about every [`PROGRESS_INTERVAL_MS`].
pub type Observer<'a> = &'a mut dyn FnMut(&Progress);

/// How often an [`Observer`] hears of stateright's depth-first search ([`Searcher::Stateright`]).
pub const PROGRESS_INTERVAL_MS: u64 = 250;

/// Checks every state of `model` within the default [`Limits`], stopping at the first
/// violation, which is then shortened (see the module docs).
pub fn check<W: Workload>(model: &RecipeModel<W>) -> Verdict {
    check_within(model, Limits::default())
}

/// [`check`] within `limits` (the verdict says where it gave up, unless it found a violation).
pub fn check_within<W: Workload>(model: &RecipeModel<W>, limits: Limits) -> Verdict {
    check_observed(model, limits, None)
}

/// [`check_within`], telling `observer` how far the searches have come.
pub fn check_observed<W: Workload>(
    model: &RecipeModel<W>,
    limits: Limits,
    observer: Option<Observer<'_>>,
) -> Verdict {
    check_searched(model, limits, Searcher::Ours, observer)
}

/// Which depth-first search explores a check's states. Both visit the same states in the same
/// order and give the same verdict; ours does less work per state (see the module docs of
/// `model/src/check/depth_first.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Searcher {
    /// Ours: every check's.
    #[default]
    Ours,
    /// stateright's own (its `spawn_dfs`), kept to hold ours to it and to measure the two side
    /// by side.
    Stateright,
}

/// [`check_observed`] with the depth-first search of `searcher`.
pub fn check_searched<W: Workload>(
    model: &RecipeModel<W>,
    limits: Limits,
    searcher: Searcher,
    observer: Option<Observer<'_>>,
) -> Verdict {
    let mut verdict = search(model, Order::DepthFirst(searcher), limits, observer);
    if let Some(violation) = verdict
        .violation
        .as_mut()
        .filter(|v| v.loop_start.is_none())
    {
        // A depth-first path can be far longer than need be.
        let found = breadth_first_until(
            model,
            violation.property,
            violation.path.len(),
            Some(SHORTEN_STATES),
        );
        match found {
            Some(path) => violation.path = shortest(model, violation.property, &path),
            None => {
                // Too deep to shorten breadth first: take runs of steps out of it instead, in
                // the model the search found it in. Where the search reduced by symmetry, the
                // partial-order reduction delivered first the news of the client the canonical
                // renaming puts first, not the lowest-numbered one, so the path's steps are
                // the ones that model lists, not always the ones `model` lists.
                let found = std::mem::take(&mut violation.path);
                let searched = RecipeModel {
                    symmetric: symmetric(model, limits),
                    ..model.clone()
                };
                violation.path = shrink(&searched, violation.property, found);
                violation.shortest = false;
            }
        }
    }
    verdict
}

/// The shortest counterexample of `model`, searching breadth first only until a first property
/// fails (for a known-bad variant, whose full state space need not be explored).
pub fn find_violation<W: Workload>(model: &RecipeModel<W>) -> Option<Violation> {
    let unlimited = Limits {
        max_states: None,
        max_depth: usize::MAX,
        symmetry: false,
        preemptions: None,
        compact_mib: None,
        threads: 1,
    };
    let mut violation = search(model, Order::BreadthFirst, unlimited, None).violation?;
    violation.path = shortest(model, violation.property, &violation.path);
    Some(violation)
}

/// The order of a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// Level by level (every search for a shortest path).
    BreadthFirst,
    /// Down one path at a time (the whole space), by one [`Searcher`] or the other.
    DepthFirst(Searcher),
}

/// Whether a depth-first search of `model` within `limits` reduces by symmetry (never one
/// bounded by preemptions, whose tags name clients by index).
fn symmetric<W: Workload>(model: &RecipeModel<W>, limits: Limits) -> bool {
    W::SYMMETRIC
        && limits.symmetry
        && limits.preemptions.is_none()
        && model.clients <= MAX_SYMMETRIC_CLIENTS
}

/// A single-threaded checker of `model`, whose states hash as their class under renamings of
/// the clients when `symmetric` (and as themselves otherwise), and which gets the `always` and
/// `eventually` properties as one when `one_invariant` (and apart otherwise), whatever `model`
/// says.
fn builder<W: Workload>(
    model: &RecipeModel<W>,
    symmetric: bool,
    one_invariant: bool,
    reached: &Reached,
) -> CheckerBuilder<RecipeModel<W>> {
    searching_copy(model, symmetric, one_invariant, reached)
        .checker()
        .threads(1)
}

/// A search's own copy of `model`: its states hash as their class when `symmetric`; it gives
/// the invariants as one when `one_invariant`; it notes the `sometimes` properties reached in
/// `reached`.
fn searching_copy<W: Workload>(
    model: &RecipeModel<W>,
    symmetric: bool,
    one_invariant: bool,
    reached: &Reached,
) -> RecipeModel<W> {
    RecipeModel {
        symmetric,
        one_invariant,
        reached: reached.clone(),
        ..model.clone()
    }
}

/// Our depth-first search of `model` within `limits` (by class when `symmetry`): the verdict
/// [`search`] gives from stateright's.
fn ours<W: Workload>(
    model: &RecipeModel<W>,
    symmetry: bool,
    limits: Limits,
    observer: Option<&mut (dyn FnMut(&Progress) + '_)>,
) -> Verdict {
    let reached = Reached::default();
    let searched = searching_copy(model, symmetry, true, &reached);
    let mut compaction = None;
    let parallel = limits.threads > 1;
    let searching = searched;
    let (mut searched, failed) = match limits.compact_mib {
        None if parallel => parallel_depth_first(&searching, limits, &Visited::new(), observer),
        None => depth_first(&searching, limits, &mut Visited::new(), observer),
        Some(mib) => {
            let mut visited = Compacted::new(mib);
            let found = match parallel {
                true => parallel_depth_first(&searching, limits, &visited, observer),
                false => depth_first(&searching, limits, &mut visited, observer),
            };
            compaction = Some(Compaction {
                slots: visited.slots(),
                compared: visited.compared(),
            });
            found
        }
    };
    let mut violation = failed.map(|(path, state)| Violation {
        property: model.first_broken_invariant(&state),
        found_steps: path.len(),
        path,
        shortest: true,
        loop_start: None,
    });
    // A search cut off at its depth: a livelock there is a violation, and otherwise the verdict
    // says whether any path came back to where it had been.
    let deep = std::mem::take(&mut searched.deep);
    let deep_loops = violation
        .is_none()
        .then(|| deep.verdict(&searching))
        .flatten();
    if let Some(DeepLoops::Livelock(lasso)) = &deep_loops {
        violation = Some(Violation {
            property: LIVELOCK,
            found_steps: lasso.path.len(),
            path: lasso.path.clone(),
            shortest: false,
            loop_start: Some(lasso.loop_start),
        });
    }
    Verdict {
        compaction,
        deep_loops,
        ..searched.verdict(model, limits, symmetry, violation, &reached)
    }
}

/// How far a search went: the counts a [`Verdict`] reports.
pub(super) struct Searched {
    /// States generated (the initial ones included), with repeats.
    pub states: usize,
    /// Distinct states (fingerprints).
    pub unique_states: usize,
    /// The deepest state popped, in steps (past [`Limits::max_depth`] if it skipped some).
    pub deepest: usize,
    /// Whether the search stopped because its visited set was full (see `compact.rs`).
    pub visited_full: bool,
    /// States generated by each thread, on more than one ([`Verdict::states_by_thread`]).
    pub by_thread: Vec<usize>,
    /// What the paths cut off past [`Limits::max_depth`] showed.
    pub deep: DeepSeen,
}

impl Searched {
    /// The verdict of a search of `model` that went this far and found `violation`, with
    /// `reached` the `sometimes` properties it noted.
    fn verdict<W: Workload>(
        self,
        model: &RecipeModel<W>,
        limits: Limits,
        symmetry: bool,
        violation: Option<Violation>,
        reached: &Reached,
    ) -> Verdict {
        let gave_up = if violation.is_some() {
            None
        } else if let (true, Some(mib)) = (self.visited_full, limits.compact_mib) {
            Some(GaveUp::VisitedFull(mib))
        } else if self.deepest > limits.max_depth {
            Some(GaveUp::Depth(limits.max_depth))
        } else {
            limits
                .max_states
                .filter(|max| self.states >= *max)
                .map(GaveUp::States)
        };
        let complete = gave_up.is_none();
        let unreached = if complete && violation.is_none() {
            // The `sometimes` properties were noted, not given to the search.
            let unreached = u16::from(judged_bits::<W>(Expectation::Sometimes)) & !reached.bits();
            (W::judges().iter().enumerate())
                .filter(|(index, _)| unreached & 1 << index != 0)
                .map(|(_, judge)| judge.name)
                .chain(model.own_unreached(reached.bits()))
                .collect()
        } else {
            Vec::new()
        };
        Verdict {
            states: self.states,
            unique_states: self.unique_states,
            symmetry,
            max_depth: self.deepest.min(limits.max_depth),
            violation,
            complete,
            gave_up,
            unreached,
            compaction: None,
            deep_loops: None,
            states_by_thread: self.by_thread,
        }
    }
}

/// One search in `order`, until the first violation, the end, or a limit.
fn search<W: Workload>(
    model: &RecipeModel<W>,
    order: Order,
    limits: Limits,
    observer: Option<&mut (dyn FnMut(&Progress) + '_)>,
) -> Verdict {
    let symmetry = matches!(order, Order::DepthFirst(_)) && symmetric(model, limits);
    if order == Order::DepthFirst(Searcher::Ours) {
        return ours(model, symmetry, limits, observer);
    }
    assert!(
        limits.preemptions.is_none() && limits.compact_mib.is_none(),
        "only our depth-first search bounds preemptions or compacts its visited set"
    );
    // stateright looks each property up once per state: the invariants as one cost one lookup.
    // It counts the initial state as depth 1 and skips states at the target depth.
    let reached = Reached::default();
    let mut builder = builder(model, symmetry, true, &reached)
        .finish_when(HasDiscoveries::AnyFailures)
        .target_max_depth(limits.max_depth.saturating_add(2));
    if let Some(max_states) = limits.max_states {
        builder = builder.target_state_count(max_states);
    }
    if symmetry {
        builder = builder.symmetry_fn(representative::<W>);
    }
    let checker: Box<dyn Checker<RecipeModel<W>>> = match order {
        Order::BreadthFirst => Box::new(finish(builder.spawn_bfs(), observer)),
        Order::DepthFirst(_) => {
            let builder = builder.threads(limits.threads.max(1));
            Box::new(finish(builder.spawn_dfs(), observer))
        }
    };
    let violation = first_failure(model, checker.as_ref()).map(|(property, path)| Violation {
        property,
        found_steps: path.len(),
        path,
        shortest: true,
        loop_start: None,
    });
    let searched = Searched {
        states: checker.state_count(),
        unique_states: checker.unique_state_count(),
        // The deepest state popped, in steps: one at the target depth means some were skipped.
        deepest: checker.max_depth().saturating_sub(1),
        visited_full: false,
        by_thread: Vec::new(),
        deep: DeepSeen::default(),
    };
    searched.verdict(model, limits, symmetry, violation, &reached)
}

/// Waits for `checker` to finish, telling `observer` how far it has come.
fn finish<M: Model, C: Checker<M>>(
    checker: C,
    observer: Option<&mut (dyn FnMut(&Progress) + '_)>,
) -> C {
    if let Some(observer) = observer {
        let interval = std::time::Duration::from_millis(PROGRESS_INTERVAL_MS);
        while !checker.is_done() {
            std::thread::sleep(interval);
            observer(&Progress {
                states: checker.state_count(),
                unique_states: checker.unique_state_count(),
                max_depth: checker.max_depth().saturating_sub(1),
            });
        }
    }
    checker.join()
}

/// The `always` or `eventually` property that `checker`, given them as one ([`INVARIANTS`]),
/// found failing (the first in the model's order that fails at the end of the path), and the
/// path to its failure.
fn first_failure<W: Workload>(
    model: &RecipeModel<W>,
    checker: &dyn Checker<RecipeModel<W>>,
) -> Option<(&'static str, Vec<Action>)> {
    let path = checker.discoveries().remove(INVARIANTS)?;
    let property = model.first_broken_invariant(path.last_state());
    Some((property, path.into_actions()))
}

/// The shortest path to a failure of `property`, no longer than `found`: a breadth-first search
/// for a path one step shorter than the best so far, until there is none (usually the first
/// try: stateright's breadth-first path is the shortest but for a few steps at most).
fn shortest<W: Workload>(
    model: &RecipeModel<W>,
    property: &'static str,
    found: &[Action],
) -> Vec<Action> {
    let mut best = found.to_vec();
    while let Some(shorter) = best
        .len()
        .checked_sub(1)
        .and_then(|length| breadth_first_until(model, property, length, None))
    {
        best = shorter;
    }
    best
}

/// A path of at most `length` actions to a failure of `property`, searching breadth first
/// (within about `max_states` generated states).
fn breadth_first_until<W: Workload>(
    model: &RecipeModel<W>,
    property: &'static str,
    length: usize,
    max_states: Option<usize>,
) -> Option<Vec<Action>> {
    let mut builder = builder(model, false, false, &Reached::default())
        .target_max_depth(length + 2)
        .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([property])));
    if let Some(max_states) = max_states {
        builder = builder.target_state_count(max_states);
    }
    builder
        .spawn_bfs()
        .join()
        .discovery(property)
        .map(|path| path.into_actions())
}
