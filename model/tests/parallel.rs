//! The depth-first search on several threads (`model/src/check/parallel.rs`) against the same
//! search on one: a search that finishes explores every state once whichever thread reaches
//! it, so it counts the same states and distinct states and notes the same `sometimes`
//! properties (the deepest path it reports is the deepest at which a state was first met,
//! which depends on the order: one thread's reversed order changes it too), with the exact visited set, compacted, and bounded by
//! preemptions; a known-bad variant fails the same property, and the counterexample shortened
//! afterwards is the same path; a limit still stops it.
//!
//! With symmetry reduction too: the partial-order reduction chooses which client's news comes
//! first by the clients' canonical places, which are the same in every state of a class, so a
//! class gets the same reduced successors whichever of its states the search meets first.
//! (Before that choice was canonical, by the least index, two threads gave the lock and the
//! three-client election a few hundred states more or fewer than one.)
#![cfg(not(madsim))]

use zkh_model::check::{
    check_within, Acting, FaultBudget, GaveUp, JobWorkload, LatchWorkload, Limits, LockWorkload,
    RecipeModel, Verdict, Workload,
};
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;

/// `workload` run by `clients` clients within `faults`, each acting when caught up.
fn model<W: Workload>(workload: W, clients: usize, faults: &str) -> RecipeModel<W> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    RecipeModel::new(workload, clients, budget, Acting::CaughtUp)
}

/// Checks `model` within `limits` on one thread and on each of `threads`, and requires the
/// same verdict from each (but for the compaction's comparisons and the deepest path, which
/// depend on the order of the search, and the states each thread generated, which must be some
/// for every thread); returns the one thread's.
fn same_on_threads<W: Workload>(
    model: &RecipeModel<W>,
    limits: Limits,
    threads: &[usize],
) -> Verdict {
    let one = check_within(
        model,
        Limits {
            threads: 1,
            ..limits
        },
    );
    assert!(
        one.states_by_thread.is_empty(),
        "counted on more threads only"
    );
    for &threads in threads {
        let many = check_within(model, Limits { threads, ..limits });
        let slots = |verdict: &Verdict| verdict.compaction.map(|compaction| compaction.slots);
        assert_eq!(
            slots(&many),
            slots(&one),
            "{threads} threads: the same table"
        );
        let order_free = |verdict: &Verdict| Verdict {
            compaction: None,
            max_depth: 0,
            states_by_thread: Vec::new(),
            ..verdict.clone()
        };
        // Every thread generated states (the one that starts shares its stack with the
        // others as they wait), and between them all but the initial one.
        let by_thread = &many.states_by_thread;
        assert_eq!(by_thread.len(), threads, "one count a thread");
        assert_eq!(by_thread.iter().sum::<usize>(), many.states - 1);
        assert!(
            by_thread.iter().all(|states| *states > 0),
            "{threads} threads: every one works: {by_thread:?}"
        );
        assert_eq!(
            order_free(&many),
            order_free(&one),
            "{threads} threads against one"
        );
    }
    one
}

#[test]
fn threads_pass_where_one_does_with_the_same_counts() {
    let lock = model(
        LockWorkload {
            variant: LockVariant::Correct,
        },
        3,
        "drop-reply=1,expire=1",
    );
    let no_symmetry = Limits {
        symmetry: false,
        ..Limits::default()
    };
    let verdict = same_on_threads(&lock, no_symmetry, &[2, 3, 8]);
    assert!(verdict.complete && verdict.violation.is_none() && verdict.unreached.is_empty());
    assert_eq!(verdict.unique_states, 668_917);
    let verdict = same_on_threads(&lock, Limits::default(), &[2, 3, 8]);
    assert!(verdict.complete && verdict.violation.is_none() && verdict.unreached.is_empty());
    assert_eq!(verdict.unique_states, 111_490, "with symmetry reduction");
    let job = model(JobWorkload::new(JobVariant::Correct), 2, "none");
    let verdict = same_on_threads(&job, Limits::default(), &[2]);
    assert!(verdict.complete && verdict.violation.is_none());
    assert_eq!(verdict.unique_states, 845_042);
    // Compacted, the threads claim the table's slots by compare-and-swap.
    let compacted = Limits {
        compact_mib: Some(64),
        ..Limits::default()
    };
    let verdict = same_on_threads(&job, compacted, &[2]);
    assert_eq!(verdict.unique_states, 845_042);
}

#[test]
fn threads_pass_a_search_bounded_by_preemptions_with_the_same_tagged_states() {
    let job = model(JobWorkload::new(JobVariant::Correct), 2, "expire=1");
    let bounded = Limits {
        preemptions: Some(1),
        max_depth: 1000,
        ..Limits::default()
    };
    let verdict = same_on_threads(&job, bounded, &[2]);
    assert!(verdict.complete && verdict.violation.is_none());
    assert_eq!(verdict.unique_states, 1_109_322, "the README's count");
}

#[test]
fn threads_meet_the_same_violation_and_shorten_it_to_the_same_path() {
    let latch = model(
        LatchWorkload {
            variant: LatchVariant::NoOwnerCheck,
        },
        3,
        "client-expire=1",
    );
    let one = check_within(&latch, Limits::default());
    let violation = one.violation.clone().expect("no-owner-check is caught");
    assert_eq!(violation.property, "claims are owned");
    let herd = model(
        LockWorkload {
            variant: LockVariant::Herd,
        },
        3,
        "none",
    );
    let one_herd = check_within(&herd, Limits::default());
    assert_eq!(
        one_herd.violation.as_ref().expect("herd").property,
        "herd free"
    );
    for threads in [2, 4] {
        // Which thread meets a violation first, by which path, and how far the others went by
        // then depend on their timing: the shortened path does not.
        for (model_one, many) in [
            (
                &one,
                check_within(
                    &latch,
                    Limits {
                        threads,
                        ..Limits::default()
                    },
                ),
            ),
            (
                &one_herd,
                check_within(
                    &herd,
                    Limits {
                        threads,
                        ..Limits::default()
                    },
                ),
            ),
        ] {
            let (expected, found) = (
                model_one.violation.as_ref().expect("caught on one thread"),
                many.violation.expect("caught on several"),
            );
            assert_eq!(found.property, expected.property);
            assert_eq!(found.path, expected.path, "{threads} threads");
            assert!(found.shortest);
        }
    }
}

#[test]
fn threads_stop_at_the_limits() {
    let job = model(JobWorkload::new(JobVariant::Correct), 2, "none");
    let verdict = check_within(
        &job,
        Limits {
            max_states: Some(50_000),
            threads: 2,
            ..Limits::default()
        },
    );
    assert_eq!(verdict.gave_up, Some(GaveUp::States(50_000)));
    assert!(!verdict.complete && verdict.violation.is_none());
    // Each thread adds its counts every few hundred states, so it stops a little past.
    assert!(
        (50_000..60_000).contains(&verdict.states),
        "{}",
        verdict.states
    );
    let verdict = check_within(
        &job,
        Limits {
            compact_mib: Some(1),
            threads: 2,
            ..Limits::default()
        },
    );
    assert_eq!(verdict.gave_up, Some(GaveUp::VisitedFull(1)));
    assert!(!verdict.complete && verdict.violation.is_none());
}
