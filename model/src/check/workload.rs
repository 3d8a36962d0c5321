//! What a recipe brings to the checker: its machine, its application and its named
//! properties ([`Workload`], [`Judge`]).

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::hash::Hash;

use stateright::Expectation;
use zkh_recipes::machine::Machine;
use zkh_recipes::symmetry::Symmetric;

use crate::history::{Entries, HistoryEntry, HistoryEvent};
use crate::properties::Finding;
use crate::zookeeper::ZkModel;

use super::State;

/// A recipe with the application that exercises it, as the checker runs it.
pub trait Workload: Clone + Debug + PartialEq + Eq + Hash + Send + Sync + 'static {
    /// The recipe's machine.
    type Machine: Machine<Request = Self::Request, Report = Self::Report> + Symmetric + Sync;
    /// The machine's requests.
    type Request: Clone + Debug + Send + 'static;
    /// The machine's reports.
    type Report: Clone + Debug + PartialEq + Send + 'static;
    /// A client's application state.
    type App: Clone + Debug + PartialEq + Eq + Hash + Symmetric + Send + Sync;

    /// Whether clients are interchangeable: renaming them maps a reachable state to a
    /// reachable state with the same verdicts, so a search may explore one state of each class
    /// (see the module docs). Not so for the sharded job, whose allocation orders instances by
    /// their ids.
    const SYMMETRIC: bool = true;

    /// Whether every judge's finding reads nothing of the state but its history (the entries,
    /// and the shared log's length, which is the present), and what the workload forgets of the
    /// shared history ([`Workload::settled_shared`], [`Workload::canonical_shared`]) nothing
    /// but the shared history and the verdicts ([`State::happened`]). Then each distinct
    /// history is judged once, and each distinct shared history forgotten once: the results
    /// are kept for the next state with the same history and verdicts. By default not.
    const READS_HISTORY_ALONE: bool = false;

    /// The recipe's directory (where waiters queue).
    fn dir(&self) -> &str;
    /// The nodes that exist from the start, parents first: by default the recipe's directory
    /// and its ancestors.
    fn directories(&self) -> Vec<String> {
        zkh_recipes::path::ancestors(self.dir())
    }
    /// Client `index`'s machine and application, and the requests it starts with.
    fn client(&self, index: usize) -> (Self::Machine, Self::App, Vec<Self::Request>);
    /// The application's reaction to a report: history events, and requests to the machine.
    fn on_report(
        &self,
        app: &mut Self::App,
        report: Self::Report,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Vec<Self::Request>;
    /// An action of a caught-up application, if it has one to take now.
    fn act(
        &self,
        app: &mut Self::App,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Option<Vec<Self::Request>>;
    /// Whether the application has an action to take, the server's data being `zk` (the
    /// job's leader has a spare trigger while a sharding is necessary).
    fn can_act(&self, app: &Self::App, zk: &ZkModel) -> bool;
    /// Whether another client's step could make [`Workload::can_act`] true for `app` by
    /// changing the server's data alone (the job's leader, with its spare trigger, once a
    /// sharding becomes necessary). By default, `can_act` reads only the application.
    fn may_act_on_the_server(&self, app: &Self::App) -> bool {
        let _ = app;
        false
    }
    /// Whether its next action waits for a settled moment: nothing in flight to or from any
    /// client, and every client's machine at rest ([`Workload::at_rest`]). By default not.
    fn act_waits_for_settled(&self, app: &Self::App) -> bool {
        let _ = app;
        false
    }
    /// Whether `app`'s next action, one that waits for a settled moment, also waits for a live
    /// client (its application `other_app` and machine `other_machine`, this client's own
    /// included) to act first or to finish what its last act began, the server's data being
    /// `zk` (the job's later cycles: no instance fires a cycle before every live instance has
    /// fired and run the one before, or is blocked on a sharding that only a later trigger
    /// makes). By default not.
    fn act_waits_for(
        &self,
        app: &Self::App,
        other_app: &Self::App,
        other_machine: &Self::Machine,
        zk: &ZkModel,
    ) -> bool {
        let _ = (app, other_app, other_machine, zk);
        false
    }
    /// Whether `machine` has no background work left that a settled moment must wait for
    /// (retries, listeners). By default what the machine says ([`Machine::settled`]: an
    /// operation asleep before its retry, a connection state not yet handed to a listener).
    fn at_rest(&self, machine: &Self::Machine) -> bool {
        machine.settled()
    }
    /// Whether the workload names what its clients believe they own
    /// ([`Workload::claimed_nodes`]); when not, the ownership invariant costs nothing.
    const CLAIMS: bool = false;

    /// The ephemeral nodes `machine` believes are its own now (a registration, a role's node):
    /// at every settled moment each must exist, owned by the client's current session (the
    /// model's own invariant [`OWNERSHIP`](super::OWNERSHIP)). By default none.
    fn claimed_nodes(&self, _machine: &Self::Machine) -> Vec<String> {
        Vec::new()
    }

    /// Whether the workload names every ephemeral node its clients know are their own
    /// ([`Workload::known_nodes`]); when not, the orphan invariant costs nothing.
    const KNOWS_ITS_EPHEMERALS: bool = false;

    /// Every ephemeral node `machine` knows is its own now, claimed or not (a waiter's node):
    /// at every settled moment each ephemeral node of the client's current session must be
    /// among them (the model's own invariant [`ORPHANS`](super::ORPHANS)). By default none.
    fn known_nodes(&self, _machine: &Self::Machine) -> Vec<String> {
        Vec::new()
    }

    /// Whether the workload runs on a schedule ([`Workload::fired_cycle`],
    /// [`Workload::newest_cycle_run`]); when not, the schedule invariant costs nothing.
    const SCHEDULED: bool = false;

    /// The newest cycle `app`'s schedule has fired (0 before the first): no client may run a
    /// cycle that no client's schedule has fired (the model's own invariant
    /// [`SCHEDULE`](super::SCHEDULE)).
    fn fired_cycle(&self, _app: &Self::App) -> u64 {
        0
    }

    /// The newest cycle of any run `machine` made (0 before the first).
    fn newest_cycle_run(&self, _machine: &Self::Machine) -> u64 {
        0
    }

    /// Whether the application is done with the recipe: a session expiry can change nothing
    /// it does any more, so the checker does not inject one.
    fn finished(&self, app: &Self::App) -> bool;
    /// The application dies with its process ([`Action::Crash`](super::Action::Crash)): the roles
    /// it held end, as history events. By default it held none.
    fn crashed(&self, app: &mut Self::App, effects: &mut Vec<HistoryEvent>, client: u32) {
        let _ = (app, effects, client);
    }
    /// The properties, each judged on the state's history (at most [`MAX_JUDGES`]): built
    /// once, since every state judged asks for them.
    fn judges() -> &'static [Judge<Self>];
    /// A client's own entries (`own`, oldest first) reduced to the least that gives every
    /// judge of this workload the same verdict, of this state and of any state after it, in a
    /// state where every `always` property holds. `in_flight` holds the zxids of the watch
    /// events sent and not yet received. `None` keeps them all, the default: a workload that
    /// forgets must know what each of its judges reads.
    fn summarize_own(
        &self,
        own: &[&HistoryEntry],
        in_flight: &BTreeSet<i64>,
    ) -> Option<Vec<HistoryEntry>> {
        let _ = (own, in_flight);
        None
    }
    /// How many of the oldest *shared* entries (`shared`, oldest first, each timed by its
    /// place) no judge of this workload can use any more, in `state`, where every `always`
    /// property holds: dropping them changes no verdict of that state or of any after it. The
    /// checker renumbers the entries it keeps from 0, so a judge may compare times only with
    /// each other and with the present (the history's length). A `sometimes`
    /// judge that has happened ([`State::happened`]) is judged no more and needs nothing. By
    /// default none.
    fn settled_shared(&self, shared: &[&HistoryEntry], state: &State<Self>) -> usize {
        let _ = (shared, state);
        0
    }
    /// The shared history (`shared`, oldest first, each entry timed by its place) in a
    /// canonical form, if the workload has one: events that, timed by their place, give every
    /// judge the same verdict as `shared`, of this state and of any state after it, in `state`,
    /// where every `always` property holds. It leaves out what no judge can use any more, so
    /// [`Workload::settled_shared`] is not asked. Two states whose histories differ only in
    /// what no judge can tell apart (the order of unrelated events, which client ran what) then
    /// are one. `None`, the default: the checker drops the settled prefix and keeps the rest as
    /// it is.
    fn canonical_shared(
        &self,
        shared: &[&HistoryEntry],
        state: &State<Self>,
    ) -> Option<Vec<HistoryEvent>> {
        let _ = (shared, state);
        None
    }
}

/// The most properties a workload may name.
pub const MAX_JUDGES: usize = 8;

/// The properties of workload `W` of class `expectation`, one bit each (by its judges' order,
/// as in [`State::verdicts`]).
pub fn judged_bits<W: Workload>(expectation: Expectation) -> u8 {
    (W::judges().iter().enumerate())
        .filter(|(_, judge)| judge.expectation == expectation)
        .fold(0, |bits, (index, _)| bits | 1 << index)
}

/// One named property of a workload: its class, and its verdict on a state's history.
pub struct Judge<W: Workload> {
    /// The property's name.
    pub name: &'static str,
    /// Its class.
    pub expectation: Expectation,
    /// Its finding on `history`, the history of `state` (for `sometimes`: whether it
    /// happened, which must stay true in every longer history: a state whose parent's
    /// `sometimes` verdict holds inherits it without judging again).
    pub finding: fn(&Recorded<'_>, &State<W>) -> Finding,
}

/// A state's history as the properties read it: borrowed entries, the shared ones (timed by
/// their place) then each client's own (untimed). See [`State::recorded`].
pub struct Recorded<'a> {
    pub(super) entries: Vec<&'a HistoryEntry>,
}

impl Entries for Recorded<'_> {
    fn each(&self) -> impl Iterator<Item = &HistoryEntry> {
        self.entries.iter().copied()
    }
}
