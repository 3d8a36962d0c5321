//! A state's class hash from one renaming, not from all of them.
//!
//! # The problem
//!
//! A symmetry-reducing search needs, for each state, a *class hash*: one that every renaming
//! of the state shares and no other state has. The least of the state's hashes under all N!
//! renamings is one, but it hashes every part a step changes N! times (6 with 3 clients, 24
//! with 4), and the state itself as often.
//!
//! # Ordering the clients
//!
//! Give each client a *signature*: a hash of what the state says about that client that no
//! renaming changes, such as where the client appears in each part and what its own seat holds
//! with every identity blanked. Renaming the state moves each signature with its client. Now
//! try only the renamings that put the clients in the order of their signatures, and keep the
//! least hash among them ([`least_in_order`]). If no two signatures are equal, that is one
//! renaming. Ties are allowed: every order among the tied clients is tried.
//!
//! The result is still a class hash:
//!
//! - **All renamings of a state get the same one.** Take a state and a renamed copy. The
//!   renamings that sort the copy's clients, each applied to the copy, give exactly the states
//!   that the sorting renamings of the original give. So the least hash is the same.
//! - **States in different classes get different ones.** The class hash is the hash of one of
//!   the state's own renamings, so two states with the same class hash are renamings of each
//!   other. The usual 64-bit hash collisions are the only exception, as anywhere.
//!
//! Signatures only choose which renamings to try; they need not tell clients apart. A weak
//! signature makes more ties, so more renamings get tried, and the result does not change. A
//! signature that a renaming *does* change (one that mentions a client's index, say) would
//! break the first point; `tests` shows that it does.
//!
//! # Outlines
//!
//! Signatures are built from parts' [`Outline`]s. An outline has two things:
//!
//! - the part's *shape*: its hash with every identity blanked, which is the skeleton of a
//!   [`Recording`];
//! - for each client, the *places* where it appears: a hash of the positions of its
//!   placeholders, or 0 where it does not appear.
//!
//! Renaming a part keeps its shape and moves each client's places to the client's new name. A
//! part that caches parts of its own (a tree of nodes, a log of entries) has no skeleton, and
//! its outline says nothing ([`Outline::OPAQUE`]). The model checker builds signatures from
//! the clients' own parts, which are recorded anyway; the server's parts and the logs would
//! cost more than the ties they break.
//!
//! A part computes its outline once, and its hash under each renaming when first asked
//! ([`RenamedCache`](super::RenamedCache)). A step usually keeps the clients' order, so an
//! unchanged part usually answers from its cache.

use std::sync::atomic::{AtomicU64, Ordering};

use super::renaming::{write_slots, Recorder, Slot};
use super::{fixed_hasher, renamed_hash, Renaming, Renamings, Symmetric, MAX_SYMMETRIC_CLIENTS};
use std::cell::{Cell, RefCell};
use std::hash::Hasher;

/// What a value says about identities that no renaming changes (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outline {
    /// The value with every identity blanked.
    pub shape: u64,
    /// For each client, where in the value it appears; 0 where it does not.
    pub places: [u64; MAX_SYMMETRIC_CLIENTS],
}

impl Outline {
    /// The outline of a value about whose identities nothing is said. No renaming changes it,
    /// so it is always a valid outline, only an uninformative one.
    pub const OPAQUE: Outline = Outline {
        shape: 0,
        places: [0; MAX_SYMMETRIC_CLIENTS],
    };
}

/// Mixes two numbers into one (a folded 128-bit multiply, as foldhash does).
pub fn mix(a: u64, b: u64) -> u64 {
    let product = u128::from(a ^ 0x243f_6a88_85a3_08d3) * u128::from(b ^ 0x1319_8a2e_0370_7344);
    (product as u64) ^ ((product >> 64) as u64)
}

/// A value hashed once with placeholders for its identities, so that its hash under any
/// renaming costs only the placeholders; and its outline.
///
/// Most values are a *skeleton* with identities in places. Hash the value once, writing a
/// placeholder for each identity and noting whose identity it stands for. The value's hash
/// under a renaming is then the skeleton's hash followed by the renamed clients, in order. Two
/// values that are renamings of each other have the same skeleton, so this tells values apart
/// as well as hashing each renamed value would.
///
/// A set whose members hold identities is one placeholder: a renaming may reorder its members.
/// It keeps each such member's skeleton and placeholders, and under a renaming it stands for
/// the order-free combination of those members' renamed hashes, which is how the set itself
/// hashes. A value with renamed hashes of its own, which must not be computed again here, has
/// no skeleton: it is hashed under each renaming as it is.
#[derive(Debug)]
pub struct Recording {
    outline: Outline,
    /// The skeleton's hash and its placeholders; none for a value with renamed hashes of its
    /// own, which is hashed under each renaming as it is (cheaply: its parts cache theirs).
    skeleton: Option<(u64, Box<[Slot]>)>,
    /// Its hashes under renamings, once asked for.
    hashes: ByRenaming,
}

impl Recording {
    /// Records `value`.
    pub fn of<T: Symmetric + ?Sized>(value: &T, all: &Renamings) -> Recording {
        // Placeholders go to this thread's scratch list, then to a list of their exact size.
        let recorder = Recorder {
            slots: RefCell::new(SCRATCH.take()),
            ..Recorder::default()
        };
        let recording = Renaming {
            all,
            index: 0,
            recorder: Some(&recorder),
        };
        let skeleton = renamed_hash(value, &recording);
        let mut scratch = recorder.slots.into_inner();
        if recorder.unsupported.get() {
            scratch.clear();
            SCRATCH.set(scratch);
            return Recording {
                outline: Outline::OPAQUE,
                skeleton: None,
                hashes: ByRenaming::default(),
            };
        }
        let mut places = [0; MAX_SYMMETRIC_CLIENTS];
        add_places(&scratch, &mut places);
        let slots = scratch.drain(..).collect();
        SCRATCH.set(scratch);
        Recording {
            outline: Outline {
                shape: skeleton,
                places,
            },
            skeleton: Some((skeleton, slots)),
            hashes: ByRenaming::default(),
        }
    }

    /// The value's outline.
    pub fn outline(&self) -> &Outline {
        &self.outline
    }

    /// The hash of `value` (the value recorded) under `renaming`, computed once, and never 0:
    /// for a value with renamed hashes of its own, [`renamed_hash`]; for any other a hash that
    /// is as faithful.
    pub fn hash_under<T: Symmetric + ?Sized>(&self, value: &T, renaming: &Renaming<'_>) -> u64 {
        self.hashes
            .get_or(renaming.index(), || match &self.skeleton {
                Some((skeleton, slots)) => {
                    let mut hasher = fixed_hasher();
                    hasher.write_u64(*skeleton);
                    write_slots(slots, renaming, &mut hasher);
                    hasher.finish()
                }
                None => renamed_hash(value, renaming),
            })
    }
}

thread_local! {
    /// Where [`Recording::of`] records placeholders before it knows how many there are (a
    /// value recorded inside another takes a fresh list, and leaves its own here).
    static SCRATCH: Cell<Vec<Slot>> = const { Cell::new(Vec::new()) };
}

/// Adds to each client's places the positions of its placeholders in `slots`: the n-th
/// placeholder is at position n; in a set (whose members a renaming may reorder) at its
/// member's skeleton and its position there.
fn add_places(slots: &[Slot], places: &mut [u64; MAX_SYMMETRIC_CLIENTS]) {
    for (position, slot) in slots.iter().enumerate() {
        match slot {
            Slot::Client(client) => {
                let client = *client as usize;
                places[client] = places[client].wrapping_add(mix(position as u64, 1));
            }
            Slot::Set(members) => {
                for (skeleton, slots) in members {
                    let mut inner = [0; MAX_SYMMETRIC_CLIENTS];
                    add_places(slots, &mut inner);
                    for (places, inner) in places.iter_mut().zip(inner) {
                        if inner != 0 {
                            let at = mix(position as u64, *skeleton);
                            *places = places.wrapping_add(mix(at, inner));
                        }
                    }
                }
            }
        }
    }
}

/// How many renamings a [`ByRenaming`] keeps hashes for: all of 3 clients'.
pub const CACHED_RENAMINGS: usize = 6;

/// A value's hashes under renamings, each kept once computed (for the first
/// [`CACHED_RENAMINGS`]; the rest are computed each time).
#[derive(Debug, Default)]
pub struct ByRenaming([AtomicU64; CACHED_RENAMINGS]);

impl ByRenaming {
    /// The hash under renaming `index`, if kept.
    pub fn get(&self, index: usize) -> Option<u64> {
        let hash = self.0.get(index)?.load(Ordering::Relaxed);
        (hash != 0).then_some(hash)
    }

    /// Keeps `hash` as the hash under renaming `index` (0 stands for "not yet", so a hash of
    /// 0 is kept, and returned, as 1).
    pub fn keep(&self, index: usize, hash: u64) -> u64 {
        let hash = hash.max(1);
        if let Some(kept) = self.0.get(index) {
            kept.store(hash, Ordering::Relaxed);
        }
        hash
    }

    /// Whether no hash is kept.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|kept| kept.load(Ordering::Relaxed) == 0)
    }

    /// The hash under renaming `index`, computed by `compute` unless kept.
    pub fn get_or(&self, index: usize, compute: impl FnOnce() -> u64) -> u64 {
        match self.get(index) {
            Some(hash) => hash,
            None => self.keep(index, compute()),
        }
    }
}

/// The least of `hash_under`'s hashes over the renamings that put the clients in the order of
/// their `signatures` (client `i`'s at `i`): a class hash, if no renaming changes a client's
/// signature (see the module docs); and the index of the first renaming that gives it, the
/// *canonical* renaming.
///
/// The canonical renaming puts the clients of every state of a class in one order: if it
/// sends client `c` of a state to place `p`, it sends the client that a renaming of the state
/// puts in `c`'s place to `p` too. (Where two renamings give the least hash, the state is its
/// own renaming by the one undone by the other, which maps the two choices onto each other.)
/// So a choice among clients made by their canonical places, such as which client's news
/// the model checker delivers first, is the same choice in every state of a class.
pub fn least_in_order(
    all: &Renamings,
    signatures: &[u64],
    mut hash_under: impl FnMut(&Renaming<'_>) -> u64,
) -> (u64, usize) {
    let clients = signatures.len();
    assert_eq!(clients, all.clients(), "one signature per client");
    let mut order = [0u32; MAX_SYMMETRIC_CLIENTS];
    for (position, client) in order.iter_mut().enumerate().take(clients) {
        *client = position as u32;
    }
    let order = &mut order[..clients];
    order.sort_unstable_by_key(|client| signatures[*client as usize]);
    let signature_at = |position: usize| signatures[order[position] as usize];
    if (1..clients).all(|p| signature_at(p - 1) < signature_at(p)) {
        // No ties, the usual case: one renaming, which sends each client to its place in
        // the order.
        let mut places = [0u32; MAX_SYMMETRIC_CLIENTS];
        for (place, client) in order.iter().enumerate() {
            places[*client as usize] = place as u32;
        }
        let index = all.index_of(&places[..clients]);
        let index = index.expect("places in an order are a permutation");
        return (hash_under(&all.get(index)), index);
    }
    let mut least: Option<(u64, usize)> = None;
    for renaming in all.iter() {
        let signature_at = |position| signatures[renaming.client_at(position)];
        let sorted = (1..clients).all(|p| signature_at(p - 1) <= signature_at(p));
        if sorted {
            let hash = hash_under(&renaming);
            if least.is_none_or(|(least, _)| hash < least) {
                least = Some((hash, renaming.index()));
            }
        }
    }
    least.expect("some renaming sorts any signatures")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SessionId;
    use std::collections::BTreeSet;

    fn renamings(clients: usize) -> Renamings {
        Renamings::new((0..clients as i64).map(|c| SessionId(100 + c)).collect())
    }

    /// Toy states: two texts with identity tokens, in order, and a set of them.
    type Toy = (String, String, BTreeSet<String>);

    fn toy(sequence: &[&str], set: &[&str]) -> Toy {
        let text = |at: usize| sequence.get(at).map_or(String::new(), |t| t.to_string());
        let set = set.iter().map(|t| t.to_string()).collect();
        (text(0), text(1), set)
    }

    /// `toy` with its tokens renamed by `renaming` (built, not hashed).
    fn renamed(toy: &Toy, renaming: &Renaming<'_>) -> Toy {
        let text = |t: &String| {
            let mut out = String::new();
            let mut chars = t.chars().peekable();
            while let Some(c) = chars.next() {
                out.push(c);
                if c == '#' {
                    let digit = chars.next().expect("a digit after each mark");
                    let client = digit.to_digit(10).expect("a digit");
                    out.push(char::from_digit(renaming.client(client), 10).expect("a digit"));
                }
            }
            out
        };
        (text(&toy.0), text(&toy.1), toy.2.iter().map(text).collect())
    }

    /// Each client's signature from the toy's outline: its places (a valid signature), or, to
    /// show that the test can fail, its places and its index (which a renaming changes).
    fn signatures(toy: &Toy, all: &Renamings, broken: bool) -> Vec<u64> {
        let outline = *Recording::of(toy, all).outline();
        (0..all.clients())
            .map(|c| mix(outline.places[c], if broken { c as u64 } else { 0 }))
            .collect()
    }

    fn class_hash(toy: &Toy, all: &Renamings, broken: bool) -> u64 {
        let recording = Recording::of(toy, all);
        least_in_order(all, &signatures(toy, all, broken), |renaming| {
            recording.hash_under(toy, renaming)
        })
        .0
    }

    /// Every toy here, with 3 clients.
    fn toys() -> Vec<Toy> {
        vec![
            toy(&["c#0", "c#1"], &[]),
            toy(&["c#0", "c#0"], &["/x/c#1", "/x/c#2"]),
            toy(&["a#1-b#2", "c#0"], &["/x/c#0-y#1", "/x/c#1-y#0"]),
            toy(&["a#1-b#2", "c#0"], &["/x/c#0-y#0", "/x/c#1-y#1"]),
            toy(&["c#2", "plain"], &["/x/c#0", "/y/c#1"]),
            toy(&[], &["/x/c#0-y#1", "/x/c#1-y#2", "/x/c#2-y#0"]),
            toy(&[], &["/x/c#0-y#2", "/x/c#1-y#0", "/x/c#2-y#1"]),
            toy(&["c#0-c#1", "c#2"], &[]),
        ]
    }

    #[test]
    fn renamed_values_share_a_class_hash_and_others_do_not() {
        let all = renamings(3);
        for toy in toys() {
            let own = class_hash(&toy, &all, false);
            let brute = |t: &Toy| {
                all.iter()
                    .map(|r| renamed_hash(t, &r))
                    .collect::<BTreeSet<_>>()
            };
            for renaming in all.iter() {
                let other = renamed(&toy, &renaming);
                assert_eq!(class_hash(&other, &all, false), own, "{toy:?} as {other:?}");
            }
            for other in toys() {
                let same_class = brute(&toy).contains(&renamed_hash(&other, &all.get(0)));
                let same_hash = class_hash(&other, &all, false) == own;
                assert_eq!(same_class, same_hash, "{toy:?} against {other:?}");
            }
        }
    }

    #[test]
    fn the_canonical_renaming_puts_renamed_clients_in_one_place() {
        let all = renamings(3);
        let canonical = |toy: &Toy| {
            let recording = Recording::of(toy, &all);
            least_in_order(&all, &signatures(toy, &all, false), |renaming| {
                recording.hash_under(toy, renaming)
            })
            .1
        };
        let mut without_automorphism = 0;
        for toy in toys() {
            let own = all.get(canonical(&toy));
            let distinct = all
                .iter()
                .map(|r| renamed_hash(&toy, &r))
                .collect::<BTreeSet<_>>();
            for renaming in all.iter() {
                let other = renamed(&toy, &renaming);
                let theirs = all.get(canonical(&other));
                assert_eq!(
                    renamed(&other, &theirs),
                    renamed(&toy, &own),
                    "{toy:?} as {other:?}: one canonical state"
                );
                if distinct.len() == all.len() {
                    for client in 0..3 {
                        assert_eq!(
                            theirs.client(renaming.client(client)),
                            own.client(client),
                            "{toy:?} as {other:?}: client {client}'s place"
                        );
                    }
                }
            }
            without_automorphism += usize::from(distinct.len() == all.len());
        }
        assert!(without_automorphism > 0, "some toy has no automorphism");
    }

    #[test]
    fn a_signature_that_a_renaming_changes_breaks_the_class_hash() {
        let all = renamings(3);
        let broken = toys().iter().any(|toy| {
            let own = class_hash(toy, &all, true);
            all.iter()
                .any(|renaming| class_hash(&renamed(toy, &renaming), &all, true) != own)
        });
        assert!(broken, "an index in the signature must show");
    }

    #[test]
    fn outlines_move_with_their_clients() {
        let all = renamings(3);
        for toy in toys() {
            let outline = *Recording::of(&toy, &all).outline();
            for renaming in all.iter() {
                let other = *Recording::of(&renamed(&toy, &renaming), &all).outline();
                assert_eq!(other.shape, outline.shape, "{toy:?}");
                for client in 0..3 {
                    let moved = renaming.client(client) as usize;
                    assert_eq!(
                        other.places[moved], outline.places[client as usize],
                        "{toy:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_recording_keeps_the_hashes_it_computed() {
        let all = renamings(3);
        let value = toy(&["c#0", "c#1"], &["/x/c#2"]);
        let recording = Recording::of(&value, &all);
        for renaming in all.iter() {
            assert_eq!(recording.hashes.get(renaming.index()), None);
            let hash = recording.hash_under(&value, &renaming);
            assert_eq!(recording.hashes.get(renaming.index()), Some(hash));
            let again = Recording::of(&renamed(&value, &renaming), &all);
            assert_eq!(
                again.hash_under(&value, &all.get(0)),
                hash,
                "as the renamed value"
            );
        }
        assert_ne!(
            recording.hash_under(&value, &all.get(0)),
            recording.hash_under(&value, &all.get(1)),
            "a renaming that swaps two present clients changes the hash"
        );
    }
}
