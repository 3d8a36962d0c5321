//! `zkharness differential` (simulated build): the guarantee probe under a leader crash on the
//! simulated ensemble, seed after seed, every guarantee judged and kept, the companions reached,
//! and the clients' profile in the JSON. With `ZKHARNESS_REAL` naming the normal build's
//! zkharness (as `scripts/test-all` does), one real run beside it (`guarantees-real`, whose own
//! test is `tests/guarantees_real.rs`).
#![cfg(madsim)]

use crate::common;

use common::zkharness;

#[test]
fn differential_judges_both_ensembles_by_the_same_guarantees_side_by_side() {
    let real = std::env::var_os("ZKHARNESS_REAL").is_some();
    assert!(
        real || std::env::var_os("CI").is_none(),
        "in CI, ZKHARNESS_REAL must name the normal build's zkharness (scripts/test-all sets it)"
    );
    let json = std::env::temp_dir().join(format!("zkh-differential-{}.json", std::process::id()));
    let json_arg = json.to_str().expect("a UTF-8 path");
    let mut args = vec!["differential", "--fault", "kill-leader", "--seeds", "0..6"];
    if !real {
        args.push("--sim-only");
    }
    args.extend(["--json", json_arg]);
    let (code, stdout, stderr) = zkharness(&args);
    let text = std::fs::read_to_string(&json).unwrap_or_default();
    let _ = std::fs::remove_file(&json);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let report: serde_json::Value = serde_json::from_str(&text).expect("the JSON parses");
    assert_eq!(report["format"], "zkharness-differential/1");
    let simulated = &report["simulated"];
    assert_eq!(simulated["runs"], 6);
    // The simulator judges every guarantee; each `always` one held on every seed.
    for guarantee in zkh_model::guarantees::GUARANTEES {
        let counts = &simulated["verdicts"][guarantee];
        assert!(counts.is_object(), "{guarantee} was judged: {simulated}");
        assert!(
            counts.get("violated").is_none() && counts.get("not judged").is_none(),
            "{guarantee}: {counts}"
        );
    }
    // The leader's crash drops connections, and the sessions go on.
    assert_eq!(
        simulated["verdicts"]["a session resumed on a new connection"]["seen"],
        6
    );
    let profiles = simulated["profiles"].as_array().expect("profiles");
    assert!(profiles
        .iter()
        .all(|p| p["sessions"]["Reconnected"].as_u64() >= Some(1)));
    assert!(profiles
        .iter()
        .all(|p| p["writes_resumed_ms"][0][1].as_u64().is_some()));
    assert!(
        stdout.contains("| guarantee | simulated (6 seeds) |"),
        "{stdout}"
    );
    if real {
        let side = &report["real"];
        assert_eq!(side["runs"], 1, "{report}");
        assert_eq!(
            side["verdicts"]["linearizable writes"]["holds"], 1,
            "{side}"
        );
        assert_eq!(side["verdicts"]["durability"]["not judged"], 1, "{side}");
    }
}
