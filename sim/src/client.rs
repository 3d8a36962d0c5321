//! The simulated ZooKeeper client: a [`ZkClient`] whose connection behaves like the real one.
//!
//! A driver task on the client's node owns the connection:
//!
//! - **Heartbeats.** After a third of the session timeout without sending, it pings. After two
//!   thirds without hearing from its server, it declares the connection lost.
//! - **Connection loss.** Every in-flight request fails with `ConnectionLoss` (indefinite: the
//!   server may have applied it), the application sees `Disconnected`, and after a random
//!   backoff the client tries another server, chosen by the client's own seeded PRNG. An attempt
//!   gets `timeout / servers` to succeed, as in the Java client.
//! - **Reconnection.** A server whose applied zxid is behind the client's last seen zxid refuses
//!   it. A server that does not know the session any more answers `Expired`: that is the only way
//!   the client learns of an expiry. A same-session reconnect re-registers the client's watches
//!   with its last zxid; the server fires at once those whose condition changed.
//! - **Its own expiry.** With a [`LocalExpiry`] other than `Never`, a client that cannot
//!   reconnect ends its session on its own timer, as Curator and the `zookeeper-client` crate
//!   do (measured after data loss on a real ensemble: docs/real-ensemble.md). With
//!   [`LocalExpiry::Curator2`] it announces no expiry; instead, an operation made while not
//!   connected, past max(session timeout, Curator's 15 s connection timeout) since the
//!   disconnection, drops the old handle and starts a new one (a new session, no last zxid),
//!   which the application hears of as a reconnection, as Curator 2.x's `checkTimeouts` does.
//! - **After expiry** it stops (`SessionExpired` from then on), or, with
//!   `new_session_after_expiry`, opens a new session as Curator and Kafka do: a new handle,
//!   which offers the servers no last zxid.
//!
//! Requests issued while not connected fail at once with `ConnectionLoss`; nothing is queued.
//! Replies and watch events from a server the client has left are ignored.
//!
//! **Replies and events reach the application in the order they arrived**, as the Java
//! client's single event thread runs reply callbacks and watchers in the order the server sent
//! them (Curator's recipes use those callbacks). A reply goes to the future of its request and
//! an event to the event stream; an event waits in the stream until every reply that arrived
//! before it has been taken (its request's future returned, or was dropped). Without that, an
//! application that polls its events first (the recipe driver does) saw a `NodeDeleted` before
//! the `getData` reply that set its watch, when both arrived at one instant, and waited for ever.
//!
//! Faults that act here: a dropped request (the connection breaks before the request is sent),
//! a dropped reply (the connection breaks when the reply arrives, after the server applied it),
//! client-side expiry (what Curator's `KillSession` does: the client is told its session expired,
//! the server keeps it until its own timeout), and delayed watch delivery (a slow event thread).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::clock::{now, Alarm, Instant};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::{mpsc::UnboundedReceiver, oneshot, Notify};
use zkh_model::{History, HistoryEvent, OpOutcome, Reply, Request, Response, WatchSet};
use zkh_recipes::{
    ClientEvent, CreateMode, Created, EventType, MultiError, Op, OpResult, SessionEvent, SessionId,
    Stat, ZkClient, ZkError,
};

use crate::fault::{Fault, OpKind, TriggeredFault};
pub use crate::local_expiry::LocalExpiry;
use crate::net::{Envelope, Net};
use crate::protocol::{Addr, Message};

/// The cluster's armed triggers, and where to send the faults they fire.
pub type TriggerHooks = (
    Arc<Mutex<Vec<TriggeredFault>>>,
    tokio::sync::mpsc::UnboundedSender<Fault>,
);

/// How a simulated client behaves.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The requested session timeout.
    pub session_timeout_ms: u64,
    /// The number of servers it may connect to (ids 1..=n).
    pub servers: u32,
    /// The longest random pause before a reconnection attempt.
    pub reconnect_backoff_max_ms: u64,
    /// Open a new session after the old one expired (Curator, Kafka), instead of stopping.
    pub new_session_after_expiry: bool,
    /// Whether the client declares its session expired on its own while it cannot reconnect.
    pub local_expiry: LocalExpiry,
}

/// Faults armed on one client by the fault injector.
#[derive(Clone, Debug, Default)]
pub struct ClientFaults {
    /// The next this many requests are lost before reaching the server.
    pub drop_requests: u32,
    /// The replies to the next this many requests are lost after the server applied them.
    pub drop_replies: u32,
    /// Watch events reach the application this much later (0: at once).
    pub watch_delay_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conn {
    /// Waiting before the next attempt.
    Backoff { until: Instant },
    /// Waiting for a server's answer.
    Connecting { server: u32, started: Instant },
    /// Connected.
    Connected { server: u32 },
    /// The session expired and no new one will be made.
    Expired,
    /// Closed by its owner.
    Closed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WatchClass {
    Exists,
    Data,
    Children,
}

/// A reply (with the zxid of its header) or the error that ended its request.
type ReplyResult = Result<(i64, Reply), ZkError>;

/// Where the reply to request `xid` will come. Events that arrived after the reply wait until
/// it is taken: until this future is dropped, which an `.await` does as it returns the reply.
struct ReplyReceiver {
    receiver: oneshot::Receiver<ReplyResult>,
    xid: u64,
    shared: Arc<Shared>,
}

impl std::future::Future for ReplyReceiver {
    type Output = Result<ReplyResult, oneshot::error::RecvError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.receiver).poll(cx)
    }
}

impl Drop for ReplyReceiver {
    fn drop(&mut self) {
        self.shared.reply_taken(self.xid);
    }
}

struct Pending {
    watch: Option<(WatchClass, String)>,
    reply_to: oneshot::Sender<ReplyResult>,
}

struct State {
    conn: Conn,
    /// The current connection's id; what comes on an older one is dropped.
    conn_id: u64,
    session: Option<SessionId>,
    timeout_ms: u64,
    last_zxid: i64,
    last_heard: Instant,
    /// When the connection was last lost while connected (Curator's start of `SUSPENDED`);
    /// none while connected.
    suspended_since: Option<Instant>,
    /// The session being made is a new handle's, made by [`LocalExpiry::Curator2`]'s reset:
    /// it is announced as a reconnection, as Curator 2.x announces it.
    new_handle: bool,
    last_sent: Instant,
    last_server: Option<u32>,
    next_xid: u64,
    pending: BTreeMap<u64, Pending>,
    watches: WatchSet,
    /// Replies handed to their requests' futures so far: the arrival order of replies.
    replies_handed: u64,
    /// Replies handed and not yet taken, by request id, with their place in that order.
    replies_untaken: BTreeMap<u64, u64>,
    /// Events for the application, each with the number of replies handed before it arrived.
    events: VecDeque<(u64, ClientEvent)>,
    delayed: VecDeque<(Instant, ClientEvent)>,
    lose_reply_of: BTreeSet<u64>,
    faults: ClientFaults,
    rng: ChaCha8Rng,
}

struct Shared {
    id: u32,
    config: ClientConfig,
    triggers: TriggerHooks,
    net: Arc<Net>,
    history: Arc<Mutex<History>>,
    state: Mutex<State>,
    events_ready: Notify,
    connected: Notify,
    /// Wakes the driver when the connection changed outside it (a handle reset).
    rearm: Notify,
}

/// A simulated client process's ZooKeeper client. Cheap to clone; all clones share one session.
#[derive(Clone)]
pub struct SimClient {
    shared: Arc<Shared>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .expect("client state mutex poisoned by a panicking task")
    }

    fn me(&self) -> Addr {
        Addr::Client(self.id)
    }

    fn record(&self, event: HistoryEvent) {
        crate::log::record(&self.history, self.net.now_us(), event);
    }

    /// Hands `result` to the future of request `xid`; until that future takes it, later events
    /// wait.
    fn hand_reply(
        &self,
        state: &mut State,
        xid: u64,
        reply_to: oneshot::Sender<ReplyResult>,
        result: ReplyResult,
    ) {
        let place = state.replies_handed;
        state.replies_handed += 1;
        if reply_to.send(result).is_ok() {
            state.replies_untaken.insert(xid, place);
        }
    }

    /// The reply to `xid` was taken (or its future dropped): events behind it may go.
    fn reply_taken(&self, xid: u64) {
        let mut state = self.lock();
        if state.replies_untaken.remove(&xid).is_some() {
            drop(state);
            self.events_ready.notify_waiters();
        }
    }

    /// Queues `event` for the application, behind every reply handed so far.
    fn queue_event(&self, state: &mut State, event: ClientEvent) {
        let after = state.replies_handed;
        state.events.push_back((after, event));
        self.events_ready.notify_waiters();
    }

    /// The next event for the application, if it is queued and every reply that arrived before
    /// it has been taken.
    fn take_event(state: &mut State) -> Option<ClientEvent> {
        let (after, _) = state.events.front()?;
        if state.replies_untaken.values().any(|place| place < after) {
            return None;
        }
        state.events.pop_front().map(|(_, event)| event)
    }

    fn push_event(&self, state: &mut State, event: ClientEvent, now: Instant) {
        match &event {
            ClientEvent::Watch(watch) => self.record(HistoryEvent::Watch {
                client: self.id,
                event: watch.clone(),
            }),
            ClientEvent::Session(session) => self.record(HistoryEvent::Session {
                client: self.id,
                event: *session,
            }),
        }
        let delay = state.faults.watch_delay_ms;
        if matches!(event, ClientEvent::Watch(_)) && delay > 0 {
            state
                .delayed
                .push_back((now + Duration::from_millis(delay), event));
        } else {
            self.queue_event(state, event);
        }
    }

    fn choose_server(&self, state: &mut State) -> u32 {
        let servers = self.config.servers;
        let mut server = state.rng.random_range(1..=servers);
        if servers > 1 && Some(server) == state.last_server {
            server = server % servers + 1;
        }
        server
    }

    fn start_connecting(&self, state: &mut State, now: Instant) {
        // A new connection: whatever a partition held on the old one is lost.
        self.net.reset(self.me());
        let server = self.choose_server(state);
        state.last_server = Some(server);
        state.conn = Conn::Connecting {
            server,
            started: now,
        };
        state.conn_id += 1;
        let message = Message::Connect {
            session: state.session,
            last_zxid: state.last_zxid,
            timeout_ms: self.config.session_timeout_ms,
        };
        self.net
            .send_on(self.me(), Addr::Server(server), state.conn_id, message);
    }

    fn backoff(&self, state: &mut State, now: Instant) {
        let pause = state
            .rng
            .random_range(0..=self.config.reconnect_backoff_max_ms);
        state.conn = Conn::Backoff {
            until: now + Duration::from_millis(pause),
        };
    }

    /// The connection broke: fail what is in flight, tell the application, try again later.
    fn connection_lost(&self, state: &mut State, now: Instant) {
        for (xid, pending) in std::mem::take(&mut state.pending) {
            self.hand_reply(state, xid, pending.reply_to, Err(ZkError::ConnectionLoss));
        }
        state.lose_reply_of.clear();
        if matches!(state.conn, Conn::Connected { .. }) {
            self.push_event(state, ClientEvent::Session(SessionEvent::Disconnected), now);
            state.suspended_since = Some(now);
        }
        self.backoff(state, now);
    }

    /// The session is gone: fail what is in flight and forget the watches.
    fn session_expired(&self, state: &mut State, now: Instant) {
        for (xid, pending) in std::mem::take(&mut state.pending) {
            self.hand_reply(state, xid, pending.reply_to, Err(ZkError::SessionExpired));
        }
        state.lose_reply_of.clear();
        state.watches = WatchSet::default();
        self.push_event(state, ClientEvent::Session(SessionEvent::Expired), now);
        if self.config.new_session_after_expiry {
            // A new session is a new handle (Curator makes a new ZooKeeper object), which has
            // seen no zxid: an ensemble behind the old session's view accepts it.
            state.session = None;
            state.last_zxid = 0;
            self.backoff(state, now);
        } else {
            state.conn = Conn::Expired;
        }
    }

    /// Curator 2.x's `checkTimeouts` on an operation made while not connected
    /// ([`LocalExpiry::Curator2`]): past its limit, the old handle (and its session, its
    /// watches, its last zxid) is dropped without a word to the application or the servers,
    /// and a new handle starts connecting at once.
    fn reset_handle_if_due(&self, state: &mut State, now: Instant) {
        let Some(since) = state.suspended_since.filter(|_| state.session.is_some()) else {
            return;
        };
        let policy = self.config.local_expiry;
        if !policy.resets_handle_after(now - since, self.config.session_timeout_ms) {
            return;
        }
        state.session = None;
        state.last_zxid = 0;
        state.watches = WatchSet::default();
        state.new_handle = true;
        // Curator restarts its connection timer at a reset.
        state.suspended_since = Some(now);
        // An attempt in progress belonged to the old handle: whatever answers it is dropped.
        state.conn_id += 1;
        state.conn = Conn::Backoff { until: now };
        self.rearm.notify_one();
    }

    fn current_server(state: &State) -> Option<u32> {
        match state.conn {
            Conn::Connecting { server, .. } | Conn::Connected { server } => Some(server),
            _ => None,
        }
    }

    fn on_message(
        &self,
        Envelope {
            from,
            conn,
            message,
        }: Envelope,
    ) {
        let now = now();
        let mut state = self.lock();
        let Addr::Server(server) = from else { return };
        if Self::current_server(&state) != Some(server) {
            return; // a server this client has left
        }
        if conn != state.conn_id && !matches!(message, Message::PeerDown) {
            return; // sent on a connection this client has left
        }
        // A refusal is not hearing from the session's ensemble (a real server just closes the
        // socket): the crate's local expiry counts from the last message before it.
        if !matches!(message, Message::Refused) {
            state.last_heard = now;
        }
        match message {
            Message::Connected {
                session,
                timeout_ms,
            } => {
                let resumed = state.session == Some(session);
                state.session = Some(session);
                state.timeout_ms = timeout_ms;
                state.conn = Conn::Connected { server };
                state.suspended_since = None;
                state.last_sent = now;
                if resumed {
                    let event = SessionEvent::Reconnected {
                        session_id: session,
                    };
                    self.push_event(&mut state, ClientEvent::Session(event), now);
                    if state.watches != WatchSet::default() {
                        let message = Message::SetWatches {
                            session,
                            last_zxid: state.last_zxid,
                            watches: state.watches.clone(),
                        };
                        self.net.send_on(self.me(), from, state.conn_id, message);
                    }
                } else if std::mem::take(&mut state.new_handle) {
                    // Curator 2.x's reset: the new session is announced as RECONNECTED.
                    let event = SessionEvent::Reconnected {
                        session_id: session,
                    };
                    self.push_event(&mut state, ClientEvent::Session(event), now);
                } else {
                    state.watches = WatchSet::default();
                    let event = SessionEvent::Connected {
                        session_id: session,
                    };
                    self.push_event(&mut state, ClientEvent::Session(event), now);
                }
                self.connected.notify_waiters();
            }
            Message::Refused => self.backoff(&mut state, now),
            Message::Expired => self.session_expired(&mut state, now),
            Message::Reply { xid, zxid, reply } => {
                state.last_zxid = state.last_zxid.max(zxid);
                if state.lose_reply_of.remove(&xid) {
                    self.connection_lost(&mut state, now);
                    return;
                }
                let Some(pending) = state.pending.remove(&xid) else {
                    return;
                };
                if let Some((class, path)) = pending.watch {
                    match (class, &reply) {
                        (WatchClass::Exists, Reply::Ok(Response::Exists(None))) => {
                            state.watches.exist.insert(path);
                        }
                        (WatchClass::Exists | WatchClass::Data, Reply::Ok(_)) => {
                            state.watches.data.insert(path);
                        }
                        (WatchClass::Children, Reply::Ok(_)) => {
                            state.watches.child.insert(path);
                        }
                        _ => {}
                    }
                }
                self.hand_reply(&mut state, xid, pending.reply_to, Ok((zxid, reply)));
            }
            Message::Notify(event) => {
                let path = &event.path;
                match event.event_type {
                    EventType::NodeCreated => state.watches.exist.remove(path),
                    EventType::NodeDataChanged => state.watches.data.remove(path),
                    EventType::NodeChildrenChanged => state.watches.child.remove(path),
                    EventType::NodeDeleted => {
                        state.watches.exist.remove(path);
                        state.watches.child.remove(path);
                        state.watches.data.remove(path)
                    }
                };
                self.push_event(&mut state, ClientEvent::Watch(event), now);
            }
            Message::Pong => {}
            Message::Disconnect | Message::PeerDown => self.connection_lost(&mut state, now),
            other => panic!(
                "client {} got a message meant for a server: {other:?}",
                self.id
            ),
        }
    }

    /// Acts on timers; returns when to wake next, or `None` once the client is closed.
    fn on_timer(&self, now: Instant) -> Option<Instant> {
        let mut state = self.lock();
        while state.delayed.front().is_some_and(|(due, _)| *due <= now) {
            let (_, event) = state.delayed.pop_front().expect("checked non-empty");
            self.queue_event(&mut state, event);
        }
        let timeout = Duration::from_millis(state.timeout_ms);
        let mut wake = match state.conn {
            Conn::Closed => return None,
            Conn::Expired => now + Duration::from_secs(3600),
            Conn::Backoff { .. } | Conn::Connecting { .. }
                if self.gives_up_at(&state).is_some_and(|at| at <= now) =>
            {
                self.session_expired(&mut state, now);
                return Some(now);
            }
            Conn::Backoff { until } if until <= now => {
                self.start_connecting(&mut state, now);
                return Some(now);
            }
            Conn::Backoff { until } => until,
            Conn::Connecting { started, .. } => {
                let limit = started + timeout / self.config.servers;
                if now >= limit {
                    self.backoff(&mut state, now);
                    return Some(now);
                }
                limit
            }
            Conn::Connected { server } => {
                let lost_at = state.last_heard + timeout * 2 / 3;
                if now >= lost_at {
                    self.connection_lost(&mut state, now);
                    return Some(now);
                }
                let ping_at = state.last_sent + timeout / 3;
                if now >= ping_at {
                    let session = state.session.expect("a connected client has a session");
                    self.net.send_on(
                        self.me(),
                        Addr::Server(server),
                        state.conn_id,
                        Message::Ping { session },
                    );
                    state.last_sent = now;
                }
                lost_at.min(state.last_sent + timeout / 3)
            }
        };
        if let Some((due, _)) = state.delayed.front() {
            wake = wake.min(*due);
        }
        if let (Conn::Backoff { .. } | Conn::Connecting { .. }, Some(at)) =
            (state.conn, self.gives_up_at(&state))
        {
            wake = wake.min(at);
        }
        Some(wake)
    }

    /// When the client declares its session expired on its own, if it has one to lose and its
    /// library does ([`LocalExpiry`]).
    fn gives_up_at(&self, state: &State) -> Option<Instant> {
        state.session?;
        let timeout = Duration::from_millis(state.timeout_ms);
        match self.config.local_expiry {
            LocalExpiry::Never | LocalExpiry::Curator2 => None,
            LocalExpiry::Curator => Some(state.suspended_since? + timeout),
            LocalExpiry::ZookeeperClientCrate => Some(state.last_heard + timeout * 7 / 5),
        }
    }
}

async fn drive(shared: Arc<Shared>, mut inbox: UnboundedReceiver<Envelope>) {
    let mut wake = now();
    let mut alarm = Alarm::default();
    loop {
        tokio::select! {
            // Branches are polled in order: the default random order would be entropy from outside
            // the seed.
            biased;
            envelope = inbox.recv() => match envelope {
                Some(envelope) => shared.on_message(envelope),
                None => return,
            },
            _ = alarm.until(wake) => {}
            _ = shared.rearm.notified() => {}
        }
        match shared.on_timer(now()) {
            Some(next) => wake = next,
            None => return,
        }
    }
}

impl SimClient {
    /// Starts client process `id`'s connection (call it on the client's node) and waits, at
    /// most `connect_wait_ms` of simulated time, for its first session.
    pub async fn connect(
        id: u32,
        config: ClientConfig,
        net: Arc<Net>,
        history: Arc<Mutex<History>>,
        rng: ChaCha8Rng,
        triggers: TriggerHooks,
        connect_wait_ms: u64,
    ) -> Result<SimClient, ZkError> {
        let now = now();
        let inbox = net.attach(Addr::Client(id));
        let state = State {
            conn: Conn::Backoff { until: now },
            conn_id: 0,
            session: None,
            timeout_ms: config.session_timeout_ms,
            last_zxid: 0,
            last_heard: now,
            suspended_since: None,
            new_handle: false,
            last_sent: now,
            last_server: None,
            next_xid: 1,
            pending: BTreeMap::new(),
            watches: WatchSet::default(),
            replies_handed: 0,
            replies_untaken: BTreeMap::new(),
            events: VecDeque::new(),
            delayed: VecDeque::new(),
            lose_reply_of: BTreeSet::new(),
            faults: ClientFaults::default(),
            rng,
        };
        let shared = Arc::new(Shared {
            id,
            config,
            triggers,
            net,
            history,
            state: Mutex::new(state),
            events_ready: Notify::new(),
            connected: Notify::new(),
            rearm: Notify::new(),
        });
        madsim::task::spawn(drive(Arc::clone(&shared), inbox));
        let client = SimClient { shared };
        let wait = async {
            loop {
                let connected = client.shared.connected.notified();
                if client.shared.lock().session.is_some() {
                    return;
                }
                connected.await;
            }
        };
        crate::clock::timeout(Duration::from_millis(connect_wait_ms), wait)
            .await
            .map_err(|_| ZkError::ConnectionLoss)?;
        Ok(client)
    }

    /// The client process id.
    pub fn id(&self) -> u32 {
        self.shared.id
    }

    /// The server this client is connected to, if it is connected.
    pub fn connected_server(&self) -> Option<u32> {
        match self.shared.lock().conn {
            Conn::Connected { server } => Some(server),
            _ => None,
        }
    }

    /// Arms faults on this client (they add to those already armed).
    pub fn arm(&self, faults: ClientFaults) {
        let mut state = self.shared.lock();
        state.faults.drop_requests += faults.drop_requests;
        state.faults.drop_replies += faults.drop_replies;
        state.faults.watch_delay_ms = state.faults.watch_delay_ms.max(faults.watch_delay_ms);
    }

    /// Disarms every armed fault (the heal): pending drops and the watch delay.
    pub fn disarm(&self) {
        self.shared.lock().faults = ClientFaults::default();
    }

    /// Delays watch events by `delay_ms` on their way to the application (0: no delay).
    pub fn set_watch_delay(&self, delay_ms: u64) {
        self.shared.lock().faults.watch_delay_ms = delay_ms;
    }

    /// Curator's `KillSession`: the client is told its session expired; the server keeps it
    /// (and its ephemeral nodes) until its own timeout.
    pub fn expire_locally(&self) {
        let mut state = self.shared.lock();
        if matches!(state.conn, Conn::Closed | Conn::Expired) {
            return;
        }
        if let Some(server) = Shared::current_server(&state) {
            // The client abandons its connection; the server keeps the session.
            state.last_server = Some(server);
        }
        self.shared.session_expired(&mut state, now());
    }

    /// Closes the session (waiting at most `wait_ms` for the server to apply it) and the client.
    pub async fn close(&self, wait_ms: u64) {
        let closing = self.issue(None, None);
        if let Ok(receiver) = closing {
            let _ = crate::clock::timeout(Duration::from_millis(wait_ms), receiver).await;
        }
        let mut state = self.shared.lock();
        state.conn = Conn::Closed;
        self.shared.push_event(
            &mut state,
            ClientEvent::Session(SessionEvent::Closed),
            now(),
        );
    }

    /// Sends `request` (`None`: the session close) and returns where its reply will come.
    fn issue(
        &self,
        request: Option<Request>,
        watch: Option<(WatchClass, String)>,
    ) -> Result<ReplyReceiver, ZkError> {
        let shared = &self.shared;
        crate::watchdog::note_request(shared.id);
        let now = now();
        let mut state = shared.lock();
        let server = match state.conn {
            Conn::Closed => return Err(ZkError::ClientClosed),
            Conn::Expired => return Err(ZkError::SessionExpired),
            Conn::Connected { server } => server,
            Conn::Backoff { .. } | Conn::Connecting { .. } => {
                if request.is_some() {
                    shared.reset_handle_if_due(&mut state, now);
                }
                return Err(ZkError::ConnectionLoss);
            }
        };
        let session = state.session.expect("a connected client has a session");
        let xid = state.next_xid;
        state.next_xid += 1;
        let (reply_to, receiver) = oneshot::channel();
        if let Some(request) = &request {
            shared.record(HistoryEvent::Invoke {
                client: shared.id,
                session,
                xid,
                request: request.clone(),
            });
        }
        state.pending.insert(xid, Pending { watch, reply_to });
        if let Some(request) = &request {
            self.fire_triggers(&mut state, request);
        }
        // Faults act on requests, not on the close.
        let faultable = request.is_some();
        if state.faults.drop_requests > 0 && faultable {
            state.faults.drop_requests -= 1;
            shared.record(HistoryEvent::Fault {
                description: format!("client {}: request {xid} dropped", shared.id),
            });
            shared.connection_lost(&mut state, now);
            return Ok(ReplyReceiver {
                receiver,
                xid,
                shared: Arc::clone(shared),
            });
        }
        if state.faults.drop_replies > 0 && faultable {
            state.faults.drop_replies -= 1;
            shared.record(HistoryEvent::Fault {
                description: format!("client {}: reply to {xid} dropped", shared.id),
            });
            state.lose_reply_of.insert(xid);
        }
        let message = match request {
            Some(request) => Message::Request {
                xid,
                session,
                request,
            },
            None => Message::Close { xid, session },
        };
        shared
            .net
            .send_on(shared.me(), Addr::Server(server), state.conn_id, message);
        state.last_sent = now;
        Ok(ReplyReceiver {
            receiver,
            xid,
            shared: Arc::clone(shared),
        })
    }

    /// Counts `request` against the armed triggers; a trigger that fires arms its drop on this
    /// request, or hands any other fault to the injector.
    fn fire_triggers(&self, state: &mut State, request: &Request) {
        let (op, path) = match request {
            Request::Create { path, .. } => (OpKind::Create, path.as_str()),
            Request::Delete { path, .. } => (OpKind::Delete, path.as_str()),
            Request::SetData { path, .. } => (OpKind::SetData, path.as_str()),
            Request::GetData { path, .. } => (OpKind::GetData, path.as_str()),
            Request::GetChildren { path, .. } => (OpKind::GetChildren, path.as_str()),
            Request::Exists { path, .. } => (OpKind::Exists, path.as_str()),
            Request::Multi(_) => (OpKind::Multi, ""),
            Request::Sync { .. } => return,
        };
        let (triggers, injector) = &self.shared.triggers;
        let mut fired = Vec::new();
        triggers
            .lock()
            .expect("trigger mutex poisoned")
            .retain_mut(|armed| {
                let when = &mut armed.when;
                let matches = when.op == op
                    && path.starts_with(when.path_prefix.as_str())
                    && when.client.is_none_or(|c| c == self.shared.id);
                if !matches {
                    return true;
                }
                when.nth = when.nth.saturating_sub(1);
                if when.nth == 0 {
                    fired.push(armed.fault.clone());
                    return false;
                }
                true
            });
        for fault in fired {
            self.shared.record(HistoryEvent::Fault {
                description: format!("triggered: {fault:?}"),
            });
            match fault {
                Fault::DropRequest { client } if client == self.shared.id => {
                    state.faults.drop_requests += 1
                }
                Fault::DropReply { client } if client == self.shared.id => {
                    state.faults.drop_replies += 1
                }
                other => {
                    let _ = injector.send(other);
                }
            }
        }
    }

    async fn call(
        &self,
        request: Request,
        watch: Option<(WatchClass, String)>,
    ) -> Result<Reply, ZkError> {
        let xid = self.shared.lock().next_xid;
        let receiver = self.issue(Some(request), watch)?;
        let result = receiver.await.unwrap_or(Err(ZkError::ConnectionLoss));
        let outcome = match &result {
            Ok((zxid, reply)) => OpOutcome::Reply {
                reply: reply.clone(),
                zxid: *zxid,
            },
            Err(ZkError::ConnectionLoss) => OpOutcome::Unknown,
            Err(error) => OpOutcome::Failed(*error),
        };
        self.shared.record(HistoryEvent::Complete {
            client: self.shared.id,
            xid,
            outcome,
        });
        result.map(|(_, reply)| reply)
    }
}

fn watch_if(watch: bool, class: WatchClass, path: &str) -> Option<(WatchClass, String)> {
    watch.then(|| (class, path.to_owned()))
}

impl ZkClient for SimClient {
    fn session_id(&self) -> SessionId {
        self.shared.lock().session.unwrap_or_default()
    }

    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created, ZkError> {
        zkh_recipes::path::validate_create_path(path, mode.is_sequential())?;
        self.call(
            Request::Create {
                path: path.to_owned(),
                data: data.to_vec(),
                mode,
            },
            None,
        )
        .await?
        .into_created()
    }

    async fn delete(&self, path: &str, version: i32) -> Result<(), ZkError> {
        zkh_recipes::path::validate_delete_path(path)?;
        self.call(
            Request::Delete {
                path: path.to_owned(),
                version,
            },
            None,
        )
        .await?
        .into_deleted()
    }

    async fn exists(&self, path: &str, watch: bool) -> Result<Option<Stat>, ZkError> {
        zkh_recipes::path::validate_path(path)?;
        let request = Request::Exists {
            path: path.to_owned(),
            watch,
        };
        self.call(request, watch_if(watch, WatchClass::Exists, path))
            .await?
            .into_exists()
    }

    async fn get_data(&self, path: &str, watch: bool) -> Result<(Vec<u8>, Stat), ZkError> {
        zkh_recipes::path::validate_path(path)?;
        let request = Request::GetData {
            path: path.to_owned(),
            watch,
        };
        self.call(request, watch_if(watch, WatchClass::Data, path))
            .await?
            .into_data()
    }

    async fn get_children(&self, path: &str, watch: bool) -> Result<(Vec<String>, Stat), ZkError> {
        zkh_recipes::path::validate_path(path)?;
        let request = Request::GetChildren {
            path: path.to_owned(),
            watch,
        };
        self.call(request, watch_if(watch, WatchClass::Children, path))
            .await?
            .into_children()
    }

    async fn set_data(&self, path: &str, data: &[u8], version: i32) -> Result<Stat, ZkError> {
        zkh_recipes::path::validate_path(path)?;
        let request = Request::SetData {
            path: path.to_owned(),
            data: data.to_vec(),
            version,
        };
        self.call(request, None).await?.into_set_data()
    }

    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>, MultiError> {
        for op in ops {
            match op {
                Op::Create { path, mode, .. } => {
                    zkh_recipes::path::validate_create_path(path, mode.is_sequential())?
                }
                Op::Delete { path, .. } => zkh_recipes::path::validate_delete_path(path)?,
                Op::Check { path, .. } | Op::SetData { path, .. } => {
                    zkh_recipes::path::validate_path(path)?
                }
            }
        }
        self.call(Request::Multi(ops.to_vec()), None)
            .await?
            .into_multi()
    }

    async fn sync(&self, path: &str) -> Result<(), ZkError> {
        zkh_recipes::path::validate_path(path)?;
        self.call(
            Request::Sync {
                path: path.to_owned(),
            },
            None,
        )
        .await?
        .into_synced()
    }

    async fn next_event(&self) -> Option<ClientEvent> {
        loop {
            let ready = self.shared.events_ready.notified();
            {
                let mut state = self.shared.lock();
                if let Some(event) = Shared::take_event(&mut state) {
                    return Some(event);
                }
                if state.conn == Conn::Closed && state.delayed.is_empty() && state.events.is_empty()
                {
                    return None;
                }
            }
            ready.await;
        }
    }

    fn try_next_event(&self) -> Option<ClientEvent> {
        Shared::take_event(&mut self.shared.lock())
    }
}
