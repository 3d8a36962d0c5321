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
//! kept. Symmetry reduction is off in a bounded search: the tag names a client by its index,
//! which a renaming changes. The model's own partial-order reduction (see [`check`](super))
//! applies as before: the bound is over the schedules of the reduced model.

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

#[cfg(test)]
mod tests {
    use stateright::Model;
    use zkh_recipes::lock::LockVariant;

    use super::Schedule;
    use crate::check::{Acting, Action, FaultBudget, LockWorkload, RecipeModel};

    #[test]
    fn a_preemption_is_a_scheduled_step_of_another_client_while_the_running_one_is_busy() {
        let budget = FaultBudget::parse("expire=1").expect("a budget");
        let workload = LockWorkload {
            variant: LockVariant::Correct,
        };
        let model = RecipeModel::new(workload, 2, budget, Acting::CaughtUp);
        let mut state = model.init_states().remove(0);
        // Both clients start by sending their first request.
        assert!(!state.queues(0).outbox.is_empty() && !state.queues(1).outbox.is_empty());
        let start = Schedule::default();
        let first = start
            .after(&state, &Action::Serve(0), 0)
            .expect("no one ran");
        assert_eq!(first.running, Some(0));
        assert_eq!(first.used, 0);
        assert_eq!(first.after(&state, &Action::Serve(0), 0), Some(first));
        // Client 0 has a request waiting: serving client 1 now is a preemption.
        assert_eq!(first.after(&state, &Action::Serve(1), 0), None);
        assert_eq!(first.after(&state, &Action::Act(1), 0), None);
        let switched = first.after(&state, &Action::DropReply(1), 1);
        assert_eq!(switched.map(|s| (s.running, s.used)), Some((Some(1), 1)));
        // Local steps and faults are free and leave the running client be.
        for free in [Action::Deliver(1), Action::Expire(1), Action::LeaderChange] {
            assert_eq!(first.after(&state, &free, 0), Some(first), "{free:?}");
        }
        // Once client 0 waits on nothing, switching away from it is free.
        state.queues_mut(0).outbox.clear();
        let free = first.after(&state, &Action::Serve(1), 0);
        assert_eq!(free.map(|s| (s.running, s.used)), Some((Some(1), 0)));
        // A different tag is a different key for the same state.
        assert_ne!(first.key(7), start.key(7));
        assert_ne!(first.key(7), switched.expect("switched").key(7));
    }
}
