//! A history as lanes on one time axis: what the timeline draws.
//!
//! One pass over the history, oldest first, keeps what is open and closes it when the history
//! says it ended:
//!
//! - per client, its **connection** (connecting, connected with its session id, suspended,
//!   expired, closed, crashed), its **role** as the recipe reported it (holder, leader, ...;
//!   "none" is a gap), and its **ephemeral nodes**, from the reply that created each to the
//!   first entry that shows it gone: a delete of it that succeeded, a `NodeDeleted` watch on
//!   it, or its owner's session expiring as the owner learnt it. (The server deletes an expired
//!   session's nodes earlier than its owner hears of it; a history has no entry for that
//!   moment, so the bar may run on a little.)
//! - per server, its role: leading (with the epoch), following, looking, down;
//! - the **faults**, read from their canonical text: the lanes they hit (every `client: N` or
//!   `Client(N)` or `client #N` they name, else the ensemble), and their span (`duration_ms`, cut short by
//!   the heal); a fault without a duration is an instant. Planned faults that did not fire
//!   are instants of their own kind.
//! - the **violations**: each failing finding, at its time (or the end of the run), with the
//!   history rows that show it.
//!
//! Every span and instant keeps the place of the history row that began it, so the page can
//! link each to its row.

use std::collections::BTreeMap;

use serde::Serialize;
use zkh_model::history_text::session_text;
use zkh_model::{History, HistoryEvent, OpOutcome, Reply, Request, Response};
use zkh_recipes::event::EventType;
use zkh_recipes::ops::{Op, OpResult};
use zkh_recipes::SessionEvent;

use crate::types::FindingRecord;

/// Something that lasted, on a lane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    /// When it began.
    pub start: u64,
    /// When it ended (the end of the run if it had not).
    pub end: u64,
    /// Its words.
    pub label: String,
    /// Its kind, for its colour: `connected`, `suspended`, `leader`, `node`, `leading`, ...
    pub class: String,
    /// The history row that began it.
    pub row: usize,
}

/// One client's lanes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClientLanes {
    /// The client process.
    pub client: u32,
    /// Its connection and session.
    pub connection: Vec<Span>,
    /// Its role, as its recipe reported it.
    pub role: Vec<Span>,
    /// Its ephemeral nodes.
    pub nodes: Vec<Span>,
}

/// One server's lane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServerLane {
    /// The server (1-based).
    pub server: u32,
    /// Its roles over time.
    pub roles: Vec<Span>,
}

/// A fault, over the lanes it hit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FaultMark {
    /// When it began.
    pub start: u64,
    /// When it ended (equal to `start` for an instant).
    pub end: u64,
    /// Its text.
    pub label: String,
    /// `fault`, `not-fired` or `heal`.
    pub class: String,
    /// The clients it hit; empty for the ensemble.
    pub clients: Vec<u32>,
    /// Its history row.
    pub row: usize,
}

/// A violation, where it happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Marker {
    /// When.
    pub at: u64,
    /// The property.
    pub property: String,
    /// `always` or `eventually`.
    pub class: String,
    /// The violation in words.
    pub detail: String,
    /// What the property means.
    pub explanation: String,
    /// The history rows that show it.
    pub rows: Vec<usize>,
}

/// Everything the timeline draws.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lanes {
    /// The last time on the axis.
    pub end: u64,
    /// Each client, by id.
    pub clients: Vec<ClientLanes>,
    /// Each server, by id.
    pub servers: Vec<ServerLane>,
    /// The faults.
    pub faults: Vec<FaultMark>,
    /// The violations.
    pub markers: Vec<Marker>,
}

/// Spans that are open, by key, closed into `done`.
struct Open<K: Ord> {
    open: BTreeMap<K, Span>,
    done: BTreeMap<K, Vec<Span>>,
}

impl<K: Ord + Clone> Open<K> {
    fn new() -> Self {
        Open {
            open: BTreeMap::new(),
            done: BTreeMap::new(),
        }
    }

    fn close(&mut self, key: &K, at: u64) {
        if let Some(mut span) = self.open.remove(key) {
            span.end = at;
            self.done.entry(key.clone()).or_default().push(span);
        }
    }

    fn start(&mut self, key: K, at: u64, label: String, class: &str, row: usize) {
        self.close(&key, at);
        self.done.entry(key.clone()).or_default();
        let span = Span {
            start: at,
            end: at,
            label,
            class: class.to_owned(),
            row,
        };
        self.open.insert(key, span);
    }

    fn finish(mut self, end: u64) -> BTreeMap<K, Vec<Span>> {
        let keys: Vec<K> = self.open.keys().cloned().collect();
        for key in keys {
            self.close(&key, end);
        }
        self.done
    }
}

/// The numbers that follow `key` in `text` (`"client: "` finds 3 in `PauseClient { client: 3`).
fn numbers_after(text: &str, key: &str) -> Vec<u64> {
    text.match_indices(key)
        .filter_map(|(at, _)| {
            let digits: String = text[at + key.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .collect()
}

fn fault_mark(description: &str, at: u64, row: usize) -> FaultMark {
    let class = if description.starts_with("not fired") || description.starts_with("skipped") {
        "not-fired"
    } else if description == "heal" {
        "heal"
    } else {
        "fault"
    };
    let mut clients: Vec<u32> = ["client: ", "Client(", "client ", "client #"]
        .iter()
        .flat_map(|key| numbers_after(description, key))
        .filter_map(|n| u32::try_from(n).ok())
        .collect();
    clients.sort_unstable();
    clients.dedup();
    let duration_us = numbers_after(description, "duration_ms: ")
        .first()
        .map_or(0, |ms| ms * 1000);
    FaultMark {
        start: at,
        end: if class == "fault" {
            at + duration_us
        } else {
            at
        },
        label: description.to_owned(),
        class: class.to_owned(),
        clients,
        row,
    }
}

fn role_class(role: &str) -> &'static str {
    match role {
        "holder" | "holds lock" => "holder",
        "leader" | "master" | "first" => "leader",
        "waiting" | "candidate" | "follower" | "participant" => "waiting",
        _ => "role",
    }
}

fn server_span(role: &str) -> (String, &'static str) {
    let class = if role.starts_with("leading") {
        "leading"
    } else if role.starts_with("following") {
        "following"
    } else if role == "down" {
        "down"
    } else {
        "looking"
    };
    (role.to_owned(), class)
}

/// The ephemeral nodes a successful reply to `request` created: (path) for each.
fn created_ephemerals(request: &Request, outcome: &OpOutcome) -> Vec<String> {
    let OpOutcome::Reply {
        reply: Reply::Ok(response),
        ..
    } = outcome
    else {
        return Vec::new();
    };
    match (request, response) {
        (Request::Create { mode, .. }, Response::Created(created)) if mode.is_ephemeral() => {
            vec![created.path.clone()]
        }
        (Request::Multi(ops), Response::Multi(results)) => ops
            .iter()
            .zip(results)
            .filter_map(|(op, result)| match (op, result) {
                (Op::Create { mode, .. }, OpResult::Create { path, .. }) if mode.is_ephemeral() => {
                    Some(path.clone())
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The nodes a successful reply to `request` deleted.
fn deleted(request: &Request, outcome: &OpOutcome) -> Vec<String> {
    let OpOutcome::Reply {
        reply: Reply::Ok(_),
        ..
    } = outcome
    else {
        return Vec::new();
    };
    match request {
        Request::Delete { path, .. } => vec![path.clone()],
        Request::Multi(ops) => ops
            .iter()
            .filter_map(|op| match op {
                Op::Delete { path, .. } => Some(path.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Ends the spans of `owner`'s nodes at `at` (its session expired).
fn close_nodes_of(nodes: &mut Open<String>, owners: &BTreeMap<String, u32>, owner: u32, at: u64) {
    let owned: Vec<&String> = owners
        .iter()
        .filter(|(_, o)| **o == owner)
        .map(|(path, _)| path)
        .collect();
    for path in owned {
        nodes.close(path, at);
    }
}

/// The lanes of `history`, with a marker for each failing finding of `findings`.
pub fn lanes(history: &History, findings: &[FindingRecord]) -> Lanes {
    let end = history.entries().last().map_or(0, |entry| entry.at_us);
    let mut connection: Open<u32> = Open::new();
    let mut role: Open<u32> = Open::new();
    let mut nodes: Open<String> = Open::new();
    let mut node_owner: BTreeMap<String, u32> = BTreeMap::new();
    let mut servers: Open<u32> = Open::new();
    let mut invoked: BTreeMap<(u32, u64), &Request> = BTreeMap::new();
    let mut faults: Vec<FaultMark> = Vec::new();
    let mut clients: Vec<u32> = Vec::new();
    for (row, entry) in history.entries().iter().enumerate() {
        let at = entry.at_us;
        match &entry.event {
            HistoryEvent::Invoke {
                client,
                xid,
                request,
                ..
            } => {
                clients.push(*client);
                invoked.insert((*client, *xid), request);
            }
            HistoryEvent::Complete {
                client,
                xid,
                outcome,
            } => {
                let Some(request) = invoked.remove(&(*client, *xid)) else {
                    continue;
                };
                for path in created_ephemerals(request, outcome) {
                    let label = path.rsplit('/').next().unwrap_or(&path).to_owned();
                    node_owner.insert(path.clone(), *client);
                    nodes.start(path, at, label, "node", row);
                }
                for path in deleted(request, outcome) {
                    nodes.close(&path, at);
                }
            }
            HistoryEvent::Watch { client, event } => {
                clients.push(*client);
                if event.event_type == EventType::NodeDeleted {
                    nodes.close(&event.path, at);
                }
            }
            HistoryEvent::Session { client, event } => {
                clients.push(*client);
                let (label, class) = match event {
                    SessionEvent::Connected { session_id } => (
                        format!("session {}", session_text(*session_id)),
                        "connected",
                    ),
                    SessionEvent::Reconnected { session_id } => (
                        format!("session {}", session_text(*session_id)),
                        "connected",
                    ),
                    SessionEvent::Disconnected => ("suspended".to_owned(), "suspended"),
                    SessionEvent::Expired => {
                        close_nodes_of(&mut nodes, &node_owner, *client, at);
                        ("expired".to_owned(), "expired")
                    }
                    SessionEvent::Closed => ("closed".to_owned(), "closed"),
                };
                connection.start(*client, at, label, class, row);
            }
            HistoryEvent::Fault { description } => {
                let mark = fault_mark(description, at, row);
                if mark.class == "heal" {
                    for open in faults.iter_mut().filter(|f| f.end > at) {
                        open.end = at;
                    }
                }
                if description.starts_with("CrashClient") {
                    for client in &mark.clients {
                        connection.start(*client, at, "crashed".to_owned(), "crashed", row);
                        role.close(client, at);
                    }
                }
                faults.push(mark);
            }
            HistoryEvent::Server { server, role } => {
                let (label, class) = server_span(role);
                servers.start(*server, at, label, class, row);
            }
            HistoryEvent::Role {
                client,
                role: name,
                token,
            } => {
                clients.push(*client);
                if name == "none" {
                    role.close(client, at);
                } else {
                    let label = match token {
                        Some(token) => format!("{name} (token {token})"),
                        None => name.clone(),
                    };
                    role.start(*client, at, label, role_class(name), row);
                }
            }
            HistoryEvent::SideEffect { client, .. } | HistoryEvent::Execution { client, .. } => {
                clients.push(*client);
            }
        }
    }
    clients.sort_unstable();
    clients.dedup();
    let mut connection = connection.finish(end);
    let mut role = role.finish(end);
    let mut node_spans: BTreeMap<u32, Vec<Span>> = BTreeMap::new();
    for (path, spans) in nodes.finish(end) {
        let owner = node_owner[&path];
        node_spans.entry(owner).or_default().extend(spans);
    }
    for spans in node_spans.values_mut() {
        spans.sort_by_key(|span| (span.start, span.row));
    }
    let markers = findings
        .iter()
        .filter(|f| !f.holds && f.class != "sometimes")
        .map(|f| Marker {
            at: f.at_us.unwrap_or(end).min(end),
            property: f.property.clone(),
            class: f.class.clone(),
            detail: f.detail.clone(),
            explanation: f.explanation.clone(),
            rows: f.evidence.clone(),
        })
        .collect();
    Lanes {
        end,
        clients: clients
            .into_iter()
            .map(|client| ClientLanes {
                client,
                connection: connection.remove(&client).unwrap_or_default(),
                role: role.remove(&client).unwrap_or_default(),
                nodes: node_spans.remove(&client).unwrap_or_default(),
            })
            .collect(),
        servers: servers
            .finish(end)
            .into_iter()
            .map(|(server, roles)| ServerLane { server, roles })
            .collect(),
        faults,
        markers,
    }
}
