//! Seeded random walks over the checker's model (`zkh_model::check::walk`), for the spaces the
//! exhaustive search cannot finish. Every known-bad variant is caught by walks too; the correct
//! sharded job survives walks with three instances under the standard budget (one lost reply,
//! one expiry), which no exhaustive check reaches; one seed repeats exactly; and walks show a
//! shard that Elastic-Job loses with three instances when it shards again in the middle of a
//! cycle, which the correct job no longer loses.
#![cfg(not(madsim))]

use zkh_model::check::{
    shrink, walk, walk_observed, Acting, ElectionWorkload, FaultBudget, JobWorkload, LatchWorkload,
    LockWorkload, MasterWorkload, RecipeModel, WalkLimits, WalkVerdict, Workload,
};
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;

/// Walks `model` from seed 0, `walks` walks of at most `max_depth` steps: every walk runs and
/// none finds a violation.
fn survives<W: Workload>(model: &RecipeModel<W>, walks: u64, max_depth: usize) -> WalkVerdict {
    let verdict = walk(model, limits(walks, max_depth));
    assert_eq!(verdict.violation, None);
    assert_eq!(verdict.walks, walks);
    verdict
}

/// `workload` run by `clients` clients within `faults`, acting as `acting` says.
fn model<W: Workload>(workload: W, clients: usize, faults: &str, acting: Acting) -> RecipeModel<W> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    RecipeModel::new(workload, clients, budget, acting)
}

/// The sharded job over `items` items and `cycles` cycles.
fn job(variant: JobVariant, items: u32, cycles: u64) -> JobWorkload {
    JobWorkload {
        items,
        cycles,
        ..JobWorkload::new(variant)
    }
}

/// The correct sharded job with `clients` instances over `items` items and `cycles` cycles,
/// under `faults`, each cycle fired once the instance is caught up.
fn correct_job(clients: usize, items: u32, cycles: u64, faults: &str) -> RecipeModel<JobWorkload> {
    model(
        job(JobVariant::Correct, items, cycles),
        clients,
        faults,
        Acting::CaughtUp,
    )
}

fn limits(walks: u64, max_depth: usize) -> WalkLimits {
    WalkLimits {
        walks,
        seed: 0,
        max_depth,
    }
}

/// Walks `model` from seed 0 until a violation, which must be of `property` and come within
/// `walks` walks; its shrunk path must replay to the same failure, and be no longer than the
/// walk's.
fn caught<W: Workload>(name: &str, model: &RecipeModel<W>, property: &str, walks: u64) {
    let verdict = walk(model, limits(walks, 400));
    let violation = verdict
        .violation
        .unwrap_or_else(|| panic!("{name}: no violation in {walks} walks"));
    assert_eq!(violation.property, property, "{name}");
    assert!(violation.path.len() <= violation.found_steps, "{name}");
    let again = shrink(model, violation.property, violation.path.clone());
    assert_eq!(
        again, violation.path,
        "{name}: a shrunk path shrinks no further"
    );
    println!(
        "{name}: {property} violated on walk {} after {} steps, shrunk to {}",
        violation.walk,
        violation.found_steps,
        violation.path.len()
    );
}

#[test]
fn walks_catch_every_known_bad_variant() {
    use Acting::{CaughtUp, Unfenced};
    let lock = |variant| LockWorkload { variant };
    caught(
        "lock herd",
        &model(lock(LockVariant::Herd), 3, "none", CaughtUp),
        "herd free",
        100,
    );
    caught(
        "lock unprotected",
        &model(lock(LockVariant::Unprotected), 3, "drop-reply=1", CaughtUp),
        "leader elected",
        1_000,
    );
    caught(
        "lock unfenced",
        &model(lock(LockVariant::Correct), 3, "expire=1", Unfenced),
        "mutual exclusion",
        10_000,
    );
    let latch = |variant| LatchWorkload { variant };
    caught(
        "latch trust-predecessor",
        &model(
            latch(LatchVariant::TrustPredecessor),
            3,
            "expire=1",
            CaughtUp,
        ),
        "single acting master",
        10_000,
    );
    caught(
        "latch no-owner-check",
        &model(
            latch(LatchVariant::NoOwnerCheck),
            3,
            "client-expire=1",
            CaughtUp,
        ),
        "claims are owned",
        10_000,
    );
    caught(
        "election check-then-write",
        &model(
            ElectionWorkload {
                variant: ElectionVariant::CheckThenWrite,
            },
            3,
            "none",
            Unfenced,
        ),
        "single acting master",
        10_000,
    );
    caught(
        "master no-watch",
        &model(
            MasterWorkload {
                variant: MasterVariant::NoWatch,
            },
            3,
            "expire=1",
            CaughtUp,
        ),
        "leader elected",
        100,
    );
    caught(
        "job trust-owners",
        &model(job(JobVariant::TrustOwners, 2, 2), 2, "crash=1", CaughtUp),
        "no shard lost",
        10_000,
    );
    caught(
        "job uncovered-reshard",
        &model(
            job(JobVariant::UncoveredReshard, 2, 2),
            3,
            "crash=1",
            CaughtUp,
        ),
        "no shard lost",
        10_000,
    );
    caught(
        "job one-item-per-idle",
        &model(
            job(JobVariant::OneItemPerIdle, 3, 2),
            2,
            "crash=1",
            CaughtUp,
        ),
        "no shard lost",
        10_000,
    );
}

/// The exhaustive search cannot take the job with an expiry even with two instances; walks
/// take three under the standard budget, and catch no-cycle-claim there.
#[test]
fn walks_catch_no_cycle_claim_with_three_instances_under_the_standard_budget() {
    let bad = model(
        job(JobVariant::NoCycleClaim, 2, 1),
        3,
        "drop-reply=1,expire=1",
        Acting::CaughtUp,
    );
    let verdict = walk(&bad, limits(1_000, 300));
    let violation = verdict.violation.expect("a violation");
    assert_eq!(violation.property, "no shard executed twice");
    assert_eq!(
        (violation.walk, violation.found_steps, violation.path.len()),
        (13, 213, 174),
        "the walk that finds it, or its length, drifted"
    );
}

/// The correct job, three instances, one lost reply and one expiry: no violation, and items
/// fail over (a `sometimes` check, so that the walks are not empty). The counts are pinned so
/// that drift shows; the release run in `scripts/test-all` takes twenty times the walks.
#[test]
fn the_correct_job_survives_walks_with_three_instances_under_the_standard_budget() {
    let verdict = correct_job_walks(1_000);
    assert_eq!(
        (verdict.steps, verdict.unique_states),
        (215_811, 198_352),
        "the walks drifted"
    );
}

/// [`the_correct_job_survives_walks_with_three_instances_under_the_standard_budget`] with
/// 20,000 walks (about 7 s in release).
#[test]
#[ignore = "about 7 s in release; scripts/test-all runs it"]
fn twenty_thousand_walks_of_the_correct_job_with_three_instances() {
    let verdict = correct_job_walks(20_000);
    assert_eq!(
        (verdict.steps, verdict.unique_states),
        (4_262_510, 3_603_582),
        "the walks drifted"
    );
}

fn correct_job_walks(walks: u64) -> WalkVerdict {
    let correct = correct_job(3, 2, 1, "drop-reply=1,expire=1");
    let verdict = survives(&correct, walks, 300);
    assert!(
        verdict.unreached.is_empty(),
        "never reached: {:?}",
        verdict.unreached
    );
    println!(
        "{walks} walks: {} steps, {} unique states, {} cut off, trace hash {:016x}",
        verdict.steps, verdict.unique_states, verdict.cut_off, verdict.trace_hash
    );
    verdict
}

/// One seed repeats exactly; another seed walks elsewhere; and walk `w` does not depend on
/// how many walks run with it (each walk has its own stream).
#[test]
fn a_seed_repeats_exactly_and_each_walk_is_its_own() {
    let latch = model(
        LatchWorkload {
            variant: LatchVariant::Correct,
        },
        3,
        "drop-reply=1,expire=1",
        Acting::CaughtUp,
    );
    let run = |seed, walks| {
        let mut after_each = Vec::new();
        let verdict = walk_observed(
            &latch,
            WalkLimits {
                walks,
                seed,
                max_depth: 300,
            },
            &mut |verdict| after_each.push(verdict.trace_hash),
        );
        (verdict, after_each)
    };
    let (first, first_hashes) = run(7, 200);
    let (again, again_hashes) = run(7, 200);
    assert_eq!(first, again, "one seed, one run");
    assert_eq!(first_hashes, again_hashes);
    let (other, _) = run(8, 200);
    assert_ne!(
        first.trace_hash, other.trace_hash,
        "another seed walks elsewhere"
    );
    let (fewer, _) = run(7, 50);
    assert_eq!(
        fewer.trace_hash, first_hashes[49],
        "the first 50 walks of 200 are the 50 walks"
    );
}

/// A shard Elastic-Job loses, which walks show with three instances and the exhaustive search
/// cannot reach (with two, the survivor owns every item after a crash): the leader runs its
/// second cycle; instance 0 crashes (which raises `necessary`); instance 1 fires its second
/// cycle and blocks on the sharding; the leader's next trigger shards again and gives instance
/// 1's item, not yet run in cycle 2, to itself, which runs it for cycle 3 only. The
/// `uncovered-reshard` variant keeps that; the correct job runs the standing sharding's items
/// before it waits, and the items a sharding moves. Pinned so that a change of the recipe or
/// of the model's cron shows. (Before the cron gave the leader a spare trigger past the
/// judged cycles, walk 425 found another form of it.)
#[test]
fn walks_show_the_shard_lost_when_the_leader_shards_again_after_others_ran_the_cycle() {
    let uncovered = model(
        job(JobVariant::UncoveredReshard, 2, 2),
        3,
        "crash=1",
        Acting::CaughtUp,
    );
    let violation = walk(&uncovered, limits(1_000, 600))
        .violation
        .expect("the lost shard");
    assert_eq!(violation.property, "no shard lost");
    assert_eq!(
        (violation.walk, violation.found_steps),
        (281, 379),
        "the walk that finds it drifted"
    );
    let correct = correct_job(3, 2, 2, "crash=1");
    survives(&correct, 1_000, 600);
}

/// Three instances over three cycles with a crash and a lost reply, four instances with a
/// crash and a lost reply, and four with two crashes. Before the correct job ran the items a
/// sharding moves in the middle of a cycle, dropped Elastic-Job's take-off check and left for
/// the next cycle the marks of an instance that crashed after its cycle, walks 43, 54 and 23 of
/// seed 0 lost a shard here: a leader whose sharding write lost its reply, a failover taker a
/// cycle behind whose take-off made the owner skip the item, and a taker a cycle behind that
/// ran the item for its own cycle, claimed already. About 25 s in release.
#[test]
#[ignore = "about 25 s in release; scripts/test-all runs it"]
fn no_shard_is_lost_with_three_or_four_instances_and_a_crash() {
    let three = correct_job(3, 2, 3, "crash=1,drop-reply=1");
    survives(&three, 20_000, 800);
    let four = correct_job(4, 4, 2, "crash=1,drop-reply=1");
    survives(&four, 10_000, 900);
    let two_crashes = correct_job(4, 3, 2, "crash=2");
    survives(&two_crashes, 5_000, 900);
}

/// Three instances over three and four cycles with a crash, where an instance fires a cycle
/// after the leader ran it while `necessary` is raised, and blocks on a sharding that only the
/// leader's next trigger writes. The model's cron used to hold that trigger (a loop nobody
/// judged); let go, walk 355 of seed 0 lost the blocked instance's own item, which the new
/// sharding gave the leader for the newer cycle only. The correct job now runs, before it
/// waits, the items the standing sharding gives it. Running them after the wait lost one at
/// walk 761 (the leader had claimed it for its newer cycle); and a failover a cycle behind
/// that found the item run in its cycle by a live instance, and unmarked it though its owner
/// was dead, lost the next cycle's run at walk 8703. About 15 s in release.
#[test]
#[ignore = "about 15 s in release; scripts/test-all runs it"]
fn no_shard_is_lost_past_a_cycle_blocked_on_the_sharding() {
    let three_cycles = correct_job(3, 2, 3, "crash=1");
    survives(&three_cycles, 20_000, 1_000);
    let four_cycles = correct_job(3, 2, 4, "crash=1");
    survives(&four_cycles, 10_000, 1_000);
}

/// Three cycles, a lost reply and an expiry, two instances. Before a later cycle waited for
/// every live instance to have fired and run the one before, the leader retried its sharding
/// after the lost reply while both instances fired cycles 2 and 3 one after another, and each
/// ran only the newest (its misfire): cycle 2 was skipped everywhere, and walk 21,522 of seed 0
/// showed "no shard lost" failing. About 9 s in release.
#[test]
#[ignore = "about 9 s in release; scripts/test-all runs it"]
fn no_cycle_is_skipped_when_the_sharding_retries_over_three_cycles() {
    let correct = correct_job(2, 2, 3, "drop-reply=1,expire=1");
    survives(&correct, 25_000, 800);
}
