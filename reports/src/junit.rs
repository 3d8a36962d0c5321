//! A sweep as JUnit XML, for CI systems that show test results.
//!
//! One `<testsuite>` per scenario, named by the scenario, with its file, expectation, seeds
//! and speed as `<properties>`. Inside it, one `<testcase>` per seed that did not end as
//! expected, named `seed N`, whose `<failure>` carries the property (as its `message` and
//! `type`) and, as its text, the scenario, the seed, the trace and the command that reproduces
//! it; and one `<testcase>` for the rest of the seeds together (for a positive control: "caught
//! within its seeds", failed if it was not).
//!
//! Why not a test case per passing seed: a catalogue sweep runs tens of thousands of seeds,
//! and tens of thousands of identical green rows tell a CI page nothing a count does not,
//! while making the file megabytes long. The `tests` count of each suite is still its number
//! of seeds.

use std::fmt::Write as _;

use crate::timeline::escape;
use crate::types::{ScenarioSummary, SweepSummary};

fn property(out: &mut String, name: &str, value: &str) {
    let _ = writeln!(
        out,
        "      <property name=\"{}\" value=\"{}\"/>",
        escape(name),
        escape(value)
    );
}

fn suite(out: &mut String, scenario: &ScenarioSummary, seeds: &str, commit: &str) {
    let failures = if scenario.ok {
        scenario.failures.len()
    } else {
        scenario.failures.len().max(1)
    };
    let seconds = if scenario.seeds_per_sec > 0.0 {
        scenario.seeds_run as f64 / scenario.seeds_per_sec
    } else {
        0.0
    };
    let _ = write!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{seconds:.3}\">\n    <properties>\n",
        escape(&scenario.scenario),
        scenario.seeds_run.max(1),
    );
    property(out, "path", &scenario.path);
    property(out, "expected", &scenario.expected);
    property(out, "seeds", seeds);
    property(out, "seeds_run", &scenario.seeds_run.to_string());
    property(
        out,
        "seeds_per_sec",
        &format!("{:.1}", scenario.seeds_per_sec),
    );
    property(out, "combined_trace", &scenario.combined_trace);
    property(out, "commit", commit);
    if !scenario.caught_at.is_empty() {
        let caught: Vec<String> = scenario.caught_at.iter().map(u64::to_string).collect();
        property(out, "caught_at", &caught.join(","));
    }
    out.push_str("    </properties>\n");
    for failure in &scenario.failures {
        let _ = write!(
            out,
            "    <testcase classname=\"{name}\" name=\"seed {seed}\">\n      <failure message=\"{property}\" type=\"{property}\">scenario: {path}\nseed: {seed}\nproperty: {property}\ntrace: {trace}\nreproduce: {repro}{report}</failure>\n    </testcase>\n",
            name = escape(&scenario.scenario),
            seed = failure.seed,
            property = escape(&failure.property),
            path = escape(&scenario.path),
            trace = escape(&failure.trace),
            repro = escape(&failure.repro),
            report = failure
                .report
                .as_ref()
                .map_or_else(String::new, |r| format!("\nreport: {}", escape(r))),
        );
    }
    let rest = scenario.seeds_run - scenario.failures.len() as u64;
    if scenario.expected == "pass" {
        let _ = writeln!(
            out,
            "    <testcase classname=\"{}\" name=\"{rest} seeds as expected\"/>",
            escape(&scenario.scenario)
        );
    } else {
        let name = format!("{} caught within its seeds", scenario.expected);
        if scenario.ok {
            let _ = writeln!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\"/>",
                escape(&scenario.scenario),
                escape(&name)
            );
        } else if scenario.failures.is_empty() {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\">\n      <failure message=\"not caught\" type=\"not caught\">the positive control was not caught in {} seeds</failure>\n    </testcase>\n",
                escape(&scenario.scenario),
                escape(&name),
                scenario.seeds_run
            );
        }
    }
    out.push_str("  </testsuite>\n");
}

/// The sweep as a JUnit XML document.
pub fn junit(summary: &SweepSummary) -> String {
    let failures: usize = summary
        .scenarios
        .iter()
        .map(|s| {
            if s.ok {
                s.failures.len()
            } else {
                s.failures.len().max(1)
            }
        })
        .sum();
    let tests: u64 = summary.scenarios.iter().map(|s| s.seeds_run.max(1)).sum();
    let mut out = String::new();
    let _ = write!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"zkharness sweep {}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{:.3}\">\n",
        escape(&summary.seeds),
        summary.wall_s
    );
    for scenario in &summary.scenarios {
        suite(&mut out, scenario, &summary.seeds, &summary.commit);
    }
    out.push_str("</testsuites>\n");
    out
}
