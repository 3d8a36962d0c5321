//! One simulated ZooKeeper server: a madsim node running a replica of the pure model.
//!
//! # Roles
//!
//! A server starts **looking**. Every 100 ms it sends a vote (its epoch and last committed zxid)
//! to the others; once it holds fresh votes from a quorum, the best of them, by (zxid, id), leads:
//! so at start, when every zxid is 0, the highest id wins (measured on a real ensemble). The new
//! leader starts the next epoch (`zxid = epoch << 32`) and sends its committed state to the
//! others, which **follow** it. A server that joins later learns the leader from anyone's answer
//! to its vote and asks to join.
//!
//! # Writes
//!
//! A write goes to the leader, which proposes it with the next zxid; once a quorum has logged it,
//! the leader commits it, and every server applies committed transactions in zxid order. The
//! server the client is connected to replies after applying, sending the watch events the
//! transaction fired on that server before the reply. Proposals that never reached a quorum die
//! with their leader.
//!
//! # Reads and sync
//!
//! A read is answered from the server's own applied state, which lags the leader on a slow
//! follower. `sync` asks the leader for its commit point and answers once the follower has
//! applied that far.
//!
//! # Sessions
//!
//! Opening and closing a session are transactions. The leader owns expiry: it keeps each
//! session's deadline in tick buckets (`(now + timeout)` rounded up to the next tick, as
//! ZooKeeper's `ExpiryQueue` does), touched by the session's pings and requests (followers
//! report theirs in their heartbeats), and proposes a close when a deadline passes. When the
//! leader changes, deadlines restart.
//!
//! # Losing the leader
//!
//! A follower that has not heard its leader for `sync_limit` ticks, or that learns its
//! connection to it broke, goes back to looking and drops its clients; so does a leader that
//! has not heard a quorum for as long.
//!
//! Not modelled: observers, dynamic reconfiguration, ACLs, the transaction log's own I/O,
//! `SessionMoved`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::{now, Instant};
use zkh_model::{History, HistoryEvent, Notification, Reply, Request, Response, ZkModel};
use zkh_recipes::SessionId;

use crate::net::{Envelope, Net};
use crate::protocol::{Addr, Message, Origin, Snapshot, Txn, TxnKind};

/// How often a looking server votes.
const VOTE_INTERVAL: Duration = Duration::from_millis(100);
/// How long a vote counts.
const VOTE_FRESH_FOR: Duration = Duration::from_millis(350);

/// The settings of every server of an ensemble.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The number of servers.
    pub ensemble_size: u32,
    /// ZooKeeper's `tickTime`.
    pub tick_ms: u64,
    /// Ticks without hearing the leader (or a quorum) before giving up on it (`syncLimit`).
    pub sync_limit_ticks: u64,
    /// The smallest session timeout granted.
    pub min_session_timeout_ms: u64,
    /// The largest session timeout granted.
    pub max_session_timeout_ms: u64,
}

impl ServerConfig {
    fn quorum(&self) -> usize {
        self.ensemble_size as usize / 2 + 1
    }
}

/// What survives a crash: the committed state, as a transaction log and snapshots would keep it.
#[derive(Clone, Debug, Default)]
pub struct Disk {
    /// The committed tree and sessions (its watch tables belong to the running process).
    pub model: ZkModel,
    /// Every live session's timeout.
    pub session_timeouts: BTreeMap<SessionId, u64>,
    /// The last epoch this server accepted.
    pub epoch: u32,
}

/// A server's role, as the fault injector and the history see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleSummary {
    /// The process is not running.
    Down,
    /// Electing.
    Looking,
    /// Following the given server.
    Following(u32),
    /// Leading the given epoch.
    Leading(u32),
}

/// State shared between a server process and the harness: it outlives the process.
#[derive(Debug)]
pub struct ServerShared {
    /// The server's disk.
    pub disk: Mutex<Disk>,
    /// Extra delay before applying a committed transaction (the slow-follower fault).
    pub apply_delay_ms: Mutex<u64>,
    /// The current role.
    pub role: Mutex<RoleSummary>,
    /// Sessions the leader must expire at its next heartbeat (the expire-session fault).
    pub expire_now: Mutex<Vec<SessionId>>,
}

impl Default for ServerShared {
    fn default() -> Self {
        ServerShared {
            disk: Mutex::new(Disk::default()),
            apply_delay_ms: Mutex::new(0),
            role: Mutex::new(RoleSummary::Down),
            expire_now: Mutex::new(Vec::new()),
        }
    }
}

struct Leader {
    epoch: u32,
    since: Instant,
    last_proposed: i64,
    proposals: BTreeMap<i64, (Txn, BTreeSet<u32>)>,
    followers_heard: BTreeMap<u32, Instant>,
    deadlines: BTreeMap<SessionId, Instant>,
    expiring: BTreeSet<SessionId>,
}

enum Role {
    Looking {
        votes: BTreeMap<u32, (Instant, u32, i64)>,
    },
    Following {
        leader: u32,
        epoch: u32,
        last_heard: Instant,
    },
    Leading(Leader),
}

/// One server process.
pub struct Server {
    id: u32,
    config: ServerConfig,
    net: Arc<Net>,
    shared: Arc<ServerShared>,
    history: Arc<Mutex<History>>,
    started: Instant,
    role: Role,
    /// The sessions connected here: their client process and connection.
    connected: BTreeMap<SessionId, (u32, u64)>,
    touched: BTreeSet<SessionId>,
    pending: BTreeMap<i64, Txn>,
    apply_queue: VecDeque<(Instant, i64, Txn)>,
    /// Waiting for the leader's snapshot after missing a proposal: log and apply nothing.
    resyncing: bool,
    waiting_syncs: Vec<(Origin, i64)>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .expect("simulation mutex poisoned by a panicking task")
}

/// Runs server `id` until its node is killed.
pub async fn run_server(
    id: u32,
    config: ServerConfig,
    net: Arc<Net>,
    shared: Arc<ServerShared>,
    history: Arc<Mutex<History>>,
) {
    let mut inbox = net.attach(Addr::Server(id));
    lock(&shared.disk).model.clear_watches();
    let mut server = Server {
        id,
        config: config.clone(),
        net,
        shared,
        history,
        started: now(),
        role: Role::Looking {
            votes: BTreeMap::new(),
        },
        connected: BTreeMap::new(),
        touched: BTreeSet::new(),
        pending: BTreeMap::new(),
        apply_queue: VecDeque::new(),
        resyncing: false,
        waiting_syncs: Vec::new(),
    };
    server.set_role_summary(RoleSummary::Looking);
    let heartbeat = Duration::from_millis(config.tick_ms / 2);
    let mut next_heartbeat = now() + heartbeat;
    let mut next_vote = now();
    loop {
        let mut wake = next_heartbeat;
        if matches!(server.role, Role::Looking { .. }) {
            wake = wake.min(next_vote);
        }
        if let Some((due, _, _)) = server.apply_queue.front() {
            wake = wake.min(*due);
        }
        tokio::select! {
            // Branches are polled in order: the default random order would be entropy from outside
            // the seed.
            biased;
            envelope = inbox.recv() => {
                let Some(envelope) = envelope else { return };
                server.handle(envelope);
            }
            _ = madsim::time::sleep_until(wake) => {}
        }
        let now = now();
        if now >= next_heartbeat {
            server.heartbeat(now);
            next_heartbeat = now + heartbeat;
        }
        if matches!(server.role, Role::Looking { .. }) && now >= next_vote {
            server.election_round(now);
            next_vote = now + VOTE_INTERVAL;
        }
        server.apply_due(now);
    }
}

impl Server {
    fn me(&self) -> Addr {
        Addr::Server(self.id)
    }

    fn send(&self, to: Addr, message: Message) {
        self.net.send(self.me(), to, message);
    }

    /// Answers the request `origin` names, on the connection it came on.
    fn reply(&self, origin: Origin, zxid: i64, reply: Reply) {
        self.send_client(
            origin.client,
            origin.conn,
            Message::Reply {
                xid: origin.xid,
                zxid,
                reply,
            },
        );
    }

    fn send_client(&self, client: u32, conn: u64, message: Message) {
        self.net
            .send_on(self.me(), Addr::Client(client), conn, message);
    }

    fn peers(&self) -> impl Iterator<Item = u32> + '_ {
        (1..=self.config.ensemble_size).filter(move |s| *s != self.id)
    }

    fn broadcast(&self, message: &Message) {
        for peer in self.peers() {
            self.send(Addr::Server(peer), message.clone());
        }
    }

    fn record(&self, event: HistoryEvent) {
        lock(&self.history).push(self.net.now_us(), event);
    }

    fn set_role_summary(&self, summary: RoleSummary) {
        *lock(&self.shared.role) = summary;
        let role = match summary {
            RoleSummary::Down => "down".to_owned(),
            RoleSummary::Looking => "looking".to_owned(),
            RoleSummary::Following(leader) => format!("following {leader}"),
            RoleSummary::Leading(epoch) => format!("leading epoch {epoch}"),
        };
        self.record(HistoryEvent::Server {
            server: self.id,
            role,
        });
    }

    fn serving(&self) -> bool {
        !matches!(self.role, Role::Looking { .. })
    }

    fn last_zxid(&self) -> i64 {
        lock(&self.shared.disk).model.last_zxid()
    }

    fn bucket(&self, now: Instant, timeout_ms: u64) -> Instant {
        let since_start = (now - self.started).as_millis() as u64 + timeout_ms;
        let rounded = (since_start / self.config.tick_ms + 1) * self.config.tick_ms;
        self.started + Duration::from_millis(rounded)
    }

    fn touch(&mut self, session: SessionId, now: Instant) {
        let timeout = lock(&self.shared.disk)
            .session_timeouts
            .get(&session)
            .copied();
        let Some(timeout) = timeout else { return };
        let deadline = self.bucket(now, timeout);
        match &mut self.role {
            Role::Leading(leader) => {
                leader.deadlines.insert(session, deadline);
            }
            _ => {
                self.touched.insert(session);
            }
        }
    }

    fn handle(
        &mut self,
        Envelope {
            from,
            conn,
            message,
        }: Envelope,
    ) {
        let now = now();
        match from {
            Addr::Client(client) => self.handle_client(client, conn, message, now),
            Addr::Server(server) => self.handle_server(server, message, now),
        }
    }

    fn handle_client(&mut self, client: u32, conn: u64, message: Message, now: Instant) {
        if let Message::PeerDown = message {
            self.connected.retain(|_, (c, _)| *c != client);
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
                if self.last_zxid() < last_zxid {
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
                        let timeout = lock(&self.shared.disk)
                            .session_timeouts
                            .get(&session)
                            .copied();
                        match timeout {
                            Some(timeout_ms) => {
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
                            None => self.send_client(client, conn, Message::Expired),
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
                    match &self.role {
                        Role::Leading(_) => self.reply_sync(origin),
                        Role::Following { leader, .. } => {
                            self.send(Addr::Server(*leader), Message::SyncRequest { origin })
                        }
                        Role::Looking { .. } => unreachable!("checked serving above"),
                    }
                } else if request.is_write() {
                    self.submit(Txn {
                        kind: TxnKind::Write { session, request },
                        origin: Some(origin),
                    });
                } else {
                    let (applied, zxid) = {
                        let mut disk = lock(&self.shared.disk);
                        (disk.model.apply(session, &request), disk.model.last_zxid())
                    };
                    self.send_client(
                        client,
                        conn,
                        Message::Reply {
                            xid,
                            zxid,
                            reply: applied.reply,
                        },
                    );
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

    fn handle_server(&mut self, from: u32, message: Message, now: Instant) {
        match message {
            Message::Vote { epoch, zxid } => match &mut self.role {
                Role::Looking { votes } => {
                    votes.insert(from, (now, epoch, zxid));
                }
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
                    leader.followers_heard.insert(from, now);
                    let epoch = leader.epoch;
                    let snapshot = self.snapshot();
                    self.send(Addr::Server(from), Message::NewLeader { epoch, snapshot });
                }
            }
            Message::NewLeader { epoch, snapshot } => self.adopt(from, epoch, *snapshot, now),
            Message::Forward { txn } => {
                if matches!(self.role, Role::Leading(_)) {
                    self.propose(txn);
                }
            }
            Message::SyncRequest { origin } => {
                if let Role::Leading(_) = self.role {
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
                    if leader.epoch == epoch {
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
                Role::Leading(leader) if leader.epoch == epoch => {
                    leader.followers_heard.insert(from, now);
                    for session in touched {
                        self.touch(session, now);
                    }
                }
                _ => {}
            },
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
            Role::Following {
                leader: current,
                epoch: followed,
                ..
            } => *current == leader && *followed == epoch && !self.resyncing,
            Role::Looking { .. } => false,
        };
        if epoch < accepted || stale {
            return;
        }
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
        self.send(
            Addr::Server(leader),
            Message::Heartbeat {
                epoch,
                touched: Vec::new(),
            },
        );
    }

    fn drop_clients(&mut self) {
        for (client, conn) in std::mem::take(&mut self.connected)
            .into_values()
            .collect::<BTreeSet<_>>()
        {
            self.send_client(client, conn, Message::Disconnect);
        }
        self.touched.clear();
    }

    fn become_looking(&mut self) {
        // Committed transactions still waiting on a slow apply are applied first.
        while let Some((_, zxid, txn)) = self.apply_queue.pop_front() {
            self.apply(zxid, txn);
        }
        self.drop_clients();
        self.pending.clear();
        self.waiting_syncs.clear();
        self.role = Role::Looking {
            votes: BTreeMap::new(),
        };
        self.set_role_summary(RoleSummary::Looking);
    }

    fn election_round(&mut self, now: Instant) {
        let (epoch, zxid) = {
            let disk = lock(&self.shared.disk);
            (disk.epoch, disk.model.last_zxid())
        };
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

    fn become_leader(&mut self, epoch: u32, now: Instant) {
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
            last_proposed,
            proposals: BTreeMap::new(),
            followers_heard: BTreeMap::new(),
            deadlines,
            expiring: BTreeSet::new(),
        });
        self.set_role_summary(RoleSummary::Leading(epoch));
        let snapshot = self.snapshot();
        self.broadcast(&Message::NewLeader { epoch, snapshot });
    }

    fn heartbeat(&mut self, now: Instant) {
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
                // A new leader gets `sync_limit` ticks to gather its followers.
                if leader.followers_heard.len() + 1 < self.config.quorum()
                    && now.duration_since(leader.since) > limit
                {
                    self.become_looking();
                    return;
                }
                let forced = std::mem::take(&mut *lock(&self.shared.expire_now));
                let mut expired: Vec<SessionId> = leader
                    .deadlines
                    .iter()
                    .filter(|(session, deadline)| {
                        **deadline <= now && !leader.expiring.contains(session)
                    })
                    .map(|(session, _)| *session)
                    .collect();
                expired.extend(
                    forced.into_iter().filter(|s| {
                        leader.deadlines.contains_key(s) && !leader.expiring.contains(s)
                    }),
                );
                expired.sort();
                expired.dedup();
                leader.expiring.extend(expired.iter().copied());
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
            }
        }
    }

    fn submit(&mut self, txn: Txn) {
        match &self.role {
            Role::Leading(_) => self.propose(txn),
            Role::Following { leader, .. } => {
                self.send(Addr::Server(*leader), Message::Forward { txn })
            }
            Role::Looking { .. } => unreachable!("only a serving server submits"),
        }
    }

    fn propose(&mut self, txn: Txn) {
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

    fn try_commit(&mut self) {
        loop {
            let Role::Leading(leader) = &mut self.role else {
                return;
            };
            let ready = leader
                .proposals
                .first_key_value()
                .is_some_and(|(_, (_, acks))| acks.len() >= self.config.quorum());
            if !ready {
                return;
            }
            let epoch = leader.epoch;
            let (zxid, (txn, _)) = leader.proposals.pop_first().expect("checked non-empty");
            self.apply(zxid, txn);
            self.broadcast(&Message::Commit { epoch, zxid });
        }
    }

    fn on_commit(&mut self, from: u32, epoch: u32, zxid: i64, now: Instant) {
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

    fn apply_due(&mut self, now: Instant) {
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

    fn apply(&mut self, zxid: i64, txn: Txn) {
        let origin = txn.origin.filter(|o| o.server == self.id);
        match txn.kind {
            TxnKind::OpenSession { timeout_ms } => {
                let session = {
                    let mut disk = lock(&self.shared.disk);
                    let session = disk.model.open_session();
                    disk.session_timeouts.insert(session, timeout_ms);
                    session
                };
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
                let fired = {
                    let mut disk = lock(&self.shared.disk);
                    disk.session_timeouts.remove(&session);
                    match disk.model.close_session(session) {
                        Some(fired) => fired,
                        None => {
                            disk.model.apply_noop();
                            Vec::new()
                        }
                    }
                };
                self.check_zxid(zxid);
                if let Role::Leading(leader) = &mut self.role {
                    leader.deadlines.remove(&session);
                    leader.expiring.remove(&session);
                }
                let client = self.connected.remove(&session);
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
                let applied = {
                    let mut disk = lock(&self.shared.disk);
                    let applied = disk.model.apply(session, &request);
                    if applied.zxid.is_none() {
                        // The session closed between the request and its commit: an error txn.
                        disk.model.apply_noop();
                    }
                    applied
                };
                self.check_zxid(zxid);
                self.deliver(applied.notifications);
                if let Some(origin) = origin {
                    self.reply(origin, zxid, applied.reply);
                }
            }
        }
    }

    fn check_zxid(&self, zxid: i64) {
        let applied = self.last_zxid();
        assert_eq!(
            applied, zxid,
            "server {} applied a transaction as zxid {applied:#x}, proposed as {zxid:#x}",
            self.id
        );
    }

    fn deliver(&self, notifications: Vec<Notification>) {
        // The simulated wire keeps the zxid, for the history; the client strips it before the
        // application sees the event, as a 3.8 server never sends it.
        for Notification { session, event } in notifications {
            if let Some((client, conn)) = self.connected.get(&session) {
                self.send_client(*client, *conn, Message::Notify(event));
            }
        }
    }

    fn reply_sync(&self, origin: Origin) {
        let zxid = self.last_zxid();
        self.reply(origin, zxid, Reply::Ok(Response::Synced));
    }

    fn answer_syncs(&mut self) {
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
        }
    }
}
