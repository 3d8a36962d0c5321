//! `zkharness bench`: the simulator's speed beside a real ensemble's, on the same recipe code.
//!
//! The standard crash failover (`zkh_sim::latch_failover`: 3 servers, five LeaderLatch
//! participants, 4 s sessions, the leader's process crashed, until another leads) runs for N
//! seeds on one thread, each timed on the wall clock; then, unless `--sim-only`, the normal
//! build's `zkharness bench-real` runs the same failover K times on a real three-server
//! ensemble it starts and stops. The table gives the median and p90 wall time of a run on each
//! side and the ratio of the medians; `--json` writes them for CI to track.
//!
//! Then the catalogue (`--catalog`, default `scenarios/catalog`; `bench_catalog.rs`): seeds per
//! second of every correct scenario on one thread, and the time and seeds each positive
//! control (a known-bad variant) needs to its first violation, the median of five sweeps from
//! different starting seeds.
//!
//! Last the model checker and memory (`bench_model.rs`): each known-bad variant's catching
//! check, its states and seconds to the counterexample; the standard checks' unique states a
//! second; the peak memory of a 10,000-seed sweep and of the largest standard check. `--quick`
//! runs fewer of each (and a 200-seed sweep), to prove the command works, not to measure.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

use crate::report::exit;
use serde::Serialize;
use zkh_sim::latch_failover;
use zkh_sim::run::try_run_seed;

use super::{percentile, BenchArgs};

/// What `bench --json` writes.
#[derive(Serialize)]
struct Bench {
    format: &'static str,
    seeds: u64,
    sim_median_ms: f64,
    sim_p90_ms: f64,
    sim_failover_median_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    real: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    real_median_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sim_vs_real_ratio: Option<f64>,
    scenarios: Vec<super::bench_catalog::Speed>,
    recipes: Vec<super::bench_catalog::RecipeSpeed>,
    variants: Vec<super::bench_catalog::ToBug>,
    checks_to_bug: Vec<super::bench_model::CheckToBug>,
    standard_checks: Vec<super::bench_model::StandardCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_rss_mib: Option<super::bench_model::PeakRss>,
}

pub(super) fn bench(args: BenchArgs) -> ExitCode {
    let seeds = args.seeds.unwrap_or(if args.quick { 50 } else { 2000 });
    let runs = args.runs.unwrap_or(if args.quick { 1 } else { 5 });
    if !args.sim_only {
        if let Some(refused) = super::refuse_missing_real_ensemble() {
            return refused;
        }
    }
    eprintln!("bench: the simulated failover, {seeds} seeds on one thread");
    // The first runtime pays for lazy statics: not a seed's cost.
    if let Err(message) = try_run_seed(u64::MAX, 600, latch_failover::run) {
        return fail(&format!("the warm-up run crashed: {message}"));
    }
    let mut wall_ms = Vec::with_capacity(seeds as usize);
    let mut failovers = Vec::with_capacity(seeds as usize);
    for seed in 0..seeds {
        let began = Instant::now();
        let outcome = match try_run_seed(seed, 600, latch_failover::run) {
            Ok(outcome) => outcome,
            Err(message) => return fail(&format!("seed {seed} crashed: {message}")),
        };
        wall_ms.push(began.elapsed().as_secs_f64() * 1000.0);
        match outcome.failover_ms {
            Some(ms) => failovers.push(ms),
            None => {
                return fail(&format!(
                    "seed {seed}: no participant led within {} ms of the crash",
                    latch_failover::FAILOVER_BOUND_MS
                ))
            }
        }
    }
    wall_ms.sort_by(f64::total_cmp);
    failovers.sort_unstable();
    let sim_median_ms = percentile(&wall_ms, 50);
    let mut bench = Bench {
        format: "zkharness-bench/1",
        seeds,
        sim_median_ms,
        sim_p90_ms: percentile(&wall_ms, 90),
        sim_failover_median_ms: failovers[failovers.len() / 2],
        real: None,
        real_median_ms: None,
        sim_vs_real_ratio: None,
        scenarios: Vec::new(),
        recipes: Vec::new(),
        variants: Vec::new(),
        checks_to_bug: Vec::new(),
        standard_checks: Vec::new(),
        peak_rss_mib: None,
    };
    let catalog_seeds = args
        .catalog_seeds
        .unwrap_or(if args.quick { 3 } else { 200 });
    eprintln!(
        "bench: the catalogue {}, {catalog_seeds} seeds of each correct scenario and each control to its first bug",
        args.catalog.display()
    );
    match super::bench_catalog::measure(&args.catalog, catalog_seeds) {
        Ok((speeds, to_bug)) => {
            bench.recipes = super::bench_catalog::by_recipe(&speeds);
            bench.scenarios = speeds;
            bench.variants = to_bug;
        }
        Err(message) => return fail(&message),
    }
    if let Err(message) = model_and_memory(&mut bench, &args) {
        return fail(&message);
    }
    if !args.sim_only {
        let real = match real_side(runs) {
            Ok(real) => real,
            Err(message) => return fail(&message),
        };
        let median = real["real_median_ms"].as_f64();
        bench.real_median_ms = median;
        bench.sim_vs_real_ratio = median.map(|real| real / sim_median_ms);
        bench.real = Some(real);
    }
    print_table(&bench);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&bench).expect("figures serialise") + "\n";
        if let Err(e) = std::fs::write(path, text) {
            return fail(&format!("cannot write {}: {e}", path.display()));
        }
    }
    ExitCode::SUCCESS
}

/// The model checker's figures and the peak memories, each from a child `zkharness`.
fn model_and_memory(bench: &mut Bench, args: &BenchArgs) -> Result<(), String> {
    use super::bench_model::{checks_to_bug, standard_checks, sweep_peak_mib, PeakRss};
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    eprintln!("bench: every known-bad variant's check, the standard checks, peak memory");
    bench.checks_to_bug = checks_to_bug(&exe, args.quick)?;
    let (checks, largest_mib) = standard_checks(&exe, args.quick)?;
    let largest_check = checks.last().map_or("", |c| c.recipe);
    bench.standard_checks = checks;
    let sweep_seeds = if args.quick { 200 } else { 10_000 };
    let sweep_mib = sweep_peak_mib(&exe, &args.catalog, sweep_seeds)?;
    bench.peak_rss_mib = Some(PeakRss {
        sweep_seeds,
        sweep_mib,
        largest_check,
        largest_check_mib: largest_mib,
    });
    Ok(())
}

/// Runs the normal build's `zkharness bench-real` and reads its JSON.
fn real_side(runs: u32) -> Result<serde_json::Value, String> {
    let exe = real_zkharness()?;
    let json = std::env::temp_dir().join(format!("zkh-bench-real-{}.json", std::process::id()));
    eprintln!("bench: the real failover, {runs} runs ({})", exe.display());
    let status = Command::new(&exe)
        .args(["bench-real", "--runs", &runs.to_string(), "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !status.success() {
        return Err(format!("{} bench-real failed ({status})", exe.display()));
    }
    let text = std::fs::read_to_string(&json).map_err(|e| format!("{}: {e}", json.display()))?;
    let _ = std::fs::remove_file(&json);
    serde_json::from_str(&text).map_err(|e| format!("bench-real's JSON: {e}"))
}

/// The normal build's zkharness: `ZKHARNESS_REAL` (which scripts/zkharness sets), else the
/// release binary beside the target folder's `sim/`.
pub(super) fn real_zkharness() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("ZKHARNESS_REAL") {
        return Ok(PathBuf::from(path));
    }
    let own = std::env::current_exe().map_err(|e| e.to_string())?;
    let release = own
        .parent()
        .and_then(|sim| sim.parent())
        .map(|target| target.join("release").join("zkharness"))
        .filter(|path| path.exists());
    release.ok_or_else(|| {
        "the real side needs the normal build's zkharness: run bench through scripts/zkharness, \
         or build it (cargo build --release -p zkh-scenarios --bin zkharness), or pass --sim-only"
            .to_owned()
    })
}

fn print_table(bench: &Bench) {
    println!("standard crash failover: 3 servers, 5 LeaderLatch participants, 4 s sessions, leader crashed");
    println!("| side | runs | median wall time per run | p90 |");
    println!("| --- | ---: | ---: | ---: |");
    println!(
        "| simulated (one thread) | {} | {:.3} ms | {:.3} ms |",
        bench.seeds, bench.sim_median_ms, bench.sim_p90_ms
    );
    if let Some(real) = &bench.real {
        println!(
            "| real 3-server ensemble | {} | {:.0} ms | {:.0} ms |",
            real["runs_ms"].as_array().map_or(0, Vec::len),
            real["real_median_ms"].as_f64().unwrap_or(f64::NAN),
            real["real_p90_ms"].as_f64().unwrap_or(f64::NAN),
        );
    }
    println!(
        "simulated failover after the crash: median {} ms of simulated time",
        bench.sim_failover_median_ms
    );
    table(
        "| scenario | seeds | seeds/s on one thread | messages/s | history events/s | messages a seed | events a seed |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        bench.scenarios.iter().map(|speed| {
            format!(
                "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
                speed.scenario,
                speed.seeds,
                speed.seeds_per_sec,
                speed.messages_per_sec,
                speed.history_events_per_sec,
                speed.messages_per_seed,
                speed.history_events_per_seed
            )
        }),
    );
    table(
        "| recipe (its catalogue scenarios) | seeds | seeds/s on one thread | delivered messages/s | history events/s |\n\
         | --- | ---: | ---: | ---: | ---: |",
        bench.recipes.iter().map(|recipe| {
                format!(
                    "| {} | {} | {:.0} | {:.0} | {:.0} |",
                    recipe.recipe,
                    recipe.seeds,
                    recipe.seeds_per_sec,
                    recipe.messages_per_sec,
                    recipe.history_events_per_sec
                )
            }),
    );
    table(
        "| known-bad variant (control) | property | time to bug, s | seeds to bug |\n\
         | --- | --- | ---: | ---: |",
        bench.variants.iter().map(|bug| {
            format!(
                "| {} | {} | {:.3} | {} |",
                bug.scenario, bug.property, bug.time_to_bug_s, bug.seeds_to_bug
            )
        }),
    );
    table(
        "| known-bad variant: the model checker | property | states | seconds |\n\
         | --- | --- | ---: | ---: |",
        bench.checks_to_bug.iter().map(|check| {
            format!(
                "| {} {} | {} | {} | {:.2} |",
                check.recipe, check.variant, check.property, check.states, check.seconds
            )
        }),
    );
    table(
        "| standard check | unique states | seconds | unique states/s |\n| --- | ---: | ---: | ---: |",
        bench.standard_checks.iter().map(|check| {
            format!(
                "| {} | {} | {:.2} | {:.0} |",
                check.recipe, check.unique_states, check.seconds, check.unique_states_per_sec
            )
        }),
    );
    if let Some(peak) = &bench.peak_rss_mib {
        println!();
        println!(
            "peak resident memory: a {}-seed sweep {:.1} MiB; the {} standard check {:.1} MiB",
            peak.sweep_seeds, peak.sweep_mib, peak.largest_check, peak.largest_check_mib
        );
    }
    if let (Some(ratio), Some(real)) = (bench.sim_vs_real_ratio, &bench.real) {
        println!(
            "the simulator is {ratio:.0} times faster than the real ensemble (medians), on {}",
            real["machine"].as_str().unwrap_or("this machine")
        );
    }
}

/// Prints a Markdown table after a blank line: its header (with the separator row), then rows.
fn table(header: &str, rows: impl Iterator<Item = String>) {
    println!();
    println!("{header}");
    for row in rows {
        println!("{row}");
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("zkharness: {message}");
    ExitCode::from(exit::CRASH)
}
