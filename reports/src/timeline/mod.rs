//! A run as one self-contained HTML page: the timeline a person reads to see what happened.
//!
//! The page has, top to bottom: what ran (scenario, seed, outcome, the command that reproduces
//! it), the findings, the **timeline** (a lane per client with its connection, role and
//! ephemeral nodes; a lane per server; faults shaded over the lanes they hit; each violation
//! as a red line with its property, linked to the history rows that show it), and the whole
//! **history** as a table, filterable by client and kind, each row linked to its moment on the
//! timeline. The time axis zooms (wheel, or the buttons) and pans (drag).
//!
//! It loads nothing: the lanes are data ([`lanes::Lanes`]) embedded as JSON and drawn into an
//! inline SVG by a small script; the styles are inline; a Content-Security-Policy forbids any
//! request. Every string from a run is escaped: HTML text through [`escape`], the embedded
//! JSON with `<`, `>` and `&` as `\u` escapes, and the script writes strings only as text
//! nodes. The same page draws a model checker's counterexample, with steps for time
//! ([`TimeUnit::Step`]).

pub mod lanes;

use std::fmt::Write as _;

use zkh_model::History;

use crate::herd::{chart, Herd};
use crate::types::{FindingRecord, RunReport};

/// What the time axis counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Simulated microseconds (a run).
    Micros,
    /// Steps of a path (a model checker's counterexample).
    Step,
}

/// What a page shows.
#[derive(Clone, Debug)]
pub struct Page<'a> {
    /// The page's title.
    pub title: String,
    /// Facts shown at the top, as (name, value): scenario, seed, outcome, ...
    pub facts: Vec<(String, String)>,
    /// The command that reproduces it, if there is one.
    pub repro: Option<String>,
    /// The findings.
    pub findings: &'a [FindingRecord],
    /// ZooKeeper's own guarantees judged on the history (none for a model checker's path).
    pub guarantees: &'a [FindingRecord],
    /// The history.
    pub history: &'a History,
    /// What the time axis counts.
    pub unit: TimeUnit,
    /// For a lock, waiters woken per release, drawn below the timeline.
    pub herd: Option<&'a Herd>,
}

impl<'a> Page<'a> {
    /// The page of a run report.
    pub fn of_run(report: &'a RunReport) -> Page<'a> {
        Page {
            title: format!("{} seed {}", report.scenario.name, report.seed),
            facts: vec![
                ("scenario".to_owned(), report.scenario.path.clone()),
                ("recipe".to_owned(), recipe_of(report)),
                ("seed".to_owned(), report.seed.to_string()),
                ("outcome".to_owned(), report.outcome.headline()),
                (
                    "as expected".to_owned(),
                    if report.expected { "yes" } else { "no" }.to_owned(),
                ),
                ("trace".to_owned(), report.trace.clone()),
                (
                    "simulated".to_owned(),
                    format!("{} ms", report.simulated_ms),
                ),
                ("commit".to_owned(), report.commit.clone()),
            ],
            repro: Some(report.repro.clone()),
            findings: &report.findings,
            guarantees: &report.guarantees,
            history: &report.history,
            unit: TimeUnit::Micros,
            herd: report.herd.as_ref(),
        }
    }
}

/// The report's recipe and variant, and for a recipe of the user's own the crate and version
/// that registered it: `id-allocator loss-as-success (zkh-example-id-allocator 0.1.0)`.
fn recipe_of(report: &RunReport) -> String {
    let option = |key: &str| report.options[key].as_str().unwrap_or("?").to_owned();
    let recipe = format!("{} {}", option("recipe"), option("variant"));
    match &report.recipe_package {
        Some(package) => format!("{recipe} ({package})"),
        None => recipe,
    }
}

/// `text` safe inside HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON safe inside a `<script>` element: no `<`, `>` or `&` (each becomes its `\u` escape,
/// which only strings can hold in JSON, and which mean the same there).
fn script_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value)
        .expect("the timeline's data serialises")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

fn kind(event: &zkh_model::HistoryEvent) -> (&'static str, Option<u32>) {
    use zkh_model::HistoryEvent as E;
    match event {
        E::Invoke { client, .. } => ("request", Some(*client)),
        E::Complete { client, .. } => ("reply", Some(*client)),
        E::Watch { client, .. } => ("watch", Some(*client)),
        E::Session { client, .. } => ("session", Some(*client)),
        E::Fault { .. } => ("fault", None),
        E::Server { .. } => ("server", None),
        E::Role { client, .. } => ("role", Some(*client)),
        E::SideEffect { client, .. } => ("effect", Some(*client)),
        E::Execution { client, .. } => ("execution", Some(*client)),
    }
}

fn time_text(at: u64, unit: TimeUnit) -> String {
    match unit {
        TimeUnit::Micros => format!("{}.{:06} s", at / 1_000_000, at % 1_000_000),
        TimeUnit::Step => format!("step {at}"),
    }
}

/// The page, as one HTML document.
pub fn html(page: &Page<'_>) -> String {
    let lanes = lanes::lanes(page.history, page.findings);
    let evidence: std::collections::BTreeSet<usize> = lanes
        .markers
        .iter()
        .flat_map(|m| m.rows.iter().copied())
        .collect();
    let mut out = String::with_capacity(4096 + page.history.len() * 160);
    let title = escape(&page.title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>zkharness: {title}</title>\n<style>{STYLE}</style></head>\n<body>\n\
         <header><h1>{title}</h1><dl class=\"facts\">"
    );
    for (name, value) in &page.facts {
        let _ = write!(
            out,
            "<div><dt>{}</dt><dd>{}</dd></div>",
            escape(name),
            escape(value)
        );
    }
    out.push_str("</dl>");
    if let Some(repro) = &page.repro {
        let _ = write!(
            out,
            "<p class=\"repro\">Reproduce: <code>{}</code></p>",
            escape(repro)
        );
    }
    out.push_str("</header>\n<section id=\"findings\"><h2>Findings</h2>");
    findings_table(&mut out, page.findings);
    out.push_str("</section>\n");
    if !page.guarantees.is_empty() {
        out.push_str(
            "<section id=\"guarantees\"><h2>ZooKeeper guarantees</h2><p class=\"hint\">The \
             ensemble under the recipe, judged apart from it: a broken guarantee is a fault of \
             the ensemble, not of the recipe.</p>",
        );
        findings_table(&mut out, page.guarantees);
        out.push_str("</section>\n");
    }
    out.push_str(
        "<section id=\"timeline-section\"><h2>Timeline</h2>\
         <div class=\"controls\"><button id=\"zoom-in\" type=\"button\">zoom in</button>\
         <button id=\"zoom-out\" type=\"button\">zoom out</button>\
         <button id=\"zoom-fit\" type=\"button\">fit</button>\
         <span id=\"window\"></span> <span class=\"hint\">wheel to zoom, drag to pan, click a bar for its history row</span></div>\
         <div id=\"timeline\"></div><div id=\"legend\"></div></section>\n",
    );
    if let Some(herd) = page.herd.filter(|herd| herd.releases > 0) {
        let _ = writeln!(
            out,
            "<section id=\"herd\"><h2>Herd effect</h2><p>Each release that woke a waiter: how many \
             clients were waiting, and how many it woke (mean, with the most as a thin bar). A \
             herd-free lock wakes one. This run: {} releases, {:.2} woken each on average, at most {}.</p>{}</section>",
            herd.releases,
            herd.woken_mean,
            herd.woken_max,
            chart(&[("this run", herd)])
        );
    }
    out.push_str(
        "<section id=\"history\"><h2>History</h2><div class=\"controls\">\
         <label>client <select id=\"filter-client\"><option value=\"\">all</option></select></label> \
         <label>kind <select id=\"filter-kind\"><option value=\"\">all</option></select></label> \
         <span id=\"shown\"></span></div>\
         <table id=\"rows\"><thead><tr><th>#</th><th>time</th><th>client</th><th>kind</th><th>event</th></tr></thead><tbody>\n",
    );
    for (row, entry) in page.history.entries().iter().enumerate() {
        let (kind, client) = kind(&entry.event);
        let client_text = client.map_or_else(String::new, |c| c.to_string());
        let class = if evidence.contains(&row) {
            " class=\"evidence\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<tr id=\"row-{row}\" data-at=\"{}\" data-client=\"{client_text}\" data-kind=\"{kind}\"{class}>\
             <td><a href=\"#timeline\" data-goto=\"{row}\">{row}</a></td><td>{}</td><td>{client_text}</td><td>{kind}</td><td>{}</td></tr>",
            entry.at_us,
            time_text(entry.at_us, page.unit),
            escape(&entry.event.to_string())
        );
    }
    out.push_str("</tbody></table></section>\n");
    let unit = match page.unit {
        TimeUnit::Micros => "us",
        TimeUnit::Step => "step",
    };
    let _ = write!(
        out,
        "<script id=\"lanes\" type=\"application/json\">{}</script>\n\
         <script>const UNIT = \"{unit}\";\n{SCRIPT}</script>\n</body></html>\n",
        script_json(&lanes)
    );
    out
}

/// `findings` as a table of property, class, verdict and detail.
fn findings_table(out: &mut String, findings: &[FindingRecord]) {
    out.push_str(
        "<table><thead><tr><th>property</th><th>class</th><th>verdict</th><th>detail</th></tr>\
         </thead><tbody>",
    );
    for finding in findings {
        let verdict = match (finding.holds, finding.class.as_str()) {
            (true, "sometimes") => "happened",
            (false, "sometimes") => "not seen",
            (true, _) => "holds",
            (false, _) => "VIOLATED",
        };
        let class = if !finding.holds && finding.class != "sometimes" {
            " class=\"violated\""
        } else {
            ""
        };
        let _ = write!(
            out,
            "<tr{class}><td title=\"{}\">{}</td><td>{}</td><td>{verdict}</td><td>{}</td></tr>",
            escape(&finding.explanation),
            escape(&finding.property),
            escape(&finding.class),
            escape(&finding.detail)
        );
    }
    out.push_str("</tbody></table>");
}
