//! Elastic-Job sharding and failover over the in-memory client: the average allocation lands in
//! ZooKeeper, every item runs once per cycle, a crashed instance's items fail over, take-off
//! items are skipped, a lost claim reply is read back, an item whose owner is not registered
//! fails over, and the three known-bad variants misbehave as their docs say.
#![cfg(not(madsim))]

use crate::support;

use support::paused_runtime as runtime;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zkh_model::memory::InjectedFault;
use zkh_model::{MemoryClient, MemoryEnsemble};
use zkh_recipes::elastic_job::{JobInstance, JobMachine, JobReport, JobVariant};
use zkh_recipes::real::TokioClock;
use zkh_recipes::{
    ClientEvent, CreateMode, Created, MultiError, Op, OpResult, SessionId, Stat, ZkClient, ZkError,
};

const JOB: &str = "/orders-job";
const ITEMS: u32 = 8;

struct Instance {
    id: String,
    client: Arc<MemoryClient>,
    job: JobInstance,
}

fn start(ensemble: &MemoryEnsemble, variant: JobVariant, id: &str) -> Instance {
    let client = Arc::new(ensemble.connect());
    let machine = JobMachine::new(variant, JOB, id, &format!("uuid-{id}"), ITEMS);
    let (job, driver) = JobInstance::start(Arc::clone(&client), Arc::new(TokioClock), machine);
    tokio::spawn(driver);
    Instance {
        id: id.to_owned(),
        client,
        job,
    }
}

/// Every execution reported so far: (item, cycle) to the instances that ran it, with whether
/// it ran as a failover.
type Runs = BTreeMap<(u32, u64), Vec<(String, bool)>>;

fn collect(instances: &[&Instance], runs: &mut Runs) {
    for instance in instances {
        collect_from(&instance.job, &instance.id, runs);
    }
}

/// The runs `job` (instance `id`) has reported so far.
fn collect_from(job: &JobInstance, id: &str, runs: &mut Runs) {
    while let Some(report) = job.try_report() {
        if let JobReport::Executed {
            item,
            cycle,
            failover,
            ..
        } = report
        {
            runs.entry((item, cycle))
                .or_default()
                .push((id.to_owned(), failover));
        }
    }
}

async fn settle() {
    tokio::time::sleep(Duration::from_secs(2)).await;
}

fn owner(ensemble: &MemoryEnsemble, item: u32) -> Option<String> {
    ensemble.inspect(|model| {
        let node = model
            .tree()
            .get(&format!("{JOB}/sharding/{item}/instance"))?;
        Some(String::from_utf8(node.data.clone()).expect("utf-8 owner"))
    })
}

/// Three instances `a`, `b`, `c` after their first cycle.
async fn three_after_cycle_one(ensemble: &MemoryEnsemble, variant: JobVariant) -> Vec<Instance> {
    let instances: Vec<Instance> = ["a", "b", "c"]
        .iter()
        .map(|id| start(ensemble, variant, id))
        .collect();
    settle().await;
    for instance in &instances {
        instance.job.trigger(1);
    }
    settle().await;
    instances
}

#[test]
fn the_leader_shards_by_average_allocation_and_each_item_runs_once_per_cycle() {
    runtime().block_on(async {
        let ensemble = MemoryEnsemble::new();
        let instances = three_after_cycle_one(&ensemble, JobVariant::Correct).await;
        let owners: Vec<Option<String>> = (0..ITEMS).map(|i| owner(&ensemble, i)).collect();
        let expected = ["a", "a", "b", "b", "c", "c", "a", "b"];
        assert_eq!(
            owners,
            expected.map(|id| Some(id.to_owned())).to_vec(),
            "Elastic-Job's average allocation of 8 items over 3 instances"
        );
        assert!(
            ensemble.inspect(|m| m
                .tree()
                .get(&format!("{JOB}/leader/sharding/necessary"))
                .is_none()),
            "sharding removed the flag"
        );
        for instance in &instances {
            instance.job.trigger(2);
        }
        settle().await;
        let mut runs = Runs::new();
        collect(&instances.iter().collect::<Vec<_>>(), &mut runs);
        for cycle in [1, 2] {
            for item in 0..ITEMS {
                let ran = runs.get(&(item, cycle)).cloned().unwrap_or_default();
                let owner = expected[item as usize].to_owned();
                assert_eq!(ran, vec![(owner, false)], "item {item} cycle {cycle}");
            }
        }
    });
}

/// `a` (items 0, 1, 6) crashes after `b` and `c` ran cycle 2, before it did or (with
/// `a_runs_cycle_two`) after. The marks of its items are left for cycle 3 and gone after it:
/// a crash after a cycle cuts short the next one, and a survivor that runs an item for its
/// cycle, or finds it run, while the sharding still names the dead `a`, cannot tell whether
/// it is a cycle behind, so it leaves the mark to an instance that has fired the next cycle.
async fn crash_before_cycle_two(variant: JobVariant, a_runs_cycle_two: bool) -> Runs {
    let ensemble = MemoryEnsemble::new();
    let instances = three_after_cycle_one(&ensemble, variant).await;
    let survivors: Vec<&Instance> = instances[1..].iter().collect();
    let start = if a_runs_cycle_two { 0 } else { 1 };
    for instance in &instances[start..] {
        instance.job.trigger(2);
    }
    settle().await;
    ensemble.expire(instances[0].client.session_id());
    settle().await;
    let mut runs = Runs::new();
    collect(&instances.iter().collect::<Vec<_>>(), &mut runs);
    let marked = || {
        ensemble.inspect(|m| {
            m.tree()
                .get(&format!("{JOB}/leader/failover/items"))
                .map_or(0, |n| n.children.len())
        })
    };
    if variant != JobVariant::OneItemPerIdle {
        assert_eq!(marked(), 3, "a's items are left for cycle 3");
    }
    // The next cycle is sharded over the survivors.
    for instance in &survivors {
        instance.job.trigger(3);
    }
    settle().await;
    collect(&survivors, &mut runs);
    if variant != JobVariant::OneItemPerIdle {
        assert_eq!(marked(), 0, "no item is left marked after cycle 3");
    }
    let survivors_only =
        (0..ITEMS).all(|item| owner(&ensemble, item).is_some_and(|id| id == "b" || id == "c"));
    assert!(survivors_only, "cycle 3 is sharded over b and c");
    runs
}

#[test]
fn a_crashed_instances_items_fail_over_to_the_survivors_within_the_cycle() {
    runtime().block_on(async {
        let runs = crash_before_cycle_two(JobVariant::Correct, false).await;
        for item in [0, 1, 6] {
            let ran = &runs[&(item, 2)];
            assert_eq!(ran.len(), 1, "item {item} runs once in cycle 2: {ran:?}");
            assert!(ran[0].1, "as a failover");
            assert_ne!(ran[0].0, "a");
        }
        for item in 0..ITEMS {
            assert_eq!(runs[&(item, 3)].len(), 1, "item {item} cycle 3");
        }
    });
}

#[test]
fn a_failover_after_the_crashed_instance_finished_its_cycle_runs_nothing_again() {
    runtime().block_on(async {
        let runs = crash_before_cycle_two(JobVariant::Correct, true).await;
        for item in 0..ITEMS {
            assert_eq!(
                runs[&(item, 2)].len(),
                1,
                "item {item} runs once in cycle 2"
            );
        }
    });
}

/// Cycle 2 with item 7's owner in the sharding replaced by `ghost`, an instance that no
/// listing ever showed (it registered and crashed between two listings, as the model checker
/// found). Returns the runs of cycles 2 and 3.
async fn a_ghost_owns_item_7_in_cycle_two(variant: JobVariant) -> Runs {
    let ensemble = MemoryEnsemble::new();
    let instances = three_after_cycle_one(&ensemble, variant).await;
    let admin = ensemble.connect();
    let owner_path = format!("{JOB}/sharding/7/instance");
    admin
        .set_data(&owner_path, b"ghost", -1)
        .await
        .expect("the owner node exists");
    let mut runs = Runs::new();
    collect(&instances.iter().collect::<Vec<_>>(), &mut runs);
    runs.clear();
    for cycle in [2, 3] {
        for instance in &instances {
            instance.job.trigger(cycle);
        }
        settle().await;
    }
    collect(&instances.iter().collect::<Vec<_>>(), &mut runs);
    runs
}

#[test]
fn a_cycle_fails_over_the_item_of_an_owner_that_is_not_registered() {
    runtime().block_on(async {
        let runs = a_ghost_owns_item_7_in_cycle_two(JobVariant::Correct).await;
        let ran = runs.get(&(7, 2)).cloned().unwrap_or_default();
        assert_eq!(ran.len(), 1, "item 7 runs once in cycle 2: {ran:?}");
        assert!(ran[0].1, "as a failover: {ran:?}");
        for item in 0..ITEMS {
            let ran = runs.get(&(item, 3)).cloned().unwrap_or_default();
            assert_eq!(
                ran.len(),
                1,
                "cycle 3 is sharded again: item {item}: {ran:?}"
            );
            assert!(!ran[0].1, "by its new owner: {ran:?}");
        }
    });
}

#[test]
fn trust_owners_never_runs_the_item_of_an_owner_that_is_not_registered() {
    runtime().block_on(async {
        let runs = a_ghost_owns_item_7_in_cycle_two(JobVariant::TrustOwners).await;
        for cycle in [2, 3] {
            assert!(
                !runs.contains_key(&(7, cycle)),
                "item 7 is lost in cycle {cycle}: {runs:?}"
            );
            let others = (0..7).filter(|item| runs.contains_key(&(*item, cycle)));
            assert_eq!(others.count(), 7, "the other items run in cycle {cycle}");
        }
    });
}

#[test]
fn one_item_per_idle_leaves_a_crashed_item_of_the_cycle_unrun() {
    runtime().block_on(async {
        let runs = crash_before_cycle_two(JobVariant::OneItemPerIdle, false).await;
        let ran = [0, 1, 6]
            .iter()
            .filter(|item| runs.contains_key(&(**item, 2)))
            .count();
        // Two idle survivors take one item each, or fewer: a late listener can mark an item
        // again after its failover ran, and spend a survivor's one claim on it.
        assert!(ran < 3, "a crashed item of cycle 2 is lost: {runs:?}");
    });
}

#[test]
fn no_cycle_claim_runs_an_item_twice_when_the_crashed_instance_had_finished() {
    runtime().block_on(async {
        let runs = crash_before_cycle_two(JobVariant::NoCycleClaim, true).await;
        let twice: Vec<u32> = (0..ITEMS)
            .filter(|item| runs[&(*item, 2)].len() > 1)
            .collect();
        assert_eq!(
            twice,
            vec![0, 1, 6],
            "every item of the crashed instance: {runs:?}"
        );
    });
}

/// Runs `a`'s second cycle of `variant` while another process holds item 0 (`a`'s) as a
/// failover, and returns what `a` ran.
fn second_cycle_with_item_0_held_as_a_failover(variant: JobVariant) -> Runs {
    runtime().block_on(async {
        let ensemble = MemoryEnsemble::new();
        let instances = three_after_cycle_one(&ensemble, variant).await;
        let other = ensemble.connect();
        other
            .create(
                &format!("{JOB}/sharding/0/failover"),
                b"z",
                CreateMode::Ephemeral,
            )
            .await
            .expect("failover node");
        instances[0].job.trigger(2);
        settle().await;
        let mut runs = Runs::new();
        collect(&[&instances[0]], &mut runs);
        runs
    })
}

/// Elastic-Job's take-off: an owner skips an item that another instance holds as a failover
/// (kept by `no-cycle-claim`, which has no claim to keep the item to one run).
#[test]
fn an_owner_skips_take_off_items_that_another_instance_has_taken_over() {
    let runs = second_cycle_with_item_0_held_as_a_failover(JobVariant::NoCycleClaim);
    assert!(!runs.contains_key(&(0, 2)), "item 0 is taken off: {runs:?}");
    assert_eq!(runs[&(1, 2)], vec![("a".to_owned(), false)]);
}

/// The correct job has no take-off: its claim keeps an item to one run in a cycle, whoever
/// claims it first, so an owner runs its item even while another instance holds it as a
/// failover (that taker may be a cycle behind, and would run it for the older cycle).
#[test]
fn the_correct_owner_runs_its_item_while_another_instance_holds_it_as_a_failover() {
    let runs = second_cycle_with_item_0_held_as_a_failover(JobVariant::Correct);
    assert_eq!(runs[&(0, 2)], vec![("a".to_owned(), false)], "{runs:?}");
    assert_eq!(runs[&(1, 2)], vec![("a".to_owned(), false)]);
}

/// A client that loses the reply to its `n`-th `setData` (an Elastic-Job claim): applied, then
/// `ConnectionLoss`.
struct LosesClaimReply {
    inner: MemoryClient,
    set_data_calls: AtomicUsize,
    lose_at: usize,
}

impl ZkClient for LosesClaimReply {
    fn session_id(&self) -> SessionId {
        self.inner.session_id()
    }
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created, ZkError> {
        self.inner.create(path, data, mode).await
    }
    async fn delete(&self, path: &str, version: i32) -> Result<(), ZkError> {
        self.inner.delete(path, version).await
    }
    async fn exists(&self, path: &str, watch: bool) -> Result<Option<Stat>, ZkError> {
        self.inner.exists(path, watch).await
    }
    async fn get_data(&self, path: &str, watch: bool) -> Result<(Vec<u8>, Stat), ZkError> {
        self.inner.get_data(path, watch).await
    }
    async fn get_children(&self, path: &str, watch: bool) -> Result<(Vec<String>, Stat), ZkError> {
        self.inner.get_children(path, watch).await
    }
    async fn set_data(&self, path: &str, data: &[u8], version: i32) -> Result<Stat, ZkError> {
        if self.set_data_calls.fetch_add(1, Ordering::SeqCst) + 1 == self.lose_at {
            self.inner.inject(InjectedFault::DropReply);
        }
        self.inner.set_data(path, data, version).await
    }
    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>, MultiError> {
        self.inner.multi(ops).await
    }
    async fn sync(&self, path: &str) -> Result<(), ZkError> {
        self.inner.sync(path).await
    }
    async fn next_event(&self) -> Option<ClientEvent> {
        self.inner.next_event().await
    }
    fn try_next_event(&self) -> Option<ClientEvent> {
        self.inner.try_next_event()
    }
}

#[test]
fn a_claim_whose_reply_is_lost_is_read_back_and_its_item_runs_once() {
    // One instance owns all 8 items: cycle 1 makes claims 1 to 8, cycle 2 claims 9 to 16.
    for lose_at in 1..=16 {
        runtime().block_on(async {
            let ensemble = MemoryEnsemble::new();
            let client = Arc::new(LosesClaimReply {
                inner: ensemble.connect(),
                set_data_calls: AtomicUsize::new(0),
                lose_at,
            });
            let machine = JobMachine::new(JobVariant::Correct, JOB, "a", "uuid-a", ITEMS);
            let (job, driver) =
                JobInstance::start(Arc::clone(&client), Arc::new(TokioClock), machine);
            tokio::spawn(driver);
            settle().await;
            job.trigger(1);
            settle().await;
            job.trigger(2);
            settle().await;
            let mut runs = Runs::new();
            collect_from(&job, "a", &mut runs);
            assert_eq!(
                client.set_data_calls.load(Ordering::SeqCst),
                16,
                "lose_at={lose_at}: a lost claim is read back, not made again"
            );
            for item in 0..ITEMS {
                assert_eq!(
                    runs[&(item, 1)].len(),
                    1,
                    "lose_at={lose_at}: item {item} cycle 1"
                );
                assert_eq!(
                    runs[&(item, 2)].len(),
                    1,
                    "lose_at={lose_at}: item {item} cycle 2"
                );
            }
            let claim = ensemble.inspect(|m| {
                m.tree()
                    .get(&format!("{JOB}/sharding/7"))
                    .map(|n| n.data.clone())
            });
            assert_eq!(
                claim.as_deref(),
                Some(b"2 a".as_slice()),
                "lose_at={lose_at}"
            );
        });
    }
}
