//! The recorder of a real client's history: the wall clock from its creation is the only time a
//! real run has, so it lives here, on the real side, not in `zkh-model` (which reads no clock).
//! What it records, and in what order, is `zkh_model::probe`'s to say.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zkh_model::history::{History, HistoryEvent};
use zkh_model::probe::{outcome, Recorder};
use zkh_recipes::{ClientEvent, Request, Response, ZkError};

/// Records a real client's requests, answers and events into one history, timed by the wall
/// clock from its creation (a real run has no other time).
pub struct HistoryRecorder {
    start: Instant,
    /// The same moment as `start`, in microseconds since the Unix epoch: what another process
    /// recording the same run is told ([`HistoryRecorder::starting_at`]).
    start_unix_us: u64,
    state: Mutex<(History, u64)>,
}

impl Default for HistoryRecorder {
    fn default() -> Self {
        HistoryRecorder::starting_at(unix_now_us())
    }
}

/// Microseconds since the Unix epoch, now.
fn unix_now_us() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or(0, |d| d.as_micros() as u64)
}

impl HistoryRecorder {
    /// A recorder whose time 0 is `start_unix_us` (microseconds since the Unix epoch): another
    /// process's recorder of the same run, so that their histories merge by time.
    pub fn starting_at(start_unix_us: u64) -> HistoryRecorder {
        let ago = Duration::from_micros(unix_now_us().saturating_sub(start_unix_us));
        let now = Instant::now();
        HistoryRecorder {
            start: now.checked_sub(ago).unwrap_or(now),
            start_unix_us,
            state: Mutex::new((History::new(), 0)),
        }
    }

    /// Its time 0, in microseconds since the Unix epoch.
    pub fn start_unix_us(&self) -> u64 {
        self.start_unix_us
    }

    /// Appends `event` now.
    pub fn record(&self, event: HistoryEvent) {
        let mut state = self.lock();
        // Taken under the lock, so that the history's times never go back.
        let at_us = self.start.elapsed().as_micros() as u64;
        state.0.push(at_us, event);
    }

    /// The history so far.
    pub fn history(&self) -> History {
        self.lock().0.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (History, u64)> {
        self.state
            .lock()
            .expect("history mutex poisoned: a panic while recording")
    }
}

impl Recorder for HistoryRecorder {
    fn invoke(&self, client: u32, session: zkh_recipes::SessionId, request: &Request) -> u64 {
        let xid = {
            let mut state = self.lock();
            state.1 += 1;
            state.1
        };
        let request = request.clone();
        self.record(HistoryEvent::Invoke {
            client,
            session,
            xid,
            request,
        });
        xid
    }

    fn complete(
        &self,
        client: u32,
        xid: u64,
        events: Vec<ClientEvent>,
        result: &Result<Response, ZkError>,
    ) {
        for event in events {
            self.record(match event {
                ClientEvent::Watch(event) => HistoryEvent::Watch { client, event },
                ClientEvent::Session(event) => HistoryEvent::Session { client, event },
            });
        }
        self.record(HistoryEvent::Complete {
            client,
            xid,
            outcome: outcome(result),
        });
    }
}
