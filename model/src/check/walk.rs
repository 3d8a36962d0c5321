//! Seeded random walks over the checker's model, for the spaces an exhaustive search cannot
//! finish: the sharded job with a session expiry, and with three instances under the standard
//! budget.
//!
//! # What a walk is
//!
//! A walk starts at the model's initial state and takes one enabled action at a time, as the
//! exhaustive search would, until no action is enabled, a property fails, it goes round a loop
//! (below), or it has taken [`WalkLimits::max_depth`] steps. After every step it asks each property what the
//! exhaustive search asks: an `always` property (and "leader elected", at quiescence) must
//! hold, and a `sometimes` property is marked reached. The steps are the model's own
//! ([`Model::actions`], [`Model::next_state`]), partial-order reduction and forgetting
//! included, so a path a walk finds is a path of the model: it replays, prints and exports
//! like a counterexample of the exhaustive search.
//!
//! # How a walk chooses
//!
//! Uniform choice among all enabled actions would spend a fault budget in the first few
//! steps, since faults are enabled almost everywhere. So each walk draws its own fault rate
//! (swarm testing): one fault in 2, 4, ... up to 1,024 chosen steps, uniformly over those ten.
//! At each step it takes a fault (uniformly among the enabled faults) with that chance, and
//! otherwise one of the other actions, uniformly. Walks with a low rate put their faults deep,
//! after an instance has run its items or while the survivor fails them over; walks with a
//! high rate put them early, in the registration and the election.
//!
//! A walk prefers a step to a state it has not been in. The job's poll returns an instance to
//! the state it polled from, and a walk that drew the poll again and again would add nothing;
//! so an action that leads back is taken only when no action leads anywhere new (under the
//! partial-order reduction, a delivery may be the only action, and it closes the poll's loop).
//! After [`LOOP_STEPS`] such steps in a row the walk ends, counted as going round a loop: it is
//! not quiescent, so, as in the exhaustive search, it is not judged for liveness.
//!
//! # Determinism
//!
//! Walk `w` of seed `s` draws from its own ChaCha8 stream: the stream `w` of the generator
//! seeded with `s`. So a walk does not depend on how many walks run before it or after it,
//! and `--seed s --walks n` repeats exactly. The report's trace hash combines every walk's
//! last state, so two runs of one seed can be compared.
//!
//! # What a walk does not do
//!
//! It proves nothing: a pass says only that the walks found no violation. It does not shorten
//! a counterexample to the shortest one: it removes the steps the violation does not need, one
//! run of steps at a time, while the rest still fails, letting the clients finish their work
//! where what is left ends too early ([`shrink`]).

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stateright::{Expectation, Model, Property};

use super::lasso::{DeepLoops, DeepSeen, LIVELOCK};
use super::{Action, RecipeModel, State, Workload};
use crate::shared::hash_of;

/// How many random walks, from which seed, and how long each may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkLimits {
    /// The walks to run (fewer if one finds a violation).
    pub walks: u64,
    /// The seed: walk `w` draws from stream `w` of ChaCha8 seeded with it.
    pub seed: u64,
    /// The longest walk, in steps (the job's polls can loop for ever).
    pub max_depth: usize,
}

/// How many steps in a row a walk may take back to states it has been in before it is ended
/// as going round a loop (the job's poll is three steps: its timer, the server's read, the
/// reply).
pub const LOOP_STEPS: usize = 30;

/// The fault rates a walk draws from: one fault in 2^k chosen steps, for k in this range.
const FAULT_RATE_EXPONENTS: std::ops::RangeInclusive<u32> = 1..=10;

/// A property that failed on a walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkViolation {
    /// The property's name.
    pub property: &'static str,
    /// The walk that found it (counted from 0).
    pub walk: u64,
    /// The walk's steps to the failure, shrunk ([`shrink`]).
    pub path: Vec<Action>,
    /// The walk's own length to the failure, before shrinking.
    pub found_steps: usize,
    /// For a [`LIVELOCK`](super::LIVELOCK) found on a walk cut off at its depth: where the
    /// loop starts in `path` (see `lasso.rs`).
    pub loop_start: Option<usize>,
}

/// The outcome of a run of walks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkVerdict {
    /// Walks run (up to and including the one that found a violation).
    pub walks: u64,
    /// Steps taken over all walks: states generated, with repeats.
    pub steps: u64,
    /// Distinct states visited (not reduced by symmetry).
    pub unique_states: usize,
    /// The longest walk, in steps.
    pub max_depth: usize,
    /// Walks cut off at [`WalkLimits::max_depth`] with actions still enabled.
    pub cut_off: u64,
    /// Walks that ended going round a loop: [`LOOP_STEPS`] steps in a row back to states the
    /// walk had been in, with no other way on (the job's polls, when nothing else is left to
    /// do). Such a walk is not quiescent, so it is not judged for liveness, as in the exhaustive
    /// search.
    pub looped: u64,
    /// Walks that injected at least one fault.
    pub faulted: u64,
    /// The first property that failed, if any.
    pub violation: Option<WalkViolation>,
    /// `sometimes` properties no walk reached.
    pub unreached: Vec<&'static str>,
    /// A hash of every walk's last state, in order: equal for two runs of one seed.
    pub trace_hash: u64,
}

/// Runs `limits.walks` seeded random walks over `model` (see the module docs), stopping at the
/// first violation, whose path is then shrunk.
pub fn walk<W: Workload>(model: &RecipeModel<W>, limits: WalkLimits) -> WalkVerdict {
    walk_observed(model, limits, &mut |_| {})
}

/// [`walk`], telling `observer` how many walks have run (after each walk).
pub fn walk_observed<W: Workload>(
    model: &RecipeModel<W>,
    limits: WalkLimits,
    observer: &mut dyn FnMut(&WalkVerdict),
) -> WalkVerdict {
    let properties = model.properties();
    let initial = model.init_states().remove(0);
    let mut seen: HashSet<u64, BuildHasherDefault<IdentityHasher>> = HashSet::default();
    seen.insert(hash_of(&initial));
    let mut reached = vec![false; properties.len()];
    let mut verdict = WalkVerdict {
        walks: 0,
        steps: 0,
        unique_states: 0,
        max_depth: 0,
        cut_off: 0,
        looped: 0,
        faulted: 0,
        violation: None,
        unreached: Vec::new(),
        trace_hash: 0,
    };
    let mut actions = Vec::new();
    let mut faults = Vec::new();
    let mut this_walk = HashSet::<u64, BuildHasherDefault<IdentityHasher>>::default();
    let mut deep = DeepSeen::default();
    for w in 0..limits.walks {
        let mut rng = ChaCha8Rng::seed_from_u64(limits.seed);
        rng.set_stream(w);
        let fault_one_in = 1u32 << rng.random_range(FAULT_RATE_EXPONENTS);
        let mut state = initial.clone();
        let mut path = Vec::new();
        this_walk.clear();
        this_walk.insert(hash_of(&state));
        let mut failed = judge(model, &properties, &state, &mut reached);
        let mut looped = false;
        let mut steps_back = 0;
        while failed.is_none() && path.len() < limits.max_depth {
            actions.clear();
            model.actions(&state, &mut actions);
            faults.clear();
            faults.extend(actions.iter().filter(|a| a.is_fault()).cloned());
            actions.retain(|a| !a.is_fault());
            if actions.is_empty() && faults.is_empty() {
                break;
            }
            let take_fault =
                !faults.is_empty() && (actions.is_empty() || rng.random_ratio(1, fault_one_in));
            let (first, second) = if take_fault {
                (&mut faults, &mut actions)
            } else {
                (&mut actions, &mut faults)
            };
            let mut fallback = None;
            let next = choose(model, &state, first, &this_walk, &mut rng, &mut fallback)
                .or_else(|| choose(model, &state, second, &this_walk, &mut rng, &mut fallback))
                .or(fallback);
            let Some((action, next, hash)) = next else {
                break;
            };
            if this_walk.contains(&hash) {
                steps_back += 1;
                if steps_back == LOOP_STEPS {
                    looped = true;
                    break;
                }
            } else {
                steps_back = 0;
            }
            path.push(action);
            state = next;
            verdict.steps += 1;
            this_walk.insert(hash);
            seen.insert(hash);
            failed = judge(model, &properties, &state, &mut reached);
        }
        verdict.walks += 1;
        verdict.max_depth = verdict.max_depth.max(path.len());
        verdict.looped += u64::from(looped);
        if failed.is_none() && path.len() == limits.max_depth {
            actions.clear();
            model.actions(&state, &mut actions);
            verdict.cut_off += u64::from(!actions.is_empty());
            let sampled = !actions.is_empty() && DeepSeen::sampled(verdict.cut_off);
            if sampled && deep.examine(model, &path) {
                let Some(DeepLoops::Livelock(lasso)) = std::mem::take(&mut deep).verdict(model)
                else {
                    unreachable!("a livelock was found");
                };
                verdict.violation = Some(WalkViolation {
                    property: LIVELOCK,
                    walk: w,
                    found_steps: path.len(),
                    loop_start: Some(lasso.loop_start),
                    path: lasso.path,
                });
                verdict.unique_states = seen.len();
                break;
            }
        }
        verdict.faulted += u64::from(path.iter().any(Action::is_fault));
        verdict.trace_hash = hash_of(&(verdict.trace_hash, hash_of(&state)));
        verdict.unique_states = seen.len();
        if let Some(property) = failed {
            let found_steps = path.len();
            verdict.violation = Some(WalkViolation {
                property,
                walk: w,
                path: shrink(model, property, path),
                found_steps,
                loop_start: None,
            });
            break;
        }
        observer(&verdict);
    }
    if verdict.violation.is_none() {
        verdict.unreached = (properties.iter().zip(&reached))
            .filter(|(p, reached)| p.expectation == Expectation::Sometimes && !**reached)
            .map(|(p, _)| p.name)
            .collect();
    }
    verdict
}

/// A step a walk takes: the action, the state it reaches, and that state's hash.
type Step<W> = (Action, State<W>, u64);

/// Takes one of `pool`'s actions at random that leads somewhere new: its step is taken (an
/// action can be enabled and still take no step) and reaches a state the walk has not been in
/// (`been`; a loop adds no state, and the job's polls would spin in one). Those that do not
/// are left out and another is drawn; the first that leads back is kept in `fallback`, for
/// when no action leads anywhere new (under the partial-order reduction, a client's delivery
/// may be the only action, and it closes a poll's loop).
fn choose<W: Workload>(
    model: &RecipeModel<W>,
    state: &State<W>,
    pool: &mut Vec<Action>,
    been: &HashSet<u64, BuildHasherDefault<IdentityHasher>>,
    rng: &mut ChaCha8Rng,
    fallback: &mut Option<Step<W>>,
) -> Option<Step<W>> {
    while !pool.is_empty() {
        let action = pool.swap_remove(rng.random_range(0..pool.len()));
        if let Some(next) = model.next_state(state, action.clone()) {
            let hash = hash_of(&next);
            if !been.contains(&hash) {
                return Some((action, next, hash));
            }
            fallback.get_or_insert((action, next, hash));
        }
    }
    None
}

/// Marks the `sometimes` properties `state` reaches, and returns the first other property that
/// fails in it, if any.
fn judge<W: Workload>(
    model: &RecipeModel<W>,
    properties: &[Property<RecipeModel<W>>],
    state: &State<W>,
    reached: &mut [bool],
) -> Option<&'static str> {
    let mut failed = None;
    for (property, reached) in properties.iter().zip(reached) {
        if property.expectation == Expectation::Sometimes && *reached {
            continue;
        }
        let holds = (property.condition)(model, state);
        match property.expectation {
            Expectation::Sometimes => *reached |= holds,
            _ if !holds && failed.is_none() => failed = Some(property.name),
            _ => {}
        }
    }
    failed
}

/// Replays `path` from the initial state, and returns the path to the first failure of
/// `property`, if one comes within `max_steps` steps, where:
///
/// - a step of `path` that is not enabled where it comes waits for the clients' news: while a
///   client has news, the model offers only its delivery (its partial-order reduction), so
///   that delivery is taken first; a step still not enabled then rejects the path;
/// - after `path`, the clients run on by themselves: the first enabled action that is not a
///   fault, as the model lists them (an abandoned session's expiry counts as the clients' own,
///   since the server always comes to it).
///
/// Both matter once steps are taken out of a path: a client's reply may then come before its
/// delivery was due, and a property judged only where the clients have finished (an
/// `eventually` one, such as "no shard lost") is judged only after their work left is done.
fn failing_path<W: Workload>(
    model: &RecipeModel<W>,
    property: &'static str,
    path: &[Action],
    max_steps: usize,
) -> Option<Vec<Action>> {
    let properties = model.properties();
    // (Not a property of this model, as with `one_invariant` set: nothing replays.)
    let property = properties.iter().find(|p| p.name == property)?;
    let fails = |state: &State<W>| !(property.condition)(model, state);
    let mut state = model.init_states().remove(0);
    let mut enabled = Vec::new();
    let mut failing = Vec::new();
    let mut path = path.iter();
    let mut next = path.next();
    while failing.len() < max_steps {
        if fails(&state) {
            return Some(failing);
        }
        enabled.clear();
        model.actions(&state, &mut enabled);
        let action = match next {
            Some(action) if enabled.contains(action) => {
                next = path.next();
                action
            }
            Some(_) => enabled
                .iter()
                .find(|action| matches!(action, Action::Deliver(_)))?,
            None => enabled.iter().find(|action| !injected(action))?,
        };
        state = model.next_state(&state, action.clone())?;
        failing.push(action.clone());
    }
    fails(&state).then_some(failing)
}

/// Whether `action` is a fault injected by the search, not a step the clients or the server
/// take by themselves (an abandoned session's expiry is the server's own: it always comes).
fn injected(action: &Action) -> bool {
    action.is_fault() && !matches!(action, Action::ServerExpireOld(_))
}

/// A shorter path that still fails `property`: runs of steps are taken out, the longest runs
/// first (half the path, a quarter, ... one step), wherever what is left still replays (every
/// step enabled where it is taken) and still fails, until no run can go. What is left may end
/// before the failure, where a client still has work to do: the clients then run on by
/// themselves (the first enabled action that is not a fault, as the model lists them), and
/// the result counts if it fails in fewer steps than the best path so far. Where a step taken
/// out leaves a later one not yet enabled, the delivery the model's partial-order reduction
/// insists on is taken first.
///
/// It keeps every fault of `path` that comes before the failure (an abandoned session's
/// expiry by the server is no fault): the simulator replays a counterexample's faults, not its interleaving, so a path shrunk
/// past them would be one only the model's interleaving shows. The sharded job's
/// `no-cycle-claim` runs an item twice with no fault at all in the model (an instance joins
/// while the other runs the first cycle, and the new sharding gives it the item again), which
/// no seed of the simulator shows, since its instances join before the cron first fires; its
/// counterexample under an expiry replays in the simulator because the expiry stays. Whether a
/// violation needs its faults is a question for a check without them (`--faults none`).
///
/// This is delta debugging on the path, not a search: the path it returns need not be the
/// shortest one. Every path it returns is one the model can take: its steps are checked
/// enabled, so it replays, in the model and, exported, in the simulator.
///
/// `path` must be a path of `model` itself, as its partial-order reduction lists the steps:
/// a path found by a search that reduced by symmetry is one of that search's model
/// (`symmetric` set), whose reduction delivers first the news of the client the canonical
/// renaming puts first. Given a path `model` does not take to a failure of `property`, it
/// returns the path unchanged, as found: a violation is never lost to its shrinking.
pub fn shrink<W: Workload>(
    model: &RecipeModel<W>,
    property: &'static str,
    path: Vec<Action>,
) -> Vec<Action> {
    let Some(mut best) = failing_path(model, property, &path, path.len()) else {
        return path;
    };
    loop {
        let before = best.len();
        let mut run = best.len().div_ceil(2);
        while run >= 1 {
            let mut start = 0;
            while start < best.len() {
                let end = (start + run).min(best.len());
                // The run's faults stay (see above).
                let faults = best[start..end].iter().filter(|action| injected(action));
                let candidate: Vec<Action> = (best[..start].iter())
                    .chain(faults)
                    .chain(&best[end..])
                    .cloned()
                    .collect();
                // Only a path shorter than the best counts.
                let shorter = (candidate.len() < best.len())
                    .then(|| failing_path(model, property, &candidate, best.len() - 1))
                    .flatten();
                match shorter {
                    Some(shorter) => best = shorter,
                    None => start += run,
                }
            }
            run /= 2;
        }
        if best.len() == before {
            return best;
        }
    }
}

/// Hashes a `u64` that is a hash already to itself (the visited set's keys).
#[derive(Default)]
struct IdentityHasher(u64);

impl std::hash::Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}
