//! The standard crash failover on a real ensemble: five `LeaderLatch` participants (the
//! recipe of `zkh_recipes::latch`, correct variant, through `RealClient`), each its own
//! process, 4 s sessions; the leader's process is killed with SIGKILL, so its session ends
//! only by expiring on the servers (no close is sent); the run ends when another participant
//! reports that it leads.
//!
//! A participant is this program again (`zkharness latch-participant`, hidden), which prints
//! `leader <token>` when it leads. The measuring side waits until all five have their latch
//! nodes (it lists the latch directory with a client of its own), kills the one that leads,
//! and times from the kill to the next `leader` line. Each run uses its own latch directory.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zkh_recipes::latch::{Latch, LatchVariant};
use zkh_recipes::real::{RealClient, TokioClock};
use zkh_recipes::ZkClient;

use super::ensemble::Ensemble;

/// The participants' session timeout.
pub const SESSION_TIMEOUT_MS: u64 = 4000;
/// Participants.
pub const PARTICIPANTS: usize = 5;
/// The longest a step of a run may take (joining, the first leader, the failover).
const STEP_BOUND: Duration = Duration::from_secs(60);

/// Runs one participant until it is killed: joins the latch on `dir` as `name` and prints
/// `leader <token>` each time it leads. Returns only on an error.
pub fn participate(connect: &str, dir: &str, name: &str) -> Result<(), String> {
    let runtime = runtime()?;
    runtime.block_on(async {
        let client = RealClient::connect(connect, SESSION_TIMEOUT_MS)
            .await
            .map_err(|e| format!("cannot connect to {connect}: {e}"))?;
        let (latch, driver) = Latch::start(
            Arc::new(client),
            Arc::new(TokioClock),
            LatchVariant::Correct,
            dir,
            name,
            name,
        );
        tokio::spawn(driver);
        loop {
            match latch.next_report().await {
                Some(zkh_recipes::latch::LatchReport::Leader { token }) => {
                    println!("leader {token}");
                }
                Some(zkh_recipes::latch::LatchReport::NotLeader) => println!("not leader"),
                other => return Err(format!("the latch stopped: {other:?}")),
            }
        }
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))
}

/// The children of one run, killed when it ends however it ends.
struct Participants(Vec<Child>);

impl Drop for Participants {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One run on `ensemble`: the failover's wall time, from the leader's kill to the next leader.
/// `exe` is this program (which runs the participants); `run` names the run's latch directory.
pub fn measure(ensemble: &Ensemble, exe: &Path, run: u32) -> Result<Duration, String> {
    let connect = ensemble.connect_string();
    let dir = format!("/zkh-bench-latch-{}-{run}", std::process::id());
    let (tx, rx) = channel();
    let mut children = Participants(Vec::new());
    for index in 0..PARTICIPANTS {
        let mut child = Command::new(exe)
            .args(["latch-participant", "--connect", &connect, "--dir", &dir])
            .args(["--name", &format!("p{index}")])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send((index, line, Instant::now())).is_err() {
                    return;
                }
            }
        });
        children.0.push(child);
    }
    drop(tx);
    await_joined(&connect, &dir)?;
    let (leader, _) = next_leader(&rx, None)?;
    let killed = Instant::now();
    children.0[leader]
        .kill()
        .map_err(|e| format!("cannot kill participant {leader}: {e}"))?;
    let (_, led_at) = next_leader(&rx, Some(leader))?;
    Ok(led_at.duration_since(killed))
}

/// The next participant other than `except` to say it leads, and when.
fn next_leader(
    rx: &Receiver<(usize, String, Instant)>,
    except: Option<usize>,
) -> Result<(usize, Instant), String> {
    let deadline = Instant::now() + STEP_BOUND;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (index, line, at) = rx
            .recv_timeout(left)
            .map_err(|_| format!("no new leader within {} s", STEP_BOUND.as_secs()))?;
        if line.starts_with("leader ") && Some(index) != except {
            return Ok((index, at));
        }
    }
}

/// Waits until the latch directory holds every participant's node.
fn await_joined(connect: &str, dir: &str) -> Result<(), String> {
    let runtime = runtime()?;
    runtime.block_on(async {
        let client = RealClient::connect(connect, SESSION_TIMEOUT_MS)
            .await
            .map_err(|e| format!("cannot connect to {connect}: {e}"))?;
        let deadline = Instant::now() + STEP_BOUND;
        while Instant::now() < deadline {
            if let Ok((children, _)) = client.get_children(dir, false).await {
                if children.len() >= PARTICIPANTS {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(format!(
            "the {PARTICIPANTS} participants did not all join within {} s",
            STEP_BOUND.as_secs()
        ))
    })
}
