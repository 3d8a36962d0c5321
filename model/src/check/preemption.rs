//! Preemption bounding: a depth-first search of only the schedules in which the server switches
//! away from a client that still has a request waiting at most K times
//! ([`Limits::preemptions`](super::Limits::preemptions)).
//!
//! # Why
//!
//! Where the whole space is too large to search (the sharded job with an expiry, or with three
//! instances: more than a billion states each, see the README), random walks find bugs and
//! prove nothing. A bounded search proves something smaller but exact: no violation in *any*
//! schedule with at most K preemptions, with every fault the budget allows at every point.
//! CHESS (Musuvathi and Qadeer, "Iterative context bounding for systematic testing of
//! multithreaded programs", PLDI 2007) found that most concurrency bugs need few preemptions,
//! and the number of schedules with K of them grows polynomially in their length, where all
//! schedules grow exponentially.
//!
//! # What a preemption is here
//!
//! The model's steps that make clients race are the server's ([`Action::Serve`], and
//! [`Action::DropReply`], a serve whose reply is lost) and the applications' acts
//! ([`Action::Act`]): they read and write what every client shares (the tree, the resource,
//! the history of side effects). They are *scheduled steps* of their client. A client's
//! processing of what it received and its timers ([`Action::Deliver`], [`Action::Timer`])
//! touch only that client; they are free, and do not change who runs. Faults are free too:
//! the budget bounds them, and they strike at every point.
//!
//! The search tags each state with the client that took the last scheduled step (the
//! *running* client) and the preemptions used on the way. A scheduled step of another client
//! is a preemption when the running one is *busy*: it has a request the server has not
//! applied. Switching away from a client that waits on nothing (a watch, a timer, its next
//! cycle) is free, as a thread that blocks gives up the processor in CHESS. With K = 0, the
//! server applies each client's requests in a burst until the client waits; every preemption
//! lets another client cut in once.
//!
//! A state is explored once per tag (running client, preemptions used): two roads to one state
//! with different tags are two entries of the visited set, so the unique count is of tagged
//! states. A state seen with the same running client and fewer preemptions used could stand
//! for the one with more (its futures include theirs); looking those up saved 1 to 8% of the
//! states (the lock within two preemptions: 1,313,671 to 1,204,613; the job with an expiry
//! within two: 11,507,300 to 11,378,421) for a look-up per preemption fewer, and was not
//! kept. Symmetry reduction is
//! off in a bounded search: the tag names a client by its index, which a renaming changes.
//! The model's own partial-order reduction (see [`check`](super)) applies as before: the
//! bound is over the schedules of the reduced model.

use super::{Action, State, Workload};
use crate::shared::hash_of;

/// A state's tag in a bounded search: who ran last, and how many preemptions came before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Schedule {
    /// The client that took the last scheduled step (none before the first).
    running: Option<usize>,
    /// Preemptions on the way here.
    used: u8,
}

impl Schedule {
    /// The tag after `action` in `state`, tagged `self`; none when it would be a preemption
    /// past `bound`.
    pub(super) fn after<W: Workload>(
        self,
        state: &State<W>,
        action: &Action,
        bound: u8,
    ) -> Option<Schedule> {
        let Some(client) = scheduled_client(action) else {
            return Some(self);
        };
        let used = match self.running {
            Some(running) if running != client && busy(state, running) => {
                if self.used >= bound {
                    return None;
                }
                self.used + 1
            }
            _ => self.used,
        };
        Some(Schedule {
            running: Some(client),
            used,
        })
    }

    /// The key of a state with this tag and `fingerprint` in the visited set.
    pub(super) fn key(self, fingerprint: u64) -> u64 {
        hash_of(&(fingerprint, self.running, self.used))
    }
}

/// The client whose scheduled step `action` is, if it is one (see the module docs).
fn scheduled_client(action: &Action) -> Option<usize> {
    match action {
        Action::Serve(c) | Action::DropReply(c) | Action::Act(c) => Some(*c),
        _ => None,
    }
}

/// Whether client `c` has a request the server has not applied (and is alive to have it).
fn busy<W: Workload>(state: &State<W>, c: usize) -> bool {
    !state.client(c).crashed && !state.queues(c).outbox.is_empty()
}
