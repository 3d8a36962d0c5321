//! Recording a real client's history for the guarantees: what a client sees, in the order it
//! sees it, with a reply's zxid only where the reply's stat gives it exactly (see the parent
//! module).

use zkh_recipes::{ClientEvent, Request, Response, ZkError};

use crate::history::{History, HistoryEvent, OpOutcome};
use crate::request::Reply;

/// Where the history goes: nowhere for a client that records its own (the simulated one),
/// a wall-clock recorder for one that does not (the real side's, in `zkh-scenarios`: this
/// crate reads no clock).
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
