//! What a recipe's client process gets from the host: its client, its seeded random stream,
//! simulated time, the history to record what it did, more tasks on its node, the state the
//! run's processes share outside ZooKeeper, and the moment every process had started.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use rand_chacha::ChaCha8Rng;
use zkh_model::{History, HistoryEvent};

/// The ZooKeeper client a recipe's process uses: the simulated one in the simulated build (the
/// in-memory one in the normal build, where nothing runs a recipe: it is there so that the code
/// compiles for editors).
#[cfg(madsim)]
pub type Client = zkh_sim::SimClient;
/// See the simulated build's definition.
#[cfg(not(madsim))]
pub type Client = zkh_model::MemoryClient;

/// What the host hands every client process of one run alike.
#[derive(Clone)]
pub(crate) struct RunShared {
    /// The run's seed.
    pub(crate) seed: u64,
    /// The history.
    pub(crate) history: Arc<Mutex<History>>,
    /// The simulated network (its clock).
    #[cfg(madsim)]
    pub(crate) net: Arc<zkh_sim::net::Net>,
    /// State the processes share, one per type ([`ClientCtx::shared`]).
    state: Arc<Mutex<BTreeMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
    /// What each client's recipe knows of its own ephemeral nodes ([`ClientCtx::knows`]).
    pub(crate) knowledge: Arc<Mutex<Vec<(u32, zkh_recipes::driver::Knowledge)>>>,
    /// The moment every process had started, once it has come.
    pub(crate) started: zkh_sim::moment::Moment,
}

impl RunShared {
    /// What the clients of the run of `seed` share (the host announces on `started` the moment
    /// every process has started).
    #[cfg(madsim)]
    pub(crate) fn new(
        seed: u64,
        history: Arc<Mutex<History>>,
        net: Arc<zkh_sim::net::Net>,
    ) -> Self {
        RunShared {
            seed,
            history,
            net,
            state: Arc::default(),
            knowledge: Arc::default(),
            started: zkh_sim::moment::Moment::new(),
        }
    }
}

/// A task of a client process, spawned on its node.
pub(crate) type Spawn = Arc<dyn Fn(super::ClientRun) + Send + Sync>;

/// One client process's view of the run (see the module docs of `custom` on determinism).
pub struct ClientCtx {
    id: u32,
    client: Arc<Client>,
    rng: ChaCha8Rng,
    run: RunShared,
    spawn: Spawn,
}

impl ClientCtx {
    /// A context for client `id` of the run `run`, whose tasks `spawn` starts on its node (the
    /// host makes these).
    #[cfg_attr(not(madsim), allow(dead_code))]
    pub(crate) fn new(
        id: u32,
        client: Arc<Client>,
        rng: ChaCha8Rng,
        run: RunShared,
        spawn: Spawn,
    ) -> Self {
        ClientCtx {
            id,
            client,
            rng,
            run,
            spawn,
        }
    }

    /// The run's seed (its random streams are [`rng`](Self::rng)'s to draw from; this is for
    /// names that must differ from run to run, as a lock node's unique prefix).
    pub fn seed(&self) -> u64 {
        self.run.seed
    }

    /// Runs `task` as another task of this client process: it starts now, beside the one the
    /// host spawned ([`SimRecipe::client`](super::SimRecipe::client)'s), and stops with the
    /// process when it crashes or the run ends. A recipe's driver is one (`zkh_recipes::driver`).
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        (self.spawn)(Box::pin(task));
    }

    /// State the run's client processes share outside ZooKeeper, one per type `T` (the
    /// resource a leader writes to, the stock the lock's holders sell): the run's first call
    /// makes it with `make`, every later call, any client's, gets the same. A fresh run starts
    /// with none.
    pub fn shared<T: Send + 'static>(&self, make: impl FnOnce() -> T) -> Arc<Mutex<T>> {
        let mut state = self.run.state.lock().expect("the shared state's lock");
        let entry = state
            .entry(TypeId::of::<Mutex<T>>())
            .or_insert_with(|| Arc::new(Mutex::new(make())) as Arc<dyn Any + Send + Sync>);
        Arc::clone(entry)
            .downcast::<Mutex<T>>()
            .unwrap_or_else(|_| unreachable!("the state of a type is kept under its own id"))
    }

    /// Declares what this client's recipe knows of its own ephemeral nodes (the recipes' driver
    /// keeps it: `Handle::knowledge`), so that the host judges "claims are owned" and "no
    /// orphaned ephemerals" on it when the run ends (a crashed process's is left out).
    pub fn knows(&self, knowledge: zkh_recipes::driver::Knowledge) {
        let mut known = self.run.knowledge.lock().expect("the knowledge's lock");
        known.push((self.id, knowledge));
    }

    /// Waits until every client process of the run has connected and been started, and gives
    /// that moment, in simulated microseconds since the run started: the run's origin (as a
    /// cron's cycles count from it), which properties see as
    /// [`Moments::started_us`](super::Moments::started_us).
    pub async fn every_client_started_us(&self) -> u64 {
        self.run.started.wait_us().await
    }

    /// The history (the built-ins' applications record into it directly).
    #[cfg(madsim)]
    pub(crate) fn history(&self) -> &Arc<Mutex<History>> {
        &self.run.history
    }

    /// The simulated network (the built-ins' applications read its clock).
    #[cfg(madsim)]
    pub(crate) fn net(&self) -> &Arc<zkh_sim::net::Net> {
        &self.run.net
    }

    /// This client process's number, from 0 (the scenario's faults name clients by it).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Its ZooKeeper client (a [`ZkClient`](zkh_recipes::ZkClient)).
    pub fn client(&self) -> &Arc<Client> {
        &self.client
    }

    /// Its random stream, drawn from the run's seed alone.
    pub fn rng(&mut self) -> &mut ChaCha8Rng {
        &mut self.rng
    }

    /// Simulated milliseconds since the run started.
    pub fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    fn now_us(&self) -> u64 {
        #[cfg(madsim)]
        return self.run.net.now_us();
        #[cfg(not(madsim))]
        0
    }

    /// The clock to run a machine under the recipes' driver with (`zkh_recipes::driver::start`,
    /// `Lock::start`, ...): simulated time, as [`sleep_ms`](Self::sleep_ms)'s. (In the normal
    /// build, where nothing runs a recipe, tokio's.)
    pub fn clock(&self) -> Arc<dyn zkh_recipes::driver::Clock> {
        #[cfg(madsim)]
        return Arc::new(zkh_sim::clock::SimClock);
        #[cfg(not(madsim))]
        Arc::new(zkh_recipes::real::TokioClock)
    }

    /// Waits `ms` simulated milliseconds.
    pub async fn sleep_ms(&self, ms: u64) {
        #[cfg(madsim)]
        zkh_sim::clock::sleep(std::time::Duration::from_millis(ms)).await;
        #[cfg(not(madsim))]
        let _ = ms;
    }

    /// Records `event` in the run's history, at the simulated time now: what the recipe did (a
    /// side effect on a resource, a role taken or given up), for its properties to judge.
    pub fn record(&self, event: HistoryEvent) {
        #[cfg(madsim)]
        zkh_sim::workload::record(&self.run.history, &self.run.net, event);
        #[cfg(not(madsim))]
        self.run
            .history
            .lock()
            .expect("the history's lock")
            .push(self.now_us(), event);
    }
}
