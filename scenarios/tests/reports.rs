//! The reports as their readers meet them: the HTML timeline in a real browser (headless
//! Chromium: no console error, no network request, the lanes, a fault and the violation in its
//! DOM, a screenshot), a run's strings rendered as text, the JSON reports against their schemas
//! (Python's `jsonschema`), the JUnit XML in a standard consumer (Python's `junitparser`), and
//! the Markdown summary with a failure's repro command.
//!
//! `scripts/test-deps` installs Chromium and the Python packages (`scripts/test-all` runs it);
//! `ZKH_PYTHON` names the Python to use (default: `target/pyenv/bin/python`).
#![cfg(madsim)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

use crate::common;
use common::zkharness;

/// A folder for this test's files, kept after the test (the screenshot is looked at).
fn output_dir(name: &str) -> PathBuf {
    let dir = manifest().join("../target/test-output").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("an output folder");
    dir
}

/// Runs `command` with a time bound (it is killed past it), its output going to files in
/// `dir` (a pipe would fill up and stall it); returns its standard output and error.
fn bounded(mut command: Command, dir: &Path, limit: Duration) -> (bool, String, String) {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (out, err) = (
        dir.join(format!("run{run}.out")),
        dir.join(format!("run{run}.err")),
    );
    let mut child = command
        .stdout(std::fs::File::create(&out).expect("an output file"))
        .stderr(std::fs::File::create(&err).expect("an error file"))
        .spawn()
        .unwrap_or_else(|error| panic!("{command:?} starts ({error}); run scripts/test-deps"));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} took more than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read =
        |path: &Path| String::from_utf8_lossy(&std::fs::read(path).expect("read")).into_owned();
    (status.success(), read(&out), read(&err))
}

/// Headless Chromium on `page`, one of its modes (`--dump-dom`, `--screenshot=FILE`), with
/// console messages logged to standard error, in a profile of its own (two at once would
/// otherwise share one browser).
fn chromium(page: &Path, mode: &str) -> (String, String) {
    let dir = page.parent().expect("the page's folder");
    let profile = dir.join(format!("chromium-profile-{}", mode.len()));
    let mut command = Command::new("chromium");
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,1000",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command.arg(mode).arg(page);
    let (_, stdout, stderr) = bounded(command, dir, Duration::from_secs(120));
    (stdout, stderr)
}

/// The page's console messages (errors, CSP refusals of any request) from Chromium's log.
fn console(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|line| line.contains(":CONSOLE"))
        .collect()
}

fn python() -> PathBuf {
    std::env::var_os("ZKH_PYTHON").map_or_else(
        || manifest().join("../target/pyenv/bin/python"),
        PathBuf::from,
    )
}

/// Runs a Python program with `args`; panics with its output unless it succeeds.
fn python_checks(program: &str, args: &[&Path], dir: &Path) -> String {
    let mut command = Command::new(python());
    command.arg("-c").arg(program).args(args);
    let (ok, stdout, stderr) = bounded(command, dir, Duration::from_secs(120));
    let text = stdout + &stderr;
    assert!(ok, "{text}");
    text
}

const VALIDATE: &str = r#"
import json, sys, jsonschema
schemas = {}
for name in ("run-report", "sweep-summary"):
    schema = json.load(open(f"{sys.argv[1]}/{name}.schema.json"))
    jsonschema.Draft202012Validator.check_schema(schema)
    schemas[schema["$id"]] = jsonschema.Draft202012Validator(schema)
for path in sys.argv[2:]:
    document = json.load(open(path))
    schemas[document["format"]].validate(document)
    print("valid", document["format"], path)
"#;

const JUNIT: &str = r#"
import sys
from junitparser import JUnitXml, Failure
xml = JUnitXml.fromfile(sys.argv[1])
suites = list(xml)
failures = [(s.name, c.name, r) for s in suites for c in s for r in c.result if isinstance(r, Failure)]
print("suites", len(suites), "failures", len(failures))
for suite, case, failure in failures:
    print("failure", suite, "|", case, "|", failure.message, "|", failure.text.replace("\n", " / "))
"#;

#[test]
fn a_control_timeline_loads_in_a_browser_with_its_lanes_fault_and_violation() {
    let out = output_dir("timeline");
    let scenario = "catalog/control-election-check-then-write.toml";
    let (code, stdout, _) = zkharness(&[
        "run",
        scenario,
        "--seed",
        "0",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(
        code, 1,
        "the control is caught on seed 0, a safety violation: {stdout}"
    );
    let page = out.join("control-election-check-then-write-seed0.html");
    let html = std::fs::read_to_string(&page).expect("the timeline beside the report");
    // The SVG namespace and `url(#plot)` (a clip path in the page) name nothing to load.
    let without_svg_namespace = html
        .replace("\"http://www.w3.org/2000/svg\"", "")
        .replace("url(#plot)", "");
    for forbidden in ["http:", "https:", "src=", "href=\"/", "@import", "url("] {
        assert!(
            !without_svg_namespace.contains(forbidden),
            "the page refers out: {forbidden}"
        );
    }
    let (dom, log) = chromium(&page, "--dump-dom");
    assert_eq!(console(&log), Vec::<&str>::new(), "console messages");
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("control-election-check-then-write-seed0.json"))
            .expect("the report"),
    )
    .expect("JSON");
    let clients = report["options"]["clients"].as_u64().expect("clients");
    for client in 0..clients {
        assert!(
            dom.contains(&format!("data-lane=\"client-{client}\"")),
            "client {client}'s lane"
        );
    }
    assert!(
        dom.contains("data-lane=\"ensemble\""),
        "the ensemble's lane"
    );
    assert!(dom.contains("class=\"fault-span fault\""), "a fault span");
    assert!(
        dom.contains("class=\"violation\"")
            && dom.contains("data-property=\"single acting master\""),
        "the violation marker"
    );
    let evidence = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["property"] == "single acting master")
        .expect("the violated finding")["evidence"]
        .as_array()
        .expect("its evidence")
        .clone();
    assert!(!evidence.is_empty(), "the violation names its rows");
    for row in evidence {
        let row = row.as_u64().expect("a row");
        assert!(
            dom.contains(&format!("id=\"row-{row}\""))
                && html.contains(&format!("<tr id=\"row-{row}\" ")),
            "evidence row {row} is in the table"
        );
    }
    let screenshot = out.join("timeline.png");
    let (_, log) = chromium(&page, &format!("--screenshot={}", screenshot.display()));
    assert_eq!(console(&log), Vec::<&str>::new(), "console messages");
    let png = std::fs::read(&screenshot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a real picture"
    );
}

#[test]
fn a_run_string_is_rendered_as_text_never_as_markup() {
    let out = output_dir("escaping");
    let (code, _, _) = zkharness(&[
        "run",
        "catalog/latch-crash.toml",
        "--seed",
        "1",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0);
    let report = out.join("latch-crash-seed1.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    let hostile = "<script>document.title='owned'</script><img src=x onerror=alert(1)>";
    let entries = json["history"]["entries"].as_array_mut().expect("history");
    let create = entries
        .iter_mut()
        .find(|e| e["event"]["Invoke"]["request"]["Create"].is_object())
        .expect("a create");
    create["event"]["Invoke"]["request"]["Create"]["data"] = serde_json::json!(hostile.as_bytes());
    let fault = entries
        .iter_mut()
        .find(|e| e["event"]["Fault"].is_object())
        .expect("a fault");
    fault["event"]["Fault"]["description"] = serde_json::json!(hostile);
    let edited = out.join("hostile.json");
    std::fs::write(&edited, json.to_string()).expect("write");
    let page = out.join("hostile.html");
    let (code, _, error) = zkharness(&[
        "report",
        edited.to_str().expect("utf-8"),
        "--html",
        page.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{error}");
    let html = std::fs::read_to_string(&page).expect("the page");
    assert!(
        !html.contains("<script>document"),
        "a run's text is escaped"
    );
    assert!(!html.contains("<img"), "a run's text is escaped");
    assert!(html.contains("&lt;script&gt;document.title="), "and shown");
    let (dom, log) = chromium(&page, "--dump-dom");
    assert_eq!(console(&log), Vec::<&str>::new(), "console messages");
    assert!(
        dom.contains("<title>zkharness: latch-crash seed 1</title>"),
        "no script from the run's text ran (it would have set the title)"
    );
    assert!(!dom.contains("<img"), "no element came from the run's text");
}

#[test]
fn reports_match_their_schemas_junit_parses_and_markdown_holds_the_repro() {
    let out = output_dir("formats");
    let dir = out.to_str().expect("utf-8");
    let mut documents = Vec::new();
    for (scenario, seed) in [
        ("catalog/latch-gc-pause.toml", "2"),
        ("catalog/control-master-no-watch.toml", "0"),
    ] {
        let (code, stdout, _) = zkharness(&["run", scenario, "--seed", seed, "--out", dir]);
        assert_eq!(
            code,
            if scenario.contains("control") { 2 } else { 0 },
            "{stdout}"
        );
    }
    // A sweep with a failure: the control's file, expecting a pass.
    let text = std::fs::read_to_string(manifest().join("catalog/control-master-no-watch.toml"))
        .expect("the control");
    let failing = out.join("no-watch-as-pass.toml");
    let text: String = text
        .lines()
        .filter(|line| !line.starts_with("violation") && !line.starts_with("within_seeds"))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&failing, text).expect("write");
    let sweep_out = out.join("sweep");
    let junit = out.join("junit.xml");
    let markdown = out.join("summary.md");
    let (code, stdout, _) = zkharness(&[
        "sweep",
        failing.to_str().expect("utf-8"),
        "catalog/latch-crash.toml",
        "--seeds",
        "0..3",
        "--out",
        sweep_out.to_str().expect("utf-8"),
        "--junit",
        junit.to_str().expect("utf-8"),
        "--markdown",
        markdown.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2, "the sweep fails on liveness: {stdout}");
    // The same sweep in two shards, each summary beside the reports, and their merge.
    let mut shards = Vec::new();
    for shard in ["0/2", "1/2"] {
        let json = out.join(format!("shard-{}.json", &shard[..1]));
        let (code, stdout, _) = zkharness(&[
            "sweep",
            failing.to_str().expect("utf-8"),
            "catalog/latch-crash.toml",
            "--seeds",
            "0..3",
            "--shard",
            shard,
            "--out",
            out.join(format!("shard-{}", &shard[..1]))
                .to_str()
                .expect("utf-8"),
            "--json",
            json.to_str().expect("utf-8"),
        ]);
        assert_eq!(code, 2, "each shard has a failing seed: {stdout}");
        shards.push(json.display().to_string());
    }
    let merged = out.join("merged.json");
    let (code, stdout, _) = zkharness(&[
        "merge",
        &shards[0],
        &shards[1],
        "--out",
        out.join("merged").to_str().expect("utf-8"),
        "--json",
        merged.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2, "the merge fails as the sweep did: {stdout}");
    for entry in std::fs::read_dir(&out)
        .expect("the folder")
        .chain(std::fs::read_dir(&sweep_out).expect("the sweep's folder"))
    {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            documents.push(path);
        }
    }
    assert!(
        documents.len() >= 9,
        "run reports, failure reports, the summary: {documents:?}"
    );
    let mut args: Vec<&Path> = vec![Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../reports/schema"
    ))];
    args.extend(documents.iter().map(PathBuf::as_path));
    let validated = python_checks(VALIDATE, &args, &out);
    assert_eq!(
        validated.matches("valid ").count(),
        documents.len(),
        "{validated}"
    );
    assert!(validated.contains("valid zkharness-sweep/1"), "{validated}");

    let parsed = python_checks(JUNIT, &[&junit], &out);
    assert!(
        parsed.contains("suites 2 failures 3"),
        "three failing seeds: {parsed}"
    );
    let repro = format!("run {} --seed 1", failing.display());
    assert!(
        parsed.contains("failure no-watch-as-pass | seed 1 | leader elected")
            && parsed.contains(&repro),
        "each failure carries its seed, property and repro command: {parsed}"
    );
    let summary = std::fs::read_to_string(&markdown).expect("the Markdown");
    assert!(summary.contains("## zkharness sweep FAILED"), "{summary}");
    assert!(summary.contains(&repro), "the repro command: {summary}");
    assert!(
        summary.contains("| latch-crash | pass | 3 | ok |"),
        "{summary}"
    );
    for name in ["summary.json", "junit.xml", "summary.md"] {
        assert!(
            sweep_out.join(name).is_file(),
            "{name} in the reports folder"
        );
    }

    // `report` renders the saved summary and report again, the same.
    let again = out.join("again.xml");
    let (code, _, error) = zkharness(&[
        "report",
        sweep_out.join("summary.json").to_str().expect("utf-8"),
        "--junit",
        again.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{error}");
    assert_eq!(
        std::fs::read_to_string(&again).expect("again"),
        std::fs::read_to_string(&junit).expect("junit")
    );
    let (code, _, error) = zkharness(&[
        "report",
        sweep_out.join("summary.json").to_str().expect("utf-8"),
        "--html",
        "x.html",
    ]);
    assert_eq!(code, 64, "a summary has no timeline: {error}");
    assert!(error.contains("is a sweep summary"), "{error}");
}

#[test]
fn a_model_checker_counterexample_is_drawn_on_the_same_lanes_with_steps_for_time() {
    let out = output_dir("check-timeline");
    let page = out.join("check.html");
    let (code, stdout, _) = zkharness(&[
        "check",
        "latch",
        "--variant",
        "no-owner-check",
        "--faults",
        "client-expire=1",
        "--no-claims",
        "--html",
        page.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "a safety violation: {stdout}");
    let html = std::fs::read_to_string(&page).expect("the timeline");
    assert!(html.contains("const UNIT = \"step\""), "steps for time");
    let (dom, log) = chromium(&page, "--dump-dom");
    assert_eq!(console(&log), Vec::<&str>::new(), "console messages");
    for lane in ["client-0", "client-2", "ensemble"] {
        assert!(
            dom.contains(&format!("data-lane=\"{lane}\"")),
            "lane {lane}"
        );
    }
    assert!(
        dom.contains("data-property=\"single acting master\""),
        "the violation marker"
    );
    assert!(
        dom.contains("class=\"evidence\"") && dom.contains(">step 19<"),
        "the evidence rows, timed by step"
    );
    let (_, log) = chromium(
        &page,
        &format!("--screenshot={}", out.join("check.png").display()),
    );
    assert_eq!(console(&log), Vec::<&str>::new(), "console messages");
}

#[test]
fn the_herd_view_sets_the_correct_lock_beside_the_herd_variant() {
    let out = output_dir("herd");
    let (code, stdout, _) = zkharness(&[
        "sweep",
        "catalog/lock-crash.toml",
        "catalog/control-lock-herd.toml",
        "--seeds",
        "0..2",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stdout}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json")).expect("the summary"),
    )
    .expect("JSON");
    let herd = |name: &str| {
        summary["scenarios"]
            .as_array()
            .expect("scenarios")
            .iter()
            .find(|s| s["scenario"] == name)
            .unwrap_or_else(|| panic!("{name} in the summary"))["herd"]
            .clone()
    };
    let (correct, herded) = (herd("lock-crash"), herd("control-lock-herd"));
    assert!(correct["releases"].as_u64() > Some(10), "{correct}");
    assert_eq!(
        correct["woken_max"], 1,
        "the correct lock wakes one: {correct}"
    );
    assert!(
        herded["woken_max"].as_u64() >= Some(2) && herded["woken_mean"].as_f64() > Some(1.5),
        "the herd wakes every waiter: {herded}"
    );
    let svg = std::fs::read_to_string(out.join("herd.svg")).expect("the chart");
    assert_eq!(svg.matches("class=\"herd-series\"").count(), 2, "{svg}");
    let markdown = std::fs::read_to_string(out.join("summary.md")).expect("the Markdown");
    assert!(markdown.contains("### Herd effect (locks)"), "{markdown}");
    let page = std::fs::read_dir(&out)
        .expect("the folder")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "html"))
        .expect("the control's timeline");
    let html = std::fs::read_to_string(&page).expect("the page");
    assert!(
        html.contains("<section id=\"herd\">"),
        "the run's own herd chart"
    );
    python_checks(
        VALIDATE,
        &[
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../reports/schema")),
            &out.join("summary.json"),
            &page.with_extension("json"),
        ],
        &out,
    );
}
