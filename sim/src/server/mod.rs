//! One simulated ZooKeeper server: a madsim node running a replica of the pure model.
//!
//! # Roles
//!
//! A server starts **looking**. Every 100 ms it sends a vote (its epoch and last logged zxid)
//! to the others; once it holds fresh votes from a quorum, the best of them, by (zxid, id), leads:
//! so at start, when every zxid is 0, the highest id wins (measured on a real ensemble). The new
//! leader starts the next epoch (`zxid = epoch << 32`) and sends its committed state to the
//! others, which **follow** it, each answering whether it took that epoch *fresh* (had not
//! accepted it before). A server that joins later learns the leader from anyone's answer
//! to its vote and asks to join.
//!
//! Two servers can both believe they won an epoch: each holds a quorum of votes without the
//! other's (a vote lost or late), as ZooKeeper's election can leave two servers in LEADING for a
//! while. As ZooKeeper's leader does, a leader is **established** (it serves clients, proposes,
//! expires sessions, and shows as leading) only once a quorum counting itself took its epoch
//! fresh (ZooKeeper's ACKEPOCH); a follower stays with the first leader of an epoch it took; a
//! leader counts as followers only the servers that took its snapshot. The other claimant finds
//! no quorum, gives up after `sync_limit` ticks, and joins the established leader. A joining server gets the leader's committed state, then the
//! proposals still waiting for a quorum, which it acknowledges like any other (ZooKeeper's
//! leader forwards its outstanding proposals to a learner it has synced); a follower that
//! missed a proposal joins again the same way.
//!
//! # Writes
//!
//! A write goes to the leader, which proposes it with the next zxid; once a quorum has logged it,
//! the leader commits it, and every server applies committed transactions in zxid order. The
//! server the client is connected to replies after applying, sending the watch events the
//! transaction fired on that server before the reply. A leader commits, at the start of its
//! epoch, what it had logged as a follower beyond its last commit (ZooKeeper's leader starts
//! from its log), so a write a quorum acknowledged survives its leader even when the leader
//! died before its commits went out; a proposal the new leader never logged dies with the old
//! one. Votes offer the last *logged* zxid, so the new leader is one that logged the most.
//! Not modelled: the log surviving the server's own crash (a restarted server has only what
//! it committed).
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
//! This file holds the server's state, its loop and its plumbing; `clients.rs` its clients'
//! requests, `peers.rs` elections and leadership, `commit.rs` the write path, `defects.rs` the
//! test-only faults that break one guarantee each (the guarantee checker's controls).
//!
//! Not modelled: observers, dynamic reconfiguration, ACLs, the transaction log's own I/O,
//! `SessionMoved`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::{now, Alarm, Instant};
use zkh_model::guarantees::{Around, Committed};
use zkh_model::{History, HistoryEvent, Reply, ZkModel};
use zkh_recipes::{EventType, SessionId};

use crate::net::{Envelope, Net};
use crate::protocol::{Addr, Message, Origin, Txn};

mod clients;
mod commit;
mod defects;
mod peers;

pub use defects::ServerDefects;

/// Whether servers record their tree around each multi and failed write (for the guarantee
/// "atomicity"): always, but for the benchmark of the checker's own cost.
static AROUND_RECORDED: AtomicBool = AtomicBool::new(true);

/// Stops recording what only ZooKeeper's guarantees read, in this process: the benchmark of the
/// checker's cost (`zkharness sweep --without-guarantees`), which judges none of them.
pub fn skip_recording_for_the_benchmark() {
    AROUND_RECORDED.store(false, Ordering::Relaxed);
}

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
    /// Faults of the servers' own code, for tests only.
    pub defects: ServerDefects,
    /// How often the leader's container manager deletes empty containers
    /// (`znode.container.checkIntervalMs`; ZooKeeper's default is a minute), from the moment it
    /// is established.
    pub container_check_interval_ms: u64,
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
    /// Whether the leader must run its container manager at its next heartbeat (the
    /// reap-containers fault).
    pub reap_now: Mutex<bool>,
    /// Every transaction this server applied, in order, with its zxid: the commit log the
    /// guarantee checker merges across servers (`zkh_model::guarantees::CommitLogs`). Kept
    /// beside the history, not in it, so that no trace hash depends on it.
    pub applied: Mutex<Vec<(i64, Committed)>>,
    /// The server's tree around each `multi` and each failed write it applied (the checker's
    /// atomicity, `zkh_model::guarantees::Around`), beside the history like `applied`.
    pub around: Mutex<Vec<Around>>,
}

impl Default for ServerShared {
    fn default() -> Self {
        ServerShared {
            disk: Mutex::new(Disk::default()),
            apply_delay_ms: Mutex::new(0),
            role: Mutex::new(RoleSummary::Down),
            expire_now: Mutex::new(Vec::new()),
            reap_now: Mutex::new(false),
            applied: Mutex::new(Vec::new()),
            around: Mutex::new(Vec::new()),
        }
    }
}

struct Leader {
    epoch: u32,
    since: Instant,
    /// A quorum, counting the leader, took this epoch fresh: the leader serves and proposes.
    established: bool,
    /// The servers that took this epoch fresh from this leader.
    took_epoch: BTreeSet<u32>,
    /// Writes forwarded before the leader was established: proposed once it is.
    waiting: Vec<Txn>,
    last_proposed: i64,
    proposals: BTreeMap<i64, (Txn, BTreeSet<u32>)>,
    /// The servers that follow this leader (they took its snapshot), when each was last heard.
    followers_heard: BTreeMap<u32, Instant>,
    deadlines: BTreeMap<SessionId, Instant>,
    expiring: BTreeSet<SessionId>,
    /// When the container manager runs next (set once established).
    next_container_check: Option<Instant>,
}

impl Leader {
    /// Whether this leader vouches that `session` lives, for a client resuming it here or
    /// through a follower (ZooKeeper's REVALIDATE): established, it knows the session and is not
    /// expiring it.
    fn vouches_for(&self, session: SessionId) -> bool {
        self.established
            && self.deadlines.contains_key(&session)
            && !self.expiring.contains(&session)
    }
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
    /// Each session's requests behind a write or a sync of its own still to be applied or
    /// answered here, in order: ZooKeeper's CommitProcessor holds a session's reads until its
    /// earlier writes and syncs have committed, so a read sent behind a write sees it, and one
    /// sent behind a sync sees what the sync caught up with (FIFO client order).
    held: BTreeMap<SessionId, VecDeque<Held>>,
    /// Watch events held back by the test-only defect
    /// [`ServerDefects::events_after_the_next_reply`], by (client, connection).
    late_events: RefCell<BTreeMap<(u32, u64), Vec<Message>>>,
    /// The watches whose first change the test-only defect
    /// [`ServerDefects::first_change_unannounced`] let go by: fired by their next one.
    first_changes_passed: BTreeSet<(SessionId, String, EventType)>,
}

/// A request of a session held behind its own write or sync (see `Server::held`).
enum Held {
    /// A write submitted, by its request id.
    Write(u64),
    /// A sync: not yet `asked` of the leader while requests before it are held; answered,
    /// it lets what is behind it go.
    Sync { origin: Origin, asked: bool },
    /// A write that came behind a sync not yet answered: submitted once the sync is, so that
    /// the sync's answer cannot include it (ZooKeeper's leader takes a sync's zxid before it
    /// proposes the session's next write).
    Unsent {
        origin: Origin,
        session: SessionId,
        request: zkh_model::Request,
    },
    /// A read waiting for the writes before it.
    Read {
        client: u32,
        conn: u64,
        xid: u64,
        request: zkh_model::Request,
    },
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
        held: BTreeMap::new(),
        late_events: RefCell::new(BTreeMap::new()),
        first_changes_passed: BTreeSet::new(),
    };
    server.set_role_summary(RoleSummary::Looking);
    let heartbeat = Duration::from_millis(config.tick_ms / 2);
    let mut next_heartbeat = now() + heartbeat;
    let mut next_vote = now();
    let mut alarm = Alarm::default();
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
            _ = alarm.until(wake) => {}
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
        let late = self
            .late_events
            .borrow_mut()
            .remove(&(origin.client, origin.conn));
        for event in late.into_iter().flatten() {
            self.send_client(origin.client, origin.conn, event);
        }
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
        crate::log::record(&self.history, self.net.now_us(), event);
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
        match &self.role {
            Role::Looking { .. } => false,
            Role::Following { .. } => true,
            Role::Leading(leader) => leader.established,
        }
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
}
