//! Hash compaction (`model/src/check/compact.rs`) against the exact visited set: where no state
//! is missed, a search with either visits the same states in the same order, so it counts the
//! same states, reaches the same depth and meets the same first violation by the same path; a
//! table too small for the space gives up and says so; and the expected misses it reports grow
//! with its comparisons.
#![cfg(not(madsim))]

use zkh_model::check::{
    check_within, Acting, Compaction, FaultBudget, GaveUp, JobWorkload, LatchWorkload, Limits,
    LockWorkload, RecipeModel, Verdict, Workload, MAX_LOAD_PERCENT,
};
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;

/// `workload` run by `clients` clients within `faults`, each acting when caught up.
fn model<W: Workload>(workload: W, clients: usize, faults: &str) -> RecipeModel<W> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    RecipeModel::new(workload, clients, budget, Acting::CaughtUp)
}

/// Checks `model` within `limits` with the exact set and with a compacted one of `mib` MiB,
/// and requires the same verdict but for the compaction's report; returns the compacted one.
fn same_as_exact<W: Workload>(model: &RecipeModel<W>, limits: Limits, mib: u32) -> Verdict {
    let exact = check_within(model, limits);
    let compacted = check_within(
        model,
        Limits {
            compact_mib: Some(mib),
            ..limits
        },
    );
    assert_eq!(exact.compaction, None);
    let compaction = compacted
        .compaction
        .expect("a compacted search reports its table");
    assert_eq!(
        Verdict {
            compaction: None,
            ..compacted.clone()
        },
        exact
    );
    assert_eq!(compaction.slots, (mib as usize) << 18, "4-byte slots");
    compacted
}

#[test]
fn a_compacted_search_passes_where_the_exact_one_does_with_the_same_counts() {
    let lock = model(
        LockWorkload {
            variant: LockVariant::Correct,
        },
        3,
        "drop-reply=1,expire=1",
    );
    let verdict = same_as_exact(&lock, Limits::default(), 16);
    assert!(verdict.complete && verdict.violation.is_none());
    assert_eq!(verdict.unique_states, 111_490);
    let job = model(JobWorkload::new(JobVariant::Correct), 2, "none");
    let verdict = same_as_exact(&job, Limits::default(), 64);
    assert_eq!(verdict.unique_states, 845_042);
    let Compaction { slots, compared } = verdict.compaction.expect("compacted");
    // In a table 5% full, a new state's probe passes a taken slot about one time in twenty.
    let passed = compared as f64 / verdict.unique_states as f64;
    assert!((0.01..0.1).contains(&passed), "{passed}");
    assert!(verdict.compaction.expect("compacted").expected_missed() < 1e-3);
    assert_eq!(slots, 1 << 24);
}

#[test]
fn a_compacted_search_meets_the_same_violation_by_the_same_path() {
    let latch = model(
        LatchWorkload {
            variant: LatchVariant::NoOwnerCheck,
        },
        3,
        "client-expire=1",
    );
    let verdict = same_as_exact(&latch, Limits::default(), 4);
    let violation = verdict.violation.expect("no-owner-check is caught");
    assert_eq!(violation.property, "claims are owned");
    let lock = model(
        LockWorkload {
            variant: LockVariant::Herd,
        },
        3,
        "none",
    );
    let verdict = same_as_exact(&lock, Limits::default(), 4);
    assert_eq!(verdict.violation.expect("herd").property, "herd free");
    // Bounded by preemptions too: the keys are tagged states, compacted the same way.
    let verdict = same_as_exact(
        &latch,
        Limits {
            preemptions: Some(0),
            ..Limits::default()
        },
        4,
    );
    assert!(verdict.violation.is_some());
}

#[test]
fn a_table_too_small_for_the_space_gives_up_and_says_so() {
    let job = model(JobWorkload::new(JobVariant::Correct), 2, "none");
    let limits = Limits {
        compact_mib: Some(1),
        ..Limits::default()
    };
    let verdict = check_within(&job, limits);
    assert_eq!(verdict.gave_up, Some(GaveUp::VisitedFull(1)));
    assert!(!verdict.complete && verdict.violation.is_none());
    assert!(
        verdict.unreached.is_empty(),
        "an incomplete search judges none"
    );
    let slots = verdict.compaction.expect("compacted").slots;
    assert_eq!(slots, 1 << 18);
    // It stops at the first state it pops at the load limit: the last expansion's over.
    let limit = slots * MAX_LOAD_PERCENT / 100;
    assert!(
        (limit..limit + 100).contains(&verdict.unique_states),
        "{} unique states",
        verdict.unique_states
    );
}
