//! Sweeps seeds of the standard failover scenario with random faults, on all cores.
//!
//! ```text
//! RUSTFLAGS="--cfg madsim" cargo run --release -p zkh-sim --example sweep -- --seeds 0..1000
//! ```
//!
//! Every seed runs on a fresh thread with its own runtime; the same seed always gives the same
//! run. A seed whose ensemble did not fail over within the bound is a liveness failure: the
//! sweep prints the command that replays it and exits with 2. `--json` prints one JSON object
//! for CI instead of the text summary.

#[cfg(madsim)]
mod sweep {
    use std::fmt::Write as _;
    use std::io::Write as _;
    use std::ops::Range;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use clap::Parser;
    use indicatif::{ProgressBar, ProgressStyle};
    use zkh_sim::run::run_seed;
    use zkh_sim::standard;

    /// Sweep seeds of the standard failover scenario with random faults.
    #[derive(Parser, Debug)]
    #[command(name = "sweep")]
    struct Args {
        /// Seeds to run, as START..END (END excluded).
        #[arg(long, default_value = "0..1000", value_parser = parse_range)]
        seeds: Range<u64>,
        /// Worker threads (default: every core).
        #[arg(long)]
        threads: Option<usize>,
        /// Print one JSON object instead of the text summary.
        #[arg(long)]
        json: bool,
        /// Run only shard I of N (as I/N, 0-based), for spreading a sweep over CI jobs.
        #[arg(long, value_parser = parse_shard)]
        shard: Option<(u64, u64)>,
    }

    fn parse_range(text: &str) -> Result<Range<u64>, String> {
        let (start, end) = text
            .split_once("..")
            .ok_or_else(|| format!("{text:?} is not START..END"))?;
        let start: u64 = start
            .parse()
            .map_err(|_| format!("{start:?} is not a seed"))?;
        let end: u64 = end.parse().map_err(|_| format!("{end:?} is not a seed"))?;
        if start >= end {
            return Err(format!("the range {text} is empty"));
        }
        Ok(start..end)
    }

    fn parse_shard(text: &str) -> Result<(u64, u64), String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not I/N"))?;
        let index: u64 = index
            .parse()
            .map_err(|_| format!("{index:?} is not a shard index"))?;
        let count: u64 = count
            .parse()
            .map_err(|_| format!("{count:?} is not a shard count"))?;
        if count == 0 || index >= count {
            return Err(format!(
                "shard {index}/{count} does not exist (0-based: 0/N to N-1/N)"
            ));
        }
        Ok((index, count))
    }

    pub fn main() -> std::process::ExitCode {
        // Bad input is exit code 64 (EX_USAGE); clap's own 2 would read as a liveness failure.
        let args = match Args::try_parse() {
            Ok(args) => args,
            Err(error) => {
                let _ = error.print();
                return std::process::ExitCode::from(if error.use_stderr() { 64 } else { 0 });
            }
        };
        let seeds: Vec<u64> = args
            .seeds
            .clone()
            .filter(|seed| {
                args.shard
                    .is_none_or(|(index, count)| seed % count == index)
            })
            .collect();
        let threads = args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        eprintln!(
            "sweep: seeds {:?}{}, {} threads",
            args.seeds,
            args.shard
                .map_or(String::new(), |(i, n)| format!(" shard {i}/{n}")),
            threads
        );
        let bar = ProgressBar::new(seeds.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} seeds, {per_sec}, eta {eta}")
                .expect("a valid template"),
        );
        let next = Arc::new(AtomicU64::new(0));
        let results = Arc::new(Mutex::new(Vec::new()));
        let seeds = Arc::new(seeds);
        // Wall time for the speed line only, read outside every simulated run: the runs' results
        // depend on their seeds alone.
        let started = std::time::Instant::now();
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (next, results, seeds, bar) = (
                    Arc::clone(&next),
                    Arc::clone(&results),
                    Arc::clone(&seeds),
                    bar.clone(),
                );
                std::thread::spawn(move || loop {
                    let index = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some(&seed) = seeds.get(index) else {
                        return;
                    };
                    let outcome = run_seed(seed, 600, |seed| {
                        standard::run(seed, standard::sweep_plan())
                    });
                    results.lock().expect("results mutex").push((seed, outcome));
                    bar.inc(1);
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("a sweep worker panicked");
        }
        bar.finish_and_clear();
        let wall_s = started.elapsed().as_secs_f64();
        let mut results = Arc::try_unwrap(results)
            .expect("workers are done")
            .into_inner()
            .expect("results mutex");
        results.sort_by_key(|(seed, _)| *seed);
        let failed: Vec<u64> = results
            .iter()
            .filter(|(_, o)| o.failover_ms.is_none())
            .map(|(seed, _)| *seed)
            .collect();
        let mut failovers: Vec<u64> = results.iter().filter_map(|(_, o)| o.failover_ms).collect();
        failovers.sort_unstable();
        let median = failovers.get(failovers.len() / 2).copied();
        let simulated_s: f64 = results
            .iter()
            .map(|(_, o)| o.simulated_ms as f64 / 1000.0)
            .sum();
        let combined = results.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, (_, o)| {
            (h ^ o.history_hash).wrapping_mul(0x0100_0000_01b3)
        });
        let repro = |seed: u64| {
            format!("RUSTFLAGS=\"--cfg madsim\" cargo run --release -p zkh-sim --example sweep -- --seeds {seed}..{}", seed + 1)
        };
        // The whole report is written at once: a reader that went away (`| head`) ends the
        // sweep quietly with the shell's code for a broken pipe, not a panic.
        let mut report = String::new();
        if args.json {
            let summary = serde_json::json!({
                "scenario": "standard-failover",
                "plan": "sweep",
                "seeds": results.len(),
                "failed_over": failovers.len(),
                "liveness_failures": failed.iter().map(|s| serde_json::json!({"seed": s, "repro": repro(*s)})).collect::<Vec<_>>(),
                "failover_ms": {"min": failovers.first(), "median": median, "max": failovers.last()},
                "combined_history_hash": format!("{combined:016x}"),
                "wall_s": wall_s,
                "seeds_per_s": results.len() as f64 / wall_s,
                "simulated_s_per_wall_s": simulated_s / wall_s,
            });
            writeln!(report, "{summary}").expect("a String takes any text");
        } else {
            writeln!(report, "standard failover scenario with random faults (drops, pauses, partitions, leader crashes)").expect("a String takes any text");
            writeln!(report, "seeds run:            {}", results.len())
                .expect("a String takes any text");
            writeln!(report, "failed over:          {}", failovers.len())
                .expect("a String takes any text");
            if let (Some(min), Some(median), Some(max)) =
                (failovers.first(), median, failovers.last())
            {
                writeln!(
                    report,
                    "failover time:        {min} to {max} ms, median {median} ms"
                )
                .expect("a String takes any text");
            }
            writeln!(
                report,
                "combined history hash {combined:016x} (the same seeds always give the same hash)"
            )
            .expect("a String takes any text");
            writeln!(
                report,
                "speed:                {:.0} seeds/s, {:.0} simulated s per wall s",
                results.len() as f64 / wall_s,
                simulated_s / wall_s
            )
            .expect("a String takes any text");
            for seed in &failed {
                writeln!(
                    report,
                    "LIVENESS FAILURE: seed {seed} did not fail over; replay: {}",
                    repro(*seed)
                )
                .expect("a String takes any text");
            }
        }
        if let Err(error) = std::io::stdout().lock().write_all(report.as_bytes()) {
            if error.kind() == std::io::ErrorKind::BrokenPipe {
                return std::process::ExitCode::from(141);
            }
            eprintln!("sweep: cannot write to stdout: {error}");
            return std::process::ExitCode::from(64);
        }
        if failed.is_empty() {
            std::process::ExitCode::SUCCESS
        } else {
            std::process::ExitCode::from(2)
        }
    }
}

#[cfg(madsim)]
fn main() -> std::process::ExitCode {
    sweep::main()
}

#[cfg(not(madsim))]
fn main() {
    eprintln!("the sweep runs in the simulated build: RUSTFLAGS=\"--cfg madsim\" cargo run --release -p zkh-sim --example sweep");
    std::process::exit(64);
}
