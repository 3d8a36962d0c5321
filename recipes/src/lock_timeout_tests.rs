//! The acquire timeout against a create whose reply was lost (issue 37): the acquire ends only
//! once the create's outcome is known, and never leaves its node behind.

use super::*;
use crate::types::Stat;

fn commands(machine: &mut SafeLock, input: Input<LockRequest>) -> Vec<Command<LockReport>> {
    let mut out = Vec::new();
    machine.handle(input, &mut out);
    out
}

fn op(out: &[Command<LockReport>]) -> (OpId, Request) {
    out.iter()
        .find_map(|c| match c {
            Command::Op { id, request } => Some((*id, request.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("an operation in {out:?}"))
}

fn timers(out: &[Command<LockReport>]) -> Vec<TimerId> {
    out.iter()
        .filter_map(|c| match c {
            Command::Timer { id, .. } => Some(*id),
            _ => None,
        })
        .collect()
}

/// Acquire with a timeout; the create's reply is lost; the timeout passes; the retry lists the
/// children, in which `found` is (or is not) the node the lost create made.
fn lost_create_then_timeout(found: bool) -> (SafeLock, Vec<Command<LockReport>>) {
    let mut lock = SafeLock::new(LockVariant::Correct, "/locks/stock", "u1");
    let out = commands(
        &mut lock,
        Input::Request(LockRequest::Acquire {
            timeout_ms: Some(100),
        }),
    );
    let timeout = timers(&out)[0];
    let (create, request) = op(&out);
    assert!(matches!(request, Request::Create { .. }), "{request:?}");
    let out = commands(
        &mut lock,
        Input::Reply {
            id: create,
            result: Err(ZkError::ConnectionLoss),
        },
    );
    let retry = timers(&out)[0];
    let out = commands(&mut lock, Input::Timer(timeout));
    assert!(
        out.is_empty(),
        "no report while the create's outcome is unknown: {out:?}"
    );
    let out = commands(&mut lock, Input::Timer(retry));
    let (find, request) = op(&out);
    assert!(
        matches!(request, Request::GetChildren { .. }),
        "{request:?}"
    );
    let mut children = vec!["_c_other-1-lock-0000000001".to_owned()];
    if found {
        children.push("_c_u1-1-lock-0000000002".to_owned());
    }
    let out = commands(
        &mut lock,
        Input::Reply {
            id: find,
            result: Ok(Response::Children(children, Stat::default())),
        },
    );
    (lock, out)
}

#[test]
fn a_timeout_during_a_lost_create_deletes_the_node_once_found() {
    let (mut lock, out) = lost_create_then_timeout(true);
    let (delete, request) = op(&out);
    assert_eq!(
        request,
        Request::Delete {
            path: "/locks/stock/_c_u1-1-lock-0000000002".to_owned(),
            version: -1
        },
        "the node the lost create made is deleted, not left behind"
    );
    let out = commands(
        &mut lock,
        Input::Reply {
            id: delete,
            result: Ok(Response::Deleted),
        },
    );
    assert_eq!(out, vec![Command::Report(LockReport::TimedOut)]);
    assert!(!lock.is_held());
}

#[test]
fn a_timeout_during_a_lost_create_that_made_nothing_ends_without_creating() {
    let (lock, out) = lost_create_then_timeout(false);
    assert_eq!(
        out,
        vec![Command::Report(LockReport::TimedOut)],
        "no second create after the timeout"
    );
    assert!(!lock.is_held());
}
