//! Benchmark: the standard failover scenario (`zkh_sim::standard`), seed after seed.
//!
//! Reports, for a release build, the median wall time per seed, seeds per second per core, and
//! simulated seconds per wall second. The anchor: the same scenario on a real ensemble takes
//! about 6 s of wall time (`zkharness bench`, docs/performance.md).
//!
//! Run it with the command in the README:
//! `RUSTFLAGS="--cfg madsim" cargo bench -p zkh-sim --bench failover`.
//! `ZKH_BENCH_SEEDS` sets the number of seeds (default 2000).

#[cfg(madsim)]
fn main() {
    use zkh_sim::fault::FaultPlan;
    use zkh_sim::run::run_seed;
    use zkh_sim::standard;

    let seeds: u64 = std::env::var("ZKH_BENCH_SEEDS")
        .map_or(2000, |s| s.parse().expect("ZKH_BENCH_SEEDS is a number"));
    // Warm up: the first runtime pays for lazy statics.
    run_seed(u64::MAX, 600, |seed| {
        standard::run(seed, FaultPlan::default())
    });
    let mut wall_us = Vec::with_capacity(seeds as usize);
    let mut simulated_ms = 0u64;
    let mut failovers = Vec::new();
    let started = wall_clock();
    for seed in 0..seeds {
        let t = wall_clock();
        let outcome = run_seed(seed, 600, |seed| standard::run(seed, FaultPlan::default()));
        wall_us.push(t.elapsed().as_micros() as u64);
        simulated_ms += outcome.simulated_ms;
        failovers.push(
            outcome
                .failover_ms()
                .expect("the standard scenario fails over without random faults"),
        );
    }
    let total_s = started.elapsed().as_secs_f64();
    wall_us.sort_unstable();
    failovers.sort_unstable();
    let median_us = wall_us[wall_us.len() / 2];
    let p99_us = wall_us[wall_us.len() * 99 / 100];
    println!("standard failover scenario: 3 servers, 5 clients, T = 4 s, crash of the first client, +5 s");
    println!("seeds:                         {seeds}");
    println!(
        "median wall time per seed:     {:.3} ms (p99 {:.3} ms)",
        median_us as f64 / 1000.0,
        p99_us as f64 / 1000.0
    );
    println!(
        "seeds per second per core:     {:.0}",
        seeds as f64 / total_s
    );
    println!(
        "simulated s per wall s:        {:.0}",
        simulated_ms as f64 / 1000.0 / total_s
    );
    println!(
        "failover (crash to next first): {} to {} ms, median {} ms",
        failovers[0],
        failovers[failovers.len() - 1],
        failovers[failovers.len() / 2]
    );
}

/// The benchmark measures wall time, by design: this is the one wall-clock read under `sim/`,
/// and it happens outside every simulated run.
#[cfg(madsim)]
fn wall_clock() -> std::time::Instant {
    std::time::Instant::now()
}

#[cfg(not(madsim))]
fn main() {
    eprintln!("this benchmark runs in the simulated build: RUSTFLAGS=\"--cfg madsim\" cargo bench -p zkh-sim --bench failover");
}
