//! Running a check: breadth-first search over every state, single-threaded (on two cores more
//! threads were slower), then the shortest counterexample by iterative deepening, because the
//! path stateright keeps is not always the shortest one.

use std::collections::BTreeSet;

use stateright::{Checker, Expectation, HasDiscoveries, Model};

use super::{Action, RecipeModel, Workload};

/// A property that failed, and the shortest path to its failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The property's name.
    pub property: &'static str,
    /// The actions from the initial state.
    pub path: Vec<Action>,
}

/// The outcome of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// States generated (with repeats), until the end or the first violation.
    pub states: usize,
    /// Distinct states.
    pub unique_states: usize,
    /// The deepest path explored.
    pub max_depth: usize,
    /// The first `always` or `eventually` property that failed, if any.
    pub violation: Option<Violation>,
    /// Whether every state was explored (or a violation found); false when the search gave up
    /// at its state limit.
    pub complete: bool,
    /// `sometimes` properties that no state reached (a pass with any of these is an empty one;
    /// empty after a violation, where the search stopped early).
    pub unreached: Vec<&'static str>,
}

/// Checks every state of `model`, stopping at the first violation (a known-bad variant's state
/// space can be unbounded, e.g. two instances deleting each other's node for ever); a
/// violation is then shortened by iterative deepening.
pub fn check<W: Workload>(model: &RecipeModel<W>) -> Verdict {
    check_at_most(model, None)
}

/// [`check`], giving up after about `max_states` generated states (the verdict then says it is
/// incomplete unless it found a violation).
pub fn check_at_most<W: Workload>(model: &RecipeModel<W>, max_states: Option<usize>) -> Verdict {
    let mut builder = model
        .clone()
        .checker()
        .threads(1)
        .finish_when(HasDiscoveries::AnyFailures);
    if let Some(max_states) = max_states {
        builder = builder.target_state_count(max_states);
    }
    let checker = builder.spawn_bfs().join();
    let discoveries = checker.discoveries();
    let properties = model.properties();
    let failed = properties
        .iter()
        .find(|p| p.expectation != Expectation::Sometimes && discoveries.contains_key(p.name));
    let unreached = match failed {
        Some(_) => Vec::new(),
        None => properties
            .iter()
            .filter(|p| {
                p.expectation == Expectation::Sometimes && !discoveries.contains_key(p.name)
            })
            .map(|p| p.name)
            .collect(),
    };
    let violation = failed.map(|property| {
        let found = discoveries[property.name].clone().into_actions();
        Violation {
            property: property.name,
            path: shortest(model, property.name, found),
        }
    });
    let complete = violation.is_some()
        || max_states.is_none_or(|max_states| checker.state_count() < max_states);
    let unreached = if complete { unreached } else { Vec::new() };
    Verdict {
        states: checker.state_count(),
        unique_states: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        violation,
        unreached,
        complete,
    }
}

/// The shortest counterexample of `model`, searching only until a first property fails (for a
/// known-bad variant, whose full state space need not be explored).
pub fn find_violation<W: Workload>(model: &RecipeModel<W>) -> Option<Violation> {
    let checker = model
        .clone()
        .checker()
        .threads(1)
        .finish_when(HasDiscoveries::AnyFailures)
        .spawn_bfs()
        .join();
    let discoveries = checker.discoveries();
    let property = model
        .properties()
        .into_iter()
        .find(|p| p.expectation != Expectation::Sometimes && discoveries.contains_key(p.name))?;
    let found = discoveries[property.name].clone().into_actions();
    Some(Violation {
        property: property.name,
        path: shortest(model, property.name, found),
    })
}

/// The shortest path to a failure of `property`, no longer than `found`.
fn shortest<W: Workload>(
    model: &RecipeModel<W>,
    property: &'static str,
    found: Vec<Action>,
) -> Vec<Action> {
    for depth in 1..found.len() + 1 {
        let checker = model
            .clone()
            .checker()
            .threads(1)
            .target_max_depth(depth)
            .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([property])))
            .spawn_bfs()
            .join();
        if let Some(path) = checker.discovery(property) {
            return path.into_actions();
        }
    }
    found
}
