//! The ID allocator's own command line (`custom_main!`), as a user runs it: a sweep of its
//! scenarios ends as each expects; `run` prints the findings and exits as `zkharness` does;
//! `--expect-trace` refuses a history that is not the one recorded; a bad file names its place.
#![cfg(madsim)]

use std::process::Command;

fn allocator(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_id-allocator"))
        .args(args)
        .output()
        .expect("the binary runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_sweep_of_the_allocators_scenarios_ends_as_each_expects() {
    let (code, text) = allocator(&[
        "sweep",
        "scenarios/lost-messages.toml",
        "scenarios/control-unversioned.toml",
        "--seeds",
        "0..20",
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("id-allocator (zkh-example-id-allocator 0.1.0) correct"),
        "the recipe's crate and version: {text}"
    );
    assert_eq!(text.matches(": as expected").count(), 2, "{text}");
}

#[test]
fn run_prints_the_violation_and_refuses_another_trace() {
    let control = "scenarios/control-unversioned.toml";
    let (code, text) = allocator(&["run", control, "--seed", "0"]);
    assert_eq!(code, 1, "a safety violation: {text}");
    assert!(text.contains("VIOLATED  ids unique: ID "), "{text}");
    let trace = text
        .split("trace=")
        .nth(1)
        .map(|t| t.trim().to_owned())
        .expect("a trace hash");
    let (again, _) = allocator(&["run", control, "--seed", "0", "--expect-trace", &trace]);
    assert_eq!(again, 1, "the same run again");
    let (refused, text) = allocator(&[
        "run",
        control,
        "--seed",
        "0",
        "--expect-trace",
        "0000000000000000",
    ]);
    assert_eq!(refused, 4, "{text}");
    assert!(text.contains("does not replay that run"), "{text}");
}

#[test]
fn a_bad_file_or_variant_is_bad_input_named_by_place() {
    let path = std::env::temp_dir().join("zkh-id-allocator-bad.toml");
    std::fs::write(
        &path,
        "[workload]\nrecipe = \"id-allocator\"\nclients = 40\n",
    )
    .expect("written");
    let (code, text) = allocator(&["run", path.to_str().expect("a path")]);
    assert_eq!(code, 64, "{text}");
    assert!(
        text.contains("zkh-id-allocator-bad.toml:3:11: workload.clients: expected 1 to 16 clients"),
        "{text}"
    );
    std::fs::write(
        &path,
        "[workload]\nrecipe = \"id-allocator\"\n\n[workload.config]\npause_ms = 0\n",
    )
    .expect("written");
    let (code, text) = allocator(&["run", path.to_str().expect("a path")]);
    assert_eq!(code, 64, "the recipe's own configuration check: {text}");
    assert!(
        text.contains(
            "zkh-id-allocator-bad.toml:5:12: workload.config.pause_ms: expected 1 to 60000 ms"
        ),
        "{text}"
    );
    let (code, text) = allocator(&["run", "scenarios/harsh.toml", "--variant", "optimistic"]);
    assert_eq!(code, 64, "{text}");
    assert!(
        text.contains("known: correct, unversioned, loss-as-success"),
        "{text}"
    );
}
