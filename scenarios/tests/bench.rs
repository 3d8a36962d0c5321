//! `zkharness bench` (simulated build): the simulated failover of five LeaderLatch
//! participants runs seed after seed, every seed fails over, every catalogue scenario is timed
//! and every control reaches its bug, and the JSON carries the figures.
//! With `ZKHARNESS_REAL` naming the normal build's zkharness (as `scripts/test-all` does), it
//! runs the real side too, on a real three-server ensemble (`bench-real`, whose own test is
//! `tests/bench_real.rs`).
#![cfg(madsim)]

use crate::common;

use common::zkharness;

#[test]
fn bench_quick_times_both_sides_and_writes_every_figure() {
    // The real side runs the normal build's zkharness, which `scripts/test-all` builds and
    // names in ZKHARNESS_REAL; in CI it must be there.
    let real = std::env::var_os("ZKHARNESS_REAL").is_some();
    assert!(
        real || std::env::var_os("CI").is_none(),
        "in CI, ZKHARNESS_REAL must name the normal build's zkharness (scripts/test-all sets it)"
    );
    let json = std::env::temp_dir().join(format!("zkh-bench-{}.json", std::process::id()));
    let json_arg = json.to_str().expect("a UTF-8 path");
    let side = if real { "--runs=1" } else { "--sim-only" };
    let (code, stdout, stderr) = zkharness(&[
        "bench",
        "--quick",
        side,
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
    if real {
        let real_median = figures["real_median_ms"].as_f64().expect("the real median");
        assert!(
            (3_000.0..30_000.0).contains(&real_median),
            "a real failover waits for the session to expire: {real_median} ms"
        );
        let ratio = figures["sim_vs_real_ratio"].as_f64().expect("the ratio");
        assert!((ratio - real_median / median).abs() < 1e-6 * ratio);
        assert_eq!(figures["real"]["servers"], 3);
    } else {
        assert!(
            figures.get("real").is_none(),
            "--sim-only runs no real side"
        );
    }
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
    // The simulator's work: every run delivers messages and records events, and each recipe
    // of the catalogue has its totals.
    for field in [
        "messages_per_seed",
        "history_events_per_seed",
        "messages_per_sec",
    ] {
        assert!(
            scenarios
                .iter()
                .all(|s| s[field].as_f64().is_some_and(|v| v > 10.0)),
            "{field}: {scenarios:?}"
        );
    }
    let recipes = figures["recipes"].as_array().expect("recipes");
    let named: std::collections::BTreeSet<&str> = scenarios
        .iter()
        .filter_map(|s| s["recipe"].as_str())
        .collect();
    let totalled: Vec<&str> = recipes
        .iter()
        .filter_map(|r| r["recipe"].as_str())
        .collect();
    assert_eq!(totalled, named.into_iter().collect::<Vec<_>>());
    assert_eq!(
        recipes
            .iter()
            .filter_map(|r| r["seeds"].as_u64())
            .sum::<u64>(),
        scenarios
            .iter()
            .filter_map(|s| s["seeds"].as_u64())
            .sum::<u64>(),
        "the recipes' seeds add up to the scenarios'"
    );
    assert!(
        stdout.contains("| recipe (its catalogue scenarios) |"),
        "{stdout}"
    );
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
    let listed = (zkh_scenarios::known_bad::KNOWN_BAD.iter())
        .filter(|entry| entry.recipe != "job")
        .count();
    assert_eq!(checks.len(), listed, "{checks:?}");
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
