//! `zkharness report FILE`: renders a saved run report or sweep summary again, in any build
//! (it runs nothing): a run report as its HTML timeline (`--html`), a sweep summary as JUnit
//! XML (`--junit`) or Markdown (`--markdown`, `-` for standard output).

use std::path::Path;
use std::process::ExitCode;

use crate::report::exit;
use zkh_reports::types::{RunReport, SweepSummary, RUN_FORMAT, SWEEP_FORMAT};
use zkh_reports::{junit, markdown, timeline};

use super::ReportArgs;

fn write(path: &Path, text: &str) -> Result<(), String> {
    if path.as_os_str() == "-" {
        print!("{text}");
        return Ok(());
    }
    std::fs::write(path, text).map_err(|error| format!("cannot write {}: {error}", path.display()))
}

/// `text`, the file `path`, read as a `what`; refused with the line and column of the first
/// thing that is not one (the typed read of the text itself, which knows where it is).
pub(super) fn typed<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
    what: &str,
) -> Result<T, String> {
    serde_json::from_str(text).map_err(|error| {
        format!(
            "{}:{}:{}: not a readable {what}: {error}",
            path.display(),
            error.line(),
            error.column()
        )
    })
}

fn render(args: &ReportArgs) -> Result<Vec<String>, String> {
    let shown = args.input.display();
    let text = std::fs::read_to_string(&args.input)
        .map_err(|error| format!("{shown}: cannot read the file: {error}"))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|error| {
        format!(
            "{shown}:{}:{}: not JSON: {error}",
            error.line(),
            error.column()
        )
    })?;
    let format = value["format"].as_str().unwrap_or("");
    let mut written = Vec::new();
    match format {
        RUN_FORMAT => {
            if args.junit.is_some() || args.markdown.is_some() {
                return Err(format!(
                    "{shown} is a run report: it renders as --html; --junit and --markdown render a sweep summary"
                ));
            }
            let report: RunReport = typed(&args.input, &text, "run report")?;
            let html = args
                .html
                .clone()
                .unwrap_or_else(|| args.input.with_extension("html"));
            write(&html, &timeline::html(&timeline::Page::of_run(&report)))?;
            written.push(format!("timeline: {}", html.display()));
        }
        SWEEP_FORMAT => {
            if args.html.is_some() {
                return Err(format!(
                    "{shown} is a sweep summary: it renders as --junit or --markdown; --html renders a run report (each failure's report is one)"
                ));
            }
            let summary: SweepSummary = typed(&args.input, &text, "sweep summary")?;
            if args.junit.is_none() && args.markdown.is_none() {
                return Err(format!(
                    "{shown} is a sweep summary: say what to write, --junit FILE or --markdown FILE (- for standard output)"
                ));
            }
            if let Some(file) = &args.junit {
                write(file, &junit::junit(&summary))?;
                written.push(format!("junit: {}", file.display()));
            }
            if let Some(file) = &args.markdown {
                write(file, &markdown::markdown(&summary))?;
                written.push(format!("markdown: {}", file.display()));
            }
        }
        _ if value.get("format").is_none() => {
            return Err(format!(
                "{shown}:1:1: no \"format\" field: neither a run report ({RUN_FORMAT}) nor a \
                 sweep summary ({SWEEP_FORMAT})"
            ))
        }
        other => {
            return Err(format!(
                "{shown}: format {other:?} is neither a run report ({RUN_FORMAT}) nor a sweep summary ({SWEEP_FORMAT})"
            ))
        }
    }
    Ok(written)
}

/// Runs `zkharness report`.
pub fn report(args: ReportArgs) -> ExitCode {
    match render(&args) {
        Ok(written) => {
            for line in written.iter().filter(|line| !line.ends_with(": -")) {
                eprintln!("{line}");
            }
            ExitCode::from(exit::PASS)
        }
        Err(message) => {
            eprintln!("zkharness: {message}");
            ExitCode::from(exit::BAD_INPUT)
        }
    }
}
