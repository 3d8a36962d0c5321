//! Each property on a history that satisfies it and on one that violates it.

use std::collections::BTreeSet;
use zkh_model::properties::{self, sometimes};
use zkh_model::Request;

use zkh_model::{History, HistoryEntry, HistoryEvent};
use zkh_recipes::{EventType, SessionEvent, SessionId, WatchedEvent};

fn write(h: &mut History, at: u64, client: u32, token: i64, accepted: bool, detail: &str) {
    let event = HistoryEvent::SideEffect {
        client,
        resource: "stock".into(),
        token: Some(token),
        accepted,
        detail: detail.into(),
    };
    h.push(at, event);
}

fn role(h: &mut History, at: u64, client: u32, role: &str, token: Option<i64>) {
    h.push(
        at,
        HistoryEvent::Role {
            client,
            role: role.into(),
            token,
        },
    );
}

#[test]
fn mutual_exclusion_and_single_acting_master() {
    let mut good = History::new();
    write(&mut good, 1, 0, 5, true, "reserve read=2");
    write(&mut good, 2, 0, 5, true, "sell read=2");
    write(&mut good, 3, 1, 9, true, "reserve read=1");
    write(&mut good, 4, 0, 5, false, "sell read=2"); // refused: does not count
    write(&mut good, 5, 1, 9, true, "sell read=1");
    assert!(properties::mutual_exclusion(&good, "stock").holds);
    assert!(properties::single_acting_master(&good, "stock").holds);
    assert!(properties::no_oversell(&good, "stock", 2).holds);
    assert!(sometimes::stale_write_refused(&good, "stock").holds);

    let mut bad = History::new();
    write(&mut bad, 1, 0, 5, true, "reserve read=2");
    write(&mut bad, 2, 1, 9, true, "reserve read=2");
    write(&mut bad, 3, 0, 5, true, "sell read=2");
    write(&mut bad, 4, 1, 9, true, "sell read=2");
    let finding = properties::mutual_exclusion(&bad, "stock");
    assert!(!finding.holds);
    assert!(
        finding.detail.contains("token Some(5)"),
        "{}",
        finding.detail
    );
    assert_eq!(
        (finding.evidence.as_slice(), finding.at_us),
        ([0, 1, 2].as_slice(), Some(3)),
        "token 5's write, token 9's interleaving write, and token 5's resumed write"
    );
    let master = properties::single_acting_master(&bad, "stock");
    assert!(!master.holds);
    assert_eq!(master.evidence, [1, 2], "token 9 acted, then token 5");
    let oversold = properties::no_oversell(&bad, "stock", 2);
    assert!(
        !oversold.holds && oversold.detail.contains("read of 2 while the stock was 1"),
        "{}",
        oversold.detail
    );
    assert_eq!(
        oversold.evidence,
        [2, 3],
        "the sale before, and the oversale"
    );
    assert!(
        properties::mutual_exclusion(&good, "stock")
            .evidence
            .is_empty(),
        "a property that holds has no evidence"
    );
    assert!(!sometimes::stale_write_refused(&bad, "stock").holds);
}

#[test]
fn a_checker_judges_without_summaries_but_still_hears_why_a_property_failed() {
    let mut good = History::new();
    write(&mut good, 1, 0, 5, true, "reserve read=2");
    let mut bad = good.clone();
    write(&mut bad, 2, 1, 9, true, "reserve read=2");
    write(&mut bad, 3, 0, 5, true, "sell read=2");
    let summary = properties::mutual_exclusion(&good, "stock").detail;
    assert_eq!(summary, "1 accepted writes in 1 sections");
    let (quiet, failed) = properties::without_summaries(|| {
        (
            properties::mutual_exclusion(&good, "stock"),
            properties::mutual_exclusion(&bad, "stock"),
        )
    });
    assert!(quiet.holds && quiet.detail.is_empty(), "{}", quiet.detail);
    assert!(!failed.holds && failed.detail.contains("token Some(5)"));
    let after = properties::mutual_exclusion(&good, "stock").detail;
    assert_eq!(after, summary, "summaries come back once the judging ends");
}

#[test]
fn herd_free_counts_the_waiting_clients_one_transaction_woke() {
    let dir = "/locks/stock";
    let watch = |client, zxid| HistoryEvent::Watch {
        client,
        event: WatchedEvent {
            event_type: EventType::NodeChildrenChanged,
            path: dir.into(),
            zxid,
        },
    };
    let wait = |client| HistoryEvent::Invoke {
        client,
        session: SessionId(client.into()),
        xid: 1,
        request: Request::GetChildren {
            path: dir.into(),
            watch: true,
        },
    };
    let give_up = |client| HistoryEvent::Invoke {
        client,
        session: SessionId(client.into()),
        xid: 2,
        request: Request::Delete {
            path: format!("{dir}/n-{client}"),
            version: -1,
        },
    };
    let mut good = History::new();
    for client in 1..=3 {
        good.push(0, wait(client));
    }
    good.push(0, give_up(2)); // 2 gave up: its watch is abandoned
    good.push(
        0,
        HistoryEvent::Session {
            client: 3,
            event: SessionEvent::Expired,
        },
    );
    good.push(1, watch(1, 7));
    good.push(1, watch(2, 7));
    good.push(1, watch(3, 7));
    assert!(
        properties::herd_free(&good, dir).holds,
        "{:?}",
        properties::herd_free(&good, dir)
    );
    assert!(sometimes::waiter_woken(&good, dir).holds);
    assert_eq!(
        properties::wakeups(&good, dir),
        [properties::Wakeup {
            zxid: 7,
            waiting: 1,
            woken: 1
        }],
        "one waiter left, and it alone woke"
    );
    let mut herd = History::new();
    for client in 1..=3 {
        herd.push(0, wait(client));
    }
    for client in 1..=3 {
        herd.push(1, watch(client, 7));
    }
    assert_eq!(
        properties::wakeups(&herd, dir),
        [properties::Wakeup {
            zxid: 7,
            waiting: 3,
            woken: 3
        }],
        "three waiting, all three woken"
    );
    let finding = properties::herd_free(&herd, dir);
    assert!(
        !finding.holds && finding.detail.contains("woke 3 waiting clients"),
        "{}",
        finding.detail
    );
    assert_eq!(
        finding.evidence,
        [3, 4, 5],
        "the three watch deliveries of the transaction"
    );
    assert!(properties::herd_free(&herd, "/elsewhere").holds);
    // After the ensemble's data is lost zxids start again: one waiter woken by zxid 7 before
    // the loss and another by a new zxid 7 after it are two transactions, not a herd.
    let mut pieces = History::new();
    pieces.push(0, wait(1));
    pieces.push(1, watch(1, 7));
    pieces.push(
        2,
        HistoryEvent::Fault {
            description: "DataLoss".into(),
        },
    );
    pieces.push(3, wait(2));
    pieces.push(4, watch(2, 7));
    let finding = properties::herd_free(&pieces, dir);
    assert!(finding.holds, "{}", finding.detail);
    assert_eq!(properties::wakeups(&pieces, dir).len(), 2);
}

/// A client's own entries reduce to what it waits on and the wakeups another client may still
/// share (their transaction's events are in flight); the summary judges as the entries do.
#[test]
fn herd_free_summary_keeps_the_waits_and_a_wakeup_another_client_may_share() {
    let dir = "/locks/stock";
    let entry = |event| HistoryEntry { at_us: 0, event };
    let wait = |client, node: &str, kind: u32| {
        let path = format!("{dir}/{node}");
        let request = match kind {
            0 => Request::GetData { path, watch: true },
            _ => Request::Exists { path, watch: true },
        };
        entry(HistoryEvent::Invoke {
            client,
            session: SessionId(client.into()),
            xid: u64::from(kind) + 1,
            request,
        })
    };
    let woken = |client, zxid| {
        entry(HistoryEvent::Watch {
            client,
            event: WatchedEvent {
                event_type: EventType::NodeDeleted,
                path: format!("{dir}/n-0"),
                zxid,
            },
        })
    };
    let delete = |client: u32, path: String| {
        entry(HistoryEvent::Invoke {
            client,
            session: SessionId(client.into()),
            xid: 2,
            request: Request::Delete { path, version: -1 },
        })
    };
    let release = |client| delete(client, format!("{dir}/n-{client}"));
    let summary = |entries: &[HistoryEntry], in_flight: &BTreeSet<i64>| {
        let own: Vec<&HistoryEntry> = entries.iter().collect();
        properties::herd_free_summary(&own, dir, in_flight)
    };
    // Client 1 waited, was woken by transaction 7, released, and waits again on n-2.
    let first = [
        wait(1, "n-0", 0),
        woken(1, 7),
        release(1),
        wait(1, "n-2", 0),
    ];
    let nothing_in_flight = BTreeSet::new();
    assert_eq!(
        summary(&first, &nothing_in_flight),
        [wait(1, "n-2", 0)].map(|e| canonical(&e)),
        "only the newest wait is left"
    );
    // Another road to the same wait: a retried read of another kind, an expiry before it.
    let expired = entry(HistoryEvent::Session {
        client: 1,
        event: SessionEvent::Expired,
    });
    let other = [
        wait(1, "n-2", 1),
        expired,
        wait(1, "n-2", 1),
        wait(1, "n-2", 0),
        delete(1, "/elsewhere/n".into()),
    ];
    assert_eq!(
        summary(&other, &nothing_in_flight),
        summary(&first, &nothing_in_flight)
    );
    // Client 2 waits on n-0 too, and transaction 7's event is still on its way to it.
    let in_flight = BTreeSet::from([7]);
    let kept = summary(&first, &in_flight);
    assert_eq!(
        kept.len(),
        3,
        "the wakeup by 7 stays, with the wait it ended: {kept:?}"
    );
    let herd_with = |first: &[HistoryEntry]| {
        let mut history = History::new();
        for e in first.iter().chain(&[wait(2, "n-0", 0), woken(2, 7)]) {
            history.push(e.at_us, e.event.clone());
        }
        properties::herd_free(&history, dir).holds
    };
    assert!(!herd_with(&first), "transaction 7 woke clients 1 and 2");
    assert!(!herd_with(&kept), "and the summary still says so");
    assert!(
        herd_with(&summary(&first, &nothing_in_flight)),
        "which forgetting client 1's wakeup would hide"
    );
}

/// `entry` as a summary writes a watched read: no session, no xid, read with `getData`.
fn canonical(entry: &HistoryEntry) -> HistoryEntry {
    let HistoryEvent::Invoke {
        client,
        request: Request::GetData { path, .. } | Request::Exists { path, .. },
        ..
    } = &entry.event
    else {
        panic!("a watched read: {entry:?}");
    };
    HistoryEntry {
        at_us: 0,
        event: HistoryEvent::Invoke {
            client: *client,
            session: SessionId(0),
            xid: 0,
            request: Request::GetData {
                path: path.clone(),
                watch: true,
            },
        },
    }
}

#[test]
fn leader_elected_and_changing_hands() {
    let mut h = History::new();
    role(&mut h, 10, 0, "leader", Some(3));
    h.push(
        20,
        HistoryEvent::Session {
            client: 0,
            event: SessionEvent::Expired,
        },
    );
    role(&mut h, 25, 0, "none", None);
    role(&mut h, 40, 1, "leader", Some(8));
    assert!(properties::leader_elected(&h, &["leader"], 30, 20).holds);
    let late = properties::leader_elected(&h, &["leader"], 30, 5);
    assert!(!late.holds);
    let idle = "idle: 0 requests in the 5 us judged (0.0 a second): the clients waited for news \
                that never came";
    assert_eq!(
        late.detail,
        format!("no leader within 5 us of 30 us; {idle}")
    );
    assert_eq!(late.at_us, Some(35), "the deadline that passed");
    let either = properties::leader_elected(&h, &["a", "b"], 30, 5).detail;
    assert_eq!(either, format!("no a or b within 5 us of 30 us; {idle}"));
    let unbounded = properties::leader_elected(&h, &["a"], 30, properties::UNBOUNDED_US);
    assert_eq!(
        (unbounded.detail.as_str(), unbounded.at_us),
        (
            "no a after 30 us, to the end of the run; idle: 0 requests in the 10 us judged \
             (0.0 a second): the clients waited for news that never came",
            None
        ),
        "the model checker's unbounded window is said in words"
    );
    assert!(
        properties::leader_elected(&h, &["leader"], 50, 100).holds,
        "client 1 still leads at the heal"
    );
    role(&mut h, 60, 1, "none", None);
    assert!(
        !properties::leader_elected(&h, &["leader"], 70, 100).holds,
        "nobody leads after 60"
    );
    assert!(sometimes::role_changed_hands_after_a_loss(&h, &["leader"]).holds);
    let mut quiet = History::new();
    role(&mut quiet, 10, 0, "leader", Some(3));
    assert!(!sometimes::role_changed_hands_after_a_loss(&quiet, &["leader"]).holds);
    quiet.push(
        11,
        HistoryEvent::Fault {
            description: "client 0: reply to 4 dropped".into(),
        },
    );
    assert!(sometimes::reply_lost(&quiet).holds);
}

fn run(h: &mut History, at: u64, client: u32, item: u32, cycle: u64, failover: bool) {
    let event = HistoryEvent::Execution {
        client,
        job: "/orders-job".into(),
        item,
        cycle,
        token: at as i64,
        failover,
    };
    h.push(at, event);
}

#[test]
fn no_shard_executed_twice_and_no_shard_lost() {
    let mut good = History::new();
    run(&mut good, 1, 0, 0, 1, false);
    run(&mut good, 2, 1, 1, 1, false);
    run(&mut good, 3, 0, 0, 2, false);
    run(&mut good, 4, 0, 1, 2, true);
    assert!(properties::no_shard_executed_twice(&good, "/orders-job").holds);
    assert!(properties::no_shard_lost(&good, "/orders-job", 2, 1..=2).holds);
    assert!(sometimes::item_failed_over(&good, "/orders-job").holds);
    assert!(
        properties::no_shard_executed_twice(&good, "/other-job").holds,
        "other jobs' runs do not count"
    );

    let mut bad = good.clone();
    run(&mut bad, 5, 1, 0, 2, true);
    let twice = properties::no_shard_executed_twice(&bad, "/orders-job");
    assert!(!twice.holds);
    assert_eq!(
        (twice.evidence.as_slice(), twice.at_us),
        ([2, 4].as_slice(), Some(5)),
        "both runs of item 0 in cycle 2"
    );
    assert!(
        twice
            .detail
            .contains("item 0 of cycle 2 ran 2 times, by clients [0, 1]"),
        "{}",
        twice.detail
    );
    let lost = properties::no_shard_lost(&good, "/orders-job", 3, 1..=2);
    assert!(!lost.holds);
    assert!(
        lost.detail
            .contains("item 2 of cycle 1 never ran (2 (item, cycle) missing"),
        "{}",
        lost.detail
    );
    let mut plain = History::new();
    run(&mut plain, 1, 0, 0, 1, false);
    assert!(!sometimes::item_failed_over(&plain, "/orders-job").holds);
}

/// A liveness failure says whether the clients were busy (a recipe that never settles) or idle
/// (one that waits for news that never comes) in the window judged.
#[test]
fn leader_elected_says_whether_the_clients_were_busy_or_idle() {
    let mut h = History::new();
    role(&mut h, 100, 0, "leader", Some(3));
    role(&mut h, 200, 0, "none", None);
    for at in 0..50u64 {
        h.push(
            1_000_000 + at * 20_000,
            HistoryEvent::Invoke {
                client: 1,
                session: SessionId(7),
                xid: at + 1,
                request: Request::GetChildren {
                    path: "/latch".into(),
                    watch: false,
                },
            },
        );
    }
    let busy = properties::leader_elected(&h, &["leader"], 1_000_000, 1_000_000);
    assert!(!busy.holds);
    assert!(
        busy.detail.ends_with(
            "busy: 49 requests in the 1.0 s judged (49.0 a second): the clients kept working \
             without getting anywhere"
        ),
        "{}",
        busy.detail
    );
    let idle = properties::leader_elected(&h, &["leader"], 200, 900_000);
    assert!(
        idle.detail.contains("idle: 0 requests in the 900 ms"),
        "{}",
        idle.detail
    );
}

/// A lost shard in the simulator says how many requests the instances issued over the judged
/// cycles, and a run before its cycle fired breaks "runs when scheduled".
#[test]
fn no_shard_lost_since_counts_the_requests_and_runs_when_scheduled_judges_the_moment() {
    let mut h = History::new();
    for at in 0..10u64 {
        h.push(
            10_000_000 + at * 1_000_000,
            HistoryEvent::Invoke {
                client: 0,
                session: SessionId(7),
                xid: at + 1,
                request: Request::GetChildren {
                    path: "/orders-job/instances".into(),
                    watch: false,
                },
            },
        );
    }
    run(&mut h, 20_000_000, 0, 0, 2, false);
    let lost = properties::no_shard_lost_since(&h, "/orders-job", 1, 1..=2, 10_000_000);
    assert!(!lost.holds);
    assert!(
        lost.detail.ends_with(
            "the instances issued 9 requests in the 10.0 s judged (0.9 a second, 4 a judged cycle)"
        ),
        "{}",
        lost.detail
    );
    let kept = properties::no_shard_lost_since(&h, "/orders-job", 1, 2..=2, 10_000_000);
    assert!(kept.holds, "{}", kept.detail);

    // Cycle k fires at k * 10 s: cycle 2's run at 20 s is on time, a run of cycle 3 there is early.
    let fired = |cycle: u64| cycle * 10_000_000;
    assert!(properties::runs_when_scheduled(&h, "/orders-job", fired).holds);
    run(&mut h, 20_500_000, 1, 0, 3, false);
    let early = properties::runs_when_scheduled(&h, "/orders-job", fired);
    assert!(!early.holds);
    assert_eq!(early.at_us, Some(20_500_000));
    assert!(
        early
            .detail
            .contains("client 1 ran /orders-job item 0 of cycle 3 at 20500000 us"),
        "{}",
        early.detail
    );
    // Late is allowed (a misfire, a failover): cycle 1 run at 30 s.
    let mut late = History::new();
    run(&mut late, 30_000_000, 0, 0, 1, true);
    assert!(properties::runs_when_scheduled(&late, "/orders-job", fired).holds);
}
