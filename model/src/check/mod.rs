//! Exhaustive checking with stateright of the recipes' own state machines.
//!
//! # The model
//!
//! A state is the pure ZooKeeper model ([`ZkModel`]) and N clients. Each client holds:
//!
//! - its recipe's state machine, the very struct the async driver runs (no recipe logic is
//!   written again here);
//! - its application ([`Workload::App`]): what it asks of the recipe and what it does with the
//!   answers (acquire, sell, release; act while leading);
//! - its *outbox*: the operations the machine issued that the server has not applied yet, in
//!   order (one connection, FIFO);
//! - its *inbox*: replies, watch events and session events the server sent that the client has
//!   not processed yet, in order;
//! - its pending timers, and its session.
//!
//! and a history of what happened, judged by the named properties of
//! [`properties`](crate::properties), the same functions the simulator uses. The history's
//! clock is its own length: one tick per event.
//!
//! # Actions
//!
//! - `Serve(c)`: the server applies client `c`'s next operation; the reply goes to `c`'s inbox
//!   and fired watches to their sessions' inboxes.
//! - `Deliver(c)`: client `c` processes the head of its inbox.
//! - `Timer(c, id)`: a pending timer of `c` fires (there is no time: any timer may fire at any
//!   point, which covers every schedule of delays).
//! - `Act(c)`: the application acts on what it believes (sells under the lock, acts as leader).
//!   By default ([`Acting::CaughtUp`]) only when it is *caught up*: its inbox and outbox are
//!   empty, so what is checked is a belief that stays wrong after everything has arrived. A
//!   client acting on news still in flight is the fencing problem: [`Acting::Fenced`] lets it
//!   act at any time on a resource that refuses older tokens, [`Acting::Unfenced`] on one that
//!   accepts everything (the `unfenced` positive control). A workload may also make an act
//!   wait for a settled moment, when nothing is in flight to or from any client and every
//!   machine is at rest ([`Workload::act_waits_for_settled`]), and for the other clients to
//!   catch up ([`Workload::act_waits_for`]): the sharded job's later cron cycles, which an
//!   instance fires only once every live instance fired the cycle before.
//! - Faults, each within its budget ([`FaultBudget`]): `DropRequest(c)` (ConnectionLoss, not
//!   applied), `DropReply(c)` (a write applied, then ConnectionLoss; a lost read reply is no
//!   different from a lost request), `Expire(c)` (the server expires the
//!   session now; the client learns of it when it reaches its inbox), `ClientExpire(c)` (what
//!   Curator's `KillSession` does: the client is told its session expired and opens another,
//!   while the server keeps the old one until a later `ServerExpireOld`), `LeaderChange` (every
//!   client's connection breaks at once; the in-flight operations fail unapplied; sessions
//!   survive), `Crash(c)` (client `c`'s process dies for good while it is *idle*: nothing in
//!   flight either way, no timer pending; the server expires its session, and the roles its
//!   application held end with it, [`Workload::crashed`]).
//!
//! A crash comes only between two pieces of a client's work, because what a crash in the
//! middle of one does is already covered or is lost by design: the server's side of it is an
//! `Expire` at that point, and a job instance that crashes between claiming an (item, cycle) and
//! running it takes that run with it (the claim is what makes a run happen at most once).
//!
//! A "paused" client needs no action of its own: every interleaving already includes every
//! client standing still while the others move. Expiries are not injected into clients whose
//! application is finished, and the recipe's directory exists from the start.
//!
//! # Properties
//!
//! Each workload names its `always` properties, each paired with `sometimes` checks so that a
//! pass cannot be empty, and "leader elected" as a liveness property, checked at *quiescence*
//! ([`RecipeModel::quiescent`]): where nothing is in flight, no timer is pending, no
//! application has anything left to do, some client still takes part in the recipe, and the
//! server has no abandoned session left to expire, some client holds the role. Only a fault could move such a state on; the recipe has had every
//! chance to recover. (The property's function is the simulator's, asked whether someone holds
//! the role at the end of the history: the model's present is the simulator's heal time.) This
//! is stronger than stateright's `eventually`, which a path satisfies if the property held at
//! any state of it, so that a leader elected before the last fault would do (the master's
//! `no-watch` variant shows the difference), and which can miss a violation where two paths
//! join (stateright says so); a check on each quiescent state is a plain invariant, sound
//! however states are shared. A state where every client has finished (each lock client
//! acquired once and left) is not judged: nobody is left to take the role.
//!
//! A state that is not quiescent only because an application waits to act is judged by the
//! model's own invariant "applications make progress" ([`RecipeModel::makes_progress`]): where
//! every live client is idle and an application has an act to take, that act must be enabled.
//! Otherwise the model is stuck there (a settled moment that cannot come), and no liveness
//! property would ever judge it. It found a job instance whose failover check, queued at the
//! end of a cycle, waited for an input that never came.
//!
//! The state graphs of the lock, the latch and the elections have no cycles in practice: a
//! recipe retries only after a lost request or reply, which the budget bounds, and otherwise
//! moves on when a write changes the server (whose zxid only grows). The sharded job's has: a
//! poll that finds nothing new returns the instance to the state it polled from (see
//! [`JobWorkload`]). A search stops at a state it has seen, which is sound for every property
//! here; a path that polls for ever is never quiescent, so it is not judged for liveness.
//!
//! # Forgetting settled history
//!
//! A state's history is part of it, so two states that differ only in how an earlier round went
//! (whether a waiter had to watch a predecessor, how a retry fell) would be two states, with the
//! same future. Each client's own entries serve only "herd free", which carries forward from
//! them only the paths the client waits on and the transactions that woke it whose events are
//! still in flight (another client may yet be woken by one of them). So the checker keeps that
//! summary in place of the entries, in one canonical form: one watched read per wait, one
//! wakeup with its read per transaction
//! ([`properties::herd_free_summary`](crate::properties::herd_free_summary), asked through
//! [`Workload::summarize_own`]; not after a violation, which is reported on its whole history).
//! Two clients that reached the same waits by different roads (another retry, another kind of
//! read, an earlier round) then look alike.
//!
//! The shared history is forgotten the same way, oldest first ([`Workload::settled_shared`]):
//! each property says how much of it it can do without, and the checker drops the least of
//! those and renumbers the rest from 0. "Single acting master" needs only the last accepted act
//! (tokens never go down while it holds); "leader elected" only each holder's last role;
//! "leadership changed hands after a loss", until it happens, only what came since the current
//! holder took the role. "Mutual exclusion" and "no shard executed twice" keep every write and
//! every run. A workload may also put what it keeps in a canonical form
//! ([`Workload::canonical_shared`]): the sharded job keeps only who leads now and which (item,
//! cycle) ran, sorted; the leader recipes the accepted act with the highest token and, until
//! "leadership changed hands after a loss" has happened, the roles and losses it follows, after
//! that only who leads now.
//!
//! `tests/forgetting.rs` walks every recipe with and without forgetting, in step, and requires
//! the same verdicts at every step; [`RecipeModel::forget_settled`] turns it off (the command
//! line replays a counterexample that way, to explain it with its whole history).
//!
//! Forgetting makes states reached by different roads share one history, so most histories a
//! step makes were made before. Where the judges and the forgetting read nothing of a state
//! but its history and verdicts ([`Workload::READS_HISTORY_ALONE`]: every workload but the
//! sharded job), each distinct history is judged once, and each distinct shared history
//! forgotten once, per thread; the results are kept under the logs' chained hashes (see
//! `kept.rs`, whose tests walk every such recipe and require the kept results to be what the
//! work gives afresh).
//!
//! # Symmetry
//!
//! The clients differ only in their identities (see [`zkh_recipes::symmetry`]): the workloads
//! name them with identity tokens, fault descriptions name clients by token too, and every
//! part of a [`State`] hashes renamed. [`representative`] gives the depth-first search each
//! state hashed as its class ([`State::class_hash`]: the least of its hashes under the
//! renamings that sort its clients by signature, usually one), so that one state of each
//! class is explored. In that search ([`RecipeModel::symmetric`]) a state's own hash is its
//! class hash too. Exploring one state of a class is enough because renaming a reachable state
//! gives a reachable state with the same verdicts; `tests/symmetry.rs` runs renamed paths to
//! show it for every recipe, and that renamed states have one class hash.
//!
//! The partial-order reduction (see [`RecipeModel`]'s `actions`) delivers the news of one
//! client first, and must choose the same one in every state of a class: otherwise the
//! successors a class gets would depend on which of its states the search met first, and the
//! counts on the order of the search and on threads. It takes the client that the state's
//! canonical renaming (the one that gives its class hash) puts first
//! ([`State::canonical_place`]); `tests/symmetry.rs` requires every renaming of a state on its
//! walks to have the same successors up to renaming.
//!
//! # Random walks and bounded searches
//!
//! Where the search cannot finish (the sharded job with an expiry, or with three instances),
//! [`walk`] takes seeded random walks through the same states, judging every step as the
//! search does: it finds bugs there, and proves nothing (see its module docs). A search
//! bounded by preemptions ([`Limits::preemptions`]) proves something smaller but exact: no
//! violation in any schedule in which the server switches away from a client with a request
//! waiting at most K times, with every fault of the budget at every point (see
//! `preemption.rs`). Where the exact visited set is what runs out, hash compaction
//! ([`Limits::compact_mib`], `compact.rs`) keeps 32 bits a state instead of 64 and the
//! table's free slots, at a counted risk of taking a new state for seen. Where time runs out,
//! the search runs on several threads ([`Limits::threads`], `parallel.rs`) that share one
//! visited set, exact or compacted: the same states, the same verdict, sooner where there are
//! the cores.
//!
//! # Not modelled
//!
//! Read lag on followers (one server), reconnection to another server, container reaping, and
//! time itself (timeouts are timers that may fire at any point).

mod compact;
mod depth_first;
mod forget;
mod job;
mod kept;
mod parallel;
mod preemption;
mod run;
mod visited;
mod walk;
mod workloads;

use std::collections::{BTreeSet, VecDeque};
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use stateright::{Expectation, Model, Property};
use zkh_recipes::fencing::{FencedResource, Fencing};
use zkh_recipes::machine::{Command, Input, Machine, OpId, TimerId};
use zkh_recipes::symmetry::{
    hash_ordered, least_in_order, mix, renamed_hash, Outline, Renaming, Renamings, Symmetric,
    IDENTITY_MARK, MAX_SYMMETRIC_CLIENTS,
};
use zkh_recipes::{Request, SessionEvent, SessionId, WatchedEvent, ZkError};

use crate::history::{Entries, History, HistoryEntry, HistoryEvent};
use crate::properties::{without_summaries, Finding};
use crate::request::Notification;
use crate::zookeeper::ZkModel;

use crate::shared::HashCell;
pub use crate::shared::{Shared, SharedLog, SharedMut};
pub use compact::{COMPACT_MIB, MAX_LOAD_PERCENT};
pub use depth_first::PROGRESS_STATES;
pub use job::{JobApp, JobWorkload, JOB_CYCLES, JOB_ITEMS};
pub use run::{
    check, check_observed, check_searched, check_within, find_violation, Compaction, GaveUp,
    Limits, Observer, Progress, Searcher, Verdict, Violation, PROGRESS_INTERVAL_MS, SHORTEN_STATES,
};
pub use walk::{shrink, walk, walk_observed, WalkLimits, WalkVerdict, WalkViolation, LOOP_STEPS};
pub use workloads::{
    ElectionWorkload, LatchWorkload, LeaderApp, LeaderRecipe, LockWorkload, MasterWorkload,
    ELECTION_LATCH_DIR, JOB_DIR, LATCH_DIR, LOCK_DIR, MASTER_PATH, RESOURCE,
};

/// How many faults of each kind a check may inject.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FaultBudget {
    /// Requests lost before the server applies them.
    pub drop_request: u8,
    /// Replies lost after the server applied the request.
    pub drop_reply: u8,
    /// Server-side session expiries.
    pub expire: u8,
    /// Client-side expiries (`KillSession`).
    pub client_expire: u8,
    /// Disconnections of every client at once.
    pub leader_change: u8,
    /// Client processes that crash while idle and never come back.
    #[serde(default)]
    pub crash: u8,
}

impl FaultBudget {
    /// The standard budget: one dropped reply and one session expiry.
    pub const STANDARD: FaultBudget = FaultBudget {
        drop_request: 0,
        drop_reply: 1,
        expire: 1,
        client_expire: 0,
        leader_change: 0,
        crash: 0,
    };

    /// Parses `drop-reply=1,expire=1` (names: `drop-request`, `drop-reply`, `expire`,
    /// `client-expire`, `leader-change`, `crash`; `none` for no faults).
    pub fn parse(spec: &str) -> Result<FaultBudget, String> {
        let mut budget = FaultBudget::default();
        if spec.trim() == "none" {
            return Ok(budget);
        }
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, count) = part
                .split_once('=')
                .ok_or_else(|| format!("fault budget {part:?}: expected NAME=COUNT"))?;
            let count: u8 = count.trim().parse().map_err(|_| {
                format!("fault budget {part:?}: the count must be a number from 0 to 255")
            })?;
            let slot = match name.trim() {
                "drop-request" => &mut budget.drop_request,
                "drop-reply" => &mut budget.drop_reply,
                "expire" => &mut budget.expire,
                "client-expire" => &mut budget.client_expire,
                "leader-change" => &mut budget.leader_change,
                "crash" => &mut budget.crash,
                other => {
                    return Err(format!(
                        "fault budget: unknown fault {other:?} (known: drop-request, drop-reply, \
                         expire, client-expire, leader-change, crash)"
                    ))
                }
            };
            *slot = count;
        }
        Ok(budget)
    }
}

/// When an application acts on the resource, and what the resource accepts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Acting {
    /// Only when caught up (nothing in flight to it), on a resource that accepts every write:
    /// judges the recipe's belief itself.
    #[default]
    CaughtUp,
    /// Whenever it believes it holds the role, on a fenced resource (older tokens refused):
    /// judges the recipe with fencing, as it should be deployed.
    Fenced,
    /// Whenever it believes it holds the role, on a resource that accepts every write: the
    /// `unfenced` positive control (a holder acting on news still in flight).
    Unfenced,
}

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
    /// (retries, listeners). By default it has none beyond what is in flight.
    fn at_rest(&self, machine: &Self::Machine) -> bool {
        let _ = machine;
        true
    }
    /// Whether the application is done with the recipe: a session expiry can change nothing
    /// it does any more, so the checker does not inject one.
    fn finished(&self, app: &Self::App) -> bool;
    /// The application dies with its process ([`Action::Crash`]): the roles it held end, as
    /// history events. By default it held none.
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
    entries: Vec<&'a HistoryEntry>,
}

impl Entries for Recorded<'_> {
    fn each(&self) -> impl Iterator<Item = &HistoryEntry> {
        self.entries.iter().copied()
    }
}

/// Something a client has yet to process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Inbound {
    /// The reply to operation `id`.
    Reply(OpId, Result<zkh_recipes::Response, ZkError>),
    /// A watch event, with the zxid that fired it (the history keeps it; the client gets none).
    Watch(WatchedEvent),
    /// A session event.
    Session(SessionEvent),
}

/// One client of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client<W: Workload> {
    /// The recipe.
    pub machine: W::Machine,
    /// The application.
    pub app: W::App,
    /// The session it uses.
    pub session: SessionId,
    /// Pending timers.
    pub timers: BTreeSet<TimerId>,
    /// The session is dead for this client (the server expired it, or the client was told it
    /// expired): its operations fail with `SessionExpired` and its events are not delivered,
    /// until the client has processed `Expired` and opened a new session.
    pub expired_at_server: bool,
    /// Its process crashed ([`Action::Crash`]): it takes no step any more.
    pub crashed: bool,
    /// It lost a session and went on in a new one (it processed `Expired`).
    pub rejoined: bool,
}

/// One client's connection: what is in flight each way. Kept apart from [`Client`] because the
/// server's steps change only these (and the server), so a step shares the client's machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Queues {
    /// Issued operations the server has not applied, in order, each with the session it was
    /// issued in (a handle's operations fail once its session is gone).
    pub outbox: VecDeque<(OpId, SessionId, Request)>,
    /// What the server sent that the client has not processed, in order.
    pub inbox: VecDeque<Inbound>,
}

/// One client's place in a state: the client, its connection, and its own log, each shared
/// apart (a step changes one of them, or none).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Seat<W: Workload> {
    /// The client: its machine, application, session and timers.
    pub client: Shared<Client<W>>,
    /// Its connection.
    pub queues: Shared<Queues>,
    /// What happened to it that only its own order matters for: its requests under the
    /// recipe's directory, the watch events it got there, its session's end. Kept apart from
    /// the shared history so that interleavings which differ only in these do not make
    /// distinct states.
    pub log: SharedLog<HistoryEntry>,
}

impl<W: Workload> Seat<W> {
    /// Nothing in flight either way and no timer pending: the client waits on nothing of its
    /// own.
    pub fn idle(&self) -> bool {
        self.queues.inbox.is_empty()
            && self.queues.outbox.is_empty()
            && self.client.timers.is_empty()
    }
}

/// A state of the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State<W: Workload> {
    /// The server's data.
    pub zk: Shared<ZkModel>,
    /// The clients, in one vector (one allocation per copied state).
    pub seats: Vec<Seat<W>>,
    /// Sessions a client gave up (client-side expiry) that the server still keeps.
    pub abandoned: BTreeSet<SessionId>,
    /// Faults still allowed.
    pub budget: FaultBudget,
    /// What happened where the order between clients matters: roles, side effects, faults,
    /// losses of connection or session.
    pub shared: SharedLog<HistoryEntry>,
    /// The resource's fence (used when acting is [`Acting::Fenced`]).
    pub resource: FencedResource,
    /// The verdicts of the workload's judges on this state's history, one bit each (a cache:
    /// they are computed once per state whose history changed, and are a function of it).
    pub verdicts: u8,
    /// The renamings of its clients, in a symmetry-reducing search only
    /// ([`RecipeModel::symmetric`]): the same in every state of a check. A state that has them
    /// hashes as its class (see [`State::class_hash`]).
    pub renamings: Option<Arc<Renamings>>,
    /// Its class hash, once asked for (and on a representative, its whole hash).
    pub class_hash: ClassHash,
}

/// A state's class hash, computed once, and the index of its canonical renaming plus one (0
/// until computed, and on a representative, which is only hashed): a cache, so a copy of the
/// state (made to be changed) starts without it, and it takes no part in comparing states.
#[derive(Debug, Default)]
pub struct ClassHash(HashCell, AtomicU8);

impl ClassHash {
    /// A cache that holds `hash`.
    fn of(hash: u64) -> ClassHash {
        ClassHash(HashCell::of(hash), AtomicU8::new(0))
    }
}

impl Clone for ClassHash {
    fn clone(&self) -> Self {
        ClassHash::default()
    }
}

impl PartialEq for ClassHash {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ClassHash {}

impl<W: Workload> Hash for State<W> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        if let Some(class) = self.class_hash() {
            state.write_u64(class);
            return;
        }
        let State {
            zk,
            seats,
            abandoned,
            budget,
            shared,
            resource,
            verdicts,
            renamings: _,
            class_hash: _,
        } = self;
        (zk, seats, abandoned, budget, shared).hash(state);
        (resource, verdicts).hash(state);
    }
}

/// A state's identities are its clients' order and everything in them and in the server
/// (each part's renamed hashes are cached with it, see [`Shared`]).
impl<W: Workload> Symmetric for State<W> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        if renaming.is_recording() {
            return renaming.unsupported();
        }
        state.write_u64(self.hash_under(renaming));
    }

    const CACHES_PARTS: bool = true;
}

impl<W: Workload> State<W> {
    /// Its class hash, if it has the renamings of its clients (or is a representative),
    /// computed once: the same for every renaming of the state, and for no other state.
    ///
    /// It is the least of the state's hashes under the renamings that put its clients in the
    /// order of their signatures ([`State::client_signatures`]; see
    /// [`zkh_recipes::symmetry::least_in_order`] for why that is a class hash). Usually one
    /// renaming does, so a state is hashed once, from its parts' cached hashes under it.
    pub fn class_hash(&self) -> Option<u64> {
        if let Some(class) = self.class_hash.0.get() {
            return Some(class);
        }
        let all = self.renamings.as_ref()?;
        let class = || {
            let (class, canonical) = self.least_under(all);
            let canonical = u8::try_from(canonical + 1).expect("at most 24 renamings");
            self.class_hash.1.store(canonical, Ordering::Relaxed);
            class
        };
        Some(self.class_hash.0.get_or(class))
    }

    /// Where its canonical renaming puts client `c` (see
    /// [`zkh_recipes::symmetry::least_in_order`]): a place that every state of its class gives
    /// the client standing for `c` there. A state with renamings finds its canonical renaming
    /// with its class hash, once; one without, under `renamings` when given (each time asked:
    /// see [`RecipeModel::canonical_news`]); with neither, the place is `c`.
    pub fn canonical_place(&self, c: usize, renamings: Option<&Renamings>) -> usize {
        let (all, canonical) = match (self.renamings.as_deref(), renamings) {
            (Some(all), _) => {
                self.class_hash();
                let canonical = self.class_hash.1.load(Ordering::Relaxed);
                assert!(
                    canonical > 0,
                    "a state with renamings that is not a representative"
                );
                (all, usize::from(canonical - 1))
            }
            (None, Some(all)) => (all, self.least_under(all).1),
            (None, None) => return c,
        };
        all.get(canonical).client(c as u32) as usize
    }

    /// Its least hash under the renamings in `all` that sort its clients by signature, and
    /// the renaming that gives it (see [`zkh_recipes::symmetry::least_in_order`]).
    fn least_under(&self, all: &Renamings) -> (u64, usize) {
        let signatures = self.client_signatures(all);
        let signatures = &signatures[..self.seats.len()];
        least_in_order(all, signatures, |renaming| self.hash_under(renaming))
    }

    /// Each client's signature: what the state says about it that no renaming of the clients
    /// changes, from the outlines of the clients' machines and queues (which a step that
    /// changes them records anyway): its own, with its identities blanked, and where it appears
    /// in them; and, as a set, each other client's, and where the client appears in them.
    pub fn client_signatures(&self, all: &Renamings) -> [u64; MAX_SYMMETRIC_CLIENTS] {
        let mut seats = [[Outline::OPAQUE; 2]; MAX_SYMMETRIC_CLIENTS];
        for (outlines, seat) in seats.iter_mut().zip(&self.seats) {
            *outlines = [*seat.client.outline(all), *seat.queues.outline(all)];
        }
        let seats = &seats[..self.seats.len()];
        let seen_by = |parts: &[Outline; 2], client: usize| {
            let seen = |h, part: &Outline| mix(mix(h, part.shape), part.places[client]);
            parts.iter().fold(1, seen)
        };
        let mut signatures = [0; MAX_SYMMETRIC_CLIENTS];
        for (client, signature) in signatures.iter_mut().enumerate().take(seats.len()) {
            let others = (seats.iter().enumerate())
                .filter(|(other, _)| *other != client)
                .fold(0u64, |sum, (_, parts)| {
                    sum.wrapping_add(seen_by(parts, client))
                });
            *signature = mix(seen_by(&seats[client], client), others);
        }
        signatures
    }

    /// This state's hash under `renaming`: its parts' cached renamed hashes, the clients in
    /// their renamed order.
    pub fn hash_under(&self, renaming: &Renaming<'_>) -> u64 {
        let State {
            zk,
            seats,
            abandoned,
            budget,
            shared,
            resource,
            verdicts,
            renamings: _,
            class_hash: _,
        } = self;
        let mut hasher = crate::shared::fixed_hasher();
        hasher.write_u64(zk.hash_under(renaming));
        for position in 0..seats.len() {
            let seat = &seats[renaming.client_at(position)];
            hasher.write_u64(seat.client.hash_under(renaming));
            hasher.write_u64(seat.queues.hash_under(renaming));
            hasher.write_u64(seat.log.shared_hash_under(renaming).unwrap_or(0));
        }
        let abandoned = (!abandoned.is_empty()).then(|| renamed_hash(abandoned, renaming));
        hasher.write_u64(abandoned.unwrap_or(0));
        hasher.write_u64(shared.shared_hash_under(renaming).unwrap_or(0));
        hasher.write_u64(crate::shared::hash_of(&(budget, resource, verdicts)));
        hasher.finish()
    }
}

/// The state a symmetry-reducing search hashes in place of `state`: `state` itself, hashed as
/// its class (see [`State::class_hash`]), so that states equal up to a renaming hash alike
/// (stateright calls this for every state it reaches).
///
/// A state with renamings already hashes so (and stateright hashes it too, then throws that
/// hash away: the cache makes that free). Stateright only hashes the representative, so the
/// representative is that hash and nothing else: no client is copied (the server is one shared
/// pointer, which a state cannot be without).
pub fn representative<W: Workload>(state: &State<W>) -> State<W> {
    let Some(class) = state.class_hash() else {
        return state.clone();
    };
    State {
        zk: state.zk.clone(),
        seats: Vec::new(),
        abandoned: BTreeSet::new(),
        budget: FaultBudget::default(),
        shared: SharedLog::default(),
        resource: FencedResource::default(),
        verdicts: 0,
        renamings: None,
        class_hash: ClassHash::of(class),
    }
}

impl Symmetric for Inbound {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Inbound::Reply(id, result) => (id, result).hash_renamed(renaming, state),
            Inbound::Watch(event) => event.hash_renamed(renaming, state),
            Inbound::Session(event) => event.hash_renamed(renaming, state),
        }
    }
}

impl Symmetric for Queues {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        hash_ordered(self.outbox.iter(), renaming, state);
        hash_ordered(self.inbox.iter(), renaming, state);
    }
}

impl<W: Workload> Symmetric for Client<W> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let Client {
            machine,
            app,
            session,
            timers,
            expired_at_server,
            crashed,
            rejoined,
        } = self;
        (machine, app, session).hash_renamed(renaming, state);
        (timers, expired_at_server, crashed, rejoined).hash(state);
    }
}

impl<W: Workload> State<W> {
    /// The history as the properties see it: the shared events, then each client's own.
    /// Nothing is copied.
    pub fn recorded(&self) -> Recorded<'_> {
        let mut entries = Vec::with_capacity(self.history_len());
        self.shared.extend_oldest_first(&mut entries);
        for seat in &self.seats {
            seat.log.extend_oldest_first(&mut entries);
        }
        Recorded { entries }
    }

    /// The history, as an owned [`History`] (for reports): the shared events, then each
    /// client's own, one tick per event.
    pub fn history(&self) -> History {
        let mut history = History::new();
        for (at, entry) in self.recorded().each().enumerate() {
            history.push(at as u64, entry.event.clone());
        }
        history
    }

    /// Client `c`.
    pub fn client(&self, c: usize) -> &Client<W> {
        &self.seats[c].client
    }

    /// Client `c`'s connection.
    pub fn queues(&self, c: usize) -> &Queues {
        &self.seats[c].queues
    }

    /// Client `c`, to change (states share what they do not change: cloning one is cheap).
    fn client_mut(&mut self, c: usize) -> SharedMut<'_, Client<W>> {
        self.seats[c].client.to_mut()
    }

    /// Client `c`'s connection, to change.
    fn queues_mut(&mut self, c: usize) -> SharedMut<'_, Queues> {
        self.seats[c].queues.to_mut()
    }

    /// The server's data, to change.
    fn zk_mut(&mut self) -> SharedMut<'_, ZkModel> {
        self.zk.to_mut()
    }

    /// The findings of the workload's properties on this state.
    pub fn findings(&self) -> Vec<Finding> {
        let history = self.recorded();
        W::judges()
            .iter()
            .map(|judge| (judge.finding)(&history, self))
            .collect()
    }

    /// Whether the property named `property` holds in this state (for a `sometimes` property:
    /// whether it has happened on the way here). Panics if the workload has no such property.
    pub fn happened(&self, property: &str) -> bool {
        let index = W::judges()
            .iter()
            .position(|judge| judge.name == property)
            .unwrap_or_else(|| panic!("the workload names no property {property:?}"));
        self.verdicts & (1 << index) != 0
    }

    fn history_len(&self) -> usize {
        self.shared.len() + self.seats.iter().map(|seat| seat.log.len()).sum::<usize>()
    }

    /// Judges the properties on this state's history. `verdicts` still holds the parent's:
    /// a `sometimes` property that happened there has happened here (the history only grows),
    /// so it is not judged again. A history judged before, with the same `sometimes` verdicts
    /// inherited, is not judged again either, where the judges read only the history
    /// ([`Workload::READS_HISTORY_ALONE`]; see [`kept`]).
    fn judge(&mut self) {
        self.verdicts = if W::READS_HISTORY_ALONE {
            // Only the `sometimes` verdicts are inherited: the key holds those alone.
            let inherited = self.verdicts & judged_bits::<W>(Expectation::Sometimes);
            kept::judged(self, inherited, || self.judged_afresh(inherited))
        } else {
            self.judged_afresh(self.verdicts)
        };
    }

    /// The verdicts of the workload's judges on this state's history, the `sometimes` ones
    /// set in `inherited` being held already (its other bits are not read).
    fn judged_afresh(&self, inherited: u8) -> u8 {
        let history = self.recorded();
        let mut verdicts = 0;
        without_summaries(|| {
            for (index, judge) in W::judges().iter().enumerate() {
                let bit = 1 << index;
                let happened = judge.expectation == Expectation::Sometimes && inherited & bit != 0;
                if happened || (judge.finding)(&history, self).holds {
                    verdicts |= bit;
                }
            }
        });
        verdicts
    }
}

/// An action of the model (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// The server applies client `c`'s next operation.
    Serve(usize),
    /// Client `c` processes the head of its inbox.
    Deliver(usize),
    /// Client `c`'s timer fires.
    Timer(usize, TimerId),
    /// Client `c`'s application acts.
    Act(usize),
    /// Client `c`'s next request is lost.
    DropRequest(usize),
    /// The reply to client `c`'s next request is lost.
    DropReply(usize),
    /// The server expires client `c`'s session.
    Expire(usize),
    /// Client `c` is told its session expired; the server keeps it.
    ClientExpire(usize),
    /// The server expires a session its client abandoned.
    ServerExpireOld(SessionId),
    /// Every client's connection breaks.
    LeaderChange,
    /// Client `c`'s process crashes while idle; the server expires its session.
    Crash(usize),
}

impl Action {
    /// Whether the action is a fault.
    pub fn is_fault(&self) -> bool {
        !matches!(
            self,
            Action::Serve(_) | Action::Deliver(_) | Action::Timer(..) | Action::Act(_)
        )
    }
}

/// The stateright model of `clients` clients running workload `workload`.
#[derive(Clone, Debug)]
pub struct RecipeModel<W: Workload> {
    /// The workload.
    pub workload: W,
    /// Clients.
    pub clients: usize,
    /// The fault budget.
    pub budget: FaultBudget,
    /// When applications act, and what the resource accepts.
    pub acting: Acting,
    /// Keep of the history only what some judge can still use ([`Workload::summarize_own`],
    /// [`Workload::settled_shared`]), so that states which differ only in how an earlier round
    /// went are one state. On in every check; off keeps the whole history (to compare the two).
    pub forget_settled: bool,
    /// Hash each state as its class under renamings of the clients (see [`representative`]):
    /// set by a symmetry-reducing search, for its own copy of the model
    /// ([`Limits::symmetry`]); any other search hashes states as they are.
    pub symmetric: bool,
    /// Give stateright the `always` and `eventually` properties as one, [`INVARIANTS`], which
    /// it looks up once per state instead of once each: set by a check's search (and by
    /// [`find_violation`]), for its own copy of the model, which then names the first of them
    /// that failed ([`RecipeModel::first_broken_invariant`]). A search for one property (to
    /// shorten a counterexample) and the Explorer get them apart. A search with the invariants
    /// as one gets no `sometimes` property either: stateright would look each one up in its
    /// discoveries at every state (a SipHash of its name and a lock, 7% of the lock's
    /// instructions), so the invariants' check notes in [`RecipeModel::reached`] which ones each
    /// state has reached.
    pub one_invariant: bool,
    /// The `sometimes` properties (one bit each, by the workload's judges' order) that some
    /// state has reached, where the invariants are checked as one ([`RecipeModel::one_invariant`]).
    /// Shared by the copies of the model; a search gives its own copy a fresh one.
    pub reached: Reached,
    /// Where states do not hash as their class ([`RecipeModel::symmetric`] unset), still
    /// choose whose news comes first by the clients' canonical places under these renamings,
    /// as a symmetry-reducing search does (see [`RecipeModel::choosing_news_canonically`]).
    pub canonical_news: Option<Arc<Renamings>>,
    /// Explore one client's news before anything else where that is sound (the partial-order
    /// reduction, see `actions`). On in every check; off explores every interleaving (tests
    /// compare the two).
    pub partial_order: bool,
    /// Explore only the schedules in which the server answers a waiting read at once: where
    /// no client has news and some client's next operation is a read, that read is served
    /// before anything else happens but a fault (which still strikes at every point). A
    /// bounded search, like [`Limits::preemptions`]: every path it explores is a real one, but
    /// a read delayed while other clients write is not explored, so a pass proves nothing of
    /// such schedules. Off in every check unless asked (`zkharness check --reads-first`).
    /// Not with [`Limits::preemptions`]: answering another client's read first is itself a
    /// preemption, so the two bounds together leave almost nothing.
    pub reads_first: bool,
}

/// `sometimes` properties reached (one bit each), shared by the copies of a model: a search
/// notes them from its checker's thread, and reads them when it is done.
#[derive(Clone, Debug, Default)]
pub struct Reached(Arc<AtomicU8>);

impl Reached {
    /// Notes `bits` as reached: a plain load, and a store only when one is new.
    pub fn note(&self, bits: u8) {
        if bits & !self.0.load(Ordering::Relaxed) != 0 {
            self.0.fetch_or(bits, Ordering::Relaxed);
        }
    }

    /// The bits noted so far.
    pub fn bits(&self) -> u8 {
        self.0.load(Ordering::Relaxed)
    }
}

impl<W: Workload> RecipeModel<W> {
    /// `clients` clients running `workload` within `budget`, acting as `acting` says, as a
    /// check runs it: forgetting settled history, and hashing states as they are (a search sets
    /// [`RecipeModel::symmetric`] and the rest for its own copy).
    pub fn new(workload: W, clients: usize, budget: FaultBudget, acting: Acting) -> Self {
        RecipeModel {
            workload,
            clients,
            budget,
            acting,
            forget_settled: true,
            symmetric: false,
            one_invariant: false,
            reached: Reached::default(),
            canonical_news: None,
            partial_order: true,
            reads_first: false,
        }
    }

    /// This model, choosing whose news comes first as a symmetry-reducing search of it does,
    /// by the clients' places in each state's canonical renaming, where states hash as
    /// themselves: a search of it explores every state of each class that the symmetric
    /// search explores, so its count is that search's unfolded (at most N! times it, and
    /// more than it wherever a renaming changes a state). Tests compare the two; it is slower
    /// than either, since each state with news for two clients finds its canonical renaming
    /// afresh. Unchanged for a workload whose clients are not interchangeable, or too many.
    pub fn choosing_news_canonically(self) -> Self {
        let symmetric = RecipeModel {
            symmetric: true,
            ..self.clone()
        };
        let renamings = symmetric.init_states().remove(0).renamings;
        RecipeModel {
            canonical_news: renamings,
            ..self
        }
    }

    /// `action` taken in `state`, in words (for counterexamples).
    pub fn describe(&self, state: &State<W>, action: &Action) -> String {
        let next_op = |c: usize| {
            state.queues(c).outbox.front().map_or_else(
                || "nothing".to_owned(),
                |(id, _, request)| format!("#{id} {request:?}"),
            )
        };
        match action {
            Action::Serve(c) => format!("the server applies client {c}'s {}", next_op(*c)),
            Action::Deliver(c) => match state.queues(*c).inbox.front() {
                Some(Inbound::Reply(id, result)) => {
                    format!("client {c} gets the reply to #{id}: {result:?}")
                }
                Some(Inbound::Watch(event)) => format!(
                    "client {c} gets a watch event: {:?} {}",
                    event.event_type, event.path
                ),
                Some(Inbound::Session(event)) => format!("client {c} gets {event:?}"),
                None => format!("client {c} has nothing to process"),
            },
            Action::Timer(c, id) => format!("client {c}'s timer {id} fires"),
            Action::Act(c) => format!("client {c}'s application acts ({:?})", state.client(*c).app),
            Action::DropRequest(c) => format!("FAULT: client {c}'s {} is lost", next_op(*c)),
            Action::DropReply(c) => format!(
                "FAULT: the server applies client {c}'s {}, and the reply is lost",
                next_op(*c)
            ),
            Action::Expire(c) => format!("FAULT: the server expires client {c}'s session"),
            Action::ClientExpire(c) => {
                format!("FAULT: client {c} is told its session expired (the server keeps it)")
            }
            Action::ServerExpireOld(session) => {
                format!("the server expires abandoned session {:#x}", session.0)
            }
            Action::LeaderChange => "FAULT: leader change, every connection breaks".to_owned(),
            Action::Crash(c) => format!(
                "FAULT: client {c}'s process crashes (the server expires its session; it never \
                 comes back)"
            ),
        }
    }

    /// Appends `event` to the shared history; its time is its place there.
    fn push(state: &mut State<W>, event: HistoryEvent) {
        let at_us = state.shared.len() as u64;
        state.shared.push(HistoryEntry { at_us, event });
    }

    /// Appends `event` to client `c`'s own log. It carries no time (0): only its order among
    /// the client's own events matters, and a time would tell apart interleavings that do not
    /// differ.
    fn log(state: &mut State<W>, c: usize, event: HistoryEvent) {
        let entry = HistoryEntry { at_us: 0, event };
        state.seats[c].log.push(entry);
    }

    fn under_dir(&self, path: &str) -> bool {
        zkh_recipes::path::is_under(path, self.workload.dir())
    }

    fn fault(state: &mut State<W>, description: String) {
        Self::push(state, HistoryEvent::Fault { description });
    }

    /// Feeds `input` to client `c`'s machine and carries out its commands.
    fn feed(&self, state: &mut State<W>, c: usize, input: Input<W::Request>) {
        let mut inputs = VecDeque::from([input]);
        while let Some(input) = inputs.pop_front() {
            let mut commands = Vec::new();
            state.client_mut(c).machine.handle(input, &mut commands);
            for command in commands {
                match command {
                    Command::Op { id, request } => {
                        let session = state.client(c).session;
                        state.queues_mut(c).outbox.push_back((id, session, request));
                    }
                    Command::Timer { id, .. } => {
                        state.client_mut(c).timers.insert(id);
                    }
                    Command::Report(report) => {
                        let mut effects = Vec::new();
                        let requests = {
                            let mut client = state.client_mut(c);
                            self.workload
                                .on_report(&mut client.app, report, &mut effects, c as u32)
                        };
                        for effect in effects {
                            Self::push(state, effect);
                        }
                        inputs.extend(requests.into_iter().map(Input::Request));
                    }
                }
            }
        }
    }

    fn deliver_notifications(state: &mut State<W>, notifications: Vec<Notification>) {
        for notification in notifications {
            let to = state.seats.iter().position(|seat| {
                seat.client.session == notification.session && !seat.client.expired_at_server
            });
            if let Some(c) = to {
                let watch = Inbound::Watch(notification.event);
                state.queues_mut(c).inbox.push_back(watch);
            }
        }
    }

    /// The connection of client `c` broke and was re-established in the same session.
    fn reconnect(state: &mut State<W>, c: usize) {
        let session_id = state.client(c).session;
        let inbox = &mut state.queues_mut(c).inbox;
        inbox.push_back(Inbound::Session(SessionEvent::Disconnected));
        inbox.push_back(Inbound::Session(SessionEvent::Reconnected { session_id }));
    }

    fn serve(&self, state: &mut State<W>, c: usize, lose_reply: bool) {
        let (id, session, request) = state
            .queues_mut(c)
            .outbox
            .pop_front()
            .expect("serve only with an operation waiting");
        let client = state.client(c);
        if client.expired_at_server || session != client.session {
            let reply = Inbound::Reply(id, Err(ZkError::SessionExpired));
            state.queues_mut(c).inbox.push_back(reply);
            return;
        }
        let waits_or_queues = match &request {
            Request::Exists { path, watch }
            | Request::GetData { path, watch }
            | Request::GetChildren { path, watch } => *watch && self.under_dir(path),
            Request::Create { path, .. } | Request::Delete { path, .. } => self.under_dir(path),
            _ => false,
        };
        if waits_or_queues {
            let invoke = HistoryEvent::Invoke {
                client: c as u32,
                session,
                xid: id,
                request: request.clone(),
            };
            Self::log(state, c, invoke);
        }
        let applied = state.zk_mut().apply(session, &request);
        let reply = if lose_reply {
            Err(ZkError::ConnectionLoss)
        } else {
            applied.reply.into_machine_result()
        };
        state
            .queues_mut(c)
            .inbox
            .push_back(Inbound::Reply(id, reply));
        Self::deliver_notifications(state, applied.notifications);
        if lose_reply {
            Self::reconnect(state, c);
        }
    }
}

impl<W: Workload> Model for RecipeModel<W> {
    type State = State<W>;
    type Action = Action;

    fn init_states(&self) -> Vec<State<W>> {
        let mut state = State {
            zk: Shared::new(ZkModel::new()),
            seats: Vec::new(),
            abandoned: BTreeSet::new(),
            budget: self.budget,
            shared: SharedLog::default(),
            resource: FencedResource::new(),
            verdicts: 0,
            renamings: None,
            class_hash: ClassHash::default(),
        };
        // The recipe's directories exist, as in a deployment: the race to create them is not
        // what is checked (the simulator and the unit tests cover it).
        let setup = state.zk_mut().open_session();
        for path in self.workload.directories() {
            let dir = Request::Create {
                path,
                data: Vec::new(),
                mode: zkh_recipes::CreateMode::Persistent,
            };
            let created = state.zk_mut().apply(setup, &dir).reply.into_response();
            assert!(
                created.is_ok(),
                "the model creates the recipe's directory: {created:?}"
            );
        }
        state.zk_mut().close_session(setup);
        let mut starts = Vec::new();
        for index in 0..self.clients {
            let (machine, app, requests) = self.workload.client(index);
            let session = state.zk_mut().open_session();
            state.seats.push(Seat {
                client: Shared::new(Client {
                    machine,
                    app,
                    session,
                    timers: BTreeSet::new(),
                    expired_at_server: false,
                    crashed: false,
                    rejoined: false,
                }),
                queues: Shared::new(Queues {
                    outbox: VecDeque::new(),
                    inbox: VecDeque::from([Inbound::Session(SessionEvent::Connected {
                        session_id: session,
                    })]),
                }),
                log: SharedLog::default(),
            });
            starts.push(requests);
        }
        if self.symmetric && W::SYMMETRIC && self.clients <= MAX_SYMMETRIC_CLIENTS {
            let first_sessions = state.seats.iter().map(|seat| seat.client.session);
            state.renamings = Some(Arc::new(Renamings::new(first_sessions.collect())));
        }
        for (index, requests) in starts.into_iter().enumerate() {
            // The application starts once the client has connected.
            let Some(Inbound::Session(event)) = state.queues_mut(index).inbox.pop_front() else {
                unreachable!("a new client's inbox starts with Connected");
            };
            self.feed(&mut state, index, Input::Session(event));
            for request in requests {
                self.feed(&mut state, index, Input::Request(request));
            }
        }
        state.judge();
        vec![state]
    }

    fn actions(&self, state: &State<W>, actions: &mut Vec<Action>) {
        // Partial-order reduction: a client processing what it has received touches only its
        // own machine and queues, so it commutes with every other client's actions and with
        // the server's; only its own timers compete with it. (One delivery touches the server:
        // after an expiry the client opens a new session, which takes the next zxid, so another
        // client's write served just before or just after it gets another zxid. The two states
        // differ only in that numbering, which keeps every zxid's order, and the recipes and
        // properties read zxids only for their order: it is reduced like any other. Not
        // reducing it made the lock's standard check five times larger.) Exploring that
        // client's inbox and timers alone, before anything else, loses no behaviour the
        // properties can tell apart
        // (they read each client's own order, and the order of side effects, which only `Act`
        // writes). This is the ample-set reduction. It cannot ignore the other clients along a
        // cycle (the job's polls are the only cycles): no step but the server's refills an
        // inbox, so every cycle passes through a state where no client has news, which is fully
        // expanded.
        //
        // A client's steps must not race a fault that the budget still allows, or the
        // reduction would explore only the order in which the client's step comes first:
        //
        // - it could act on the resource before processing its news (acting other than
        //   caught-up), now or once another client's step changes the server: that stale act
        //   must be able to come after other clients' acts, and before its own news (the
        //   job's leader with its spare trigger is the one workload whose act another
        //   client's write enables; that act also waits for a settled moment, which news in
        //   flight is not, so today the condition only guards against a workload that would
        //   not wait);
        // - a leader change fails the operation at the head of each outbox: once the server
        //   has served what the client's outbox holds (steps the reduction puts off, so a
        //   full outbox does not protect it), a request its step issues fails if the leader
        //   change comes after the step, and waits for the new connection if it comes before;
        // - a client-side expiry fails everything in the client's outbox: a request its step
        //   issues fails before the client hears of the expiry if the step comes first, and
        //   after (when the server refuses it) if the expiry does.
        //
        // A client whose news races none of these makes a sound ample set; with symmetry
        // reduction the choice must also be the same in every state of a class, or which
        // successors a class gets would depend on which of its states the search met first
        // (and so would the counts, on the order of the search and on threads). So among the
        // clients that qualify, the one that the state's canonical renaming puts first is
        // chosen: the one every renaming of the state chooses, renamed. Where none qualifies,
        // every action is explored.
        if self.partial_order && self.deliver_first(state, actions) {
            return;
        }
        if self.reads_first && self.read_first(state, actions) {
            return;
        }
        self.every_action(state, actions);
    }

    fn next_state(&self, state: &State<W>, action: Action) -> Option<State<W>> {
        let watch_delivered = matches!(action, Action::Deliver(c)
            if matches!(state.queues(c).inbox.front(), Some(Inbound::Watch(_))));
        let mut next = self.step(state, action)?;
        if next.history_len() != state.history_len() {
            next.judge();
        }
        if self.forget_settled {
            Self::drop_settled(&self.workload, state, &mut next, watch_delivered);
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let apart = W::judges().iter().enumerate().map(Self::judged_property);
        if self.one_invariant {
            return vec![Property {
                expectation: Expectation::Always,
                name: INVARIANTS,
                condition: Self::invariants_hold_noting_reached,
            }];
        }
        apart.chain([Self::progress_property()]).collect()
    }
}

impl<W: Workload> RecipeModel<W> {
    /// The partial-order reduction (see `actions`): where a client's news qualifies, offers
    /// only its delivery and its timers, and says so.
    fn deliver_first(&self, state: &State<W>, actions: &mut Vec<Action>) -> bool {
        let budget = state.budget;
        let qualifies = |c: usize| {
            let Seat { client, queues, .. } = &state.seats[c];
            if queues.inbox.is_empty() {
                return false;
            }
            let connected = !client.expired_at_server;
            let races = budget.leader_change > 0
                || (budget.client_expire > 0 && connected && !self.workload.finished(&client.app));
            let may_act_stale = self.acting != Acting::CaughtUp
                && (self.workload.can_act(&client.app, &state.zk)
                    || self.workload.may_act_on_the_server(&client.app));
            !may_act_stale && (!races || !self.steps_issue_requests(state, c))
        };
        if let Some(c) =
            self.first_in_class(state, (0..state.seats.len()).filter(|c| qualifies(*c)))
        {
            let client = state.client(c);
            actions.push(Action::Deliver(c));
            actions.extend(client.timers.iter().map(|timer| Action::Timer(c, *timer)));
            return true;
        }
        false
    }

    /// The bound of [`RecipeModel::reads_first`] (not a reduction: it leaves schedules out):
    /// where no client has news and some client's next operation is a read, offers only the
    /// server answering that read, and the faults; says whether it did.
    fn read_first(&self, state: &State<W>, actions: &mut Vec<Action>) -> bool {
        if state.seats.iter().any(|seat| !seat.queues.inbox.is_empty()) {
            return false;
        }
        let reading = (0..state.seats.len()).filter(|c| {
            let seat = &state.seats[*c];
            !seat.client.expired_at_server
                && (seat.queues.outbox.front()).is_some_and(|(_, _, request)| !request.is_write())
        });
        let Some(c) = self.first_in_class(state, reading) else {
            return false;
        };
        self.every_action(state, actions);
        actions.retain(|action| action.is_fault() || *action == Action::Serve(c));
        true
    }

    /// The first of `clients` in `state`: the one the state's canonical renaming puts first
    /// where there are two or more, so that every state of a class chooses the same client,
    /// renamed (see `actions`).
    fn first_in_class(
        &self,
        state: &State<W>,
        mut clients: impl Iterator<Item = usize>,
    ) -> Option<usize> {
        let first = clients.next()?;
        let Some(second) = clients.next() else {
            return Some(first);
        };
        [first, second]
            .into_iter()
            .chain(clients)
            .min_by_key(|c| state.canonical_place(*c, self.canonical_news.as_deref()))
    }

    /// Every action enabled in `state`, without the partial-order reduction that
    /// [`Model::actions`] applies (tests compare the two).
    pub fn every_action(&self, state: &State<W>, actions: &mut Vec<Action>) {
        let budget = state.budget;
        let settled = self.settled(state);
        for (c, Seat { client, queues, .. }) in state.seats.iter().enumerate() {
            if client.crashed {
                continue;
            }
            if !queues.outbox.is_empty() {
                actions.push(Action::Serve(c));
            }
            if !queues.inbox.is_empty() {
                actions.push(Action::Deliver(c));
            }
            for timer in &client.timers {
                actions.push(Action::Timer(c, *timer));
            }
            let caught_up = queues.inbox.is_empty() && queues.outbox.is_empty();
            let may_act = (caught_up || self.acting != Acting::CaughtUp)
                && self.act_in_step(state, c, settled);
            if may_act && self.workload.can_act(&client.app, &state.zk) {
                actions.push(Action::Act(c));
            }
        }
        for (c, seat) in state.seats.iter().enumerate() {
            let Seat { client, queues, .. } = seat;
            let connected = !client.expired_at_server;
            let next_is_write = queues
                .outbox
                .front()
                .is_some_and(|(_, _, request)| request.is_write());
            if budget.drop_request > 0 && !queues.outbox.is_empty() && connected {
                actions.push(Action::DropRequest(c));
            }
            // Lost after the server applied it: only a write's reply carries that news (a lost
            // read reply is a lost request).
            if budget.drop_reply > 0 && next_is_write && connected {
                actions.push(Action::DropReply(c));
            }
            let at_stake = connected && !self.workload.finished(&client.app);
            if budget.expire > 0 && at_stake {
                actions.push(Action::Expire(c));
            }
            if budget.client_expire > 0 && at_stake {
                actions.push(Action::ClientExpire(c));
            }
            if budget.crash > 0 && at_stake && seat.idle() {
                actions.push(Action::Crash(c));
            }
        }
        for session in &state.abandoned {
            actions.push(Action::ServerExpireOld(*session));
        }
        if budget.leader_change > 0 {
            actions.push(Action::LeaderChange);
        }
    }
}

/// The name of the model's own invariant that no application is stuck
/// ([`RecipeModel::makes_progress`]).
pub const PROGRESS: &str = "applications make progress";

/// The name of the `always` and `eventually` properties given to stateright as one (see
/// [`RecipeModel::one_invariant`]); never reported: the search names the one that failed.
pub const INVARIANTS: &str = "every always and eventually property";

impl<W: Workload> RecipeModel<W> {
    /// Whether `state` is a settled moment: nothing in flight to or from any live client, and
    /// every machine at rest ([`Workload::at_rest`]).
    fn settled(&self, state: &State<W>) -> bool {
        state.seats.iter().all(|seat| {
            seat.client.crashed
                || (seat.queues.inbox.is_empty()
                    && seat.queues.outbox.is_empty()
                    && self.workload.at_rest(&seat.client.machine))
        })
    }

    /// Whether client `c`'s act may come now, as far as waiting goes: it does not wait for a
    /// settled moment, or `settled` says this is one and no live client's application is
    /// behind it ([`Workload::act_waits_for`]: the job's later cycles).
    fn act_in_step(&self, state: &State<W>, c: usize, settled: bool) -> bool {
        let app = &state.client(c).app;
        if !self.workload.act_waits_for_settled(app) {
            return true;
        }
        let mut live = state.seats.iter().filter(|seat| !seat.client.crashed);
        settled
            && !live.any(|seat| {
                let other = &seat.client;
                self.workload
                    .act_waits_for(app, &other.app, &other.machine, &state.zk)
            })
    }

    /// The model's own invariant: an application with an act to take is not stuck. It is
    /// stuck where every live client is idle (nothing in flight, no timer) and the server has
    /// no abandoned session left to expire, so that only a fault could move the state on, and
    /// yet its act is not enabled, because it waits for a
    /// settled moment that never comes (a machine that is not at rest with nothing to do). No
    /// liveness property judges such a state (it is not quiescent), so it is reported here.
    /// This found a job instance that queued its failover check at the end of a cycle and
    /// left it waiting for an input that never came.
    pub fn makes_progress(&self, state: &State<W>) -> bool {
        let live = || state.seats.iter().filter(|seat| !seat.client.crashed);
        let wants_to_act = live().any(|seat| self.workload.can_act(&seat.client.app, &state.zk));
        // An abandoned session the server has yet to expire will go, and its ephemerals with
        // it: a machine waiting on one of them is not stuck.
        if !wants_to_act || !live().all(|seat| seat.idle()) || !state.abandoned.is_empty() {
            return true;
        }
        let settled = self.settled(state);
        (0..state.seats.len()).any(|c| {
            let client = state.client(c);
            !client.crashed
                && self.workload.can_act(&client.app, &state.zk)
                && self.act_in_step(state, c, settled)
        })
    }

    /// Why [`makes_progress`](Self::makes_progress) fails in `state`: the clients that want
    /// to act and cannot, and the machines that are not at rest.
    pub fn stuck_detail(&self, state: &State<W>) -> String {
        let live = || (state.seats.iter().enumerate()).filter(|(_, seat)| !seat.client.crashed);
        let waiting: Vec<usize> = live()
            .filter(|(_, seat)| self.workload.can_act(&seat.client.app, &state.zk))
            .map(|(c, _)| c)
            .collect();
        let restless: Vec<usize> = live()
            .filter(|(_, seat)| !self.workload.at_rest(&seat.client.machine))
            .map(|(c, _)| c)
            .collect();
        format!(
            "every client is idle; clients {waiting:?} have an act to take that waits for a \
             settled moment, which cannot come: clients {restless:?} are not at rest with \
             nothing to do"
        )
    }

    /// Judge `index`'s property as stateright gets it apart: an `eventually` one judged at
    /// quiescence (see the module docs).
    fn judged_property((index, judge): (usize, &Judge<W>)) -> Property<Self> {
        match judge.expectation {
            Expectation::Eventually => Property {
                expectation: Expectation::Always,
                name: judge.name,
                condition: Self::QUIESCENT_VERDICTS[index],
            },
            _ => Property {
                expectation: judge.expectation.clone(),
                name: judge.name,
                condition: Self::VERDICTS[index],
            },
        }
    }

    /// The model's own invariant, [`PROGRESS`].
    fn progress_property() -> Property<Self> {
        Property {
            expectation: Expectation::Always,
            name: PROGRESS,
            condition: Self::makes_progress,
        }
    }

    /// The `always` and `eventually` properties, in the order stateright gets them apart.
    fn invariants_apart() -> impl Iterator<Item = Property<Self>> {
        let judged = W::judges().iter().enumerate().map(Self::judged_property);
        judged
            .filter(|p| p.expectation != Expectation::Sometimes)
            .chain([Self::progress_property()])
    }

    /// Whether every `always` and `eventually` property holds in `state`, as stateright judges
    /// each apart.
    pub fn invariants_hold(&self, state: &State<W>) -> bool {
        Self::invariants_apart().all(|p| (p.condition)(self, state))
    }

    /// [`RecipeModel::invariants_hold`], noting the `sometimes` properties `state` has reached
    /// in [`RecipeModel::reached`]: the one property a depth-first search gives stateright.
    fn invariants_hold_noting_reached(&self, state: &State<W>) -> bool {
        (self.reached).note(state.verdicts & judged_bits::<W>(Expectation::Sometimes));
        self.invariants_hold(state)
    }

    /// The first `always` or `eventually` property, in the order stateright gets them apart,
    /// that fails in `state` (where [`RecipeModel::invariants_hold`] is false).
    ///
    /// # Panics
    /// If every one of them holds there.
    pub fn first_broken_invariant(&self, state: &State<W>) -> &'static str {
        Self::invariants_apart()
            .find(|p| !(p.condition)(self, state))
            .map(|p| p.name)
            .expect("the invariants failed here, so one of them does")
    }

    /// Whether the clients are quiescent: nothing is in flight, no timer is pending, no
    /// application has anything to do, one of them still takes part in the recipe, and the
    /// server has no abandoned session left to expire (a client told its session expired
    /// leaves one behind, whose ephemerals block the others until the server expires it,
    /// which it will, as a timer fires). Only a fault can move such a state on, and a
    /// liveness property must hold in it.
    pub fn quiescent(&self, state: &State<W>) -> bool {
        if !state.abandoned.is_empty() {
            return false;
        }
        let idle = state.seats.iter().all(|seat| {
            seat.client.crashed
                || (seat.idle() && !self.workload.can_act(&seat.client.app, &state.zk))
        });
        let taking_part = state
            .seats
            .iter()
            .any(|seat| !seat.client.crashed && !self.workload.finished(&seat.client.app));
        idle && taking_part
    }
}

/// A property's condition, as stateright takes it.
type Condition<W> = fn(&RecipeModel<W>, &State<W>) -> bool;

/// Reads verdict bit `N` of a quiescent state ([`RecipeModel::quiescent`]);
/// true elsewhere.
fn quiescent_verdict<W: Workload, const N: u8>(model: &RecipeModel<W>, state: &State<W>) -> bool {
    state.verdicts & (1 << N) != 0 || !model.quiescent(state)
}

/// Reads verdict bit `N` of a state.
fn verdict<W: Workload, const N: u8>(_: &RecipeModel<W>, state: &State<W>) -> bool {
    state.verdicts & (1 << N) != 0
}

impl<W: Workload> RecipeModel<W> {
    /// Property conditions reading each verdict bit at quiescence (stateright takes plain
    /// function pointers).
    const QUIESCENT_VERDICTS: [Condition<W>; MAX_JUDGES] = [
        quiescent_verdict::<W, 0>,
        quiescent_verdict::<W, 1>,
        quiescent_verdict::<W, 2>,
        quiescent_verdict::<W, 3>,
        quiescent_verdict::<W, 4>,
        quiescent_verdict::<W, 5>,
        quiescent_verdict::<W, 6>,
        quiescent_verdict::<W, 7>,
    ];

    /// Property conditions reading each verdict bit.
    const VERDICTS: [Condition<W>; MAX_JUDGES] = [
        verdict::<W, 0>,
        verdict::<W, 1>,
        verdict::<W, 2>,
        verdict::<W, 3>,
        verdict::<W, 4>,
        verdict::<W, 5>,
        verdict::<W, 6>,
        verdict::<W, 7>,
    ];

    /// Whether processing client `c`'s news, or one of its timers, issues a request (tried on
    /// copies: only where a fault could race it, see `actions`).
    fn steps_issue_requests(&self, state: &State<W>, c: usize) -> bool {
        let issued = state.queues(c).outbox.len();
        let timers = state
            .client(c)
            .timers
            .iter()
            .map(|timer| Action::Timer(c, *timer));
        (std::iter::once(Action::Deliver(c)).chain(timers)).any(|action| {
            self.step(state, action)
                .is_some_and(|next| next.queues(c).outbox.len() > issued)
        })
    }

    /// The state after `action`, its verdicts not yet updated.
    fn step(&self, state: &State<W>, action: Action) -> Option<State<W>> {
        let mut next = state.clone();
        match action {
            Action::Serve(c) => self.serve(&mut next, c, false),
            Action::Deliver(c) => {
                let inbound = next
                    .queues_mut(c)
                    .inbox
                    .pop_front()
                    .expect("deliver only with something waiting");
                let client = c as u32;
                let input = match inbound {
                    Inbound::Reply(id, result) => Input::Reply { id, result },
                    Inbound::Watch(event) => {
                        if self.under_dir(&event.path) {
                            let recorded = HistoryEvent::Watch {
                                client,
                                event: event.clone(),
                            };
                            Self::log(&mut next, c, recorded);
                        }
                        Input::Watch(WatchedEvent {
                            zxid: WatchedEvent::NO_ZXID,
                            ..event
                        })
                    }
                    Inbound::Session(event) => {
                        let recorded = HistoryEvent::Session { client, event };
                        match event {
                            SessionEvent::Expired | SessionEvent::Closed => {
                                Self::log(&mut next, c, recorded.clone());
                            }
                            _ => {}
                        }
                        if matches!(event, SessionEvent::Expired | SessionEvent::Disconnected) {
                            Self::push(&mut next, recorded);
                        }
                        Input::Session(event)
                    }
                };
                let expired = matches!(input, Input::Session(SessionEvent::Expired));
                self.feed(&mut next, c, input);
                if expired {
                    // A new session, as Curator and the simulated client open after expiry.
                    let session_id = next.zk_mut().open_session();
                    {
                        let mut client = next.client_mut(c);
                        client.session = session_id;
                        client.expired_at_server = false;
                        client.rejoined = true;
                    }
                    let connected = Inbound::Session(SessionEvent::Connected { session_id });
                    next.queues_mut(c).inbox.push_back(connected);
                }
            }
            Action::Timer(c, id) => {
                next.client_mut(c).timers.remove(&id);
                self.feed(&mut next, c, Input::Timer(id));
            }
            Action::Act(c) => {
                let mut effects = Vec::new();
                let requests = {
                    let mut client = next.client_mut(c);
                    self.workload.act(&mut client.app, &mut effects, c as u32)?
                };
                for mut effect in effects {
                    if let HistoryEvent::SideEffect {
                        token: Some(token),
                        accepted,
                        ..
                    } = &mut effect
                    {
                        *accepted = match self.acting {
                            Acting::Fenced => next.resource.admit(Fencing::Fenced, *token),
                            Acting::CaughtUp | Acting::Unfenced => true,
                        };
                    }
                    Self::push(&mut next, effect);
                }
                for request in requests {
                    self.feed(&mut next, c, Input::Request(request));
                }
            }
            Action::DropRequest(c) => {
                next.budget.drop_request -= 1;
                let (id, ..) = next.queues_mut(c).outbox.pop_front()?;
                Self::fault(
                    &mut next,
                    format!("client {IDENTITY_MARK}{c}: request {id} dropped"),
                );
                let lost = Inbound::Reply(id, Err(ZkError::ConnectionLoss));
                next.queues_mut(c).inbox.push_back(lost);
                Self::reconnect(&mut next, c);
            }
            Action::DropReply(c) => {
                next.budget.drop_reply -= 1;
                let id = next.queues(c).outbox.front()?.0;
                Self::fault(
                    &mut next,
                    format!("client {IDENTITY_MARK}{c}: reply to {id} dropped"),
                );
                self.serve(&mut next, c, true);
            }
            Action::Expire(c) => {
                next.budget.expire -= 1;
                Self::fault(
                    &mut next,
                    format!("client {IDENTITY_MARK}{c}: session expired by the server"),
                );
                let session = next.client(c).session;
                next.client_mut(c).expired_at_server = true;
                let notifications = next.zk_mut().close_session(session).unwrap_or_default();
                Self::deliver_notifications(&mut next, notifications);
                let expired = Inbound::Session(SessionEvent::Expired);
                next.queues_mut(c).inbox.push_back(expired);
            }
            Action::ClientExpire(c) => {
                next.budget.client_expire -= 1;
                Self::fault(
                    &mut next,
                    format!("client {IDENTITY_MARK}{c}: told its session expired"),
                );
                // The server keeps the session (and its ephemerals) until ServerExpireOld; the
                // client's handle is dead: what it had not sent fails, nothing more arrives.
                let session = next.client(c).session;
                next.abandoned.insert(session);
                next.client_mut(c).expired_at_server = true;
                let mut queues = next.queues_mut(c);
                for (id, ..) in std::mem::take(&mut queues.outbox) {
                    let failed = Inbound::Reply(id, Err(ZkError::SessionExpired));
                    queues.inbox.push_back(failed);
                }
                queues
                    .inbox
                    .push_back(Inbound::Session(SessionEvent::Expired));
            }
            Action::ServerExpireOld(session) => {
                next.abandoned.remove(&session);
                Self::fault(
                    &mut next,
                    // No session number: it would name a client without a token.
                    "an abandoned session expired by the server".to_owned(),
                );
                let notifications = next.zk_mut().close_session(session).unwrap_or_default();
                Self::deliver_notifications(&mut next, notifications);
            }
            Action::Crash(c) => {
                next.budget.crash -= 1;
                Self::fault(
                    &mut next,
                    format!("client {IDENTITY_MARK}{c}: process crashed"),
                );
                let mut effects = Vec::new();
                {
                    let mut client = next.client_mut(c);
                    let Client { app, .. } = &mut *client;
                    self.workload.crashed(app, &mut effects, c as u32);
                    client.crashed = true;
                    client.expired_at_server = true;
                }
                for effect in effects {
                    Self::push(&mut next, effect);
                }
                // Its session's end, as an expiry delivered to it would record it.
                let ended = HistoryEvent::Session {
                    client: c as u32,
                    event: SessionEvent::Expired,
                };
                Self::log(&mut next, c, ended.clone());
                Self::push(&mut next, ended);
                let session = next.client(c).session;
                let notifications = next.zk_mut().close_session(session).unwrap_or_default();
                Self::deliver_notifications(&mut next, notifications);
            }
            Action::LeaderChange => {
                next.budget.leader_change -= 1;
                Self::fault(&mut next, "leader change: every connection broke".into());
                for c in 0..next.seats.len() {
                    if next.client(c).expired_at_server {
                        continue;
                    }
                    let mut queues = next.queues_mut(c);
                    if let Some((id, ..)) = queues.outbox.pop_front() {
                        let lost = Inbound::Reply(id, Err(ZkError::ConnectionLoss));
                        queues.inbox.push_back(lost);
                    }
                    Self::reconnect(&mut next, c);
                }
            }
        }
        Some(next)
    }
}
