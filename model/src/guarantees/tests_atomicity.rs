//! Atomicity on small hand-written commit logs: a server's record around a multi or a failed
//! write, as it should be and as a broken server would make it.

use zkh_recipes::{CreateMode, Op, Request};

use super::tests::Build;
use super::*;
use crate::zookeeper::ZkModel;

fn create(path: &str) -> Request {
    Request::Create {
        path: path.to_owned(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
    }
}

fn create_op(path: &str) -> Op {
    Op::Create {
        path: path.to_owned(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
    }
}

/// A server that opened a session, created `/a`, then applied `last` (a multi or a failed
/// write), recording around it; `broken` changes what it recorded after `last`, as a server that
/// applied it otherwise would have. The commit logs, with the same log on a second server that
/// recorded nothing.
fn logs_around(last: Request, broken: impl FnOnce(&mut PathsView)) -> CommitLogs {
    let mut zk = ZkModel::new();
    zk.begin_epoch(1);
    let session = zk.open_session();
    let mut log = vec![(zk.last_zxid(), Committed::OpenSession(session))];
    zk.apply(session, &create("/a"));
    log.push((
        zk.last_zxid(),
        Committed::Write {
            session,
            request: create("/a"),
        },
    ));
    let before = paths_view(&zk, &last);
    let reply = zk.apply(session, &last).reply;
    assert!(recorded_around(&last, &reply), "a multi or a failed write");
    let zxid = zk.last_zxid();
    let mut after = paths_view(&zk, &last);
    broken(&mut after);
    log.push((
        zxid,
        Committed::Write {
            session,
            request: last,
        },
    ));
    let around = Around {
        zxid,
        before,
        after,
    };
    CommitLogs {
        applied: vec![log.clone(), log],
        finals: Vec::new(),
        around: vec![vec![around], Vec::new()],
    }
}

fn atomicity(logs: &CommitLogs) -> Finding {
    judge(&Build::default().history, logs)
        .into_iter()
        .find(|f| f.property == ATOMICITY)
        .expect("judged")
}

/// `/b` there after all, like `/a`.
fn sneak_in_b(after: &mut PathsView) {
    let a = after
        .iter()
        .find(|(path, _)| path == "/a")
        .map(|(_, node)| node.clone());
    for (path, node) in after.iter_mut() {
        if path == "/b" {
            *node = a.clone().flatten();
        }
    }
}

/// `/a`'s data changed.
fn touch_a(after: &mut PathsView) {
    for (path, node) in after.iter_mut() {
        if let (true, Some(node)) = (path == "/a", node) {
            node.data = b"trace".to_vec();
        }
    }
}

#[test]
fn a_failed_multi_recorded_as_the_replay_has_it_holds() {
    let multi = Request::Multi(vec![create_op("/b"), create_op("/a")]);
    let logs = logs_around(multi, |_| {});
    let finding = atomicity(&logs);
    assert!(finding.holds, "{finding:?}");
    assert!(
        finding.detail.starts_with("1 of 1 server records"),
        "{}",
        finding.detail
    );
}

#[test]
fn a_failed_multi_that_left_a_node_behind_is_caught() {
    let multi = Request::Multi(vec![create_op("/b"), create_op("/a")]);
    let finding = atomicity(&logs_around(multi, sneak_in_b));
    assert!(!finding.holds);
    assert!(
        finding
            .detail
            .contains("failed at its operation 2 with NodeExists")
            && finding.detail.contains("/b is there")
            && finding.detail.contains("absent in the replay"),
        "{}",
        finding.detail
    );
}

#[test]
fn a_failed_single_write_that_left_a_trace_is_caught() {
    let finding = atomicity(&logs_around(create("/a"), touch_a));
    assert!(!finding.holds);
    assert!(
        finding
            .detail
            .contains("failed with NodeExists, so it leaves no trace")
            && finding.detail.contains("/a is there (data \"trace\""),
        "{}",
        finding.detail
    );
}

#[test]
fn a_record_whose_tree_differed_before_the_write_is_not_blamed_on_it() {
    let multi = Request::Multi(vec![create_op("/b"), create_op("/a")]);
    let mut logs = logs_around(multi, sneak_in_b);
    // The server's tree already differed before the multi: an earlier transaction's fault.
    let record = &mut logs.around[0][0];
    record.before = record.after.clone();
    let finding = atomicity(&logs);
    assert!(finding.holds, "{finding:?}");
    assert!(
        finding.detail.starts_with("0 of 1 server records"),
        "{}",
        finding.detail
    );
}
