//! Replay is exact: a state's successors depend on the state and the action alone.
//!
//! A counterexample is a path of actions, and everything after a search replays it: the
//! shortening (breadth first, or [`shrink`] on the path as found), the printing of its steps,
//! the HTML timeline and the export to a scenario file (these last three on a copy of the
//! model that forgets nothing). If a step's successor depended on anything else (a cache kept
//! between states, which thread runs it, the symmetry reduction's renaming, how the state was
//! reached), a path could stop replaying, and the checker would lose the violation it found.
//!
//! So random walks of every recipe (correct and known-bad, under budgets that mix faults) are
//! replayed step by step: on another thread (whose caches are cold), by the model that forgets
//! nothing, and by the symmetric model a search uses; every step must be enabled where it
//! comes, and give the same state. And every violation the checks of the known-bad variants
//! find, depth first, breadth first and on walks, must replay to its failure.
#![cfg(not(madsim))]

use std::hash::{DefaultHasher, Hash, Hasher};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stateright::Model;
use zkh_model::check::{
    check_within, shrink, walk, Acting, Action, ElectionWorkload, FaultBudget, JobWorkload,
    LatchWorkload, Limits, LockWorkload, MasterWorkload, RecipeModel, State, WalkLimits, Workload,
};
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;

/// `workload` run by `clients` clients within `faults`, acting as `acting` says.
fn model<W: Workload>(workload: W, clients: usize, faults: &str, acting: Acting) -> RecipeModel<W> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    RecipeModel::new(workload, clients, budget, acting)
}

/// A state's hash, as it is (not as its class).
fn hash<W: Workload>(state: &State<W>) -> u64 {
    let mut hasher = DefaultHasher::new();
    state.hash(&mut hasher);
    hasher.finish()
}

/// A random walk of at most `depth` steps from walk seed `seed`: one fault in 8 steps where a
/// fault is enabled. Returns the actions taken and the hash of each state reached.
fn random_walk<W: Workload>(
    model: &RecipeModel<W>,
    seed: u64,
    depth: usize,
) -> (Vec<Action>, Vec<u64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut state = model.init_states().remove(0);
    let (mut path, mut hashes) = (Vec::new(), Vec::new());
    let mut actions = Vec::new();
    while path.len() < depth {
        actions.clear();
        model.actions(&state, &mut actions);
        let faults = actions.iter().filter(|action| action.is_fault()).count();
        if faults > 0 && faults < actions.len() && !rng.random_ratio(1, 8) {
            actions.retain(|action| !action.is_fault());
        }
        let mut next = None;
        while next.is_none() && !actions.is_empty() {
            let action = actions.swap_remove(rng.random_range(0..actions.len()));
            next = model
                .next_state(&state, action.clone())
                .map(|next| (action, next));
        }
        let Some((action, next)) = next else { break };
        path.push(action);
        hashes.push(hash(&next));
        state = next;
    }
    (path, hashes)
}

/// Replays `path` in `model`: every step must be enabled where it comes and take a step.
/// Returns the hash of each state reached, and the last state.
fn replay<W: Workload>(
    model: &RecipeModel<W>,
    path: &[Action],
    what: &str,
) -> (Vec<u64>, State<W>) {
    replay_steps(model, path, what, true)
}

/// Replays `path` in the model that forgets nothing, where a counterexample is printed, drawn
/// and exported: every step must take a step. Its partial-order reduction may offer another
/// client's news first where a step comes (whose news a symmetric search takes first depends
/// on the renaming that sorts the clients, and the history is part of what sorts them), so a
/// step need not be among the actions it lists.
fn replay_unreduced<W: Workload>(model: &RecipeModel<W>, path: &[Action], what: &str) -> State<W> {
    let forgetting_nothing = RecipeModel {
        forget_settled: false,
        ..model.clone()
    };
    let what = format!("{what}, forgetting nothing");
    replay_steps(&forgetting_nothing, path, &what, false).1
}

/// Replays `path` in `model`; where `listed`, every step must be among the actions it lists.
fn replay_steps<W: Workload>(
    model: &RecipeModel<W>,
    path: &[Action],
    what: &str,
    listed: bool,
) -> (Vec<u64>, State<W>) {
    let mut state = model.init_states().remove(0);
    let mut hashes = Vec::new();
    let mut actions = Vec::new();
    for (step, action) in path.iter().enumerate() {
        actions.clear();
        model.actions(&state, &mut actions);
        assert!(
            !listed || actions.contains(action),
            "{what}: step {step}, {action:?}, is not enabled on replay (enabled: {actions:?})"
        );
        state = model
            .next_state(&state, action.clone())
            .unwrap_or_else(|| panic!("{what}: step {step}, {action:?}, takes no step on replay"));
        hashes.push(hash(&state));
    }
    (hashes, state)
}

/// `walks` random walks of `model`, each replayed on a fresh thread and by the model that
/// forgets nothing (which must take the same steps); then the same for the symmetric model a
/// search uses (whose partial-order reduction chooses whose news comes first by the clients'
/// canonical places, so its paths are its own: a path is replayed in the model it was found in).
fn walks_replay<W: Workload + Send + Sync + 'static>(name: &str, model: RecipeModel<W>, walks: u64)
where
    RecipeModel<W>: Clone + Send + 'static,
{
    let symmetric = RecipeModel {
        symmetric: true,
        ..model.clone()
    };
    let mut steps = 0;
    for (model, how) in [(model, ""), (symmetric, ", symmetric")] {
        for seed in 0..walks {
            let what = format!("{name}{how}, walk {seed}");
            let (path, hashes) = random_walk(&model, seed, 300);
            steps += path.len();
            let (again, fresh) = (model.clone(), path.clone());
            let on_a_fresh_thread = std::thread::spawn(move || replay(&again, &fresh, "fresh").0)
                .join()
                .unwrap_or_else(|_| panic!("{what}: the replay on a fresh thread failed"));
            assert_eq!(
                on_a_fresh_thread, hashes,
                "{what}: another thread reached other states"
            );
            assert_eq!(
                replay(&model, &path, &what).0,
                hashes,
                "{what}: a second replay differs"
            );
            replay_unreduced(&model, &path, &what);
        }
    }
    assert!(steps > 0, "{name}: the walks took no step");
    println!("{name}: {walks} walks and {walks} symmetric, {steps} steps, each replayed exactly");
}

#[test]
fn every_recipe_replays_its_random_walks_exactly() {
    let budget = "drop-reply=1,client-expire=1";
    walks_replay(
        "lock",
        model(
            LockWorkload {
                variant: LockVariant::Correct,
            },
            3,
            budget,
            Acting::CaughtUp,
        ),
        40,
    );
    walks_replay(
        "latch",
        model(
            LatchWorkload {
                variant: LatchVariant::Correct,
            },
            3,
            "expire=1,drop-request=1",
            Acting::Fenced,
        ),
        40,
    );
    walks_replay(
        "election",
        model(
            ElectionWorkload {
                variant: ElectionVariant::Correct,
            },
            3,
            budget,
            Acting::CaughtUp,
        ),
        40,
    );
    walks_replay(
        "election, unfenced",
        model(
            ElectionWorkload {
                variant: ElectionVariant::CheckThenWrite,
            },
            3,
            "leader-change=1,drop-request=1",
            Acting::Unfenced,
        ),
        40,
    );
    walks_replay(
        "master",
        model(
            MasterWorkload {
                variant: MasterVariant::Correct,
            },
            3,
            "expire=1,drop-reply=1",
            Acting::CaughtUp,
        ),
        40,
    );
    walks_replay(
        "job",
        model(
            JobWorkload::new(JobVariant::Correct),
            2,
            budget,
            Acting::CaughtUp,
        ),
        40,
    );
    walks_replay(
        "job, crash, two cycles",
        model(
            JobWorkload {
                cycles: 2,
                ..JobWorkload::new(JobVariant::TrustOwners)
            },
            3,
            "crash=1,expire=1",
            Acting::CaughtUp,
        ),
        40,
    );
}

/// A violation's path replays to a failure of its property, in the model and in the model that
/// forgets nothing (which prints, draws and exports it).
fn violation_replays<W: Workload>(
    name: &str,
    model: &RecipeModel<W>,
    property: &str,
    path: &[Action],
) {
    let (_, last) = replay(model, path, name);
    let failing = model
        .properties()
        .into_iter()
        .find(|p| p.name == property)
        .unwrap_or_else(|| panic!("{name}: {property} is a property of the model"));
    assert!(
        !(failing.condition)(model, &last),
        "{name}: the path replays but {property} holds at its end"
    );
    let forgetting_nothing = RecipeModel {
        forget_settled: false,
        ..model.clone()
    };
    replay(
        &forgetting_nothing,
        path,
        &format!("{name}, forgetting nothing"),
    );
}

/// The check's violation (depth first, then shortened), the path shrunk again, and a walk's.
fn caught_replays<W: Workload>(name: &str, model: RecipeModel<W>, walks: u64) {
    let limits = Limits {
        max_depth: 400,
        ..Limits::default()
    };
    let verdict = check_within(&model, limits);
    let violation = verdict
        .violation
        .unwrap_or_else(|| panic!("{name}: the check found no violation"));
    violation_replays(name, &model, violation.property, &violation.path);
    let shrunk = shrink(&model, violation.property, violation.path.clone());
    violation_replays(
        &format!("{name}, shrunk"),
        &model,
        violation.property,
        &shrunk,
    );
    let walked = walk(
        &model,
        WalkLimits {
            walks,
            seed: 0,
            max_depth: 400,
        },
    );
    if let Some(found) = walked.violation {
        violation_replays(
            &format!("{name}, walk {}", found.walk),
            &model,
            found.property,
            &found.path,
        );
    }
}

#[test]
fn every_known_bad_variants_violations_replay() {
    caught_replays(
        "lock herd",
        model(
            LockWorkload {
                variant: LockVariant::Herd,
            },
            3,
            "none",
            Acting::CaughtUp,
        ),
        200,
    );
    caught_replays(
        "lock unprotected",
        model(
            LockWorkload {
                variant: LockVariant::Unprotected,
            },
            3,
            "drop-reply=1",
            Acting::CaughtUp,
        ),
        200,
    );
    caught_replays(
        "latch trust-predecessor",
        model(
            LatchWorkload {
                variant: LatchVariant::TrustPredecessor,
            },
            3,
            "expire=1",
            Acting::CaughtUp,
        ),
        200,
    );
    caught_replays(
        "latch no-owner-check",
        model(
            LatchWorkload {
                variant: LatchVariant::NoOwnerCheck,
            },
            3,
            "client-expire=1",
            Acting::CaughtUp,
        ),
        200,
    );
    caught_replays(
        "election check-then-write",
        model(
            ElectionWorkload {
                variant: ElectionVariant::CheckThenWrite,
            },
            3,
            "none",
            Acting::Unfenced,
        ),
        200,
    );
    caught_replays(
        "master no-watch",
        model(
            MasterWorkload {
                variant: MasterVariant::NoWatch,
            },
            3,
            "expire=1",
            Acting::CaughtUp,
        ),
        200,
    );
    caught_replays(
        "job no-cycle-claim",
        model(
            JobWorkload::new(JobVariant::NoCycleClaim),
            2,
            "expire=1",
            Acting::CaughtUp,
        ),
        200,
    );
    caught_replays(
        "job trust-owners",
        model(
            JobWorkload {
                cycles: 2,
                ..JobWorkload::new(JobVariant::TrustOwners)
            },
            2,
            "crash=1",
            Acting::CaughtUp,
        ),
        200,
    );
}

/// Whether `path` takes `model` to a failure of `property`, every step listed where it comes.
fn fails_in<W: Workload>(model: &RecipeModel<W>, property: &str, path: &[Action]) -> bool {
    let mut state = model.init_states().remove(0);
    let mut actions = Vec::new();
    for action in path {
        actions.clear();
        model.actions(&state, &mut actions);
        let next = actions
            .contains(action)
            .then(|| model.next_state(&state, action.clone()))
            .flatten();
        let Some(next) = next else { return false };
        state = next;
    }
    let failing = model.properties().into_iter().find(|p| p.name == property);
    failing.is_some_and(|failing| !(failing.condition)(model, &state))
}

/// The checker's panic "a violation's path replays" (issue: a depth-first violation too deep
/// to shorten breadth first, under symmetry): the search's path was shrunk in the caller's
/// model, which does not reduce by symmetry, and whose partial-order reduction delivers
/// another client's news first where the path's step comes. Violations found on walks of
/// the symmetric model stand for the search's: shrunk in their own model, they replay there;
/// given to a model they are not paths of, shrinking returns them as found, never panics.
#[test]
fn a_violation_found_under_symmetry_is_shrunk_in_its_own_model_and_never_lost() {
    let counts = [
        (
            "latch trust-predecessor",
            symmetric_walks(model(
                LatchWorkload {
                    variant: LatchVariant::TrustPredecessor,
                },
                3,
                "expire=1,drop-reply=1",
                Acting::CaughtUp,
            )),
        ),
        (
            "latch no-owner-check",
            symmetric_walks(model(
                LatchWorkload {
                    variant: LatchVariant::NoOwnerCheck,
                },
                3,
                "client-expire=1,drop-reply=1",
                Acting::CaughtUp,
            )),
        ),
        (
            "election check-then-write",
            symmetric_walks(model(
                ElectionWorkload {
                    variant: ElectionVariant::CheckThenWrite,
                },
                3,
                "drop-reply=1,client-expire=1",
                Acting::Unfenced,
            )),
        ),
        (
            "master no-watch",
            symmetric_walks(model(
                MasterWorkload {
                    variant: MasterVariant::NoWatch,
                },
                3,
                "expire=1,drop-request=1",
                Acting::CaughtUp,
            )),
        ),
    ];
    let (mut found, mut foreign) = (0, 0);
    for (name, (f, n)) in counts {
        println!(
            "{name}: {f} violations on symmetric walks, {n} of them not paths of the plain model"
        );
        found += f;
        foreign += n;
    }
    assert!(found > 0, "the symmetric walks found no violation");
    assert!(
        foreign > 0,
        "every violation found under symmetry was a path of the plain model too: the test no longer covers the panic"
    );
}

/// Violations on 20 seeds of walks of `model` reduced by symmetry: each, shrunk in that model,
/// replays to its failure there; shrunk in the plain model, it is either a failing path of
/// that model or returned as found. Returns how many violations, and how many of them the
/// plain model does not take to the failure.
fn symmetric_walks<W: Workload>(plain: RecipeModel<W>) -> (usize, usize) {
    let symmetric = RecipeModel {
        symmetric: true,
        ..plain.clone()
    };
    let (mut found, mut foreign) = (0, 0);
    for seed in 0..20 {
        let limits = WalkLimits {
            walks: 500,
            seed,
            max_depth: 300,
        };
        let Some(violation) = walk(&symmetric, limits).violation else {
            continue;
        };
        if violation.loop_start.is_some() {
            // A livelock, on a walk cut off at its depth: not an invariant's failure to shrink
            // (`tests/livelock.rs` replays those).
            continue;
        }
        found += 1;
        let property = violation.property;
        assert!(
            fails_in(&symmetric, property, &violation.path),
            "seed {seed}: its own model"
        );
        let again = shrink(&symmetric, property, violation.path.clone());
        assert!(
            fails_in(&symmetric, property, &again),
            "seed {seed}: shrunk again"
        );
        let in_plain = shrink(&plain, property, violation.path.clone());
        if !fails_in(&plain, property, &violation.path) {
            foreign += 1;
            assert!(
                in_plain == violation.path || fails_in(&plain, property, &in_plain),
                "seed {seed}: a foreign path came back neither as found nor failing"
            );
        }
    }
    (found, foreign)
}
