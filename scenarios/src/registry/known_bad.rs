//! How each known-bad variant is caught: the `zkharness check` options under which its bug
//! shows, the property it breaks, and how long its counterexample is.
//!
//! A known-bad variant is caught only where its bug can happen. `check-then-write` writes the
//! leader's node without the latch, but a second acting master needs an application that acts
//! on a belief news has not yet corrected (`--acting unfenced`); under the default, caught-up
//! acting, its space has paths of every length and the check runs to its limit with no
//! violation. The sharded job's variants need a crash and a second cycle, or three items. A
//! check of a known-bad variant that ends without a violation prints the options of its entry
//! here, so that nobody takes that for a fixed bug. `tests/cli.rs` runs every entry through the
//! command line and requires the property and the length given; the table in docs/controls.md
//! lists the same variants.

/// One known-bad variant and a check that catches it.
#[derive(Clone, Copy, Debug)]
pub struct KnownBad {
    /// The recipe, as `zkharness check` names it.
    pub recipe: &'static str,
    /// The variant.
    pub variant: &'static str,
    /// The options, after `--variant`, of a check that catches it.
    pub options: &'static [&'static str],
    /// The property its counterexample breaks.
    pub property: &'static str,
    /// The steps of the counterexample the check prints: the shortest one, unless the check
    /// found it depth first and could not shorten it (then the path shrunk), or found it on a
    /// random walk (the walk's steps before shrinking).
    pub steps: usize,
}

impl KnownBad {
    /// The command line that catches it.
    pub fn command(&self) -> String {
        let mut words = vec!["zkharness", "check", self.recipe, "--variant", self.variant];
        words.extend_from_slice(self.options);
        words.join(" ")
    }
}

/// Every known-bad variant the model checker catches, and how.
pub const KNOWN_BAD: &[KnownBad] = &[
    KnownBad {
        recipe: "lock",
        variant: "herd",
        options: &["--faults", "none"],
        property: "herd free",
        steps: 11,
    },
    KnownBad {
        recipe: "lock",
        variant: "unprotected",
        options: &["--faults", "drop-reply=1"],
        property: "leader elected",
        steps: 23,
    },
    KnownBad {
        recipe: "lock",
        variant: "unguaranteed-delete",
        options: &["--faults", "drop-request=1"],
        property: "leader elected",
        steps: 22,
    },
    KnownBad {
        recipe: "latch",
        variant: "trust-predecessor",
        options: &["--faults", "expire=1"],
        property: "single acting master",
        steps: 22,
    },
    KnownBad {
        recipe: "latch",
        variant: "no-owner-check",
        options: &["--faults", "client-expire=1"],
        property: "claims are owned",
        steps: 22,
    },
    KnownBad {
        recipe: "latch",
        variant: "requeue-when-behind",
        options: &[],
        property: "livelock",
        steps: 40,
    },
    KnownBad {
        recipe: "latch",
        variant: "unprotected",
        options: &["--faults", "drop-reply=1"],
        property: "leader elected",
        steps: 23,
    },
    KnownBad {
        recipe: "election",
        variant: "check-then-write",
        options: &["--acting", "unfenced", "--faults", "none"],
        property: "single acting master",
        steps: 22,
    },
    KnownBad {
        recipe: "election",
        variant: "forgetful-close",
        options: &["--faults", "leader-change=1,crash=1"],
        property: "no orphaned ephemerals",
        steps: 96,
    },
    KnownBad {
        recipe: "master",
        variant: "no-watch",
        options: &["--faults", "expire=1"],
        property: "leader elected",
        steps: 9,
    },
    KnownBad {
        recipe: "job",
        variant: "trust-owners",
        options: &["--clients", "2", "--cycles", "2", "--faults", "crash=1"],
        property: "no shard lost",
        steps: 90,
    },
    KnownBad {
        recipe: "job",
        variant: "one-item-per-idle",
        options: &[
            "--clients",
            "2",
            "--items",
            "3",
            "--cycles",
            "2",
            "--max-depth",
            "400",
            "--faults",
            "crash=1",
        ],
        property: "no shard lost",
        steps: 267,
    },
    KnownBad {
        recipe: "job",
        variant: "no-cycle-claim",
        options: &["--clients", "2", "--faults", "expire=1"],
        property: "no shard executed twice",
        steps: 100,
    },
    KnownBad {
        recipe: "job",
        variant: "no-reregister",
        options: &["--clients", "2", "--faults", "expire=1"],
        property: "claims are owned",
        steps: 43,
    },
    KnownBad {
        recipe: "job",
        variant: "run-ahead",
        options: &["--clients", "2", "--faults", "crash=1"],
        property: "runs when scheduled",
        steps: 63,
    },
    KnownBad {
        recipe: "job",
        variant: "uncovered-reshard",
        options: &[
            "--cycles",
            "2",
            "--max-depth",
            "600",
            "--faults",
            "crash=1",
            "--walks",
            "1000",
        ],
        property: "no shard lost",
        steps: 379,
    },
];

/// A known-bad variant that only the simulator catches, and why the model checker cannot.
#[derive(Clone, Copy, Debug)]
pub struct SimulatorOnly {
    /// The recipe.
    pub recipe: &'static str,
    /// The variant.
    pub variant: &'static str,
    /// The catalogue control that catches it.
    pub scenario: &'static str,
    /// Why no `zkharness check` can.
    pub why: &'static str,
}

/// Every known-bad variant no model check catches.
pub const SIMULATOR_ONLY: &[SimulatorOnly] = &[SimulatorOnly {
    recipe: "latch",
    variant: "keep-on-suspend",
    scenario: "scenarios/catalog/control-latch-keep-on-suspend.toml",
    why: "its bug needs a leader cut off from every server past its session, still believing \
          it leads while the server expires it; the model's client is never cut off (a \
          server-side expiry's news is already on its way to it, so the default caught-up \
          acting never counts the stale leader, and --acting unfenced counts the correct \
          latch's too)",
}];

/// A violation the model checker finds in a faithful profile of a release: a finding about the
/// upstream code, recorded with the check that reproduces it, never fixed in the profile.
#[derive(Clone, Copy, Debug)]
pub struct ModelFinding {
    /// The recipe.
    pub recipe: &'static str,
    /// The variant (the faithful profile, `correct`).
    pub variant: &'static str,
    /// The property it breaks.
    pub property: &'static str,
    /// The options, after `--variant`, of a check that shows it.
    pub options: &'static [&'static str],
    /// What it is, in a sentence or two.
    pub what: &'static str,
}

impl ModelFinding {
    /// The command line that shows it.
    pub fn command(&self) -> String {
        let mut words = vec!["zkharness", "check", self.recipe, "--variant", self.variant];
        words.extend_from_slice(self.options);
        words.join(" ")
    }
}

/// Every finding of the model checker in a faithful profile.
pub const MODEL_FINDINGS: &[ModelFinding] = &[ModelFinding {
    recipe: "election",
    variant: "correct",
    property: zkh_model::check::OWNERSHIP,
    options: &["--clients", "2", "--faults", "client-expire=1"],
    what: "Elastic-Job 2.1.5's election leads while the leader node holds its id \
           (LeaderService.isLeader compares the data, not the node's ephemeralOwner): after a \
           client-side expiry the new session finds its id in the node the old session wrote, \
           which the server keeps until it expires the old session, and leads on it; the shape \
           of CURATOR-696. Nobody else leads meanwhile (the node is there), and its deletion \
           elects again, so \"single acting master\" holds; the belief is false for up to a \
           session timeout (docs/model-checking.md, \"Findings of the ownership oracle\")",
}];

/// The recorded finding `property`'s violation in `recipe`'s `variant` is, if it is one.
pub fn model_finding(recipe: &str, variant: &str, property: &str) -> Option<&'static ModelFinding> {
    MODEL_FINDINGS.iter().find(|entry| {
        entry.recipe == recipe && entry.variant == variant && entry.property == property
    })
}

/// The simulator-only entry of `recipe`'s `variant`, if it is one.
pub fn simulator_only(recipe: &str, variant: &str) -> Option<&'static SimulatorOnly> {
    SIMULATOR_ONLY
        .iter()
        .find(|entry| entry.recipe == recipe && entry.variant == variant)
}

/// The entry of `recipe`'s known-bad `variant`, as its registration gives it (the built-ins'
/// from [`KNOWN_BAD`], a machine recipe's from its `MachineRecipe::known_bad`); none for a
/// correct recipe, or a variant whose default check catches it.
pub fn known_bad(recipe: &str, variant: &str) -> Option<KnownBad> {
    let entry = super::machines::registered(recipe)?;
    (entry.known_bad().iter())
        .find(|entry| entry.recipe == recipe && entry.variant == variant)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Recipe;
    use zkh_model::check::{Acting, FaultBudget};

    #[test]
    fn every_entry_names_a_variant_the_command_line_knows() {
        for entry in KNOWN_BAD {
            let recipe = Recipe::new(
                entry.recipe,
                entry.variant,
                3,
                FaultBudget::default(),
                Acting::CaughtUp,
            );
            assert!(recipe.is_ok(), "{}: {recipe:?}", entry.command());
            assert_ne!(entry.variant, "correct");
        }
        // And every known-bad variant the command line knows has an entry: its error for an
        // unknown variant lists them.
        for recipe in ["lock", "latch", "election", "master", "job"] {
            let error = Recipe::new(recipe, "?", 3, FaultBudget::default(), Acting::CaughtUp)
                .expect_err("no variant is called ?");
            let known = error.split("(known: ").nth(1).expect("the known variants");
            for variant in known.trim_end_matches(')').split(", ") {
                let entry = known_bad(recipe, variant);
                let simulated = simulator_only(recipe, variant);
                // A release profile is no control: what it breaks is a finding.
                let profile = zkh_recipes::curator::Release::named(variant).is_some();
                assert_eq!(
                    entry.is_some() || simulated.is_some(),
                    variant != "correct" && !profile,
                    "{recipe} {variant}"
                );
            }
        }
        assert_eq!(
            known_bad("election", "check-then-write").map(|entry| entry.command()),
            Some(
                "zkharness check election --variant check-then-write --acting unfenced \
                 --faults none"
                    .to_owned()
            )
        );
    }
}
