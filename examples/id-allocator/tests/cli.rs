//! The ID allocator's own `zkharness` (`custom_main!`), as a user runs it: every command that
//! takes a scenario works for the registered recipe beside the built-ins. A sweep of its
//! scenarios ends as each expects; `run` prints the findings, writes a report naming the
//! recipe's crate and version, and exits as `zkharness` does; `replay` gives the same history,
//! and refuses a report of another build of the recipe; `shrink` makes a
//! regression that still fails; `report` renders the timeline; a bad file names its place.
#![cfg(madsim)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn allocator(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_id-allocator"))
        .args(args)
        .env_remove("ZKHARNESS_AS")
        .output()
        .expect("the binary runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// A fresh folder of this test's own under the system's temporary folder.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkh-id-allocator-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).expect("the file was written")
}

#[test]
fn a_sweep_of_the_allocators_scenarios_ends_as_each_expects() {
    let out = scratch("sweep");
    let (code, text) = allocator(&[
        "sweep",
        "scenarios",
        "--seeds",
        "0..20",
        "--out",
        out.to_str().expect("a path"),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("every scenario as expected"), "{text}");
    for control in ["control-unversioned", "control-loss-as-success"] {
        let line = (text.lines())
            .find(|line| line.starts_with(control))
            .expect("the control's line");
        assert!(
            line.contains("violation ids unique") && line.contains("caught@"),
            "{line}"
        );
    }
}

#[test]
fn a_run_writes_a_report_that_replays_and_shrinks() {
    let out = scratch("run");
    let dir = out.to_str().expect("a path");
    let control = "scenarios/control-loss-as-success.toml";
    let (code, shown) = allocator(&["run", control, "--seed", "5", "--out", dir]);
    assert_eq!(code, 1, "a safety violation: {shown}");
    assert!(
        shown.contains("VIOLATED  ids unique (always): ID "),
        "{shown}"
    );
    assert!(
        shown.contains("registered by zkh-example-id-allocator 0.1.0, config pause_ms = 50"),
        "the recipe's crate, version and knobs: {shown}"
    );
    let report = out.join("control-loss-as-success-seed5.json");
    let json = text(&report);
    assert!(
        json.contains("\"recipe_package\": \"zkh-example-id-allocator 0.1.0\""),
        "{json}"
    );
    assert!(text(&out.join("control-loss-as-success-seed5.html")).contains("ids unique"));
    let report = report.to_str().expect("a path");
    let (code, replayed) = allocator(&["replay", report]);
    assert_eq!(code, 0, "{replayed}");
    assert!(replayed.contains("identical: "), "{replayed}");

    let shrunk = out.join("shrunk.toml");
    let (code, said) = allocator(&["shrink", report, "--out", shrunk.to_str().expect("a path")]);
    assert_eq!(code, 0, "{said}");
    let regression = text(&shrunk);
    assert!(
        regression.contains("recipe = \"id-allocator\""),
        "{regression}"
    );
    assert!(
        regression.contains("[workload.config]\npause_ms = 50"),
        "{regression}"
    );
    // The built-ins' fencing knob is not written into a recipe that has no resource to fence.
    assert!(!regression.contains("fenced"), "{regression}");
    let seed = (regression.lines())
        .find_map(|line| line.strip_prefix("seeds = ["))
        .and_then(|rest| rest.strip_suffix(']'))
        .expect("the regression pins its seed")
        .to_owned();
    let (code, again) = allocator(&["run", shrunk.to_str().expect("a path"), "--seed", &seed]);
    assert_eq!(code, 1, "the regression still fails: {again}");

    let html = out.join("again.html");
    let (code, said) = allocator(&["report", report, "--html", html.to_str().expect("a path")]);
    assert_eq!(code, 0, "{said}");
    assert!(text(&html).contains("id-allocator"));
}

#[test]
fn replay_refuses_another_build_of_the_recipe() {
    let out = scratch("replay");
    let dir = out.to_str().expect("a path");
    let (code, shown) = allocator(&[
        "run",
        "scenarios/lost-messages.toml",
        "--seed",
        "1",
        "--out",
        dir,
    ]);
    assert_eq!(code, 0, "{shown}");
    let report = out.join("lost-messages-seed1.json");
    let json = text(&report);
    let other = out.join("other-build.json");
    std::fs::write(
        &other,
        json.replace(
            "zkh-example-id-allocator 0.1.0",
            "zkh-example-id-allocator 0.0.9",
        ),
    )
    .expect("written");
    let (code, said) = allocator(&["replay", other.to_str().expect("a path")]);
    assert_eq!(code, 4, "{said}");
    assert!(
        said.contains("was registered by zkh-example-id-allocator 0.0.9, and this binary's is registered by zkh-example-id-allocator 0.1.0"),
        "{said}"
    );
    // (That the project's own zkharness, which has no such recipe, refuses its report is
    // `scenarios/tests/sim_cli.rs`, `replay_refuses_a_report_whose_recipe_this_binary_lacks`.)
}

#[test]
fn a_bad_file_or_variant_is_bad_input_named_by_place() {
    let dir = scratch("bad");
    let path = dir.join("bad.toml");
    let run = |contents: &str, extra: &[&str]| {
        std::fs::write(&path, contents).expect("written");
        let mut args = vec!["run", path.to_str().expect("a path"), "--seed", "0"];
        args.extend_from_slice(extra);
        allocator(&args)
    };
    let (code, text) = run("[workload]\nrecipe = \"id-allocator\"\nclients = 40\n", &[]);
    assert_eq!(code, 64, "{text}");
    assert!(
        text.contains("bad.toml:3:11: workload.clients: expected 1 to 16 clients"),
        "{text}"
    );
    let (code, text) = run(
        "[workload]\nrecipe = \"id-allocator\"\n\n[workload.config]\npause_ms = 0\n",
        &[],
    );
    assert_eq!(code, 64, "the recipe's own configuration check: {text}");
    assert!(
        text.contains("bad.toml:5:12: workload.config.pause_ms: expected 1 to 60000 ms"),
        "{text}"
    );
    let (code, text) = run(
        "[workload]\nrecipe = \"id-allocator\"\n\n[workload.config]\npause_ms = \"fast\"\n",
        &[],
    );
    assert_eq!(code, 64, "a knob of the wrong type: {text}");
    assert!(
        text.contains(
            "bad.toml:5:12: workload.config.pause_ms: expected an integer number of milliseconds"
        ),
        "{text}"
    );
    let (code, text) = run("[workload]\nrecipe = \"id-alocator\"\n", &[]);
    assert_eq!(code, 64, "{text}");
    assert!(
        text.contains("unknown recipe \"id-alocator\" (built in: lock, latch, election, master, job; registered: id-allocator, id-allocator-machine, lock-model)"),
        "{text}"
    );
    let (code, text) = allocator(&[
        "run",
        "scenarios/harsh.toml",
        "--seed",
        "0",
        "--variant",
        "optimistic",
    ]);
    assert_eq!(code, 64, "{text}");
    assert!(
        text.contains("known: correct, unversioned, loss-as-success"),
        "{text}"
    );
}

#[test]
fn the_built_in_recipes_run_from_the_users_binary_too() {
    let (code, text) = allocator(&[
        "run",
        "../../scenarios/catalog/lock-gc-pause.toml",
        "--seed",
        "0",
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("holds     mutual exclusion (always)"),
        "{text}"
    );
}

/// `check` names the machine recipes in its help, and refuses the async recipe, which only the
/// simulator runs, saying which form `check` takes, rather than calling it unknown.
#[test]
fn check_lists_the_machine_recipes_and_explains_an_async_one() {
    let (code, text) = allocator(&["check", "--help"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("id-allocator-machine"), "{text}");
    assert!(text.contains("Exit code 3 when it gives up"), "{text}");
    let (code, text) = allocator(&["check", "id-allocator", "--faults", "none"]);
    assert_eq!(code, 64, "{text}");
    assert!(text.contains("is a recipe of the simulator only"), "{text}");
    assert!(!text.contains("unknown recipe"), "{text}");
}
