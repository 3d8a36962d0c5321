//! `zkharness check RECIPE` and `--budgets all`: fault-budget coverage.
//!
//! One budget, say one lost reply and one server-side expiry, leaves out every bug that needs
//! a lost request, a client-side expiry, a leader change or a crash. So `check RECIPE` without
//! `--faults` checks the *standard* budgets: `drop-reply=1,expire=1` (the one budget `check`
//! searched before, first so that what it found it still finds first) and then each of the six
//! kinds alone; the sharded job over two cycles, so that a fault in one cycle is judged in the
//! next. Why these: every control of ours that some pair of kinds catches, a single kind
//! catches too (docs/model-checking.md has the table), and the singles of the lock, the latch
//! and the master are exhaustive in well under a second. `--budgets all` checks every single
//! kind and every pair of kinds (one of each): 6 budgets of one kind and 15 of two.
//! `--budgets singles` runs the six alone; a list such as `--budgets "crash=1;expire=1,crash=1"`
//! runs those (budgets separated by `;`).
//!
//! Each budget is its own exhaustive depth-first check, bounded by `--budget-states` (default
//! [`BUDGET_STATES`]) instead of `--max-states`, so that no one budget eats the run; the budgets
//! run side by side on every core, one check a thread. Where a budget's check gives up (a
//! limit), the same budget continues with seeded random walks (`--budget-walks`, default
//! [`BUDGET_WALKS`], from `--seed`), and its row says so: a pass by walks is evidence, not a
//! proof. Rows come in the budgets' order whatever order they finished in, so a run's output
//! is the same on any number of cores.
//!
//! After the rows, the first violated budget (in the budgets' order) is checked once more as
//! `check --faults BUDGET` does, the same search with the same limits, which prints its
//! counterexample shortened (and writes `--export`, `--html`); with `--json` the report is that
//! check's, with the rows added as `budgets`. Exit code: that check's (safety or liveness), else
//! 0. Each row gives the command that checks its budget alone, to reproduce or explore it.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::Recipe;
use zkh_model::check::{
    check_searched, walk, Limits, RecipeModel, Verdict, WalkLimits, WalkVerdict, Workload,
};

use super::check::{json_report, note_known_bad};
use super::{CheckArgs, BAD_INPUT, DEFAULT_FAULTS};

/// The fault kinds of the model, as `--faults` names them.
pub(crate) const KINDS: [&str; 6] = [
    "drop-request",
    "drop-reply",
    "expire",
    "client-expire",
    "leader-change",
    "crash",
];

/// Each budget's exhaustive check gives up after this many generated states, unless
/// `--budget-states` says.
pub(crate) const BUDGET_STATES: usize = 3_000_000;

/// Random walks for a budget whose exhaustive check gave up, unless `--budget-walks` says.
pub(crate) const BUDGET_WALKS: u64 = 20_000;

/// The budgets `check` checks without `--faults`.
pub(crate) const STANDARD: &str = "standard";

/// The budgets `spec` names: `standard`, `all`, `singles`, or budgets separated by `;`.
pub(crate) fn budgets(spec: &str) -> Result<Vec<String>, String> {
    let singles = KINDS.iter().map(|kind| format!("{kind}=1"));
    match spec.trim() {
        STANDARD => Ok(std::iter::once(DEFAULT_FAULTS.to_owned())
            .chain(singles)
            .collect()),
        "all" => {
            let mut all: Vec<String> = singles.collect();
            for (i, first) in KINDS.iter().enumerate() {
                for second in &KINDS[i + 1..] {
                    all.push(format!("{first}=1,{second}=1"));
                }
            }
            Ok(all)
        }
        "singles" => Ok(singles.collect()),
        list => {
            let named: Vec<String> = list
                .split(';')
                .map(str::trim)
                .filter(|budget| !budget.is_empty())
                .map(str::to_owned)
                .collect();
            if named.is_empty() {
                return Err(format!(
                    "--budgets {spec:?}: expected standard, all, singles, or budgets separated by ;"
                ));
            }
            for budget in &named {
                zkh_model::check::FaultBudget::parse(budget)
                    .map_err(|error| format!("--budgets: {budget:?}: {error}"))?;
            }
            Ok(named)
        }
    }
}

/// How one budget's check ended.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    budget: String,
    /// `exhaustive`, or `walks` where the exhaustive check gave up.
    how: &'static str,
    /// A violated property, if any.
    violation: Option<&'static str>,
    /// Generated states of the exhaustive check.
    states: usize,
    unique_states: usize,
    /// Walks taken, where the exhaustive check gave up.
    walks: u64,
    seconds: f64,
    /// `sometimes` properties never reached.
    unreached: Vec<&'static str>,
}

impl Row {
    fn verdict(&self) -> String {
        match (self.violation, self.how) {
            (Some(property), _) => format!("VIOLATED {property}"),
            (None, "walks") => format!("no violation in {} walks (not exhaustive)", self.walks),
            (None, _) => "no violation".to_owned(),
        }
    }
}

/// What every budget's check shares.
pub(crate) struct Settings {
    states: usize,
    walks: u64,
    seed: u64,
    max_depth: usize,
    symmetry: bool,
    partial_order: bool,
    claims_judged: bool,
}

/// `zkharness check RECIPE --budgets SPEC`.
pub(crate) fn run_budgets(args: &CheckArgs, spec: &str) -> ExitCode {
    let list = match budgets(spec) {
        Ok(list) => list,
        Err(message) => {
            eprintln!("zkharness: {message}");
            return ExitCode::from(BAD_INPUT);
        }
    };
    let settings = Settings {
        states: args.budget_states,
        walks: args.budget_walks,
        seed: args.seed,
        max_depth: args.max_depth,
        symmetry: !args.no_symmetry,
        partial_order: !args.no_partial_order,
        claims_judged: !args.no_claims,
    };
    // Every budget's recipe is made first: a bad option is one error, before any work.
    let mut recipes = Vec::new();
    for budget in &list {
        let mut model_args = args.model.clone();
        model_args.faults = Some(budget.clone());
        let standard = (spec == STANDARD)
            .then(|| crate::registry::machines::registered(&model_args.recipe))
            .flatten()
            .and_then(|model| model.standard_shape());
        if let Some(shape) = standard {
            model_args.items.get_or_insert(shape.items);
            model_args.cycles.get_or_insert(shape.cycles);
        }
        match super::parse(&model_args) {
            Ok(recipe) => recipes.push(recipe),
            Err(message) => {
                eprintln!("zkharness: {message}");
                return ExitCode::from(BAD_INPUT);
            }
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    if !args.json {
        let first = &recipes[0];
        say!(
            "{} ({}), {} clients, acting {:?}{}: {} {} budgets, each exhaustive up to {} states, \
             else {} random walks from seed {}; on {} threads",
            first.name,
            first.variant,
            first.clients,
            first.acting_name(),
            super::check::job_shape(first),
            recipes.len(),
            if spec == STANDARD {
                "standard"
            } else {
                "fault"
            },
            settings.states,
            settings.walks,
            settings.seed,
            threads.min(recipes.len())
        );
    }
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let rows: Mutex<Vec<Option<Row>>> = Mutex::new(vec![None; recipes.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads.min(recipes.len()) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(recipe) = recipes.get(index) else {
                    return;
                };
                let row = recipe.checker().one_budget(recipe, &settings);
                eprintln!(
                    "zkharness: budget {} of {}, {}: {} ({:.1} s)",
                    index + 1,
                    recipes.len(),
                    row.budget,
                    row.verdict(),
                    row.seconds
                );
                rows.lock().expect("no thread panicked holding the rows")[index] = Some(row);
            });
        }
    });
    let rows: Vec<Row> = rows
        .into_inner()
        .expect("no thread panicked holding the rows")
        .into_iter()
        .map(|row| row.expect("every budget was checked"))
        .collect();
    let seconds = started.elapsed().as_secs_f64();
    let recipe = &recipes[0];
    let rows_json: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            serde_json::json!({
                "faults": row.budget,
                "search": row.how,
                "states": row.states,
                "unique_states": row.unique_states,
                "walks": row.walks,
                "seconds": row.seconds,
                "result": row.violation.map_or("pass", |_| "violation"),
                "violation": row.violation,
                "sometimes_unreached": row.unreached,
                "command": command(recipe, &row.budget),
            })
        })
        .collect();
    if !args.json {
        print_rows(&rows, recipe, seconds);
    }
    if let Some(index) = rows.iter().position(|row| row.violation.is_some()) {
        return counterexample(args, &recipes[index], &rows[index], &settings, rows_json);
    }
    if args.json {
        let mut report = json_report(
            recipe,
            serde_json::json!({
                "budgets": rows_json,
                "result": "pass",
                "seconds": seconds,
                "threads": threads,
            }),
        );
        // The budgets are the rows'; the report names what was asked for.
        report["faults"] = serde_json::json!(spec);
        say!("{report}");
    }
    note_known_bad(recipe, args.json);
    ExitCode::SUCCESS
}

/// The rows as a table, and what they add up to.
fn print_rows(rows: &[Row], recipe: &Recipe, seconds: f64) {
    say!(
        "{:<32} {:>12} {:>12} {:>8}  verdict",
        "faults",
        "states",
        "walks",
        "seconds"
    );
    for row in rows {
        say!(
            "{:<32} {:>12} {:>12} {:>8.1}  {}",
            row.budget,
            row.states,
            if row.how == "walks" {
                row.walks.to_string()
            } else {
                "-".to_owned()
            },
            row.seconds,
            row.verdict()
        );
    }
    let walked = rows.iter().filter(|row| row.how == "walks").count();
    say!(
        "{} budgets in {seconds:.1} s: {} violated, {} exhaustive, {walked} by walks where the \
         exhaustive check gave up",
        rows.len(),
        rows.iter().filter(|row| row.violation.is_some()).count(),
        rows.len() - walked
    );
    for row in rows.iter().filter(|row| row.violation.is_some()) {
        say!("  checks it alone: {}", command(recipe, &row.budget));
    }
}

/// Checks the violated budget of `row` once more as `check --faults BUDGET` does, with the same
/// search and limits, so that its counterexample is printed, shortened and exported; with
/// `--json` that check's report carries every row as `budgets`.
fn counterexample(
    args: &CheckArgs,
    recipe: &Recipe,
    row: &Row,
    settings: &Settings,
    rows_json: Vec<serde_json::Value>,
) -> ExitCode {
    let mut one = args.clone();
    one.max_states = settings.states;
    one.walks = (row.how == "walks").then_some(settings.walks);
    one.budget_rows = Some(serde_json::Value::Array(rows_json));
    if !args.json {
        say!("\nthe first violated budget, {}:", row.budget);
    }
    // `run_check` takes the walks itself where `one.walks` says.
    recipe.checker().check(recipe, &one)
}

/// The `zkharness check` command that checks `budget` alone.
fn command(recipe: &Recipe, budget: &str) -> String {
    format!(
        "zkharness check {} --variant {} --clients {} --acting {}{} --faults {budget}",
        recipe.name,
        recipe.variant,
        recipe.clients,
        recipe.acting_name(),
        super::check::job_shape(recipe)
    )
}

pub(crate) fn one_budget<W: Workload>(
    model: RecipeModel<W>,
    recipe: &Recipe,
    settings: &Settings,
) -> Row {
    let started = Instant::now();
    let model = RecipeModel {
        partial_order: settings.partial_order,
        claims_judged: settings.claims_judged,
        ..model
    };
    let limits = Limits {
        max_states: Some(settings.states),
        max_depth: settings.max_depth,
        symmetry: settings.symmetry,
        preemptions: None,
        compact_mib: None,
        threads: 1,
    };
    let verdict: Verdict =
        check_searched(&model, limits, super::SearcherArg::Ours.searcher(), None);
    let mut row = Row {
        budget: recipe.faults.clone(),
        how: "exhaustive",
        violation: verdict.violation.as_ref().map(|v| v.property),
        states: verdict.states,
        unique_states: verdict.unique_states,
        walks: 0,
        seconds: 0.0,
        unreached: verdict.unreached.clone(),
    };
    if row.violation.is_none() && !verdict.complete {
        let walked: WalkVerdict = walk(
            &model,
            WalkLimits {
                walks: settings.walks,
                seed: settings.seed,
                max_depth: settings.max_depth,
            },
        );
        row.how = "walks";
        row.violation = walked.violation.as_ref().map(|v| v.property);
        row.walks = walked.walks;
        row.unreached = walked.unreached.clone();
    }
    row.seconds = started.elapsed().as_secs_f64();
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_every_kind_alone_and_every_pair_once() {
        let all = budgets("all").expect("all");
        assert_eq!(all.len(), 6 + 15);
        let distinct: std::collections::BTreeSet<&String> = all.iter().collect();
        assert_eq!(distinct.len(), all.len());
        for budget in &all {
            zkh_model::check::FaultBudget::parse(budget).expect("a budget the model reads");
        }
        assert_eq!(budgets("singles").expect("singles").len(), 6);
    }

    #[test]
    fn a_list_is_checked_budget_by_budget() {
        assert_eq!(
            budgets("crash=1; expire=1,crash=1").expect("two"),
            vec!["crash=1", "expire=1,crash=1"]
        );
        let error = budgets("crash=1;storm=2").expect_err("an unknown kind");
        assert!(error.contains("storm"), "{error}");
        assert!(budgets(" ; ").is_err());
    }
}
