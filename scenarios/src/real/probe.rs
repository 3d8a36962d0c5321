//! ZooKeeper's guarantees on a real three-server ensemble: the guarantee probe
//! ([`zkh_model::probe`]) run by clients of `zookeeper-client` (through `RealClient`), its
//! history recorded on the clients' side, a fault injected into the ensemble, and the history
//! judged by the same checker ([`zkh_model::guarantees`]) as every simulated run.
//!
//! One run: the probe's nodes are made, `probe::CLIENTS` clients (each its own session of
//! `probe::SESSION_TIMEOUT_MS`, on one multi-threaded tokio runtime) probe for `warmup_ms`, the fault
//! lands, they go on for `fault_ms`, the fault is healed (a killed server started again), they
//! go on for `settle_ms`, and stop. The fault and its heal are in the history as `Fault`
//! entries, so that the profile ([`Profile`]) times what each did to the clients.
//!
//! What such a history cannot judge, and why, is [`zkh_model::guarantees::unjudged_on_client_records`]:
//! a real client learns no reply's header zxid, the servers' commit logs are not read, and
//! the epoch a server leads is not published.
//!
//! Data loss ([`ProbeFault::DataLoss`]) kills every server, empties its data directory and
//! starts them all again; the clients' sessions and last zxids are then ahead of the ensemble.
//!
//! A client cut off ([`ProbeFault::CutOffClient`]) reaches the servers through a [`Proxy`]
//! that the run cuts for `fault_ms`, longer than its session: the servers expire it.
//!
//! A client paused ([`ProbeFault::PauseClient`]) runs in a process of its own
//! ([`PausedClient`]), stopped with SIGSTOP for `fault_ms`, longer than its session, then
//! continued; its history is merged with the others' by time.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use zkh_model::guarantees::{self, CommitLogs};
use zkh_model::history::{History, HistoryEvent};
use zkh_model::probe::{self, Phases, ProbeFault, Profile, CLIENTS, PAUSE_MS, SESSION_TIMEOUT_MS};
use zkh_model::properties::Finding;
use zkh_recipes::real::{RealClient, TokioClock};

use super::ensemble::Ensemble;
use super::paused::{ChildPlan, PausedClient};
use super::proxy::Proxy;
use super::recorder::HistoryRecorder;

/// One judged run.
pub struct ProbeRun {
    /// What the clients saw.
    pub history: History,
    /// Every guarantee's finding (those a client-recorded history cannot judge included, as
    /// the checker gives them: see `unjudged_on_client_records`).
    pub findings: Vec<Finding>,
    /// Counts and times, for the side-by-side.
    pub profile: Profile,
    /// How many session requests the servers refused because the client had seen a later
    /// zxid than theirs (counted in their logs: "Refusing session request").
    pub refused_sessions: usize,
}

/// Runs the probe on `ensemble` with `fault`, the clients' streams drawn from `seed`.
pub fn run(
    ensemble: &mut Ensemble,
    fault: ProbeFault,
    phases: Phases,
    seed: u64,
) -> Result<ProbeRun, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let connect = ensemble.connect_string();
    // Client 0 reaches the servers through a proxy the run can cut.
    let proxy = (fault == ProbeFault::CutOffClient)
        .then(|| Proxy::start(&ensemble.client_ports()))
        .transpose()?;
    // A paused client 0 runs in a process of its own, started once the probe's nodes exist.
    let paused = fault == ProbeFault::PauseClient;
    let first = u32::from(paused);
    let clients: Vec<Arc<RealClient>> = runtime.block_on(async {
        let mut clients = Vec::new();
        for index in first..CLIENTS {
            let connect = match (&proxy, index) {
                (Some(proxy), 0) => proxy.connect_string(),
                _ => connect.clone(),
            };
            let client = RealClient::connect(&connect, SESSION_TIMEOUT_MS)
                .await
                .map_err(|e| format!("cannot connect to {connect}: {e}"))?;
            clients.push(Arc::new(client));
        }
        probe::prepare(clients[0].as_ref())
            .await
            .map_err(|e| format!("cannot make the probe's nodes: {e}"))?;
        Ok::<_, String>(clients)
    })?;
    let recorder = Arc::new(HistoryRecorder::default());
    let out = std::env::temp_dir().join(format!("zkh-paused-client-{}.json", std::process::id()));
    let child = paused
        .then(|| {
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot find this program to run the paused client: {e}"))?;
            let plan = ChildPlan {
                connect: &connect,
                client: 0,
                seed,
                start_unix_us: recorder.start_unix_us(),
                run_ms: phases.warmup_ms + phases.fault_ms + phases.settle_ms,
                out: &out,
            };
            PausedClient::start(&exe, &plan)
        })
        .transpose()?;
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (first..CLIENTS)
        .zip(&clients)
        .map(|(id, client)| {
            let (client, recorder, stop) =
                (Arc::clone(client), Arc::clone(&recorder), Arc::clone(&stop));
            runtime.spawn(async move {
                probe::run(
                    client.as_ref(),
                    &TokioClock,
                    recorder.as_ref(),
                    id,
                    seed,
                    PAUSE_MS,
                    &stop,
                )
                .await
            })
        })
        .collect();
    let faulted = inject(
        ensemble,
        proxy.as_ref(),
        child.as_ref(),
        fault,
        phases,
        &recorder,
    );
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    runtime.block_on(async {
        for task in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(30), task).await;
        }
    });
    drop(clients);
    runtime.shutdown_timeout(Duration::from_secs(5));
    faulted?;
    let refused_sessions = ensemble.log_lines_containing("Refusing session request");
    let mut history = recorder.history();
    if let Some(child) = child {
        history = merged(&history, child.finish(Duration::from_secs(30))?);
    }
    let findings = guarantees::judge(&history, &CommitLogs::new());
    let profile = Profile::of(&history);
    Ok(ProbeRun {
        history,
        findings,
        profile,
        refused_sessions,
    })
}

/// `history` with `entries` (another process's, timed from the same moment) merged in by time;
/// `history`'s first among equal times.
fn merged(history: &History, entries: Vec<zkh_model::history::HistoryEntry>) -> History {
    let mut all: Vec<_> = (history.entries().iter().cloned().map(|e| (e, 0)))
        .chain(entries.into_iter().map(|e| (e, 1)))
        .collect();
    all.sort_by_key(|(entry, side)| (entry.at_us, *side));
    let mut merged = History::new();
    for (entry, _) in all {
        merged.push(entry.at_us, entry.event);
    }
    merged
}

/// Waits through the phases, injecting and healing `fault` between them.
fn inject(
    ensemble: &mut Ensemble,
    proxy: Option<&Proxy>,
    paused: Option<&PausedClient>,
    fault: ProbeFault,
    phases: Phases,
    recorder: &HistoryRecorder,
) -> Result<(), String> {
    let sleep = |ms| std::thread::sleep(Duration::from_millis(ms));
    sleep(phases.warmup_ms);
    let victim = match fault {
        ProbeFault::KillLeader => ensemble.leader(),
        ProbeFault::KillFollower => ensemble.follower(),
        ProbeFault::DataLoss
        | ProbeFault::CutOffClient
        | ProbeFault::PauseClient
        | ProbeFault::None => None,
    };
    let kills = matches!(fault, ProbeFault::KillLeader | ProbeFault::KillFollower);
    if kills && victim.is_none() {
        return Err(format!(
            "no server to take {}: modes {:?}",
            fault.name(),
            ensemble.modes()
        ));
    }
    if let Some(server) = victim {
        ensemble.kill(server)?;
        recorder.record(HistoryEvent::Fault {
            description: format!("KillServer {{ server: Id({server}) }} ({})", fault.name()),
        });
    }
    if fault == ProbeFault::DataLoss {
        // Recorded once every server is down: what was answered before it, was answered by the
        // old ensemble.
        ensemble.kill_all()?;
        recorder.record(HistoryEvent::Fault {
            description: "DataLoss".to_owned(),
        });
        ensemble.start_empty()?;
    }
    if let Some(proxy) = proxy {
        proxy.cut();
        recorder.record(HistoryEvent::Fault {
            description: "Partition { a: {Client(0)}, b: {AllServers} } (cut-off-client)"
                .to_owned(),
        });
    }
    if let Some(child) = paused {
        child.signal("STOP")?;
        recorder.record(HistoryEvent::Fault {
            description: format!(
                "PauseClient {{ client: 0, duration_ms: {} }} (pause-client)",
                phases.fault_ms
            ),
        });
    }
    sleep(phases.fault_ms);
    if let Some(child) = paused {
        child.signal("CONT")?;
    }
    if let Some(proxy) = proxy {
        proxy.heal();
        recorder.record(HistoryEvent::Fault {
            description: "heal".to_owned(),
        });
    }
    if let Some(server) = victim {
        recorder.record(HistoryEvent::Fault {
            description: format!("RestartServer {{ server: Id({server}) }}"),
        });
        ensemble.restart(server)?;
    }
    sleep(phases.settle_ms);
    Ok(())
}
