//! One test per row of [`super::interprocess_mutex`]'s table: each drives the branch with the
//! replies and events the upstream code reacts to, and checks what each release does next.

use super::mutex_bench::Bench;
use super::Release;
use crate::error::ZkError;
use crate::event::SessionEvent;
use crate::lock::{LockReport, LockRequest};
use crate::request::Response;
use crate::types::SessionId;

const OURS: &str = "/locks/l/_c_u-1-lock-0000000005";
const PREDECESSOR: &str = "/locks/l/_c_v-1-lock-0000000003";

#[test]
fn a_held_lock_is_entered_again_and_released_by_count() {
    for release in Release::ALL {
        let mut bench = Bench::holding(release);
        bench.request(LockRequest::Acquire { timeout_ms: None });
        let again = LockReport::Acquired {
            token: 105,
            holds: 2,
        };
        assert_eq!(bench.reports(), [again], "{release:?}");
        assert!(bench.ops().is_empty(), "no request to re-enter");
        bench.request(LockRequest::Release);
        assert_eq!(bench.reports(), [LockReport::Released { holds: 1 }]);
        assert!(bench.ops().is_empty(), "the node stays");
        bench.request(LockRequest::Release);
        bench.reply(&format!("delete {OURS}"), Ok(Response::Deleted));
        assert_eq!(bench.reports(), [LockReport::Released { holds: 0 }]);
        bench.request(LockRequest::Release);
        assert_eq!(bench.reports(), [LockReport::NotHeld], "{release:?}");
    }
}

#[test]
fn a_vanished_node_is_made_again_after_a_sleep() {
    for release in Release::ALL {
        let mut bench = Bench::listing(release, None);
        let mut sleeps = Vec::new();
        for create in 1..=4 {
            // The listing lacks our node: NoNodeException, the cleanup, then the policy.
            bench.listed(&[(3, "v-1")]);
            bench.reply("delete /locks/l/_c_u-", Err(ZkError::NoNode));
            if create == 4 {
                break;
            }
            let sleep = *bench.timers().last().expect("a sleep");
            sleeps.push(sleep);
            bench.fire(sleep);
            let prefix = format!("create /locks/l/_c_u-{}-lock-", create + 1);
            assert!(
                bench.has(&prefix),
                "{release:?} a new node: {:?}",
                bench.ops()
            );
            bench.created(5 + create);
        }
        assert_eq!(sleeps, [1000, 2000, 4000], "{release:?}");
        assert_eq!(bench.reports(), [LockReport::Failed(ZkError::NoNode)]);
    }
}

#[test]
fn a_missing_lock_path_is_a_vanished_node_in_every_release() {
    for release in Release::ALL {
        let mut bench = Bench::listing(release, None);
        bench.reply("getChildren /locks/l", Err(ZkError::NoNode));
        bench.reply(&format!("delete {OURS}"), Err(ZkError::NoNode));
        assert_eq!(bench.timers(), [1000], "{release:?}: attemptLock's retry");
        assert!(bench.reports().is_empty());
    }
}

#[test]
fn first_in_line_holds_and_reads_its_token() {
    for release in Release::ALL {
        let bench = Bench::holding(release);
        assert!(bench.mutex.is_held(), "{release:?}");
        assert_eq!(bench.mutex.claimed_node(), Some(OURS));
        // The node gone before its token is read: released and failed.
        let mut bench = Bench::listing(release, None);
        bench.listed(&[(5, "u-1")]);
        bench.reply(&format!("exists {OURS}"), Ok(Response::Exists(None)));
        bench.reply(&format!("delete {OURS}"), Err(ZkError::NoNode));
        assert_eq!(bench.reports(), [LockReport::Failed(ZkError::NoNode)]);
        assert!(!bench.mutex.is_held());
    }
}

#[test]
fn behind_watches_the_predecessor_and_lists_when_it_goes() {
    for release in Release::ALL {
        let mut bench = Bench::waiting(release, None);
        bench.deleted("/locks/l/_c_w-1-lock-0000000001");
        assert!(bench.ops().is_empty(), "{release:?}: not the watched node");
        bench.deleted(PREDECESSOR);
        bench.listed(&[(5, "u-1")]);
        bench.token_read(105);
        assert!(bench.mutex.is_held(), "{release:?}");
        // The predecessor gone before its read: list again at once.
        let mut bench = Bench::listing(release, None);
        bench.listed(&[(3, "v-1"), (5, "u-1")]);
        bench.reply(&format!("getData {PREDECESSOR}"), Err(ZkError::NoNode));
        assert!(bench.has("getChildren /locks/l"), "{release:?}");
    }
}

#[test]
fn a_timed_acquire_gives_up_only_after_a_watch() {
    for release in Release::ALL {
        // Waiting when the time is up: list, read the predecessor again, then give up.
        let mut bench = Bench::waiting(release, Some(5000));
        bench.fire(5000);
        bench.listed(&[(3, "v-1"), (5, "u-1")]);
        bench.predecessor_read(PREDECESSOR);
        bench.reply(&format!("delete {OURS}"), Ok(Response::Deleted));
        assert_eq!(bench.reports(), [LockReport::TimedOut], "{release:?}");
        // The time up while listing, and the listing shows us first: the lock is taken late.
        let mut bench = Bench::listing(release, Some(5000));
        bench.fire(5000);
        bench.listed(&[(5, "u-1")]);
        bench.token_read(105);
        assert!(bench.mutex.is_held(), "{release:?}: held after its timeout");
    }
}

#[test]
fn a_failed_cleanup_ends_the_acquire_until_5_7_retries_it() {
    for release in Release::ALL {
        let mut bench = Bench::listing(release, None);
        bench.listed(&[(3, "v-1")]);
        bench.lose(&format!("delete {OURS}"), 4);
        let reports = bench.reports();
        if release >= Release::V5_7_1 {
            assert!(reports.is_empty(), "{release:?}: {reports:?}");
            assert!(bench.timers().contains(&1000), "the NoNode retry's sleep");
        } else {
            assert_eq!(
                reports,
                [LockReport::Failed(ZkError::ConnectionLoss)],
                "{release:?}"
            );
        }
        assert!(
            bench.has(&format!("delete {OURS}")),
            "the delete goes on behind"
        );
    }
}

#[test]
fn a_stale_watcher_wakes_a_later_wait_only_in_2() {
    for release in Release::ALL {
        // Woken by the timeout, the predecessor's watcher still set, and then first in line.
        let mut bench = Bench::waiting(release, Some(5000));
        bench.fire(5000);
        bench.listed(&[(5, "u-1")]);
        bench.token_read(105);
        bench.request(LockRequest::Release);
        bench.reply(&format!("delete {OURS}"), Ok(Response::Deleted));
        // The next acquire waits behind another node.
        bench.request(LockRequest::Acquire { timeout_ms: None });
        bench.created(9);
        bench.listed(&[(8, "w-1"), (9, "u-2")]);
        bench.predecessor_read("/locks/l/_c_w-1-lock-0000000008");
        assert!(bench.ops().is_empty());
        // The first predecessor goes now: its old watcher fires.
        bench.deleted(PREDECESSOR);
        let woken = bench.has("getChildren /locks/l");
        assert_eq!(
            woken,
            !release.is_curator_5(),
            "{release:?}: {:?}",
            bench.ops()
        );
    }
}

#[test]
fn a_connection_event_wakes_a_waiter() {
    for release in Release::ALL {
        let mut bench = Bench::waiting(release, None);
        bench.session(SessionEvent::Disconnected);
        let mut ops = bench.ops();
        bench.session(SessionEvent::Reconnected {
            session_id: SessionId(1),
        });
        ops.extend(bench.ops());
        let listings = (ops.iter())
            .filter(|(_, r)| super::mutex_bench::describe(r) == "getChildren /locks/l")
            .count();
        assert_eq!(listings, 1, "{release:?}: {ops:?}");
        // An idle mutex has no watcher to wake.
        let mut bench = Bench::holding(release);
        bench.session(SessionEvent::Disconnected);
        assert!(!bench.has("getChildren"), "{release:?}");
    }
}
