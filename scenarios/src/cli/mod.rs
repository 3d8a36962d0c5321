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
//! This file holds the arguments and their validation; `check.rs` runs the search and reports
//! it, `walks.rs` the random walks.
//!
//! Exit status: one table for every command (`crate::report::exit`).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::report::exit;
use crate::Recipe;
use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use stateright::Model;
use zkh_model::check::{Acting, FaultBudget, Limits, RecipeModel, Searcher, Workload, COMPACT_MIB};

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

#[derive(Args, Clone)]
struct ModelArgs {
    /// The recipe: `lock`, `latch`, `election`, `master` or `job` (the sharded job, checked with
    /// `--clients 2`; see README).
    recipe: String,
    /// The recipe's variant: `correct`, or a known-bad one (lock: `herd`, `unprotected`, `unguaranteed-delete`;
    /// latch: `trust-predecessor`, `no-owner-check`, `keep-on-suspend`, `requeue-when-behind`, `unprotected`; election: `check-then-write`, `forgetful-close`; master:
    /// `no-watch`; job: `one-item-per-idle`, `trust-owners`, `no-cycle-claim`, `uncovered-reshard`,
    /// `no-reregister`, `run-ahead`).
    #[arg(long, default_value = "correct")]
    variant: String,
    /// Client processes.
    #[arg(long, default_value_t = 3)]
    clients: usize,
    /// The fault budget: `NAME=COUNT,...` with `drop-request`, `drop-reply`, `expire`,
    /// `client-expire`, `leader-change`, `crash`; or `none`. Without it, `check` checks the
    /// standard budgets (`drop-reply=1,expire=1`, then each kind alone; see `--budgets`), and a
    /// check given an option of one search (`--walks`, `--preemptions`, `--reads-first`,
    /// `--compact-mib`, `--threads`, `--searcher`, `--max-states`, `--progress-secs`) or
    /// `explore` takes `drop-reply=1,expire=1`.
    #[arg(long)]
    faults: Option<String>,
    /// When applications act and what the resource accepts: `caught-up` (only with nothing in
    /// flight to them, on a resource that accepts everything: judges the recipe), `fenced`
    /// (whenever they believe, on a resource that refuses older tokens), `unfenced` (whenever
    /// they believe, on a resource that accepts everything).
    #[arg(long, default_value = "caught-up")]
    acting: String,
    /// The sharded job's items per cycle (job only; default 2).
    #[arg(long)]
    items: Option<u32>,
    /// The cycles each job instance's cron triggers (job only; default 1). "No shard lost" is
    /// judged on the second and later cycles, which fire at a settled moment (nothing in
    /// flight, every instance's listeners at rest).
    #[arg(long)]
    cycles: Option<u64>,
}

#[derive(Args, Clone)]
#[command(group(clap::ArgGroup::new("seeded").args(["walks", "budgets"]).multiple(true)))]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Give up after about this many generated states (a known-bad variant stops at its first
    /// violation; a pass explores everything: the largest standard check, the job election with
    /// 3 clients, generates about 18 million). Exit code 2 when it gives up. Memory: each
    /// unique state costs our search 10.7 to 13.3 bytes, and 60 to 100% of generated states
    /// are unique.
    #[arg(long, default_value_t = 100_000_000)]
    max_states: usize,
    /// Give up on paths longer than this many steps (a recipe that can loop for ever has paths
    /// of every length; the standard checks are 30 to 131 steps deep, the sharded job's with
    /// two instances and one fault up to about 280, with two cycles and a crash 305, and with
    /// three items 373: give those `--max-depth 400`). Exit code 2 when it gives up.
    #[arg(long, default_value_t = Limits::DEFAULT_MAX_DEPTH)]
    max_depth: usize,
    /// Explore states that differ only in which client is which separately (by default the
    /// depth-first search explores them once: symmetry reduction, up to 4 clients).
    #[arg(long)]
    no_symmetry: bool,
    /// Explore every interleaving: no partial-order reduction (by default a client with news
    /// processes it before anything else happens, where no fault the budget allows races it).
    /// Far more states; to cross-check a verdict, or the reduction itself.
    #[arg(long)]
    no_partial_order: bool,
    /// Leave the model's own invariant "claims are owned" unjudged (by default a client that
    /// believes at a settled moment that a node is its own, and its session does not own it,
    /// is a violation): to see which recipe property the false claim goes on to break, if
    /// any, and to export that as a scenario the simulator judges.
    #[arg(long)]
    no_claims: bool,
    /// Whose depth-first search explores the states: `ours` (the default), or `stateright`'s
    /// own, which visits the same states in the same order with more work per state (to
    /// compare the two; its progress is reported by the clock).
    #[arg(long, value_enum, default_value_t = SearcherArg::Ours)]
    searcher: SearcherArg,
    /// Search only the schedules in which the server switches away from a client with a
    /// request waiting at most K times (preemption bounding, for spaces too large to search
    /// whole, such as the sharded job with an expiry): a pass proves no violation in any such
    /// schedule, with every fault of the budget at every point. Our search only; no symmetry
    /// reduction; states are counted once per (running client, preemptions used).
    #[arg(long, value_name = "K", conflicts_with = "walks")]
    preemptions: Option<u8>,
    /// Search only the schedules in which the server answers a waiting read at once: where no
    /// client has news, a client's read is served before anything else happens but a fault
    /// (which still strikes at every point). A bounded search, like --preemptions: a pass
    /// proves no violation in any such schedule, and nothing of a read delayed while others
    /// write (for spaces too large to search whole: the sharded job with an expiry). Not with
    /// --preemptions: answering another client's read first is itself a preemption, so the
    /// two bounds together leave almost nothing
    #[arg(long, conflicts_with_all = ["walks", "preemptions"])]
    reads_first: bool,
    /// Keep the visited set by hash compaction: 32 bits a state (4.4 bytes at the 90% load
    /// where the check stops, where the exact set takes 10.7 to 13.3) in one table of at most MIB
    /// MiB, allocated at the start (a power of two of 4-byte slots; its pages are taken as
    /// they are first touched). For spaces whose exact set does not fit in memory. A new state
    /// may be taken for seen: the check reports the expected number missed (about one at three
    /// billion states). Gives up, with exit code 2, when 90% of the slots are taken. Our
    /// search only.
    #[arg(long, value_name = "MIB", conflicts_with = "walks",
          value_parser = clap::value_parser!(u32)
              .range(i64::from(*COMPACT_MIB.start())..=i64::from(*COMPACT_MIB.end())))]
    compact_mib: Option<u32>,
    /// Run the depth-first search on this many threads, sharing one visited set (either
    /// search; with `--compact-mib` too). One, the default, is deterministic in every count and
    /// counterexample. More explore the same states and give the same verdict, and when the
    /// search finishes the same counts (but for the deepest path, which depends on the
    /// order), sooner where there are the cores; where it gives up
    /// (a limit, a full table) the counts, and a counterexample too long to shorten, depend on
    /// the threads' timing.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "walks",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Where stderr is not a terminal (a log, CI), print a line of progress to it every this
    /// many seconds at most (default 10, so that a CI log shows a long search alive; on a
    /// terminal a spinner shows it instead).
    #[arg(long, value_name = "SECONDS", conflicts_with = "walks",
          value_parser = clap::value_parser!(u64).range(1..))]
    progress_secs: Option<u64>,
    /// Write a counterexample, if one is found, as a scenario file (TOML) the simulator replays.
    #[arg(long, value_name = "FILE")]
    export: Option<PathBuf>,
    /// Write a counterexample, if one is found, as an HTML timeline (the same page as a
    /// simulated run's report, with steps for time).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// In place of the exhaustive search, take this many seeded random walks through the same
    /// states, judging every step (for spaces the search cannot finish, such as the sharded job
    /// with an expiry; a pass proves nothing). Each walk is `--max-depth` steps at most.
    #[arg(long, conflicts_with_all = ["max_states", "no_symmetry", "searcher"])]
    walks: Option<u64>,
    /// The random walks' seed: walk `w` draws from stream `w` of ChaCha8 seeded with it, so
    /// `--seed S --walks N` repeats exactly.
    #[arg(long, default_value_t = 0, requires = "seeded")]
    seed: u64,
    /// Check these fault budgets instead of one `--faults`: `standard` (what `check` without
    /// `--faults` checks: `drop-reply=1,expire=1`, then each of the six kinds alone; the job
    /// over two cycles unless `--cycles` says), `all` (each kind alone, and every pair of
    /// kinds, one fault each: 21 budgets), `singles`, or budgets separated by `;`. One row per
    /// budget (states, seconds, verdict); the budgets run side by side on every core. A budget
    /// whose exhaustive check gives up at `--budget-states` continues with `--budget-walks`
    /// random walks, and its row says so. The first violated budget's counterexample follows
    /// (with `--json`, the report is that budget's check with the rows added as `budgets`).
    #[arg(long, value_name = "SPEC", conflicts_with_all = [
        "walks", "preemptions", "reads_first", "compact_mib", "threads",
        "max_states", "searcher", "faults", "progress_secs",
    ])]
    budgets: Option<String>,
    /// With `--budgets` or the standard budgets: each budget's exhaustive check gives up after
    /// this many generated states.
    #[arg(long, value_name = "N", default_value_t = budgets::BUDGET_STATES)]
    budget_states: usize,
    /// With `--budgets` or the standard budgets: the random walks for a budget whose exhaustive
    /// check gave up.
    #[arg(long, value_name = "N", default_value_t = budgets::BUDGET_WALKS)]
    budget_walks: u64,
    /// The rows of the budgets checked before this one check, added to its JSON report.
    #[arg(skip)]
    budget_rows: Option<serde_json::Value>,
}

/// The budget of a check given `--faults` of no budget, or of an option of one search.
pub(crate) const DEFAULT_FAULTS: &str = "drop-reply=1,expire=1";

/// The options of `check` that shape one search: given without `--faults`, the check searches
/// [`DEFAULT_FAULTS`] alone instead of the standard budgets.
const ONE_SEARCH: [&str; 9] = [
    "faults",
    "walks",
    "preemptions",
    "reads_first",
    "compact_mib",
    "threads",
    "searcher",
    "max_states",
    "progress_secs",
];

/// `--searcher`: [`Searcher`] on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SearcherArg {
    Ours,
    Stateright,
}

impl SearcherArg {
    fn searcher(self) -> Searcher {
        match self {
            SearcherArg::Ours => Searcher::Ours,
            SearcherArg::Stateright => Searcher::Stateright,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SearcherArg::Ours => "ours",
            SearcherArg::Stateright => "stateright",
        }
    }
}

#[derive(Args)]
struct ExploreArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The port on 127.0.0.1.
    #[arg(long, default_value_t = 3000)]
    port: u16,
}

const BAD_INPUT: u8 = exit::BAD_INPUT;

/// `println!`, except that a reader that went away (`zkharness check ... | head`) ends the
/// program quietly, with the shell's code for a broken pipe (141), as other Unix tools do,
/// instead of a panic.
macro_rules! say {
    ($($arg:tt)*) => {
        say(format_args!($($arg)*))
    };
}

fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(error) = writeln!(std::io::stdout().lock(), "{line}") {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(BROKEN_PIPE.into());
        }
        eprintln!("zkharness: cannot write to stdout: {error}");
        std::process::exit(BAD_INPUT.into());
    }
}

/// The exit code of a program whose output pipe closed (128 + SIGPIPE's 13).
const BROKEN_PIPE: u8 = 141;

mod budgets;
pub(crate) mod check;
mod check_html;
mod commands;
pub(crate) mod machines;
mod walks;

/// Runs the command line: `zkharness`'s `main`, and a user's own binary's (`custom_main!`).
pub fn main() -> ExitCode {
    let parsed = Cli::command()
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

fn parse(args: &ModelArgs) -> Result<Recipe, String> {
    if !(1..=5).contains(&args.clients) {
        return Err(format!(
            "--clients {}: the model checks 1 to 5 clients",
            args.clients
        ));
    }
    let faults = args.faults.as_deref().unwrap_or(DEFAULT_FAULTS);
    let budget = FaultBudget::parse(faults).map_err(|e| format!("--faults: {e}"))?;
    let acting: Acting = serde_json::from_value(serde_json::Value::String(args.acting.clone()))
        .map_err(|_| {
            format!(
                "--acting {:?}: expected caught-up, fenced or unfenced",
                args.acting
            )
        })?;
    let mut recipe = Recipe::new(&args.recipe, &args.variant, args.clients, budget, acting)?;
    if args.items.is_some() || args.cycles.is_some() {
        let Some(job) = &mut recipe.shape else {
            return Err(format!(
                "--items and --cycles shape the sharded job; {} has neither",
                args.recipe
            ));
        };
        if let Some(items) = args.items {
            if !(1..=8).contains(&items) {
                return Err(format!("--items {items}: the model checks 1 to 8 items"));
            }
            job.items = items;
        }
        if let Some(cycles) = args.cycles {
            if !(1..=4).contains(&cycles) {
                return Err(format!("--cycles {cycles}: the model checks 1 to 4 cycles"));
            }
            job.cycles = cycles;
        }
    }
    Ok(recipe)
}

fn explore<W: Workload>(model: RecipeModel<W>, port: u16) -> ExitCode {
    let address = format!("127.0.0.1:{port}");
    // stateright's server panics when it cannot bind: find out first, and say so plainly.
    if let Err(error) = std::net::TcpListener::bind(&address) {
        eprintln!("zkharness: cannot listen on {address}: {error} (choose another --port)");
        return ExitCode::from(BAD_INPUT);
    }
    say!("serving stateright's Explorer on http://{address}/ (Ctrl-C to stop)");
    model.checker().threads(1).serve(address.as_str());
    ExitCode::SUCCESS
}
