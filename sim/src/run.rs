//! Running one seed: a fresh thread, a madsim runtime seeded with the seed, a time limit.
//!
//! Each seed runs on its own OS thread because madsim seeds std's hasher per thread; a fresh
//! thread gives every seed the same start, whatever ran before it.
//!
//! [`try_run_seed_watched`] also tells a run that made no progress apart from a crash: one the
//! watchdog ended (`crate::watchdog`), and one that outlived its wall-time limit, a loop that
//! never returns to the executor. That thread cannot be stopped from outside: it is left to run
//! on, detached, until the process ends, and the caller goes on with the next seed.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use crate::watchdog::Stuck;

/// Why a seed's run did not return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeedFailure {
    /// It panicked (a bug of the harness or of the recipe's code), or madsim ended it (its
    /// simulated-time limit, a deadlock): the message.
    Panicked(String),
    /// It made no progress in simulated time (the watchdog), or outlived its wall-time limit.
    Stuck(Stuck),
}

impl std::fmt::Display for SeedFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SeedFailure::Panicked(message) => f.write_str(message),
            SeedFailure::Stuck(stuck) => write!(f, "{stuck}"),
        }
    }
}

/// Runs `scenario(seed)` in a fresh madsim runtime on a fresh thread, with at most
/// `time_limit_s` simulated seconds, and returns its result.
///
/// # Panics
/// If the scenario panics (the panic is re-raised with the seed), or deadlocks (madsim reports
/// that no task can make progress).
pub fn run_seed<F, Fut, T>(seed: u64, time_limit_s: u64, scenario: F) -> T
where
    F: FnOnce(u64) -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
    T: Send + 'static,
{
    match try_run_seed(seed, time_limit_s, scenario) {
        Ok(result) => result,
        Err(message) => panic!(
            "seed {seed} failed: {message}\nreplay it alone with ZKH_SEED={seed} before the same \
             command (the simulator's tests loop over `seed::seeds`, which honours it)"
        ),
    }
}

/// [`run_seed`], with a panic inside the run (or its time limit, or a deadlock) returned as
/// its message instead of re-raised.
pub fn try_run_seed<F, Fut, T>(seed: u64, time_limit_s: u64, scenario: F) -> Result<T, String>
where
    F: FnOnce(u64) -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
    T: Send + 'static,
{
    try_run_seed_watched(seed, time_limit_s, None, scenario).map_err(|failure| failure.to_string())
}

/// [`try_run_seed`], telling a stuck run apart (see the module docs): within `wall_limit` of
/// wall time, if one is given.
pub fn try_run_seed_watched<F, Fut, T>(
    seed: u64,
    time_limit_s: u64,
    wall_limit: Option<Duration>,
    scenario: F,
) -> Result<T, SeedFailure>
where
    F: FnOnce(u64) -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
    T: Send + 'static,
{
    let (sender, receiver) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name(format!("seed-{seed}"))
        .spawn(move || {
            crate::watchdog::reset();
            let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
                let mut runtime =
                    madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
                runtime.set_time_limit(Duration::from_secs(time_limit_s));
                crate::log::set_seed(seed);
                runtime.block_on(scenario(seed))
            }));
            // The receiver is gone only if the caller stopped waiting (the wall-time limit).
            let _ = sender.send(ran.map_err(failure));
        })
        .expect("spawn a thread for the seed");
    let outcome = match wall_limit {
        None => receiver.recv().ok(),
        Some(limit) => receiver.recv_timeout(limit).ok(),
    };
    match outcome {
        Some(ran) => {
            let _ = thread.join();
            ran
        }
        None => {
            let limit = wall_limit.unwrap_or_default();
            Err(SeedFailure::Stuck(Stuck {
                reason: format!(
                    "the run took more than {} s of wall time (a loop that neither waits nor \
                     calls the client; its thread is left running)",
                    limit.as_secs()
                ),
                at_ms: 0,
                running: "unknown: the run never returned to the simulator".to_owned(),
                last_events: Vec::new(),
            }))
        }
    }
}

/// A panic's payload as a failure: the watchdog's [`Stuck`], or a message.
fn failure(panic: Box<dyn std::any::Any + Send>) -> SeedFailure {
    if let Some(stuck) = panic.downcast_ref::<Stuck>() {
        return SeedFailure::Stuck(stuck.clone());
    }
    SeedFailure::Panicked(
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a non-text panic".to_owned()),
    )
}
