//! The partial-order reduction is sound only if what it explores first commutes with what it
//! puts off. Where the model's `actions` offer only one client's news and timers (the ample
//! set), every other action enabled there must stay enabled after each of them, and taking the
//! two in either order must reach the same server, clients and queues (the history may differ
//! in order: the properties do not read the order of a client's steps among the others').
//!
//! These tests walk each recipe along seeded random paths with every kind of fault, and check
//! that at every state where the reduction applies. A fault that races a client's step (a
//! leader change failing the request the step issues, a client-side expiry failing it before
//! or after the client hears of it) would fail here; the model does not reduce where one can.
//!
//! One step is not enough: the ample-set condition is about every path of actions put off.
//! So from each such state a few random paths of actions put off are taken too, and every step
//! of them must commute with every ample action where it is taken, leave those enabled, and
//! not let the chosen client act. That found a race the single steps missed: the client's own
//! outbox, served by steps put off, empties, and a leader change then races the request its
//! step issues; the model now keeps such a client unchosen whenever a leader change is left.
//!
//! Two exceptions are allowed, by design:
//!
//! - An expiry, server-side or client-side, is offered only to a client still using the
//!   recipe, so a step that finishes its application disables it. Expiring a client that is
//!   about to finish, and is done with the recipe's nodes, is not a behaviour the properties
//!   judge.
//! - A client that processes its expiry opens a new session at the server, which takes the
//!   next zxid: a write of another client served before or after it gets another zxid. The
//!   two states differ in that numbering only (every zxid keeps its order), and the recipes
//!   and properties read zxids only for their order. Such a pair is held to the same server
//!   but for zxids: the same nodes with the same data and versions, the same sessions.
//!
//! End to end, small checks of every recipe, correct and known-bad, run with the reduction and
//! without it ([`RecipeModel::partial_order`]): each must give the same verdict, and reach the
//! same `sometimes` checks.
#![cfg(not(madsim))]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stateright::Model;
use zkh_model::check::{
    check_within, Acting, Action, ElectionWorkload, FaultBudget, Inbound, JobWorkload,
    LatchWorkload, Limits, LockWorkload, MasterWorkload, RecipeModel, State, Workload,
};
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::event::SessionEvent;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;

/// Every kind of fault, once.
const EVERY_FAULT: &str =
    "drop-request=1,drop-reply=1,expire=1,client-expire=1,leader-change=1,crash=1";
const WALKS: u64 = 40;
const MAX_STEPS: usize = 150;

fn model<W: Workload>(workload: W, clients: usize, faults: &str) -> RecipeModel<W> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    RecipeModel::new(workload, clients, budget, Acting::CaughtUp)
}

/// Whether `a` and `b` reached the same server, clients, queues and fault budget.
fn same_but_history<W: Workload>(a: &State<W>, b: &State<W>) -> bool {
    a.zk == b.zk
        && a.abandoned == b.abandoned
        && a.budget == b.budget
        && a.resource == b.resource
        && a.seats.len() == b.seats.len()
        && (a.seats.iter().zip(&b.seats)).all(|(a, b)| a.client == b.client && a.queues == b.queues)
}

/// Whether `action` in `state` is a client processing its expiry (and so opening a session).
fn opens_a_session<W: Workload>(state: &State<W>, action: &Action) -> bool {
    matches!(action, Action::Deliver(c) if matches!(
        state.queues(*c).inbox.front(),
        Some(Inbound::Session(SessionEvent::Expired))
    ))
}

/// Whether `a` and `b` hold the same nodes (paths, data, versions, owners) and sessions, and
/// have used as many zxids.
fn same_tree_but_zxids<W: Workload>(a: &State<W>, b: &State<W>) -> bool {
    let nodes = |state: &State<W>| -> Vec<_> {
        (state.zk.tree().nodes())
            .map(|(path, node)| {
                let shape = (
                    node.version,
                    node.cversion,
                    node.ephemeral_owner,
                    node.creations,
                );
                (path.to_owned(), node.data.clone(), shape)
            })
            .collect()
    };
    let sessions = |state: &State<W>| state.zk.sessions().keys().copied().collect::<Vec<_>>();
    nodes(a) == nodes(b)
        && sessions(a) == sessions(b)
        && a.zk.last_zxid() == b.zk.last_zxid()
        && a.budget == b.budget
}

fn every_action<W: Workload>(model: &RecipeModel<W>, state: &State<W>) -> Vec<Action> {
    let mut actions = Vec::new();
    model.every_action(state, &mut actions);
    actions
}

/// An expiry of the client that `ample` steps, disabled because the step finished its
/// application (the one exception, see the module docs).
fn expiry_of_a_finished_client<W: Workload>(
    model: &RecipeModel<W>,
    after: &State<W>,
    deferred: &Action,
) -> bool {
    match deferred {
        Action::Expire(c) | Action::ClientExpire(c) => {
            model.workload.finished(&after.client(*c).app)
        }
        _ => false,
    }
}

/// Checks that `first` (a step the reduction explores in `state`, reaching `after_first`,
/// where `still` is enabled) and `deferred` (an action it puts off) commute: `deferred` stays
/// enabled after `first`, `first` after `deferred`, and the two orders reach the same state.
fn commute<W: Workload>(
    model: &RecipeModel<W>,
    state: &State<W>,
    first: &Action,
    after_first: &State<W>,
    still: &[Action],
    deferred: &Action,
    context: &str,
) {
    if !still.contains(deferred) {
        assert!(
            expiry_of_a_finished_client(model, after_first, deferred),
            "{context}: {first:?} disables {deferred:?}"
        );
        return;
    }
    let one = model
        .next_state(after_first, deferred.clone())
        .expect("an enabled action");
    let other = model
        .next_state(state, deferred.clone())
        .and_then(|next| model.next_state(&next, first.clone()))
        .unwrap_or_else(|| panic!("{context}: {deferred:?} disables {first:?}"));
    if opens_a_session(state, first) {
        assert!(
            same_tree_but_zxids(&one, &other),
            "{context}: {first:?} and {deferred:?} differ in more than zxids"
        );
        return;
    }
    assert!(
        same_but_history(&one, &other),
        "{context}: {first:?} and {deferred:?} do not commute"
    );
}

/// Paths of deferred actions tried from each state where the reduction applies.
const DEFERRED_PATHS: usize = 4;
/// Their length at most.
const DEFERRED_STEPS: usize = 12;

/// The ample set's condition along paths, not only single steps: from `state`, where the
/// reduction explores only `ample` (client `c`'s news and timers), random paths of actions it
/// puts off must keep every ample action enabled, must not let `c` act before its news, and
/// every step of them must commute with every ample action where it is taken. A path of
/// other clients' steps can reach an action that races `c`'s step though none races it in
/// `state` (another client's write enabling a stale act, say): one step would not show it.
fn deferred_paths_commute<W: Workload>(
    model: &RecipeModel<W>,
    state: &State<W>,
    c: usize,
    ample: &[Action],
    rng: &mut ChaCha8Rng,
    context: &str,
) {
    for attempt in 0..DEFERRED_PATHS {
        let mut here = state.clone();
        let mut taken = Vec::new();
        for _ in 0..DEFERRED_STEPS {
            let every = every_action(model, &here);
            let context = format!("{context}, then {taken:?} (path {attempt})");
            assert!(
                !every.contains(&Action::Act(c)),
                "{context}: client {c} may act before its news"
            );
            let deferred: Vec<&Action> = every.iter().filter(|a| !ample.contains(a)).collect();
            if deferred.is_empty() {
                break;
            }
            let step = deferred[rng.random_range(0..deferred.len())].clone();
            for first in ample {
                // Only the client's own steps change its timers and inbox, and none is taken
                // here.
                assert!(
                    every.contains(first),
                    "{context}: {first:?} is no longer enabled"
                );
                let after_first = model.next_state(&here, first.clone()).expect("enabled");
                let still = every_action(model, &after_first);
                commute(model, &here, first, &after_first, &still, &step, &context);
            }
            let Some(next) = model.next_state(&here, step.clone()) else {
                break;
            };
            taken.push(step);
            here = next;
        }
    }
}

/// Checks the reduction at every state of `WALKS` random walks; returns at how many states it
/// applied.
fn ample_sets_commute<W: Workload>(
    name: &str,
    model: &RecipeModel<W>,
    walks: u64,
    max_steps: usize,
) -> usize {
    let mut reduced_states = 0;
    for seed in 0..walks {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut state = model.init_states().remove(0);
        let mut path = Vec::new();
        for _ in 0..max_steps {
            let mut ample = Vec::new();
            model.actions(&state, &mut ample);
            let every = every_action(model, &state);
            let deferred: Vec<&Action> = every.iter().filter(|a| !ample.contains(a)).collect();
            if !deferred.is_empty() {
                reduced_states += 1;
            }
            let context = format!("{name}, seed {seed}, after {path:?}");
            for first in &ample {
                let Some(after_first) = model.next_state(&state, first.clone()) else {
                    continue;
                };
                let still = every_action(model, &after_first);
                for &deferred in &deferred {
                    commute(
                        model,
                        &state,
                        first,
                        &after_first,
                        &still,
                        deferred,
                        &context,
                    );
                }
            }
            // Nothing put off may let the chosen client do anything but what was explored:
            // act on the resource, say, before its news, which the news might change.
            let chosen = ample.iter().find_map(|action| match action {
                Action::Deliver(c) => Some(*c),
                _ => None,
            });
            if let (Some(c), false) = (chosen, deferred.is_empty()) {
                for &deferred in &deferred {
                    let Some(next) = model.next_state(&state, deferred.clone()) else {
                        continue;
                    };
                    assert!(
                        !every_action(model, &next).contains(&Action::Act(c)),
                        "{context}: {deferred:?} lets client {c} act before its news"
                    );
                }
                deferred_paths_commute(model, &state, c, &ample, &mut rng, &context);
            }
            if ample.is_empty() {
                break;
            }
            let action = ample[rng.random_range(0..ample.len())].clone();
            let Some(next) = model.next_state(&state, action.clone()) else {
                break;
            };
            path.push(action);
            state = next;
        }
    }
    reduced_states
}

fn commutes<W: Workload>(name: &str, model: &RecipeModel<W>) {
    let reduced = ample_sets_commute(name, model, WALKS, MAX_STEPS);
    assert!(
        reduced > 100,
        "{name}: the reduction applied at {reduced} states only"
    );
}

#[test]
fn the_lock_and_the_latch_reduce_soundly() {
    for variant in [LockVariant::Correct, LockVariant::Herd] {
        commutes("lock", &model(LockWorkload { variant }, 3, EVERY_FAULT));
    }
    // The client chosen as a symmetry-reducing search chooses it (by its canonical place, not
    // its index).
    let canonical = model(
        LockWorkload {
            variant: LockVariant::Correct,
        },
        3,
        EVERY_FAULT,
    )
    .choosing_news_canonically();
    commutes("lock, canonical choice", &canonical);
    // Acting on stale news: a holder with news is not chosen, or its act would come only
    // after its news.
    let fenced = RecipeModel {
        acting: Acting::Fenced,
        ..model(
            LockWorkload {
                variant: LockVariant::Correct,
            },
            3,
            EVERY_FAULT,
        )
    };
    commutes("lock, fenced", &fenced);
    for variant in [LatchVariant::Correct, LatchVariant::NoOwnerCheck] {
        commutes("latch", &model(LatchWorkload { variant }, 3, EVERY_FAULT));
    }
}

#[test]
fn the_elections_reduce_soundly() {
    let election = ElectionWorkload {
        variant: ElectionVariant::Correct,
    };
    commutes("job election", &model(election, 3, EVERY_FAULT));
    commutes("master", &model(MasterWorkload::default(), 3, EVERY_FAULT));
}

#[test]
fn the_sharded_job_reduces_soundly() {
    let job = JobWorkload::new(JobVariant::Correct);
    commutes("job", &model(job.clone(), 2, EVERY_FAULT));
    // The job's leader holds a spare trigger that another instance's write can enable: acting
    // on stale news, it is not chosen while it holds one.
    let fenced = RecipeModel {
        acting: Acting::Fenced,
        ..model(job, 2, EVERY_FAULT)
    };
    commutes("job, fenced", &fenced);
}

/// Checks `model` with the partial-order reduction and without it (and without symmetry
/// reduction, so that nothing else differs): the same verdict, the same `sometimes` checks
/// reached, and no more states with it. Returns the two counts.
fn same_verdict<W: Workload>(name: &str, model: &RecipeModel<W>) -> [usize; 2] {
    let limits = Limits {
        symmetry: false,
        ..Limits::default()
    };
    let reduced = check_within(model, limits);
    let every = RecipeModel {
        partial_order: false,
        ..model.clone()
    };
    let full = check_within(&every, limits);
    assert!(reduced.complete && full.complete, "{name}");
    let property = |verdict: &zkh_model::check::Verdict| {
        verdict
            .violation
            .as_ref()
            .map(|violation| violation.property)
    };
    assert_eq!(
        property(&reduced),
        property(&full),
        "{name}: the same verdict"
    );
    assert_eq!(
        reduced.unreached, full.unreached,
        "{name}: the same sometimes reached"
    );
    if reduced.violation.is_none() {
        assert!(
            reduced.unique_states < full.unique_states,
            "{name}: the reduction reduces"
        );
    }
    println!(
        "{name}: {:?}, {} states reduced, {} without the reduction",
        property(&reduced),
        reduced.unique_states,
        full.unique_states
    );
    [reduced.unique_states, full.unique_states]
}

#[test]
fn the_reduction_keeps_the_verdicts_of_correct_recipes() {
    for faults in [
        "drop-reply=1,expire=1",
        "leader-change=1,drop-request=1",
        "client-expire=1,crash=1",
    ] {
        let lock = LockWorkload {
            variant: LockVariant::Correct,
        };
        same_verdict(&format!("lock, {faults}"), &model(lock, 2, faults));
        let latch = LatchWorkload {
            variant: LatchVariant::Correct,
        };
        same_verdict(&format!("latch, {faults}"), &model(latch, 2, faults));
        let election = ElectionWorkload {
            variant: ElectionVariant::Correct,
        };
        same_verdict(
            &format!("job election, {faults}"),
            &model(election, 2, faults),
        );
    }
    same_verdict(
        "master, every fault",
        &model(MasterWorkload::default(), 2, EVERY_FAULT),
    );
}

#[test]
fn the_reduction_keeps_the_verdicts_of_known_bad_variants() {
    let lock = |variant| LockWorkload { variant };
    same_verdict("herd", &model(lock(LockVariant::Herd), 3, "none"));
    same_verdict(
        "unprotected",
        &model(lock(LockVariant::Unprotected), 2, "drop-reply=1"),
    );
    let unfenced = RecipeModel {
        acting: Acting::Unfenced,
        ..model(lock(LockVariant::Correct), 2, "expire=1")
    };
    same_verdict("lock, unfenced", &unfenced);
    let latch = |variant| LatchWorkload { variant };
    same_verdict(
        "trust-predecessor",
        &model(latch(LatchVariant::TrustPredecessor), 3, "expire=1"),
    );
    same_verdict(
        "no-owner-check",
        &model(latch(LatchVariant::NoOwnerCheck), 2, "client-expire=1"),
    );
    let no_watch = MasterWorkload {
        variant: MasterVariant::NoWatch,
    };
    same_verdict("master no-watch", &model(no_watch, 2, "expire=1"));
    let check_then_write = RecipeModel {
        acting: Acting::Unfenced,
        ..model(
            ElectionWorkload {
                variant: ElectionVariant::CheckThenWrite,
            },
            2,
            "none",
        )
    };
    same_verdict("check-then-write", &check_then_write);
}
