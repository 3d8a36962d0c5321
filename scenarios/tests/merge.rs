//! `zkharness merge`: a sweep split into shards, each run as a process of its own as a CI
//! matrix would, merges into the summary of the same sweep run whole: the same verdicts, exit
//! code, failures and combined trace hashes, per scenario and overall. And shards that are not
//! the slices of one sweep are refused, each with the reason.
#![cfg(madsim)]

use std::path::{Path, PathBuf};

use zkh_reports::types::SweepSummary;

use crate::common;
use common::zkharness;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkh-merge-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}

fn summary(folder: &Path) -> SweepSummary {
    let text = std::fs::read_to_string(folder.join("summary.json")).expect("a summary.json");
    serde_json::from_str(&text).expect("a readable summary")
}

/// A pass scenario, a positive control (run whole by one shard) and a pinned regression.
const FILES: [&str; 3] = [
    "catalog/latch-crash.toml",
    "catalog/control-latch-unprotected.toml",
    "regressions/lock-harsh-random-seed1285.toml",
];

/// Sweeps `files` whole and in `count` shards (one process each), merges the shards, and
/// returns the exit codes and summaries: (whole, merged).
fn whole_and_merged(
    name: &str,
    files: &[&str],
    extra: &[&str],
    count: u64,
) -> ((i32, SweepSummary), (i32, SweepSummary), Vec<PathBuf>) {
    let root = temp(name);
    let run = |folder: &Path, shard: Option<String>| {
        let out = folder.to_str().expect("utf-8").to_owned();
        let mut args: Vec<String> = vec!["sweep".into()];
        args.extend(files.iter().map(|f| f.to_string()));
        args.extend(["--seeds", "0..9", "--jobs", "2", "--out", &out].map(String::from));
        args.extend(extra.iter().map(|f| f.to_string()));
        if let Some(shard) = shard {
            args.extend(["--shard".to_owned(), shard]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = zkharness(&args);
        assert!(code != 101 && code != 64, "{stdout}{stderr}");
        code
    };
    let whole_dir = root.join("whole");
    let whole = (run(&whole_dir, None), summary(&whole_dir));
    let shard_summaries: Vec<PathBuf> = (0..count)
        .map(|index| {
            let dir = root.join(format!("shard-{index}"));
            run(&dir, Some(format!("{index}/{count}")));
            dir.join("summary.json")
        })
        .collect();
    let merged_dir = root.join("merged");
    let mut args = vec!["merge", "--out", merged_dir.to_str().expect("utf-8")];
    // The shards in reverse order: a merge does not depend on the order it is given them.
    args.extend(
        shard_summaries
            .iter()
            .rev()
            .map(|p| p.to_str().expect("utf-8")),
    );
    let (code, stdout, stderr) = zkharness(&args);
    assert!(code != 101 && code != 64, "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("merge: {count} shards")),
        "{stdout}"
    );
    let merged = (code, summary(&merged_dir));
    (whole, merged, shard_summaries)
}

/// What a merge must reproduce of the whole sweep's summary (everything but the timings and
/// the report paths).
fn judged(summary: &SweepSummary) -> String {
    let mut text = format!(
        "ok={} seeds={} run={} trace={}\n",
        summary.ok, summary.seeds, summary.seeds_run, summary.combined_trace
    );
    for s in &summary.scenarios {
        let failures: Vec<String> = (s.failures.iter())
            .map(|f| format!("{}:{}:{}:{:?}", f.seed, f.property, f.trace, f.exit))
            .collect();
        text += &format!(
            "{} {} ok={} seeds={} trace={} caught={:?} failures={:?} never={:?} sometimes={:?} herd={:?}\n",
            s.path,
            s.expected,
            s.ok,
            s.seeds_run,
            s.combined_trace,
            s.caught_at,
            failures,
            s.sometimes_never,
            s.sometimes,
            s.herd
        );
    }
    text
}

#[test]
fn three_shards_merge_to_the_whole_sweeps_summary_and_trace() {
    let ((whole_code, whole), (merged_code, merged), shards) =
        whole_and_merged("pass", &FILES, &[], 3);
    assert_eq!(whole_code, 0, "{}", judged(&whole));
    assert_eq!(merged_code, whole_code);
    assert_eq!(judged(&merged), judged(&whole));
    assert_eq!(merged.shard, None, "the merge is the whole sweep");
    assert!(whole.scenarios.iter().all(|s| s.traces.is_empty()));
    // Each shard ran only its slice, and the control ran whole on one shard.
    let parts: Vec<SweepSummary> = shards
        .iter()
        .map(|p| summary(p.parent().expect("a folder")))
        .collect();
    let pass_seeds: Vec<u64> = parts.iter().map(|p| p.scenarios[0].seeds_run).collect();
    assert_eq!(pass_seeds, [3, 3, 3], "seeds 0..9 in three slices");
    let control_runs = parts
        .iter()
        .filter(|p| p.scenarios[1].seeds_run > 0)
        .count();
    assert_eq!(control_runs, 1, "a control runs whole on one shard");
    assert!(
        parts
            .iter()
            .all(|p| p.scenarios[0].combined_trace != whole.scenarios[0].combined_trace),
        "no shard alone has the whole sweep's trace"
    );
}

#[test]
fn a_failing_sweep_merges_to_the_same_failures_and_exit_code() {
    let files = [
        "catalog/latch-client-expiry.toml",
        "catalog/latch-partition.toml",
    ];
    let ((whole_code, whole), (merged_code, merged), _) =
        whole_and_merged("fail", &files, &["--variant", "no-owner-check"], 2);
    assert_ne!(
        whole_code,
        0,
        "the latch without its owner check fails: {}",
        judged(&whole)
    );
    assert!(!whole.ok);
    assert_eq!(merged.variant.as_deref(), Some("no-owner-check"));
    assert_eq!(merged_code, whole_code);
    assert_eq!(judged(&merged), judged(&whole));
}

#[test]
fn shards_of_different_sweeps_or_a_missing_slice_are_refused() {
    let root = temp("refused");
    let sweep = |name: &str, seeds: &str, shard: &str| {
        let out = root.join(name);
        let args = [
            "sweep",
            FILES[0],
            "--seeds",
            seeds,
            "--out",
            out.to_str().expect("utf-8"),
            "--shard",
            shard,
        ];
        let (code, stdout, stderr) = zkharness(&args);
        assert_eq!(code, 0, "{stdout}{stderr}");
        out.join("summary.json").display().to_string()
    };
    let a0 = sweep("a0", "0..4", "0/2");
    let a1 = sweep("a1", "0..4", "1/2");
    let b1 = sweep("b1", "0..6", "1/2");
    let c1 = sweep("c1", "0..4", "1/3");
    let refused = |args: &[&str], reason: &str| {
        let mut all = vec!["merge", "--out"];
        let out = root.join("merged");
        all.push(out.to_str().expect("utf-8"));
        all.extend(args);
        let (code, stdout, stderr) = zkharness(&all);
        assert_eq!(code, 64, "{stdout}{stderr}");
        assert!(stderr.contains(reason), "{reason:?} in {stderr}");
    };
    refused(&[&a0], "shards 1/2 are missing");
    refused(&[&a0, &a0, &a1], "is given twice");
    refused(&[&a0, &b1], "seeds \"0..6\", where");
    refused(&[&a0, &c1], "slices of different splits");
    let whole = root.join("whole");
    let (code, _, _) = zkharness(&[
        "sweep",
        FILES[0],
        "--seeds",
        "0..2",
        "--out",
        whole.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0);
    let whole = whole.join("summary.json").display().to_string();
    refused(&[&whole], "not a shard's summary");
    let broken = root.join("broken.json");
    std::fs::write(
        &broken,
        "{\"format\": \"zkharness-sweep/1\",\n  \"commit\": 7}",
    )
    .unwrap();
    refused(&[broken.to_str().unwrap()], "broken.json:2:");
    let (code, _, _) = zkharness(&[
        "merge",
        "--out",
        root.join("ok").to_str().unwrap(),
        &a0,
        &a1,
    ]);
    assert_eq!(code, 0, "the two slices of one sweep merge");
}
