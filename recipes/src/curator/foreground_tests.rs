//! One test per row of [`super::foreground`]'s table, driven through the mutex that makes the
//! calls: each answers the call as the upstream branch needs and checks what the release does.

use super::mutex_bench::{Bench, DIR};
use super::Release;
use crate::error::ZkError;
use crate::event::SessionEvent;
use crate::lock::{LockReport, LockRequest};
use crate::request::{Request, Response};
use crate::types::{CreateMode, Created, SessionId, Stat};

const OUR_FIRST: &str = "/locks/l/_c_u-1-lock-0000000007";

#[test]
fn five_sends_a_retry_at_once_where_two_waits_for_the_connection() {
    for release in Release::ALL {
        let mut bench = Bench::listing(release, None);
        bench.session(SessionEvent::Disconnected);
        bench.reply("getChildren /locks/l", Err(ZkError::ConnectionLoss));
        bench.fire(1000);
        if release.is_curator_5() {
            assert!(
                bench.has("getChildren /locks/l"),
                "{release:?} {:?}",
                bench.ops()
            );
        } else {
            assert!(!bench.has("getChildren"), "{release:?} {:?}", bench.ops());
            assert_eq!(bench.timers(), [1000], "2.10.0 waits for the connection");
            bench.session(SessionEvent::Reconnected {
                session_id: SessionId(1),
            });
            assert!(bench.has("getChildren /locks/l"), "sent once reconnected");
        }
    }
}

#[test]
fn a_call_waits_for_the_connection_up_to_its_timeout() {
    for release in Release::ALL {
        // Never connected: fifteen 1 s steps, then the attempt is made regardless.
        let mut bench = Bench::unconnected(release);
        bench.request(LockRequest::Acquire { timeout_ms: None });
        for step in 1..=15 {
            assert!(bench.ops().is_empty(), "{release:?} step {step}");
            bench.fire(1000);
        }
        assert!(bench.has("create /locks/l/_c_u-1-lock-"), "{release:?}");
        // Woken by the connection.
        let mut bench = Bench::unconnected(release);
        bench.request(LockRequest::Acquire { timeout_ms: None });
        bench.fire(1000);
        bench.session(SessionEvent::Connected {
            session_id: SessionId(1),
        });
        assert!(bench.has("create /locks/l/_c_u-1-lock-"), "{release:?}");
    }
}

#[test]
fn a_lost_reply_is_retried_then_thrown_when_the_policy_gives_up() {
    for release in Release::ALL {
        let mut bench = Bench::listing(release, None);
        let sleeps = bench.lose("getChildren /locks/l", 4);
        assert_eq!(sleeps, [1000, 2000, 4000], "{release:?}");
        // Thrown into the lock loop, whose cleanup deletes our node.
        bench.reply(
            "delete /locks/l/_c_u-1-lock-0000000005",
            Ok(Response::Deleted),
        );
        assert_eq!(
            bench.reports(),
            [LockReport::Failed(ZkError::ConnectionLoss)],
            "{release:?}"
        );
    }
}

#[test]
fn five_returns_null_when_the_create_after_a_search_loses_its_reply() {
    for release in Release::ALL {
        let mut bench = Bench::acquiring(release, None);
        bench.reply("create /locks/l/_c_u-1-", Err(ZkError::ConnectionLoss));
        bench.fire(1000);
        bench.reply(
            "getChildren /locks/l",
            Ok(Response::Children(Vec::new(), Stat::default())),
        );
        bench.reply("create /locks/l/_c_u-1-", Err(ZkError::ConnectionLoss));
        bench.fire(2000);
        // Both send a getChildren: 5.x the lock loop's listing with a null path, 2.10.0 the
        // search of its create's next attempt.
        bench.reply(
            "getChildren /locks/l",
            Ok(Response::Children(Vec::new(), Stat::default())),
        );
        if release.is_curator_5() {
            assert_eq!(
                bench.reports(),
                [LockReport::Failed(ZkError::BadArguments)],
                "{release:?}: null path, IllegalArgumentException"
            );
        } else {
            assert!(bench.has("create /locks/l/_c_u-1-"), "{:?}", bench.ops());
        }
    }
}

#[test]
fn a_retried_create_finds_the_node_its_lost_reply_made() {
    for release in Release::ALL {
        let mut bench = Bench::acquiring(release, None);
        bench.reply("create /locks/l/_c_u-1-", Err(ZkError::ConnectionLoss));
        bench.fire(1000);
        let found = vec![
            "_c_v-1-lock-0000000006".to_owned(),
            "_c_u-1-lock-0000000007".to_owned(),
        ];
        bench.reply(
            "getChildren /locks/l",
            Ok(Response::Children(found, Stat::default())),
        );
        assert!(!bench.has("create"), "{release:?} adopts the node");
        assert!(bench.has("getChildren /locks/l"), "and lists");
        assert_eq!(bench.mutex.own_node(), Some(OUR_FIRST), "{release:?}");
    }
}

#[test]
fn missing_parents_are_made_by_exists_then_create() {
    for release in Release::ALL {
        let mut bench = Bench::acquiring(release, None);
        bench.reply("create /locks/l/_c_u-1-", Err(ZkError::NoNode));
        bench.reply("exists /locks", Ok(Response::Exists(None)));
        let (_, request) = bench.ops().remove(0);
        assert_eq!(
            request,
            Request::Create {
                path: "/locks".into(),
                data: Vec::new(),
                mode: CreateMode::Container
            },
            "{release:?}"
        );
        bench.reply(
            "create /locks",
            Ok(Response::Created(Created {
                path: "/locks".into(),
                stat: Stat::default(),
            })),
        );
        bench.reply(
            &format!("exists {DIR}"),
            Ok(Response::Exists(Some(Stat::default()))),
        );
        bench.created(5);
        assert_eq!(
            bench.mutex.own_node(),
            Some("/locks/l/_c_u-1-lock-0000000005"),
            "{release:?}"
        );
    }
}

#[test]
fn a_node_of_the_old_session_is_adopted_by_2_and_deleted_by_5() {
    for release in Release::ALL {
        let mut bench = Bench::acquiring(release, None);
        bench.reply("create /locks/l/_c_u-1-", Err(ZkError::ConnectionLoss));
        let sleep = bench.timer_of(1000).expect("a retry sleep");
        bench.session(SessionEvent::Expired);
        bench.session(SessionEvent::Connected {
            session_id: SessionId(2),
        });
        bench.input(crate::machine::Input::Timer(sleep));
        let found = vec!["_c_u-1-lock-0000000007".to_owned()];
        bench.reply(
            "getChildren /locks/l",
            Ok(Response::Children(found, Stat::default())),
        );
        if release.is_curator_5() {
            assert!(
                bench.has(&format!("delete {OUR_FIRST}")),
                "{:?}",
                bench.ops()
            );
            assert!(bench.has("create /locks/l/_c_u-1-"), "made again");
            assert_eq!(bench.mutex.own_node(), None);
        } else {
            assert!(!bench.has("delete"), "{:?}", bench.ops());
            assert_eq!(bench.mutex.own_node(), Some(OUR_FIRST), "adopted");
        }
    }
}

#[test]
fn a_guaranteed_delete_that_gives_up_goes_on_in_the_background() {
    for release in Release::ALL {
        let mut bench = Bench::holding(release);
        bench.request(LockRequest::Release);
        let node = "/locks/l/_c_u-1-lock-0000000005";
        bench.lose(&format!("delete {node}"), 4);
        assert_eq!(
            bench.reports(),
            [LockReport::Released { holds: 0 }],
            "{release:?}"
        );
        assert!(bench.has(&format!("delete {node}")), "in the background");
        assert!(bench.mutex.known_nodes().contains(&node.to_owned()));
        assert!(!bench.mutex.is_settled(), "the delete goes on");
    }
}
