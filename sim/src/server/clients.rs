//! A server's side of its clients' connections: sessions, requests, pings and syncs.

use zkh_model::Request;
use zkh_recipes::SessionId;

use crate::clock::Instant;
use crate::protocol::{Addr, Message, Origin, Txn, TxnKind};

use super::{lock, Held, Role, Server};

impl Server {
    pub(super) fn handle_client(&mut self, client: u32, conn: u64, message: Message, now: Instant) {
        if let Message::PeerDown = message {
            let gone: Vec<SessionId> = (self.connected.iter())
                .filter(|(_, (c, _))| *c == client)
                .map(|(session, _)| *session)
                .collect();
            for session in gone {
                self.connected.remove(&session);
                self.held.remove(&session);
            }
            return;
        }
        if !self.serving() {
            let answer = if matches!(message, Message::Connect { .. }) {
                Message::Refused
            } else {
                Message::Disconnect
            };
            self.send_client(client, conn, answer);
            return;
        }
        match message {
            Message::Connect {
                session,
                last_zxid,
                timeout_ms,
            } => {
                if self.last_zxid() < last_zxid && !self.config.defects.serve_clients_ahead {
                    self.send_client(client, conn, Message::Refused);
                    return;
                }
                match session {
                    None => {
                        let timeout_ms = timeout_ms.clamp(
                            self.config.min_session_timeout_ms,
                            self.config.max_session_timeout_ms,
                        );
                        let origin = Origin {
                            server: self.id,
                            client,
                            xid: 0,
                            conn,
                        };
                        self.submit(Txn {
                            kind: TxnKind::OpenSession { timeout_ms },
                            origin: Some(origin),
                        });
                    }
                    Some(session) => {
                        let known = lock(&self.shared.disk)
                            .session_timeouts
                            .contains_key(&session);
                        let origin = Origin {
                            server: self.id,
                            client,
                            xid: 0,
                            conn,
                        };
                        match &self.role {
                            _ if !known => self.send_client(client, conn, Message::Expired),
                            Role::Leading(leader) => {
                                let valid = leader.vouches_for(session);
                                self.resume_session(origin, session, valid, now);
                            }
                            // Only the leader knows whether the session still lives (it
                            // expires sessions); it touches it as it answers.
                            Role::Following { leader, .. } => {
                                let leader = Addr::Server(*leader);
                                self.send(leader, Message::Revalidate { origin, session });
                            }
                            Role::Looking { .. } => unreachable!("checked serving above"),
                        }
                    }
                }
            }
            Message::Request {
                xid,
                session,
                request,
            } => {
                if self.connected.get(&session) != Some(&(client, conn)) {
                    self.send_client(client, conn, Message::Disconnect);
                    return;
                }
                self.touch(session, now);
                let origin = Origin {
                    server: self.id,
                    client,
                    xid,
                    conn,
                };
                if let Request::Sync { .. } = request {
                    // Held like a write: the session's later requests wait for its answer.
                    let queue = self.held.entry(session).or_default();
                    queue.push_back(Held::Sync {
                        origin,
                        asked: false,
                    });
                    self.advance_held(session);
                } else if request.is_write() && self.behind_a_sync(session) {
                    let queue = self.held.entry(session).or_default();
                    queue.push_back(Held::Unsent {
                        origin,
                        session,
                        request,
                    });
                } else if request.is_write() {
                    if !self.config.defects.reads_pass_own_writes {
                        let queue = self.held.entry(session).or_default();
                        queue.push_back(Held::Write(xid));
                    }
                    self.submit(Txn {
                        kind: TxnKind::Write { session, request },
                        origin: Some(origin),
                    });
                } else if let Some(queue) = self.held.get_mut(&session) {
                    // Behind a write of its own: answered once that write is applied here.
                    queue.push_back(Held::Read {
                        client,
                        conn,
                        xid,
                        request,
                    });
                } else {
                    self.serve_read(client, conn, xid, session, &request);
                }
            }
            Message::Ping { session } => {
                // A ping on a connection this server does not know (it restarted since, or the
                // session moved away) meets what a TCP reset tells a real client.
                if self.connected.get(&session) != Some(&(client, conn)) {
                    self.send_client(client, conn, Message::Disconnect);
                    return;
                }
                self.touch(session, now);
                self.send_client(client, conn, Message::Pong);
            }
            Message::SetWatches {
                session,
                last_zxid,
                watches,
            } => {
                if self.connected.get(&session) == Some(&(client, conn)) {
                    let fired = lock(&self.shared.disk)
                        .model
                        .set_watches(session, last_zxid, &watches);
                    self.deliver(fired);
                }
            }
            Message::Close { xid, session } => {
                let origin = Origin {
                    server: self.id,
                    client,
                    xid,
                    conn,
                };
                self.submit(Txn {
                    kind: TxnKind::CloseSession {
                        session,
                        expired: false,
                    },
                    origin: Some(origin),
                });
            }
            other => panic!(
                "server {} got a server-to-client message from client {client}: {other:?}",
                self.id
            ),
        }
    }

    /// Answers a read of `session` from this server's applied state, now.
    pub(super) fn serve_read(
        &self,
        client: u32,
        conn: u64,
        xid: u64,
        session: SessionId,
        request: &Request,
    ) {
        let (applied, mut zxid) = {
            let mut disk = lock(&self.shared.disk);
            (disk.model.apply(session, request), disk.model.last_zxid())
        };
        if self.config.defects.stamp_reads_with_heard_zxid {
            let heard = (self.pending.keys()).chain(self.apply_queue.iter().map(|q| &q.1));
            zxid = heard.copied().fold(zxid, i64::max);
        }
        let origin = Origin {
            server: self.id,
            client,
            conn,
            xid,
        };
        self.reply(origin, zxid, applied.reply);
    }

    /// `session`'s write `xid` was applied here: answers what was held behind it (see
    /// [`Server::advance_held`]).
    pub(super) fn release_held(&mut self, session: SessionId, xid: u64) {
        let Some(queue) = self.held.get_mut(&session) else {
            return;
        };
        if let Some(at) = (queue.iter()).position(|h| matches!(h, Held::Write(w) if *w == xid)) {
            queue.remove(at);
        }
        self.advance_held(session);
    }

    /// Whether `session` has a sync held, not yet answered.
    fn behind_a_sync(&self, session: SessionId) -> bool {
        (self.held.get(&session)).is_some_and(|queue| {
            queue
                .iter()
                .any(|h| matches!(h, Held::Sync { .. } | Held::Unsent { .. }))
        })
    }

    /// The sync of `origin` was answered (or its connection is gone): answers what was held
    /// behind it.
    pub(super) fn release_sync(&mut self, origin: Origin) {
        let is_it = |h: &Held| matches!(h, Held::Sync { origin: o, .. } if *o == origin);
        let found = (self.held.iter_mut())
            .find_map(|(session, queue)| Some((*session, queue.iter().position(is_it)?)));
        if let Some((session, at)) = found {
            self.held.get_mut(&session).expect("found").remove(at);
            self.advance_held(session);
        }
    }

    /// Serves the front of `session`'s held requests, up to a write still to be applied or a
    /// sync still to be answered: its reads, and a sync whose turn has come (the leader answers
    /// it; a follower asks the leader how far to catch up, and what is behind it waits).
    pub(super) fn advance_held(&mut self, session: SessionId) {
        loop {
            let Some(queue) = self.held.get_mut(&session) else {
                return;
            };
            match queue.front_mut() {
                None => {
                    self.held.remove(&session);
                    return;
                }
                Some(Held::Read { .. }) => {
                    let Some(Held::Read {
                        client,
                        conn,
                        xid,
                        request,
                    }) = queue.pop_front()
                    else {
                        unreachable!("matched a read at the front");
                    };
                    self.serve_read(client, conn, xid, session, &request);
                }
                Some(Held::Unsent { .. }) => {
                    let Some(Held::Unsent {
                        origin,
                        session,
                        request,
                    }) = queue.pop_front()
                    else {
                        unreachable!("matched an unsent write at the front");
                    };
                    if !self.config.defects.reads_pass_own_writes {
                        queue.push_front(Held::Write(origin.xid));
                    }
                    self.submit(Txn {
                        kind: TxnKind::Write { session, request },
                        origin: Some(origin),
                    });
                }
                Some(Held::Sync { origin, asked }) if !*asked => {
                    let origin = *origin;
                    match &self.role {
                        Role::Following { .. } if self.config.defects.sync_answered_locally => {}
                        Role::Following { leader, .. } => {
                            *asked = true;
                            let leader = *leader;
                            self.send(Addr::Server(leader), Message::SyncRequest { origin });
                            return;
                        }
                        Role::Leading(_) => {}
                        Role::Looking { .. } => return,
                    }
                    queue.pop_front();
                    self.reply_sync(origin);
                }
                Some(_) => return,
            }
        }
    }

    /// A follower that took a new snapshot from its leader dropped the answers it was waiting
    /// for: asks again for each sync still waiting.
    pub(super) fn ask_again_for_syncs(&mut self, leader: u32) {
        let asked: Vec<Origin> = (self.held.values_mut().flatten())
            .filter_map(|held| match held {
                Held::Sync {
                    origin,
                    asked: true,
                } => Some(*origin),
                _ => None,
            })
            .collect();
        for origin in asked {
            self.send(Addr::Server(leader), Message::SyncRequest { origin });
        }
    }

    /// Answers a client resuming `session` on `origin`'s connection: `Expired` unless `valid`
    /// (the leader said the session lives) and this server still knows it.
    pub(super) fn resume_session(
        &mut self,
        origin: Origin,
        session: SessionId,
        valid: bool,
        now: Instant,
    ) {
        let Origin { client, conn, .. } = origin;
        let timeout = lock(&self.shared.disk)
            .session_timeouts
            .get(&session)
            .copied();
        let Some(timeout_ms) = timeout.filter(|_| valid) else {
            self.send_client(client, conn, Message::Expired);
            return;
        };
        // ZooKeeper keeps watches per connection: a new connection of a session starts with
        // none, and the client's `SetWatches` registers what it still holds. Watches left from
        // an earlier connection to this server would fire a second time an event the client
        // already had, or will have from `SetWatches`.
        lock(&self.shared.disk).model.forget_watches(session);
        // What the old connection had in flight failed with it, in the client too.
        self.held.remove(&session);
        self.connected.insert(session, (client, conn));
        self.touch(session, now);
        self.send_client(
            client,
            conn,
            Message::Connected {
                session,
                timeout_ms,
            },
        );
    }
}
