//! Running one seed: a fresh thread, a madsim runtime seeded with the seed, a time limit.
//!
//! Each seed runs on its own OS thread because madsim seeds std's hasher per thread; a fresh
//! thread gives every seed the same start, whatever ran before it.

use std::future::Future;
use std::time::Duration;

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
    let thread = std::thread::Builder::new()
        .name(format!("seed-{seed}"))
        .spawn(move || {
            let mut runtime =
                madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
            runtime.set_time_limit(Duration::from_secs(time_limit_s));
            crate::log::set_seed(seed);
            runtime.block_on(scenario(seed))
        });
    thread
        .expect("spawn a thread for the seed")
        .join()
        .map_err(|panic| {
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a non-text panic".to_owned())
        })
}
