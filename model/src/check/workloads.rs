//! The applications the checker runs over each recipe, and the properties each is judged by.
//!
//! - **Lock** ([`LockWorkload`]): each client acquires the lock once; holding it, it writes
//!   "reserve" to the resource with its token, then "sell", then releases. Judged
//!   by "mutual exclusion" (no two critical sections' writes interleave) and "herd free".
//! - **Latch** ([`LatchWorkload`]): each client starts the latch; a leader acts on the resource
//!   twice while it believes it leads.
//!   Judged by "single acting master" (no act from a term older than one already seen) and
//!   "herd free".
//! - **Job election** ([`ElectionWorkload`]): Elastic-Job's per-job election, the same
//!   application and properties as the latch; "herd free" is judged on the election's latch
//!   (every instance watching the leader's instance node is the design, not a herd).
//! - **Master** ([`MasterWorkload`]): the book's `runForMaster`, the same application.
//!
//! Every write is an `Act`, taken only when the client is caught up (see the model's docs).
//! Both resources accept every write: what is judged is the recipe, not fencing.

use stateright::Expectation;
use zkh_recipes::election::{ElectionMachine, ElectionReport, ElectionRequest, ElectionVariant};
use zkh_recipes::latch::{LatchMachine, LatchReport, LatchRequest, LatchVariant};
use zkh_recipes::lock::{LockMachine, LockReport, LockRequest, LockVariant};
use zkh_recipes::master::{MasterMachine, MasterReport, MasterRequest};

use super::{Judge, State, Workload};
use crate::history::{History, HistoryEvent};
use crate::properties::{self, sometimes, Finding};

/// The resource both workloads write to.
pub const RESOURCE: &str = "resource";

fn role(client: u32, role: &str, token: Option<i64>) -> HistoryEvent {
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

/// "Leader elected": after the last fault, someone holds `role` (or already did).
fn elected<W: Workload>(history: &History, state: &State<W>, role: &str) -> Finding {
    properties::leader_elected(history, &[role], state.last_fault_at, u64::MAX / 4)
}

fn judge<W: Workload>(
    name: &'static str,
    expectation: Expectation,
    finding: fn(&History, &State<W>) -> Finding,
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

/// The lock directory.
pub const LOCK_DIR: &str = "/lock";

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

impl Workload for LockWorkload {
    type Machine = LockMachine;
    type Request = LockRequest;
    type Report = LockReport;
    type App = LockApp;

    fn dir(&self) -> &str {
        LOCK_DIR
    }

    fn client(&self, index: usize) -> (LockMachine, LockApp, Vec<LockRequest>) {
        let machine = LockMachine::new(self.variant, LOCK_DIR, &format!("c{index}"));
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
            | LockReport::Failed(_) => {
                if matches!(
                    app,
                    LockApp::Holding(_) | LockApp::Reserved(_) | LockApp::Releasing
                ) {
                    effects.push(role(client, "none", None));
                }
                *app = LockApp::Done;
            }
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

    fn can_act(&self, app: &LockApp) -> bool {
        matches!(app, LockApp::Holding(_) | LockApp::Reserved(_))
    }

    fn finished(&self, app: &LockApp) -> bool {
        *app == LockApp::Done
    }

    fn judges() -> Vec<Judge<Self>> {
        use Expectation::{Always, Eventually, Sometimes};
        vec![
            judge("mutual exclusion", Always, |h, _| {
                properties::mutual_exclusion(h, RESOURCE)
            }),
            judge("herd free", Always, |h, _| {
                properties::herd_free(h, LOCK_DIR)
            }),
            judge("leader elected", Eventually, |h, s| elected(h, s, "holder")),
            judge("lock changed hands after a loss", Sometimes, |h, _| {
                sometimes::role_changed_hands_after_a_loss(h, &["holder"])
            }),
            judge("a waiter was woken", Sometimes, |h, _| {
                sometimes::waiter_woken(h, LOCK_DIR)
            }),
        ]
    }
}

/// The latch workload: start, act on leadership, act again while caught up.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LatchWorkload {
    /// The latch's variant.
    pub variant: LatchVariant,
}

/// The latch directory.
pub const LATCH_DIR: &str = "/latch";

/// How many times a leader acts in one leadership.
const ACTS_PER_TERM: u8 = 2;

/// A leader's application (latch and job election).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeaderApp {
    /// The token of the leadership it believes it holds.
    pub leading: Option<i64>,
    /// Acts in this leadership.
    pub acts: u8,
}

impl LeaderApp {
    fn waiting() -> LeaderApp {
        LeaderApp {
            leading: None,
            acts: 0,
        }
    }

    /// Leadership gained with `token`, or lost (`None`).
    fn leadership(&mut self, token: Option<i64>, effects: &mut Vec<HistoryEvent>, client: u32) {
        match token {
            Some(token) => {
                effects.push(role(client, "leader", Some(token)));
                *self = LeaderApp {
                    leading: Some(token),
                    acts: 0,
                };
            }
            None => {
                if self.leading.take().is_some() {
                    effects.push(role(client, "none", None));
                }
            }
        }
    }

    /// Acts on the resource while it believes it leads, [`ACTS_PER_TERM`] times a term.
    fn act(&mut self, effects: &mut Vec<HistoryEvent>, client: u32) -> Option<()> {
        let token = self.leading?;
        if self.acts >= ACTS_PER_TERM {
            return None;
        }
        self.acts += 1;
        effects.push(write(client, token, "act"));
        Some(())
    }

    fn can_act(&self) -> bool {
        self.leading.is_some() && self.acts < ACTS_PER_TERM
    }
}

impl Workload for LatchWorkload {
    type Machine = LatchMachine;
    type Request = LatchRequest;
    type Report = LatchReport;
    type App = LeaderApp;

    fn dir(&self) -> &str {
        LATCH_DIR
    }

    fn client(&self, index: usize) -> (LatchMachine, LeaderApp, Vec<LatchRequest>) {
        let name = format!("p{index}");
        let machine = LatchMachine::new(self.variant, LATCH_DIR, &name, &format!("c{index}"));
        (machine, LeaderApp::waiting(), vec![LatchRequest::Start])
    }

    fn on_report(
        &self,
        app: &mut LeaderApp,
        report: LatchReport,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Vec<LatchRequest> {
        let token = match report {
            LatchReport::Leader { token } => Some(token),
            LatchReport::NotLeader | LatchReport::Closed | LatchReport::Failed(_) => None,
        };
        app.leadership(token, effects, client);
        Vec::new()
    }

    fn act(
        &self,
        app: &mut LeaderApp,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Option<Vec<LatchRequest>> {
        app.act(effects, client).map(|()| Vec::new())
    }

    fn can_act(&self, app: &LeaderApp) -> bool {
        app.can_act()
    }

    fn finished(&self, _: &LeaderApp) -> bool {
        false
    }

    fn judges() -> Vec<Judge<Self>> {
        use Expectation::{Always, Eventually, Sometimes};
        vec![
            judge("single acting master", Always, |h, _| {
                properties::single_acting_master(h, RESOURCE)
            }),
            judge("herd free", Always, |h, _| {
                properties::herd_free(h, LATCH_DIR)
            }),
            judge("leader elected", Eventually, |h, s| elected(h, s, "leader")),
            judge(
                "leadership changed hands after a loss",
                Sometimes,
                |h, _| sometimes::role_changed_hands_after_a_loss(h, &["leader"]),
            ),
            judge("a waiter was woken", Sometimes, |h, _| {
                sometimes::waiter_woken(h, LATCH_DIR)
            }),
        ]
    }
}

/// The job election workload: elect, act on leadership, as for the latch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ElectionWorkload {
    /// The election's variant.
    pub variant: ElectionVariant,
}

/// The job's root.
pub const JOB_DIR: &str = "/job";
/// The election's latch, where instances queue.
pub const ELECTION_LATCH_DIR: &str = "/job/leader/election/latch";

impl Workload for ElectionWorkload {
    type Machine = ElectionMachine;
    type Request = ElectionRequest;
    type Report = ElectionReport;
    type App = LeaderApp;

    fn dir(&self) -> &str {
        ELECTION_LATCH_DIR
    }

    fn client(&self, index: usize) -> (ElectionMachine, LeaderApp, Vec<ElectionRequest>) {
        let instance = format!("i{index}");
        let machine = ElectionMachine::new(self.variant, JOB_DIR, &instance, &format!("c{index}"));
        (machine, LeaderApp::waiting(), vec![ElectionRequest::Elect])
    }

    fn on_report(
        &self,
        app: &mut LeaderApp,
        report: ElectionReport,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Vec<ElectionRequest> {
        let token = match report {
            ElectionReport::Leader { token } => Some(token),
            ElectionReport::NotLeader | ElectionReport::Follower => None,
        };
        app.leadership(token, effects, client);
        Vec::new()
    }

    fn act(
        &self,
        app: &mut LeaderApp,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Option<Vec<ElectionRequest>> {
        app.act(effects, client).map(|()| Vec::new())
    }

    fn can_act(&self, app: &LeaderApp) -> bool {
        app.can_act()
    }

    fn finished(&self, _: &LeaderApp) -> bool {
        false
    }

    fn judges() -> Vec<Judge<Self>> {
        use Expectation::{Always, Eventually, Sometimes};
        vec![
            judge("single acting master", Always, |h, _| {
                properties::single_acting_master(h, RESOURCE)
            }),
            judge("herd free", Always, |h, _| {
                properties::herd_free(h, ELECTION_LATCH_DIR)
            }),
            judge("leader elected", Eventually, |h, s| elected(h, s, "leader")),
            judge(
                "leadership changed hands after a loss",
                Sometimes,
                |h, _| sometimes::role_changed_hands_after_a_loss(h, &["leader"]),
            ),
        ]
    }
}

/// The master election workload (the ZooKeeper book's `runForMaster`): run for master, act on
/// mastership, as for the latch. Every backup watches the master's node by the recipe's design,
/// so "herd free" is not judged.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MasterWorkload;

/// The master's node.
pub const MASTER_PATH: &str = "/app/master";

impl Workload for MasterWorkload {
    type Machine = MasterMachine;
    type Request = MasterRequest;
    type Report = MasterReport;
    type App = LeaderApp;

    fn dir(&self) -> &str {
        "/app"
    }

    fn client(&self, index: usize) -> (MasterMachine, LeaderApp, Vec<MasterRequest>) {
        let machine = MasterMachine::new(MASTER_PATH, &format!("m{index}"));
        (machine, LeaderApp::waiting(), vec![MasterRequest::Run])
    }

    fn on_report(
        &self,
        app: &mut LeaderApp,
        report: MasterReport,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Vec<MasterRequest> {
        let token = match report {
            MasterReport::Master { token } => Some(token),
            MasterReport::Backup | MasterReport::Stopped => None,
        };
        app.leadership(token, effects, client);
        Vec::new()
    }

    fn act(
        &self,
        app: &mut LeaderApp,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Option<Vec<MasterRequest>> {
        app.act(effects, client).map(|()| Vec::new())
    }

    fn can_act(&self, app: &LeaderApp) -> bool {
        app.can_act()
    }

    fn finished(&self, _: &LeaderApp) -> bool {
        false
    }

    fn judges() -> Vec<Judge<Self>> {
        use Expectation::{Always, Eventually, Sometimes};
        vec![
            judge("single acting master", Always, |h, _| {
                properties::single_acting_master(h, RESOURCE)
            }),
            judge("leader elected", Eventually, |h, s| elected(h, s, "leader")),
            judge(
                "mastership changed hands after a loss",
                Sometimes,
                |h, _| sometimes::role_changed_hands_after_a_loss(h, &["leader"]),
            ),
        ]
    }
}
