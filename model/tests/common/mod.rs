//! Operation sequences for the differential test, and running them on any `ZkClient`.
//!
//! A case is a list of operations from 2 or 3 sessions over a small pool of paths under the
//! case's own root, so that operations collide: creates meet `NodeExists`, deletes meet
//! `NotEmpty`, versions are right or wrong, watches are set and then fired by other sessions.
//! It runs unchanged on the pure model and on a real server, and each run yields a
//! [`Transcript`]: every reply and each session's watch events, with zxids and session ids
//! replaced by logical values so the comparison is exact.

#![allow(dead_code, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use proptest::prelude::*;
use zkh_recipes::{
    ClientEvent, CreateMode, EventType, MultiError, Op, OpResult, SessionId, Stat, ZkClient,
    ZkError,
};

/// Polls a future that never waits (every in-memory operation completes at once).
pub fn now<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("an in-memory operation waited; none of them should"),
    }
}

/// Where an operation points, relative to the case root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A fixed relative path ("" is the case root itself).
    Fixed(&'static str),
    /// The path of the last node this run created with a sequential mode (or the root).
    LastSequential,
}

/// Shallow nodes exist more often, so they are picked more often.
const SHALLOW_NODES: [&str; 4] = ["", "a", "b", "e"];
const DEEP_NODES: [&str; 4] = ["a/x", "a/y", "b/x", "a/x/z"];
const SEQUENTIAL_PREFIXES: [&str; 4] = ["a/s-", "s-", "a/", "b/x/q-"];
/// Invalid: trailing slash, empty segment, `.` segment, a control character, not absolute.
const INVALID: [&str; 5] = ["a/", "a//x", "a/./x", "a\u{1}", "!relative"];

#[derive(Clone, Debug)]
pub enum Action {
    Create {
        target: Target,
        data: Vec<u8>,
        mode: CreateMode,
    },
    Delete {
        target: Target,
        version: i32,
    },
    Exists {
        target: Target,
        watch: bool,
    },
    GetData {
        target: Target,
        watch: bool,
    },
    GetChildren {
        target: Target,
        watch: bool,
    },
    SetData {
        target: Target,
        data: Vec<u8>,
        version: i32,
    },
    Multi(Vec<MultiAction>),
    Sync,
    Close,
}

#[derive(Clone, Debug)]
pub enum MultiAction {
    Check { target: Target, version: i32 },
    Create { target: Target, mode: CreateMode },
    Delete { target: Target, version: i32 },
    SetData { target: Target, version: i32 },
}

#[derive(Clone, Debug)]
pub struct Step {
    pub session: usize,
    pub action: Action,
}

#[derive(Clone, Debug)]
pub struct Case {
    pub sessions: usize,
    pub steps: Vec<Step>,
}

fn target_text(target: &Target) -> String {
    match target {
        Target::Fixed(rel) if rel.starts_with('!') => rel.trim_start_matches('!').to_owned(),
        Target::Fixed(rel) => format!("<root>/{rel}"),
        Target::LastSequential => "<last sequential>".to_owned(),
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} sessions, {} steps:", self.sessions, self.steps.len())?;
        for (index, step) in self.steps.iter().enumerate() {
            let s = step.session;
            let line = match &step.action {
                Action::Create { target, data, mode } => {
                    format!(
                        "create({}, {:?}, {mode:?})",
                        target_text(target),
                        String::from_utf8_lossy(data)
                    )
                }
                Action::Delete { target, version } => {
                    format!("delete({}, version {version})", target_text(target))
                }
                Action::Exists { target, watch } => {
                    format!("exists({}, watch {watch})", target_text(target))
                }
                Action::GetData { target, watch } => {
                    format!("getData({}, watch {watch})", target_text(target))
                }
                Action::GetChildren { target, watch } => {
                    format!("getChildren({}, watch {watch})", target_text(target))
                }
                Action::SetData {
                    target,
                    data,
                    version,
                } => format!(
                    "setData({}, {:?}, version {version})",
                    target_text(target),
                    String::from_utf8_lossy(data)
                ),
                Action::Multi(ops) => format!("multi{ops:?}"),
                Action::Sync => "sync(<root>)".to_owned(),
                Action::Close => "close session".to_owned(),
            };
            writeln!(f, "  {index:>3}. session {s}: {line}")?;
        }
        Ok(())
    }
}

fn node_target() -> impl Strategy<Value = Target> {
    prop_oneof![
        5 => proptest::sample::select(&SHALLOW_NODES[..]).prop_map(Target::Fixed),
        3 => proptest::sample::select(&DEEP_NODES[..]).prop_map(Target::Fixed),
        2 => Just(Target::LastSequential),
        1 => proptest::sample::select(&INVALID[..]).prop_map(Target::Fixed),
    ]
}

fn mode() -> impl Strategy<Value = CreateMode> {
    proptest::sample::select(vec![
        CreateMode::Persistent,
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
        CreateMode::Container,
    ])
}

fn create_target(mode: CreateMode) -> BoxedStrategy<Target> {
    if mode.is_sequential() {
        prop_oneof![
            6 => proptest::sample::select(&SEQUENTIAL_PREFIXES[..]).prop_map(Target::Fixed),
            1 => proptest::sample::select(&INVALID[..]).prop_map(Target::Fixed),
        ]
        .boxed()
    } else {
        node_target().boxed()
    }
}

fn version() -> impl Strategy<Value = i32> {
    prop_oneof![4 => Just(-1), 3 => Just(0), 2 => Just(1), 1 => Just(2), 1 => Just(-2)]
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    proptest::sample::select(vec![Vec::new(), b"x".to_vec(), b"hello".to_vec()])
}

fn valid_target() -> impl Strategy<Value = Target> {
    prop_oneof![
        4 => proptest::sample::select(&SHALLOW_NODES[1..]).prop_map(Target::Fixed),
        1 => proptest::sample::select(&DEEP_NODES[..]).prop_map(Target::Fixed),
        1 => Just(Target::LastSequential),
    ]
}

fn multi_action() -> impl Strategy<Value = MultiAction> {
    prop_oneof![
        (valid_target(), version())
            .prop_map(|(target, version)| MultiAction::Check { target, version }),
        mode().prop_flat_map(|mode| {
            let target = if mode.is_sequential() {
                proptest::sample::select(&SEQUENTIAL_PREFIXES[..])
                    .prop_map(Target::Fixed)
                    .boxed()
            } else {
                valid_target().boxed()
            };
            target.prop_map(move |target| MultiAction::Create { target, mode })
        }),
        (valid_target(), version())
            .prop_map(|(target, version)| MultiAction::Delete { target, version }),
        (valid_target(), version())
            .prop_map(|(target, version)| MultiAction::SetData { target, version }),
    ]
}

fn watch() -> impl Strategy<Value = bool> {
    prop_oneof![3 => Just(true), 1 => Just(false)]
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        8 => (mode(), data()).prop_flat_map(|(mode, data)| create_target(mode)
            .prop_map(move |target| Action::Create { target, data: data.clone(), mode })),
        4 => (node_target(), version()).prop_map(|(target, version)| Action::Delete { target, version }),
        3 => (node_target(), watch()).prop_map(|(target, watch)| Action::Exists { target, watch }),
        3 => (node_target(), watch()).prop_map(|(target, watch)| Action::GetData { target, watch }),
        3 => (node_target(), watch()).prop_map(|(target, watch)| Action::GetChildren { target, watch }),
        3 => (node_target(), data(), version())
            .prop_map(|(target, data, version)| Action::SetData { target, data, version }),
        2 => proptest::collection::vec(multi_action(), 1..4).prop_map(Action::Multi),
        1 => Just(Action::Sync),
        1 => Just(Action::Close),
    ]
}

/// Cases of 2 or 3 sessions and 1 to `max_steps` steps.
pub fn case(max_steps: usize) -> impl Strategy<Value = Case> {
    (2usize..=3).prop_flat_map(move |sessions| {
        proptest::collection::vec((0..sessions, action()), 1..=max_steps).prop_map(move |steps| {
            Case {
                sessions,
                steps: steps
                    .into_iter()
                    .map(|(session, action)| Step { session, action })
                    .collect(),
            }
        })
    })
}

/// One reply, in a form both backends produce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Created {
        path: String,
        stat: Stat,
    },
    Done,
    Exists(Option<Stat>),
    Data(Vec<u8>, Stat),
    Children(Vec<String>, Stat),
    SetData(Stat),
    Multi(Vec<OpResult>),
    Error(ZkError),
    MultiFailed {
        index: usize,
        error: ZkError,
    },
    /// The step's session was already closed: nothing was sent.
    Skipped,
}

/// What a run observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transcript {
    pub outcomes: Vec<Outcome>,
    /// Per session: its watch events as (zxid, type, path), sorted (the real client does not
    /// tell the order of notifications that arrive between two polls).
    pub events: Vec<Vec<(i64, EventType, String)>>,
}

/// What a backend must offer beyond `ZkClient` to run a case.
pub trait Backend {
    type Client: ZkClient;
    /// Opens a new session.
    async fn open(&mut self) -> Self::Client;
    /// Closes a session and waits until the server applied the close.
    async fn close(&mut self, client: Self::Client);
}

fn resolve(root: &str, target: &Target, last_sequential: &str) -> String {
    match target {
        Target::Fixed("") => root.to_owned(),
        Target::Fixed(rel) if rel.starts_with('!') => rel.trim_start_matches('!').to_owned(),
        Target::Fixed(rel) => format!("{root}/{rel}"),
        Target::LastSequential => last_sequential.to_owned(),
    }
}

fn drain(client: &impl ZkClient, into: &mut Vec<(i64, EventType, String)>) {
    while let Some(event) = client.try_next_event() {
        if let ClientEvent::Watch(watch) = event {
            into.push((watch.zxid, watch.event_type, watch.path));
        }
    }
}

/// Runs `case` under `root` (which must exist and be empty) on `backend`.
pub async fn run<B: Backend>(
    backend: &mut B,
    root: &str,
    case: &Case,
) -> (Transcript, Vec<SessionId>) {
    let mut clients: Vec<Option<B::Client>> = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..case.sessions {
        let client = backend.open().await;
        ids.push(client.session_id());
        clients.push(Some(client));
    }
    let mut events = vec![Vec::new(); case.sessions];
    let mut outcomes = Vec::new();
    let mut last_sequential = root.to_owned();
    for step in &case.steps {
        let Some(client) = clients[step.session].as_ref() else {
            outcomes.push(Outcome::Skipped);
            continue;
        };
        let path = |t: &Target| resolve(root, t, &last_sequential);
        let outcome = match &step.action {
            Action::Create { target, data, mode } => {
                match client.create(&path(target), data, *mode).await {
                    Ok(created) => {
                        if mode.is_sequential() {
                            last_sequential = created.path.clone();
                        }
                        Outcome::Created {
                            path: created.path,
                            stat: created.stat,
                        }
                    }
                    Err(e) => Outcome::Error(e),
                }
            }
            Action::Delete { target, version } => client
                .delete(&path(target), *version)
                .await
                .map_or_else(Outcome::Error, |()| Outcome::Done),
            Action::Exists { target, watch } => client
                .exists(&path(target), *watch)
                .await
                .map_or_else(Outcome::Error, Outcome::Exists),
            Action::GetData { target, watch } => client
                .get_data(&path(target), *watch)
                .await
                .map_or_else(Outcome::Error, |(d, s)| Outcome::Data(d, s)),
            Action::GetChildren { target, watch } => client
                .get_children(&path(target), *watch)
                .await
                .map_or_else(Outcome::Error, |(mut children, stat)| {
                    children.sort();
                    Outcome::Children(children, stat)
                }),
            Action::SetData {
                target,
                data,
                version,
            } => client
                .set_data(&path(target), data, *version)
                .await
                .map_or_else(Outcome::Error, Outcome::SetData),
            Action::Multi(actions) => {
                let ops: Vec<Op> = actions
                    .iter()
                    .map(|a| match a {
                        MultiAction::Check { target, version } => Op::Check {
                            path: path(target),
                            version: *version,
                        },
                        MultiAction::Create { target, mode } => Op::Create {
                            path: path(target),
                            data: b"m".to_vec(),
                            mode: *mode,
                        },
                        MultiAction::Delete { target, version } => Op::Delete {
                            path: path(target),
                            version: *version,
                        },
                        MultiAction::SetData { target, version } => Op::SetData {
                            path: path(target),
                            data: b"m".to_vec(),
                            version: *version,
                        },
                    })
                    .collect();
                match client.multi(&ops).await {
                    Ok(results) => {
                        for (action, result) in actions.iter().zip(&results) {
                            if let (
                                MultiAction::Create { mode, .. },
                                OpResult::Create { path, .. },
                            ) = (action, result)
                            {
                                if mode.is_sequential() {
                                    last_sequential = path.clone();
                                }
                            }
                        }
                        Outcome::Multi(results)
                    }
                    Err(MultiError::Request(e)) => Outcome::Error(e),
                    Err(MultiError::Operation { index, error }) => {
                        Outcome::MultiFailed { index, error }
                    }
                }
            }
            Action::Sync => client
                .sync(root)
                .await
                .map_or_else(Outcome::Error, |()| Outcome::Done),
            Action::Close => {
                // A read first, so that every notification sent to this session has arrived.
                let _ = client.exists(root, false).await;
                drain(client, &mut events[step.session]);
                let client = clients[step.session].take().expect("checked live above");
                backend.close(client).await;
                Outcome::Done
            }
        };
        outcomes.push(outcome);
    }
    // A read on every live session: its reply comes after every notification sent before it.
    for (index, client) in clients.iter().enumerate() {
        if let Some(client) = client {
            let _ = client.exists(root, false).await;
            drain(client, &mut events[index]);
        }
    }
    for client in clients.into_iter().flatten() {
        backend.close(client).await;
    }
    for list in &mut events {
        list.sort();
    }
    (Transcript { outcomes, events }, ids)
}

impl Transcript {
    fn stats_mut(&mut self) -> Vec<&mut Stat> {
        let mut stats = Vec::new();
        for outcome in &mut self.outcomes {
            match outcome {
                Outcome::Created { stat, .. }
                | Outcome::Exists(Some(stat))
                | Outcome::Data(_, stat)
                | Outcome::Children(_, stat)
                | Outcome::SetData(stat) => stats.push(stat),
                Outcome::Multi(results) => {
                    for result in results {
                        match result {
                            OpResult::Create {
                                stat: Some(stat), ..
                            }
                            | OpResult::SetData { stat } => stats.push(stat),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        stats
    }

    /// Replaces zxids by their rank among the zxids this transcript shows, session ids by the
    /// session's index (1-based; 0 stays 0, a foreign session becomes -1), and zeroes times.
    pub fn normalize(mut self, sessions: &[SessionId]) -> Transcript {
        let mut zxids = BTreeSet::new();
        for stat in self.stats_mut() {
            zxids.extend([stat.czxid, stat.mzxid, stat.pzxid]);
        }
        for list in &self.events {
            zxids.extend(list.iter().map(|(zxid, _, _)| *zxid));
        }
        let rank: BTreeMap<i64, i64> = zxids.into_iter().zip(1..).collect();
        let owner = |id: i64| -> i64 {
            if id == 0 {
                0
            } else {
                sessions
                    .iter()
                    .position(|s| s.0 == id)
                    .map_or(-1, |i| i as i64 + 1)
            }
        };
        for stat in self.stats_mut() {
            *stat = stat.without_times();
            stat.czxid = rank[&stat.czxid];
            stat.mzxid = rank[&stat.mzxid];
            stat.pzxid = rank[&stat.pzxid];
            stat.ephemeral_owner = owner(stat.ephemeral_owner);
        }
        for list in &mut self.events {
            for event in list.iter_mut() {
                event.0 = rank[&event.0];
            }
        }
        self
    }

    /// A readable account of where two normalized transcripts differ.
    pub fn diff(&self, other: &Transcript, case: &Case, left: &str, right: &str) -> Option<String> {
        let mut out = String::new();
        for (index, (a, b)) in self.outcomes.iter().zip(&other.outcomes).enumerate() {
            if a != b {
                out += &format!(
                    "step {index} ({:?}):\n  {left}: {a:?}\n  {right}: {b:?}\n",
                    case.steps[index].action
                );
            }
        }
        for (session, (a, b)) in self.events.iter().zip(&other.events).enumerate() {
            if a != b {
                out += &format!(
                    "watch events of session {session}:\n  {left}: {a:?}\n  {right}: {b:?}\n"
                );
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

/// What a set of transcripts exercised: so that a pass cannot be an empty one.
#[derive(Debug, Default)]
pub struct Coverage {
    pub watch_events: u64,
    pub sequential_creates: u64,
    pub ephemeral_owners_seen: u64,
    pub multi_ok: u64,
    pub multi_failed: u64,
    pub errors: BTreeMap<String, u64>,
}

impl Coverage {
    pub fn add(&mut self, transcript: &Transcript) {
        self.watch_events += transcript
            .events
            .iter()
            .map(|e| e.len() as u64)
            .sum::<u64>();
        for outcome in &transcript.outcomes {
            match outcome {
                Outcome::Created { path, stat } => {
                    if zkh_recipes::types::sequence_suffix(path).is_some() {
                        self.sequential_creates += 1;
                    }
                    if stat.ephemeral_owner != 0 {
                        self.ephemeral_owners_seen += 1;
                    }
                }
                Outcome::Multi(_) => self.multi_ok += 1,
                Outcome::MultiFailed { error, .. } => {
                    self.multi_failed += 1;
                    *self.errors.entry(format!("{error:?}")).or_default() += 1;
                }
                Outcome::Error(error) => *self.errors.entry(format!("{error:?}")).or_default() += 1,
                _ => {}
            }
        }
    }

    /// Panics unless every kind of behaviour the comparison is meant to cover occurred.
    pub fn assert_broad(&self) {
        let wanted = [
            "NoNode",
            "NodeExists",
            "BadVersion",
            "NotEmpty",
            "NoChildrenForEphemerals",
            "BadArguments",
        ];
        for code in wanted {
            assert!(
                self.errors.get(code).copied().unwrap_or(0) > 0,
                "no case met {code}: {self:?}"
            );
        }
        assert!(
            self.watch_events > 0 && self.sequential_creates > 0 && self.ephemeral_owners_seen > 0,
            "{self:?}"
        );
        assert!(self.multi_ok > 0 && self.multi_failed > 0, "{self:?}");
    }
}
