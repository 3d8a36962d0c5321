//! Benchmark: what `zkharness sweep` costs against the loop of `sim/tests/recipes.rs`, on the
//! same work.
//!
//! For each recipe's harsh-random catalogue scenario, the same seeds run two ways, alternately
//! (A B A B A B), in one process run:
//!
//! - **A, the test's loop**: `run_seed` of the workload function with the test's fault plan,
//!   then `violation()`, as `sim/tests/recipes.rs` does for each seed;
//! - **B, the command**: `zkharness sweep FILE --seeds 0..N --jobs 1`, a child process: it
//!   parses the file, and for each seed judges the scenario's properties, keeps the findings,
//!   the trace hash and the simulated time, and tallies the sweep.
//!
//! Both use mimalloc, as `zkharness` does. Before timing, it checks that both give the same
//! trace hash on the first seeds (the same work), and it prints, per recipe, the median seconds
//! of each and the ratio B / A; and, to show where a difference comes from, A again with the
//! trace hash computed (A+h), which B needs for its report.
//! The figures are in `docs/performance.md`.
//!
//! `RUSTFLAGS="--cfg madsim" cargo bench -p zkh-scenarios --bench overhead`; `ZKH_BENCH_SEEDS`
//! sets the seeds per recipe (default 200), `ZKH_BENCH_ROUNDS` the rounds (default 3),
//! `ZKH_BENCH_RECIPES` which recipes (default `lock,latch,election,master,job`).

/// The allocator `zkharness` uses, so that the two ways differ only in what they do.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(madsim)]
fn main() {
    use std::path::Path;
    use std::process::Command;
    use std::time::Instant;

    use zkh_recipes::elastic_job::JobVariant;
    use zkh_recipes::election::ElectionVariant;
    use zkh_recipes::latch::LatchVariant;
    use zkh_recipes::lock::LockVariant;
    use zkh_recipes::master::MasterVariant;
    use zkh_scenarios::runner;
    use zkh_scenarios::scenario::{load, Resolved};
    use zkh_sim::run::run_seed;
    use zkh_sim::sharded::{sharded_job, ShardedConfig};
    use zkh_sim::standard::recipe_plan;
    use zkh_sim::workload::{self, LeaderRecipe, WorkloadConfig, WorkloadOutcome};

    /// The test loop's run of `recipe`, shaped as the catalogue's `scenario` (its client
    /// library's recovery, its knobs), under the test's fault plan.
    fn direct(recipe: &str, seed: u64, scenario: &Resolved) -> WorkloadOutcome {
        let config = WorkloadConfig {
            servers: scenario.servers,
            clients: scenario.clients,
            session_timeout_ms: scenario.session_timeout_ms,
            fault_phase_ms: scenario.fault_ms,
            liveness_ms: scenario.liveness_ms,
            leader_within_ms: scenario.leader_within_ms,
            critical_ms: scenario.critical_ms,
            initial_stock: scenario.initial_units,
            job_interval_ms: scenario.job_interval_ms,
            reconcile_interval_ms: scenario.reconcile_interval_ms,
            local_expiry: scenario.local_expiry,
            container_check_interval_ms: scenario.container_check_interval_ms,
            ..WorkloadConfig::default()
        };
        let sharded = ShardedConfig {
            servers: scenario.servers,
            clients: scenario.clients,
            session_timeout_ms: scenario.session_timeout_ms,
            items: scenario.items,
            cycle_interval_ms: scenario.cycle_interval_ms,
            fault_phase_ms: scenario.fault_ms,
            liveness_ms: scenario.liveness_ms,
            leader_within_ms: scenario.leader_within_ms,
            settle_ms: scenario.settle_ms,
            judged_from_ms: scenario.judged_from_ms,
            local_expiry: scenario.local_expiry,
            container_check_interval_ms: scenario.container_check_interval_ms,
        };
        match recipe {
            "lock" => run_seed(seed, 600, move |s| {
                workload::stock(s, LockVariant::Correct, config, recipe_plan())
            }),
            "latch" => run_seed(seed, 600, move |s| {
                workload::job(s, LatchVariant::Correct, config, recipe_plan())
            }),
            "election" => run_seed(seed, 600, move |s| {
                let recipe = LeaderRecipe::Election(ElectionVariant::Correct);
                workload::leader_job(s, recipe, config, recipe_plan())
            }),
            "master" => run_seed(seed, 600, move |s| {
                let recipe = LeaderRecipe::Master(MasterVariant::Correct);
                workload::leader_job(s, recipe, config, recipe_plan())
            }),
            "job" => run_seed(seed, 600, move |s| {
                sharded_job(s, JobVariant::Correct, sharded, recipe_plan())
            }),
            other => panic!("no direct loop for {other}"),
        }
    }

    fn median(mut values: Vec<f64>) -> f64 {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }

    let seeds: u64 = std::env::var("ZKH_BENCH_SEEDS")
        .map_or(200, |s| s.parse().expect("ZKH_BENCH_SEEDS is a number"));
    let rounds: usize = std::env::var("ZKH_BENCH_ROUNDS")
        .map_or(3, |s| s.parse().expect("ZKH_BENCH_ROUNDS is a number"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    println!(
        "zkharness sweep (B) against the test loop (A): {seeds} seeds per recipe, {rounds} rounds, A B alternating, one core"
    );
    println!(
        "{:<10} {:>10} {:>10} {:>10} {:>8} {:>12}",
        "recipe", "A median s", "A+h", "B median s", "B / A", "B seeds/s"
    );
    let recipes = std::env::var("ZKH_BENCH_RECIPES")
        .unwrap_or_else(|_| "lock,latch,election,master,job".to_owned());
    for recipe in recipes.split(',') {
        let file = root.join(format!("catalog/{recipe}-harsh-random.toml"));
        let scenario = load(&file).expect("the catalogue file loads").resolved;
        for seed in 0..3 {
            let a = direct(recipe, seed, &scenario).history.stable_hash();
            let b = runner::run(&scenario, seed).trace;
            assert_eq!(
                a, b,
                "{recipe} seed {seed}: the test loop and the scenario differ"
            );
        }
        let (mut a_s, mut ah_s, mut b_s) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let began = Instant::now();
            for seed in 0..seeds {
                assert!(
                    direct(recipe, seed, &scenario).violation().is_none(),
                    "{recipe} seed {seed}"
                );
            }
            a_s.push(began.elapsed().as_secs_f64());
            let began = Instant::now();
            for seed in 0..seeds {
                let outcome = direct(recipe, seed, &scenario);
                assert!(outcome.violation().is_none(), "{recipe} seed {seed}");
                std::hint::black_box(outcome.history.stable_hash());
            }
            ah_s.push(began.elapsed().as_secs_f64());
            let began = Instant::now();
            let status = Command::new(env!("CARGO_BIN_EXE_zkharness"))
                .args(["sweep", file.to_str().expect("utf-8"), "--jobs", "1"])
                .arg("--seeds")
                .arg(format!("0..{seeds}"))
                .arg("--out")
                .arg(std::env::temp_dir().join("zkh-bench-overhead"))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .expect("zkharness runs");
            b_s.push(began.elapsed().as_secs_f64());
            assert!(status.success(), "{recipe}: the sweep failed");
        }
        let (a, ah, b) = (median(a_s), median(ah_s), median(b_s));
        println!(
            "{recipe:<10} {a:>10.3} {ah:>10.3} {b:>10.3} {:>8.3} {:>12.0}",
            b / a,
            seeds as f64 / b
        );
    }
}

#[cfg(not(madsim))]
fn main() {
    eprintln!("the overhead benchmark needs the simulated build: RUSTFLAGS=\"--cfg madsim\"");
}
