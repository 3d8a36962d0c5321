//! The properties as stateright asks them: each judge's verdict, quiescence, and the
//! model's own invariant that applications make progress.

use stateright::{Expectation, Property};

use zkh_recipes::SessionId;

use super::{judged_bits, Judge, RecipeModel, Seat, State, Workload, MAX_JUDGES};

/// The name of the model's own invariant that no application is stuck
/// ([`RecipeModel::makes_progress`]).
pub const PROGRESS: &str = "applications make progress";

/// The name of the model's own invariant that what a client believes it owns is its own
/// ([`RecipeModel::owns_its_claims`]).
pub const OWNERSHIP: &str = "claims are owned";

/// The model's own invariant: no orphaned ephemeral node ([`RecipeModel::knows_its_ephemerals`]).
pub const ORPHANS: &str = "no orphaned ephemerals";

/// The model's own invariant that every run happens in a cycle a schedule fired
/// ([`RecipeModel::runs_when_scheduled`]); the simulator judges it by the clock
/// (`properties::runs_when_scheduled`).
pub const SCHEDULE: &str = "runs when scheduled";

/// The `sometimes` companion of [`OWNERSHIP`]: some settled moment had a claim to judge, so a
/// pass of "claims are owned" is not an empty one.
pub const CLAIM_JUDGED: &str = "a claim was judged";

/// The `sometimes` companion of [`ORPHANS`]: some quiet moment had an ephemeral node of a live
/// session to judge.
pub const EPHEMERAL_JUDGED: &str = "an ephemeral was judged";

/// The bit of [`CLAIM_JUDGED`] in [`Reached`](super::Reached) (the judges' take the low eight).
const CLAIM_JUDGED_BIT: u16 = 1 << 8;

/// The bit of [`EPHEMERAL_JUDGED`] in [`Reached`](super::Reached).
const EPHEMERAL_JUDGED_BIT: u16 = 1 << 9;

/// The name of the `always` and `eventually` properties given to stateright as one (see
/// [`RecipeModel::one_invariant`]); never reported: the search names the one that failed.
pub const INVARIANTS: &str = "every always and eventually property";

impl<W: Workload> RecipeModel<W> {
    /// Whether `state` is a settled moment: nothing in flight to or from any live client, and
    /// every machine at rest ([`Workload::at_rest`]).
    pub(super) fn settled(&self, state: &State<W>) -> bool {
        state.seats.iter().all(|seat| {
            seat.client.crashed
                || (seat.queues.inbox.is_empty()
                    && seat.queues.outbox.is_empty()
                    && self.workload.at_rest(&seat.client.machine))
        })
    }

    /// Whether client `c`'s act may come now, as far as waiting goes: it does not wait for a
    /// settled moment, or `settled` says this is one and no live client's application is
    /// behind it ([`Workload::act_waits_for`]: the job's later cycles).
    pub(super) fn act_in_step(&self, state: &State<W>, c: usize, settled: bool) -> bool {
        let app = &state.client(c).app;
        if !self.workload.act_waits_for_settled(app) {
            return true;
        }
        let mut live = state.seats.iter().filter(|seat| !seat.client.crashed);
        settled
            && !live.any(|seat| {
                let other = &seat.client;
                self.workload
                    .act_waits_for(app, &other.app, &other.machine, &state.zk)
            })
    }

    /// The model's own invariant: an application with an act to take is not stuck. It is
    /// stuck where every live client is idle (nothing in flight, no timer) and the server has
    /// no abandoned session left to expire, so that only a fault could move the state on, and
    /// yet its act is not enabled, because it waits for a
    /// settled moment that never comes (a machine that is not at rest with nothing to do). No
    /// liveness property judges such a state (it is not quiescent), so it is reported here.
    /// This found a job instance that queued its failover check at the end of a cycle and
    /// left it waiting for an input that never came.
    pub fn makes_progress(&self, state: &State<W>) -> bool {
        let live = || state.seats.iter().filter(|seat| !seat.client.crashed);
        let wants_to_act = live().any(|seat| self.workload.can_act(&seat.client.app, &state.zk));
        // An abandoned session the server has yet to expire will go, and its ephemerals with
        // it: a machine waiting on one of them is not stuck.
        if !wants_to_act || !live().all(|seat| seat.idle()) || !state.abandoned.is_empty() {
            return true;
        }
        let settled = self.settled(state);
        (0..state.seats.len()).any(|c| {
            let client = state.client(c);
            !client.crashed
                && self.workload.can_act(&client.app, &state.zk)
                && self.act_in_step(state, c, settled)
        })
    }

    /// The model's own invariant [`OWNERSHIP`]: at a settled moment (nothing in flight to or
    /// from any live client, every machine at rest), every node a live client believes is its
    /// own ([`Workload::claimed_nodes`]: its registration, its role's node) exists and is owned
    /// by the client's current session. A client that believes it holds what the server no
    /// longer gives it is wrong whatever any other property says: no other client may have
    /// acted on it yet, and nothing may be lost, but the belief is false.
    pub fn owns_its_claims(&self, state: &State<W>) -> bool {
        !W::CLAIMS || !self.claims_judged || self.unowned_claim(state).is_none()
    }

    /// The first claim [`owns_its_claims`](Self::owns_its_claims) finds false in `state`: the
    /// client, the node, and who owns it (none if it does not exist).
    pub fn unowned_claim(&self, state: &State<W>) -> Option<(usize, String, Option<SessionId>)> {
        if !self.settled(state) {
            return None;
        }
        let tree = state.zk.tree();
        for (c, seat) in state.seats.iter().enumerate() {
            let client = &seat.client;
            if client.crashed || client.expired_at_server {
                continue;
            }
            for path in self.workload.claimed_nodes(&client.machine) {
                let owner = tree.get(&path).map(|node| node.ephemeral_owner);
                if owner != Some(Some(client.session)) {
                    return Some((c, path, owner.flatten()));
                }
            }
        }
        None
    }

    /// Why [`owns_its_claims`](Self::owns_its_claims) fails in `state`.
    pub fn unowned_detail(&self, state: &State<W>) -> String {
        match self.unowned_claim(state) {
            Some((c, path, None)) => format!(
                "at a settled moment, client {c} believes {path} is its own, and it does not exist"
            ),
            Some((c, path, Some(owner))) => format!(
                "at a settled moment, client {c} believes {path} is its own, and session {:#x} \
                 owns it, not the client's current one",
                owner.0
            ),
            None => "every claim is owned".to_owned(),
        }
    }

    /// The model's own invariant [`ORPHANS`], the other side of [`OWNERSHIP`]: at a quiet
    /// moment (settled, and no live client waiting on a timer), every ephemeral node a live client's current session owns is one the client
    /// knows is its own ([`Workload::known_nodes`]). A node its client lost track of (a create
    /// whose reply was lost and never found, a delete taken as done that never happened) stays
    /// until the session ends: it holds a place in a queue or a role no one will give up.
    pub fn knows_its_ephemerals(&self, state: &State<W>) -> bool {
        !W::KNOWS_ITS_EPHEMERALS || !self.claims_judged || self.orphan(state).is_none()
    }

    /// The first orphan [`knows_its_ephemerals`](Self::knows_its_ephemerals) finds in `state`:
    /// the client and the node.
    pub fn orphan(&self, state: &State<W>) -> Option<(usize, String)> {
        // A quiet moment: settled, and no live client waiting on a timer either (a retry may
        // yet find the node a lost reply left).
        let quiet = |seat: &Seat<W>| seat.client.crashed || seat.idle();
        if !self.settled(state) || !state.seats.iter().all(quiet) {
            return None;
        }
        let tree = state.zk.tree();
        for (c, seat) in state.seats.iter().enumerate() {
            let client = &seat.client;
            if client.crashed || client.expired_at_server {
                continue;
            }
            let known = self.workload.known_nodes(&client.machine);
            let orphan = tree.nodes().find(|(path, node)| {
                node.ephemeral_owner == Some(client.session) && !known.iter().any(|k| k == path)
            });
            if let Some((path, _)) = orphan {
                return Some((c, path.to_owned()));
            }
        }
        None
    }

    /// Why [`knows_its_ephemerals`](Self::knows_its_ephemerals) fails in `state`.
    pub fn orphan_detail(&self, state: &State<W>) -> String {
        match self.orphan(state) {
            Some((c, path)) => format!(
                "at a quiet moment, client {c}'s session owns {path}, and the client does not \
                 know it is its own"
            ),
            None => "no orphan".to_owned(),
        }
    }

    /// The model's own invariant [`SCHEDULE`]: no client has run a cycle that no client's
    /// schedule has fired ([`Workload::fired_cycle`], [`Workload::newest_cycle_run`]). A crashed
    /// client's cron counts: a failover runs the crashed owner's cycle. The model has no clock,
    /// so it judges the order only (a run of cycle `k` comes after some trigger of `k`); the
    /// simulator judges the moment.
    pub fn runs_when_scheduled(&self, state: &State<W>) -> bool {
        !W::SCHEDULED || self.unscheduled_run(state).is_none()
    }

    /// The first client [`runs_when_scheduled`](Self::runs_when_scheduled) finds ahead of every
    /// schedule in `state`: the client, the cycle it ran, and the newest cycle fired.
    pub fn unscheduled_run(&self, state: &State<W>) -> Option<(usize, u64, u64)> {
        let fired = (state.seats.iter())
            .map(|seat| self.workload.fired_cycle(&seat.client.app))
            .max()
            .unwrap_or(0);
        (state.seats.iter().enumerate()).find_map(|(c, seat)| {
            let ran = self.workload.newest_cycle_run(&seat.client.machine);
            (ran > fired).then_some((c, ran, fired))
        })
    }

    /// Why [`runs_when_scheduled`](Self::runs_when_scheduled) fails in `state`.
    pub fn unscheduled_detail(&self, state: &State<W>) -> String {
        match self.unscheduled_run(state) {
            Some((c, ran, fired)) => format!(
                "client {c} ran cycle {ran}, and no client's schedule has fired a cycle after \
                 {fired}"
            ),
            None => "every run is of a cycle that fired".to_owned(),
        }
    }

    /// The model's own invariant, [`SCHEDULE`].
    pub(super) fn schedule_property() -> Property<Self> {
        Property {
            expectation: Expectation::Always,
            name: SCHEDULE,
            condition: Self::runs_when_scheduled,
        }
    }

    /// Whether `state` is a settled moment with a claim to judge ([`CLAIM_JUDGED`]): a live
    /// client with its session believes some node is its own.
    pub fn claim_judged(&self, state: &State<W>) -> bool {
        self.settled(state)
            && state.seats.iter().any(|seat| {
                let client = &seat.client;
                !client.crashed
                    && !client.expired_at_server
                    && !self.workload.claimed_nodes(&client.machine).is_empty()
            })
    }

    /// Whether `state` is a quiet moment with an ephemeral node to judge
    /// ([`EPHEMERAL_JUDGED`]): some live client's current session owns one.
    pub fn ephemeral_judged(&self, state: &State<W>) -> bool {
        let quiet = |seat: &Seat<W>| seat.client.crashed || seat.idle();
        if !self.settled(state) || !state.seats.iter().all(quiet) {
            return false;
        }
        let tree = state.zk.tree();
        let sessions: Vec<SessionId> = (state.seats.iter())
            .map(|seat| &seat.client)
            .filter(|client| !client.crashed && !client.expired_at_server)
            .map(|client| client.session)
            .collect();
        tree.nodes()
            .any(|(_, node)| node.ephemeral_owner.is_some_and(|s| sessions.contains(&s)))
    }

    /// The model's own `sometimes` properties that this model judges (each with its bit in
    /// [`Reached`](super::Reached)): the companions of the invariants it checks, so that a pass
    /// of one is not empty.
    pub fn own_sometimes(&self) -> Vec<(u16, Property<Self>)> {
        let mut own = Vec::new();
        if W::CLAIMS && self.claims_judged {
            let claim = Property {
                expectation: Expectation::Sometimes,
                name: CLAIM_JUDGED,
                condition: Self::claim_judged,
            };
            own.push((CLAIM_JUDGED_BIT, claim));
        }
        if W::KNOWS_ITS_EPHEMERALS && self.claims_judged {
            let ephemeral = Property {
                expectation: Expectation::Sometimes,
                name: EPHEMERAL_JUDGED,
                condition: Self::ephemeral_judged,
            };
            own.push((EPHEMERAL_JUDGED_BIT, ephemeral));
        }
        own
    }

    /// The model's own `sometimes` properties no state reached, by the bits in `reached`.
    pub(super) fn own_unreached(&self, reached: u16) -> Vec<&'static str> {
        (self.own_sometimes().into_iter())
            .filter(|(bit, _)| reached & bit == 0)
            .map(|(_, property)| property.name)
            .collect()
    }

    /// The model's own invariant, [`ORPHANS`].
    pub(super) fn orphans_property() -> Property<Self> {
        Property {
            expectation: Expectation::Always,
            name: ORPHANS,
            condition: Self::knows_its_ephemerals,
        }
    }

    /// The model's own invariant, [`OWNERSHIP`].
    pub(super) fn ownership_property() -> Property<Self> {
        Property {
            expectation: Expectation::Always,
            name: OWNERSHIP,
            condition: Self::owns_its_claims,
        }
    }

    /// Why [`makes_progress`](Self::makes_progress) fails in `state`: the clients that want
    /// to act and cannot, and the machines that are not at rest.
    pub fn stuck_detail(&self, state: &State<W>) -> String {
        let live = || (state.seats.iter().enumerate()).filter(|(_, seat)| !seat.client.crashed);
        let waiting: Vec<usize> = live()
            .filter(|(_, seat)| self.workload.can_act(&seat.client.app, &state.zk))
            .map(|(c, _)| c)
            .collect();
        let restless: Vec<usize> = live()
            .filter(|(_, seat)| !self.workload.at_rest(&seat.client.machine))
            .map(|(c, _)| c)
            .collect();
        format!(
            "every client is idle; clients {waiting:?} have an act to take that waits for a \
             settled moment, which cannot come: clients {restless:?} are not at rest with \
             nothing to do"
        )
    }

    /// Judge `index`'s property as stateright gets it apart: an `eventually` one judged at
    /// quiescence (see the module docs).
    pub(super) fn judged_property((index, judge): (usize, &Judge<W>)) -> Property<Self> {
        match judge.expectation {
            Expectation::Eventually => Property {
                expectation: Expectation::Always,
                name: judge.name,
                condition: Self::QUIESCENT_VERDICTS[index],
            },
            _ => Property {
                expectation: judge.expectation.clone(),
                name: judge.name,
                condition: Self::VERDICTS[index],
            },
        }
    }

    /// The model's own invariant, [`PROGRESS`].
    pub(super) fn progress_property() -> Property<Self> {
        Property {
            expectation: Expectation::Always,
            name: PROGRESS,
            condition: Self::makes_progress,
        }
    }

    /// The `always` and `eventually` properties, in the order stateright gets them apart.
    fn invariants_apart() -> impl Iterator<Item = Property<Self>> {
        let judged = W::judges().iter().enumerate().map(Self::judged_property);
        judged
            .filter(|p| p.expectation != Expectation::Sometimes)
            .chain([
                Self::progress_property(),
                Self::ownership_property(),
                Self::orphans_property(),
                Self::schedule_property(),
            ])
    }

    /// Whether every `always` and `eventually` property holds in `state`, as stateright judges
    /// each apart.
    pub fn invariants_hold(&self, state: &State<W>) -> bool {
        Self::invariants_apart().all(|p| (p.condition)(self, state))
    }

    /// [`RecipeModel::invariants_hold`], noting the `sometimes` properties `state` has reached
    /// in [`RecipeModel::reached`]: the one property a depth-first search gives stateright.
    pub(super) fn invariants_hold_noting_reached(&self, state: &State<W>) -> bool {
        let mut bits = u16::from(state.verdicts & judged_bits::<W>(Expectation::Sometimes));
        // The model's own, judged only until some state reaches each.
        let noted = self.reached.bits();
        if W::CLAIMS && noted & CLAIM_JUDGED_BIT == 0 && self.claim_judged(state) {
            bits |= CLAIM_JUDGED_BIT;
        }
        if W::KNOWS_ITS_EPHEMERALS
            && noted & EPHEMERAL_JUDGED_BIT == 0
            && self.ephemeral_judged(state)
        {
            bits |= EPHEMERAL_JUDGED_BIT;
        }
        (self.reached).note(bits);
        self.invariants_hold(state)
    }

    /// The first `always` or `eventually` property, in the order stateright gets them apart,
    /// that fails in `state` (where [`RecipeModel::invariants_hold`] is false).
    ///
    /// # Panics
    /// If every one of them holds there.
    pub fn first_broken_invariant(&self, state: &State<W>) -> &'static str {
        Self::invariants_apart()
            .find(|p| !(p.condition)(self, state))
            .map(|p| p.name)
            .expect("the invariants failed here, so one of them does")
    }

    /// Whether the clients are quiescent: nothing is in flight, no timer is pending, no
    /// application has anything to do, one of them still takes part in the recipe, and the
    /// server has no abandoned session left to expire (a client told its session expired
    /// leaves one behind, whose ephemerals block the others until the server expires it,
    /// which it will, as a timer fires). Only a fault can move such a state on, and a
    /// liveness property must hold in it.
    pub fn quiescent(&self, state: &State<W>) -> bool {
        if !state.abandoned.is_empty() {
            return false;
        }
        let idle = state.seats.iter().all(|seat| {
            seat.client.crashed
                || (seat.idle() && !self.workload.can_act(&seat.client.app, &state.zk))
        });
        let taking_part = state
            .seats
            .iter()
            .any(|seat| !seat.client.crashed && !self.workload.finished(&seat.client.app));
        idle && taking_part
    }
}

/// A property's condition, as stateright takes it.
type Condition<W> = fn(&RecipeModel<W>, &State<W>) -> bool;

/// Reads verdict bit `N` of a quiescent state ([`RecipeModel::quiescent`]);
/// true elsewhere.
fn quiescent_verdict<W: Workload, const N: u8>(model: &RecipeModel<W>, state: &State<W>) -> bool {
    state.verdicts & (1 << N) != 0 || !model.quiescent(state)
}

/// Reads verdict bit `N` of a state.
fn verdict<W: Workload, const N: u8>(_: &RecipeModel<W>, state: &State<W>) -> bool {
    state.verdicts & (1 << N) != 0
}

impl<W: Workload> RecipeModel<W> {
    /// Property conditions reading each verdict bit at quiescence (stateright takes plain
    /// function pointers).
    const QUIESCENT_VERDICTS: [Condition<W>; MAX_JUDGES] = [
        quiescent_verdict::<W, 0>,
        quiescent_verdict::<W, 1>,
        quiescent_verdict::<W, 2>,
        quiescent_verdict::<W, 3>,
        quiescent_verdict::<W, 4>,
        quiescent_verdict::<W, 5>,
        quiescent_verdict::<W, 6>,
        quiescent_verdict::<W, 7>,
    ];

    /// Property conditions reading each verdict bit.
    const VERDICTS: [Condition<W>; MAX_JUDGES] = [
        verdict::<W, 0>,
        verdict::<W, 1>,
        verdict::<W, 2>,
        verdict::<W, 3>,
        verdict::<W, 4>,
        verdict::<W, 5>,
        verdict::<W, 6>,
        verdict::<W, 7>,
    ];
}
