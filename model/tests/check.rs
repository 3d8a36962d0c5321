//! The model checker on the recipes' own machines: the correct lock and latch pass every state
//! of 3 clients under the standard fault budget (one lost reply, one session expiry), with the
//! state counts pinned so that drift shows; each known-bad variant gets its counterexample, with
//! its length pinned. The sharded job runs with two instances: the correct one passes without
//! faults, and no-cycle-claim runs an item twice after an expiry.
#![cfg(not(madsim))]

use zkh_model::check::{
    check, check_observed, check_within, find_violation, Acting, Action, ElectionWorkload,
    FaultBudget, JobWorkload, LatchWorkload, Limits, LockWorkload, MasterWorkload, Progress,
    RecipeModel, Workload,
};
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;

/// `workload` run by `clients` clients within `faults`, acting when caught up.
fn model<W: Workload>(workload: W, clients: usize, faults: &str) -> RecipeModel<W> {
    RecipeModel {
        workload,
        clients,
        budget: FaultBudget::parse(faults).expect("a budget"),
        acting: Acting::CaughtUp,
        forget_settled: true,
        symmetric: false,
        one_invariant: false,
        reached: Default::default(),
        canonical_news: None,
        partial_order: true,
        reads_first: false,
        claims_judged: true,
    }
}

fn lock(variant: LockVariant, faults: &str) -> RecipeModel<LockWorkload> {
    model(LockWorkload { variant }, 3, faults)
}

fn latch(variant: LatchVariant, faults: &str) -> RecipeModel<LatchWorkload> {
    model(LatchWorkload { variant }, 3, faults)
}

/// Checks `model` with symmetry reduction (the default) and without: both pass, with pinned
/// counts. The reduction may merge only states that differ in which client is which, so it
/// divides by N! at most the count of a search without it that makes the same choices: the
/// model choosing whose news comes first by the clients' canonical places, as the reduced
/// search does ([`RecipeModel::choosing_news_canonically`]; the plain search chooses the least
/// index, and explores other states).
fn passes<W: Workload>(name: &str, model: &RecipeModel<W>, unique_states: [usize; 2]) {
    let reduced = check(model);
    let without_symmetry = Limits {
        symmetry: false,
        ..Limits::default()
    };
    let unreduced = check_within(model, without_symmetry);
    let unfolded = check_within(&model.clone().choosing_news_canonically(), without_symmetry);
    for verdict in [&reduced, &unreduced, &unfolded] {
        assert_eq!(verdict.violation, None, "{name}");
        assert!(
            verdict.unreached.is_empty(),
            "{name}: a pass must not be empty, but these never happened: {:?}",
            verdict.unreached
        );
    }
    println!(
        "{name}: {} unique states up to renaming ({} unfolded; {} in all by the least index), \
         no violation",
        reduced.unique_states, unfolded.unique_states, unreduced.unique_states
    );
    assert_eq!(
        [reduced.unique_states, unreduced.unique_states],
        unique_states,
        "{name}: the state count drifted"
    );
    assert!(
        reduced.symmetry && !unreduced.symmetry && !unfolded.symmetry,
        "{name}"
    );
    let permutations: usize = (1..=model.clients).product();
    assert!(
        reduced.unique_states < unfolded.unique_states
            && reduced.unique_states * permutations >= unfolded.unique_states,
        "{name}: symmetry reduction divides by at most {permutations}: {} against {}",
        reduced.unique_states,
        unfolded.unique_states
    );
}

fn caught<W: Workload>(name: &str, model: &RecipeModel<W>, property: &str, steps: usize) {
    let violation = find_violation(model).unwrap_or_else(|| panic!("{name}: no violation"));
    assert_eq!(violation.property, property, "{name}");
    println!(
        "{name}: {property} violated in {} steps",
        violation.path.len()
    );
    assert_eq!(
        violation.path.len(),
        steps,
        "{name}: the shortest counterexample's length drifted: {:?}",
        violation.path
    );
}

#[test]
fn the_correct_lock_passes_three_clients_with_a_lost_reply_and_an_expiry() {
    passes(
        "lock",
        &lock(LockVariant::Correct, "drop-reply=1,expire=1"),
        [111_490, 668_917],
    );
}

#[test]
fn a_long_check_reports_its_progress_as_it_goes() {
    // The lock's standard check takes seconds, many progress intervals: the observer hears of
    // the search, its counts only grow, and the last is what the verdict says. (Without
    // symmetry reduction, for the longer search.)
    let model = lock(LockVariant::Correct, "drop-reply=1,expire=1");
    let mut seen: Vec<Progress> = Vec::new();
    let limits = Limits {
        symmetry: false,
        ..Limits::default()
    };
    let verdict = check_observed(&model, limits, Some(&mut |p| seen.push(*p)));
    assert_eq!(verdict.unique_states, 668_917);
    assert!(
        seen.len() > 1,
        "several reports of a search of seconds: {seen:?}"
    );
    for pair in seen.windows(2) {
        assert!(pair[0].unique_states <= pair[1].unique_states, "{pair:?}");
        assert!(pair[0].states <= pair[1].states, "{pair:?}");
    }
    let last = seen.last().expect("reports");
    assert!(last.unique_states <= verdict.unique_states);
    assert!(last.max_depth <= verdict.max_depth);
}

#[test]
fn the_correct_latch_passes_three_clients_with_a_lost_reply_and_an_expiry() {
    passes(
        "latch",
        &latch(LatchVariant::Correct, "drop-reply=1,expire=1"),
        [56_237, 336_847],
    );
}

#[test]
fn the_herd_violates_herd_free_with_three_waiters_and_the_correct_lock_does_not() {
    caught("herd", &lock(LockVariant::Herd, "none"), "herd free", 11);
    let correct = check(&lock(LockVariant::Correct, "none"));
    assert_eq!(
        correct.violation, None,
        "the correct lock watches one predecessor"
    );
}

/// The orphan itself is caught first (breadth first), two steps before the lock is lost to it:
/// the client's session owns a node the client does not know of, at the first quiet moment.
#[test]
fn unprotected_loses_the_lock_to_an_orphan_node_after_a_lost_create_reply() {
    caught(
        "unprotected",
        &lock(LockVariant::Unprotected, "drop-reply=1"),
        "no orphaned ephemerals",
        21,
    );
}

#[test]
fn trust_predecessor_makes_two_leaders_after_a_waiter_expires() {
    caught(
        "trust-predecessor",
        &latch(LatchVariant::TrustPredecessor, "expire=1"),
        "single acting master",
        22,
    );
}

#[test]
fn no_owner_check_makes_two_leaders_after_a_client_side_expiry() {
    caught(
        "no-owner-check",
        &latch(LatchVariant::NoOwnerCheck, "client-expire=1"),
        "single acting master",
        19,
    );
}

/// The same fault, on the correct latch: the client told its session expired leaves the old
/// session, and its latch node, to the server, which blocks the others until it expires the
/// session. Liveness is judged once it has (random walks showed the check calling that wait a
/// lost leader, for every correct recipe). Both ways, with the counts pinned.
#[test]
fn the_correct_latch_passes_a_client_side_expiry() {
    passes(
        "latch, client-side expiry",
        &latch(LatchVariant::Correct, "client-expire=1"),
        [41_618, 249_807],
    );
}

#[test]
fn a_violation_found_depth_first_is_shortened() {
    // The depth-first search finds no-owner-check's counterexample by some longer path; the
    // check still reports the shortest. (CURATOR-696: the new session leads on the old
    // session's node, a false claim at the first settled moment after it.)
    let model = latch(LatchVariant::NoOwnerCheck, "client-expire=1");
    let verdict = check(&model);
    let violation = verdict.violation.expect("a violation");
    assert_eq!(violation.property, "claims are owned");
    assert!(violation.shortest);
    assert_eq!(violation.path.len(), 22, "the same length as breadth first");
}

#[test]
fn fault_budgets_parse_and_bad_ones_say_what_is_wrong() {
    assert_eq!(
        FaultBudget::parse("drop-reply=1,expire=1"),
        Ok(FaultBudget::STANDARD)
    );
    assert_eq!(FaultBudget::parse("none"), Ok(FaultBudget::default()));
    let unknown = FaultBudget::parse("drop-replies=1").unwrap_err();
    assert!(
        unknown.contains("unknown fault \"drop-replies\""),
        "{unknown}"
    );
    let count = FaultBudget::parse("expire=lots").unwrap_err();
    assert!(count.contains("a number from 0 to 255"), "{count}");
    let shape = FaultBudget::parse("expire").unwrap_err();
    assert!(shape.contains("expected NAME=COUNT"), "{shape}");
}

#[test]
fn unfenced_side_effects_break_mutual_exclusion_and_fencing_restores_it() {
    // A holder whose session the server expired acts before it hears of it.
    let unfenced = RecipeModel {
        acting: Acting::Unfenced,
        ..lock(LockVariant::Correct, "expire=1")
    };
    caught("unfenced", &unfenced, "mutual exclusion", 12);
    let fenced = RecipeModel {
        acting: Acting::Fenced,
        ..lock(LockVariant::Correct, "expire=1")
    };
    passes("fenced lock", &fenced, [43_719, 261_550]);
}

fn election(
    variant: ElectionVariant,
    faults: &str,
    acting: Acting,
) -> RecipeModel<ElectionWorkload> {
    RecipeModel {
        acting,
        ..model(ElectionWorkload { variant }, 3, faults)
    }
}

#[test]
fn check_then_write_makes_two_leaders_and_the_election_under_its_latch_does_not() {
    // As in the simulator: no faults, and a leader acting on news still in flight (there,
    // delayed watch events) on a resource that takes every write.
    let bad = election(ElectionVariant::CheckThenWrite, "none", Acting::Unfenced);
    caught("check-then-write", &bad, "single acting master", 22);
    let correct = check(&election(
        ElectionVariant::Correct,
        "none",
        Acting::Unfenced,
    ));
    assert_eq!(
        correct.violation, None,
        "one leader, elected under the latch"
    );
    assert_eq!(correct.unique_states, 7_140, "the state count drifted");
}

#[test]
fn the_correct_election_passes_three_clients_with_a_lost_reply() {
    let verdict = check(&election(
        ElectionVariant::Correct,
        "drop-reply=1",
        Acting::CaughtUp,
    ));
    assert_eq!(verdict.violation, None);
    assert_eq!(verdict.unique_states, 83_253, "the state count drifted");
}

#[test]
fn the_master_election_passes_three_clients_with_a_lost_reply_and_an_expiry() {
    let model = RecipeModel {
        workload: MasterWorkload::default(),
        clients: 3,
        budget: FaultBudget::STANDARD,
        acting: Acting::CaughtUp,
        forget_settled: true,
        symmetric: false,
        one_invariant: false,
        reached: Default::default(),
        canonical_news: None,
        partial_order: true,
        reads_first: false,
        claims_judged: true,
    };
    passes("master", &model, [2_236, 13_060]);
}

/// Backups that set no watch on the master's node: the master's session expires and nobody
/// runs again. A master existed before the fault, so a path-wise `eventually` would be
/// satisfied; at quiescence nobody holds the role, which is what is judged.
#[test]
fn no_watch_backups_leave_the_application_without_a_master_after_its_expiry() {
    let model = |faults: &str| RecipeModel {
        workload: MasterWorkload {
            variant: MasterVariant::NoWatch,
        },
        clients: 3,
        budget: FaultBudget::parse(faults).expect("a budget"),
        acting: Acting::CaughtUp,
        forget_settled: true,
        symmetric: false,
        one_invariant: false,
        reached: Default::default(),
        canonical_news: None,
        partial_order: true,
        reads_first: false,
        claims_judged: true,
    };
    caught("no-watch", &model("expire=1"), "leader elected", 9);
    caught(
        "no-watch",
        &model("drop-reply=1,expire=1"),
        "leader elected",
        9,
    );
    // A crashed master never comes back either, and nothing wakes the backups.
    caught("no-watch", &model("crash=1"), "leader elected", 7);
    assert_eq!(
        check(&model("none")).violation,
        None,
        "without a fault nothing shows"
    );
}

/// A crash (a client process dies while idle, and the server expires its session) on top of
/// the standard budget: the lock moves on to the next waiter, and a backup becomes master.
#[test]
fn the_correct_lock_and_master_pass_three_clients_when_one_also_crashes() {
    let with_crash = "drop-reply=1,expire=1,crash=1";
    passes(
        "lock with a crash",
        &lock(LockVariant::Correct, with_crash),
        [252_927, 1_518_226],
    );
    let master = model(MasterWorkload::default(), 3, with_crash);
    passes("master with a crash", &master, [8_842, 52_687]);
}

/// The book's master stops for good when its session expires (its process exits): it takes
/// no further part, so no fault strikes it and liveness is not asked of it. With three faults
/// that each end a client (an expiry, a client-side expiry, a crash), all three can be gone
/// and nobody is left to lead; that is not a failure of the recipe. Before a stopped master
/// counted as taking part, the check called it "leader elected" failing in 13 steps (random
/// walks showed it first). With every fault once it passes too: 24,686,821 states, 46 s in
/// release.
#[test]
fn a_stopped_master_takes_no_further_part() {
    let ending = "expire=1,client-expire=1,crash=1";
    let master = model(MasterWorkload::default(), 3, ending);
    let verdict = check(&master);
    assert_eq!(verdict.violation, None);
    assert!(verdict.complete, "{verdict:?}");
    assert_eq!(verdict.unique_states, 13_065, "the state count drifted");
}

/// The job election with the standard budget, with three clients, the largest standard check:
/// about 60 s and 300 MB in release, so it is left out of the default test run;
/// `scripts/test-all` runs it in release (`cargo test --release --test model -- --ignored check::`).
/// Without symmetry reduction it would be about 6 times larger, so only the reduced count is
/// pinned.
#[test]
#[ignore = "about 60 s in release; scripts/test-all runs it"]
fn the_correct_election_passes_three_clients_with_a_lost_reply_and_an_expiry() {
    let model = election(
        ElectionVariant::Correct,
        "drop-reply=1,expire=1",
        Acting::CaughtUp,
    );
    let verdict = check(&model);
    assert_eq!(verdict.violation, None);
    assert!(verdict.complete && verdict.symmetry, "{verdict:?}");
    assert!(
        verdict.unreached.is_empty(),
        "a pass must not be empty: {:?}",
        verdict.unreached
    );
    assert_eq!(verdict.unique_states, 11_005_433, "the state count drifted");
}

/// The job election with the standard budget, with two clients, checked both ways. Before the
/// election dropped a callback whose session ended, this space had no end: a retry timer set
/// before an expiry fired in the next session, and the stale callback deleted the new leader's
/// instance node outside the latch, again and again (the recipes' unit test
/// `a_retry_set_before_an_expiry_does_not_write_outside_the_latch` pins that path).
#[test]
fn the_correct_election_passes_two_clients_with_a_lost_reply_and_an_expiry() {
    let model = RecipeModel {
        clients: 2,
        ..election(
            ElectionVariant::Correct,
            "drop-reply=1,expire=1",
            Acting::CaughtUp,
        )
    };
    passes("election", &model, [159_575, 319_278]);
}

fn job(variant: JobVariant, faults: &str) -> RecipeModel<JobWorkload> {
    model(JobWorkload::new(variant), 2, faults)
}

/// The sharded job over `items` items and two cycles, so that "no shard lost" is judged on the
/// second, which fires at a settled moment.
fn job_two_cycles(variant: JobVariant, items: u32, faults: &str) -> RecipeModel<JobWorkload> {
    let workload = JobWorkload {
        items,
        cycles: 2,
        ..JobWorkload::new(variant)
    };
    model(workload, 2, faults)
}

/// Paths of the job over two cycles with a crash run past the default depth (to 377 steps
/// with three items, 309 with two).
const JOB_THREE_ITEMS_LIMITS: Limits = Limits {
    max_states: None,
    max_depth: 400,
    symmetry: true,
    preemptions: None,
    compact_mib: None,
    threads: 1,
};

/// The correct job over three items and two cycles, one instance crashing at any idle moment:
/// every item runs in the second cycle, by its owner, by a survivor that failed it over, or
/// after a new sharding (with two items, see the next check). This check found two bugs in the
/// recipe, both fixed: an instance that registered and crashed between two listings of the
/// others owned items nobody ran (see
/// `trust_owners_leaves_a_dead_instance_owning_items_in_every_later_cycle`), and a failover
/// check queued before the crash listener's marks ran first, found nothing, and left them
/// waiting. About 45 s in release.
#[test]
#[ignore = "about 45 s in release; scripts/test-all runs it"]
fn the_correct_job_saves_every_item_of_the_second_cycle_when_an_instance_crashes() {
    let model = job_two_cycles(JobVariant::Correct, 3, "crash=1");
    let verdict = check_within(&model, JOB_THREE_ITEMS_LIMITS);
    assert_eq!(verdict.violation, None);
    assert!(verdict.complete && !verdict.symmetry, "{verdict:?}");
    assert!(verdict.unreached.is_empty(), "{:?}", verdict.unreached);
    assert_eq!(verdict.unique_states, 17_560_380, "the state count drifted");
}

/// The same with two items: the README's and `scripts/bench-check`'s count, pinned here so
/// that theirs cannot drift unseen (its paths are 309 steps deep: past the default depth).
/// About 12 s in release.
#[test]
#[ignore = "about 12 s in release; scripts/test-all runs it"]
fn the_correct_job_saves_both_items_of_the_second_cycle_when_an_instance_crashes() {
    let model = job_two_cycles(JobVariant::Correct, 2, "crash=1");
    let verdict = check_within(&model, JOB_THREE_ITEMS_LIMITS);
    assert_eq!(verdict.violation, None);
    assert!(verdict.complete && !verdict.symmetry, "{verdict:?}");
    assert!(verdict.unreached.is_empty(), "{:?}", verdict.unreached);
    assert_eq!(verdict.unique_states, 5_362_288, "the state count drifted");
    assert_eq!(verdict.max_depth, 309, "the depth drifted");
}

/// Elastic-Job 2.1.5 trusts the sharding: a newcomer registers, the leader lists the
/// instances and the newcomer crashes before the other instance lists them again. The leader
/// writes the sharding with the dead instance as an owner, no listing ever shows it leave, and
/// its item is not run in the second cycle (nor in any later one, until the instances
/// change).
#[test]
fn trust_owners_leaves_a_dead_instance_owning_items_in_every_later_cycle() {
    caught(
        "job trust-owners",
        &job_two_cycles(JobVariant::TrustOwners, 2, "crash=1"),
        "no shard lost",
        90,
    );
}

/// One item per idle instance: of three items, the instance that owns two crashes before its
/// second cycle, and the survivor fails over only one of them. The path the depth-first search
/// finds is too deep to shorten within `SHORTEN_STATES`: its length is the first failing path
/// depth first (263 steps while the search got each property apart and kept the last failing
/// path of its block). It does not shrink: the property is judged once both instances have
/// finished both cycles, and their work takes about that many steps.
#[test]
#[ignore = "about 10 s in release; scripts/test-all runs it"]
fn one_item_per_idle_loses_an_item_of_a_crashed_instance() {
    let model = job_two_cycles(JobVariant::OneItemPerIdle, 3, "crash=1");
    let verdict = check_within(&model, JOB_THREE_ITEMS_LIMITS);
    let violation = verdict.violation.expect("a violation");
    assert_eq!(violation.property, "no shard lost");
    assert!(!violation.shortest, "the depth-first path was shortened");
    assert_eq!(violation.found_steps, 267, "the depth-first path drifted");
    assert_eq!(
        violation.path.len(),
        267,
        "the counterexample's length drifted"
    );
}

/// The sharded job with two instances and no fault: every interleaving of registration, the
/// job's election, sharding, polls, claims and runs. Without a fault nothing fails over, so
/// that `sometimes` check is the one left unreached; the check is not reduced by symmetry
/// (the allocation orders instances by id).
#[test]
fn the_correct_job_passes_two_instances_without_faults() {
    let verdict = check(&job(JobVariant::Correct, "none"));
    assert_eq!(verdict.violation, None);
    assert!(verdict.complete && !verdict.symmetry, "{verdict:?}");
    assert_eq!(verdict.unreached, vec!["an item failed over"]);
    assert_eq!(verdict.unique_states, 845_042, "the state count drifted");
}

/// Two cycles without faults: the second fires at every instance once the first has settled
/// everywhere. A job instance used to queue its failover check at the end of a cycle and
/// leave it waiting for another input, which at a quiet moment never came: the instance was
/// never at rest, so no moment was settled and the second cycle never fired. The model's own
/// invariant "applications make progress" fails on that (88 steps), and this check pins its
/// fix.
#[test]
fn the_correct_job_fires_its_second_cycle_everywhere_without_faults() {
    let verdict = check(&job_two_cycles(JobVariant::Correct, 2, "none"));
    assert_eq!(verdict.violation, None);
    assert!(verdict.complete && !verdict.symmetry, "{verdict:?}");
    assert_eq!(verdict.unreached, vec!["an item failed over"]);
    assert_eq!(verdict.unique_states, 1_327_731, "the state count drifted");
}

/// The sharded job with two instances and one lost reply (on any write: a registration, a
/// latch node, the sharding transaction, a claim): every interleaving of the recovery with the
/// other instance's work, about 44 million states (about 100 s in release and 730 MiB, so
/// `scripts/test-all` runs it in release). An expiry is still out of reach (see the README).
#[test]
#[ignore = "about 100 s in release; scripts/test-all runs it"]
fn the_correct_job_passes_two_instances_with_a_lost_reply() {
    let verdict = check(&job(JobVariant::Correct, "drop-reply=1"));
    assert_eq!(verdict.violation, None);
    assert!(verdict.complete && !verdict.symmetry, "{verdict:?}");
    assert_eq!(verdict.unreached, vec!["an item failed over"]);
    assert_eq!(verdict.unique_states, 43_851_654, "the state count drifted");
}

/// No-cycle-claim runs an item twice with no fault at all: the leader shards again as the other
/// instance joins, after it read that item 0 is its own and before it ran it, and the newcomer
/// runs item 0 in the same first cycle. The correct job passes the same space
/// (`the_correct_job_passes_two_instances_without_faults`).
#[test]
fn no_cycle_claim_runs_an_item_twice_as_an_instance_joins_without_faults() {
    caught(
        "job no-cycle-claim, no faults",
        &job(JobVariant::NoCycleClaim, "none"),
        "no shard executed twice",
        93,
    );
}

/// No-cycle-claim runs an item twice: an instance runs its item and its session expires, and
/// the survivor fails the item over and runs it again in the same cycle. The first failing
/// path the depth-first search meets is 112 steps long; a breadth-first search of the first 2
/// million states finds none, so it is shrunk instead, to 100 steps, keeping its expiry
/// (about 12 s in release; `scripts/test-all` runs it). (It was 107 while the search gave
/// stateright its `sometimes` properties: stateright went on through the rest of a block of
/// states after a failure while one of them was unreached, and a later failing path replaced
/// the first.)
#[test]
#[ignore = "about 10 s in release; scripts/test-all runs it"]
fn no_cycle_claim_runs_an_item_twice_after_an_expiry() {
    let verdict = check(&job(JobVariant::NoCycleClaim, "expire=1"));
    let violation = verdict.violation.expect("a violation");
    assert_eq!(violation.property, "no shard executed twice");
    assert!(!violation.shortest, "the depth-first path was shortened");
    assert_eq!(violation.found_steps, 112, "the depth-first path drifted");
    assert_eq!(
        violation.path.len(),
        100,
        "the shrunk counterexample's length drifted"
    );
    let faults: Vec<&Action> = violation.path.iter().filter(|a| a.is_fault()).collect();
    assert_eq!(faults, [&Action::Expire(1)], "shrinking keeps the expiry");
}
