//! Each guarantee on small hand-written histories, valid and invalid.

use zkh_recipes::types::{Created, Stat};
use zkh_recipes::{CreateMode, Request, Response, SessionEvent, SessionId};

use super::*;
use crate::history::{History, HistoryEvent, OpOutcome};
use crate::request::Reply;
use crate::zookeeper::ZkModel;

/// A history built call by call, one microsecond apart.
#[derive(Default)]
pub(super) struct Build {
    pub(super) history: History,
    xid: u64,
}

impl Build {
    pub(super) fn push(&mut self, event: HistoryEvent) {
        let at = self.history.entries().len() as u64;
        self.history.push(at, event);
    }

    /// Client `client` of session `session` issues `request`; returns its xid.
    pub(super) fn invoke(&mut self, client: u32, session: i64, request: Request) -> u64 {
        self.xid += 1;
        self.push(HistoryEvent::Invoke {
            client,
            session: SessionId(session),
            xid: self.xid,
            request,
        });
        self.xid
    }

    pub(super) fn answer(&mut self, client: u32, xid: u64, response: Response, zxid: i64) {
        self.push(HistoryEvent::Complete {
            client,
            xid,
            outcome: OpOutcome::Reply {
                reply: Reply::Ok(response),
                zxid,
            },
        });
    }

    fn leads(&mut self, server: u32, epoch: u64) {
        self.push(HistoryEvent::Server {
            server,
            role: format!("leading epoch {epoch}"),
        });
    }

    pub(super) fn judged(&self, property: &str) -> Finding {
        judge(&self.history, &CommitLogs::new())
            .into_iter()
            .find(|f| f.property == property)
            .expect("judged")
    }
}

pub(super) fn set(path: &str) -> Request {
    Request::SetData {
        path: path.to_owned(),
        data: Vec::new(),
        version: -1,
    }
}

pub(super) fn get(path: &str) -> Request {
    Request::GetData {
        path: path.to_owned(),
        watch: false,
    }
}

pub(super) fn stat() -> Stat {
    Stat::default()
}

fn sequential(parent: &str) -> Request {
    Request::Create {
        path: format!("{parent}/n-"),
        data: Vec::new(),
        mode: CreateMode::EphemeralSequential,
    }
}

fn created(parent: &str, suffix: i32) -> Response {
    Response::Created(Created {
        path: format!("{parent}/n-{suffix:010}"),
        stat: stat(),
    })
}

#[test]
fn an_orderly_history_keeps_every_guarantee_and_reaches_its_companions() {
    let mut b = Build::default();
    b.leads(1, 1);
    let w = b.invoke(0, 10, set("/a"));
    b.answer(0, w, Response::SetData(stat()), 5);
    // Concurrent writes may take any order.
    let x = b.invoke(0, 10, set("/a"));
    let y = b.invoke(1, 11, set("/a"));
    b.leads(2, 2);
    b.answer(1, y, Response::SetData(stat()), 6);
    b.answer(0, x, Response::SetData(stat()), 7);
    // A stale read of another client's write is allowed: session 11 reads at 6 after 7 exists.
    let r = b.invoke(1, 11, get("/a"));
    b.answer(1, r, Response::Data(Vec::new(), stat()), 6);
    let c = b.invoke(0, 10, sequential("/q"));
    b.answer(0, c, created("/q", 0), 8);
    b.push(HistoryEvent::Session {
        client: 0,
        event: SessionEvent::Reconnected {
            session_id: SessionId(10),
        },
    });
    let d = b.invoke(0, 10, sequential("/q"));
    b.answer(0, d, created("/q", 1), 9);
    for finding in judge(&b.history, &CommitLogs::new()) {
        // The lost-reply companions need the servers' commits, which this history has none of.
        let needs_logs = [LOST_REPLY_APPLIED, LOST_REPLY_NOT_APPLIED].contains(&finding.property);
        assert!(
            finding.holds || (needs_logs && finding.detail.contains("not judged")),
            "{finding:?}"
        );
    }
}

#[test]
fn two_leaders_of_one_epoch_break_zab_unless_the_data_was_lost_between() {
    let mut b = Build::default();
    b.leads(1, 1);
    b.leads(1, 1);
    assert!(
        b.judged(ONE_LEADER_PER_EPOCH).holds,
        "the same server again"
    );
    b.push(HistoryEvent::Fault {
        description: "DataLoss".to_owned(),
    });
    b.leads(2, 1);
    assert!(b.judged(ONE_LEADER_PER_EPOCH).holds, "a new ensemble");
    b.leads(3, 1);
    let finding = b.judged(ONE_LEADER_PER_EPOCH);
    assert!(!finding.holds);
    assert!(
        finding.detail.contains("servers 2 and 3 both led epoch 1"),
        "{finding:?}"
    );
    assert_eq!(finding.evidence.len(), 2);
}

#[test]
fn two_writes_with_one_zxid_are_caught() {
    let mut b = Build::default();
    let w = b.invoke(0, 10, set("/a"));
    let x = b.invoke(1, 11, set("/b"));
    b.answer(0, w, Response::SetData(stat()), 5);
    b.answer(1, x, Response::SetData(stat()), 5);
    assert!(!b.judged(ONE_TRANSACTION_PER_ZXID).holds);
    // A read may share its zxid with the write it saw.
    let mut b = Build::default();
    let w = b.invoke(0, 10, set("/a"));
    b.answer(0, w, Response::SetData(stat()), 5);
    let r = b.invoke(1, 11, get("/a"));
    b.answer(1, r, Response::Data(Vec::new(), stat()), 5);
    assert!(b.judged(ONE_TRANSACTION_PER_ZXID).holds);
}

#[test]
fn a_write_ordered_before_one_acknowledged_earlier_breaks_linearizability() {
    let mut b = Build::default();
    let w = b.invoke(0, 10, set("/a"));
    b.answer(0, w, Response::SetData(stat()), 7);
    let x = b.invoke(1, 11, set("/b"));
    b.answer(1, x, Response::SetData(stat()), 6);
    let finding = b.judged(LINEARIZABLE_WRITES);
    assert!(!finding.holds);
    assert!(finding.detail.contains("zxid 0x7 before"), "{finding:?}");
    assert_eq!(finding.evidence, vec![1, 2, 3]);
}

#[test]
fn a_session_answered_with_an_older_view_breaks_the_single_system_image() {
    let mut b = Build::default();
    let r = b.invoke(0, 10, get("/a"));
    b.answer(0, r, Response::Data(Vec::new(), stat()), 9);
    b.push(HistoryEvent::Session {
        client: 0,
        event: SessionEvent::Reconnected {
            session_id: SessionId(10),
        },
    });
    let s = b.invoke(0, 10, get("/a"));
    b.answer(0, s, Response::Data(Vec::new(), stat()), 8);
    let finding = b.judged(SINGLE_SYSTEM_IMAGE);
    assert!(!finding.holds);
    assert!(finding.detail.contains("an older view"), "{finding:?}");
    // Another session may see the older view: sequential consistency, not linearizability.
    let mut b = Build::default();
    let r = b.invoke(0, 10, get("/a"));
    b.answer(0, r, Response::Data(Vec::new(), stat()), 9);
    let s = b.invoke(1, 11, get("/a"));
    b.answer(1, s, Response::Data(Vec::new(), stat()), 8);
    assert!(b.judged(SINGLE_SYSTEM_IMAGE).holds);
}

#[test]
fn a_reused_or_shrinking_sequential_suffix_is_caught() {
    let mut b = Build::default();
    let c = b.invoke(0, 10, sequential("/q"));
    b.answer(0, c, created("/q", 3), 5);
    let d = b.invoke(1, 11, sequential("/q"));
    b.answer(1, d, created("/q", 3), 6);
    assert!(!b.judged(SEQUENTIAL_SUFFIXES).holds);
    // Under another parent the counter is another.
    let mut b = Build::default();
    let c = b.invoke(0, 10, sequential("/q"));
    b.answer(0, c, created("/q", 3), 5);
    let d = b.invoke(1, 11, sequential("/r"));
    b.answer(1, d, created("/r", 0), 6);
    assert!(b.judged(SEQUENTIAL_SUFFIXES).holds);
    // A parent deleted and made again counts from zero again: another life of the parent.
    let mut b = Build::default();
    let c = b.invoke(0, 10, sequential("/q"));
    b.answer(0, c, created("/q", 3), 5);
    let gone = Request::Delete {
        path: "/q".to_owned(),
        version: -1,
    };
    let d = b.invoke(1, 11, gone);
    b.answer(1, d, Response::Deleted, 6);
    let e = b.invoke(1, 11, sequential("/q"));
    b.answer(1, e, created("/q", 0), 8);
    assert!(b.judged(SEQUENTIAL_SUFFIXES).holds);
}

#[test]
fn the_companions_are_unreached_on_a_quiet_history() {
    let mut b = Build::default();
    let w = b.invoke(0, 10, set("/a"));
    b.answer(0, w, Response::SetData(stat()), 5);
    assert!(!b.judged(SESSION_RESUMED).holds);
    assert!(!b.judged(LEADER_CHANGED_UNDER_A_WRITE).holds);
}

/// A session and a create of `/a`, applied by a model as a server would: the commit log, the
/// session, and the zxids of the open and the create.
fn one_create() -> (CommitLogs, SessionId, i64, i64, ZkModel) {
    let mut zk = ZkModel::new();
    zk.begin_epoch(1);
    let session = zk.open_session();
    let opened = zk.last_zxid();
    let create = Request::Create {
        path: "/a".to_owned(),
        data: b"x".to_vec(),
        mode: CreateMode::Persistent,
    };
    zk.apply(session, &create);
    let created = zk.last_zxid();
    let log = vec![
        (opened, Committed::OpenSession(session)),
        (
            created,
            Committed::Write {
                session,
                request: create,
            },
        ),
    ];
    let logs = CommitLogs {
        applied: vec![log.clone(), log[..1].to_vec()],
        finals: Vec::new(),
        around: Vec::new(),
    };
    (logs, session, opened, created, zk)
}

#[test]
fn reads_are_judged_against_the_servers_agreed_order() {
    let (logs, session, opened, created, mut zk) = one_create();
    let Reply::Ok(data) = zk.apply(session, &get("/a")).reply else {
        panic!("the node is there");
    };
    let judged = |b: &Build, logs: &CommitLogs| {
        judge(&b.history, logs)
            .into_iter()
            .find(|f| f.property == SEQUENTIALLY_CONSISTENT_READS)
            .expect("judged")
    };
    // The data at the create's zxid: as the agreed order has it.
    let mut b = Build::default();
    let r = b.invoke(0, session.0, get("/a"));
    b.answer(0, r, data.clone(), created);
    let good = judged(&b, &logs);
    assert!(good.holds, "{good:?}");
    assert!(good.detail.contains("1 answered reads"), "{}", good.detail);
    // The same answer labelled with the open's zxid: the node did not exist yet.
    let mut bad = Build::default();
    let r = bad.invoke(0, session.0, get("/a"));
    bad.answer(0, r, data, opened);
    let found = judged(&bad, &logs);
    assert!(!found.holds);
    assert!(
        found.detail.contains("was answered ok data \"x\"")
            && found.detail.contains("answers error NoNode"),
        "{}",
        found.detail
    );
    // Without logs, or after a data loss, it is not judged.
    assert!(judged(&bad, &CommitLogs::new())
        .detail
        .contains("not judged"));
    bad.push(HistoryEvent::Fault {
        description: "DataLoss".to_owned(),
    });
    let lost = judged(&bad, &logs);
    assert!(
        lost.holds && lost.detail.contains("data was lost"),
        "{lost:?}"
    );
}

#[test]
fn two_servers_applying_different_transactions_as_one_zxid_break_one_transaction_per_zxid() {
    let (mut logs, session, opened, ..) = one_create();
    let b = Build::default();
    let agreed = judge(&b.history, &logs);
    assert!(agreed
        .iter()
        .all(|f| f.holds || f.class == Class::Sometimes));
    logs.applied[1][0] = (opened, Committed::CloseSession(session));
    let found = judge(&b.history, &logs)
        .into_iter()
        .find(|f| f.property == ONE_TRANSACTION_PER_ZXID)
        .expect("judged");
    assert!(!found.holds);
    assert!(
        found
            .detail
            .contains("servers 0 and 1 applied different transactions as zxid"),
        "{}",
        found.detail
    );
}

#[test]
fn a_write_rolled_back_or_acknowledged_and_never_applied_breaks_durability() {
    let (mut logs, session, opened, created, zk) = one_create();
    let durability = |b: &Build, logs: &CommitLogs| {
        judge(&b.history, logs)
            .into_iter()
            .find(|f| f.property == DURABILITY)
            .expect("judged")
    };
    let mut b = Build::default();
    // The create, acknowledged at its zxid; every server ends at a prefix of the agreed order.
    let create = Request::Create {
        path: "/a".to_owned(),
        data: b"x".to_vec(),
        mode: CreateMode::Persistent,
    };
    let w = b.invoke(0, session.0, create.clone());
    b.answer(0, w, created_at("/a"), created);
    let mut behind = ZkModel::new();
    behind.begin_epoch(1);
    behind.open_session();
    logs.finals = vec![(1, zk.clone()), (2, behind)];
    let kept = durability(&b, &logs);
    assert!(kept.holds, "{kept:?}");
    // A server that ends at the create's zxid without the node: the create was rolled back.
    let mut rolled_back = ZkModel::new();
    rolled_back.begin_epoch(1);
    rolled_back.open_session();
    rolled_back.apply_noop();
    logs.finals.push((3, rolled_back));
    let lost = durability(&b, &logs);
    assert!(!lost.holds);
    assert!(
        lost.detail.starts_with("server 3 ended at zxid") && lost.detail.contains("/a not as"),
        "{}",
        lost.detail
    );
    // A write acknowledged at a zxid no server applied it at.
    logs.finals.pop();
    let x = b.invoke(0, session.0, set("/a"));
    b.answer(0, x, Response::SetData(stat()), opened);
    let unapplied = durability(&b, &logs);
    assert!(!unapplied.holds);
    assert!(
        unapplied.detail.contains("was acknowledged at zxid")
            && unapplied.detail.contains("no server applied it"),
        "{}",
        unapplied.detail
    );
}

fn created_at(path: &str) -> Response {
    Response::Created(Created {
        path: path.to_owned(),
        stat: stat(),
    })
}

/// A write that ended in ConnectionLoss is found applied when its session's same write is in
/// the agreed order (at a zxid no answered write holds), and not applied otherwise.
#[test]
fn lost_replies_are_told_apart_by_the_servers_commits() {
    let (logs, session, ..) = one_create();
    let create = Request::Create {
        path: "/a".to_owned(),
        data: b"x".to_vec(),
        mode: CreateMode::Persistent,
    };
    let mut b = Build::default();
    let lost = b.invoke(0, session.0, create);
    b.push(HistoryEvent::Complete {
        client: 0,
        xid: lost,
        outcome: OpOutcome::Unknown,
    });
    let never = b.invoke(0, session.0, set("/a"));
    b.push(HistoryEvent::Complete {
        client: 0,
        xid: never,
        outcome: OpOutcome::Unknown,
    });
    let found = judge(&b.history, &logs);
    let of = |name: &str| found.iter().find(|f| f.property == name).expect("judged");
    assert!(of(LOST_REPLY_APPLIED).holds, "{:?}", of(LOST_REPLY_APPLIED));
    assert!(
        of(LOST_REPLY_NOT_APPLIED).holds,
        "{:?}",
        of(LOST_REPLY_NOT_APPLIED)
    );
    assert!(of(LOST_REPLY_APPLIED).detail.starts_with("1 of 2"));
    // Without the lost setData, nothing lost was left unapplied.
    let mut only_applied = Build::default();
    let lost = only_applied.invoke(0, session.0, of_create());
    only_applied.push(HistoryEvent::Complete {
        client: 0,
        xid: lost,
        outcome: OpOutcome::Unknown,
    });
    let found = judge(&only_applied.history, &logs);
    let not_applied = found
        .iter()
        .find(|f| f.property == LOST_REPLY_NOT_APPLIED)
        .expect("judged");
    assert!(!not_applied.holds, "{not_applied:?}");
}

fn of_create() -> Request {
    Request::Create {
        path: "/a".to_owned(),
        data: b"x".to_vec(),
        mode: CreateMode::Persistent,
    }
}

/// A read answered below another session's acknowledged write is a stale read, seen.
#[test]
fn a_stale_read_of_another_sessions_write_is_seen_and_a_fresh_one_is_not() {
    let mut b = Build::default();
    let w = b.invoke(0, 10, set("/a"));
    b.answer(0, w, Response::SetData(stat()), 7);
    let r = b.invoke(1, 11, get("/a"));
    b.answer(1, r, Response::Data(Vec::new(), stat()), 7);
    let fresh = judge(&b.history, &CommitLogs::new());
    let seen = |found: &[Finding]| {
        found
            .iter()
            .find(|f| f.property == STALE_READ_SEEN)
            .expect("judged")
            .holds
    };
    assert!(!seen(&fresh), "a read at the write's zxid is not stale");
    let r = b.invoke(1, 11, get("/a"));
    b.answer(1, r, Response::Data(Vec::new(), stat()), 6);
    assert!(seen(&judge(&b.history, &CommitLogs::new())));
}

/// A session with an ephemeral node that then expires, applied as a server would: the log,
/// the session, the zxid of its end, and the tree after it.
fn an_ephemeral_then_the_end() -> (CommitLogs, SessionId, i64, ZkModel) {
    let mut zk = ZkModel::new();
    zk.begin_epoch(1);
    let session = zk.open_session();
    let opened = zk.last_zxid();
    let create = Request::Create {
        path: "/e".to_owned(),
        data: Vec::new(),
        mode: CreateMode::Ephemeral,
    };
    zk.apply(session, &create);
    let created = zk.last_zxid();
    let mut kept = zk.clone();
    zk.close_session(session).expect("a live session");
    let ended = zk.last_zxid();
    kept.close_session_keeping_ephemerals(session);
    assert_eq!(
        kept.last_zxid(),
        ended,
        "the faulty close takes the same zxid"
    );
    let log = vec![
        (opened, Committed::OpenSession(session)),
        (
            created,
            Committed::Write {
                session,
                request: create,
            },
        ),
        (ended, Committed::CloseSession(session)),
    ];
    let logs = CommitLogs {
        applied: vec![log],
        finals: vec![(1, zk.clone()), (2, kept)],
        around: Vec::new(),
    };
    (logs, session, ended, zk)
}

#[test]
fn a_reply_after_a_sessions_end_or_an_ephemeral_kept_past_it_is_caught() {
    let (mut logs, session, ended, _) = an_ephemeral_then_the_end();
    let end_is_final = |b: &Build, logs: &CommitLogs| {
        judge(&b.history, logs)
            .into_iter()
            .find(|f| f.property == SESSION_END_IS_FINAL)
            .expect("judged")
    };
    // Server 2 kept the ephemeral past the end.
    let mut b = Build::default();
    let kept = end_is_final(&b, &logs);
    assert!(!kept.holds);
    assert!(
        kept.detail.starts_with("server 2 ended at zxid")
            && kept
                .detail
                .contains("still holding /e, an ephemeral node of session"),
        "{}",
        kept.detail
    );
    // Without it: a read answered below the end by a lagging server is fine...
    logs.finals.pop();
    let r = b.invoke(0, session.0, get("/e"));
    b.answer(0, r, Response::Data(Vec::new(), stat()), ended - 1);
    let fine = end_is_final(&b, &logs);
    assert!(fine.holds, "{fine:?}");
    assert!(
        fine.detail.starts_with("1 sessions ended"),
        "{}",
        fine.detail
    );
    // ...and one answered by a server that had applied the end is not.
    let late = b.invoke(0, session.0, get("/e"));
    b.answer(0, late, Response::Data(Vec::new(), stat()), ended + 1);
    let answered = end_is_final(&b, &logs);
    assert!(!answered.holds);
    assert!(
        answered.detail.contains("was answered ok at zxid")
            && answered.detail.contains("after the session ended at zxid"),
        "{}",
        answered.detail
    );
    assert_eq!(answered.evidence.len(), 2, "the request and its reply");
}

fn event(b: &mut Build, client: u32, path: &str, zxid: i64) {
    b.push(HistoryEvent::Watch {
        client,
        event: zkh_recipes::WatchedEvent {
            event_type: zkh_recipes::EventType::NodeDataChanged,
            path: path.to_owned(),
            zxid,
        },
    });
}

#[test]
fn the_data_before_its_event_or_events_out_of_order_are_caught_and_a_reconnection_starts_again() {
    let in_order = |b: &Build| b.judged(WATCH_EVENTS_IN_ORDER);
    // The event first, then a reply at its zxid: fine.
    let mut b = Build::default();
    event(&mut b, 0, "/x", 7);
    let r = b.invoke(0, 10, get("/y"));
    b.answer(0, r, Response::Data(Vec::new(), stat()), 7);
    assert!(in_order(&b).holds, "{:?}", in_order(&b));
    // A reply at 9, then the event of 8 it carries: the data came first.
    let r = b.invoke(0, 10, get("/y"));
    b.answer(0, r, Response::Data(Vec::new(), stat()), 9);
    event(&mut b, 0, "/x", 8);
    let late = in_order(&b);
    assert!(!late.holds);
    assert!(
        late.detail
            .contains("was answered at zxid 0x9 before it saw the event"),
        "{}",
        late.detail
    );
    // Events out of zxid order on one connection; a new connection starts the order again, and
    // the events a reconnection fires carry no zxid.
    let mut b = Build::default();
    event(&mut b, 1, "/x", 12);
    event(&mut b, 1, "/y", 11);
    let out = in_order(&b);
    assert!(
        !out.holds && out.detail.contains("events out of zxid order"),
        "{out:?}"
    );
    let mut b = Build::default();
    event(&mut b, 1, "/x", 12);
    b.push(HistoryEvent::Session {
        client: 1,
        event: SessionEvent::Disconnected,
    });
    b.push(HistoryEvent::Session {
        client: 1,
        event: SessionEvent::Reconnected {
            session_id: SessionId(11),
        },
    });
    event(&mut b, 1, "/y", zkh_recipes::WatchedEvent::NO_ZXID);
    event(&mut b, 1, "/y", 11);
    let again = in_order(&b);
    assert!(again.holds, "{again:?}");
    assert!(
        again.detail.starts_with("2 watch events"),
        "{}",
        again.detail
    );
}

/// A reply's zxid orders the events of its session only: a reconnection within the session
/// keeps it, a new session announced as a reconnection (Curator 2.x's new handle) does not.
#[test]
fn a_new_session_announced_as_a_reconnection_starts_the_reply_order_again() {
    let in_order = |b: &Build| b.judged(WATCH_EVENTS_IN_ORDER);
    let reconnected = |b: &mut Build, session: i64| {
        b.push(HistoryEvent::Session {
            client: 0,
            event: SessionEvent::Disconnected,
        });
        b.push(HistoryEvent::Session {
            client: 0,
            event: SessionEvent::Reconnected {
                session_id: SessionId(session),
            },
        });
    };
    let history = |session_after: i64| {
        let mut b = Build::default();
        b.push(HistoryEvent::Session {
            client: 0,
            event: SessionEvent::Connected {
                session_id: SessionId(10),
            },
        });
        let r = b.invoke(0, 10, get("/y"));
        b.answer(0, r, Response::Data(Vec::new(), stat()), 9);
        reconnected(&mut b, session_after);
        event(&mut b, 0, "/x", 8);
        b
    };
    // Within session 10: the reply at 9 came before the event of 8.
    let same = in_order(&history(10));
    assert!(!same.holds, "{same:?}");
    assert!(
        same.detail.contains("was answered at zxid 0x9"),
        "{}",
        same.detail
    );
    // Session 11, a new handle's: its server may be behind the old one's.
    let new = in_order(&history(11));
    assert!(new.holds, "{new:?}");
}

/// A read of `path` that sets a data watch.
fn watch(path: &str) -> Request {
    Request::GetData {
        path: path.to_owned(),
        watch: true,
    }
}

#[test]
fn a_watch_that_fires_twice_or_that_nobody_set_is_caught_and_one_set_again_fires_again() {
    let once = |b: &Build| b.judged(WATCH_FIRES_ONCE);
    // Set, fired: fine; fired again without being set again: caught.
    let mut b = Build::default();
    let r = b.invoke(0, 10, watch("/x"));
    b.answer(0, r, Response::Data(Vec::new(), stat()), 5);
    event(&mut b, 0, "/x", 6);
    assert!(once(&b).holds, "{:?}", once(&b));
    event(&mut b, 0, "/x", 7);
    let twice = once(&b);
    assert!(
        !twice.holds && twice.detail.contains("fired twice"),
        "{twice:?}"
    );
    // Set again in between: fires again. A read still unanswered when the event came may have
    // set it after the firing: one more event is allowed.
    let mut b = Build::default();
    for zxid in [6, 8] {
        let r = b.invoke(0, 10, watch("/x"));
        b.answer(0, r, Response::Data(Vec::new(), stat()), zxid - 1);
        event(&mut b, 0, "/x", zxid);
    }
    let pending = b.invoke(0, 10, watch("/x"));
    let r = b.invoke(0, 10, watch("/y"));
    b.answer(0, r, Response::Data(Vec::new(), stat()), 9);
    event(&mut b, 0, "/x", 10);
    b.answer(0, pending, Response::Data(Vec::new(), stat()), 9);
    assert!(once(&b).holds, "{:?}", once(&b));
    // An event on another client's watch, or after the session ended, has none to use.
    let mut b = Build::default();
    let r = b.invoke(0, 10, watch("/x"));
    b.answer(0, r, Response::Data(Vec::new(), stat()), 5);
    event(&mut b, 1, "/x", 6);
    assert!(!once(&b).holds, "client 1 set no watch");
    let mut b = Build::default();
    let r = b.invoke(0, 10, watch("/x"));
    b.answer(0, r, Response::Data(Vec::new(), stat()), 5);
    b.push(HistoryEvent::Session {
        client: 0,
        event: SessionEvent::Expired,
    });
    event(&mut b, 0, "/x", 6);
    assert!(once(&b).holds, "sent to the ended session: not judged");
    b.push(HistoryEvent::Session {
        client: 0,
        event: SessionEvent::Connected {
            session_id: SessionId(12),
        },
    });
    event(&mut b, 0, "/x", 7);
    assert!(!once(&b).holds, "the session's end dropped its watch");
}
