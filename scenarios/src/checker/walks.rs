//! `zkharness check --walks N`: seeded random walks, their report, and a violation shrunk and
//! exported.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use crate::Recipe;
use indicatif::{ProgressBar, ProgressStyle};
use zkh_model::check::{
    walk, walk_observed, Lasso, RecipeModel, WalkLimits, WalkVerdict, Workload, LIVELOCK,
};

use super::check::{
    job_shape, json_report, note_known_bad, print_banner, print_steps, print_unreached,
    print_violation, replay, write_scenario,
};
use super::{CheckArgs, BAD_INPUT};

/// `zkharness check --walks N`: seeded random walks through the model's states.
pub(crate) fn run_walks<W: Workload>(
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
        if let Err(message) =
            write_scenario(path, recipe, &model, violation.property, &violation.path)
        {
            eprintln!("zkharness: {message}");
            return ExitCode::from(BAD_INPUT);
        }
    }
    if let (Some(file), Some(violation)) = (&args.html, &verdict.violation) {
        let found = super::check_html::Found {
            property: violation.property,
            path: &violation.path,
            facts: vec![
                ("walk".to_owned(), violation.walk.to_string()),
                ("seed".to_owned(), args.seed.to_string()),
            ],
            lasso: (violation.loop_start).map(|loop_start| Lasso {
                path: violation.path.clone(),
                loop_start,
            }),
        };
        if let Err(message) = super::check_html::write(file, &model, recipe, &found) {
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
        recipe.acting_name(),
        job_shape(recipe),
        args.max_depth,
        args.seed,
        verdict.walks,
    );
    if args.json {
        let result = match (&verdict.violation, &final_state) {
            (Some(violation), Some((_, steps))) => serde_json::json!({
                "violation": violation.property,
                "explanation": super::check_html::explanation(violation.property),
                "path": steps,
                "shortest": false,
                "walk": violation.walk,
                "walk_steps": violation.found_steps,
                "loop_first_step": violation.loop_start.map(|start| start + 1),
            }),
            _ => serde_json::json!("no-violation-found"),
        };
        let mut report = json_report(
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
        if let Some(rows) = &args.budget_rows {
            report["budgets"] = rows.clone();
        }
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
            (Some(violation), Some((_, steps))) if violation.loop_start.is_some() => {
                let lasso = Lasso {
                    path: violation.path.clone(),
                    loop_start: violation.loop_start.expect("checked above"),
                };
                say!("VIOLATION of {LIVELOCK}: {}", lasso.detail());
                say!(
                    "counterexample, {} steps: a stem of {} steps, then a loop of {} (walk {} was \
                     cut off at --max-depth after {} steps, and went on fairly into the loop)",
                    steps.len(),
                    lasso.loop_start,
                    steps.len() - lasso.loop_start,
                    violation.walk,
                    violation.found_steps
                );
                print_steps(steps, Some(lasso.loop_start), args);
            }
            (Some(violation), Some((state, steps))) => {
                print_violation(&model, violation.property, state);
                say!(
                    "counterexample, {} steps (walk {} failed after {} steps; shrunk, so it may \
                     not be the shortest):",
                    steps.len(),
                    violation.walk,
                    violation.found_steps
                );
                print_steps(steps, None, args);
            }
            _ => say!(
                "no violation found in {} walks (random walks visit some states, not all: this \
                 is not a proof)",
                verdict.walks
            ),
        }
        say!("repeat: {repeat}");
    }
    if let Some(violation) = &verdict.violation {
        super::check::note_finding(recipe, violation.property, args.json);
        ExitCode::from(super::check::violation_code(violation.property))
    } else {
        note_known_bad(recipe, args.json);
        ExitCode::SUCCESS
    }
}
