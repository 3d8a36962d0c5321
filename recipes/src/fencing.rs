//! Fencing: a resource that refuses side effects from a term older than one it has accepted.
//!
//! A lock or a leadership can be believed by two processes at once: a holder paused past its
//! session's expiry wakes up still believing, while another holds the role (Kleppmann, "How to do
//! distributed locking"; Curator tech note 10). The defence is at the resource: each role hands
//! out a monotonic token (the `czxid` of the node that grants it) and every side effect carries
//! it; the resource remembers the highest token it accepted and refuses anything older.
//!
//! [`Fencing::Unfenced`] is the known-bad variant: side effects carry no token the resource
//! checks, so a stale holder's writes land.

use serde::{Deserialize, Serialize};

/// Whether side effects are fenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fencing {
    /// The resource refuses tokens older than the highest it accepted.
    Fenced,
    /// The resource accepts everything (the known-bad variant).
    Unfenced,
}

/// A resource guarded by fencing tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FencedResource {
    highest: Option<i64>,
}

impl FencedResource {
    /// A resource that has accepted nothing yet.
    pub fn new() -> FencedResource {
        FencedResource::default()
    }

    /// Whether a side effect with `token` is accepted under `fencing`; an accepted token raises
    /// the bar.
    pub fn admit(&mut self, fencing: Fencing, token: i64) -> bool {
        match fencing {
            Fencing::Unfenced => true,
            Fencing::Fenced => {
                if self.highest.is_some_and(|highest| token < highest) {
                    return false;
                }
                self.highest = Some(token);
                true
            }
        }
    }

    /// The highest token accepted so far.
    pub fn highest(&self) -> Option<i64> {
        self.highest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fenced_resource_refuses_older_tokens_and_an_unfenced_one_does_not() {
        let mut resource = FencedResource::new();
        assert!(resource.admit(Fencing::Fenced, 5));
        assert!(
            resource.admit(Fencing::Fenced, 5),
            "the same term may write again"
        );
        assert!(resource.admit(Fencing::Fenced, 9));
        assert!(
            !resource.admit(Fencing::Fenced, 5),
            "an older term is refused"
        );
        assert_eq!(resource.highest(), Some(9));
        assert!(
            resource.admit(Fencing::Unfenced, 1),
            "unfenced accepts anything"
        );
    }
}
