//! The write path: a transaction proposed, acknowledged by a quorum, committed and applied
//! in zxid order, and the replies and watch events it sends; syncs answered once caught up.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use zkh_model::guarantees::Committed;
use zkh_model::guarantees::{paths_view, recorded_around, Around};
use zkh_model::{Notification, Reply, Response};

use crate::clock::{now, Instant};
use crate::protocol::{Addr, Message, Origin, Txn, TxnKind};

use super::defects::{apply_in_part, keep_watches, named_by_child_count, pass_first_changes};
use super::{lock, Role, Server};

impl Server {
    pub(super) fn submit(&mut self, txn: Txn) {
        match &self.role {
            Role::Leading(_) => self.propose(txn),
            Role::Following { leader, .. } => {
                self.send(Addr::Server(*leader), Message::Forward { txn })
            }
            Role::Looking { .. } => unreachable!("only a serving server submits"),
        }
    }

    pub(super) fn propose(&mut self, txn: Txn) {
        let Role::Leading(leader) = &mut self.role else {
            unreachable!("only the leader proposes")
        };
        leader.last_proposed += 1;
        let zxid = leader.last_proposed;
        let epoch = leader.epoch;
        leader
            .proposals
            .insert(zxid, (txn.clone(), BTreeSet::from([self.id])));
        self.broadcast(&Message::Propose { epoch, zxid, txn });
        self.try_commit();
    }

    pub(super) fn try_commit(&mut self) {
        loop {
            let Role::Leading(leader) = &mut self.role else {
                return;
            };
            let quorum = if self.config.defects.leader_commits_alone {
                1
            } else {
                self.config.quorum()
            };
            let ready = leader
                .proposals
                .first_key_value()
                .is_some_and(|(_, (_, acks))| acks.len() >= quorum);
            if !ready {
                return;
            }
            let epoch = leader.epoch;
            let (zxid, (txn, _)) = leader.proposals.pop_first().expect("checked non-empty");
            self.apply(zxid, txn);
            self.broadcast(&Message::Commit { epoch, zxid });
        }
    }

    pub(super) fn on_commit(&mut self, from: u32, epoch: u32, zxid: i64, now: Instant) {
        let Role::Following {
            leader,
            epoch: followed,
            last_heard,
        } = &mut self.role
        else {
            return;
        };
        if *leader != from || *followed != epoch {
            return;
        }
        *last_heard = now;
        if self.resyncing {
            return;
        }
        let next = self
            .apply_queue
            .back()
            .map_or_else(|| self.last_zxid(), |(_, z, _)| *z)
            + 1;
        match self.pending.remove(&zxid) {
            Some(txn) if zxid == next => {
                let delay = Duration::from_millis(*lock(&self.shared.apply_delay_ms));
                self.apply_queue.push_back((now + delay, zxid, txn));
                self.apply_due(now);
            }
            // A commit this server cannot apply in order: it missed a proposal (it joined while
            // the proposal was in flight). It applies nothing more until the leader's snapshot
            // has brought it up to date.
            _ => {
                self.resyncing = true;
                self.pending.clear();
                self.send(Addr::Server(from), Message::Join);
            }
        }
    }

    pub(super) fn apply_due(&mut self, now: Instant) {
        while self
            .apply_queue
            .front()
            .is_some_and(|(due, _, _)| *due <= now)
        {
            let (_, zxid, txn) = self.apply_queue.pop_front().expect("checked non-empty");
            self.apply(zxid, txn);
        }
        self.answer_syncs();
    }

    pub(super) fn apply(&mut self, zxid: i64, txn: Txn) {
        let origin = txn.origin.filter(|o| o.server == self.id);
        match txn.kind {
            TxnKind::OpenSession { timeout_ms } => {
                let session = {
                    let mut disk = lock(&self.shared.disk);
                    let session = disk.model.open_session();
                    disk.session_timeouts.insert(session, timeout_ms);
                    session
                };
                self.log_applied(zxid, Committed::OpenSession(session));
                self.check_zxid(zxid);
                if let Role::Leading(leader) = &mut self.role {
                    let deadline = now() + Duration::from_millis(timeout_ms);
                    leader.deadlines.insert(session, deadline);
                    // (touch() below rounds it into its tick bucket when the client is local.)
                }
                if let Some(origin) = origin {
                    self.connected.insert(session, (origin.client, origin.conn));
                    self.touch(session, now());
                    self.send_client(
                        origin.client,
                        origin.conn,
                        Message::Connected {
                            session,
                            timeout_ms,
                        },
                    );
                }
            }
            TxnKind::CloseSession { session, expired } => {
                self.log_applied(zxid, Committed::CloseSession(session));
                let fired = {
                    let mut disk = lock(&self.shared.disk);
                    disk.session_timeouts.remove(&session);
                    if expired && self.config.defects.keep_ephemerals_on_expiry {
                        if !disk.model.close_session_keeping_ephemerals(session) {
                            disk.model.apply_noop();
                        }
                        Vec::new()
                    } else {
                        match disk.model.close_session(session) {
                            Some(fired) => fired,
                            None => {
                                disk.model.apply_noop();
                                Vec::new()
                            }
                        }
                    }
                };
                self.check_zxid(zxid);
                if let Role::Leading(leader) = &mut self.role {
                    leader.deadlines.remove(&session);
                    leader.expiring.remove(&session);
                }
                let client = self.connected.remove(&session);
                self.held.remove(&session);
                self.deliver(fired);
                if let Some(origin) = origin {
                    // The reply to a close carries nothing: it only says the close was applied.
                    let reply = Reply::Ok(Response::Synced);
                    self.reply(origin, zxid, reply);
                } else if let (Some((client, conn)), true) = (client, expired) {
                    // The server closes the connection of a session it expired; the client
                    // learns of the expiry when it reconnects.
                    self.send_client(client, conn, Message::Disconnect);
                }
            }
            TxnKind::Write { session, request } => {
                let committed = Committed::Write {
                    session,
                    request: request.clone(),
                };
                self.log_applied(zxid, committed);
                let applied = {
                    let mut disk = lock(&self.shared.disk);
                    let request = if self.config.defects.sequence_from_child_count {
                        named_by_child_count(&disk.model, request)
                    } else {
                        request
                    };
                    let recording = super::AROUND_RECORDED.load(Ordering::Relaxed);
                    let before = recording.then(|| paths_view(&disk.model, &request));
                    let in_part = self.config.defects.multi_applied_in_part;
                    let mut applied = if in_part {
                        apply_in_part(&mut disk.model, session, &request)
                    } else {
                        disk.model.apply(session, &request)
                    };
                    if applied.zxid.is_none() {
                        // The session closed between the request and its commit: an error txn.
                        disk.model.apply_noop();
                    }
                    if let (Some(before), true) =
                        (before, recorded_around(&request, &applied.reply))
                    {
                        let after = paths_view(&disk.model, &request);
                        let around = Around {
                            zxid,
                            before,
                            after,
                        };
                        lock(&self.shared.around).push(around);
                    }
                    if self.config.defects.watches_kept_after_firing {
                        keep_watches(&mut disk.model, &applied.notifications);
                    }
                    if self.config.defects.first_change_unannounced {
                        let passed = &mut self.first_changes_passed;
                        let fired = std::mem::take(&mut applied.notifications);
                        applied.notifications = pass_first_changes(&mut disk.model, fired, passed);
                    }
                    applied
                };
                self.check_zxid(zxid);
                self.deliver(applied.notifications);
                if let Some(origin) = origin {
                    // The test-only defect puts the epoch's first zxid in the reply's header.
                    let header = if self.config.defects.epoch_zxid_in_write_replies {
                        zxid & !0xffff_ffff
                    } else {
                        zxid
                    };
                    self.reply(origin, header, applied.reply);
                    self.release_held(session, origin.xid);
                }
            }
            TxnKind::DeleteContainer { path } => {
                let fired = {
                    let mut disk = lock(&self.shared.disk);
                    let fired = disk.model.delete_container(&path);
                    if fired.is_none() {
                        disk.model.apply_noop();
                    }
                    fired
                };
                let deleted = fired.is_some();
                self.log_applied(zxid, Committed::DeleteContainer { path, deleted });
                self.check_zxid(zxid);
                self.deliver(fired.unwrap_or_default());
            }
        }
    }

    /// The leader's container manager: a `deleteContainer` transaction for each container of
    /// its committed tree that has had children and has none (each checked again when it
    /// applies).
    pub(super) fn reap_containers(&mut self) {
        let empty = lock(&self.shared.disk).model.tree().empty_containers();
        for path in empty {
            self.propose(Txn {
                kind: TxnKind::DeleteContainer { path },
                origin: None,
            });
        }
    }

    /// Adds `txn`, applied as `zxid`, to this server's commit log.
    fn log_applied(&self, zxid: i64, txn: Committed) {
        lock(&self.shared.applied).push((zxid, txn));
    }

    fn check_zxid(&self, zxid: i64) {
        let applied = self.last_zxid();
        assert_eq!(
            applied, zxid,
            "server {} applied a transaction as zxid {applied:#x}, proposed as {zxid:#x}",
            self.id
        );
    }

    pub(super) fn deliver(&self, notifications: Vec<Notification>) {
        // The simulated wire keeps the zxid, for the history; the client strips it before the
        // application sees the event, as a 3.8 server never sends it.
        for Notification { session, event } in notifications {
            if let Some((client, conn)) = self.connected.get(&session) {
                if self.config.defects.events_after_the_next_reply {
                    (self.late_events.borrow_mut().entry((*client, *conn)))
                        .or_default()
                        .push(Message::Notify(event));
                } else {
                    self.send_client(*client, *conn, Message::Notify(event));
                }
            }
        }
    }

    pub(super) fn reply_sync(&self, origin: Origin) {
        let zxid = self.last_zxid();
        self.reply(origin, zxid, Reply::Ok(Response::Synced));
    }

    pub(super) fn answer_syncs(&mut self) {
        let applied = self.last_zxid();
        let (ready, waiting): (Vec<_>, Vec<_>) = self
            .waiting_syncs
            .drain(..)
            .partition(|(_, zxid)| *zxid <= applied);
        self.waiting_syncs = waiting;
        for (origin, _) in ready {
            if self
                .connected
                .values()
                .any(|(c, conn)| *c == origin.client && *conn == origin.conn)
            {
                self.reply_sync(origin);
            }
            self.release_sync(origin);
        }
    }
}
