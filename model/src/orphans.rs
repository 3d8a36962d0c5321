//! **No orphaned ephemerals**, as the simulator judges it: when the run ends, every ephemeral
//! node a live client's current session owns is one the client knows is its own.
//!
//! An orphan is a node its client lost track of: a create whose reply was lost and that the
//! recipe never found again (Curator's "protected" mode exists to find it), a latch closed
//! while its create was in flight that forgot the create. ZooKeeper keeps the node as long as
//! the session lives, so it holds a place in a queue, or a role, that nobody will give up: the
//! lock it heads is never released, the latch it heads never elects anyone else. No recipe
//! property names the cause; "leader elected" may see the effect, or may not (an orphan behind
//! the leader harms nobody until the leader goes).
//!
//! What a client knows comes from its recipe's machine ([`Machine::known_ephemerals`]), which
//! the simulator's driver publishes before each wait ([`Knowledge`]): the model checker's
//! invariant of the same name ([`crate::check::ORPHANS`]) reads the same method at every quiet
//! moment. A client is judged only if its driver was settled when the run ended, with nothing
//! queued or in flight (a create's reply may be on its way, and will name the node); a timer
//! pending is allowed, unlike the model's quiet moments: the run ends after a fault-free
//! liveness phase many retry intervals long, so a retry still waiting then is itself the fault.
//! A crashed client is not judged (its host passes no knowledge for it), nor a client whose
//! session ended. The final tree is that of the server that ended furthest along.
//!
//! Not judged where the ensemble's data was lost (sessions and nodes start again), or where no
//! server's final state was recorded. Not modelled: the moments between (the model checker
//! judges every quiet moment); an orphan of a session that ended before the run did (ZooKeeper
//! removed it).
//!
//! [`Machine::known_ephemerals`]: zkh_recipes::machine::Machine::known_ephemerals
//! [`Knowledge`]: zkh_recipes::driver::Knowledge

use std::collections::BTreeMap;

use zkh_recipes::driver::{Known, Own};
use zkh_recipes::{Request, SessionId};

use crate::check::{EPHEMERAL_JUDGED, ORPHANS};
use crate::claims::{furthest, session_after};
use crate::history::{Entries, HistoryEvent, OpOutcome};
use crate::properties::{Class, Finding};
use crate::request::{Reply, Response};
use crate::zookeeper::ZkModel;

/// Judges "no orphaned ephemerals" at the end of the run of `history`, against `finals`, each
/// server's final state by id, and `known`, what each live client's machine knew of its own
/// nodes when the run ended. Returns the property's finding, then its `sometimes` companion
/// ("an ephemeral was judged": some live, settled client's session owned a node).
pub fn orphans_at_end(
    history: &impl Entries,
    finals: &[(u32, ZkModel)],
    known: &[(u32, Known)],
) -> [Finding; 2] {
    let companion = |judged: usize| Finding {
        property: EPHEMERAL_JUDGED,
        class: Class::Sometimes,
        holds: judged > 0,
        detail: String::new(),
        evidence: Vec::new(),
        at_us: None,
    };
    let not_judged = |why: &str| {
        let why = why.to_owned();
        let finding = Finding::new(ORPHANS, Class::Always, None, move || why);
        [finding, companion(0)]
    };
    if history.each().any(|entry| entry.event.is_data_loss()) {
        return not_judged("not judged: the ensemble's data was lost, and sessions started again");
    }
    let Some((server, tree)) = furthest(finals) else {
        return not_judged("not judged: no server's final state was recorded");
    };
    let mut sessions: BTreeMap<u32, Option<SessionId>> = BTreeMap::new();
    for entry in history.each() {
        if let HistoryEvent::Session { client, event } = &entry.event {
            let session = sessions.entry(*client).or_default();
            *session = session_after(event, *session);
        }
    }
    let (mut judged, mut unsettled) = (0, 0);
    for (client, knowledge) in known {
        let Some(Some(session)) = sessions.get(client) else {
            continue;
        };
        let own = match knowledge {
            Known::Unnamed => continue,
            Known::Busy => {
                unsettled += 1;
                continue;
            }
            Known::Settled(Own { known: None, .. }) => continue,
            Known::Settled(Own {
                known: Some(own), ..
            }) => own,
        };
        let owned = tree
            .tree()
            .nodes()
            .filter(|(_, node)| node.ephemeral_owner == Some(*session));
        for (path, node) in owned {
            judged += 1;
            if own.iter().any(|k| k == path) {
                continue;
            }
            let detail = format!(
                "when the run ended, client {client}'s session {:#x} owns {path} (created at zxid \
                 {:#x}, on server {server}), and the client, with nothing in flight, knows {} as \
                 its own: an orphan, which keeps its place until the session ends",
                session.0,
                node.czxid,
                if own.is_empty() {
                    "no node".to_owned()
                } else {
                    own.join(", ")
                }
            );
            let evidence = creates_without_a_reply(history, *client, *session, path);
            let finding = Finding::new(ORPHANS, Class::Always, Some(detail), String::new)
                .with_evidence(history, evidence);
            return [finding, companion(judged)];
        }
    }
    let finding = Finding::new(ORPHANS, Class::Always, None, move || {
        format!(
            "{judged} ephemeral nodes of live sessions when the run ended, each known to its \
             client ({unsettled} clients left unjudged with a request in flight)"
        )
    });
    [finding, companion(judged)]
}

/// Where in `history` `client` asked, in `session`, for a create that may have made `path`
/// (the same path, or its prefix for a sequential node) and got no reply naming it: the
/// request that left the orphan. The last such request, if any.
fn creates_without_a_reply(
    history: &impl Entries,
    client: u32,
    session: SessionId,
    path: &str,
) -> Vec<usize> {
    let mut asked: BTreeMap<u64, usize> = BTreeMap::new();
    let mut last = None;
    for (index, entry) in history.each().enumerate() {
        match &entry.event {
            HistoryEvent::Invoke {
                client: c,
                session: s,
                xid,
                request: Request::Create { path: p, .. },
            } if *c == client && *s == session && path.starts_with(p.as_str()) => {
                asked.insert(*xid, index);
            }
            HistoryEvent::Complete {
                client: c,
                xid,
                outcome,
            } if *c == client => {
                let Some(at) = asked.remove(xid) else {
                    continue;
                };
                let named = matches!(outcome, OpOutcome::Reply {
                    reply: Reply::Ok(Response::Created(created)),
                    ..
                } if created.path == path);
                if !named {
                    last = Some(at);
                }
            }
            _ => {}
        }
    }
    last.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use zkh_recipes::{CreateMode, SessionEvent};

    use super::*;
    use crate::history::History;

    const NODE: &str = "/l/n-0000000000";

    /// A settled machine that knows `nodes` and names no claims.
    fn settled(nodes: &[&str]) -> Known {
        Known::Settled(Own {
            known: Some(nodes.iter().map(|n| n.to_string()).collect()),
            claimed: None,
        })
    }

    /// A final tree where one session made `NODE`, ephemeral sequential under `/l`, and that
    /// session.
    fn tree_with_a_node() -> (ZkModel, SessionId) {
        let mut zk = ZkModel::new();
        zk.begin_epoch(1);
        let session = zk.open_session();
        let parent = Request::Create {
            path: "/l".to_owned(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        };
        zk.apply(session, &parent);
        let node = Request::Create {
            path: "/l/n-".to_owned(),
            data: Vec::new(),
            mode: CreateMode::EphemeralSequential,
        };
        zk.apply(session, &node);
        assert!(zk.tree().get(NODE).is_some());
        (zk, session)
    }

    /// Client 0 connects with `session` and asks for the sequential create, whose reply was
    /// lost.
    fn history(session: SessionId) -> History {
        let mut history = crate::claims::tests::history_of(session);
        let request = Request::Create {
            path: "/l/n-".to_owned(),
            data: Vec::new(),
            mode: CreateMode::EphemeralSequential,
        };
        let invoke = HistoryEvent::Invoke {
            client: 0,
            session,
            xid: 4,
            request,
        };
        history.push(2, invoke);
        let lost = HistoryEvent::Complete {
            client: 0,
            xid: 4,
            outcome: OpOutcome::Unknown,
        };
        history.push(3, lost);
        history
    }

    #[test]
    fn a_node_its_client_knows_holds_and_one_it_does_not_is_an_orphan_with_its_create() {
        let (zk, session) = tree_with_a_node();
        let finals = vec![(1, zk)];
        let history = history(session);

        let known = [(0, settled(&[NODE]))];
        let [held, judged] = orphans_at_end(&history, &finals, &known);
        assert!(held.holds, "{held:?}");
        assert!(
            held.detail.starts_with("1 ephemeral nodes"),
            "{}",
            held.detail
        );
        assert!(judged.holds && judged.property == EPHEMERAL_JUDGED);

        let forgotten = [(0, settled(&["/l/n-0000000007"]))];
        let [orphan, judged] = orphans_at_end(&history, &finals, &forgotten);
        assert!(!orphan.holds);
        assert!(
            orphan
                .detail
                .contains(&format!("client 0's session {:#x} owns {NODE}", session.0))
                && orphan.detail.contains("knows /l/n-0000000007 as its own"),
            "{}",
            orphan.detail
        );
        assert_eq!(orphan.evidence, vec![1], "the create whose reply was lost");
        assert!(judged.holds);
    }

    #[test]
    fn a_busy_client_an_ended_session_or_a_silent_recipe_is_not_judged() {
        let (zk, session) = tree_with_a_node();
        let finals = vec![(1, zk)];
        let history = history(session);
        for known in [Known::Busy, Known::Unnamed] {
            let [finding, judged] = orphans_at_end(&history, &finals, &[(0, known.clone())]);
            assert!(finding.holds, "{known:?}: {finding:?}");
            assert!(!judged.holds, "{known:?}: nothing was judged");
        }
        let [busy, _] = orphans_at_end(&history, &finals, &[(0, Known::Busy)]);
        assert!(
            busy.detail.contains("1 clients left unjudged"),
            "{}",
            busy.detail
        );

        let mut ended = history.clone();
        let expired = HistoryEvent::Session {
            client: 0,
            event: SessionEvent::Expired,
        };
        ended.push(5, expired);
        let nothing = [(0, settled(&[]))];
        let [finding, judged] = orphans_at_end(&ended, &finals, &nothing);
        assert!(finding.holds && !judged.holds, "{finding:?}");

        // And the same client, its session alive, is an orphan's owner.
        let [orphan, _] = orphans_at_end(&history, &finals, &nothing);
        assert!(
            orphan.detail.contains("knows no node as its own"),
            "{}",
            orphan.detail
        );
    }

    #[test]
    fn data_loss_or_no_final_state_is_not_judged() {
        let (zk, session) = tree_with_a_node();
        let finals = vec![(1, zk)];
        let nothing = [(0, settled(&[]))];
        let mut lost = history(session);
        let loss = HistoryEvent::Fault {
            description: "DataLoss".to_owned(),
        };
        lost.push(6, loss);
        let [finding, _] = orphans_at_end(&lost, &finals, &nothing);
        assert!(
            finding.holds && finding.detail.contains("not judged"),
            "{finding:?}"
        );
        let [finding, _] = orphans_at_end(&history(session), &[], &nothing);
        assert!(
            finding.holds && finding.detail.contains("not judged"),
            "{finding:?}"
        );
    }
}
