//! Helpers shared by the recipe tests on the in-memory client.
#![allow(dead_code, missing_docs)]

/// A single-threaded tokio runtime whose clock is paused: timers fire as soon as every task
/// waits, so retries and timeouts take no wall time.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a tokio runtime")
}
