//! The watchdog of a seed: a run that makes no progress in simulated time ends as *stuck*,
//! naming what was running, instead of hanging the command for ever.
//!
//! madsim runs every ready task until none is left, then moves the clock to the next timer.
//! A recipe that never waits for a timer can keep that from happening for ever, two ways:
//!
//! - **A loop that never yields.** The simulated client fails a request made while it is not
//!   connected at once (`ConnectionLoss`, as the Java client does), without awaiting anything.
//!   A recipe that retries that in a loop with no pause stays inside one poll of its task; the
//!   executor never gets control back and the clock never moves. The client counts the requests
//!   made at one simulated instant ([`note_request`]): past [`REQUESTS_AT_ONE_INSTANT`], the run
//!   is stuck.
//! - **A loop that yields but waits for nothing** (a `yield_now` loop, two tasks handing a
//!   message back and forth). madsim advances the clock by 50 to 100 ns after each poll, so the
//!   clock does move, but by nothing a timer needs: 600 simulated seconds would take eight
//!   billion polls. Every task the host spawns for a recipe is [`Watched`]: every
//!   [`POLL_WINDOW`] polls of watched tasks, it compares the simulated time that passed with
//!   [`POLL_WINDOW`] microseconds (a poll a microsecond, ten times madsim's jitter; a real
//!   workload waits milliseconds on the network between a handful of polls). [`STALLED_WINDOWS`]
//!   such windows in a row, and the run is stuck.
//!
//! A stuck run panics with a [`Stuck`] payload (the simulated time, what was running, and the
//! last events of the run's history), which `crate::run::try_run_seed_watched` returns as its
//! own failure, so that a sweep reports the seed and goes on with the next one. A loop that
//! neither calls the client nor yields (`loop {}`) cannot be seen from inside the simulation:
//! the seed's wall-time limit catches it from outside (`crate::run`).
//!
//! The counters are per thread, and every seed runs on a thread of its own: one seed's count
//! never reaches another's. They only count, so a run that is not stuck is the same run, event
//! for event, with or without them.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use zkh_model::History;

/// Requests one client may make at one simulated instant before the run is stuck. A recipe
/// makes a handful at once (a create and the reads after it); each that reaches a server waits
/// on the network.
pub const REQUESTS_AT_ONE_INSTANT: u64 = 100_000;

/// The polls of watched tasks between two looks at the clock.
pub const POLL_WINDOW: u64 = 65_536;

/// Windows in a row in which the clock moved by less than a microsecond a poll, before the run
/// is stuck (about a million polls).
pub const STALLED_WINDOWS: u32 = 16;

/// The history entries a stuck run's report shows.
const LAST_EVENTS: usize = 12;

/// Why a run was stuck: the payload of its panic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// What made no progress, in words.
    pub reason: String,
    /// The simulated time, in milliseconds since the run began.
    pub at_ms: u64,
    /// What was running: the looping client, or the watched task being polled.
    pub running: String,
    /// The last events of the run's history, oldest first, each stamped with its time.
    pub last_events: Vec<String>,
}

impl fmt::Display for Stuck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stuck at {} ms of simulated time: {}; running: {}",
            self.at_ms, self.reason, self.running
        )
    }
}

#[derive(Default)]
struct Watch {
    /// Per client: the instant of its last request (µs), and the requests made at it.
    requests: Vec<(u32, u64, u64)>,
    polls: u64,
    window_started_us: u64,
    stalled_windows: u32,
}

thread_local! {
    static WATCH: RefCell<Watch> = RefCell::new(Watch::default());
    static HISTORY: RefCell<Option<Arc<Mutex<History>>>> = const { RefCell::new(None) };
    static DISARMED: Cell<bool> = const { Cell::new(false) };
}

/// Starts watching this thread's run afresh, with `history` for a stuck report's last events.
pub fn arm(history: Arc<Mutex<History>>) {
    WATCH.with(|watch| *watch.borrow_mut() = Watch::default());
    HISTORY.with(|cell| *cell.borrow_mut() = Some(history));
}

/// Simulated microseconds since the runtime started.
fn elapsed_us() -> u64 {
    let elapsed = madsim::time::TimeHandle::current().elapsed();
    u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
}

/// Client `client` makes a request now: past [`REQUESTS_AT_ONE_INSTANT`] at one instant, the
/// run is stuck.
pub fn note_request(client: u32) {
    let now_us = elapsed_us();
    let count = WATCH.with(|watch| {
        let mut watch = watch.borrow_mut();
        let at = watch.requests.iter().position(|(id, ..)| *id == client);
        let entry = match at {
            Some(index) => &mut watch.requests[index],
            None => {
                watch.requests.push((client, now_us, 0));
                watch.requests.last_mut().expect("just pushed")
            }
        };
        if entry.1 != now_us {
            *entry = (client, now_us, 0);
        }
        entry.2 += 1;
        entry.2
    });
    if count > REQUESTS_AT_ONE_INSTANT {
        stuck(
            format!(
                "client {client} made {REQUESTS_AT_ONE_INSTANT} requests at one simulated \
                 instant (a retry loop with no pause: every request failed at once)"
            ),
            format!("client {client}'s process, calling its client in a loop"),
        );
    }
}

/// One poll of watched task `name` (see the module docs).
fn note_poll(name: &str) {
    let stalled = WATCH.with(|watch| {
        let mut watch = watch.borrow_mut();
        watch.polls += 1;
        if watch.polls % POLL_WINDOW != 0 {
            return false;
        }
        let now_us = elapsed_us();
        let moved_us = now_us.saturating_sub(watch.window_started_us);
        watch.window_started_us = now_us;
        if moved_us < POLL_WINDOW {
            watch.stalled_windows += 1;
        } else {
            watch.stalled_windows = 0;
        }
        watch.stalled_windows >= STALLED_WINDOWS
    });
    if stalled {
        let polls = POLL_WINDOW * u64::from(STALLED_WINDOWS);
        stuck(
            format!(
                "{polls} polls of the recipe's tasks moved the clock by less than a microsecond \
                 each (tasks that yield to each other but wait for no timer)"
            ),
            name.to_owned(),
        );
    }
}

/// Ends the run as stuck (a panic with a [`Stuck`] payload), once.
fn stuck(reason: String, running: String) {
    let now_us = elapsed_us();
    if DISARMED.with(|disarmed| disarmed.replace(true)) {
        return;
    }
    let last_events = HISTORY.with(|cell| {
        let history = cell.borrow();
        let Some(history) = history.as_ref() else {
            return Vec::new();
        };
        let Ok(history) = history.try_lock() else {
            return vec!["(the history was locked)".to_owned()];
        };
        let entries = history.entries();
        let from = entries.len().saturating_sub(LAST_EVENTS);
        (entries[from..].iter())
            .map(|entry| format!("{} ms: {}", entry.at_us / 1000, entry.event))
            .collect()
    });
    std::panic::panic_any(Stuck {
        reason,
        at_ms: now_us / 1000,
        running,
        last_events,
    });
}

/// Clears this thread's watchdog, for a fresh seed on a reused thread.
pub(crate) fn reset() {
    WATCH.with(|watch| *watch.borrow_mut() = Watch::default());
    HISTORY.with(|cell| *cell.borrow_mut() = None);
    DISARMED.with(|disarmed| disarmed.set(false));
}

/// A task whose polls the watchdog counts (see the module docs).
pub struct Watched<F> {
    name: String,
    inner: Pin<Box<F>>,
}

/// `future`, watched under `name` (what a stuck report says was running).
pub fn watched<F: Future>(name: impl Into<String>, future: F) -> Watched<F> {
    Watched {
        name: name.into(),
        inner: Box::pin(future),
    }
}

impl<F: Future> Future for Watched<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        note_poll(&self.name);
        self.inner.as_mut().poll(cx)
    }
}
