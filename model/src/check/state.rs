//! A state of the model: the server, each client's seat (machine, application, connection,
//! own log), the shared history, and the hashes that make symmetric states one.

use std::collections::{BTreeSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use stateright::Expectation;
use zkh_recipes::fencing::FencedResource;
use zkh_recipes::machine::{OpId, TimerId};
use zkh_recipes::symmetry::{
    hash_ordered, least_in_order, mix, renamed_hash, Outline, Renaming, Renamings, Symmetric,
    MAX_SYMMETRIC_CLIENTS,
};
use zkh_recipes::{Request, SessionEvent, SessionId, WatchedEvent, ZkError};

use crate::history::{Entries, History, HistoryEntry};
use crate::properties::{without_summaries, Finding};
use crate::shared::{HashCell, Shared, SharedLog, SharedMut};
use crate::zookeeper::ZkModel;

use super::{judged_bits, kept, FaultBudget, Recorded, Workload};

/// Something a client has yet to process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Inbound {
    /// The reply to operation `id`.
    Reply(OpId, Result<zkh_recipes::Response, ZkError>),
    /// A watch event, with the zxid that fired it (the history keeps it; the client gets none).
    Watch(WatchedEvent),
    /// A session event.
    Session(SessionEvent),
}

/// One client of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client<W: Workload> {
    /// The recipe.
    pub machine: W::Machine,
    /// The application.
    pub app: W::App,
    /// The session it uses.
    pub session: SessionId,
    /// Pending timers.
    pub timers: BTreeSet<TimerId>,
    /// The session is dead for this client (the server expired it, or the client was told it
    /// expired): its operations fail with `SessionExpired` and its events are not delivered,
    /// until the client has processed `Expired` and opened a new session.
    pub expired_at_server: bool,
    /// Its process crashed ([`Action::Crash`](super::Action::Crash)): it takes no step any more.
    pub crashed: bool,
    /// It lost a session and went on in a new one (it processed `Expired`).
    pub rejoined: bool,
}

/// One client's connection: what is in flight each way. Kept apart from [`Client`] because the
/// server's steps change only these (and the server), so a step shares the client's machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Queues {
    /// Issued operations the server has not applied, in order, each with the session it was
    /// issued in (a handle's operations fail once its session is gone).
    pub outbox: VecDeque<(OpId, SessionId, Request)>,
    /// What the server sent that the client has not processed, in order.
    pub inbox: VecDeque<Inbound>,
}

/// One client's place in a state: the client, its connection, and its own log, each shared
/// apart (a step changes one of them, or none).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Seat<W: Workload> {
    /// The client: its machine, application, session and timers.
    pub client: Shared<Client<W>>,
    /// Its connection.
    pub queues: Shared<Queues>,
    /// What happened to it that only its own order matters for: its requests under the
    /// recipe's directory, the watch events it got there, its session's end. Kept apart from
    /// the shared history so that interleavings which differ only in these do not make
    /// distinct states.
    pub log: SharedLog<HistoryEntry>,
}

impl<W: Workload> Seat<W> {
    /// Nothing in flight either way and no timer pending: the client waits on nothing of its
    /// own.
    pub fn idle(&self) -> bool {
        self.queues.inbox.is_empty()
            && self.queues.outbox.is_empty()
            && self.client.timers.is_empty()
    }
}

/// A state of the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State<W: Workload> {
    /// The server's data.
    pub zk: Shared<ZkModel>,
    /// The clients, in one vector (one allocation per copied state).
    pub seats: Vec<Seat<W>>,
    /// Sessions a client gave up (client-side expiry) that the server still keeps.
    pub abandoned: BTreeSet<SessionId>,
    /// Faults still allowed.
    pub budget: FaultBudget,
    /// What happened where the order between clients matters: roles, side effects, faults,
    /// losses of connection or session.
    pub shared: SharedLog<HistoryEntry>,
    /// The resource's fence (used when acting is [`Acting::Fenced`](super::Acting::Fenced)).
    pub resource: FencedResource,
    /// The verdicts of the workload's judges on this state's history, one bit each (a cache:
    /// they are computed once per state whose history changed, and are a function of it).
    pub verdicts: u8,
    /// The renamings of its clients, in a symmetry-reducing search only
    /// ([`RecipeModel::symmetric`](super::RecipeModel::symmetric)): the same in every state of a
    /// check. A state that has them hashes as its class (see [`State::class_hash`]).
    pub renamings: Option<Arc<Renamings>>,
    /// Its class hash, once asked for (and on a representative, its whole hash).
    pub class_hash: ClassHash,
}

/// A state's class hash, computed once, and the index of its canonical renaming plus one (0
/// until computed, and on a representative, which is only hashed): a cache, so a copy of the
/// state (made to be changed) starts without it, and it takes no part in comparing states.
#[derive(Debug, Default)]
pub struct ClassHash(HashCell, AtomicU8);

impl ClassHash {
    /// A cache that holds `hash`.
    fn of(hash: u64) -> ClassHash {
        ClassHash(HashCell::of(hash), AtomicU8::new(0))
    }
}

impl Clone for ClassHash {
    fn clone(&self) -> Self {
        ClassHash::default()
    }
}

impl PartialEq for ClassHash {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ClassHash {}

impl<W: Workload> Hash for State<W> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        if let Some(class) = self.class_hash() {
            state.write_u64(class);
            return;
        }
        let State {
            zk,
            seats,
            abandoned,
            budget,
            shared,
            resource,
            verdicts,
            renamings: _,
            class_hash: _,
        } = self;
        (zk, seats, abandoned, budget, shared).hash(state);
        (resource, verdicts).hash(state);
    }
}

/// A state's identities are its clients' order and everything in them and in the server
/// (each part's renamed hashes are cached with it, see [`Shared`]).
impl<W: Workload> Symmetric for State<W> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        if renaming.is_recording() {
            return renaming.unsupported();
        }
        state.write_u64(self.hash_under(renaming));
    }

    const CACHES_PARTS: bool = true;
}

impl<W: Workload> State<W> {
    /// Its class hash, if it has the renamings of its clients (or is a representative),
    /// computed once: the same for every renaming of the state, and for no other state.
    ///
    /// It is the least of the state's hashes under the renamings that put its clients in the
    /// order of their signatures ([`State::client_signatures`]; see
    /// [`zkh_recipes::symmetry::least_in_order`] for why that is a class hash). Usually one
    /// renaming does, so a state is hashed once, from its parts' cached hashes under it.
    pub fn class_hash(&self) -> Option<u64> {
        if let Some(class) = self.class_hash.0.get() {
            return Some(class);
        }
        let all = self.renamings.as_ref()?;
        let class = || {
            let (class, canonical) = self.least_under(all);
            let canonical = u8::try_from(canonical + 1).expect("at most 24 renamings");
            self.class_hash.1.store(canonical, Ordering::Relaxed);
            class
        };
        Some(self.class_hash.0.get_or(class))
    }

    /// Where its canonical renaming puts client `c` (see
    /// [`zkh_recipes::symmetry::least_in_order`]): a place that every state of its class gives
    /// the client standing for `c` there. A state with renamings finds its canonical renaming with
    /// its class hash, once; one without, under `renamings` when given (each time asked: see
    /// [`RecipeModel::canonical_news`](super::RecipeModel::canonical_news)); with neither, the
    /// place is `c`.
    pub fn canonical_place(&self, c: usize, renamings: Option<&Renamings>) -> usize {
        let (all, canonical) = match (self.renamings.as_deref(), renamings) {
            (Some(all), _) => {
                self.class_hash();
                let canonical = self.class_hash.1.load(Ordering::Relaxed);
                assert!(
                    canonical > 0,
                    "a state with renamings that is not a representative"
                );
                (all, usize::from(canonical - 1))
            }
            (None, Some(all)) => (all, self.least_under(all).1),
            (None, None) => return c,
        };
        all.get(canonical).client(c as u32) as usize
    }

    /// Its least hash under the renamings in `all` that sort its clients by signature, and
    /// the renaming that gives it (see [`zkh_recipes::symmetry::least_in_order`]).
    fn least_under(&self, all: &Renamings) -> (u64, usize) {
        let signatures = self.client_signatures(all);
        let signatures = &signatures[..self.seats.len()];
        least_in_order(all, signatures, |renaming| self.hash_under(renaming))
    }

    /// Each client's signature: what the state says about it that no renaming of the clients
    /// changes, from the outlines of the clients' machines and queues (which a step that
    /// changes them records anyway): its own, with its identities blanked, and where it appears
    /// in them; and, as a set, each other client's, and where the client appears in them.
    pub fn client_signatures(&self, all: &Renamings) -> [u64; MAX_SYMMETRIC_CLIENTS] {
        let mut seats = [[Outline::OPAQUE; 2]; MAX_SYMMETRIC_CLIENTS];
        for (outlines, seat) in seats.iter_mut().zip(&self.seats) {
            *outlines = [*seat.client.outline(all), *seat.queues.outline(all)];
        }
        let seats = &seats[..self.seats.len()];
        let seen_by = |parts: &[Outline; 2], client: usize| {
            let seen = |h, part: &Outline| mix(mix(h, part.shape), part.places[client]);
            parts.iter().fold(1, seen)
        };
        let mut signatures = [0; MAX_SYMMETRIC_CLIENTS];
        for (client, signature) in signatures.iter_mut().enumerate().take(seats.len()) {
            let others = (seats.iter().enumerate())
                .filter(|(other, _)| *other != client)
                .fold(0u64, |sum, (_, parts)| {
                    sum.wrapping_add(seen_by(parts, client))
                });
            *signature = mix(seen_by(&seats[client], client), others);
        }
        signatures
    }

    /// This state's hash under `renaming`: its parts' cached renamed hashes, the clients in
    /// their renamed order.
    pub fn hash_under(&self, renaming: &Renaming<'_>) -> u64 {
        let State {
            zk,
            seats,
            abandoned,
            budget,
            shared,
            resource,
            verdicts,
            renamings: _,
            class_hash: _,
        } = self;
        let mut hasher = crate::shared::fixed_hasher();
        hasher.write_u64(zk.hash_under(renaming));
        for position in 0..seats.len() {
            let seat = &seats[renaming.client_at(position)];
            hasher.write_u64(seat.client.hash_under(renaming));
            hasher.write_u64(seat.queues.hash_under(renaming));
            hasher.write_u64(seat.log.shared_hash_under(renaming).unwrap_or(0));
        }
        let abandoned = (!abandoned.is_empty()).then(|| renamed_hash(abandoned, renaming));
        hasher.write_u64(abandoned.unwrap_or(0));
        hasher.write_u64(shared.shared_hash_under(renaming).unwrap_or(0));
        hasher.write_u64(crate::shared::hash_of(&(budget, resource, verdicts)));
        hasher.finish()
    }
}

/// The state a symmetry-reducing search hashes in place of `state`: `state` itself, hashed as
/// its class (see [`State::class_hash`]), so that states equal up to a renaming hash alike
/// (stateright calls this for every state it reaches).
///
/// A state with renamings already hashes so (and stateright hashes it too, then throws that
/// hash away: the cache makes that free). Stateright only hashes the representative, so the
/// representative is that hash and nothing else: no client is copied (the server is one shared
/// pointer, which a state cannot be without).
pub fn representative<W: Workload>(state: &State<W>) -> State<W> {
    let Some(class) = state.class_hash() else {
        return state.clone();
    };
    State {
        zk: state.zk.clone(),
        seats: Vec::new(),
        abandoned: BTreeSet::new(),
        budget: FaultBudget::default(),
        shared: SharedLog::default(),
        resource: FencedResource::default(),
        verdicts: 0,
        renamings: None,
        class_hash: ClassHash::of(class),
    }
}

impl Symmetric for Inbound {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Inbound::Reply(id, result) => (id, result).hash_renamed(renaming, state),
            Inbound::Watch(event) => event.hash_renamed(renaming, state),
            Inbound::Session(event) => event.hash_renamed(renaming, state),
        }
    }
}

impl Symmetric for Queues {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        hash_ordered(self.outbox.iter(), renaming, state);
        hash_ordered(self.inbox.iter(), renaming, state);
    }
}

impl<W: Workload> Symmetric for Client<W> {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let Client {
            machine,
            app,
            session,
            timers,
            expired_at_server,
            crashed,
            rejoined,
        } = self;
        (machine, app, session).hash_renamed(renaming, state);
        (timers, expired_at_server, crashed, rejoined).hash(state);
    }
}

impl<W: Workload> State<W> {
    /// The history as the properties see it: the shared events, then each client's own.
    /// Nothing is copied.
    pub fn recorded(&self) -> Recorded<'_> {
        let mut entries = Vec::with_capacity(self.history_len());
        self.shared.extend_oldest_first(&mut entries);
        for seat in &self.seats {
            seat.log.extend_oldest_first(&mut entries);
        }
        Recorded { entries }
    }

    /// The history, as an owned [`History`] (for reports): the shared events, then each
    /// client's own, one tick per event.
    pub fn history(&self) -> History {
        let mut history = History::new();
        for (at, entry) in self.recorded().each().enumerate() {
            history.push(at as u64, entry.event.clone());
        }
        history
    }

    /// Client `c`.
    pub fn client(&self, c: usize) -> &Client<W> {
        &self.seats[c].client
    }

    /// Client `c`'s connection.
    pub fn queues(&self, c: usize) -> &Queues {
        &self.seats[c].queues
    }

    /// Client `c`, to change (states share what they do not change: cloning one is cheap).
    pub(super) fn client_mut(&mut self, c: usize) -> SharedMut<'_, Client<W>> {
        self.seats[c].client.to_mut()
    }

    /// Client `c`'s connection, to change.
    pub(super) fn queues_mut(&mut self, c: usize) -> SharedMut<'_, Queues> {
        self.seats[c].queues.to_mut()
    }

    /// The server's data, to change.
    pub(super) fn zk_mut(&mut self) -> SharedMut<'_, ZkModel> {
        self.zk.to_mut()
    }

    /// The findings of the workload's properties on this state.
    pub fn findings(&self) -> Vec<Finding> {
        let history = self.recorded();
        W::judges()
            .iter()
            .map(|judge| (judge.finding)(&history, self))
            .collect()
    }

    /// Whether the property named `property` holds in this state (for a `sometimes` property:
    /// whether it has happened on the way here). Panics if the workload has no such property.
    pub fn happened(&self, property: &str) -> bool {
        let index = W::judges()
            .iter()
            .position(|judge| judge.name == property)
            .unwrap_or_else(|| panic!("the workload names no property {property:?}"));
        self.verdicts & (1 << index) != 0
    }

    pub(super) fn history_len(&self) -> usize {
        self.shared.len() + self.seats.iter().map(|seat| seat.log.len()).sum::<usize>()
    }

    /// Judges the properties on this state's history. `verdicts` still holds the parent's:
    /// a `sometimes` property that happened there has happened here (the history only grows),
    /// so it is not judged again. A history judged before, with the same `sometimes` verdicts
    /// inherited, is not judged again either, where the judges read only the history
    /// ([`Workload::READS_HISTORY_ALONE`]; see [`kept`]).
    pub(super) fn judge(&mut self) {
        self.verdicts = if W::READS_HISTORY_ALONE {
            // Only the `sometimes` verdicts are inherited: the key holds those alone.
            let inherited = self.verdicts & judged_bits::<W>(Expectation::Sometimes);
            kept::judged(self, inherited, || self.judged_afresh(inherited))
        } else {
            self.judged_afresh(self.verdicts)
        };
    }

    /// The verdicts of the workload's judges on this state's history, the `sometimes` ones
    /// set in `inherited` being held already (its other bits are not read).
    fn judged_afresh(&self, inherited: u8) -> u8 {
        let history = self.recorded();
        let mut verdicts = 0;
        without_summaries(|| {
            for (index, judge) in W::judges().iter().enumerate() {
                let bit = 1 << index;
                let happened = judge.expectation == Expectation::Sometimes && inherited & bit != 0;
                if happened || (judge.finding)(&history, self).holds {
                    verdicts |= bit;
                }
            }
        });
        verdicts
    }
}
