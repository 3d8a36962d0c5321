//! The model checker's and the memory's part of `zkharness bench`.
//!
//! - Every known-bad variant's catching check (`crate::known_bad::KNOWN_BAD`), run as
//!   `zkharness check ... --json` in a child process: the states it generated and the seconds
//!   it took to its counterexample.
//! - The standard checks (3 clients, one lost reply and one expiry, caught-up acting) of the
//!   lock, the latch, the election and the master: unique states a second. (The sharded job's,
//!   two instances with a lost reply, takes about 100 s; docs/model-checking.md has it.)
//! - Peak resident memory of a 10,000-seed sweep of `latch-harsh-random` and of the largest
//!   standard check (the election): each child reports its own high-water mark (`VmHWM` of
//!   `/proc/self/status`) as it exits, to the file `ZKH_PEAK_RSS_FILE` names.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::known_bad::KNOWN_BAD;
use serde::Serialize;

/// The budget of the standard checks the benchmark times.
const DEFAULT_FAULTS: &str = "drop-reply=1,expire=1";

/// One known-bad variant's check.
#[derive(Serialize)]
pub(super) struct CheckToBug {
    pub recipe: &'static str,
    pub variant: &'static str,
    pub command: String,
    pub property: String,
    pub states: u64,
    pub seconds: f64,
}

/// One standard check's speed.
#[derive(Serialize)]
pub(super) struct StandardCheck {
    pub recipe: &'static str,
    pub unique_states: u64,
    pub seconds: f64,
    pub unique_states_per_sec: f64,
}

/// Peak resident memory, MiB.
#[derive(Serialize)]
pub(super) struct PeakRss {
    pub sweep_seeds: u64,
    pub sweep_mib: f64,
    pub largest_check: &'static str,
    pub largest_check_mib: f64,
}

/// Runs every known-bad variant's check (with `quick`, those of the recipes other than the
/// sharded job, whose checks take about 11 s each).
pub(super) fn checks_to_bug(exe: &Path, quick: bool) -> Result<Vec<CheckToBug>, String> {
    let mut found = Vec::new();
    for entry in KNOWN_BAD.iter().filter(|e| !quick || e.recipe != "job") {
        let mut args = vec!["check", entry.recipe, "--variant", entry.variant];
        args.extend_from_slice(entry.options);
        args.push("--json");
        let (report, _) = run_json(exe, &args)?;
        let property = report["result"]["violation"]
            .as_str()
            .ok_or_else(|| format!("{}: no violation: {report}", entry.command()))?;
        found.push(CheckToBug {
            recipe: entry.recipe,
            variant: entry.variant,
            command: entry.command(),
            property: property.to_owned(),
            states: report["states"].as_u64().unwrap_or(0),
            seconds: report["seconds"].as_f64().unwrap_or(0.0),
        });
        eprint!(".");
    }
    eprintln!();
    Ok(found)
}

/// The standard checks, each of the budget `drop-reply=1,expire=1` (with `quick`, the master's
/// alone), and the largest one's peak memory.
pub(super) fn standard_checks(
    exe: &Path,
    quick: bool,
) -> Result<(Vec<StandardCheck>, f64), String> {
    let recipes: &[&'static str] = if quick {
        &["master"]
    } else {
        &["lock", "latch", "master", "election"]
    };
    let mut checks = Vec::new();
    let mut largest_mib = 0.0;
    for recipe in recipes {
        // One budget, the one whose speed docs/performance.md has followed since the start (the
        // plain check's standard budgets run side by side and report no single rate).
        let args = ["check", recipe, "--faults", DEFAULT_FAULTS, "--json"];
        let (report, peak_mib) = run_json(exe, &args)?;
        if report["result"] != "pass" {
            return Err(format!(
                "the standard check of the {recipe} did not pass: {report}"
            ));
        }
        let unique_states = report["unique_states"].as_u64().unwrap_or(0);
        let seconds = report["seconds"].as_f64().unwrap_or(0.0);
        largest_mib = peak_mib;
        checks.push(StandardCheck {
            recipe,
            unique_states,
            seconds,
            unique_states_per_sec: unique_states as f64 / seconds.max(1e-9),
        });
    }
    Ok((checks, largest_mib))
}

/// The peak memory of a `seeds`-seed sweep of the latch's harsh-random scenario in `catalog`.
pub(super) fn sweep_peak_mib(exe: &Path, catalog: &Path, seeds: u64) -> Result<f64, String> {
    let scenario = catalog.join("latch-harsh-random.toml");
    let json = std::env::temp_dir().join(format!("zkh-bench-sweep-{}.json", std::process::id()));
    let range = format!("0..{seeds}");
    let scenario_arg = scenario.to_string_lossy().into_owned();
    let json_arg = json.to_string_lossy().into_owned();
    let args = [
        "sweep",
        scenario_arg.as_str(),
        "--seeds",
        range.as_str(),
        "--jobs",
        "1",
        "--json",
        json_arg.as_str(),
        "--out",
    ];
    let out = std::env::temp_dir().join(format!("zkh-bench-sweep-out-{}", std::process::id()));
    let mut command = Command::new(exe);
    command.args(args).arg(&out);
    let (status, _, peak) = watch(command)?;
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_dir_all(&out);
    if !status {
        return Err(format!(
            "the {seeds}-seed sweep of {} failed",
            scenario.display()
        ));
    }
    Ok(peak)
}

/// Runs `exe args`, which prints one JSON object; returns it and the child's peak memory.
fn run_json(exe: &Path, args: &[&str]) -> Result<(serde_json::Value, f64), String> {
    let mut command = Command::new(exe);
    command.args(args);
    let (_, stdout, peak) = watch(command)?;
    let report = serde_json::from_str(&stdout)
        .map_err(|e| format!("zkharness {}: its JSON: {e}", args.join(" ")))?;
    Ok((report, peak))
}

/// Runs `command` to its end; returns whether it succeeded, its standard output and its peak
/// resident memory in MiB, which it reports itself as it exits (`ZKH_PEAK_RSS_FILE`, read by
/// `main`: its `VmHWM`, the high-water mark, at the end).
fn watch(mut command: Command) -> Result<(bool, String, f64), String> {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let peak_file =
        std::env::temp_dir().join(format!("zkh-bench-peak-{}-{run}", std::process::id()));
    let output = command
        .env(PEAK_RSS_FILE, &peak_file)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run zkharness: {e}"))?;
    let peak_kib: u64 = std::fs::read_to_string(&peak_file)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .ok_or_else(|| format!("zkharness did not report its peak memory ({output:?})"))?;
    let _ = std::fs::remove_file(&peak_file);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    Ok((output.status.success(), stdout, peak_kib as f64 / 1024.0))
}

/// The variable that asks `zkharness` to write its peak resident memory (KiB) to a file as it
/// exits.
pub const PEAK_RSS_FILE: &str = "ZKH_PEAK_RSS_FILE";
