//! What each action does to a state: the server applying a request, a client processing its
//! news, a timer, an act, and each fault.

use std::collections::VecDeque;

use zkh_recipes::fencing::Fencing;
use zkh_recipes::machine::{Command, Input, Machine};
use zkh_recipes::symmetry::IDENTITY_MARK;
use zkh_recipes::{Request, SessionEvent, WatchedEvent, ZkError};

use crate::history::{HistoryEntry, HistoryEvent};
use crate::request::Notification;

use super::{Acting, Action, Client, Inbound, RecipeModel, State, Workload};

impl<W: Workload> RecipeModel<W> {
    /// Appends `event` to the shared history; its time is its place there.
    fn push(state: &mut State<W>, event: HistoryEvent) {
        let at_us = state.shared.len() as u64;
        state.shared.push(HistoryEntry { at_us, event });
    }

    /// Appends `event` to client `c`'s own log. It carries no time (0): only its order among
    /// the client's own events matters, and a time would tell apart interleavings that do not
    /// differ.
    fn log(state: &mut State<W>, c: usize, event: HistoryEvent) {
        let entry = HistoryEntry { at_us: 0, event };
        state.seats[c].log.push(entry);
    }

    fn under_dir(&self, path: &str) -> bool {
        zkh_recipes::path::is_under(path, self.workload.dir())
    }

    pub(super) fn fault(state: &mut State<W>, description: String) {
        Self::push(state, HistoryEvent::Fault { description });
    }

    /// Feeds `input` to client `c`'s machine and carries out its commands.
    pub(super) fn feed(&self, state: &mut State<W>, c: usize, input: Input<W::Request>) {
        let mut inputs = VecDeque::from([input]);
        while let Some(input) = inputs.pop_front() {
            let mut commands = Vec::new();
            state.client_mut(c).machine.handle(input, &mut commands);
            for command in commands {
                match command {
                    Command::Op { id, request } => {
                        let session = state.client(c).session;
                        state.queues_mut(c).outbox.push_back((id, session, request));
                    }
                    Command::Timer { id, .. } => {
                        state.client_mut(c).timers.insert(id);
                    }
                    Command::Report(report) => {
                        let mut effects = Vec::new();
                        let requests = {
                            let mut client = state.client_mut(c);
                            self.workload
                                .on_report(&mut client.app, report, &mut effects, c as u32)
                        };
                        for effect in effects {
                            Self::push(state, effect);
                        }
                        inputs.extend(requests.into_iter().map(Input::Request));
                    }
                }
            }
        }
    }

    fn deliver_notifications(state: &mut State<W>, notifications: Vec<Notification>) {
        for notification in notifications {
            let to = state.seats.iter().position(|seat| {
                seat.client.session == notification.session && !seat.client.expired_at_server
            });
            if let Some(c) = to {
                let watch = Inbound::Watch(notification.event);
                state.queues_mut(c).inbox.push_back(watch);
            }
        }
    }

    /// The connection of client `c` broke and was re-established in the same session.
    fn reconnect(state: &mut State<W>, c: usize) {
        let session_id = state.client(c).session;
        let inbox = &mut state.queues_mut(c).inbox;
        inbox.push_back(Inbound::Session(SessionEvent::Disconnected));
        inbox.push_back(Inbound::Session(SessionEvent::Reconnected { session_id }));
    }

    fn serve(&self, state: &mut State<W>, c: usize, lose_reply: bool) {
        let (id, session, request) = state
            .queues_mut(c)
            .outbox
            .pop_front()
            .expect("serve only with an operation waiting");
        let client = state.client(c);
        if client.expired_at_server || session != client.session {
            let reply = Inbound::Reply(id, Err(ZkError::SessionExpired));
            state.queues_mut(c).inbox.push_back(reply);
            return;
        }
        let waits_or_queues = match &request {
            Request::Exists { path, watch }
            | Request::GetData { path, watch }
            | Request::GetChildren { path, watch } => *watch && self.under_dir(path),
            Request::Create { path, .. } | Request::Delete { path, .. } => self.under_dir(path),
            _ => false,
        };
        if waits_or_queues {
            let invoke = HistoryEvent::Invoke {
                client: c as u32,
                session,
                xid: id,
                request: request.clone(),
            };
            Self::log(state, c, invoke);
        }
        let applied = state.zk_mut().apply(session, &request);
        let reply = if lose_reply {
            Err(ZkError::ConnectionLoss)
        } else {
            applied.reply.into_machine_result()
        };
        state
            .queues_mut(c)
            .inbox
            .push_back(Inbound::Reply(id, reply));
        Self::deliver_notifications(state, applied.notifications);
        if lose_reply {
            Self::reconnect(state, c);
        }
    }
}

impl<W: Workload> RecipeModel<W> {
    /// The state after `action`, its verdicts not yet updated.
    pub(super) fn step(&self, state: &State<W>, action: Action) -> Option<State<W>> {
        let mut next = state.clone();
        match action {
            Action::Serve(c) => self.serve(&mut next, c, false),
            Action::Deliver(c) => {
                let inbound = next
                    .queues_mut(c)
                    .inbox
                    .pop_front()
                    .expect("deliver only with something waiting");
                let client = c as u32;
                let input = match inbound {
                    Inbound::Reply(id, result) => Input::Reply { id, result },
                    Inbound::Watch(event) => {
                        if self.under_dir(&event.path) {
                            let recorded = HistoryEvent::Watch {
                                client,
                                event: event.clone(),
                            };
                            Self::log(&mut next, c, recorded);
                        }
                        Input::Watch(WatchedEvent {
                            zxid: WatchedEvent::NO_ZXID,
                            ..event
                        })
                    }
                    Inbound::Session(event) => {
                        let recorded = HistoryEvent::Session { client, event };
                        match event {
                            SessionEvent::Expired | SessionEvent::Closed => {
                                Self::log(&mut next, c, recorded.clone());
                            }
                            _ => {}
                        }
                        if matches!(event, SessionEvent::Expired | SessionEvent::Disconnected) {
                            Self::push(&mut next, recorded);
                        }
                        Input::Session(event)
                    }
                };
                let expired = matches!(input, Input::Session(SessionEvent::Expired));
                self.feed(&mut next, c, input);
                if expired {
                    // A new session, as Curator and the simulated client open after expiry.
                    let session_id = next.zk_mut().open_session();
                    {
                        let mut client = next.client_mut(c);
                        client.session = session_id;
                        client.expired_at_server = false;
                        client.rejoined = true;
                    }
                    let connected = Inbound::Session(SessionEvent::Connected { session_id });
                    next.queues_mut(c).inbox.push_back(connected);
                }
            }
            Action::Timer(c, id) => {
                next.client_mut(c).timers.remove(&id);
                self.feed(&mut next, c, Input::Timer(id));
            }
            Action::Act(c) => {
                let mut effects = Vec::new();
                let requests = {
                    let mut client = next.client_mut(c);
                    self.workload.act(&mut client.app, &mut effects, c as u32)?
                };
                for mut effect in effects {
                    if let HistoryEvent::SideEffect {
                        token: Some(token),
                        accepted,
                        ..
                    } = &mut effect
                    {
                        *accepted = match self.acting {
                            Acting::Fenced => next.resource.admit(Fencing::Fenced, *token),
                            Acting::CaughtUp | Acting::Unfenced => true,
                        };
                    }
                    Self::push(&mut next, effect);
                }
                for request in requests {
                    self.feed(&mut next, c, Input::Request(request));
                }
            }
            Action::DropRequest(c) => {
                next.budget.drop_request -= 1;
                let (id, ..) = next.queues_mut(c).outbox.pop_front()?;
                Self::fault(
                    &mut next,
                    format!("client {IDENTITY_MARK}{c}: request {id} dropped"),
                );
                let lost = Inbound::Reply(id, Err(ZkError::ConnectionLoss));
                next.queues_mut(c).inbox.push_back(lost);
                Self::reconnect(&mut next, c);
            }
            Action::DropReply(c) => {
                next.budget.drop_reply -= 1;
                let id = next.queues(c).outbox.front()?.0;
                Self::fault(
                    &mut next,
                    format!("client {IDENTITY_MARK}{c}: reply to {id} dropped"),
                );
                self.serve(&mut next, c, true);
            }
            Action::Expire(c) => {
                next.budget.expire -= 1;
                Self::fault(
                    &mut next,
                    format!("client {IDENTITY_MARK}{c}: session expired by the server"),
                );
                let session = next.client(c).session;
                next.client_mut(c).expired_at_server = true;
                let notifications = next.zk_mut().close_session(session).unwrap_or_default();
                Self::deliver_notifications(&mut next, notifications);
                let expired = Inbound::Session(SessionEvent::Expired);
                next.queues_mut(c).inbox.push_back(expired);
            }
            Action::ClientExpire(c) => {
                next.budget.client_expire -= 1;
                Self::fault(
                    &mut next,
                    format!("client {IDENTITY_MARK}{c}: told its session expired"),
                );
                // The server keeps the session (and its ephemerals) until ServerExpireOld; the
                // client's handle is dead: what it had not sent fails, nothing more arrives.
                let session = next.client(c).session;
                next.abandoned.insert(session);
                next.client_mut(c).expired_at_server = true;
                let mut queues = next.queues_mut(c);
                for (id, ..) in std::mem::take(&mut queues.outbox) {
                    let failed = Inbound::Reply(id, Err(ZkError::SessionExpired));
                    queues.inbox.push_back(failed);
                }
                queues
                    .inbox
                    .push_back(Inbound::Session(SessionEvent::Expired));
            }
            Action::ServerExpireOld(session) => {
                next.abandoned.remove(&session);
                Self::fault(
                    &mut next,
                    // No session number: it would name a client without a token.
                    "an abandoned session expired by the server".to_owned(),
                );
                let notifications = next.zk_mut().close_session(session).unwrap_or_default();
                Self::deliver_notifications(&mut next, notifications);
            }
            Action::Crash(c) => {
                next.budget.crash -= 1;
                Self::fault(
                    &mut next,
                    format!("client {IDENTITY_MARK}{c}: process crashed"),
                );
                let mut effects = Vec::new();
                {
                    let mut client = next.client_mut(c);
                    let Client { app, .. } = &mut *client;
                    self.workload.crashed(app, &mut effects, c as u32);
                    client.crashed = true;
                    client.expired_at_server = true;
                }
                for effect in effects {
                    Self::push(&mut next, effect);
                }
                // Its session's end, as an expiry delivered to it would record it.
                let ended = HistoryEvent::Session {
                    client: c as u32,
                    event: SessionEvent::Expired,
                };
                Self::log(&mut next, c, ended.clone());
                Self::push(&mut next, ended);
                let session = next.client(c).session;
                let notifications = next.zk_mut().close_session(session).unwrap_or_default();
                Self::deliver_notifications(&mut next, notifications);
            }
            Action::LeaderChange => {
                next.budget.leader_change -= 1;
                Self::fault(&mut next, "leader change: every connection broke".into());
                for c in 0..next.seats.len() {
                    if next.client(c).expired_at_server {
                        continue;
                    }
                    let mut queues = next.queues_mut(c);
                    if let Some((id, ..)) = queues.outbox.pop_front() {
                        let lost = Inbound::Reply(id, Err(ZkError::ConnectionLoss));
                        queues.inbox.push_back(lost);
                    }
                    Self::reconnect(&mut next, c);
                }
            }
        }
        Some(next)
    }
}
