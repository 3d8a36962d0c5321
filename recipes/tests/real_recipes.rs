//! The recipes against the real ZooKeeper that `scripts/with-zookeeper` starts (normal build).
#![cfg(not(madsim))]

use crate::common;

use common::server;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zkh_recipes::elastic_job::{JobInstance, JobMachine, JobReport, JobVariant};
use zkh_recipes::latch::{Latch, LatchVariant};
use zkh_recipes::lock::{Lock, LockVariant};
use zkh_recipes::real::{RealClient, TokioClock};

/// Stops the recipes' drivers before the test's runtime shuts down. Left running, a driver can
/// still be polled on one worker while the shutdown drops the client's session task on
/// another, and the client crate's watcher then panics on its cancelled channel (printed, and
/// harmless to the verdict, but noise in the log).
async fn stop_drivers<T>(drivers: Vec<tokio::task::JoinHandle<T>>) {
    for driver in drivers {
        driver.abort();
        // Cancelled, or it had ended: either way it no longer runs.
        let _ = driver.await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sessions_fifty_contended_lock_cycles_each_never_overlap() {
    let Some(connect) = server() else { return };
    let dir = format!("/zkh-real-lock-{}", std::process::id());
    let inside = Arc::new(AtomicBool::new(false));
    let cycles = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    let mut drivers = Vec::new();
    for session in 0..3 {
        let client = Arc::new(
            RealClient::connect(&connect, 10_000)
                .await
                .expect("connect"),
        );
        let (lock, driver) = Lock::start(
            client,
            Arc::new(TokioClock),
            LockVariant::Correct,
            &dir,
            &format!("s{session}"),
        );
        drivers.push(tokio::spawn(driver));
        let (inside, cycles) = (Arc::clone(&inside), Arc::clone(&cycles));
        tasks.push(tokio::spawn(async move {
            let mut last_token = 0;
            for _ in 0..50 {
                let token = lock
                    .acquire(Some(30_000))
                    .await
                    .expect("the lock within 30 s");
                assert!(token > last_token, "tokens increase for one session too");
                last_token = token;
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                tokio::time::sleep(Duration::from_millis(1)).await;
                inside.store(false, Ordering::SeqCst);
                cycles.fetch_add(1, Ordering::SeqCst);
                lock.release().await.expect("release");
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("done within 120 s")
            .expect("no panic");
    }
    assert_eq!(cycles.load(Ordering::SeqCst), 150);
    stop_drivers(drivers).await;
    println!("real lock: 3 sessions x 50 contended cycles, no overlap");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_fails_over_when_its_leader_closes() {
    let Some(connect) = server() else { return };
    let dir = format!("/zkh-real-latch-{}", std::process::id());
    let mut latches = Vec::new();
    let mut drivers = Vec::new();
    for participant in 0..3 {
        let client = Arc::new(
            RealClient::connect(&connect, 10_000)
                .await
                .expect("connect"),
        );
        let name = format!("p{participant}");
        let (latch, driver) = Latch::start(
            client,
            Arc::new(TokioClock),
            LatchVariant::Correct,
            &dir,
            &name,
            &name,
        );
        drivers.push(tokio::spawn(driver));
        latches.push(latch);
        // Join in order, so the first participant leads.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let first = tokio::time::timeout(Duration::from_secs(10), latches[0].await_leadership())
        .await
        .expect("the first participant leads within 10 s")
        .expect("leads");
    latches[0].close().await;
    let second = tokio::time::timeout(Duration::from_secs(10), latches[1].await_leadership())
        .await
        .expect("the next participant leads within 10 s of the close")
        .expect("leads");
    assert!(
        second > first,
        "the new leader's token is newer: {second} > {first}"
    );
    stop_drivers(drivers).await;
    println!("real latch: leadership moved from p0 (token {first}) to p1 (token {second})");
}

/// Waits (at most 20 s) for `job` to report running `item` of `cycle`; returns whether it ran
/// as a failover.
async fn executed(job: &JobInstance, item: u32, cycle: u64) -> bool {
    let wait = async {
        loop {
            match job.next_report().await.expect("the instance runs") {
                JobReport::Executed {
                    item: i,
                    cycle: c,
                    failover,
                    ..
                } if (i, c) == (item, cycle) => return failover,
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("item {item} of cycle {cycle} ran within 20 s"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elastic_job_item_fails_over_when_its_instance_closes() {
    let Some(connect) = server() else { return };
    let job_root = format!("/zkh-real-job-{}", std::process::id());
    let start = |client: Arc<RealClient>, id: &str| {
        let machine = JobMachine::new(JobVariant::Correct, &job_root, id, id, 2);
        JobInstance::start(client, Arc::new(TokioClock), machine)
    };
    let a_client = Arc::new(
        RealClient::connect(&connect, 10_000)
            .await
            .expect("connect"),
    );
    let (a, a_driver) = start(Arc::clone(&a_client), "a");
    let a_driver = tokio::spawn(a_driver);
    let b_client = Arc::new(
        RealClient::connect(&connect, 10_000)
            .await
            .expect("connect"),
    );
    let (b, b_driver) = start(b_client, "b");
    let b_driver = tokio::spawn(b_driver);
    // Both registered: the first cycle is sharded over both (a: item 0, b: item 1).
    tokio::time::sleep(Duration::from_secs(1)).await;
    a.trigger(1);
    b.trigger(1);
    assert!(!executed(&a, 0, 1).await, "a runs its own item 0");
    assert!(!executed(&b, 1, 1).await, "b runs its own item 1");
    // Cycle 2 fires on b; a closes before it runs its item.
    b.trigger(2);
    assert!(!executed(&b, 1, 2).await);
    drop(a);
    a_driver.await.expect("a's driver ends with its handle");
    let a_client = Arc::try_unwrap(a_client)
        .ok()
        .expect("the driver released the client");
    a_client.close(5000).await.expect("a's session closes");
    assert!(
        executed(&b, 0, 2).await,
        "b runs a's item 0 of cycle 2 as a failover"
    );
    stop_drivers(vec![b_driver]).await;
    println!("real elastic-job: item 0 of cycle 2 failed over from a to b after a closed");
}
