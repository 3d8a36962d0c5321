//! A command line of the user's own, for their recipe: `run` one seed of a scenario and `sweep`
//! seeds of several, as `zkharness` does for the built-ins. The user's binary is one line, the
//! pattern of criterion's and cargo-fuzz's generated mains:
//!
//! ```ignore
//! // src/bin/id-allocator.rs
//! zkh_scenarios::custom_main!(zkh_example_id_allocator::IdAllocator);
//! ```
//!
//! built in the simulated mode (`RUSTFLAGS="--cfg madsim" cargo run -p MY_CRATE --bin ...`).
//! Every report names the recipe, its crate and its version; `run --expect-trace` refuses a
//! seed whose history is not the one recorded (another build of the recipe, or a
//! nondeterministic one). Exit codes are `zkharness`'s: 0 pass, 1 safety, 2 liveness, 4 not as
//! expected, 64 bad input, 70 the harness crashed.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use zkh_model::properties::Finding;

use super::host::{outcome_text, run_one, CustomRun};
use super::{CustomScenario, SimRecipe};
use crate::report::{exit, Outcome};

#[derive(Parser)]
#[command(about = "Run your recipe on the simulated ZooKeeper ensemble (zkharness)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one seed of a scenario and print every finding.
    Run {
        /// The scenario file.
        scenario: PathBuf,
        /// The seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The variant (default: the file's, else the first, correct one).
        #[arg(long)]
        variant: Option<String>,
        /// Refuse a history whose trace hash is not this one (16 hex digits, as a report gives).
        #[arg(long)]
        expect_trace: Option<String>,
    },
    /// Run seeds of scenarios; a positive control must be caught within its seeds.
    Sweep {
        /// The scenario files.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// The seeds, as START..END.
        #[arg(long, default_value = "0..100")]
        seeds: String,
    },
}

/// Runs the command line for recipe `R`, of crate `package` at `version`.
pub fn main<R: SimRecipe>(package: &str, version: &str) -> ExitCode {
    let cli = Cli::parse();
    if let Some(problem) = super::registration_problem::<R>() {
        eprintln!("{problem}");
        return ExitCode::from(exit::BAD_INPUT);
    }
    let named = format!("{} ({package} {version})", R::NAME);
    match cli.command {
        Command::Run {
            scenario,
            seed,
            variant,
            expect_trace,
        } => {
            let scenario = match load::<R>(&scenario) {
                Ok(scenario) => scenario,
                Err(code) => return code,
            };
            let Some(variant) = pick_variant::<R>(variant.as_deref(), &scenario) else {
                return ExitCode::from(exit::BAD_INPUT);
            };
            let run = run_one(&scenario, variant, seed);
            println!("{named}, variant {variant}, {} seed {seed}", scenario.file);
            print_findings("the recipe's properties", &run.findings);
            print_findings("ZooKeeper guarantees", &run.guarantees);
            let trace = format!("{:016x}", run.trace);
            println!(
                "result: {} seed={seed} trace={trace}",
                outcome_text(&run.outcome)
            );
            if let Some(expected) = expect_trace.filter(|t| *t != trace) {
                eprintln!(
                    "{}: seed {seed} gave trace {trace}, and {expected} was recorded: this build \
                     of {named} does not replay that run",
                    scenario.file
                );
                return ExitCode::from(exit::UNEXPECTED);
            }
            ExitCode::from(run.outcome.exit_code())
        }
        Command::Sweep { scenarios, seeds } => {
            let Some((start, end)) = seeds
                .split_once("..")
                .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
                .filter(|(a, b)| a < b)
            else {
                eprintln!("--seeds: expected START..END with START < END, found {seeds:?}");
                return ExitCode::from(exit::BAD_INPUT);
            };
            let mut all_as_expected = true;
            for path in &scenarios {
                let scenario = match load::<R>(path) {
                    Ok(scenario) => scenario,
                    Err(code) => return code,
                };
                let Some(variant) = pick_variant::<R>(None, &scenario) else {
                    return ExitCode::from(exit::BAD_INPUT);
                };
                let as_expected = sweep_one(&named, &scenario, variant, start..end);
                all_as_expected &= as_expected;
            }
            ExitCode::from(if all_as_expected {
                exit::PASS
            } else {
                exit::UNEXPECTED
            })
        }
    }
}

/// Runs one scenario's seeds; whether it ended as it expects.
fn sweep_one<R: SimRecipe>(
    named: &str,
    scenario: &CustomScenario<R>,
    variant: &'static str,
    seeds: std::ops::Range<u64>,
) -> bool {
    let seeds: Vec<u64> = match &scenario.expect_violation {
        Some(_) => (seeds.start..seeds.start + scenario.within_seeds).collect(),
        None => (scenario.seeds.iter().copied()).chain(seeds).collect(),
    };
    let runs: Vec<CustomRun> = seeds
        .iter()
        .map(|seed| run_one(scenario, variant, *seed))
        .collect();
    let failing: Vec<&CustomRun> = runs.iter().filter(|r| r.outcome != Outcome::Pass).collect();
    let as_expected = match &scenario.expect_violation {
        None => failing.is_empty(),
        Some(property) => runs
            .iter()
            .any(|r| r.outcome.property() == Some(property.as_str())),
    };
    let expected = scenario
        .expect_violation
        .as_ref()
        .map_or_else(|| "pass".to_owned(), |p| format!("violation {p}"));
    println!(
        "{named} {variant} {}: expected {expected}, {} seeds, {} not passing: {}",
        scenario.file,
        runs.len(),
        failing.len(),
        if as_expected {
            "as expected"
        } else {
            "NOT as expected"
        }
    );
    if scenario.expect_violation.is_none() {
        for run in failing.iter().take(5) {
            println!(
                "  seed {}: {} (rerun: run {} --seed {} --expect-trace {:016x})",
                run.seed,
                outcome_text(&run.outcome),
                scenario.file,
                run.seed,
                run.trace
            );
        }
    }
    as_expected
}

fn load<R: SimRecipe>(path: &std::path::Path) -> Result<CustomScenario<R>, ExitCode> {
    CustomScenario::<R>::load(path).map_err(|error| {
        eprintln!("{error}");
        ExitCode::from(exit::BAD_INPUT)
    })
}

/// The variant to run: the command line's, else the file's, else the correct one.
fn pick_variant<R: SimRecipe>(
    asked: Option<&str>,
    scenario: &CustomScenario<R>,
) -> Option<&'static str> {
    match asked {
        None => Some(scenario.variant.unwrap_or(R::VARIANTS[0])),
        Some(asked) => {
            let found = R::VARIANTS.iter().find(|v| **v == asked).copied();
            if found.is_none() {
                eprintln!(
                    "--variant: {} has no variant \"{asked}\" (known: {})",
                    R::NAME,
                    R::VARIANTS.join(", ")
                );
            }
            found
        }
    }
}

fn print_findings(title: &str, findings: &[Finding]) {
    println!("{title}:");
    for f in findings {
        let verdict = match (f.holds, f.class) {
            (true, zkh_model::properties::Class::Sometimes) => "seen    ",
            (false, zkh_model::properties::Class::Sometimes) => "not seen",
            (true, _) => "holds   ",
            (false, _) => "VIOLATED",
        };
        println!("  {verdict}  {}: {}", f.property, f.detail);
    }
}
