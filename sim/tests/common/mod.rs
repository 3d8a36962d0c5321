//! Helpers shared by the simulated tests.
#![allow(dead_code, missing_docs)]

use std::collections::BTreeSet;
use std::time::Duration;

use zkh_recipes::{ClientEvent, EventType, SessionEvent, WatchedEvent, ZkClient};
use zkh_sim::clock::{now, Instant};
use zkh_sim::fault::{Fault, NodeRef};
use zkh_sim::SimClient;

/// The session timeout of these tests.
pub const T: u64 = 4000;

/// The session events `client` has queued, taking them (and dropping its watch events).
pub fn session_events(client: &SimClient) -> Vec<SessionEvent> {
    std::iter::from_fn(|| client.try_next_event())
        .filter_map(|e| {
            if let ClientEvent::Session(s) = e {
                Some(s)
            } else {
                None
            }
        })
        .collect()
}

/// The watch event types `client` has queued, taking them (and dropping its session events).
pub fn watch_events(client: &SimClient) -> Vec<EventType> {
    std::iter::from_fn(|| client.try_next_event())
        .filter_map(|e| {
            if let ClientEvent::Watch(w) = e {
                Some(w.event_type)
            } else {
                None
            }
        })
        .collect()
}

/// Waits, at most `within_ms`, for `client`'s next watch event; returns it with its time.
pub async fn next_watch(client: &SimClient, within_ms: u64) -> Option<(Instant, WatchedEvent)> {
    let wait = async {
        loop {
            match client.next_event().await {
                Some(ClientEvent::Watch(event)) => return Some((now(), event)),
                Some(_) => continue,
                None => return None,
            }
        }
    };
    madsim::time::timeout(Duration::from_millis(within_ms), wait)
        .await
        .ok()
        .flatten()
}

/// A partition between client `client` and every server.
pub fn isolate(client: u32, one_way: bool, duration_ms: u64) -> Fault {
    Fault::Partition {
        a: BTreeSet::from([NodeRef::Client(client)]),
        b: BTreeSet::from([NodeRef::AllServers]),
        one_way,
        duration_ms,
    }
}

/// Every always-guarantee of ZooKeeper's that `history` breaks, with its detail, in the
/// checker's order.
pub fn broken_guarantees(
    history: &zkh_model::History,
    logs: &zkh_model::guarantees::CommitLogs,
) -> Vec<String> {
    zkh_model::guarantees::judge(history, logs)
        .into_iter()
        .filter(|f| f.class == zkh_model::properties::Class::Always && !f.holds)
        .map(|f| format!("{}: {}", f.property, f.detail))
        .collect()
}

/// Both futures, polled together (a client with two requests in flight).
pub async fn both<A: std::future::Future, B: std::future::Future>(
    a: A,
    b: B,
) -> (A::Output, B::Output) {
    let (mut a, mut b) = (Box::pin(a), Box::pin(b));
    let (mut first, mut second) = (None, None);
    std::future::poll_fn(|cx| {
        if first.is_none() {
            first = match a.as_mut().poll(cx) {
                std::task::Poll::Ready(v) => Some(v),
                std::task::Poll::Pending => None,
            };
        }
        if second.is_none() {
            second = match b.as_mut().poll(cx) {
                std::task::Poll::Ready(v) => Some(v),
                std::task::Poll::Pending => None,
            };
        }
        if first.is_some() && second.is_some() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    (first.expect("ready"), second.expect("ready"))
}
