//! The simulator's commands: `run`, `sweep`, `replay` and `shrink`, their arguments (in both
//! builds, so that `--help` lists them) and what they share. They execute only in the
//! simulated build, which `scripts/zkharness` builds; a normal build says so and exits 64.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[cfg(not(madsim))]
use crate::report::exit;
use clap::Args;

#[cfg(madsim)]
mod bench;
#[cfg(madsim)]
mod bench_catalog;
#[cfg(madsim)]
mod bench_model;
#[cfg(madsim)]
mod differential;
#[cfg(not(madsim))]
mod guarantees_real;
mod merge;
#[cfg(not(madsim))]
mod real;
#[cfg(madsim)]
mod replay;
mod report;
#[cfg(madsim)]
mod run;
#[cfg(madsim)]
mod shrink;
mod summary;
#[cfg(madsim)]
mod sweep;

/// `zkharness bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Only the simulated side: no real ensemble.
    #[arg(long)]
    pub sim_only: bool,
    /// A few seeds and one real run: to prove it works end to end, not to measure.
    #[arg(long)]
    pub quick: bool,
    /// Simulated seeds (default 2,000; 50 with --quick).
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Real runs (default 5; 1 with --quick).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: Option<u32>,
    /// The catalogue to time: seeds per second of each correct scenario, and each positive
    /// control's time to its first violation.
    #[arg(long, value_name = "DIR", default_value = "scenarios/catalog")]
    pub catalog: PathBuf,
    /// Seeds of each correct catalogue scenario (default 200; 3 with --quick).
    #[arg(long)]
    pub catalog_seeds: Option<u64>,
    /// Write the figures as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `zkharness bench`, in the simulated build.
pub fn bench(args: BenchArgs) -> ExitCode {
    #[cfg(madsim)]
    return bench::bench(args);
    #[cfg(not(madsim))]
    {
        let _ = args;
        without_simulator("bench")
    }
}

/// `zkharness bench-real`.
#[derive(Args)]
pub struct BenchRealArgs {
    /// Failovers to time, each with five fresh participant processes.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Write the figures as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `zkharness differential`.
#[derive(Args)]
pub struct DifferentialArgs {
    /// The fault: the leader's or a follower's process killed and started again, or none.
    #[arg(long, default_value = "kill-leader", value_parser = zkh_model::probe::ProbeFault::parse)]
    pub fault: zkh_model::probe::ProbeFault,
    /// The simulated seeds, as START..END (END excluded).
    #[arg(long, default_value = "0..20", value_parser = parse_range)]
    pub seeds: Range<u64>,
    /// Runs on the real ensemble (each starts its own).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub real_runs: u32,
    /// Only the simulated side: no real ensemble.
    #[arg(long)]
    pub sim_only: bool,
    /// Write both sides' verdicts and profiles as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `zkharness differential`, in the simulated build.
pub fn differential(args: DifferentialArgs) -> ExitCode {
    #[cfg(madsim)]
    return differential::differential(args);
    #[cfg(not(madsim))]
    {
        let _ = args;
        without_simulator("differential")
    }
}

/// `zkharness guarantees-real`.
#[derive(Args)]
pub struct GuaranteesRealArgs {
    /// The fault: the leader's or a follower's process killed (SIGKILL) and started again,
    /// every server's data lost, client 0 cut off or its process stopped (SIGSTOP) past its
    /// session, or none.
    #[arg(long, default_value = "kill-leader", value_parser = zkh_model::probe::ProbeFault::parse)]
    pub fault: zkh_model::probe::ProbeFault,
    /// The seed of the clients' request streams.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write the findings, the profile and the history as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `zkharness latch-participant` (started by `bench-real`).
#[derive(Args)]
pub struct ParticipantArgs {
    /// The ensemble's connection string.
    #[arg(long)]
    pub connect: String,
    /// The latch's directory.
    #[arg(long)]
    pub dir: String,
    /// The participant's name.
    #[arg(long)]
    pub name: String,
}

/// `zkharness probe-client` (started by `guarantees-real --fault pause-client`).
#[derive(Args)]
pub struct ProbeClientArgs {
    /// The ensemble's connection string.
    #[arg(long)]
    pub connect: String,
    /// The probe client it is.
    #[arg(long)]
    pub client: u32,
    /// The seed of the probe's request streams.
    #[arg(long)]
    pub seed: u64,
    /// The run's time 0, in microseconds since the Unix epoch.
    #[arg(long)]
    pub start_unix_us: u64,
    /// How long it probes.
    #[arg(long)]
    pub run_ms: u64,
    /// Where it writes its history entries (JSON).
    #[arg(long)]
    pub out: PathBuf,
}

/// `zkharness probe-client`, in the normal build.
pub fn probe_client(args: ProbeClientArgs) -> ExitCode {
    #[cfg(not(madsim))]
    {
        let plan = crate::real::paused::ChildPlan {
            connect: &args.connect,
            client: args.client,
            seed: args.seed,
            start_unix_us: args.start_unix_us,
            run_ms: args.run_ms,
            out: &args.out,
        };
        match crate::real::paused::run_child(&plan) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("zkharness: {message}");
                ExitCode::from(crate::report::exit::CRASH)
            }
        }
    }
    #[cfg(madsim)]
    {
        let _ = args;
        without_sockets("probe-client")
    }
}

/// What a real ensemble needs and this machine lacks (Debian's `zookeeper` package, which brings
/// Java), with the one command that installs it; none when all is there.
fn real_ensemble_missing() -> Option<String> {
    let jar = std::path::Path::new("/usr/share/java/zookeeper.jar").exists();
    let java = (std::env::var_os("PATH").iter())
        .flat_map(std::env::split_paths)
        .any(|dir| dir.join("java").is_file());
    (!jar || !java).then(|| {
        "a real ensemble needs Debian's zookeeper package (with Java), which is not installed: \
         scripts/test-deps installs it (scripts/zkharness does so by itself for bench, \
         differential and guarantees-real), or pass --sim-only"
            .to_owned()
    })
}

/// Exit 64 with what is missing, where a real ensemble cannot start.
fn refuse_missing_real_ensemble() -> Option<ExitCode> {
    let missing = real_ensemble_missing()?;
    eprintln!("zkharness: {missing}");
    Some(ExitCode::from(crate::report::exit::BAD_INPUT))
}

/// Writes `value` as pretty JSON, one line at the end, to `path`.
fn write_json(path: &std::path::Path, value: &impl serde::Serialize) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).expect("a result serialises") + "\n";
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The `p`th percentile of `sorted` (nearest rank; none measured gives 0): the benchmark's
/// medians and p90s, on either side.
fn percentile(sorted: &[f64], p: usize) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[(p * sorted.len()).div_ceil(100).max(1) - 1]
}

/// `zkharness bench-real`: the real ensemble's failover, in the normal build.
pub fn bench_real(args: BenchRealArgs) -> ExitCode {
    #[cfg(not(madsim))]
    return real::bench_real(args);
    #[cfg(madsim)]
    {
        let _ = args;
        without_sockets("bench-real")
    }
}

/// `zkharness guarantees-real`: the guarantee probe on a real ensemble, in the normal build.
pub fn guarantees_real(args: GuaranteesRealArgs) -> ExitCode {
    #[cfg(not(madsim))]
    return guarantees_real::guarantees_real(args);
    #[cfg(madsim)]
    {
        let _ = args;
        without_sockets("guarantees-real")
    }
}

/// `zkharness latch-participant`, in the normal build.
pub fn latch_participant(args: ParticipantArgs) -> ExitCode {
    #[cfg(not(madsim))]
    return real::latch_participant(args);
    #[cfg(madsim)]
    {
        let _ = args;
        without_sockets("latch-participant")
    }
}

#[cfg(madsim)]
fn without_sockets(command: &str) -> ExitCode {
    eprintln!(
        "zkharness: `{command}` talks to a real ZooKeeper, which the simulated build cannot; \
         run the normal build: cargo run --release -p zkh-scenarios --bin zkharness -- {command}"
    );
    ExitCode::from(crate::report::exit::BAD_INPUT)
}

/// `zkharness run`.
#[derive(Args)]
pub struct RunArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// The seed: the run's only entropy (`ZKH_SEED` gives it too).
    #[arg(long, env = "ZKH_SEED")]
    pub seed: u64,
    /// Run this variant of the recipe instead of the one the file names (a report records it,
    /// and `replay` and `shrink` keep it).
    #[arg(long)]
    pub variant: Option<String>,
    /// Write the run's report (JSON: options, outcome, findings, history, repro command) into
    /// this folder, as `<scenario>-seed<N>.json`, and its timeline beside it (`.html`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `zkharness sweep`.
#[derive(Args)]
pub struct SweepArgs {
    /// Scenario files, or folders whose `*.toml` files are scenarios.
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
    /// The seeds, as START..END (END excluded). A positive control runs its
    /// `expect.within_seeds` seeds from START; a scenario that pins `seeds` runs those.
    #[arg(long, default_value = "0..100", value_parser = parse_range)]
    pub seeds: Range<u64>,
    /// Worker threads (default: every core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    /// Run every scenario with this variant of its recipe instead of the file's (as `run
    /// --variant`); a scenario whose recipe has no such variant is bad input.
    #[arg(long)]
    pub variant: Option<String>,
    /// Run only slice I of N (0-based, as I/N), for a CI matrix: seeds whose number is I
    /// modulo N, and the positive controls and pinned scenarios whose place in the list is.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,
    /// Copies of the summary elsewhere.
    #[command(flatten)]
    pub copies: SummaryCopies,
    /// Write each failure's report (JSON) and timeline (HTML), and the summary
    /// (`summary.json`, `summary.md`, `junit.xml`), into this folder.
    #[arg(long, value_name = "DIR", default_value = "zkharness-reports")]
    pub out: PathBuf,
    /// Stop at the first seed that does not end as its scenario expects.
    #[arg(long)]
    pub fail_fast: bool,
    /// Do not judge ZooKeeper's guarantees: only to measure what judging them costs, side by
    /// side with the same sweep judging them (docs/performance.md). Hidden: such a sweep
    /// cannot tell a fault of the simulated ensemble from a recipe's.
    #[arg(long, hide = true)]
    pub without_guarantees: bool,
}

/// `zkharness merge`.
#[derive(Args)]
pub struct MergeArgs {
    /// The shards' summaries (`summary.json` of each `sweep --shard I/N`), every slice once.
    #[arg(required = true)]
    pub summaries: Vec<PathBuf>,
    /// Write the merged summary (`summary.json`, `summary.md`, `junit.xml`) into this folder.
    #[arg(long, value_name = "DIR", default_value = "zkharness-reports")]
    pub out: PathBuf,
    /// Copies of the merged summary elsewhere.
    #[command(flatten)]
    pub copies: SummaryCopies,
}

/// Where a sweep's summary is copied beside `--out` (`sweep` and `merge`).
#[derive(Args)]
pub struct SummaryCopies {
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the summary as JUnit XML to this file (one test suite per scenario).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the summary as Markdown to this file (a CI job summary: `$GITHUB_STEP_SUMMARY`).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

pub use merge::merge;

/// `zkharness report`.
#[derive(Args)]
pub struct ReportArgs {
    /// A run report (`<scenario>-seed<N>.json`) or a sweep summary (`summary.json`).
    pub input: PathBuf,
    /// For a run report: write its HTML timeline here (default: beside it, `.html`).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// For a sweep summary: write it as JUnit XML here (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// For a sweep summary: write it as Markdown here (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

pub use report::report;

/// `zkharness replay`.
#[derive(Args)]
pub struct ReplayArgs {
    /// A run report (JSON), as `run --out` or `sweep` wrote it.
    pub report: PathBuf,
}

/// `zkharness shrink`.
#[derive(Args)]
pub struct ShrinkArgs {
    /// The report of a failing run (JSON).
    pub report: PathBuf,
    /// Where to write the minimal scenario (default: `scenarios/regressions/<scenario>-seed<N>.toml`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Give up after this many runs.
    #[arg(long, default_value_t = 3000)]
    pub max_runs: u32,
}

fn parse_range(text: &str) -> Result<Range<u64>, String> {
    let (start, end) = text
        .split_once("..")
        .ok_or_else(|| format!("{text:?} is not START..END"))?;
    let number = |part: &str| {
        part.parse::<u64>()
            .map_err(|_| format!("{part:?} is not a seed (a whole number)"))
    };
    let (start, end) = (number(start)?, number(end)?);
    if start >= end {
        return Err(format!("the range {text} is empty"));
    }
    if end - start > MAX_SEEDS {
        return Err(format!(
            "the range {text} holds {} seeds; one command runs at most {MAX_SEEDS} (about 14 \
             hours of the lock on 2 cores): split it into ranges, or across machines with \
             --shard i/n",
            end - start
        ));
    }
    Ok(start..end)
}

/// The most seeds one range may hold: a sweep keeps every seed's trace, 16 bytes each.
pub(crate) const MAX_SEEDS: u64 = 10_000_000;

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

// Used by the simulated commands only.
#[cfg_attr(not(madsim), allow(dead_code))]
/// How a user invokes the tool, for the commands it prints: `scripts/zkharness` sets
/// `ZKHARNESS_AS` to itself; an installed binary is `zkharness`; a user's own binary
/// (`custom_main!`) is the path it was started by.
pub fn invocation() -> String {
    std::env::var("ZKHARNESS_AS").unwrap_or_else(|_| {
        let started_as = std::env::args().next().unwrap_or_default();
        let name = Path::new(&started_as).file_name();
        match name.and_then(|name| name.to_str()) {
            Some("zkharness") | None => "zkharness".to_owned(),
            Some(_) => started_as,
        }
    })
}

#[cfg_attr(not(madsim), allow(dead_code))]
/// The command that reproduces `seed` of the scenario at `path`.
pub fn repro(path: &Path, seed: u64) -> String {
    format!("{} run {} --seed {seed}", invocation(), path.display())
}

#[cfg(not(madsim))]
fn without_simulator(command: &str) -> ExitCode {
    eprintln!(
        "zkharness: `{command}` runs on the simulated ensemble, which this build does not have; \
         use scripts/zkharness, which builds the simulated zkharness (see README)"
    );
    ExitCode::from(exit::BAD_INPUT)
}

/// `zkharness run`.
pub fn run(args: RunArgs) -> ExitCode {
    #[cfg(madsim)]
    return run::run(args);
    #[cfg(not(madsim))]
    {
        let _ = args;
        without_simulator("run")
    }
}

/// `zkharness sweep`.
pub fn sweep(args: SweepArgs) -> ExitCode {
    #[cfg(madsim)]
    return sweep::sweep(args);
    #[cfg(not(madsim))]
    {
        let _ = args;
        without_simulator("sweep")
    }
}

/// `zkharness replay`.
pub fn replay(args: ReplayArgs) -> ExitCode {
    #[cfg(madsim)]
    return replay::replay(args);
    #[cfg(not(madsim))]
    {
        let _ = args;
        without_simulator("replay")
    }
}

/// `zkharness shrink`.
pub fn shrink(args: ShrinkArgs) -> ExitCode {
    #[cfg(madsim)]
    return shrink::shrink(args);
    #[cfg(not(madsim))]
    {
        let _ = args;
        without_simulator("shrink")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Numbers at every limit a seed range meets.
    const LIMITS: &[&str] = &[
        "0",
        "1",
        "9999999",
        "10000000",
        "10000001",
        "4000000000",
        "9223372036854775807",
        "18446744073709551614",
        "18446744073709551615",
        "18446744073709551616",
        "-1",
        "",
        "x",
        " 1",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

        /// A range of numbers at their limits, or any text: refused with a message, or a
        /// non-empty range of at most MAX_SEEDS seeds; never a panic.
        #[test]
        fn a_seed_range_is_read_or_refused_never_a_panic(
            start in prop::sample::select(LIMITS),
            end in prop::sample::select(LIMITS),
            noise in ".{0,12}",
            raw in any::<bool>(),
        ) {
            let text = if raw { noise } else { format!("{start}..{end}") };
            match parse_range(&text) {
                Ok(range) => prop_assert!(
                    range.start < range.end && range.end - range.start <= MAX_SEEDS,
                    "{text}: {range:?}"
                ),
                Err(message) => prop_assert!(!message.is_empty()),
            }
        }

        /// A shard of any two numbers: a valid one or a message, never a panic.
        #[test]
        fn a_shard_is_read_or_refused_never_a_panic(
            index in prop::sample::select(LIMITS),
            count in prop::sample::select(LIMITS),
        ) {
            match parse_shard(&format!("{index}/{count}")) {
                Ok((i, n)) => prop_assert!(i < n),
                Err(message) => prop_assert!(!message.is_empty()),
            }
        }
    }
}
