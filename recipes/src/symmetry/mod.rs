//! Symmetry: clients that differ only in their names, hashed as one.
//!
//! # The idea
//!
//! A model checker runs N clients of one recipe, alike but for their identities: client 0's
//! protection uuid is `c#0` and client 1's is `c#1`, each has its own first session, and the
//! history names each by its index. Rename every identity at once (client 0's become client
//! 1's and client 1's become client 0's) and a reachable state becomes another reachable
//! state: the one the renamed actions reach. Every property quantifies over clients, so both
//! have the same verdicts, and a checker needs to explore only one of them. That is symmetry
//! reduction; with 3 clients it divides the states by up to 3! = 6.
//!
//! A checker recognises renamed states by a *renamed hash*: [`Symmetric::hash_renamed`] hashes
//! a value as it would be with every identity renamed by a [`Renaming`], without building it.
//! A state's *class hash* is one that all its renamings share and no other state has. The least
//! of its hashes under every renaming is one; [`least_in_order`] finds one that costs a single
//! renaming in most states, by putting the clients in the order of signatures that no renaming
//! changes (the `order` module's docs say why that is a class hash). A part's renamed hashes
//! come from a [`Recording`]: the part hashed once with placeholders for its identities.
//! Equal parts, which many states share, share one recording ([`RenamedCache`]).
//!
//! # What an identity is
//!
//! - **An identity token in text**: [`IDENTITY_MARK`] followed by a client's index, as in
//!   `c#0`. Tokens appear in names, paths and node data wherever a client wrote its identity
//!   (`/locks/stock/_c_c#0-lock-0000000003`); [`identity`] makes one.
//! - **A first session**: the session each client opened at the start. Sessions opened later
//!   are numbered by when they were opened, which a renaming does not change.
//! - **A client index**: a history event's `client`, and the order of clients in a state (the
//!   checker's part).
//!
//! Everything else (zxids, versions, sequence numbers, tokens, operation and timer ids) is the
//! same after a renaming.
//!
//! # Order
//!
//! A renaming can reorder what is sorted by name: a directory's children, a tree's nodes. Such
//! collections are hashed as sets ([`hash_unordered`]), which is faithful because each is
//! sorted (a sorted list is determined by its elements). A recipe whose behaviour depends on
//! how identities sort (not on sequence numbers) would break the symmetry; the model checker's
//! tests run every recipe along renamed paths to show none does.
//!
//! # Where the code is
//!
//! This file holds the [`Symmetric`] trait and the hashing of sequences and sets under a
//! renaming; `renaming.rs` the renamings themselves and what a recording keeps; `impls.rs`
//! [`Symmetric`] for the standard collections and ZooKeeper's values; `order.rs` the class
//! hash; `memo.rs` and `direct.rs` the caches of recordings; `tests.rs` the tests.
//!
//! # Not covered
//!
//! More than [`MAX_SYMMETRIC_CLIENTS`] clients: the renamings number N!, and a state whose
//! clients' signatures all tie is hashed under all of them.

mod direct;
mod impls;
mod memo;
mod order;
mod renaming;

pub use direct::DirectMapped;
pub use memo::{memoized, RenamedCache, MEMO_SLOTS};
pub use order::{least_in_order, mix, ByRenaming, Outline, Recording, CACHED_RENAMINGS};
pub use renaming::{Renaming, Renamings};

use std::hash::{BuildHasher, Hasher};

use renaming::{Recorder, Slot};

/// The character that starts an identity token in text.
pub const IDENTITY_MARK: char = '#';

/// The most clients hashed under every renaming (4! = 24 renamings).
pub const MAX_SYMMETRIC_CLIENTS: usize = 4;

/// Client `index`'s identity of kind `kind`: `c#0` for `identity("c", 0)`.
pub fn identity(kind: &str, index: usize) -> String {
    format!("{kind}{IDENTITY_MARK}{index}")
}

/// The longest text [`Renaming::hash_text`] hashes in one piece.
const SHORT_TEXT: usize = 63;

/// A value with identities in it, hashable as renamed.
///
/// A type that is also `Hash` must hash plainly every field that `hash_renamed` reads: equal
/// plain hashes share a recording (see [`RenamedCache`]).
pub trait Symmetric {
    /// Hashes this value as it would be with its identities renamed by `renaming`. Equal
    /// renamed values hash alike: `x.hash_renamed(r)` equals `r(x).hash_renamed(identity)`.
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H);

    /// Whether parts of this value cache their own renamed hashes (a tree of shared nodes, a
    /// log, a shared value): such a value is recorded each time, not looked up by its plain
    /// hash, which would hash those parts again (see [`RenamedCache`]).
    const CACHES_PARTS: bool = false;
}

/// The renamed hash of `value`, as a number (with a fixed seed: the same in every run).
pub fn renamed_hash<T: Symmetric + ?Sized>(value: &T, renaming: &Renaming<'_>) -> u64 {
    let mut hasher = fixed_hasher();
    value.hash_renamed(renaming, &mut hasher);
    hasher.finish()
}

fn fixed_hasher() -> foldhash::quality::FoldHasher<'static> {
    foldhash::quality::FixedState::with_seed(0x7379_6d6d_6574_7279).build_hasher()
}

/// Hashes `items` in order.
pub fn hash_ordered<'a, T, H>(
    items: impl ExactSizeIterator<Item = &'a T>,
    renaming: &Renaming<'_>,
    state: &mut H,
) where
    T: Symmetric + 'a,
    H: Hasher,
{
    state.write_usize(items.len());
    for item in items {
        item.hash_renamed(renaming, state);
    }
}

/// Hashes `items` as a set: a renaming may reorder what is sorted by name.
pub fn hash_unordered<T, H>(items: impl Iterator<Item = T>, renaming: &Renaming<'_>, state: &mut H)
where
    T: Symmetric,
    H: Hasher,
{
    let mut set = SetHash::default();
    let mut with_identities = Vec::new();
    for item in items {
        let hash = match renaming.recorder {
            Some(_) => {
                let own = Recorder::default();
                let recording = Renaming {
                    recorder: Some(&own),
                    ..*renaming
                };
                let hash = renamed_hash(&item, &recording);
                if own.unsupported.get() {
                    // The skeleton is dropped: hashed under each renaming instead.
                    return renaming.unsupported();
                }
                let slots = own.slots.into_inner();
                if !slots.is_empty() {
                    // Where it goes in the set depends on the renaming: a placeholder.
                    with_identities.push((hash, slots));
                    continue;
                }
                hash
            }
            None => renamed_hash(&item, renaming),
        };
        set.add(hash);
    }
    set.write(state);
    if let Some(recorder) = renaming.recorder {
        state.write_usize(with_identities.len());
        if !with_identities.is_empty() {
            recorder.slots.borrow_mut().push(Slot::Set(with_identities));
        }
    }
}

/// Hashes a set given its items' hashes, in any order, as [`hash_unordered`] does: for a set
/// whose items cache their own renamed hashes.
pub fn hash_set_of_hashes<H: Hasher>(hashes: impl Iterator<Item = u64>, state: &mut H) {
    let mut set = SetHash::default();
    hashes.for_each(|hash| set.add(hash));
    set.write(state);
}

/// An order-free combination of items' hashes: their count, their sum, and the sum of each
/// mixed (so that two pairs of hashes with one sum still differ).
#[derive(Default)]
struct SetHash {
    count: usize,
    sum: u64,
    mixed: u64,
}

impl SetHash {
    fn add(&mut self, hash: u64) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(hash);
        let mixed = hash.rotate_left(29).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.mixed = self.mixed.wrapping_add(mixed);
    }

    fn write<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.count);
        state.write_u64(self.sum);
        state.write_u64(self.mixed);
    }
}

#[cfg(test)]
mod tests;
