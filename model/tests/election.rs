//! Elastic-Job's job election over the in-memory client.
#![cfg(not(madsim))]

use crate::support;

use support::paused_runtime as runtime;

use std::sync::Arc;
use std::time::Duration;

use zkh_model::MemoryEnsemble;
use zkh_recipes::election::{Election, ElectionReport, ElectionVariant};
use zkh_recipes::real::TokioClock;
use zkh_recipes::ZkClient;

async fn leadership(election: &Election) -> Option<i64> {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), election.next_report())
            .await
            .ok()??
        {
            ElectionReport::Leader { token } => return Some(token),
            ElectionReport::Follower | ElectionReport::NotLeader => {}
        }
    }
}

#[test]
fn one_instance_leads_writes_its_id_and_another_takes_over_when_its_session_ends() {
    runtime().block_on(async {
        let ensemble = MemoryEnsemble::new();
        let a_client = Arc::new(ensemble.connect());
        let (a, driver) = Election::start(
            Arc::clone(&a_client),
            Arc::new(TokioClock),
            ElectionVariant::Correct,
            "/orders-job",
            "10.0.0.1@-@1",
            "a",
        );
        tokio::spawn(driver);
        let first = leadership(&a).await.expect("a leads");
        let data = ensemble.inspect(|m| {
            m.tree()
                .get("/orders-job/leader/election/instance")
                .map(|n| n.data.clone())
        });
        assert_eq!(
            data.as_deref(),
            Some(b"10.0.0.1@-@1".as_slice()),
            "the instance node holds the leader's id"
        );
        let latch_nodes = ensemble.inspect(|m| {
            m.tree()
                .get("/orders-job/leader/election/latch")
                .map_or(0, |n| n.children.len())
        });
        assert_eq!(
            latch_nodes, 0,
            "the election latch is closed after the callback"
        );
        let (b, driver) = Election::start(
            Arc::new(ensemble.connect()),
            Arc::new(TokioClock),
            ElectionVariant::Correct,
            "/orders-job",
            "10.0.0.2@-@2",
            "b",
        );
        tokio::spawn(driver);
        tokio::time::sleep(Duration::from_millis(100)).await;
        ensemble.expire(a_client.session_id());
        let second = leadership(&b)
            .await
            .expect("b leads once a's session is gone");
        assert!(second > first);
    });
}
