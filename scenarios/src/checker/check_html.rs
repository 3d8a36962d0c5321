//! `check --html FILE` (and `--walks`): a counterexample drawn on the same timeline as a
//! simulated run's, with steps for time, so that both engines' failures look alike.
//!
//! A model checker's state keeps the shared history (roles, side effects, faults, losses of
//! connection or session) apart from each client's own log (its requests and watch events),
//! and gives the latter no time: only its order within the client matters to the search. To
//! draw a path, it is replayed and each entry gets the step at which it appeared; within a
//! step, shared entries come first. The findings' evidence, given as places in the state's own
//! order (shared, then each client's log), is mapped to the places in this history.

use std::path::Path;

use stateright::Model;

use crate::Recipe;
use zkh_model::check::{
    Action, Lasso, RecipeModel, Workload, LIVELOCK, ORPHANS, OWNERSHIP, PROGRESS, SCHEDULE,
};
use zkh_model::history::Entries;
use zkh_model::History;
use zkh_reports::timeline::{self, Page, TimeUnit};
use zkh_reports::types::FindingRecord;

/// What a step-timed history needs to know of a search.
pub(crate) struct Found<'a> {
    /// The violated property.
    pub property: &'a str,
    /// The path to the violation.
    pub path: &'a [Action],
    /// How the search went, for the page's facts: (name, value).
    pub facts: Vec<(String, String)>,
    /// For a livelock, the lasso (`path` is its stem and loop).
    pub lasso: Option<Lasso>,
}

/// The path replayed: its history with each entry at the step it appeared, and the final
/// state's findings with their evidence in that history.
fn timed<W: Workload>(model: &RecipeModel<W>, found: &Found<'_>) -> (History, Vec<FindingRecord>) {
    let model = RecipeModel {
        forget_settled: false,
        ..model.clone()
    };
    let mut state = model.init_states().remove(0);
    // The step at which each entry appeared: of the shared history, and of each client's log.
    let mut shared_steps: Vec<u64> = vec![0; state.shared.len()];
    let mut log_steps: Vec<Vec<u64>> = state.seats.iter().map(|s| vec![0; s.log.len()]).collect();
    for (step, action) in found.path.iter().enumerate() {
        state = model
            .next_state(&state, action.clone())
            .expect("a counterexample's actions are enabled");
        let step = step as u64 + 1;
        shared_steps.resize(state.shared.len(), step);
        for (steps, seat) in log_steps.iter_mut().zip(&state.seats) {
            steps.resize(seat.log.len(), step);
        }
    }
    let recorded = state.recorded();
    let entries: Vec<_> = recorded.each().collect();
    let steps: Vec<u64> = shared_steps
        .iter()
        .chain(log_steps.iter().flatten())
        .copied()
        .collect();
    assert_eq!(
        steps.len(),
        entries.len(),
        "the recorded history is the shared one, then each client's log"
    );
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&place| steps[place]);
    let mut moved_to = vec![0; entries.len()];
    let mut history = History::new();
    for (new, &place) in order.iter().enumerate() {
        moved_to[place] = new;
        history.push(steps[place], entries[place].event.clone());
    }
    let mut findings: Vec<FindingRecord> = state
        .findings()
        .iter()
        .map(|finding| {
            let mut record = FindingRecord::from(finding);
            record.evidence = finding.evidence.iter().map(|&p| moved_to[p]).collect();
            record.evidence.sort_unstable();
            record.at_us = record
                .evidence
                .last()
                .map(|&row| history.entries()[row].at_us);
            record
        })
        .collect();
    // The model checker's own properties, which no recipe judge reports: the one violated.
    let own = match found.property {
        LIVELOCK => found
            .lasso
            .as_ref()
            .map(|lasso| ("eventually", lasso.detail())),
        OWNERSHIP => Some(("always", model.unowned_detail(&state))),
        ORPHANS => Some(("always", model.orphan_detail(&state))),
        SCHEDULE => Some(("always", model.unscheduled_detail(&state))),
        PROGRESS => Some(("eventually", model.stuck_detail(&state))),
        _ => None,
    };
    if let Some((class, detail)) = own {
        findings.push(FindingRecord {
            property: found.property.to_owned(),
            class: class.to_owned(),
            holds: false,
            detail,
            explanation: explanation(found.property).to_owned(),
            evidence: Vec::new(),
            at_us: None,
        });
    }
    (history, findings)
}

/// What the property `name` means: a recipe property's explanation, or one of the model
/// checker's own (progress, ownership, livelock).
pub(crate) fn explanation(name: &str) -> &'static str {
    if name == PROGRESS {
        "The model's own invariant: in every state some application can still act, or will \
         once a pending step happens; here none can."
    } else if name == OWNERSHIP {
        "The model's own invariant: at every settled moment, every node a client believes is its \
         own (its registration, its role's node) exists and is owned by its current session."
    } else if name == ORPHANS {
        "The model's own invariant: at every settled moment, every ephemeral node a client's \
         current session owns is one the client knows is its own; an orphan holds a place or a \
         role until the session ends."
    } else if name == LIVELOCK {
        "The model checker's own liveness property: no path goes round a loop for ever without \
         progress, coming back to where it was (up to the numbers that only grow) with no role \
         taken or lost, no act and no fault, while every client's step that stays possible is \
         taken. A recipe that does keeps the ensemble busy and never settles."
    } else {
        zkh_model::properties::explanation(name)
    }
}

/// Writes the timeline of `found` to `file`.
pub(crate) fn write<W: Workload>(
    file: &Path,
    model: &RecipeModel<W>,
    recipe: &Recipe,
    found: &Found<'_>,
) -> Result<(), String> {
    let (history, findings) = timed(model, found);
    let mut facts = vec![
        ("recipe".to_owned(), recipe.name.clone()),
        ("variant".to_owned(), recipe.variant.clone()),
        ("clients".to_owned(), recipe.clients.to_string()),
        ("faults".to_owned(), recipe.faults.clone()),
        ("violation".to_owned(), found.property.to_owned()),
        ("steps".to_owned(), found.path.len().to_string()),
    ];
    facts.extend(found.facts.iter().cloned());
    let command: Vec<String> = std::env::args().skip(1).collect();
    let page = Page {
        title: format!(
            "check {} {}: {}",
            recipe.name, recipe.variant, found.property
        ),
        facts,
        repro: Some(format!("zkharness {}", command.join(" "))),
        findings: &findings,
        guarantees: &[],
        history: &history,
        unit: TimeUnit::Step,
        herd: None,
    };
    std::fs::write(file, timeline::html(&page))
        .map_err(|error| format!("cannot write {}: {error}", file.display()))
}
