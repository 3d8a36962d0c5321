//! `zkharness`: the command line of the ZooKeeper recipe harness.
//!
//! - `zkharness run`, `sweep`, `replay` and `shrink` run scenario files on the simulated
//!   ensemble (`commands/`); `zkharness report` renders a saved report or summary again
//!   (HTML timeline, JUnit XML, Markdown);
//! - `zkharness check <recipe>` explores every state of a recipe's model (depth first, one
//!   thread) within a fault budget, and prints the shortest counterexample (shortened breadth
//!   first; one too deep for that is shrunk instead, and marked as maybe not the shortest) or
//!   "no violation";
//!   `--json` prints one JSON object for CI; `--export FILE` writes a counterexample as a
//!   scenario the simulator replays. `--walks N --seed S` takes seeded random walks through the
//!   same states instead, for spaces the search cannot finish (a pass proves nothing there).
//! - `zkharness explore <recipe>` serves stateright's Explorer on 127.0.0.1 to walk the states
//!   by hand.
//!
//! This file holds the commands and their dispatch; the model checker's options, search and
//! reports are `crate::checker`'s, and the recipes are looked up in `crate::registry`.
//!
//! Exit status: one table for every command (`crate::report::exit`).

use std::process::ExitCode;

use crate::checker::{budgets, parse, CheckArgs, ExploreArgs, BAD_INPUT, ONE_SEARCH};
use crate::report::exit;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "zkharness",
    version,
    about = "Break and prove ZooKeeper recipes: seeded fault scenarios on a simulated ensemble, \
             and exhaustive model checking of the recipes' own state machines",
    after_help = exit::TABLE
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one seed of a scenario file on the simulated ensemble, and judge its properties.
    #[command(after_help = exit::TABLE)]
    Run(commands::RunArgs),
    /// Run many seeds of many scenario files on every core; report failures with the command
    /// that reproduces each.
    #[command(after_help = exit::TABLE)]
    Sweep(commands::SweepArgs),
    /// Merge the summaries of a sweep's shards (`sweep --shard I/N`, on several machines) into
    /// the summary, verdicts, exit code and combined trace of the unsharded sweep.
    #[command(after_help = exit::TABLE)]
    Merge(commands::MergeArgs),
    /// Run a report's seed again and compare the histories event by event.
    #[command(after_help = exit::TABLE)]
    Replay(commands::ReplayArgs),
    /// Minimise a failing run's faults, keeping its violation, into a regression scenario.
    #[command(after_help = exit::TABLE)]
    Shrink(commands::ShrinkArgs),
    /// Render a saved run report as its HTML timeline, or a sweep summary as JUnit XML or
    /// Markdown.
    #[command(after_help = exit::TABLE)]
    Report(commands::ReportArgs),
    /// Explore every state of a recipe's model within a fault budget (depth first, one thread;
    /// a counterexample is then shortened breadth first, or shrunk where it is too deep for
    /// that), or, with `--walks`, take seeded random walks through its states.
    #[command(after_help = exit::TABLE)]
    Check(CheckArgs),
    /// Serve stateright's Explorer for a recipe's model on 127.0.0.1.
    #[command(after_help = exit::TABLE)]
    Explore(ExploreArgs),
    /// The simulator's speed beside a real ensemble's: the standard crash failover of five
    /// LeaderLatch participants, simulated seed after seed and (unless --sim-only) on a real
    /// three-server ensemble (bench-real), with the ratio of the medians.
    #[command(after_help = exit::TABLE)]
    Bench(commands::BenchArgs),
    /// Time the standard crash failover on a real three-server ZooKeeper ensemble that it
    /// starts on 127.0.0.1 and stops (Debian's zookeeper package): five LeaderLatch processes,
    /// 4 s sessions, the leader's process killed with SIGKILL (normal build only).
    #[command(after_help = exit::TABLE)]
    BenchReal(commands::BenchRealArgs),
    /// The simulated ensemble held against a real one: the guarantee probe under one fault,
    /// simulated seed after seed and run on a real three-server ensemble (guarantees-real),
    /// with each guarantee's verdicts and what the clients saw side by side.
    #[command(after_help = exit::TABLE)]
    Differential(commands::DifferentialArgs),
    /// ZooKeeper's guarantees on a real three-server ensemble that it starts on 127.0.0.1 and
    /// stops: three clients run the guarantee probe under a fault, and their history is judged
    /// by the checker every simulated run gets (normal build only).
    #[command(after_help = exit::TABLE)]
    GuaranteesReal(commands::GuaranteesRealArgs),
    /// One LeaderLatch participant on a real ensemble, as `bench-real` starts it.
    #[command(hide = true)]
    LatchParticipant(commands::ParticipantArgs),
    /// One guarantee-probe client in a process of its own, as `guarantees-real --fault
    /// pause-client` starts it (and stops it with SIGSTOP).
    #[command(hide = true)]
    ProbeClient(commands::ProbeClientArgs),
}

mod commands;

/// Runs the command line: `zkharness`'s `main`, and a user's own binary's (`custom_main!`).
pub fn main() -> ExitCode {
    let parsed = crate::checker::with_registered_recipes(Cli::command())
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches).map(|cli| (cli, matches)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(error) => {
            // `--help` and `--version` are not errors; anything else clap refuses is bad input
            // (exit 64), not a check that gave up (exit 2, clap's own code).
            let shown = error.print();
            return match error.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                    if shown.is_ok() =>
                {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(BAD_INPUT),
            };
        }
    };
    if let Err(message) = crate::logging::init() {
        eprintln!("zkharness: {message}");
        return ExitCode::from(BAD_INPUT);
    }
    let outcome = match cli.command {
        Command::Run(args) => Ok(commands::run(args)),
        Command::Sweep(args) => Ok(commands::sweep(args)),
        Command::Merge(args) => Ok(commands::merge(args)),
        Command::Replay(args) => Ok(commands::replay(args)),
        Command::Shrink(args) => Ok(commands::shrink(args)),
        Command::Report(args) => Ok(commands::report(args)),
        Command::Check(args) => {
            let given = matches
                .subcommand_matches("check")
                .expect("the check subcommand");
            let one_search = ONE_SEARCH
                .iter()
                .any(|id| given.value_source(id) == Some(ValueSource::CommandLine));
            match (&args.budgets, one_search) {
                (Some(spec), _) => Ok(budgets::run_budgets(&args, spec)),
                (None, false) => Ok(budgets::run_budgets(&args, budgets::STANDARD)),
                (None, true) => {
                    parse(&args.model).map(|recipe| recipe.checker().check(&recipe, &args))
                }
            }
        }
        Command::Explore(args) => {
            parse(&args.model).map(|recipe| recipe.checker().explore(&recipe, args.port))
        }
        Command::Bench(args) => Ok(commands::bench(args)),
        Command::BenchReal(args) => Ok(commands::bench_real(args)),
        Command::Differential(args) => Ok(commands::differential(args)),
        Command::GuaranteesReal(args) => Ok(commands::guarantees_real(args)),
        Command::LatchParticipant(args) => Ok(commands::latch_participant(args)),
        Command::ProbeClient(args) => Ok(commands::probe_client(args)),
    };
    report_peak_memory();
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("zkharness: {message}");
            ExitCode::from(BAD_INPUT)
        }
    }
}

/// With `ZKH_PEAK_RSS_FILE` set (by `zkharness bench`, which runs sweeps and checks as child
/// processes), writes this process's peak resident memory in KiB there as it ends: `VmHWM`,
/// the high-water mark of `/proc/self/status`.
fn report_peak_memory() {
    let Some(path) = std::env::var_os("ZKH_PEAK_RSS_FILE") else {
        return;
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .and_then(|line| line.split_whitespace().nth(1));
    if let Some(kib) = peak {
        let _ = std::fs::write(path, format!("{kib}\n"));
    }
}
