//! The scenario reader fuzzed on a recipe of the user's own: files naming a registered recipe
//! with one value made extreme, its own `[workload.config]` knobs included, are read or refused
//! at a line and column, never a panic; and, in the simulated build, a file the reader accepts
//! runs seed 0 to a verdict, never a crash. (`fuzz_values.rs` does the same for the built-ins'
//! files.)

use proptest::prelude::*;

use crate::proptest_config;
use proptest_config::fixed;
use serde::Deserialize;
use zkh_model::properties::Class;
use zkh_recipes::{CreateMode, ZkClient};
use zkh_scenarios::custom::{register, ClientCtx, ClientRun, ConfigError, Property, SimRecipe};
use zkh_scenarios::scenario::parse;

/// A recipe of the test's own: each client creates nodes under `/fuzz` at its own pace.
struct Creator;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Knobs {
    pause_ms: Option<u64>,
    nodes: Option<u32>,
    share: Option<f64>,
    label: Option<String>,
}

impl SimRecipe for Creator {
    const NAME: &'static str = "fuzzed-creator";
    const VARIANTS: &'static [&'static str] = &["correct", "hasty"];
    type Config = Knobs;

    fn client(variant: &'static str, config: &Knobs, ctx: ClientCtx) -> ClientRun {
        let pause_ms = if variant == "hasty" {
            1
        } else {
            config.pause_ms.unwrap_or(100)
        };
        let nodes = config.nodes.unwrap_or(10);
        // A share above a half makes every other node sequential; the label is each node's data.
        let sequential = config.share.is_some_and(|share| share > 0.5);
        let label = config.label.clone().unwrap_or_default();
        Box::pin(async move {
            let client = ctx.client().clone();
            let _ = client.create("/fuzz", b"", CreateMode::Persistent).await;
            for n in 0..nodes {
                let path = format!("/fuzz/c{}-{n}", ctx.id());
                let mode = if sequential && n % 2 == 1 {
                    CreateMode::PersistentSequential
                } else {
                    CreateMode::Persistent
                };
                let _ = client.create(&path, label.as_bytes(), mode).await;
                ctx.sleep_ms(pause_ms).await;
            }
        })
    }

    fn properties(_: &Knobs) -> Vec<Property> {
        vec![Property::always(
            "nothing",
            "Holds on every history.",
            |_| Ok(String::new()),
        )]
    }

    fn check_config(config: &Knobs) -> Result<(), ConfigError> {
        match config.pause_ms {
            Some(pause) if !(1..=60_000).contains(&pause) => Err(ConfigError::new(
                "pause_ms",
                format!("expected 1 to 60000 ms, found {pause}"),
            )),
            _ => Ok(()),
        }
    }
}

const TEXTS: [&str; 2] = [
    "[workload]\nrecipe = \"fuzzed-creator\"\nvariant = \"hasty\"\nservers = 3\nclients = 2\n\
     session_timeout_ms = 4000\n\n[workload.config]\npause_ms = 50\nnodes = 20\nshare = 0.5\n\
     label = \"a\"\n\n[phases]\nfault_ms = 3000\nliveness_ms = 2000\n\n[faults.random]\n\
     drop_reply_per_s = 1.0\n",
    "seeds = [3]\n\n[workload]\nrecipe = \"fuzzed-creator\"\nclients = 3\n\n[workload.config]\n\
     nodes = 5\n\n[phases]\nfault_ms = 2000\nliveness_ms = 1000\n\n[[faults.scripted]]\n\
     at_ms = 500\nfault = { kind = \"expire-session\", client = 1 }\n\n[expect]\n\
     violation = \"nothing\"\nwithin_seeds = 3\n",
];

const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "1e308",
    "nan",
    "inf",
    "\"x\"",
    "[1, 2]",
    "{ a = 1 }",
    "true",
];

fn register_once() {
    register::<Creator>("zkh-scenarios-tests", "0.0.0").expect("registered");
}

/// `text` with its value number `index` (of every `key = value` line's values) replaced.
fn with_value(text: &str, index: prop::sample::Index, extreme: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let valued: Vec<usize> = (0..lines.len())
        .filter(|i| lines[*i].contains(" = ") && !lines[*i].starts_with('['))
        .collect();
    let chosen = valued[index.index(valued.len())];
    let mut out: Vec<String> = lines.iter().map(|line| (*line).to_owned()).collect();
    let (key, _) = lines[chosen].split_once(" = ").expect("a key and a value");
    out[chosen] = format!("{key} = {extreme}");
    out.join("\n") + "\n"
}

#[test]
fn the_unchanged_files_are_read() {
    register_once();
    for text in TEXTS {
        let (_, resolved) = parse("own.toml", "own", text).expect("a good file");
        assert_eq!(resolved.recipe.as_str(), "fuzzed-creator");
        let package = resolved.recipe.package();
        assert_eq!(package.as_deref(), Some("zkh-scenarios-tests 0.0.0"));
    }
    let refused = parse(
        "own.toml",
        "own",
        &TEXTS[0].replace("pause_ms = 50", "pause_ms = 0"),
    )
    .expect_err("the recipe's own check refuses it");
    assert_eq!(
        refused.to_string(),
        "own.toml:9:12: workload.config.pause_ms: expected 1 to 60000 ms, found 0"
    );
    let refused = parse(
        "own.toml",
        "own",
        &TEXTS[0].replace("nodes = 20", "nodez = 20"),
    )
    .expect_err("an unknown knob");
    assert!(
        refused
            .to_string()
            .starts_with("own.toml:10:9: workload.config.nodez: unknown field `nodez`"),
        "{refused}"
    );
    let class = zkh_scenarios::scenario::registered("fuzzed-creator")
        .expect("registered")
        .workload(None)
        .expect("the default configuration")
        .properties()[0]
        .class;
    assert_eq!(class, Class::Always);
}

proptest! {
    #![proptest_config(fixed(1000))]

    /// A file of a registered recipe with one value made extreme: read, or refused at a line
    /// and column inside the text; never a panic.
    #[test]
    fn an_extreme_value_is_read_or_refused_never_a_panic(
        file in 0..TEXTS.len(),
        value in any::<prop::sample::Index>(),
        extreme in prop::sample::select(EXTREMES),
    ) {
        register_once();
        let text = with_value(TEXTS[file], value, extreme);
        match parse("own.toml", "own", &text) {
            Err(error) => prop_assert!(
                error.line >= 1 && error.line <= text.lines().count() + 1,
                "{error}"
            ),
            Ok((_, resolved)) => prop_assert!(
                resolved.fault_ms.checked_add(resolved.liveness_ms).is_some_and(|t| t <= 500_000),
                "{text}"
            ),
        }
    }
}

/// In the simulated build, accepted files run: a run ends with a verdict, not a crash.
#[cfg(madsim)]
mod runs {
    use super::*;
    use zkh_reports::types::Outcome;
    use zkh_scenarios::runner::run;

    proptest! {
        #![proptest_config(fixed(60))]

        #[test]
        fn an_accepted_extreme_value_runs_to_a_verdict(
            file in 0..TEXTS.len(),
            value in any::<prop::sample::Index>(),
            extreme in prop::sample::select(&["0", "1", "18446744073709551615", "4294967295", "60000"][..]),
        ) {
            register_once();
            let text = with_value(TEXTS[file], value, extreme);
            if let Ok((_, resolved)) = parse("own.toml", "own", &text) {
                let result = run(&resolved, 0);
                prop_assert!(
                    !matches!(result.outcome, Outcome::Crash { .. }),
                    "{text}\ncrashed: {:?}",
                    result.outcome
                );
            }
        }
    }
}

/// A knob of the user's recipe given a number TOML cannot hold is refused at its line and
/// column with TOML's limit, whatever the knob's type (here a `u64`).
#[test]
fn a_number_past_tomls_limit_is_refused_with_tomls_limit() {
    register_once();
    let text = "[workload]\nrecipe = \"fuzzed-creator\"\n\n[workload.config]\n\
                pause_ms = 18446744073709551615\n";
    let error = parse("big.toml", "big", text)
        .expect_err("refused")
        .to_string();
    assert!(
        error.starts_with("big.toml:5:")
            && error.contains("workload.config.pause_ms")
            && error.contains("at most 9223372036854775807 (TOML's integers are 64-bit signed)"),
        "{error}"
    );
}
