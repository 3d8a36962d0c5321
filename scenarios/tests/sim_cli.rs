//! The simulator's commands as a user runs them: `run` (the same seed gives the same trace, a
//! different seed another), `replay` (identical, or the first edited event), `shrink` (only the
//! faults the bug needs), `sweep` of the catalogue and the regressions (every file ends as it
//! expects), a counterexample exported by `check` run as a scenario, and the exit codes.
#![cfg(madsim)]

use std::path::{Path, PathBuf};
use std::process::Command;

use zkh_scenarios::runner;
use zkh_scenarios::scenario::load;

use crate::common;
use common::{zkharness, zkharness_with_env};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkh-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}

/// The `result:` line's outcome and trace.
fn result_line(stdout: &str) -> (String, String) {
    let line = stdout
        .lines()
        .last()
        .filter(|l| l.starts_with("result: "))
        .unwrap_or_else(|| panic!("the last line is the result: {stdout}"));
    let trace = line.rsplit("trace=").next().expect("a trace").to_owned();
    (line.to_owned(), trace)
}

#[test]
fn run_twice_gives_the_same_trace_and_another_seed_another() {
    let scenario = "catalog/latch-server-expiry.toml";
    let (code, first, _) = zkharness(&["run", scenario, "--seed", "3"]);
    assert_eq!(code, 0, "{first}");
    assert!(
        first.starts_with("seed: 3\n"),
        "the seed comes first: {first}"
    );
    let (_, again, _) = zkharness(&["run", scenario, "--seed", "3"]);
    let (_, other, _) = zkharness(&["run", scenario, "--seed", "4"]);
    let (line, trace) = result_line(&first);
    assert!(line.starts_with("result: pass seed=3 trace="), "{line}");
    assert_eq!(result_line(&again).1, trace);
    assert_ne!(result_line(&other).1, trace);
    let (_, by_env, _) = {
        let output = Command::new(env!("CARGO_BIN_EXE_zkharness"))
            .args(["run", scenario])
            .env("ZKH_SEED", "3")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("zkharness runs");
        (0, String::from_utf8(output.stdout).expect("utf-8"), ())
    };
    assert_eq!(result_line(&by_env).1, trace, "ZKH_SEED gives the seed");
}

#[test]
fn rust_log_logs_every_history_event_stamped_with_simulated_time() {
    let out = temp("log");
    let args = [
        "run",
        "catalog/latch-crash.toml",
        "--seed",
        "3",
        "--out",
        out.to_str().expect("utf-8"),
    ];
    let (code, quiet_stdout, quiet) = zkharness(&args);
    assert_eq!(code, 0, "{quiet_stdout}");
    assert!(
        !quiet.contains("zkh_sim::history"),
        "no RUST_LOG, no log: {quiet}"
    );
    let (code, stdout, log) = zkharness_with_env(&args, &[("RUST_LOG", "zkh_sim::history=debug")]);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(stdout, quiet_stdout, "logs go to stderr and change nothing");
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("latch-crash-seed3.json")).expect("the report"),
    )
    .expect("JSON");
    let entries = report["history"]["entries"].as_array().expect("history");
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("zkh_sim::history"))
        .collect();
    assert_eq!(lines.len(), entries.len(), "one log line per history event");
    let crash = entries
        .iter()
        .position(|e| {
            e["event"]["Fault"]["description"].as_str() == Some("CrashClient { client: 0 }")
        })
        .expect("the scripted crash is in the history");
    let line = lines[crash];
    assert!(
        line.contains("fault: CrashClient { client: 0 }") && line.contains("seed=3"),
        "{line}"
    );
    let stamp_s: f64 = line
        .trim_start()
        .split_once("s ")
        .and_then(|(stamp, _)| stamp.parse().ok())
        .unwrap_or_else(|| panic!("a simulated-time stamp: {line}"));
    let at_us = entries[crash]["at_us"].as_u64().expect("a time");
    assert!(
        (stamp_s * 1e6 - at_us as f64).abs() < 1_000.0,
        "the stamp {stamp_s} s is the event's simulated time {at_us} us"
    );
    let (code, _, error) = zkharness_with_env(&args, &[("RUST_LOG", "zkh=[")]);
    assert_eq!(code, 64, "{error}");
    assert!(error.contains("RUST_LOG=\"zkh=[\""), "{error}");
    std::fs::remove_dir_all(&out).expect("clean up");
}

/// A report written by a binary with a recipe of a user's own (its scenario names it) is refused
/// by a binary that lacks the recipe: the scenario does not read, as bad input, naming the
/// recipes this binary has.
#[test]
fn replay_refuses_a_report_whose_recipe_this_binary_lacks() {
    let out = temp("replay-lacks");
    let (code, stdout, _) = zkharness(&[
        "run",
        "catalog/lock-gc-pause.toml",
        "--seed",
        "1",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stdout}");
    let own = out.join("queue.toml");
    std::fs::write(&own, "[workload]\nrecipe = \"queue\"\n").expect("write");
    let report = out.join("lock-gc-pause-seed1.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("the report")).expect("JSON");
    json["scenario"]["path"] = serde_json::json!(own.to_str().expect("utf-8"));
    json["recipe_package"] = serde_json::json!("queue-crate 1.0.0");
    let theirs = out.join("theirs.json");
    std::fs::write(&theirs, json.to_string()).expect("write");
    let (code, _, stderr) = zkharness(&["replay", theirs.to_str().expect("utf-8")]);
    assert_eq!(code, 64, "{stderr}");
    assert!(
        stderr.contains("unknown recipe \"queue\" (built in: lock, latch, election, master, job; registered: lock-model)"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&out).expect("clean up");
}

#[test]
fn a_saved_report_replays_identical_and_an_edited_one_diverges_where_edited() {
    let out = temp("replay");
    let scenario = "catalog/election-partition.toml";
    let (code, stdout, _) = zkharness(&[
        "run",
        scenario,
        "--seed",
        "5",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stdout}");
    let report = out.join("election-partition-seed5.json");
    let (code, stdout, _) = zkharness(&["replay", report.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("identical:"), "{stdout}");
    // From another directory too: the report names its scenario by its absolute path.
    let elsewhere = Command::new(env!("CARGO_BIN_EXE_zkharness"))
        .args(["replay", report.to_str().expect("utf-8")])
        .current_dir(&out)
        .output()
        .expect("zkharness runs");
    let shown = String::from_utf8_lossy(&elsewhere.stdout);
    assert_eq!(elsewhere.status.code(), Some(0), "{shown}");
    assert!(shown.contains("identical:"), "{shown}");

    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("the report")).expect("JSON");
    let entries = json["history"]["entries"]
        .as_array_mut()
        .expect("the history");
    assert!(entries.len() > 100);
    entries[77]["at_us"] = serde_json::json!(entries[77]["at_us"].as_u64().expect("a time") + 1);
    let edited = out.join("edited.json");
    std::fs::write(&edited, json.to_string()).expect("write");
    let (code, stdout, _) = zkharness(&["replay", edited.to_str().expect("utf-8")]);
    assert_eq!(code, 4, "a divergence is not as expected: {stdout}");
    assert!(stdout.contains("diverged at event 77"), "{stdout}");
    std::fs::remove_dir_all(&out).expect("clean up");
}

#[test]
fn a_report_of_a_changed_scenario_is_refused() {
    let out = temp("changed");
    let file = out.join("s.toml");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog/master-crash.toml"),
        &file,
    )
    .expect("copy");
    let (code, _, _) = zkharness(&[
        "run",
        file.to_str().expect("utf-8"),
        "--seed",
        "1",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0);
    let text = std::fs::read_to_string(&file).expect("read") + "\n# edited\n";
    std::fs::write(&file, text).expect("edit");
    let (code, _, stderr) =
        zkharness(&["replay", out.join("s-seed1.json").to_str().expect("utf-8")]);
    assert_eq!(code, 4, "{stderr}");
    assert!(stderr.contains("changed since the report"), "{stderr}");
    std::fs::remove_dir_all(&out).expect("clean up");
}

#[test]
fn shrink_keeps_only_the_faults_the_bug_needs() {
    // CURATOR-696's control, with noise: lost replies and requests drawn at random.
    let out = temp("shrink");
    let control = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog/control-latch-no-owner-check.toml"),
    )
    .expect("the control");
    let noisy = control.replace(
        "[expect]",
        "[faults.random]\ndrop_reply_per_s = 0.5\ndrop_request_per_s = 0.5\n\n[expect]",
    );
    let file = out.join("noisy.toml");
    std::fs::write(&file, noisy).expect("write");
    let scenario = load(&file).expect("a scenario").resolved;
    let seed = (0..20)
        .find(|seed| runner::run(&scenario, *seed).as_expected(&scenario))
        .expect("the control is caught");
    let dir = out.to_str().expect("utf-8");
    let (code, _, _) = zkharness(&[
        "run",
        file.to_str().expect("utf-8"),
        "--seed",
        &seed.to_string(),
        "--out",
        dir,
    ]);
    assert_eq!(code, 1, "a safety violation");
    let shrunk = out.join("shrunk.toml");
    let (code, stdout, stderr) = zkharness(&[
        "shrink",
        out.join(format!("noisy-seed{seed}.json"))
            .to_str()
            .expect("utf-8"),
        "--out",
        shrunk.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let minimal = load(&shrunk).expect("the shrunk scenario").resolved;
    assert!(
        minimal.faults.random.is_none(),
        "the random faults became scripted ones"
    );
    let seed = minimal.seeds[0];
    assert!(
        runner::run(&minimal, seed).as_expected(&minimal),
        "the shrunk scenario still fails"
    );
    let faults = minimal.faults.scripted.len() + minimal.faults.triggered.len();
    assert!((1..5).contains(&faults), "a few faults left: {stdout}");
    for drop in 0..minimal.faults.scripted.len() {
        let mut without = minimal.clone();
        without.faults.scripted.remove(drop);
        assert!(
            !runner::run(&without, seed).as_expected(&without),
            "fault {drop} is needed: {:?}",
            minimal.faults.scripted[drop]
        );
    }
    std::fs::remove_dir_all(&out).expect("clean up");
}

#[test]
fn every_catalogue_regression_and_finding_scenario_ends_as_its_file_expects() {
    let out = temp("catalogue");
    let json = out.join("summary.json");
    let (code, stdout, stderr) = zkharness(&[
        "sweep",
        "catalog",
        "regressions",
        "findings",
        "--seeds",
        "0..4",
        "--json",
        json.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the summary")).expect("JSON");
    let scenarios = summary["scenarios"].as_array().expect("scenarios");
    assert!(scenarios.len() >= 65, "{}", scenarios.len());
    for scenario in scenarios {
        let name = scenario["scenario"].as_str().expect("a name");
        assert_eq!(scenario["ok"], true, "{name}");
        assert!(
            scenario["seeds_run"].as_u64().expect("a count") >= 1,
            "{name}"
        );
        assert!(
            scenario["seeds_per_sec"].as_f64().expect("a speed") > 0.0,
            "{name}"
        );
        if scenario["expected"] != "pass" {
            assert!(
                !scenario["caught_at"].as_array().expect("seeds").is_empty(),
                "{name}"
            );
        }
    }
    std::fs::remove_dir_all(&out).expect("clean up");
}

#[test]
fn a_sweep_failure_prints_the_command_that_reproduces_it_and_writes_its_report() {
    // The correct lock without fencing, expected to pass: its stale holders make it fail.
    let out = temp("failing");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog/control-lock-unfenced.toml"),
    )
    .expect("the control");
    let file = out.join("unfenced.toml");
    let expect_at = text.find("[expect]").expect("an expectation");
    std::fs::write(&file, &text[..expect_at]).expect("write");
    let dir = out.to_str().expect("utf-8");
    let (code, stdout, stderr) = zkharness(&[
        "sweep",
        file.to_str().expect("utf-8"),
        "--seeds",
        "0..3",
        "--out",
        dir,
        "--jobs",
        "1",
        "--fail-fast",
    ]);
    assert_eq!(code, 1, "a safety violation: {stdout}{stderr}");
    let repro = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("reproduce: "))
        .unwrap_or_else(|| panic!("a reproduce line: {stderr}"));
    let args: Vec<&str> = repro.split(' ').skip(1).collect();
    let (code, stdout, _) = zkharness(&args);
    assert_eq!(code, 1, "the printed command reproduces it: {stdout}");
    assert!(
        stdout.contains("result: violation mutual exclusion"),
        "{stdout}"
    );
    let reports: Vec<_> = std::fs::read_dir(&out)
        .expect("the folder")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("unfenced-seed"))
        .collect();
    assert!(!reports.is_empty(), "its report was written");
    std::fs::remove_dir_all(&out).expect("clean up");
}

#[test]
fn each_outcome_has_its_exit_code() {
    let out = temp("codes");
    let write = |name: &str, text: &str| {
        let file = out.join(name);
        std::fs::write(&file, text).expect("write");
        file.to_str().expect("utf-8").to_owned()
    };
    let run = |file: &str, seed: &str| zkharness(&["run", file, "--seed", seed]).0;
    assert_eq!(run("catalog/master-crash.toml", "0"), 0, "pass");
    assert_eq!(
        run("catalog/control-lock-herd.toml", "0"),
        1,
        "a safety violation"
    );
    assert_eq!(
        run("catalog/control-master-no-watch.toml", "0"),
        2,
        "a liveness failure"
    );
    let never = write(
        "never.toml",
        "[workload]\nrecipe = \"master\"\n\n[[faults.triggered]]\nwhen = { op = \"delete\", path_prefix = \"/nowhere/\" }\nfault = { kind = \"crash-client\", client = 0 }\n",
    );
    let (code, stdout, _) = zkharness(&["run", &never, "--seed", "0"]);
    assert_eq!(code, 4, "a planned fault that never fired: {stdout}");
    assert!(
        stdout.contains("NOT FIRED not fired (its trigger never matched): CrashClient"),
        "{stdout}"
    );
    let bad = write(
        "bad.toml",
        "[workload]\nrecipe = \"lock\"\nclients = \"three\"\n",
    );
    let (code, _, stderr) = zkharness(&["run", &bad, "--seed", "0"]);
    assert_eq!(code, 64, "bad input");
    assert!(
        stderr.contains(
            "bad.toml:3:11: workload.clients: expected a whole number, 0 or more, found \"three\""
        ),
        "{stderr}"
    );
    let (code, _, _) = zkharness(&["sweep", "catalog", "--jobs", "0"]);
    assert_eq!(code, 64, "no workers is bad input");
    assert_eq!(
        zkharness(&["check", "lock", "--max-states", "1000"]).0,
        3,
        "gave up"
    );
    std::fs::remove_dir_all(&out).expect("clean up");
}

/// A registered machine recipe's counterexample (`lock-model`, the lock's model workload)
/// exports as a scenario of the machine recipe, whose paths are the same in both engines, and
/// the simulator reproduces it.
#[test]
fn a_machine_recipes_exported_counterexample_reproduces_in_the_simulator() {
    let out = temp("export-machine");
    let file = out.join("lock-model-herd.toml");
    let path = file.to_str().expect("utf-8");
    let (code, stdout, stderr) = zkharness(&[
        "check",
        "lock-model",
        "--variant",
        "herd",
        "--faults",
        "none",
        "--export",
        path,
    ]);
    assert_eq!(code, 1, "{stdout}");
    // The export says whether the simulator reproduced it.
    assert!(
        stderr.contains("the simulator reproduces \"herd free\" at seed 0"),
        "{stderr}"
    );
    let (code, swept, _) = zkharness(&["sweep", path, "--out", out.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "caught as the file expects: {swept}");
    assert!(swept.contains("caught@"), "{swept}");
    std::fs::remove_dir_all(&out).expect("clean up");
}

#[test]
fn an_exported_counterexample_runs_as_a_scenario_and_reproduces_within_10_seeds() {
    let out = temp("export");
    let file = out.join("no-owner-check.toml");
    let path = file.to_str().expect("utf-8");
    let (code, stdout, _) = zkharness(&[
        "check",
        "latch",
        "--variant",
        "no-owner-check",
        "--faults",
        "client-expire=1",
        "--no-claims",
        "--export",
        path,
    ]);
    assert_eq!(code, 1, "{stdout}");
    let caught = (0..10).find(|seed| zkharness(&["run", path, "--seed", &seed.to_string()]).0 == 1);
    assert!(
        caught.is_some(),
        "the simulator reproduces the model's violation"
    );
    std::fs::remove_dir_all(&out).expect("clean up");
}

/// The unfenced scenarios' control is caught by them alone: `keep-on-suspend` (a latch whose
/// leadership survives SUSPENDED) passes the fenced `latch-partition.toml` at the seeds where
/// its unfenced control is caught, because the resource refuses the stale leader's writes.
#[test]
fn fencing_hides_the_control_that_the_unfenced_scenario_catches() {
    let dir = temp("fencing-hides");
    let fenced = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog/latch-partition.toml"),
    )
    .expect("the catalogue's latch-partition")
    .replace("variant = \"correct\"", "variant = \"keep-on-suspend\"");
    assert!(fenced.contains("fenced = true"), "{fenced}");
    let file = dir.join("latch-partition-keep-on-suspend.toml");
    std::fs::write(&file, fenced).expect("written");
    let out = dir.join("reports");
    let (code, stdout, stderr) = zkharness(&[
        "sweep",
        file.to_str().expect("utf-8 path"),
        "--seeds",
        "0..20",
        "--out",
        out.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code, 0, "fenced, the variant passes: {stdout}{stderr}");
    let (code, stdout, stderr) = zkharness(&[
        "sweep",
        "catalog/control-latch-keep-on-suspend.toml",
        "--out",
        out.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code, 0, "unfenced, its control is caught: {stdout}{stderr}");
    assert!(stdout.contains("caught@"), "{stdout}");
}

/// The end-of-run orphan check catches its control alone: the latch's `unprotected` (a create
/// whose reply was lost is made again without looking for its node) leaves, behind a leader
/// that keeps leading, a node its live session owns and does not know of, and no other
/// property breaks; the correct latch in the same scenario passes it, with a node judged.
#[test]
fn the_orphan_check_alone_catches_a_node_left_behind_the_leader() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog/control-latch-unprotected.toml");
    let control = load(&file).expect("the control").resolved;
    let mut correct = control.clone();
    correct.variant = "correct".to_owned();
    let broken = |result: &runner::RunResult| -> Vec<String> {
        (result.findings.iter())
            .filter(|f| f.class != "sometimes" && !f.holds)
            .map(|f| f.property.clone())
            .collect()
    };
    for seed in 0..10 {
        let caught = runner::run(&control, seed);
        assert_eq!(broken(&caught), ["no orphaned ephemerals"], "seed {seed}");
        let orphan = (caught.findings.iter())
            .find(|f| f.property == "no orphaned ephemerals")
            .expect("judged");
        assert!(
            orphan.detail.contains("client 2's session"),
            "{}",
            orphan.detail
        );
        assert_eq!(orphan.evidence.len(), 1, "the create whose reply was lost");

        let passed = runner::run(&correct, seed);
        assert!(
            broken(&passed).is_empty(),
            "seed {seed}: {:?}",
            broken(&passed)
        );
        let judged = (passed.findings.iter())
            .find(|f| f.property == "an ephemeral was judged")
            .expect("the companion");
        assert!(judged.holds, "seed {seed}: no node was there to judge");
    }
}

/// The end-of-run "claims are owned" judges what a recipe stands on without a role: the job's
/// `no-reregister` (a new session after an expiry registers nothing) ends standing on a
/// registration that is not there; the correct job in the same file passes, its
/// registrations judged.
#[test]
fn a_registration_the_instance_stands_on_must_be_there_when_the_run_ends() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog/control-job-no-reregister.toml");
    let control = load(&file).expect("the control").resolved;
    let mut correct = control.clone();
    correct.variant = "correct".to_owned();
    let claims = |result: &runner::RunResult| {
        (result.findings.iter())
            .find(|f| f.property == "claims are owned")
            .expect("judged")
            .clone()
    };
    for seed in 0..3 {
        let caught = claims(&runner::run(&control, seed));
        assert!(!caught.holds, "seed {seed}");
        assert!(
            caught
                .detail
                .contains("stands on /orders-job/instances/client0 when the run ends"),
            "{}",
            caught.detail
        );
        let passed = runner::run(&correct, seed);
        let outcome = format!("{:?}", passed.outcome);
        assert_eq!(outcome, "Pass", "seed {seed}");
        let held = claims(&passed);
        assert!(
            held.holds
                && !held
                    .detail
                    .ends_with("; 0 registrations, each its client's own"),
            "seed {seed}: {}",
            held.detail
        );
    }
}

/// Determinism across threads: the same seeds swept on one thread and on two, and each run
/// alone, give the same trace hashes (every seed on a fresh thread with a fresh runtime, the
/// seed the only entropy). The unfenced lock expected to pass fails on several seeds, and a
/// sweep reports each failing seed with its trace.
#[test]
fn a_seed_gives_the_same_trace_on_one_thread_two_threads_and_alone() {
    let dir = temp("threads");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog/control-lock-unfenced.toml"),
    )
    .expect("the control");
    let expect_at = text.find("[expect]").expect("an expectation");
    let file = dir.join("unfenced.toml");
    std::fs::write(&file, &text[..expect_at]).expect("write");
    let file = file.to_str().expect("utf-8").to_owned();
    let traces = |jobs: &str| -> Vec<(u64, String)> {
        let out = dir.join(format!("jobs-{jobs}"));
        let (code, stdout, stderr) = zkharness(&[
            "sweep",
            &file,
            "--seeds",
            "0..12",
            "--jobs",
            jobs,
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        assert_eq!(code, 1, "the unfenced lock fails: {stdout}{stderr}");
        let mut traces: Vec<(u64, String)> = std::fs::read_dir(&out)
            .expect("the reports")
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| {
                path.extension().is_some_and(|e| e == "json")
                    && path.to_string_lossy().contains("-seed")
            })
            .map(|path| {
                let report: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).expect("a report"))
                        .expect("json");
                let seed = report["seed"].as_u64().expect("a seed");
                let trace = report["trace"].as_str().expect("a trace").to_owned();
                (seed, trace)
            })
            .collect();
        traces.sort();
        traces
    };
    let one = traces("1");
    let two = traces("2");
    assert!(
        one.len() >= 2,
        "several seeds fail and are reported: {one:?}"
    );
    assert_eq!(one, two, "one thread and two give the same traces");
    for (seed, trace) in &one {
        let (_, stdout, _) = zkharness(&["run", &file, "--seed", &seed.to_string()]);
        assert_eq!(&result_line(&stdout).1, trace, "seed {seed} run alone");
    }
}

/// A sweep that never saw a companion its file requires (`expect.reached`) passed emptily:
/// not as expected, exit 4. One client never waits for the lock, so nobody is woken; three do.
#[test]
fn a_sweep_that_never_reached_a_required_companion_is_an_empty_pass() {
    let dir = temp("reached");
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog/lock-partition.toml"),
    )
    .expect("the catalogue file");
    for (clients, code, said) in [(1, 4, "NOT REACHED"), (3, 0, "every scenario as expected")] {
        let text = base.replace("clients = 3", &format!("clients = {clients}"))
            + "\n[expect]\nreached = [\"a waiter was woken\"]\n";
        let file = dir.join(format!("one-{clients}.toml"));
        std::fs::write(&file, text).expect("written");
        let json = dir.join(format!("summary-{clients}.json"));
        let (got, stdout, stderr) = zkharness(&[
            "sweep",
            file.to_str().expect("utf-8"),
            "--seeds",
            "0..3",
            "--json",
            json.to_str().expect("utf-8"),
            "--out",
            dir.join(format!("out-{clients}")).to_str().expect("utf-8"),
        ]);
        assert_eq!(got, code, "{clients} clients: {stdout}{stderr}");
        assert!(stdout.contains(said), "{clients} clients: {stdout}");
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("the summary"))
                .expect("JSON");
        let never = summary["scenarios"][0]["sometimes_never"].to_string();
        assert_eq!(
            never.contains("a waiter was woken"),
            clients == 1,
            "{never}"
        );
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// `sweep --variant` runs every scenario with another variant, as `run --variant` does, and
/// prints reruns that name it; a variant the recipe lacks is bad input.
#[test]
fn sweep_runs_another_variant_and_its_reruns_name_it() {
    let out = temp("sweep-variant");
    let out_dir = out.to_str().expect("utf-8");
    let (code, stdout, stderr) = zkharness(&[
        "sweep",
        "catalog/lock-gc-pause.toml",
        "--variant",
        "herd",
        "--seeds",
        "0..2",
        "--out",
        out_dir,
    ]);
    assert_eq!(code, 1, "the herd breaks herd freedom: {stdout}{stderr}");
    assert!(
        stderr.contains("catalog/lock-gc-pause.toml --seed 0 --variant herd"),
        "{stderr}"
    );
    let (code, _, stderr) = zkharness(&[
        "sweep",
        "catalog/lock-gc-pause.toml",
        "--variant",
        "nope",
        "--out",
        out_dir,
    ]);
    assert_eq!(code, 64, "{stderr}");
    assert!(stderr.contains("nope"), "{stderr}");
    std::fs::remove_dir_all(&out).expect("clean up");
}

/// A report cut short anywhere is bad input for `report` and `replay` (exit 64, named by file,
/// line and column), never a panic.
#[test]
fn a_truncated_report_is_bad_input_wherever_it_is_cut() {
    let out = temp("truncated");
    let out_dir = out.to_str().expect("utf-8");
    let (code, stdout, _) = zkharness(&[
        "run",
        "catalog/lock-gc-pause.toml",
        "--seed",
        "0",
        "--out",
        out_dir,
    ]);
    assert_eq!(code, 0, "{stdout}");
    let text = std::fs::read_to_string(out.join("lock-gc-pause-seed0.json")).expect("the report");
    let cut = out.join("cut.json");
    let step = (text.len() / 40).max(1);
    for at in (0..text.len() - 2).step_by(step) {
        let mut end = at;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        std::fs::write(&cut, &text[..end]).expect("written");
        let shown = cut.to_str().expect("utf-8");
        for args in [vec!["report", shown, "--html", "-"], vec!["replay", shown]] {
            let (code, _, stderr) = zkharness(&args);
            assert_eq!(code, 64, "{args:?} cut at {end}: {stderr}");
            assert!(
                stderr.contains("cut.json:"),
                "{args:?} cut at {end}: {stderr}"
            );
            assert!(
                !stderr.contains("panicked"),
                "{args:?} cut at {end}: {stderr}"
            );
        }
    }
    std::fs::remove_dir_all(&out).expect("clean up");
}
