//! The model checker from `cargo test`, for a recipe written as a sans-IO machine (the
//! model's [`Workload`] trait, as the five built-in recipes are): every interleaving of its
//! clients within a fault budget, exhaustively where it finishes and by seeded random walks
//! where it does not.
//!
//! ```ignore
//! #[test]
//! fn my_lock_is_safe_under_a_lost_reply_and_an_expiry() {
//!     custom::model(MyLockWorkload::new("correct"))
//!         .clients(3)
//!         .faults("drop-reply=1,expire=1")
//!         .check()
//!         .assert_pass();
//! }
//! ```
//!
//! A pass requires the search to have finished with no violation and every `sometimes`
//! property (the workload's judges' and the model's own companions) reached; a search that
//! gave up at its limits fails `assert_pass` and says which limit, so that a user does not take
//! "too big" for "safe". [`ModelCheck::walks`] checks by random walks instead, for spaces the
//! exhaustive search cannot finish.
//!
//! A failing assertion writes the counterexample, each step described, to
//! `target/zkh/model/<test>.txt`, and its message names that file and the one command that runs
//! the test again (the check is deterministic: the same search finds the same path).

use zkh_model::check::{
    check_within, walk, Acting, FaultBudget, Limits, RecipeModel, Verdict, WalkLimits, WalkVerdict,
    Workload,
};

/// A check of one workload (see the module docs).
pub struct ModelCheck<W: Workload> {
    workload: W,
    clients: usize,
    faults: String,
    acting: Acting,
    limits: Limits,
    walks: Option<WalkLimits>,
}

/// Starts a check of `workload`: two clients, the budget `drop-reply=1,expire=1`, caught-up
/// acting, the exhaustive search within the checker's default limits.
pub fn model<W: Workload>(workload: W) -> ModelCheck<W> {
    ModelCheck {
        workload,
        clients: 2,
        faults: "drop-reply=1,expire=1".to_owned(),
        acting: Acting::CaughtUp,
        limits: Limits {
            max_states: Some(5_000_000),
            ..Limits::default()
        },
        walks: None,
    }
}

impl<W: Workload> ModelCheck<W> {
    /// Client processes (default 2).
    pub fn clients(mut self, clients: usize) -> Self {
        self.clients = clients;
        self
    }

    /// The fault budget, as `zkharness check --faults` writes it (`crash=1`, `expire=1,drop-reply=1`,
    /// `none`).
    pub fn faults(mut self, budget: &str) -> Self {
        budget.clone_into(&mut self.faults);
        self
    }

    /// When applications act (default: once caught up).
    pub fn acting(mut self, acting: Acting) -> Self {
        self.acting = acting;
        self
    }

    /// The exhaustive search's limits (default: the checker's, with at most 5 million states).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Checks by `walks` seeded random walks of at most 300 steps instead of exhaustively.
    pub fn walks(mut self, walks: u64, seed: u64) -> Self {
        self.walks = Some(WalkLimits {
            walks,
            seed,
            max_depth: 300,
        });
        self
    }

    /// Runs the check.
    ///
    /// # Panics
    /// If the fault budget does not parse (the message says why).
    pub fn check(self) -> ModelVerdict {
        let budget = FaultBudget::parse(&self.faults)
            .unwrap_or_else(|error| panic!("fault budget {:?}: {error}", self.faults));
        let model = RecipeModel::new(self.workload, self.clients, budget, self.acting);
        let found = match self.walks {
            None => Found::Search(check_within(&model, self.limits)),
            Some(limits) => Found::Walks(walk(&model, limits)),
        };
        let path = match &found {
            Found::Search(v) => v.violation.as_ref().map(|v| &v.path),
            Found::Walks(v) => v.violation.as_ref().map(|v| &v.path),
        };
        let steps = path.map(|path| crate::checker::check::replay(&model, path).1);
        ModelVerdict {
            faults: self.faults,
            clients: self.clients,
            found,
            steps,
            test: super::current_test(),
        }
    }
}

/// What a search or the walks found.
#[derive(Debug)]
enum Found {
    Search(Verdict),
    Walks(WalkVerdict),
}

/// The verdict of a [`ModelCheck`].
#[derive(Debug)]
pub struct ModelVerdict {
    faults: String,
    clients: usize,
    found: Found,
    /// The counterexample's steps, described, if one was found.
    steps: Option<Vec<String>>,
    /// The test that made this check (empty outside a test).
    test: String,
}

impl ModelVerdict {
    /// The property violated and the counterexample's length in steps, if one was found.
    pub fn violation(&self) -> Option<(&'static str, usize)> {
        match &self.found {
            Found::Search(v) => v.violation.as_ref().map(|v| (v.property, v.path.len())),
            Found::Walks(v) => v.violation.as_ref().map(|v| (v.property, v.path.len())),
        }
    }

    /// Requires a finished search (or every walk) with no violation and every `sometimes`
    /// property reached.
    ///
    /// # Panics
    /// With the violation, the limit the search gave up at, or the `sometimes` properties never
    /// reached.
    pub fn assert_pass(&self) {
        if let Some((property, steps)) = self.violation() {
            panic!(
                "under {}: VIOLATION of {property}, a counterexample of {steps} steps{}",
                self.faults,
                self.written(property)
            );
        }
        let unreached = match &self.found {
            Found::Search(v) => {
                assert!(
                    v.complete,
                    "under {}: the search gave up ({:?}) after {} states with no violation: \
                     not a pass; raise the limits, or check by walks",
                    self.faults, v.gave_up, v.states
                );
                &v.unreached
            }
            Found::Walks(v) => &v.unreached,
        };
        assert!(
            unreached.is_empty(),
            "under {}: an empty pass: never reached {unreached:?}",
            self.faults
        );
    }

    /// Requires a violation of `property`.
    ///
    /// # Panics
    /// If none was found, or another property was violated.
    pub fn assert_caught(&self, property: &str) {
        match self.violation() {
            Some((found, _)) if found == property => {}
            Some((found, steps)) => panic!(
                "under {}: expected a violation of {property}, found {found} ({steps} steps){}",
                self.faults,
                self.written(found)
            ),
            None => panic!("under {}: no violation of {property} found", self.faults),
        }
    }

    /// Writes the counterexample of a violation of `property` to `target/zkh/model/<test>.txt`:
    /// where it went and the command that runs the test again, for a failure's message.
    fn written(&self, property: &str) -> String {
        let Some(steps) = &self.steps else {
            return String::new();
        };
        let name = if self.test.is_empty() {
            "model"
        } else {
            &self.test
        };
        let file = (super::target_dir().join("zkh").join("model"))
            .join(format!("{}.txt", name.replace("::", "-")));
        let rerun = super::test_command(&self.test);
        let mut text = format!(
            "{property} violated, {} clients, faults {}\nrerun: {rerun}\n\n",
            self.clients, self.faults
        );
        for (index, step) in steps.iter().enumerate() {
            text.push_str(&format!("{:>4}. {step}\n", index + 1));
        }
        let written = std::fs::create_dir_all(file.parent().expect("a folder"))
            .and_then(|()| std::fs::write(&file, text));
        match written {
            Ok(()) => format!("; its steps: {}; rerun: {rerun}", file.display()),
            Err(error) => format!("; its steps not written ({error}); rerun: {rerun}"),
        }
    }
}
