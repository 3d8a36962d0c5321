//! Logs in simulated time: every history event is also a `tracing` event, and [`SimTime`]
//! stamps log lines with the simulated clock of the run that wrote them.
//!
//! A run's history is the record a report keeps; the log is for watching a run as it goes
//! (`RUST_LOG=debug zkharness run ...`). Both come from `record`, the one place the
//! simulator appends to a history, so they cannot disagree. The events go to the target
//! `zkh_sim::history` at `DEBUG`, each with the run's seed (which [`crate::run::try_run_seed`]
//! sets for its thread), so lines from parallel seeds of a sweep can be told apart. (A span
//! would not do: madsim polls each simulated node's tasks inside a root span of its own.)
//!
//! With no subscriber, or one that filters `DEBUG` out, a `tracing` event costs one relaxed
//! atomic load: recording stays as cheap as before.

use std::cell::Cell;
use std::fmt;
use std::sync::Mutex;

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use zkh_model::{History, HistoryEvent};

thread_local! {
    static SEED: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Names the seed that this thread runs, for the log lines of its events.
pub(crate) fn set_seed(seed: u64) {
    SEED.with(|cell| cell.set(Some(seed)));
}

/// Appends `event` at `at_us` to `history`, and logs it.
pub(crate) fn record(history: &Mutex<History>, at_us: u64, event: HistoryEvent) {
    tracing::debug!(
        target: "zkh_sim::history",
        seed = SEED.with(Cell::get),
        at_us,
        "{event}"
    );
    history
        .lock()
        .expect("history mutex poisoned")
        .push(at_us, event);
}

/// A `tracing-subscriber` timer that prints the simulated time of the current run, as seconds
/// with microseconds (`  12.345678s`), or `-` outside a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimTime;

impl FormatTime for SimTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        match madsim::time::TimeHandle::try_current() {
            Some(time) => {
                let elapsed = time.elapsed();
                write!(
                    w,
                    "{:>4}.{:06}s",
                    elapsed.as_secs(),
                    elapsed.subsec_micros()
                )
            }
            None => write!(w, "{:>11}", "-"),
        }
    }
}
