//! `zkharness`: the command line of the ZooKeeper recipe harness.
//!
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
//! Exit status: 0 when the check passes, 1 on a violation, 2 when it gave up at its state or
//! depth limit without finding one, 64 on bad input.

/// The model checker allocates and frees a copy of whatever a step changes, millions of times
/// a second; mimalloc does that about a quarter faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use stateright::Model;
use zkh_model::check::{
    check_searched, walk, walk_observed, Acting, Action, FaultBudget, GaveUp, Limits, Progress,
    RecipeModel, Searcher, State, WalkLimits, WalkVerdict, Workload, COMPACT_MIB, MAX_LOAD_PERCENT,
    PROGRESS, SHORTEN_STATES,
};
use zkh_scenarios::known_bad::known_bad;
use zkh_scenarios::{any_model, export, Recipe, RecipeKind, Scenario};

#[derive(Parser)]
#[command(
    name = "zkharness",
    version,
    about = "Break and prove ZooKeeper recipes: exhaustive model checking of the recipes' own state machines"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Explore every state of a recipe's model within a fault budget (depth first, one thread;
    /// a counterexample is then shortened breadth first, or shrunk where it is too deep for
    /// that), or, with `--walks`, take seeded random walks through its states.
    Check(CheckArgs),
    /// Serve stateright's Explorer for a recipe's model on 127.0.0.1.
    Explore(ExploreArgs),
}

#[derive(Args)]
struct ModelArgs {
    /// The recipe: `lock`, `latch`, `election`, `master` or `job` (the sharded job, checked with
    /// `--clients 2`; see README).
    recipe: String,
    /// The recipe's variant: `correct`, or a known-bad one (lock: `herd`, `unprotected`;
    /// latch: `trust-predecessor`, `no-owner-check`; election: `check-then-write`; master:
    /// `no-watch`; job: `one-item-per-idle`, `trust-owners`, `no-cycle-claim`, `uncovered-reshard`).
    #[arg(long, default_value = "correct")]
    variant: String,
    /// Client processes.
    #[arg(long, default_value_t = 3)]
    clients: usize,
    /// The fault budget: `NAME=COUNT,...` with `drop-request`, `drop-reply`, `expire`,
    /// `client-expire`, `leader-change`, `crash`; or `none`.
    #[arg(long, default_value = "drop-reply=1,expire=1")]
    faults: String,
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

#[derive(Args)]
struct CheckArgs {
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
    /// many seconds at most (on a terminal a spinner shows it anyway). None by default: logs
    /// and pipes get the result alone.
    #[arg(long, value_name = "SECONDS", conflicts_with = "walks",
          value_parser = clap::value_parser!(u64).range(1..))]
    progress_secs: Option<u64>,
    /// Write a counterexample, if one is found, as a scenario file (JSON) the simulator replays.
    #[arg(long, value_name = "FILE")]
    export: Option<PathBuf>,
    /// In place of the exhaustive search, take this many seeded random walks through the same
    /// states, judging every step (for spaces the search cannot finish, such as the sharded job
    /// with an expiry; a pass proves nothing). Each walk is `--max-depth` steps at most.
    #[arg(long, conflicts_with_all = ["max_states", "no_symmetry", "searcher"])]
    walks: Option<u64>,
    /// The random walks' seed: walk `w` draws from stream `w` of ChaCha8 seeded with it, so
    /// `--seed S --walks N` repeats exactly.
    #[arg(long, default_value_t = 0, requires = "walks")]
    seed: u64,
}

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

const BAD_INPUT: u8 = 64;

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

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
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
    let outcome = match cli.command {
        Command::Check(args) => parse(&args.model)
            .map(|recipe| any_model!(recipe, model => run_check(model, &recipe, &args))),
        Command::Explore(args) => {
            parse(&args.model).map(|recipe| any_model!(recipe, model => explore(model, args.port)))
        }
    };
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("zkharness: {message}");
            ExitCode::from(BAD_INPUT)
        }
    }
}

fn parse(args: &ModelArgs) -> Result<Recipe, String> {
    if !(1..=5).contains(&args.clients) {
        return Err(format!(
            "--clients {}: the model checks 1 to 5 clients",
            args.clients
        ));
    }
    let budget = FaultBudget::parse(&args.faults).map_err(|e| format!("--faults: {e}"))?;
    let acting: Acting = serde_json::from_value(serde_json::Value::String(args.acting.clone()))
        .map_err(|_| {
            format!(
                "--acting {:?}: expected caught-up, fenced or unfenced",
                args.acting
            )
        })?;
    let mut recipe = Recipe::new(&args.recipe, &args.variant, args.clients, budget, acting)?;
    if args.items.is_some() || args.cycles.is_some() {
        let RecipeKind::Job(job) = &mut recipe.kind else {
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

fn run_check<W: Workload>(model: RecipeModel<W>, recipe: &Recipe, args: &CheckArgs) -> ExitCode {
    let model = RecipeModel {
        partial_order: !args.no_partial_order,
        reads_first: args.reads_first,
        ..model
    };
    if let Some(walks) = args.walks {
        return run_walks(model, recipe, args, walks);
    }
    if args.max_states == 0 {
        eprintln!("zkharness: --max-states 0: a check needs at least one state");
        return ExitCode::from(BAD_INPUT);
    }
    if args.preemptions.is_some() && args.searcher == SearcherArg::Stateright {
        eprintln!(
            "zkharness: --preemptions bounds our depth-first search only; drop --searcher \
             stateright"
        );
        return ExitCode::from(BAD_INPUT);
    }
    if args.compact_mib.is_some() && args.searcher == SearcherArg::Stateright {
        eprintln!(
            "zkharness: --compact-mib compacts our depth-first search's visited set only; drop \
             --searcher stateright"
        );
        return ExitCode::from(BAD_INPUT);
    }
    let started = Instant::now();
    let limits = Limits {
        max_states: Some(args.max_states),
        max_depth: args.max_depth,
        symmetry: !args.no_symmetry,
        preemptions: args.preemptions,
        compact_mib: args.compact_mib,
        threads: usize::from(args.threads),
    };
    let searcher = args.searcher.searcher();
    let verdict = if std::io::stderr().is_terminal() {
        // A spinner for long checks, on a terminal only: logs and pipes get the result alone.
        let spinner = ProgressBar::new_spinner();
        spinner.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("a valid template"),
        );
        let mut show = |progress: &Progress| {
            spinner.set_message(format!(
                "depth first: {} states, {} unique, depth {}",
                progress.states, progress.unique_states, progress.max_depth
            ));
            spinner.tick();
        };
        let verdict = check_searched(&model, limits, searcher, Some(&mut show));
        spinner.finish_and_clear();
        verdict
    } else if let Some(every) = args.progress_secs {
        // Lines for a log, where a spinner would be noise: one every `every` seconds at most.
        let mut last = Instant::now();
        let mut log = |progress: &Progress| {
            if last.elapsed().as_secs() >= every {
                last = Instant::now();
                eprintln!(
                    "zkharness: {:.0} s: {} states, {} unique, depth {}",
                    started.elapsed().as_secs_f64(),
                    progress.states,
                    progress.unique_states,
                    progress.max_depth
                );
            }
        };
        check_searched(&model, limits, searcher, Some(&mut log))
    } else {
        check_searched(&model, limits, searcher, None)
    };
    let seconds = started.elapsed().as_secs_f64();
    let per_second = verdict.unique_states as f64 / seconds.max(1e-9);
    let final_state = (verdict.violation.as_ref()).map(|violation| replay(&model, &violation.path));
    if let (Some(path), Some(violation)) = (&args.export, &verdict.violation) {
        if let Err(message) = write_scenario(path, recipe, violation.property, &violation.path) {
            eprintln!("zkharness: {message}");
            return ExitCode::from(BAD_INPUT);
        }
    }
    if args.json {
        let result = match (&verdict.violation, &final_state) {
            (Some(violation), Some((_, steps))) => serde_json::json!({
                "violation": violation.property,
                "path": steps,
                "shortest": violation.shortest,
                "found_steps": violation.found_steps,
            }),
            _ if !verdict.complete => serde_json::json!("incomplete"),
            _ => serde_json::json!("pass"),
        };
        let report = json_report(
            recipe,
            serde_json::json!({
                "states": verdict.states,
                "unique_states": verdict.unique_states,
                "max_depth": verdict.max_depth,
                "search": "depth-first",
                "searcher": args.searcher.name(),
                "symmetry": verdict.symmetry,
                "partial_order": !args.no_partial_order,
                "preemptions": args.preemptions,
                "reads_first": args.reads_first,
                "threads": args.threads,
                "states_by_thread": (!verdict.states_by_thread.is_empty())
                    .then_some(&verdict.states_by_thread),
                "seconds": seconds,
                "states_per_sec": per_second.round(),
                "sometimes_unreached": verdict.unreached,
                "gave_up": verdict.gave_up.map(|limit| match limit {
                    GaveUp::States(_) => "max-states",
                    GaveUp::Depth(_) => "max-depth",
                    GaveUp::VisitedFull(_) => "visited-full",
                }),
                "compaction": verdict.compaction.map(|compaction| serde_json::json!({
                    "mib": args.compact_mib,
                    "slots": compaction.slots,
                    "compared": compaction.compared,
                    "expected_missed": compaction.expected_missed(),
                })),
                "result": result,
            }),
        );
        say!("{report}");
    } else {
        print_banner(recipe);
        let search = match (args.preemptions, verdict.symmetry) {
            (Some(bound), _) => format!(
                "depth first, only schedules with at most {}; a state counted once per running \
                 client and preemptions used",
                preemptions(bound)
            ),
            (None, true) => "depth first; states that differ only in which client is which \
                             counted once"
                .to_owned(),
            (None, false) => "depth first".to_owned(),
        };
        let search = if args.no_partial_order {
            format!("{search}; every interleaving, without the partial-order reduction")
        } else {
            search
        };
        let search = if args.reads_first {
            format!("{search}; only schedules where the server answers a waiting read at once")
        } else {
            search
        };
        let search = match (args.threads, &verdict.states_by_thread[..]) {
            (1, _) => search,
            (threads, []) => format!("{search}; on {threads} threads"),
            (threads, by_thread) => {
                let generated: usize = by_thread.iter().sum();
                let shares: Vec<String> = (by_thread.iter())
                    .map(|states| {
                        format!("{:.0}%", 100.0 * *states as f64 / generated.max(1) as f64)
                    })
                    .collect();
                format!(
                    "{search}; on {threads} threads, which generated {} of the states",
                    shares.join(", ")
                )
            }
        };
        say!(
            "states: {} generated, {} unique, depth {}, {:.1} s, {:.0} unique states/s ({search})",
            verdict.states,
            verdict.unique_states,
            verdict.max_depth,
            seconds,
            per_second
        );
        if let Some(compaction) = verdict.compaction {
            say!(
                "hash compaction: {} slots of 4 bytes, {:.1}% taken; expected states missed: \
                 {:.2e} (new states' probes passed {} taken slots, each a 2^-32 chance)",
                compaction.slots,
                100.0 * verdict.unique_states as f64 / compaction.slots as f64,
                compaction.expected_missed(),
                compaction.compared
            );
        }
        print_unreached(&verdict.unreached, "a pass says less");
        match (&verdict.violation, &final_state) {
            (Some(violation), Some((state, steps))) => {
                print_violation(&model, violation.property, state);
                if violation.shortest {
                    say!("shortest counterexample, {} steps:", steps.len());
                } else {
                    say!(
                        "counterexample, {} steps (found depth first in {} steps, too deep to \
                         shorten within the first {SHORTEN_STATES} states breadth first; shrunk, \
                         so it may not be the shortest):",
                        steps.len(),
                        violation.found_steps
                    );
                }
                print_steps(steps, args);
            }
            _ => match verdict.gave_up {
                Some(GaveUp::States(max)) => say!(
                    "INCOMPLETE: no violation in the first {} states; the check gave up at \
                     --max-states {max}\n(a larger --max-states costs time and 10.7 to 13.3 \
                     bytes a unique state, or 4 a slot with --compact-mib; fewer --clients or a \
                     smaller --faults budget shrink the space)",
                    verdict.states
                ),
                Some(GaveUp::VisitedFull(mib)) => say!(
                    "INCOMPLETE: no violation in the first {} states; the check gave up when \
                     {MAX_LOAD_PERCENT}% of the visited set's slots were taken (--compact-mib \
                     {mib})\n(a larger --compact-mib holds more: 4 bytes a slot)",
                    verdict.states
                ),
                Some(GaveUp::Depth(max)) => say!(
                    "INCOMPLETE: no violation in {} states, but some paths are longer than \
                     --max-depth {max} steps\n(a recipe that can repeat a step for ever has no \
                     end: look for a loop in the deepest paths, e.g. with `zkharness explore`; \
                     or raise --max-depth)",
                    verdict.states
                ),
                None => {
                    let bounds: Vec<String> = (args.preemptions)
                        .map(|bound| format!("with at most {}", preemptions(bound)))
                        .into_iter()
                        .chain(
                            (args.reads_first)
                                .then(|| "where the server answers a waiting read at once".into()),
                        )
                        .collect();
                    if bounds.is_empty() {
                        say!("no violation");
                    } else {
                        say!(
                            "no violation in any schedule {} (not a proof for the others)",
                            bounds.join(" and ")
                        );
                    }
                }
            },
        }
    }
    if verdict.violation.is_some() {
        return ExitCode::from(1);
    }
    note_known_bad(recipe, args.json);
    if !verdict.complete {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// `count` preemptions, in words.
fn preemptions(count: u8) -> String {
    match count {
        1 => "1 preemption".to_owned(),
        _ => format!("{count} preemptions"),
    }
}

/// The first line of a report: what was checked.
/// One JSON report of a check or of walks: what was checked (`recipe`), and `fields`, an
/// object, which it adds.
fn json_report(recipe: &Recipe, fields: serde_json::Value) -> serde_json::Value {
    let mut report = serde_json::json!({
        "recipe": recipe.name,
        "variant": recipe.variant,
        "clients": recipe.clients,
        "faults": recipe.faults,
        "acting": recipe.acting,
    });
    let (Some(report_fields), serde_json::Value::Object(fields)) = (report.as_object_mut(), fields)
    else {
        unreachable!("a report and its fields are JSON objects");
    };
    report_fields.extend(fields);
    report
}

fn print_banner(recipe: &Recipe) {
    say!(
        "{} ({}), {} clients, faults {}, acting {}",
        recipe.name,
        recipe.variant,
        recipe.clients,
        recipe.faults,
        serde_json::to_value(recipe.acting).expect("a name")
    );
}

/// The `sometimes` properties nothing reached, if any, and why that matters (`says_less`).
fn print_unreached(unreached: &[&str], says_less: &str) {
    if !unreached.is_empty() {
        say!(
            "note: never reached ({says_less}): {}",
            unreached.join(", ")
        );
    }
}

/// The violated property, and what its function says of the path's last state.
fn print_violation<W: Workload>(model: &RecipeModel<W>, property: &str, state: &State<W>) {
    let detail = if property == PROGRESS {
        model.stuck_detail(state)
    } else {
        state
            .findings()
            .into_iter()
            .find(|f| f.property == property || !f.holds)
            .map(|f| f.detail)
            .unwrap_or_default()
    };
    say!("VIOLATION of {property}: {detail}");
}

/// A counterexample's steps, numbered, and where it was exported.
fn print_steps(steps: &[String], args: &CheckArgs) {
    for (index, step) in steps.iter().enumerate() {
        say!("{:>4}. {step}", index + 1);
    }
    if let Some(path) = &args.export {
        say!("exported to {}", path.display());
    }
}

/// Replays a counterexample keeping the whole history, so that the violation is explained with
/// every event of its path and their true places: its last state, and each step described.
fn replay<W: Workload>(model: &RecipeModel<W>, path: &[Action]) -> (State<W>, Vec<String>) {
    let model = RecipeModel {
        forget_settled: false,
        ..model.clone()
    };
    let mut state = model.init_states().remove(0);
    let mut steps = Vec::new();
    for action in path {
        steps.push(model.describe(&state, action));
        state = model
            .next_state(&state, action.clone())
            .expect("a counterexample's actions are enabled");
    }
    (state, steps)
}

/// Writes a counterexample as a scenario file the simulator replays.
fn write_scenario(
    file: &std::path::Path,
    recipe: &Recipe,
    property: &str,
    path: &[Action],
) -> Result<(), String> {
    let scenario: Scenario = export(recipe, property, path);
    let text = serde_json::to_string_pretty(&scenario).expect("a scenario serialises");
    std::fs::write(file, text + "\n")
        .map_err(|error| format!("cannot write {}: {error}", file.display()))
}

/// `zkharness check --walks N`: seeded random walks through the model's states.
fn run_walks<W: Workload>(
    model: RecipeModel<W>,
    recipe: &Recipe,
    args: &CheckArgs,
    walks: u64,
) -> ExitCode {
    if walks == 0 {
        eprintln!("zkharness: --walks 0: a run needs at least one walk");
        return ExitCode::from(BAD_INPUT);
    }
    let limits = WalkLimits {
        walks,
        seed: args.seed,
        max_depth: args.max_depth,
    };
    if !args.json {
        // The seed first, so that a run cut short can still be repeated.
        say!("seed {} ({} walks)", args.seed, walks);
    }
    let started = Instant::now();
    let verdict = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(walks);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} walks, {msg} [{elapsed}<{eta}]")
                .expect("a valid template"),
        );
        let mut show = |verdict: &WalkVerdict| {
            if verdict.walks % 64 == 0 {
                bar.set_position(verdict.walks);
                bar.set_message(format!("{} unique states", verdict.unique_states));
            }
        };
        let verdict = walk_observed(&model, limits, &mut show);
        bar.finish_and_clear();
        verdict
    } else {
        walk(&model, limits)
    };
    let seconds = started.elapsed().as_secs_f64();
    let final_state = (verdict.violation.as_ref()).map(|violation| replay(&model, &violation.path));
    if let (Some(path), Some(violation)) = (&args.export, &verdict.violation) {
        if let Err(message) = write_scenario(path, recipe, violation.property, &violation.path) {
            eprintln!("zkharness: {message}");
            return ExitCode::from(BAD_INPUT);
        }
    }
    let repeat = format!(
        "zkharness check {} --variant {} --clients {} --faults {} --acting {}{} --max-depth {} --seed {} --walks {}",
        recipe.name,
        recipe.variant,
        recipe.clients,
        recipe.faults,
        serde_json::to_value(recipe.acting).expect("a name").as_str().expect("a name"),
        job_shape(recipe),
        args.max_depth,
        args.seed,
        verdict.walks,
    );
    if args.json {
        let result = match (&verdict.violation, &final_state) {
            (Some(violation), Some((_, steps))) => serde_json::json!({
                "violation": violation.property,
                "path": steps,
                "shortest": false,
                "walk": violation.walk,
                "walk_steps": violation.found_steps,
            }),
            _ => serde_json::json!("no-violation-found"),
        };
        let report = json_report(
            recipe,
            serde_json::json!({
                "search": "random-walks",
                "seed": args.seed,
                "walks": verdict.walks,
                "states": verdict.steps,
                "unique_states": verdict.unique_states,
                "max_depth": verdict.max_depth,
                "cut_off": verdict.cut_off,
                "looped": verdict.looped,
                "faulted_walks": verdict.faulted,
                "seconds": seconds,
                "states_per_sec": (verdict.steps as f64 / seconds.max(1e-9)).round(),
                "sometimes_unreached": verdict.unreached,
                "trace_hash": format!("{:016x}", verdict.trace_hash),
                "repeat": repeat,
                "result": result,
            }),
        );
        say!("{report}");
    } else {
        print_banner(recipe);
        say!(
            "walks: {} from seed {}, {} steps, {} unique states, longest {} steps ({} cut off at \
             --max-depth, {} ended in a loop), {} with a fault, {:.1} s, trace hash {:016x}",
            verdict.walks,
            args.seed,
            verdict.steps,
            verdict.unique_states,
            verdict.max_depth,
            verdict.cut_off,
            verdict.looped,
            verdict.faulted,
            seconds,
            verdict.trace_hash
        );
        print_unreached(&verdict.unreached, "the walks say less");
        match (&verdict.violation, &final_state) {
            (Some(violation), Some((state, steps))) => {
                print_violation(&model, violation.property, state);
                say!(
                    "counterexample, {} steps (walk {} failed after {} steps; shrunk, so it may \
                     not be the shortest):",
                    steps.len(),
                    violation.walk,
                    violation.found_steps
                );
                print_steps(steps, args);
            }
            _ => say!(
                "no violation found in {} walks (random walks visit some states, not all: this \
                 is not a proof)",
                verdict.walks
            ),
        }
        say!("repeat: {repeat}");
    }
    if verdict.violation.is_some() {
        ExitCode::from(1)
    } else {
        note_known_bad(recipe, args.json);
        ExitCode::SUCCESS
    }
}

/// For a known-bad variant that showed no violation, how it is caught (on stdout with the
/// text report, on stderr beside a JSON one): under other options its bug may not be able to
/// happen, and a pass there does not mean it is fixed.
fn note_known_bad(recipe: &Recipe, json: bool) {
    let Some(entry) = known_bad(&recipe.name, &recipe.variant) else {
        return;
    };
    let note = format!(
        "note: {} is a known-bad variant of {}, and this check did not show its bug; it \
         breaks \"{}\" under: {}",
        entry.variant,
        recipe.name,
        entry.property,
        entry.command()
    );
    if json {
        eprintln!("{note}");
    } else {
        say!("{note}");
    }
}

/// The job's `--items` and `--cycles`, as the command line gives them.
fn job_shape(recipe: &Recipe) -> String {
    match &recipe.kind {
        RecipeKind::Job(job) => format!(" --items {} --cycles {}", job.items, job.cycles),
        _ => String::new(),
    }
}

fn explore<W: Workload>(model: RecipeModel<W>, port: u16) -> ExitCode {
    let address = format!("127.0.0.1:{port}");
    say!("serving stateright's Explorer on http://{address}/ (Ctrl-C to stop)");
    model.checker().threads(1).serve(address.as_str());
    ExitCode::SUCCESS
}
