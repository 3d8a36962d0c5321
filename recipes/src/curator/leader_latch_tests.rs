//! One test per row of the `LeaderLatch` and framework tables: each drives the branch with the
//! replies and events the upstream code reacts to, and checks what the release does next.

use super::framework::{connection_state, waiting_ids, ConnectionState};
use super::leader_latch::CuratorLatch;
use super::mutex_bench::describe;
use super::Release;
use crate::error::ZkError;
use crate::event::{EventType, SessionEvent, WatchedEvent};
use crate::latch::{LatchReport, LatchRequest};
use crate::machine::{Command, Input};
use crate::request::{Request, Response};
use crate::types::{Created, SessionId, Stat};

const DIR: &str = "/latch";

/// A latch under test: the commands of its last step, and helpers to answer them.
struct Bench {
    latch: CuratorLatch,
    out: Vec<Command<LatchReport>>,
}

impl Bench {
    /// A latch of `release`, connected in session 1 and started: its create is out.
    fn started(release: Release) -> Bench {
        let mut bench = Bench {
            latch: CuratorLatch::new(release, DIR, "p", "u"),
            out: Vec::new(),
        };
        bench.session(SessionEvent::Connected {
            session_id: SessionId(1),
        });
        bench.input(Input::Request(LatchRequest::Start));
        bench
    }

    fn input(&mut self, input: Input<LatchRequest>) {
        self.out.clear();
        self.latch.handle(input, &mut self.out);
    }

    /// A session event, and the listener's turn (its notice timer) if one was armed.
    fn session(&mut self, event: SessionEvent) {
        self.input(Input::Session(event));
        let mut seen = Vec::new();
        while let Some(id) = self.zero_timer() {
            seen.append(&mut self.out);
            self.input(Input::Timer(id));
        }
        seen.append(&mut self.out);
        self.out = seen;
    }

    fn zero_timer(&self) -> Option<u64> {
        self.out.iter().find_map(|c| match c {
            Command::Timer { id, after_ms: 0 } => Some(*id),
            _ => None,
        })
    }

    /// The operations of the last step, in order.
    fn ops(&self) -> Vec<(u64, Request)> {
        (self.out.iter())
            .filter_map(|c| match c {
                Command::Op { id, request } => Some((*id, request.clone())),
                _ => None,
            })
            .collect()
    }

    /// The one operation matching `want`, as a short name of its kind and path.
    fn op(&self, want: &str) -> u64 {
        let found: Vec<u64> = (self.ops().into_iter())
            .filter(|(_, r)| describe(r).starts_with(want))
            .map(|(id, _)| id)
            .collect();
        assert_eq!(found.len(), 1, "one {want:?} among {:?}", self.ops());
        found[0]
    }

    fn has(&self, want: &str) -> bool {
        self.ops()
            .iter()
            .any(|(_, r)| describe(r).starts_with(want))
    }

    fn reply(&mut self, id: u64, result: Result<Response, ZkError>) {
        self.input(Input::Reply { id, result });
    }

    fn reports(&self) -> Vec<LatchReport> {
        (self.out.iter())
            .filter_map(|c| match c {
                Command::Report(r) => Some(r.clone()),
                _ => None,
            })
            .collect()
    }

    /// Answers the create with node `seq`, owned by `owner`.
    fn created(&mut self, seq: u32, owner: i64) {
        let id = self.op("create /latch/_c_");
        let (_, request) = (self.ops().into_iter())
            .find(|(i, _)| *i == id)
            .expect("found");
        let Request::Create { path, .. } = request else {
            unreachable!("a create")
        };
        let path = format!("{path}{seq:010}");
        let stat = stat(owner, 100 + i64::from(seq));
        self.reply(id, Ok(Response::Created(Created { path, stat })));
    }

    /// Answers the listing with `children` (by sequence number; ours is `u-<create>`).
    fn listed(&mut self, children: &[(u32, &str)]) {
        let id = self.op("getChildren /latch");
        let names = (children.iter())
            .map(|(seq, who)| format!("_c_{who}-latch-{seq:010}"))
            .collect();
        self.reply(id, Ok(Response::Children(names, Stat::default())));
    }

    /// Started, created node 1 in session 1, listed alone or behind `ahead`.
    fn in_line(release: Release, ahead: &[(u32, &str)]) -> Bench {
        let mut bench = Bench::started(release);
        bench.created(5, 1);
        let mut children = ahead.to_vec();
        children.push((5, "u-1"));
        bench.listed(&children);
        bench
    }

    /// First in line and leading (answering 5.7.1's owner check and the application's read).
    fn leading(release: Release) -> Bench {
        let mut bench = Bench::in_line(release, &[]);
        if release >= Release::V5_7_1 {
            let id = bench.op("getData /latch/_c_u-1-");
            bench.reply(id, Ok(Response::Data(b"p".to_vec(), stat(1, 105))));
        }
        let id = bench.op("exists /latch/_c_u-1-");
        bench.reply(id, Ok(Response::Exists(Some(stat(1, 105)))));
        assert_eq!(bench.reports(), [LatchReport::Leader { token: 105 }]);
        assert!(bench.latch.is_leader());
        bench
    }
}

fn stat(owner: i64, czxid: i64) -> Stat {
    Stat {
        czxid,
        ephemeral_owner: owner,
        ..Stat::default()
    }
}

// ---- LeaderLatch.java rows ----

#[test]
fn reconnected_resets_in_2_and_5_3_and_lists_from_5_4() {
    for release in Release::ALL {
        let mut bench = Bench::in_line(release, &[(3, "v-1")]);
        bench.session(SessionEvent::Disconnected);
        bench.session(SessionEvent::Reconnected {
            session_id: SessionId(1),
        });
        let resets = bench.has("create /latch/_c_") && bench.has("delete /latch/_c_u-1-");
        let lists = bench.has("getChildren /latch") && !bench.has("create");
        if release >= Release::V5_4_0 {
            assert!(lists, "{release:?} lists again: {:?}", bench.ops());
        } else {
            assert!(
                resets,
                "{release:?} deletes its node and creates anew: {:?}",
                bench.ops()
            );
        }
    }
}

#[test]
fn suspended_and_lost_end_leadership_in_every_release() {
    for release in Release::ALL {
        let mut bench = Bench::leading(release);
        bench.session(SessionEvent::Disconnected);
        assert_eq!(bench.reports(), [LatchReport::NotLeader], "{release:?}");
        let mut bench = Bench::leading(release);
        bench.session(SessionEvent::Expired);
        assert_eq!(bench.reports(), [LatchReport::NotLeader], "{release:?}");
    }
}

#[test]
fn first_in_line_leads_at_once_until_5_7_checks_the_owner() {
    for release in Release::ALL {
        let bench = Bench::in_line(release, &[]);
        if release >= Release::V5_7_1 {
            assert!(bench.has("getData /latch/_c_u-1-"), "{release:?}");
            assert!(!bench.latch.is_leader());
            // The node belongs to another (the dying old) session: reset.
            let mut bench = bench;
            let id = bench.op("getData /latch/_c_u-1-");
            bench.reply(id, Ok(Response::Data(Vec::new(), stat(9, 105))));
            assert!(
                bench.has("create /latch/_c_u-2-"),
                "{release:?}: {:?}",
                bench.ops()
            );
            assert!(!bench.latch.is_leader());
        } else {
            assert!(bench.latch.is_leader(), "{release:?} leads without a check");
            assert!(
                bench.has("exists /latch/_c_u-1-"),
                "the application reads its token"
            );
        }
    }
}

#[test]
fn behind_turns_leadership_off_from_5_4() {
    for release in Release::ALL {
        // A leader that, listing again, finds a node ahead of its own (as after a parent
        // reaped and remade): 5.4.0 and later turn leadership off at once; older ones go on
        // leading while they watch.
        let mut bench = Bench::leading(release);
        bench.session(SessionEvent::Disconnected);
        bench.session(SessionEvent::Reconnected {
            session_id: SessionId(1),
        });
        if release < Release::V5_4_0 {
            continue; // they reset on RECONNECTED (the first row).
        }
        // Leadership was already ended by SUSPENDED; lead again, then list behind another.
        assert!(!bench.latch.is_leader());
        bench.listed(&[(3, "v-1"), (5, "u-1")]);
        assert!(bench.has("getData /latch/_c_v-1-latch-0000000003 watch=true"));
    }
    let mut old = Bench::in_line(Release::V5_3_0, &[(3, "v-1")]);
    assert!(old.has("getData /latch/_c_v-1-latch-0000000003 watch=true"));
    assert!(old.reports().is_empty());
    let id = old.op("getData /latch/_c_v-1-");
    old.reply(id, Ok(Response::Data(Vec::new(), stat(2, 103))));
    assert!(old.ops().is_empty(), "watching, nothing else");
}

#[test]
fn a_vanished_predecessor_resets_until_5_4_lists_again() {
    for release in Release::ALL {
        let mut bench = Bench::in_line(release, &[(3, "v-1")]);
        let id = bench.op("getData /latch/_c_v-1-");
        bench.reply(id, Err(ZkError::NoNode));
        if release >= Release::V5_4_0 {
            assert!(
                bench.has("getChildren /latch") && !bench.has("create"),
                "{release:?}"
            );
        } else {
            assert!(
                bench.has("create /latch/_c_u-2-"),
                "{release:?} resets: {:?}",
                bench.ops()
            );
            assert!(
                bench.has("delete /latch/_c_u-1-"),
                "{release:?} deletes its node"
            );
        }
    }
}

#[test]
fn a_missing_latch_path_stalls_until_5_9_resets() {
    for release in Release::ALL {
        let mut bench = Bench::in_line(release, &[(3, "v-1")]);
        let id = bench.op("getData /latch/_c_v-1-");
        bench.reply(id, Ok(Response::Data(Vec::new(), stat(2, 103))));
        bench.session(SessionEvent::Disconnected);
        bench.session(SessionEvent::Reconnected {
            session_id: SessionId(1),
        });
        if release < Release::V5_4_0 {
            continue; // they reset on RECONNECTED and never list a missing path here.
        }
        let id = bench.op("getChildren /latch");
        bench.reply(id, Err(ZkError::NoNode));
        if release >= Release::V5_9_0 {
            assert!(
                bench.has("create /latch/_c_u-2-"),
                "{release:?} resets (CURATOR-724)"
            );
        } else {
            assert!(bench.ops().is_empty(), "{release:?} does nothing: stalled");
            assert!(bench.latch.is_settled());
        }
    }
}

#[test]
fn a_create_answered_after_close_deletes_its_node() {
    for release in Release::ALL {
        let mut bench = Bench::started(release);
        let create = bench.op("create /latch/_c_u-1-");
        bench.input(Input::Request(LatchRequest::Close));
        assert_eq!(bench.reports(), [LatchReport::Closed]);
        let path = "/latch/_c_u-1-latch-0000000005".to_owned();
        let created = Created {
            path,
            stat: stat(1, 105),
        };
        bench.reply(create, Ok(Response::Created(created)));
        assert!(
            bench.has("delete /latch/_c_u-1-latch-0000000005"),
            "{release:?}"
        );
        assert!(!bench.has("getChildren"), "{release:?} does not list");
    }
}

#[test]
fn close_deletes_the_node_and_ends_leadership() {
    for release in Release::ALL {
        let mut bench = Bench::leading(release);
        bench.input(Input::Request(LatchRequest::Close));
        assert_eq!(
            bench.reports(),
            [LatchReport::NotLeader, LatchReport::Closed]
        );
        assert!(bench.has("delete /latch/_c_u-1-"), "{release:?}");
        // The guaranteed delete is retried after a lost reply.
        let id = bench.op("delete /latch/_c_u-1-");
        bench.reply(id, Err(ZkError::ConnectionLoss));
        let timer = (bench.out.iter())
            .find_map(|c| match c {
                Command::Timer { id, after_ms: 1000 } => Some(*id),
                _ => None,
            })
            .expect("a retry after the policy's first sleep");
        bench.input(Input::Timer(timer));
        assert!(
            bench.has("delete /latch/_c_u-1-"),
            "{release:?} deletes again"
        );
    }
}

#[test]
fn each_watcher_set_on_the_predecessor_lists_again() {
    for release in Release::ALL {
        let mut bench = Bench::in_line(release, &[(3, "v-1")]);
        let id = bench.op("getData /latch/_c_v-1-");
        bench.reply(id, Ok(Response::Data(Vec::new(), stat(2, 103))));
        let deleted = WatchedEvent {
            event_type: EventType::NodeDeleted,
            path: format!("{DIR}/_c_v-1-latch-0000000003"),
            zxid: WatchedEvent::NO_ZXID,
        };
        bench.input(Input::Watch(deleted.clone()));
        assert_eq!(bench.ops().len(), 1, "{release:?}: {:?}", bench.ops());
        assert!(bench.has("getChildren /latch"));
        // Fired once: the same event again runs nothing.
        bench.input(Input::Watch(deleted));
        assert!(bench.ops().is_empty());
    }
}

// ---- framework.rs rows ----

#[test]
fn a_lost_reply_is_retried_and_only_its_outcome_is_called_back() {
    let mut bench = Bench::started(Release::V5_4_0);
    bench.created(5, 1);
    let id = bench.op("getChildren /latch");
    bench.reply(id, Err(ZkError::ConnectionLoss));
    assert!(bench.ops().is_empty(), "no callback: a retry sleeps");
    let timer = (bench.out.iter()).find_map(|c| match c {
        Command::Timer { id, after_ms: 1000 } => Some(*id),
        _ => None,
    });
    bench.input(Input::Timer(timer.expect("the first retry sleeps 1 s")));
    assert!(bench.has("getChildren /latch"));
}

#[test]
fn an_expired_session_is_retried_in_the_new_one() {
    for release in Release::ALL {
        let mut bench = Bench::started(release);
        let id = bench.op("create /latch/_c_u-1-");
        bench.reply(id, Err(ZkError::SessionExpired));
        bench.session(SessionEvent::Expired);
        bench.session(SessionEvent::Connected {
            session_id: SessionId(2),
        });
        let waiting = waiting_ids(latch_framework(&bench));
        assert!(
            !waiting.is_empty(),
            "{release:?}: the create waits to be retried"
        );
    }
}

fn latch_framework(bench: &Bench) -> &super::framework::Framework<super::leader_latch::Call> {
    bench.latch.framework()
}

#[test]
fn exhausted_retries_call_back_the_error_and_suspend() {
    let mut bench = Bench::started(Release::V5_4_0);
    bench.created(5, 1);
    for _ in 0..4 {
        let id = bench.op("getChildren /latch");
        bench.reply(id, Err(ZkError::ConnectionLoss));
        let timer = (bench.out.iter()).find_map(|c| match c {
            Command::Timer { id, after_ms } if *after_ms > 0 => Some(*id),
            _ => None,
        });
        match timer {
            Some(timer) => bench.input(Input::Timer(timer)),
            None => break,
        }
    }
    // The fourth loss gives up: SUSPENDED is posted for the listener.
    assert!(
        bench.zero_timer().is_some(),
        "a state change to hand over: {:?}",
        bench.out
    );
}

#[test]
fn an_operation_waits_for_the_connection_then_counts_a_loss() {
    let mut bench = Bench::started(Release::V5_4_0);
    bench.created(5, 1);
    let id = bench.op("getChildren /latch");
    bench.session(SessionEvent::Disconnected);
    bench.reply(id, Err(ZkError::ConnectionLoss));
    let mut sleeps = Vec::new();
    for _ in 0..40 {
        let Some((timer, ms)) = (bench.out.iter()).find_map(|c| match c {
            Command::Timer { id, after_ms } if *after_ms > 0 => Some((*id, *after_ms)),
            _ => None,
        }) else {
            break;
        };
        sleeps.push(ms);
        bench.input(Input::Timer(timer));
        assert!(
            bench.ops().is_empty(),
            "nothing is sent while not connected"
        );
    }
    assert_eq!(sleeps[0], 1000, "the retry's backoff");
    assert!(
        sleeps[1..].contains(&1000),
        "then 1 s sleeps for the connection"
    );
    assert!(sleeps.len() < 40, "it gives up in the end: {sleeps:?}");
}

#[test]
fn a_reconnection_wakes_sleeping_operations_in_5_only() {
    for release in [Release::V2_10_0, Release::V5_4_0] {
        let mut bench = Bench::started(release);
        bench.created(5, 1);
        let id = bench.op("getChildren /latch");
        bench.session(SessionEvent::Disconnected);
        bench.reply(id, Err(ZkError::ConnectionLoss));
        let timer = (bench.out.iter()).find_map(|c| match c {
            Command::Timer { id, after_ms } if *after_ms > 0 => Some(*id),
            _ => None,
        });
        bench.input(Input::Timer(timer.expect("backoff")));
        // Now asleep for the connection.
        bench.input(Input::Session(SessionEvent::Reconnected {
            session_id: SessionId(1),
        }));
        let woken = bench.has("getChildren /latch");
        assert_eq!(woken, release.is_curator_5(), "{release:?}");
    }
}

#[test]
fn a_new_session_is_lost_then_reconnected_in_5() {
    for release in [Release::V2_10_0, Release::V5_4_0] {
        let mut bench = Bench::leading(release);
        // A new session without an announced expiry (Curator 2's handle reset): 5.x posts LOST
        // (checkInstanceIndex) before RECONNECTED; 2.10.0 only RECONNECTED.
        bench.input(Input::Session(SessionEvent::Connected {
            session_id: SessionId(2),
        }));
        let id = bench.zero_timer().expect("a notice");
        bench.input(Input::Timer(id));
        let first = bench.reports();
        if release.is_curator_5() {
            assert_eq!(first, [LatchReport::NotLeader], "LOST first");
        } else {
            assert!(bench.has("create /latch/_c_u-2-"), "RECONNECTED: reset");
        }
    }
}

#[test]
fn curator_2_posts_lost_when_its_sync_gives_up() {
    // Both releases disconnect and stay disconnected; the timers they arm go off in turn (the
    // forced 1 s sleeps of each operation waiting for a connection, the listener's turns), 100
    // of them: returns the state first posted, the operations pending then, and the count of
    // timers after which LOST was posted, if it was.
    let run_out = |release: Release| {
        let mut bench = Bench::started(release);
        bench.session(SessionEvent::Disconnected);
        assert!(
            !bench.has("sync"),
            "{release:?}: nothing is sent while not connected"
        );
        let suspended = connection_state(latch_framework(&bench));
        let pending = waiting_ids(latch_framework(&bench)).len();
        // `session` has already given the listener its turns (the zero-delay timers).
        let mut timers: Vec<u64> = (bench.out.iter())
            .filter_map(|c| match c {
                Command::Timer { id, after_ms } if *after_ms > 0 => Some(*id),
                _ => None,
            })
            .collect();
        bench.out.clear();
        let mut lost_after = None;
        for fired in 1..=100 {
            timers.extend(bench.out.iter().filter_map(|c| match c {
                Command::Timer { id, .. } => Some(*id),
                _ => None,
            }));
            let Some(id) = (!timers.is_empty()).then(|| timers.remove(0)) else {
                break;
            };
            bench.input(Input::Timer(id));
            let lost = connection_state(latch_framework(&bench)) == Some(ConnectionState::Lost);
            if lost && lost_after.is_none() {
                lost_after = Some(fired);
            }
        }
        (suspended, pending, lost_after)
    };
    let (two_suspended, two_pending, two_lost) = run_out(Release::V2_10_0);
    let (five_suspended, five_pending, five_lost) = run_out(Release::V5_4_0);
    assert_eq!(two_suspended, Some(ConnectionState::Suspended));
    assert_eq!(five_suspended, Some(ConnectionState::Suspended));
    assert_eq!(
        two_pending,
        five_pending + 1,
        "2.10.0 has its suspended sync pending"
    );
    // The sync sleeps a second at a time up to the connection timeout, then gives up: LOST.
    let sleeps = (super::CONNECTION_TIMEOUT_MS / super::NOT_CONNECTED_SLEEP_MS) as usize;
    let lost_after = two_lost.expect("2.10.0 posts LOST when its sync gives up");
    assert!(
        lost_after >= sleeps,
        "LOST after {lost_after} timers, not before the timeout"
    );
    assert_eq!(five_lost, None, "5.x has no such sync: it stays SUSPENDED");
}

#[test]
fn connection_states_follow_the_client_events() {
    let mut bench = Bench::leading(Release::V5_4_0);
    bench.session(SessionEvent::Disconnected);
    assert_eq!(bench.reports(), [LatchReport::NotLeader]);
    // Disconnected again while SUSPENDED: no new state, nothing for the listener.
    bench.input(Input::Session(SessionEvent::Disconnected));
    assert!(bench.zero_timer().is_none());
}

#[test]
fn a_protected_create_finds_the_node_its_lost_reply_made() {
    let mut bench = Bench::started(Release::V5_4_0);
    let id = bench.op("create /latch/_c_u-1-");
    bench.reply(id, Err(ZkError::ConnectionLoss));
    let timer = (bench.out.iter()).find_map(|c| match c {
        Command::Timer { id, .. } => Some(*id),
        _ => None,
    });
    bench.input(Input::Timer(timer.expect("backoff")));
    bench.listed(&[(5, "u-1")]);
    assert_eq!(
        bench.latch.own_node(),
        Some("/latch/_c_u-1-latch-0000000005")
    );
    assert!(
        bench.has("getChildren /latch"),
        "the latch's own listing follows"
    );
}

#[test]
fn a_node_of_the_old_session_is_adopted_by_2_and_deleted_by_5() {
    for release in [Release::V2_10_0, Release::V5_4_0] {
        let mut bench = Bench::started(release);
        let id = bench.op("create /latch/_c_u-1-");
        bench.reply(id, Err(ZkError::ConnectionLoss));
        let timer = (bench.out.iter()).find_map(|c| match c {
            Command::Timer { id, after_ms } if *after_ms > 0 => Some(*id),
            _ => None,
        });
        bench.session(SessionEvent::Expired);
        bench.session(SessionEvent::Connected {
            session_id: SessionId(2),
        });
        bench.input(Input::Timer(timer.expect("the retry's backoff")));
        // (2.10.0 also resets on RECONNECTED; its first create's search is what is judged.)
        let search = (bench.ops().into_iter())
            .find(|(_, r)| describe(r) == "getChildren /latch")
            .map(|(id, _)| id);
        let Some(search) = search else {
            panic!(
                "{release:?} searches for the lost create's node: {:?}",
                bench.ops()
            )
        };
        let old = "_c_u-1-latch-0000000005".to_owned();
        bench.reply(search, Ok(Response::Children(vec![old], Stat::default())));
        if release.is_curator_5() {
            assert!(
                bench.has("delete /latch/_c_u-1-latch-0000000005"),
                "deleted"
            );
            assert!(bench.has("create /latch/_c_u-1-"), "and created again");
        } else {
            assert_eq!(
                bench.latch.own_node(),
                Some("/latch/_c_u-1-latch-0000000005")
            );
        }
    }
}

#[test]
fn a_protected_create_that_gives_up_deletes_its_node_later() {
    let mut bench = Bench::started(Release::V5_4_0);
    for _ in 0..8 {
        let Some(id) = (bench.ops().into_iter())
            .find(|(_, r)| {
                describe(r).starts_with("create /latch/_c_u-1-")
                    || describe(r) == "getChildren /latch"
            })
            .map(|(id, _)| id)
        else {
            break;
        };
        bench.reply(id, Err(ZkError::ConnectionLoss));
        if let Some(timer) = (bench.out.iter()).find_map(|c| match c {
            Command::Timer { id, after_ms } if *after_ms > 0 => Some(*id),
            _ => None,
        }) {
            bench.input(Input::Timer(timer));
        }
    }
    // Given up: the background search for its node (FindAndDelete) is out, and finds it.
    let id = bench.op("getChildren /latch");
    let name = "_c_u-1-latch-0000000005".to_owned();
    bench.reply(id, Ok(Response::Children(vec![name], Stat::default())));
    assert!(bench.has("delete /latch/_c_u-1-latch-0000000005"));
    assert_eq!(bench.latch.own_node(), None, "the latch never learnt of it");
}

#[test]
fn missing_parents_are_made_as_containers_then_the_node() {
    let mut bench = Bench::started(Release::V5_9_0);
    let id = bench.op("create /latch/_c_u-1-");
    bench.reply(id, Err(ZkError::NoNode));
    let id = bench.op("create /latch");
    assert!(matches!(
        bench.ops()[0].1,
        Request::Create {
            mode: crate::types::CreateMode::Container,
            ..
        }
    ));
    bench.reply(
        id,
        Ok(Response::Created(Created {
            path: DIR.into(),
            stat: Stat::default(),
        })),
    );
    // Not the first attempt any more: it looks for its node before creating.
    bench.listed(&[]);
    assert!(bench.has("create /latch/_c_u-1-"));
}

#[test]
fn a_guaranteed_delete_is_retried_until_the_server_answers() {
    let mut bench = Bench::leading(Release::V5_4_0);
    bench.input(Input::Request(LatchRequest::Close));
    let mut attempts = 0;
    for _ in 0..12 {
        let Some(id) = (bench.ops().into_iter())
            .find(|(_, r)| describe(r).starts_with("delete"))
            .map(|(id, _)| id)
        else {
            break;
        };
        attempts += 1;
        bench.reply(id, Err(ZkError::ConnectionLoss));
        if let Some(timer) = (bench.out.iter()).find_map(|c| match c {
            Command::Timer { id, after_ms } if *after_ms > 0 => Some(*id),
            _ => None,
        }) {
            bench.input(Input::Timer(timer));
        }
    }
    assert!(attempts > 4, "past the policy's three retries: {attempts}");
}
