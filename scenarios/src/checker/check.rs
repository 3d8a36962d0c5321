//! `zkharness check`: the exhaustive search, its text and JSON reports, and a counterexample
//! exported as a scenario.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use crate::export::to_toml;
use crate::registry::known_bad::{known_bad, model_finding, simulator_only};
use crate::Recipe;
use indicatif::{ProgressBar, ProgressStyle};
use stateright::Model;
use zkh_model::check::{
    check_searched, Action, DeepLoops, GaveUp, Lasso, Limits, Progress, RecipeModel, State,
    Workload, LIVELOCK, MAX_LOAD_PERCENT, ORPHANS, OWNERSHIP, PROGRESS, SCHEDULE, SHORTEN_STATES,
};

use super::walks::run_walks;
use crate::report::exit;

use super::{CheckArgs, SearcherArg, BAD_INPUT};

/// How often a check logs its progress where stderr is not a terminal, unless
/// `--progress-secs` says.
const PROGRESS_SECS: u64 = 10;

pub(crate) fn run_check<W: Workload>(
    model: RecipeModel<W>,
    recipe: &Recipe,
    args: &CheckArgs,
) -> ExitCode {
    let model = RecipeModel {
        partial_order: !args.no_partial_order,
        reads_first: args.reads_first,
        claims_judged: !args.no_claims,
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
    } else {
        let every = args.progress_secs.unwrap_or(PROGRESS_SECS);
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
    };
    let seconds = started.elapsed().as_secs_f64();
    let per_second = verdict.unique_states as f64 / seconds.max(1e-9);
    let final_state = (verdict.violation.as_ref()).map(|violation| replay(&model, &violation.path));
    let lasso = (verdict.violation.as_ref()).and_then(|violation| {
        (violation.loop_start).map(|loop_start| Lasso {
            path: violation.path.clone(),
            loop_start,
        })
    });
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
                (
                    "unique states".to_owned(),
                    verdict.unique_states.to_string(),
                ),
                ("shortest".to_owned(), violation.shortest.to_string()),
            ]
            .into_iter()
            .chain(lasso.as_ref().map(|lasso| {
                let loop_steps = format!("steps {} to {}", lasso.loop_start + 1, lasso.path.len());
                ("loop".to_owned(), loop_steps)
            }))
            .collect(),
            lasso: lasso.clone(),
        };
        if let Err(message) = super::check_html::write(file, &model, recipe, &found) {
            eprintln!("zkharness: {message}");
            return ExitCode::from(BAD_INPUT);
        }
    }
    if args.json {
        let result = match (&verdict.violation, &final_state) {
            (Some(violation), Some((_, steps))) => serde_json::json!({
                "violation": violation.property,
                "explanation": super::check_html::explanation(violation.property),
                "path": steps,
                "shortest": violation.shortest,
                "found_steps": violation.found_steps,
                "loop_first_step": violation.loop_start.map(|start| start + 1),
            }),
            _ if !verdict.complete => serde_json::json!("incomplete"),
            _ => serde_json::json!("pass"),
        };
        let mut report = json_report(
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
                "deep_paths": verdict.deep_loops.as_ref().map(deep_loops_json),
                "result": result,
            }),
        );
        if let Some(rows) = &args.budget_rows {
            report["budgets"] = rows.clone();
        }
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
            (Some(violation), Some((state, steps))) if violation.loop_start.is_some() => {
                let lasso = lasso.as_ref().expect("a livelock has its lasso");
                say!("VIOLATION of {LIVELOCK}: {}", lasso.detail());
                say!(
                    "counterexample, {} steps: a stem of {} steps, then a loop of {}",
                    steps.len(),
                    lasso.loop_start,
                    steps.len() - lasso.loop_start
                );
                print_steps(steps, Some(lasso.loop_start), args);
            }
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
                print_steps(steps, None, args);
            }
            _ => match verdict.gave_up {
                Some(GaveUp::States(max)) => say!(
                    "INCOMPLETE: no violation in the first {} states; the check gave up at \
                     --max-states {max}\n(a larger --max-states costs time and 10.7 to 13.3 \
                     bytes a unique state, or 4 a slot with --compact-mib; fewer --clients or a \
                     smaller --faults budget shrink the space){}",
                    verdict.states,
                    narrower_searches(args)
                ),
                Some(GaveUp::VisitedFull(mib)) => say!(
                    "INCOMPLETE: no violation in the first {} states; the check gave up when \
                     {MAX_LOAD_PERCENT}% of the visited set's slots were taken (--compact-mib \
                     {mib})\n(a larger --compact-mib holds more: 4 bytes a slot){}",
                    verdict.states,
                    narrower_searches(args)
                ),
                Some(GaveUp::Depth(max)) => say!(
                    "INCOMPLETE: no violation in {} states, but some paths are longer than \
                     --max-depth {max} steps\n{}",
                    verdict.states,
                    deep_loops_text(verdict.deep_loops.as_ref())
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
    if let Some(violation) = &verdict.violation {
        note_finding(recipe, violation.property, args.json);
        return ExitCode::from(violation_code(violation.property));
    }
    note_known_bad(recipe, args.json);
    if !verdict.complete {
        ExitCode::from(exit::GAVE_UP)
    } else {
        ExitCode::SUCCESS
    }
}

/// The exit code of a violation of `property`: liveness for an `eventually` property, safety
/// for an `always` one.
pub(crate) fn violation_code(property: &str) -> u8 {
    match property {
        "leader elected" | "no shard lost" | LIVELOCK => exit::LIVENESS,
        _ => exit::SAFETY,
    }
}

/// For a search that gave up at a limit of its space: the searches of a stated part of it that
/// the check did not already use, and the random walks, each a line (empty when none is left).
fn narrower_searches(args: &CheckArgs) -> String {
    let mut lines = String::new();
    if args.preemptions.is_none() && !args.reads_first {
        lines.push_str(
            "\nwhere the whole space is out of reach, search a stated part of it to the end: \
             --preemptions K (every schedule with at most K preemptions) or --reads-first \
             (every schedule where the server answers a waiting read at once)",
        );
    }
    lines
        .push_str("\nor sample the whole space with --walks N (finds bugs; a pass proves nothing)");
    lines
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
pub(crate) fn json_report(recipe: &Recipe, fields: serde_json::Value) -> serde_json::Value {
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

pub(crate) fn print_banner(recipe: &Recipe) {
    say!(
        "{} ({}), {} clients, faults {}, acting {}",
        recipe.name,
        recipe.variant,
        recipe.clients,
        recipe.faults,
        format!("{:?}", recipe.acting_name())
    );
}

/// The `sometimes` properties nothing reached, if any, and why that matters (`says_less`).
pub(crate) fn print_unreached(unreached: &[&str], says_less: &str) {
    if !unreached.is_empty() {
        say!(
            "note: never reached ({says_less}): {}",
            unreached.join(", ")
        );
    }
}

/// The violated property, and what its function says of the path's last state.
pub(crate) fn print_violation<W: Workload>(
    model: &RecipeModel<W>,
    property: &str,
    state: &State<W>,
) {
    let detail = if property == PROGRESS {
        model.stuck_detail(state)
    } else if property == OWNERSHIP {
        model.unowned_detail(state)
    } else if property == ORPHANS {
        model.orphan_detail(state)
    } else if property == SCHEDULE {
        model.unscheduled_detail(state)
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

/// What the paths a search cut off at its depth showed, for the JSON report.
fn deep_loops_json(deep: &DeepLoops) -> serde_json::Value {
    match deep {
        DeepLoops::Livelock(_) => serde_json::json!({"livelock": true}),
        DeepLoops::RepeatedNotLivelock { paths } => {
            serde_json::json!({"examined": paths, "came_back": true, "livelock": false})
        }
        DeepLoops::NotRepeated { paths } => {
            serde_json::json!({"examined": paths, "came_back": false, "livelock": false})
        }
    }
}

/// What the paths a search cut off at its depth showed, and what to do next, in words.
fn deep_loops_text(deep: Option<&DeepLoops>) -> String {
    let next = "raise --max-depth, or sample deeper with --walks N";
    match deep {
        Some(DeepLoops::RepeatedNotLivelock { paths }) => format!(
            "(of {paths} paths cut off there and examined, some came back to a state they had been \
             in, up to the numbers that only grow, but each such loop made progress or left a \
             client's step waiting: no livelock; {next})"
        ),
        Some(DeepLoops::NotRepeated { paths }) => format!(
            "(none of {paths} paths cut off there and examined came back to a state it had been in, \
             up to the numbers that only grow: the space is deep, not looping; {next})"
        ),
        Some(DeepLoops::Livelock(_)) | None => format!("({next})"),
    }
}

/// A counterexample's steps, numbered, and where it was exported; a livelock's loop, from
/// `loop_start` on, marked.
pub(crate) fn print_steps(steps: &[String], loop_start: Option<usize>, args: &CheckArgs) {
    for (index, step) in steps.iter().enumerate() {
        let mark = match loop_start {
            Some(start) if index == start => {
                say!("      loop (back to the state after step {start}, for ever):");
                "↻ "
            }
            Some(start) if index > start => "↻ ",
            Some(_) => "  ",
            None => " ",
        };
        say!("{:>4}.{mark}{step}", index + 1);
    }
    if let Some(path) = &args.export {
        say!("exported to {}", path.display());
    }
}

/// Replays a counterexample keeping the whole history, so that the violation is explained with
/// every event of its path and their true places: its last state, and each step described.
pub(crate) fn replay<W: Workload>(
    model: &RecipeModel<W>,
    path: &[Action],
) -> (State<W>, Vec<String>) {
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

/// Writes a counterexample as a scenario file (TOML) that `zkharness run` runs.
pub(crate) fn write_scenario<W: Workload>(
    file: &std::path::Path,
    recipe: &Recipe,
    model: &RecipeModel<W>,
    property: &str,
    path: &[Action],
) -> Result<(), String> {
    let command: Vec<String> = std::env::args().skip(1).collect();
    let command = format!("zkharness {}", command.join(" "));
    let scenario = crate::export::export_from(recipe, model, property, path, &command);
    std::fs::write(file, to_toml(&scenario))
        .map_err(|error| format!("cannot write {}: {error}", file.display()))?;
    #[cfg(madsim)]
    verify_export(file);
    Ok(())
}

/// Runs the exported scenario `file` on the simulated ensemble for the seeds it expects its
/// violation within, and says on stderr whether the simulator reproduced it: the export keeps
/// the faults and their order, and the simulator supplies the timing, which the model's
/// interleaving may need otherwise (then the scenario is a lead, not a reproduction).
#[cfg(madsim)]
fn verify_export(file: &std::path::Path) {
    let shown = file.display();
    match reproduced(file) {
        Err(message) => eprintln!("zkharness: {shown}: {message}"),
        Ok(Reproduced::NotJudged) => eprintln!(
            "zkharness: {shown}: the simulator does not judge this property; the scenario runs \
             the counterexample's faults for a look at its timeline"
        ),
        Ok(Reproduced::At(property, seed)) => {
            eprintln!("zkharness: {shown}: the simulator reproduces \"{property}\" at seed {seed}")
        }
        Ok(Reproduced::Not(property, seeds)) => eprintln!(
            "zkharness: {shown}: NOT REPRODUCED: the simulator did not show \"{property}\" on \
             any of seeds 0..{seeds}: the export keeps the counterexample's faults and their \
             order, not the timing its interleaving needs; sweep more seeds, or script the \
             faults nearer the operations they must meet"
        ),
    }
}

/// What the simulator made of an exported scenario.
#[cfg(madsim)]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reproduced {
    /// The simulator does not judge the property (a model-only one).
    NotJudged,
    /// The property was violated at this seed.
    At(String, u64),
    /// Not on any of this many seeds.
    Not(String, u64),
}

/// Runs the scenario `file` for the seeds it expects its violation within (see
/// [`verify_export`]).
#[cfg(madsim)]
pub(crate) fn reproduced(file: &std::path::Path) -> Result<Reproduced, String> {
    let loaded = crate::scenario::load(file).map_err(|error| error.to_string())?;
    let scenario = &loaded.resolved;
    let Some(expected) = &scenario.expect_violation else {
        return Ok(Reproduced::NotJudged);
    };
    let seeds = scenario.sweep_seeds(0..scenario.within_seeds);
    let caught = (seeds.iter()).find(|seed| {
        let result = crate::runner::run(scenario, **seed);
        // Shown, whether or not another violation heads the run's outcome.
        (result.findings.iter()).any(|f| f.property == *expected && !f.holds)
    });
    Ok(match caught {
        Some(seed) => Reproduced::At(expected.clone(), *seed),
        None => Reproduced::Not(expected.clone(), scenario.within_seeds),
    })
}

#[cfg(all(test, madsim))]
mod tests {
    use super::*;

    /// The check can fail: a scenario expecting a violation its recipe never shows is not
    /// reproduced; the catalogue's herd control is, at seed 0.
    #[test]
    fn an_export_that_the_simulator_does_not_reproduce_is_told_apart() {
        let dir = std::env::temp_dir().join(format!("zkh-reproduced-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let never = dir.join("never.toml");
        let text = "[workload]\nrecipe = \"lock-model\"\nclients = 3\n\n[phases]\n\
                    fault_ms = 3000\nliveness_ms = 2000\n\n[expect]\nviolation = \"herd free\"\n\
                    within_seeds = 2\n";
        std::fs::write(&never, text).expect("written");
        assert_eq!(
            reproduced(&never),
            Ok(Reproduced::Not("herd free".to_owned(), 2))
        );
        let herd = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("catalog/control-lock-model-herd.toml");
        assert_eq!(
            reproduced(&herd),
            Ok(Reproduced::At("herd free".to_owned(), 0))
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}

/// For a known-bad variant that showed no violation, how it is caught (on stdout with the
/// text report, on stderr beside a JSON one): under other options its bug may not be able to
/// happen, and a pass there does not mean it is fixed.
pub(crate) fn note_known_bad(recipe: &Recipe, json: bool) {
    let note = if let Some(entry) = simulator_only(&recipe.name, &recipe.variant) {
        format!(
            "note: {} is a known-bad variant of {} that only the simulator catches ({}): {}",
            entry.variant, recipe.name, entry.scenario, entry.why
        )
    } else if let Some(entry) = known_bad(&recipe.name, &recipe.variant) {
        format!(
            "note: {} is a known-bad variant of {}, and this check did not show its bug; it \
             breaks \"{}\" under: {}",
            entry.variant,
            recipe.name,
            entry.property,
            entry.command()
        )
    } else {
        return;
    };
    if json {
        eprintln!("{note}");
    } else {
        say!("{note}");
    }
}

/// For a violation that is a recorded finding in a faithful profile (not a defect of the
/// harness or of our port), what it is (on stdout with the text report, on stderr beside a JSON
/// one).
pub(crate) fn note_finding(recipe: &Recipe, property: &str, json: bool) {
    let Some(finding) = model_finding(&recipe.name, &recipe.variant, property) else {
        return;
    };
    let note = format!(
        "note: a recorded finding in the upstream code this recipe ports, not a defect of the \
         harness: {}",
        finding.what
    );
    if json {
        eprintln!("{note}");
    } else {
        say!("{note}");
    }
}

/// The job's `--items` and `--cycles`, as the command line gives them.
pub(crate) fn job_shape(recipe: &Recipe) -> String {
    match &recipe.shape {
        Some(job) => format!(" --items {} --cycles {}", job.items, job.cycles),
        None => String::new(),
    }
}
