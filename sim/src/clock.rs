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
    fn sleep(
        &self,
        ms: u64,
    ) -> (
        Instant,
        std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    ) {
        let sleep = sleep(std::time::Duration::from_millis(ms));
        (sleep.sleep.deadline(), Box::pin(sleep))
    }
}

/// madsim's `sleep`, setting its timer once however often it is polled (see [`SleepOnce`]).
pub fn sleep(duration: std::time::Duration) -> SleepOnce {
    SleepOnce {
        sleep: madsim::time::sleep(duration),
        armed: false,
    }
}

/// A sleep that sets one madsim timer, the first time it is polled.
///
/// madsim's `Sleep` sets a new timer each time it is polled before its deadline, and a timer
/// stays in madsim's heap until its time. A sleep polled again and again while it waits (the
/// recipe driver polls every pending timer each time it handles an event; a `timeout` polls
/// its sleep each time the future it bounds is woken) filled the heap with timers, each waking
/// the task for nothing when it went off. The timer set by the first poll wakes the task at the
/// deadline, which is all the later polls asked for.
///
/// Only for a sleep polled by one task: the timer wakes the task that polled it first.
#[derive(Debug)]
pub struct SleepOnce {
    sleep: madsim::time::Sleep,
    armed: bool,
}

impl std::future::Future for SleepOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.sleep.is_elapsed() {
            return std::task::Poll::Ready(());
        }
        if !self.armed {
            self.armed = true;
            return std::pin::Pin::new(&mut self.sleep).poll(cx);
        }
        std::task::Poll::Pending
    }
}

/// A sleep until exactly `deadline`, however close: madsim's `sleep_until` never sleeps less
/// than a millisecond (as tokio's does), which lifted every network latency under 1 ms to 1 ms.
/// `Sleep::reset` sets the deadline as given. Sets its timer once, as [`SleepOnce`] does.
pub fn sleep_until_exact(time: &madsim::time::TimeHandle, deadline: Instant) -> SleepOnce {
    let mut sleep = time.sleep_until(deadline);
    std::pin::Pin::new(&mut sleep).reset(deadline);
    SleepOnce {
        sleep,
        armed: false,
    }
}

/// madsim's `timeout` on a [`SleepOnce`]: `Err(())` if `future` is not done within `duration`.
pub async fn timeout<T: std::future::Future>(
    duration: std::time::Duration,
    future: T,
) -> Result<T::Output, ()> {
    tokio::select! {
        // Branches are polled in order: the default random order would be entropy from outside
        // the seed. The future first, as madsim's `timeout` does.
        biased;
        output = future => Ok(output),
        _ = sleep(duration) => Err(()),
    }
}

/// A task's alarm clock: wakes the task that polls it at a deadline, setting one madsim timer
/// for a deadline however often it is polled.
///
/// madsim's `Sleep` sets a new timer every time it is polled before its deadline, and a timer
/// stays in madsim's heap until its time even when the `Sleep` is dropped. A loop that
/// `select!`s between its inbox and `sleep_until(wake)` therefore set one timer per message it
/// received, every one of them later waking the task for nothing: in a busy run most of madsim's
/// timers were these (the profile is in docs/performance.md). An `Alarm` lives as long as the
/// loop and remembers the earliest timer it set that has not gone off: a wait for a deadline at
/// or after it needs no new one, since the task will be woken by then and poll again.
///
/// Only for a loop whose waits are polled by the task that owns the `Alarm`: the timer wakes the
/// task that polled it first.
#[derive(Debug, Default)]
pub struct Alarm {
    /// The earliest deadline of a timer this alarm set (it may have gone off since).
    armed_for: Option<Instant>,
}

impl Alarm {
    /// A future that is ready at `deadline`, or a millisecond from now if that is later: as
    /// madsim's (and tokio's) `sleep_until` does, so that a loop whose deadline has passed still
    /// lets the others run.
    pub fn until(&mut self, deadline: Instant) -> AlarmWait<'_> {
        let deadline = deadline.max(now() + std::time::Duration::from_millis(1));
        AlarmWait {
            alarm: self,
            deadline,
        }
    }
}

/// The future of [`Alarm::until`].
#[derive(Debug)]
pub struct AlarmWait<'a> {
    alarm: &'a mut Alarm,
    deadline: Instant,
}

impl std::future::Future for AlarmWait<'_> {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let now = now();
        if now >= self.deadline {
            return std::task::Poll::Ready(());
        }
        let deadline = self.deadline;
        // A timer that has not gone off (its deadline is still ahead) and goes off no later than
        // this deadline will wake the task in time.
        let covered =
            matches!(self.alarm.armed_for, Some(armed) if armed > now && armed <= deadline);
        if !covered {
            let mut sleep = madsim::time::sleep_until(deadline);
            // Polled once before its deadline, a Sleep sets its timer and is pending.
            let pending = std::pin::Pin::new(&mut sleep).poll(cx).is_pending();
            assert!(pending, "a sleep until a later deadline is pending");
            self.alarm.armed_for = Some(deadline);
        }
        std::task::Poll::Pending
    }
}
