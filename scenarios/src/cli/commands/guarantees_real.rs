//! `zkharness guarantees-real`: the guarantee probe on a real three-server ensemble under one
//! fault, its history judged by ZooKeeper's guarantees (`crate::real::probe`). Normal
//! build only.

use std::process::ExitCode;

use crate::real::ensemble::Ensemble;
use crate::real::probe;
use crate::report::exit;
use serde::Serialize;
use zkh_model::history::History;
use zkh_model::probe::{verdicts, ProbeFault, Profile, Verdict};
use zkh_model::probe::{Phases, CLIENTS, SESSION_TIMEOUT_MS};

use super::GuaranteesRealArgs;

/// What `guarantees-real --json` writes.
#[derive(Serialize)]
struct RealGuarantees {
    format: &'static str,
    servers: u32,
    clients: u32,
    session_timeout_ms: u64,
    fault: ProbeFault,
    phases: Phases,
    seed: u64,
    verdicts: Vec<Verdict>,
    profile: Profile,
    refused_sessions: usize,
    history: History,
}

pub(super) fn guarantees_real(args: GuaranteesRealArgs) -> ExitCode {
    eprintln!("guarantees-real: starting a 3-server ZooKeeper ensemble on 127.0.0.1");
    if let Some(refused) = super::refuse_missing_real_ensemble() {
        return refused;
    }
    let mut ensemble = match Ensemble::start(&std::env::temp_dir()) {
        Ok(ensemble) => ensemble,
        Err(message) => return fail(&message),
    };
    let phases = Phases::default();
    eprintln!(
        "guarantees-real: ensemble up ({}; pids {:?}); {CLIENTS} probe clients for {:.1} s, \
         fault {} at {:.1} s, healed at {:.1} s",
        ensemble.connect_string(),
        ensemble.pids(),
        (phases.warmup_ms + phases.fault_ms + phases.settle_ms) as f64 / 1000.0,
        args.fault.name(),
        phases.warmup_ms as f64 / 1000.0,
        (phases.warmup_ms + phases.fault_ms) as f64 / 1000.0,
    );
    let run = probe::run(&mut ensemble, args.fault, phases, args.seed);
    drop(ensemble);
    let run = match run {
        Ok(run) => run,
        Err(message) => return fail(&message),
    };
    let verdicts = verdicts(&run.findings, true);
    println!(
        "ZooKeeper guarantees on a real ensemble (3 servers, {CLIENTS} probe clients, \
         {SESSION_TIMEOUT_MS} ms sessions, fault {}, seed {}):",
        args.fault.name(),
        args.seed
    );
    print!("{}", table(&verdicts));
    println!("{}", profile_text(&run.profile));
    println!(
        "the servers refused {} session requests of clients that had seen a later zxid than theirs",
        run.refused_sessions
    );
    let violated = verdicts.iter().any(|v| v.verdict == "violated");
    if let Some(path) = &args.json {
        let result = RealGuarantees {
            format: "zkharness-guarantees-real/1",
            servers: 3,
            clients: CLIENTS,
            session_timeout_ms: SESSION_TIMEOUT_MS,
            fault: args.fault,
            phases,
            seed: args.seed,
            verdicts,
            profile: run.profile,
            refused_sessions: run.refused_sessions,
            history: run.history,
        };
        if let Err(message) = super::write_json(path, &result) {
            return fail(&message);
        }
    }
    if violated {
        ExitCode::from(exit::SAFETY)
    } else {
        ExitCode::SUCCESS
    }
}

/// One line per guarantee: verdict, name, detail.
pub(super) fn table(verdicts: &[Verdict]) -> String {
    verdicts
        .iter()
        .map(|v| format!("  {:<11} {:<42} {}\n", v.verdict, v.guarantee, v.detail))
        .collect()
}

/// The profile in a few lines.
pub(super) fn profile_text(profile: &Profile) -> String {
    let counts = |map: &std::collections::BTreeMap<String, u64>| {
        let parts: Vec<String> = map.iter().map(|(k, n)| format!("{k} {n}")).collect();
        if parts.is_empty() {
            "none".to_owned()
        } else {
            parts.join(", ")
        }
    };
    let resumed: Vec<String> = (profile.writes_resumed_ms.iter())
        .map(|(fault, ms)| match ms {
            Some(ms) => format!("{ms} ms after {fault}"),
            None => format!("never after {fault}"),
        })
        .collect();
    format!(
        "what the clients saw: {} requests; answers: {}; sessions: {}; {} watch events; \
         writes acknowledged again: {}",
        profile.requests,
        counts(&profile.outcomes),
        counts(&profile.sessions),
        profile.watch_events,
        if resumed.is_empty() {
            "no fault".to_owned()
        } else {
            resumed.join("; ")
        }
    )
}

fn fail(message: &str) -> ExitCode {
    eprintln!("zkharness: {message}");
    ExitCode::from(exit::CRASH)
}
