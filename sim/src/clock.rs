//! The simulated clock: the only time the simulator reads.
//!
//! Everything in this crate takes the time from madsim's runtime, never from the machine, so a
//! run's schedule depends on its seed alone.

pub use madsim::time::Instant;

/// The simulated time now.
pub fn now() -> Instant {
    madsim::time::TimeHandle::current().now_instant()
}

/// The recipes driver's clock in the simulator: madsim's timers.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimClock;

impl zkh_recipes::driver::Clock for SimClock {
    fn sleep(&self, ms: u64) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(madsim::time::sleep(std::time::Duration::from_millis(ms)))
    }
}
