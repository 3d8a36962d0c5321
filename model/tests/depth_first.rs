//! Our depth-first search against stateright's: on passing checks, failing ones and ones that
//! give up at a limit, with symmetry reduction and without, both must visit the same states in
//! the same order, so they count the same states (generated and unique), reach the same depth,
//! give up at the same limit, note the same `sometimes` properties, and meet the same first
//! violation by the same path.
#![cfg(not(madsim))]

use zkh_model::check::{
    check_searched, Acting, ElectionWorkload, FaultBudget, GaveUp, JobWorkload, LatchWorkload,
    Limits, LockWorkload, MasterWorkload, Progress, RecipeModel, Searcher, Verdict, Workload,
    LIVELOCK, PROGRESS_STATES,
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

/// Checks `model` within `limits` by both searches, with symmetry reduction and without, and
/// requires the same verdict from both; returns ours (reduced, then not; a workload whose
/// clients are not interchangeable is checked once, without).
fn same_verdicts<W: Workload>(name: &str, model: &RecipeModel<W>, limits: Limits) -> Vec<Verdict> {
    let reductions: &[bool] = if W::SYMMETRIC {
        &[true, false]
    } else {
        &[false]
    };
    reductions
        .iter()
        .map(|&symmetry| {
            let limits = Limits { symmetry, ..limits };
            let ours = check_searched(model, limits, Searcher::Ours, None);
            let theirs = check_searched(model, limits, Searcher::Stateright, None);
            // Only ours looks for a livelock on the paths it cut off at its depth: where it finds
            // one, stateright's gives up there.
            if ours
                .violation
                .as_ref()
                .is_some_and(|v| v.property == LIVELOCK)
            {
                assert_eq!(
                    theirs.gave_up,
                    Some(GaveUp::Depth(limits.max_depth)),
                    "{name}"
                );
                assert_eq!(theirs.violation, None, "{name}");
                return ours;
            }
            let compared = Verdict {
                deep_loops: None,
                ..ours.clone()
            };
            assert_eq!(compared, theirs, "{name}, symmetry {symmetry}");
            println!(
                "{name}, symmetry {symmetry}: {} states, {} unique, depth {}, violation {:?}",
                ours.states,
                ours.unique_states,
                ours.max_depth,
                ours.violation.as_ref().map(|v| (v.property, v.found_steps))
            );
            ours
        })
        .collect()
}

#[test]
fn both_searches_pass_the_correct_recipes_through_the_same_states() {
    let standard = "drop-reply=1,expire=1";
    let lock = model(
        LockWorkload {
            variant: LockVariant::Correct,
        },
        3,
        standard,
        Acting::CaughtUp,
    );
    let verdicts = same_verdicts("lock", &lock, Limits::default());
    let counts: Vec<usize> = verdicts.iter().map(|v| v.unique_states).collect();
    assert_eq!(counts, [111_490, 668_917]);
    assert!(verdicts.iter().all(|v| v.complete && v.violation.is_none()));
    let latch = model(
        LatchWorkload {
            variant: LatchVariant::Correct,
        },
        3,
        standard,
        Acting::CaughtUp,
    );
    let verdicts = same_verdicts("latch", &latch, Limits::default());
    assert_eq!(verdicts[0].unique_states, 56_237);
    let master = model(
        MasterWorkload {
            variant: MasterVariant::Correct,
        },
        3,
        standard,
        Acting::CaughtUp,
    );
    let verdicts = same_verdicts("master", &master, Limits::default());
    assert_eq!(verdicts[0].unique_states, 2_236);
    let job = model(
        JobWorkload::new(JobVariant::Correct),
        2,
        "none",
        Acting::CaughtUp,
    );
    let verdicts = same_verdicts("job", &job, Limits::default());
    assert_eq!(verdicts[0].unique_states, 845_042);
}

#[test]
fn both_searches_meet_the_same_first_violation_by_the_same_path() {
    let no_owner_check = model(
        LatchWorkload {
            variant: LatchVariant::NoOwnerCheck,
        },
        3,
        "client-expire=1",
        Acting::CaughtUp,
    );
    for verdict in same_verdicts("no-owner-check", &no_owner_check, Limits::default()) {
        let violation = verdict.violation.expect("a violation");
        assert_eq!(violation.property, "claims are owned");
        assert_eq!(violation.path.len(), 22, "shortened to the shortest");
    }
    let unfenced = model(
        LockWorkload {
            variant: LockVariant::Correct,
        },
        3,
        "expire=1",
        Acting::Unfenced,
    );
    for verdict in same_verdicts("unfenced lock", &unfenced, Limits::default()) {
        let violation = verdict.violation.expect("a violation");
        assert_eq!(violation.property, "mutual exclusion");
        assert_eq!(violation.path.len(), 12);
    }
}

#[test]
fn both_searches_give_up_at_the_same_depth() {
    // The correct latch under a lost reply and an expiry, cut off long before its paths end:
    // both searches skip the same states past the limit, and no cut-off path is a livelock.
    let deep = model(
        LatchWorkload {
            variant: LatchVariant::Correct,
        },
        3,
        "drop-reply=1,expire=1",
        Acting::CaughtUp,
    );
    let limits = Limits {
        max_depth: 12,
        ..Limits::default()
    };
    for verdict in same_verdicts("latch cut off", &deep, limits) {
        assert_eq!(verdict.gave_up, Some(GaveUp::Depth(12)));
        assert_eq!(verdict.max_depth, 12);
        assert!(!verdict.complete && verdict.violation.is_none());
    }
    // Under the same budget, check-then-write acting when caught up has paths of every length:
    // two instances that each delete the other's node and write their own, for ever. Ours
    // reports the livelock where stateright's gives up (`same_verdicts` holds them to that).
    let endless = model(
        ElectionWorkload {
            variant: ElectionVariant::CheckThenWrite,
        },
        2,
        "drop-reply=1,expire=1",
        Acting::CaughtUp,
    );
    let limits = Limits {
        max_depth: 40,
        ..Limits::default()
    };
    for verdict in same_verdicts("check-then-write", &endless, limits) {
        let violation = verdict.violation.expect("a livelock");
        assert_eq!(violation.property, LIVELOCK);
    }
}

#[test]
fn ours_gives_up_at_the_states_limit_and_reports_its_progress() {
    let job = model(
        JobWorkload::new(JobVariant::Correct),
        2,
        "none",
        Acting::CaughtUp,
    );
    let limits = Limits {
        max_states: Some(300_000),
        ..Limits::default()
    };
    let mut seen: Vec<Progress> = Vec::new();
    let verdict = check_searched(&job, limits, Searcher::Ours, Some(&mut |p| seen.push(*p)));
    assert_eq!(verdict.gave_up, Some(GaveUp::States(300_000)));
    assert!(!verdict.complete);
    // It stops at the first state it pops at the limit: the last expansion's successors over.
    assert!(
        (300_000..300_100).contains(&verdict.states),
        "{}",
        verdict.states
    );
    // A report every PROGRESS_STATES states popped, each further on than the one before.
    assert!(!seen.is_empty(), "no report in {} states", verdict.states);
    assert!(seen.len() * PROGRESS_STATES <= verdict.states);
    for pair in seen.windows(2) {
        assert!(pair[0].states < pair[1].states, "{pair:?}");
        assert!(pair[0].unique_states < pair[1].unique_states, "{pair:?}");
    }
    let last = seen.last().expect("reports");
    assert!(last.unique_states <= verdict.unique_states);
}
