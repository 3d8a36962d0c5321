//! `zkharness differential`: the simulated ensemble held against a real one. The guarantee
//! probe runs under one fault on the simulated ensemble, seed after seed, and on a real
//! three-server ensemble (the normal build's `zkharness guarantees-real`, run as a child), and
//! the two are put side by side: each guarantee's verdicts, then what the clients saw (answers
//! by kind, session events, how long writes stopped after the fault and after its heal).
//!
//! A difference in verdicts is a defect of one ensemble or of the checker; a difference in
//! what the clients saw is how far the simulated timing is from the real one (the simulated
//! network's latencies, the election's duration), which the report shows rather than judges.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, ExitCode};

use crate::report::exit;
use serde::Serialize;
use zkh_model::probe::{
    verdicts, Phases, ProbeFault, Profile, Verdict, CLIENTS, SESSION_TIMEOUT_MS,
};

use super::DifferentialArgs;

/// One side's runs.
#[derive(Serialize, Default)]
struct Side {
    runs: usize,
    /// Per guarantee, how many runs gave each verdict.
    verdicts: BTreeMap<String, BTreeMap<String, usize>>,
    profiles: Vec<Profile>,
    /// Violations, with the run (seed) that showed each.
    violations: Vec<String>,
}

impl Side {
    fn add(&mut self, run: &str, rows: &[Verdict], profile: Profile) {
        self.runs += 1;
        for row in rows {
            let counts = self.verdicts.entry(row.guarantee.to_owned()).or_default();
            *counts.entry(row.verdict.to_owned()).or_default() += 1;
            if row.verdict == "violated" {
                self.violations
                    .push(format!("{run}: {}: {}", row.guarantee, row.detail));
            }
        }
        self.profiles.push(profile);
    }

    fn verdict_text(&self, guarantee: &str) -> String {
        match self.verdicts.get(guarantee) {
            None => "-".to_owned(),
            Some(counts) => {
                let parts: Vec<String> = counts.iter().map(|(v, n)| format!("{v} {n}")).collect();
                parts.join(", ")
            }
        }
    }
}

/// What `differential --json` writes.
#[derive(Serialize)]
struct Differential {
    format: &'static str,
    fault: ProbeFault,
    phases: Phases,
    clients: u32,
    session_timeout_ms: u64,
    simulated: Side,
    real: Option<Side>,
}

pub(super) fn differential(args: DifferentialArgs) -> ExitCode {
    if !args.sim_only {
        if let Some(refused) = super::refuse_missing_real_ensemble() {
            return refused;
        }
    }
    let phases = Phases::default();
    let mut simulated = Side::default();
    eprintln!(
        "differential: the guarantee probe, fault {}, on the simulated ensemble (seeds {}..{})",
        args.fault.name(),
        args.seeds.start,
        args.seeds.end
    );
    let fault = args.fault;
    for seed in args.seeds.clone() {
        let run = zkh_sim::run::try_run_seed(seed, 120, move |seed| async move {
            let run = zkh_sim::probe::run(seed, fault, phases).await;
            (verdicts(&run.findings, false), run.profile)
        });
        match run {
            Ok((rows, profile)) => simulated.add(&format!("seed {seed}"), &rows, profile),
            Err(message) => return fail(&format!("seed {seed} crashed: {message}")),
        }
    }
    let real = if args.sim_only {
        None
    } else {
        let mut side = Side::default();
        for run in 0..args.real_runs {
            match real_run(args.fault, u64::from(run)) {
                Ok((rows, profile)) => side.add(&format!("real run {run}"), &rows, profile),
                Err(message) => return fail(&message),
            }
        }
        Some(side)
    };
    print_report(args.fault, phases, &simulated, real.as_ref());
    let violated =
        !simulated.violations.is_empty() || real.as_ref().is_some_and(|r| !r.violations.is_empty());
    if let Some(path) = &args.json {
        let report = Differential {
            format: "zkharness-differential/1",
            fault: args.fault,
            phases,
            clients: CLIENTS,
            session_timeout_ms: SESSION_TIMEOUT_MS,
            simulated,
            real,
        };
        if let Err(message) = super::write_json(path, &report) {
            return fail(&message);
        }
    }
    if violated {
        ExitCode::from(exit::SAFETY)
    } else {
        ExitCode::SUCCESS
    }
}

/// One real run, through the normal build's `guarantees-real`: its verdicts and profile.
fn real_run(fault: ProbeFault, seed: u64) -> Result<(Vec<Verdict>, Profile), String> {
    let exe = super::bench::real_zkharness()?;
    let json = std::env::temp_dir().join(format!("zkh-differential-{}.json", std::process::id()));
    eprintln!("differential: real run {seed} ({})", exe.display());
    let status = Command::new(&exe)
        .args([
            "guarantees-real",
            "--fault",
            fault.name(),
            "--seed",
            &seed.to_string(),
        ])
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let text = std::fs::read_to_string(&json);
    let _ = std::fs::remove_file(&json);
    // A violation (exit 1) still wrote its report: it is this command's to show.
    if !(status.success() || status.code() == Some(i32::from(exit::SAFETY))) {
        return Err(format!(
            "{} guarantees-real failed ({status})",
            exe.display()
        ));
    }
    read_real(&json, text.map_err(|e| e.to_string()))
}

fn read_real(json: &Path, text: Result<String, String>) -> Result<(Vec<Verdict>, Profile), String> {
    let text = text.map_err(|e| format!("{}: {e}", json.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("guarantees-real's JSON: {e}"))?;
    let rows = value["verdicts"]
        .as_array()
        .ok_or("guarantees-real's JSON has no verdicts")?;
    let rows = rows
        .iter()
        .map(|row| {
            let name = row["guarantee"].as_str().unwrap_or_default();
            let guarantee = (zkh_model::guarantees::GUARANTEES.iter())
                .find(|g| **g == name)
                .ok_or_else(|| format!("guarantees-real judged an unknown guarantee {name:?}"))?;
            let verdict = ["holds", "violated", "seen", "not seen", "not judged"]
                .into_iter()
                .find(|v| row["verdict"] == *v)
                .ok_or_else(|| format!("an unknown verdict {}", row["verdict"]))?;
            let detail = row["detail"].as_str().unwrap_or_default().to_owned();
            Ok(Verdict {
                guarantee,
                verdict,
                detail,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let profile = serde_json::from_value(value["profile"].clone())
        .map_err(|e| format!("guarantees-real's profile: {e}"))?;
    Ok((rows, profile))
}

fn print_report(fault: ProbeFault, phases: Phases, simulated: &Side, real: Option<&Side>) {
    println!(
        "the guarantee probe ({CLIENTS} clients, {SESSION_TIMEOUT_MS} ms sessions), fault {} at \
         {:.1} s, healed at {:.1} s, {:.1} s in all",
        fault.name(),
        phases.warmup_ms as f64 / 1000.0,
        (phases.warmup_ms + phases.fault_ms) as f64 / 1000.0,
        (phases.warmup_ms + phases.fault_ms + phases.settle_ms) as f64 / 1000.0
    );
    let real_runs = real.map_or(0, |r| r.runs);
    println!(
        "| guarantee | simulated ({} seeds) | real ({real_runs} runs) |",
        simulated.runs
    );
    println!("| --- | --- | --- |");
    for guarantee in zkh_model::guarantees::GUARANTEES {
        let real = real.map_or("-".to_owned(), |r| r.verdict_text(guarantee));
        println!(
            "| {guarantee} | {} | {real} |",
            simulated.verdict_text(guarantee)
        );
    }
    println!();
    println!("| what the clients saw, per run: median (min–max) | simulated | real |");
    println!("| --- | ---: | ---: |");
    let none: &[Profile] = &[];
    let real_profiles = real.map_or(none, |r| &r.profiles);
    for (label, measure) in profile_rows() {
        let cell = |profiles: &[Profile]| {
            let mut values: Vec<u64> = profiles.iter().filter_map(&measure).collect();
            values.sort_unstable();
            match values.len() {
                0 => "-".to_owned(),
                1 => values[0].to_string(),
                n => format!("{} ({}–{})", values[(n - 1) / 2], values[0], values[n - 1]),
            }
        };
        println!(
            "| {label} | {} | {} |",
            cell(&simulated.profiles),
            cell(real_profiles)
        );
    }
    for violation in simulated
        .violations
        .iter()
        .chain(real.iter().flat_map(|r| &r.violations))
    {
        println!("violated: {violation}");
    }
}

type Measure = Box<dyn Fn(&Profile) -> Option<u64>>;

/// The profile's rows: a label and how to read it from one run.
fn profile_rows() -> Vec<(&'static str, Measure)> {
    let outcome = |kind: &'static str| -> Measure {
        Box::new(move |p: &Profile| Some(p.outcomes.get(kind).copied().unwrap_or(0)))
    };
    let session = |kind: &'static str| -> Measure {
        Box::new(move |p: &Profile| Some(p.sessions.get(kind).copied().unwrap_or(0)))
    };
    let resumed = |index: usize| -> Measure {
        Box::new(move |p: &Profile| p.writes_resumed_ms.get(index).and_then(|(_, ms)| *ms))
    };
    vec![
        (
            "requests that reached a server or were lost",
            Box::new(|p: &Profile| {
                let in_client = (p.outcomes.iter())
                    .filter(|(kind, _)| kind.starts_with("failed in client"))
                    .map(|(_, n)| n)
                    .sum::<u64>();
                Some(p.requests - in_client)
            }),
        ),
        ("answered ok", outcome("ok")),
        (
            "connection lost (outcome unknown)",
            outcome("connection lost"),
        ),
        ("disconnections", session("Disconnected")),
        ("reconnections within the session", session("Reconnected")),
        ("sessions expired", session("Expired")),
        ("watch events", Box::new(|p: &Profile| Some(p.watch_events))),
        (
            "ms from the fault to the first session expired",
            Box::new(|p: &Profile| p.first_expiry_ms),
        ),
        (
            "ms from the fault to the next acknowledged write",
            resumed(0),
        ),
        (
            "ms from the heal to the next acknowledged write",
            resumed(1),
        ),
    ]
}

fn fail(message: &str) -> ExitCode {
    eprintln!("zkharness: {message}");
    ExitCode::from(exit::CRASH)
}
