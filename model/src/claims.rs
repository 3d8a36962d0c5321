//! **Claims are owned**, as the simulator judges it: when the run ends, each client that
//! believes it holds a role holds it by a node that exists and is owned by its current session.
//!
//! A client can believe it holds something the ensemble no longer gives it and harm nobody
//! yet: no other client acts on the difference, nothing is lost, and fencing refuses whatever
//! the client does with the stale role. No recipe property sees that, so the model checker
//! judges it as its own invariant ([`crate::check::OWNERSHIP`], at every settled moment), and the
//! simulator judges it here, once, at the end of the run, after the heal and the liveness phase,
//! when every live client has had time to learn what happened to its session.
//!
//! Each recipe reports a role with its fencing token, the `czxid` of the node that grants it (the
//! lock's node, the latch's node, the job election's instance node, the book's `/master`), so the
//! node a client believes is its own is the one with that `czxid` in the final tree: the state of
//! the server that ended furthest along (ZooKeeper's guarantee "durability" holds each server's
//! final state to the agreed order). The client's current session is the one it last connected
//! or reconnected with; a client whose session ended (expired or closed) and that reported no
//! role since holds nothing. A crashed client's host reports "none" for it. A client with a
//! request still in flight when the run ends is not settled (its release may be applied and its
//! reply not yet in) and is left unjudged, as the model checker judges settled moments only.
//!
//! A recipe may also say which nodes it stands on without a role and a token (the sharded job's
//! registration under `instances/`: [`Machine::claimed_ephemerals`], published by the
//! simulator's driver): each such node of a client whose driver was settled when the run ended
//! (nothing queued or in flight) must be in the final tree, owned by its current session.
//!
//! Not judged where the ensemble's data was lost (zxids, and with them tokens, start again), or
//! where no server's final state was recorded. Not modelled: the moments between (the model
//! checker judges every settled moment; a false belief that ends before the run does is caught
//! here only by what it did, through the recipes' own properties).

use std::collections::{BTreeMap, BTreeSet};

use zkh_recipes::driver::{Known, Own};
use zkh_recipes::{SessionEvent, SessionId};

use crate::check::{CLAIM_JUDGED, OWNERSHIP};
use crate::history::{Entries, HistoryEvent};
use crate::properties::{Class, Finding};
use crate::zookeeper::ZkModel;
#[cfg(doc)]
use zkh_recipes::machine::Machine;

/// What one client believes when the run ends.
#[derive(Default)]
struct Belief {
    /// Its last reported role, its token, and where it was reported: none when the last
    /// report was "none" or had no token.
    role: Option<(String, i64, usize)>,
    /// Its current session, none once it ended.
    session: Option<SessionId>,
    /// Its requests still in flight (issued, not ended), by xid.
    in_flight: BTreeSet<u64>,
}

/// Judges "claims are owned" at the end of the run of `history`, against `finals`, each
/// server's final state by id, and `known`, what each live client's machine said it stands on
/// when the run ended ([`Own::claimed`]: the sharded job's registration).
pub fn claims_owned_at_end(
    history: &impl Entries,
    finals: &[(u32, ZkModel)],
    known: &[(u32, Known)],
) -> Finding {
    judge_claims(history, finals, known).0
}

/// [`claims_owned_at_end`], then its `sometimes` companion, the model checker's
/// [`CLAIM_JUDGED`]: some client held a role, or stood on a registration, that was judged.
pub fn claims_at_end(
    history: &impl Entries,
    finals: &[(u32, ZkModel)],
    known: &[(u32, Known)],
) -> [Finding; 2] {
    let (finding, judged) = judge_claims(history, finals, known);
    let companion = Finding {
        property: CLAIM_JUDGED,
        class: Class::Sometimes,
        holds: judged > 0,
        detail: String::new(),
        evidence: Vec::new(),
        at_us: None,
    };
    [finding, companion]
}

/// The finding, and how many claims (roles and registrations) it judged.
fn judge_claims(
    history: &impl Entries,
    finals: &[(u32, ZkModel)],
    known: &[(u32, Known)],
) -> (Finding, usize) {
    let not_judged = |why: &str| {
        let why = why.to_owned();
        (Finding::new(OWNERSHIP, Class::Always, None, move || why), 0)
    };
    let lost = history.each().any(|entry| entry.event.is_data_loss());
    if lost {
        return not_judged("not judged: the ensemble's data was lost, and tokens started again");
    }
    let Some((server, tree)) = furthest(finals) else {
        return not_judged("not judged: no server's final state was recorded");
    };
    let mut beliefs: BTreeMap<u32, Belief> = BTreeMap::new();
    for (index, entry) in history.each().enumerate() {
        match &entry.event {
            HistoryEvent::Role {
                client,
                role,
                token,
            } => {
                let held = token.filter(|_| role != "none");
                beliefs.entry(*client).or_default().role =
                    held.map(|token| (role.clone(), token, index));
            }
            HistoryEvent::Invoke { client, xid, .. } => {
                beliefs.entry(*client).or_default().in_flight.insert(*xid);
            }
            HistoryEvent::Complete { client, xid, .. } => {
                beliefs.entry(*client).or_default().in_flight.remove(xid);
            }
            HistoryEvent::Session { client, event } => {
                let belief = beliefs.entry(*client).or_default();
                belief.session = session_after(event, belief.session);
            }
            _ => {}
        }
    }
    let by_czxid: BTreeMap<i64, (&str, Option<SessionId>)> = tree
        .tree()
        .nodes()
        .map(|(path, node)| (node.czxid, (path, node.ephemeral_owner)))
        .collect();
    let (mut judged, mut unsettled) = (0, 0);
    for (client, belief) in &beliefs {
        let Some((role, token, at)) = &belief.role else {
            continue;
        };
        if !belief.in_flight.is_empty() {
            // Not settled: a release may be on its way (its delete applied, its reply not yet
            // in), and the client will learn what it asked. The model checker judges only
            // settled moments too.
            unsettled += 1;
            continue;
        }
        judged += 1;
        let session = belief.session;
        let problem = match (by_czxid.get(token), session) {
            (_, None) => Some("its session has ended".to_owned()),
            (None, _) => Some(format!(
                "no node with that czxid is on server {server}, which ended at zxid {:#x}",
                tree.last_zxid()
            )),
            (Some((path, owner)), Some(session)) if *owner != Some(session) => Some(format!(
                "its node {path} is owned by {}, not by its session {:#x}",
                owner.map_or("no session (a persistent node)".to_owned(), |o| format!(
                    "session {:#x}",
                    o.0
                )),
                session.0
            )),
            _ => None,
        };
        if let Some(problem) = problem {
            let detail = format!(
                "client {client} believes it holds {role:?} (token {token:#x}) when the run \
                 ends, and {problem}"
            );
            let finding = Finding::new(OWNERSHIP, Class::Always, Some(detail), String::new);
            return (finding.with_evidence(history, vec![*at]), judged);
        }
    }
    let mut registrations = 0;
    for (client, knowledge) in known {
        let Known::Settled(Own {
            claimed: Some(claimed),
            ..
        }) = knowledge
        else {
            continue;
        };
        let session = beliefs.get(client).and_then(|belief| belief.session);
        let Some(session) = session else {
            continue;
        };
        for path in claimed {
            registrations += 1;
            let owner = tree.tree().get(path).map(|node| node.ephemeral_owner);
            let problem = match owner {
                Some(Some(owner)) if owner == session => continue,
                None => format!("it is not on server {server}"),
                Some(owner) => format!(
                    "it is owned by {}, not by its session {:#x}",
                    owner.map_or("no session (a persistent node)".to_owned(), |o| format!(
                        "session {:#x}",
                        o.0
                    )),
                    session.0
                ),
            };
            let detail = format!(
                "client {client}, with nothing in flight, stands on {path} when the run ends, \
                 and {problem}"
            );
            let finding = Finding::new(OWNERSHIP, Class::Always, Some(detail), String::new);
            return (finding, judged + registrations);
        }
    }
    let finding = Finding::new(OWNERSHIP, Class::Always, None, move || {
        format!(
            "{judged} roles held when the run ended, each by a node its session owns ({unsettled} \
             left unjudged with a request in flight); {registrations} registrations, each its \
             client's own"
        )
    });
    (finding, judged + registrations)
}

/// The final state of the server that ended furthest along (the lowest id among equals), by
/// id: ZooKeeper's guarantee "durability" holds each server's final state to the agreed order.
pub(crate) fn furthest(finals: &[(u32, ZkModel)]) -> Option<&(u32, ZkModel)> {
    finals
        .iter()
        .max_by_key(|(server, model)| (model.last_zxid(), std::cmp::Reverse(*server)))
}

/// A client's current session after `event`, `before` it: the one it connected or reconnected
/// with, none once it ended.
pub(crate) fn session_after(event: &SessionEvent, before: Option<SessionId>) -> Option<SessionId> {
    match event {
        SessionEvent::Connected { session_id } | SessionEvent::Reconnected { session_id } => {
            Some(*session_id)
        }
        SessionEvent::Expired | SessionEvent::Closed => None,
        SessionEvent::Disconnected => before,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use zkh_recipes::{CreateMode, Request};

    use super::*;
    use crate::history::History;

    /// A final tree with `/l` created by a session, and that session and the node's czxid.
    fn tree_with_a_node() -> (ZkModel, SessionId, i64) {
        let mut zk = ZkModel::new();
        zk.begin_epoch(1);
        let session = zk.open_session();
        let create = Request::Create {
            path: "/l".to_owned(),
            data: Vec::new(),
            mode: CreateMode::Ephemeral,
        };
        zk.apply(session, &create);
        let czxid = zk.last_zxid();
        (zk, session, czxid)
    }

    fn history(session: SessionId, token: i64, in_flight: bool) -> History {
        let mut history = History::new();
        history.push(
            1,
            HistoryEvent::Session {
                client: 0,
                event: SessionEvent::Connected {
                    session_id: session,
                },
            },
        );
        history.push(
            2,
            HistoryEvent::Role {
                client: 0,
                role: "holder".to_owned(),
                token: Some(token),
            },
        );
        if in_flight {
            history.push(
                3,
                HistoryEvent::Invoke {
                    client: 0,
                    session,
                    xid: 9,
                    request: Request::Delete {
                        path: "/l".to_owned(),
                        version: -1,
                    },
                },
            );
        }
        history
    }

    #[test]
    fn a_role_held_by_its_own_node_holds_and_a_missing_or_foreign_node_does_not() {
        let (zk, session, czxid) = tree_with_a_node();
        let finals = vec![(1, zk)];
        let held = claims_owned_at_end(&history(session, czxid, false), &finals, &[]);
        assert!(held.holds, "{held:?}");
        assert!(held.detail.starts_with("1 roles held"), "{}", held.detail);

        let missing = claims_owned_at_end(&history(session, czxid + 7, false), &finals, &[]);
        assert!(!missing.holds);
        assert!(
            missing
                .detail
                .contains("no node with that czxid is on server 1"),
            "{}",
            missing.detail
        );
        assert_eq!(missing.evidence, vec![1], "the role's report");

        let other = SessionId(session.0 + 1);
        let foreign = claims_owned_at_end(&history(other, czxid, false), &finals, &[]);
        assert!(!foreign.holds);
        assert!(
            foreign.detail.contains("its node /l is owned by session"),
            "{}",
            foreign.detail
        );

        // A client with a request in flight is not settled, and is not judged.
        let unsettled = claims_owned_at_end(&history(session, czxid + 7, true), &finals, &[]);
        assert!(unsettled.holds, "{unsettled:?}");
        assert!(
            unsettled.detail.contains("1 left unjudged"),
            "{}",
            unsettled.detail
        );
    }

    #[test]
    fn a_role_kept_after_the_session_ended_does_not_hold_and_data_loss_is_not_judged() {
        let (zk, session, czxid) = tree_with_a_node();
        let finals = vec![(1, zk)];
        let mut ended = history(session, czxid, false);
        ended.push(
            5,
            HistoryEvent::Session {
                client: 0,
                event: SessionEvent::Expired,
            },
        );
        let kept = claims_owned_at_end(&ended, &finals, &[]);
        assert!(!kept.holds);
        assert!(
            kept.detail.ends_with("its session has ended"),
            "{}",
            kept.detail
        );
        ended.push(
            6,
            HistoryEvent::Fault {
                description: "DataLoss".to_owned(),
            },
        );
        let lost = claims_owned_at_end(&ended, &finals, &[]);
        assert!(lost.holds && lost.detail.contains("not judged"), "{lost:?}");
        let none = claims_owned_at_end(&history(session, czxid, false), &[], &[]);
        assert!(none.holds && none.detail.contains("not judged"), "{none:?}");
    }

    #[test]
    fn a_registration_a_settled_client_stands_on_must_be_its_sessions() {
        let (zk, session, czxid) = tree_with_a_node();
        let finals = vec![(1, zk)];
        let history = history(session, czxid, false);
        let standing_on = |path: &str| {
            let own = Own {
                known: None,
                claimed: Some(vec![path.to_owned()]),
            };
            [(0, Known::Settled(own))]
        };
        let held = claims_owned_at_end(&history, &finals, &standing_on("/l"));
        assert!(held.holds, "{held:?}");
        assert!(
            held.detail
                .ends_with("1 registrations, each its client's own"),
            "{}",
            held.detail
        );

        let missing = claims_owned_at_end(&history, &finals, &standing_on("/gone"));
        assert!(!missing.holds);
        assert!(
            missing
                .detail
                .contains("stands on /gone when the run ends, and it is not on server 1"),
            "{}",
            missing.detail
        );

        let other = history_of(SessionId(session.0 + 1));
        let foreign = claims_owned_at_end(&other, &finals, &standing_on("/l"));
        assert!(!foreign.holds);
        assert!(
            foreign.detail.contains("it is owned by session"),
            "{}",
            foreign.detail
        );

        // A busy client is not judged.
        let busy = claims_owned_at_end(&history, &finals, &[(0, Known::Busy)]);
        assert!(busy.holds, "{busy:?}");

        // The companion says whether anything was judged.
        let [_, judged] = claims_at_end(&history, &finals, &standing_on("/l"));
        assert!(judged.holds && judged.property == CLAIM_JUDGED);
        let [_, idle] = claims_at_end(&other, &finals, &[(0, Known::Busy)]);
        assert!(!idle.holds, "nothing to judge");
    }

    /// A history where client 0 connected with `session` and reported nothing.
    pub(crate) fn history_of(session: SessionId) -> History {
        let mut history = History::new();
        let connected = SessionEvent::Connected {
            session_id: session,
        };
        let event = HistoryEvent::Session {
            client: 0,
            event: connected,
        };
        history.push(1, event);
        history
    }
}
