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
