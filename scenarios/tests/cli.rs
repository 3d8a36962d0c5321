//! `zkharness` as a user runs it: JSON for CI, exit codes, errors that say what is wrong, an
//! exported scenario, and the Explorer on 127.0.0.1.
#![cfg(not(madsim))]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zkh_scenarios::known_bad::{known_bad, KnownBad, KNOWN_BAD, MODEL_FINDINGS};

fn zkharness(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_zkharness"))
        .args(args)
        .output()
        .expect("zkharness runs");
    (
        output.status.code().expect("an exit code"),
        String::from_utf8(output.stdout).expect("utf-8"),
        String::from_utf8(output.stderr).expect("utf-8"),
    )
}

#[test]
fn check_json_reports_a_violation_with_its_path_and_exits_1() {
    let (code, stdout, _) = zkharness(&[
        "check",
        "lock",
        "--variant",
        "herd",
        "--faults",
        "none",
        "--json",
    ]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["recipe"], "lock");
    assert_eq!(report["variant"], "herd");
    assert!(report["unique_states"].as_u64().expect("a count") > 0);
    assert!(report["states_per_sec"].as_f64().expect("a rate") > 0.0);
    assert_eq!(report["result"]["violation"], "herd free");
    assert_eq!(
        report["result"]["path"].as_array().expect("a path").len(),
        11
    );
    assert!(
        (report["result"]["explanation"].as_str())
            .is_some_and(|e| e.contains("one waiting client")),
        "the property's explanation: {report}"
    );
    let path = report["result"]["path"].to_string();
    assert!(
        path.contains("create /locks/stock/")
            && path.contains("ephemeral sequential")
            && !path.contains("data: ["),
        "requests in words, data as text: {path}"
    );
}

#[test]
fn check_json_reports_a_pass_and_exits_0() {
    let one = [
        "check",
        "latch",
        "--clients",
        "2",
        "--faults",
        "drop-reply=1,expire=1",
    ];
    let (code, stdout, _) = zkharness(&[&one[..], &["--json"]].concat());
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["result"], "pass");
    assert_eq!(report["faults"], "drop-reply=1,expire=1");
    assert!(report.get("budgets").is_none(), "one budget: {report}");
}

/// Without `--faults`, `check` checks the standard budgets: the pair it always checked first,
/// then each kind alone, one row each; an option of one search checks that pair alone.
#[test]
fn the_plain_check_covers_every_fault_kind_and_one_search_option_checks_one_budget() {
    let (code, stdout, _) = zkharness(&["check", "latch", "--clients", "2", "--json"]);
    assert_eq!(code, 0, "{stdout}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["result"], "pass");
    assert_eq!(report["faults"], "standard");
    let rows = report["budgets"].as_array().expect("rows");
    let faults: Vec<&str> = rows
        .iter()
        .filter_map(|row| row["faults"].as_str())
        .collect();
    assert_eq!(
        faults,
        [
            "drop-reply=1,expire=1",
            "drop-request=1",
            "drop-reply=1",
            "expire=1",
            "client-expire=1",
            "leader-change=1",
            "crash=1"
        ]
    );
    assert!(
        rows.iter().all(|row| row["search"] == "exhaustive"),
        "{report}"
    );
    let (code, stdout, _) = zkharness(&["check", "latch", "--clients", "2", "--threads", "2"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("faults drop-reply=1,expire=1") && !stdout.contains("standard budgets"),
        "one search, one budget: {stdout}"
    );
    // The job's standard budgets judge two cycles, by walks where a budget's search gives up.
    let job = ["check", "job", "--clients", "2", "--budget-states", "2000"];
    let (code, stdout, _) = zkharness(&[&job[..], &["--budget-walks", "20", "--json"]].concat());
    assert_eq!(code, 0, "{stdout}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let rows = report["budgets"].as_array().expect("rows");
    assert_eq!(rows.len(), 7, "{report}");
    assert!(rows
        .iter()
        .all(|row| row["search"] == "walks" && row["walks"] == 20));
    assert!(
        (rows[0]["command"].as_str()).is_some_and(|c| c.contains("--cycles 2")),
        "{report}"
    );
}

/// The JSON report of a check of `args` (and `extra`) that must pass: the value of `field`,
/// and the unique states.
fn pass_report(
    args: &[&str],
    extra: &[&str],
    field: &str,
) -> (serde_json::Value, serde_json::Value) {
    let args = [args, extra, &["--json"]].concat();
    let (code, stdout, _) = zkharness(&args);
    assert_eq!(code, 0, "{args:?}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["result"], "pass");
    (report[field].clone(), report["unique_states"].clone())
}

#[test]
fn symmetry_reduction_is_on_by_default_and_can_be_turned_off() {
    let latch = ["check", "latch", "--faults", "drop-reply=1,expire=1"];
    let report = |extra: &[&str]| pass_report(&latch, extra, "symmetry");
    // Three interchangeable clients: up to 3! = 6 states are one up to renaming.
    assert_eq!(report(&[]), (true.into(), 56_237.into()));
    assert_eq!(report(&["--no-symmetry"]), (false.into(), 336_847.into()));
}

#[test]
fn the_partial_order_reduction_is_on_by_default_and_can_be_turned_off() {
    let latch = [
        "check",
        "latch",
        "--clients",
        "2",
        "--no-symmetry",
        "--faults",
        "drop-reply=1,expire=1",
    ];
    let report = |extra: &[&str]| pass_report(&latch, extra, "partial_order");
    assert_eq!(report(&[]), (true.into(), 8_797.into()));
    assert_eq!(
        report(&["--no-partial-order"]),
        (false.into(), 32_157.into()),
        "every interleaving"
    );
    // A known-bad variant is caught either way.
    no_owner_check_is_caught_with("--no-partial-order");
}

/// The latch's `no-owner-check` is caught with `option` too.
fn no_owner_check_is_caught_with(option: &str) {
    let no_owner_check = [
        "check",
        "latch",
        "--variant",
        "no-owner-check",
        "--faults",
        "client-expire=1",
        option,
        "--json",
    ];
    let report = violation_report(&no_owner_check);
    assert_eq!(report["result"]["violation"], "claims are owned");
}

#[test]
fn reads_first_bounds_the_schedules_and_says_so() {
    let latch = ["check", "latch", "--faults", "drop-reply=1,expire=1"];
    let report = |extra: &[&str]| pass_report(&latch, extra, "reads_first");
    assert_eq!(report(&[]), (false.into(), 56_237.into()));
    assert_eq!(
        report(&["--reads-first"]),
        (true.into(), 11_678.into()),
        "only the schedules where reads are answered at once"
    );
    // The text says what a pass covers.
    let (code, stdout, _) = zkharness(&["check", "latch", "--reads-first"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains(
            "no violation in any schedule where the server answers a waiting read at once \
             (not a proof for the others)"
        ),
        "{stdout}"
    );
    // A known-bad variant is still caught within it.
    no_owner_check_is_caught_with("--reads-first");
    // Random walks take the model's own steps; the bound is for the search.
    let (code, _, stderr) = zkharness(&["check", "latch", "--reads-first", "--walks", "10"]);
    assert_eq!(code, 64, "a usage error: {stderr}");
    assert!(stderr.contains("--reads-first"), "{stderr}");
    // Nor with a preemption bound, which answering another client's read first would spend.
    let args = ["check", "latch", "--reads-first", "--preemptions", "1"];
    let (code, _, stderr) = zkharness(&args);
    assert_eq!(code, 64, "a usage error: {stderr}");
    assert!(stderr.contains("--preemptions"), "{stderr}");
}

/// The JSON report of a check that must find a violation (exit code 1).
fn violation_report(args: &[&str]) -> serde_json::Value {
    let (code, stdout, _) = zkharness(args);
    assert_eq!(code, 1, "{args:?}: {stdout}");
    serde_json::from_str(stdout.trim()).expect("one JSON object")
}

#[test]
fn either_depth_first_search_can_be_chosen_and_both_count_the_same_states() {
    let report = |searcher: &str| {
        let args = ["check", "latch", "--json", "--searcher", searcher];
        let (code, stdout, _) = zkharness(&args);
        assert_eq!(code, 0, "{args:?}");
        let report: serde_json::Value =
            serde_json::from_str(stdout.trim()).expect("one JSON object");
        (
            report["searcher"].clone(),
            report["states"].clone(),
            report["unique_states"].clone(),
        )
    };
    assert_eq!(
        report("ours"),
        ("ours".into(), 84_796.into(), 56_237.into())
    );
    assert_eq!(
        report("stateright"),
        ("stateright".into(), 84_796.into(), 56_237.into())
    );
    let (code, _, stderr) = zkharness(&["check", "latch", "--searcher", "mine"]);
    assert_eq!(code, 64, "bad input");
    assert!(stderr.contains("--searcher"), "{stderr}");
}

#[test]
fn a_check_can_be_bounded_by_preemptions() {
    let args = ["check", "latch", "--json", "--preemptions", "1"];
    let (code, stdout, _) = zkharness(&args);
    assert_eq!(code, 0, "{args:?}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["preemptions"], 1);
    assert_eq!(report["result"], "pass");
    // Tagged states, without symmetry reduction: more than the unbounded search's 56,225.
    assert_eq!(report["symmetry"], false);
    assert_eq!(report["unique_states"], 245_191);
    let (code, stdout, _) = zkharness(&["check", "latch", "--preemptions", "0"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("no violation in any schedule with at most 0 preemptions"),
        "{stdout}"
    );
    let stateright = ["--searcher", "stateright"];
    let bounded = ["check", "latch", "--preemptions", "1"];
    refused(
        &[&bounded[..], &stateright].concat(),
        "stateright's search has no bound",
    );
    refused(&["check", "latch", "--preemptions", "256"], "out of range");
}

/// Runs `zkharness` with `args`, which it must refuse as bad input (exit code 64) because of
/// `why`, naming the option (the third of `args`) in what it says.
fn refused(args: &[&str], why: &str) {
    let (code, _, stderr) = zkharness(args);
    assert_eq!(code, 64, "{why}: {args:?}");
    assert!(stderr.contains(args[2]), "{why}: {stderr}");
}

#[test]
fn a_check_can_keep_its_visited_set_compacted() {
    let job = ["check", "job", "--clients", "2", "--faults", "none"];
    let args = [&job[..], &["--json", "--compact-mib", "64"]].concat();
    let (code, stdout, _) = zkharness(&args);
    assert_eq!(code, 0, "{args:?}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["result"], "pass");
    assert_eq!(report["unique_states"], 845_042, "as many as the exact set");
    assert_eq!(report["compaction"]["mib"], 64);
    assert_eq!(report["compaction"]["slots"], 1 << 24);
    let missed = report["compaction"]["expected_missed"]
        .as_f64()
        .expect("odds");
    assert!(missed > 0.0 && missed < 1e-3, "{missed}");
    let (_, stdout, _) = zkharness(&[&job[..], &["--json"]].concat());
    let exact: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(exact["compaction"], serde_json::Value::Null);
    // A table too small for the space: the check gives up, and says why and what to do.
    let (code, stdout, _) = zkharness(&[&job[..], &["--compact-mib", "1"]].concat());
    assert_eq!(code, 3, "{stdout}");
    assert!(stdout.contains("hash compaction: 262144 slots"), "{stdout}");
    assert!(
        stdout.contains("gave up when 90% of the visited set's slots were taken"),
        "{stdout}"
    );
    let compacted = ["check", "latch", "--compact-mib", "8"];
    let stateright = ["--searcher", "stateright"];
    refused(
        &[&compacted[..], &stateright].concat(),
        "stateright's search keeps its own set",
    );
    refused(&["check", "latch", "--compact-mib", "0"], "out of range");
}

/// The two-instance sharded job without faults, reported in JSON.
const JOB_WITHOUT_FAULTS: [&str; 7] = [
    "check",
    "job",
    "--clients",
    "2",
    "--faults",
    "none",
    "--json",
];

#[test]
fn a_check_runs_on_threads_with_the_same_counts() {
    let job = JOB_WITHOUT_FAULTS;
    let report = |args: &[&str]| {
        let (code, stdout, _) = zkharness(args);
        assert_eq!(code, 0, "{args:?}");
        serde_json::from_str::<serde_json::Value>(stdout.trim()).expect("one JSON object")
    };
    let one = report(&job);
    let two = report(&[&job[..], &["--threads", "2"]].concat());
    assert_eq!(one["threads"], 1, "one by default");
    assert_eq!(two["threads"], 2);
    assert_eq!(one["states_by_thread"], serde_json::Value::Null);
    let by_thread = two["states_by_thread"]
        .as_array()
        .expect("a count a thread");
    let by_thread: Vec<u64> = by_thread.iter().filter_map(|n| n.as_u64()).collect();
    assert_eq!(by_thread.len(), 2, "{by_thread:?}");
    assert!(by_thread.iter().all(|states| *states > 0), "{by_thread:?}");
    assert_eq!(
        by_thread.iter().sum::<u64>() + 1,
        two["states"].as_u64().unwrap()
    );
    // (The deepest path depends on the order in which states are first met.)
    for field in ["result", "states", "unique_states"] {
        assert_eq!(two[field], one[field], "{field}");
    }
    assert_eq!(two["unique_states"], 845_042);
    // stateright's search takes the threads too, with symmetry reduction (its counts do not
    // depend on the order of the search: the partial-order reduction chooses canonically).
    let latch = [
        "check",
        "latch",
        "--clients",
        "3",
        "--json",
        "--searcher",
        "stateright",
    ];
    let one = report(&latch);
    let two = report(&[&latch[..], &["--threads", "2"]].concat());
    assert_eq!(two["result"], "pass");
    assert_eq!(two["unique_states"], one["unique_states"]);
    assert_eq!(two["unique_states"], 56_237);
    refused(&["check", "latch", "--threads", "0"], "out of range");
    refused(
        &["check", "latch", "--threads", "2", "--walks", "10"],
        "walks run on one thread",
    );
}

#[test]
fn a_long_check_logs_its_progress_when_asked() {
    let args = [
        "check",
        "job",
        "--clients",
        "2",
        "--faults",
        "expire=1",
        "--max-states",
        "1500000",
        "--progress-secs",
        "1",
        "--json",
    ];
    let (code, stdout, stderr) = zkharness(&args);
    assert_eq!(code, 3, "gave up at --max-states");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["gave_up"], "max-states");
    let seconds = report["seconds"].as_f64().expect("seconds");
    let lines: Vec<&str> = stderr.lines().collect();
    // One line a second at most, and one once a second has passed (the search reports every
    // PROGRESS_STATES states, a tenth of a second or so).
    assert!(lines.len() as f64 <= seconds, "{stderr}");
    assert!(seconds < 2.0 || !lines.is_empty(), "{seconds} s: {stderr}");
    for line in lines {
        assert!(
            line.starts_with("zkharness: ")
                && line.contains(" states, ")
                && line.contains(" unique, depth "),
            "{line}"
        );
    }
    refused(
        &["check", "lock", "--progress-secs", "0"],
        "at least a second",
    );
}

/// A CI log must show a long search alive without being asked (issue 36.9): stderr here is a
/// pipe, and no `--progress-secs` is given.
#[test]
#[ignore = "a search of about 30 s in release (400 MiB); scripts/test-all runs it"]
fn a_long_check_logs_its_progress_by_default_where_stderr_is_not_a_terminal() {
    let (code, stdout, stderr) = zkharness(&[
        "check",
        "job",
        "--clients",
        "2",
        "--faults",
        "expire=1",
        "--max-states",
        "32000000",
        "--json",
    ]);
    assert_eq!(code, 3, "gave up at --max-states: {stdout}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let seconds = report["seconds"].as_f64().expect("seconds");
    assert!(
        seconds > 10.5,
        "the search ran long enough to log: {seconds} s"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        !lines.is_empty() && lines.len() as f64 <= seconds / 10.0,
        "one line every 10 s: {stderr}"
    );
    assert!(lines[0].starts_with("zkharness: 10 s: "), "{stderr}");
}

#[test]
fn a_reader_that_goes_away_ends_the_program_quietly() {
    // `zkharness check ... | head -1`: the read end closes before the report is written.
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkharness"))
        .args(["check", "lock", "--variant", "herd", "--faults", "none"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zkharness runs");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("it ends");
    let stderr = String::from_utf8(output.stderr).expect("utf-8");
    assert_eq!(output.status.code(), Some(141), "a broken pipe: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn the_sharded_job_is_checked_without_symmetry_reduction() {
    let args = JOB_WITHOUT_FAULTS;
    let (code, stdout, _) = zkharness(&args);
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["result"], "pass");
    assert_eq!(
        report["symmetry"], false,
        "the allocation orders instances by id"
    );
    assert_eq!(report["unique_states"], 845_042);
    assert_eq!(
        report["sometimes_unreached"],
        serde_json::json!(["an item failed over"]),
        "nothing fails over without a fault"
    );
}

#[test]
fn bad_input_names_the_problem_and_exits_64() {
    for (args, expected) in [
        (
            vec!["check", "lock", "--variant", "bogus"],
            "lock has no variant \"bogus\"",
        ),
        (vec!["check", "queue"], "unknown recipe \"queue\""),
        (
            vec!["check", "lock", "--faults", "expire=x"],
            "--faults: fault budget",
        ),
        (vec!["check", "lock", "--clients", "9"], "--clients 9"),
        (
            vec!["check", "lock", "--items", "3"],
            "--items and --cycles shape the sharded job; lock has neither",
        ),
        (
            vec!["check", "job", "--cycles", "9"],
            "--cycles 9: the model checks 1 to 4 cycles",
        ),
        (
            vec!["check", "job", "--faults", "crash=x"],
            "--faults: fault budget \"crash=x\": the count must be a number",
        ),
        (
            vec!["check", "job", "--variant", "bogus"],
            "job has no variant \"bogus\" (known: correct, one-item-per-idle, trust-owners, \
             no-cycle-claim, uncovered-reshard, no-reregister, run-ahead)",
        ),
        (
            vec!["check", "lock", "--max-states", "0"],
            "--max-states 0: a check needs at least one state",
        ),
        (
            vec!["check", "lock", "--walks", "0"],
            "--walks 0: a run needs at least one walk",
        ),
        (
            vec!["check", "lock", "--seed", "3"],
            "the following required arguments were not provided",
        ),
        (
            vec!["check", "lock", "--walks", "5", "--max-states", "10"],
            "'--walks <WALKS>' cannot be used with '--max-states <MAX_STATES>'",
        ),
        // What clap itself refuses is bad input too, not a check that gave up (exit 2).
        (
            vec!["check", "lock", "--clients", "abc"],
            "invalid value 'abc' for '--clients",
        ),
        (vec!["check"], "the following required arguments"),
    ] {
        let (code, _, stderr) = zkharness(&args);
        assert_eq!(code, 64, "{args:?}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn a_counterexample_exports_as_a_scenario_file() {
    let dir = std::env::temp_dir().join(format!("zkharness-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("no-owner-check.toml");
    let (code, stdout, _) = zkharness(&[
        "check",
        "latch",
        "--variant",
        "no-owner-check",
        "--clients",
        "2",
        "--faults",
        "client-expire=1",
        "--no-claims",
        "--export",
        file.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{stdout}");
    let scenario = zkh_scenarios::scenario::load(&file).expect("a scenario file");
    assert_eq!(
        scenario.resolved.expect_violation.as_deref(),
        Some("single acting master")
    );
    assert_eq!(scenario.resolved.variant, "no-owner-check");
    assert_eq!(scenario.resolved.faults.scripted.len(), 1);
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn a_crash_exports_as_a_scripted_client_crash() {
    let dir = std::env::temp_dir().join(format!("zkharness-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("no-watch.toml");
    let (code, stdout, _) = zkharness(&[
        "check",
        "master",
        "--variant",
        "no-watch",
        "--faults",
        "crash=1",
        "--export",
        file.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2, "a liveness failure: {stdout}");
    assert!(stdout.contains("process crashes"), "{stdout}");
    let loaded = zkh_scenarios::scenario::load(&file).expect("a scenario file");
    let scenario = loaded.resolved;
    assert_eq!(scenario.expect_violation.as_deref(), Some("leader elected"));
    let crashes: Vec<_> = scenario
        .faults
        .scripted
        .iter()
        .filter(|scripted| matches!(scripted.fault, zkh_sim::fault::Fault::CrashClient { .. }))
        .collect();
    assert_eq!(crashes.len(), 1, "{:?}", scenario.faults);
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn explore_serves_the_explorer_on_localhost() {
    // A built-in recipe, and a machine recipe registered through the user-recipe API.
    for recipe in ["lock", "lock-model"] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("a free port")
            .local_addr()
            .expect("its address")
            .port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_zkharness"))
            .args([
                "explore",
                recipe,
                "--clients",
                "2",
                "--faults",
                "none",
                "--port",
                &port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("zkharness explore starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut body = String::new();
        while Instant::now() < deadline {
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
                stream
                    .write_all(b"GET /.status HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                    .expect("a request");
                stream.read_to_string(&mut body).expect("a response");
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        child.kill().expect("stop the explorer");
        child.wait().expect("reap it");
        assert!(
            body.contains("200"),
            "{recipe}: the explorer answers: {body}"
        );
        assert!(body.contains("unique_state_count"), "{recipe}: {body}");
        assert!(body.contains("mutual exclusion"), "{recipe}: {body}");
    }
}

#[test]
fn explore_on_a_busy_port_says_so_and_exits_64() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("a port of our own");
    let port = busy.local_addr().expect("its address").port().to_string();
    let (code, _, stderr) = zkharness(&["explore", "lock", "--faults", "none", "--port", &port]);
    assert_eq!(code, 64, "bad input, not a panic: {stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}"))
            && !stderr.contains("panicked"),
        "{stderr}"
    );
    drop(busy);
}

#[test]
fn an_unknown_fault_in_a_budget_is_named() {
    let (code, _, stderr) = zkharness(&["check", "latch", "--faults", "session-timeout=10000"]);
    assert_eq!(code, 64, "{stderr}");
    assert!(
        stderr.contains("unknown fault \"session-timeout\""),
        "{stderr}"
    );
}

#[test]
fn a_check_that_reaches_its_state_limit_says_so_and_exits_3() {
    let (code, stdout, _) = zkharness(&["check", "lock", "--max-states", "1000", "--json"]);
    assert_eq!(code, 3, "{stdout}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["result"], "incomplete");
    let (code, stdout, _) = zkharness(&["check", "lock", "--max-states", "1000"]);
    assert_eq!(code, 3, "{stdout}");
    assert!(stdout.contains("INCOMPLETE"), "{stdout}");
    assert!(
        stdout.contains("fewer --clients or a smaller --faults budget"),
        "the message says how to make the space smaller: {stdout}"
    );
    assert!(
        stdout.contains("--preemptions K") && stdout.contains("--walks N"),
        "and which narrower searches are left: {stdout}"
    );
    let bounded = ["check", "lock", "--max-states", "1000", "--reads-first"];
    let (code, stdout, _) = zkharness(&bounded);
    assert_eq!(code, 3, "{stdout}");
    assert!(
        !stdout.contains("--preemptions K") && stdout.contains("--walks N"),
        "a bounded search is not told to bound itself: {stdout}"
    );
}

#[test]
fn a_check_that_reaches_its_depth_limit_says_so_and_exits_3() {
    // The lock's standard check is 44 steps deep: at 10 the depth-first search must stop.
    let lock = [
        "check",
        "lock",
        "--faults",
        "drop-reply=1,expire=1",
        "--max-depth",
        "10",
    ];
    let (code, stdout, _) = zkharness(&[&lock[..], &["--json"]].concat());
    assert_eq!(code, 3, "{stdout}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["result"], "incomplete");
    assert_eq!(report["gave_up"], "max-depth");
    assert_eq!(report["max_depth"], 10);
    let (code, stdout, _) = zkharness(&lock);
    assert_eq!(code, 3, "{stdout}");
    assert!(
        stdout.contains("longer than --max-depth 10 steps"),
        "the message names the limit: {stdout}"
    );
}

#[test]
fn random_walks_find_a_counterexample_past_exhaustive_reach_and_say_how_to_repeat_it() {
    let report = violation_report(&[
        "check",
        "job",
        "--variant",
        "no-cycle-claim",
        "--clients",
        "3",
        "--walks",
        "1000",
        "--json",
    ]);
    assert_eq!(report["search"], "random-walks");
    assert_eq!(report["seed"], 0);
    assert_eq!(report["walks"], 14, "stopped at the walk that failed");
    assert_eq!(report["result"]["violation"], "no shard executed twice");
    assert_eq!(report["result"]["walk"], 13);
    assert_eq!(report["result"]["shortest"], false);
    assert!(
        report["repeat"]
            .as_str()
            .expect("a command")
            .ends_with("--max-depth 300 --seed 0 --walks 14"),
        "{report}"
    );
}

#[test]
fn random_walks_without_a_violation_exit_0_and_one_seed_repeats() {
    let run = || {
        let (code, stdout, _) =
            zkharness(&["check", "latch", "--walks", "300", "--seed", "11", "--json"]);
        assert_eq!(code, 0, "{stdout}");
        let report: serde_json::Value =
            serde_json::from_str(stdout.trim()).expect("one JSON object");
        assert_eq!(report["result"], "no-violation-found");
        assert_eq!(report["walks"], 300);
        assert_eq!(report["seed"], 11);
        report
    };
    let (first, again) = (run(), run());
    assert_eq!(first["trace_hash"], again["trace_hash"]);
    assert_eq!(first["unique_states"], again["unique_states"]);
}

/// Runs `entry`'s check and requires its property and length.
fn caught_as_listed(entry: &KnownBad) {
    let mut args = vec!["check", entry.recipe, "--variant", entry.variant, "--json"];
    args.extend_from_slice(entry.options);
    let (code, stdout, stderr) = zkharness(&args);
    // Safety (1), or liveness (2) for an `eventually` property.
    let liveness = ["leader elected", "no shard lost", "livelock"].contains(&entry.property);
    assert_eq!(
        code,
        if liveness { 2 } else { 1 },
        "{}: {stdout}{stderr}",
        entry.command()
    );
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let result = &report["result"];
    assert_eq!(result["violation"], entry.property, "{}", entry.command());
    // A walk's counterexample is shrunk; the steps listed are the walk's.
    let steps = match result.get("walk_steps") {
        Some(steps) => steps.as_u64().expect("a count") as usize,
        None => {
            // A check's path is the depth-first one shortened (or shrunk), never longer.
            let steps = result["path"].as_array().expect("a path").len();
            let found = result["found_steps"].as_u64().expect("the path found") as usize;
            assert!(steps <= found, "{}: {result}", entry.command());
            steps
        }
    };
    assert_eq!(steps, entry.steps, "{}", entry.command());
    assert!(
        !stderr.contains("known-bad"),
        "no note when the bug shows: {stderr}"
    );
}

#[test]
fn each_known_bad_variant_but_the_jobs_is_caught_as_listed() {
    for entry in KNOWN_BAD.iter().filter(|entry| entry.recipe != "job") {
        caught_as_listed(entry);
    }
}

/// The job's known-bad variants take about 11 s each in release: test-all runs this in
/// release.
#[test]
#[ignore = "about 35 s in release; scripts/test-all runs it"]
fn each_known_bad_variant_of_the_job_is_caught_as_listed() {
    for entry in KNOWN_BAD.iter().filter(|entry| entry.recipe == "job") {
        caught_as_listed(entry);
    }
}

#[test]
fn a_known_bad_variant_that_shows_no_violation_says_how_it_is_caught() {
    // Under caught-up acting, check-then-write shows no second acting master: its space has no
    // end, and the check stops at a limit.
    let args = [
        "check",
        "election",
        "--variant",
        "check-then-write",
        "--max-states",
        "20000",
    ];
    let (code, stdout, _) = zkharness(&args);
    assert_eq!(code, 3, "{stdout}");
    let listed = known_bad("election", "check-then-write").expect("listed");
    assert!(
        stdout.contains(&format!("under: {}", listed.command())),
        "the note gives the command that catches it: {stdout}"
    );
    let (code, stdout, stderr) = zkharness(&[&args[..], &["--json"]].concat());
    assert_eq!(code, 3, "{stdout}");
    serde_json::from_str::<serde_json::Value>(stdout.trim()).expect("stdout stays one object");
    assert!(stderr.contains("known-bad variant"), "{stderr}");
    // A correct recipe gets no such note.
    let (code, stdout, stderr) = zkharness(&["check", "master"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        !format!("{stdout}{stderr}").contains("known-bad"),
        "{stdout}"
    );
}

/// `--budgets`: the control of our own design that the one budget `check` searched before
/// cannot show (a release that takes a delete's ConnectionLoss for done: right after a lost
/// reply, wrong after a lost request) passes that budget and is caught by the budget that drops
/// a request, with one row per budget and the command that checks it alone; the plain check,
/// whose standard budgets drop a request too, catches it and prints its counterexample.
#[test]
fn budgets_catch_the_unguaranteed_delete_that_one_budget_misses() {
    let unguaranteed = ["check", "lock", "--variant", "unguaranteed-delete"];
    let pair = [&unguaranteed[..], &["--faults", "drop-reply=1,expire=1"]].concat();
    let (code, stdout, _) = zkharness(&pair);
    assert_eq!(code, 0, "that budget cannot show it: {stdout}");
    let (code, stdout, _) = zkharness(&unguaranteed);
    assert_eq!(code, 2, "the plain check catches it: {stdout}");
    assert!(
        stdout.contains("the first violated budget, drop-request=1:")
            && stdout.contains("VIOLATION of leader elected")
            && stdout.contains("shortest counterexample, 22 steps"),
        "{stdout}"
    );
    let (code, stdout, stderr) = zkharness(&[
        "check",
        "lock",
        "--variant",
        "unguaranteed-delete",
        "--budgets",
        "drop-reply=1,expire=1;drop-request=1",
        "--json",
    ]);
    assert_eq!(code, 2, "a liveness violation: {stdout}{stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let rows = report["budgets"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["faults"], "drop-reply=1,expire=1");
    assert_eq!(rows[0]["result"], "pass");
    assert_eq!(rows[0]["search"], "exhaustive");
    assert_eq!(rows[1]["faults"], "drop-request=1");
    assert_eq!(rows[1]["violation"], "leader elected");
    assert!(
        (rows[1]["command"].as_str()).is_some_and(|c| c.ends_with("--faults drop-request=1")),
        "{report}"
    );
    let (code, _, stderr) = zkharness(&["check", "lock", "--budgets", "storm=1"]);
    assert_eq!(code, 64, "{stderr}");
    assert!(stderr.contains("storm"), "{stderr}");
    let (code, _, stderr) = zkharness(&["check", "lock", "--budgets", "all", "--walks", "5"]);
    assert_eq!(code, 64, "--budgets takes no --walks: {stderr}");
}

/// Every correct recipe passes every budget of `--budgets all` (but for a recorded finding in a
/// faithful profile, under the fault it names): the lock, latch, election and
/// master exhaustively or, where a pair's space passes 3 million states, by walks; the sharded
/// job (two instances) mostly by walks. About 2 minutes in release.
#[test]
#[ignore = "about 2 minutes in release; scripts/test-all runs it"]
fn every_correct_recipe_passes_every_budget() {
    for (recipe, extra) in [
        ("lock", &[][..]),
        ("latch", &[][..]),
        ("master", &[][..]),
        ("election", &[][..]),
        ("job", &["--clients", "2"][..]),
    ] {
        let mut args = vec!["check", recipe, "--budgets", "all", "--json"];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = zkharness(&args);
        let report: serde_json::Value =
            serde_json::from_str(stdout.trim()).expect("one JSON object");
        let rows = report["budgets"].as_array().expect("rows");
        assert_eq!(rows.len(), 21, "{recipe}");
        // A faithful profile's violation is a recorded finding, under the fault it names.
        let finding = MODEL_FINDINGS.iter().find(|f| f.recipe == recipe);
        let shows_finding = |row: &serde_json::Value| {
            finding.is_some_and(|f| {
                row["violation"] == f.property
                    && (row["faults"].as_str())
                        .is_some_and(|faults| faults.contains(f.options[f.options.len() - 1]))
            })
        };
        assert_eq!(
            code,
            if finding.is_some() { 1 } else { 0 },
            "{recipe}: {stdout}{stderr}"
        );
        for row in rows {
            if shows_finding(row) {
                continue;
            }
            assert_eq!(row["result"], "pass", "{recipe}: {row}");
            if row["search"] == "walks" {
                assert_eq!(row["walks"], 20_000, "{recipe}: {row}");
            }
        }
        if recipe == "lock" || recipe == "master" {
            assert!(
                rows.iter().all(|row| row["search"] == "exhaustive"),
                "{recipe}: every budget exhaustive"
            );
        }
    }
}

/// The livelock control from the command line: the plain check (no options) reports the
/// livelock, with its loop marked and its first step in the JSON; the correct latch passes the
/// same command; an export of it expects a pass in the simulator, which judges no livelock.
#[test]
fn the_plain_check_reports_the_requeueing_latch_as_a_livelock_with_its_loop() {
    let (code, stdout, _) = zkharness(&["check", "latch", "--variant", "requeue-when-behind"]);
    assert_eq!(code, 2, "a liveness violation: {stdout}");
    assert!(stdout.contains("VIOLATION of livelock: steps "), "{stdout}");
    assert!(
        stdout.contains("loop (back to the state after step"),
        "{stdout}"
    );
    let looped = stdout.lines().filter(|line| line.contains(".↻ ")).count();
    assert!(looped >= 4, "the loop's steps are marked: {stdout}");
    let (code, stdout, _) = zkharness(&["check", "latch"]);
    assert_eq!(
        code, 0,
        "the correct latch passes the same command: {stdout}"
    );
    let dir = std::env::temp_dir().join(format!("zkharness-livelock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = dir.join("livelock.toml");
    let (code, stdout, _) = zkharness(&[
        "check",
        "latch",
        "--variant",
        "requeue-when-behind",
        "--json",
        "--export",
        file.to_str().expect("a UTF-8 path"),
    ]);
    assert_eq!(code, 2, "{stdout}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let result = &report["result"];
    assert_eq!(result["violation"], "livelock");
    let steps = result["path"].as_array().expect("a path").len() as u64;
    let first = result["loop_first_step"]
        .as_u64()
        .expect("the loop's first step");
    assert!(1 < first && first < steps, "{result}");
    let exported = std::fs::read_to_string(&file).expect("the export");
    assert!(!exported.contains("violation ="), "{exported}");
    assert!(exported.contains("judges no such property"), "{exported}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A recorded finding in a faithful profile is reported as the violation it is, with a note
/// that names it a finding about the upstream code (here Elastic-Job's election leading on its
/// old session's node after a client-side expiry); the same check without the claims passes.
#[test]
fn a_recorded_finding_is_reported_with_a_note_that_says_so() {
    let finding = MODEL_FINDINGS.first().expect("one finding");
    let mut args = vec!["check", finding.recipe, "--variant", finding.variant];
    args.extend_from_slice(finding.options);
    let (code, stdout, _) = zkharness(&args);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains(&format!("VIOLATION of {}", finding.property))
            && stdout.contains("note: a recorded finding in the upstream code"),
        "{stdout}"
    );
    let (code, stdout, _) = zkharness(&[&args[..], &["--no-claims"]].concat());
    assert_eq!(code, 0, "without the claims: {stdout}");
    assert!(!stdout.contains("recorded finding"), "{stdout}");
}

/// One recipe, both engines, from the command line: `lock-model`, the lock's model workload
/// registered as a machine recipe, is checked by `check` as the built-in lock is (the same
/// states), its `herd` variant is caught and its counterexample exported as a scenario, its
/// standard budgets run, and an unknown variant is refused as bad input.
#[test]
fn a_machine_recipe_is_checked_from_the_command_line() {
    let faults = ["--faults", "drop-reply=1,expire=1", "--json"];
    let (code, model, _) = zkharness(&[&["check", "lock-model"][..], &faults[..]].concat());
    assert_eq!(code, 0, "{model}");
    let (_, lock, _) = zkharness(&[&["check", "lock"][..], &faults[..]].concat());
    let states = |json: &str| -> u64 {
        let value: serde_json::Value = serde_json::from_str(json).expect("JSON");
        value["unique_states"].as_u64().expect("a state count")
    };
    assert_eq!(
        states(&model),
        states(&lock),
        "the same workload, the same states"
    );
    let (code, out, _) = zkharness(&[
        "check",
        "lock-model",
        "--variant",
        "herd",
        "--faults",
        "none",
        "--json",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("\"herd free\""), "{out}");
    let (code, out, _) = zkharness(&["check", "lock-model"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("budgets in"), "the standard budgets: {out}");
    // Its counterexample exports as a scenario of the machine recipe itself (its paths are the
    // same in both engines): sim_cli.rs runs it.
    let file = std::env::temp_dir().join(format!("zkh-lock-model-{}.toml", std::process::id()));
    let path = file.to_str().expect("utf-8");
    let herd = ["--variant", "herd", "--faults", "none", "--export", path];
    let (code, out, _) = zkharness(&[&["check", "lock-model"][..], &herd[..]].concat());
    assert_eq!(code, 1, "{out}");
    let exported = std::fs::read_to_string(&file).expect("the export");
    std::fs::remove_file(&file).expect("clean up");
    assert!(
        exported.contains("recipe = \"lock-model\"\nvariant = \"herd\""),
        "{exported}"
    );
    assert!(exported.contains("violation = \"herd free\""), "{exported}");
    assert!(!exported.contains("fenced"), "{exported}");
    let (code, _, err) = zkharness(&["check", "lock-model", "--variant", "nope"]);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("known: correct, herd, unprotected, unguaranteed-delete"),
        "{err}"
    );
    let (code, _, err) = zkharness(&["check", "queue"]);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("lock-model"),
        "the registered machine recipes are listed: {err}"
    );
}

/// A command that starts a real ensemble on a machine without ZooKeeper (here: without Java on
/// the PATH) is bad input, exit 64, naming the one command that installs it; not a crash.
#[test]
fn a_real_ensemble_without_zookeeper_installed_exits_64_naming_the_installer() {
    for args in [&["bench-real", "--runs", "1"][..], &["guarantees-real"][..]] {
        let output = Command::new(env!("CARGO_BIN_EXE_zkharness"))
            .args(args)
            .env("PATH", "")
            .stdin(Stdio::null())
            .output()
            .expect("zkharness runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(64), "{args:?}: {stderr}");
        assert!(
            stderr.contains("scripts/test-deps installs it"),
            "{args:?}: {stderr}"
        );
    }
}

/// A seed range past what one command runs is bad input with the way to split it, not a
/// capacity overflow or a 32 GB allocation.
#[test]
fn a_seed_range_too_large_to_run_is_refused_with_how_to_split_it() {
    for range in ["0..18446744073709551615", "0..4000000000", "5..10000006"] {
        let (code, _, stderr) = zkharness(&["sweep", "scenarios/catalog", "--seeds", range]);
        assert_eq!(code, 64, "{range}: {stderr}");
        assert!(stderr.contains("--shard i/n"), "{range}: {stderr}");
    }
}

/// `report` and `replay` name the file, line and column of what is wrong with a report, and a
/// missing file by its name first.
#[test]
fn a_malformed_report_is_refused_at_its_line_and_column() {
    let dir = std::env::temp_dir().join(format!("zkh-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let cases = [
        (
            "truncated.json",
            "{\"format\": \"zkharness-run/1\", \"seed\": ",
            "truncated.json:1:",
        ),
        (
            "untyped.json",
            "{\"format\": \"zkharness-run/1\",\n \"seed\": \"x\"}",
            "untyped.json:2:",
        ),
        ("empty.json", "{}", "empty.json:1:"),
    ];
    for (name, text, at) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).expect("written");
        let (code, _, stderr) =
            zkharness(&["report", file.to_str().expect("utf-8"), "--html", "-"]);
        assert_eq!(code, 64, "{name}: {stderr}");
        assert!(stderr.contains(at), "{name}: {stderr}");
    }
    let missing = dir.join("missing.json");
    let (code, _, stderr) = zkharness(&["report", missing.to_str().expect("utf-8")]);
    assert_eq!(code, 64, "{stderr}");
    assert!(
        stderr.contains("missing.json: cannot read the file"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
}
