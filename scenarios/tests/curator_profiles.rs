//! Adjacent Curator releases, told apart by the harness: for each pair whose `LeaderLatch` or
//! framework code differs on a path the faults reach, one scenario whose outcome or request
//! sequence differs between the two profiles, run on the simulated ensemble.
//!
//! - 2.10.0 → 5.3.0: the framework. After a disconnection 2.10.0 sends a `sync`
//!   (`doSyncForSuspendedConnection`); 5.x does not.
//! - 5.3.0 → 5.4.0 and 5.4.0 → 5.7.1: a client-side expiry. 5.3.0 resets on RECONNECTED and
//!   5.7.1 checks the owner of its node; 5.4.0 leads on its old session's node and two leaders
//!   act (scenarios/findings/latch-curator-5.4.0-client-expiry-two-leaders.toml).
//! - 2.10.0 → 5.3.0, the lock: a protected create's search and the create after it. 2.10.0
//!   gives the search a retry loop of its own; 5.x shares the thread's, whose completion makes
//!   `callWithRetry` return null after the create's lost reply: the acquire throws and its node
//!   is orphaned (scenarios/findings/lock-curator-5.4.0-null-create-orphan.toml).
//! - 5.4.0 → 5.7.1, the lock: the cleanup delete's exception (CURATOR-41's
//!   `deleteOurPathQuietly`), told apart by the mutex's table test
//!   `a_failed_cleanup_ends_the_acquire_until_5_7_retries_it` (no fault of the catalogue makes a
//!   guaranteed delete give up inside an acquire).
//! - 5.7.1 → 5.9.0: the latch's parent reaped. 5.7.1 never makes a node again; 5.9.0 resets on
//!   the listing's NONODE (scenarios/findings/latch-curator-5.7.1-parent-reaped-no-leader.toml).
#![cfg(madsim)]

use std::path::PathBuf;

use zkh_model::{HistoryEvent, Request};
use zkh_scenarios::report::Outcome;
use zkh_scenarios::runner::{run, RunResult};
use zkh_scenarios::scenario::load;

fn file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

/// `path` with `variant`, run at `seeds`.
fn runs(path: &str, variant: &str, seeds: std::ops::Range<u64>) -> Vec<RunResult> {
    let loaded = load(&file(path)).expect("the scenario loads");
    let loaded = loaded.with_variant(variant).expect("a Curator profile");
    seeds.map(|seed| run(&loaded.resolved, seed)).collect()
}

fn broken(results: &[RunResult], property: &str) -> Vec<u64> {
    (results.iter())
        .filter(|r| r.outcome.property() == Some(property) && r.outcome != Outcome::Pass)
        .map(|r| r.seed)
        .collect()
}

fn syncs(result: &RunResult) -> usize {
    (result.history.entries().iter())
        .filter(|e| {
            matches!(
                &e.event,
                HistoryEvent::Invoke {
                    request: Request::Sync { .. },
                    ..
                }
            )
        })
        .count()
}

#[test]
fn curator_2_10_syncs_after_a_disconnection_and_5_3_does_not() {
    let scenario = "scenarios/catalog/latch-partition.toml";
    let old = runs(scenario, "curator-2.10.0", 0..3);
    let new = runs(scenario, "curator-5.3.0", 0..3);
    for (old, new) in old.iter().zip(&new) {
        assert!(
            syncs(old) > 0,
            "seed {}: 2.10.0 sends its suspended sync",
            old.seed
        );
        assert_eq!(syncs(new), 0, "seed {}: 5.3.0 sends none", new.seed);
        assert_eq!(old.outcome, Outcome::Pass, "seed {}", old.seed);
        assert_eq!(new.outcome, Outcome::Pass, "seed {}", new.seed);
    }
}

#[test]
fn only_5_4_leads_on_its_old_sessions_node_after_a_client_side_expiry() {
    let scenario = "scenarios/findings/latch-curator-5.4.0-client-expiry-two-leaders.toml";
    let property = "single acting master";
    let two_leaders = broken(&runs(scenario, "curator-5.4.0", 0..20), property);
    assert!(
        !two_leaders.is_empty(),
        "5.4.0 gives two acting leaders within 20 seeds"
    );
    for release in ["curator-5.3.0", "curator-5.7.1"] {
        let at = two_leaders[0]..two_leaders[0] + 1;
        let results = runs(scenario, release, at);
        assert_eq!(
            results[0].outcome,
            Outcome::Pass,
            "{release} at seed {}",
            two_leaders[0]
        );
    }
}

#[test]
fn only_5_9_makes_a_node_again_after_the_latch_path_is_reaped() {
    let scenario = "scenarios/findings/latch-curator-5.7.1-parent-reaped-no-leader.toml";
    let stalled = broken(&runs(scenario, "curator-5.7.1", 0..3), "leader elected");
    assert_eq!(stalled, [0, 1, 2], "5.7.1 never elects again");
    for result in runs(scenario, "curator-5.9.0", 0..3) {
        assert_eq!(result.outcome, Outcome::Pass, "5.9.0, seed {}", result.seed);
    }
}

#[test]
fn only_5_orphans_the_node_of_a_create_that_returned_null() {
    let scenario = "scenarios/findings/lock-curator-5.4.0-null-create-orphan.toml";
    let property = "no orphaned ephemerals";
    for release in [
        "curator-5.3.0",
        "curator-5.4.0",
        "curator-5.7.1",
        "curator-5.9.0",
    ] {
        let orphaned = broken(&runs(scenario, release, 0..3), property);
        assert_eq!(orphaned, [0, 1, 2], "{release} orphans its node");
    }
    for result in runs(scenario, "curator-2.10.0", 0..3) {
        assert_eq!(
            result.outcome,
            Outcome::Pass,
            "2.10.0, seed {}",
            result.seed
        );
    }
}
