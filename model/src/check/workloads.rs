//! The applications the checker runs over each recipe, and the properties each is judged by.
//!
//! - **Lock** ([`LockWorkload`]): each client acquires the lock once; holding it, it writes
//!   "reserve" to the resource with its token, then "sell", then releases. Judged
//!   by "mutual exclusion" (no two critical sections' writes interleave) and "herd free".
//! - **Leaders** ([`LeaderRecipe`]): Curator's latch ([`LatchWorkload`]), Elastic-Job's job
//!   election ([`ElectionWorkload`]) and the book's `runForMaster` ([`MasterWorkload`]) under one
//!   application: each participant starts the recipe, and a leader acts on the resource once
//!   in each leadership it believes it holds. Judged by "single acting master" (no act from a
//!   term older than one already seen) and "herd free" where the recipe queues its waiters (the
//!   election's latch; not the master's node, which every backup watches by design).
//!
//! Every write is an `Act`, taken only when the client is caught up (see the model's docs).
//! Both resources accept every write: what is judged is the recipe, not fencing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{LazyLock, OnceLock};

use stateright::Expectation;
use zkh_recipes::election::{ElectionMachine, ElectionReport, ElectionRequest, ElectionVariant};
use zkh_recipes::latch::{LatchMachine, LatchReport, LatchRequest, LatchVariant};
use zkh_recipes::lock::{LockMachine, LockReport, LockRequest, LockVariant};
use zkh_recipes::machine::Machine;
use zkh_recipes::master::{MasterMachine, MasterReport, MasterRequest, MasterVariant};
use zkh_recipes::symmetry::{identity, Symmetric};

use super::{Judge, Recorded, State, Workload};
use crate::history::{HistoryEntry, HistoryEvent};
use crate::properties::{self, sometimes, Finding};
use crate::zookeeper::ZkModel;

/// The resource both workloads write to.
pub const RESOURCE: &str = "resource";

/// A leader's leadership ends, if it held one (`leading` is cleared): a `none` role.
pub(super) fn leadership_ends(
    leading: &mut Option<i64>,
    effects: &mut Vec<HistoryEvent>,
    client: u32,
) {
    if leading.take().is_some() {
        effects.push(role(client, "none", None));
    }
}

pub(super) fn role(client: u32, role: &str, token: Option<i64>) -> HistoryEvent {
    HistoryEvent::Role {
        client,
        role: role.into(),
        token,
    }
}

fn write(client: u32, token: i64, detail: &str) -> HistoryEvent {
    HistoryEvent::SideEffect {
        client,
        resource: RESOURCE.into(),
        token: Some(token),
        accepted: true,
        detail: detail.into(),
    }
}

/// How many of the oldest shared entries "leader elected" for `role` and the `sometimes`
/// check `changed_hands` (which follows holders of `role`) can do without.
pub(super) fn settled_roles<W: Workload>(
    shared: &[&HistoryEntry],
    state: &State<W>,
    role: &str,
    changed_hands: &str,
) -> usize {
    let elected = elected_settled(shared, role);
    if state.happened(changed_hands) {
        elected
    } else {
        elected.min(sometimes::role_changed_hands_settled(shared, &[role]))
    }
}

/// What [`elected`] for `role` reads of the shared entries `kept`: which clients hold `role`
/// now. As roles, one per holder, with a token no judge reads (0), in the order of each one's
/// last role in `kept`: an order that renaming the clients does not change (the order of their
/// indices would, and then two states equal up to a renaming would hash apart).
pub(super) fn holders_now<'a>(
    kept: &[&HistoryEntry],
    role_name: &'a str,
) -> impl Iterator<Item = HistoryEvent> + 'a {
    // Each client's last role: where it is in `kept`, and whether it holds `role_name`.
    let mut last: BTreeMap<u32, (usize, bool)> = BTreeMap::new();
    for (at, entry) in kept.iter().enumerate() {
        if let HistoryEvent::Role {
            client,
            role: name,
            token,
        } = &entry.event
        {
            // Any other role, or none, ends a holding (as `leader_elected` reads it).
            last.insert(*client, (at, name == role_name && token.is_some()));
        }
    }
    let mut holders: Vec<(usize, u32)> = (last.into_iter())
        .filter(|(_, (_, holds))| *holds)
        .map(|(client, (at, _))| (at, client))
        .collect();
    holders.sort_unstable();
    (holders.into_iter()).map(move |(_, client)| role(client, role_name, Some(0)))
}

/// How many of the oldest shared entries [`elected`] for `role` can do without: all but each
/// holder's last role.
pub(super) fn elected_settled(shared: &[&HistoryEntry], role: &str) -> usize {
    let now = shared.len() as u64;
    properties::leader_elected_settled(shared, &[role], now)
}

/// "Leader elected" as the checker judges it, at quiescence (see the model's docs): someone
/// holds `role` now, at the end of the history (the simulator's heal time is this model's
/// present).
pub(super) fn elected<W: Workload>(
    history: &Recorded<'_>,
    state: &State<W>,
    role: &str,
) -> Finding {
    let now = state.shared.len() as u64;
    properties::leader_elected(history, &[role], now, properties::UNBOUNDED_US)
}

pub(super) fn judge<W: Workload>(
    name: &'static str,
    expectation: Expectation,
    finding: fn(&Recorded<'_>, &State<W>) -> Finding,
) -> Judge<W> {
    Judge {
        name,
        expectation,
        finding,
    }
}

/// The lock workload: acquire once, reserve, sell, release.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockWorkload {
    /// The lock's variant.
    pub variant: LockVariant,
}

/// The lock directory (the simulator's stock workload's too: a recipe's paths are the same in
/// both engines).
pub const LOCK_DIR: &str = "/locks/stock";

/// Where a lock client's application is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LockApp {
    /// Waiting for the lock.
    Acquiring,
    /// Holding it with this token; "reserve" to write.
    Holding(i64),
    /// Holding it with this token; "reserve" written, "sell" to come.
    Reserved(i64),
    /// Sold; releasing.
    Releasing,
    /// Finished (released, lost, or failed).
    Done,
}

zkh_recipes::symmetric_as_hash!(LockApp, LeaderApp);

impl Workload for LockWorkload {
    type Machine = LockMachine;
    type Request = LockRequest;
    type Report = LockReport;
    type App = LockApp;

    /// Its judges read the history, and "leader elected" the shared log's length; what it
    /// forgets reads the shared history and whether "lock changed hands after a loss"
    /// has happened.
    const READS_HISTORY_ALONE: bool = true;

    fn dir(&self) -> &str {
        LOCK_DIR
    }

    const CLAIMS: bool = true;

    fn claimed_nodes(&self, machine: &LockMachine) -> Vec<String> {
        machine
            .claimed_node()
            .map(str::to_owned)
            .into_iter()
            .collect()
    }

    const KNOWS_ITS_EPHEMERALS: bool = true;

    fn known_nodes(&self, machine: &LockMachine) -> Vec<String> {
        machine.known_ephemerals().unwrap_or_default()
    }

    fn client(&self, index: usize) -> (LockMachine, LockApp, Vec<LockRequest>) {
        let machine = LockMachine::new(self.variant, LOCK_DIR, &identity("c", index));
        let acquire = LockRequest::Acquire { timeout_ms: None };
        (machine, LockApp::Acquiring, vec![acquire])
    }

    fn on_report(
        &self,
        app: &mut LockApp,
        report: LockReport,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Vec<LockRequest> {
        match report {
            LockReport::Acquired { token, .. } if *app == LockApp::Acquiring => {
                effects.push(role(client, "holder", Some(token)));
                *app = LockApp::Holding(token);
            }
            LockReport::Acquired { .. } | LockReport::NotHeld => {}
            LockReport::Lost
            | LockReport::Released { .. }
            | LockReport::TimedOut
            | LockReport::Failed(_) => done_with_the_lock(app, effects, client),
        }
        Vec::new()
    }

    fn act(
        &self,
        app: &mut LockApp,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Option<Vec<LockRequest>> {
        match *app {
            LockApp::Holding(token) => {
                effects.push(write(client, token, "reserve"));
                *app = LockApp::Reserved(token);
                Some(Vec::new())
            }
            LockApp::Reserved(token) => {
                effects.push(write(client, token, "sell"));
                *app = LockApp::Releasing;
                Some(vec![LockRequest::Release])
            }
            _ => None,
        }
    }

    fn can_act(&self, app: &LockApp, _: &ZkModel) -> bool {
        matches!(app, LockApp::Holding(_) | LockApp::Reserved(_))
    }

    fn finished(&self, app: &LockApp) -> bool {
        *app == LockApp::Done
    }

    fn crashed(&self, app: &mut LockApp, effects: &mut Vec<HistoryEvent>, client: u32) {
        done_with_the_lock(app, effects, client);
    }

    fn judges() -> &'static [Judge<Self>] {
        use Expectation::{Always, Eventually, Sometimes};
        static JUDGES: LazyLock<Vec<Judge<LockWorkload>>> = LazyLock::new(|| {
            vec![
                judge("mutual exclusion", Always, |h, _| {
                    properties::mutual_exclusion(h, RESOURCE)
                }),
                judge("herd free", Always, |h, _| {
                    properties::herd_free(h, LOCK_DIR)
                }),
                judge("leader elected", Eventually, |h, s| elected(h, s, "holder")),
                judge(LOCK_CHANGED, Sometimes, |h, _| {
                    sometimes::role_changed_hands_after_a_loss(h, &["holder"])
                }),
                judge("a waiter was woken", Sometimes, |h, _| {
                    sometimes::waiter_woken(h, LOCK_DIR)
                }),
            ]
        });
        &JUDGES
    }

    /// Only "herd free" reads what a client did under the lock: the writes are shared
    /// entries, and so are the roles. "Lock changed hands after a loss" also reads a client's
    /// own session expiries, but those come after every shared entry in the order it is judged
    /// in, so no role change follows them. "A waiter was woken", once true, stays true.
    fn summarize_own(
        &self,
        own: &[&HistoryEntry],
        in_flight: &BTreeSet<i64>,
    ) -> Option<Vec<HistoryEntry>> {
        Some(properties::herd_free_summary(own, LOCK_DIR, in_flight))
    }

    /// "Mutual exclusion" needs every accepted write; "leader elected" and "lock changed
    /// hands after a loss" need the roles they follow.
    fn settled_shared(&self, shared: &[&HistoryEntry], state: &State<Self>) -> usize {
        properties::mutual_exclusion_settled(shared, RESOURCE).min(settled_roles(
            shared,
            state,
            "holder",
            LOCK_CHANGED,
        ))
    }
}

/// A lock client is done: if it held the lock, its holding ends.
fn done_with_the_lock(app: &mut LockApp, effects: &mut Vec<HistoryEvent>, client: u32) {
    if matches!(
        app,
        LockApp::Holding(_) | LockApp::Reserved(_) | LockApp::Releasing
    ) {
        effects.push(role(client, "none", None));
    }
    *app = LockApp::Done;
}

/// How many times a leader acts in one leadership. Once is enough: an act changes nothing but
/// the history, so wherever a stale leader could act a second time after a newer leader acted,
/// it could as well have kept its one act until then; "single acting master" is violated on
/// some path with one act per term exactly when it is with more (and a second act only
/// multiplies the states, by half again for the job election).
const ACTS_PER_TERM: u8 = 1;

/// The lock workload's `sometimes` check that the lock moved on after a loss.
const LOCK_CHANGED: &str = "lock changed hands after a loss";

/// The leader workloads' `sometimes` check that a leadership moved on after a loss.
const LEADERSHIP_CHANGED: &str = "leadership changed hands after a loss";

/// A leader's application (latch, job election, master): the token of the leadership it
/// believes it holds, and how many times it has acted in it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeaderApp {
    /// The token of the leadership it believes it holds.
    pub leading: Option<i64>,
    /// Acts in this leadership.
    pub acts: u8,
    /// The recipe stopped for good (the book's master after its session expired): its process
    /// would exit, so it no longer takes part, and liveness is not asked of it.
    pub stopped: bool,
}

/// A recipe that elects a leader, as the one leader workload drives it: start it, act on the
/// resource once in each leadership. Judged by "single acting master", "leader
/// elected", and "herd free" where the recipe queues its waiters.
pub trait LeaderRecipe: Clone + Debug + PartialEq + Eq + Hash + Send + Sync + 'static {
    /// The recipe's machine.
    type Machine: Machine<Request = Self::Request, Report = Self::Report> + Symmetric + Sync;
    /// The machine's requests.
    type Request: Clone + Debug + Send + 'static;
    /// The machine's reports.
    type Report: Clone + Debug + PartialEq + Send + 'static;
    /// The directory that exists from the start.
    const DIR: &'static str;
    /// Where waiters queue, judged by "herd free" (none: every backup watching the one node is
    /// the recipe's design).
    const QUEUE: Option<&'static str>;
    /// Whether "a waiter was woken" is among the `sometimes` checks.
    const WAITERS_WAKE: bool;

    /// Participant `index`'s machine and the request that starts it.
    fn participant(&self, index: usize) -> (Self::Machine, Self::Request);
    /// The leadership a report grants (`Some(token)`) or ends (`None`).
    fn leadership(report: Self::Report) -> Option<i64>;
    /// Whether a report says the recipe stopped for good. By default none does.
    fn stops(report: &Self::Report) -> bool {
        let _ = report;
        false
    }
    /// Where its judges are kept once built: a static of the implementing type's own.
    fn judged_by() -> &'static OnceLock<Vec<Judge<Self>>>;
    /// The node the leadership `machine` believes it holds stands on, if it believes it leads
    /// ([`Workload::claimed_nodes`]).
    fn claimed_node(machine: &Self::Machine) -> Option<String>;
    /// Every ephemeral node `machine` knows is its own ([`Workload::known_nodes`]): what the
    /// machine itself says ([`Machine::known_ephemerals`]), which the simulator reads too.
    fn known_nodes(machine: &Self::Machine) -> Vec<String> {
        machine.known_ephemerals().unwrap_or_default()
    }
}

/// The judges of a leader recipe `R` (see [`LeaderRecipe`]).
fn leader_judges<R: LeaderRecipe>() -> Vec<Judge<R>> {
    use Expectation::{Always, Eventually, Sometimes};
    let mut judges = vec![judge("single acting master", Always, |h, _| {
        properties::single_acting_master(h, RESOURCE)
    })];
    if R::QUEUE.is_some() {
        judges.push(judge("herd free", Always, herd_free::<R>));
    }
    judges.push(judge("leader elected", Eventually, |h, s| {
        elected(h, s, "leader")
    }));
    judges.push(judge(LEADERSHIP_CHANGED, Sometimes, |h, _| {
        sometimes::role_changed_hands_after_a_loss(h, &["leader"])
    }));
    if R::WAITERS_WAKE {
        judges.push(judge("a waiter was woken", Sometimes, waiter_woken::<R>));
    }
    judges
}

impl<R: LeaderRecipe> Workload for R {
    type Machine = R::Machine;
    type Request = R::Request;
    type Report = R::Report;
    type App = LeaderApp;

    /// Its judges read the history, and "leader elected" the shared log's length; what it
    /// forgets reads the shared history and whether "leadership changed hands after a loss"
    /// has happened.
    const READS_HISTORY_ALONE: bool = true;

    fn dir(&self) -> &str {
        R::DIR
    }

    const CLAIMS: bool = true;

    fn claimed_nodes(&self, machine: &R::Machine) -> Vec<String> {
        R::claimed_node(machine).into_iter().collect()
    }

    const KNOWS_ITS_EPHEMERALS: bool = true;

    fn known_nodes(&self, machine: &R::Machine) -> Vec<String> {
        R::known_nodes(machine)
    }

    fn client(&self, index: usize) -> (R::Machine, LeaderApp, Vec<R::Request>) {
        let (machine, start) = self.participant(index);
        let app = LeaderApp {
            leading: None,
            acts: 0,
            stopped: false,
        };
        (machine, app, vec![start])
    }

    fn on_report(
        &self,
        app: &mut LeaderApp,
        report: R::Report,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Vec<R::Request> {
        app.stopped |= R::stops(&report);
        match R::leadership(report) {
            Some(token) => {
                effects.push(role(client, "leader", Some(token)));
                app.leading = Some(token);
                app.acts = 0;
            }
            None => leadership_ends(&mut app.leading, effects, client),
        }
        Vec::new()
    }

    fn act(
        &self,
        app: &mut LeaderApp,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Option<Vec<R::Request>> {
        let token = app.leading?;
        if app.acts >= ACTS_PER_TERM {
            return None;
        }
        app.acts += 1;
        effects.push(write(client, token, "act"));
        Some(Vec::new())
    }

    fn can_act(&self, app: &LeaderApp, _: &ZkModel) -> bool {
        app.leading.is_some() && app.acts < ACTS_PER_TERM
    }

    fn finished(&self, app: &LeaderApp) -> bool {
        app.stopped
    }

    fn crashed(&self, app: &mut LeaderApp, effects: &mut Vec<HistoryEvent>, client: u32) {
        leadership_ends(&mut app.leading, effects, client);
    }

    fn judges() -> &'static [Judge<Self>] {
        R::judged_by().get_or_init(leader_judges::<R>)
    }

    /// Only "herd free", where the recipe queues its waiters, reads a client's own entries:
    /// acts and roles are shared entries, and its own session expiries come after every shared
    /// entry in the order "leadership changed hands after a loss" is judged in. Without a queue,
    /// none is needed.
    fn summarize_own(
        &self,
        own: &[&HistoryEntry],
        in_flight: &BTreeSet<i64>,
    ) -> Option<Vec<HistoryEntry>> {
        Some(match R::QUEUE {
            Some(queue) => properties::herd_free_summary(own, queue, in_flight),
            None => Vec::new(),
        })
    }

    /// What the judges read of the shared history, and nothing else: first the accepted act
    /// with the highest token ("single acting master" compares each later act with it alone;
    /// while it holds, tokens never go down, so that is the last one), then
    /// - until "leadership changed hands after a loss" has happened, the roles and the losses
    ///   of connection or session, in order, from where that check and "leader elected" need
    ///   them (`settled_roles`, whatever came before the act);
    /// - after that, only the role of each client that leads now ("leader elected").
    ///
    /// Faults and the other acts go: no judge reads them. (No judge reads where the act stands
    /// among the roles either; first, it does not hold the roles' prefix back.)
    fn canonical_shared(
        &self,
        shared: &[&HistoryEntry],
        state: &State<Self>,
    ) -> Option<Vec<HistoryEvent>> {
        let last_act = shared.get(properties::single_acting_master_settled(shared, RESOURCE));
        let last_act = last_act.map(|entry| entry.event.clone());
        if state.happened(LEADERSHIP_CHANGED) {
            return Some(
                last_act
                    .into_iter()
                    .chain(holders_now(shared, "leader"))
                    .collect(),
            );
        }
        let from = settled_roles(shared, state, "leader", LEADERSHIP_CHANGED);
        let roles_and_losses = (shared[from..].iter())
            .filter(|entry| {
                matches!(
                    entry.event,
                    HistoryEvent::Role { .. } | HistoryEvent::Session { .. }
                )
            })
            .map(|entry| entry.event.clone());
        Some(last_act.into_iter().chain(roles_and_losses).collect())
    }
}

fn herd_free<R: LeaderRecipe>(history: &Recorded<'_>, _: &State<R>) -> Finding {
    properties::herd_free(history, R::QUEUE.expect("judged only with a queue"))
}

fn waiter_woken<R: LeaderRecipe>(history: &Recorded<'_>, _: &State<R>) -> Finding {
    sometimes::waiter_woken(history, R::QUEUE.expect("judged only with a queue"))
}

/// Curator's latch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LatchWorkload {
    /// The latch's variant.
    pub variant: LatchVariant,
}

/// The latch directory (the simulator's too).
pub const LATCH_DIR: &str = "/election/job";

impl LeaderRecipe for LatchWorkload {
    type Machine = LatchMachine;
    type Request = LatchRequest;
    type Report = LatchReport;
    const DIR: &'static str = LATCH_DIR;
    const QUEUE: Option<&'static str> = Some(LATCH_DIR);
    const WAITERS_WAKE: bool = true;

    fn participant(&self, index: usize) -> (LatchMachine, LatchRequest) {
        let name = identity("p", index);
        let machine = LatchMachine::new(self.variant, LATCH_DIR, &name, &identity("c", index));
        (machine, LatchRequest::Start)
    }

    fn leadership(report: LatchReport) -> Option<i64> {
        match report {
            LatchReport::Leader { token } => Some(token),
            LatchReport::NotLeader | LatchReport::Closed | LatchReport::Failed(_) => None,
        }
    }

    fn judged_by() -> &'static OnceLock<Vec<Judge<Self>>> {
        static JUDGES: OnceLock<Vec<Judge<LatchWorkload>>> = OnceLock::new();
        &JUDGES
    }

    fn claimed_node(machine: &LatchMachine) -> Option<String> {
        machine.claimed_node().map(str::to_owned)
    }
}

/// Elastic-Job's per-job election. "Herd free" is judged on the election's latch: every
/// instance watching the leader's instance node is the design, not a herd.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ElectionWorkload {
    /// The election's variant.
    pub variant: ElectionVariant,
}

/// The job's root (the simulator's too).
pub const JOB_DIR: &str = "/orders-job";
/// The election's latch, where instances queue.
pub const ELECTION_LATCH_DIR: &str = "/orders-job/leader/election/latch";

impl LeaderRecipe for ElectionWorkload {
    type Machine = ElectionMachine;
    type Request = ElectionRequest;
    type Report = ElectionReport;
    const DIR: &'static str = ELECTION_LATCH_DIR;
    const QUEUE: Option<&'static str> = Some(ELECTION_LATCH_DIR);
    const WAITERS_WAKE: bool = false;

    fn participant(&self, index: usize) -> (ElectionMachine, ElectionRequest) {
        let instance = identity("i", index);
        let machine = ElectionMachine::new(self.variant, JOB_DIR, &instance, &identity("c", index));
        (machine, ElectionRequest::Elect)
    }

    fn leadership(report: ElectionReport) -> Option<i64> {
        match report {
            ElectionReport::Leader { token } => Some(token),
            ElectionReport::NotLeader | ElectionReport::Follower => None,
        }
    }

    fn judged_by() -> &'static OnceLock<Vec<Judge<Self>>> {
        static JUDGES: OnceLock<Vec<Judge<ElectionWorkload>>> = OnceLock::new();
        &JUDGES
    }

    fn claimed_node(machine: &ElectionMachine) -> Option<String> {
        machine.claimed_node()
    }
}

/// The ZooKeeper book's `runForMaster`. Every backup watches the master's node by the recipe's
/// design, so "herd free" is not judged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MasterWorkload {
    /// The election's variant.
    pub variant: MasterVariant,
}

/// The master's node.
pub const MASTER_PATH: &str = "/app/master";

impl LeaderRecipe for MasterWorkload {
    type Machine = MasterMachine;
    type Request = MasterRequest;
    type Report = MasterReport;
    const DIR: &'static str = "/app";
    const QUEUE: Option<&'static str> = None;
    const WAITERS_WAKE: bool = false;

    fn participant(&self, index: usize) -> (MasterMachine, MasterRequest) {
        (
            MasterMachine::with_variant(self.variant, MASTER_PATH, &identity("m", index)),
            MasterRequest::Run,
        )
    }

    fn leadership(report: MasterReport) -> Option<i64> {
        match report {
            MasterReport::Master { token } => Some(token),
            MasterReport::Backup | MasterReport::Stopped => None,
        }
    }

    /// The book's master stops when its session expires (its process exits).
    fn stops(report: &MasterReport) -> bool {
        *report == MasterReport::Stopped
    }

    fn judged_by() -> &'static OnceLock<Vec<Judge<Self>>> {
        static JUDGES: OnceLock<Vec<Judge<MasterWorkload>>> = OnceLock::new();
        &JUDGES
    }

    fn claimed_node(machine: &MasterMachine) -> Option<String> {
        machine.claimed_node().map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(events: &[HistoryEvent]) -> Vec<HistoryEntry> {
        (0..)
            .zip(events)
            .map(|(at_us, event)| HistoryEntry {
                at_us,
                event: event.clone(),
            })
            .collect()
    }

    fn holders(events: &[HistoryEvent]) -> Vec<HistoryEvent> {
        let entries = entries(events);
        let kept: Vec<&HistoryEntry> = entries.iter().collect();
        holders_now(&kept, "leader").collect()
    }

    #[test]
    fn a_holder_is_a_client_whose_last_role_is_the_role_held() {
        let took = |client| role(client, "leader", Some(5 + i64::from(client)));
        let ended = |client| role(client, "none", None);
        let held = |client| role(client, "leader", Some(0));
        assert_eq!(holders(&[took(0), ended(0)]), vec![]);
        assert_eq!(holders(&[took(1), took(0), ended(1)]), vec![held(0)]);
        assert_eq!(
            holders(&[ended(0), took(2), took(0)]),
            vec![held(2), held(0)],
            "in the order of their last roles, not of their indices, which a renaming changes"
        );
        assert_eq!(
            holders(&[took(0), role(0, "leader", None)]),
            vec![],
            "a role without a token is not held"
        );
    }
}
