//! What the host gives a user's recipe beyond its client, each shown by a small recipe, "roll
//! call", that needs it and a run that fails without it: the deployment's parent node made
//! before any process starts (`SimRecipe::prepare`), another task of the same process
//! (`ClientCtx::spawn`), state the processes share (`ClientCtx::shared`), the moment every
//! process had started (`ClientCtx::every_client_started_us`), the driver's clock
//! (`ClientCtx::clock`), and a property judged against the run's moments (`Property::timed`).
//!
//! Each process answers the roll call: a task of its own (spawned) adds it to a tally the run's
//! processes share; once every process has started, it waits a little, creates its ephemeral
//! node under the parent `prepare` made, and records what it saw: the tally and the start.
#![cfg(madsim)]

use std::path::PathBuf;
use std::sync::Arc;

use zkh_model::properties::{Class, Finding};
use zkh_model::{History, HistoryEvent};
use zkh_recipes::{CreateMode, ZkClient};
use zkh_scenarios::custom::{sim, Client, ClientCtx, ClientRun, Property, SimRecipe};

const PARENT: &str = "/roll";
const ROLL: &str = "roll";

/// The roll call's one knob: whether the deployment makes the parent node.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    make_parent: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { make_parent: true }
    }
}

/// The tally the run's processes share.
#[derive(Default)]
struct Tally(u32);

struct RollCall;

impl SimRecipe for RollCall {
    const NAME: &'static str = "roll-call";
    /// `own-tally`: each process counts on a tally of its own instead of the shared one.
    const VARIANTS: &'static [&'static str] = &["correct", "own-tally"];
    type Config = Config;

    fn client(variant: &'static str, _: &Config, ctx: ClientCtx) -> ClientRun {
        let tally = match variant {
            "own-tally" => Arc::new(std::sync::Mutex::new(Tally::default())),
            _ => ctx.shared(Tally::default),
        };
        let counted = Arc::clone(&tally);
        ctx.spawn(async move {
            counted.lock().expect("the tally").0 += 1;
        });
        Box::pin(async move {
            let started_us = ctx.every_client_started_us().await;
            // The driver's clock is simulated time too: a real timer would need a runtime
            // the simulation does not have.
            let (_, pause) = ctx.clock().sleep(100);
            pause.await;
            let path = format!("{PARENT}/client{}", ctx.id());
            if ctx
                .client()
                .create(&path, b"", CreateMode::Ephemeral)
                .await
                .is_ok()
            {
                let count = tally.lock().expect("the tally").0;
                ctx.record(HistoryEvent::SideEffect {
                    client: ctx.id(),
                    resource: ROLL.to_owned(),
                    token: None,
                    accepted: true,
                    detail: format!("present count={count} started={started_us}"),
                });
            }
        })
    }

    fn prepare(config: &Config, client: Arc<Client>) -> ClientRun {
        let make = config.make_parent;
        Box::pin(async move {
            if make {
                let made = client.create(PARENT, b"", CreateMode::Persistent).await;
                made.expect("a healthy ensemble makes the parent");
            }
        })
    }

    fn properties(_: &Config) -> Vec<Property> {
        vec![
            Property::always("tally complete", "Each saw every process counted.", |h| {
                let answers = answers(h);
                match answers.iter().find(|(_, count, _)| *count != answers.len()) {
                    Some((entry, count, _)) => Err(zkh_scenarios::custom::Violation::new(format!(
                        "counted {count} of {}",
                        answers.len()
                    ))
                    .at([*entry])),
                    None => Ok(format!("{} answers", answers.len())),
                }
            }),
            Property::timed(
                "everyone present",
                Class::Eventually,
                "Every process answered, after the moment every process had started.",
                |history, moments| {
                    let answers = answers(history);
                    let early = (answers.iter()).find(|(_, _, at)| *at != moments.started_us);
                    let problem = match (answers.len(), early) {
                        (3, None) => None,
                        (_, Some((_, _, at))) => Some(format!(
                            "an answer saw the start at {at} us, the host at {} us",
                            moments.started_us
                        )),
                        (n, None) => Some(format!("{n} of 3 answered")),
                    };
                    Finding::new("everyone present", Class::Eventually, problem, || {
                        "3 answered".to_owned()
                    })
                },
            ),
        ]
    }
}

/// Each answer: its history entry, the tally it saw, and the start it was told.
fn answers(history: &History) -> Vec<(usize, usize, u64)> {
    (history.entries().iter().enumerate())
        .filter_map(|(index, entry)| match &entry.event {
            HistoryEvent::SideEffect {
                resource, detail, ..
            } if resource == ROLL => {
                let mut words = detail.split(' ').skip(1);
                let mut value = |key: &str| {
                    let word = words.next()?;
                    word.strip_prefix(key)?.parse::<u64>().ok()
                };
                let count = value("count=")?;
                let started = value("started=")?;
                Some((index, count as usize, started))
            }
            _ => None,
        })
        .collect()
}

/// A scenario of the roll call, three processes, no faults.
fn scenario(name: &str, config: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkh-host-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join(format!("{name}.toml"));
    let text = format!(
        "[workload]\nrecipe = \"roll-call\"\nclients = 3\n{config}\n[phases]\nfault_ms = 2000\n\
         liveness_ms = 2000\n"
    );
    std::fs::write(&path, text).expect("written");
    path
}

#[test]
fn the_roll_call_passes_with_the_parent_made_the_tally_shared_and_the_start_told() {
    sim::<RollCall>("correct")
        .scenario(scenario("correct", ""))
        .seeds(0..5)
        .run()
        .assert_pass();
}

#[test]
fn a_tally_of_its_own_is_caught() {
    sim::<RollCall>("own-tally")
        .scenario(scenario("own-tally", ""))
        .seeds(0..2)
        .run()
        .assert_caught("tally complete");
}

#[test]
fn without_the_parent_nobody_answers() {
    let config = "\n[workload.config]\nmake_parent = false\n";
    sim::<RollCall>("correct")
        .scenario(scenario("no-parent", config))
        .seeds(0..2)
        .run()
        .assert_caught("everyone present");
}
