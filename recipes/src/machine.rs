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
//! timer is "cancelled".

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

/// A recipe as a state machine.
pub trait Machine: Clone + Eq + Hash + Debug + Send + 'static {
    /// What the application can ask.
    type Request: Clone + Debug + Send + 'static;
    /// What the machine tells its host.
    type Report: Clone + Debug + PartialEq + Send + 'static;

    /// Reacts to `input`, appending commands to `out`.
    fn handle(&mut self, input: Input<Self::Request>, out: &mut Vec<Command<Self::Report>>);
}

/// An id allocator, part of a machine's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ids {
    next: u64,
}

impl Ids {
    /// A fresh id.
    pub fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

/// How long a machine waits before retrying after `ConnectionLoss`.
pub const RETRY_AFTER_MS: u64 = 100;
