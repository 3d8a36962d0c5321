//! How a client ends a session it cannot reconnect ([`LocalExpiry`]), after the ensemble
//! restarted empty (data loss): the servers refuse it (its last zxid is ahead of theirs); the
//! Java client waits for ever, Curator ends the session one session timeout after the
//! connection was lost, the `zookeeper-client` crate 7/5 of a timeout after it last heard from
//! a server; a new session (a new handle, which has seen no zxid) is then accepted.
#![cfg(madsim)]

use std::time::Duration;

use zkh_model::HistoryEvent;
use zkh_recipes::{CreateMode, SessionEvent, ZkClient};
use zkh_sim::cluster::{Cluster, ClusterConfig};
use zkh_sim::fault::Fault;
use zkh_sim::local_expiry::LocalExpiry;
use zkh_sim::run::run_seed;

const SESSION_TIMEOUT_MS: u64 = 4000;

/// The client's session events after the data loss, each with its time in ms after it, and
/// whether the client could write again by the end.
fn after_data_loss(seed: u64, policy: LocalExpiry) -> (Vec<(u64, String)>, bool) {
    run_seed(seed, 120, move |seed| async move {
        let config = ClusterConfig {
            local_expiry: policy,
            ..ClusterConfig::default()
        };
        let mut cluster = Cluster::start(seed, config).await;
        let client = cluster
            .add_client(0, SESSION_TIMEOUT_MS, true)
            .await
            .expect("connects");
        for i in 0..5 {
            client
                .create(&format!("/n{i}"), b"", CreateMode::Persistent)
                .await
                .expect("create");
        }
        cluster.inject(&Fault::DataLoss).await;
        let start = cluster.history().len();
        madsim::time::sleep(Duration::from_secs(15)).await;
        let writes_again = client
            .create("/after", b"", CreateMode::Persistent)
            .await
            .is_ok();
        let history = cluster.history();
        let loss_us = history.entries()[start - 1].at_us;
        let events = history.entries()[start..]
            .iter()
            .filter_map(|entry| match &entry.event {
                HistoryEvent::Session { event, .. } => {
                    let kind = match event {
                        SessionEvent::Connected { .. } => "connected",
                        SessionEvent::Reconnected { .. } => "reconnected",
                        SessionEvent::Disconnected => "disconnected",
                        SessionEvent::Expired => "expired",
                        SessionEvent::Closed => "closed",
                    };
                    Some(((entry.at_us - loss_us) / 1000, kind.to_owned()))
                }
                _ => None,
            })
            .collect();
        (events, writes_again)
    })
}

fn kinds(events: &[(u64, String)]) -> Vec<&str> {
    events.iter().map(|(_, kind)| kind.as_str()).collect()
}

#[test]
fn the_java_client_is_refused_for_ever_after_data_loss() {
    for seed in 0..5 {
        let (events, writes_again) = after_data_loss(seed, LocalExpiry::Never);
        assert_eq!(kinds(&events), ["disconnected"], "seed {seed}: {events:?}");
        assert!(!writes_again, "seed {seed}");
    }
}

#[test]
fn curator_ends_the_session_one_timeout_after_the_disconnection_and_starts_again() {
    for seed in 0..5 {
        let (events, writes_again) = after_data_loss(seed, LocalExpiry::Curator);
        assert_eq!(
            kinds(&events),
            ["disconnected", "expired", "connected"],
            "seed {seed}: {events:?}"
        );
        let gap = events[1].0 - events[0].0;
        assert!(
            (SESSION_TIMEOUT_MS..SESSION_TIMEOUT_MS + 100).contains(&gap),
            "seed {seed}: expired {gap} ms after the disconnection"
        );
        assert!(writes_again, "seed {seed}: the new session writes");
    }
}

#[test]
fn the_crate_ends_the_session_seven_fifths_of_a_timeout_after_it_last_heard() {
    for seed in 0..5 {
        let (events, writes_again) = after_data_loss(seed, LocalExpiry::ZookeeperClientCrate);
        assert_eq!(
            kinds(&events),
            ["disconnected", "expired", "connected"],
            "seed {seed}: {events:?}"
        );
        // It last heard from its server at about the loss (a ping's answer at most a third of
        // a timeout before).
        let expired = events[1].0;
        let limit = SESSION_TIMEOUT_MS * 7 / 5;
        assert!(
            (limit - SESSION_TIMEOUT_MS / 3 - 50..=limit + 100).contains(&expired),
            "seed {seed}: expired {expired} ms after the loss"
        );
        assert!(writes_again, "seed {seed}");
    }
}

/// Curator 2.x after data loss: nothing happens until the application makes an operation more
/// than max(session timeout, 15 s connection timeout) after the disconnection; that operation
/// fails with `ConnectionLoss`, the handle is reset, and the new session is announced as a
/// reconnection (with a new session id), then writes.
#[test]
fn curator_2_resets_its_handle_on_the_first_operation_past_its_timeouts() {
    for seed in 0..5 {
        // Without an operation past the limit (its one write comes 15 s after the loss, under
        // 15 s after the disconnection), it is refused for ever, as the Java client is.
        let (events, writes_again) = after_data_loss(seed, LocalExpiry::Curator2);
        assert_eq!(kinds(&events), ["disconnected"], "seed {seed}: {events:?}");
        assert!(!writes_again, "seed {seed}");

        let (sessions, old, first, then) = run_seed(seed, 120, move |seed| async move {
            let config = ClusterConfig {
                local_expiry: LocalExpiry::Curator2,
                ..ClusterConfig::default()
            };
            let mut cluster = Cluster::start(seed, config).await;
            let client = (cluster.add_client(0, SESSION_TIMEOUT_MS, true).await).expect("connects");
            client
                .create("/n", b"", CreateMode::Persistent)
                .await
                .expect("create");
            let old = client.session_id();
            let start = cluster.history().len();
            cluster.inject(&Fault::DataLoss).await;
            madsim::time::sleep(Duration::from_secs(20)).await;
            let first = client.create("/after", b"", CreateMode::Persistent).await;
            madsim::time::sleep(Duration::from_secs(5)).await;
            let then = client.create("/after", b"", CreateMode::Persistent).await;
            let sessions: Vec<SessionEvent> = (cluster.history().entries()[start..].iter())
                .filter_map(|entry| match &entry.event {
                    HistoryEvent::Session { event, .. } => Some(*event),
                    _ => None,
                })
                .collect();
            (sessions, old, first.map(|_| ()), then.map(|_| ()))
        });
        assert_eq!(
            first,
            Err(zkh_recipes::ZkError::ConnectionLoss),
            "seed {seed}"
        );
        assert_eq!(then, Ok(()), "seed {seed}: the new session writes");
        let [SessionEvent::Disconnected, SessionEvent::Reconnected { session_id }] = sessions[..]
        else {
            panic!("seed {seed}: a disconnection, then a reconnection: {sessions:?}");
        };
        assert_ne!(
            session_id, old,
            "seed {seed}: the reconnection is a new session"
        );
    }
}
