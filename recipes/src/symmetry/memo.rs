//! Recordings shared between equal values.
//!
//! A model checker's states are made of a few parts each (a client's machine, its queues, a
//! node of the tree, an entry of a log), and the same part turns up in many states: a machine
//! in one local state meets every state of the other clients. A symmetry-reducing search
//! records each part it has not seen before ([`Recording`]), which costs a pass over the part
//! that notes every identity in it, and then hashes the part under the renamings it needs.
//!
//! [`RenamedCache`] looks a part up by its plain hash first, in a table this thread keeps of
//! the parts it recorded last. A part equal to one there shares that recording, and with it the
//! hashes already computed under each renaming. The plain hash costs a pass too, but a cheaper
//! one: no identity is looked for.
//!
//! # What a key must say
//!
//! Two values with one key must have one recording. So the key is the value's plain hash, its
//! type, and the clients' first sessions (a recording names a client by its first session).
//! A plain hash that left out a field that the renamed hash reads would break this; the
//! symmetry tests of the model checker, which compare each renamed state with the state a
//! renamed path reaches, would show it. As everywhere in the checker, two values that differ
//! but have equal 64-bit hashes are taken to be equal.
//!
//! The table holds up to [`MEMO_SLOTS`] recordings, direct-mapped ([`DirectMapped`]: a new one
//! takes the place of the one whose key falls in its slot; it starts small and grows while more
//! than half full). What is found there never changes a hash, only how soon it is known.
//!
//! # Not memoized
//!
//! A value whose parts cache their own renamed hashes ([`Symmetric::CACHES_PARTS`], such as a
//! tree of shared nodes): its plain hash would hash those parts again, and recording it costs
//! little (its parts are not recorded again).

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use super::direct::DirectMapped;
use super::{mix, renamed_hash, ByRenaming, Outline, Recording, Renaming, Renamings, Symmetric};

/// How many recordings a thread keeps for values seen again.
pub const MEMO_SLOTS: usize = 1 << 16;

thread_local! {
    /// The recordings kept, each in the slot its key picks.
    static MEMO: RefCell<DirectMapped<Arc<Recording>>> =
        const { RefCell::new(DirectMapped::new(MEMO_SLOTS)) };
}

/// `value`'s recording: the one kept under `key` (see the module docs), or a new one, kept
/// there from now on. For a value whose parts cache their own renamed hashes, the recording
/// holds no skeleton, only the value's hashes under renamings, which equal values share.
pub fn memoized<T: Symmetric + ?Sized>(value: &T, all: &Renamings, key: u64) -> Arc<Recording> {
    let key = mix(key, all.fingerprint());
    if let Some(recording) = MEMO.with_borrow(|memo| memo.get(key).cloned()) {
        return recording;
    }
    let recording = Arc::new(Recording::of(value, all));
    MEMO.with_borrow_mut(|memo| memo.insert(key, Arc::clone(&recording)));
    recording
}

/// A value's recording, found or made when first asked for; or, for a value whose parts cache
/// their own renamed hashes, its hashes under renamings (such a value has no skeleton: it is
/// hashed from its parts' hashes). The value and its key are given to each call: the cache
/// sits beside the value.
#[derive(Debug, Default)]
pub struct RenamedCache {
    recording: OnceLock<Arc<Recording>>,
    composite: ByRenaming,
}

impl RenamedCache {
    /// `value`'s recording. `key` gives the value's key (see the module docs); a value whose
    /// parts cache their own renamed hashes is recorded each time instead.
    pub fn recording<T: Symmetric + ?Sized>(
        &self,
        value: &T,
        all: &Renamings,
        key: impl FnOnce() -> u64,
    ) -> &Recording {
        self.recording.get_or_init(|| match T::CACHES_PARTS {
            true => Arc::new(Recording::of(value, all)),
            false => memoized(value, all, key()),
        })
    }

    /// `value`'s outline.
    pub fn outline<T: Symmetric + ?Sized>(
        &self,
        value: &T,
        all: &Renamings,
        key: impl FnOnce() -> u64,
    ) -> &Outline {
        match T::CACHES_PARTS {
            true => &Outline::OPAQUE,
            false => self.recording(value, all, key).outline(),
        }
    }

    /// `value`'s hash under `renaming` (never 0).
    pub fn hash_under<T: Symmetric + ?Sized>(
        &self,
        value: &T,
        renaming: &Renaming<'_>,
        key: impl FnOnce() -> u64,
    ) -> u64 {
        if T::CACHES_PARTS {
            let index = renaming.index();
            return (self.composite).get_or(index, || renamed_hash(value, renaming));
        }
        let recording = self.recording(value, renaming.all(), key);
        recording.hash_under(value, renaming)
    }

    /// Whether nothing is cached yet.
    pub fn is_empty(&self) -> bool {
        self.recording.get().is_none() && self.composite.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SessionId;

    fn renamings(first: i64) -> Renamings {
        Renamings::new((0..3).map(|c| SessionId(first + c)).collect())
    }

    #[test]
    fn equal_keys_share_a_recording_and_its_hashes() {
        let all = renamings(100);
        let value = ("c#0".to_owned(), SessionId(101));
        let (a, b) = (RenamedCache::default(), RenamedCache::default());
        assert!(a.is_empty());
        let first = a.hash_under(&value, &all.get(3), || 7);
        assert!(!a.is_empty());
        let alone = Recording::of(&value, &all);
        assert_eq!(first, alone.hash_under(&value, &all.get(3)));
        assert_ne!(
            first,
            alone.hash_under(&value, &all.get(0)),
            "client 0 is renamed"
        );
        let shared = b.recording(&value, &all, || 7);
        assert!(
            std::ptr::eq(shared, a.recording(&value, &all, || 8)),
            "one recording for one key"
        );
        // Another check's clients: another key, another recording.
        let other = renamings(200);
        let c = RenamedCache::default();
        assert!(!std::ptr::eq(c.recording(&value, &other, || 7), shared));
    }

    /// A value that says its parts cache their own renamed hashes.
    struct Composite(String);

    impl Symmetric for Composite {
        fn hash_renamed<H: std::hash::Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
            self.0.hash_renamed(renaming, state);
        }

        const CACHES_PARTS: bool = true;
    }

    #[test]
    fn a_value_recorded_each_time_is_not_kept() {
        let all = renamings(100);
        let value = Composite("c#1".to_owned());
        let (a, b) = (RenamedCache::default(), RenamedCache::default());
        let one = a.recording(&value, &all, || 7);
        let two = b.recording(&value, &all, || 7);
        assert!(!std::ptr::eq(one, two));
        for renaming in all.iter() {
            assert_eq!(
                one.hash_under(&value, &renaming),
                two.hash_under(&value, &renaming)
            );
        }
    }
}
