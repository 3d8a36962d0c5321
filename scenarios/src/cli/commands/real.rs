//! `zkharness bench-real` and the participants it starts (`zkharness latch-participant`):
//! the standard crash failover on a real three-server ensemble, timed run by run
//! (`crate::real`). Normal build only.

use std::process::ExitCode;
use std::time::Duration;

use crate::real::ensemble::Ensemble;
use crate::real::failover::{self, PARTICIPANTS, SESSION_TIMEOUT_MS};
use crate::report::exit;
use serde::Serialize;

use super::{percentile, BenchRealArgs, ParticipantArgs};

/// What `bench-real --json` writes.
#[derive(Serialize)]
struct RealFailover {
    format: &'static str,
    servers: u32,
    participants: usize,
    session_timeout_ms: u64,
    kill: &'static str,
    runs_ms: Vec<f64>,
    real_median_ms: f64,
    real_p90_ms: f64,
    machine: String,
}

pub(super) fn bench_real(args: BenchRealArgs) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return fail(&format!("cannot find this program: {e}")),
    };
    eprintln!("bench-real: starting a 3-server ZooKeeper ensemble on 127.0.0.1");
    if let Some(refused) = super::refuse_missing_real_ensemble() {
        return refused;
    }
    let ensemble = match Ensemble::start(&std::env::temp_dir()) {
        Ok(ensemble) => ensemble,
        Err(message) => return fail(&message),
    };
    eprintln!(
        "bench-real: ensemble up ({}; pids {:?}); {} runs of {PARTICIPANTS} latch participants, \
         the leader killed with SIGKILL",
        ensemble.connect_string(),
        ensemble.pids(),
        args.runs
    );
    let mut runs = Vec::new();
    for run in 0..args.runs {
        match failover::measure(&ensemble, &exe, run) {
            Ok(took) => {
                eprintln!(
                    "bench-real: run {}: failover in {:.0} ms",
                    run + 1,
                    ms(took)
                );
                runs.push(took);
            }
            Err(message) => return fail(&format!("run {}: {message}", run + 1)),
        }
    }
    drop(ensemble);
    let mut sorted: Vec<f64> = runs.iter().map(|d| ms(*d)).collect();
    sorted.sort_by(f64::total_cmp);
    let result = RealFailover {
        format: "zkharness-bench-real/1",
        servers: 3,
        participants: PARTICIPANTS,
        session_timeout_ms: SESSION_TIMEOUT_MS,
        kill: "SIGKILL of the leader's process: its session ends by expiring on the servers",
        runs_ms: runs.iter().map(|d| ms(*d)).collect(),
        real_median_ms: percentile(&sorted, 50),
        real_p90_ms: percentile(&sorted, 90),
        machine: machine(),
    };
    println!(
        "real failover (3 servers, {PARTICIPANTS} LeaderLatch processes, {SESSION_TIMEOUT_MS} ms sessions, leader SIGKILLed): \
         {} runs, median {:.0} ms, p90 {:.0} ms, on {}",
        sorted.len(),
        result.real_median_ms,
        result.real_p90_ms,
        result.machine
    );
    if let Some(path) = &args.json {
        if let Err(message) = super::write_json(path, &result) {
            return fail(&message);
        }
    }
    ExitCode::SUCCESS
}

pub(super) fn latch_participant(args: ParticipantArgs) -> ExitCode {
    match failover::participate(&args.connect, &args.dir, &args.name) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&message),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("zkharness: {message}");
    ExitCode::from(exit::CRASH)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The machine: its CPU model and core count, from /proc/cpuinfo.
fn machine() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']))
        })
        .unwrap_or("unknown CPU")
        .to_owned();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cores} cores")
}
