//! A user's recipe is refused before anything runs when it cannot be registered: a name that is
//! a built-in recipe's, a name a scenario cannot write, no variant, or a variant listed twice.
//! The binary exits 64 with the message (`examples/id-allocator/tests/cli.rs` runs a good one);
//! the `cargo test` builder panics with it.

use zkh_scenarios::custom::{registration_problem, ClientCtx, ClientRun, Property, SimRecipe};

/// A recipe whose name and variants the test chooses; it does nothing.
macro_rules! recipe {
    ($type:ident, $name:expr, $variants:expr) => {
        struct $type;
        impl SimRecipe for $type {
            const NAME: &'static str = $name;
            const VARIANTS: &'static [&'static str] = $variants;
            type Config = ();
            fn client(_: &'static str, _: &(), _: ClientCtx) -> ClientRun {
                Box::pin(async {})
            }
            fn properties(_: &()) -> Vec<Property> {
                Vec::new()
            }
        }
    };
}

recipe!(ShadowsTheLock, "lock", &["correct"]);
recipe!(Spaced, "my queue", &["correct"]);
recipe!(NoVariant, "queue", &[]);
recipe!(Twice, "queue", &["correct", "lossy", "lossy"]);
recipe!(Fine, "queue", &["correct", "lossy"]);

#[test]
fn a_recipe_that_cannot_be_registered_is_refused_with_why() {
    let problem = registration_problem::<ShadowsTheLock>().expect("refused");
    assert_eq!(
        problem,
        "recipe \"lock\" cannot be registered: the name is a built-in recipe's (built in: lock, \
         latch, election, master, job); give it a name of its own"
    );
    let problem = registration_problem::<Spaced>().expect("refused");
    assert!(
        problem.contains("lowercase letters, digits and inner hyphens"),
        "{problem}"
    );
    let problem = registration_problem::<NoVariant>().expect("refused");
    assert!(problem.contains("has no variant"), "{problem}");
    let problem = registration_problem::<Twice>().expect("refused");
    assert!(
        problem.ends_with("variant \"lossy\" is listed twice"),
        "{problem}"
    );
    assert_eq!(registration_problem::<Fine>(), None);
}

/// (The builder runs the simulator, so it exists in the simulated build only.)
#[cfg(madsim)]
#[test]
#[should_panic(expected = "recipe \"lock\" cannot be registered")]
fn the_test_builder_refuses_a_name_that_shadows_a_built_in() {
    let _ = zkh_scenarios::custom::sim::<ShadowsTheLock>("correct");
}

recipe!(Queue, "registered-queue", &["correct"]);
recipe!(OtherQueue, "registered-queue", &["correct", "lossy"]);

/// Registering is idempotent for one crate and version, and refused for a name another crate
/// or version registered, or a built-in's; a scenario then finds the registered recipe by name.
#[test]
fn a_name_is_registered_once_and_found_by_scenarios() {
    use zkh_scenarios::custom::register;
    register::<Queue>("queue-crate", "1.0.0").expect("registered");
    register::<Queue>("queue-crate", "1.0.0").expect("the same registration again");
    let refused = register::<OtherQueue>("other-crate", "2.0.0").expect_err("the name is taken");
    assert_eq!(
        refused,
        "recipe \"registered-queue\" cannot be registered by other-crate 2.0.0: queue-crate \
         1.0.0 registered a recipe of that name"
    );
    let refused = register::<ShadowsTheLock>("queue-crate", "1.0.0").expect_err("a built-in's");
    assert!(
        refused.contains("the name is a built-in recipe's"),
        "{refused}"
    );
    let text = "[workload]\nrecipe = \"registered-queue\"\nvariant = \"lossy\"\n";
    let error = zkh_scenarios::scenario::parse("q.toml", "q", text).expect_err("no such variant");
    assert_eq!(
        error.to_string(),
        "q.toml:3:11: workload.variant: unknown variant \"lossy\" (known: correct)"
    );
    let unknown = "[workload]\nrecipe = \"registered-queu\"\n";
    let error = zkh_scenarios::scenario::parse("q.toml", "q", unknown).expect_err("unknown");
    // The names this process registered, in order: other tests of this binary register
    // recipes of their own, so the list holds at least these two.
    let message = error.to_string();
    let listed: Vec<&str> = message
        .split_once("registered: ")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(names, _)| names.split(", ").collect())
        .unwrap_or_default();
    assert!(
        listed.contains(&"lock-model") && listed.contains(&"registered-queue"),
        "the registered names are listed: {message}"
    );
    assert!(listed.is_sorted(), "in order: {message}");
    let (_, resolved) = zkh_scenarios::scenario::parse(
        "q.toml",
        "q",
        "[workload]\nrecipe = \"registered-queue\"\n",
    )
    .expect("read");
    assert_eq!(
        resolved.recipe.package().as_deref(),
        Some("queue-crate 1.0.0")
    );
}
