//! The five built-in recipes as [`SimRecipe`]s: what each client process runs on the simulated
//! ensemble and the properties judged on its history, run by the one host every recipe runs
//! under (`custom::host`), a user's as well.
//!
//! - **The lock** (`StockUnderLock`): each client sells from a shared stock under Curator's
//!   `InterProcessMutex` (`zkh_sim::workload::sell_under_lock`).
//! - **The latch, the job election and the book's master** (`ElectedJob<K>`): each client
//!   runs the election (`zkh_sim::workload::start_election`), and its leader runs a job on a
//!   shared fenced resource (`zkh_sim::workload::lead`); the master's parent node is made before
//!   any participant runs ([`SimRecipe::prepare`]).
//! - **The sharded job** (`ShardedJob`): each client is an Elastic-Job instance whose reports
//!   are recorded, and whose cron fires cycle `k` at `k` intervals after every instance started
//!   ([`ClientCtx::every_client_started_us`]).
//!
//! A built-in's knobs are not a `[workload.config]` table but its own application table
//! (`[workload.stock]`, `[workload.leader_job]`, `[workload.sharded]`), which the resolver reads
//! and fills in: [`Knobs::of`] takes them from the resolved scenario.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::Deserialize;
use zkh_model::properties::{self, explanation, sometimes, Class, Finding};
use zkh_model::History;

use super::{variants, ELECTION, JOB, LATCH, LOCK, MASTER};
use crate::custom::{ClientCtx, ClientRun, Moments, Property, SimRecipe};
use crate::scenario::Resolved;

/// The resource the lock's holders and the elected leaders write to.
const RESOURCE: &str = zkh_sim::paths::RESOURCE;

/// A built-in recipe's knobs, from its application table and the scenario's `fenced`.
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct Knobs {
    fenced: bool,
    initial_units: i64,
    critical_ms: u64,
    job_interval_ms: u64,
    reconcile_interval_ms: u64,
    items: u32,
    cycle_interval_ms: u64,
    settle_ms: u64,
    judged_from_ms: Option<u64>,
    leader_within_ms: u64,
}

impl Knobs {
    /// The knobs of the resolved `scenario`.
    pub(crate) fn of(scenario: &Resolved) -> Knobs {
        Knobs {
            fenced: scenario.fenced,
            initial_units: scenario.initial_units,
            critical_ms: scenario.critical_ms,
            job_interval_ms: scenario.job_interval_ms,
            reconcile_interval_ms: scenario.reconcile_interval_ms,
            items: scenario.items,
            cycle_interval_ms: scenario.cycle_interval_ms,
            settle_ms: scenario.settle_ms,
            judged_from_ms: scenario.judged_from_ms,
            leader_within_ms: scenario.leader_within_ms,
        }
    }

    fn fencing(&self) -> zkh_recipes::fencing::Fencing {
        match self.fenced {
            true => zkh_recipes::fencing::Fencing::Fenced,
            false => zkh_recipes::fencing::Fencing::Unfenced,
        }
    }

    /// "Leader elected" for `roles`: one within the bound of the heal.
    fn leader_elected(&self, roles: &'static [&'static str]) -> Property {
        let within_us = self.leader_within_ms * 1000;
        timed(
            "leader elected",
            Class::Eventually,
            move |history, moments| {
                properties::leader_elected(history, roles, moments.healed_us, within_us)
            },
        )
    }
}

/// Built-in property `name`, judged by `judge`, with the model's explanation of it.
fn built(
    name: &'static str,
    class: Class,
    judge: impl Fn(&History) -> Finding + Send + Sync + 'static,
) -> Property {
    Property::from_finding(name, class, explanation(name), judge)
}

/// Built-in property `name`, judged against the run's moments too.
fn timed(
    name: &'static str,
    class: Class,
    judge: impl Fn(&History, &Moments) -> Finding + Send + Sync + 'static,
) -> Property {
    Property::timed(name, class, explanation(name), judge)
}

/// The stock deduction under Curator's lock.
pub(crate) struct StockUnderLock;

impl SimRecipe for StockUnderLock {
    const NAME: &'static str = LOCK;
    const VARIANTS: &'static [&'static str] = variants(LOCK);
    type Config = Knobs;

    fn client(variant: &'static str, knobs: &Knobs, ctx: ClientCtx) -> ClientRun {
        use zkh_sim::workload::{sell_under_lock, Stock};
        let id = ctx.id();
        let (lock, driver) = zkh_recipes::lock::Lock::start(
            Arc::clone(ctx.client()),
            ctx.clock(),
            super::typed(variant),
            zkh_sim::paths::LOCK_DIR,
            &format!("client{id}-{:x}", ctx.seed()),
        );
        ctx.spawn(async move {
            driver.await;
        });
        ctx.knows(lock.knowledge());
        let stock = ctx.shared(|| Stock::new(knobs.initial_units));
        let (history, net) = (Arc::clone(ctx.history()), Arc::clone(ctx.net()));
        let fencing = knobs.fencing();
        let sell = sell_under_lock(id, lock, history, net, stock, fencing, knobs.critical_ms);
        Box::pin(sell)
    }

    fn properties(knobs: &Knobs) -> Vec<Property> {
        let lock_dir = zkh_sim::paths::LOCK_DIR;
        let initial_units = knobs.initial_units;
        vec![
            built("mutual exclusion", Class::Always, |history| {
                properties::mutual_exclusion(history, RESOURCE)
            }),
            built("no oversell", Class::Always, move |history| {
                properties::no_oversell(history, RESOURCE, initial_units)
            }),
            built("herd free", Class::Always, move |history| {
                properties::herd_free(history, lock_dir)
            }),
            knobs.leader_elected(&["holder"]),
            built("role changed hands after a loss", Class::Sometimes, |h| {
                sometimes::role_changed_hands_after_a_loss(h, &["holder"])
            }),
            built("a stale write was refused", Class::Sometimes, |history| {
                sometimes::stale_write_refused(history, RESOURCE)
            }),
            built("a waiter was woken", Class::Sometimes, move |history| {
                sometimes::waiter_woken(history, lock_dir)
            }),
        ]
    }

    fn queue_dir(_: &Knobs) -> Option<&'static str> {
        Some(zkh_sim::paths::LOCK_DIR)
    }
}

/// Which election an [`ElectedJob`] runs.
pub(crate) trait Election: Send + Sync + 'static {
    /// The recipe's name.
    const NAME: &'static str;
    /// Where its waiters queue, if they do. (Every Elastic-Job instance watches the leader's
    /// instance node, by design: that broadcast is how they all learn to elect again, not a
    /// herd on a lock; the queue is its latch's. Every backup of the book's master watches
    /// the master's node, by design too: no queue.)
    const QUEUE_DIR: Option<&'static str>;
    /// The election of `variant`.
    fn recipe(variant: &str) -> zkh_sim::workload::LeaderRecipe;
}

/// Curator's `LeaderLatch`.
pub(crate) struct Latch;
/// Elastic-Job's per-job election.
pub(crate) struct JobElection;
/// The ZooKeeper book's `runForMaster`.
pub(crate) struct Master;

impl Election for Latch {
    const NAME: &'static str = LATCH;
    const QUEUE_DIR: Option<&'static str> = Some(zkh_sim::paths::LATCH_DIR);
    fn recipe(variant: &str) -> zkh_sim::workload::LeaderRecipe {
        zkh_sim::workload::LeaderRecipe::Latch(super::typed(variant))
    }
}

impl Election for JobElection {
    const NAME: &'static str = ELECTION;
    const QUEUE_DIR: Option<&'static str> = Some(zkh_sim::paths::JOB_LATCH_DIR);
    fn recipe(variant: &str) -> zkh_sim::workload::LeaderRecipe {
        zkh_sim::workload::LeaderRecipe::Election(super::typed(variant))
    }
}

impl Election for Master {
    const NAME: &'static str = MASTER;
    const QUEUE_DIR: Option<&'static str> = None;
    fn recipe(variant: &str) -> zkh_sim::workload::LeaderRecipe {
        zkh_sim::workload::LeaderRecipe::Master(super::typed(variant))
    }
}

/// A scheduled job whose leader election `K` elects.
pub(crate) struct ElectedJob<K>(PhantomData<fn() -> K>);

impl<K: Election> SimRecipe for ElectedJob<K> {
    const NAME: &'static str = K::NAME;
    const VARIANTS: &'static [&'static str] = variants(K::NAME);
    type Config = Knobs;

    fn client(variant: &'static str, knobs: &Knobs, ctx: ClientCtx) -> ClientRun {
        use zkh_recipes::fencing::FencedResource;
        use zkh_sim::workload::{lead, start_election, ScheduledJob};
        let id = ctx.id();
        let client = Arc::clone(ctx.client());
        let (recipe, reconcile_ms) = (K::recipe(variant), knobs.reconcile_interval_ms);
        let mut elected = start_election(id, ctx.seed(), client, recipe, reconcile_ms);
        ctx.spawn(std::mem::replace(&mut elected.task, Box::pin(async {})));
        ctx.knows(elected.knowledge.clone());
        let resource = ctx.shared(FencedResource::new);
        let (history, net) = (Arc::clone(ctx.history()), Arc::clone(ctx.net()));
        let job = ScheduledJob {
            fencing: knobs.fencing(),
            interval_ms: knobs.job_interval_ms,
        };
        Box::pin(lead(id, elected, history, net, resource, job))
    }

    /// The book's master: its parent node, before any participant runs.
    fn prepare(_: &Knobs, client: Arc<crate::custom::Client>) -> ClientRun {
        match K::NAME {
            MASTER => Box::pin(async move { zkh_sim::master::create_parent(&client).await }),
            _ => Box::pin(async {}),
        }
    }

    fn properties(knobs: &Knobs) -> Vec<Property> {
        let mut properties = vec![
            built("single acting master", Class::Always, |history| {
                properties::single_acting_master(history, RESOURCE)
            }),
            knobs.leader_elected(&["leader"]),
            built("role changed hands after a loss", Class::Sometimes, |h| {
                sometimes::role_changed_hands_after_a_loss(h, &["leader"])
            }),
            built("a stale write was refused", Class::Sometimes, |history| {
                sometimes::stale_write_refused(history, RESOURCE)
            }),
        ];
        if let Some(dir) = K::QUEUE_DIR {
            let herd = built("herd free", Class::Always, move |history| {
                properties::herd_free(history, dir)
            });
            properties.insert(1, herd);
            properties.push(built("a waiter was woken", Class::Sometimes, move |h| {
                sometimes::waiter_woken(h, dir)
            }));
        }
        properties
    }
}

/// Elastic-Job's sharded job.
pub(crate) struct ShardedJob;

impl SimRecipe for ShardedJob {
    const NAME: &'static str = JOB;
    const VARIANTS: &'static [&'static str] = variants(JOB);
    type Config = Knobs;

    fn client(variant: &'static str, knobs: &Knobs, ctx: ClientCtx) -> ClientRun {
        use zkh_recipes::elastic_job::{JobInstance, JobMachine};
        use zkh_sim::sharded::{cron, record_reports, JOB};
        let id = ctx.id();
        let (instance, items) = (format!("client{id}"), knobs.items);
        let uuid = format!("{instance}-{:x}", ctx.seed());
        let machine = JobMachine::new(super::typed(variant), JOB, &instance, &uuid, items);
        let (job, driver) = JobInstance::start(Arc::clone(ctx.client()), ctx.clock(), machine);
        ctx.spawn(async move {
            driver.await;
        });
        // Its registrations (what each instance stands on); the job's machine names no
        // other node it knows, so the orphan check passes it by, as in the model checker.
        ctx.knows(job.knowledge());
        let job = Arc::new(job);
        let (history, net) = (Arc::clone(ctx.history()), Arc::clone(ctx.net()));
        ctx.spawn(record_reports(
            id,
            Arc::clone(&job),
            history,
            Arc::clone(&net),
        ));
        let interval_ms = knobs.cycle_interval_ms;
        Box::pin(async move {
            let origin_us = ctx.every_client_started_us().await;
            cron(job, net, origin_us, interval_ms).await;
        })
    }

    fn properties(knobs: &Knobs) -> Vec<Property> {
        let job = zkh_sim::paths::JOB_DIR;
        let (items, interval_us) = (knobs.items, knobs.cycle_interval_ms * 1000);
        let (judged_from_ms, settle_us) = (knobs.judged_from_ms, knobs.settle_ms * 1000);
        // Which cycles "no shard lost" judges (`zkh_sim::sharded`'s module docs).
        let judged_from_us = move |moments: &Moments| match judged_from_ms {
            Some(ms) => moments.started_us + ms * 1000,
            None => moments.healed_us + settle_us,
        };
        vec![
            built("no shard executed twice", Class::Always, move |history| {
                properties::no_shard_executed_twice(history, job)
            }),
            timed(
                "no shard lost",
                Class::Eventually,
                move |history, moments| {
                    let from_us = judged_from_us(moments);
                    let origin_us = moments.started_us;
                    let (from, end) = (from_us - origin_us, moments.ended_us - origin_us);
                    let cycles = properties::judged_cycles(from, end, interval_us);
                    properties::no_shard_lost_since(history, job, items, cycles, from_us)
                },
            ),
            timed(
                "runs when scheduled",
                Class::Always,
                move |history, moments| {
                    let origin_us = moments.started_us;
                    properties::runs_when_scheduled(history, job, |cycle| {
                        origin_us + cycle * interval_us
                    })
                },
            ),
            knobs.leader_elected(&["leader"]),
            built("an item failed over", Class::Sometimes, move |history| {
                sometimes::item_failed_over(history, job)
            }),
            built("role changed hands after a loss", Class::Sometimes, |h| {
                sometimes::role_changed_hands_after_a_loss(h, &["leader"])
            }),
        ]
    }
}
