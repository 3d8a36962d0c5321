//! The guarantee checker (`zkh_model::guarantees`) against a server fault of our own design:
//! servers that serve a client whose last seen zxid is ahead of their own (ZooKeeper refuses
//! such a client until the server catches up). The lock's clients write all the time; under a
//! slow follower and lost replies, a session that reconnects to the lagging follower is
//! answered with an older view than it has seen: "single system image" must catch it within the seeds stated, and the unchanged
//! servers keep every guarantee on the same seeds. Second, servers that answer a write with its
//! epoch's first zxid instead of its transaction's: "one transaction per zxid" must catch two
//! writes acknowledged with one zxid. Third, servers that label a read with the newest zxid
//! they have heard of rather than the one they applied: "sequentially consistent reads" must
//! catch a read whose answer is older than its zxid says. Fourth, servers that expire a session
//! and keep its ephemeral nodes: "a session's end is final" must name the session and the node.
//! Fifth, servers that name a sequential node by its parent's number of children: "sequential
//! suffixes unique" must catch a suffix used again. Sixth, servers that hold a connection's
//! watch events until its next reply: "watch events in order" must catch the data before the
//! event.
#![cfg(madsim)]

use crate::common;

use common::{both, broken_guarantees};

use zkh_model::guarantees::CommitLogs;
use zkh_model::guarantees::{
    DURABILITY, FIFO_CLIENT_ORDER, ONE_TRANSACTION_PER_ZXID, SEQUENTIALLY_CONSISTENT_READS,
    SEQUENTIAL_SUFFIXES, SESSION_END_IS_FINAL, SINGLE_SYSTEM_IMAGE, WATCH_EVENTS_IN_ORDER,
    WATCH_FIRES_FOR_THE_FIRST_CHANGE, WATCH_FIRES_ONCE,
};
use zkh_recipes::lock::LockVariant;
use zkh_recipes::{CreateMode, ZkClient};
use zkh_sim::cluster::{Cluster, ClusterConfig};
use zkh_sim::fault::{Fault, FaultPlan, RandomFaults, ScriptedFault, ServerRef};
use zkh_sim::run::run_seed;
use zkh_sim::server::ServerDefects;
use zkh_sim::workload::{self, WorkloadConfig};

/// The seeds within which the control must be caught.
const WITHIN_SEEDS: u64 = 30;

/// A follower 1.5 s behind for 15 s, and lost replies that make clients reconnect.
fn plan() -> FaultPlan {
    FaultPlan {
        scripted: vec![ScriptedFault {
            at_ms: 1000,
            fault: Fault::SlowFollower {
                server: ServerRef::Follower,
                delay_ms: 1500,
                duration_ms: 15_000,
            },
        }],
        random: Some(RandomFaults {
            drop_reply_per_s: 1.0,
            ..RandomFaults::default()
        }),
        ..FaultPlan::default()
    }
}

/// The first always-guarantee the run of `seed` breaks, if any, under [`plan`].
fn broken(seed: u64, defects: ServerDefects) -> Option<String> {
    broken_under(seed, defects, plan)
}

/// The first always-guarantee the lock's run of `seed` under `faults` breaks, if any.
fn broken_under(seed: u64, defects: ServerDefects, faults: fn() -> FaultPlan) -> Option<String> {
    all_broken(seed, defects, faults).into_iter().next()
}

#[test]
fn a_server_that_serves_a_client_ahead_of_it_breaks_the_single_system_image() {
    let defect = ServerDefects {
        serve_clients_ahead: true,
        ..ServerDefects::default()
    };
    let caught = (0..WITHIN_SEEDS).find_map(|seed| broken(seed, defect).map(|b| (seed, b)));
    let (seed, broken_guarantee) = caught.expect("the control is caught within its seeds");
    println!("caught at seed {seed}: {broken_guarantee}");
    assert!(
        broken_guarantee.starts_with(SINGLE_SYSTEM_IMAGE),
        "{broken_guarantee}"
    );
    // Caught on the first seed today; the unchanged servers keep every guarantee on all.
    assert_eq!(seed, 0);
    for seed in 0..WITHIN_SEEDS {
        assert_eq!(broken(seed, ServerDefects::default()), None, "seed {seed}");
    }
}

/// The same control judged as a real client records a history (no reply's header zxid, no
/// commit logs): the single system image, read from the replies' stats, still catches it, so
/// the check `zkharness guarantees-real` runs on a real ensemble is not an empty one.
#[test]
fn a_server_that_serves_a_client_ahead_of_it_is_caught_from_the_stats_a_real_client_sees() {
    let defect = ServerDefects {
        serve_clients_ahead: true,
        ..ServerDefects::default()
    };
    let caught = (0..WITHIN_SEEDS).find_map(|seed| {
        let config = WorkloadConfig {
            defects: defect,
            ..WorkloadConfig::default()
        };
        let outcome = run_seed(seed, 600, move |s| {
            workload::stock(s, LockVariant::Correct, config, plan())
        });
        let recorded = zkh_model::probe::as_recorded_by_a_client(&outcome.history);
        let broken = broken_guarantees(&recorded, &CommitLogs::new());
        broken.into_iter().next().map(|b| (seed, b))
    });
    let (seed, broken_guarantee) = caught.expect("caught from the stats within the seeds");
    println!("caught from the stats at seed {seed}: {broken_guarantee}");
    assert!(
        broken_guarantee.starts_with(SINGLE_SYSTEM_IMAGE) && broken_guarantee.contains("pzxid"),
        "{broken_guarantee}"
    );
}

#[test]
fn writes_acknowledged_with_the_epochs_first_zxid_break_one_transaction_per_zxid() {
    let defect = ServerDefects {
        epoch_zxid_in_write_replies: true,
        ..ServerDefects::default()
    };
    let broken_guarantee = broken(0, defect).expect("caught on the first seed");
    assert!(
        broken_guarantee.starts_with(ONE_TRANSACTION_PER_ZXID),
        "{broken_guarantee}"
    );
}

#[test]
fn reads_labelled_with_a_zxid_not_yet_applied_break_sequentially_consistent_reads() {
    let defect = ServerDefects {
        stamp_reads_with_heard_zxid: true,
        ..ServerDefects::default()
    };
    let caught = (0..WITHIN_SEEDS).find_map(|seed| broken(seed, defect).map(|b| (seed, b)));
    let (seed, broken_guarantee) = caught.expect("the control is caught within its seeds");
    println!("caught at seed {seed}: {broken_guarantee}");
    assert!(
        broken_guarantee.starts_with(SEQUENTIALLY_CONSISTENT_READS),
        "{broken_guarantee}"
    );
    assert_eq!(seed, 0, "caught on the first seed today");
}

/// Leader crashes every few seconds under the lock's writes.
fn leader_crashes() -> FaultPlan {
    FaultPlan {
        random: Some(RandomFaults {
            kill_leader_per_s: 0.5,
            restart_after_ms: 1000,
            ..RandomFaults::default()
        }),
        ..FaultPlan::default()
    }
}

/// The first always-guarantee the run of `seed` under leader crashes breaks, if any.
fn broken_under_leader_crashes(seed: u64, defects: ServerDefects) -> Option<String> {
    broken_under(seed, defects, leader_crashes)
}

#[test]
fn a_new_leader_that_drops_what_it_logged_breaks_durability() {
    let defect = ServerDefects {
        leader_drops_logged_proposals: true,
        ..ServerDefects::default()
    };
    let caught = (0..WITHIN_SEEDS)
        .find_map(|seed| broken_under_leader_crashes(seed, defect).map(|b| (seed, b)));
    let (seed, broken_guarantee) = caught.expect("the control is caught within its seeds");
    println!("caught at seed {seed}: {broken_guarantee}");
    assert!(
        broken_guarantee.starts_with(DURABILITY),
        "{broken_guarantee}"
    );
    for seed in 0..WITHIN_SEEDS {
        assert_eq!(
            broken_under_leader_crashes(seed, ServerDefects::default()),
            None,
            "seed {seed}"
        );
    }
}

/// Server-side expiries of the lock's clients, whose lock nodes are ephemeral.
fn expiries() -> FaultPlan {
    FaultPlan {
        random: Some(RandomFaults {
            expire_session_per_s: 0.3,
            ..RandomFaults::default()
        }),
        ..FaultPlan::default()
    }
}

#[test]
fn servers_that_keep_an_expired_sessions_ephemerals_break_a_sessions_end_is_final() {
    let defect = ServerDefects {
        keep_ephemerals_on_expiry: true,
        ..ServerDefects::default()
    };
    let caught =
        (0..WITHIN_SEEDS).find_map(|seed| broken_under(seed, defect, expiries).map(|b| (seed, b)));
    let (seed, broken_guarantee) = caught.expect("the control is caught within its seeds");
    println!("caught at seed {seed}: {broken_guarantee}");
    assert!(
        broken_guarantee.starts_with(SESSION_END_IS_FINAL),
        "{broken_guarantee}"
    );
    for seed in 0..WITHIN_SEEDS {
        assert_eq!(
            broken_under(seed, ServerDefects::default(), expiries),
            None,
            "seed {seed}"
        );
    }
}

/// Every always-guarantee the lock's run of `seed` under `faults` breaks, with its detail.
fn all_broken(seed: u64, defects: ServerDefects, faults: fn() -> FaultPlan) -> Vec<String> {
    let config = WorkloadConfig {
        defects,
        ..WorkloadConfig::default()
    };
    let outcome = run_seed(seed, 600, move |s| {
        workload::stock(s, LockVariant::Correct, config, faults())
    });
    broken_guarantees(&outcome.history, &outcome.commit_logs)
}

/// No fault: the lock's clients create and delete their sequential nodes all the time.
fn no_faults() -> FaultPlan {
    FaultPlan::default()
}

#[test]
fn servers_that_name_a_sequential_node_by_its_parents_child_count_break_unique_suffixes() {
    let defect = ServerDefects {
        sequence_from_child_count: true,
        ..ServerDefects::default()
    };
    // The names no longer follow the agreed order's counter, so the replay's tree differs too
    // (durability, sequentially consistent reads): the suffixes' own check must be among them.
    let broken = all_broken(0, defect, no_faults);
    let suffixes = broken
        .iter()
        .find(|b| b.starts_with(SEQUENTIAL_SUFFIXES))
        .unwrap_or_else(|| panic!("caught on seed 0: {broken:?}"));
    println!("caught at seed 0: {suffixes}");
    assert!(suffixes.contains("was created after suffix"), "{suffixes}");
    assert_eq!(
        all_broken(0, ServerDefects::default(), no_faults),
        Vec::<String>::new()
    );
}

/// Client 0 watches `/x`; client 1 changes it; then client 0 reads `/y`, on one server, so
/// that its reply carries the change's zxid: the broken guarantees, once the event is in.
fn data_before_event(seed: u64, defects: ServerDefects) -> Vec<String> {
    run_seed(seed, 300, move |seed| async move {
        let config = ClusterConfig {
            servers: 1,
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
        writer.set_data("/x", b"1", -1).await.expect("changed");
        watcher.get_data("/y", false).await.expect("read");
        madsim::time::sleep(std::time::Duration::from_millis(500)).await;
        watcher.get_data("/y", false).await.expect("read again");
        broken_guarantees(&cluster.history(), &cluster.commit_logs())
    })
}

#[test]
fn servers_that_send_an_event_after_the_next_reply_break_watch_events_in_order() {
    let defect = ServerDefects {
        events_after_the_next_reply: true,
        ..ServerDefects::default()
    };
    let broken = data_before_event(0, defect);
    println!("caught at seed 0: {broken:?}");
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(
        broken[0].starts_with(WATCH_EVENTS_IN_ORDER)
            && broken[0].contains("the data came before the event that announces it"),
        "{broken:?}"
    );
    for seed in 0..WITHIN_SEEDS {
        assert_eq!(
            data_before_event(seed, ServerDefects::default()),
            Vec::<String>::new(),
            "seed {seed}"
        );
    }
}

/// Client 0 sets one watch on `/x` and one on `/`'s children; client 1 then changes `/x` and
/// adds children, three times each: the broken guarantees.
fn one_watch_many_changes(seed: u64, defects: ServerDefects) -> Vec<String> {
    run_seed(seed, 300, move |seed| async move {
        let config = ClusterConfig {
            defects,
            ..ClusterConfig::default()
        };
        let mut cluster = Cluster::start(seed, config).await;
        let watcher = cluster.add_client(0, 4000, false).await.expect("connects");
        let writer = cluster.add_client(1, 4000, false).await.expect("connects");
        (writer.create("/x", b"0", CreateMode::Persistent).await).expect("created");
        watcher.get_data("/x", true).await.expect("watched");
        watcher.get_children("/", true).await.expect("watched");
        for round in 1..=3 {
            let data = format!("{round}");
            writer
                .set_data("/x", data.as_bytes(), -1)
                .await
                .expect("changed");
            let child = format!("/c{round}");
            (writer.create(&child, b"", CreateMode::Persistent).await).expect("created");
            madsim::time::sleep(std::time::Duration::from_millis(300)).await;
        }
        broken_guarantees(&cluster.history(), &cluster.commit_logs())
    })
}

#[test]
fn servers_that_keep_a_watch_after_it_fires_break_a_watch_fires_once() {
    let defect = ServerDefects {
        watches_kept_after_firing: true,
        ..ServerDefects::default()
    };
    let broken = one_watch_many_changes(0, defect);
    println!("caught at seed 0: {broken:?}");
    assert!(
        broken[0].starts_with(WATCH_FIRES_ONCE) && broken[0].contains("fired twice"),
        "{broken:?}"
    );
    // The second event is also for a change no watch of the session waited for.
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(
        broken[1].starts_with(WATCH_FIRES_FOR_THE_FIRST_CHANGE),
        "{broken:?}"
    );
    for seed in 0..WITHIN_SEEDS {
        assert_eq!(
            one_watch_many_changes(seed, ServerDefects::default()),
            Vec::<String>::new(),
            "seed {seed}"
        );
    }
}

/// One client sends a write and, without waiting, a read of the same node: what the read saw,
/// and the first always-guarantee the history breaks.
fn read_behind_own_write(seed: u64, defects: ServerDefects) -> (Vec<u8>, Option<String>) {
    run_seed(seed, 300, move |seed| async move {
        let config = ClusterConfig {
            defects,
            ..ClusterConfig::default()
        };
        let mut cluster = Cluster::start(seed, config).await;
        let client = cluster.add_client(0, 4000, false).await.expect("connects");
        client
            .create("/x", b"0", CreateMode::Persistent)
            .await
            .expect("created");
        let write = client.set_data("/x", b"1", -1);
        let read = client.get_data("/x", false);
        let (written, read) = both(write, read).await;
        written.expect("written");
        let (seen, _) = read.expect("read");
        let broken = broken_guarantees(&cluster.history(), &cluster.commit_logs())
            .into_iter()
            .next();
        (seen, broken)
    })
}

/// A read sent behind a write of its own session sees the write, as ZooKeeper's
/// CommitProcessor makes it; servers that answer the read at once break FIFO client order (the
/// simulator did, until this guarantee was judged: a finding of the checker).
#[test]
fn a_read_sent_behind_its_own_write_sees_it_and_servers_that_let_it_pass_break_fifo_order() {
    for seed in 0..WITHIN_SEEDS {
        let (seen, broken) = read_behind_own_write(seed, ServerDefects::default());
        assert_eq!(
            (seen.as_slice(), broken),
            (b"1".as_slice(), None),
            "seed {seed}"
        );
    }
    let defect = ServerDefects {
        reads_pass_own_writes: true,
        ..ServerDefects::default()
    };
    let (seen, broken) = read_behind_own_write(0, defect);
    assert_eq!(seen, b"0", "the read passed the write");
    let broken = broken.expect("caught on the first seed");
    assert!(broken.starts_with(FIFO_CLIENT_ORDER), "{broken}");
}
