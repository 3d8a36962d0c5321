//! The renamings of N clients ([`Renamings`]) and one of them at work ([`Renaming`]): how
//! identity tokens in text, sessions and client indices are renamed as they are hashed, and
//! how a value's hashing is recorded once with placeholders for its identities.

use std::cell::{Cell, RefCell};
use std::hash::{Hash, Hasher};

use crate::types::SessionId;

use super::{fixed_hasher, SetHash, IDENTITY_MARK, MAX_SYMMETRIC_CLIENTS, SHORT_TEXT};

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
    pub(super) all: &'a Renamings,
    pub(super) index: usize,
    /// Set when hashing a skeleton (see [`Recording`](super::Recording)): identities are
    /// written as placeholders and their clients recorded here, in order.
    pub(super) recorder: Option<&'a Recorder>,
}

/// What a skeleton's placeholders stand for, in order.
#[derive(Debug, Default)]
pub(super) struct Recorder {
    pub(super) slots: RefCell<Vec<Slot>>,
    /// The value holds what a skeleton cannot express (a part with renamed hashes of its own).
    pub(super) unsupported: Cell<bool>,
}

/// One placeholder of a skeleton.
#[derive(Debug)]
pub(super) enum Slot {
    /// A client's identity.
    Client(u32),
    /// The members of a set that hold identities (a renaming may reorder them), each as its
    /// own skeleton and placeholders; the set's other members are in the skeleton itself.
    Set(Vec<(u64, Vec<Slot>)>),
}

/// Writes what `slots` stand for under `renaming` to `state`: each client renamed, each set as
/// the order-free combination of its members' renamed hashes.
pub(super) fn write_slots<H: Hasher>(slots: &[Slot], renaming: &Renaming<'_>, state: &mut H) {
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

    /// Whether this renaming only records identities, for a
    /// [`Recording`](super::Recording): a value with renamed hashes of its own must then call
    /// [`Renaming::unsupported`].
    pub fn is_recording(&self) -> bool {
        self.recorder.is_some()
    }

    /// Says that the value being hashed cannot be hashed as a skeleton (see
    /// [`Recording`](super::Recording)).
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
