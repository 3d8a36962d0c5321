//! Each fault of the vocabulary, injected alone, has the effect its documentation promises.
#![cfg(madsim)]

use crate::common;

use common::{isolate, session_events, watch_events, T};

use std::collections::BTreeSet;
use std::time::Duration;

use madsim::time::sleep;
use zkh_recipes::{CreateMode, EventType, SessionEvent, ZkClient, ZkError};
use zkh_sim::clock::now;
use zkh_sim::cluster::{Cluster, ClusterConfig};
use zkh_sim::fault::{Fault, FaultPlan, NodeRef, OpKind, ServerRef, Trigger, TriggeredFault};
use zkh_sim::run::run_seed;
use zkh_sim::server::RoleSummary;

#[test]
fn faults_round_trip_through_serde() {
    let plan = FaultPlan {
        scripted: vec![zkh_sim::ScriptedFault {
            at_ms: 1500,
            fault: Fault::Partition {
                a: BTreeSet::from([NodeRef::Client(2)]),
                b: BTreeSet::from([NodeRef::Server(ServerRef::Leader), NodeRef::AllServers]),
                one_way: true,
                duration_ms: 3000,
            },
        }],
        triggered: vec![TriggeredFault {
            when: Trigger {
                client: None,
                op: OpKind::Create,
                path_prefix: "/latch".into(),
                nth: 1,
            },
            fault: Fault::DropReply { client: 0 },
        }],
        random: None,
    };
    let text = serde_json::to_string(&plan).unwrap();
    assert!(text.contains(r#""kind":"partition""#), "{text}");
    assert_eq!(serde_json::from_str::<FaultPlan>(&text).unwrap(), plan);
    let bad = serde_json::from_str::<Fault>(r#"{"kind":"melt-server"}"#).unwrap_err();
    assert!(bad.to_string().contains("unknown variant"), "{bad}");
}

#[test]
fn a_gc_pause_longer_than_the_timeout_costs_the_session() {
    run_seed(1, 300, |seed| async move {
        let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
        let paused = cluster.add_client(0, T, false).await.unwrap();
        let watcher = cluster.add_client(1, T, false).await.unwrap();
        paused
            .create("/e", b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        watcher.exists("/e", true).await.unwrap();
        session_events(&paused);
        cluster
            .inject(&Fault::PauseClient {
                client: 0,
                duration_ms: 3 * T,
            })
            .await;
        sleep(Duration::from_millis(2 * T)).await;
        assert_eq!(
            watch_events(&watcher),
            [EventType::NodeDeleted],
            "expired while paused"
        );
        assert!(
            session_events(&paused).is_empty(),
            "a paused process sees nothing"
        );
        sleep(Duration::from_millis(2 * T)).await;
        cluster.end_due_faults();
        sleep(Duration::from_millis(2 * T)).await;
        assert_eq!(
            session_events(&paused),
            [SessionEvent::Disconnected, SessionEvent::Expired]
        );
    });
}

#[test]
fn a_one_way_partition_silences_the_client() {
    run_seed(2, 300, |seed| async move {
        let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
        let client = cluster.add_client(0, T, false).await.unwrap();
        session_events(&client);
        let cut = isolate(0, true, T / 2);
        cluster.inject(&cut).await;
        let started = now();
        // Requests go out but nothing comes back: Disconnected after two thirds of T.
        let lost = client.exists("/", false).await;
        assert_eq!(lost, Err(ZkError::ConnectionLoss));
        let waited = now().duration_since(started).as_millis() as u64;
        assert!(
            waited <= T * 2 / 3 + 50,
            "connection loss after {waited} ms"
        );
        cluster.end_due_faults();
        sleep(Duration::from_millis(T)).await;
        cluster.end_due_faults();
        sleep(Duration::from_millis(T)).await;
        let events = session_events(&client);
        assert_eq!(
            events.first(),
            Some(&SessionEvent::Disconnected),
            "{events:?}"
        );
        assert!(
            client.exists("/", false).await.is_ok(),
            "reconnected after the partition: {events:?}"
        );
    });
}

#[test]
fn a_delayed_watch_arrives_late_but_replies_do_not() {
    run_seed(3, 300, |seed| async move {
        let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
        let slow = cluster.add_client(0, T, false).await.unwrap();
        let writer = cluster.add_client(1, T, false).await.unwrap();
        slow.exists("/n", true).await.unwrap();
        session_events(&slow);
        cluster
            .inject(&Fault::DelayWatch {
                client: 0,
                delay_ms: 1500,
                duration_ms: 10_000,
            })
            .await;
        writer
            .create("/n", b"", CreateMode::Persistent)
            .await
            .unwrap();
        slow.sync("/").await.unwrap();
        assert!(
            slow.exists("/n", false).await.unwrap().is_some(),
            "the reply is not delayed"
        );
        assert!(watch_events(&slow).is_empty(), "the watch event is");
        sleep(Duration::from_millis(1600)).await;
        assert_eq!(watch_events(&slow), [EventType::NodeCreated]);
    });
}

#[test]
fn data_loss_refuses_clients_that_saw_the_lost_history() {
    run_seed(4, 300, |seed| async move {
        let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
        let old = cluster.add_client(0, T, true).await.unwrap();
        for i in 0..5 {
            old.create(&format!("/n{i}"), b"", CreateMode::Persistent)
                .await
                .unwrap();
        }
        cluster.inject(&Fault::DataLoss).await;
        assert!(
            cluster.wait_for_leader(30_000).await.is_some(),
            "the emptied ensemble elects again"
        );
        sleep(Duration::from_millis(3 * T)).await;
        assert_eq!(
            old.exists("/", false).await,
            Err(ZkError::ConnectionLoss),
            "refused: its zxid is ahead"
        );
        let fresh = cluster.add_client(1, T, false).await.unwrap();
        assert_eq!(
            fresh.exists("/n0", false).await,
            Ok(None),
            "the data is gone"
        );
    });
}

#[test]
fn a_triggered_fault_fires_on_its_event() {
    run_seed(5, 300, |seed| async move {
        let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
        let client = cluster.add_client(0, T, false).await.unwrap();
        client
            .create("/latch", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let plan = FaultPlan {
            triggered: vec![TriggeredFault {
                when: Trigger {
                    client: Some(0),
                    op: OpKind::Create,
                    path_prefix: "/latch/".into(),
                    nth: 2,
                },
                fault: Fault::DropReply { client: 0 },
            }],
            ..FaultPlan::default()
        };
        cluster.arm_triggers(&plan.triggered);
        let work = cluster.spawn_on_client(0, async move {
            let first = client
                .create("/latch/n-", b"", CreateMode::EphemeralSequential)
                .await;
            let second = client
                .create("/latch/n-", b"", CreateMode::EphemeralSequential)
                .await;
            sleep(Duration::from_millis(2 * T)).await;
            let (children, _) = client.get_children("/latch", false).await.unwrap();
            (first.is_ok(), second, children.len())
        });
        cluster.run_faults(&plan, 3 * T).await;
        let (first_ok, second, children) = work.await.unwrap();
        assert!(first_ok);
        assert_eq!(
            second,
            Err(ZkError::ConnectionLoss),
            "the reply to the second create under /latch was lost"
        );
        assert_eq!(children, 2, "but the create was applied");
    });
}

#[test]
fn a_restarted_server_rejoins_and_catches_up() {
    run_seed(6, 300, |seed| async move {
        let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
        let client = cluster.add_client(0, T, false).await.unwrap();
        let follower = (1..=3)
            .find(|id| cluster.roles()[*id as usize - 1] != RoleSummary::Leading(1))
            .unwrap();
        cluster
            .inject(&Fault::KillServer {
                server: ServerRef::Id(follower),
            })
            .await;
        // The client may have been on the killed server: it reconnects elsewhere.
        sleep(Duration::from_millis(T)).await;
        client
            .create("/after", b"", CreateMode::Persistent)
            .await
            .expect("served by the other two");
        assert!(
            cluster.disk(follower).model.tree().get("/after").is_none(),
            "the dead server missed it"
        );
        cluster
            .inject(&Fault::RestartServer {
                server: ServerRef::Down,
            })
            .await;
        sleep(Duration::from_millis(2 * T)).await;
        assert!(matches!(
            cluster.roles()[follower as usize - 1],
            RoleSummary::Following(_)
        ));
        assert!(
            cluster.disk(follower).model.tree().get("/after").is_some(),
            "caught up on what it missed"
        );
    });
}

#[test]
fn a_leader_cut_off_from_its_followers_is_replaced() {
    run_seed(7, 300, |seed| async move {
        let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
        let old = cluster.leader().unwrap();
        let cut = Fault::Partition {
            a: BTreeSet::from([NodeRef::Server(ServerRef::Leader)]),
            b: BTreeSet::from([NodeRef::Server(ServerRef::Follower)]),
            one_way: false,
            duration_ms: 60_000,
        };
        cluster.inject(&cut).await;
        let cut_second = Fault::Partition {
            a: BTreeSet::from([NodeRef::Server(ServerRef::Id(old))]),
            b: BTreeSet::from([NodeRef::AllServers]),
            one_way: false,
            duration_ms: 60_000,
        };
        cluster.inject(&cut_second).await;
        sleep(Duration::from_millis(2000 * 5 + 4000)).await;
        let new = cluster
            .leader()
            .expect("one leader: the old one stepped down");
        assert_ne!(new, old);
        assert_eq!(cluster.disk(new).epoch, 2);
        assert_eq!(cluster.roles()[old as usize - 1], RoleSummary::Looking);
        cluster.heal();
        sleep(Duration::from_millis(2000)).await;
        assert_eq!(
            cluster.roles()[old as usize - 1],
            RoleSummary::Following(new),
            "it rejoins after the heal"
        );
    });
}

/// Found by the sweep (seed 451): a partition shorter than the client's patience delays what an
/// established connection carries, as TCP does; it does not lose it.
#[test]
fn a_short_partition_delays_a_notification_and_loses_nothing() {
    run_seed(451, 300, |seed| async move {
        let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
        let writer = cluster.add_client(0, T, false).await.unwrap();
        let watcher = cluster.add_client(1, T, false).await.unwrap();
        writer
            .create("/e", b"", CreateMode::Persistent)
            .await
            .unwrap();
        watcher.exists("/e", true).await.unwrap();
        session_events(&watcher);
        let cut = isolate(1, false, 2000);
        cluster.inject(&cut).await;
        writer.delete("/e", -1).await.unwrap();
        sleep(Duration::from_millis(500)).await;
        assert!(watch_events(&watcher).is_empty(), "held by the partition");
        sleep(Duration::from_millis(1600)).await;
        cluster.end_due_faults();
        sleep(Duration::from_millis(100)).await;
        assert_eq!(
            watch_events(&watcher),
            [EventType::NodeDeleted],
            "delivered after the heal"
        );
        assert!(
            session_events(&watcher).is_empty(),
            "2 s is less than two thirds of T: no disconnection"
        );
    });
}

/// The leader's container manager: a container that has had children and has none is deleted
/// at the `reap-containers` fault (at the leader's next heartbeat) and on the check interval;
/// one that never had a child, one with a child, and a persistent node stay. A child's delete
/// that empties the container does not take it away by itself.
#[test]
fn the_leader_reaps_empty_containers_on_its_interval_and_at_the_fault() {
    run_seed(2, 300, |seed| async move {
        let config = ClusterConfig {
            container_check_interval_ms: 10_000,
            ..ClusterConfig::default()
        };
        let mut cluster = Cluster::start(seed, config).await;
        let client = cluster.add_client(0, T, true).await.unwrap();
        for parent in ["/emptied", "/later", "/never"] {
            client
                .create(parent, b"", CreateMode::Container)
                .await
                .unwrap();
        }
        client
            .create("/kept", b"", CreateMode::Container)
            .await
            .unwrap();
        client
            .create("/persistent", b"", CreateMode::Persistent)
            .await
            .unwrap();
        for parent in ["/emptied", "/later", "/kept", "/persistent"] {
            let child = format!("{parent}/c");
            client
                .create(&child, b"", CreateMode::Persistent)
                .await
                .unwrap();
        }
        for parent in ["/emptied", "/later", "/persistent"] {
            client.delete(&format!("{parent}/c"), -1).await.unwrap();
        }
        let there = |path: &'static str| {
            let client = client.clone();
            async move { client.exists(path, false).await.unwrap().is_some() }
        };
        assert!(there("/emptied").await, "emptied, not yet reaped");
        assert!(
            cluster.inject(&Fault::ReapContainers).await,
            "a leader to ask"
        );
        sleep(Duration::from_millis(1_500)).await;
        assert!(!there("/emptied").await, "reaped at the fault");
        assert!(!there("/later").await, "reaped at the fault");
        assert!(there("/never").await, "never had a child");
        assert!(there("/kept").await, "still has a child");
        assert!(there("/persistent").await, "not a container");

        client.delete("/kept/c", -1).await.unwrap();
        sleep(Duration::from_millis(1_500)).await;
        assert!(
            there("/kept").await,
            "emptied: reaped at the next check, not at once"
        );
        sleep(Duration::from_millis(10_000)).await;
        assert!(!there("/kept").await, "reaped on the interval");
        assert!(there("/never").await && there("/persistent").await);
    });
}
