//! The livelock verdict (`model/src/check/lasso.rs`): its control of our own design, the latch's
//! `requeue-when-behind` (a participant that is not first deletes its node and queues again),
//! is reported as a livelock whose loop replays, while the correct latch passes the same check,
//! and a check cut off at its depth says what the cut-off paths showed.
#![cfg(not(madsim))]

use stateright::Model;
use zkh_model::check::{
    abstract_key, check_within, Acting, DeepLoops, FaultBudget, LatchWorkload, Limits, RecipeModel,
    LIVELOCK,
};
use zkh_recipes::latch::LatchVariant;

fn latch(variant: LatchVariant, clients: usize, faults: &str) -> RecipeModel<LatchWorkload> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    RecipeModel::new(LatchWorkload { variant }, clients, budget, Acting::CaughtUp)
}

#[test]
fn a_participant_that_queues_again_for_ever_is_a_livelock_whose_loop_replays() {
    let model = latch(LatchVariant::RequeueWhenBehind, 2, "none");
    let verdict = check_within(&model, Limits::default());
    let violation = verdict.violation.expect("a livelock");
    assert_eq!(violation.property, LIVELOCK);
    let loop_start = violation.loop_start.expect("a loop");
    let (stem, steps) = violation.path.split_at(loop_start);
    assert!(!steps.is_empty() && stem.len() < 20, "{:?}", violation.path);
    // The stem, then the loop again and again: each round ends where it began (up to the
    // numbers that only grow), with nothing new in the history; the concrete state moves on.
    let model = RecipeModel {
        forget_settled: false,
        ..model
    };
    let mut state = model.init_states().remove(0);
    for step in stem {
        state = model
            .next_state(&state, step.clone())
            .expect("the stem replays");
    }
    let (key, history) = (abstract_key(&state), state.shared.len());
    for round in 0..4 {
        let before = state.clone();
        for step in steps {
            state = model
                .next_state(&state, step.clone())
                .unwrap_or_else(|| panic!("round {round}: {step:?} is possible"));
        }
        assert_eq!(
            abstract_key(&state),
            key,
            "round {round} ends where it began"
        );
        assert_eq!(
            state.shared.len(),
            history,
            "round {round} makes no progress"
        );
        assert_ne!(state.zk, before.zk, "round {round} changes the server");
    }
}

#[test]
fn the_correct_latch_passes_where_the_control_livelocks() {
    let verdict = check_within(&latch(LatchVariant::Correct, 2, "none"), Limits::default());
    assert!(
        verdict.complete && verdict.violation.is_none(),
        "{verdict:?}"
    );
    assert_eq!(verdict.deep_loops, None, "no path was cut off");
}

#[test]
fn a_check_cut_off_at_its_depth_says_whether_its_paths_came_back() {
    // The correct latch with a budget, cut off well before its paths end: no livelock, and the
    // verdict says what the cut-off paths showed.
    let limits = Limits {
        max_depth: 12,
        ..Limits::default()
    };
    let verdict = check_within(
        &latch(LatchVariant::Correct, 3, "drop-reply=1,expire=1"),
        limits,
    );
    assert!(verdict.violation.is_none(), "{verdict:?}");
    match verdict.deep_loops {
        Some(DeepLoops::NotRepeated { paths } | DeepLoops::RepeatedNotLivelock { paths }) => {
            assert!(paths >= zkh_model::check::DEEP_PATHS, "{paths}")
        }
        other => panic!("{other:?}"),
    }
    // The control cut off as deep is still caught: the fair scheduler takes its paths on.
    let verdict = check_within(
        &latch(LatchVariant::RequeueWhenBehind, 3, "drop-reply=1,expire=1"),
        limits,
    );
    let violation = verdict.violation.expect("a livelock");
    assert_eq!(violation.property, LIVELOCK);
}
