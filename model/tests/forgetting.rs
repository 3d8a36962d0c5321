//! Forgetting settled history is sound only if it changes no verdict: the checker keeps a
//! summary of each client's own entries ([`Workload::summarize_own`]), drops the oldest
//! shared entries no judge can use ([`Workload::settled_shared`]) and puts the rest in the
//! workload's canonical form, if it has one ([`Workload::canonical_shared`]); a state must
//! then judge as the state with its whole history does, at every later step too. These tests
//! walk each recipe, correct and known-bad, along seeded random paths under every kind of
//! fault, twice in step: once forgetting, once keeping everything. At every step the two states
//! must agree on everything but the forgotten entries, and on every verdict.
#![cfg(not(madsim))]

use std::collections::BTreeSet;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stateright::Model;
use zkh_model::check::{
    Acting, ElectionWorkload, FaultBudget, JobWorkload, LatchWorkload, LockWorkload,
    MasterWorkload, RecipeModel, State, Workload,
};
use zkh_model::properties::Class;
use zkh_model::zookeeper::ZkModel;
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;
use zkh_recipes::path::{name_of, parent_of};

/// Every kind of fault, once.
const EVERY_FAULT: &str =
    "drop-request=1,drop-reply=1,expire=1,client-expire=1,leader-change=1,crash=1";
const WALKS: u64 = 80;
const MAX_STEPS: usize = 150;
/// One step in this many is a fault, where one is enabled.
const FAULT_ODDS: u32 = 12;

fn models<W: Workload>(workload: W, acting: Acting) -> (RecipeModel<W>, RecipeModel<W>) {
    let forgetting = RecipeModel {
        workload,
        clients: 3,
        budget: FaultBudget::parse(EVERY_FAULT).expect("a budget"),
        acting,
        forget_settled: true,
        symmetric: false,
        one_invariant: false,
        reached: Default::default(),
        canonical_news: None,
        partial_order: true,
        reads_first: false,
        claims_judged: true,
    };
    let whole = RecipeModel {
        forget_settled: false,
        ..forgetting.clone()
    };
    (forgetting, whole)
}

/// The entries of client `c`'s own log, oldest first, as text.
fn own<W: Workload>(state: &State<W>, c: usize) -> Vec<String> {
    let mut entries = Vec::new();
    state.seats[c].log.extend_oldest_first(&mut entries);
    entries.iter().map(|entry| format!("{entry:?}")).collect()
}

/// What the server's hash leaves out because the rest determines it must agree with the rest:
/// each node's children are the paths one level below it, and each session's ephemerals are
/// the nodes it owns.
fn derived_parts_agree(zk: &ZkModel, at: &str) {
    let tree = zk.tree();
    for (path, node) in tree.nodes() {
        let below: BTreeSet<&str> = tree
            .nodes()
            .filter(|(other, _)| *other != "/" && parent_of(other) == path)
            .map(|(other, _)| name_of(other))
            .collect();
        let children: BTreeSet<&str> = node.children.iter().map(String::as_str).collect();
        assert_eq!(children, below, "{at}: the children of {path}");
    }
    for (session, held) in zk.sessions() {
        let owned: BTreeSet<&str> = tree
            .nodes()
            .filter(|(_, node)| node.ephemeral_owner == Some(*session))
            .map(|(path, _)| path)
            .collect();
        let ephemerals: BTreeSet<&str> = held.ephemerals.iter().map(String::as_str).collect();
        assert_eq!(ephemerals, owned, "{at}: the ephemerals of {session:?}");
    }
}

/// The shared history's events, oldest first, as text (without their times, which the
/// forgetting model renumbers from its oldest kept entry).
fn shared<W: Workload>(state: &State<W>) -> Vec<String> {
    let mut entries = Vec::new();
    state.shared.extend_oldest_first(&mut entries);
    entries
        .iter()
        .map(|entry| format!("{:?}", entry.event))
        .collect()
}

/// Walks `WALKS` seeded random paths of the forgetting model, stepping the whole-history
/// model alongside, with applications acting when caught up and when not (then clients
/// process their news in every order, not first come first); returns how many entries were
/// forgotten in all.
fn same_verdicts<W: Workload>(name: &str, workload: W) -> usize {
    let mut forgotten = 0;
    for acting in [Acting::CaughtUp, Acting::Unfenced] {
        let name = format!("{name}, acting {acting:?}");
        forgotten += same_verdicts_acting(&name, workload.clone(), acting);
    }
    forgotten
}

fn same_verdicts_acting<W: Workload>(name: &str, workload: W, acting: Acting) -> usize {
    let (forgetting, whole) = models(workload, acting);
    let mut forgotten = 0;
    for seed in 0..WALKS {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut short = forgetting.init_states().remove(0);
        let mut long = whole.init_states().remove(0);
        let mut path = Vec::new();
        let mut actions = Vec::new();
        for _ in 0..MAX_STEPS {
            actions.clear();
            forgetting.actions(&short, &mut actions);
            let enabled: Vec<_> = actions
                .iter()
                .filter_map(|a| Some((a.clone(), forgetting.next_state(&short, a.clone())?)))
                .collect();
            if enabled.is_empty() {
                break;
            }
            // Faults are most of what is enabled at first; taken as often as the rest, they
            // would leave no client anything to do.
            let (faults, steps): (Vec<_>, Vec<_>) =
                enabled.into_iter().partition(|(a, _)| a.is_fault());
            let mut choices =
                if steps.is_empty() || !faults.is_empty() && rng.random_ratio(1, FAULT_ODDS) {
                    faults
                } else {
                    steps
                };
            let (action, next) = choices.swap_remove(rng.random_range(0..choices.len()));
            path.push(action.clone());
            short = next;
            long = whole
                .next_state(&long, action)
                .unwrap_or_else(|| panic!("{name}, seed {seed}: {path:?} is a path of both"));
            let at = || format!("{name}, seed {seed}, after {path:?}");
            assert_eq!(short.zk, long.zk, "{}: the server", at());
            derived_parts_agree(&short.zk, &at());
            let (kept, all) = (shared(&short), shared(&long));
            // Where the workload has a canonical form of the shared history, it keeps what its
            // judges read, in its own order; elsewhere, the newest entries as they were.
            let canonical = forgetting.workload.canonical_shared(&[], &short).is_some();
            if canonical {
                assert!(
                    kept.len() <= all.len(),
                    "{}: the canonical shared history is no longer: {kept:?} of {all:?}",
                    at()
                );
            } else {
                assert!(
                    all.ends_with(&kept),
                    "{}: the shared history keeps its newest entries: {kept:?} of {all:?}",
                    at()
                );
            }
            forgotten += all.len() - kept.len();
            assert_eq!(short.verdicts, long.verdicts, "{}: the verdicts", at());
            for (c, (a, b)) in short.seats.iter().zip(&long.seats).enumerate() {
                assert_eq!(a.client, b.client, "{}: client {c}", at());
                assert_eq!(a.queues, b.queues, "{}: client {c}'s queues", at());
                let (kept, all) = (own(&short, c), own(&long, c));
                assert!(
                    kept.len() <= all.len(),
                    "{}: client {c}'s summary is no longer than its entries: {kept:?} of {all:?}",
                    at()
                );
                forgotten += all.len() - kept.len();
            }
            let judged = |state: &State<W>| -> Vec<(&'static str, bool)> {
                state
                    .findings()
                    .into_iter()
                    .filter(|finding| finding.class != Class::Sometimes)
                    .map(|finding| (finding.property, finding.holds))
                    .collect()
            };
            assert_eq!(judged(&short), judged(&long), "{}: the findings", at());
        }
    }
    forgotten
}

#[test]
fn forgetting_changes_no_verdict_of_the_lock() {
    for variant in [
        LockVariant::Correct,
        LockVariant::Herd,
        LockVariant::Unprotected,
    ] {
        let name = format!("lock {variant:?}");
        let forgotten = same_verdicts(&name, LockWorkload { variant });
        assert!(forgotten > 0, "{name}: something was forgotten");
    }
}

#[test]
fn forgetting_changes_no_verdict_of_the_latch() {
    for variant in [
        LatchVariant::Correct,
        LatchVariant::TrustPredecessor,
        LatchVariant::NoOwnerCheck,
    ] {
        let name = format!("latch {variant:?}");
        let forgotten = same_verdicts(&name, LatchWorkload { variant });
        assert!(forgotten > 0, "{name}: something was forgotten");
    }
}

#[test]
fn forgetting_changes_no_verdict_of_the_job_election() {
    for variant in [ElectionVariant::Correct, ElectionVariant::CheckThenWrite] {
        let name = format!("election {variant:?}");
        let forgotten = same_verdicts(&name, ElectionWorkload { variant });
        assert!(forgotten > 0, "{name}: something was forgotten");
    }
}

#[test]
fn forgetting_changes_no_verdict_of_the_sharded_job() {
    for variant in [
        JobVariant::Correct,
        JobVariant::OneItemPerIdle,
        JobVariant::TrustOwners,
        JobVariant::NoCycleClaim,
    ] {
        let name = format!("job {variant:?}");
        // Two cycles, so that "no shard lost" is judged.
        let workload = JobWorkload {
            cycles: 2,
            ..JobWorkload::new(variant)
        };
        let forgotten = same_verdicts(&name, workload);
        assert!(forgotten > 0, "{name}: something was forgotten");
    }
}

#[test]
fn forgetting_changes_no_verdict_of_the_master() {
    for variant in [MasterVariant::Correct, MasterVariant::NoWatch] {
        let name = format!("master {variant:?}");
        let forgotten = same_verdicts(&name, MasterWorkload { variant });
        assert!(forgotten > 0, "{name}: something was forgotten");
    }
}
