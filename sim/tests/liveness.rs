//! Liveness under recoverable faults: with lost requests and replies, short pauses and
//! partitions, and leader crashes, every seed of the standard scenario fails over within the
//! bound. This is the sweep's check, run on a fixed range in CI.
#![cfg(madsim)]

use zkh_sim::run::run_seed;
use zkh_sim::standard;

#[test]
fn every_seed_fails_over_under_recoverable_faults() {
    let seeds = zkh_sim::seed::seeds(0..300);
    let mut slowest = (0, 0);
    for &seed in &seeds {
        let outcome = run_seed(seed, 600, |seed| {
            standard::run(seed, standard::sweep_plan())
        });
        let failover = outcome.failover_ms.unwrap_or_else(|| {
            panic!("seed {seed} did not fail over; replay it with ZKH_SEED={seed}")
        });
        slowest = slowest.max((failover, seed));
    }
    println!(
        "liveness: {} seeds failed over; slowest {} ms (seed {})",
        seeds.len(),
        slowest.0,
        slowest.1
    );
}
