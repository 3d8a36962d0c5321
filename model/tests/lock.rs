//! The lock recipe over the in-memory client: every path of Curator's algorithm, and the
//! known-bad variants doing what makes them bad.
#![cfg(not(madsim))]

use crate::support;

use support::paused_runtime as runtime;

use std::sync::Arc;

use zkh_model::{InjectedFault, MemoryClient, MemoryEnsemble};
use zkh_recipes::driver::{Known, Own};
use zkh_recipes::lock::{Lock, LockError, LockReport, LockVariant};
use zkh_recipes::real::TokioClock;
use zkh_recipes::ZkClient;

fn lock(ensemble: &MemoryEnsemble, variant: LockVariant, uuid: &str) -> (Lock, Arc<MemoryClient>) {
    let client = Arc::new(ensemble.connect());
    let (lock, driver) = Lock::start(
        Arc::clone(&client),
        Arc::new(TokioClock),
        variant,
        "/locks/stock",
        uuid,
    );
    tokio::spawn(driver);
    (lock, client)
}

fn lock_nodes(ensemble: &MemoryEnsemble) -> Vec<String> {
    ensemble.inspect(|m| {
        m.tree()
            .get("/locks/stock")
            .map(|n| n.children.iter().cloned().collect())
            .unwrap_or_default()
    })
}

#[test]
fn one_holder_at_a_time_and_tokens_increase() {
    runtime().block_on(async {
        let ensemble = MemoryEnsemble::new();
        let (a, _) = lock(&ensemble, LockVariant::Correct, "a");
        let (b, _) = lock(&ensemble, LockVariant::Correct, "b");
        let first = a.acquire(None).await.unwrap();
        assert_eq!(
            b.acquire(Some(200)).await,
            Err(LockError::TimedOut),
            "b waits while a holds"
        );
        assert_eq!(
            lock_nodes(&ensemble).len(),
            1,
            "the timed-out waiter deleted its node"
        );
        let waiting = tokio::spawn(async move { b.acquire(None).await });
        tokio::task::yield_now().await;
        a.release().await.unwrap();
        let second = waiting.await.unwrap().unwrap();
        assert!(
            second > first,
            "the token is the lock node's czxid: {second} > {first}"
        );
        assert_eq!(a.release().await, Err(LockError::NotHeld));
    });
}

#[test]
fn the_lock_is_reentrant() {
    runtime().block_on(async {
        let ensemble = MemoryEnsemble::new();
        let (a, _) = lock(&ensemble, LockVariant::Correct, "a");
        let (b, _) = lock(&ensemble, LockVariant::Correct, "b");
        let token = a.acquire(None).await.unwrap();
        assert_eq!(a.acquire(None).await.unwrap(), token);
        a.release().await.unwrap();
        assert_eq!(
            b.acquire(Some(100)).await,
            Err(LockError::TimedOut),
            "still held once"
        );
        a.release().await.unwrap();
        assert!(b.acquire(Some(100)).await.is_ok());
    });
}

#[test]
fn protection_finds_the_node_a_lost_reply_created() {
    runtime().block_on(async {
        let ensemble = MemoryEnsemble::new();
        let (a, client) = lock(&ensemble, LockVariant::Correct, "a");
        // The parent exists, so the first operation is the lock node's create.
        ensemble
            .connect()
            .create("/locks", b"", zkh_recipes::CreateMode::Persistent)
            .await
            .unwrap();
        ensemble
            .connect()
            .create("/locks/stock", b"", zkh_recipes::CreateMode::Persistent)
            .await
            .unwrap();
        client.inject(InjectedFault::DropReply);
        let token = a
            .acquire(Some(5_000))
            .await
            .expect("found its own node and acquired");
        let nodes = lock_nodes(&ensemble);
        assert_eq!(nodes.len(), 1, "no second node: {nodes:?}");
        assert!(
            nodes[0].starts_with("_c_a-1-lock-"),
            "the first attempt's protection id: {nodes:?}"
        );
        let czxid = ensemble.inspect(|m| {
            m.tree()
                .get(&format!("/locks/stock/{}", nodes[0]))
                .unwrap()
                .czxid
        });
        assert_eq!(token, czxid, "the token read back from the node's Stat");
        // Settled, the driver publishes what the machine knows: the node the lost reply made.
        let own = format!("/locks/stock/{}", nodes[0]);
        let own = Own {
            known: Some(vec![own]),
            claimed: None,
        };
        assert_eq!(a.knowledge().get(), Known::Settled(own));
    });
}

#[test]
fn unprotected_leaves_an_orphan_that_blocks_its_own_creator() {
    runtime().block_on(async {
        let ensemble = MemoryEnsemble::new();
        let (a, client) = lock(&ensemble, LockVariant::Unprotected, "a");
        ensemble
            .connect()
            .create("/locks", b"", zkh_recipes::CreateMode::Persistent)
            .await
            .unwrap();
        ensemble
            .connect()
            .create("/locks/stock", b"", zkh_recipes::CreateMode::Persistent)
            .await
            .unwrap();
        client.inject(InjectedFault::DropReply);
        assert_eq!(
            a.acquire(Some(2_000)).await,
            Err(LockError::TimedOut),
            "it waits on its own orphan"
        );
        let nodes = lock_nodes(&ensemble);
        assert_eq!(
            nodes.len(),
            1,
            "the orphan stays until the session ends: {nodes:?}"
        );
        // Timed out, its machine knows no node: the one its session owns is an orphan.
        let own = Own {
            known: Some(Vec::new()),
            claimed: None,
        };
        assert_eq!(a.knowledge().get(), Known::Settled(own));
        let (b, _) = lock(&ensemble, LockVariant::Unprotected, "b");
        assert_eq!(
            b.acquire(Some(2_000)).await,
            Err(LockError::TimedOut),
            "and blocks everyone else"
        );
    });
}

#[test]
fn one_release_wakes_one_waiter_and_the_herd_variant_wakes_all() {
    for (variant, expected_watchers) in [(LockVariant::Correct, 1), (LockVariant::Herd, 4)] {
        runtime().block_on(async move {
            let ensemble = MemoryEnsemble::new();
            let (holder, _) = lock(&ensemble, variant, "h");
            holder.acquire(None).await.unwrap();
            let mut waiters = Vec::new();
            for i in 0..4 {
                let (waiter, client) = lock(&ensemble, variant, &format!("w{i}"));
                waiters.push((
                    tokio::spawn(async move { waiter.acquire(Some(60_000)).await.map(|_| waiter) }),
                    client,
                ));
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            let holder_node = format!(
                "/locks/stock/{}",
                lock_nodes(&ensemble)
                    .iter()
                    .find(|n| n.contains("_c_h-"))
                    .unwrap()
            );
            // Who would a deletion of the holder's node (or a change of the children) notify?
            let watching = ensemble.inspect(|m| {
                let mut probe = m.clone();
                let owner = probe
                    .tree()
                    .get(&holder_node)
                    .unwrap()
                    .ephemeral_owner
                    .unwrap();
                let applied = probe.apply(
                    owner,
                    &zkh_model::Request::Delete {
                        path: holder_node.clone(),
                        version: -1,
                    },
                );
                applied.notifications.len()
            });
            assert_eq!(
                watching, expected_watchers,
                "{variant:?}: one release notifies {watching} waiters"
            );
            holder.release().await.unwrap();
            let (first, _) = waiters.remove(0);
            assert!(
                first.await.unwrap().is_ok(),
                "{variant:?}: the next in line acquires"
            );
        });
    }
}

#[test]
fn an_expired_session_loses_the_lock() {
    runtime().block_on(async {
        let ensemble = MemoryEnsemble::new();
        let (a, client) = lock(&ensemble, LockVariant::Correct, "a");
        a.acquire(None).await.unwrap();
        ensemble.expire(client.session_id());
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        assert_eq!(a.try_report(), Some(LockReport::Lost));
        assert!(
            lock_nodes(&ensemble).is_empty(),
            "its node went with the session"
        );
    });
}
