//! [`ZkClient`] over a real ZooKeeper server, through the `zookeeper-client` crate.
//!
//! Normal build only: that crate spawns an OS thread and opens real sockets, which the
//! simulator forbids.
//!
//! # How watch events are kept in order
//!
//! `zookeeper-client` hands out one one-shot watcher future per watching call. Its session
//! thread completes a watcher *before* it completes the reply of any later request (the server
//! sends notifications and replies in order on one socket). So after every reply, this client
//! polls every pending watcher once, without waiting, and queues those that fired. That keeps
//! the trait's promise: a watch event is in the stream before the reply that reflects its
//! change is returned.
//!
//! A ZooKeeper 3.8 server sends each session one notification per (path, type) and keeps one
//! watch per (session, path, class), where the classes are *data* (`getData`, `exists`) and
//! *child* (`getChildren`). The crate, though, delivers a notification to every watcher future
//! registered on the path. To give one event per notification, as the server sent it, this
//! client keeps at most one pending watcher per (path, class), like the server, and when a
//! `NodeDeleted` fires one class's watcher it discards the other class's copy.
//!
//! The server sends no zxid with a notification (the header carries -1), so events that fired
//! between two polls are queued in the order their watches were set.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use zookeeper_client as zk;

use crate::client::ZkClient;
use crate::error::ZkError;
use crate::event::{ClientEvent, EventType, SessionEvent, WatchedEvent};
use crate::ops::{MultiError, Op, OpResult};
use crate::path::{validate_create_path, validate_delete_path, validate_path};
use crate::types::{CreateMode, Created, SessionId, Stat};

/// The server's two watch tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum WatchClass {
    /// Set by `getData` and `exists`.
    Data,
    /// Set by `getChildren`.
    Child,
}

struct PendingWatch {
    path: String,
    class: WatchClass,
    watcher: Pin<Box<dyn Future<Output = zk::WatchedEvent> + Send>>,
}

#[derive(Default)]
struct EventState {
    queue: VecDeque<ClientEvent>,
    /// At most one per (path, class), in the order they were set.
    pending: Vec<PendingWatch>,
    closed: bool,
}

struct Shared {
    state: Mutex<EventState>,
    wake: tokio::sync::Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, EventState> {
        self.state
            .lock()
            .expect("event state mutex poisoned: a panic while queueing events")
    }

    fn push_session_event(&self, event: SessionEvent) {
        self.lock().queue.push_back(ClientEvent::Session(event));
        self.wake.notify_waiters();
    }
}

/// The driver's [`Clock`](crate::driver::Clock) in a real process: tokio's timers.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioClock;

impl crate::driver::Clock for TokioClock {
    fn sleep(&self, ms: u64) -> (std::time::Instant, Pin<Box<dyn Future<Output = ()> + Send>>) {
        let sleep = tokio::time::sleep(Duration::from_millis(ms));
        (sleep.deadline().into_std(), Box::pin(sleep))
    }
}

/// A [`ZkClient`] connected to a real ZooKeeper ensemble.
///
/// Dropping it closes the session (and ends the task that forwards session events);
/// [`RealClient::close`] closes it and waits until the server has applied the close.
pub struct RealClient {
    client: zk::Client,
    shared: Arc<Shared>,
    state_task: tokio::task::JoinHandle<()>,
}

impl RealClient {
    /// Connects to `connect_string` (e.g. `127.0.0.1:2181`) with a new session of
    /// `session_timeout_ms`. Must be called inside a tokio runtime.
    pub async fn connect(
        connect_string: &str,
        session_timeout_ms: u64,
    ) -> Result<RealClient, ZkError> {
        let client = zk::Client::connector()
            .with_session_timeout(Duration::from_millis(session_timeout_ms))
            .connect(connect_string)
            .await
            .map_err(map_error)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(EventState::default()),
            wake: tokio::sync::Notify::new(),
        });
        let session_id = SessionId(client.session_id().0);
        shared.push_session_event(SessionEvent::Connected { session_id });
        let mut states = client.state_watcher();
        let task_shared = Arc::clone(&shared);
        let state_task = tokio::spawn(async move {
            let mut disconnected = false;
            loop {
                let event = match states.changed().await {
                    zk::SessionState::Disconnected => {
                        disconnected = true;
                        SessionEvent::Disconnected
                    }
                    zk::SessionState::SyncConnected if disconnected => {
                        disconnected = false;
                        SessionEvent::Reconnected { session_id }
                    }
                    zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
                        continue
                    }
                    zk::SessionState::Expired => SessionEvent::Expired,
                    zk::SessionState::AuthFailed | zk::SessionState::Closed => SessionEvent::Closed,
                };
                let terminal = matches!(event, SessionEvent::Expired | SessionEvent::Closed);
                if terminal {
                    task_shared.lock().closed = true;
                }
                task_shared.push_session_event(event);
                if terminal {
                    break;
                }
            }
        });
        Ok(RealClient {
            client,
            shared,
            state_task,
        })
    }

    /// Closes the session and waits (at most `wait_ms`) until the server has applied the close,
    /// so that its ephemeral nodes are gone and other sessions' watches have fired.
    pub async fn close(self, wait_ms: u64) -> Result<(), ZkError> {
        let mut states = self.client.state_watcher();
        let RealClient {
            client,
            shared,
            state_task,
        } = self;
        drop(client);
        let closed = async {
            loop {
                if matches!(
                    states.changed().await,
                    zk::SessionState::Closed | zk::SessionState::Expired
                ) {
                    break;
                }
            }
        };
        let result = tokio::time::timeout(Duration::from_millis(wait_ms), closed).await;
        state_task.abort();
        shared.lock().closed = true;
        shared.wake.notify_waiters();
        result.map_err(|_| ZkError::OperationTimeout)
    }

    /// Moves every watcher that has fired into the queue, in the order they were set, with the
    /// copies of one notification folded into one. Returns whether any fired.
    fn collect_fired(&self, cx: &mut Context<'_>) -> bool {
        let mut state = self.shared.lock();
        let mut fired: Vec<(WatchClass, zk::WatchedEvent)> = Vec::new();
        state
            .pending
            .retain_mut(|pending| match pending.watcher.as_mut().poll(cx) {
                Poll::Ready(event) => {
                    fired.push((pending.class, event));
                    false
                }
                Poll::Pending => true,
            });
        let mut found = false;
        let mut deleted_this_poll = std::collections::BTreeSet::new();
        for (class, event) in fired {
            let event_type = match event.event_type {
                zk::EventType::NodeCreated => EventType::NodeCreated,
                zk::EventType::NodeDeleted => EventType::NodeDeleted,
                zk::EventType::NodeDataChanged => EventType::NodeDataChanged,
                zk::EventType::NodeChildrenChanged => EventType::NodeChildrenChanged,
                // A watcher completes with a session event when the session ends; the state
                // task reports that once.
                zk::EventType::Session => continue,
            };
            // Both classes' watchers on a deleted node fired in this poll: one notification.
            let copy_of_queued_delete = event_type == EventType::NodeDeleted
                && !deleted_this_poll.insert(event.path.clone());
            if event_type == EventType::NodeDeleted {
                // The server sent one NodeDeleted for both classes: the other class's watcher
                // holds a copy, or will.
                let other = if class == WatchClass::Data {
                    WatchClass::Child
                } else {
                    WatchClass::Data
                };
                state
                    .pending
                    .retain(|p| !(p.class == other && p.path == event.path));
            }
            if copy_of_queued_delete {
                continue;
            }
            found = true;
            state.queue.push_back(ClientEvent::Watch(WatchedEvent {
                event_type,
                path: event.path,
                zxid: WatchedEvent::NO_ZXID,
            }));
        }
        found
    }

    fn collect_now(&self) {
        let mut cx = Context::from_waker(Waker::noop());
        self.collect_fired(&mut cx);
    }

    /// Keeps `watcher` unless one of the same (path, class) is pending: the server holds one
    /// watch per (session, path, class), and fires it once.
    fn add_watch(&self, path: &str, class: WatchClass, watcher: zk::OneshotWatcher) {
        // A previous watch on this (path, class) may have fired before this reply came, without
        // being polled yet: collect it first, or the new watch would be taken for its copy.
        self.collect_now();
        let mut state = self.shared.lock();
        if !state
            .pending
            .iter()
            .any(|p| p.path == path && p.class == class)
        {
            state.pending.push(PendingWatch {
                path: path.to_owned(),
                class,
                watcher: Box::pin(watcher.changed()),
            });
        }
    }
}

fn map_error(error: zk::Error) -> ZkError {
    match error {
        zk::Error::NoNode => ZkError::NoNode,
        zk::Error::NodeExists => ZkError::NodeExists,
        zk::Error::BadVersion => ZkError::BadVersion,
        zk::Error::NotEmpty => ZkError::NotEmpty,
        zk::Error::NoChildrenForEphemerals => ZkError::NoChildrenForEphemerals,
        zk::Error::BadArguments(_) => ZkError::BadArguments,
        zk::Error::SessionExpired => ZkError::SessionExpired,
        zk::Error::ConnectionLoss => ZkError::ConnectionLoss,
        zk::Error::Timeout => ZkError::OperationTimeout,
        zk::Error::NoAuth => ZkError::NoAuth,
        zk::Error::InvalidAcl => ZkError::InvalidAcl,
        zk::Error::AuthFailed => ZkError::AuthFailed,
        zk::Error::SessionMoved => ZkError::SessionMoved,
        zk::Error::NotReadOnly => ZkError::NotReadOnly,
        zk::Error::NoWatcher => ZkError::NoWatcher,
        zk::Error::QuotaExceeded => ZkError::QuotaExceeded,
        zk::Error::Throttled => ZkError::Throttled,
        zk::Error::MarshallingError => ZkError::MarshallingError,
        zk::Error::Unimplemented => ZkError::Unimplemented,
        zk::Error::RuntimeInconsistent => ZkError::RuntimeInconsistency,
        zk::Error::ClientClosed => ZkError::ClientClosed,
        zk::Error::UnexpectedErrorCode(code) => {
            ZkError::from_code(code).unwrap_or(ZkError::SystemError)
        }
        // NoHosts, unmarshalling failures, custom and unexpected errors: the connection is unusable.
        _ => ZkError::ConnectionLoss,
    }
}

fn map_stat(stat: &zk::Stat) -> Stat {
    Stat {
        czxid: stat.czxid,
        mzxid: stat.mzxid,
        pzxid: stat.pzxid,
        ctime: stat.ctime,
        mtime: stat.mtime,
        version: stat.version,
        cversion: stat.cversion,
        aversion: stat.aversion,
        ephemeral_owner: stat.ephemeral_owner,
        data_length: stat.data_length,
        num_children: stat.num_children,
    }
}

fn map_mode(mode: CreateMode) -> zk::CreateMode {
    match mode {
        CreateMode::Persistent => zk::CreateMode::Persistent,
        CreateMode::PersistentSequential => zk::CreateMode::PersistentSequential,
        CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
        CreateMode::Container => zk::CreateMode::Container,
    }
}

fn expected(version: i32) -> Option<i32> {
    (version != -1).then_some(version)
}

impl ZkClient for RealClient {
    fn session_id(&self) -> SessionId {
        SessionId(self.client.session_id().0)
    }

    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created, ZkError> {
        validate_create_path(path, mode.is_sequential())?;
        let options = map_mode(mode).with_acls(zk::Acls::anyone_all());
        let result = self.client.create(path, data, &options).await;
        self.collect_now();
        let (stat, sequence) = result.map_err(map_error)?;
        let path = if mode.is_sequential() {
            format!("{path}{sequence}")
        } else {
            path.to_owned()
        };
        Ok(Created {
            path,
            stat: map_stat(&stat),
        })
    }

    async fn delete(&self, path: &str, version: i32) -> Result<(), ZkError> {
        validate_delete_path(path)?;
        let result = self.client.delete(path, expected(version)).await;
        self.collect_now();
        result.map_err(map_error)
    }

    async fn exists(&self, path: &str, watch: bool) -> Result<Option<Stat>, ZkError> {
        validate_path(path)?;
        let result = if watch {
            self.client
                .check_and_watch_stat(path)
                .await
                .map(|(stat, watcher)| {
                    self.add_watch(path, WatchClass::Data, watcher);
                    stat
                })
        } else {
            self.client.check_stat(path).await
        };
        self.collect_now();
        Ok(result.map_err(map_error)?.as_ref().map(map_stat))
    }

    async fn get_data(&self, path: &str, watch: bool) -> Result<(Vec<u8>, Stat), ZkError> {
        validate_path(path)?;
        let result = if watch {
            self.client
                .get_and_watch_data(path)
                .await
                .map(|(data, stat, watcher)| {
                    self.add_watch(path, WatchClass::Data, watcher);
                    (data, stat)
                })
        } else {
            self.client.get_data(path).await
        };
        self.collect_now();
        let (data, stat) = result.map_err(map_error)?;
        Ok((data, map_stat(&stat)))
    }

    async fn get_children(&self, path: &str, watch: bool) -> Result<(Vec<String>, Stat), ZkError> {
        validate_path(path)?;
        let result = if watch {
            self.client
                .get_and_watch_children(path)
                .await
                .map(|(children, stat, watcher)| {
                    self.add_watch(path, WatchClass::Child, watcher);
                    (children, stat)
                })
        } else {
            self.client.get_children(path).await
        };
        self.collect_now();
        let (children, stat) = result.map_err(map_error)?;
        Ok((children, map_stat(&stat)))
    }

    async fn set_data(&self, path: &str, data: &[u8], version: i32) -> Result<Stat, ZkError> {
        validate_path(path)?;
        let result = self.client.set_data(path, data, expected(version)).await;
        self.collect_now();
        Ok(map_stat(&result.map_err(map_error)?))
    }

    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>, MultiError> {
        let mut writer = self.client.new_multi_writer();
        for op in ops {
            let added = match op {
                Op::Check { path, version } => {
                    validate_path(path)?;
                    writer.add_check_version(path, *version)
                }
                Op::Create { path, data, mode } => {
                    validate_create_path(path, mode.is_sequential())?;
                    writer.add_create(
                        path,
                        data,
                        &map_mode(*mode).with_acls(zk::Acls::anyone_all()),
                    )
                }
                Op::Delete { path, version } => {
                    validate_delete_path(path)?;
                    writer.add_delete(path, expected(*version))
                }
                Op::SetData {
                    path,
                    data,
                    version,
                } => {
                    validate_path(path)?;
                    writer.add_set_data(path, data, expected(*version))
                }
            };
            added.map_err(|e| MultiError::Request(map_error(e)))?;
        }
        let result = writer.commit().await;
        self.collect_now();
        match result {
            Ok(results) => results
                .into_iter()
                .map(|result| match result {
                    zk::MultiWriteResult::Check => Ok(OpResult::Check),
                    zk::MultiWriteResult::Delete => Ok(OpResult::Delete),
                    zk::MultiWriteResult::Create { path, stat } => Ok(OpResult::Create {
                        path,
                        stat: (!stat.is_invalid()).then(|| map_stat(&stat)),
                    }),
                    zk::MultiWriteResult::SetData { stat } => Ok(OpResult::SetData {
                        stat: map_stat(&stat),
                    }),
                    // A result kind this crate version does not know: the reply is unusable.
                    _ => Err(MultiError::Request(ZkError::MarshallingError)),
                })
                .collect(),
            Err(zk::MultiWriteError::RequestFailed { source }) => {
                Err(MultiError::Request(map_error(source)))
            }
            Err(zk::MultiWriteError::OperationFailed { index, source }) => {
                Err(MultiError::Operation {
                    index,
                    error: map_error(source),
                })
            }
        }
    }

    async fn sync(&self, path: &str) -> Result<(), ZkError> {
        validate_path(path)?;
        let result = self.client.sync(path).await;
        self.collect_now();
        result.map_err(map_error)
    }

    async fn next_event(&self) -> Option<ClientEvent> {
        loop {
            let notified = self.shared.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                self.collect_now();
                let mut state = self.shared.lock();
                if let Some(event) = state.queue.pop_front() {
                    return Some(event);
                }
                if state.closed {
                    return None;
                }
            }
            // Wait for a watcher to fire or for a session event, whichever comes first.
            let watchers = std::future::poll_fn(|cx| {
                if self.collect_fired(cx) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            });
            tokio::select! {
                _ = watchers => {}
                _ = notified => {}
            }
        }
    }

    fn try_next_event(&self) -> Option<ClientEvent> {
        self.collect_now();
        self.shared.lock().queue.pop_front()
    }
}
