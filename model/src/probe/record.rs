//! Recording a real client's history for the guarantees: what a client sees, in the order it
//! sees it, with a reply's zxid only where the reply's stat gives it exactly (see the parent
//! module).

use std::sync::Mutex;
use std::time::Instant;

use zkh_recipes::{ClientEvent, Request, Response, ZkError};

use crate::history::{History, HistoryEvent, OpOutcome};
use crate::request::Reply;

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
