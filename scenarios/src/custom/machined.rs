//! One recipe for both engines: a recipe written as a sans-IO machine with its application (the
//! model checker's [`Workload`]) is checked by the model checker with
//! [`model`](fn@super::model), and runs on the simulated ensemble as [`Machined<W>`], a
//! [`SimRecipe`] like any other (scenario files, `sim::<Machined<W>>()`, a user's own
//! `zkharness`).
//!
//! In the simulator, each client process does what the model's client does, in simulated time:
//!
//! 1. It makes the workload's [`directories`](Workload::directories) (the nodes the model takes
//!    to exist from the start), persistent, parents first; one already there is fine, and a
//!    failed create is tried again after [`MachineRecipe::ACT_INTERVAL_MS`].
//! 2. It starts its machine ([`Workload::client`]) under the recipes' driver
//!    (`zkh_recipes::driver`, the one the built-in recipes run under), which turns the machine's
//!    commands into operations of the simulated client and timers of simulated time, and sends
//!    it the workload's first requests.
//! 3. Every [`MachineRecipe::ACT_INTERVAL_MS`], the application takes the machine's reports
//!    ([`Workload::on_report`]) and then takes one action if it has one
//!    ([`Workload::act`]); the history events both give are recorded at that moment, and the
//!    requests go to the machine.
//!
//! The properties the simulator judges are the recipe's [`MachineRecipe::properties`], over the
//! run's history, beside ZooKeeper's guarantees; and, for a machine that names its nodes
//! (`Machine::known_ephemerals`, `Machine::claimed_ephemerals`), "claims are owned" and "no
//! orphaned ephemerals" at the end of the run, from what its driver last published, as the
//! model checker judges them. The model checker judges its [`Workload::judges`]. Write a property once as a function of the history's entries
//! (`fn(&impl Entries) -> Finding`, as `zkh_model::properties` does) and name it in both.
//!
//! Not modelled here: [`Workload::can_act`] (it reads the servers' data, which a client does not
//! have: the simulator asks `act` at every step, and `act` answers `None` when it has nothing to
//! do); [`Workload::crashed`] (a crashed process records nothing: the crash fault is in the
//! history); settled moments ([`Workload::act_waits_for_settled`]): an application acts when its
//! interval comes.

use std::marker::PhantomData;

use zkh_model::check::Workload;

use super::{ClientCtx, ClientRun, Property, SimRecipe};

/// A recipe written once as a model-checker [`Workload`], with what the simulator needs besides
/// (see the module docs).
pub trait MachineRecipe: Workload {
    /// The name a scenario file gives as `recipe = "..."`.
    const NAME: &'static str;
    /// The variants: the first is the correct recipe, the others positive controls.
    const VARIANTS: &'static [&'static str];
    /// How often a client's application reads its machine's reports and takes an action, in
    /// simulated milliseconds (default 50): the time between two steps of the application (a
    /// lock holder's reserve and sell, for example).
    const ACT_INTERVAL_MS: u64 = 50;

    /// The workload of `variant`, one of [`VARIANTS`](Self::VARIANTS).
    fn of_variant(variant: &str) -> Self;

    /// The properties judged on each simulated run's history.
    fn properties() -> Vec<Property>;

    /// How `zkharness check` catches each known-bad variant that its default options do not:
    /// a check of such a variant that ends without a violation prints the entry's command, so
    /// that nobody takes it for a fixed bug (none by default). `recipe` is [`Self::NAME`].
    fn known_bad() -> Vec<crate::known_bad::KnownBad> {
        Vec::new()
    }
}

/// A [`MachineRecipe`] as the simulator runs it: register it, write scenarios for it and test it
/// as any [`SimRecipe`] (`sim::<Machined<MyWorkload>>("correct")`,
/// `custom_main!(Machined<MyWorkload>)`).
pub struct Machined<W>(PhantomData<fn() -> W>);

impl<W: MachineRecipe> SimRecipe for Machined<W> {
    const NAME: &'static str = W::NAME;
    const VARIANTS: &'static [&'static str] = W::VARIANTS;
    type Config = NoKnobs;

    fn client(variant: &'static str, _: &NoKnobs, ctx: ClientCtx) -> ClientRun {
        let workload = W::of_variant(variant);
        #[cfg(madsim)]
        return Box::pin(run_client(workload, ctx));
        #[cfg(not(madsim))]
        {
            let _ = (workload, ctx);
            Box::pin(async {})
        }
    }

    fn properties(_: &NoKnobs) -> Vec<Property> {
        W::properties()
    }

    fn machine_entry() -> Option<crate::registry::machines::MachineEntry> {
        Some(crate::registry::machines::MachineEntry::of::<W>())
    }
}

/// A machine recipe's configuration: none (its knobs are its variants). A scenario's
/// `[workload.config]` must be absent or empty.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoKnobs {}

/// What one client process of workload `W` does (see the module docs).
#[cfg(madsim)]
async fn run_client<W: MachineRecipe>(workload: W, ctx: ClientCtx) {
    use std::sync::Arc;
    use zkh_recipes::{driver, CreateMode, ZkClient, ZkError};

    let client = Arc::clone(ctx.client());
    for dir in workload.directories() {
        loop {
            match client.create(&dir, b"", CreateMode::Persistent).await {
                Ok(_) | Err(ZkError::NodeExists) => break,
                Err(_) => ctx.sleep_ms(W::ACT_INTERVAL_MS).await,
            }
        }
    }
    let id = ctx.id();
    let (machine, mut app, first) = workload.client(id as usize);
    let (handle, driver) = driver::start(client, ctx.clock(), machine);
    // What the machine knows of its own nodes (`Machine::known_ephemerals`), for the host's
    // "claims are owned" and "no orphaned ephemerals", as the model checker judges them.
    ctx.knows(handle.knowledge());
    drop(zkh_sim::cluster::spawn_beside(async move {
        driver.await;
    }));
    for request in first {
        handle.send(request);
    }
    let mut effects = Vec::new();
    loop {
        ctx.sleep_ms(W::ACT_INTERVAL_MS).await;
        while let Some(report) = handle.try_report() {
            let requests = workload.on_report(&mut app, report, &mut effects, id);
            record(&ctx, &mut effects);
            for request in requests {
                handle.send(request);
            }
        }
        if let Some(requests) = workload.act(&mut app, &mut effects, id) {
            record(&ctx, &mut effects);
            for request in requests {
                handle.send(request);
            }
        }
    }
}

#[cfg(madsim)]
fn record(ctx: &ClientCtx, effects: &mut Vec<zkh_model::HistoryEvent>) {
    for event in effects.drain(..) {
        ctx.record(event);
    }
}

/// The built-in lock's model-checker workload (Curator's `InterProcessMutex` machine, each
/// client acquiring once, writing twice under the lock, releasing) as a machine recipe: the same
/// object `zkharness check lock` explores, run on the simulated ensemble, with the model's own
/// property functions judged on the run's history. Register it as `Machined<LockWorkload>`
/// (`lock-model`): it shows a recipe written once checked by both engines.
impl MachineRecipe for zkh_model::check::LockWorkload {
    const NAME: &'static str = "lock-model";
    const VARIANTS: &'static [&'static str] = crate::builtins::variants(crate::builtins::LOCK);

    fn of_variant(variant: &str) -> Self {
        zkh_model::check::LockWorkload {
            variant: crate::builtins::typed(variant),
        }
    }

    fn properties() -> Vec<Property> {
        use zkh_model::check::{LOCK_DIR, RESOURCE};
        use zkh_model::properties::{self, sometimes, Class};
        vec![
            Property::from_finding(
                "mutual exclusion",
                Class::Always,
                "No two clients write the resource under the lock at once.",
                |history| properties::mutual_exclusion(history, RESOURCE),
            ),
            Property::from_finding(
                "herd free",
                Class::Always,
                "A release wakes only the next waiter, not every waiter.",
                |history| properties::herd_free(history, LOCK_DIR),
            ),
            Property::from_finding(
                "a waiter was woken",
                Class::Sometimes,
                "A client waited for the lock and was woken.",
                |history| sometimes::waiter_woken(history, LOCK_DIR),
            ),
        ]
    }
}
