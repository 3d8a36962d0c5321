//! Unit tests of the job instance, driven by hand through its inputs.

use super::*;
use crate::error::ZkError;
use crate::event::SessionEvent;
use crate::machine::RETRY_AFTER_MS;
use crate::request::{Request, Response};
use crate::sharding::Claim;
use crate::types::CreateMode;

fn ops(out: &[Command<JobReport>]) -> Vec<(OpId, Request)> {
    out.iter()
        .filter_map(|command| match command {
            Command::Op { id, request } => Some((*id, request.clone())),
            _ => None,
        })
        .collect()
}

fn job_op(out: &[Command<JobReport>]) -> (OpId, Request) {
    ops(out)
        .into_iter()
        .find(|(id, _)| *id >= JOB_IDS)
        .expect("a job operation")
}

fn started() -> (JobMachine, Vec<Command<JobReport>>) {
    let mut machine = JobMachine::new(JobVariant::Correct, "/job", "a", "u", 2);
    let mut out = Vec::new();
    let session_id = SessionId(7);
    machine.handle(
        Input::Session(SessionEvent::Connected { session_id }),
        &mut out,
    );
    out.clear();
    machine.handle(Input::Request(JobRequest::Start), &mut out);
    (machine, out)
}

#[test]
fn start_registers_the_instance_node_and_elects() {
    let (_, out) = started();
    let (_, request) = job_op(&out);
    assert_eq!(
        request,
        Request::Create {
            path: "/job/instances/a".into(),
            data: Vec::new(),
            mode: CreateMode::Ephemeral,
        }
    );
    assert!(
        ops(&out).iter().any(|(id, _)| *id < CLAIM_IDS),
        "the election starts too"
    );
}

#[test]
fn connection_loss_retries_the_same_operation_after_a_pause() {
    let (mut machine, out) = started();
    let (id, request) = job_op(&out);
    let mut out = Vec::new();
    let lost = Err(ZkError::ConnectionLoss);
    machine.handle(Input::Reply { id, result: lost }, &mut out);
    let timer = out.iter().find_map(|command| match command {
        Command::Timer { id, after_ms } if *id >= JOB_IDS => Some((*id, *after_ms)),
        _ => None,
    });
    let (timer, after_ms) = timer.expect("a retry timer");
    assert_eq!(after_ms, RETRY_AFTER_MS);
    assert!(
        ops(&out).iter().all(|(id, _)| *id < JOB_IDS),
        "nothing until the timer"
    );
    out.clear();
    machine.handle(Input::Timer(timer), &mut out);
    assert_eq!(job_op(&out).1, request, "the same create again");
}

#[test]
fn a_retry_returns_the_instance_to_the_state_it_retried_from() {
    // Fixed ids per lane and session: a retry (or a poll that finds nothing new) is a loop
    // in a model checker's state graph, not a new state.
    let (mut machine, out) = started();
    let before = machine.clone();
    let (id, request) = job_op(&out);
    let mut out = Vec::new();
    let lost = Err(ZkError::ConnectionLoss);
    machine.handle(Input::Reply { id, result: lost }, &mut out);
    let timer = out.iter().find_map(|command| match command {
        Command::Timer { id, .. } if *id >= JOB_IDS => Some(*id),
        _ => None,
    });
    out.clear();
    machine.handle(Input::Timer(timer.expect("a retry timer")), &mut out);
    assert_eq!(
        job_op(&out),
        (id, request),
        "the same operation, the same id"
    );
    assert_eq!(machine, before, "back where it started");
}

#[test]
fn a_reply_from_a_lost_session_matches_nothing_in_the_next() {
    let (mut machine, out) = started();
    let (old_id, _) = job_op(&out);
    let mut out = Vec::new();
    machine.handle(Input::Session(SessionEvent::Expired), &mut out);
    let session_id = SessionId(8);
    machine.handle(
        Input::Session(SessionEvent::Connected { session_id }),
        &mut out,
    );
    let (new_id, request) = job_op(&out);
    assert_ne!(new_id, old_id, "a new session, new ids");
    let registering = machine.clone();
    out.clear();
    let stale = Err(ZkError::SessionExpired);
    machine.handle(
        Input::Reply {
            id: old_id,
            result: stale,
        },
        &mut out,
    );
    assert!(
        out.is_empty(),
        "the old session's reply is dropped: {out:?}"
    );
    assert_eq!(machine, registering, "and changes nothing");
    assert!(matches!(request, Request::Create { .. }));
}

#[test]
fn a_registration_left_by_an_older_session_is_replaced() {
    let (mut machine, out) = started();
    let (id, _) = job_op(&out);
    let mut out = Vec::new();
    let exists = Err(ZkError::NodeExists);
    machine.handle(Input::Reply { id, result: exists }, &mut out);
    let (id, request) = job_op(&out);
    assert!(matches!(request, Request::GetData { .. }));
    let stale = crate::types::Stat {
        ephemeral_owner: 3,
        ..Default::default()
    };
    out.clear();
    let data = Ok(Response::Data(Vec::new(), stale));
    machine.handle(Input::Reply { id, result: data }, &mut out);
    assert_eq!(
        job_op(&out).1,
        Request::Delete {
            path: "/job/instances/a".into(),
            version: -1
        }
    );
}

#[test]
fn expiry_drops_the_work_and_a_new_session_registers_again() {
    let (mut machine, _) = started();
    let mut out = Vec::new();
    machine.handle(Input::Session(SessionEvent::Expired), &mut out);
    out.clear();
    machine.handle(Input::Request(JobRequest::Trigger { cycle: 1 }), &mut out);
    assert!(
        ops(&out).iter().all(|(id, _)| *id < JOB_IDS),
        "no cycle runs without a session"
    );
    let session_id = SessionId(8);
    machine.handle(
        Input::Session(SessionEvent::Connected { session_id }),
        &mut out,
    );
    assert_eq!(
        job_op(&out).1,
        Request::Create {
            path: "/job/instances/a".into(),
            data: Vec::new(),
            mode: CreateMode::Ephemeral,
        }
    );
}

#[test]
fn a_claim_that_lost_the_race_reads_again_and_skips_the_item() {
    let claim = Task::Claim {
        item: 0,
        cycle: 4,
        via: Via::Sharding,
        version: 2,
    };
    let (mut machine, mut out) = running(CYCLE, 4, claim);
    let (id, request) = job_op(&out);
    assert!(matches!(request, Request::SetData { version: 2, .. }));
    out.clear();
    machine.handle(
        Input::Reply {
            id,
            result: Err(ZkError::BadVersion),
        },
        &mut out,
    );
    let (id, request) = job_op(&out);
    assert_eq!(
        request,
        Request::GetData {
            path: "/job/sharding/0".into(),
            watch: false
        }
    );
    out.clear();
    let theirs = Claim {
        cycle: 4,
        instance: "b".into(),
    };
    let data = Ok(Response::Data(theirs.encode(), Default::default()));
    machine.handle(Input::Reply { id, result: data }, &mut out);
    assert!(
        !out.iter()
            .any(|c| matches!(c, Command::Report(JobReport::Executed { .. }))),
        "b claimed cycle 4 of item 0: a does not run it"
    );
}

/// Leader `a` at cycle 2, `necessary` raised, instances `a` and `b`, two items: the new
/// sharding gives item 0 to `a` and item 1 to `b`, whose old owner was `a`. Answers each
/// operation as a server that holds every node would, and returns what follows the write.
fn shard_again_mid_cycle(variant: JobVariant) -> (JobMachine, Vec<Command<JobReport>>) {
    let mut machine = JobMachine::new(variant, "/job", "a", "u", 2);
    machine.session = Some(SessionId(7));
    machine.started = true;
    machine.leader = true;
    machine.cycle = 2;
    machine.in_cycle = true;
    let necessary = Ok(Response::Exists(Some(Default::default())));
    let mut out = Vec::new();
    machine.lanes[CYCLE]
        .queue
        .push_back(Task::CheckNecessary(2));
    machine.pump(&mut out);
    let mut reply = necessary;
    let mut asked = Vec::new();
    loop {
        let (id, request) = job_op(&out);
        out.clear();
        machine.handle(Input::Reply { id, result: reply }, &mut out);
        let (_, next) = job_op(&out);
        reply = match next {
            Request::GetChildren { .. } => Ok(Response::Children(
                vec!["a".into(), "b".into()],
                Default::default(),
            )),
            Request::Create { .. } => Err(ZkError::NodeExists),
            Request::GetData { ref path, .. } if path.ends_with("/instance") => {
                Ok(Response::Data(b"a".to_vec(), Default::default()))
            }
            Request::Delete { .. } => Ok(Response::Deleted),
            Request::Multi(_) => Ok(Response::Multi(Vec::new())),
            _ => return (machine, out),
        };
        asked.push(request);
        assert!(asked.len() < 20, "the sharding ends: {asked:?}");
    }
}

#[test]
fn a_sharding_in_the_middle_of_a_cycle_runs_the_items_it_moves_to_another_instance() {
    let (mut machine, out) = shard_again_mid_cycle(JobVariant::Correct);
    let (id, request) = job_op(&out);
    assert_eq!(
        request,
        Request::GetData {
            path: "/job/sharding/1".into(),
            watch: false
        },
        "item 1 moved from a to b, which may have run this cycle: a reads its claim"
    );
    let mut out = Vec::new();
    let unclaimed = Claim {
        cycle: 1,
        instance: "a".into(),
    };
    let data = Ok(Response::Data(unclaimed.encode(), Default::default()));
    machine.handle(Input::Reply { id, result: data }, &mut out);
    let (id, request) = job_op(&out);
    assert!(matches!(request, Request::SetData { ref path, .. } if path == "/job/sharding/1"));
    out.clear();
    let claimed = Ok(Response::SetData(Default::default()));
    machine.handle(
        Input::Reply {
            id,
            result: claimed,
        },
        &mut out,
    );
    assert!(out.iter().any(|c| matches!(
        c,
        Command::Report(JobReport::Executed {
            item: 1,
            cycle: 2,
            ..
        })
    )));
}

#[test]
fn the_uncovered_variant_leaves_a_moved_item_to_its_new_owner() {
    let (_, out) = shard_again_mid_cycle(JobVariant::UncoveredReshard);
    assert_eq!(
        job_op(&out).1,
        Request::Exists {
            path: "/job/leader/sharding/necessary".into(),
            watch: false
        }
    );
}

/// A machine in cycle `cycle` that is about to ask whether the sharding is necessary, and
/// has run a cycle before unless this is its first.
fn about_to_check_necessary(cycle: u64) -> (JobMachine, Vec<Command<JobReport>>) {
    let mut machine = JobMachine::new(JobVariant::Correct, "/job", "a", "u", 2);
    machine.session = Some(SessionId(7));
    machine.started = true;
    machine.cycle = cycle;
    machine.in_cycle = true;
    machine.ended_a_cycle = cycle > 1;
    machine.lanes[CYCLE]
        .queue
        .push_back(Task::CheckNecessary(cycle));
    let mut out = Vec::new();
    machine.pump(&mut out);
    (machine, out)
}

/// Feeds `result` as the reply to the job operation in `out`; returns what follows.
fn reply(
    machine: &mut JobMachine,
    out: &[Command<JobReport>],
    result: Result<Response, ZkError>,
) -> Vec<Command<JobReport>> {
    let (id, _) = job_op(out);
    let mut next = Vec::new();
    machine.handle(Input::Reply { id, result }, &mut next);
    next
}

/// Instance `a` of a one-item job, in a session, at `cycle`, after it started `task` on
/// `lane`.
fn running(lane: usize, cycle: u64, task: Task) -> (JobMachine, Vec<Command<JobReport>>) {
    let mut machine = JobMachine::new(JobVariant::Correct, "/job", "a", "u", 1);
    machine.session = Some(SessionId(7));
    machine.started = true;
    machine.cycle = cycle;
    machine.lanes[lane].queue.push_back(task);
    let mut out = Vec::new();
    machine.pump(&mut out);
    (machine, out)
}

/// A failover's read of item 0's claim, for cycle 1.
fn failover_of_item_0() -> Task {
    Task::ReadClaim {
        item: 0,
        cycle: 1,
        via: Via::Failover,
    }
}

fn data(bytes: &[u8]) -> Result<Response, ZkError> {
    Ok(Response::Data(bytes.to_vec(), Default::default()))
}

/// Answers the read of item 0's claim in `out` with `claim`; the machine claims the item
/// and, once the claim is written, runs it for `cycle`. Returns what follows the run.
fn claims_and_runs(
    machine: &mut JobMachine,
    out: &[Command<JobReport>],
    claim: &[u8],
    cycle: u64,
    failover: bool,
) -> Vec<Command<JobReport>> {
    let out = reply(machine, out, data(claim));
    assert!(matches!(job_op(&out).1, Request::SetData { .. }), "a claim");
    let written = Ok(Response::SetData(Default::default()));
    let out = reply(machine, &out, written);
    let ran = out.iter().any(|command| {
        *command
            == Command::Report(JobReport::Executed {
                item: 0,
                cycle,
                token: 0,
                failover,
            })
    });
    assert!(ran, "item 0 runs for cycle {cycle}: {out:?}");
    out
}

#[test]
fn a_cycle_blocked_on_the_sharding_first_runs_the_items_the_standing_one_gives_it() {
    // The leader may shard again only with its next cycle, after the others ran this one,
    // and give our item to one of them: we run it now, by the standing sharding.
    let (mut machine, out) = about_to_check_necessary(2);
    let raised = Ok(Response::Exists(Some(Default::default())));
    let out = reply(&mut machine, &out, raised.clone());
    let owner = |item: u32| Request::GetData {
        path: format!("/job/sharding/{item}/instance"),
        watch: false,
    };
    assert_eq!(job_op(&out).1, owner(0));
    assert!(!machine.blocked_on_sharding(), "it reads before it waits");
    let out = reply(&mut machine, &out, data(b"a"));
    assert!(
        matches!(job_op(&out).1, Request::GetData { ref path, .. } if path == "/job/sharding/0")
    );
    let out = claims_and_runs(&mut machine, &out, b"1 b", 2, false);
    assert_eq!(job_op(&out).1, owner(1));
    let out = reply(&mut machine, &out, data(b"b"));
    assert!(
        matches!(job_op(&out).1, Request::Exists { .. }),
        "then it asks again"
    );
    let out = reply(&mut machine, &out, raised);
    assert!(ops(&out).is_empty(), "and waits: {out:?}");
    assert!(machine.blocked_on_sharding());
}

#[test]
fn a_first_cycle_blocked_on_the_sharding_only_waits() {
    let (mut machine, out) = about_to_check_necessary(1);
    let raised = Ok(Response::Exists(Some(Default::default())));
    let out = reply(&mut machine, &out, raised);
    assert!(ops(&out).is_empty(), "it waits: {out:?}");
    assert!(machine.blocked_on_sharding());
}

#[test]
fn a_cycle_that_finds_an_owner_missing_waits_for_the_sharding_and_reads_again() {
    let mut machine = JobMachine::new(JobVariant::Correct, "/job", "a", "u", 2);
    machine.session = Some(SessionId(7));
    machine.started = true;
    machine.cycle = 3;
    machine.in_cycle = true;
    let mut out = Vec::new();
    machine.lanes[CYCLE].queue.extend([
        Task::ReadOwner(3, 0),
        Task::ReadOwner(3, 1),
        Task::EndCycle,
    ]);
    machine.pump(&mut out);
    let (id, _) = job_op(&out);
    out.clear();
    let missing = Err(ZkError::NoNode);
    machine.handle(
        Input::Reply {
            id,
            result: missing,
        },
        &mut out,
    );
    assert_eq!(
        job_op(&out).1,
        Request::Exists {
            path: "/job/leader/sharding/necessary".into(),
            watch: false
        }
    );
    assert_eq!(
        machine.lanes[CYCLE].queue,
        VecDeque::new(),
        "the reads start over"
    );
    assert!(machine.in_cycle());
}

/// A failover of item 0 by `a` at cycle 1 finds the item claimed for cycle 1 by
/// `claimer`, and the sharding naming `b` its owner; returns `a` and what it does once it
/// has asked whether `b` is registered (`alive`).
fn failover_finds_claimed_by(claimer: &str, alive: bool) -> (JobMachine, Vec<Command<JobReport>>) {
    let (mut machine, out) = running(LISTENER, 1, failover_of_item_0());
    let claim = Claim {
        cycle: 1,
        instance: claimer.into(),
    };
    let out = reply(&mut machine, &out, data(&claim.encode()));
    let owner = Request::GetData {
        path: "/job/sharding/0/instance".into(),
        watch: false,
    };
    assert_eq!(job_op(&out).1, owner);
    let out = reply(&mut machine, &out, data(b"b"));
    let alive_check = Request::Exists {
        path: "/job/instances/b".into(),
        watch: false,
    };
    assert_eq!(job_op(&out).1, alive_check);
    let out = reply(
        &mut machine,
        &out,
        Ok(Response::Exists(alive.then(Default::default))),
    );
    (machine, out)
}

#[test]
fn a_failover_that_runs_the_item_leaves_the_mark_while_its_owner_is_dead() {
    // `a`, in cycle 1, runs item 0 for cycle 1 (claimed for cycle 0); the dead `b` still
    // owns it, for a cycle 2 that `a` has not fired: the mark stays for it.
    let (mut machine, out) = running(LISTENER, 1, failover_of_item_0());
    let out = claims_and_runs(&mut machine, &out, b"0 b", 1, true);
    let owner = Request::GetData {
        path: "/job/sharding/0/instance".into(),
        watch: false,
    };
    assert_eq!(job_op(&out).1, owner, "then whose it is");
    let out = reply(&mut machine, &out, data(b"b"));
    let out = reply(&mut machine, &out, Ok(Response::Exists(None)));
    assert_eq!(
        job_op(&out).1,
        Request::Delete {
            path: "/job/sharding/0/failover".into(),
            version: -1
        },
        "the mark stays"
    );
    assert!(!machine.takes_over("0"));
}

#[test]
fn a_failover_that_finds_its_cycle_run_and_the_owner_dead_leaves_the_item_for_the_next() {
    // `b` owns item 0 and crashed after it ran cycle 1, or `c` ran cycle 1 (it owned the
    // item then, or ran it as moved) and `b` came to own it and crashed before cycle 2.
    // Either way the run the crash cut short is of cycle 2, which `a` has not fired.
    for claimer in ["b", "c"] {
        let (mut machine, out) = failover_finds_claimed_by(claimer, false);
        assert_eq!(
            job_op(&out).1,
            Request::Delete {
                path: "/job/sharding/0/failover".into(),
                version: -1
            },
            "the mark stays, for an instance that has fired cycle 2"
        );
        assert!(!machine.takes_over("0"), "not by a in cycle 1");
        let mut out = Vec::new();
        machine.handle(Input::Request(JobRequest::Trigger { cycle: 2 }), &mut out);
        assert!(machine.takes_over("0"), "by a in cycle 2");
    }
}

#[test]
fn a_failover_that_finds_the_item_run_and_owned_by_a_live_instance_is_done() {
    let (machine, out) = failover_finds_claimed_by("c", true);
    assert_eq!(
        job_op(&out).1,
        Request::Delete {
            path: "/job/leader/failover/items/0".into(),
            version: -1
        },
        "unmarked"
    );
    assert!(machine.takes_over("0"));
}

/// Two shardings at once (issue 37): this one's resets deleted the other's owners, and its
/// write fails whole because the other took the flag. Raising the flag again makes the next
/// sharding write owners; without it every instance found items without owners, forever.
#[test]
fn a_sharding_whose_write_finds_the_flag_gone_raises_it_again() {
    let owners = vec![Some("a".to_owned())];
    let (mut machine, out) = running(CYCLE, 2, Task::WriteSharding(2, owners, Vec::new()));
    assert!(matches!(job_op(&out).1, Request::Multi(_)), "{out:?}");
    let next = reply(&mut machine, &out, Err(ZkError::NoNode));
    assert_eq!(
        job_op(&next).1,
        Request::Create {
            path: "/job/leader/sharding/necessary".into(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        },
        "the flag is raised again"
    );
    let (mut machine, out) = running(
        CYCLE,
        2,
        Task::WriteSharding(2, vec![Some("a".to_owned())], Vec::new()),
    );
    let next = reply(&mut machine, &out, Err(ZkError::NodeExists));
    let owned = Request::Exists {
        path: "/job/sharding/0/instance".into(),
        watch: false,
    };
    assert_eq!(
        job_op(&next).1,
        owned,
        "an owner found: is every item owned?"
    );
    let after = reply(
        &mut machine,
        &next,
        Ok(Response::Exists(Some(Default::default()))),
    );
    assert!(
        !ops(&after)
            .iter()
            .any(|(_, request)| matches!(request, Request::Create { path, .. } if path.ends_with("/necessary"))),
        "every item owned (this write's, its reply lost): nothing is raised"
    );
}

/// Seven seeds of 100,000 of the harsh-random job (issue 37): a deposed leader's sharding
/// wrote its owners while the new leader's reset deleted some of them; the new leader's write
/// then failed on an owner that was there, the flag gone with the earlier write, and items
/// stayed without an owner for good. An owner found missing raises the flag again.
#[test]
fn a_sharding_whose_write_finds_an_owner_checks_every_item_is_owned() {
    let owners = vec![Some("a".to_owned())];
    let (mut machine, out) = running(CYCLE, 2, Task::WriteSharding(2, owners, Vec::new()));
    let next = reply(&mut machine, &out, Err(ZkError::NodeExists));
    let after = reply(&mut machine, &next, Ok(Response::Exists(None)));
    assert_eq!(
        job_op(&after).1,
        Request::Create {
            path: "/job/leader/sharding/necessary".into(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        },
        "an item without an owner raises the flag again"
    );
}

/// Elastic-Job registers again when its client reconnects in a new session, whether the client
/// library announces it as a new connection (Curator 3+, after `LOST`) or as a reconnection
/// (Curator 2.x's new handle); a reconnection within the session changes nothing here.
#[test]
fn a_new_session_announced_as_a_reconnection_registers_again() {
    let (mut machine, _) = started();
    let queued = |machine: &JobMachine| machine.lanes[LISTENER].queue.clone();
    let before = queued(&machine);
    let mut out = Vec::new();
    let mut reconnect = |machine: &mut JobMachine, session: i64| {
        machine.handle(Input::Session(SessionEvent::Disconnected), &mut out);
        let session_id = SessionId(session);
        let event = SessionEvent::Reconnected { session_id };
        machine.handle(Input::Session(event), &mut out);
    };
    reconnect(&mut machine, 7);
    assert_eq!(queued(&machine), before, "the same session: nothing to do");
    reconnect(&mut machine, 8);
    let after = queued(&machine);
    assert!(
        after.len() > before.len() && after.contains(&Task::Register),
        "a new session registers again: {before:?} -> {after:?}"
    );
}
