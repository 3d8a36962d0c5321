//! A server among its peers: votes, elections, following and leading, heartbeats, and
//! a follower catching up from the leader's snapshot.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use zkh_recipes::SessionId;

use crate::clock::Instant;
use crate::protocol::{Addr, Message, Snapshot, Txn, TxnKind};

use super::{lock, Leader, Role, RoleSummary, Server, VOTE_FRESH_FOR};

impl Server {
    pub(super) fn handle_server(&mut self, from: u32, message: Message, now: Instant) {
        match message {
            Message::Vote { epoch, zxid } => match &mut self.role {
                Role::Looking { votes } => {
                    votes.insert(from, (now, epoch, zxid));
                }
                // A leader not yet established may never be: a looking server that joined it
                // could take an older state than its own.
                Role::Leading(leader) if !leader.established => {}
                Role::Following { leader, epoch, .. } => {
                    let (leader, epoch) = (*leader, *epoch);
                    self.send(Addr::Server(from), Message::CurrentLeader { leader, epoch });
                }
                Role::Leading(leader) => {
                    let epoch = leader.epoch;
                    self.send(
                        Addr::Server(from),
                        Message::CurrentLeader {
                            leader: self.id,
                            epoch,
                        },
                    );
                }
            },
            Message::CurrentLeader { leader, epoch } => {
                let accepted = lock(&self.shared.disk).epoch;
                if matches!(self.role, Role::Looking { .. })
                    && epoch >= accepted
                    && leader != self.id
                {
                    self.send(Addr::Server(leader), Message::Join);
                }
            }
            Message::Join => {
                if let Role::Leading(leader) = &mut self.role {
                    let epoch = leader.epoch;
                    // The snapshot holds what is committed; the proposals still in flight
                    // follow it on the same link, as ZooKeeper's leader forwards its
                    // outstanding proposals to a learner it has just synced. Without them, a
                    // follower that joins (or resyncs) while proposals wait for acks never
                    // acks them, and when every follower did so, the first waited for a
                    // quorum for ever and every write behind it with it.
                    let outstanding: Vec<Message> = (leader.proposals.iter())
                        .map(|(zxid, (txn, _))| Message::Propose {
                            epoch,
                            zxid: *zxid,
                            txn: txn.clone(),
                        })
                        .collect();
                    let snapshot = self.snapshot();
                    self.send(Addr::Server(from), Message::NewLeader { epoch, snapshot });
                    for propose in outstanding {
                        self.send(Addr::Server(from), propose);
                    }
                }
            }
            Message::NewLeader { epoch, snapshot } => self.adopt(from, epoch, *snapshot, now),
            Message::Following { epoch, fresh } => {
                if let Role::Leading(leader) = &mut self.role {
                    if leader.epoch == epoch {
                        leader.followers_heard.insert(from, now);
                        if fresh {
                            leader.took_epoch.insert(from);
                        }
                        if !leader.established
                            && leader.took_epoch.len() + 1 >= self.config.quorum()
                        {
                            self.establish();
                        }
                    }
                }
            }
            Message::Forward { txn } => match &mut self.role {
                Role::Leading(leader) if !leader.established => leader.waiting.push(txn),
                Role::Leading(_) => self.propose(txn),
                _ => {}
            },
            Message::SyncRequest { origin } => {
                if matches!(&self.role, Role::Leading(leader) if leader.established) {
                    let zxid = self.last_zxid();
                    self.send(Addr::Server(from), Message::SyncDone { origin, zxid });
                }
            }
            Message::SyncDone { origin, zxid } => {
                self.waiting_syncs.push((origin, zxid));
                self.answer_syncs();
            }
            Message::Propose { epoch, zxid, txn } => {
                if let Role::Following {
                    leader,
                    epoch: followed,
                    last_heard,
                } = &mut self.role
                {
                    if *leader == from && *followed == epoch && !self.resyncing {
                        *last_heard = now;
                        self.pending.insert(zxid, txn);
                        self.send(Addr::Server(from), Message::Ack { epoch, zxid });
                    }
                }
            }
            Message::Ack { epoch, zxid } => {
                if let Role::Leading(leader) = &mut self.role {
                    if leader.epoch == epoch && leader.followers_heard.contains_key(&from) {
                        leader.followers_heard.insert(from, now);
                        if let Some((_, acks)) = leader.proposals.get_mut(&zxid) {
                            acks.insert(from);
                        }
                        self.try_commit();
                    }
                }
            }
            Message::Commit { epoch, zxid } => self.on_commit(from, epoch, zxid, now),
            Message::Heartbeat { epoch, touched } => match &mut self.role {
                Role::Following {
                    leader,
                    epoch: followed,
                    last_heard,
                } if *leader == from && *followed == epoch => {
                    *last_heard = now;
                }
                // Only from a follower: another server that believes it leads this epoch
                // sends the same heartbeats, and counting them kept both leading for ever.
                Role::Leading(leader)
                    if leader.epoch == epoch && leader.followers_heard.contains_key(&from) =>
                {
                    leader.followers_heard.insert(from, now);
                    for session in touched {
                        self.touch(session, now);
                    }
                }
                _ => {}
            },
            Message::Revalidate { origin, session } => {
                if let Role::Leading(leader) = &self.role {
                    let valid = leader.vouches_for(session);
                    if valid {
                        self.touch(session, now);
                    }
                    let answer = Message::Revalidated {
                        origin,
                        session,
                        valid,
                    };
                    self.send(Addr::Server(from), answer);
                }
            }
            Message::Revalidated {
                origin,
                session,
                valid,
            } => {
                let from_my_leader =
                    matches!(self.role, Role::Following { leader, .. } if leader == from);
                if from_my_leader && self.serving() {
                    self.resume_session(origin, session, valid, now);
                } else {
                    // The leader changed meanwhile: the client tries again.
                    self.send_client(origin.client, origin.conn, Message::Refused);
                }
            }
            Message::PeerDown => match &mut self.role {
                Role::Following { leader, .. } if *leader == from => self.become_looking(),
                Role::Leading(leader) => {
                    leader.followers_heard.remove(&from);
                }
                _ => {}
            },
            other => panic!(
                "server {} got a client message from server {from}: {other:?}",
                self.id
            ),
        }
    }

    fn snapshot(&self) -> Box<Snapshot> {
        let disk = lock(&self.shared.disk);
        let mut model = disk.model.clone();
        model.clear_watches();
        Box::new(Snapshot {
            model,
            session_timeouts: disk.session_timeouts.clone(),
        })
    }

    fn adopt(&mut self, leader: u32, epoch: u32, snapshot: Snapshot, now: Instant) {
        let accepted = lock(&self.shared.disk).epoch;
        let stale = match &self.role {
            Role::Leading(own) => own.epoch >= epoch,
            // A follower stays with the first leader of an epoch it took: a second server
            // claiming the same epoch is one that lost the race for it.
            Role::Following {
                leader: current,
                epoch: followed,
                ..
            } => *followed == epoch && (*current != leader || !self.resyncing),
            Role::Looking { .. } => false,
        };
        if epoch < accepted || stale {
            return;
        }
        let fresh = epoch > accepted;
        if self.serving() {
            self.drop_clients();
        }
        {
            let mut disk = lock(&self.shared.disk);
            disk.model = snapshot.model;
            disk.session_timeouts = snapshot.session_timeouts;
            disk.epoch = epoch;
        }
        self.pending.clear();
        self.apply_queue.clear();
        self.waiting_syncs.clear();
        self.resyncing = false;
        self.role = Role::Following {
            leader,
            epoch,
            last_heard: now,
        };
        self.set_role_summary(RoleSummary::Following(leader));
        self.send(Addr::Server(leader), Message::Following { epoch, fresh });
        self.ask_again_for_syncs(leader);
    }

    fn drop_clients(&mut self) {
        for (client, conn) in std::mem::take(&mut self.connected)
            .into_values()
            .collect::<BTreeSet<_>>()
        {
            self.send_client(client, conn, Message::Disconnect);
        }
        self.touched.clear();
        self.held.clear();
    }

    fn become_looking(&mut self) {
        // Committed transactions still waiting on a slow apply are applied first.
        while let Some((_, zxid, txn)) = self.apply_queue.pop_front() {
            self.apply(zxid, txn);
        }
        self.drop_clients();
        // The proposals it logged stay logged: if it leads next, it commits them.
        self.waiting_syncs.clear();
        self.role = Role::Looking {
            votes: BTreeMap::new(),
        };
        self.set_role_summary(RoleSummary::Looking);
    }

    pub(super) fn election_round(&mut self, now: Instant) {
        let epoch = lock(&self.shared.disk).epoch;
        let zxid = self.last_logged_zxid();
        self.broadcast(&Message::Vote { epoch, zxid });
        let Role::Looking { votes } = &mut self.role else {
            return;
        };
        votes.insert(self.id, (now, epoch, zxid));
        votes.retain(|_, (at, _, _)| now.duration_since(*at) <= VOTE_FRESH_FOR);
        if votes.len() < self.config.quorum() {
            return;
        }
        let best = votes
            .iter()
            .max_by_key(|(id, (_, _, zxid))| (*zxid, **id))
            .map(|(id, _)| *id);
        let highest_epoch = votes
            .values()
            .map(|(_, epoch, _)| *epoch)
            .max()
            .unwrap_or(epoch);
        if best == Some(self.id) {
            self.become_leader(highest_epoch + 1, now);
        }
    }

    /// The last zxid this server committed or logged: what its vote offers.
    fn last_logged_zxid(&self) -> i64 {
        let committed = self.last_zxid();
        self.pending
            .last_key_value()
            .map_or(committed, |(zxid, _)| committed.max(*zxid))
    }

    fn become_leader(&mut self, epoch: u32, now: Instant) {
        // As ZooKeeper's leader starts its epoch from its log, this one first commits what it
        // logged after its last commit: the old leader may have had a quorum's acks for it,
        // applied it and answered the client, and died before its commits went out. Its
        // clients were dropped when it stopped following: nobody here to answer.
        let logged = std::mem::take(&mut self.pending);
        let dropped = self.config.defects.leader_drops_logged_proposals;
        for (zxid, mut txn) in logged.into_iter().filter(|_| !dropped) {
            if zxid != self.last_zxid() + 1 {
                break;
            }
            txn.origin = None;
            self.apply(zxid, txn);
        }
        let (last_proposed, timeouts) = {
            let mut disk = lock(&self.shared.disk);
            disk.epoch = epoch;
            disk.model.begin_epoch(epoch);
            (disk.model.last_zxid(), disk.session_timeouts.clone())
        };
        let deadlines = timeouts
            .iter()
            .map(|(session, timeout)| (*session, self.bucket(now, *timeout)))
            .collect();
        self.role = Role::Leading(Leader {
            epoch,
            since: now,
            established: false,
            took_epoch: BTreeSet::new(),
            waiting: Vec::new(),
            last_proposed,
            proposals: BTreeMap::new(),
            followers_heard: BTreeMap::new(),
            deadlines,
            expiring: BTreeSet::new(),
            next_container_check: None,
        });
        let snapshot = self.snapshot();
        self.broadcast(&Message::NewLeader { epoch, snapshot });
        if self.config.quorum() == 1 {
            self.establish();
        }
    }

    /// A quorum took this leader's epoch: it shows as leading, serves, and proposes the writes
    /// forwarded meanwhile.
    fn establish(&mut self) {
        let Role::Leading(leader) = &mut self.role else {
            unreachable!("only a leader is established")
        };
        leader.established = true;
        let (epoch, waiting) = (leader.epoch, std::mem::take(&mut leader.waiting));
        self.set_role_summary(RoleSummary::Leading(epoch));
        for txn in waiting {
            self.propose(txn);
        }
    }

    pub(super) fn heartbeat(&mut self, now: Instant) {
        let limit = Duration::from_millis(self.config.tick_ms * self.config.sync_limit_ticks);
        match &mut self.role {
            Role::Looking { .. } => {}
            Role::Following {
                leader,
                epoch,
                last_heard,
            } => {
                if now.duration_since(*last_heard) > limit {
                    self.become_looking();
                    return;
                }
                let (leader, epoch) = (*leader, *epoch);
                let touched = std::mem::take(&mut self.touched).into_iter().collect();
                self.send(Addr::Server(leader), Message::Heartbeat { epoch, touched });
            }
            Role::Leading(leader) => {
                leader
                    .followers_heard
                    .retain(|_, heard| now.duration_since(*heard) <= limit);
                let epoch = leader.epoch;
                // A new leader gets `sync_limit` ticks to be established and gather its
                // followers.
                let alone = leader.established && self.config.defects.leader_commits_alone;
                if (!leader.established || leader.followers_heard.len() + 1 < self.config.quorum())
                    && now.duration_since(leader.since) > limit
                    && !alone
                {
                    if self.config.defects.leads_next_epoch_alone && leader.established {
                        let next = lock(&self.shared.disk).epoch + 1;
                        self.become_leader(next, now);
                        self.establish();
                    } else {
                        self.become_looking();
                    }
                    return;
                }
                // Only an established leader expires sessions (it proposes nothing before).
                let mut expired: Vec<SessionId> = Vec::new();
                if leader.established {
                    let forced = std::mem::take(&mut *lock(&self.shared.expire_now));
                    expired = (leader.deadlines.iter())
                        .filter(|(session, deadline)| {
                            **deadline <= now && !leader.expiring.contains(session)
                        })
                        .map(|(session, _)| *session)
                        .collect();
                    expired.extend(forced.into_iter().filter(|s| {
                        leader.deadlines.contains_key(s) && !leader.expiring.contains(s)
                    }));
                    expired.sort();
                    expired.dedup();
                    leader.expiring.extend(expired.iter().copied());
                }
                // The container manager runs from the moment the leader is established, every
                // interval, or at once when the reap-containers fault asks.
                let mut reap = false;
                if leader.established {
                    let interval = Duration::from_millis(self.config.container_check_interval_ms);
                    let check = leader.next_container_check.get_or_insert(now + interval);
                    let forced = std::mem::take(&mut *lock(&self.shared.reap_now));
                    reap = forced || now >= *check;
                    if reap {
                        *check = now + interval;
                    }
                }
                self.broadcast(&Message::Heartbeat {
                    epoch,
                    touched: Vec::new(),
                });
                for session in expired {
                    self.propose(Txn {
                        kind: TxnKind::CloseSession {
                            session,
                            expired: true,
                        },
                        origin: None,
                    });
                }
                if reap {
                    self.reap_containers();
                }
            }
        }
    }
}
