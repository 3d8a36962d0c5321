//! `zkharness bench-real` end to end (normal build): it starts a real three-server ensemble on
//! 127.0.0.1, times one crash failover of five LeaderLatch processes, writes its JSON, and
//! stops every server it started (by PID) before it exits.
#![cfg(not(madsim))]

use crate::common;

use common::zkharness;

#[test]
fn bench_real_times_a_failover_on_a_real_ensemble_and_stops_its_servers() {
    let json = std::env::temp_dir().join(format!("zkh-bench-real-{}.json", std::process::id()));
    let json_arg = json.to_str().expect("a UTF-8 path");
    let (code, stdout, stderr) = zkharness(&["bench-real", "--runs", "1", "--json", json_arg]);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let text = std::fs::read_to_string(&json).expect("the JSON is written");
    let _ = std::fs::remove_file(&json);
    let figures: serde_json::Value = serde_json::from_str(&text).expect("the JSON parses");
    assert_eq!(figures["format"], "zkharness-bench-real/1");
    assert_eq!(figures["servers"], 3);
    assert_eq!(figures["participants"], 5);
    let median = figures["real_median_ms"].as_f64().expect("a median");
    // The leader's session must expire: 4 s, give or take a tick, and never a close.
    assert!(
        (3_000.0..30_000.0).contains(&median),
        "a failover after a SIGKILL waits for the session to expire: {median} ms"
    );
    assert!(figures["real_p90_ms"].as_f64().is_some() && figures["machine"].is_string());
    assert!(stdout.contains("real failover"), "{stdout}");
    // Every server it started is gone.
    common::assert_servers_stopped(&stderr, "bench-real");
}
