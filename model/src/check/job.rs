//! Elastic-Job's sharded job under the checker ([`JobWorkload`]): each client is one job
//! instance ([`JobMachine`]: registration, the job's election, sharding, claims, failover),
//! and its application is the cron, which triggers each cycle once.
//!
//! # What is checked
//!
//! "No shard executed twice" (always): each (item, cycle) runs at most once, by one instance.
//! The [`NoCycleClaim`](JobVariant::NoCycleClaim) variant, which runs items without claiming
//! them, breaks it: an instance runs its items and its session expires, and the survivor's
//! failover runs them again in the same cycle. "Herd free" is judged on the election's latch,
//! "leader elected" at quiescence, and "an item failed over" is the `sometimes` check
//! that keeps a pass from being empty.
//!
//! # The bounds that make the space finite
//!
//! - [`JOB_ITEMS`] items and [`JOB_CYCLES`] cycle: one item for each of two instances, which
//!   is all that running an item twice needs (a third item adds a third of the states).
//! - A cycle's trigger is an `Act`: by default only when the instance is caught up.
//! - A poll of `leader/sharding/necessary` that finds it still raised returns the instance to
//!   the state it polled from (its ids are fixed per lane and session, see
//!   [`JobMachine`]): the search sees a loop and stops there. This is the one recipe whose
//!   state graph has cycles.
//! - The job's directories exist from the start ([`JobWorkload::directories`]).
//!
//! # Not checked here
//!
//! - **No shard lost.** Which cycles must run in full after a fault is a question of time:
//!   the simulator judges the cycles that start after the faults healed and the leader sharded
//!   again, which a model without time cannot say. With one expiry, the expired instance
//!   registers again in a new session. If the survivor lists the instances only after that, it
//!   sees no crash and fails nothing over, and the expired instance's items of that cycle do
//!   not run: Elastic-Job loses them too, by design, until the next cycle. So the
//!   [`OneItemPerIdle`](JobVariant::OneItemPerIdle) variant, whose fault is a lost item, is
//!   caught by the simulator, not here.
//! - No symmetry reduction ([`Workload::SYMMETRIC`] is false): the average allocation orders
//!   instances by id, so renaming two instances changes which items each owns.

use std::collections::BTreeSet;

use stateright::Expectation;
use zkh_recipes::elastic_job::{JobMachine, JobReport, JobRequest, JobVariant};
use zkh_recipes::sharding::JobPaths;
use zkh_recipes::symmetry::identity;

use super::workloads::{elected, elected_settled, judge, role};
use super::{Judge, State, Workload, ELECTION_LATCH_DIR, JOB_DIR};
use crate::history::{HistoryEntry, HistoryEvent};
use crate::properties::{self, sometimes};

/// Items per cycle.
pub const JOB_ITEMS: u32 = 2;
/// Cycles each instance's cron triggers.
pub const JOB_CYCLES: u64 = 1;

/// Elastic-Job's sharded job.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JobWorkload {
    /// The job's variant.
    pub variant: JobVariant,
}

/// A job instance's application: the cron, and what the instance reported.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JobApp {
    /// The last cycle triggered (0: none yet).
    pub triggered: u64,
    /// The token of the leadership the instance reported, if it leads.
    pub leading: Option<i64>,
}

zkh_recipes::symmetric_as_hash!(JobApp);

impl Workload for JobWorkload {
    type Machine = JobMachine;
    type Request = JobRequest;
    type Report = JobReport;
    type App = JobApp;

    const SYMMETRIC: bool = false;

    fn dir(&self) -> &str {
        ELECTION_LATCH_DIR
    }

    fn directories(&self) -> Vec<String> {
        let paths = JobPaths::new(JOB_DIR);
        let mut leaves = vec![
            ELECTION_LATCH_DIR.to_owned(),
            paths.instances(),
            zkh_recipes::path::parent_of(&paths.necessary()).to_owned(),
            paths.failover_items(),
            paths.failover_latch(),
        ];
        leaves.extend((0..JOB_ITEMS).map(|item| paths.item(item)));
        let mut directories: Vec<String> = Vec::new();
        for path in leaves
            .iter()
            .flat_map(|leaf| zkh_recipes::path::ancestors(leaf))
        {
            if !directories.contains(&path) {
                directories.push(path);
            }
        }
        directories
    }

    fn client(&self, index: usize) -> (JobMachine, JobApp, Vec<JobRequest>) {
        let instance = identity("i", index);
        let uuid = identity("c", index);
        let machine = JobMachine::new(self.variant, JOB_DIR, &instance, &uuid, JOB_ITEMS);
        let app = JobApp {
            triggered: 0,
            leading: None,
        };
        (machine, app, vec![JobRequest::Start])
    }

    fn on_report(
        &self,
        app: &mut JobApp,
        report: JobReport,
        effects: &mut Vec<HistoryEvent>,
        client: u32,
    ) -> Vec<JobRequest> {
        match report {
            JobReport::Leader { token } => {
                app.leading = Some(token);
                effects.push(role(client, "leader", Some(token)));
            }
            JobReport::NotLeader => {
                if app.leading.take().is_some() {
                    effects.push(role(client, "none", None));
                }
            }
            JobReport::Executed {
                item,
                cycle,
                token,
                failover,
            } => effects.push(HistoryEvent::Execution {
                client,
                job: JOB_DIR.into(),
                item,
                cycle,
                token,
                failover,
            }),
        }
        Vec::new()
    }

    fn act(&self, app: &mut JobApp, _: &mut Vec<HistoryEvent>, _: u32) -> Option<Vec<JobRequest>> {
        if app.triggered >= JOB_CYCLES {
            return None;
        }
        app.triggered += 1;
        Some(vec![JobRequest::Trigger {
            cycle: app.triggered,
        }])
    }

    fn can_act(&self, app: &JobApp) -> bool {
        app.triggered < JOB_CYCLES
    }

    fn finished(&self, _: &JobApp) -> bool {
        false
    }

    fn judges() -> Vec<Judge<Self>> {
        use Expectation::{Always, Eventually, Sometimes};
        vec![
            judge("no shard executed twice", Always, |h, _| {
                properties::no_shard_executed_twice(h, JOB_DIR)
            }),
            judge("herd free", Always, |h, _| {
                properties::herd_free(h, ELECTION_LATCH_DIR)
            }),
            judge("leader elected", Eventually, |h, s| elected(h, s, "leader")),
            judge("an item failed over", Sometimes, |h, _| {
                sometimes::item_failed_over(h, JOB_DIR)
            }),
        ]
    }

    /// Only "herd free" reads a client's own entries (its requests and watch events on the
    /// election's latch): runs, roles and faults are shared entries.
    fn summarize_own(
        &self,
        own: &[&HistoryEntry],
        in_flight: &BTreeSet<i64>,
    ) -> Option<Vec<HistoryEntry>> {
        Some(properties::herd_free_summary(
            own,
            ELECTION_LATCH_DIR,
            in_flight,
        ))
    }

    /// "No shard executed twice" needs every run; "leader elected" the roles it follows; "an
    /// item failed over" reads only failed-over runs, of which there is none to drop until it
    /// has happened.
    fn settled_shared(&self, shared: &[&HistoryEntry], _: &State<Self>) -> usize {
        properties::no_shard_executed_twice_settled(shared, JOB_DIR)
            .min(elected_settled(shared, "leader"))
    }
}
