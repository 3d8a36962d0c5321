//! The guarantee probe: one workload that both a real ensemble and the simulated one run, so
//! that their histories can be judged by the same guarantees and put side by side.
//!
//! A recipe's requests test the ensemble only where the recipe happens to go. The probe goes
//! everywhere ZooKeeper's guarantees speak about, on a few nodes, from several clients at once:
//! `setData` on shared keys (linearizable writes, one transaction per zxid), reads of them with
//! and without watches (the single system image, watch order), ephemeral sequential creates
//! under one parent and deletes of its own (sequential suffixes, a session's end), and child
//! listings. Each client draws its next request from its own seeded stream
//! ([`ProbeStep::draw`]), then pauses, until it is told to stop.
//!
//! The simulated client records its own history. A client that does not (a real one) is
//! wrapped by a recorder (the real side's `HistoryRecorder`, in `zkh-scenarios`): the request is recorded before it is sent, the events the
//! client has queued are recorded when its answer comes back (a client hands out a watch event
//! before the reply that shows its change, so they come first), then the answer. A real client
//! does not learn a reply's header zxid, so the recorder keeps the zxid only where the reply's
//! stat gives it exactly (a create's `czxid`, a `setData`'s `mzxid`) and records
//! [`crate::history::OpOutcome::UNKNOWN_ZXID`] elsewhere; [`crate::guarantees`] leaves those out of every zxid
//! comparison and reads their stats instead.
//!
//! Not exercised: `multi`, `sync`, containers, ACLs.

use std::sync::atomic::{AtomicBool, Ordering};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkh_recipes::driver::Clock;
use zkh_recipes::request::execute;
use zkh_recipes::{CreateMode, Request, Response, ZkClient, ZkError};

mod profile;
mod record;

pub use profile::{verdicts, Profile, Verdict};
pub use record::{as_recorded_by_a_client, outcome, Recorder, SelfRecorded};

/// A fault both a real ensemble and the simulated one can take, for the side-by-side runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeFault {
    /// The leader's process killed (SIGKILL; in the simulator, a crash), started again later.
    KillLeader,
    /// A follower's process killed, started again later.
    KillFollower,
    /// Every server killed, its data directory emptied, and all started again at once: the
    /// ensemble comes back empty while the clients' sessions and last zxids are ahead of it.
    DataLoss,
    /// Client 0 cut off from every server (its connections closed and refused; in the
    /// simulator, a partition) for longer than its session, then reconnected.
    CutOffClient,
    /// Client 0's process stopped (SIGSTOP; in the simulator, a pause of its node) for longer
    /// than its session, then continued: a GC pause, as Kleppmann's paused client.
    PauseClient,
    /// No fault: the same run undisturbed.
    None,
}

impl ProbeFault {
    /// Every fault, in the order `--help` lists them.
    pub const ALL: [ProbeFault; 6] = [
        ProbeFault::KillLeader,
        ProbeFault::KillFollower,
        ProbeFault::DataLoss,
        ProbeFault::CutOffClient,
        ProbeFault::PauseClient,
        ProbeFault::None,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ProbeFault::KillLeader => "kill-leader",
            ProbeFault::KillFollower => "kill-follower",
            ProbeFault::DataLoss => "data-loss",
            ProbeFault::CutOffClient => "cut-off-client",
            ProbeFault::PauseClient => "pause-client",
            ProbeFault::None => "none",
        }
    }

    /// The fault named `name`, or an error that lists them.
    pub fn parse(name: &str) -> Result<ProbeFault, String> {
        (ProbeFault::ALL.into_iter())
            .find(|fault| fault.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = ProbeFault::ALL.iter().map(|f| f.name()).collect();
                format!("unknown fault {name:?} (one of: {})", names.join(", "))
            })
    }
}

/// When the fault lands and how long each part lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Phases {
    /// Probing before the fault.
    pub warmup_ms: u64,
    /// From the fault to its heal.
    pub fault_ms: u64,
    /// Probing after the heal.
    pub settle_ms: u64,
}

impl Default for Phases {
    fn default() -> Phases {
        Phases {
            warmup_ms: 3000,
            fault_ms: 5000,
            settle_ms: 4000,
        }
    }
}

/// The probe's clients.
pub const CLIENTS: u32 = 3;
/// Their session timeout (the shortest a 2 s tick allows is 4 s).
pub const SESSION_TIMEOUT_MS: u64 = 4000;
/// Each client's pause between two requests.
pub const PAUSE_MS: u64 = 20;

/// The probe's root; every node it touches is under it.
pub const ROOT: &str = "/zkh-probe";
/// The shared keys the clients write and read.
pub const KEYS: u32 = 3;

/// The parent of the sequential nodes.
fn queue() -> String {
    format!("{ROOT}/seq")
}

fn key(index: u32) -> String {
    format!("{ROOT}/k{index}")
}

/// The probe's nodes, created before the clients start (existing ones are kept).
pub async fn prepare<C: ZkClient>(client: &C) -> Result<(), ZkError> {
    let mut paths = vec![ROOT.to_owned(), queue()];
    paths.extend((0..KEYS).map(key));
    for path in paths {
        match client.create(&path, b"", CreateMode::Persistent).await {
            Ok(_) | Err(ZkError::NodeExists) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// One request of the probe, drawn from a client's stream.
pub struct ProbeStep;

impl ProbeStep {
    /// The next request of client `client`, given the sequential nodes it created and has not
    /// deleted (`own`, oldest first), and the count of requests it has issued (`count`).
    pub fn draw(rng: &mut ChaCha8Rng, client: u32, own: &[String], count: u64) -> Request {
        let k = key(rng.random_range(0..KEYS));
        match rng.random_range(0..100u32) {
            0..30 => Request::SetData {
                path: k,
                data: format!("c{client}-{count}").into_bytes(),
                version: zkh_recipes::ANY_VERSION,
            },
            30..55 => Request::GetData {
                path: k,
                watch: rng.random_bool(0.5),
            },
            55..65 => Request::Exists {
                path: k,
                watch: rng.random_bool(0.5),
            },
            65..78 => Request::GetChildren {
                path: queue(),
                watch: rng.random_bool(0.5),
            },
            78..92 => Request::Create {
                path: format!("{}/c{client}-", queue()),
                data: Vec::new(),
                mode: CreateMode::EphemeralSequential,
            },
            _ => match own.first() {
                Some(path) => Request::Delete {
                    path: path.clone(),
                    version: zkh_recipes::ANY_VERSION,
                },
                None => Request::Sync { path: k },
            },
        }
    }
}

/// Runs the probe as `client` until `stop` is set: a request, its events taken, a pause of
/// `pause_ms`. Returns how many requests it issued. Errors are part of the history, not of
/// the probe: it goes on after each.
pub async fn run<C: ZkClient>(
    zk: &C,
    clock: &dyn Clock,
    recorder: &dyn Recorder,
    client: u32,
    seed: u64,
    pause_ms: u64,
    stop: &AtomicBool,
) -> u64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (u64::from(client) << 32));
    let mut own: Vec<String> = Vec::new();
    let mut count = 0;
    while !stop.load(Ordering::SeqCst) {
        let request = ProbeStep::draw(&mut rng, client, &own, count);
        count += 1;
        let xid = recorder.invoke(client, zk.session_id(), &request);
        let result = execute(zk, &request).await;
        let mut events = Vec::new();
        while let Some(event) = zk.try_next_event() {
            events.push(event);
        }
        recorder.complete(client, xid, events, &result);
        match (&request, &result) {
            (_, Ok(Response::Created(created))) => own.push(created.path.clone()),
            (Request::Delete { path, .. }, Ok(_) | Err(ZkError::NoNode)) => {
                own.retain(|p| p != path)
            }
            // A session that ended took its ephemerals with it.
            (_, Err(error)) if error.is_terminal() => own.clear(),
            _ => {}
        }
        clock.sleep(pause_ms).1.await;
    }
    count
}
