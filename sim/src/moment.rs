//! A moment one task announces once and any number of tasks wait for: the run's origin, when
//! every client process had started.
//!
//! Not tokio's `watch` channel: its receivers register on one of several notifiers chosen by a
//! thread-local random number, so the order in which waiting tasks wake (and with it a seed's
//! whole trace) would depend on entropy outside the seed. Here every waiter registers on one
//! [`Notify`], which wakes them in the order they registered. Available in both builds.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// A moment, in simulated microseconds, announced once ([`Moment::announce`]) and waited for
/// ([`Moment::wait_us`]); clones share it.
#[derive(Clone, Debug, Default)]
pub struct Moment {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    at_us: Mutex<Option<u64>>,
    notify: Notify,
}

impl Moment {
    /// A moment not yet announced.
    pub fn new() -> Self {
        Moment::default()
    }

    /// Announces the moment `at_us` and wakes every waiter (a second announcement is ignored).
    pub fn announce(&self, at_us: u64) {
        let mut at = self.shared.at_us.lock().expect("the moment's lock");
        if at.is_none() {
            *at = Some(at_us);
            self.shared.notify.notify_waiters();
        }
    }

    /// The moment, once it has been announced.
    pub async fn wait_us(&self) -> u64 {
        loop {
            let notified = self.shared.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the check, so that an announcement between the two is not
            // missed.
            notified.as_mut().enable();
            if let Some(at_us) = *self.shared.at_us.lock().expect("the moment's lock") {
                return at_us;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    #[test]
    fn waiters_registered_before_and_after_the_announcement_get_it() {
        let mut cx = Context::from_waker(Waker::noop());
        let moment = Moment::new();
        let early = moment.clone();
        let mut waiting = std::pin::pin!(early.wait_us());
        assert_eq!(waiting.as_mut().poll(&mut cx), Poll::Pending);
        moment.announce(7);
        moment.announce(9);
        assert_eq!(waiting.as_mut().poll(&mut cx), Poll::Ready(7));
        let mut late = std::pin::pin!(moment.wait_us());
        assert_eq!(late.as_mut().poll(&mut cx), Poll::Ready(7));
    }
}
