//! A fault plan built in Rust (`FaultPlan::new().at_ms(..).when(..)`) is the plan a scenario
//! file's `[faults]` gives, and a test runs it with `SimTest::faults`; a recipe waits for one of
//! its client's events with a timeout (`ClientCtx::wait_for_event`) without polling.
//!
//! "notice": each client waits up to 8 s for its connection to drop. Client 0, cut off from
//! every server for 6 s by the plan, notices, and records what it passed over; the others time
//! out. Without the plan nobody is cut off, and "the cut-off client noticed" is violated.
#![cfg(madsim)]

use std::path::PathBuf;

use zkh_model::properties::{Class, Finding};
use zkh_model::{History, HistoryEvent};
use zkh_recipes::{ClientEvent, SessionEvent};
use zkh_scenarios::custom::{sim, ClientCtx, ClientRun, Property, SimRecipe};
use zkh_scenarios::scenario::parse;
use zkh_sim::fault::{Fault, FaultPlan, NodeRef, OpKind, Trigger};

const NOTICE: &str = "notice";

struct Notice;

impl SimRecipe for Notice {
    const NAME: &'static str = "notice";
    const VARIANTS: &'static [&'static str] = &["correct"];
    type Config = ();

    fn client(_: &'static str, _: &(), ctx: ClientCtx) -> ClientRun {
        Box::pin(async move {
            let dropped = |event: &ClientEvent| {
                matches!(event, ClientEvent::Session(SessionEvent::Disconnected))
            };
            let waited = ctx.wait_for_event(8_000, dropped).await;
            let detail = match waited.matched {
                Some(_) => format!("noticed at {} ms", ctx.now_ms()),
                None => format!("timed out at {} ms", ctx.now_ms()),
            };
            ctx.record(HistoryEvent::SideEffect {
                client: ctx.id(),
                resource: NOTICE.to_owned(),
                token: None,
                accepted: true,
                detail,
            });
        })
    }

    fn properties(_: &()) -> Vec<Property> {
        vec![Property::timed(
            "the cut-off client noticed",
            Class::Eventually,
            "Client 0 saw its connection drop within the wait; the others waited it out.",
            |history, _| {
                let seen = notices(history);
                let expected = |client: u32, detail: &str| {
                    detail.starts_with(if client == 0 { "noticed" } else { "timed out" })
                };
                let wrong = seen
                    .iter()
                    .find(|(client, detail)| !expected(*client, detail));
                let problem = match (seen.len(), wrong) {
                    (_, Some((client, detail))) => Some(format!("client {client}: {detail}")),
                    (2, None) => None,
                    (n, None) => Some(format!("{n} of 2 clients recorded")),
                };
                Finding::new(
                    "the cut-off client noticed",
                    Class::Eventually,
                    problem,
                    || "client 0 noticed, client 1 timed out".to_owned(),
                )
            },
        )]
    }
}

fn notices(history: &History) -> Vec<(u32, String)> {
    (history.entries().iter())
        .filter_map(|entry| match &entry.event {
            HistoryEvent::SideEffect {
                client,
                resource,
                detail,
                ..
            } if resource == NOTICE => Some((*client, detail.clone())),
            _ => None,
        })
        .collect()
}

/// The scenario's file: no faults of its own. Each test writes its own (`test` names it): the
/// tests run on several threads, and one must never read a file another is rewriting.
fn scenario(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkh-plan-builder-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join(format!("notice-{test}.toml"));
    let text = "[workload]\nrecipe = \"notice\"\nclients = 2\nservers = 3\n\
                session_timeout_ms = 4000\n\n[phases]\nfault_ms = 10000\nliveness_ms = 1000\n";
    std::fs::write(&path, text).expect("written");
    path
}

fn cut_off() -> FaultPlan {
    FaultPlan::new().at_ms(
        1_000,
        Fault::Partition {
            a: [NodeRef::Client(0)].into(),
            b: [NodeRef::AllServers].into(),
            one_way: false,
            duration_ms: 6_000,
        },
    )
}

#[test]
fn a_plan_built_in_rust_is_the_plan_its_toml_gives() {
    let text = "[workload]\nrecipe = \"lock\"\n\n[[faults.scripted]]\nat_ms = 1000\nfault = { \
                kind = \"partition\", a = [{ client = 0 }], b = [\"all-servers\"], \
                duration_ms = 6000 }\n\n[[faults.triggered]]\nwhen = { client = 1, op = \
                \"create\", path_prefix = \"/locks/stock/\", nth = 3 }\nfault = { kind = \
                \"drop-reply\", client = 1 }\n";
    let (file, _) = parse("plan.toml", "plan", text).expect("a good file");
    let built = cut_off().when(
        Trigger::nth(Some(1), OpKind::Create, "/locks/stock/", 3),
        Fault::DropReply { client: 1 },
    );
    assert_eq!(built, file.faults);
}

#[test]
fn a_test_runs_a_plan_built_in_rust_and_a_recipe_waits_for_one_event() {
    sim::<Notice>("correct")
        .scenario(scenario("planned"))
        .faults(cut_off())
        .seeds(0..3)
        .run()
        .assert_pass();
}

#[test]
fn without_the_plan_nobody_is_cut_off() {
    sim::<Notice>("correct")
        .scenario(scenario("unplanned"))
        .seeds(0..2)
        .run()
        .assert_caught("the cut-off client noticed");
}
