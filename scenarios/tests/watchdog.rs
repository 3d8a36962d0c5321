//! The watchdog's controls: recipes of our own that loop without waiting for a timer end as
//! *stuck*, with what was running and the last events, seed after seed, where they would hang
//! the command for ever; a recipe that pauses between retries passes.
//!
//! "spinner" writes a node every 100 ms, retrying a failure. A client cut off from every server
//! for 6 s (longer than its 4 s session) is disconnected after about 2.7 s, and then fails every request at once with `ConnectionLoss`:
//!
//! - `pause` (the correct one) waits 100 ms on the driver's clock before retrying;
//! - `retry-at-once` retries at once: its task never returns to the executor, and simulated time
//!   stands still (the client's count of requests at one instant catches it);
//! - `yield-loop` yields to the executor between retries without waiting for anything: the clock
//!   moves by madsim's jitter alone (the count of polls of the recipe's tasks catches it).
#![cfg(madsim)]

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};

use zkh_recipes::{CreateMode, ZkClient};
use zkh_scenarios::custom::{sim, ClientCtx, ClientRun, Property, SimRecipe};
use zkh_scenarios::report::{exit, Outcome};

struct Spinner;

/// Returns `Pending` once, waking itself: a yield to the executor that waits for nothing.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl SimRecipe for Spinner {
    const NAME: &'static str = "spinner";
    const VARIANTS: &'static [&'static str] = &["pause", "retry-at-once", "yield-loop"];
    type Config = ();

    fn client(variant: &'static str, _: &(), ctx: ClientCtx) -> ClientRun {
        Box::pin(async move {
            let path = format!("/spin-{}", ctx.id());
            for _ in 0..60 {
                loop {
                    let written = ctx.client().set_data(&path, b"x", -1).await;
                    let missing = matches!(written, Err(zkh_recipes::ZkError::NoNode));
                    if written.is_ok() {
                        break;
                    }
                    if missing {
                        let _ = ctx.client().create(&path, b"", CreateMode::Ephemeral).await;
                        continue;
                    }
                    match variant {
                        "retry-at-once" => {}
                        "yield-loop" => YieldOnce(false).await,
                        _ => ctx.clock().sleep(100).1.await,
                    }
                }
                ctx.clock().sleep(100).1.await;
            }
        })
    }

    fn properties(_: &()) -> Vec<Property> {
        vec![Property::always("spins", "The run ends.", |_| {
            Ok("ended".to_owned())
        })]
    }
}

/// The scenario, in a file of `name`'s own (the tests run side by side).
fn scenario(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkh-watchdog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join(format!("{name}.toml"));
    let text = "[workload]\nrecipe = \"spinner\"\nclients = 2\nservers = 3\n\
                session_timeout_ms = 4000\n\n[phases]\nfault_ms = 12000\nliveness_ms = 2000\n\n\
                [[faults.scripted]]\nat_ms = 2000\nfault = { kind = \"partition\", a = [{ client \
                = 0 }], b = [\"all-servers\"], duration_ms = 6000 }\n";
    std::fs::write(&path, text).expect("written");
    path
}

/// Every seed's outcome is stuck, naming client 0 (the one cut off) and what it did.
fn assert_stuck(variant: &str, running: &str) {
    let runs = sim::<Spinner>(variant)
        .scenario(scenario(variant))
        .seeds(0..3)
        .run();
    let outcomes: Vec<_> = runs.runs().map(|(_, run)| run.outcome.clone()).collect();
    assert_eq!(outcomes.len(), 3, "every seed ran: {outcomes:?}");
    for outcome in outcomes {
        let Outcome::Stuck {
            at_ms,
            running: what,
            last_events,
            ..
        } = &outcome
        else {
            panic!("{variant}: expected stuck, got {outcome:?}");
        };
        assert!(what.contains(running), "{variant}: {what}");
        // Stuck during the partition, with the history's last events.
        assert!((4000..8100).contains(at_ms), "{variant}: at {at_ms} ms");
        assert!(!last_events.is_empty(), "{variant}: no events");
        assert_eq!(outcome.exit_code(), exit::STUCK);
    }
}

#[test]
fn a_retry_loop_that_never_waits_is_stuck() {
    assert_stuck("retry-at-once", "client 0");
}

#[test]
fn a_loop_that_yields_but_waits_for_nothing_is_stuck() {
    assert_stuck("yield-loop", "client 0");
}

#[test]
fn a_retry_loop_that_pauses_passes() {
    sim::<Spinner>("pause")
        .scenario(scenario("pause"))
        .seeds(0..3)
        .run()
        .assert_pass();
}
