//! A simulated ensemble with its client processes, and the fault injector.
//!
//! [`Cluster::start`] makes one madsim node per server (ids 1..=n) and waits for a leader.
//! [`Cluster::add_client`] makes a node per client process and connects a [`SimClient`] on it;
//! [`Cluster::spawn_on_client`] runs application code there, so that pausing or crashing the
//! process stops both the client library and the application, as in real life.
//!
//! [`Cluster::inject`] applies a [`Fault`] and schedules its end (a partition's duration, a
//! pause's), [`Cluster::heal`] ends every fault at once, and [`Cluster::run_faults`] drives a
//! [`FaultPlan`] through a fault phase: scripted faults at their times, random ones drawn from
//! the seed, triggered ones as clients report the events that fire them.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::{now, Instant};
use madsim::runtime::{Handle, NodeHandle};
use madsim::task::JoinHandle;
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use zkh_model::{History, HistoryEvent, ZkModel};
use zkh_recipes::{ZkClient, ZkError};

use crate::client::{ClientConfig, ClientFaults, LocalExpiry, SimClient};
use crate::fault::{Fault, FaultPlan, NodeRef, ServerRef, TriggeredFault};
use crate::net::Net;
use crate::protocol::Addr;
use crate::seed::{sub_rng, Subsystem};
use crate::server::{run_server, Disk, RoleSummary, ServerConfig, ServerDefects, ServerShared};
use zkh_model::guarantees::CommitLogs;

/// How a peer learns that a crashed process's connections broke (measured on a real ensemble:
/// clients of a killed leader were disconnected within 106 to 139 ms).
const CONNECTION_RESET_DELAY: Duration = Duration::from_millis(100);

/// The shape of a simulated ensemble.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// 1, 3 or 5 servers.
    pub servers: u32,
    /// ZooKeeper's `tickTime`.
    pub tick_ms: u64,
    /// ZooKeeper's `syncLimit`, in ticks.
    pub sync_limit_ticks: u64,
    /// The smallest session timeout granted (`minSessionTimeout`).
    pub min_session_timeout_ms: u64,
    /// The largest session timeout granted (`maxSessionTimeout`).
    pub max_session_timeout_ms: u64,
    /// One-way network latency, uniformly in this range.
    pub latency_us: Range<u64>,
    /// The longest random pause of a client before a reconnection attempt.
    pub reconnect_backoff_max_ms: u64,
    /// Faults of the servers' own code, for tests only (none by default).
    pub defects: ServerDefects,
    /// Whether clients give up on their sessions on their own while they cannot reconnect.
    pub local_expiry: LocalExpiry,
    /// How often the leader deletes empty containers (`znode.container.checkIntervalMs`).
    pub container_check_interval_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            servers: 3,
            tick_ms: 2000,
            sync_limit_ticks: 5,
            min_session_timeout_ms: 1000,
            max_session_timeout_ms: 40_000,
            latency_us: 200..2000,
            reconnect_backoff_max_ms: 1000,
            defects: ServerDefects::default(),
            local_expiry: LocalExpiry::Never,
            container_check_interval_ms: CONTAINER_CHECK_INTERVAL_MS,
        }
    }
}

pub use crate::fault::CONTAINER_CHECK_INTERVAL_MS;

struct ServerSlot {
    node: NodeHandle,
    shared: Arc<ServerShared>,
    up: bool,
}

struct ClientSlot {
    node: NodeHandle,
    client: SimClient,
    paused: bool,
    crashed: bool,
}

/// The end of a fault with a duration.
#[derive(Clone, Debug)]
enum Undo {
    Reconnect(Vec<(Addr, Addr)>),
    Resume(u32),
    Unslow(u32),
    Undelay(u32),
}

/// A running ensemble and its clients.
pub struct Cluster {
    seed: u64,
    config: ClusterConfig,
    net: Arc<Net>,
    history: Arc<Mutex<History>>,
    servers: Vec<ServerSlot>,
    clients: BTreeMap<u32, ClientSlot>,
    undo: BTreeMap<(Instant, u64), Undo>,
    undo_seq: u64,
    triggers: Arc<Mutex<Vec<TriggeredFault>>>,
    triggered_tx: UnboundedSender<Fault>,
    triggered_rx: UnboundedReceiver<Fault>,
    not_fired: Vec<String>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .expect("simulation mutex poisoned by a panicking task")
}

impl Cluster {
    /// Starts `config.servers` servers and waits (at most 30 simulated seconds) for a leader.
    ///
    /// # Panics
    /// On an ensemble size other than 1, 3 or 5, or if no leader is elected in time.
    pub async fn start(seed: u64, config: ClusterConfig) -> Cluster {
        assert!(
            matches!(config.servers, 1 | 3 | 5),
            "an ensemble has 1, 3 or 5 servers, not {}",
            config.servers
        );
        let net = Net::new(sub_rng(seed, Subsystem::Network), config.latency_us.clone());
        let history = Arc::new(Mutex::new(History::new()));
        crate::watchdog::arm(Arc::clone(&history));
        let server_config = ServerConfig {
            ensemble_size: config.servers,
            tick_ms: config.tick_ms,
            sync_limit_ticks: config.sync_limit_ticks,
            min_session_timeout_ms: config.min_session_timeout_ms,
            max_session_timeout_ms: config.max_session_timeout_ms,
            defects: config.defects,
            container_check_interval_ms: config.container_check_interval_ms,
        };
        let handle = Handle::current();
        let servers = (1..=config.servers)
            .map(|id| {
                let shared = Arc::new(ServerShared::default());
                let (net, node_shared, history, server_config) = (
                    Arc::clone(&net),
                    Arc::clone(&shared),
                    Arc::clone(&history),
                    server_config.clone(),
                );
                let node = handle
                    .create_node()
                    .name(format!("server-{id}"))
                    .init(move || {
                        run_server(
                            id,
                            server_config.clone(),
                            Arc::clone(&net),
                            Arc::clone(&node_shared),
                            Arc::clone(&history),
                        )
                    })
                    .build();
                ServerSlot {
                    node,
                    shared,
                    up: true,
                }
            })
            .collect();
        let (triggered_tx, triggered_rx) = unbounded_channel();
        let cluster = Cluster {
            seed,
            config,
            net,
            history,
            servers,
            clients: BTreeMap::new(),
            undo: BTreeMap::new(),
            undo_seq: 0,
            triggers: Arc::new(Mutex::new(Vec::new())),
            triggered_tx,
            triggered_rx,
            not_fired: Vec::new(),
        };
        assert!(
            cluster.wait_for_leader(30_000).await.is_some(),
            "no leader elected within 30 s of the start"
        );
        cluster
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The network.
    pub fn net(&self) -> &Arc<Net> {
        &self.net
    }

    /// The history recorded so far.
    pub fn history(&self) -> History {
        lock(&self.history).clone()
    }

    /// What each server applied, in order: the commit logs ZooKeeper's guarantees are judged
    /// against beside the history (`zkh_model::guarantees::judge`). Taken, not copied: called
    /// once, when the run is over.
    pub fn commit_logs(&self) -> CommitLogs {
        let applied = (self.servers.iter())
            .map(|slot| std::mem::take(&mut *lock(&slot.shared.applied)))
            .collect();
        let finals = (1..)
            .zip(&self.servers)
            .map(|(id, slot)| (id, lock(&slot.shared.disk).model.clone()))
            .collect();
        let around = (self.servers.iter())
            .map(|slot| std::mem::take(&mut *lock(&slot.shared.around)))
            .collect();
        CommitLogs {
            applied,
            finals,
            around,
        }
    }

    /// Appends to the history (for workloads: role changes, side effects).
    pub fn record(&self, event: HistoryEvent) {
        crate::log::record(&self.history, self.net.now_us(), event);
    }

    /// The shared history, for tasks that record on their own.
    pub fn history_handle(&self) -> Arc<Mutex<History>> {
        Arc::clone(&self.history)
    }

    /// Each server's role.
    pub fn roles(&self) -> Vec<RoleSummary> {
        self.servers
            .iter()
            .map(|s| {
                if s.up {
                    *lock(&s.shared.role)
                } else {
                    RoleSummary::Down
                }
            })
            .collect()
    }

    /// The current leader, if exactly one server leads.
    pub fn leader(&self) -> Option<u32> {
        let leaders: Vec<u32> = (1..)
            .zip(self.roles())
            .filter(|(_, r)| matches!(r, RoleSummary::Leading(_)))
            .map(|(id, _)| id)
            .collect();
        (leaders.len() == 1).then(|| leaders[0])
    }

    /// Waits, at most `within_ms`, until a leader leads a quorum of followers.
    pub async fn wait_for_leader(&self, within_ms: u64) -> Option<u32> {
        let deadline = now() + Duration::from_millis(within_ms);
        let quorum = self.config.servers as usize / 2 + 1;
        while now() < deadline {
            if let Some(leader) = self.leader() {
                let following = self
                    .roles()
                    .iter()
                    .filter(|r| **r == RoleSummary::Following(leader))
                    .count();
                if following + 1 >= quorum {
                    return Some(leader);
                }
            }
            madsim::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }

    /// A server's disk (its committed state), for tests that inspect replicas.
    pub fn disk(&self, server: u32) -> Disk {
        lock(&self.servers[server as usize - 1].shared.disk).clone()
    }

    /// Makes client process `id` and connects it, waiting at most `connect_wait_ms`.
    pub async fn add_client(
        &mut self,
        id: u32,
        session_timeout_ms: u64,
        new_session_after_expiry: bool,
    ) -> Result<SimClient, ZkError> {
        assert!(
            !self.clients.contains_key(&id),
            "client {id} exists already"
        );
        let node = Handle::current()
            .create_node()
            .name(format!("client-{id}"))
            .build();
        let config = ClientConfig {
            session_timeout_ms,
            servers: self.config.servers,
            reconnect_backoff_max_ms: self.config.reconnect_backoff_max_ms,
            new_session_after_expiry,
            local_expiry: self.config.local_expiry,
        };
        let (net, history) = (Arc::clone(&self.net), Arc::clone(&self.history));
        let rng = sub_rng(self.seed, Subsystem::Client(id));
        let (triggers, triggered) = (Arc::clone(&self.triggers), self.triggered_tx.clone());
        let wait = session_timeout_ms * 4;
        let connect = node.spawn(async move {
            SimClient::connect(id, config, net, history, rng, (triggers, triggered), wait).await
        });
        let client = connect
            .await
            .expect("the connecting task of a fresh client node is not killed")?;
        self.clients.insert(
            id,
            ClientSlot {
                node,
                client: client.clone(),
                paused: false,
                crashed: false,
            },
        );
        Ok(client)
    }

    /// Runs `future` on client process `id`'s node.
    pub fn spawn_on_client<F>(&self, id: u32, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.clients[&id].node.spawn(future)
    }

    /// Client `id`'s node, to spawn more of its process's tasks on (they stop when it crashes).
    pub fn client_node(&self, id: u32) -> NodeHandle {
        self.clients[&id].node.clone()
    }

    /// Client `id`'s handle.
    pub fn client(&self, id: u32) -> &SimClient {
        &self.clients[&id].client
    }

    fn resolve(&self, server: ServerRef) -> Option<u32> {
        let roles = self.roles();
        let find = |want: &dyn Fn(&RoleSummary) -> bool| {
            (1..)
                .zip(roles.iter())
                .find(|(_, r)| want(r))
                .map(|(id, _)| id)
        };
        match server {
            ServerRef::Id(id) => (1..=self.config.servers).contains(&id).then_some(id),
            ServerRef::Leader => self.leader(),
            ServerRef::Follower => find(&|r| matches!(r, RoleSummary::Following(_))),
            ServerRef::Down => find(&|r| *r == RoleSummary::Down),
        }
    }

    fn addrs(&self, side: &BTreeSet<NodeRef>) -> Vec<Addr> {
        let mut out = BTreeSet::new();
        for node in side {
            match node {
                NodeRef::Client(id) => {
                    out.insert(Addr::Client(*id));
                }
                NodeRef::Server(server) => {
                    out.extend(self.resolve(*server).map(Addr::Server));
                }
                NodeRef::AllServers => out.extend((1..=self.config.servers).map(Addr::Server)),
            }
        }
        out.into_iter().collect()
    }

    fn all_addrs(&self) -> Vec<Addr> {
        (1..=self.config.servers)
            .map(Addr::Server)
            .chain(self.clients.keys().map(|id| Addr::Client(*id)))
            .collect()
    }

    fn schedule_undo(&mut self, after_ms: u64, undo: Undo) {
        self.undo_seq += 1;
        self.undo.insert(
            (now() + Duration::from_millis(after_ms), self.undo_seq),
            undo,
        );
    }

    fn apply_undo(&mut self, undo: Undo) {
        match undo {
            Undo::Reconnect(links) => {
                for (from, to) in links {
                    self.net.restore(from, to);
                }
            }
            Undo::Resume(client) => {
                if let Some(slot) = self.clients.get_mut(&client) {
                    if slot.paused && !slot.crashed {
                        Handle::current().resume(slot.node.id());
                        slot.paused = false;
                    }
                }
            }
            Undo::Unslow(server) => {
                *lock(&self.servers[server as usize - 1].shared.apply_delay_ms) = 0
            }
            Undo::Undelay(client) => {
                if let Some(slot) = self.clients.get(&client) {
                    slot.client.set_watch_delay(0);
                }
            }
        }
    }

    /// Ends every fault whose time has come.
    pub fn end_due_faults(&mut self) {
        let now = now();
        while let Some(entry) = self.undo.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let undo = entry.remove();
            self.apply_undo(undo);
        }
    }

    /// Applies `fault` now, and says whether it was. A fault whose target does not exist (no
    /// leader at the moment, an unknown or crashed client) is recorded as skipped.
    pub async fn inject(&mut self, fault: &Fault) -> bool {
        let description = format!("{fault:?}");
        let applied = self.apply_fault(fault).await;
        let description = if applied {
            description
        } else {
            format!("skipped (no target): {description}")
        };
        self.record(HistoryEvent::Fault { description });
        applied
    }

    /// Arms `triggered` faults: from now on, client operations count against their triggers.
    /// Workloads arm them before their recipes start, so that a trigger on a recipe's very
    /// first operation fires; [`Cluster::run_faults`] injects what they fired.
    pub fn arm_triggers(&mut self, triggered: &[TriggeredFault]) {
        lock(&self.triggers).extend(triggered.iter().cloned());
    }

    /// Whether client `client`'s process was crashed (crashed clients stay dead).
    pub fn client_crashed(&self, client: u32) -> bool {
        self.clients.get(&client).is_some_and(|slot| slot.crashed)
    }

    /// The planned faults (scripted or triggered, not random) that did not happen: a trigger
    /// that never matched within the fault phase, a scripted fault due after it or without a
    /// target when due. Each is also in the history as a `Fault` entry starting "not fired".
    pub fn planned_faults_not_fired(&self) -> &[String] {
        &self.not_fired
    }

    /// Injects a fault a trigger fired; one without a target is a planned fault not fired.
    async fn inject_triggered(&mut self, fault: &Fault) {
        if !self.inject(fault).await {
            self.record_not_fired("triggered, but no target", fault);
        }
    }

    fn record_not_fired(&mut self, why: &str, fault: &Fault) {
        let description = format!("not fired ({why}): {fault:?}");
        self.not_fired.push(description.clone());
        self.record(HistoryEvent::Fault { description });
    }

    async fn apply_fault(&mut self, fault: &Fault) -> bool {
        let handle = Handle::current();
        match fault {
            Fault::DropRequest { client } => self.arm(
                *client,
                ClientFaults {
                    drop_requests: 1,
                    ..Default::default()
                },
            ),
            Fault::DropReply { client } => self.arm(
                *client,
                ClientFaults {
                    drop_replies: 1,
                    ..Default::default()
                },
            ),
            Fault::ClientSideExpiry { client } => match self.clients.get(client) {
                Some(slot) => {
                    slot.client.expire_locally();
                    true
                }
                None => false,
            },
            Fault::ExpireSession { client } => {
                let Some(session) = self
                    .clients
                    .get(client)
                    .map(|slot| slot.client.session_id())
                else {
                    return false;
                };
                let Some(leader) = self.leader() else {
                    return false;
                };
                lock(&self.servers[leader as usize - 1].shared.expire_now).push(session);
                true
            }
            Fault::Partition {
                a,
                b,
                one_way,
                duration_ms,
            } => {
                let (a, b) = (self.addrs(a), self.addrs(b));
                let mut links = Vec::new();
                for from in &a {
                    for to in &b {
                        links.push((*from, *to));
                        if !one_way {
                            links.push((*to, *from));
                        }
                    }
                }
                for (from, to) in &links {
                    self.net.cut(*from, *to);
                }
                self.schedule_undo(*duration_ms, Undo::Reconnect(links));
                true
            }
            Fault::KillServer { server } => {
                let Some(id) = self.resolve(*server) else {
                    return false;
                };
                let slot = &mut self.servers[id as usize - 1];
                if !slot.up {
                    return false;
                }
                handle.kill(slot.node.id());
                slot.up = false;
                *lock(&slot.shared.role) = RoleSummary::Down;
                self.net.detach(Addr::Server(id));
                let peers = self.all_addrs();
                self.net
                    .announce_death(Addr::Server(id), &peers, CONNECTION_RESET_DELAY);
                true
            }
            Fault::RestartServer { server } => {
                let Some(id) = self.resolve(*server) else {
                    return false;
                };
                let slot = &mut self.servers[id as usize - 1];
                if slot.up {
                    return false;
                }
                handle.restart(slot.node.id());
                slot.up = true;
                true
            }
            Fault::CrashClient { client } => {
                let Some(slot) = self.clients.get_mut(client) else {
                    return false;
                };
                if slot.crashed {
                    return false;
                }
                handle.kill(slot.node.id());
                slot.crashed = true;
                // A crashed process holds no role, whatever it last reported: "leader
                // elected" must not count a dead leader as one.
                self.record(HistoryEvent::Role {
                    client: *client,
                    role: "none".to_owned(),
                    token: None,
                });
                self.net.detach(Addr::Client(*client));
                let peers = self.all_addrs();
                self.net
                    .announce_death(Addr::Client(*client), &peers, CONNECTION_RESET_DELAY);
                true
            }
            Fault::PauseClient {
                client,
                duration_ms,
            } => {
                let Some(slot) = self.clients.get_mut(client) else {
                    return false;
                };
                if slot.paused || slot.crashed {
                    return false;
                }
                handle.pause(slot.node.id());
                slot.paused = true;
                self.schedule_undo(*duration_ms, Undo::Resume(*client));
                true
            }
            Fault::SlowFollower {
                server,
                delay_ms,
                duration_ms,
            } => {
                let Some(id) = self.resolve(*server) else {
                    return false;
                };
                *lock(&self.servers[id as usize - 1].shared.apply_delay_ms) = *delay_ms;
                self.schedule_undo(*duration_ms, Undo::Unslow(id));
                true
            }
            Fault::DelayWatch {
                client,
                delay_ms,
                duration_ms,
            } => {
                let Some(slot) = self.clients.get(client) else {
                    return false;
                };
                slot.client.set_watch_delay(*delay_ms);
                self.schedule_undo(*duration_ms, Undo::Undelay(*client));
                true
            }
            Fault::ReapContainers => {
                let Some(leader) = self.leader() else {
                    return false;
                };
                *lock(&self.servers[leader as usize - 1].shared.reap_now) = true;
                true
            }
            Fault::DataLoss => {
                let restarted = {
                    let disks: Vec<_> = (self.servers.iter())
                        .map(|slot| lock(&slot.shared.disk))
                        .collect();
                    ZkModel::restarted_empty(disks.iter().map(|disk| &disk.model))
                };
                for id in 1..=self.config.servers {
                    let slot = &mut self.servers[id as usize - 1];
                    if slot.up {
                        handle.kill(slot.node.id());
                        self.net.detach(Addr::Server(id));
                    }
                    *lock(&slot.shared.disk) = Disk {
                        model: restarted.clone(),
                        ..Disk::default()
                    };
                    *lock(&slot.shared.role) = RoleSummary::Down;
                }
                let peers = self.all_addrs();
                for id in 1..=self.config.servers {
                    self.net
                        .announce_death(Addr::Server(id), &peers, CONNECTION_RESET_DELAY);
                    handle.restart(self.servers[id as usize - 1].node.id());
                    self.servers[id as usize - 1].up = true;
                }
                true
            }
        }
    }

    fn arm(&self, client: u32, faults: ClientFaults) -> bool {
        match self.clients.get(&client) {
            Some(slot) if !slot.crashed => {
                slot.client.arm(faults);
                true
            }
            _ => false,
        }
    }

    /// Ends every fault: partitions, pauses, slow followers and delayed watches end, armed drops
    /// are disarmed, killed servers restart. Crashed clients stay dead.
    pub fn heal(&mut self) {
        for slot in self.clients.values() {
            slot.client.disarm();
        }
        let pending = std::mem::take(&mut self.undo);
        for (_, undo) in pending {
            self.apply_undo(undo);
        }
        self.net.heal_all();
        let handle = Handle::current();
        for slot in &mut self.servers {
            if !slot.up {
                handle.restart(slot.node.id());
                slot.up = true;
            }
        }
        self.record(HistoryEvent::Fault {
            description: "heal".to_owned(),
        });
    }

    /// Drives `plan` for a fault phase of `phase_ms`: scripted and random faults at their
    /// times, triggered faults as they fire (arm them first with [`Cluster::arm_triggers`]), and
    /// the ends of faults with a duration. Planned faults that did not happen are recorded
    /// ([`Cluster::planned_faults_not_fired`]), and the triggers are disarmed.
    pub async fn run_faults(&mut self, plan: &FaultPlan, phase_ms: u64) {
        let start = now();
        let clients = self.clients.keys().max().map_or(0, |max| max + 1);
        // (when, planned, what): random faults are drawn, not planned, and one that finds no
        // target (a pause of a crashed client) is noise, not a scenario that missed its fault.
        let mut schedule: Vec<(u64, bool, Fault)> = plan
            .scripted
            .iter()
            .map(|f| (f.at_ms, true, f.fault.clone()))
            .collect();
        if let Some(random) = &plan.random {
            let mut rng: ChaCha8Rng = sub_rng(self.seed, Subsystem::Faults);
            let drawn = random.draw(&mut rng, phase_ms, clients);
            schedule.extend(drawn.into_iter().map(|f| (f.at_ms, false, f.fault)));
        }
        schedule.sort_by_key(|(at_ms, _, _)| *at_ms);
        let end = start + Duration::from_millis(phase_ms);
        let mut next = 0;
        loop {
            let now = now();
            self.end_due_faults();
            while next < schedule.len() && start + Duration::from_millis(schedule[next].0) <= now {
                let (_, planned, fault) = schedule[next].clone();
                if !self.inject(&fault).await && planned {
                    self.record_not_fired("no target when due", &fault);
                }
                next += 1;
            }
            while let Ok(fault) = self.triggered_rx.try_recv() {
                self.inject_triggered(&fault).await;
            }
            if now >= end {
                break;
            }
            let mut wake = end;
            if let Some((at_ms, _, _)) = schedule.get(next) {
                wake = wake.min(start + Duration::from_millis(*at_ms));
            }
            if let Some(((at, _), _)) = self.undo.first_key_value() {
                wake = wake.min(*at);
            }
            tokio::select! {
                // Branches are polled in order: the default random order would be entropy from outside
                // the seed.
                biased;
                fault = self.triggered_rx.recv() => {
                    if let Some(fault) = fault {
                        self.inject_triggered(&fault).await;
                    }
                }
                _ = madsim::time::sleep_until(wake) => {}
            }
        }
        for (_, planned, fault) in schedule.split_off(next) {
            if planned {
                self.record_not_fired("due after the fault phase", &fault);
            }
        }
        let unmatched = std::mem::take(&mut *lock(&self.triggers));
        for armed in unmatched {
            self.record_not_fired("its trigger never matched", &armed.fault);
        }
    }
}

/// Ends every server and client process when the run's cluster goes. madsim does not cancel a
/// runtime's tasks when the runtime is dropped, and a task that holds a handle to its own node
/// is never freed (madsim issue 242): without this, every seed of a sweep left its processes in
/// memory, about 200 KiB a seed. Killing a node wakes its tasks, and the executor, or the
/// runtime's drop, then drops them.
impl Drop for Cluster {
    fn drop(&mut self) {
        let Ok(handle) = Handle::try_current() else {
            return;
        };
        for slot in &self.servers {
            handle.kill(slot.node.id());
        }
        for slot in self.clients.values() {
            handle.kill(slot.node.id());
        }
    }
}

/// Runs `future` beside the calling task, on the caller's node: a client process's second task
/// (a recipe's driver beside its application), stopped with the node when its process crashes.
pub fn spawn_beside<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    madsim::task::spawn(future)
}
