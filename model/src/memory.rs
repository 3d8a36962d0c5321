//! An in-memory [`ZkClient`] over the pure model, for recipes' unit tests.
//!
//! A [`MemoryEnsemble`] is one [`ZkModel`] behind a mutex; each [`MemoryClient`] is one session
//! on it. Every operation is applied at once, and the watch notifications it fires are queued in
//! the addressed clients' event streams *before* the reply is returned, which gives the trait's
//! ordering guarantees for free.
//!
//! Faults for unit tests are explicit: [`MemoryClient::inject`] makes the next operation fail
//! with `ConnectionLoss`, either before it is applied ([`InjectedFault::DropRequest`]) or after
//! ([`InjectedFault::DropReply`]), and reports a disconnection and a same-session reconnection
//! in the event stream. [`MemoryEnsemble::expire`] expires a session the way the server does.
//!
//! Not modelled here: time, session timeouts, stale reads, leader changes. Those belong to the
//! simulated ensemble.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use zkh_recipes::{
    ClientEvent, CreateMode, Created, MultiError, Op, OpResult, SessionEvent, SessionId, Stat,
    WatchedEvent, ZkClient, ZkError,
};

use crate::request::{Notification, Reply, Request};
use crate::zookeeper::ZkModel;

/// A fault the next operation of a [`MemoryClient`] meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InjectedFault {
    /// The request is lost: not applied, `ConnectionLoss`.
    DropRequest,
    /// The reply is lost: applied, `ConnectionLoss`.
    DropReply,
}

#[derive(Default)]
struct Mailbox {
    events: VecDeque<ClientEvent>,
    notify: Arc<Notify>,
    /// Why the session ended, once it has: what every later operation fails with.
    end: Option<ZkError>,
}

#[derive(Default)]
struct Inner {
    model: ZkModel,
    mailboxes: BTreeMap<SessionId, Mailbox>,
}

impl Inner {
    fn deliver(&mut self, notifications: Vec<Notification>) {
        for Notification { session, mut event } in notifications {
            // A 3.8 server does not tell clients the zxid of a notification.
            event.zxid = WatchedEvent::NO_ZXID;
            if let Some(mailbox) = self.mailboxes.get_mut(&session) {
                mailbox.events.push_back(ClientEvent::Watch(event));
                mailbox.notify.notify_waiters();
            }
        }
    }

    fn push_session_event(&mut self, session: SessionId, event: SessionEvent) {
        if let Some(mailbox) = self.mailboxes.get_mut(&session) {
            mailbox.events.push_back(ClientEvent::Session(event));
            match event {
                SessionEvent::Expired => mailbox.end = Some(ZkError::SessionExpired),
                SessionEvent::Closed => mailbox.end = Some(ZkError::ClientClosed),
                _ => {}
            }
            mailbox.notify.notify_waiters();
        }
    }
}

/// One pure ZooKeeper model shared by in-memory clients.
#[derive(Clone, Default)]
pub struct MemoryEnsemble {
    inner: Arc<Mutex<Inner>>,
}

impl MemoryEnsemble {
    /// A fresh ensemble.
    pub fn new() -> MemoryEnsemble {
        MemoryEnsemble::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .expect("memory ensemble mutex poisoned by a panic in another client")
    }

    /// Opens a new session and returns its client. Its event stream starts with `Connected`.
    pub fn connect(&self) -> MemoryClient {
        let mut inner = self.lock();
        let session = inner.model.open_session();
        inner.mailboxes.insert(session, Mailbox::default());
        inner.push_session_event(
            session,
            SessionEvent::Connected {
                session_id: session,
            },
        );
        MemoryClient {
            ensemble: self.clone(),
            session,
            fault: Mutex::new(None),
        }
    }

    /// Expires `session` as the server does: its ephemerals are deleted, other sessions' watches
    /// fire, and its client sees `Expired` and gets `SessionExpired` from then on.
    pub fn expire(&self, session: SessionId) {
        let mut inner = self.lock();
        if let Some(notifications) = inner.model.close_session(session) {
            inner.deliver(notifications);
            inner.push_session_event(session, SessionEvent::Expired);
        }
    }

    /// Reaps empty containers, as the server's container manager does on its timer.
    pub fn reap_containers(&self) {
        let mut inner = self.lock();
        let notifications = inner.model.reap_containers();
        inner.deliver(notifications);
    }

    /// Reads the model.
    pub fn inspect<R>(&self, read: impl FnOnce(&ZkModel) -> R) -> R {
        read(&self.lock().model)
    }
}

/// One session on a [`MemoryEnsemble`].
pub struct MemoryClient {
    ensemble: MemoryEnsemble,
    session: SessionId,
    fault: Mutex<Option<InjectedFault>>,
}

impl MemoryClient {
    /// Makes the next operation meet `fault`.
    pub fn inject(&self, fault: InjectedFault) {
        *self.fault.lock().expect("fault mutex poisoned") = Some(fault);
    }

    /// Closes the session: its ephemerals are deleted and other sessions' watches fire. Later
    /// operations fail with `ClientClosed`.
    pub fn close(&self) {
        let mut inner = self.ensemble.lock();
        if let Some(notifications) = inner.model.close_session(self.session) {
            inner.deliver(notifications);
        }
        inner.push_session_event(self.session, SessionEvent::Closed);
    }

    fn call(&self, request: Request) -> Result<Reply, ZkError> {
        let fault = self.fault.lock().expect("fault mutex poisoned").take();
        let mut inner = self.ensemble.lock();
        if let Some(end) = inner.mailboxes.get(&self.session).and_then(|m| m.end) {
            return Err(end);
        }
        if fault == Some(InjectedFault::DropRequest) {
            self.blip(&mut inner);
            return Err(ZkError::ConnectionLoss);
        }
        let applied = inner.model.apply(self.session, &request);
        inner.deliver(applied.notifications);
        if fault == Some(InjectedFault::DropReply) {
            self.blip(&mut inner);
            return Err(ZkError::ConnectionLoss);
        }
        Ok(applied.reply)
    }

    fn blip(&self, inner: &mut Inner) {
        inner.push_session_event(self.session, SessionEvent::Disconnected);
        inner.push_session_event(
            self.session,
            SessionEvent::Reconnected {
                session_id: self.session,
            },
        );
    }
}

impl ZkClient for MemoryClient {
    fn session_id(&self) -> SessionId {
        self.session
    }

    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created, ZkError> {
        self.call(Request::Create {
            path: path.to_owned(),
            data: data.to_vec(),
            mode,
        })?
        .into_created()
    }

    async fn delete(&self, path: &str, version: i32) -> Result<(), ZkError> {
        self.call(Request::Delete {
            path: path.to_owned(),
            version,
        })?
        .into_deleted()
    }

    async fn exists(&self, path: &str, watch: bool) -> Result<Option<Stat>, ZkError> {
        self.call(Request::Exists {
            path: path.to_owned(),
            watch,
        })?
        .into_exists()
    }

    async fn get_data(&self, path: &str, watch: bool) -> Result<(Vec<u8>, Stat), ZkError> {
        self.call(Request::GetData {
            path: path.to_owned(),
            watch,
        })?
        .into_data()
    }

    async fn get_children(&self, path: &str, watch: bool) -> Result<(Vec<String>, Stat), ZkError> {
        self.call(Request::GetChildren {
            path: path.to_owned(),
            watch,
        })?
        .into_children()
    }

    async fn set_data(&self, path: &str, data: &[u8], version: i32) -> Result<Stat, ZkError> {
        self.call(Request::SetData {
            path: path.to_owned(),
            data: data.to_vec(),
            version,
        })?
        .into_set_data()
    }

    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>, MultiError> {
        self.call(Request::Multi(ops.to_vec()))?.into_multi()
    }

    async fn sync(&self, path: &str) -> Result<(), ZkError> {
        self.call(Request::Sync {
            path: path.to_owned(),
        })?
        .into_synced()
    }

    async fn next_event(&self) -> Option<ClientEvent> {
        loop {
            let notify = {
                let mut inner = self.ensemble.lock();
                let mailbox = inner.mailboxes.get_mut(&self.session)?;
                if let Some(event) = mailbox.events.pop_front() {
                    return Some(event);
                }
                if mailbox.end.is_some() {
                    return None;
                }
                Arc::clone(&mailbox.notify)
            };
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // Re-check after enabling, so that an event pushed in between is not missed.
            if let Some(event) = self.try_next_event() {
                return Some(event);
            }
            notified.await;
        }
    }

    fn try_next_event(&self) -> Option<ClientEvent> {
        self.ensemble
            .lock()
            .mailboxes
            .get_mut(&self.session)?
            .events
            .pop_front()
    }
}
