//! The real backend's event bridge against a real ZooKeeper (normal build, under
//! `scripts/with-zookeeper`). The differential test covers operations; this covers what only the
//! bridge does: one event per server notification, waiting for events, and the session stream.
#![cfg(not(madsim))]

use crate::common;

use common::server;

use std::time::Duration;

use zkh_recipes::real::RealClient;
use zkh_recipes::{
    ClientEvent, CreateMode, EventType, SessionEvent, WatchedEvent, ZkClient, ZkError,
};

fn watch(event_type: EventType, path: &str) -> Option<ClientEvent> {
    Some(ClientEvent::Watch(WatchedEvent {
        event_type,
        path: path.to_owned(),
        zxid: WatchedEvent::NO_ZXID,
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_event_per_notification_and_events_before_replies() {
    let Some(connect) = server() else { return };
    let root = format!("/zkh-bridge-{}", std::process::id());
    let a = RealClient::connect(&connect, 10_000).await.unwrap();
    let b = RealClient::connect(&connect, 10_000).await.unwrap();
    assert!(matches!(
        a.try_next_event(),
        Some(ClientEvent::Session(SessionEvent::Connected { .. }))
    ));
    a.create(&root, b"", CreateMode::Persistent).await.unwrap();
    let node = format!("{root}/n");
    a.create(&node, b"", CreateMode::Persistent).await.unwrap();
    // Three watchers on one node (two data, one child): the server sends one NodeDeleted.
    a.get_data(&node, true).await.unwrap();
    a.exists(&node, true).await.unwrap();
    a.get_children(&node, true).await.unwrap();
    b.delete(&node, -1).await.unwrap();
    // a's next reply comes after the notification: the event must be queued by then.
    a.sync(&root).await.unwrap();
    assert_eq!(a.try_next_event(), watch(EventType::NodeDeleted, &node));
    assert_eq!(
        a.try_next_event(),
        None,
        "the copies were folded into one event"
    );

    // next_event waits for a notification caused by another session.
    a.exists(&node, true).await.unwrap();
    let waiter = tokio::time::timeout(Duration::from_secs(10), a.next_event());
    let writer = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        b.create(&node, b"", CreateMode::Ephemeral).await.unwrap();
    };
    let (event, ()) = tokio::join!(waiter, writer);
    assert_eq!(
        event.expect("an event within 10 s"),
        watch(EventType::NodeCreated, &node)
    );

    // Closing b deletes its ephemeral and fires a's watch; b's stream ends with Closed.
    a.exists(&node, true).await.unwrap();
    b.close(5_000).await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), a.next_event())
        .await
        .expect("event within 10 s");
    assert_eq!(event, watch(EventType::NodeDeleted, &node));
    assert_eq!(
        a.create("/bad/", b"", CreateMode::Persistent).await,
        Err(ZkError::BadArguments)
    );
    a.delete(&root, -1).await.unwrap();
    a.close(5_000).await.unwrap();
}

/// Found by the differential test (seed 1, case 3373): a watch set again after the previous one
/// fired, but before that event was polled, must not be lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_set_again_after_it_fired_is_kept() {
    let Some(connect) = server() else { return };
    let root = format!("/zkh-rewatch-{}", std::process::id());
    let a = RealClient::connect(&connect, 10_000).await.unwrap();
    let b = RealClient::connect(&connect, 10_000).await.unwrap();
    a.create(&root, b"", CreateMode::Persistent).await.unwrap();
    a.get_data(&root, true).await.unwrap();
    b.set_data(&root, b"1", -1).await.unwrap();
    a.get_data(&root, true).await.unwrap(); // its reply follows the first notification
    a.set_data(&root, b"2", -1).await.unwrap();
    let changed = watch(EventType::NodeDataChanged, &root);
    let events: Vec<_> = std::iter::from_fn(|| a.try_next_event())
        .filter(|e| matches!(e, ClientEvent::Watch(_)))
        .collect();
    assert_eq!(events, [changed.clone().unwrap(), changed.unwrap()]);
    a.delete(&root, -1).await.unwrap();
}
