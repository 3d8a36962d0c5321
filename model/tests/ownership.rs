//! The model's own invariant "claims are owned" (`RecipeModel::owns_its_claims`): at every
//! settled moment, what a client believes is its own exists and is owned by its current
//! session. Its control of our own design, the job's `no-reregister` (a new session after an
//! expiry does not register the instance again), breaks nothing else: no run is lost or
//! doubled, since the others fail its items over and shard without it.
//!
//! The leader recipes and the lock claim the node their role stands on: CURATOR-696 (the
//! latch's `no-owner-check`) is caught by it at the first settled moment of its false belief,
//! and Elastic-Job's election, ported faithfully, shows the same shape (a recorded finding).
#![cfg(not(madsim))]

use zkh_model::check::{
    check_within, walk, Acting, ElectionWorkload, FaultBudget, JobWorkload, LatchWorkload, Limits,
    LockWorkload, MasterWorkload, RecipeModel, WalkLimits, Workload, CLAIM_JUDGED,
    EPHEMERAL_JUDGED, OWNERSHIP,
};
use zkh_recipes::elastic_job::JobVariant;
use zkh_recipes::election::ElectionVariant;
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;
use zkh_recipes::master::MasterVariant;

fn job(variant: JobVariant, faults: &str) -> RecipeModel<JobWorkload> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    RecipeModel::new(JobWorkload::new(variant), 2, budget, Acting::CaughtUp)
}

#[test]
fn an_instance_that_does_not_register_again_is_caught_by_the_ownership_invariant() {
    let verdict = check_within(
        &job(JobVariant::NoReregister, "expire=1"),
        Limits::default(),
    );
    let violation = verdict.violation.expect("a violation");
    assert_eq!(violation.property, OWNERSHIP);
    assert_eq!(violation.path.len(), 43, "shortened to the shortest");
}

#[test]
fn the_correct_job_owns_its_registration_at_every_settled_moment() {
    // Exhaustively without faults and with a crash; by walks under an expiry or a client-side
    // expiry, whose spaces the search cannot finish.
    for faults in ["none", "crash=1"] {
        let verdict = check_within(&job(JobVariant::Correct, faults), Limits::default());
        assert!(
            verdict.complete && verdict.violation.is_none(),
            "{faults}: {verdict:?}"
        );
    }
    for faults in ["expire=1", "client-expire=1"] {
        let limits = WalkLimits {
            walks: 2_000,
            seed: 7,
            max_depth: 300,
        };
        let verdict = walk(&job(JobVariant::Correct, faults), limits);
        assert_eq!(verdict.violation, None, "{faults}");
        if faults == "expire=1" {
            // And the control under the same walks.
            let control = walk(&job(JobVariant::NoReregister, faults), limits);
            let found = control.violation.expect("the control, by walks");
            assert_eq!(found.property, OWNERSHIP);
        }
    }
}

fn model<W: Workload>(workload: W, clients: usize, faults: &str) -> RecipeModel<W> {
    let budget = FaultBudget::parse(faults).expect("a budget");
    RecipeModel::new(workload, clients, budget, Acting::CaughtUp)
}

#[test]
fn the_roles_of_the_correct_lock_latch_and_master_stand_on_nodes_they_own() {
    for faults in [
        "drop-reply=1,expire=1",
        "client-expire=1",
        "leader-change=1",
        "crash=1",
    ] {
        let lock = model(
            LockWorkload {
                variant: LockVariant::Correct,
            },
            3,
            faults,
        );
        let latch = model(
            LatchWorkload {
                variant: LatchVariant::Correct,
            },
            3,
            faults,
        );
        let master = model(
            MasterWorkload {
                variant: MasterVariant::Correct,
            },
            3,
            faults,
        );
        for verdict in [
            check_within(&lock, Limits::default()),
            check_within(&latch, Limits::default()),
            check_within(&master, Limits::default()),
        ] {
            assert!(verdict.complete, "{faults}: {verdict:?}");
            assert_eq!(verdict.violation, None, "{faults}");
        }
    }
}

#[test]
fn curator_696_is_a_false_claim_first() {
    let latch = model(
        LatchWorkload {
            variant: LatchVariant::NoOwnerCheck,
        },
        3,
        "client-expire=1",
    );
    let violation = check_within(&latch, Limits::default())
        .violation
        .expect("caught");
    assert_eq!(violation.property, OWNERSHIP);
    assert_eq!(violation.path.len(), 22, "shortened to the shortest");
}

/// A finding in the faithful profile of Elastic-Job 2.1.5's election (it leads while the leader
/// node holds its id, whoever's session owns it): after a client-side expiry it leads on the old
/// session's node. Under the other fault kinds it owns its claim.
#[test]
fn elastic_jobs_election_leads_on_the_old_sessions_node_after_a_client_side_expiry() {
    let correct = ElectionWorkload {
        variant: ElectionVariant::Correct,
    };
    let violation = check_within(&model(correct, 2, "client-expire=1"), Limits::default())
        .violation
        .expect("the finding");
    assert_eq!(violation.property, OWNERSHIP);
    assert_eq!(violation.path.len(), 27, "shortened to the shortest");
    for faults in ["drop-reply=1,expire=1", "leader-change=1", "crash=1"] {
        let correct = ElectionWorkload {
            variant: ElectionVariant::Correct,
        };
        let verdict = check_within(&model(correct, 2, faults), Limits::default());
        assert!(verdict.complete, "{faults}: {verdict:?}");
        assert_eq!(verdict.violation, None, "{faults}");
    }
}

/// The `sometimes` companions of the claims and orphans invariants: a correct check reaches
/// both (a settled moment with a claim, a quiet one with a live session's ephemeral node), and
/// a search too short for any settled claim reports both unreached, so a pass of either
/// invariant that judged nothing says so.
#[test]
fn the_claim_and_orphan_invariants_have_sometimes_companions_that_can_go_unreached() {
    let lock = model(
        LockWorkload {
            variant: LockVariant::Correct,
        },
        2,
        "drop-reply=1,expire=1",
    );
    let verdict = check_within(&lock, Limits::default());
    assert!(
        verdict.complete && verdict.violation.is_none(),
        "{verdict:?}"
    );
    assert!(verdict.unreached.is_empty(), "{:?}", verdict.unreached);
    let short = WalkLimits {
        walks: 20,
        seed: 3,
        max_depth: 2,
    };
    let unreached = walk(&lock, short).unreached;
    for companion in [CLAIM_JUDGED, EPHEMERAL_JUDGED] {
        assert!(unreached.contains(&companion), "{unreached:?}");
    }
    let long = WalkLimits {
        max_depth: 300,
        ..short
    };
    let unreached = walk(&lock, long).unreached;
    assert!(
        !unreached.contains(&CLAIM_JUDGED) && !unreached.contains(&EPHEMERAL_JUDGED),
        "{unreached:?}"
    );
}
