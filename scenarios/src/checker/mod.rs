//! The model checker's commands over a registered recipe's model: `zkharness check` (the
//! exhaustive search, its standard budgets, random walks) and `zkharness explore`, with their
//! options, text and JSON reports, HTML timelines and exported scenarios.
//!
//! - `check`: one search (`run_check`), its report, and a counterexample exported;
//! - `budgets`: the standard set of fault budgets, side by side, one row each;
//! - `walks`: seeded random walks for spaces the search cannot finish;
//! - `check_html`: a counterexample as an HTML timeline.
//!
//! A recipe's model is typed by its workload, which only its registration knows: the registry
//! (`crate::registry::machines`) calls these functions, monomorphised for it. The command line
//! (`crate::cli`) parses the options here and dispatches through the registry.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::report::exit;
use crate::Recipe;
use clap::{Args, ValueEnum};
use stateright::Model;
use zkh_model::check::{Acting, FaultBudget, Limits, RecipeModel, Searcher, Workload, COMPACT_MIB};

#[derive(Args, Clone)]
pub(crate) struct ModelArgs {
    /// The recipe: `lock`, `latch`, `election`, `master` or `job` (the sharded job, checked with
    /// `--clients 2`; see README).
    pub(crate) recipe: String,
    /// The recipe's variant: `correct`, or a known-bad one (lock: `herd`, `unprotected`, `unguaranteed-delete`;
    /// latch: `trust-predecessor`, `no-owner-check`, `keep-on-suspend`, `requeue-when-behind`, `unprotected`; election: `check-then-write`, `forgetful-close`; master:
    /// `no-watch`; job: `one-item-per-idle`, `trust-owners`, `no-cycle-claim`, `uncovered-reshard`,
    /// `no-reregister`, `run-ahead`).
    #[arg(long, default_value = "correct")]
    pub(crate) variant: String,
    /// Client processes.
    #[arg(long, default_value_t = 3)]
    pub(crate) clients: usize,
    /// The fault budget: `NAME=COUNT,...` with `drop-request`, `drop-reply`, `expire`,
    /// `client-expire`, `leader-change`, `crash`; or `none`. Without it, `check` checks the
    /// standard budgets (`drop-reply=1,expire=1`, then each kind alone; see `--budgets`), and a
    /// check given an option of one search (`--walks`, `--preemptions`, `--reads-first`,
    /// `--compact-mib`, `--threads`, `--searcher`, `--max-states`, `--progress-secs`) or
    /// `explore` takes `drop-reply=1,expire=1`.
    #[arg(long)]
    pub(crate) faults: Option<String>,
    /// When applications act and what the resource accepts: `caught-up` (only with nothing in
    /// flight to them, on a resource that accepts everything: judges the recipe), `fenced`
    /// (whenever they believe, on a resource that refuses older tokens), `unfenced` (whenever
    /// they believe, on a resource that accepts everything).
    #[arg(long, default_value = "caught-up")]
    pub(crate) acting: String,
    /// The sharded job's items per cycle (job only; default 2).
    #[arg(long)]
    pub(crate) items: Option<u32>,
    /// The cycles each job instance's cron triggers (job only; default 1). "No shard lost" is
    /// judged on the second and later cycles, which fire at a settled moment (nothing in
    /// flight, every instance's listeners at rest).
    #[arg(long)]
    pub(crate) cycles: Option<u64>,
}

#[derive(Args, Clone)]
#[command(group(clap::ArgGroup::new("seeded").args(["walks", "budgets"]).multiple(true)))]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Give up after about this many generated states (a known-bad variant stops at its first
    /// violation; a pass explores everything: the largest standard check, the job election with
    /// 3 clients, generates about 18 million). Exit code 3 when it gives up. Memory: each
    /// unique state costs our search 10.7 to 13.3 bytes, and 60 to 100% of generated states
    /// are unique.
    #[arg(long, default_value_t = 100_000_000)]
    pub(crate) max_states: usize,
    /// Give up on paths longer than this many steps (a recipe that can loop for ever has paths
    /// of every length; the standard checks are 30 to 131 steps deep, the sharded job's with
    /// two instances and one fault up to about 280, with two cycles and a crash 305, and with
    /// three items 373: give those `--max-depth 400`). Exit code 3 when it gives up.
    #[arg(long, default_value_t = Limits::DEFAULT_MAX_DEPTH)]
    pub(crate) max_depth: usize,
    /// Explore states that differ only in which client is which separately (by default the
    /// depth-first search explores them once: symmetry reduction, up to 4 clients).
    #[arg(long)]
    pub(crate) no_symmetry: bool,
    /// Explore every interleaving: no partial-order reduction (by default a client with news
    /// processes it before anything else happens, where no fault the budget allows races it).
    /// Far more states; to cross-check a verdict, or the reduction itself.
    #[arg(long)]
    pub(crate) no_partial_order: bool,
    /// Leave the model's own invariant "claims are owned" unjudged (by default a client that
    /// believes at a settled moment that a node is its own, and its session does not own it,
    /// is a violation): to see which recipe property the false claim goes on to break, if
    /// any, and to export that as a scenario the simulator judges.
    #[arg(long)]
    pub(crate) no_claims: bool,
    /// Whose depth-first search explores the states: `ours` (the default), or `stateright`'s
    /// own, which visits the same states in the same order with more work per state (to
    /// compare the two; its progress is reported by the clock).
    #[arg(long, value_enum, default_value_t = SearcherArg::Ours)]
    pub(crate) searcher: SearcherArg,
    /// Search only the schedules in which the server switches away from a client with a
    /// request waiting at most K times (preemption bounding, for spaces too large to search
    /// whole, such as the sharded job with an expiry): a pass proves no violation in any such
    /// schedule, with every fault of the budget at every point. Our search only; no symmetry
    /// reduction; states are counted once per (running client, preemptions used).
    #[arg(long, value_name = "K", conflicts_with = "walks")]
    pub(crate) preemptions: Option<u8>,
    /// Search only the schedules in which the server answers a waiting read at once: where no
    /// client has news, a client's read is served before anything else happens but a fault
    /// (which still strikes at every point). A bounded search, like --preemptions: a pass
    /// proves no violation in any such schedule, and nothing of a read delayed while others
    /// write (for spaces too large to search whole: the sharded job with an expiry). Not with
    /// --preemptions: answering another client's read first is itself a preemption, so the
    /// two bounds together leave almost nothing
    #[arg(long, conflicts_with_all = ["walks", "preemptions"])]
    pub(crate) reads_first: bool,
    /// Keep the visited set by hash compaction: 32 bits a state (4.4 bytes at the 90% load
    /// where the check stops, where the exact set takes 10.7 to 13.3) in one table of at most MIB
    /// MiB, allocated at the start (a power of two of 4-byte slots; its pages are taken as
    /// they are first touched). For spaces whose exact set does not fit in memory. A new state
    /// may be taken for seen: the check reports the expected number missed (about one at three
    /// billion states). Gives up, with exit code 3, when 90% of the slots are taken. Our
    /// search only.
    #[arg(long, value_name = "MIB", conflicts_with = "walks",
          value_parser = clap::value_parser!(u32)
              .range(i64::from(*COMPACT_MIB.start())..=i64::from(*COMPACT_MIB.end())))]
    pub(crate) compact_mib: Option<u32>,
    /// Run the depth-first search on this many threads, sharing one visited set (either
    /// search; with `--compact-mib` too). One, the default, is deterministic in every count and
    /// counterexample. More explore the same states and give the same verdict, and when the
    /// search finishes the same counts (but for the deepest path, which depends on the
    /// order), sooner where there are the cores; where it gives up
    /// (a limit, a full table) the counts, and a counterexample too long to shorten, depend on
    /// the threads' timing.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "walks",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) threads: u16,
    /// Where stderr is not a terminal (a log, CI), print a line of progress to it every this
    /// many seconds at most (default 10, so that a CI log shows a long search alive; on a
    /// terminal a spinner shows it instead).
    #[arg(long, value_name = "SECONDS", conflicts_with = "walks",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) progress_secs: Option<u64>,
    /// Write a counterexample, if one is found, as a scenario file (TOML) the simulator replays.
    #[arg(long, value_name = "FILE")]
    pub(crate) export: Option<PathBuf>,
    /// Write a counterexample, if one is found, as an HTML timeline (the same page as a
    /// simulated run's report, with steps for time).
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// In place of the exhaustive search, take this many seeded random walks through the same
    /// states, judging every step (for spaces the search cannot finish, such as the sharded job
    /// with an expiry; a pass proves nothing). Each walk is `--max-depth` steps at most.
    #[arg(long, conflicts_with_all = ["max_states", "no_symmetry", "searcher"])]
    pub(crate) walks: Option<u64>,
    /// The random walks' seed: walk `w` draws from stream `w` of ChaCha8 seeded with it, so
    /// `--seed S --walks N` repeats exactly.
    #[arg(long, default_value_t = 0, requires = "seeded")]
    pub(crate) seed: u64,
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
    pub(crate) budgets: Option<String>,
    /// With `--budgets` or the standard budgets: each budget's exhaustive check gives up after
    /// this many generated states.
    #[arg(long, value_name = "N", default_value_t = budgets::BUDGET_STATES)]
    pub(crate) budget_states: usize,
    /// With `--budgets` or the standard budgets: the random walks for a budget whose exhaustive
    /// check gave up.
    #[arg(long, value_name = "N", default_value_t = budgets::BUDGET_WALKS)]
    pub(crate) budget_walks: u64,
    /// The rows of the budgets checked before this one check, added to its JSON report.
    #[arg(skip)]
    pub(crate) budget_rows: Option<serde_json::Value>,
}

/// The budget of a check given `--faults` of no budget, or of an option of one search.
pub(crate) const DEFAULT_FAULTS: &str = "drop-reply=1,expire=1";

/// The options of `check` that shape one search: given without `--faults`, the check searches
/// [`DEFAULT_FAULTS`] alone instead of the standard budgets.
pub(crate) const ONE_SEARCH: [&str; 9] = [
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
pub(crate) enum SearcherArg {
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
pub(crate) struct ExploreArgs {
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// The port on 127.0.0.1.
    #[arg(long, default_value_t = 3000)]
    pub(crate) port: u16,
}

/// `command` (the whole command line) with `check`'s and `explore`'s recipe and variant help
/// listing what this binary registered: the built-ins and a user's machine recipes alike.
pub(crate) fn with_registered_recipes(command: clap::Command) -> clap::Command {
    let names = crate::registry::machines::names();
    let variants: Vec<String> = (names.iter())
        .filter_map(|name| {
            let model = crate::registry::machines::registered(name)?;
            Some(format!("{name}: {}", model.variants().join(", ")))
        })
        .collect();
    let recipe = format!(
        "The recipe: {} (the sharded job `job` is checked with `--clients 2`). A recipe written \
         only as async code (a `SimRecipe`) runs under `run` and `sweep`; `check` and `explore` \
         take a recipe written as a machine (a `MachineRecipe`, docs/your-recipe.md)",
        names.join(", ")
    );
    let variant = format!(
        "The recipe's variant: the correct one (the first) or a known-bad one ({})",
        variants.join("; ")
    );
    let shown = |sub: clap::Command| {
        let (recipe, variant) = (recipe.clone(), variant.clone());
        sub.mut_arg("recipe", |arg| arg.help(recipe))
            .mut_arg("variant", |arg| arg.help(variant))
    };
    command
        .mut_subcommand("check", shown)
        .mut_subcommand("explore", shown)
}

/// The exit code of bad input.
pub(crate) const BAD_INPUT: u8 = exit::BAD_INPUT;

pub(crate) mod budgets;
pub(crate) mod check;
mod check_html;
mod walks;

pub(crate) fn parse(args: &ModelArgs) -> Result<Recipe, String> {
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

pub(crate) fn explore<W: Workload>(model: RecipeModel<W>, port: u16) -> ExitCode {
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
