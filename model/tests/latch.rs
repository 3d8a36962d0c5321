//! The leader latch over the in-memory client.
#![cfg(not(madsim))]

use crate::support;

use support::paused_runtime as runtime;

use std::sync::Arc;
use std::time::Duration;

use zkh_model::MemoryEnsemble;
use zkh_recipes::latch::{Latch, LatchReport, LatchVariant};
use zkh_recipes::real::TokioClock;

fn latch(ensemble: &MemoryEnsemble, variant: LatchVariant, name: &str) -> Latch {
    let client = Arc::new(ensemble.connect());
    let (latch, driver) = Latch::start(
        client,
        Arc::new(TokioClock),
        variant,
        "/election/job",
        name,
        name,
    );
    tokio::spawn(driver);
    latch
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[test]
fn the_first_leads_and_the_next_takes_over_when_it_closes() {
    runtime().block_on(async {
        let ensemble = MemoryEnsemble::new();
        let a = latch(&ensemble, LatchVariant::Correct, "a");
        let first = a.await_leadership().await.expect("a leads");
        let b = latch(&ensemble, LatchVariant::Correct, "b");
        let c = latch(&ensemble, LatchVariant::Correct, "c");
        settle().await;
        let data = ensemble.inspect(|m| {
            let dir = m.tree().get("/election/job").expect("the latch dir");
            let first = dir.children.iter().next().expect("a child").clone();
            m.tree()
                .get(&format!("/election/job/{first}"))
                .expect("node")
                .data
                .clone()
        });
        assert_eq!(data, b"a", "the node's data is the participant id");
        a.close().await;
        let second = b.await_leadership().await.expect("b leads after a closed");
        assert!(second > first);
        settle().await;
        let _ = c;
        assert_eq!(
            ensemble.inspect(|m| m.tree().get("/election/job").unwrap().children.len()),
            2
        );
    });
}

#[test]
fn trust_predecessor_leads_beside_the_real_leader() {
    for (variant, c_leads) in [
        (LatchVariant::Correct, false),
        (LatchVariant::TrustPredecessor, true),
    ] {
        runtime().block_on(async move {
            let ensemble = MemoryEnsemble::new();
            let a = latch(&ensemble, variant, "a");
            a.await_leadership().await.expect("a leads");
            let b = latch(&ensemble, variant, "b");
            settle().await;
            let c = latch(&ensemble, variant, "c");
            settle().await;
            // b, a waiter, leaves: c's predecessor is gone, but a still leads.
            b.close().await;
            settle().await;
            let report = tokio::time::timeout(Duration::from_millis(500), c.next_report()).await;
            let led = matches!(report, Ok(Some(LatchReport::Leader { .. })));
            assert_eq!(
                led, c_leads,
                "{variant:?}: c leads while a does: {report:?}"
            );
        });
    }
}
