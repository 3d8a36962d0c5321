//! A property a user writes: a name, a class (`always`, `eventually`, `sometimes`), an
//! explanation, and a function of the run's history that passes with a summary or fails with
//! a [`Violation`] and its evidence. The built-in properties of `zkh_model::properties` are
//! reused with [`Property::from_finding`].

use std::sync::Arc;

use zkh_model::properties::{Class, Finding};
use zkh_model::History;

/// Why a property failed: the first violation in words, and the places in the history (entry
/// indices) that show it, the last being where it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The violation, in words.
    pub detail: String,
    /// The history entries that show it.
    pub evidence: Vec<usize>,
}

impl Violation {
    /// A violation explained by `detail`, with no evidence yet.
    pub fn new(detail: impl Into<String>) -> Self {
        Violation {
            detail: detail.into(),
            evidence: Vec::new(),
        }
    }

    /// This violation, shown by the history entries `entries`.
    pub fn at(mut self, entries: impl IntoIterator<Item = usize>) -> Self {
        self.evidence.extend(entries);
        self
    }
}

/// The moments of a run a property may be judged against, in simulated microseconds since the
/// run started (the history's clock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moments {
    /// Every client process had connected and been started
    /// ([`ClientCtx::every_client_started_us`](super::ClientCtx::every_client_started_us)).
    pub started_us: u64,
    /// The faults were healed: the liveness phase began (an `eventually` property's clock).
    pub healed_us: u64,
    /// The run ended.
    pub ended_us: u64,
}

/// How a property is judged: the run's history and its moments in, a finding out.
type Judge = Arc<dyn Fn(&History, &Moments) -> Finding + Send + Sync>;

/// One property of a recipe, judged on every run's history.
#[derive(Clone)]
pub struct Property {
    /// Its name, as reports and `expect.violation` give it.
    pub name: &'static str,
    /// `always` (safety: a violation fails the run), `eventually` (liveness, judged at the end
    /// of the run), or `sometimes` (a companion: a pass in which it never happened is empty).
    pub class: Class,
    /// What it means, in one sentence.
    pub explanation: &'static str,
    judge: Judge,
}

impl std::fmt::Debug for Property {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Property")
            .field("name", &self.name)
            .field("class", &self.class)
            .finish_non_exhaustive()
    }
}

impl Property {
    fn with(
        name: &'static str,
        class: Class,
        explanation: &'static str,
        check: impl Fn(&History) -> Result<String, Violation> + Send + Sync + 'static,
    ) -> Self {
        let judge = move |history: &History, _: &Moments| match check(history) {
            Ok(summary) => Finding::new(name, class, None, || summary),
            Err(violation) => Finding::new(name, class, Some(violation.detail), String::new)
                .with_evidence(history, violation.evidence),
        };
        Property {
            name,
            class,
            explanation,
            judge: Arc::new(judge),
        }
    }

    /// A safety property: `check` passes with a summary of what it saw, or fails with the first
    /// violation.
    pub fn always(
        name: &'static str,
        explanation: &'static str,
        check: impl Fn(&History) -> Result<String, Violation> + Send + Sync + 'static,
    ) -> Self {
        Property::with(name, Class::Always, explanation, check)
    }

    /// A liveness property, judged on the whole run (after the heal and the liveness phase).
    pub fn eventually(
        name: &'static str,
        explanation: &'static str,
        check: impl Fn(&History) -> Result<String, Violation> + Send + Sync + 'static,
    ) -> Self {
        Property::with(name, Class::Eventually, explanation, check)
    }

    /// A `sometimes` companion: `check` says what happened, or why it did not (`Err`).
    pub fn sometimes(
        name: &'static str,
        explanation: &'static str,
        check: impl Fn(&History) -> Result<String, Violation> + Send + Sync + 'static,
    ) -> Self {
        Property::with(name, Class::Sometimes, explanation, check)
    }

    /// A property whose judge already gives a [`Finding`]: one of `zkh_model::properties`
    /// (`mutual_exclusion`, `single_acting_master`, `leader_elected`, ...), bound to the
    /// recipe's paths and resources. Its name and class are the finding's.
    pub fn from_finding(
        name: &'static str,
        class: Class,
        explanation: &'static str,
        judge: impl Fn(&History) -> Finding + Send + Sync + 'static,
    ) -> Self {
        Property::timed(name, class, explanation, move |history, _| judge(history))
    }

    /// A property judged against the run's [`Moments`] too (a leader elected within a bound of
    /// the heal; a job's cycles counted from the start), giving a [`Finding`] as
    /// [`from_finding`](Self::from_finding)'s judge does.
    pub fn timed(
        name: &'static str,
        class: Class,
        explanation: &'static str,
        judge: impl Fn(&History, &Moments) -> Finding + Send + Sync + 'static,
    ) -> Self {
        Property {
            name,
            class,
            explanation,
            judge: Arc::new(judge),
        }
    }

    /// Its finding on `history`, a run with `moments`.
    pub fn judge(&self, history: &History, moments: &Moments) -> Finding {
        (self.judge)(history, moments)
    }
}
