//! One recipe, both engines: the built-in lock's model-checker workload (`LockWorkload`, the
//! object `zkharness check lock` explores) runs on the simulated ensemble as
//! `Machined<LockWorkload>` ("lock-model"), judged by the model's own property functions over
//! the run's history. The correct lock passes in both engines; the `herd` variant is caught by
//! "herd free" in both.
#![cfg(madsim)]

use std::path::PathBuf;

use zkh_model::check::LockWorkload;
use zkh_recipes::lock::LockVariant;
use zkh_scenarios::custom::{model, sim, Machined};

type LockModel = Machined<LockWorkload>;

/// A scenario file of the lock-model recipe in this test's own temporary folder.
fn scenario(name: &str, faults: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkh-machined-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join(format!("{name}.toml"));
    let text = format!(
        "[workload]\nrecipe = \"lock-model\"\nclients = 3\n\n[phases]\nfault_ms = 5000\n\
         liveness_ms = 5000\n{faults}"
    );
    std::fs::write(&path, text).expect("written");
    path
}

#[test]
fn the_correct_lock_passes_in_both_engines() {
    let lost = scenario(
        "lost-replies",
        "\n[faults.random]\ndrop_reply_per_s = 0.5\n",
    );
    let quiet = scenario("quiet", "");
    sim::<LockModel>("correct")
        .scenario(&quiet)
        .scenario(&lost)
        .seeds(0..20)
        .run()
        .assert_pass();
    model(LockWorkload {
        variant: LockVariant::Correct,
    })
    .clients(3)
    .faults("drop-reply=1")
    .check()
    .assert_pass();
}

#[test]
fn the_herd_is_caught_in_both_engines() {
    let quiet = scenario("herd", "");
    sim::<LockModel>("herd")
        .scenario(&quiet)
        .seeds(0..5)
        .run()
        .assert_caught("herd free");
    model(LockWorkload {
        variant: LockVariant::Herd,
    })
    .clients(3)
    .faults("none")
    .check()
    .assert_caught("herd free");
}

#[test]
fn a_run_of_the_machine_records_what_its_application_did() {
    let quiet = scenario("records", "");
    let runs = sim::<LockModel>("correct")
        .scenario(&quiet)
        .seeds(0..1)
        .run();
    let (_, run) = runs.runs().next().expect("one run");
    let writes = (run.history.entries().iter())
        .filter(|entry| {
            matches!(
                &entry.event,
                zkh_model::HistoryEvent::SideEffect { detail, .. } if detail == "sell"
            )
        })
        .count();
    assert_eq!(
        writes, 3,
        "each of the three clients sold once under the lock"
    );
}
