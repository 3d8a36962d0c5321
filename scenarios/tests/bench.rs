//! `zkharness bench` (simulated build): the simulated failover of five LeaderLatch
//! participants runs seed after seed, every seed fails over, every catalogue scenario is timed
//! and every control reaches its bug, and the JSON carries the figures.
//! The real side (`bench-real`, normal build) has its own test, `tests/bench_real.rs`; the two
//! together run from `scripts/test-all` as `scripts/zkharness bench --quick`.
#![cfg(madsim)]

mod common;

use common::zkharness;

#[test]
fn bench_sim_only_times_the_simulated_failover_and_writes_its_figures() {
    let json = std::env::temp_dir().join(format!("zkh-bench-{}.json", std::process::id()));
    let json_arg = json.to_str().expect("a UTF-8 path");
    let (code, stdout, stderr) = zkharness(&[
        "bench",
        "--quick",
        "--sim-only",
        "--seeds",
        "20",
        "--catalog",
        "catalog",
        "--catalog-seeds",
        "1",
        "--json",
        json_arg,
    ]);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let text = std::fs::read_to_string(&json).expect("the JSON is written");
    let _ = std::fs::remove_file(&json);
    let figures: serde_json::Value = serde_json::from_str(&text).expect("the JSON parses");
    assert_eq!(figures["format"], "zkharness-bench/1");
    assert_eq!(figures["seeds"], 20);
    let median = figures["sim_median_ms"].as_f64().expect("a median");
    assert!(median > 0.0 && figures["sim_p90_ms"].as_f64() >= Some(median));
    // The simulated failover waits for the crashed leader's session to expire, as a real one
    // does: 4 s, give or take a tick of the expiry buckets.
    let failover = figures["sim_failover_median_ms"]
        .as_u64()
        .expect("a failover");
    assert!((2_600..=8_000).contains(&failover), "{failover} ms");
    assert!(
        figures.get("real").is_none(),
        "--sim-only runs no real side"
    );
    assert!(
        stdout.contains("| simulated (one thread) | 20 |"),
        "{stdout}"
    );
    // Every catalogue file is either timed or, for a control, run to its bug.
    let files = std::fs::read_dir("catalog")
        .expect("the catalogue")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "toml"))
        })
        .count();
    let scenarios = figures["scenarios"].as_array().expect("scenarios");
    let variants = figures["variants"].as_array().expect("variants");
    assert_eq!(scenarios.len() + variants.len(), files);
    assert!(scenarios
        .iter()
        .all(|s| s["seeds_per_sec"].as_f64().is_some_and(|v| v > 0.0)));
    assert!(!variants.is_empty(), "the catalogue has controls");
    for variant in variants {
        assert!(
            variant["seeds_to_bug"].as_u64().is_some_and(|n| n >= 1),
            "{variant}"
        );
        assert!(variant["time_to_bug_s"].as_f64().is_some(), "{variant}");
        assert!(variant["property"].is_string(), "{variant}");
    }
    // The model checker catches every known-bad variant it runs (with --quick, all but the
    // sharded job's), the standard check passes, and both memories are measured.
    let checks = figures["checks_to_bug"].as_array().expect("checks");
    assert_eq!(checks.len(), 6, "{checks:?}");
    for check in checks {
        assert!(check["states"].as_u64().is_some_and(|n| n > 0), "{check}");
        assert!(check["property"].is_string(), "{check}");
    }
    let standard = figures["standard_checks"]
        .as_array()
        .expect("standard checks");
    assert!(standard[0]["unique_states_per_sec"]
        .as_f64()
        .is_some_and(|v| v > 0.0));
    let peak = &figures["peak_rss_mib"];
    assert!(
        peak["sweep_mib"].as_f64().is_some_and(|v| v > 1.0),
        "{peak}"
    );
    assert!(
        peak["largest_check_mib"].as_f64().is_some_and(|v| v > 1.0),
        "{peak}"
    );
}
