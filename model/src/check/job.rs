//! Elastic-Job's sharded job under the checker ([`JobWorkload`]): each client is one job
//! instance ([`JobMachine`]: registration, the job's election, sharding, claims, failover),
//! and its application is the cron, which triggers each cycle once.
//!
//! # What is checked
//!
//! "No shard executed twice" (always): each (item, cycle) runs at most once, by one instance.
//! The [`NoCycleClaim`](JobVariant::NoCycleClaim) variant, which runs items without claiming
//! them, breaks it: an instance runs its items and its session expires, and the survivor's
//! failover runs them again in the same cycle. It breaks it with no fault too: the leader
//! shards again as the other instance joins, after it read that an item is its own and before
//! it ran it, and gives the item to the newcomer, which runs it in the same first cycle.
//! "Herd free" is judged on the election's latch, "leader elected" at quiescence, and "an item
//! failed over" is the `sometimes` check that keeps a pass from being empty.
//!
//! "No shard lost" is judged at quiescence, on the *settled* cycles: the second and later.
//! Whether a cycle must run in full is a question of time. While instances join, the leader
//! may shard again after another instance read which items were its own, and that instance's
//! items of the cycle are not run (Elastic-Job loses them too, and runs them next cycle). The
//! simulator therefore judges the cycles that start after the faults healed and the leader
//! sharded again. A model without time says it this way:
//! - the first cycle fires at each instance as soon as it is caught up, wherever the others
//!   are;
//! - a later one fires only at a settled moment ([`Workload::act_waits_for_settled`]): nothing
//!   in flight to or from any instance, every instance's listeners at rest (registered,
//!   the crash listener done, no failover or retry under way; [`Workload::at_rest`]), and
//!   every live instance has fired the cycle before and run it ([`Workload::act_waits_for`];
//!   one that fired this cycle already may be polling for its sharding), as a cron fires long
//!   after the last cycle ended. (The instances still fire a cycle one at a time, at settled
//!   moments of their own.) An instance blocked on the sharding (`necessary` is raised and it
//!   polls) does not hold the next cycle: only the leader's next trigger shards, and held, the
//!   two would wait for each other, a loop no property judges;
//! - past the judged cycles, the leader has one spare trigger, which fires only while a
//!   sharding is necessary ([`Workload::can_act`]): a real cron fires for ever, and without
//!   it an instance blocked in the last cycle (the flag raised after the leader ran it) would
//!   poll for ever, unjudged. The spare cycle shards, the blocked cycle resumes, and the state
//!   where all is done is judged (the spare cycle itself is not). Judging the loop instead, as
//!   if the future ended there, is wrong: the next sharding may give the blocked instance its
//!   item back, to run late.
//!
//! Faults still strike at any point, a settled cycle's own included. With a crash
//! (`crash=1`: an instance dies while idle and never comes back), every item of every settled
//! cycle must run, by its owner, by a survivor that fails it over, or after a new sharding. An
//! expiry is different: the expired instance registers again in a new session, and if the
//! survivor lists the instances only after that, it sees no crash and fails nothing over, in
//! Elastic-Job too. So a state where an instance lost its session and went on in a new one is
//! not judged for lost shards.
//!
//! With three instances, walks ([`walk`](super::walk)) show "no shard lost" failing for
//! Elastic-Job's resharding: instances fire their second cycle one after another, one of them
//! crashes in between, and the leader, firing last, shards again (the crash raised
//! `necessary`) and gives its own item, not yet run in that cycle, to an instance that has run
//! the cycle already. The correct job runs such a moved item itself once it has written the
//! new sharding. With two instances the survivor owns every item after a crash, so the
//! exhaustive check cannot show it.
//!
//! Three variants break "no shard lost":
//! - [`OneItemPerIdle`](JobVariant::OneItemPerIdle): of three items, the instance that owns two
//!   crashes before its second cycle, and the survivor fails over only one of them;
//! - [`TrustOwners`](JobVariant::TrustOwners): an instance registers and crashes between two
//!   listings of the other's crash listener, and the leader shards with it as an owner;
//! - [`UncoveredReshard`](JobVariant::UncoveredReshard): the resharding above (walks with
//!   three instances only).
//!
//! # The bounds that make the space finite
//!
//! - [`JOB_ITEMS`] items and [`JOB_CYCLES`] cycle by default (`--items`, `--cycles` on the
//!   command line): one item for each of two instances, which is all that running an item
//!   twice needs (a third item adds a third of the states). "No shard lost" needs two cycles.
//! - A cycle's trigger is an `Act`: by default only when the instance is caught up.
//! - A poll of `leader/sharding/necessary` that finds it still raised returns the instance to
//!   the state it polled from (its ids are fixed per lane and session, see
//!   [`JobMachine`]): the search sees a loop and stops there. This is the one recipe whose
//!   state graph has cycles.
//! - The job's directories exist from the start ([`JobWorkload::directories`]).
//!
//! # Not checked here
//!
//! - No symmetry reduction ([`Workload::SYMMETRIC`] is false): the average allocation orders
//!   instances by id, so renaming two instances changes which items each owns.
//! - A crash in the middle of an instance's work: the server's side of it is an expiry at that
//!   point, and an instance that crashes between claiming an (item, cycle) and running it
//!   takes that run with it (the claim is what makes a run happen at most once).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use stateright::Expectation;
use zkh_recipes::elastic_job::{JobMachine, JobReport, JobRequest, JobVariant};
use zkh_recipes::machine::Machine;
use zkh_recipes::sharding::JobPaths;
use zkh_recipes::symmetry::identity;

use super::workloads::{elected, holders_now, judge, leadership_ends, role};
use super::{Judge, Recorded, State, Workload, ELECTION_LATCH_DIR, JOB_DIR};
use crate::history::{HistoryEntry, HistoryEvent};
use crate::properties::{self, sometimes, Class, Finding};
use crate::zookeeper::ZkModel;

/// Items per cycle, by default.
pub const JOB_ITEMS: u32 = 2;
/// Cycles each instance's cron triggers, by default.
pub const JOB_CYCLES: u64 = 1;

/// Elastic-Job's sharded job.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JobWorkload {
    /// The job's variant.
    pub variant: JobVariant,
    /// Items per cycle.
    pub items: u32,
    /// Cycles each instance's cron triggers.
    pub cycles: u64,
}

impl JobWorkload {
    /// `variant` over [`JOB_ITEMS`] items and [`JOB_CYCLES`] cycle.
    pub fn new(variant: JobVariant) -> JobWorkload {
        JobWorkload {
            variant,
            items: JOB_ITEMS,
            cycles: JOB_CYCLES,
        }
    }
}

/// "No shard lost", judged at quiescence: every item ran in every settled cycle (the second
/// and later), unless an instance lost its session and registered again (see the module docs).
fn no_shard_lost(history: &Recorded<'_>, state: &State<JobWorkload>) -> Finding {
    let not_judged = |why: &str| Finding {
        property: "no shard lost",
        class: Class::Eventually,
        holds: true,
        detail: format!("not judged: {why}"),
        evidence: Vec::new(),
        at_us: None,
    };
    let Some(seat) = state.seats.first() else {
        return not_judged("no instances");
    };
    let cycles = seat.client.app.cycles;
    if cycles < 2 {
        return not_judged("only the first cycle ran, and it is not a settled one");
    }
    if state.seats.iter().any(|seat| seat.client.rejoined) {
        return not_judged("an instance lost its session and registered again");
    }
    let items = seat.client.machine.items();
    properties::no_shard_lost(history, JOB_DIR, items, 2..=cycles)
}

/// Whether `machine`'s cycle is blocked on a sharding that only the leader's next trigger
/// writes: `necessary` is raised, and this instance polls it and does not lead (a leader's
/// next poll shards).
fn waits_for_the_leaders_trigger(machine: &JobMachine, zk: &ZkModel) -> bool {
    machine.blocked_on_sharding() && !machine.is_leader() && necessary_raised(zk)
}

/// The job's `leader/sharding/necessary`, built once: the checker asks for it in every state
/// where the leader has fired its last judged cycle.
static NECESSARY: LazyLock<String> = LazyLock::new(|| JobPaths::new(JOB_DIR).necessary());

/// Whether `leader/sharding/necessary` exists on the server.
fn necessary_raised(zk: &ZkModel) -> bool {
    zk.tree().get(&NECESSARY).is_some()
}

/// A job instance's application: the cron, and what the instance reported.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JobApp {
    /// The last cycle triggered (0: none yet).
    pub triggered: u64,
    /// The cycles its cron triggers (the same for every instance).
    pub cycles: u64,
    /// The token of the leadership the instance reported, if it leads.
    pub leading: Option<i64>,
}

zkh_recipes::symmetric_as_hash!(JobApp);

impl JobWorkload {
    /// Whether `app`'s cron has the spare trigger left: one cycle past the judged ones, for the
    /// leader only, and only where a later cycle is judged at all. A real cron fires for ever;
    /// the model stops after `cycles`, and an instance blocked on a sharding in the last one
    /// (the flag raised after the leader ran it) would otherwise poll for ever, a loop no
    /// property judges. The leader's spare cycle writes that sharding, the blocked cycle
    /// resumes and is judged; the spare cycle itself is not.
    fn has_a_spare_trigger(&self, app: &JobApp) -> bool {
        self.cycles >= 2 && app.triggered == self.cycles && app.leading.is_some()
    }
}

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
        leaves.extend((0..self.items).map(|item| paths.item(item)));
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
        let machine = JobMachine::new(self.variant, JOB_DIR, &instance, &uuid, self.items);
        let app = JobApp {
            triggered: 0,
            cycles: self.cycles,
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
            JobReport::NotLeader => leadership_ends(&mut app.leading, effects, client),
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
        if app.triggered >= self.cycles && !self.has_a_spare_trigger(app) {
            return None;
        }
        app.triggered += 1;
        Some(vec![JobRequest::Trigger {
            cycle: app.triggered,
        }])
    }

    /// The judged cycles, and then the leader's spare trigger while a sharding is necessary
    /// (`has_a_spare_trigger`).
    fn can_act(&self, app: &JobApp, zk: &ZkModel) -> bool {
        app.triggered < self.cycles || (self.has_a_spare_trigger(app) && necessary_raised(zk))
    }

    fn may_act_on_the_server(&self, app: &JobApp) -> bool {
        self.has_a_spare_trigger(app)
    }

    /// The first cycle fires as soon as the instance is caught up, wherever the others are; a
    /// later one only at a settled moment, as a cron fires long after the last cycle settled.
    fn act_waits_for_settled(&self, app: &JobApp) -> bool {
        app.triggered >= 1
    }

    /// Nor before every live instance has fired the cycle before and run it (an instance that
    /// fired this cycle already may still be polling for its sharding): a cron fires each
    /// cycle at about the same time everywhere, long after the last one ended, so an instance
    /// blocked on the sharding or retrying does not see the next cycles fire one after another.
    fn act_waits_for(
        &self,
        app: &JobApp,
        other_app: &JobApp,
        other: &JobMachine,
        zk: &ZkModel,
    ) -> bool {
        other_app.triggered < app.triggered
            || (other_app.triggered == app.triggered
                && other.in_cycle()
                && !waits_for_the_leaders_trigger(other, zk))
    }

    /// An instance is at rest when its listeners are: registered, its crash listener done, no
    /// failover under way. (Its cron's lane may poll for the sharding: the leader's cycle ends
    /// that.)
    fn at_rest(&self, machine: &JobMachine) -> bool {
        machine.listeners_idle()
    }

    const CLAIMS: bool = true;

    fn claimed_nodes(&self, machine: &JobMachine) -> Vec<String> {
        machine.claimed_ephemerals().unwrap_or_default()
    }

    const SCHEDULED: bool = true;

    fn fired_cycle(&self, app: &JobApp) -> u64 {
        app.triggered
    }

    fn newest_cycle_run(&self, machine: &JobMachine) -> u64 {
        machine.newest_cycle_run()
    }

    fn finished(&self, _: &JobApp) -> bool {
        false
    }

    fn crashed(&self, app: &mut JobApp, effects: &mut Vec<HistoryEvent>, client: u32) {
        leadership_ends(&mut app.leading, effects, client);
    }

    fn judges() -> &'static [Judge<Self>] {
        use Expectation::{Always, Eventually, Sometimes};
        static JUDGES: LazyLock<Vec<Judge<JobWorkload>>> = LazyLock::new(|| {
            vec![
                judge("no shard executed twice", Always, |h, _| {
                    properties::no_shard_executed_twice(h, JOB_DIR)
                }),
                judge("herd free", Always, |h, _| {
                    properties::herd_free(h, ELECTION_LATCH_DIR)
                }),
                judge("leader elected", Eventually, |h, s| elected(h, s, "leader")),
                judge("no shard lost", Eventually, no_shard_lost),
                judge("an item failed over", Sometimes, |h, _| {
                    sometimes::item_failed_over(h, JOB_DIR)
                }),
            ]
        });
        &JUDGES
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

    /// What the job's judges read of the shared history, and nothing else:
    /// - the role of each instance that leads now (`holders_now`: "leader elected" asks only
    ///   whether someone does);
    /// - each run, in the order of (item, cycle): "no shard executed twice" and "no shard
    ///   lost" ask only which (item, cycle) ran and how often, so the instance, the token and
    ///   whether it was failed over, which no judge reads again, are made 0 and false. ("An
    ///   item failed over" reads that once, when the run joins the history: a state is judged
    ///   before its history is put in this form, and a `sometimes` verdict, once it holds, is
    ///   inherited.)
    ///
    /// Faults and session events go: no judge of the job reads them ("herd free" reads the
    /// instances' own logs, where each keeps its own session's end). A counterexample is
    /// replayed without forgetting, and so explained with its whole history.
    fn canonical_shared(
        &self,
        shared: &[&HistoryEntry],
        _: &State<Self>,
    ) -> Option<Vec<HistoryEvent>> {
        let mut runs = Vec::new();
        for entry in shared {
            if let HistoryEvent::Execution {
                job, item, cycle, ..
            } = &entry.event
            {
                if job == JOB_DIR {
                    runs.push((*item, *cycle));
                }
            }
        }
        runs.sort_unstable();
        let runs = runs
            .into_iter()
            .map(|(item, cycle)| HistoryEvent::Execution {
                client: 0,
                job: JOB_DIR.into(),
                item,
                cycle,
                token: 0,
                failover: false,
            });
        Some(holders_now(shared, "leader").chain(runs).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkh_recipes::request::Request;
    use zkh_recipes::types::CreateMode;

    /// A server whose job has `leader/sharding/necessary` raised, or not.
    fn server(necessary: bool) -> ZkModel {
        let mut zk = ZkModel::new();
        let session = zk.open_session();
        if necessary {
            let necessary = JobPaths::new(JOB_DIR).necessary();
            for path in zkh_recipes::path::ancestors(&necessary) {
                let create = Request::Create {
                    path,
                    data: Vec::new(),
                    mode: CreateMode::Persistent,
                };
                zk.apply(session, &create);
            }
        }
        zk
    }

    #[test]
    fn only_the_leader_has_a_spare_trigger_and_only_while_a_sharding_is_necessary() {
        let workload = JobWorkload {
            cycles: 2,
            ..JobWorkload::new(JobVariant::Correct)
        };
        let app = |triggered, leading| JobApp {
            triggered,
            cycles: 2,
            leading,
        };
        let (raised, lowered) = (server(true), server(false));
        assert!(necessary_raised(&raised) && !necessary_raised(&lowered));
        assert!(workload.can_act(&app(1, None), &lowered), "a judged cycle");
        assert!(workload.can_act(&app(2, Some(7)), &raised), "the spare");
        assert!(
            !workload.can_act(&app(2, Some(7)), &lowered),
            "nothing to shard"
        );
        assert!(!workload.can_act(&app(2, None), &raised), "not the leader");
        assert!(
            !workload.can_act(&app(3, Some(7)), &raised),
            "one spare only"
        );
        let mut spare = app(2, Some(7));
        let mut effects = Vec::new();
        let requests = workload.act(&mut spare, &mut effects, 0);
        assert_eq!(requests, Some(vec![JobRequest::Trigger { cycle: 3 }]));
        let one_cycle = JobWorkload::new(JobVariant::Correct);
        let lone = JobApp {
            triggered: 1,
            cycles: 1,
            leading: Some(7),
        };
        assert!(
            !one_cycle.can_act(&lone, &raised),
            "no spare where no later cycle is judged"
        );
    }
}
