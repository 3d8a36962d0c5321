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
