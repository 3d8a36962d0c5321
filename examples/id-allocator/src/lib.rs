//! An ID allocator over one ZooKeeper node, written as a user of zkharness would write their
//! own recipe: plain async code against [`ZkClient`], registered with the harness through
//! [`SimRecipe`], with properties of its own and two known-bad variants as controls.
//!
//! # The algorithm
//!
//! The counter is the decimal number in `/ids/counter`. To allocate, a client reads it
//! (`getData`, which gives the data and its version), and writes the number plus one with a
//! conditional `setData` at that version. If another client wrote first, the version moved on
//! and the write fails with `BadVersion`: read again and retry. If the write succeeds, the new
//! number is this client's ID, and no other client can have it: every successful write moved
//! the version by exactly one.
//!
//! A `ConnectionLoss` on the write leaves its outcome unknown: it may have been applied (the
//! reply was lost) or not (the request was). The correct client hands out nothing then and
//! allocates again from a fresh read, so an ID can be skipped (a gap), never handed out twice.
//!
//! # The variants
//!
//! - `correct`: as above.
//! - `unversioned`: writes with version -1 (any version), so two clients that read the same
//!   number both succeed and hand out the same ID. No fault is needed.
//! - `loss-as-success`: takes a `ConnectionLoss` on the write as success and hands out the
//!   number. Where the request itself was lost, the counter never moved, and the next client
//!   to allocate hands out the same ID.
//!
//! # The properties
//!
//! - "ids unique" (always): no ID handed out twice.
//! - "ids allocated" (eventually): every client allocated at least one ID after the heal.
//! - "an allocation retried after a conflict" (sometimes): some write met `BadVersion`, so the
//!   seeds did race two clients on the counter.
//!
//! Not modelled: a counter that overflows, and clients that start with the node missing (the
//! first one creates it; a `NodeExists` from the others is expected).

pub mod machine;

use std::collections::BTreeMap;

use serde::Deserialize;
use zkh_model::HistoryEvent;
use zkh_recipes::{CreateMode, ZkClient, ZkError};
use zkh_scenarios::custom::{ClientCtx, ClientRun, ConfigError, Property, SimRecipe, Violation};

/// The counter's path.
pub const COUNTER: &str = "/ids/counter";

/// The resource the history records allocations on.
pub const IDS: &str = "ids";

/// The recipe, as the harness knows it.
pub struct IdAllocator;

/// The knobs, from the scenario's `[workload.config]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// How long a client waits between two allocations (default 100).
    pub pause_ms: Option<u64>,
}

impl SimRecipe for IdAllocator {
    const NAME: &'static str = "id-allocator";
    const VARIANTS: &'static [&'static str] = &["correct", "unversioned", "loss-as-success"];
    type Config = Config;

    fn client(variant: &'static str, config: &Config, ctx: ClientCtx) -> ClientRun {
        let pause_ms = config.pause_ms.unwrap_or(100);
        Box::pin(allocate_for_ever(variant, pause_ms, ctx))
    }

    fn check_config(config: &Config) -> Result<(), ConfigError> {
        match config.pause_ms {
            Some(pause_ms) if !(1..=60_000).contains(&pause_ms) => Err(ConfigError::new(
                "pause_ms",
                format!("expected 1 to 60000 ms between allocations, found {pause_ms}"),
            )),
            _ => Ok(()),
        }
    }

    fn properties(_: &Config) -> Vec<Property> {
        vec![
            Property::always(
                "ids unique",
                "No ID is handed out to two allocations.",
                ids_unique,
            ),
            Property::eventually(
                "ids allocated",
                "Every client allocated an ID after the faults healed.",
                every_client_allocated,
            ),
            Property::sometimes(
                "an allocation retried after a conflict",
                "Sometimes: a write met BadVersion, so two clients raced on the counter.",
                retried_after_a_conflict,
            ),
        ]
    }
}

/// Allocates, pauses, and allocates again, until the run ends.
async fn allocate_for_ever(variant: &'static str, pause_ms: u64, ctx: ClientCtx) {
    let client = ctx.client().clone();
    for path in ["/ids", COUNTER] {
        // One client creates each; the others find it there (or retry after a lost reply).
        loop {
            match client.create(path, b"0", CreateMode::Persistent).await {
                Ok(_) | Err(ZkError::NodeExists) => break,
                Err(_) => ctx.sleep_ms(pause_ms).await,
            }
        }
    }
    loop {
        // On an error (ConnectionLoss, SessionExpired) nothing is handed out: try again after
        // the pause.
        if let Ok(id) = allocate(variant, &*client, &ctx).await {
            ctx.record(HistoryEvent::SideEffect {
                client: ctx.id(),
                resource: IDS.to_owned(),
                token: Some(id),
                accepted: true,
                detail: format!("allocated {id}"),
            });
        }
        ctx.sleep_ms(pause_ms).await;
    }
}

/// One allocation: read, write the next number at the version read, retry on a conflict.
async fn allocate(variant: &str, client: &impl ZkClient, ctx: &ClientCtx) -> Result<i64, ZkError> {
    loop {
        let (data, stat) = client.get_data(COUNTER, false).await?;
        let current: i64 = String::from_utf8_lossy(&data).trim().parse().unwrap_or(0);
        let next = current + 1;
        let version = if variant == "unversioned" {
            -1
        } else {
            stat.version
        };
        match client
            .set_data(COUNTER, next.to_string().as_bytes(), version)
            .await
        {
            Ok(_) => return Ok(next),
            Err(ZkError::BadVersion) => {
                ctx.record(HistoryEvent::SideEffect {
                    client: ctx.id(),
                    resource: IDS.to_owned(),
                    token: None,
                    accepted: false,
                    detail: format!("conflict at {next}"),
                });
            }
            Err(ZkError::ConnectionLoss) if variant == "loss-as-success" => return Ok(next),
            Err(error) => return Err(error),
        }
    }
}

/// The allocations in the history: (entry, client, ID).
fn allocations(history: &zkh_model::History) -> impl Iterator<Item = (usize, u32, i64)> + '_ {
    history
        .entries()
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| match &entry.event {
            HistoryEvent::SideEffect {
                client,
                resource,
                token: Some(id),
                accepted: true,
                ..
            } if resource == IDS => Some((index, *client, *id)),
            _ => None,
        })
}

/// "ids unique".
fn ids_unique(history: &zkh_model::History) -> Result<String, Violation> {
    let mut first: BTreeMap<i64, (usize, u32)> = BTreeMap::new();
    for (index, client, id) in allocations(history) {
        if let Some((earlier, other)) = first.insert(id, (index, client)) {
            return Err(Violation::new(format!(
                "ID {id} was handed out to client {other} and then to client {client}"
            ))
            .at([earlier, index]));
        }
    }
    Ok(format!("{} IDs, each handed out once", first.len()))
}

/// "ids allocated": every client that appears in the history allocated after its last fault.
fn every_client_allocated(history: &zkh_model::History) -> Result<String, Violation> {
    let healed = history
        .entries()
        .iter()
        .rposition(|entry| matches!(&entry.event, HistoryEvent::Fault { .. }))
        .unwrap_or(0);
    let mut clients: Vec<u32> = (history.entries().iter())
        .filter_map(|entry| match &entry.event {
            HistoryEvent::Invoke { client, .. } => Some(*client),
            _ => None,
        })
        .collect();
    clients.sort_unstable();
    clients.dedup();
    let idle: Vec<u32> = (clients.iter().copied())
        .filter(|c| !allocations(history).any(|(at, client, _)| client == *c && at > healed))
        .collect();
    if idle.is_empty() {
        Ok(format!(
            "{} clients allocated after the last fault",
            clients.len()
        ))
    } else {
        Err(Violation::new(format!(
            "clients {idle:?} allocated nothing after the last fault"
        )))
    }
}

/// "an allocation retried after a conflict".
fn retried_after_a_conflict(history: &zkh_model::History) -> Result<String, Violation> {
    let conflicts = (history.entries().iter())
        .filter(|entry| {
            matches!(&entry.event, HistoryEvent::SideEffect { resource, accepted: false, .. }
                if resource == IDS)
        })
        .count();
    if conflicts > 0 {
        Ok(format!(
            "{conflicts} writes met BadVersion and were retried"
        ))
    } else {
        Err(Violation::new("no write met BadVersion"))
    }
}
