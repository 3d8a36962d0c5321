//! "A watch fires for the first change" (`zkh_model::guarantees`, module `first`) against a
//! server fault of our own design: servers that let the first change a watch sees go by
//! unannounced and fire the watch with the next one. The watcher sets one data watch; a writer
//! changes the node twice. Caught either way the history shows it: the watcher's connection
//! answers it past the first change without the event, or the event comes for the second
//! change. The unchanged servers keep every guarantee on the same scenario and seeds.
#![cfg(madsim)]

use crate::common;

use common::broken_guarantees;

use std::time::Duration;

use zkh_model::guarantees::WATCH_FIRES_FOR_THE_FIRST_CHANGE;
use zkh_recipes::{CreateMode, ZkClient};
use zkh_sim::cluster::{Cluster, ClusterConfig};
use zkh_sim::run::run_seed;
use zkh_sim::server::ServerDefects;

/// The seeds on which the unchanged servers must keep every guarantee.
const SEEDS: u64 = 30;

/// Client 0 watches `/x`; client 1 changes it, twice, 300 ms apart; between the two changes,
/// client 0 reads `/y` if `read_between`: the broken guarantees.
fn two_changes(seed: u64, defects: ServerDefects, read_between: bool) -> Vec<String> {
    run_seed(seed, 300, move |seed| async move {
        let config = ClusterConfig {
            defects,
            ..ClusterConfig::default()
        };
        let mut cluster = Cluster::start(seed, config).await;
        let watcher = cluster.add_client(0, 4000, false).await.expect("connects");
        let writer = cluster.add_client(1, 4000, false).await.expect("connects");
        for path in ["/x", "/y"] {
            (writer.create(path, b"0", CreateMode::Persistent).await).expect("created");
        }
        watcher.get_data("/x", true).await.expect("watched");
        for round in 1..=2 {
            let data = format!("{round}");
            (writer.set_data("/x", data.as_bytes(), -1).await).expect("changed");
            madsim::time::sleep(Duration::from_millis(300)).await;
            if read_between {
                // Its reply carries the change's zxid (the writer's write was applied on every
                // server within the pause).
                watcher.sync("/y").await.expect("synced");
                watcher.get_data("/y", false).await.expect("read");
            }
        }
        broken_guarantees(&cluster.history(), &cluster.commit_logs())
    })
}

fn defect() -> ServerDefects {
    ServerDefects {
        first_change_unannounced: true,
        ..ServerDefects::default()
    }
}

#[test]
fn an_event_for_the_second_change_breaks_a_watch_fires_for_the_first_change() {
    let broken = two_changes(0, defect(), false);
    println!("caught at seed 0: {broken:?}");
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(
        broken[0].starts_with(WATCH_FIRES_FOR_THE_FIRST_CHANGE)
            && broken[0].contains("its watch was fired by zxid"),
        "{broken:?}"
    );
}

#[test]
fn a_reply_past_an_unannounced_first_change_breaks_a_watch_fires_for_the_first_change() {
    let broken = two_changes(0, defect(), true);
    println!("caught at seed 0: {broken:?}");
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(
        broken[0].starts_with(WATCH_FIRES_FOR_THE_FIRST_CHANGE)
            && broken[0].contains("a first change went by unannounced"),
        "{broken:?}"
    );
}

#[test]
fn servers_that_announce_each_first_change_keep_every_guarantee() {
    for seed in 0..SEEDS {
        for read_between in [false, true] {
            assert_eq!(
                two_changes(seed, ServerDefects::default(), read_between),
                Vec::<String>::new(),
                "seed {seed}, read between: {read_between}"
            );
        }
    }
}
