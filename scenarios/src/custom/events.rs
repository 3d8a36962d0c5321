//! Waiting for one of the client's events with a timeout in simulated time.
//!
//! The client delivers its watch events and its session events on one stream
//! ([`ZkClient::next_event`]), in the order they arrived. A recipe that waits for one kind (its
//! node's `NodeDeleted`, a `Reconnected`) while others arrive would otherwise poll the stream on
//! a timer of its own. [`ClientCtx::wait_for_event`] waits for the first event a test accepts,
//! for at most a bound of simulated time, and hands back every event it passed over, in order,
//! so that none is lost; [`ClientCtx::next_event_within`] waits for any event.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;

use zkh_recipes::{ClientEvent, ZkClient};

use super::ClientCtx;

/// What [`ClientCtx::wait_for_event`] saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waited {
    /// The first event the test accepted; none if the time ran out first (or the client's
    /// stream ended).
    pub matched: Option<ClientEvent>,
    /// The events before it that the test did not accept, oldest first.
    pub skipped: Vec<ClientEvent>,
}

impl ClientCtx {
    /// The client's next event, or none if `timeout_ms` simulated milliseconds pass first (or
    /// the client's stream ended).
    pub async fn next_event_within(&self, timeout_ms: u64) -> Option<ClientEvent> {
        let waited = self.wait_for_event(timeout_ms, |_| true).await;
        waited.matched
    }

    /// Waits at most `timeout_ms` simulated milliseconds for the first event `accept` takes:
    /// that event, and every other one that came before it (see the module docs).
    pub async fn wait_for_event(
        &self,
        timeout_ms: u64,
        mut accept: impl FnMut(&ClientEvent) -> bool,
    ) -> Waited {
        let mut skipped = Vec::new();
        let mut deadline = pin!(self.sleep_ms(timeout_ms));
        loop {
            let mut next = pin!(self.client().next_event());
            let got = std::future::poll_fn(|cx| {
                if let Poll::Ready(event) = next.as_mut().poll(cx) {
                    return Poll::Ready(Some(event));
                }
                match deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(None),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await;
            match got {
                Some(Some(event)) if accept(&event) => {
                    return Waited {
                        matched: Some(event),
                        skipped,
                    }
                }
                Some(Some(event)) => skipped.push(event),
                Some(None) | None => {
                    return Waited {
                        matched: None,
                        skipped,
                    }
                }
            }
        }
    }
}
