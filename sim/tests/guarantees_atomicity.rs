//! "Atomicity" (`zkh_model::guarantees`, module `atomicity`) against a server fault of our own
//! design: servers that apply a failed `multi`'s operations up to the one that failed, and
//! answer the failure all the same. A client creates `/a`, then sends a multi that creates `/b`
//! and then `/a` again: the second create fails with NodeExists, so the multi fails and `/b` must
//! not exist. With the defect every server keeps `/b`, and the guarantee names the multi. The
//! unchanged servers keep every guarantee on the same scenario.
#![cfg(madsim)]

use crate::common;

use common::broken_guarantees;

use zkh_model::guarantees::ATOMICITY;
use zkh_recipes::{CreateMode, Op, ZkClient};
use zkh_sim::cluster::{Cluster, ClusterConfig};
use zkh_sim::run::run_seed;
use zkh_sim::server::ServerDefects;

/// The seeds on which the unchanged servers must keep every guarantee.
const SEEDS: u64 = 30;

/// Whether the multi failed, whether `/b` exists after it, and the always-guarantees the run
/// broke.
fn failed_multi(seed: u64, defects: ServerDefects) -> (bool, bool, Vec<String>) {
    run_seed(seed, 300, move |seed| async move {
        let config = ClusterConfig {
            defects,
            ..ClusterConfig::default()
        };
        let mut cluster = Cluster::start(seed, config).await;
        cluster.wait_for_leader(10_000).await.expect("a leader");
        let client = cluster.add_client(0, 4000, false).await.expect("connects");
        (client.create("/a", b"", CreateMode::Persistent).await).expect("created");
        let create = |path: &str| Op::Create {
            path: path.to_owned(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        };
        let multi = client.multi(&[create("/b"), create("/a")]).await;
        let exists = (client.exists("/b", false).await).expect("answered");
        (
            multi.is_err(),
            exists.is_some(),
            broken_guarantees(&cluster.history(), &cluster.commit_logs()),
        )
    })
}

#[test]
fn servers_that_apply_a_failed_multi_in_part_break_atomicity() {
    let defect = ServerDefects {
        multi_applied_in_part: true,
        ..ServerDefects::default()
    };
    let (failed, kept, broken) = failed_multi(0, defect);
    println!("caught at seed 0: {broken:?}");
    assert!(failed && kept, "the multi failed and left /b behind");
    let atomicity = (broken.iter())
        .find(|b| b.starts_with(ATOMICITY))
        .unwrap_or_else(|| panic!("atomicity among {broken:?}"));
    assert!(
        atomicity.contains("failed at its operation 2 with NodeExists")
            && atomicity.contains("/b is"),
        "{atomicity}"
    );
}

#[test]
fn a_failed_multi_leaves_no_trace_and_every_guarantee_holds() {
    for seed in 0..SEEDS {
        let (failed, kept, broken) = failed_multi(seed, ServerDefects::default());
        assert_eq!(
            (failed, kept, broken),
            (true, false, Vec::new()),
            "seed {seed}"
        );
    }
}
