//! The simulated clock: the only time the simulator reads.
//!
//! Everything in this crate takes the time from madsim's runtime, never from the machine, so a
//! run's schedule depends on its seed alone.

pub use madsim::time::Instant;

/// The simulated time now.
pub fn now() -> Instant {
    madsim::time::TimeHandle::current().now_instant()
}
