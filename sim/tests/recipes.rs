//! The recipes on the simulated ensemble (the lock, the latch, the job election, the sharded
//! Elastic-Job job): the correct ones hold every property over many seeds
//! with random faults, and each known-bad variant is caught within a stated number of seeds.
#![cfg(madsim)]

use std::collections::BTreeSet;

use zkh_model::properties::Class;
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::fencing::Fencing;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_sim::fault::{
    Fault, FaultPlan, OpKind, RandomFaults, ScriptedFault, Trigger, TriggeredFault,
};
use zkh_sim::run::run_seed;
use zkh_sim::sharded::{sharded_job, ShardedConfig};
use zkh_sim::standard::{harsh_plan, recipe_plan};

use zkh_sim::workload::{self, LeaderRecipe, WorkloadConfig, WorkloadOutcome};

fn seeds() -> u64 {
    std::env::var("ZKH_RECIPE_SEEDS")
        .map_or(500, |s| s.parse().expect("ZKH_RECIPE_SEEDS is a number"))
}

/// Runs `seeds` seeds; every always/eventually property must hold on each, and every sometimes
/// check must happen on at least one.
fn sweep(name: &str, run: impl Fn(u64) -> WorkloadOutcome) {
    let count = seeds();
    let mut happened = BTreeSet::new();
    let mut sometimes = BTreeSet::new();
    for seed in zkh_sim::seed::seeds(0..count) {
        let outcome = run(seed);
        if let Some(violation) = outcome.violation() {
            panic!(
                "{name}, seed {seed}: {} violated: {}",
                violation.property, violation.detail
            );
        }
        for finding in outcome
            .findings
            .iter()
            .filter(|f| f.class == Class::Sometimes)
        {
            sometimes.insert(finding.property);
            if finding.holds {
                happened.insert(finding.property);
            }
        }
    }
    let missing: Vec<_> = sometimes.difference(&happened).collect();
    assert!(
        missing.is_empty(),
        "{name}: over {count} seeds these never happened: {missing:?}"
    );
    println!("{name}: {count} seeds with random faults, every property held; sometimes checks all happened");
}

/// The first seed, below `within`, whose run violates `property`.
fn caught(within: u64, property: &str, run: impl Fn(u64) -> WorkloadOutcome) -> u64 {
    for seed in zkh_sim::seed::seeds(0..within) {
        if !run(seed).finding(property).holds {
            return seed;
        }
    }
    panic!("{property} was not violated within {within} seeds");
}

#[test]
fn the_correct_lock_with_fencing_holds_every_property() {
    sweep("lock", |seed| {
        run_seed(seed, 600, |s| {
            workload::stock(
                s,
                LockVariant::Correct,
                WorkloadConfig::default(),
                recipe_plan(),
            )
        })
    });
}

#[test]
fn the_correct_latch_with_fencing_holds_every_property() {
    sweep("latch", |seed| {
        run_seed(seed, 600, |s| {
            workload::job(
                s,
                LatchVariant::Correct,
                WorkloadConfig::default(),
                recipe_plan(),
            )
        })
    });
}

#[test]
fn herd_is_caught_by_herd_free_on_the_first_seed() {
    let seed = caught(1, "herd free", |seed| {
        run_seed(seed, 600, |s| {
            workload::stock(
                s,
                LockVariant::Herd,
                WorkloadConfig::default(),
                FaultPlan::default(),
            )
        })
    });
    assert_eq!(seed, 0);
}

/// Long GC pauses of holders: the stale holder wakes up inside its critical section.
fn pauses() -> FaultPlan {
    FaultPlan {
        random: Some(RandomFaults {
            pause_client_per_s: 0.3,
            pause_ms: 6000,
            ..RandomFaults::default()
        }),
        ..FaultPlan::default()
    }
}

#[test]
fn unfenced_is_caught_by_mutual_exclusion_within_20_seeds() {
    let unfenced = WorkloadConfig {
        fencing: Fencing::Unfenced,
        ..WorkloadConfig::default()
    };
    let seed = caught(20, "mutual exclusion", |seed| {
        run_seed(seed, 600, {
            let config = unfenced.clone();
            move |s| workload::stock(s, LockVariant::Correct, config, pauses())
        })
    });
    println!("unfenced: mutual exclusion violated at seed {seed}");
    // The same pauses against a fenced resource: the stale writes are refused.
    for seed in zkh_sim::seed::seeds(0..20) {
        let outcome = run_seed(seed, 600, |s| {
            workload::stock(s, LockVariant::Correct, WorkloadConfig::default(), pauses())
        });
        assert!(
            outcome.violation().is_none(),
            "fenced, seed {seed}: {:?}",
            outcome.violation()
        );
    }
}

#[test]
fn unprotected_is_caught_by_leader_elected_on_the_first_seed() {
    // The reply to the third create under the lock directory is lost.
    let plan = FaultPlan {
        triggered: vec![TriggeredFault {
            when: Trigger {
                client: Some(1),
                op: OpKind::Create,
                path_prefix: "/locks/stock/".into(),
                nth: 3,
            },
            fault: Fault::DropReply { client: 1 },
        }],
        ..FaultPlan::default()
    };
    let run = |variant, seed| {
        let plan = plan.clone();
        run_seed(seed, 600, move |s| {
            workload::stock(s, variant, WorkloadConfig::default(), plan)
        })
    };
    assert_eq!(
        caught(1, "leader elected", |seed| run(
            LockVariant::Unprotected,
            seed
        )),
        0
    );
    assert!(
        run(LockVariant::Correct, 0).violation().is_none(),
        "protection finds the node the lost reply created"
    );
}

/// Three participants; at 3 s, `fault` hits `target`; the resource is unfenced, so two
/// leaders show as an older term acting after a newer one.
fn latch_run(variant: LatchVariant, seed: u64, fault: Fault) -> WorkloadOutcome {
    let plan = FaultPlan {
        scripted: vec![ScriptedFault { at_ms: 3000, fault }],
        ..FaultPlan::default()
    };
    let config = WorkloadConfig {
        fencing: Fencing::Unfenced,
        ..WorkloadConfig::default()
    };
    run_seed(seed, 600, move |s| workload::job(s, variant, config, plan))
}

/// Which participant leads, and which waits in the middle, depends on the seed (the order their
/// creates land), so each seed aims `fault` at every client in turn: run `3 * seed + target`.
fn latch_runs(variant: LatchVariant, fault: fn(u32) -> Fault) -> impl Fn(u64) -> WorkloadOutcome {
    move |run| latch_run(variant, run / 3, fault((run % 3) as u32))
}

#[test]
fn trust_predecessor_is_caught_by_single_acting_master_within_one_seed() {
    // A waiter crashes; when the one behind it sees its node go, it leads beside the leader.
    let crash: fn(u32) -> Fault = |client| Fault::CrashClient { client };
    let run = caught(
        3,
        "single acting master",
        latch_runs(LatchVariant::TrustPredecessor, crash),
    );
    println!("trust-predecessor: caught at seed 0, crashing client {run}");
    for run in 0..3 {
        assert!(
            latch_runs(LatchVariant::Correct, crash)(run)
                .violation()
                .is_none(),
            "correct latch, run {run}"
        );
    }
}

#[test]
fn no_owner_check_is_caught_by_single_acting_master_within_one_seed() {
    // CURATOR-696: a client is told its session expired (KillSession); the server keeps it.
    let kill: fn(u32) -> Fault = |client| Fault::ClientSideExpiry { client };
    let run = caught(
        3,
        "single acting master",
        latch_runs(LatchVariant::NoOwnerCheck, kill),
    );
    println!("no-owner-check: caught at seed 0, expiring client {run}");
    for run in 0..3 {
        assert!(
            latch_runs(LatchVariant::Correct, kill)(run)
                .violation()
                .is_none(),
            "correct latch, run {run}"
        );
    }
}

#[test]
fn the_correct_job_election_with_fencing_holds_every_property() {
    let recipe = LeaderRecipe::Election(ElectionVariant::Correct);
    sweep("job election", |seed| {
        run_seed(seed, 600, move |s| {
            workload::leader_job(s, recipe, WorkloadConfig::default(), recipe_plan())
        })
    });
}

/// Every instance watches the leader's instance node; when its session expires they all elect
/// at once. With slow event threads (watch events 2 s late), a deposed leader keeps acting.
fn election_runs(variant: ElectionVariant) -> impl Fn(u64) -> WorkloadOutcome {
    move |run| {
        let (seed, target) = (run / 3, (run % 3) as u32);
        let mut scripted: Vec<ScriptedFault> = (0..3)
            .map(|client| ScriptedFault {
                at_ms: 0,
                fault: Fault::DelayWatch {
                    client,
                    delay_ms: 2000,
                    duration_ms: 60_000,
                },
            })
            .collect();
        scripted.push(ScriptedFault {
            at_ms: 3000,
            fault: Fault::ExpireSession { client: target },
        });
        let plan = FaultPlan {
            scripted,
            ..FaultPlan::default()
        };
        let config = WorkloadConfig {
            fencing: Fencing::Unfenced,
            ..WorkloadConfig::default()
        };
        run_seed(seed, 600, move |s| {
            workload::leader_job(s, LeaderRecipe::Election(variant), config, plan)
        })
    }
}

#[test]
fn check_then_write_is_caught_by_single_acting_master_within_two_seeds() {
    let run = caught(
        6,
        "single acting master",
        election_runs(ElectionVariant::CheckThenWrite),
    );
    println!(
        "check-then-write: caught at run {run} (seed {}, expiring client {})",
        run / 3,
        run % 3
    );
    for run in 0..6 {
        let outcome = election_runs(ElectionVariant::Correct)(run);
        assert!(
            outcome.violation().is_none(),
            "the election under its latch, run {run}: {:?}",
            outcome.violation()
        );
    }
}

#[test]
fn the_correct_sharded_job_holds_every_property() {
    sweep("sharded job", |seed| {
        run_seed(seed, 600, |s| {
            sharded_job(
                s,
                JobVariant::Correct,
                ShardedConfig::default(),
                harsh_plan(),
            )
        })
    });
}

/// Client 0 (`client0`, which owns items 0, 1 and 6 of 8) crashes at `crash_at_ms`; the crash
/// is the only fault, and every cycle from the second on is judged.
fn crash_run(variant: JobVariant, seed: u64, crash_at_ms: u64) -> WorkloadOutcome {
    let plan = FaultPlan {
        scripted: vec![ScriptedFault {
            at_ms: crash_at_ms,
            fault: Fault::CrashClient { client: 0 },
        }],
        ..FaultPlan::default()
    };
    let config = ShardedConfig {
        judged_from_ms: Some(15_000),
        fault_phase_ms: 40_000,
        ..ShardedConfig::default()
    };
    run_seed(seed, 600, move |s| sharded_job(s, variant, config, plan))
}

/// The first seed below `within` where `variant` violates `property` with the crash at
/// `crash_at_ms`; the correct recipe holds everything on those seeds.
fn caught_in_crash(variant: JobVariant, property: &str, crash_at_ms: u64, within: u64) -> u64 {
    for seed in zkh_sim::seed::seeds(0..within) {
        let correct = crash_run(JobVariant::Correct, seed, crash_at_ms);
        assert!(
            correct.violation().is_none(),
            "correct recipe, seed {seed}: {:?}",
            correct.violation()
        );
        if !crash_run(variant, seed, crash_at_ms)
            .finding(property)
            .holds
        {
            return seed;
        }
    }
    panic!("{variant:?}: {property} not violated within {within} seeds");
}

#[test]
fn one_item_per_idle_is_caught_by_no_shard_lost_on_the_first_seed() {
    // The crash comes 1 s before cycle 3 fires: client 0's items of cycle 3 must fail over.
    let seed = caught_in_crash(JobVariant::OneItemPerIdle, "no shard lost", 29_000, 1);
    assert_eq!(seed, 0);
    let correct = crash_run(JobVariant::Correct, 0, 29_000);
    assert!(
        correct.finding("an item failed over").holds,
        "the correct recipe saved the crash's cycle by failover"
    );
}

#[test]
fn no_cycle_claim_is_caught_by_no_shard_executed_twice_on_the_first_seed() {
    // The crash comes 1 s after cycle 3 ran: the failover must not run client 0's items again.
    let seed = caught_in_crash(
        JobVariant::NoCycleClaim,
        "no shard executed twice",
        31_000,
        1,
    );
    assert_eq!(seed, 0);
}
