//! The five built-in recipes are registrations like a user's: both registries find them by
//! name with their variants, a scenario's tables are checked against what the registration
//! reads, and a recipe's paths are the same in both engines, so an exported counterexample
//! aims its triggers at the paths the model named.

use zkh_model::check::{find_violation, Acting, FaultBudget, LockWorkload, LOCK_DIR};
use zkh_scenarios::builtins::{variants, NAMES};
use zkh_scenarios::scenario::{parse, registered, registered_names};
use zkh_scenarios::{export, Recipe};
use zkh_sim::local_expiry::LocalExpiry;

#[test]
fn every_built_in_is_registered_in_both_engines_with_its_variants() {
    for name in NAMES {
        let registration = registered(name).unwrap_or_else(|| panic!("{name} is registered"));
        assert_eq!(registration.name(), name);
        assert_eq!(registration.variants(), variants(name));
        assert_eq!(registration.variants()[0], "correct", "{name}");
        for variant in registration.variants() {
            let budget = FaultBudget::parse("expire=1").expect("a budget");
            let recipe =
                Recipe::new(name, variant, 2, budget, Acting::CaughtUp).unwrap_or_else(|error| {
                    panic!("the model checker takes {name} {variant}: {error}")
                });
            assert_eq!(
                recipe.shape.is_some(),
                name == "job",
                "{name}: only the job has a shape"
            );
        }
    }
    // The registry lists the recipes beside the built-ins apart from them.
    let others = registered_names();
    assert!(others.contains(&"lock-model"), "{others:?}");
    assert!(
        NAMES.iter().all(|name| !others.contains(name)),
        "{others:?}"
    );
}

/// Each registered variant is one of the recipe's own variants in the recipes crate: its name
/// reads as that enum's value and writes back unchanged, and no two names give one value.
#[test]
fn every_registered_variant_is_a_variant_of_the_recipes_own_enum() {
    use serde::de::DeserializeOwned;
    use serde::Serialize;
    use zkh_recipes::{elastic_job, election, latch, lock, master};

    fn round_trips<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(name: &str) {
        let registration = registered(name).unwrap_or_else(|| panic!("{name} is registered"));
        let mut seen: Vec<T> = Vec::new();
        for variant in registration.variants() {
            let text = serde_json::Value::String((*variant).to_owned());
            let value: T = serde_json::from_value(text)
                .unwrap_or_else(|error| panic!("{name}: {variant} is no variant: {error}"));
            let back = serde_json::to_value(&value).expect("a variant writes");
            assert_eq!(back.as_str(), Some(*variant), "{name}: {value:?}");
            assert!(!seen.contains(&value), "{name}: {variant} twice");
            seen.push(value);
        }
    }
    round_trips::<lock::LockVariant>("lock");
    round_trips::<latch::LatchVariant>("latch");
    round_trips::<election::ElectionVariant>("election");
    round_trips::<master::MasterVariant>("master");
    round_trips::<elastic_job::JobVariant>("job");
}

#[test]
fn an_unknown_recipe_or_variant_names_what_is_registered() {
    let budget = FaultBudget::parse("none").expect("a budget");
    let error = Recipe::new("queue", "correct", 2, budget, Acting::CaughtUp).expect_err("unknown");
    assert_eq!(
        error,
        "unknown recipe \"queue\" (known: election, job, latch, lock, lock-model, master)"
    );
    let error =
        Recipe::new("master", "lossy", 2, budget, Acting::CaughtUp).expect_err("no such variant");
    assert_eq!(
        error,
        "master has no variant \"lossy\" (known: correct, no-watch)"
    );
}

/// The first problem of the scenario `text`.
fn problem(text: &str) -> String {
    match parse("tables.toml", "tables", text) {
        Ok(_) => panic!("refused:\n{text}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn a_table_the_recipe_does_not_read_is_refused_with_the_one_it_does() {
    assert_eq!(
        problem("[workload]\nrecipe = \"latch\"\n\n[workload.stock]\ncritical_ms = 5\n"),
        "tables.toml:4:1: workload.stock: the latch reads no [workload.stock] (its knobs are in \
         [workload.leader_job])"
    );
    assert_eq!(
        problem("[workload]\nrecipe = \"lock-model\"\n\n[workload.sharded]\nitems = 2\n"),
        "tables.toml:4:1: workload.sharded: the lock-model reads no [workload.sharded] (its \
         knobs are in [workload.config])"
    );
    assert_eq!(
        problem("[workload]\nrecipe = \"job\"\n\n[workload.config]\nknob = 1\n"),
        "tables.toml:4:1: workload.config: the job reads no [workload.config] (its knobs are in \
         [workload.sharded])"
    );
    assert!(
        problem("[workload]\nrecipe = \"lock-model\"\n\n[phases]\nleader_within_ms = 5000\n")
            .contains("phases.leader_within_ms: the bound of \"leader elected\", which the lock-model does not judge"),
    );
    // Each table is read by the recipe it belongs to.
    for (recipe, table) in [
        ("lock", "[workload.stock]\ncritical_ms = 5"),
        ("master", "[workload.leader_job]\ninterval_ms = 200"),
        ("job", "[workload.sharded]\nitems = 2"),
    ] {
        let text = format!("[workload]\nrecipe = \"{recipe}\"\n\n{table}\n");
        parse("tables.toml", "tables", &text)
            .unwrap_or_else(|error| panic!("{recipe} reads {table}: {error}"));
    }
}

/// A client that cannot reconnect ends its session as the recipe's client library does, unless
/// the scenario says otherwise: Curator 5 (the lock, the latch) after a session timeout
/// `SUSPENDED`; Elastic-Job's Curator 2.10 (the election, the job) with a new handle on an
/// operation past its timeouts; the others only on a server's word.
#[test]
fn local_expiry_defaults_to_the_recipes_client_library() {
    let resolved = |recipe: &str, line: &str| {
        let text = format!("[workload]\nrecipe = \"{recipe}\"\n{line}\n");
        parse("expiry.toml", "expiry", &text)
            .unwrap_or_else(|error| panic!("{recipe}: {error}"))
            .1
            .local_expiry
    };
    for recipe in ["lock", "latch"] {
        assert_eq!(resolved(recipe, ""), LocalExpiry::Curator, "{recipe}");
        let never = resolved(recipe, "local_expiry = \"never\"");
        assert_eq!(never, LocalExpiry::Never, "{recipe}, told never");
    }
    for recipe in ["election", "job"] {
        assert_eq!(resolved(recipe, ""), LocalExpiry::Curator2, "{recipe}");
        let never = resolved(recipe, "local_expiry = \"never\"");
        assert_eq!(never, LocalExpiry::Never, "{recipe}, told never");
    }
    for recipe in ["master", "lock-model"] {
        assert_eq!(resolved(recipe, ""), LocalExpiry::Never, "{recipe}");
        let curator = resolved(recipe, "local_expiry = \"curator\"");
        assert_eq!(curator, LocalExpiry::Curator, "{recipe}, told curator");
    }
}

#[test]
fn an_exported_counterexample_aims_at_the_paths_the_model_named() {
    assert_eq!(
        LOCK_DIR,
        zkh_sim::paths::LOCK_DIR,
        "one path in both engines"
    );
    let budget = FaultBudget::parse("drop-reply=1").expect("a budget");
    let recipe = Recipe::new("lock", "unprotected", 2, budget, Acting::CaughtUp).expect("the lock");
    let model = recipe.model::<LockWorkload>().expect("the lock's model");
    let violation = find_violation(&model).expect("a lost reply breaks the unprotected lock");
    let scenario = export(&recipe, violation.property, &violation.path, "test");
    let triggers = &scenario.faults.triggered;
    assert!(
        !triggers.is_empty(),
        "the lost reply is a trigger: {scenario:?}"
    );
    for trigger in triggers {
        assert_eq!(
            trigger.when.path_prefix,
            format!("{LOCK_DIR}/"),
            "{scenario:?}"
        );
    }
    assert_eq!(scenario.workload.recipe, "lock");
    assert!(!scenario.workload.fenced, "the check was not fenced");
}

/// Elastic-Job's reconcile service is the election's: a scenario of another recipe that sets
/// its interval is refused, naming the field; the election reads it.
#[test]
fn only_the_election_takes_a_reconcile_interval() {
    let text = |recipe: &str| {
        format!(
            "[workload]\nrecipe = \"{recipe}\"\n\n[workload.leader_job]\nreconcile_interval_ms = 120000\n"
        )
    };
    let refused = problem(&text("latch"));
    assert!(
        refused.contains("workload.leader_job.reconcile_interval_ms")
            && refused.contains("only the election runs Elastic-Job's reconcile service"),
        "{refused}"
    );
    let odd = text("election").replace("120000", "90000");
    let refused = problem(&odd);
    assert!(
        refused.contains("expected whole minutes") && refused.contains("found 90000"),
        "{refused}"
    );
    let (_, resolved) = parse("reconcile.toml", "reconcile", &text("election")).expect("read");
    assert_eq!(resolved.reconcile_interval_ms, 120_000);
    let (_, default) = parse(
        "reconcile.toml",
        "reconcile",
        "[workload]\nrecipe = \"election\"\n",
    )
    .expect("read");
    assert_eq!(
        default.reconcile_interval_ms,
        zkh_recipes::election::RECONCILE_INTERVAL_MS
    );
}
