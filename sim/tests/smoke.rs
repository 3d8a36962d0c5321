//! The ensemble comes up, elects, and serves reads and writes.
#![cfg(madsim)]

use zkh_recipes::{CreateMode, ZkClient};
use zkh_sim::cluster::{Cluster, ClusterConfig};
use zkh_sim::run::run_seed;

#[test]
fn an_ensemble_elects_the_highest_id_and_serves() {
    for servers in [1, 3, 5] {
        let leader = run_seed(7, 120, move |seed| async move {
            let mut cluster = Cluster::start(
                seed,
                ClusterConfig {
                    servers,
                    ..ClusterConfig::default()
                },
            )
            .await;
            let leader = cluster.leader();
            let a = cluster
                .add_client(0, 4000, false)
                .await
                .expect("client 0 connects");
            let b = cluster
                .add_client(1, 4000, false)
                .await
                .expect("client 1 connects");
            let created = a
                .create("/a", b"x", CreateMode::Persistent)
                .await
                .expect("create");
            b.sync("/").await.expect("sync");
            let (data, stat) = b.get_data("/a", false).await.expect("read");
            assert_eq!(
                (data.as_slice(), stat.czxid),
                (b"x".as_slice(), created.stat.czxid)
            );
            assert_eq!(created.stat.czxid >> 32, 1, "epoch 1");
            leader
        });
        assert_eq!(
            leader,
            Some(servers),
            "at start, with all zxids 0, the highest id leads"
        );
    }
}

/// A sweep runs thousands of seeds in one process: a finished run must free its servers' and
/// clients' tasks, and with them everything they hold (here, the run's history).
#[test]
fn a_finished_run_frees_its_processes() {
    let history = run_seed(3, 120, |seed| async move {
        let mut cluster = Cluster::start(seed, ClusterConfig::default()).await;
        let client = cluster
            .add_client(0, 4000, false)
            .await
            .expect("client 0 connects");
        client
            .create("/a", b"x", CreateMode::Persistent)
            .await
            .expect("create");
        std::sync::Arc::downgrade(&cluster.history_handle())
    });
    assert_eq!(
        history.strong_count(),
        0,
        "the run's tasks still hold its history after the run"
    );
}
