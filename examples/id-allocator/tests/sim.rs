//! The ID allocator under the simulated ensemble, from `cargo test` (simulated build:
//! `RUSTFLAGS="--cfg madsim" cargo test -p zkh-example-id-allocator`): the correct allocator
//! keeps its IDs unique under lost messages and the harsh random plan, and each known-bad
//! variant is caught within the seeds its scenario states.
#![cfg(madsim)]

use zkh_example_id_allocator::IdAllocator;
use zkh_scenarios::custom::{sim, CustomScenario};

#[test]
fn the_correct_allocator_hands_out_each_id_once_under_lost_messages() {
    sim::<IdAllocator>("correct")
        .scenario("scenarios/lost-messages.toml")
        .scenario("scenarios/harsh.toml")
        .seeds(0..30)
        .run()
        .assert_pass();
}

#[test]
fn a_write_at_any_version_hands_out_an_id_twice() {
    sim::<IdAllocator>("unversioned")
        .scenario("scenarios/control-unversioned.toml")
        .seeds(0..5)
        .run()
        .assert_caught("ids unique");
}

#[test]
fn a_connection_loss_taken_as_success_hands_out_an_id_twice() {
    sim::<IdAllocator>("loss-as-success")
        .scenario("scenarios/control-loss-as-success.toml")
        .seeds(0..10)
        .run()
        .assert_caught("ids unique");
}

/// A failing seed says what broke, where its report is, and the command that reruns it alone;
/// the report is there.
#[test]
fn a_failing_seed_writes_its_report_and_says_how_to_rerun_it() {
    let runs = sim::<IdAllocator>("unversioned")
        .scenario("scenarios/control-unversioned.toml")
        .seeds(0..1)
        .run();
    let panic = std::panic::catch_unwind(|| runs.assert_pass()).expect_err("the control fails");
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(
        message.contains("seed 0: VIOLATED ids unique: ID "),
        "{message}"
    );
    assert!(
        message.contains("ZKH_SEED=0 RUSTFLAGS=\"--cfg madsim\" cargo test"),
        "{message}"
    );
    let report = message
        .split("report: ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .expect("the report's path");
    let text = std::fs::read_to_string(report.trim()).expect("the report was written");
    assert!(text.contains("\"property\": \"ids unique\""), "{text}");
    // A run report like any other: the allocator's own binary replays it, event for event.
    let replayed = std::process::Command::new(env!("CARGO_BIN_EXE_id-allocator"))
        .args(["replay", report.trim()])
        .output()
        .expect("the binary runs");
    let said = String::from_utf8_lossy(&replayed.stdout).into_owned()
        + &String::from_utf8_lossy(&replayed.stderr);
    assert_eq!(replayed.status.code(), Some(0), "{said}");
    assert!(said.contains("identical: "), "{said}");
}

/// A scenario file's mistakes name the file, line, column and field.
#[test]
fn a_bad_scenario_file_names_the_file_line_column_and_field() {
    let text = "[workload]\nrecipe = \"id-allocator\"\n\n[workload.config]\npause_ms = \"fast\"\n";
    let error = CustomScenario::<IdAllocator>::parse("bad.toml", "bad", text)
        .err()
        .expect("an error");
    assert_eq!(
        error.to_string(),
        "bad.toml:5:12: workload.config.pause_ms: expected an integer number of milliseconds, \
         found \"fast\""
    );
    let text = "[workload]\nrecipe = \"id-allocator\"\nvariant = \"optimistic\"\n";
    let error = CustomScenario::<IdAllocator>::parse("bad.toml", "bad", text)
        .err()
        .expect("an error");
    assert_eq!(
        error.to_string(),
        "bad.toml:3:11: workload.variant: unknown variant \"optimistic\" (known: correct, \
         unversioned, loss-as-success)"
    );
    let text = "[workload]\nrecipe = \"id-allocator\"\n\n[workload.config]\npause_ms = 0\n";
    let error = CustomScenario::<IdAllocator>::parse("bad.toml", "bad", text)
        .err()
        .expect("the recipe's own check refuses it");
    assert_eq!(
        error.to_string(),
        "bad.toml:5:12: workload.config.pause_ms: expected 1 to 60000 ms between allocations, \
         found 0"
    );
    let text =
        "[workload]\nrecipe = \"id-allocator\"\n\n[phases]\nfault_ms = 18446744073709551615\n";
    let error = CustomScenario::<IdAllocator>::parse("bad.toml", "bad", text)
        .err()
        .expect("phases that overflow a sum are refused");
    assert!(
        error
            .to_string()
            .starts_with("bad.toml:5:12: phases.fault_ms: a run may last 500000 ms at most"),
        "{error}"
    );
    let text = "[workload]\nrecipe = \"lock\"\n";
    let error = CustomScenario::<IdAllocator>::parse("bad.toml", "bad", text)
        .err()
        .expect("an error");
    assert!(error
        .to_string()
        .starts_with("bad.toml:2:10: workload.recipe: this test runs"));
}

/// A pass whose `sometimes` property never happened is an empty one, and fails: one client
/// alone never races on the counter.
#[test]
fn a_pass_that_never_raced_two_clients_is_an_empty_one() {
    let path = std::env::temp_dir().join("zkh-id-allocator-alone.toml");
    let text = "[workload]\nrecipe = \"id-allocator\"\nclients = 1\n\n[phases]\nfault_ms = 2000\n\
                liveness_ms = 1000\n";
    std::fs::write(&path, text).expect("a scenario in the temporary folder");
    let runs = sim::<IdAllocator>("correct")
        .scenario(&path)
        .seeds(0..3)
        .run();
    assert!(runs
        .runs()
        .all(|(_, run)| run.outcome == zkh_scenarios::report::Outcome::Pass));
    let panic = std::panic::catch_unwind(|| runs.assert_pass()).expect_err("an empty pass");
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(
        message.contains("an empty pass")
            && message.contains("an allocation retried after a conflict"),
        "{message}"
    );
}
