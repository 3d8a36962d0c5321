//! Exhaustive checking with stateright of the recipes' own state machines.
//!
//! # The model
//!
//! A state is the pure ZooKeeper model ([`ZkModel`](crate::zookeeper::ZkModel)) and N clients. Each
//! client holds:
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
//! Each workload names its `always` properties, each paired with `sometimes` checks so that a pass
//! cannot be empty, and "leader elected" as a liveness property, checked at *quiescence*
//! ([`RecipeModel::quiescent`]): where nothing is in flight, no timer is pending, no application
//! has anything left to do, some client still takes part in the recipe, and the server has no
//! abandoned session left to expire, some client holds the role. Only a fault could move such a
//! state on; the recipe has had every chance to recover. (The property's function is the
//! simulator's, asked whether someone holds the role at the end of the history: the model's present
//! is the simulator's heal time.) This is stronger than stateright's `eventually`, which a path
//! satisfies if the property held at any state of it, so that a leader elected before the last
//! fault would do (the master's `no-watch` variant shows the difference), and which can miss a
//! violation where two paths join (stateright says so); a check on each quiescent state is a plain
//! invariant, sound however states are shared. A state where every client has finished (each lock
//! client acquired once and left) is not judged: nobody is left to take the role.
//!
//! A state that is not quiescent only because an application waits to act is judged by the
//! model's own invariant "applications make progress" ([`RecipeModel::makes_progress`]): where
//! every live client is idle and an application has an act to take, that act must be enabled.
//! Otherwise the model is stuck there (a settled moment that cannot come), and no liveness
//! property would ever judge it. It found a job instance whose failover check, queued at the
//! end of a cycle, waited for an input that never came.
//!
//! A third invariant of the model's own, "claims are owned" ([`RecipeModel::owns_its_claims`]),
//! judges what a client believes it owns: at every settled moment each node its workload names
//! ([`Workload::claimed_nodes`]: the job's registration `instances/<id>`, and each role's node:
//! the lock holder's, the latch leader's, the elections' and the master's) exists and is owned
//! by the client's current session. No other property sees a belief that is false but harms
//! nobody yet (the job's `no-reregister` control). Its other side, [`ORPHANS`]: at every quiet
//! moment, each ephemeral node of a live client's session is one the client knows of
//! ([`Workload::known_nodes`]). Each has a `sometimes` companion ([`CLAIM_JUDGED`],
//! [`EPHEMERAL_JUDGED`]), so that a pass of it is not an empty one. A fifth, [`SCHEDULE`] ("runs
//! when scheduled"), judges the sharded job's runs against its cron: no instance runs a cycle no
//! cron has fired (the job's `run-ahead` control).
//!
//! A path that goes round a loop for ever without progress is the liveness property
//! [`LIVELOCK`], found on the paths a search cuts off at its depth (`lasso.rs`).
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
//! # Where the code is
//!
//! - `budget.rs`: the fault budget, and when applications act;
//! - `workload.rs`: what a recipe brings to the checker: its machine, its application, its
//!   named properties;
//! - `state.rs`: a state, its clients' seats, and its hashes, plain and up to renaming;
//! - `actions.rs`: which actions a state offers, with the partial-order reduction and the
//!   reads-first bound;
//! - `step.rs`: what each action does to a state;
//! - `invariants.rs`: the properties as stateright asks them, quiescence, and progress;
//! - the searches: `run.rs` (where a check starts), `depth_first.rs`, `parallel.rs`,
//!   `preemption.rs`, `walk.rs`, over the visited sets of `visited.rs` and `compact.rs`;
//! - what a state keeps of its history: `forget.rs` and `kept.rs`;
//! - the workloads: `workloads.rs` (the lock, the latch, the elections, the master) and
//!   `job.rs` (the sharded job).
//!
//! # Not modelled
//!
//! Read lag on followers (one server), reconnection to another server, container reaping, and
//! time itself (timeouts are timers that may fire at any point).

mod actions;
mod budget;
mod compact;
mod depth_first;
mod forget;
mod invariants;
mod job;
mod kept;
mod lasso;
mod parallel;
mod preemption;
mod run;
mod state;
mod step;
mod visited;
mod walk;
mod workload;
mod workloads;

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use crate::history_text::{op_id_text, request_text, result_text, session_event_text};
use serde::{Deserialize, Serialize};
use stateright::Model;
use zkh_recipes::machine::TimerId;
use zkh_recipes::symmetry::Renamings;
use zkh_recipes::SessionId;

pub use crate::shared::{Shared, SharedLog, SharedMut};
pub use budget::{Acting, FaultBudget};
pub use compact::{COMPACT_MIB, MAX_LOAD_PERCENT};
pub use depth_first::PROGRESS_STATES;
pub use invariants::{
    CLAIM_JUDGED, EPHEMERAL_JUDGED, INVARIANTS, ORPHANS, OWNERSHIP, PROGRESS, SCHEDULE,
};
pub use job::{JobApp, JobWorkload, JOB_CYCLES, JOB_ITEMS};
pub use lasso::{abstract_key, abstract_text, ranked, DeepLoops, Lasso, DEEP_PATHS, LIVELOCK};
pub use run::{
    check, check_observed, check_searched, check_within, find_violation, Compaction, GaveUp,
    Limits, Observer, Progress, Searcher, Verdict, Violation, PROGRESS_INTERVAL_MS, SHORTEN_STATES,
};
pub use state::{representative, ClassHash, Client, Inbound, Queues, Seat, State};
pub use walk::{shrink, walk, walk_observed, WalkLimits, WalkVerdict, WalkViolation, LOOP_STEPS};
pub use workload::{judged_bits, Judge, Recorded, Workload, MAX_JUDGES};
pub use workloads::{
    ElectionWorkload, LatchWorkload, LeaderApp, LeaderRecipe, LockWorkload, MasterWorkload,
    ELECTION_LATCH_DIR, JOB_DIR, LATCH_DIR, LOCK_DIR, MASTER_PATH, RESOURCE,
};

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
    /// Judge the model's own invariant [`OWNERSHIP`] ("claims are owned"). On in every check;
    /// off (`zkharness check --no-claims`) to see which recipe property a false claim goes on
    /// to break, if any, and to export that as a scenario the simulator judges.
    pub claims_judged: bool,
}

/// `sometimes` properties reached (one bit each), shared by the copies of a model: a search
/// notes them from its checker's thread, and reads them when it is done.
#[derive(Clone, Debug, Default)]
pub struct Reached(Arc<AtomicU16>);

impl Reached {
    /// Notes `bits` as reached: a plain load, and a store only when one is new. The judges'
    /// `sometimes` properties take the low eight bits, the model's own the next
    /// ([`RecipeModel::own_sometimes`]).
    pub fn note(&self, bits: u16) {
        if bits & !self.0.load(Ordering::Relaxed) != 0 {
            self.0.fetch_or(bits, Ordering::Relaxed);
        }
    }

    /// The bits noted so far.
    pub fn bits(&self) -> u16 {
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
            claims_judged: true,
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
                |(id, _, request)| format!("{} {}", op_id_text(*id), request_text(request)),
            )
        };
        match action {
            Action::Serve(c) => format!("the server applies client {c}'s {}", next_op(*c)),
            Action::Deliver(c) => match state.queues(*c).inbox.front() {
                Some(Inbound::Reply(id, result)) => format!(
                    "client {c} gets the reply to {}: {}",
                    op_id_text(*id),
                    result_text(result)
                ),
                Some(Inbound::Watch(event)) => format!(
                    "client {c} gets a watch event: {:?} {}",
                    event.event_type, event.path
                ),
                Some(Inbound::Session(event)) => {
                    format!("client {c} is told: {}", session_event_text(event))
                }
                None => format!("client {c} has nothing to process"),
            },
            Action::Timer(c, id) => format!("client {c}'s timer {} fires", op_id_text(*id)),
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
}
