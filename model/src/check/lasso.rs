//! Livelock: a path that comes back to a state it has been in, modulo the values that only grow,
//! with nothing a property reads changing on the way round, and every step that stayed possible
//! taken. Such a path can go round for ever: the recipe never settles.
//!
//! # Why the search needs this
//!
//! A recipe that keeps issuing requests without getting anywhere (a participant that deletes its
//! node and queues again whenever it is not first, say) makes every round a new state: the zxid,
//! the sequence suffix and the counters of the tree all move on. The depth-first search never
//! meets a state twice on such a path, goes down it until [`Limits::max_depth`], and gives up
//! there, which reads as "the space is large" when the truth is "this recipe never settles".
//!
//! # The abstract state
//!
//! Two states are taken for the same place in the recipe when they are equal once every number
//! in them is replaced by its *rank* among the numbers of its kind in that state. A number's
//! kind is the text just before it in the state's printed form: its field's name and the
//! punctuation between (`czxid: `, `version: `, `SessionId(`), or the letters of a path before
//! a sequence suffix (`-latch-`). So zxids, sequence suffixes, versions, session ids, request
//! ids and counters are compared by their order, not their value, and a participant that queued
//! again at the back is where it was. The fault budget is compared exactly (a loop that spends a
//! fault cannot go round for ever), and the history is left out (what a property reads of it is
//! judged apart, below). This is coarser than the state: it can take two places for one where a
//! number's value mattered, so what it finds is checked before it is reported.
//!
//! # What makes a loop a livelock
//!
//! On one path, states `s_i` and `s_j` (`i < j`) with the same abstract state, such that:
//!
//! - *no progress*: the path from `s_i` to `s_j` added nothing to the shared history (no role
//!   taken or lost, no act on the resource, no fault, no loss of connection), judged on the path
//!   replayed with its whole history ([`RecipeModel::forget_settled`] off);
//! - *busy*: the server committed at least one write on the way (its zxid moved). A loop of
//!   reads only is a poll, which a recipe may do at rest by design (the sharded job's scheduler
//!   polls for its next cycle), and is not reported;
//! - *fair*: every step of a client (its server's service, a delivery, a timer, an act) that is
//!   possible in every state of the loop is taken in it. A client that merely polls while
//!   another could move on is not a livelock: the scheduler would let the other move;
//! - *it repeats*: taking the loop's steps again from `s_j`, each by its kind and client (a
//!   timer by the client's first pending one), twice, comes back to the same abstract state.
//!
//! # Where the checker looks
//!
//! Only where it would otherwise give up: on each of the first [`DEEP_PATHS`] paths that go
//! past [`Limits::max_depth`], and then on the 2^k-th, as the search meets them. The path is
//! first extended by the steps of a fair scheduler (depth first starves some client all the way
//! down), then the first lasso on it (earliest end, then earliest start) is taken, and its stem
//! is shortened: breadth first to a state abstractly equal to the loop's start from which the
//! loop is still a livelock, then runs of steps taken out. A livelock is reported as the
//! liveness property [`LIVELOCK`], with the stem and the loop, unless the search finds an
//! invariant's violation within [`LIVELOCK_GRACE_STATES`] more states, which it reports
//! instead. So a check that finishes pays nothing, and one that gives up at its depth says
//! whether any path it cut off came back to where it had been.
//!
//! # Not covered
//!
//! A loop back to a state *exactly* equal is cut by the visited set before it is walked twice;
//! it has no write (the zxid would have moved), so it is a poll, which is not reported anyway.
//! Nor does the search look for loops on paths that end before the depth limit, or on paths it
//! cut off but did not sample.
//!
//! [`Limits::max_depth`]: super::Limits::max_depth

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::hash::{Hash, Hasher};

use stateright::Model;

use super::depth_first::fingerprint;
use super::{Action, RecipeModel, State, Workload};
use crate::shared::fixed_hasher;

/// The liveness property a lasso violates.
pub const LIVELOCK: &str = "livelock";

/// How many more states a search explores after it found a livelock, looking for an
/// invariant's violation, which is reported first (a safety violation says more than a loop).
pub const LIVELOCK_GRACE_STATES: usize = 1_000_000;

/// How many of the first paths cut off at the depth limit a search examines for a livelock
/// (after them, the 2^k-th).
pub const DEEP_PATHS: usize = 8;

/// How many steps of a fair scheduler extend a deep path before a lasso is looked for on it.
const FAIR_STEPS: usize = 200;

/// How many states the breadth-first search for a shorter stem looks at, at most.
const STEM_STATES: usize = 50_000;

/// How many more times a loop is taken to confirm that it repeats.
const CONFIRMATIONS: usize = 2;

/// A lasso: a path whose steps from `loop_start` on lead back to the abstract state they left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lasso {
    /// The stem, then the loop.
    pub path: Vec<Action>,
    /// Where the loop starts: `path[loop_start..]` is the loop.
    pub loop_start: usize,
}

impl Lasso {
    /// What the lasso shows, in one sentence, with its steps numbered from 1.
    pub fn detail(&self) -> String {
        format!(
            "steps {} to {} lead back to the state after step {} (up to zxids, sequence \
             numbers, ids and counters) with no role taken or lost, no act and no fault on the \
             way, and every client's step that stayed possible taken: the recipe can repeat \
             them for ever and never settle",
            self.loop_start + 1,
            self.path.len(),
            self.loop_start
        )
    }
}

/// What a search found on the paths it cut off at its depth limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeepLoops {
    /// A livelock.
    Livelock(Lasso),
    /// Some path came back to an abstract state it had been in, but every such loop made
    /// progress, was unfair to a client, or did not repeat.
    RepeatedNotLivelock {
        /// The paths examined.
        paths: usize,
    },
    /// No path came back to an abstract state it had been in.
    NotRepeated {
        /// The paths examined.
        paths: usize,
    },
}

/// What a search saw of the paths it cut off at its depth limit.
#[derive(Clone, Debug, Default)]
pub(super) struct DeepSeen {
    /// Paths examined.
    pub paths: usize,
    /// Whether one came back to an abstract state it had been in.
    pub repeated: bool,
    /// The first livelock found on one, its stem not yet shortened.
    pub livelock: Option<Lasso>,
}

impl DeepSeen {
    /// Whether the `nth` path cut off (from 1) is examined: one of the first [`DEEP_PATHS`], or
    /// the 2^k-th after them, so a long search samples its whole course at a cost that grows
    /// with the log of the paths cut off.
    pub fn sampled(nth: u64) -> bool {
        nth <= DEEP_PATHS as u64 || nth.is_power_of_two()
    }

    /// Examines `path`, cut off at the depth limit of a search of `model` and sampled
    /// ([`DeepSeen::sampled`]), unless a livelock was found already; true if it finds one.
    pub fn examine<W: Workload>(&mut self, model: &RecipeModel<W>, path: &[Action]) -> bool {
        if self.livelock.is_some() {
            return false;
        }
        self.paths += 1;
        let whole = RecipeModel {
            forget_settled: false,
            ..model.clone()
        };
        let (lasso, repeated) = lasso_on(&whole, path);
        self.repeated |= repeated;
        self.livelock = lasso;
        self.livelock.is_some()
    }

    /// The verdict's account of it, with the stem of a livelock shortened (in `model`): none
    /// when no path was cut off.
    pub fn verdict<W: Workload>(self, model: &RecipeModel<W>) -> Option<DeepLoops> {
        let whole = RecipeModel {
            forget_settled: false,
            ..model.clone()
        };
        match (self.livelock, self.paths, self.repeated) {
            (Some(lasso), _, _) => {
                let lasso = shorten_stem(&whole, lasso);
                Some(DeepLoops::Livelock(shrink_stem(&whole, lasso)))
            }
            (None, 0, _) => None,
            (None, paths, true) => Some(DeepLoops::RepeatedNotLivelock { paths }),
            (None, paths, false) => Some(DeepLoops::NotRepeated { paths }),
        }
    }
}

/// The first lasso on `path` in `model` (which keeps the whole history), and whether any
/// abstract state came back on it.
fn lasso_on<W: Workload>(model: &RecipeModel<W>, path: &[Action]) -> (Option<Lasso>, bool) {
    let mut states = vec![model.init_states().remove(0)];
    let mut path = path.to_vec();
    for (at, action) in path.iter().enumerate() {
        let last = states.last().expect("a path starts somewhere");
        match model.next_state(last, action.clone()) {
            Some(next) => states.push(next),
            None => {
                path.truncate(at);
                break;
            }
        }
    }
    continue_fairly(model, &mut path, &mut states);
    let keys: Vec<u64> = states.iter().map(abstract_key).collect();
    let mut seen_at: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    let mut repeated = false;
    for (j, key) in keys.iter().enumerate() {
        let earlier = seen_at.entry(*key).or_default();
        for &i in earlier.iter() {
            repeated = true;
            let lasso = Lasso {
                path: path[..j].to_vec(),
                loop_start: i,
            };
            if is_livelock(model, &states[i..=j], &lasso) {
                return (Some(lasso), true);
            }
        }
        earlier.push(j);
    }
    (None, repeated)
}

/// `lasso` with the shortest stem found breadth first (within [`STEM_STATES`] states) to a
/// state abstractly equal to where its loop starts, from which the loop, taken again step by
/// step, is still a livelock; `lasso` itself if there is none.
fn shorten_stem<W: Workload>(model: &RecipeModel<W>, lasso: Lasso) -> Lasso {
    let start = replayed(model, &lasso.path[..lasso.loop_start]);
    let key = abstract_key(&start);
    let steps = &lasso.path[lasso.loop_start..];
    let mut seen = BTreeSet::new();
    let mut queue: Vec<(State<W>, Option<usize>, Option<Action>)> = Vec::new();
    for state in model.init_states() {
        seen.insert(fingerprint(&state));
        queue.push((state, None, None));
    }
    let mut actions = Vec::new();
    let mut at = 0;
    while at < queue.len().min(STEM_STATES) {
        if abstract_key(&queue[at].0) == key {
            let mut stem = Vec::new();
            let mut node = at;
            while let (Some(parent), Some(action)) = (queue[node].1, &queue[node].2) {
                stem.push(action.clone());
                node = parent;
            }
            stem.reverse();
            if stem.len() >= lasso.loop_start {
                break;
            }
            if let Some(shorter) = loop_from(model, &queue[at].0, stem, steps) {
                return shorter;
            }
        }
        model.actions(&queue[at].0, &mut actions);
        for action in actions.drain(..) {
            if let Some(next) = model.next_state(&queue[at].0, action.clone()) {
                if seen.insert(fingerprint(&next)) {
                    queue.push((next, Some(at), Some(action)));
                }
            }
        }
        at += 1;
    }
    lasso
}

/// `lasso` with runs of its stem's steps taken out, longest runs first, while what is left
/// still leads (each step taken by its kind and client) to a loop that is a livelock.
fn shrink_stem<W: Workload>(model: &RecipeModel<W>, lasso: Lasso) -> Lasso {
    let mut best = lasso;
    let mut run = best.loop_start.next_power_of_two();
    while run > 0 {
        let mut at = 0;
        while at + run <= best.loop_start {
            let mut stem = best.path[..best.loop_start].to_vec();
            stem.drain(at..at + run);
            match lasso_after(model, &stem, &best.path[best.loop_start..]) {
                Some(shorter) => best = shorter,
                None => at += run,
            }
        }
        run /= 2;
    }
    best
}

/// The lasso of `stem` then `steps`, each step taken by its kind and client, if it is a
/// livelock.
fn lasso_after<W: Workload>(
    model: &RecipeModel<W>,
    stem: &[Action],
    steps: &[Action],
) -> Option<Lasso> {
    let (states, taken_stem) = take_each_like(model, model.init_states().remove(0), stem)?;
    loop_from(model, states.last().expect("a start"), taken_stem, steps)
}

/// The states from `start` through `steps`, each taken by its kind and client ([`like`]), and
/// the steps taken; none if one of them is not possible.
fn take_each_like<W: Workload>(
    model: &RecipeModel<W>,
    start: State<W>,
    steps: &[Action],
) -> Option<(Vec<State<W>>, Vec<Action>)> {
    let mut states = vec![start];
    let mut taken = Vec::with_capacity(steps.len());
    for step in steps {
        let state = states.last().expect("a start");
        let step = like(model, state, step)?;
        states.push(model.next_state(state, step.clone())?);
        taken.push(step);
    }
    Some((states, taken))
}

/// The step possible in `state` (in `model`) like `step`: `step` itself, or for a timer the
/// client's first pending one; none if there is none.
fn like<W: Workload>(model: &RecipeModel<W>, state: &State<W>, step: &Action) -> Option<Action> {
    let step = match step {
        Action::Timer(c, _) => Action::Timer(*c, *state.seats.get(*c)?.client.timers.first()?),
        other => other.clone(),
    };
    let mut possible = Vec::new();
    model.every_action(state, &mut possible);
    possible.contains(&step).then_some(step)
}

/// The lasso of `stem` (which leads to `start`) and `steps` taken again from there step by
/// step, if it is a livelock.
fn loop_from<W: Workload>(
    model: &RecipeModel<W>,
    start: &State<W>,
    stem: Vec<Action>,
    steps: &[Action],
) -> Option<Lasso> {
    let (states, taken) = take_each_like(model, start.clone(), steps)?;
    let loop_start = stem.len();
    let lasso = Lasso {
        path: [stem, taken].concat(),
        loop_start,
    };
    let back = abstract_key(&states[states.len() - 1]) == abstract_key(start);
    (back && is_livelock(model, &states, &lasso)).then_some(lasso)
}

/// The state `path` leads to from the initial state.
fn replayed<W: Workload>(model: &RecipeModel<W>, path: &[Action]) -> State<W> {
    let mut state = model.init_states().remove(0);
    for action in path {
        state = model
            .next_state(&state, action.clone())
            .expect("a lasso's steps are possible");
    }
    state
}

/// Extends `path` (whose states are `states`, from the initial one) by up to
/// [`FAIR_STEPS`] steps of a fair scheduler: of the clients' steps possible (no faults), the one
/// whose kind and client went longest untaken, so that a step possible for ever is taken. A
/// search that went deep may have starved a client all the way down (depth first takes the last
/// client's steps first); what the recipe does under a fair scheduler from there is what decides
/// whether it can go round for ever.
fn continue_fairly<W: Workload>(
    model: &RecipeModel<W>,
    path: &mut Vec<Action>,
    states: &mut Vec<State<W>>,
) {
    let mut last_taken: BTreeMap<(u8, usize), usize> = BTreeMap::new();
    for (at, action) in path.iter().enumerate() {
        if let Some(class) = class(action) {
            last_taken.insert(class, at);
        }
    }
    let mut actions = Vec::new();
    for _ in 0..FAIR_STEPS {
        let state = states.last().expect("a path starts somewhere");
        model.every_action(state, &mut actions);
        let next = (actions.drain(..))
            .filter_map(|action| class(&action).map(|class| (action, class)))
            .min_by_key(|(_, class)| (last_taken.get(class).copied(), *class));
        let Some((action, class)) = next else {
            return;
        };
        let Some(next) = model.next_state(state, action.clone()) else {
            return;
        };
        last_taken.insert(class, path.len());
        path.push(action);
        states.push(next);
    }
}

/// Whether the loop of `lasso`, through `states` (its first state to its last, which is
/// abstractly the first), makes no progress, is fair, and repeats.
fn is_livelock<W: Workload>(model: &RecipeModel<W>, states: &[State<W>], lasso: &Lasso) -> bool {
    let (first, last) = (&states[0], &states[states.len() - 1]);
    let steps = &lasso.path[lasso.loop_start..];
    if last.shared.len() != first.shared.len() || steps.iter().any(Action::is_fault) {
        return false;
    }
    if last.zk.last_zxid() == first.zk.last_zxid() {
        // Reads only: a poll, which a recipe may do at rest by design (the job's scheduler).
        return false;
    }
    let mut always_enabled: Option<BTreeSet<(u8, usize)>> = None;
    let mut actions = Vec::new();
    for state in &states[..states.len() - 1] {
        model.every_action(state, &mut actions);
        let enabled: BTreeSet<_> = actions.drain(..).filter_map(|a| class(&a)).collect();
        always_enabled = Some(match always_enabled {
            None => enabled,
            Some(before) => before.intersection(&enabled).copied().collect(),
        });
    }
    let taken: BTreeSet<_> = steps.iter().filter_map(class).collect();
    if !always_enabled.unwrap_or_default().is_subset(&taken) {
        return false;
    }
    let key = abstract_key(first);
    let mut state = last.clone();
    for _ in 0..CONFIRMATIONS {
        match take_each_like(model, state, steps) {
            Some((states, _)) => state = states.into_iter().last().expect("a start"),
            None => return false,
        }
        if abstract_key(&state) != key {
            return false;
        }
    }
    true
}

/// A client's step, by its kind and client (a timer whatever its id); none for a fault.
fn class(action: &Action) -> Option<(u8, usize)> {
    match action {
        Action::Serve(c) => Some((0, *c)),
        Action::Deliver(c) => Some((1, *c)),
        Action::Timer(c, _) => Some((2, *c)),
        Action::Act(c) => Some((3, *c)),
        _ => None,
    }
}

/// The hash of a state's abstract form (see the module docs).
pub fn abstract_key<W: Workload>(state: &State<W>) -> u64 {
    let mut hasher = fixed_hasher();
    state.budget.hash(&mut hasher);
    ranked(&abstract_text(state)).hash(&mut hasher);
    hasher.finish()
}

/// A state printed without its history, hashes and caches: the server's tree, watches,
/// sessions and last zxid, each client and its connection, the abandoned sessions, and the
/// resource.
pub fn abstract_text<W: Workload>(state: &State<W>) -> String {
    let mut text = String::new();
    let zk = &state.zk;
    for (path, node) in zk.tree().nodes() {
        let _ = write!(text, "{path} {node:?};");
    }
    let _ = write!(
        text,
        "{:?} {:?} last_zxid: {};",
        zk.watches(),
        zk.sessions(),
        zk.last_zxid()
    );
    for seat in &state.seats {
        let _ = write!(text, "{:?} {:?};", seat.client, seat.queues);
    }
    let _ = write!(text, "{:?} {:?}", state.abandoned, state.resource);
    text
}

/// `text` with every run of digits replaced by its rank among the numbers of its kind in
/// `text` (see the module docs).
pub fn ranked(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut numbers: Vec<(usize, usize, &str)> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        numbers.push((start, at, kind_before(text, start)));
    }
    let mut by_kind: BTreeMap<&str, BTreeSet<(usize, &str)>> = BTreeMap::new();
    for &(start, end, kind) in &numbers {
        let digits = text[start..end].trim_start_matches('0');
        by_kind
            .entry(kind)
            .or_default()
            .insert((digits.len(), digits));
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for &(start, end, kind) in &numbers {
        out.push_str(&text[copied..start]);
        let digits = text[start..end].trim_start_matches('0');
        let rank = by_kind[kind]
            .iter()
            .position(|value| *value == (digits.len(), digits))
            .expect("every number was ranked");
        let _ = write!(out, "#{rank}");
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// The kind of the number at `start` of `text`: the punctuation just before it and the name
/// before that (`czxid: `, `SessionId(`, `-latch-`).
fn kind_before(text: &str, start: usize) -> &str {
    let bytes = text.as_bytes();
    let mut at = start;
    let separator = |b: u8| b" :([{=,-".contains(&b);
    while at > 0 && start - at < 4 && separator(bytes[at - 1]) {
        at -= 1;
    }
    while at > 0
        && start - at < 28
        && (bytes[at - 1].is_ascii_alphabetic() || bytes[at - 1] == b'_')
    {
        at -= 1;
    }
    &text[at..start]
}

#[cfg(test)]
mod tests {
    use super::ranked;

    #[test]
    fn numbers_are_ranked_within_their_kind() {
        let before = ranked("czxid: 7, czxid: 9, version: 3, /l/x-latch-0000000004");
        let after = ranked("czxid: 11, czxid: 15, version: 8, /l/x-latch-0000000010");
        assert_eq!(before, after);
        assert_eq!(before, "czxid: #0, czxid: #1, version: #0, /l/x-latch-#0");
        // Order within a kind is kept.
        assert_ne!(ranked("czxid: 7, czxid: 9"), ranked("czxid: 9, czxid: 7"));
        // Two numbers that were equal stay equal, and two that differed stay apart.
        assert_ne!(ranked("czxid: 7, czxid: 7"), ranked("czxid: 7, czxid: 9"));
    }
}
