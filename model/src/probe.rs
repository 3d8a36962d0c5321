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
//! wrapped by a [`HistoryRecorder`]: the request is recorded before it is sent, the events the
//! client has queued are recorded when its answer comes back (a client hands out a watch event
//! before the reply that shows its change, so they come first), then the answer. A real client
//! does not learn a reply's header zxid, so the recorder keeps the zxid only where the reply's
//! stat gives it exactly (a create's `czxid`, a `setData`'s `mzxid`) and records
//! [`OpOutcome::UNKNOWN_ZXID`] elsewhere; [`crate::guarantees`] leaves those out of every zxid
//! comparison and reads their stats instead.
//!
//! Not exercised: `multi`, `sync`, containers, ACLs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkh_recipes::driver::Clock;
use zkh_recipes::request::execute;
use zkh_recipes::{ClientEvent, CreateMode, Request, Response, SessionEvent, ZkClient, ZkError};

use crate::history::{History, HistoryEvent, OpOutcome};
use crate::request::Reply;

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
    /// No fault: the same run undisturbed.
    None,
}

impl ProbeFault {
    /// Every fault, in the order `--help` lists them.
    pub const ALL: [ProbeFault; 5] = [
        ProbeFault::KillLeader,
        ProbeFault::KillFollower,
        ProbeFault::DataLoss,
        ProbeFault::CutOffClient,
        ProbeFault::None,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ProbeFault::KillLeader => "kill-leader",
            ProbeFault::KillFollower => "kill-follower",
            ProbeFault::DataLoss => "data-loss",
            ProbeFault::CutOffClient => "cut-off-client",
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

/// Where the history goes: nowhere for a client that records its own (the simulated one),
/// a [`HistoryRecorder`] for one that does not.
pub trait Recorder: Send + Sync {
    /// `client` issues `request` under its current session; returns the request's id.
    fn invoke(&self, client: u32, session: zkh_recipes::SessionId, request: &Request) -> u64;
    /// The client's queued events, then the end of request `xid`.
    fn complete(
        &self,
        client: u32,
        xid: u64,
        events: Vec<ClientEvent>,
        result: &Result<Response, ZkError>,
    );
}

/// For a client that records its own history.
pub struct SelfRecorded;

impl Recorder for SelfRecorded {
    fn invoke(&self, _: u32, _: zkh_recipes::SessionId, _: &Request) -> u64 {
        0
    }
    fn complete(&self, _: u32, _: u64, _: Vec<ClientEvent>, _: &Result<Response, ZkError>) {}
}

/// Records a real client's requests, answers and events into one history, timed by the wall
/// clock from its creation (a real run has no other time).
pub struct HistoryRecorder {
    start: Instant,
    state: Mutex<(History, u64)>,
}

impl Default for HistoryRecorder {
    fn default() -> Self {
        HistoryRecorder {
            start: Instant::now(),
            state: Mutex::new((History::new(), 0)),
        }
    }
}

impl HistoryRecorder {
    /// Appends `event` now.
    pub fn record(&self, event: HistoryEvent) {
        let mut state = self.lock();
        // Taken under the lock, so that the history's times never go back.
        let at_us = self.start.elapsed().as_micros() as u64;
        state.0.push(at_us, event);
    }

    /// The history so far.
    pub fn history(&self) -> History {
        self.lock().0.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (History, u64)> {
        self.state
            .lock()
            .expect("history mutex poisoned: a panic while recording")
    }
}

impl Recorder for HistoryRecorder {
    fn invoke(&self, client: u32, session: zkh_recipes::SessionId, request: &Request) -> u64 {
        let xid = {
            let mut state = self.lock();
            state.1 += 1;
            state.1
        };
        let request = request.clone();
        self.record(HistoryEvent::Invoke {
            client,
            session,
            xid,
            request,
        });
        xid
    }

    fn complete(
        &self,
        client: u32,
        xid: u64,
        events: Vec<ClientEvent>,
        result: &Result<Response, ZkError>,
    ) {
        for event in events {
            self.record(match event {
                ClientEvent::Watch(event) => HistoryEvent::Watch { client, event },
                ClientEvent::Session(event) => HistoryEvent::Session { client, event },
            });
        }
        self.record(HistoryEvent::Complete {
            client,
            xid,
            outcome: outcome(result),
        });
    }
}

/// How a real client's answer is recorded: the zxid only where the stat gives it exactly.
pub fn outcome(result: &Result<Response, ZkError>) -> OpOutcome {
    match result {
        Ok(response) => {
            let zxid = match response {
                Response::Created(created) => created.stat.czxid,
                Response::SetData(stat) => stat.mzxid,
                _ => OpOutcome::UNKNOWN_ZXID,
            };
            OpOutcome::Reply {
                reply: Reply::Ok(response.clone()),
                zxid,
            }
        }
        Err(ZkError::ConnectionLoss | ZkError::OperationTimeout | ZkError::RequestTimeout) => {
            OpOutcome::Unknown
        }
        Err(
            error @ (ZkError::NoNode
            | ZkError::NodeExists
            | ZkError::BadVersion
            | ZkError::NotEmpty
            | ZkError::NoChildrenForEphemerals),
        ) => OpOutcome::Reply {
            reply: Reply::Error(*error),
            zxid: OpOutcome::UNKNOWN_ZXID,
        },
        Err(error) => OpOutcome::Failed(*error),
    }
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

/// What a run saw, engine apart: counts by kind, for the differential report.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Profile {
    /// Requests issued.
    pub requests: u64,
    /// Answers, by kind: `ok`, an error's name, `connection lost`, `failed in client: ...`.
    pub outcomes: BTreeMap<String, u64>,
    /// Session events, by kind.
    pub sessions: BTreeMap<String, u64>,
    /// Watch events delivered.
    pub watch_events: u64,
    /// For each fault, the milliseconds from it to the next acknowledged write (none if no
    /// write was acknowledged after it).
    pub writes_resumed_ms: Vec<(String, Option<u64>)>,
    /// Milliseconds from the first fault to the first session expiry a client reported.
    #[serde(default)]
    pub first_expiry_ms: Option<u64>,
}

impl Profile {
    /// The profile of `history`.
    pub fn of(history: &History) -> Profile {
        let mut profile = Profile::default();
        let mut writes: BTreeMap<(u32, u64), bool> = BTreeMap::new();
        let mut faults: Vec<(String, u64)> = Vec::new();
        let mut resumed: Vec<Option<u64>> = Vec::new();
        for entry in history.entries() {
            match &entry.event {
                HistoryEvent::Invoke {
                    client,
                    xid,
                    request,
                    ..
                } => {
                    profile.requests += 1;
                    writes.insert((*client, *xid), request.is_write());
                }
                HistoryEvent::Complete {
                    client,
                    xid,
                    outcome,
                } => {
                    let kind = match outcome {
                        OpOutcome::Reply {
                            reply: Reply::Ok(_),
                            ..
                        } => "ok".to_owned(),
                        OpOutcome::Reply { reply, .. } => format!("{reply:?}"),
                        OpOutcome::Unknown => "connection lost".to_owned(),
                        OpOutcome::Failed(error) => format!("failed in client: {error:?}"),
                    };
                    let acknowledged_write =
                        kind == "ok" && writes.get(&(*client, *xid)) == Some(&true);
                    *profile.outcomes.entry(kind).or_default() += 1;
                    if acknowledged_write {
                        for (slot, (_, at)) in resumed.iter_mut().zip(&faults) {
                            slot.get_or_insert((entry.at_us - at) / 1000);
                        }
                    }
                }
                HistoryEvent::Session { event, .. } => {
                    if let (SessionEvent::Expired, Some((_, fault_at))) = (event, faults.first()) {
                        (profile.first_expiry_ms).get_or_insert((entry.at_us - fault_at) / 1000);
                    }
                    let kind = format!("{event:?}");
                    let kind = kind.split([' ', '{', '(']).next().unwrap_or("").to_owned();
                    *profile.sessions.entry(kind).or_default() += 1;
                }
                HistoryEvent::Watch { .. } => profile.watch_events += 1,
                HistoryEvent::Fault { description } => {
                    faults.push((description.clone(), entry.at_us));
                    resumed.push(None);
                }
                _ => {}
            }
        }
        profile.writes_resumed_ms = faults.into_iter().map(|(d, _)| d).zip(resumed).collect();
        profile
    }
}

/// One guarantee's verdict on one history, for reports that put engines side by side.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    /// The guarantee's name.
    pub guarantee: &'static str,
    /// `holds`, `violated`, `seen`, `not seen` (for `sometimes` companions) or `not judged`.
    pub verdict: &'static str,
    /// The checker's summary or violation, or why it was not judged.
    pub detail: String,
}

/// The verdicts of `findings`; with `client_records`, the guarantees a history recorded by
/// clients alone cannot judge are `not judged`, with the reason
/// ([`crate::guarantees::unjudged_on_client_records`]).
pub fn verdicts(findings: &[crate::properties::Finding], client_records: bool) -> Vec<Verdict> {
    use crate::properties::Class;
    findings
        .iter()
        .map(|finding| {
            let unjudged = (client_records)
                .then(|| crate::guarantees::unjudged_on_client_records(finding.property))
                .flatten();
            let not_judged = finding.detail.starts_with("not judged");
            let (verdict, detail) = match (unjudged, finding.class, finding.holds) {
                (Some(why), ..) => ("not judged", why.to_owned()),
                _ if not_judged => ("not judged", finding.detail.clone()),
                (None, Class::Sometimes, true) => ("seen", finding.detail.clone()),
                (None, Class::Sometimes, false) => ("not seen", finding.detail.clone()),
                (None, _, true) => ("holds", finding.detail.clone()),
                (None, _, false) => ("violated", finding.detail.clone()),
            };
            Verdict {
                guarantee: finding.property,
                verdict,
                detail,
            }
        })
        .collect()
}

/// `history` as a real client would have recorded it: each reply's header zxid dropped
/// unless its stat gives it back ([`outcome`]), and no watch event's zxid. What the checker
/// then still catches, it can catch on a real ensemble's history.
pub fn as_recorded_by_a_client(history: &History) -> History {
    let mut recorded = History::new();
    for entry in history.entries() {
        let event = match &entry.event {
            HistoryEvent::Complete {
                client,
                xid,
                outcome: OpOutcome::Reply { reply, .. },
            } => {
                let outcome = match reply {
                    Reply::Ok(response) => outcome(&Ok(response.clone())),
                    Reply::Error(error) => outcome(&Err(*error)),
                    Reply::MultiFailed { .. } => OpOutcome::Reply {
                        reply: reply.clone(),
                        zxid: OpOutcome::UNKNOWN_ZXID,
                    },
                };
                HistoryEvent::Complete {
                    client: *client,
                    xid: *xid,
                    outcome,
                }
            }
            HistoryEvent::Watch { client, event } => HistoryEvent::Watch {
                client: *client,
                event: zkh_recipes::WatchedEvent {
                    zxid: zkh_recipes::WatchedEvent::NO_ZXID,
                    ..event.clone()
                },
            },
            other => other.clone(),
        };
        recorded.push(entry.at_us, event);
    }
    recorded
}
