//! What a recipe's client process gets from the host: its client, its seeded random stream,
//! simulated time, and the history to record what it did.

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

/// One client process's view of the run (see the module docs of `custom` on determinism).
pub struct ClientCtx {
    id: u32,
    client: Arc<Client>,
    rng: ChaCha8Rng,
    history: Arc<Mutex<History>>,
    #[cfg(madsim)]
    net: Arc<zkh_sim::net::Net>,
}

impl ClientCtx {
    /// A context for client `id` (the host makes these).
    #[cfg(madsim)]
    pub(crate) fn new(
        id: u32,
        client: Arc<Client>,
        rng: ChaCha8Rng,
        history: Arc<Mutex<History>>,
        net: Arc<zkh_sim::net::Net>,
    ) -> Self {
        ClientCtx {
            id,
            client,
            rng,
            history,
            net,
        }
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
        return self.net.now_us();
        #[cfg(not(madsim))]
        0
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
        zkh_sim::workload::record(&self.history, &self.net, event);
        #[cfg(not(madsim))]
        self.history
            .lock()
            .expect("the history's lock")
            .push(self.now_us(), event);
    }
}
