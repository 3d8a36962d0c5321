//! Liveness under recoverable faults: with lost requests and replies, short pauses and
//! partitions, and leader crashes, every seed of the standard scenario fails over within the
//! bound. This is the sweep's check, run on 300 seeds in CI; `ZKH_LIVENESS_SEEDS=100000` runs
//! the long sweep of docs/performance.md (in release: `RUSTFLAGS="--cfg madsim" cargo test
//! --release -p zkh-sim --test sim liveness::`).
#![cfg(madsim)]

use std::collections::BTreeSet;

use zkh_sim::fault::{Fault, FaultPlan, NodeRef, ScriptedFault};
use zkh_sim::run::run_seed;
use zkh_sim::standard::{self, Failover, WaiterEnd};

/// Runs `seed` under the sweep's plan and says how it failed over, or panics saying which
/// layer stopped it: no waiter left (the faults ended every waiting session) is not the
/// liveness failure that a failover not within the bound is.
fn failover_ms(seed: u64) -> u64 {
    let outcome = run_seed(seed, 600, |seed| {
        standard::run(seed, standard::sweep_plan())
    });
    match outcome.failover {
        Failover::Done { after_ms, .. } => after_ms,
        Failover::NoWaiterLeft { ended } => panic!(
            "seed {seed}: no waiter was left to take over ({ended:?}); replay it with ZKH_SEED={seed}"
        ),
        Failover::NotWithinBound => panic!(
            "seed {seed} did not fail over within {} ms; replay it with ZKH_SEED={seed}",
            standard::FAILOVER_BOUND_MS
        ),
    }
}

#[test]
fn every_seed_fails_over_under_recoverable_faults() {
    let count = std::env::var("ZKH_LIVENESS_SEEDS")
        .map_or(300, |s| s.parse().expect("ZKH_LIVENESS_SEEDS is a number"));
    let seeds = zkh_sim::seed::seeds(0..count);
    let mut slowest = (0, 0);
    for &seed in &seeds {
        slowest = slowest.max((failover_ms(seed), seed));
    }
    println!(
        "liveness: {} seeds failed over; slowest {} ms (seed {})",
        seeds.len(),
        slowest.0,
        slowest.1
    );
}

/// Found on seed 7698 of the sweep's plan: client 1, next in line, was disconnected for most of
/// 5 to 26 s (lost requests and replies, a partition, four leader kills). A request made while
/// disconnected fails at once with ConnectionLoss, so its waiter spent the 200 retries it then
/// had by 26.4 s and stopped without a word, and the run reported a missed failover. The waiter
/// now retries until the run's bound. (Since a killed server's port refuses at once, that seed's
/// client reconnects sooner and retries 141 times; no seed of 0..40,000 retries 200. So the
/// regression is scripted:) client 1 hears nothing from any server for 25 s, while its
/// reconnection attempts reach them and keep its session alive; it retries 234 times and
/// still takes over.
#[test]
fn a_waiter_cut_off_for_25_seconds_retries_past_200_and_takes_over() {
    let plan = FaultPlan {
        scripted: vec![ScriptedFault {
            at_ms: 0,
            fault: Fault::Partition {
                a: BTreeSet::from([NodeRef::AllServers]),
                b: BTreeSet::from([NodeRef::Client(1)]),
                one_way: true,
                duration_ms: 25_000,
            },
        }],
        ..FaultPlan::default()
    };
    for seed in zkh_sim::seed::seeds(0..3) {
        let plan = plan.clone();
        let outcome = run_seed(seed, 600, move |seed| standard::run(seed, plan.clone()));
        let Failover::Done { after_ms, retries } = outcome.failover else {
            panic!(
                "seed {seed}: expected a failover, got {:?}",
                outcome.failover
            );
        };
        println!("seed {seed}: {after_ms} ms, {retries} retries");
        assert!(
            retries > 200 && after_ms > 25_000,
            "seed {seed}: took over after {after_ms} ms and {retries} retries: the regression \
             no longer covers the old limit of 200"
        );
    }
}

/// When the faults end every waiting session, no failover is possible and the run says so
/// apart from a failover that did not come.
#[test]
fn a_run_whose_waiters_all_expire_says_no_waiter_was_left() {
    let plan = FaultPlan {
        scripted: (1..standard::CLIENTS)
            .map(|client| ScriptedFault {
                at_ms: 100,
                fault: Fault::ExpireSession { client },
            })
            .collect(),
        ..FaultPlan::default()
    };
    let outcome = run_seed(3, 600, move |seed| standard::run(seed, plan.clone()));
    let Failover::NoWaiterLeft { ended } = outcome.failover else {
        panic!("expected no waiter left, got {:?}", outcome.failover);
    };
    let clients: Vec<u32> = ended.iter().map(|(client, _)| *client).collect();
    assert_eq!(clients, vec![1, 2, 3, 4]);
    assert!(ended
        .iter()
        .all(|(_, why)| matches!(why, WaiterEnd::SessionEnded | WaiterEnd::NodeGone)));
}
