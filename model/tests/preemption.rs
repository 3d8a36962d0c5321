//! Searches bounded by preemptions (`Limits::preemptions`; see `model/src/check/preemption.rs`):
//! they grow with the bound, they catch the known-bad variants with few preemptions, the bugs
//! that need one preemption are missed with none, and the correct sharded job passes every
//! schedule with two preemptions under an expiry, and with three instances every schedule
//! without preemptions under an expiry or a crash: spaces the unbounded search cannot finish.
//! The counts are pinned, so that drift shows. The sharded job's checks take seconds each in
//! release and are ignored in the plain test run; `scripts/test-all` runs them in release.
#![cfg(not(madsim))]

use zkh_model::check::{
    check_within, Acting, ElectionWorkload, FaultBudget, JobWorkload, LatchWorkload, Limits,
    LockWorkload, MasterWorkload, RecipeModel, Verdict, Workload,
};
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;

/// One lost reply and one session expiry.
const STANDARD: &str = "drop-reply=1,expire=1";

/// `workload` run by `clients` clients within `faults`, acting when caught up.
fn model<W: Workload>(workload: W, clients: usize, faults: &str) -> RecipeModel<W> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    RecipeModel::new(workload, clients, budget, Acting::CaughtUp)
}

/// `model` checked with at most `preemptions` preemptions, within `max_depth` steps.
fn bounded<W: Workload>(model: &RecipeModel<W>, preemptions: u8, max_depth: usize) -> Verdict {
    let limits = Limits {
        max_depth,
        preemptions: Some(preemptions),
        ..Limits::default()
    };
    let verdict = check_within(model, limits);
    assert!(
        !verdict.symmetry,
        "a bounded search does not reduce by symmetry"
    );
    verdict
}

/// Requires a complete pass with `unique_states` tagged states, which reached every
/// `sometimes` property.
fn passes(name: &str, verdict: &Verdict, unique_states: usize) {
    passes_without(name, verdict, unique_states, &[]);
}

/// [`passes`], with the `sometimes` properties `unreached` (those a fault-free check cannot
/// reach) not reached.
fn passes_without(name: &str, verdict: &Verdict, unique_states: usize, unreached: &[&str]) {
    assert_eq!(verdict.violation, None, "{name}");
    assert!(verdict.complete, "{name}: {:?}", verdict.gave_up);
    assert_eq!(verdict.unreached, unreached, "{name}");
    assert_eq!(verdict.unique_states, unique_states, "{name}");
}

/// Requires a violation of `property` whose counterexample has `steps` steps.
fn fails(name: &str, verdict: &Verdict, property: &str, steps: usize) {
    let violation = verdict
        .violation
        .as_ref()
        .unwrap_or_else(|| panic!("{name}"));
    assert_eq!(violation.property, property, "{name}");
    assert_eq!(violation.path.len(), steps, "{name}");
}

fn latch(variant: LatchVariant, faults: &str) -> RecipeModel<LatchWorkload> {
    model(LatchWorkload { variant }, 3, faults)
}

fn job(variant: JobVariant, clients: usize, cycles: u64, faults: &str) -> RecipeModel<JobWorkload> {
    let workload = JobWorkload {
        cycles,
        ..JobWorkload::new(variant)
    };
    model(workload, clients, faults)
}

#[test]
fn the_correct_lock_passes_and_each_bound_explores_more() {
    let lock = model(
        LockWorkload {
            variant: LockVariant::Correct,
        },
        3,
        STANDARD,
    );
    let none = bounded(&lock, 0, Limits::DEFAULT_MAX_DEPTH);
    let one = bounded(&lock, 1, Limits::DEFAULT_MAX_DEPTH);
    passes("lock, no preemption", &none, 164_584);
    passes("lock, one preemption", &one, 628_186);
    // The unbounded search without symmetry reduction: 668,917 states. A state counts once
    // per (running client, preemptions used) here, so the bounded counts can pass it.
}

#[test]
fn the_known_bad_lock_latch_and_master_are_caught_without_preemptions() {
    let herd = model(
        LockWorkload {
            variant: LockVariant::Herd,
        },
        3,
        STANDARD,
    );
    fails("herd", &bounded(&herd, 0, 300), "herd free", 11);
    let trust = latch(LatchVariant::TrustPredecessor, STANDARD);
    let trusting = bounded(&trust, 0, 300);
    fails("trust-predecessor", &trusting, "single acting master", 22);
    let no_watch = model(
        MasterWorkload {
            variant: MasterVariant::NoWatch,
        },
        3,
        STANDARD,
    );
    fails("no-watch", &bounded(&no_watch, 0, 300), "leader elected", 9);
    let no_owner = latch(LatchVariant::NoOwnerCheck, "client-expire=1");
    let stale = bounded(&no_owner, 0, 300);
    fails("no-owner-check", &stale, "claims are owned", 22);
}

#[test]
fn check_then_write_needs_one_preemption() {
    // Two instances both find no leader and both write themselves as leader: the server must
    // switch to the second between the first one's check and its write.
    let racing = RecipeModel::new(
        ElectionWorkload {
            variant: ElectionVariant::CheckThenWrite,
        },
        3,
        FaultBudget::default(),
        Acting::Unfenced,
    );
    // Without a fault, no leader loses its role.
    let lost = ["leadership changed hands after a loss"];
    passes_without("no preemption", &bounded(&racing, 0, 300), 181, &lost);
    fails(
        "one preemption",
        &bounded(&racing, 1, 300),
        "single acting master",
        22,
    );
}

#[test]
#[ignore = "seconds in release: scripts/test-all runs it"]
fn no_cycle_claim_without_faults_needs_one_preemption() {
    // The leader shards again as the other instance joins, between reading that an item is its
    // own and running it: the server must switch to the newcomer while the leader has a
    // request waiting.
    let no_claim = job(JobVariant::NoCycleClaim, 2, 1, "none");
    // Without a fault, nothing fails over.
    let none = bounded(&no_claim, 0, 1000);
    passes_without("no preemption", &none, 467, &["an item failed over"]);
    let one = bounded(&no_claim, 1, 1000);
    fails("one preemption", &one, "no shard executed twice", 93);
}

#[test]
#[ignore = "seconds in release: scripts/test-all runs it"]
fn the_jobs_known_bad_variants_are_caught_without_preemptions() {
    let expiring = job(JobVariant::NoCycleClaim, 2, 1, "expire=1");
    let twice = bounded(&expiring, 0, 1000);
    fails("no-cycle-claim", &twice, "no shard executed twice", 94);
    let trusting = job(JobVariant::TrustOwners, 2, 2, "crash=1");
    fails(
        "trust-owners",
        &bounded(&trusting, 0, 1000),
        "no shard lost",
        90,
    );
    // Found only by random walks before: three instances, two cycles, a crash.
    let resharding = job(JobVariant::UncoveredReshard, 3, 2, "crash=1");
    let lost = bounded(&resharding, 0, 1000);
    fails("uncovered-reshard", &lost, "no shard lost", 339);
}

#[test]
#[ignore = "about 20 s in release: scripts/test-all runs it"]
fn the_correct_job_passes_every_schedule_with_two_preemptions_under_an_expiry() {
    // The unbounded search passed 1.37 billion states of this space without finishing.
    let correct = job(JobVariant::Correct, 2, 1, "expire=1");
    passes("no preemption", &bounded(&correct, 0, 1000), 38_039);
    passes("one preemption", &bounded(&correct, 1, 1000), 1_109_322);
    passes("two preemptions", &bounded(&correct, 2, 1000), 11_507_300);
    let standard = job(JobVariant::Correct, 2, 1, STANDARD);
    passes("standard budget", &bounded(&standard, 0, 1000), 3_129_504);
}

#[test]
#[ignore = "about 25 s in release: scripts/test-all runs it"]
fn the_correct_job_with_three_instances_passes_every_schedule_without_preemptions() {
    // The unbounded search passed 1.29 billion states of three instances without a fault,
    // without finishing.
    let expiring = job(JobVariant::Correct, 3, 1, "expire=1");
    passes("one expiry", &bounded(&expiring, 0, 1000), 10_106_682);
    let crashing = job(JobVariant::Correct, 3, 1, "crash=1");
    passes("one crash", &bounded(&crashing, 0, 1000), 2_086_239);
    let no_fault = job(JobVariant::Correct, 3, 1, "none");
    // Without a fault, nothing fails over.
    let once = bounded(&no_fault, 1, 1000);
    passes_without("no fault", &once, 1_072_662, &["an item failed over"]);
}
