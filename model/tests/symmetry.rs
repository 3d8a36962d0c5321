//! Symmetry reduction is sound only if renaming the clients of a reachable state gives the
//! state that the renamed actions reach: then both have the same future and the same verdicts,
//! and the checker may explore one. These tests walk each recipe along seeded random paths
//! under every kind of fault, rename each path's actions under every renaming of 3 clients,
//! run the renamed path, and compare: the state it reaches must hash, unrenamed, as the first
//! path's state hashes renamed. A recipe whose behaviour depended on how identities sort, or a
//! renamed hash that missed an identity, would fail here. The two states must also have the
//! same successors up to renaming, with the model's partial-order reduction: its choice of
//! which client's news comes first must not depend on the clients' indices.
#![cfg(not(madsim))]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stateright::Model;
use zkh_model::check::{
    representative, Acting, Action, ElectionWorkload, FaultBudget, LatchWorkload, LockWorkload,
    MasterWorkload, RecipeModel, State, Workload,
};
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::symmetry::{renamed_hash, Renaming};

/// Every kind of fault, once.
const EVERY_FAULT: &str =
    "drop-request=1,drop-reply=1,expire=1,client-expire=1,leader-change=1,crash=1";
const WALKS: u64 = 60;
const MAX_STEPS: usize = 120;

fn model<W: Workload>(workload: W, acting: Acting) -> RecipeModel<W> {
    RecipeModel {
        workload,
        clients: 3,
        budget: FaultBudget::parse(EVERY_FAULT).expect("a budget"),
        acting,
        forget_settled: true,
        symmetric: true,
        one_invariant: false,
        reached: Default::default(),
        canonical_news: None,
        partial_order: true,
        reads_first: false,
        claims_judged: true,
    }
}

/// `action` with its clients and sessions renamed.
fn rename(action: &Action, renaming: &Renaming<'_>) -> Action {
    let client = |c: &usize| renaming.client(*c as u32) as usize;
    match action {
        Action::Serve(c) => Action::Serve(client(c)),
        Action::Deliver(c) => Action::Deliver(client(c)),
        Action::Timer(c, id) => Action::Timer(client(c), *id),
        Action::Act(c) => Action::Act(client(c)),
        Action::DropRequest(c) => Action::DropRequest(client(c)),
        Action::DropReply(c) => Action::DropReply(client(c)),
        Action::Expire(c) => Action::Expire(client(c)),
        Action::ClientExpire(c) => Action::ClientExpire(client(c)),
        Action::ServerExpireOld(session) => Action::ServerExpireOld(renaming.session(*session)),
        Action::LeaderChange => Action::LeaderChange,
        Action::Crash(c) => Action::Crash(client(c)),
    }
}

/// What a symmetry-reducing search tells states apart by: its representative's hash.
fn fingerprint<W: Workload>(state: &State<W>) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&representative(state), &mut hasher);
    std::hash::Hasher::finish(&hasher)
}

/// The classes of the states `state`'s actions lead to (with the model's partial-order
/// reduction). Every state of a class must have the same ones, or the counts of a search
/// would depend on which state of each class it met first.
fn successor_classes<W: Workload>(
    model: &RecipeModel<W>,
    state: &State<W>,
) -> std::collections::BTreeSet<u64> {
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    (actions.into_iter())
        .filter_map(|action| model.next_state(state, action))
        .map(|next| fingerprint(&next))
        .collect()
}

fn run<W: Workload>(model: &RecipeModel<W>, path: &[Action]) -> State<W> {
    let mut state = model.init_states().remove(0);
    for action in path {
        state = model
            .next_state(&state, action.clone())
            .unwrap_or_else(|| panic!("{action:?} does nothing after {path:?}"));
    }
    state
}

/// A seeded random path (every prefix checked too), stopping where nothing is enabled.
fn walk<W: Workload>(model: &RecipeModel<W>, seed: u64) -> Vec<(Action, State<W>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut state = model.init_states().remove(0);
    let mut steps = Vec::new();
    let mut actions = Vec::new();
    for _ in 0..MAX_STEPS {
        actions.clear();
        model.actions(&state, &mut actions);
        let enabled: Vec<_> = actions
            .iter()
            .filter_map(|a| Some((a.clone(), model.next_state(&state, a.clone())?)))
            .collect();
        if enabled.is_empty() {
            break;
        }
        let (action, next) = enabled[rng.random_range(0..enabled.len())].clone();
        steps.push((action, next.clone()));
        state = next;
    }
    steps
}

/// Checks every prefix of `WALKS` random paths against its renamings; returns how many
/// (state, renaming) pairs hashed apart from the state itself (the renaming did something).
fn renamed_paths_reach_renamed_states<W: Workload>(name: &str, model: &RecipeModel<W>) -> usize {
    let mut asymmetric = 0;
    for seed in 0..WALKS {
        let steps = walk(model, seed);
        let path: Vec<Action> = steps.iter().map(|(a, _)| a.clone()).collect();
        for (length, (_, state)) in steps.iter().enumerate() {
            let renamings = state.renamings.clone().expect("3 clients are renamed");
            let identity = renamings.get(0);
            let own = renamed_hash(state, &identity);
            for renaming in renamings.iter().skip(1) {
                let renamed_path: Vec<Action> = path[..=length]
                    .iter()
                    .map(|action| rename(action, &renaming))
                    .collect();
                let reached = run(model, &renamed_path);
                assert_eq!(
                    renamed_hash(&reached, &identity),
                    renamed_hash(state, &renaming),
                    "{name}, seed {seed}: the renamed path {renamed_path:?} reaches a state \
                     other than the renamed state of {:?}",
                    &path[..=length]
                );
                assert_eq!(
                    fingerprint(&reached),
                    fingerprint(state),
                    "{name}, seed {seed}: renamed states have one representative"
                );
                assert_eq!(
                    successor_classes(model, &reached),
                    successor_classes(model, state),
                    "{name}, seed {seed}: the renamed state of {:?} has other successors \
                     (the partial-order reduction chose another client's news)",
                    &path[..=length]
                );
                if renamed_hash(state, &renaming) != own {
                    asymmetric += 1;
                }
            }
        }
    }
    asymmetric
}

fn sound<W: Workload>(name: &str, model: &RecipeModel<W>) {
    let init = model.init_states().remove(0);
    let renamings = init.renamings.clone().expect("3 clients are renamed");
    for renaming in renamings.iter() {
        assert_eq!(
            renamed_hash(&init, &renaming),
            renamed_hash(&init, &renamings.get(0)),
            "{name}: the initial state is its own renaming"
        );
    }
    let asymmetric = renamed_paths_reach_renamed_states(name, model);
    assert!(
        asymmetric > 0,
        "{name}: no renaming ever changed a state's hash: identities are not hashed"
    );
}

#[test]
fn the_lock_is_symmetric_in_its_clients() {
    let correct = LockWorkload {
        variant: LockVariant::Correct,
    };
    sound("lock", &model(correct, Acting::CaughtUp));
    let herd = LockWorkload {
        variant: LockVariant::Herd,
    };
    sound("herd lock, fenced", &model(herd, Acting::Fenced));
}

#[test]
fn the_latch_is_symmetric_in_its_clients() {
    let correct = LatchWorkload {
        variant: LatchVariant::Correct,
    };
    sound("latch", &model(correct, Acting::CaughtUp));
    let no_owner_check = LatchWorkload {
        variant: LatchVariant::NoOwnerCheck,
    };
    sound(
        "no-owner-check latch",
        &model(no_owner_check, Acting::Unfenced),
    );
}

#[test]
fn the_job_election_is_symmetric_in_its_clients() {
    let correct = ElectionWorkload {
        variant: ElectionVariant::Correct,
    };
    sound("job election", &model(correct, Acting::CaughtUp));
}

#[test]
fn the_master_election_is_symmetric_in_its_clients() {
    sound(
        "master",
        &model(MasterWorkload::default(), Acting::CaughtUp),
    );
}

#[test]
fn states_that_differ_in_more_than_names_hash_apart() {
    // Client 0 holds the lock in one state and client 1 in the other: a renaming makes them
    // one. Client 0 holding it with client 1 waiting, against client 0 holding it alone: no
    // renaming does.
    let model = model(
        LockWorkload {
            variant: LockVariant::Correct,
        },
        Acting::CaughtUp,
    );
    let init = model.init_states().remove(0);
    let hash = fingerprint::<LockWorkload>;
    let served = |c: usize| run(&model, &[Action::Serve(c)]);
    assert_eq!(hash(&served(0)), hash(&served(1)));
    assert_ne!(hash(&init), hash(&served(0)));
    let both = run(&model, &[Action::Serve(0), Action::Serve(1)]);
    assert_ne!(hash(&both), hash(&served(0)));
}
