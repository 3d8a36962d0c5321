//! "A read after sync is up to date" (`zkh_model::guarantees`, module `sync`) against a server
//! fault of our own design: followers that answer a `sync` at once from their own state instead
//! of catching up with the leader first. A reader on a follower 1 s behind syncs and reads a
//! node that a writer changed and was answered for: it must see the change, and with the
//! defect it does not, and the guarantee names it. The unchanged servers keep every guarantee
//! on the same scenario and seeds, with the read sent after the sync's answer and sent right
//! behind the sync (ZooKeeper holds a session's read behind its sync).
#![cfg(madsim)]

use crate::common;

use common::{both, broken_guarantees};

use std::time::Duration;

use zkh_model::guarantees::SYNC_THEN_READ;
use zkh_recipes::{CreateMode, ZkClient};
use zkh_sim::cluster::{Cluster, ClusterConfig};
use zkh_sim::fault::{Fault, ServerRef};
use zkh_sim::run::run_seed;
use zkh_sim::server::ServerDefects;

/// The seeds on which the unchanged servers must keep every guarantee.
const SEEDS: u64 = 30;

/// What the reader saw of `/x` after its sync, and the always-guarantees the run broke.
fn sync_then_read(seed: u64, defects: ServerDefects, pipelined: bool) -> (Vec<u8>, Vec<String>) {
    run_seed(seed, 300, move |seed| async move {
        let config = ClusterConfig {
            defects,
            ..ClusterConfig::default()
        };
        let mut cluster = Cluster::start(seed, config).await;
        let leader = cluster.wait_for_leader(10_000).await.expect("a leader");
        let writer = cluster.add_client(0, 4000, false).await.expect("connects");
        (writer.create("/x", b"0", CreateMode::Persistent).await).expect("created");
        // A reader connected to a follower: clients pick their server from the seed.
        let mut reader = None;
        for id in 1..20 {
            let client = cluster.add_client(id, 4000, false).await.expect("connects");
            match client.connected_server() {
                Some(server) if server != leader => {
                    reader = Some((client, server));
                    break;
                }
                _ => {}
            }
        }
        let (reader, follower) = reader.expect("a client on a follower within 19");
        let slow = Fault::SlowFollower {
            server: ServerRef::Id(follower),
            delay_ms: 1000,
            duration_ms: 10_000,
        };
        assert!(cluster.inject(&slow).await, "the follower slowed");
        madsim::time::sleep(Duration::from_millis(100)).await;
        (writer.set_data("/x", b"1", -1).await).expect("changed");
        let read = if pipelined {
            let (synced, read) = both(reader.sync("/x"), reader.get_data("/x", false)).await;
            synced.expect("synced");
            read
        } else {
            reader.sync("/x").await.expect("synced");
            reader.get_data("/x", false).await
        };
        let (seen, _) = read.expect("read");
        (
            seen,
            broken_guarantees(&cluster.history(), &cluster.commit_logs()),
        )
    })
}

#[test]
fn a_follower_that_answers_sync_from_its_own_state_breaks_a_read_after_sync() {
    let defect = ServerDefects {
        sync_answered_locally: true,
        ..ServerDefects::default()
    };
    let (seen, broken) = sync_then_read(0, defect, false);
    println!("caught at seed 0: {broken:?}");
    assert_eq!(seen, b"0", "the read missed the write");
    assert!(
        broken
            .iter()
            .any(|b| b.starts_with(SYNC_THEN_READ) && b.contains("the sync itself was answered")),
        "{broken:?}"
    );
}

#[test]
fn a_read_after_sync_sees_every_write_acknowledged_before_it() {
    for seed in 0..SEEDS {
        for pipelined in [false, true] {
            assert_eq!(
                sync_then_read(seed, ServerDefects::default(), pipelined),
                (b"1".to_vec(), Vec::<String>::new()),
                "seed {seed}, read sent behind the sync: {pipelined}"
            );
        }
    }
}
