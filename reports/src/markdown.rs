//! A sweep as Markdown, for a CI job's summary page: one line of totals, a table of the
//! scenarios, and each failure with the command that reproduces it.

use std::fmt::Write as _;

use crate::types::SweepSummary;

/// `text` safe in a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The sweep as Markdown.
pub fn markdown(summary: &SweepSummary) -> String {
    let failing: Vec<_> = summary.scenarios.iter().filter(|s| !s.ok).collect();
    let mut out = String::new();
    let verdict = if summary.ok { "passed" } else { "FAILED" };
    let _ = writeln!(
        out,
        "## zkharness sweep {verdict}\n\n{} scenarios, {} seeds (`{}`{}), {} not as expected; {:.1} s on {} threads, {:.0} seeds/s; commit `{}`{}\n",
        summary.scenarios.len(),
        summary.seeds_run,
        summary.seeds,
        summary
            .shard
            .as_ref()
            .map_or_else(String::new, |s| format!(", shard {s}")),
        failing.len(),
        summary.wall_s,
        summary.jobs,
        summary.seeds_run as f64 / summary.wall_s.max(1e-9),
        summary.commit,
        if summary.combined_trace.is_empty() {
            String::new()
        } else {
            format!(", combined trace `{}`", summary.combined_trace)
        }
    );
    out.push_str(
        "| scenario | expected | seeds | result | seeds/s |\n| --- | --- | ---: | --- | ---: |\n",
    );
    for scenario in &summary.scenarios {
        let result = if !scenario.ok {
            if scenario.failures.is_empty() {
                "**not caught**".to_owned()
            } else {
                format!("**{} failing**", scenario.failures.len())
            }
        } else if let Some(first) = scenario.caught_at.first() {
            format!("caught at seed {first}")
        } else {
            "ok".to_owned()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {result} | {:.0} |",
            cell(&scenario.scenario),
            cell(&scenario.expected),
            scenario.seeds_run,
            scenario.seeds_per_sec
        );
    }
    let herds: Vec<_> = (summary.scenarios.iter())
        .filter_map(|s| s.herd.as_ref().map(|herd| (s, herd)))
        .filter(|(_, herd)| herd.releases > 0)
        .collect();
    if !herds.is_empty() {
        out.push_str("\n### Herd effect (locks)\n\nWaiters woken per release: a herd-free lock wakes one.\n\n| scenario | releases | woken per release, mean | max |\n| --- | ---: | ---: | ---: |\n");
        for (scenario, herd) in herds {
            let _ = writeln!(
                out,
                "| {} | {} | {:.2} | {} |",
                cell(&scenario.scenario),
                herd.releases,
                herd.woken_mean,
                herd.woken_max
            );
        }
    }
    let failures: Vec<_> = summary
        .scenarios
        .iter()
        .flat_map(|s| s.failures.iter().map(move |f| (s, f)))
        .collect();
    if !failures.is_empty() {
        out.push_str("\n### Failures\n");
        for (scenario, failure) in failures {
            let _ = write!(
                out,
                "\n- **{}**, seed {}: {} (trace `{}`){}\n\n  ```sh\n  {}\n  ```\n",
                cell(&scenario.scenario),
                failure.seed,
                cell(&failure.property),
                failure.trace,
                failure
                    .report
                    .as_ref()
                    .map_or_else(String::new, |r| format!(", report `{r}`")),
                failure.repro
            );
        }
    }
    out
}
