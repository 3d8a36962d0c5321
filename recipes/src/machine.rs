//! Recipes as sans-IO state machines.
//!
//! A recipe is a plain value that reacts to [`Input`]s with [`Command`]s. It performs no I/O,
//! reads no clock and draws no randomness: anything unique (Curator's protection UUID) comes
//! from its host when it is built. So the same struct runs under the async [driver](crate::driver)
//! against any `ZkClient` (real, simulated, in-memory), and under the model checker, which feeds
//! it inputs directly and stores it in its state (hence `Clone + Eq + Hash`).
//!
//! A machine names its operations and timers with ids it allocates itself ([`Ids`]); a reply or
//! a timer that no longer matches what the machine waits for is ignored, which is how a stale
//! timer is "cancelled". An id is used again only once its reply or timer has come back.

use std::fmt::Debug;
use std::hash::Hash;

use crate::error::ZkError;
use crate::event::{SessionEvent, WatchedEvent};
use crate::request::{Request, Response};

/// An operation's id, unique within one machine.
pub type OpId = u64;
/// A timer's id, unique within one machine.
pub type TimerId = u64;

/// Something that happened to a machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Input<R> {
    /// The application asks for something (acquire, release, start, close, ...).
    Request(R),
    /// The reply to operation `id` (`ConnectionLoss` included).
    Reply {
        /// The operation.
        id: OpId,
        /// Its outcome.
        result: Result<Response, ZkError>,
    },
    /// A watch fired.
    Watch(WatchedEvent),
    /// The connection or the session changed.
    Session(SessionEvent),
    /// Timer `id` expired.
    Timer(TimerId),
}

/// Something a machine wants done.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command<P> {
    /// Run a ZooKeeper operation; its reply comes back as [`Input::Reply`] with this id.
    Op {
        /// The operation's id.
        id: OpId,
        /// The operation.
        request: Request,
    },
    /// Wake the machine with [`Input::Timer`] after `after_ms`.
    Timer {
        /// The timer's id.
        id: TimerId,
        /// The delay.
        after_ms: u64,
    },
    /// Tell the host something (a role gained or lost, an outcome).
    Report(P),
}

impl<P> Command<P> {
    /// A nested machine's command as its host sees it: an operation or timer goes out with its
    /// id shifted into the host's range for that machine (`offset`), and a report comes back
    /// for the host to act on.
    pub fn nested<Q>(self, offset: u64) -> Result<Command<Q>, P> {
        match self {
            Command::Op { id, request } => Ok(Command::Op {
                id: id + offset,
                request,
            }),
            Command::Timer { id, after_ms } => Ok(Command::Timer {
                id: id + offset,
                after_ms,
            }),
            Command::Report(report) => Err(report),
        }
    }
}

/// A recipe as a state machine.
pub trait Machine: Clone + Eq + Hash + Debug + Send + 'static {
    /// What the application can ask.
    type Request: Clone + Debug + Send + 'static;
    /// What the machine tells its host.
    type Report: Clone + Debug + PartialEq + Send + 'static;

    /// Reacts to `input`, appending commands to `out`.
    fn handle(&mut self, input: Input<Self::Request>, out: &mut Vec<Command<Self::Report>>);

    /// Every ephemeral node this machine knows is its own now (a waiter's node, a role's
    /// node), or `None` if the recipe does not say. When nothing of the machine's is in flight,
    /// each ephemeral node its current session owns must be among them: a node it lost track
    /// of (a create whose reply was lost and never found) is an orphan, holding a place or a
    /// role until the session ends. The model checker's invariant "no orphaned ephemerals" and
    /// the simulator's end-of-run check of the same name read it. By default `None`.
    fn known_ephemerals(&self) -> Option<Vec<String>> {
        None
    }

    /// The ephemeral nodes this machine believes are its own and stands on now (a
    /// registration), or `None` if the recipe does not say: when nothing of the machine's is in
    /// flight, each must exist, owned by its current session. The simulator's end-of-run
    /// "claims are owned" reads it beside the roles a recipe reports with their tokens. By
    /// default `None`.
    fn claimed_ephemerals(&self) -> Option<Vec<String>> {
        None
    }

    /// Whether nothing the machine started is still pending inside it (an operation asleep
    /// before a retry, a notice not yet handed over): only a settled machine's
    /// [`known_ephemerals`](Machine::known_ephemerals) are judged. By default true.
    fn settled(&self) -> bool {
        true
    }

    /// Whether the driver sends the machine's operations as soon as it issues them, several in
    /// flight at once (Curator's background operations), rather than one at a time. Replies
    /// still come back in the order the operations were sent. By default false.
    fn pipelined(&self) -> bool {
        false
    }
}

/// An id allocator, part of a machine's state: it knows which ids are still *outstanding* (an
/// operation not answered yet, a timer not fired yet, whether the machine still waits for it
/// or has given it up), and hands out the least id that is not.
///
/// Every operation gets exactly one reply (`ConnectionLoss` and `SessionExpired` included) and
/// every timer fires once, and the machine tells the allocator when ([`Ids::answered`]). So an
/// id is never reused while a reply or timer carrying it may still arrive, and a stale one can
/// never be mistaken for a new one. Reusing ids, rather than counting up, makes a machine's
/// state the same however many operations it took to get there: a model checker sees two
/// paths that differ only in how many retries they made meet again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ids {
    outstanding: std::collections::BTreeSet<u64>,
}

impl Ids {
    /// A fresh id: the least (from 1) that no outstanding operation or timer has.
    pub fn fresh(&mut self) -> u64 {
        let mut id = 1;
        for &used in &self.outstanding {
            if used != id {
                break;
            }
            id += 1;
        }
        self.outstanding.insert(id);
        id
    }

    /// The reply to operation `id` arrived, or timer `id` fired: its id may be used again.
    pub fn answered(&mut self, id: u64) {
        self.outstanding.remove(&id);
    }

    /// Takes note of `input` if it answers one of these ids (every machine calls this first
    /// with each input it handles).
    pub fn note<R>(&mut self, input: &Input<R>) {
        if let Input::Reply { id, .. } | Input::Timer(id) = input {
            self.answered(*id);
        }
    }
}

/// How long a machine waits before retrying after `ConnectionLoss`.
pub const RETRY_AFTER_MS: u64 = 100;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_used_again_only_once_answered() {
        let mut ids = Ids::default();
        assert_eq!([ids.fresh(), ids.fresh(), ids.fresh()], [1, 2, 3]);
        ids.answered(2);
        assert_eq!(ids.fresh(), 2, "the least id no longer outstanding");
        assert_eq!(ids.fresh(), 4, "1, 2 and 3 are still outstanding");
        ids.note::<()>(&Input::Timer(1));
        ids.note::<()>(&Input::Reply {
            id: 3,
            result: Err(ZkError::ConnectionLoss),
        });
        ids.note::<()>(&Input::Session(SessionEvent::Disconnected));
        assert_eq!([ids.fresh(), ids.fresh(), ids.fresh()], [1, 3, 5]);
    }

    #[test]
    fn allocators_that_answered_the_same_ids_are_equal() {
        // One machine retried twice, the other not at all: with nothing outstanding but their
        // current operation, they hold the same id for it, and so compare equal.
        let mut retried = Ids::default();
        for _ in 0..3 {
            let id = retried.fresh();
            retried.answered(id);
        }
        let mut direct = Ids::default();
        assert_eq!(retried.fresh(), direct.fresh());
        assert_eq!(retried, direct);
    }
}
