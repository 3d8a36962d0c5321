//! "Linearizable writes" and "one leader per epoch" (`zkh_model::guarantees`, module `order`)
//! against two server faults of our own design. The leader is cut off with one client; the two
//! other servers, with a second client, elect a new leader, which acknowledges the second
//! client's write at the new epoch; then the first client writes through the old leader.
//!
//! - A leader that commits on its own acknowledgement and keeps leading when its followers fall
//!   silent acknowledges that write at its old epoch's next zxid, lower than a write
//!   acknowledged before it was issued: "linearizable writes" catches it.
//! - A leader that, having lost its quorum, starts the next epoch alone and serves in it, leads
//!   the very epoch the majority's new leader leads: "one leader per epoch" catches it.
//!
//! The unchanged servers step down, the cut-off client's write fails, and every guarantee holds.
#![cfg(madsim)]

use crate::common;

use common::broken_guarantees;

use std::collections::BTreeSet;
use std::time::Duration;

use zkh_model::guarantees::{LINEARIZABLE_WRITES, ONE_LEADER_PER_EPOCH};
use zkh_recipes::{CreateMode, ZkClient};
use zkh_sim::cluster::{Cluster, ClusterConfig};
use zkh_sim::fault::{Fault, NodeRef, ServerRef};
use zkh_sim::run::run_seed;
use zkh_sim::server::ServerDefects;

/// The seeds on which the unchanged servers must keep every guarantee.
const SEEDS: u64 = 10;

/// Whether the cut-off client's write was acknowledged (within 20 s), and the always-guarantees the run broke.
fn split_leader(seed: u64, defects: ServerDefects) -> (bool, Vec<String>) {
    run_seed(seed, 300, move |seed| async move {
        // Half-second ticks: a leader steps down, and followers give up on it, after 2.5 s.
        let config = ClusterConfig {
            defects,
            tick_ms: 500,
            ..ClusterConfig::default()
        };
        let mut cluster = Cluster::start(seed, config).await;
        let leader = cluster.wait_for_leader(10_000).await.expect("a leader");
        // One client on the leader, one on a follower: clients pick their server from the seed.
        let (mut cut_off, mut majority) = (None, None);
        for id in 0..40 {
            let client = cluster.add_client(id, 8000, false).await.expect("connects");
            match client.connected_server() {
                Some(server) if server == leader => cut_off = cut_off.or(Some((id, client))),
                Some(_) => majority = majority.or(Some((id, client))),
                None => {}
            }
            if cut_off.is_some() && majority.is_some() {
                break;
            }
        }
        let ((old_side, cut_off), (new_side, majority)) = (
            cut_off.expect("a client on the leader"),
            majority.expect("one on a follower"),
        );
        (majority.create("/x", b"0", CreateMode::Persistent).await).expect("created");
        let followers = (1..=3).filter(|s| *s != leader);
        let fault = Fault::Partition {
            a: BTreeSet::from([
                NodeRef::Server(ServerRef::Id(leader)),
                NodeRef::Client(old_side),
            ]),
            b: (followers.map(|s| NodeRef::Server(ServerRef::Id(s))))
                .chain([NodeRef::Client(new_side)])
                .collect(),
            one_way: false,
            duration_ms: 60_000,
        };
        assert!(cluster.inject(&fault).await, "partitioned");
        // The majority's new leader acknowledges a write at its new epoch.
        let old_epoch = 1;
        let mut acknowledged = false;
        for _ in 0..60 {
            madsim::time::sleep(Duration::from_millis(500)).await;
            if let Ok(stat) = majority.set_data("/x", b"new", -1).await {
                assert!(stat.mzxid >> 32 > old_epoch, "written at the new epoch");
                acknowledged = true;
                break;
            }
        }
        assert!(acknowledged, "the majority elected a leader within 30 s");
        // A lone leader that cannot commit never answers: 20 s is past the unchanged servers'
        // step-down and the client's ConnectionLoss.
        let old_write =
            madsim::time::timeout(Duration::from_secs(20), cut_off.set_data("/x", b"old", -1))
                .await;
        let broken = broken_guarantees(&cluster.history(), &cluster.commit_logs());
        (matches!(old_write, Ok(Ok(_))), broken)
    })
}

#[test]
fn a_leader_that_commits_alone_after_a_new_one_was_elected_breaks_linearizable_writes() {
    let defect = ServerDefects {
        leader_commits_alone: true,
        ..ServerDefects::default()
    };
    let (acknowledged, broken) = split_leader(0, defect);
    println!("caught at seed 0: {broken:?}");
    assert!(
        acknowledged,
        "the old leader acknowledged the cut-off write"
    );
    let linearizable = (broken.iter())
        .find(|b| b.starts_with(LINEARIZABLE_WRITES))
        .unwrap_or_else(|| panic!("linearizable writes among {broken:?}"));
    assert!(
        linearizable.contains("was acknowledged with zxid 0x2") && linearizable.contains("0x1"),
        "{linearizable}"
    );
}

#[test]
fn a_leader_that_starts_the_next_epoch_alone_breaks_one_leader_per_epoch() {
    let defect = ServerDefects {
        leads_next_epoch_alone: true,
        ..ServerDefects::default()
    };
    let (acknowledged, broken) = split_leader(0, defect);
    println!("caught at seed 0: {broken:?}");
    assert!(
        !acknowledged,
        "a lone leader serves but cannot commit without a quorum"
    );
    let leaders = (broken.iter())
        .find(|b| b.starts_with(ONE_LEADER_PER_EPOCH))
        .unwrap_or_else(|| panic!("one leader per epoch among {broken:?}"));
    assert!(leaders.contains("both led epoch 2"), "{leaders}");
}

#[test]
fn a_leader_cut_off_from_its_quorum_steps_down_and_every_guarantee_holds() {
    for seed in 0..SEEDS {
        let (acknowledged, broken) = split_leader(seed, ServerDefects::default());
        assert_eq!((acknowledged, broken), (false, Vec::new()), "seed {seed}");
    }
}
