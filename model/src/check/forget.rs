//! Forgetting settled history: what of a state's history the checker keeps, and what it drops
//! (see the module docs of [`check`](super), "Forgetting settled history").

use std::collections::BTreeSet;

use stateright::Expectation;

use super::{judged_bits, Inbound, RecipeModel, SharedLog, State, Workload};
use crate::history::{HistoryEntry, HistoryEvent};

impl<W: Workload> RecipeModel<W> {
    /// Keeps the summary of each client's own entries ([`Workload::summarize_own`]) and, if the
    /// shared history grew in this step, drops the shared entries no judge can use
    /// ([`Workload::settled_shared`]); only if every `always` property holds (a violation is
    /// reported as found, on its whole history).
    pub(super) fn drop_settled(
        workload: &W,
        parent: &State<W>,
        state: &mut State<W>,
        watch_delivered: bool,
    ) {
        let shared_grew = state.shared.len() != parent.shared.len();
        let own_entries = state.seats.iter().any(|seat| !seat.log.is_empty());
        if !own_entries && !shared_grew {
            return;
        }
        let always = judged_bits::<W>(Expectation::Always);
        if state.verdicts & always != always {
            return;
        }
        if shared_grew {
            Self::drop_settled_shared(workload, state);
        }
        // The parent's own logs are summaries already (every `always` property held there
        // too, as it does here), and a summary of a summary is itself. A log needs summing up
        // again only if this step wrote to it, or if it delivered a watch event: a wakeup
        // kept because its transaction had events in flight may be done with.
        let stale: Vec<usize> = (state.seats.iter().zip(&parent.seats))
            .enumerate()
            .filter(|(_, (seat, before))| {
                !seat.log.is_empty() && (watch_delivered || seat.log != before.log)
            })
            .map(|(index, _)| index)
            .collect();
        if stale.is_empty() {
            return;
        }
        let in_flight: BTreeSet<i64> = state
            .seats
            .iter()
            .flat_map(|seat| seat.queues.inbox.iter())
            .filter_map(|inbound| match inbound {
                Inbound::Watch(event) => Some(event.zxid),
                _ => None,
            })
            .collect();
        for index in stale {
            let seat = &mut state.seats[index];
            let mut own = Vec::with_capacity(seat.log.len());
            seat.log.extend_oldest_first(&mut own);
            let Some(summary) = workload.summarize_own(&own, &in_flight) else {
                continue;
            };
            if !summary.iter().eq(own.iter().copied()) {
                seat.log = summary.into_iter().collect();
            }
        }
    }

    /// Puts the shared history in the workload's canonical form, if it has one
    /// ([`Workload::canonical_shared`]); otherwise drops the oldest entries that no judge can
    /// use any more ([`Workload::settled_shared`]). Either way the entries kept are renumbered
    /// from 0: the shared history becomes the one they would make alone.
    ///
    /// Where the workload reads nothing but the history and the verdicts to do so
    /// ([`Workload::READS_HISTORY_ALONE`]), each distinct shared history is forgotten once
    /// (see [`kept`](super::kept)).
    fn drop_settled_shared(workload: &W, state: &mut State<W>) {
        if W::READS_HISTORY_ALONE {
            state.shared = super::kept::forgotten(state, || {
                Self::forgotten_shared(workload, state).unwrap_or_else(|| state.shared.clone())
            });
        } else if let Some(forgotten) = Self::forgotten_shared(workload, state) {
            state.shared = forgotten;
        }
    }

    /// The shared history of `state` after [`drop_settled_shared`](Self::drop_settled_shared),
    /// if that changes it.
    pub(super) fn forgotten_shared(
        workload: &W,
        state: &State<W>,
    ) -> Option<SharedLog<HistoryEntry>> {
        let mut shared = Vec::with_capacity(state.shared.len());
        state.shared.extend_oldest_first(&mut shared);
        if let Some(canonical) = workload.canonical_shared(&shared, state) {
            let unchanged = canonical.len() == shared.len()
                && (shared.iter().zip(&canonical)).all(|(entry, event)| entry.event == *event);
            return (!unchanged).then(|| Self::timed_by_place(canonical));
        }
        let settled = workload.settled_shared(&shared, state);
        if settled == 0 {
            return None;
        }
        let renumbered = shared[settled..].iter().enumerate().map(|(at, entry)| {
            debug_assert_eq!(entry.at_us, (settled + at) as u64, "timed by place");
            entry.event.clone()
        });
        Some(Self::timed_by_place(renumbered))
    }

    /// A shared history of `events`, each timed by its place.
    fn timed_by_place(events: impl IntoIterator<Item = HistoryEvent>) -> SharedLog<HistoryEntry> {
        (events.into_iter().enumerate())
            .map(|(at, event)| HistoryEntry {
                at_us: at as u64,
                event,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use stateright::Model;
    use zkh_recipes::master::MasterVariant;

    use super::super::{Acting, FaultBudget, MasterWorkload};
    use super::*;

    /// A history no judge can use any more is dropped whole, also where the workload puts what
    /// it keeps in a canonical form (which, for nothing kept, is nothing).
    #[test]
    fn a_history_settled_to_its_end_is_dropped_whole_in_a_canonical_form_too() {
        let model = RecipeModel {
            workload: MasterWorkload {
                variant: MasterVariant::Correct,
            },
            clients: 2,
            budget: FaultBudget::parse("drop-reply=1").expect("a budget"),
            acting: Acting::CaughtUp,
            forget_settled: true,
            symmetric: false,
            one_invariant: false,
            reached: Default::default(),
            canonical_news: None,
            partial_order: true,
            reads_first: false,
            claims_judged: true,
        };
        let parent = model.init_states().remove(0);
        assert!(parent.shared.is_empty(), "a fresh state has no history");
        let mut state = parent.clone();
        // A fault, with no role or act before it: no judge of the master reads it.
        RecipeModel::<MasterWorkload>::fault(&mut state, "a fault".into());
        assert!(
            model.workload.canonical_shared(&[], &state).is_some(),
            "the master has a canonical form"
        );
        RecipeModel::drop_settled(&model.workload, &parent, &mut state, false);
        assert!(
            state.shared.is_empty(),
            "kept: {} entries",
            state.shared.len()
        );
    }
}
