//! [`Shared`]: a part of a model checker's state that states share until one of them changes it,
//! with its hash computed at most once per change, when first asked for. The server model's tree,
//! watches and sessions are each one, and so is each client of the checker's state.
//!
//! The checker clones a state for every action and hashes every state it reaches. Most actions
//! change one client, or the server, or nothing of either: sharing the rest behind an `Arc`
//! makes the clone cheap, and caching each part's hash makes the state's fingerprint a hash of
//! a few numbers.
//!
//! [`SharedLog`] does the same for an append-only log, whose hash is chained over its entries so
//! that an append hashes the new entry only.
//!
//! The hashes are foldhash's with a fixed seed: the same in every run, and several times faster
//! than SipHash on the strings the recipes' states are full of.
//!
//! Both also cache their *renamed* hashes (see [`zkh_recipes::symmetry`]):
//! the hash under a renaming of clients, computed the first time a symmetry-reducing search
//! asks for that renaming, and shared by every state that shares the value. A state's renamed
//! hash is then again a hash of a few numbers.

use std::any::TypeId;
use std::fmt::Debug;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use zkh_recipes::symmetry::{
    memoized, ByRenaming, Outline, Recording, RenamedCache, Renaming, Renamings, Symmetric,
};

/// A shared, hash-cached value. It prints as its value alone (its caches are no part of it).
#[derive(Clone)]
pub struct Shared<T> {
    value: Arc<Cached<T>>,
}

/// A shared value, and its hash and renamed hashes once asked for (a symmetry-reducing search
/// asks only for the renamed ones, any other only for the hash).
#[derive(Debug)]
struct Cached<T> {
    value: T,
    hash: HashCell,
    renamed: RenamedCache,
}

/// A hash computed at most once per holder, kept in one atomic word: 0 stands for "not yet", so
/// a hash of 0 is kept, and returned, as 1. Unlike a `OnceLock`, reading and filling it is a
/// plain load and store (no lock, no read-modify-write); two threads that fill it at once
/// compute the same hash, and either store does.
#[derive(Debug, Default)]
pub struct HashCell(AtomicU64);

impl HashCell {
    /// A cell that holds `hash`.
    pub fn of(hash: u64) -> HashCell {
        HashCell(AtomicU64::new(hash.max(1)))
    }

    /// The hash, if computed.
    pub fn get(&self) -> Option<u64> {
        let hash = self.0.load(Ordering::Relaxed);
        (hash != 0).then_some(hash)
    }

    /// The hash, computed by `compute` unless kept (and kept from now on).
    pub fn get_or(&self, compute: impl FnOnce() -> u64) -> u64 {
        self.get().unwrap_or_else(|| {
            let hash = compute().max(1);
            self.0.store(hash, Ordering::Relaxed);
            hash
        })
    }
}

impl<T: Clone> Clone for Cached<T> {
    /// A copy is made to be changed: its hashes are not copied.
    fn clone(&self) -> Self {
        Cached::new(self.value.clone())
    }
}

impl<T> Cached<T> {
    fn new(value: T) -> Cached<T> {
        Cached {
            value,
            hash: HashCell::default(),
            renamed: RenamedCache::default(),
        }
    }
}

pub(crate) fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
    foldhash::quality::FixedState::with_seed(SEED).hash_one(value)
}

const SEED: u64 = 0x5a4b_4841_524e_4553;

/// A hasher with the fixed seed.
pub(crate) fn fixed_hasher() -> foldhash::quality::FoldHasher<'static> {
    foldhash::quality::FixedState::with_seed(SEED).build_hasher()
}

impl<T: Hash + Clone> Shared<T> {
    /// Shares `value`.
    pub fn new(value: T) -> Shared<T> {
        Shared {
            value: Arc::new(Cached::new(value)),
        }
    }

    /// The value's hash, computed once.
    fn plain_hash(&self) -> u64 {
        self.value.hash.get_or(|| hash_of(&self.value.value))
    }

    /// The value, to change (its hashes are computed again when next asked for).
    pub fn to_mut(&mut self) -> SharedMut<'_, T> {
        SharedMut { shared: self }
    }
}

impl<T: Debug> Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.value.fmt(f)
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value.value
    }
}

impl<T: PartialEq + Hash + Clone> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.value, &other.value)
            || (self.plain_hash() == other.plain_hash() && self.value.value == other.value.value)
    }
}

impl<T: Eq + Hash + Clone> Eq for Shared<T> {}

impl<T: Hash + Clone> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.plain_hash());
    }
}

impl<T: Symmetric + Hash + Clone + 'static> Shared<T> {
    /// The value's outline, computed once.
    pub fn outline(&self, all: &Renamings) -> &Outline {
        self.value
            .renamed
            .outline(&self.value.value, all, || self.key())
    }

    /// The value's hash under `renaming`, computed once.
    pub fn hash_under(&self, renaming: &Renaming<'_>) -> u64 {
        let key = || self.key();
        self.value
            .renamed
            .hash_under(&self.value.value, renaming, key)
    }

    /// What equal values share a recording by (see [`RenamedCache`]): the type and the plain
    /// hash.
    fn key(&self) -> u64 {
        hash_of(&(TypeId::of::<T>(), self.plain_hash()))
    }
}

impl<T: Symmetric + Hash + Clone + 'static> Symmetric for Shared<T> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        if renaming.is_recording() {
            return renaming.unsupported();
        }
        state.write_u64(self.hash_under(renaming));
    }

    const CACHES_PARTS: bool = true;
}

/// A [`Shared`] value being changed.
pub struct SharedMut<'a, T: Hash + Clone> {
    shared: &'a mut Shared<T>,
}

impl<T: Hash + Clone> Deref for SharedMut<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.shared.value.value
    }
}

impl<T: Hash + Clone> DerefMut for SharedMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        let cached = Arc::make_mut(&mut self.shared.value);
        // Changed: its hashes no longer hold (a copy starts without any).
        if cached.hash.get().is_some() || !cached.renamed.is_empty() {
            cached.hash = HashCell::default();
            cached.renamed = RenamedCache::default();
        }
        &mut cached.value
    }
}

/// An append-only log, with a hash chained over its entries (an append hashes only the new
/// entry). It is a persistent list, newest entry first: an append allocates one link, and the
/// states it came from keep sharing every older link.
pub struct SharedLog<T> {
    newest: Option<Arc<Link<T>>>,
    len: usize,
    hash: u64,
}

struct Link<T> {
    entry: T,
    older: Option<Arc<Link<T>>>,
    /// The entry's recording (see [`Recording`]), shared by equal entries.
    entry_recording: RenamedCache,
    /// The renamed hashes of the log up to this entry, chained like the hash.
    renamed: ByRenaming,
}

impl<T> Clone for SharedLog<T> {
    fn clone(&self) -> Self {
        SharedLog {
            newest: self.newest.clone(),
            len: self.len,
            hash: self.hash,
        }
    }
}

impl<T> Default for SharedLog<T> {
    fn default() -> Self {
        SharedLog {
            newest: None,
            len: 0,
            hash: 0,
        }
    }
}

impl<T: Hash> SharedLog<T> {
    /// Appends `entry`.
    pub fn push(&mut self, entry: T) {
        self.hash = hash_of(&(self.hash, hash_of(&entry)));
        let older = self.newest.take();
        self.newest = Some(Arc::new(Link {
            entry,
            older,
            entry_recording: RenamedCache::default(),
            renamed: ByRenaming::default(),
        }));
        self.len += 1;
    }
}

/// The log of these entries, oldest first, pushed in turn (a forgetting checker builds the
/// log its kept entries would make alone this way; the states it came from keep theirs).
impl<T: Hash> FromIterator<T> for SharedLog<T> {
    fn from_iter<I: IntoIterator<Item = T>>(entries: I) -> Self {
        let mut log = SharedLog::default();
        for entry in entries {
            log.push(entry);
        }
        log
    }
}

impl<T> SharedLog<T> {
    /// How many entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = &T> {
        std::iter::successors(self.newest.as_deref(), |link| link.older.as_deref())
            .map(|link| &link.entry)
    }

    /// The entries, oldest first, appended to `into`.
    pub fn extend_oldest_first<'a>(&'a self, into: &mut Vec<&'a T>) {
        let start = into.len();
        into.extend(self.newest_first());
        into[start..].reverse();
    }
}

impl<T> Drop for SharedLog<T> {
    fn drop(&mut self) {
        // Unlink iteratively: dropping a long list recursively could overflow the stack.
        let mut next = self.newest.take();
        while let Some(link) = next {
            // The last holder of a link unlinks the next older one; any other only lets go.
            next = Arc::into_inner(link).and_then(|mut only| only.older.take());
        }
    }
}

impl<T: Debug> Debug for SharedLog<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut entries: Vec<&T> = Vec::with_capacity(self.len);
        self.extend_oldest_first(&mut entries);
        f.debug_list().entries(entries).finish()
    }
}

impl<T: PartialEq> PartialEq for SharedLog<T> {
    fn eq(&self, other: &Self) -> bool {
        if self.hash != other.hash || self.len != other.len {
            return false;
        }
        let mut ours = self.newest.as_ref();
        let mut theirs = other.newest.as_ref();
        while let (Some(a), Some(b)) = (ours, theirs) {
            if Arc::ptr_eq(a, b) {
                return true;
            }
            if a.entry != b.entry {
                return false;
            }
            ours = a.older.as_ref();
            theirs = b.older.as_ref();
        }
        true
    }
}

impl<T: Eq> Eq for SharedLog<T> {}

impl<T> Hash for SharedLog<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl<T: Symmetric + Hash + 'static> SharedLog<T> {
    /// The links from the newest back to the first that has what `has` asks for (excluded),
    /// oldest first: those whose chained hashes must be computed, in that order.
    fn missing(&self, has: impl Fn(&Link<T>) -> bool) -> Vec<&Link<T>> {
        let mut missing = Vec::new();
        let mut link = self.newest.as_deref();
        while let Some(current) = link {
            if has(current) {
                break;
            }
            missing.push(current);
            link = current.older.as_deref();
        }
        missing.reverse();
        missing
    }

    /// The log's hash under `renaming` (none for an empty log), chained over its entries:
    /// computed for the links that have none yet under it, oldest first.
    pub fn hash_under(&self, renaming: &Renaming<'_>) -> Option<u64> {
        let index = renaming.index();
        let newest = self.newest.as_deref()?;
        if let Some(hash) = newest.renamed.get(index) {
            return Some(hash);
        }
        let older = (newest.older.as_deref()).map(|older| older.renamed.get(index));
        if older != Some(None) {
            // Only the newest link is missing (the usual case: an append).
            return Some(newest.chain(older.flatten(), renaming));
        }
        let mut before = None;
        for link in self.missing(|link| link.renamed.get(index).is_some()) {
            let older = before.or_else(|| {
                let older = link.older.as_deref()?;
                Some(
                    older
                        .renamed
                        .get(index)
                        .expect("older links are renamed first"),
                )
            });
            // Passed on to the next link: kept, too, unless this renaming is one not kept.
            before = Some(link.chain(older, renaming));
        }
        Some(before.expect("the newest link was missing"))
    }
}

impl<T: Symmetric + Hash + 'static> SharedLog<T> {
    /// [`SharedLog::hash_under`], shared by equal logs: found by the log's chained hash (see
    /// [`RenamedCache`]). A log the checker rebuilt (forgetting settled entries) is usually
    /// equal to one seen before, whose links already have their hashes.
    pub fn shared_hash_under(&self, renaming: &Renaming<'_>) -> Option<u64> {
        self.newest.as_ref()?;
        let key = hash_of(&(TypeId::of::<Self>(), self.hash, self.len));
        let recording = memoized(self, renaming.all(), key);
        Some(recording.hash_under(self, renaming))
    }
}

impl<T: Symmetric + Hash + 'static> Link<T> {
    fn entry_recording(&self, all: &Renamings) -> &Recording {
        let key = || hash_of(&(TypeId::of::<T>(), &self.entry));
        self.entry_recording.recording(&self.entry, all, key)
    }

    /// The hash under `renaming` of the log up to this link, chained on the older links' hash
    /// under it (`older`, none for the oldest link), and kept.
    fn chain(&self, older: Option<u64>, renaming: &Renaming<'_>) -> u64 {
        let recording = self.entry_recording(renaming.all());
        let entry = recording.hash_under(&self.entry, renaming);
        let chained = hash_of(&(older.unwrap_or(0), entry));
        self.renamed.keep(renaming.index(), chained)
    }
}

impl<T: Symmetric + Hash + 'static> Symmetric for SharedLog<T> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        if renaming.is_recording() {
            return renaming.unsupported();
        }
        state.write_usize(self.len);
        state.write_u64(self.hash_under(renaming).unwrap_or(0));
    }

    const CACHES_PARTS: bool = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_cell_computes_once_and_keeps_zero_as_one() {
        let cell = HashCell::default();
        assert_eq!(cell.get(), None);
        let mut computed = 0;
        let mut compute = |hash: u64| {
            computed += 1;
            hash
        };
        assert_eq!(cell.get_or(|| compute(7)), 7);
        assert_eq!(cell.get_or(|| compute(8)), 7);
        assert_eq!(computed, 1);
        let zero = HashCell::default();
        assert_eq!(zero.get_or(|| 0), 1);
        assert_eq!(zero.get(), Some(1));
        assert_eq!(HashCell::of(0).get(), Some(1));
    }

    #[test]
    fn a_change_is_private_to_its_copy_and_updates_the_hash() {
        let a = Shared::new(vec![1, 2]);
        let mut b = a.clone();
        assert_eq!(a, b);
        b.to_mut().push(3);
        assert_eq!(*a, vec![1, 2]);
        assert_eq!(*b, vec![1, 2, 3]);
        assert_ne!(a, b);
        b.to_mut().pop();
        assert_eq!(a, b, "equal values are equal, whatever their history");
        assert_eq!(hash_of(&a), hash_of(&b));
    }

    #[test]
    fn a_log_hash_is_a_function_of_its_entries_in_order() {
        let mut a = SharedLog::default();
        a.push("x".to_owned());
        let mut b = a.clone();
        a.push("y".to_owned());
        b.push("y".to_owned());
        assert_eq!(a, b);
        assert_eq!(hash_of(&a), hash_of(&b));
        let mut c = SharedLog::default();
        c.push("y".to_owned());
        c.push("x".to_owned());
        assert_ne!(a, c, "order matters");
        assert_ne!(hash_of(&a), hash_of(&c));
        let mut entries = Vec::new();
        b.extend_oldest_first(&mut entries);
        assert_eq!(entries, [&"x".to_owned(), &"y".to_owned()]);
        assert_eq!(b.len(), 2);
        assert_ne!(a, SharedLog::default());
    }

    #[test]
    fn a_log_collected_from_entries_is_the_log_they_are_pushed_to() {
        let long: SharedLog<String> = ["a", "b", "c", "d"]
            .map(str::to_owned)
            .into_iter()
            .collect();
        let mut newest = Vec::new();
        long.extend_oldest_first(&mut newest);
        let rest: SharedLog<String> = newest[2..].iter().map(|entry| (*entry).clone()).collect();
        let mut pushed = SharedLog::default();
        pushed.push("c".to_owned());
        pushed.push("d".to_owned());
        assert_eq!(rest, pushed);
        assert_eq!(hash_of(&rest), hash_of(&pushed));
        assert_eq!(long.len(), 4, "the log it came from is unchanged");
        let none: SharedLog<String> = std::iter::empty().collect();
        assert_eq!(none, SharedLog::default());
        assert_eq!(hash_of(&none), hash_of(&SharedLog::<String>::default()));
    }

    #[test]
    fn a_long_log_drops_without_deep_recursion_and_copies_share_their_past() {
        let mut log = SharedLog::default();
        for entry in 0..1_000_000u32 {
            log.push(entry);
        }
        let mut branch = log.clone();
        branch.push(7);
        log.push(8);
        assert_ne!(log, branch, "the newest entries differ");
        assert_eq!(log.newest_first().nth(1), branch.newest_first().nth(1));
        drop(log);
        assert_eq!(branch.len(), 1_000_001, "the branch keeps the shared past");
        assert_eq!(branch.newest_first().last(), Some(&0));
    }
}
