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
//!   (`/lock/_c_c#0-lock-0000000003`); [`identity`] makes one.
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
//! # Not covered
//!
//! More than [`MAX_SYMMETRIC_CLIENTS`] clients: the renamings number N!, and a state whose
//! clients' signatures all tie is hashed under all of them.

mod direct;
mod memo;
mod order;

pub use direct::DirectMapped;
pub use memo::{memoized, RenamedCache, MEMO_SLOTS};
pub use order::{least_in_order, mix, ByRenaming, Outline, Recording, CACHED_RENAMINGS};

use std::cell::{Cell, RefCell};
use std::hash::{BuildHasher, Hash, Hasher};

use crate::error::ZkError;
use crate::event::{EventType, SessionEvent, WatchedEvent};
use crate::ops::{Op, OpResult};
use crate::request::{Request, Response};
use crate::types::{CreateMode, Created, SessionId, Stat};

/// The character that starts an identity token in text.
pub const IDENTITY_MARK: char = '#';

/// The most clients hashed under every renaming (4! = 24 renamings).
pub const MAX_SYMMETRIC_CLIENTS: usize = 4;

/// Client `index`'s identity of kind `kind`: `c#0` for `identity("c", 0)`.
pub fn identity(kind: &str, index: usize) -> String {
    format!("{kind}{IDENTITY_MARK}{index}")
}

/// Every renaming of N clients: the permutations of their indices, the identity first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renamings {
    /// `permutations[k][i]`: what client `i` becomes under renaming `k`.
    permutations: Vec<Vec<u32>>,
    /// `inverses[k][j]`: the client that becomes client `j` under renaming `k`.
    inverses: Vec<Vec<u32>>,
    /// Each client's first session.
    first_sessions: Vec<SessionId>,
    /// The index of each permutation, by its code ([`permutation_code`]).
    index_by_code: Vec<u8>,
    /// A hash of the first sessions, which say who is who in a recording.
    fingerprint: u64,
}

/// A permutation of up to [`MAX_SYMMETRIC_CLIENTS`] clients as a number: 2 bits per client.
fn permutation_code(permutation: &[u32]) -> usize {
    let code = permutation.iter().enumerate();
    code.map(|(client, to)| (*to as usize) << (2 * client))
        .sum()
}

impl Renamings {
    /// The renamings of clients whose first sessions are `first_sessions` (client `i`'s at
    /// `i`).
    ///
    /// # Panics
    /// With more than [`MAX_SYMMETRIC_CLIENTS`] clients.
    pub fn new(first_sessions: Vec<SessionId>) -> Renamings {
        let clients = first_sessions.len();
        assert!(
            clients <= MAX_SYMMETRIC_CLIENTS,
            "symmetry covers at most {MAX_SYMMETRIC_CLIENTS} clients, not {clients}"
        );
        let mut permutations = Vec::new();
        permute(&mut (0..clients as u32).collect(), 0, &mut permutations);
        permutations.sort();
        let inverses = permutations
            .iter()
            .map(|to| {
                let mut inverse = vec![0; clients];
                for (from, to) in to.iter().enumerate() {
                    inverse[*to as usize] = from as u32;
                }
                inverse
            })
            .collect();
        let mut index_by_code = vec![u8::MAX; 1 << (2 * MAX_SYMMETRIC_CLIENTS)];
        for (index, permutation) in permutations.iter().enumerate() {
            index_by_code[permutation_code(permutation)] = index as u8;
        }
        let mut fingerprint = fixed_hasher();
        first_sessions.hash(&mut fingerprint);
        let fingerprint = fingerprint.finish();
        Renamings {
            permutations,
            inverses,
            first_sessions,
            index_by_code,
            fingerprint,
        }
    }

    /// How many renamings (N!).
    pub fn len(&self) -> usize {
        self.permutations.len()
    }

    /// Never: there is always the identity.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// A hash of the clients' first sessions: renamings with one fingerprint rename alike.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// How many clients.
    pub fn clients(&self) -> usize {
        self.first_sessions.len()
    }

    /// Renaming `index` (0 is the identity).
    pub fn get(&self, index: usize) -> Renaming<'_> {
        assert!(index < self.len(), "renaming {index} of {}", self.len());
        Renaming {
            all: self,
            index,
            recorder: None,
        }
    }

    /// The index of the renaming that sends client `i` to `permutation[i]`; none if
    /// `permutation` is not a permutation of the clients.
    pub fn index_of(&self, permutation: &[u32]) -> Option<usize> {
        if permutation.len() != self.clients()
            || permutation.iter().any(|to| *to as usize >= self.clients())
        {
            return None;
        }
        let index = usize::from(self.index_by_code[permutation_code(permutation)]);
        (index < self.len()).then_some(index)
    }

    /// Every renaming, the identity first.
    pub fn iter(&self) -> impl Iterator<Item = Renaming<'_>> {
        (0..self.len()).map(|index| self.get(index))
    }
}

/// Appends every permutation of `items[from..]` (after `items[..from]`) to `out`.
fn permute(items: &mut Vec<u32>, from: usize, out: &mut Vec<Vec<u32>>) {
    if from == items.len() {
        out.push(items.clone());
        return;
    }
    for pick in from..items.len() {
        items.swap(from, pick);
        permute(items, from + 1, out);
        items.swap(from, pick);
    }
}

/// One renaming of clients (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct Renaming<'a> {
    all: &'a Renamings,
    index: usize,
    /// Set when hashing a skeleton (see [`Recording`]): identities are written as
    /// placeholders and their clients recorded here, in order.
    recorder: Option<&'a Recorder>,
}

/// What a skeleton's placeholders stand for, in order.
#[derive(Debug, Default)]
struct Recorder {
    slots: RefCell<Vec<Slot>>,
    /// The value holds what a skeleton cannot express (a part with renamed hashes of its own).
    unsupported: Cell<bool>,
}

/// One placeholder of a skeleton.
#[derive(Debug)]
enum Slot {
    /// A client's identity.
    Client(u32),
    /// The members of a set that hold identities (a renaming may reorder them), each as its
    /// own skeleton and placeholders; the set's other members are in the skeleton itself.
    Set(Vec<(u64, Vec<Slot>)>),
}

/// Writes what `slots` stand for under `renaming` to `state`: each client renamed, each set as
/// the order-free combination of its members' renamed hashes.
fn write_slots<H: Hasher>(slots: &[Slot], renaming: &Renaming<'_>, state: &mut H) {
    for slot in slots {
        match slot {
            Slot::Client(client) => state.write_u32(renaming.client(*client)),
            Slot::Set(members) => {
                let mut set = SetHash::default();
                for (skeleton, slots) in members {
                    let mut member = fixed_hasher();
                    member.write_u64(*skeleton);
                    write_slots(slots, renaming, &mut member);
                    set.add(member.finish());
                }
                set.write(state);
            }
        }
    }
}

impl<'a> Renaming<'a> {
    /// Every renaming this one is among (for values that cache their hash under each).
    pub fn all(&self) -> &'a Renamings {
        self.all
    }

    /// Its place among them.
    pub fn index(&self) -> usize {
        self.index
    }

    /// What client `client` becomes.
    pub fn client(&self, client: u32) -> u32 {
        self.all.permutations[self.index]
            .get(client as usize)
            .copied()
            .unwrap_or(client)
    }

    /// The client that becomes client `position` (where the renamed state puts each client).
    pub fn client_at(&self, position: usize) -> usize {
        self.all.inverses[self.index][position] as usize
    }

    /// Whether this renaming only records identities, for a [`Recording`]: a value with
    /// renamed hashes of its own must then call [`Renaming::unsupported`].
    pub fn is_recording(&self) -> bool {
        self.recorder.is_some()
    }

    /// Says that the value being hashed cannot be hashed as a skeleton (see [`Recording`]).
    pub fn unsupported(&self) {
        if let Some(recorder) = self.recorder {
            recorder.unsupported.set(true);
        }
    }

    /// Hashes client index `client` renamed.
    pub fn hash_client<H: Hasher>(&self, client: u32, state: &mut H) {
        self.identity(client, 1, state);
    }

    /// Hashes `session` renamed (see [`Renaming::session`]).
    pub fn hash_session<H: Hasher>(&self, session: SessionId, state: &mut H) {
        match self.first_session_of(session) {
            Some(client) => self.identity(client, 2, state),
            None => {
                state.write_u8(0);
                session.hash(state);
            }
        }
    }

    /// Hashes client `client`'s identity of kind `kind`: renamed, or as a placeholder recorded
    /// for a skeleton.
    fn identity<H: Hasher>(&self, client: u32, kind: u8, state: &mut H) {
        state.write_u8(kind);
        match self.recorder {
            Some(recorder) => recorder.slots.borrow_mut().push(Slot::Client(client)),
            None => state.write_u32(self.client(client)),
        }
    }

    /// What `session` becomes: a client's first session becomes its new name's first session.
    pub fn session(&self, session: SessionId) -> SessionId {
        match self.first_session_of(session) {
            Some(client) => self.all.first_sessions[self.client(client) as usize],
            None => session,
        }
    }

    /// The client whose first session `session` is, if any.
    fn first_session_of(&self, session: SessionId) -> Option<u32> {
        let first = &self.all.first_sessions;
        first.iter().position(|s| *s == session).map(|c| c as u32)
    }

    /// Hashes `text` with its identity tokens renamed: the text between tokens as bytes, each
    /// token's client as a number. A renamed text has its tokens in the same places (one digit
    /// each, up to [`MAX_SYMMETRIC_CLIENTS`] clients), so it hashes in the same pieces.
    pub fn hash_text<H: Hasher>(&self, text: &[u8], state: &mut H) {
        state.write_usize(text.len());
        if text.len() <= SHORT_TEXT {
            return self.hash_short_text(text, state);
        }
        let mut rest = text;
        while let Some(mark) = rest.iter().position(|b| *b == IDENTITY_MARK as u8) {
            state.write(&rest[..=mark]);
            rest = &rest[mark + 1..];
            match self.token_at(rest) {
                Some(client) => {
                    self.identity(client, 3, state);
                    rest = &rest[1..];
                }
                None => state.write_u8(0),
            }
        }
        state.write(rest);
        state.write_u8(0xff);
    }

    /// [`Renaming::hash_text`] for a text of at most [`SHORT_TEXT`] bytes (most names and
    /// paths), in one piece: a copy with each token's digit renamed (or, for a skeleton, blank
    /// and recorded), and where the tokens are. A renamed text has its tokens in the same
    /// places, so it hashes the same way.
    fn hash_short_text<H: Hasher>(&self, text: &[u8], state: &mut H) {
        let mut copy = [0u8; SHORT_TEXT];
        let copy = &mut copy[..text.len()];
        copy.copy_from_slice(text);
        let mut tokens = 0u64;
        let mut from = 0;
        while let Some(mark) = copy[from..].iter().position(|b| *b == IDENTITY_MARK as u8) {
            let digit = from + mark + 1;
            from = digit;
            let Some(client) = self.token_at(&copy[digit..]) else {
                continue;
            };
            tokens |= 1 << digit;
            copy[digit] = match self.recorder {
                Some(recorder) => {
                    recorder.slots.borrow_mut().push(Slot::Client(client));
                    0
                }
                None => b'0' + self.client(client) as u8,
            };
        }
        state.write(copy);
        state.write_u64(tokens);
    }

    /// The client of the identity token whose digits start `digits` (after its mark), if one
    /// is there: one digit, naming one of the clients, and no digit after it.
    fn token_at(&self, digits: &[u8]) -> Option<u32> {
        let client = u32::from(digits.first()?.wrapping_sub(b'0'));
        let one_digit = !digits.get(1).is_some_and(u8::is_ascii_digit);
        (client < self.all.clients() as u32 && one_digit).then_some(client)
    }
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

/// Sorted by key, which a renaming may reorder: hashed as a set of entries.
impl<K: Symmetric, V: Symmetric> Symmetric for std::collections::BTreeMap<K, V> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        hash_unordered(self.iter(), renaming, state);
    }
}

/// Sorted, which a renaming may reorder: hashed as a set.
impl<T: Symmetric> Symmetric for std::collections::BTreeSet<T> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        hash_unordered(self.iter(), renaming, state);
    }
}

/// Implements [`Symmetric`] for types with no identity in them: they hash as themselves.
#[macro_export]
macro_rules! symmetric_as_hash {
    ($($type:ty),* $(,)?) => {
        $(impl $crate::symmetry::Symmetric for $type {
            fn hash_renamed<H: ::std::hash::Hasher>(
                &self,
                _: &$crate::symmetry::Renaming<'_>,
                state: &mut H,
            ) {
                ::std::hash::Hash::hash(self, state);
            }
        })*
    };
}

crate::symmetric_as_hash!(bool, i32, i64, u8, u64, usize, CreateMode, EventType, ZkError);

impl Symmetric for str {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        renaming.hash_text(self.as_bytes(), state);
    }
}

impl Symmetric for String {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        renaming.hash_text(self.as_bytes(), state);
    }
}

impl Symmetric for std::sync::Arc<str> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        renaming.hash_text(self.as_bytes(), state);
    }
}

/// Node data and other bytes: text, as far as identity tokens go.
impl Symmetric for [u8] {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        renaming.hash_text(self, state);
    }
}

impl Symmetric for SessionId {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        renaming.hash_session(*self, state);
    }
}

impl<T: Symmetric> Symmetric for Option<T> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        match self {
            None => state.write_u8(0),
            Some(value) => {
                state.write_u8(1);
                value.hash_renamed(renaming, state);
            }
        }
    }
}

impl<A: Symmetric, B: Symmetric> Symmetric for (A, B) {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        self.0.hash_renamed(renaming, state);
        self.1.hash_renamed(renaming, state);
    }
}

impl<A: Symmetric, B: Symmetric, C: Symmetric> Symmetric for (A, B, C) {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        self.0.hash_renamed(renaming, state);
        self.1.hash_renamed(renaming, state);
        self.2.hash_renamed(renaming, state);
    }
}

impl<T: Symmetric + ?Sized> Symmetric for &T {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        (**self).hash_renamed(renaming, state);
    }
}

impl Symmetric for Stat {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let Stat {
            czxid,
            mzxid,
            pzxid,
            ctime,
            mtime,
            version,
            cversion,
            aversion,
            ephemeral_owner,
            data_length,
            num_children,
        } = *self;
        (czxid, mzxid, pzxid, ctime, mtime).hash(state);
        (version, cversion, aversion, data_length, num_children).hash(state);
        SessionId(ephemeral_owner).hash_renamed(renaming, state);
    }
}

impl Symmetric for Created {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        self.path.hash_renamed(renaming, state);
        self.stat.hash_renamed(renaming, state);
    }
}

impl Symmetric for WatchedEvent {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let WatchedEvent {
            event_type,
            path,
            zxid,
        } = self;
        event_type.hash(state);
        path.hash_renamed(renaming, state);
        zxid.hash(state);
    }
}

impl Symmetric for SessionEvent {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            SessionEvent::Connected { session_id } | SessionEvent::Reconnected { session_id } => {
                session_id.hash_renamed(renaming, state);
            }
            SessionEvent::Disconnected | SessionEvent::Expired | SessionEvent::Closed => {}
        }
    }
}

/// Hashes an operation on `path`: its data, if it carries any, and the rest (`tail`), which
/// holds no identity (a mode, a version, a watch flag).
fn hash_write<H: Hasher>(
    path: &str,
    data: Option<&[u8]>,
    tail: impl Hash,
    renaming: &Renaming<'_>,
    state: &mut H,
) {
    path.hash_renamed(renaming, state);
    if let Some(data) = data {
        data.hash_renamed(renaming, state);
    }
    tail.hash(state);
}

impl Symmetric for Op {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Op::Check { path, version } | Op::Delete { path, version } => {
                hash_write(path, None, version, renaming, state);
            }
            Op::Create { path, data, mode } => hash_write(path, Some(data), mode, renaming, state),
            Op::SetData {
                path,
                data,
                version,
            } => hash_write(path, Some(data), version, renaming, state),
        }
    }
}

impl Symmetric for OpResult {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            OpResult::Check | OpResult::Delete => {}
            OpResult::Create { path, stat } => {
                path.hash_renamed(renaming, state);
                stat.hash_renamed(renaming, state);
            }
            OpResult::SetData { stat } => stat.hash_renamed(renaming, state),
        }
    }
}

impl Symmetric for Request {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Request::Create { path, data, mode } => {
                hash_write(path, Some(data), mode, renaming, state);
            }
            Request::Delete { path, version } => hash_write(path, None, version, renaming, state),
            Request::Exists { path, watch }
            | Request::GetData { path, watch }
            | Request::GetChildren { path, watch } => {
                hash_write(path, None, watch, renaming, state);
            }
            Request::SetData {
                path,
                data,
                version,
            } => hash_write(path, Some(data), version, renaming, state),
            Request::Multi(ops) => hash_ordered(ops.iter(), renaming, state),
            Request::Sync { path } => path.hash_renamed(renaming, state),
        }
    }
}

impl Symmetric for Response {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Response::Created(created) => created.hash_renamed(renaming, state),
            Response::Deleted | Response::Synced => {}
            Response::Exists(stat) => stat.hash_renamed(renaming, state),
            Response::Data(data, stat) => {
                data.as_slice().hash_renamed(renaming, state);
                stat.hash_renamed(renaming, state);
            }
            // Sorted by name: a renaming may reorder them.
            Response::Children(names, stat) => {
                hash_unordered(names.iter(), renaming, state);
                stat.hash_renamed(renaming, state);
            }
            Response::SetData(stat) => stat.hash_renamed(renaming, state),
            Response::Multi(results) => hash_ordered(results.iter(), renaming, state),
        }
    }
}

impl<T: Symmetric, E: Symmetric> Symmetric for Result<T, E> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        match self {
            Ok(value) => {
                state.write_u8(0);
                value.hash_renamed(renaming, state);
            }
            Err(error) => {
                state.write_u8(1);
                error.hash_renamed(renaming, state);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// `value`'s hash under each renaming of `all`, from one recording of its skeleton.
    fn skeleton_hashes<T: Symmetric>(value: &T, all: &Renamings) -> Vec<u64> {
        let recording = Recording::of(value, all);
        all.iter()
            .map(|renaming| recording.hash_under(value, &renaming))
            .collect()
    }

    fn renamings() -> Renamings {
        Renamings::new(vec![SessionId(10), SessionId(11), SessionId(12)])
    }

    /// The renaming of 3 clients that maps 0 to 1, 1 to 2 and 2 to 0.
    fn rotation(all: &Renamings) -> Renaming<'_> {
        all.iter()
            .find(|r| (r.client(0), r.client(1), r.client(2)) == (1, 2, 0))
            .expect("a rotation is among the permutations")
    }

    #[test]
    fn there_is_one_renaming_per_permutation_the_identity_first() {
        let all = renamings();
        assert_eq!(all.len(), 6);
        let identity = all.get(0);
        assert!((0..3).all(|c| identity.client(c) == c));
        let distinct: std::collections::BTreeSet<Vec<u32>> = all
            .iter()
            .map(|r| (0..3).map(|c| r.client(c)).collect())
            .collect();
        assert_eq!(distinct.len(), 6);
        for renaming in all.iter() {
            let permutation: Vec<u32> = (0..3).map(|c| renaming.client(c)).collect();
            assert_eq!(all.index_of(&permutation), Some(renaming.index()));
        }
        assert_eq!(
            all.index_of(&[0, 0, 1]),
            None,
            "two clients cannot both become 0"
        );
        assert_eq!(
            all.index_of(&[0, 1]),
            None,
            "a renaming renames every client"
        );
        assert_eq!(all.index_of(&[0, 1, 7]), None, "there is no client 7");
        let rotation = rotation(&all);
        assert_eq!(rotation.client_at(1), 0, "client 0 becomes client 1");
    }

    #[test]
    fn a_renamed_hash_is_the_hash_of_the_renamed_value() {
        let all = renamings();
        let rotation = rotation(&all);
        let identity = all.get(0);
        let path = format!("/lock/_c_{}-lock-0000000003", identity_of(0));
        let renamed = format!("/lock/_c_{}-lock-0000000003", identity_of(1));
        assert_eq!(
            renamed_hash(&path, &rotation),
            renamed_hash(&renamed, &identity)
        );
        assert_ne!(
            renamed_hash(&path, &identity),
            renamed_hash(&renamed, &identity),
            "different names hash apart"
        );
        assert_eq!(
            renamed_hash(&SessionId(12), &rotation),
            renamed_hash(&SessionId(10), &identity),
            "client 2's first session becomes client 0's"
        );
        assert_eq!(
            renamed_hash(&SessionId(99), &rotation),
            renamed_hash(&SessionId(99), &identity),
            "a later session keeps its number"
        );
    }

    fn identity_of(client: usize) -> String {
        identity("c", client)
    }

    #[test]
    fn children_sorted_by_name_hash_alike_after_a_renaming_reorders_them() {
        let all = renamings();
        let rotation = rotation(&all);
        let names = |a: usize, b: usize| {
            let mut names = vec![
                format!("_c_{}-latch-0000000001", identity_of(a)),
                format!("_c_{}-latch-0000000002", identity_of(b)),
            ];
            names.sort();
            Response::Children(names, Stat::default())
        };
        // Clients 0 and 2 become 1 and 0: the renamed names sort the other way round.
        assert_eq!(
            renamed_hash(&names(0, 2), &rotation),
            renamed_hash(&names(1, 0), &all.get(0))
        );
        assert_ne!(
            renamed_hash(&names(0, 2), &all.get(0)),
            renamed_hash(&names(2, 0), &all.get(0)),
            "which client holds which sequence number still counts"
        );
    }

    #[test]
    fn a_skeleton_holds_sets_whose_members_hold_identities() {
        // A watch table: paths with identities in them, each watched by sessions.
        let all = Renamings::new(vec![SessionId(10), SessionId(11), SessionId(12)]);
        let table = |a: usize, b: usize, watcher: i64| {
            let mut watched = std::collections::BTreeMap::new();
            let node = |c: usize| format!("/latch/_c_{}-latch-0000000001", identity_of(c));
            watched.insert(node(a), BTreeSet::from([SessionId(watcher), SessionId(99)]));
            watched.insert(node(b), BTreeSet::new());
            watched.insert("/latch".to_owned(), BTreeSet::from([SessionId(watcher)]));
            (watched, identity_of(a))
        };
        let value = table(0, 2, 11);
        let skeletons = skeleton_hashes(&value, &all);
        for renaming in all.iter() {
            // Client c becomes renaming.client(c); its first session, 10 + c, goes with it.
            let to = |c: usize| renaming.client(c as u32) as usize;
            let renamed = table(to(0), to(2), 10 + to(1) as i64);
            assert_eq!(
                skeletons[renaming.index()],
                skeleton_hashes(&renamed, &all)[0],
                "renaming {}",
                renaming.index()
            );
            // As faithful as hashing each renamed value.
            assert_eq!(
                renamed_hash(&value, &renaming),
                renamed_hash(&renamed, &all.get(0))
            );
        }
        let other = skeleton_hashes(&table(0, 2, 12), &all);
        assert!(
            !other.contains(&skeletons[0]),
            "who watches still counts, under every renaming"
        );
    }

    #[test]
    fn many_identities_hash_renamed_as_the_renamed_value_does() {
        let all = renamings();
        // More identities than one packed word holds, in an order a renaming keeps.
        let names = |clients: &[usize]| -> String {
            let names: Vec<String> = clients.iter().map(|c| identity_of(*c)).collect();
            names.join("/")
        };
        let order: Vec<usize> = (0..40).map(|i| (i * 7 + i / 3) % 3).collect();
        let value = (names(&order), identity_of(1));
        let hashes = skeleton_hashes(&value, &all);
        for renaming in all.iter() {
            let to = |c: usize| renaming.client(c as u32) as usize;
            let renamed: Vec<usize> = order.iter().map(|c| to(*c)).collect();
            let renamed = (names(&renamed), identity_of(to(1)));
            assert_eq!(
                hashes[renaming.index()],
                skeleton_hashes(&renamed, &all)[0],
                "renaming {}",
                renaming.index()
            );
        }
        let mut swapped = order.clone();
        swapped.swap(0, 20);
        assert_ne!(order, swapped, "the swap changes the order");
        let other = skeleton_hashes(&(names(&swapped), identity_of(1)), &all);
        assert!(
            !other.contains(&hashes[0]),
            "which identity stands where still counts"
        );
    }

    #[test]
    fn text_without_tokens_and_long_text_hash_as_themselves() {
        let all = renamings();
        let rotation = rotation(&all);
        let plain = "/job/leader/election/instance".to_owned();
        assert_eq!(
            renamed_hash(&plain, &rotation),
            renamed_hash(&plain, &all.get(0))
        );
        let long = format!("{}/{}", "x".repeat(200), identity_of(2));
        let renamed = format!("{}/{}", "x".repeat(200), identity_of(0));
        assert_eq!(
            renamed_hash(&long, &rotation),
            renamed_hash(&renamed, &all.get(0))
        );
        let out_of_range = "a#7 and a# alone".to_owned();
        assert_eq!(
            renamed_hash(&out_of_range, &rotation),
            renamed_hash(&out_of_range, &all.get(0))
        );
    }
}
