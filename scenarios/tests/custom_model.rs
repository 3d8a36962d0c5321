//! The model checker from `cargo test` (`zkh_scenarios::custom::model`), on the built-in
//! workloads as a user's would be checked: a correct recipe passes exhaustively and by walks,
//! a known-bad one is caught, and a search that gave up is not a pass.
#![cfg(not(madsim))]

use zkh_model::check::{LatchWorkload, Limits, LockWorkload};
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_scenarios::custom::model;

fn lock(variant: LockVariant) -> LockWorkload {
    LockWorkload { variant }
}

#[test]
fn the_correct_lock_passes_and_the_herd_is_caught() {
    model(lock(LockVariant::Correct))
        .clients(3)
        .faults("drop-reply=1,expire=1")
        .check()
        .assert_pass();
    model(lock(LockVariant::Herd))
        .clients(3)
        .faults("none")
        .check()
        .assert_caught("herd free");
}

#[test]
fn walks_check_what_the_search_does_not_finish_and_a_search_that_gave_up_is_no_pass() {
    let latch = || LatchWorkload {
        variant: LatchVariant::Correct,
    };
    model(latch())
        .clients(3)
        .faults("drop-reply=1,expire=1")
        .walks(200, 7)
        .check()
        .assert_pass();
    let cut = model(latch())
        .clients(3)
        .faults("drop-reply=1,expire=1")
        .limits(Limits {
            max_states: Some(1_000),
            ..Limits::default()
        })
        .check();
    let panic = std::panic::catch_unwind(|| cut.assert_pass()).expect_err("gave up");
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(message.contains("the search gave up"), "{message}");
}
