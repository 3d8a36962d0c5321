//! Determinism: one seed is the only entropy.
//!
//! Each seed runs the standard failover scenario with random faults laid over it, twice, each
//! time on a fresh thread with a fresh runtime, and the two histories must hash the same.
#![cfg(madsim)]

use std::collections::BTreeSet;

use zkh_sim::fault::FaultPlan;
use zkh_sim::run::run_seed;
use zkh_sim::standard;

fn run(seed: u64) -> standard::Outcome {
    run_seed(seed, 600, |seed| {
        standard::run(seed, standard::harsh_plan())
    })
}

fn seeds() -> u64 {
    std::env::var("ZKH_DETERMINISM_SEEDS").map_or(200, |s| {
        s.parse().expect("ZKH_DETERMINISM_SEEDS is a number")
    })
}

#[test]
fn every_seed_replays_identically() {
    let count = seeds();
    let mut failovers = 0;
    for seed in zkh_sim::seed::seeds(0..count) {
        let (first, second) = (run(seed), run(seed));
        assert_eq!(first, second, "seed {seed} ran differently twice");
        assert!(
            first.history_len > 50,
            "seed {seed} recorded only {} entries",
            first.history_len
        );
        failovers += u64::from(first.failover_ms().is_some());
    }
    println!("determinism: {count} seeds, each run twice with identical history hashes; {failovers} failed over");
    assert!(
        failovers * 2 > count,
        "most seeds must fail over despite random faults: {failovers}/{count}"
    );
}

#[test]
fn a_different_seed_changes_the_schedule() {
    let hashes: BTreeSet<u64> = (1000..1020).map(|seed| run(seed).history_hash).collect();
    assert_eq!(
        hashes.len(),
        20,
        "20 seeds gave only {} distinct histories",
        hashes.len()
    );
    let quiet: BTreeSet<u64> = (0..5)
        .map(|seed| {
            run_seed(seed, 600, |seed| standard::run(seed, FaultPlan::default())).history_hash
        })
        .collect();
    assert_eq!(
        quiet.len(),
        5,
        "without faults, the seed still drives latencies and choices"
    );
}
