//! A probe client in a process of its own, so that the run can stop it (SIGSTOP) past its
//! session and continue it (SIGCONT): a GC pause as the operating system gives one, which the
//! clients sharing the run's process cannot take.
//!
//! The child is this program again (`zkharness probe-client`, hidden): it connects to the
//! ensemble, runs the guarantee probe as one client until its deadline, and writes what it
//! recorded, as JSON history entries, to a file. Its recorder starts at the parent's time 0
//! (passed as microseconds since the Unix epoch), so the two histories merge by time. While
//! the process is stopped it records nothing (as a paused JVM): what it sees on waking, an
//! expired session, is recorded when it wakes.
//!
//! The child is killed and reaped when its [`PausedClient`] is dropped, however the run ends,
//! and it stops by itself at its deadline.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zkh_model::history::HistoryEntry;
use zkh_model::probe::{self, PAUSE_MS, SESSION_TIMEOUT_MS};
use zkh_recipes::real::{RealClient, TokioClock};

use super::recorder::HistoryRecorder;

/// What the child is asked to do.
pub struct ChildPlan<'a> {
    /// The ensemble's connection string.
    pub connect: &'a str,
    /// The probe client it is.
    pub client: u32,
    /// The seed of the probe's request streams.
    pub seed: u64,
    /// The run's time 0, in microseconds since the Unix epoch.
    pub start_unix_us: u64,
    /// How long it probes, from its start.
    pub run_ms: u64,
    /// Where it writes its history entries.
    pub out: &'a Path,
}

/// A probe client running in its own process.
pub struct PausedClient {
    child: Child,
    out: PathBuf,
}

impl PausedClient {
    /// Starts `exe probe-client` with `plan`.
    pub fn start(exe: &Path, plan: &ChildPlan<'_>) -> Result<PausedClient, String> {
        let child = Command::new(exe)
            .arg("probe-client")
            .args(["--connect", plan.connect])
            .args(["--client", &plan.client.to_string()])
            .args(["--seed", &plan.seed.to_string()])
            .args(["--start-unix-us", &plan.start_unix_us.to_string()])
            .args(["--run-ms", &plan.run_ms.to_string()])
            .arg("--out")
            .arg(plan.out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        Ok(PausedClient {
            child,
            out: plan.out.to_owned(),
        })
    }

    /// Sends the process `signal` (`STOP` or `CONT`).
    pub fn signal(&self, signal: &str) -> Result<(), String> {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .map_err(|e| format!("cannot run kill -{signal} {pid}: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("kill -{signal} {pid} failed: {status}"))
        }
    }

    /// Waits up to `within` for the child to end, and reads what it recorded.
    pub fn finish(mut self, within: Duration) -> Result<Vec<HistoryEntry>, String> {
        let deadline = Instant::now() + within;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => break,
                Ok(Some(status)) => return Err(format!("the paused probe client ended {status}")),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) => return Err("the paused probe client did not end in time".to_owned()),
                Err(e) => return Err(format!("cannot wait for the paused probe client: {e}")),
            }
        }
        let text = std::fs::read_to_string(&self.out)
            .map_err(|e| format!("cannot read {}: {e}", self.out.display()))?;
        let _ = std::fs::remove_file(&self.out);
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", self.out.display()))
    }
}

impl Drop for PausedClient {
    fn drop(&mut self) {
        // Killed even while stopped (SIGKILL needs no SIGCONT), and reaped.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child's side (`zkharness probe-client`): probes as `plan.client` until the deadline,
/// then writes its history entries to `plan.out`.
pub fn run_child(plan: &ChildPlan<'_>) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let recorder = HistoryRecorder::starting_at(plan.start_unix_us);
    let stop = Arc::new(AtomicBool::new(false));
    let run = Duration::from_millis(plan.run_ms);
    runtime.block_on(async {
        let client = RealClient::connect(plan.connect, SESSION_TIMEOUT_MS)
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", plan.connect))?;
        let probing = probe::run(
            &client,
            &TokioClock,
            &recorder,
            plan.client,
            plan.seed,
            PAUSE_MS,
            &stop,
        );
        // The monotonic clock runs on while the process is stopped, so the deadline holds.
        let _ = tokio::time::timeout(run, probing).await;
        Ok::<_, String>(())
    })?;
    let entries = recorder.history().entries().to_vec();
    let text = serde_json::to_string(&entries).expect("history entries serialise");
    std::fs::write(plan.out, text).map_err(|e| format!("cannot write {}: {e}", plan.out.display()))
}
