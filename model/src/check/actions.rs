//! Which actions a state offers ([`Model`] for [`RecipeModel`]), and the partial-order
//! reduction and the bounds that leave some of them out.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use stateright::{Expectation, Model, Property};
use zkh_recipes::fencing::FencedResource;
use zkh_recipes::machine::Input;
use zkh_recipes::symmetry::{Renamings, MAX_SYMMETRIC_CLIENTS};
use zkh_recipes::{Request, SessionEvent};

use crate::shared::{Shared, SharedLog};
use crate::zookeeper::ZkModel;

use super::{
    Acting, Action, ClassHash, Client, Inbound, Queues, RecipeModel, Seat, State, Workload,
    INVARIANTS,
};

impl<W: Workload> Model for RecipeModel<W> {
    type State = State<W>;
    type Action = Action;

    fn init_states(&self) -> Vec<State<W>> {
        let mut state = State {
            zk: Shared::new(ZkModel::new()),
            seats: Vec::new(),
            abandoned: BTreeSet::new(),
            budget: self.budget,
            shared: SharedLog::default(),
            resource: FencedResource::new(),
            verdicts: 0,
            renamings: None,
            class_hash: ClassHash::default(),
        };
        // The recipe's directories exist, as in a deployment: the race to create them is not
        // what is checked (the simulator and the unit tests cover it).
        let setup = state.zk_mut().open_session();
        for path in self.workload.directories() {
            let dir = Request::Create {
                path,
                data: Vec::new(),
                mode: zkh_recipes::CreateMode::Persistent,
            };
            let created = state.zk_mut().apply(setup, &dir).reply.into_response();
            assert!(
                created.is_ok(),
                "the model creates the recipe's directory: {created:?}"
            );
        }
        state.zk_mut().close_session(setup);
        let mut starts = Vec::new();
        for index in 0..self.clients {
            let (machine, app, requests) = self.workload.client(index);
            let session = state.zk_mut().open_session();
            state.seats.push(Seat {
                client: Shared::new(Client {
                    machine,
                    app,
                    session,
                    timers: BTreeSet::new(),
                    expired_at_server: false,
                    crashed: false,
                    rejoined: false,
                }),
                queues: Shared::new(Queues {
                    outbox: VecDeque::new(),
                    inbox: VecDeque::from([Inbound::Session(SessionEvent::Connected {
                        session_id: session,
                    })]),
                }),
                log: SharedLog::default(),
            });
            starts.push(requests);
        }
        if self.symmetric && W::SYMMETRIC && self.clients <= MAX_SYMMETRIC_CLIENTS {
            let first_sessions = state.seats.iter().map(|seat| seat.client.session);
            state.renamings = Some(Arc::new(Renamings::new(first_sessions.collect())));
        }
        for (index, requests) in starts.into_iter().enumerate() {
            // The application starts once the client has connected.
            let Some(Inbound::Session(event)) = state.queues_mut(index).inbox.pop_front() else {
                unreachable!("a new client's inbox starts with Connected");
            };
            self.feed(&mut state, index, Input::Session(event));
            for request in requests {
                self.feed(&mut state, index, Input::Request(request));
            }
        }
        state.judge();
        vec![state]
    }

    fn actions(&self, state: &State<W>, actions: &mut Vec<Action>) {
        // Partial-order reduction: a client processing what it has received touches only its
        // own machine and queues, so it commutes with every other client's actions and with
        // the server's; only its own timers compete with it. (One delivery touches the server:
        // after an expiry the client opens a new session, which takes the next zxid, so another
        // client's write served just before or just after it gets another zxid. The two states
        // differ only in that numbering, which keeps every zxid's order, and the recipes and
        // properties read zxids only for their order: it is reduced like any other. Not
        // reducing it made the lock's standard check five times larger.) Exploring that
        // client's inbox and timers alone, before anything else, loses no behaviour the
        // properties can tell apart
        // (they read each client's own order, and the order of side effects, which only `Act`
        // writes). This is the ample-set reduction. It cannot ignore the other clients along a
        // cycle (the job's polls are the only cycles): no step but the server's refills an
        // inbox, so every cycle passes through a state where no client has news, which is fully
        // expanded.
        //
        // A client's steps must not race a fault that the budget still allows, or the
        // reduction would explore only the order in which the client's step comes first:
        //
        // - it could act on the resource before processing its news (acting other than
        //   caught-up), now or once another client's step changes the server: that stale act
        //   must be able to come after other clients' acts, and before its own news (the
        //   job's leader with its spare trigger is the one workload whose act another
        //   client's write enables; that act also waits for a settled moment, which news in
        //   flight is not, so today the condition only guards against a workload that would
        //   not wait);
        // - a leader change fails the operation at the head of each outbox: once the server
        //   has served what the client's outbox holds (steps the reduction puts off, so a
        //   full outbox does not protect it), a request its step issues fails if the leader
        //   change comes after the step, and waits for the new connection if it comes before;
        // - a client-side expiry fails everything in the client's outbox: a request its step
        //   issues fails before the client hears of the expiry if the step comes first, and
        //   after (when the server refuses it) if the expiry does.
        //
        // A client whose news races none of these makes a sound ample set; with symmetry
        // reduction the choice must also be the same in every state of a class, or which
        // successors a class gets would depend on which of its states the search met first
        // (and so would the counts, on the order of the search and on threads). So among the
        // clients that qualify, the one that the state's canonical renaming puts first is
        // chosen: the one every renaming of the state chooses, renamed. Where none qualifies,
        // every action is explored.
        if self.partial_order && self.deliver_first(state, actions) {
            return;
        }
        if self.reads_first && self.read_first(state, actions) {
            return;
        }
        self.every_action(state, actions);
    }

    fn next_state(&self, state: &State<W>, action: Action) -> Option<State<W>> {
        let watch_delivered = matches!(action, Action::Deliver(c)
            if matches!(state.queues(c).inbox.front(), Some(Inbound::Watch(_))));
        let mut next = self.step(state, action)?;
        if next.history_len() != state.history_len() {
            next.judge();
        }
        if self.forget_settled {
            Self::drop_settled(&self.workload, state, &mut next, watch_delivered);
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let apart = W::judges().iter().enumerate().map(Self::judged_property);
        if self.one_invariant {
            return vec![Property {
                expectation: Expectation::Always,
                name: INVARIANTS,
                condition: Self::invariants_hold_noting_reached,
            }];
        }
        apart
            .chain([
                Self::progress_property(),
                Self::ownership_property(),
                Self::orphans_property(),
                Self::schedule_property(),
            ])
            .chain(self.own_sometimes().into_iter().map(|(_, p)| p))
            .collect()
    }
}

impl<W: Workload> RecipeModel<W> {
    /// The partial-order reduction (see `actions`): where a client's news qualifies, offers
    /// only its delivery and its timers, and says so.
    fn deliver_first(&self, state: &State<W>, actions: &mut Vec<Action>) -> bool {
        let budget = state.budget;
        let qualifies = |c: usize| {
            let Seat { client, queues, .. } = &state.seats[c];
            if queues.inbox.is_empty() {
                return false;
            }
            let connected = !client.expired_at_server;
            let races = budget.leader_change > 0
                || (budget.client_expire > 0 && connected && !self.workload.finished(&client.app));
            let may_act_stale = self.acting != Acting::CaughtUp
                && (self.workload.can_act(&client.app, &state.zk)
                    || self.workload.may_act_on_the_server(&client.app));
            !may_act_stale && (!races || !self.steps_issue_requests(state, c))
        };
        if let Some(c) =
            self.first_in_class(state, (0..state.seats.len()).filter(|c| qualifies(*c)))
        {
            let client = state.client(c);
            actions.push(Action::Deliver(c));
            actions.extend(client.timers.iter().map(|timer| Action::Timer(c, *timer)));
            return true;
        }
        false
    }

    /// The bound of [`RecipeModel::reads_first`] (not a reduction: it leaves schedules out):
    /// where no client has news and some client's next operation is a read, offers only the
    /// server answering that read, and the faults; says whether it did.
    fn read_first(&self, state: &State<W>, actions: &mut Vec<Action>) -> bool {
        if state.seats.iter().any(|seat| !seat.queues.inbox.is_empty()) {
            return false;
        }
        let reading = (0..state.seats.len()).filter(|c| {
            let seat = &state.seats[*c];
            !seat.client.expired_at_server
                && (seat.queues.outbox.front()).is_some_and(|(_, _, request)| !request.is_write())
        });
        let Some(c) = self.first_in_class(state, reading) else {
            return false;
        };
        self.every_action(state, actions);
        actions.retain(|action| action.is_fault() || *action == Action::Serve(c));
        true
    }

    /// The first of `clients` in `state`: the one the state's canonical renaming puts first
    /// where there are two or more, so that every state of a class chooses the same client,
    /// renamed (see `actions`).
    fn first_in_class(
        &self,
        state: &State<W>,
        mut clients: impl Iterator<Item = usize>,
    ) -> Option<usize> {
        let first = clients.next()?;
        let Some(second) = clients.next() else {
            return Some(first);
        };
        [first, second]
            .into_iter()
            .chain(clients)
            .min_by_key(|c| state.canonical_place(*c, self.canonical_news.as_deref()))
    }

    /// Every action enabled in `state`, without the partial-order reduction that
    /// [`Model::actions`] applies (tests compare the two).
    pub fn every_action(&self, state: &State<W>, actions: &mut Vec<Action>) {
        let budget = state.budget;
        let settled = self.settled(state);
        for (c, Seat { client, queues, .. }) in state.seats.iter().enumerate() {
            if client.crashed {
                continue;
            }
            if !queues.outbox.is_empty() {
                actions.push(Action::Serve(c));
            }
            if !queues.inbox.is_empty() {
                actions.push(Action::Deliver(c));
            }
            for timer in &client.timers {
                actions.push(Action::Timer(c, *timer));
            }
            let caught_up = queues.inbox.is_empty() && queues.outbox.is_empty();
            let may_act = (caught_up || self.acting != Acting::CaughtUp)
                && self.act_in_step(state, c, settled);
            if may_act && self.workload.can_act(&client.app, &state.zk) {
                actions.push(Action::Act(c));
            }
        }
        for (c, seat) in state.seats.iter().enumerate() {
            let Seat { client, queues, .. } = seat;
            let connected = !client.expired_at_server;
            let next_is_write = queues
                .outbox
                .front()
                .is_some_and(|(_, _, request)| request.is_write());
            if budget.drop_request > 0 && !queues.outbox.is_empty() && connected {
                actions.push(Action::DropRequest(c));
            }
            // Lost after the server applied it: only a write's reply carries that news (a lost
            // read reply is a lost request).
            if budget.drop_reply > 0 && next_is_write && connected {
                actions.push(Action::DropReply(c));
            }
            let at_stake = connected && !self.workload.finished(&client.app);
            if budget.expire > 0 && at_stake {
                actions.push(Action::Expire(c));
            }
            if budget.client_expire > 0 && at_stake {
                actions.push(Action::ClientExpire(c));
            }
            if budget.crash > 0 && at_stake && seat.idle() {
                actions.push(Action::Crash(c));
            }
        }
        for session in &state.abandoned {
            actions.push(Action::ServerExpireOld(*session));
        }
        if budget.leader_change > 0 {
            actions.push(Action::LeaderChange);
        }
    }
}

impl<W: Workload> RecipeModel<W> {
    /// Whether processing client `c`'s news, or one of its timers, issues a request (tried on
    /// copies: only where a fault could race it, see `actions`).
    fn steps_issue_requests(&self, state: &State<W>, c: usize) -> bool {
        let issued = state.queues(c).outbox.len();
        let timers = state
            .client(c)
            .timers
            .iter()
            .map(|timer| Action::Timer(c, *timer));
        (std::iter::once(Action::Deliver(c)).chain(timers)).any(|action| {
            self.step(state, action)
                .is_some_and(|next| next.queues(c).outbox.len() > issued)
        })
    }
}
