//! ZooKeeper's session, connection and ensemble behaviour, as documented and as measured on a
//! real server, as simulated tests. Each runs over several seeds; a bound that a real server was
//! measured to keep must hold for every one of them.
#![cfg(madsim)]

use crate::common;

use common::{isolate, next_watch, session_events, T};

use std::time::Duration;

use madsim::time::sleep;
use zkh_recipes::{ClientEvent, CreateMode, EventType, SessionEvent, ZkClient, ZkError};
use zkh_sim::clock::now;
use zkh_sim::cluster::{Cluster, ClusterConfig};
use zkh_sim::fault::{Fault, NodeRef, ServerRef};
use zkh_sim::run::run_seed;

const TICK: u64 = 2000;
/// Network latency and scheduling slack allowed around a measured bound.
const SLACK_MS: u64 = 50;

#[test]
fn a_crashed_clients_ephemeral_goes_between_t_minus_a_third_and_t_plus_a_tick() {
    let mut seen = Vec::new();
    for seed in zkh_sim::seed::seeds(0..20) {
        let elapsed = run_seed(seed, 300, |seed| async move {
            let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
            let owner = cluster.add_client(0, T, false).await.unwrap();
            let watcher = cluster.add_client(1, T, false).await.unwrap();
            owner
                .create("/e", b"", CreateMode::Ephemeral)
                .await
                .unwrap();
            watcher.exists("/e", true).await.unwrap();
            // Let pings settle into their rhythm, then crash at a seed-dependent moment.
            sleep(Duration::from_millis(3000 + seed * 137 % 2000)).await;
            let crashed = now();
            cluster.inject(&Fault::CrashClient { client: 0 }).await;
            let (at, event) = next_watch(&watcher, 3 * T)
                .await
                .expect("the ephemeral is deleted");
            assert_eq!(
                (event.event_type, event.path.as_str()),
                (EventType::NodeDeleted, "/e")
            );
            at.duration_since(crashed).as_millis() as u64
        });
        assert!(
            (T - T / 3 - SLACK_MS..=T + TICK + SLACK_MS).contains(&elapsed),
            "seed {seed}: the ephemeral went {elapsed} ms after the crash"
        );
        seen.push(elapsed);
    }
    seen.sort();
    println!(
        "crashed client's ephemeral gone after {} to {} ms (T = {T} ms, tick {TICK} ms)",
        seen[0], seen[19]
    );
    assert!(
        seen[19] - seen[0] >= 500,
        "the crash moment should spread the expiry over the bucket: {seen:?}"
    );
}

#[test]
fn killing_the_leader_disconnects_every_client_and_they_keep_their_sessions() {
    for seed in zkh_sim::seed::seeds(0..10) {
        run_seed(seed, 300, |seed| async move {
            let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
            let mut clients = Vec::new();
            for id in 0..5 {
                clients.push(cluster.add_client(id, T, false).await.unwrap());
            }
            let sessions: Vec<_> = clients.iter().map(|c| c.session_id()).collect();
            for client in &clients {
                session_events(client);
            }
            let old_leader = cluster.leader().unwrap();
            cluster
                .inject(&Fault::KillServer {
                    server: ServerRef::Leader,
                })
                .await;
            sleep(Duration::from_millis(250)).await;
            for client in &clients {
                assert_eq!(
                    session_events(client),
                    [SessionEvent::Disconnected],
                    "seed {seed}: within 250 ms"
                );
            }
            let new_leader = cluster.wait_for_leader(10_000).await.expect("a new leader");
            assert_ne!(new_leader, old_leader);
            sleep(Duration::from_millis(T)).await;
            for (client, session) in clients.iter().zip(&sessions) {
                assert_eq!(
                    client.session_id(),
                    *session,
                    "seed {seed}: the same session"
                );
                let events = session_events(client);
                assert!(
                    events.contains(&SessionEvent::Reconnected {
                        session_id: *session
                    }),
                    "seed {seed}: {events:?}"
                );
                assert!(
                    !events.contains(&SessionEvent::Expired),
                    "seed {seed}: no session expired"
                );
                client.exists("/", false).await.expect("serves again");
            }
            let epoch = cluster.disk(new_leader).epoch;
            assert_eq!(epoch, 2, "seed {seed}: the leader change bumped the epoch");
        });
    }
}

#[test]
fn a_partitioned_client_expires_on_the_server_and_learns_it_after_the_heal() {
    for seed in zkh_sim::seed::seeds(0..10) {
        run_seed(seed, 300, |seed| async move {
            let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
            let cut_off = cluster.add_client(0, T, false).await.unwrap();
            let watcher = cluster.add_client(1, T, false).await.unwrap();
            cut_off
                .create("/e", b"", CreateMode::Ephemeral)
                .await
                .unwrap();
            watcher.exists("/e", true).await.unwrap();
            session_events(&cut_off);
            let partition = isolate(0, false, 60_000);
            cluster.inject(&partition).await;
            let (_, event) = next_watch(&watcher, 3 * T)
                .await
                .expect("the server expired the session");
            assert_eq!(event.event_type, EventType::NodeDeleted);
            assert_eq!(
                session_events(&cut_off),
                [SessionEvent::Disconnected],
                "seed {seed}: not told yet"
            );
            assert_eq!(
                cut_off.exists("/", false).await,
                Err(ZkError::ConnectionLoss)
            );
            cluster.heal();
            sleep(Duration::from_millis(2 * T)).await;
            assert_eq!(
                session_events(&cut_off),
                [SessionEvent::Expired],
                "seed {seed}: told on reconnection"
            );
            assert_eq!(
                cut_off.exists("/", false).await,
                Err(ZkError::SessionExpired)
            );
        });
    }
}

#[test]
fn a_reply_lost_after_apply_leaves_the_node_created() {
    for seed in zkh_sim::seed::seeds(0..10) {
        run_seed(seed, 300, |seed| async move {
            let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
            let client = cluster.add_client(0, T, false).await.unwrap();
            cluster.inject(&Fault::DropReply { client: 0 }).await;
            assert_eq!(
                client.create("/n", b"", CreateMode::Persistent).await,
                Err(ZkError::ConnectionLoss)
            );
            cluster.inject(&Fault::DropRequest { client: 0 }).await;
            sleep(Duration::from_millis(T)).await;
            assert_eq!(
                client.create("/m", b"", CreateMode::Persistent).await,
                Err(ZkError::ConnectionLoss)
            );
            sleep(Duration::from_millis(T)).await;
            assert!(
                client.exists("/n", false).await.unwrap().is_some(),
                "seed {seed}: a lost reply, an applied create"
            );
            assert!(
                client.exists("/m", false).await.unwrap().is_none(),
                "seed {seed}: a lost request, nothing applied"
            );
        });
    }
}

#[test]
fn a_read_on_a_slow_follower_is_stale_until_sync() {
    let mut checked = 0;
    for seed in zkh_sim::seed::seeds(0..20) {
        let on_follower = run_seed(seed, 300, |seed| async move {
            let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
            let writer = cluster.add_client(0, T, false).await.unwrap();
            let reader = cluster.add_client(1, T, false).await.unwrap();
            let server = reader.connected_server().unwrap();
            if Some(server) == cluster.leader() || writer.connected_server() == Some(server) {
                return false;
            }
            writer
                .create("/v", b"old", CreateMode::Persistent)
                .await
                .unwrap();
            reader.sync("/").await.unwrap();
            let slow = Fault::SlowFollower {
                server: ServerRef::Id(server),
                delay_ms: 1000,
                duration_ms: 60_000,
            };
            cluster.inject(&slow).await;
            writer.set_data("/v", b"new", -1).await.unwrap();
            let (stale, _) = reader.get_data("/v", false).await.unwrap();
            assert_eq!(
                stale, b"old",
                "seed {seed}: the follower has not applied the write yet"
            );
            reader.sync("/").await.unwrap();
            let (fresh, _) = reader.get_data("/v", false).await.unwrap();
            assert_eq!(fresh, b"new", "seed {seed}: sync caught the follower up");
            true
        });
        checked += u32::from(on_follower);
    }
    println!("stale read until sync: checked on {checked} of 20 seeds (the others put the reader on the leader)");
    assert!(
        checked >= 3,
        "only {checked} of 20 seeds put the reader alone on a follower"
    );
}

#[test]
fn kill_session_expires_on_the_client_only_until_the_server_timeout() {
    for seed in zkh_sim::seed::seeds(0..10) {
        run_seed(seed, 300, |seed| async move {
            let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
            let killed = cluster.add_client(0, T, true).await.unwrap();
            let watcher = cluster.add_client(1, T, false).await.unwrap();
            let old_session = killed.session_id();
            killed
                .create("/e", b"", CreateMode::Ephemeral)
                .await
                .unwrap();
            watcher.exists("/e", true).await.unwrap();
            session_events(&killed);
            let at = now();
            cluster.inject(&Fault::ClientSideExpiry { client: 0 }).await;
            sleep(Duration::from_millis(T / 2)).await;
            let events = session_events(&killed);
            assert_eq!(
                events.first(),
                Some(&SessionEvent::Expired),
                "seed {seed}: {events:?}"
            );
            assert_ne!(
                killed.session_id(),
                old_session,
                "seed {seed}: a new session, as Curator makes"
            );
            let stat = watcher
                .exists("/e", false)
                .await
                .unwrap()
                .expect("the server still holds the old session");
            assert_eq!(stat.ephemeral_owner, old_session.0);
            let (gone, _) = next_watch(&watcher, 3 * T)
                .await
                .expect("the server expires the old session");
            let elapsed = gone.duration_since(at).as_millis() as u64;
            assert!(
                elapsed <= T + TICK + SLACK_MS,
                "seed {seed}: gone after {elapsed} ms"
            );
        });
    }
}

/// A follower that joins while a proposal waits for acks gets the proposal after the
/// leader's snapshot, as ZooKeeper's leader forwards its outstanding proposals to a learner
/// it has synced, and acks it. Found by seed 76046 of the harsh-random sharded job (issue 37):
/// both followers resynced while a write waited, nobody ever acked it, and every write behind
/// it waited for ever. Here one follower is down when the write is proposed and the other is
/// cut off: the write commits once the first is back, not when the second's link heals.
/// An ensemble and a client; `None` unless the client is connected to the leader.
async fn writer_on_the_leader(seed: u64) -> Option<(Cluster, zkh_sim::SimClient, u32)> {
    let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
    let writer = cluster.add_client(0, T, false).await.unwrap();
    let leader = cluster.leader().expect("a leader");
    (writer.connected_server() == Some(leader)).then_some((cluster, writer, leader))
}

#[test]
fn a_write_waiting_for_acks_commits_once_a_follower_rejoins() {
    let mut checked = 0;
    for seed in zkh_sim::seed::seeds(0..20) {
        let committed_after_ms = run_seed(seed, 300, |seed| async move {
            let (mut cluster, writer, leader) = writer_on_the_leader(seed).await?;
            let followers: Vec<u32> = (1..=3).filter(|id| *id != leader).collect();
            let (down, cut) = (followers[0], followers[1]);
            let kill = Fault::KillServer {
                server: ServerRef::Id(down),
            };
            cluster.inject(&kill).await;
            writer
                .create("/one", b"", CreateMode::Persistent)
                .await
                .expect("the leader and the other follower commit it");
            let partition = Fault::Partition {
                a: [NodeRef::Server(ServerRef::Id(cut))].into(),
                b: [NodeRef::Server(ServerRef::Id(leader))].into(),
                one_way: false,
                duration_ms: 20_000,
            };
            cluster.inject(&partition).await;
            let pending = {
                let writer = writer.clone();
                madsim::task::spawn(async move {
                    writer.create("/two", b"", CreateMode::Persistent).await
                })
            };
            sleep(Duration::from_millis(200)).await;
            let restarted = now();
            let restart = Fault::RestartServer {
                server: ServerRef::Id(down),
            };
            cluster.inject(&restart).await;
            let created = pending.await.expect("the write's task ends");
            assert_eq!(created.map(|c| c.path), Ok("/two".into()), "seed {seed}");
            Some(now().duration_since(restarted).as_millis() as u64)
        });
        if let Some(after_ms) = committed_after_ms {
            assert!(
                after_ms < 5_000,
                "seed {seed}: the write waited {after_ms} ms after the follower rejoined: it committed only when the cut follower's link healed"
            );
            checked += 1;
        }
    }
    println!("a waiting write commits once a follower rejoins: checked on {checked} of 20 seeds");
    assert!(
        checked >= 3,
        "only {checked} of 20 seeds put the writer on the leader"
    );
}

/// Two servers that both believe they won an epoch (each holds a quorum of votes without the
/// other's): the one a quorum took is established, the other never serves nor shows as leading,
/// gives up after `syncLimit` ticks and joins it. Before, each counted the other's heartbeats as a
/// follower's, and both led for ever.
#[test]
fn two_servers_claiming_one_epoch_end_with_one_leader() {
    use zkh_sim::protocol::Addr;
    use zkh_sim::server::RoleSummary;
    for seed in zkh_sim::seed::seeds(0..10) {
        run_seed(seed, 300, |seed| async move {
            let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
            for id in 1..=3 {
                let kill = Fault::KillServer {
                    server: ServerRef::Id(id),
                };
                cluster.inject(&kill).await;
            }
            // Server 2 does not hear server 3: it wins among {1, 2} while 3 wins among all three.
            cluster.net().cut(Addr::Server(3), Addr::Server(2));
            for id in 1..=3 {
                let restart = Fault::RestartServer {
                    server: ServerRef::Id(id),
                };
                cluster.inject(&restart).await;
            }
            let restarted = now();
            let mut most_leading = 0;
            while now().duration_since(restarted) < Duration::from_millis(20_000) {
                if now().duration_since(restarted) > Duration::from_millis(1_000) {
                    cluster.net().restore(Addr::Server(3), Addr::Server(2));
                }
                let roles = cluster.roles();
                let leading = roles
                    .iter()
                    .filter(|r| matches!(r, RoleSummary::Leading(_)))
                    .count();
                most_leading = most_leading.max(leading);
                sleep(Duration::from_millis(10)).await;
            }
            assert!(
                most_leading <= 1,
                "seed {seed}: {most_leading} servers led at once"
            );
            let leader = cluster.wait_for_leader(1).await.unwrap_or_else(|| {
                panic!(
                    "seed {seed}: no leader with a quorum: {:?}",
                    cluster.roles()
                )
            });
            let following = cluster
                .roles()
                .iter()
                .filter(|r| **r == RoleSummary::Following(leader))
                .count();
            assert_eq!(following, 2, "seed {seed}: {:?}", cluster.roles());
        });
    }
}

/// A write the leader answered survives the leader dying before its commits reach the
/// followers: they had logged it (acknowledged its proposal), and the new leader commits what it
/// logged, as ZooKeeper's leader starts its epoch from its log. Before, a follower dropped its
/// logged proposals when it lost its leader, and the write the client was told succeeded was gone.
#[test]
fn a_write_the_leader_answered_survives_the_leader_dying_before_its_commits_go_out() {
    let mut checked = 0;
    for seed in zkh_sim::seed::seeds(0..30) {
        let survived = run_seed(seed, 300, |seed| async move {
            let (mut cluster, writer, leader) = writer_on_the_leader(seed).await?;
            writer
                .create("/acked", b"", CreateMode::Persistent)
                .await
                .expect("the leader commits it");
            // The reply is in; the leader's commits to its followers, sent with it, may not be.
            cluster
                .inject(&Fault::KillServer {
                    server: ServerRef::Id(leader),
                })
                .await;
            cluster.wait_for_leader(10_000).await.expect("a new leader");
            for _ in 0..100 {
                match writer.exists("/acked", false).await {
                    Ok(stat) => return Some(stat.is_some()),
                    Err(ZkError::ConnectionLoss) => sleep(Duration::from_millis(100)).await,
                    Err(other) => panic!("seed {seed}: {other:?}"),
                }
            }
            panic!("seed {seed}: the writer never reconnected");
        });
        if let Some(survived) = survived {
            assert!(
                survived,
                "seed {seed}: the write the leader answered is gone"
            );
            checked += 1;
        }
    }
    println!("an answered write survives its leader: checked on {checked} of 30 seeds");
    assert!(
        checked >= 5,
        "only {checked} of 30 seeds put the writer on the leader"
    );
}

/// A reply and a later watch event reach the application in the order they arrived, even when
/// the application polls its events first (as the recipe driver does): the Java client's one
/// event thread runs reply callbacks and watchers in the order the server sent them. Before,
/// an event that arrived after a `getData` reply overtook it, and Elastic-Job's election then
/// waited for ever on a watch that had already fired (catalogue election scenarios, seed 0).
#[test]
fn an_event_that_arrived_after_a_reply_is_not_seen_before_it() {
    for seed in zkh_sim::seed::seeds(0..10) {
        let first = run_seed(seed, 60, |seed| async move {
            let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
            let owner = cluster.add_client(0, T, false).await.unwrap();
            let watcher = cluster.add_client(1, T, false).await.unwrap();
            owner
                .create("/n", b"", CreateMode::Persistent)
                .await
                .unwrap();
            // Let the create reach the watcher's server before it reads; forget the session's
            // own events so far.
            sleep(Duration::from_millis(50)).await;
            while watcher.try_next_event().is_some() {}
            let mut read = Box::pin(watcher.get_data("/n", true));
            tokio::select! {
                biased;
                _ = &mut read => panic!("seed {seed}: a read cannot be answered before it is sent"),
                () = std::future::ready(()) => {}
            }
            // The reply arrives (nobody takes it yet); then the delete fires the watch.
            sleep(Duration::from_millis(50)).await;
            owner.delete("/n", -1).await.unwrap();
            sleep(Duration::from_millis(50)).await;
            let first = tokio::select! {
                biased;
                event = watcher.next_event() => format!("event {event:?}"),
                reply = &mut read => format!("reply {:?}", reply.map(|(data, _)| data)),
            };
            if first.starts_with("event") {
                return first;
            }
            let then = watcher.next_event().await;
            assert!(
                matches!(&then, Some(ClientEvent::Watch(w)) if w.event_type == EventType::NodeDeleted),
                "seed {seed}: then the NodeDeleted, not {then:?}"
            );
            first
        });
        assert_eq!(
            first, "reply Ok([])",
            "seed {seed}: the event overtook the reply"
        );
    }
}

/// A follower asks the leader whether a session a client resumes still lives before it answers
/// (ZooKeeper's REVALIDATE), and the leader touches the session as it says yes. Before, a
/// follower accepted the session on its own: a client cut off for longer than its timeout, but
/// back before the leader's expiry bucket, reconnected with its session and lost it a moment
/// later, when the leader, not yet told of the reconnection, expired it (`catalog/lock-partition`
/// unfenced: the lock's holder lost its session in its critical section).
#[test]
fn a_session_resumed_through_a_follower_is_not_expired_under_the_client() {
    let mut resumed = 0;
    for seed in zkh_sim::seed::seeds(0..20) {
        let kept = run_seed(seed, 120, |seed| async move {
            let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
            let client = cluster.add_client(0, T, false).await.unwrap();
            client
                .create("/mine", b"", CreateMode::Ephemeral)
                .await
                .unwrap();
            sleep(Duration::from_millis(seed * 97 % 1000)).await;
            session_events(&client);
            // Longer than the timeout, shorter than the leader's bucket may be.
            let cut_ms = T + 1500 + seed * 53 % 500;
            cluster.inject(&isolate(0, false, cut_ms)).await;
            sleep(Duration::from_millis(cut_ms)).await;
            cluster.end_due_faults();
            let back = loop {
                let events = session_events(&client);
                if let Some(event) = events.iter().find(|event| {
                    matches!(
                        event,
                        SessionEvent::Reconnected { .. } | SessionEvent::Expired
                    )
                }) {
                    break *event;
                }
                sleep(Duration::from_millis(50)).await;
            };
            if !matches!(back, SessionEvent::Reconnected { .. }) {
                return None;
            }
            // Connected, pinging, no fault: the session and its ephemeral stay.
            sleep(Duration::from_millis(3 * T)).await;
            let later = session_events(&client);
            let mine = client.exists("/mine", false).await;
            Some((later, mine.map(|stat| stat.is_some())))
        });
        if let Some((later, mine)) = kept {
            resumed += 1;
            assert!(
                later.is_empty() && mine == Ok(true),
                "seed {seed}: a resumed session was lost under its connected client: {later:?}, \
                 its ephemeral {mine:?}"
            );
        }
    }
    assert!(
        resumed >= 5,
        "only {resumed} of 20 seeds resumed their session: widen the window"
    );
}
